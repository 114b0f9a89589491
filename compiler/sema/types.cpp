#include "compiler/sema/types.h"

#include <fmt/format.h>

#include <algorithm>

namespace jr2::sema {

Types::Types() {
  error_ = make(Type::Kind::kError);
  json_ = make(Type::Kind::kJson);
  null_ = make(Type::Kind::kNull);
  string_ = make(Type::Kind::kString);
  int_ = make(Type::Kind::kInt);
  float_ = make(Type::Kind::kFloat);
  bool_ = make(Type::Kind::kBool);
  duration_ = make(Type::Kind::kDuration);
}

TypePtr Types::make(Type::Kind kind, TypePtr elem) {
  Type t;
  t.kind = kind;
  t.elem = elem;
  return push(std::move(t));
}

TypePtr Types::push(Type t) {
  types_.push_back(std::move(t));
  return &types_.back();
}

TypePtr Types::list(TypePtr elem) { return make(Type::Kind::kList, elem); }
TypePtr Types::map(TypePtr elem) { return make(Type::Kind::kMap, elem); }

TypePtr Types::optional(TypePtr elem) {
  switch (elem->kind) {
    case Type::Kind::kOptional:
    case Type::Kind::kJson:
    case Type::Kind::kNull:
    case Type::Kind::kError:
      return elem;
    default:
      return make(Type::Kind::kOptional, elem);
  }
}

TypePtr Types::literals(std::vector<std::string> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  Type t;
  t.kind = Type::Kind::kLiterals;
  t.literals = std::move(values);
  return push(std::move(t));
}

TypePtr Types::record(const Record* r) {
  Type t;
  t.kind = Type::Kind::kRecord;
  t.record = r;
  return push(std::move(t));
}

Record* Types::newRecord(std::string name) {
  records_.push_back({std::move(name), {}});
  return &records_.back();
}

TypePtr StripOptional(TypePtr t) { return t->kind == Type::Kind::kOptional ? t->elem : t; }

std::string Spell(TypePtr t) {
  switch (t->kind) {
    case Type::Kind::kError:
      return "?";
    case Type::Kind::kJson:
      return "json";
    case Type::Kind::kNull:
      return "null";
    case Type::Kind::kString:
      return "string";
    case Type::Kind::kInt:
      return "int";
    case Type::Kind::kFloat:
      return "float";
    case Type::Kind::kBool:
      return "bool";
    case Type::Kind::kDuration:
      return "duration";
    case Type::Kind::kLiterals: {
      std::string out;
      for (size_t i = 0; i < t->literals.size(); ++i) {
        if (i > 0) out += " | ";
        out += fmt::format("\"{}\"", t->literals[i]);
      }
      return out;
    }
    case Type::Kind::kList:
      return fmt::format("list<{}>", Spell(t->elem));
    case Type::Kind::kMap:
      return fmt::format("map<{}>", Spell(t->elem));
    case Type::Kind::kOptional: {
      const std::string inner = Spell(t->elem);
      return t->elem->kind == Type::Kind::kLiterals && t->elem->literals.size() > 1
                 ? fmt::format("({})?", inner)
                 : inner + "?";
    }
    case Type::Kind::kRecord: {
      if (!t->record->name.empty()) return t->record->name;
      std::string out = "{ ";
      for (size_t i = 0; i < t->record->fields.size(); ++i) {
        if (i > 0) out += ", ";
        out += t->record->fields[i].name + ": " + Spell(t->record->fields[i].type);
      }
      return out + (t->record->fields.empty() ? "}" : " }");
    }
  }
  return "?";
}

bool Assignable(TypePtr from, TypePtr to, std::string* why) {
  using K = Type::Kind;
  if (from->kind == K::kError || to->kind == K::kError) return true;
  if (to->kind == K::kJson || from->kind == K::kJson) return true;  // json is checked at run time
  if (to->kind == K::kOptional) {
    if (from->kind == K::kNull) return true;
    return Assignable(StripOptional(from), to->elem, why);
  }
  if (from->kind == K::kOptional || from->kind == K::kNull) return false;
  switch (to->kind) {
    case K::kString:
      return from->kind == K::kString || from->kind == K::kLiterals;
    case K::kFloat:
      return from->kind == K::kFloat || from->kind == K::kInt;
    case K::kInt:
    case K::kBool:
    case K::kDuration:
      return from->kind == to->kind;
    case K::kLiterals:
      if (from->kind != K::kLiterals) return false;
      return std::includes(to->literals.begin(), to->literals.end(), from->literals.begin(),
                           from->literals.end());
    case K::kList:
    case K::kMap:
      return from->kind == to->kind && Assignable(from->elem, to->elem, why);
    case K::kRecord: {
      if (from->kind != K::kRecord) return false;
      if (from->record == to->record) return true;
      // Records are JSON objects: structurally, every wanted field must be there and fit, and no
      // field may be one the wanted record does not know.
      for (const auto& f : to->record->fields) {
        const RecordField* g = from->record->find(f.name);
        if (g == nullptr) {
          if (!f.required) continue;
          if (why) *why = f.name;
          return false;
        }
        std::string inner;
        if (!Assignable(g->type, f.type, &inner)) {
          if (why) *why = inner.empty() ? f.name : f.name + "." + inner;
          return false;
        }
      }
      for (const auto& g : from->record->fields) {
        if (to->record->find(g.name) == nullptr) {
          if (why) *why = g.name;
          return false;
        }
      }
      return true;
    }
    default:
      return false;
  }
}

}  // namespace jr2::sema
