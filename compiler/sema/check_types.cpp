// The type checker. Every expression gets a type; a value that does not fit where it stands is
// E0200 with both types and the field path, a field a record does not have is E0201, a record
// literal without a required field is E0202, a field read on a non-record is E0203 and a
// non-string `item_id` is E0204. After an error the expression's type is `error`, which fits
// anywhere, so one mistake is reported once.
//
// Checking is bidirectional: where the wanted type is known (a `var`'s type, a parameter, a
// record field) it is pushed into object and list literals, so a wrong field is reported at the
// field, with the path `Outcome.reason`, not at the whole literal.

#include <fmt/format.h>
#include <llvm/Support/Casting.h>

#include <algorithm>
#include <functional>
#include <set>
#include <stdexcept>

#include "compiler/diag/suggest.h"
#include "compiler/sema/program.h"
#include "compiler/sema/rules.h"

namespace jr2::sema {
namespace {

using K = Type::Kind;

// The names an expression can use, with their types.
struct Env {
  std::map<std::string, TypePtr> names;
};

// Where a value goes, for messages: "the initial value of `count`" wants `int`.
struct Want {
  TypePtr type = nullptr;  // null: no wanted type, only infer
  std::string place;       // "`Outcome.reason`", "the guard"
};

bool IsNumeric(TypePtr t) { return t->kind == K::kInt || t->kind == K::kFloat; }
bool IsStringy(TypePtr t) { return t->kind == K::kString || t->kind == K::kLiterals; }
bool IsLoose(TypePtr t) { return t->kind == K::kError || t->kind == K::kJson; }

class Checker {
 public:
  Checker(Program& program, Diagnostics& diags)
      : program_(program), diags_(diags), info_(*program.typeInfo), types_(info_.types) {}

  void run() {
    // Records first (their fields may name each other in any order), then everything else.
    for (auto& m : program_.modules) {
      for (auto& d : m->ast->decls) declareRecord(*d);
    }
    for (auto& m : program_.modules) {
      for (auto& d : m->ast->decls) fillRecord(*d);
    }
    for (auto& m : program_.modules) {
      module_ = m.get();
      for (auto& d : m->ast->decls) checkDecl(*d);
    }
  }

 private:
  // ---- declared types -------------------------------------------------------------------------

  void declareRecord(const ast::Decl& d) {
    if (d.kind == ast::Decl::Kind::kType) {
      info_.declTypes[&d] = types_.record(types_.newRecord(d.name.text));
    } else if (d.kind == ast::Decl::Kind::kEvent) {
      info_.declTypes[&d] = types_.record(types_.newRecord("event " + d.name.text));
    } else {
      return;
    }
    info_.recordDecls[info_.declTypes[&d]->record] = &d;
  }

  void fillRecord(const ast::Decl& d) {
    const std::vector<ast::Field>* fields = nullptr;
    if (const auto* t = llvm::dyn_cast<ast::TypeDecl>(&d)) fields = &t->fields;
    if (const auto* e = llvm::dyn_cast<ast::EventDecl>(&d)) fields = &e->fields;
    if (fields == nullptr) return;
    auto* record = const_cast<Record*>(info_.declTypes[&d]->record);
    record->fields.reserve(fields->size());
    for (const auto& f : *fields) {
      TypePtr ft = typeOf(f.type.get());
      record->fields.push_back({f.name.text, ft,
                                !f.defaultValue && ft->kind != K::kOptional && ft->kind != K::kJson,
                                f.name.range, f.description.value_or("")});
    }
  }

  TypePtr typeOf(const ast::TypeRef* t) {
    if (t == nullptr) return types_.error();
    if (t->checked != nullptr) return t->checked;
    TypePtr result = typeOfInner(t);
    if (t->optional) result = types_.optional(result);
    t->checked = result;
    return result;
  }

  TypePtr typeOfInner(const ast::TypeRef* t) {
    switch (t->kind) {
      case ast::TypeRef::Kind::kLiteral:
        return types_.literals({t->literal});
      case ast::TypeRef::Kind::kUnion: {
        std::vector<std::string> values;
        for (const auto& member : t->args) {
          TypePtr m = typeOf(member.get());
          if (m->kind != K::kLiterals || member->optional) {
            diags_.emit(diag::SyntaxUnionMember, member->range, Spell(m));
            return types_.error();
          }
          values.insert(values.end(), m->literals.begin(), m->literals.end());
        }
        return types_.literals(std::move(values));
      }
      case ast::TypeRef::Kind::kNamed:
        break;
    }
    if (t->name.resolved != nullptr) {
      auto it = info_.declTypes.find(t->name.resolved);
      return it != info_.declTypes.end() ? it->second : types_.error();
    }
    if (!t->name.isSimple()) return types_.error();
    const std::string& n = t->name.parts[0].text;
    TypePtr arg = t->args.empty() ? types_.error() : typeOf(t->args[0].get());
    if (n == "string") return types_.string();
    if (n == "int") return types_.integer();
    if (n == "float") return types_.floating();
    if (n == "bool") return types_.boolean();
    if (n == "duration") return types_.duration();
    if (n == "json") return types_.json();
    if (n == "list") return types_.list(arg);
    if (n == "map") return types_.map(arg);
    return types_.error();
  }

  // A record of parameters: a machine's or a pool's input.
  TypePtr paramsRecord(const std::string& name, const std::vector<ast::Param>& params) {
    Record* r = types_.newRecord(name);
    for (const auto& p : params) {
      TypePtr pt = typeOf(p.type.get());
      r->fields.push_back({p.name.text, pt,
                           !p.defaultValue && pt->kind != K::kOptional && pt->kind != K::kJson,
                           p.name.range});
    }
    return types_.record(r);
  }

  // The output type of a machine or a pool (error when it has none or it is unknown).
  TypePtr outputOf(const ast::Decl* d) {
    if (const auto* m = llvm::dyn_cast_or_null<ast::MachineDecl>(d)) {
      return m->output ? typeOf(m->output.get()) : types_.null();
    }
    if (const auto* p = llvm::dyn_cast_or_null<ast::PoolDecl>(d)) return poolOutput(*p);
    if (const auto* x = llvm::dyn_cast_or_null<ast::ExternDecl>(d)) {
      return x->result ? typeOf(x->result.get()) : types_.null();
    }
    return types_.json();
  }

  // `{ status, items, failures }` of a pool (docs/checks.md#pools-and-sources).
  TypePtr poolOutput(const ast::PoolDecl& p) {
    if (auto it = poolOutputs_.find(&p); it != poolOutputs_.end()) return it->second;
    poolOutputs_[&p] = types_.error();  // a pool that (wrongly) contains itself
    Record* failure = types_.newRecord("Failure");
    failure->fields = {{"reason", types_.string(), true, {}}, {"detail", types_.json(), false, {}}};
    Record* r = types_.newRecord("");
    TypePtr item = p.worker.dispatch ? types_.json() : outputOf(p.worker.target.resolved);
    r->fields = {{"status", types_.literals({"drained", "deadlocked"}), true, {}},
                 {"items", types_.map(item), true, {}},
                 {"failures", types_.map(types_.record(failure)), true, {}}};
    TypePtr out = types_.record(r);
    poolOutputs_[&p] = out;
    return out;
  }

