// Expressions, compiled to C++ over the typed structs with the types the checker recorded. Where
// a value's C++ type differs from the wanted one, a conversion is inserted (`json` ↔ a record,
// `T` → `T?`, `int` → `float`).

#include <fmt/format.h>
#include <llvm/Support/Casting.h>

#include "compiler/codegen/generators.h"

namespace jr2::codegen {

using sema::TypePtr;
using K = sema::Type::Kind;
using C = CppType::Kind;

namespace {

bool Numeric(const CppType& t) { return t.is(C::kInt) || t.is(C::kDouble); }

bool Comparison(ast::BinaryOp op) {
  return op == ast::BinaryOp::kLt || op == ast::BinaryOp::kLe || op == ast::BinaryOp::kGt ||
         op == ast::BinaryOp::kGe;
}

const CppType kJsonType = CppType::Of(C::kJson);

// Code of several lines, placed two columns in.
std::string Nested(const std::string& code) {
  std::string out;
  for (const char c : code) out += c == '\n' ? std::string("\n  ") : std::string(1, c);
  return out;
}

}  // namespace

std::string ExprGen::convert(const Code& code, const TypePtr& to, SourceRange at) const {
  const CppType want = cx_.cpp(to);
  if (code.type == want) return code.text;
  if (code.type.is(C::kNull)) return want.is(C::kJson) ? "::jr2rt::JsonValue()" : "std::nullopt";
  if (want.is(C::kJson)) return fmt::format("::jr2rt::ToJson({})", code.text);
  if (code.type.is(C::kJson)) {
    return fmt::format("::jr2rt::FromJson<{}>({}, {})", want.spell(), code.text, cx_.where(at));
  }
  if (want.is(C::kOptional)) {
    return fmt::format("{}({})", want.spell(), convert(code, to->elem, at));
  }
  if (code.type.is(C::kInt) && want.is(C::kDouble))
    return fmt::format("static_cast<double>({})", code.text);
  // Records of one shape under two names, lists of them …: through JSON.
  return fmt::format("::jr2rt::FromJson<{}>(::jr2rt::ToJson({}), {})", want.spell(), code.text,
                     cx_.where(at));
}

std::string ExprGen::as(const ast::Expr* e, const TypePtr& want, const Scope& scope) const {
  // Literals take the wanted shape directly.
  const TypePtr target = want->kind == K::kOptional ? want->elem : want;
  auto wrapped = [&](const std::string& body) {
    return want->kind == K::kOptional ? fmt::format("{}({})", cx_.cpp(want).spell(), body) : body;
  };
  if (const auto* o = llvm::dyn_cast<ast::ObjectExpr>(e)) {
    const CppType t = cx_.cpp(target);
    if (t.is(C::kStruct)) {
      // Written in the fields' order (a field left out sits where it is declared): the struct
      // made at once, `Verdict{a, b, …}`, each field left out its declared default. Half the
      // code of the lambda below, which default-constructs, then assigns (#33 goal 3).
      if (std::string agg; aggregate(*o, target, t, scope, &agg)) return wrapped(agg);
      // A lambda that fills the struct, one field a line (the Printer indents the lines of a
      // value like the line it is on; a nested literal's lines go two further in). It captures
      // only where there are names to read: a field's default is outside any function, where
      // C++ allows no capture-default.
      std::string body =
          fmt::format("[{}] {{\n  {} v_;\n", scope.names.empty() ? "" : "&", t.spell());
      for (const auto& entry : o->entries) {
        const sema::RecordField* f = target->record->find(entry.key.text);
        if (f == nullptr) continue;
        body += fmt::format("  v_.{} = {};\n", Ident(f->name),
                            Nested(as(entry.value.get(), f->type, scope)));
      }
      return wrapped(body + "  return v_;\n}()");
    }
    if (t.is(C::kMap)) {
      std::string body = fmt::format("{}{{", t.spell());
      for (const auto& entry : o->entries) {
        body += fmt::format("{{{}, {}}}, ", CppString(entry.key.text),
                            as(entry.value.get(), target->elem, scope));
      }
      return wrapped(body + "}");
    }
  }
  if (const auto* l = llvm::dyn_cast<ast::ListExpr>(e); l && target->kind == K::kList) {
    std::string body = fmt::format("{}{{", cx_.cpp(target).spell());
    for (size_t i = 0; i < l->elements.size(); ++i) {
      if (i > 0) body += ", ";
      body += as(l->elements[i].get(), target->elem, scope);
    }
    return wrapped(body + "}");
  }
  if (const auto* c = llvm::dyn_cast<ast::ConditionalExpr>(e)) {
    // A `json` branch may be a value or a reference into one (`a.b`): both made values.
    const bool box = cx_.cpp(want).is(C::kJson);
    return fmt::format(
        box ? "({} ? ::jr2rt::JsonValue({}) : ::jr2rt::JsonValue({}))" : "({} ? {} : {})",
        as(c->cond.get(), cx_.info.types.boolean(), scope), as(c->then.get(), want, scope),
        as(c->otherwise.get(), want, scope));
  }
  return convert(emit(e, scope), want, e->range);
}

bool ExprGen::aggregate(const ast::ObjectExpr& o, const TypePtr& target, const CppType& t,
                        const Scope& scope, std::string* out) const {
  const auto decl = cx_.info.recordDecls.find(target->record);
  if (decl == cx_.info.recordDecls.end()) return false;
  const std::vector<ast::Field>& declared = FieldsOf(*decl->second);
  const std::vector<sema::RecordField>& fields = target->record->fields;
  if (declared.size() != fields.size()) return false;
  // Each entry's field, in the order written; the values are computed in that order, so the
  // fields must be declared in it too (which of two faults is reported must not change).
  std::vector<const ast::Expr*> values(fields.size(), nullptr);
  size_t next = 0;
  for (const auto& entry : o.entries) {
    size_t i = next;
    while (i < fields.size() && fields[i].name != entry.key.text) ++i;
    if (i == fields.size()) return false;
    values[i] = entry.value.get();
    next = i + 1;
  }
  std::string body = t.spell() + "{";
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) body += ", ";
    if (values[i] != nullptr) {
      body += as(values[i], fields[i].type, scope);
    } else if (declared[i].defaultValue) {
      body += as(declared[i].defaultValue.get(), fields[i].type, Scope{});
    } else {
      body += "{}";  // what the struct's own member would hold: empty, 0, false or null
    }
  }
  *out = body + "}";
  return true;
}

