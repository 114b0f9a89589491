#include "compiler/sema/types.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

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

namespace jr2::sema {
namespace {

// Text as a JSON string.
std::string JsonText(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

class SchemaWriter {
 public:
  std::string top(const Record& r, const std::string& description) {
    std::string body = object(r, description);
    if (defs_.empty()) return body;
    std::string defs;
    for (const auto& [name, text] : defs_) {
      defs += (defs.empty() ? "" : ", ") + JsonText(name) + ": " + text;
    }
    body.pop_back();  // the object's `}`
    return body + ", \"$defs\": {" + defs + "}}";
  }

 private:
  std::string object(const Record& r, const std::string& description) {
    std::string properties, required;
    for (const RecordField& f : r.fields) {
      std::string field = of(f.type);
      std::string about = f.description;
      if (StripOptional(f.type)->kind == Type::Kind::kDuration)
        about = (about.empty() ? "a duration" : about) + " (a whole number of milliseconds)";
      if (!about.empty()) {
        field.pop_back();
        field +=
            std::string(field.size() > 1 ? ", " : "") + "\"description\": " + JsonText(about) + "}";
      }
      properties += (properties.empty() ? "" : ", ") + JsonText(f.name) + ": " + field;
      if (f.required) required += (required.empty() ? "" : ", ") + JsonText(f.name);
    }
    std::string out = "{\"type\": \"object\"";
    if (!description.empty()) out += ", \"description\": " + JsonText(description);
    out += ", \"properties\": {" + properties + "}, \"required\": [" + required +
           "], \"additionalProperties\": false}";
    return out;
  }

  // A named record nested in another: under `$defs`, by a name unique in this schema.
  std::string ref(const Record& r) {
    auto it = named_.find(&r);
    if (it == named_.end()) {
      std::string name = r.name.empty() ? "record" : r.name;
      for (char& c : name) {
        if (c == ' ') c = '_';  // `event approve`
      }
      const std::string base = name;
      for (int k = 2; taken_.count(name) != 0; ++k) name = base + "_" + std::to_string(k);
      taken_.insert(name);
      it = named_.emplace(&r, name).first;
      defs_[name] = "{}";  // taken before it is written: a record that holds itself
      defs_[name] = object(r, "");
    }
    return "{\"$ref\": " + JsonText("#/$defs/" + it->second) + "}";
  }

  std::string of(TypePtr t) {
    switch (t->kind) {
      case Type::Kind::kError:
      case Type::Kind::kJson:
        return "{}";
      case Type::Kind::kNull:
        return "{\"type\": \"null\"}";
      case Type::Kind::kString:
        return "{\"type\": \"string\"}";
      case Type::Kind::kInt:
        return "{\"type\": \"integer\"}";
      case Type::Kind::kFloat:
        return "{\"type\": \"number\"}";
      case Type::Kind::kBool:
        return "{\"type\": \"boolean\"}";
      case Type::Kind::kDuration:
        return "{\"type\": \"integer\"}";  // milliseconds (a field says so)
      case Type::Kind::kLiterals: {
        std::string values;
        for (const auto& l : t->literals) values += (values.empty() ? "" : ", ") + JsonText(l);
        return "{\"type\": \"string\", \"enum\": [" + values + "]}";
      }
      case Type::Kind::kList:
        return "{\"type\": \"array\", \"items\": " + of(t->elem) + "}";
      case Type::Kind::kMap:
        return "{\"type\": \"object\", \"additionalProperties\": " + of(t->elem) + "}";
      case Type::Kind::kOptional:
        return "{\"anyOf\": [" + of(t->elem) + ", {\"type\": \"null\"}]}";
      case Type::Kind::kRecord:
        return ref(*t->record);
    }
    return "{}";
  }

  std::map<const Record*, std::string> named_;
  std::set<std::string> taken_;
  std::map<std::string, std::string> defs_;
};

}  // namespace

std::string JsonSchema(const Record& record, const std::string& description) {
  return SchemaWriter().top(record, description);
}

}  // namespace jr2::sema