  // ---- reporting ------------------------------------------------------------------------------

  std::string textOf(const ast::Expr* e) const {
    const SourceFile& f = sourceOf(e->range);
    std::string_view t = f.text().substr(e->range.begin, e->range.end - e->range.begin);
    if (t.size() > 40 || t.find('\n') != std::string_view::npos) return "this value";
    return fmt::format("`{}`", t);
  }

  const SourceFile& sourceOf(SourceRange r) const { return *fileOf(r.file); }
  const SourceFile* fileOf(FileId id) const {
    for (const auto& m : program_.modules) {
      if (m->source->id() == id) return m->source;
    }
    return program_.modules.front()->source;
  }

  void mismatch(const ast::Expr* e, TypePtr got, const Want& want) {
    std::string hint;
    if (got->kind == K::kOptional && Assignable(got->elem, want.type)) {
      hint = "; add `!` if it cannot be null here, or a default with `??`";
    } else if (want.type->kind == K::kLiterals && IsStringy(got)) {
      hint = "; a string literal from that list fits";
    } else if (got->kind == K::kNull) {
      hint = "; make the type optional (`T?`) to allow `null`";
    } else if (got->kind == K::kInt && want.type->kind == K::kDuration) {
      hint = "; write a duration such as `30s`";
    } else if (StripOptional(got)->kind == K::kRecord &&
               StripOptional(want.type)->kind == K::kRecord) {
      std::string why;
      Assignable(StripOptional(got), StripOptional(want.type), &why);
      const std::string field = why.substr(0, why.find('.'));
      if (!field.empty()) {
        if (StripOptional(got)->record->find(field) == nullptr) {
          hint = fmt::format(" (`{}` has no field `{}`)", Spell(got), field);
        } else if (StripOptional(want.type)->record->find(field) == nullptr) {
          hint = fmt::format(" (`{}` has no field `{}`)", Spell(want.type), field);
        } else {
          hint = fmt::format(" (they differ at `{}`)", why);
        }
      }
    }
    // A single literal reads as `string` unless a union of literals is wanted.
    const std::string gotText =
        got->kind == K::kLiterals && StripOptional(want.type)->kind != K::kLiterals ? "string"
                                                                                    : Spell(got);
    diags_.emit(diag::TypeMismatch, e->range, textOf(e), gotText, want.place, Spell(want.type),
                hint);
  }

  // ---- expressions ----------------------------------------------------------------------------

  // Types `e`; when `want.type` is set, checks that the value fits and reports where it does not.
  TypePtr check(const ast::Expr* e, const Env& env, const Want& want = {}) {
    if (e == nullptr) return types_.error();
    TypePtr t = checkInner(e, env, want);
    info_.exprTypes.set(e, t);
    return t;
  }

  TypePtr checkInner(const ast::Expr* e, const Env& env, const Want& want) {
    // Literals that can take the wanted type's shape are checked field by field.
    if (want.type != nullptr) {
      TypePtr target = StripOptional(want.type);
      if (const auto* o = llvm::dyn_cast<ast::ObjectExpr>(e); o && target->kind == K::kRecord) {
        return checkObject(*o, env, target, want.place);
      }
      if (const auto* o = llvm::dyn_cast<ast::ObjectExpr>(e); o && target->kind == K::kMap) {
        for (const auto& entry : o->entries) {
          check(entry.value.get(), env,
                {target->elem, fmt::format("a value of `{}`", Spell(target))});
        }
        return target;
      }
      if (const auto* l = llvm::dyn_cast<ast::ListExpr>(e); l && target->kind == K::kList) {
        for (const auto& x : l->elements) {
          check(x.get(), env, {target->elem, fmt::format("an element of `{}`", Spell(target))});
        }
        return target;
      }
      if (const auto* c = llvm::dyn_cast<ast::ConditionalExpr>(e)) {
        check(c->cond.get(), env, {types_.boolean(), "the condition of `?:`"});
        check(c->then.get(), env, want);
        check(c->otherwise.get(), env, want);
        return want.type;
      }
    }
    TypePtr t = infer(e, env);
    if (want.type != nullptr && !Assignable(t, want.type)) {
      mismatch(e, t, want);
      return types_.error();
    }
    return t;
  }

  TypePtr checkObject(const ast::ObjectExpr& o, const Env& env, TypePtr target,
                      const std::string& place) {
    const Record& r = *target->record;
    std::vector<std::string> names;
    for (const auto& f : r.fields) names.push_back(f.name);
    for (const auto& entry : o.entries) {
      const RecordField* f = r.find(entry.key.text);
      if (f == nullptr) {
        const std::string guess = ClosestName(entry.key.text, names);
        auto b =
            diags_.emit(diag::UnknownField, entry.key.range, r.name.empty() ? "the record" : r.name,
                        entry.key.text,
                        guess.empty() ? fmt::format("; remove it (the fields are {})", FieldList(r))
                                      : fmt::format("; did you mean `{}`?", guess));
        if (!guess.empty()) b.fix(entry.key.range, guess);
        check(entry.value.get(), env);
        continue;
      }
      const std::string path =
          r.name.empty() ? (place.empty() ? fmt::format("`{}`", entry.key.text)
                                          : fmt::format("`{}` of {}", entry.key.text, place))
                         : fmt::format("`{}.{}`", r.name, entry.key.text);
      check(entry.value.get(), env, {f->type, path});
    }
    for (const auto& f : r.fields) {
      if (!f.required) continue;
      const bool given =
          std::any_of(o.entries.begin(), o.entries.end(),
                      [&](const ast::ObjectEntry& e) { return e.key.text == f.name; });
      if (!given) {
        diags_
            .emit(diag::MissingField, o.range, "this record", f.name,
                  r.name.empty() ? Spell(target) : r.name)
            .note(diag::NoteDeclaredHere, f.range, f.name);
      }
    }
    return target;
  }

  static std::string FieldList(const Record& r) {
    std::string out;
    for (size_t i = 0; i < r.fields.size(); ++i) {
      if (i > 0) out += ", ";
      out += "`" + r.fields[i].name + "`";
    }
    return out.empty() ? "none" : out;
  }