// A `null` (of an optional type) is `std::nullopt` as a C++ value, which JSON cannot be made
// from: it is JSON's null here.
std::string ExprGen::asJson(const ast::Expr* e, const TypePtr& t, const Scope& scope) const {
  if (e->kind == ast::Expr::Kind::kNull || cx_.typeOf(e)->kind == K::kNull)
    return "::jr2rt::JsonValue()";
  return fmt::format("::jr2rt::ToJson({})", as(e, t, scope));
}

Code ExprGen::emit(const ast::Expr* e, const Scope& scope) const {
  const TypePtr t = cx_.typeOf(e);
  const sema::Types& types = cx_.info.types;
  switch (e->kind) {
    case ast::Expr::Kind::kNull:
      return {"std::nullopt", CppType::Of(C::kNull)};
    case ast::Expr::Kind::kBool:
      return {llvm::cast<ast::BoolLit>(e)->value ? "true" : "false", CppType::Of(C::kBool)};
    case ast::Expr::Kind::kInt:
      return {fmt::format("int64_t{{{}}}", llvm::cast<ast::IntLit>(e)->value),
              CppType::Of(C::kInt)};
    case ast::Expr::Kind::kFloat: {
      // A double literal in C++ too: `1.0` is written `1` by fmt, which C++ reads as an int
      // (and JSON as an integer).
      std::string text = fmt::format("{}", llvm::cast<ast::FloatLit>(e)->value);
      if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
      return {text, CppType::Of(C::kDouble)};
    }
    case ast::Expr::Kind::kString: {
      // With its length when it holds a NUL character, which would end a C string there.
      const std::string& value = llvm::cast<ast::StringLit>(e)->value;
      if (value.find('\0') != std::string::npos) {
        return {fmt::format("std::string({}, {})", CppString(value), value.size()),
                CppType::Of(C::kString)};
      }
      return {fmt::format("std::string({})", CppString(value)), CppType::Of(C::kString)};
    }
    case ast::Expr::Kind::kDuration:
      return {fmt::format("::jr2rt::Duration{{{}}}", llvm::cast<ast::DurationLit>(e)->millis),
              CppType::Of(C::kDuration)};
    case ast::Expr::Kind::kName: {
      auto it = scope.names.find(llvm::cast<ast::NameExpr>(e)->name.text);
      if (it != scope.names.end()) return it->second;
      return {"::jr2rt::JsonValue()", kJsonType};
    }
    case ast::Expr::Kind::kMember: {
      const auto* m = llvm::cast<ast::MemberExpr>(e);
      const Code obj = emit(m->object.get(), scope);
      if (obj.type.is(C::kJson)) {
        return {fmt::format("::jr2rt::Member({}, {}, {})", obj.text, CppString(m->member.text),
                            cx_.where(m->member.range)),
                kJsonType};
      }
      return {fmt::format("{}.{}", obj.text, Ident(m->member.text)), cx_.cpp(t)};
    }
    case ast::Expr::Kind::kIndex: {
      const auto* i = llvm::cast<ast::IndexExpr>(e);
      const Code obj = emit(i->object.get(), scope);
      if (obj.type.is(C::kJson)) {
        return {fmt::format("::jr2rt::At({}, ::jr2rt::ToJson({}), {})", obj.text,
                            emit(i->index.get(), scope).text, cx_.where(e->range)),
                kJsonType};
      }
      const TypePtr ot = cx_.typeOf(i->object.get());
      const TypePtr key = ot->kind == K::kMap ? types.string() : types.integer();
      return {fmt::format("::jr2rt::At({}, {}, {})", obj.text, as(i->index.get(), key, scope),
                          cx_.where(e->range)),
              cx_.cpp(t)};
    }
    case ast::Expr::Kind::kCall: {
      const auto* c = llvm::cast<ast::CallExpr>(e);
      const auto* callee = llvm::dyn_cast<ast::NameExpr>(c->callee.get());
      const std::string f = callee ? callee->name.text : "";
      std::vector<Code> args;
      for (const auto& a : c->args) args.push_back(emit(a.value.get(), scope));
      auto arg = [&](size_t k) {
        return k < args.size() ? args[k].text : std::string("::jr2rt::JsonValue()");
      };
      if (f == "len") return {fmt::format("::jr2rt::Len({})", arg(0)), CppType::Of(C::kInt)};
      if (f == "contains") {
        // Compare like with like: a typed list's element type, else JSON.
        std::string needle = arg(1);
        if (!args.empty() && args[0].type.is(C::kJson))
          needle = fmt::format("::jr2rt::ToJson({})", arg(1));
        return {fmt::format("::jr2rt::Contains({}, {})", arg(0), needle), CppType::Of(C::kBool)};
      }
      if (f == "keys") {
        return {fmt::format("::jr2rt::Keys({})", arg(0)),
                CppType::Wrap(C::kVector, CppType::Of(C::kString))};
      }
      if (f == "str") return {fmt::format("::jr2rt::Str({})", arg(0)), CppType::Of(C::kString)};
      if (f == "min" && c->args.size() == 2) {
        // Both as the checker's type of the call: `int`, or `float` when one is a float.
        const TypePtr t = cx_.typeOf(e);
        return {fmt::format("::jr2rt::Min({}, {})", as(c->args[0].value.get(), t, scope),
                            as(c->args[1].value.get(), t, scope)),
                cx_.cpp(t)};
      }
      return {"::jr2rt::JsonValue()", kJsonType};
    }
    case ast::Expr::Kind::kObject: {
      std::string body;
      for (const auto& entry : llvm::cast<ast::ObjectExpr>(e)->entries) {
        body += fmt::format("{}{}, {}", body.empty() ? "" : ", ", CppString(entry.key.text),
                            as(entry.value.get(), types.json(), scope));
      }
      return {"::jr2rt::Object(" + body + ")", kJsonType};
    }
    case ast::Expr::Kind::kList: {
      if (t->kind == K::kList) return {as(e, t, scope), cx_.cpp(t)};
      std::string body;
      for (const auto& x : llvm::cast<ast::ListExpr>(e)->elements) {
        body += (body.empty() ? "" : ", ") + as(x.get(), types.json(), scope);
      }
      return {"::jr2rt::Array(" + body + ")", kJsonType};
    }
    case ast::Expr::Kind::kUnary: {
      const auto* u = llvm::cast<ast::UnaryExpr>(e);
      if (u->op == ast::UnaryOp::kNot) {
        return {fmt::format("(!{})", as(u->operand.get(), types.boolean(), scope)),
                CppType::Of(C::kBool)};
      }
      const Code x = emit(u->operand.get(), scope);
      if (x.type.is(C::kJson))
        return {fmt::format("(-::jr2rt::FromJson<double>({}, {}))", x.text, cx_.where(e->range)),
                CppType::Of(C::kDouble)};
      return {fmt::format("(-{})", x.text), x.type};
    }
    case ast::Expr::Kind::kBinary:
      return binary(*llvm::cast<ast::BinaryExpr>(e), scope);
    case ast::Expr::Kind::kConditional:
      return {as(e, t, scope), cx_.cpp(t)};
    case ast::Expr::Kind::kNonNull: {
      const auto* n = llvm::cast<ast::NonNullExpr>(e);
      Code x = emit(n->operand.get(), scope);
      if (x.type.is(C::kJson))
        return {fmt::format("::jr2rt::Unwrap({}, {})", x.text, cx_.where(e->range)), kJsonType};
      if (x.type.is(C::kOptional))
        return {fmt::format("::jr2rt::Unwrap({}, {})", x.text, cx_.where(e->range)), *x.type.elem};
      return x;
    }
  }
  return {"::jr2rt::JsonValue()", kJsonType};
}