  TypePtr infer(const ast::Expr* e, const Env& env) {
    switch (e->kind) {
      case ast::Expr::Kind::kNull:
        return types_.null();
      case ast::Expr::Kind::kBool:
        return types_.boolean();
      case ast::Expr::Kind::kInt:
        return types_.integer();
      case ast::Expr::Kind::kFloat:
        return types_.floating();
      case ast::Expr::Kind::kString:
        return types_.literals({llvm::cast<ast::StringLit>(e)->value});
      case ast::Expr::Kind::kDuration:
        return types_.duration();
      case ast::Expr::Kind::kName: {
        auto it = env.names.find(llvm::cast<ast::NameExpr>(e)->name.text);
        return it != env.names.end() ? it->second : types_.error();
      }
      case ast::Expr::Kind::kMember:
        return member(*llvm::cast<ast::MemberExpr>(e), env);
      case ast::Expr::Kind::kIndex: {
        const auto* i = llvm::cast<ast::IndexExpr>(e);
        TypePtr obj = check(i->object.get(), env);
        if (IsLoose(obj)) {
          check(i->index.get(), env);
          return obj;
        }
        if (obj->kind == K::kList) {
          check(i->index.get(), env, {types_.integer(), "a list index"});
          return obj->elem;
        }
        if (obj->kind == K::kMap) {
          check(i->index.get(), env, {types_.string(), "a map key"});
          return obj->elem;
        }
        check(i->index.get(), env);
        diags_.emit(diag::TypeOperands, e->range, "[…]", Spell(obj), "",
                    "index a `list<T>` with an `int` or a `map<T>` with a `string`");
        return types_.error();
      }
      case ast::Expr::Kind::kCall:
        return call(*llvm::cast<ast::CallExpr>(e), env);
      case ast::Expr::Kind::kObject: {
        Record* r = types_.newRecord("");
        for (const auto& entry : llvm::cast<ast::ObjectExpr>(e)->entries) {
          r->fields.push_back(
              {entry.key.text, check(entry.value.get(), env), true, entry.key.range});
        }
        return types_.record(r);
      }
      case ast::Expr::Kind::kList: {
        const auto* l = llvm::cast<ast::ListExpr>(e);
        if (l->elements.empty()) return types_.list(types_.error());
        TypePtr joined = nullptr;
        for (const auto& x : l->elements) {
          TypePtr t = check(x.get(), env);
          if (joined == nullptr) {
            joined = t;
            continue;
          }
          TypePtr j = join(joined, t);
          if (j == nullptr) {
            diags_.emit(diag::TypeOperands, x->range, "[…]", Spell(joined),
                        fmt::format(" and `{}`", Spell(t)),
                        "a list holds one type: make the elements one type, or declare it "
                        "`list<json>`");
            return types_.error();
          }
          joined = j;
        }
        return types_.list(joined);
      }
      case ast::Expr::Kind::kUnary: {
        const auto* u = llvm::cast<ast::UnaryExpr>(e);
        TypePtr t = check(u->operand.get(), env);
        if (IsLoose(t)) return u->op == ast::UnaryOp::kNot ? types_.boolean() : t;
        if (u->op == ast::UnaryOp::kNot) {
          if (t->kind == K::kBool) return t;
          diags_.emit(diag::TypeOperands, u->opRange, "!", Spell(t), "", "`!` negates a `bool`");
          return types_.error();
        }
        if (IsNumeric(t) || t->kind == K::kDuration) return t;
        diags_.emit(diag::TypeOperands, u->opRange, "-", Spell(t), "",
                    "`-` negates an `int`, a `float` or a `duration`");
        return types_.error();
      }
      case ast::Expr::Kind::kBinary:
        return binary(*llvm::cast<ast::BinaryExpr>(e), env);
      case ast::Expr::Kind::kConditional: {
        const auto* c = llvm::cast<ast::ConditionalExpr>(e);
        check(c->cond.get(), env, {types_.boolean(), "the condition of `?:`"});
        TypePtr a = check(c->then.get(), env);
        TypePtr b = check(c->otherwise.get(), env);
        TypePtr j = join(a, b);
        if (j == nullptr) {
          diags_.emit(diag::TypeOperands, e->range, "?:", Spell(a),
                      fmt::format(" and `{}`", Spell(b)), "both branches must have one type");
          return types_.error();
        }
        return j;
      }
      case ast::Expr::Kind::kNonNull: {
        TypePtr t = check(llvm::cast<ast::NonNullExpr>(e)->operand.get(), env);
        if (t->kind == K::kNull) return types_.error();
        return StripOptional(t);
      }
    }
    return types_.error();
  }

  // The one type two values share, or null when they have none.
  TypePtr join(TypePtr a, TypePtr b) {
    if (a->kind == K::kError || b->kind == K::kError) return a->kind == K::kError ? b : a;
    if (a->kind == K::kNull) return b->kind == K::kNull ? a : types_.optional(b);
    if (b->kind == K::kNull) return types_.optional(a);
    if (a->kind == K::kLiterals && b->kind == K::kLiterals) {
      std::vector<std::string> all = a->literals;
      all.insert(all.end(), b->literals.begin(), b->literals.end());
      return types_.literals(std::move(all));
    }
    if (Assignable(a, b)) return b;
    if (Assignable(b, a)) return a;
    if (IsNumeric(a) && IsNumeric(b)) return types_.floating();
    if (IsStringy(a) && IsStringy(b)) return types_.string();
    return nullptr;
  }

  TypePtr member(const ast::MemberExpr& m, const Env& env) {
    // `std.NAME` is a declaration, not a value; names checked it.
    if (const auto* n = llvm::dyn_cast<ast::NameExpr>(m.object.get()); n && n->name.text == "std") {
      return types_.error();
    }
    TypePtr obj = check(m.object.get(), env);
    if (IsLoose(obj)) return obj;
    const std::string field = m.member.text;
    if (obj->kind == K::kOptional && StripOptional(obj)->kind == K::kRecord) {
      diags_.emit(diag::NotARecord, m.object->range, textOf(m.object.get()), Spell(obj),
                  fmt::format("`.{}` would read a null", field),
                  fmt::format("write `{}!.{}` if it cannot be null here",
                              TextOrValue(m.object.get()), field));
      return types_.error();
    }
    if (obj->kind != K::kRecord) {
      diags_.emit(diag::NotARecord, m.object->range, textOf(m.object.get()), Spell(obj),
                  fmt::format("it has no field `{}`", field),
                  obj->kind == K::kList || obj->kind == K::kString
                      ? fmt::format("use `len({})` for its length", TextOrValue(m.object.get()))
                      : "read a field of a record");
      return types_.error();
    }
    const RecordField* f = obj->record->find(field);
    if (f == nullptr) {
      std::vector<std::string> names;
      for (const auto& g : obj->record->fields) names.push_back(g.name);
      const std::string guess = ClosestName(field, names);
      const std::string owner =
          obj->record->name.empty() ? TextOrValue(m.object.get()) : obj->record->name;
      std::string fix;
      if (!guess.empty()) {
        fix = fmt::format("; did you mean `{}`?", guess);
      } else if (const auto it = paramsOf_.find(obj->record); it != paramsOf_.end()) {
        // `input.max` of a machine or a Pool: its input is its parameters, declared with it.
        fix =
            fmt::format(" (its fields are the parameters of {} `{}`{}); add `{}: …` to them",
                        it->second.first, it->second.second->text.str(),
                        obj->record->fields.empty() ? ", which has none"
                                                    : fmt::format(": {}", FieldList(*obj->record)),
                        field);
      } else if (obj->record->fields.empty()) {
        fix = fmt::format("; it has no fields (declare `{}` in it)", field);
      } else {
        fix = fmt::format("; its fields are {}", FieldList(*obj->record));
      }
      auto b = diags_.emit(diag::UnknownField, m.member.range, owner, field, fix);
      if (!guess.empty()) b.fix(m.member.range, guess);
      if (const auto it = paramsOf_.find(obj->record); guess.empty() && it != paramsOf_.end())
        b.note(diag::NoteDeclaredHere, it->second.second->range, it->second.second->text.str());
      return types_.error();
    }
    return f->type;
  }

  std::string TextOrValue(const ast::Expr* e) const {
    const std::string t = textOf(e);
    return t.size() > 2 && t.front() == '`' ? t.substr(1, t.size() - 2) : "x";
  }

  TypePtr call(const ast::CallExpr& c, const Env& env) {
    const auto* callee = llvm::dyn_cast<ast::NameExpr>(c.callee.get());
    std::vector<TypePtr> args;
    for (const auto& a : c.args) args.push_back(check(a.value.get(), env));
    if (callee == nullptr) return types_.error();
    const std::string& f = callee->name.text;
    auto arity = [&](size_t n) {
      if (args.size() == n) return true;
      diags_.emit(diag::TypeArgCount, c.range, fmt::format("`{}`", f),
                  n == 1 ? "one argument" : fmt::format("{} arguments", n),
                  fmt::format("{} {}", args.size(), args.size() == 1 ? "is" : "are"),
                  fmt::format("call it as `{}`", f == "contains" ? "contains(LIST, VALUE)"
                                                 : f == "min"    ? "min(A, B)"
                                                                 : f + "(VALUE)"));
      return false;
    };
    if (f == "len") {
      if (!arity(1)) return types_.integer();
      TypePtr t = args[0];
      if (!IsLoose(t) && t->kind != K::kList && t->kind != K::kMap && !IsStringy(t)) {
        diags_.emit(diag::TypeOperands, c.args[0].value->range, "len", Spell(t), "",
                    "`len` counts a list, a map or a string");
      }
      return types_.integer();
    }
    if (f == "contains") {
      if (!arity(2)) return types_.boolean();
      TypePtr t = args[0];
      if (t->kind == K::kList) {
        if (!Assignable(args[1], t->elem) && !Assignable(t->elem, args[1])) {
          mismatch(c.args[1].value.get(), args[1], {t->elem, "an element of this list"});
        }
      } else if (!IsLoose(t) && !IsStringy(t) && t->kind != K::kMap) {
        diags_.emit(diag::TypeOperands, c.args[0].value->range, "contains", Spell(t), "",
                    "`contains` looks in a list, a map's keys or a string");
      }
      return types_.boolean();
    }
    if (f == "keys") {
      if (arity(1) && !IsLoose(args[0]) && args[0]->kind != K::kMap &&
          args[0]->kind != K::kRecord) {
        diags_.emit(diag::TypeOperands, c.args[0].value->range, "keys", Spell(args[0]), "",
                    "`keys` lists the keys of a map or a record");
      }
      return types_.list(types_.string());
    }
    if (f == "str") {
      arity(1);
      return types_.string();
    }
    if (f == "min") {
      // The smaller of two numbers: `cap: min(input.jobs, 8)` bounds a cap read from input.
      if (!arity(2)) return types_.integer();
      bool whole = true;
      for (size_t k = 0; k < 2; ++k) {
        const TypePtr t = args[k];
        if (IsLoose(t) || t->kind == K::kInt) continue;
        if (t->kind == K::kFloat) {
          whole = false;
          continue;
        }
        diags_.emit(diag::TypeOperands, c.args[k].value->range, "min", Spell(t), "",
                    "`min` takes two numbers");
      }
      return whole ? types_.integer() : types_.floating();
    }
    return types_.error();
  }

  TypePtr binary(const ast::BinaryExpr& b, const Env& env) {
    // Long chains are left-deep: check the left spine in a loop.
    std::vector<const ast::BinaryExpr*> spine;
    const ast::Expr* cur = &b;
    while (const auto* x = llvm::dyn_cast<ast::BinaryExpr>(cur)) {
      spine.push_back(x);
      cur = x->lhs.get();
    }
    TypePtr left = check(cur, env);
    for (auto it = spine.rbegin(); it != spine.rend(); ++it) {
      const ast::BinaryExpr& node = **it;
      TypePtr right = check(node.rhs.get(), env);
      left = operate(node, left, right);
      if (it + 1 != spine.rend()) info_.exprTypes.set(*it, left);
    }
    return left;
  }

  TypePtr operate(const ast::BinaryExpr& b, TypePtr l, TypePtr r) {
    using Op = ast::BinaryOp;
    const char* op = ast::Spelling(b.op);
    auto refuse = [&](const char* fix) {
      diags_.emit(diag::TypeOperands, b.opRange, op, Spell(l), fmt::format(" and `{}`", Spell(r)),
                  fix);
      return types_.error();
    };
    const bool loose = IsLoose(l) || IsLoose(r);
    switch (b.op) {
      case Op::kAdd:
        if (loose) return IsStringy(l) || IsStringy(r) ? types_.string() : types_.json();
        if (IsStringy(l) && IsStringy(r)) return types_.string();
        [[fallthrough]];
      case Op::kSub:
        if (loose) return types_.json();
        if (l->kind == K::kDuration && r->kind == K::kDuration) return l;
        [[fallthrough]];
      case Op::kMul:
      case Op::kDiv:
      case Op::kMod:
        if (loose) return types_.json();
        if (IsNumeric(l) && IsNumeric(r)) {
          return l->kind == K::kFloat || r->kind == K::kFloat ? types_.floating()
                                                              : types_.integer();
        }
        if ((b.op == Op::kMul || b.op == Op::kDiv) && l->kind == K::kDuration && IsNumeric(r))
          return l;
        return refuse(b.op == Op::kAdd ? "`+` adds numbers or durations and joins strings"
                                       : "arithmetic takes numbers (and durations for `+ - * /`)");
      case Op::kLt:
      case Op::kLe:
      case Op::kGt:
      case Op::kGe:
        if (loose || (IsNumeric(l) && IsNumeric(r)) || (IsStringy(l) && IsStringy(r)) ||
            (l->kind == K::kDuration && r->kind == K::kDuration)) {
          return types_.boolean();
        }
        return refuse("compare two numbers, two strings or two durations");
      case Op::kEq:
      case Op::kNe:
        if (loose || Assignable(l, r) || Assignable(r, l) || (IsNumeric(l) && IsNumeric(r)) ||
            (IsStringy(l) && IsStringy(r)) || l->kind == K::kNull || r->kind == K::kNull) {
          // A union (a field of type `"a" | "b"`) against a literal it does not hold is a
          // misspelling; two lone literals are merely constant.
          if (l->kind == K::kLiterals && r->kind == K::kLiterals &&
              (l->literals.size() > 1 || r->literals.size() > 1) && !Assignable(l, r) &&
              !Assignable(r, l)) {
            return refuse("these two can never be equal: check the spelling of the literal");
          }
          return types_.boolean();
        }
        return refuse("values of two different types are never equal");
      case Op::kAnd:
      case Op::kOr:
        if ((l->kind == K::kBool || IsLoose(l)) && (r->kind == K::kBool || IsLoose(r))) {
          return types_.boolean();
        }
        return refuse("`&&` and `||` join two `bool`s");
      case Op::kCoalesce: {
        if (IsLoose(l)) return r;
        TypePtr base = StripOptional(l);
        if (!Assignable(r, base) && r->kind != K::kNull) {
          TypePtr j = join(base, r);
          if (j == nullptr)
            return refuse("the default after `??` must have the type of the value before it");
          return j;
        }
        return StripOptional(r)->kind == r->kind ? base : l;
      }
    }
    return types_.error();
  }