Code ExprGen::binary(const ast::BinaryExpr& b, const Scope& scope) const {
  using Op = ast::BinaryOp;
  const sema::Types& types = cx_.info.types;
  const TypePtr lt = cx_.typeOf(b.lhs.get());
  const TypePtr rt = cx_.typeOf(b.rhs.get());
  const TypePtr result = cx_.typeOf(&b);
  auto both = [&](const TypePtr& t) {
    return std::make_pair(as(b.lhs.get(), t, scope), as(b.rhs.get(), t, scope));
  };
  const CppType boolean = CppType::Of(C::kBool);
  const bool loose = lt->kind == K::kJson || rt->kind == K::kJson || lt->kind == K::kError ||
                     rt->kind == K::kError;
  switch (b.op) {
    case Op::kAnd:
    case Op::kOr: {
      auto [l, r] = both(types.boolean());
      return {fmt::format("({} {} {})", l, ast::Spelling(b.op), r), boolean};
    }
    case Op::kEq:
    case Op::kNe: {
      // Values of one C++ type compare directly; anything with null or json compares as JSON.
      const Code l = emit(b.lhs.get(), scope);
      const Code r = emit(b.rhs.get(), scope);
      if ((l.type == r.type && !l.type.is(C::kNull) && !l.type.is(C::kJson)) ||
          (Numeric(l.type) && Numeric(r.type)))
        return {fmt::format("({} {} {})", l.text, ast::Spelling(b.op), r.text), boolean};
      // An optional against null: absent is null, and a value present is never JSON's null
      // unless it is json itself (a json that holds null), which compares as JSON below.
      const auto absent = [&](const Code& x, const Code& other) {
        return other.type.is(C::kNull) && x.type.is(C::kOptional) && !x.type.elem->is(C::kJson);
      };
      if (absent(l, r) || absent(r, l)) {
        return {fmt::format("({}({}).has_value())", b.op == Op::kEq ? "!" : "",
                            l.type.is(C::kNull) ? r.text : l.text),
                boolean};
      }
      return {fmt::format("({}::jr2rt::JsonEquals(::jr2rt::ToJson({}), ::jr2rt::ToJson({})))",
                          b.op == Op::kNe ? "!" : "", l.type.is(C::kNull) ? "nullptr" : l.text,
                          r.type.is(C::kNull) ? "nullptr" : r.text),
              boolean};
    }
    case Op::kCoalesce: {
      Code l = emit(b.lhs.get(), scope);
      if (l.type.is(C::kJson)) {
        return {fmt::format("::jr2rt::Coalesce({}, ::jr2rt::ToJson({}))", l.text,
                            emit(b.rhs.get(), scope).text),
                kJsonType};
      }
      if (l.type.is(C::kOptional)) {
        const TypePtr inner = lt->kind == K::kOptional ? lt->elem : lt;
        return {fmt::format("::jr2rt::Coalesce({}, {})", l.text, as(b.rhs.get(), inner, scope)),
                cx_.cpp(inner)};
      }
      return l;
    }
    default:
      break;
  }
  // Arithmetic and ordering.
  const char* op = ast::Spelling(b.op);
  const bool compare = Comparison(b.op);
  if (loose) {
    // A JSON operand: compute in double (or string for `+` of strings).
    if (result->kind == K::kString || result->kind == K::kLiterals) {
      return {fmt::format("(::jr2rt::Str({}) + ::jr2rt::Str({}))", emit(b.lhs.get(), scope).text,
                          emit(b.rhs.get(), scope).text),
              CppType::Of(C::kString)};
    }
    auto [l, r] = both(types.floating());
    return {fmt::format("({} {} {})", l, op, r), compare ? boolean : CppType::Of(C::kDouble)};
  }
  if (lt->kind == K::kString || lt->kind == K::kLiterals) {
    if (b.op == Op::kAdd) {
      // A chain of `+` is one call: a temporary string and its clean-up at each `+` made a
      // prompt's text most of a state's entry code (docs/performance.md, #33 goal 3).
      std::vector<std::string> parts;
      concatParts(b.lhs.get(), scope, parts);
      concatParts(b.rhs.get(), scope, parts);
      std::string list;
      for (const auto& part : parts) list += (list.empty() ? "" : ", ") + part;
      return {fmt::format("::jr2rt::Concat({{{}}})", list), CppType::Of(C::kString)};
    }
    auto [l, r] = both(types.string());
    return {fmt::format("({} {} {})", l, op, r), boolean};
  }
  if (lt->kind == K::kDuration) {
    const Code l = emit(b.lhs.get(), scope);
    const TypePtr other = rt->kind == K::kDuration ? types.duration() : types.floating();
    const std::string r = as(b.rhs.get(), other, scope);
    return {fmt::format("({} {} {})", l.text, op, r),
            compare ? boolean : CppType::Of(C::kDuration)};
  }
  const TypePtr num =
      (lt->kind == K::kFloat || rt->kind == K::kFloat) ? types.floating() : types.integer();
  auto [l, r] = both(num);
  if (num->kind == K::kInt && (b.op == Op::kAdd || b.op == Op::kSub || b.op == Op::kMul)) {
    const char* fn = b.op == Op::kAdd ? "Add" : b.op == Op::kSub ? "Sub" : "Mul";
    return {fmt::format("::jr2rt::{}({}, {}, {})", fn, l, r, cx_.where(b.opRange)),
            CppType::Of(C::kInt)};
  }
  if (num->kind == K::kInt && (b.op == Op::kDiv || b.op == Op::kMod)) {
    return {fmt::format("::jr2rt::{}({}, {}, {})", b.op == Op::kDiv ? "Div" : "Mod", l, r,
                        cx_.where(b.opRange)),
            CppType::Of(C::kInt)};
  }
  if (b.op == Op::kMod) return {fmt::format("std::fmod({}, {})", l, r), CppType::Of(C::kDouble)};
  return {fmt::format("({} {} {})", l, op, r), compare ? boolean : cx_.cpp(num)};
}

void ExprGen::concatParts(const ast::Expr* e, const Scope& scope,
                          std::vector<std::string>& out) const {
  if (const auto* b = llvm::dyn_cast<ast::BinaryExpr>(e); b && b->op == ast::BinaryOp::kAdd) {
    const TypePtr lt = cx_.typeOf(b->lhs.get());
    const TypePtr rt = cx_.typeOf(b->rhs.get());
    if ((lt->kind == K::kString || lt->kind == K::kLiterals) &&
        (rt->kind == K::kString || rt->kind == K::kLiterals)) {
      concatParts(b->lhs.get(), scope, out);
      concatParts(b->rhs.get(), scope, out);
      return;
    }
  }
  // A literal as it is (a `\0` in it would end a C string: that one stays a std::string).
  if (const auto* s = llvm::dyn_cast<ast::StringLit>(e);
      s != nullptr && s->value.find('\0') == std::string::npos) {
    out.push_back(CppString(s->value));
    return;
  }
  out.push_back(as(e, cx_.info.types.string(), scope));
}

std::string ExprGen::argsJson(const std::vector<ast::Arg>& args,
                              const std::vector<ast::Param>* params, const Scope& scope) const {
  std::string out;
  size_t position = 0;
  for (const auto& a : args) {
    std::string key;
    TypePtr want = cx_.info.types.json();
    if (a.name) {
      key = a.name->text;
    } else if (params && position < params->size()) {
      key = (*params)[position].name.text;
    } else {
      key = fmt::format("arg{}", position);
    }
    if (!a.name) ++position;
    if (params) {
      for (const auto& prm : *params) {
        if (prm.name.text == key) want = cx_.typeOf(prm.type.get());
      }
    }
    out += fmt::format("{}{}, {}", out.empty() ? "" : ", ", CppString(key),
                       asJson(a.value.get(), want, scope));
  }
  return "::jr2rt::Object(" + out + ")";
}

}  // namespace jr2::codegen