  // ---- declarations ---------------------------------------------------------------------------

  void checkDecl(const ast::Decl& d) {
    switch (d.kind) {
      case ast::Decl::Kind::kType:
        fieldDefaults(llvm::cast<ast::TypeDecl>(d).fields, d.name.text);
        return;
      case ast::Decl::Kind::kEvent:
        fieldDefaults(llvm::cast<ast::EventDecl>(d).fields, "event " + d.name.text);
        return;
      case ast::Decl::Kind::kAgent:
        for (const auto& e : llvm::cast<ast::AgentDecl>(d).entries) {
          // `picks:` bounds the Agent's picks at one opening of its Gate (E0504); every other
          // entry (`model:`, `instructions:` …) is text.
          const bool picks = e.key.text == "picks";
          check(e.value.get(), Env{},
                {picks ? types_.integer() : types_.string(), fmt::format("`{}:`", e.key.text)});
        }
        return;
      case ast::Decl::Kind::kExtern:
        paramDefaults(llvm::cast<ast::ExternDecl>(d).params);
        return;
      case ast::Decl::Kind::kSource:
        source(llvm::cast<ast::SourceDecl>(d));
        return;
      case ast::Decl::Kind::kMachine:
        machine(llvm::cast<ast::MachineDecl>(d));
        return;
      case ast::Decl::Kind::kPool:
        pool(llvm::cast<ast::PoolDecl>(d));
        return;
      case ast::Decl::Kind::kWorkflow:
        return;
    }
  }

  void fieldDefaults(const std::vector<ast::Field>& fields, const std::string& owner) {
    for (const auto& f : fields) {
      if (f.defaultValue) {
        check(f.defaultValue.get(), Env{},
              {typeOf(f.type.get()), fmt::format("`{}.{}`", owner, f.name.text)});
      }
    }
  }

  void paramDefaults(const std::vector<ast::Param>& params) {
    for (const auto& p : params) {
      if (p.defaultValue) {
        check(p.defaultValue.get(), Env{},
              {typeOf(p.type.get()), fmt::format("the parameter `{}`", p.name.text)});
      }
    }
  }

  // Arguments given to something with parameters: positional in order, or by name.
  void arguments(const std::vector<ast::Arg>& args, const std::vector<ast::Param>* params,
                 const std::string& callee, SourceRange at, const Env& env) {
    if (params == nullptr) {
      for (const auto& a : args) check(a.value.get(), env);
      return;
    }
    std::set<std::string> given;
    std::set<std::string> guessed;  // misspelled as an unknown argument: not "missing" as well
    size_t position = 0;
    for (const auto& a : args) {
      const ast::Param* p = nullptr;
      if (a.name) {
        for (const auto& q : *params) {
          if (q.name.text == a.name->text) p = &q;
        }
        if (p == nullptr) {
          std::vector<std::string> names;
          for (const auto& q : *params) {
            const bool named = std::any_of(args.begin(), args.end(), [&](const ast::Arg& o) {
              return o.name && o.name->text == q.name.text;
            });
            if (!named) names.push_back(q.name.text);
          }
          const std::string guess = ClosestName(a.name->text, names);
          auto b = diags_.emit(diag::UnknownParam, a.name->range, callee, a.name->text,
                               guess.empty() ? "; it is not one of its parameters"
                                             : fmt::format("; did you mean `{}`?", guess));
          if (!guess.empty()) {
            b.fix(a.name->range, guess);
            guessed.insert(guess);
          }
          check(a.value.get(), env);
          continue;
        }
      } else {
        if (position >= params->size()) {
          diags_.emit(
              diag::TypeArgCount, a.value->range, callee,
              params->size() == 1 ? "one argument" : fmt::format("{} arguments", params->size()),
              fmt::format("{} are", args.size()), "remove the extra ones");
          return;
        }
        p = &(*params)[position++];
      }
      given.insert(p->name.text);
      check(a.value.get(), env,
            {typeOf(p->type.get()), fmt::format("the parameter `{}` of {}", p->name.text, callee)});
    }
    for (const auto& p : *params) {
      if (given.count(p.name.text) != 0 || guessed.count(p.name.text) != 0 || p.defaultValue) {
        continue;
      }
      TypePtr pt = typeOf(p.type.get());
      if (pt->kind == K::kOptional || pt->kind == K::kJson) continue;
      diags_
          .emit(diag::MissingParam, at, "this call", p.name.text, callee,
                fmt::format("pass it: `{}: …`", p.name.text))
          .note(diag::NoteDeclaredHere, p.name.range, p.name.text);
    }
  }

  static std::string Named(const ast::Decl* d) {
    return d == nullptr ? std::string("it")
                        : fmt::format("{} `{}`", ast::KindWord(d->kind), d->name.text);
  }

  void source(const ast::SourceDecl& s) {
    paramDefaults(s.params);
    Env env;
    for (const auto& p : s.params) env.names[p.name.text] = typeOf(p.type.get());
    TypePtr item = typeOf(s.itemType.get());
    TypePtr answer = types_.json();
    if (s.call) {
      const ast::Decl* fn = s.call->function.resolved;
      arguments(s.call->args, ParamsOf(fn),
                fn ? Named(fn) : fmt::format("`{}`", s.call->function.str()), s.call->range, env);
      if (fn != nullptr && s.form == ast::SourceDecl::Form::kRead) answer = outputOf(fn);
    }
    check(s.pollEvery.get(), Env{}, {types_.duration(), "`poll_every:`"});
    check(s.hold.get(), Env{}, {types_.integer(), "`hold:`"});
    if (s.items) {
      Env items = env;
      items.names["answer"] = answer;
      check(s.items.get(), items, {types_.list(types_.json()), "`items:`"});
    }
    for (const auto& h : s.hooks) {
      Env hook = env;
      hook.names["payload"] = types_.json();
      if (h.verdict == ast::Hook::Verdict::kCarry) {
        check(h.value.get(), hook, {item, fmt::format("the item of source `{}`", s.name.text)});
      } else if (h.verdict == ast::Hook::Verdict::kSkip) {
        check(h.value.get(), hook, {types_.string(), "the reason of `skip`"});
      }
    }
  }

  // ---- machines -------------------------------------------------------------------------------

  struct MachineCtx {
    const ast::MachineDecl* machine;
    Env env;  // params and vars
  };

  void machine(const ast::MachineDecl& m) {
    paramDefaults(m.params);
    info_.inputTypes[&m] = paramsRecord("", m.params);
    paramsOf_[info_.inputTypes[&m]->record] = {"machine", &m.name};
    MachineCtx ctx{&m, {}};
    for (const auto& p : m.params) ctx.env.names[p.name.text] = typeOf(p.type.get());
    Env init = ctx.env;
    for (const auto& v : m.vars) {
      check(v.init.get(), init, {typeOf(v.type.get()), fmt::format("`var {}`", v.name.text)});
    }
    for (const auto& v : m.vars) ctx.env.names[v.name.text] = typeOf(v.type.get());
    std::vector<const ast::Invoke*> above;
    body(m.body, ctx, nullptr, above);
    // The output (E0304).
    if (m.output && !m.outputExpr) {
      diags_.emit(diag::OutputNeverGiven, m.output->range, m.name.text,
                  Spell(typeOf(m.output.get())));
    } else if (!m.output && m.outputExpr) {
      diags_.emit(diag::OutputWithoutType, m.outputRange, m.name.text);
      check(m.outputExpr.get(), ctx.env);
    } else if (m.output && m.outputExpr) {
      TypePtr want = typeOf(m.output.get());
      TypePtr got = check(m.outputExpr.get(), ctx.env);
      std::string why;
      const RecordField* missing = MissingField(got, want);
      if (missing != nullptr) {
        // A record given without a field its type requires: the field, the record and where the
        // field is declared, and what to add.
        const TypePtr record = StripOptional(want);
        auto b =
            diags_.emit(diag::OutputMissingField, m.outputExpr->range, textOf(m.outputExpr.get()),
                        missing->name, record->record->name, m.name.text, Spell(missing->type));
        if (missing->range.valid())
          b.note(diag::NoteDeclaredHere, missing->range,
                 record->record->name + "." + missing->name);
      } else if (!Assignable(got, want, &why)) {
        std::string hint;
        if (got->kind == K::kOptional && Assignable(got->elem, want)) {
          hint = "; add `!` (a null here is then a defect of the worker) or a default with `??`";
        }
        diags_.emit(diag::OutputMismatch, m.outputExpr->range, textOf(m.outputExpr.get()),
                    Spell(got), m.name.text, Spell(want),
                    why.empty() ? "" : fmt::format(" (at `{}`)", why), hint);
      }
    }
  }

  // The first field `want` (a named record, or an optional one) requires that the record `got`
  // lacks, when every field `got` has is one of `want`'s; null otherwise (another mismatch,
  // which Assignable names).
  static const RecordField* MissingField(TypePtr got, TypePtr want) {
    want = StripOptional(want);
    if (got == nullptr || want == nullptr || got->kind != K::kRecord || want->kind != K::kRecord ||
        want->record->name.empty() || got->record == want->record)
      return nullptr;
    for (const auto& g : got->record->fields)
      if (want->record->find(g.name) == nullptr) return nullptr;
    for (const auto& f : want->record->fields)
      if (f.required && got->record->find(f.name) == nullptr) return &f;
    return nullptr;
  }

  // The input record of each machine and Pool (their parameters), to its declaration: what a
  // message about `input.NAME` names as the place to declare NAME.
  std::map<const Record*, std::pair<const char*, const ast::Name*>> paramsOf_;

  // The type `done` has for an invoke: `{ output }`, one per output type (a program's Gates
  // and Agents share one; a type made per invoke was a tenth of the checker's memory).
  TypePtr doneType(const ast::Invoke& inv) {
    TypePtr out = types_.json();
    if (inv.kind == ast::Invoke::Kind::kNamed || inv.kind == ast::Invoke::Kind::kExtern) {
      const ast::Decl* d = inv.target.resolved;
      if (d != nullptr && d->kind != ast::Decl::Kind::kAgent) out = outputOf(d);
    }
    TypePtr& done = doneTypes_[out];
    if (done == nullptr) {
      Record* r = types_.newRecord("");
      r->fields = {{"output", out, true, {}}};
      done = types_.record(r);
    }
    return done;
  }

  // The type `error` has in `on error`: a Failure, the same for every invoke.
  TypePtr errorType() {
    if (failure_ == nullptr) {
      Record* r = types_.newRecord("Failure");
      r->fields = {{"reason", types_.string(), true, {}}, {"detail", types_.json(), false, {}}};
      failure_ = types_.record(r);
    }
    return failure_;
  }

  void body(const ast::StateBody& b, const MachineCtx& ctx, const ast::State* state,
            std::vector<const ast::Invoke*>& above) {
    for (const auto& inv : b.invokes) invoke(inv, ctx.env);
    unnamedChildren(b, state);
    for (const auto& block : b.entry) actions(block, ctx.env);
    for (const auto& block : b.exit) actions(block, ctx.env);
    for (const auto& t : b.transitions) transition(t, b, ctx, state);
    const size_t mark = above.size();
    for (const auto& inv : b.invokes) above.push_back(&inv);
    for (const auto& s : b.states) body(s->body, ctx, s.get(), above);
    above.resize(mark);
  }

  // Whether an invoke starts a child that completes (a machine, a Pool, a host function, a std
  // effect): those are kept under their `as` name. A Gate is named by its Gate name and an Agent
  // by its slot; an unresolved target was reported already.
  static bool IsChild(const ast::Invoke& inv) {
    if (inv.kind == ast::Invoke::Kind::kGate) return false;
    const ast::Decl* d = inv.target.resolved;
    return d != nullptr && d->kind != ast::Decl::Kind::kAgent;
  }

  // E0308: the second child of one state without `as` (docs/language.md#invokes: "A state with
  // more than one invoke must name them"). One unnamed child is fine; its plain `on done` is
  // clear.
  void unnamedChildren(const ast::StateBody& b, const ast::State* state) {
    const ast::Invoke* first = nullptr;
    for (const auto& inv : b.invokes) {
      if (!IsChild(inv) || inv.as) continue;
      if (first == nullptr) {
        first = &inv;
        continue;
      }
      diags_
          .emit(diag::InvokeUnnamedTwice, inv.target.range,
                state ? fmt::format("state `{}`", state->name.text) : "the machine root",
                Named(first->target.resolved),
                fmt::format("{}{}(…)", inv.kind == ast::Invoke::Kind::kExtern ? "extern " : "",
                            inv.target.str()))
          .note(diag::NoteFirstUnnamedChild, first->target.range);
    }
  }

  void invoke(const ast::Invoke& inv, const Env& env) {
    switch (inv.kind) {
      case ast::Invoke::Kind::kGate:
        if (inv.object) check(inv.object.get(), env);
        return;
      case ast::Invoke::Kind::kExtern: {
        const ast::Decl* d = inv.target.resolved;
        arguments(inv.args, ParamsOf(d), d ? Named(d) : fmt::format("`{}`", inv.target.str()),
                  inv.range, env);
        return;
      }
      case ast::Invoke::Kind::kNamed:
        break;
    }
    const ast::Decl* d = inv.target.resolved;
    if (d == nullptr) return;
    if (d->kind == ast::Decl::Kind::kAgent) {
      for (const auto& a : inv.args) check(a.value.get(), env);
      if (!inv.args.empty()) {
        diags_.emit(diag::TypeArgCount, inv.range, Named(d), "no arguments",
                    fmt::format("{} are", inv.args.size()),
                    "give the Agent its prompt: `{ prompt: … }`");
      }
      if (inv.object) {
        for (const auto& e : inv.object->entries) {
          if (e.key.text != "prompt") {
            diags_.emit(diag::UnknownField, e.key.range, "an Agent's invoke", e.key.text,
                        "; it takes only `prompt`");
            check(e.value.get(), env);
          } else {
            check(e.value.get(), env, {types_.string(), "`prompt:`"});
          }
        }
      }
      return;
    }
    if (inv.object) {
      diags_.emit(diag::SyntaxInvokeBlock, inv.object->range, Named(d), inv.target.str());
    }
    arguments(inv.args, ParamsOf(d), Named(d), inv.range, env);
  }

  void actions(const std::vector<ast::Action>& acts, const Env& env) {
    for (const auto& a : acts) {
      switch (a.kind) {
        case ast::Action::Kind::kAssign: {
          auto it = env.names.find(a.target.text);
          check(a.value.get(), env,
                {it != env.names.end() ? it->second : types_.error(),
                 fmt::format("`var {}`", a.target.text)});
          break;
        }
        case ast::Action::Kind::kFail:
          check(a.value.get(), env, {types_.string(), "the reason of `fail`"});
          check(a.detail.get(), env);
          break;
        case ast::Action::Kind::kLog:
          check(a.value.get(), env);
          break;
      }
    }
  }

  void transition(const ast::Transition& t, const ast::StateBody& owner, const MachineCtx& ctx,
                  const ast::State* state) {
    Env env = ctx.env;
    if (t.kind == ast::Transition::Kind::kOn) {
      if (t.trigger == ast::Transition::Trigger::kEvent) {
        const ast::Decl* ev = t.event.resolved;
        auto it = ev ? info_.declTypes.find(ev) : info_.declTypes.end();
        env.names["event"] = it != info_.declTypes.end() ? it->second : types_.error();
      } else {
        const ast::Invoke* inv = doneInvoke(t, owner, state);
        const bool done = t.trigger == ast::Transition::Trigger::kDone;
        if (inv != nullptr) {
          env.names[done ? "done" : "error"] = done ? doneType(*inv) : errorType();
          if (inv->as) env.names[inv->as->text] = done ? doneType(*inv) : errorType();
        } else {
          env.names["done"] = env.names["error"] = types_.error();
        }
      }
    }
    check(t.guard.get(), env, {types_.boolean(), "a guard"});
    actions(t.actions, env);
  }

  // The invoke an `on done` / `on error` refers to, reporting E0305 when there is none.
  const ast::Invoke* doneInvoke(const ast::Transition& t, const ast::StateBody& owner,
                                const ast::State* state) {
    const char* word = t.trigger == ast::Transition::Trigger::kDone ? "done" : "error";
    const std::string where =
        state ? fmt::format("state `{}`", state->name.text) : "the machine root";
    if (owner.invokes.empty()) {
      diags_.emit(diag::DoneWithoutInvoke, t.triggerRange, word, where);
      return nullptr;
    }
    std::vector<const ast::Invoke*> invokes;
    for (const auto& inv : owner.invokes) invokes.push_back(&inv);
    if (const ast::Invoke* heard = HeardInvoke(t, invokes)) {
      if (!t.invokeName && heard->kind == ast::Invoke::Kind::kGate) {
        diags_.emit(diag::DoneOnGate, t.triggerRange, where);
        return nullptr;
      }
      return heard;
    }
    if (t.invokeName) {
      std::vector<std::string> names;
      for (const auto& inv : owner.invokes) {
        if (inv.as) names.push_back(inv.as->text);
      }
      const std::string guess = ClosestName(t.invokeName->text, names);
      diags_.emit(diag::DoneUnknownInvoke, t.invokeName->range, where, t.invokeName->text,
                  guess.empty() ? fmt::format("name one with `invoke … as {}`", t.invokeName->text)
                                : fmt::format("did you mean `{}`?", guess));
      return nullptr;
    }
    // Several invokes and no name. Two unnamed children are E0308's one report; a plain
    // `on done` there only echoes it.
    if (std::count_if(owner.invokes.begin(), owner.invokes.end(),
                      [](const ast::Invoke& i) { return IsChild(i) && !i.as; }) > 1) {
      return nullptr;
    }
    diags_.emit(diag::DoneAmbiguous, t.triggerRange, where, std::to_string(owner.invokes.size()),
                word);
    return nullptr;
  }

  // ---- pools ----------------------------------------------------------------------------------

  void pool(const ast::PoolDecl& p) {
    paramDefaults(p.params);
    TypePtr input = paramsRecord("", p.params);
    paramsOf_[input->record] = {"pool", &p.name};
    info_.declTypes[&p] = input;
    info_.inputTypes[&p] = input;
    Env withInput;
    withInput.names["input"] = input;
    const auto* source = llvm::dyn_cast_or_null<ast::SourceDecl>(p.sourceRef.resolved);
    TypePtr item = source ? typeOf(source->itemType.get()) : types_.error();
    Env withItem = withInput;
    withItem.names["item"] = item;

    // `source: NAME(ARGS)`.
    if (const auto* call = llvm::dyn_cast_or_null<ast::CallExpr>(p.source.get())) {
      arguments(call->args, source ? &source->params : nullptr, Named(source), call->range,
                withInput);
    } else if (source != nullptr && p.source) {
      arguments({}, &source->params, Named(source), p.source->range, withInput);
    }
    if (p.itemId) {
      TypePtr id = check(p.itemId.get(), withItem);
      if (!IsLoose(id) && !IsStringy(id)) {
        diags_.emit(diag::ItemIdNotString, p.itemId->range, Spell(id),
                    id->kind == K::kInt || id->kind == K::kFloat
                        ? fmt::format("write `str({})`", TextOrValue(p.itemId.get()))
                        : "give a string field of the item, such as `item.id`");
      }
    }
    if (p.cap) check(p.cap.get(), withInput, {types_.integer(), "`cap:`"});

    if (p.worker.dispatch) {
      const auto* wf = llvm::dyn_cast_or_null<ast::WorkflowDecl>(p.worker.target.resolved);
      const ast::Decl* top = wf ? wf->target.resolved : nullptr;
      if (p.worker.dispatchSpec) {
        for (const auto& e : p.worker.dispatchSpec->entries) {
          if (e.key.text == "input") {
            const auto* params = ParamsOf(top);
            TypePtr want = params ? paramsRecord("", *params) : types_.error();
            check(e.value.get(), withItem,
                  {want, fmt::format("the input of workflow `{}`", wf ? wf->name.text : "")});
          } else if (e.key.text == "wait") {
            check(e.value.get(), withItem, {types_.boolean(), "`wait:`"});
          } else if (e.key.text == "target") {
            check(e.value.get(), withItem);
          } else {
            diags_.emit(diag::UnknownField, e.key.range, "a `dispatch` worker", e.key.text,
                        "; its keys are `input`, `wait` and `target`");
            check(e.value.get(), withItem);
          }
        }
      }
      return;
    }
    const ast::Decl* worker = p.worker.target.resolved;
    const auto* params = ParamsOf(worker);
    if (params == nullptr) {
      check(p.itemInput.get(), withItem);
      return;
    }
    const std::string workerName = Named(worker);
    if (p.itemInput) {
      TypePtr want = paramsRecord("", *params);
      const std::string place = fmt::format("the input of {}", workerName);
      const bool literal = llvm::isa<ast::ObjectExpr>(p.itemInput.get());
      TypePtr got = literal ? types_.error() : infer(p.itemInput.get(), withItem);
      if (!literal && !IsLoose(got) && StripOptional(got)->kind != K::kRecord) {
        info_.exprTypes.set(p.itemInput.get(), got);
        diags_.emit(diag::NotARecord, p.itemInput->range, textOf(p.itemInput.get()), Spell(got),
                    fmt::format("it cannot be {}", place),
                    fmt::format("give a record of its parameters: `item_input: {}`", Spell(want)));
        return;
      }
      check(p.itemInput.get(), withItem, {want, place});
      return;
    }
    // No `item_input`: a worker with exactly one parameter gets the item bound to it, and so does
    // a worker whose other parameters all have defaults (they take their defaults).
    const auto required = std::count_if(params->begin(), params->end(), [](const ast::Param& prm) {
      return prm.defaultValue == nullptr;
    });
    if (const ast::Param* bound = BoundParam(*params)) {
      info_.boundParams[&p] = bound;
      TypePtr want = typeOf(bound->type.get());
      if (!Assignable(item, want)) {
        diags_.emit(diag::TypeMismatch, p.worker.target.range,
                    fmt::format("the item of source `{}`", source ? source->name.text : "?"),
                    Spell(item),
                    fmt::format("the parameter `{}` of {}", bound->name.text, workerName),
                    Spell(want), "; convert it with `item_input: { … }`");
      }
    } else if (required > 1) {
      // More than one parameter and no `item_input`: the item itself is the input, so it must
      // carry a field of the right type for each parameter without a default.
      const Record* itemRecord =
          StripOptional(item)->kind == K::kRecord ? StripOptional(item)->record : nullptr;
      if (IsLoose(item)) return;
      for (const auto& prm : *params) {
        if (prm.defaultValue) continue;
        const RecordField* f = itemRecord ? itemRecord->find(prm.name.text) : nullptr;
        TypePtr want = typeOf(prm.type.get());
        if (f != nullptr && Assignable(f->type, want)) continue;
        if (f != nullptr) {
          diags_.emit(diag::TypeMismatch, p.worker.target.range,
                      fmt::format("the item's field `{}`", prm.name.text), Spell(f->type),
                      fmt::format("the parameter `{}` of {}", prm.name.text, workerName),
                      Spell(want), "; map it with `item_input: { … }`");
          return;
        }
        diags_
            .emit(diag::MissingParam, p.worker.target.range,
                  fmt::format("the item of pool `{}`", p.name.text), prm.name.text, workerName,
                  fmt::format("the item is the input of a worker with {} parameters; give it with "
                              "`item_input: {{ … }}`",
                              params->size()))
            .note(diag::NoteDeclaredHere, prm.name.range, prm.name.text);
        return;
      }
    }
  }

  Program& program_;
  Diagnostics& diags_;
  TypeInfo& info_;
  Types& types_;
  Module* module_ = nullptr;
  std::map<const ast::PoolDecl*, TypePtr> poolOutputs_;
  std::map<TypePtr, TypePtr> doneTypes_;  // doneType's, by output type
  TypePtr failure_ = nullptr;             // errorType's
};

}  // namespace

void ExprTypes::seal() {
  std::stable_sort(pairs_.begin(), pairs_.end(),
                   [](const auto& a, const auto& b) { return std::less<>()(a.first, b.first); });
  // Keep the last of each run of one expression.
  auto out = pairs_.begin();
  for (auto it = pairs_.begin(); it != pairs_.end(); ++it) {
    if (it + 1 != pairs_.end() && (it + 1)->first == it->first) continue;
    *out++ = *it;
  }
  pairs_.erase(out, pairs_.end());
  sealed_ = true;
}

TypePtr ExprTypes::find(const ast::Expr* e) const {
  if (!kept_)
    throw std::logic_error("jr2c: expression types read, but the checks did not keep them");
  if (!sealed_) throw std::logic_error("jr2c: expression types read before the checker ended");
  auto it = std::lower_bound(
      pairs_.begin(), pairs_.end(), e,
      [](const auto& pair, const ast::Expr* key) { return std::less<>()(pair.first, key); });
  return it != pairs_.end() && it->first == e ? it->second : nullptr;
}

void CheckTypes(Program& program, Diagnostics& diags, Keep keep) {
  // The tree keeps what the checker found (ast::TypeRef::checked): a second check would read
  // the first one's types, which the new TypeInfo no longer owns.
  if (program.typeInfo) throw std::logic_error("jr2c: a program is type-checked once");
  program.typeInfo = std::make_unique<TypeInfo>(keep);
  Checker(program, diags).run();
  program.typeInfo->exprTypes.seal();
}

}  // namespace jr2::sema
