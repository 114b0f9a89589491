// The C++ generator. One generator function per construct: records, events, externs, machines,
// pools, workflows. Expressions are compiled to C++ over the typed structs, using the types the
// checker recorded; where a value's C++ type differs from the wanted one, a conversion is
// inserted (`json` ↔ a record, `T` → `T?`, `int` → `float`).

#include "compiler/codegen/codegen.h"

#include <fmt/format.h>
#include <llvm/Support/Casting.h>

#include <algorithm>
#include <functional>
#include <set>

#include "compiler/codegen/printer.h"

namespace jr2::codegen {
namespace {

using sema::Type;
using sema::TypePtr;
using K = sema::Type::Kind;

const std::set<std::string>& CppKeywords() {
  static const std::set<std::string> kWords = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
      "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
      "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
      "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
      "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
      "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
      "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
      "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
      "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
      "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq", "NULL", "assert", "errno",
      "stdin", "stdout", "stderr", "major", "minor",
      // The generated code's own free functions.
      "to_json", "from_json", "read_json"};
  return kWords;
}

// A `.jr2` name as a C++ identifier: C++ keywords, the names of the generated free functions
// (`from_json`, `to_json`, `read_json`) and names that start with `_` get a suffix.
std::string Ident(const std::string& name) {
  if (CppKeywords().count(name) != 0 || (!name.empty() && name[0] == '_')) return name + "_";
  return name;
}

std::string CppString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
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
          out += fmt::format("\\x{:02x}\"\"", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

// A value's code and its C++ type.
struct Code {
  std::string text;
  std::string cpp;
};

constexpr const char* kJson = "::jr2rt::Json";
constexpr const char* kNullopt = "std::nullopt_t";

class Generator {
 public:
  Generator(const sema::Program& program, const sema::Module& module, const ir::Program& charts,
            std::string version, const Options& options)
      : options_(options),
        program_(program),
        module_(module),
        charts_(charts),
        info_(*program.typeInfo),
        version_(std::move(version)),
        file_(module.source->name()),
        ns_("jr2gen::" + module.stem) {}

  Output run() {
    Output out;
    const std::string base = FileName(file_);
    out.headerName = base + ".h";
    out.sourceName = base + ".cpp";
    header();
    source(out.headerName);
    out.header = h_.str();
    out.source = c_.str();
    return out;
  }

 private:
  static std::string FileName(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
  }

  std::string from(SourceRange r) const {
    return fmt::format("{}:{}", FileName(file_), module_.source->lineCol(r.begin).line);
  }
  std::string where(SourceRange r) const {
    const LineCol lc = module_.source->lineCol(r.begin);
    return CppString(fmt::format("{}:{}:{}", FileName(file_), lc.line, lc.column));
  }

  // ---- types ----------------------------------------------------------------------------------

  // The declaration a record type comes from (a `type` or an `event`), or null.
  const ast::Decl* recordDecl(TypePtr t) const {
    if (t->kind != K::kRecord) return nullptr;
    for (const auto& [decl, type] : info_.declTypes) {
      if (type->kind == K::kRecord && type->record == t->record &&
          (decl->kind == ast::Decl::Kind::kType || decl->kind == ast::Decl::Kind::kEvent)) {
        return decl;
      }
    }
    return nullptr;
  }

  const sema::Module* moduleOf(const ast::Decl* d) const {
    for (const auto& m : program_.modules) {
      for (const auto& x : m->ast->decls) {
        if (x.get() == d) return m.get();
      }
    }
    return nullptr;
  }

  std::string structName(const ast::Decl* d) const {
    const std::string local =
        d->kind == ast::Decl::Kind::kEvent ? Ident(d->name.text) + "_event" : Ident(d->name.text);
    const sema::Module* m = moduleOf(d);
    if (m == &module_) return local;
    return fmt::format("::jr2gen::{}::{}", m->stem, local);
  }

  std::string cpp(TypePtr t) const {
    switch (t->kind) {
      case K::kError:
      case K::kJson:
      case K::kNull:
        return kJson;
      case K::kString:
      case K::kLiterals:
        return "std::string";
      case K::kInt:
        return "int64_t";
      case K::kFloat:
        return "double";
      case K::kBool:
        return "bool";
      case K::kDuration:
        return "::jr2rt::Duration";
      case K::kList:
        return fmt::format("std::vector<{}>", cpp(t->elem));
      case K::kMap:
        return fmt::format("std::map<std::string, {}>", cpp(t->elem));
      case K::kOptional:
        return fmt::format("std::optional<{}>", cpp(t->elem));
      case K::kRecord: {
        const ast::Decl* d = recordDecl(t);
        if (d == nullptr) return kJson;
        const sema::Module* m = moduleOf(d);
        if (m == nullptr || m->isStd) return kJson;  // std's records are plain JSON here
        return structName(d);
      }
    }
    return kJson;
  }

  TypePtr typeOf(const ast::Expr* e) const {
    auto it = info_.exprTypes.find(e);
    return it != info_.exprTypes.end() ? it->second : info_.types.json();
  }
  TypePtr typeOf(const ast::TypeRef* t) const {
    auto it = info_.typeRefs.find(t);
    return it != info_.typeRefs.end() ? it->second : info_.types.json();
  }

  // `code` as a value of type `to`.
  std::string convert(const Code& code, TypePtr to, SourceRange at) const {
    const std::string want = cpp(to);
    if (code.cpp == want) return code.text;
    if (code.cpp == kNullopt) return want == kJson ? "::jr2rt::Json(nullptr)" : "std::nullopt";
    if (want == kJson) return fmt::format("::jr2rt::Json({})", code.text);
    if (to->kind == K::kOptional) {
      const std::string inner = cpp(to->elem);
      if (code.cpp == kJson)
        return fmt::format("::jr2rt::FromJson<{}>({}, {})", want, code.text, where(at));
      return fmt::format("{}({})", want, convert(code, to->elem, at));
    }
    if (code.cpp == kJson)
      return fmt::format("::jr2rt::FromJson<{}>({}, {})", want, code.text, where(at));
    if (code.cpp == "int64_t" && want == "double")
      return fmt::format("static_cast<double>({})", code.text);
    // Records of one shape under two names, lists of them …: through JSON.
    return fmt::format("::jr2rt::FromJson<{}>(::jr2rt::Json({}), {})", want, code.text, where(at));
  }

  // ---- expressions ----------------------------------------------------------------------------

  // The names an expression can use, as C++ expressions with their C++ types.
  struct Scope {
    std::map<std::string, Code> names;
  };

  std::string as(const ast::Expr* e, TypePtr want, const Scope& scope) const {
    // Literals take the wanted shape directly.
    const TypePtr target = want->kind == K::kOptional ? want->elem : want;
    if (const auto* o = llvm::dyn_cast<ast::ObjectExpr>(e)) {
      const std::string t = cpp(target);
      if (target->kind == K::kRecord && t != kJson) {
        std::string body = fmt::format("[&] {{ {} v_; ", t);
        for (const auto& entry : o->entries) {
          const sema::RecordField* f = target->record->find(entry.key.text);
          if (f == nullptr) continue;
          body +=
              fmt::format("v_.{} = {}; ", Ident(f->name), as(entry.value.get(), f->type, scope));
        }
        body += "return v_; }()";
        return want->kind == K::kOptional ? fmt::format("{}({})", cpp(want), body) : body;
      }
      if (target->kind == K::kMap) {
        std::string body = fmt::format("{}{{", cpp(target));
        for (const auto& entry : o->entries) {
          body += fmt::format("{{{}, {}}}, ", CppString(entry.key.text),
                              as(entry.value.get(), target->elem, scope));
        }
        body += "}";
        return want->kind == K::kOptional ? fmt::format("{}({})", cpp(want), body) : body;
      }
    }
    if (const auto* l = llvm::dyn_cast<ast::ListExpr>(e); l && target->kind == K::kList) {
      std::string body = fmt::format("{}{{", cpp(target));
      for (size_t i = 0; i < l->elements.size(); ++i) {
        if (i > 0) body += ", ";
        body += as(l->elements[i].get(), target->elem, scope);
      }
      body += "}";
      return want->kind == K::kOptional ? fmt::format("{}({})", cpp(want), body) : body;
    }
    if (const auto* c = llvm::dyn_cast<ast::ConditionalExpr>(e)) {
      return fmt::format("({} ? {} : {})", as(c->cond.get(), info_.types.boolean(), scope),
                         as(c->then.get(), want, scope), as(c->otherwise.get(), want, scope));
    }
    return convert(emit(e, scope), want, e->range);
  }

  // `e` as type `t`, then as JSON. A `null` (of an optional type) is `std::nullopt` as a C++
  // value, which JSON cannot be made from: it is JSON's null here.
  std::string asJson(const ast::Expr* e, TypePtr t, const Scope& scope) const {
    if (e->kind == ast::Expr::Kind::kNull || typeOf(e)->kind == K::kNull)
      return "::jr2rt::Json(nullptr)";
    return fmt::format("::jr2rt::Json({})", as(e, t, scope));
  }

  Code emit(const ast::Expr* e, const Scope& scope) const {
    const TypePtr t = typeOf(e);
    switch (e->kind) {
      case ast::Expr::Kind::kNull:
        return {"std::nullopt", kNullopt};
      case ast::Expr::Kind::kBool:
        return {llvm::cast<ast::BoolLit>(e)->value ? "true" : "false", "bool"};
      case ast::Expr::Kind::kInt:
        return {fmt::format("int64_t{{{}}}", llvm::cast<ast::IntLit>(e)->value), "int64_t"};
      case ast::Expr::Kind::kFloat:
        return {fmt::format("{}", llvm::cast<ast::FloatLit>(e)->value), "double"};
      case ast::Expr::Kind::kString:
        return {fmt::format("std::string({})", CppString(llvm::cast<ast::StringLit>(e)->value)),
                "std::string"};
      case ast::Expr::Kind::kDuration:
        return {fmt::format("::jr2rt::Duration{{{}}}", llvm::cast<ast::DurationLit>(e)->millis),
                "::jr2rt::Duration"};
      case ast::Expr::Kind::kName: {
        auto it = scope.names.find(llvm::cast<ast::NameExpr>(e)->name.text);
        if (it != scope.names.end()) return it->second;
        return {"::jr2rt::Json(nullptr)", kJson};
      }
      case ast::Expr::Kind::kMember: {
        const auto* m = llvm::cast<ast::MemberExpr>(e);
        const Code obj = emit(m->object.get(), scope);
        if (obj.cpp == kJson) {
          return {fmt::format("::jr2rt::Member({}, {}, {})", obj.text, CppString(m->member.text),
                              where(m->member.range)),
                  kJson};
        }
        return {fmt::format("{}.{}", obj.text, Ident(m->member.text)), cpp(t)};
      }
      case ast::Expr::Kind::kIndex: {
        const auto* i = llvm::cast<ast::IndexExpr>(e);
        const Code obj = emit(i->object.get(), scope);
        if (obj.cpp == kJson) {
          return {fmt::format("::jr2rt::At({}, ::jr2rt::Json({}), {})", obj.text,
                              emit(i->index.get(), scope).text, where(e->range)),
                  kJson};
        }
        const TypePtr ot = typeOf(i->object.get());
        const TypePtr key = ot->kind == K::kMap ? info_.types.string() : info_.types.integer();
        return {fmt::format("::jr2rt::At({}, {}, {})", obj.text, as(i->index.get(), key, scope),
                            where(e->range)),
                cpp(t)};
      }
      case ast::Expr::Kind::kCall: {
        const auto* c = llvm::cast<ast::CallExpr>(e);
        const auto* callee = llvm::dyn_cast<ast::NameExpr>(c->callee.get());
        const std::string f = callee ? callee->name.text : "";
        std::vector<Code> args;
        for (const auto& a : c->args) args.push_back(emit(a.value.get(), scope));
        auto arg = [&](size_t k) {
          return k < args.size() ? args[k].text : std::string("::jr2rt::Json()");
        };
        if (f == "len") return {fmt::format("::jr2rt::Len({})", arg(0)), "int64_t"};
        if (f == "contains") {
          // Compare like with like: a typed list's element type, else JSON.
          std::string needle = arg(1);
          if (!args.empty() && args[0].cpp == kJson)
            needle = fmt::format("::jr2rt::Json({})", arg(1));
          return {fmt::format("::jr2rt::Contains({}, {})", arg(0), needle), "bool"};
        }
        if (f == "keys")
          return {fmt::format("::jr2rt::Keys({})", arg(0)), "std::vector<std::string>"};
        if (f == "str") return {fmt::format("::jr2rt::Str({})", arg(0)), "std::string"};
        return {"::jr2rt::Json(nullptr)", kJson};
      }
      case ast::Expr::Kind::kObject: {
        std::string body = "::jr2rt::Json::object({";
        for (const auto& entry : llvm::cast<ast::ObjectExpr>(e)->entries) {
          body += fmt::format("{{{}, {}}}, ", CppString(entry.key.text),
                              as(entry.value.get(), info_.types.json(), scope));
        }
        return {body + "})", kJson};
      }
      case ast::Expr::Kind::kList: {
        if (t->kind == K::kList) return {as(e, t, scope), cpp(t)};
        std::string body = "::jr2rt::Json::array({";
        for (const auto& x : llvm::cast<ast::ListExpr>(e)->elements) {
          body += as(x.get(), info_.types.json(), scope) + ", ";
        }
        return {body + "})", kJson};
      }
      case ast::Expr::Kind::kUnary: {
        const auto* u = llvm::cast<ast::UnaryExpr>(e);
        if (u->op == ast::UnaryOp::kNot)
          return {fmt::format("(!{})", as(u->operand.get(), info_.types.boolean(), scope)), "bool"};
        const Code x = emit(u->operand.get(), scope);
        if (x.cpp == kJson) return {fmt::format("(-{}.get<double>())", x.text), "double"};
        return {fmt::format("(-{})", x.text), x.cpp};
      }
      case ast::Expr::Kind::kBinary:
        return binary(*llvm::cast<ast::BinaryExpr>(e), scope);
      case ast::Expr::Kind::kConditional:
        return {as(e, t, scope), cpp(t)};
      case ast::Expr::Kind::kNonNull: {
        const auto* n = llvm::cast<ast::NonNullExpr>(e);
        const Code x = emit(n->operand.get(), scope);
        if (x.cpp == kJson)
          return {fmt::format("::jr2rt::Unwrap({}, {})", x.text, where(e->range)), kJson};
        if (x.cpp.rfind("std::optional<", 0) == 0) {
          return {fmt::format("::jr2rt::Unwrap({}, {})", x.text, where(e->range)),
                  x.cpp.substr(14, x.cpp.size() - 15)};
        }
        return x;
      }
    }
    return {"::jr2rt::Json(nullptr)", kJson};
  }

  Code binary(const ast::BinaryExpr& b, const Scope& scope) const {
    using Op = ast::BinaryOp;
    const TypePtr lt = typeOf(b.lhs.get());
    const TypePtr rt = typeOf(b.rhs.get());
    const TypePtr result = typeOf(&b);
    auto both = [&](TypePtr t) {
      return std::make_pair(as(b.lhs.get(), t, scope), as(b.rhs.get(), t, scope));
    };
    const bool loose = lt->kind == K::kJson || rt->kind == K::kJson || lt->kind == K::kError ||
                       rt->kind == K::kError;
    switch (b.op) {
      case Op::kAnd:
      case Op::kOr: {
        auto [l, r] = both(info_.types.boolean());
        return {fmt::format("({} {} {})", l, ast::Spelling(b.op), r), "bool"};
      }
      case Op::kEq:
      case Op::kNe: {
        // Values of one C++ type compare directly; anything with null or json compares as JSON.
        const Code l = emit(b.lhs.get(), scope);
        const Code r = emit(b.rhs.get(), scope);
        if (l.cpp == r.cpp && l.cpp != kNullopt)
          return {fmt::format("({} {} {})", l.text, ast::Spelling(b.op), r.text), "bool"};
        if ((l.cpp == "int64_t" || l.cpp == "double") &&
            (r.cpp == "int64_t" || r.cpp == "double")) {
          return {fmt::format("({} {} {})", l.text, ast::Spelling(b.op), r.text), "bool"};
        }
        return {fmt::format("(::jr2rt::Json({}) {} ::jr2rt::Json({}))",
                            l.cpp == kNullopt ? "nullptr" : l.text, ast::Spelling(b.op),
                            r.cpp == kNullopt ? "nullptr" : r.text),
                "bool"};
      }
      case Op::kCoalesce: {
        const Code l = emit(b.lhs.get(), scope);
        if (l.cpp == kJson) {
          return {fmt::format("::jr2rt::Coalesce({}, ::jr2rt::Json({}))", l.text,
                              emit(b.rhs.get(), scope).text),
                  kJson};
        }
        if (l.cpp.rfind("std::optional<", 0) == 0) {
          const TypePtr inner = lt->kind == K::kOptional ? lt->elem : lt;
          return {fmt::format("::jr2rt::Coalesce({}, {})", l.text, as(b.rhs.get(), inner, scope)),
                  cpp(inner)};
        }
        return l;
      }
      default:
        break;
    }
    // Arithmetic and ordering.
    const char* op = ast::Spelling(b.op);
    if (loose) {
      // A JSON operand: compute in double (or string for `+` of strings).
      if (result->kind == K::kString || result->kind == K::kLiterals) {
        return {fmt::format("(::jr2rt::Str({}) + ::jr2rt::Str({}))", emit(b.lhs.get(), scope).text,
                            emit(b.rhs.get(), scope).text),
                "std::string"};
      }
      auto [l, r] = both(info_.types.floating());
      const bool compare = b.op == Op::kLt || b.op == Op::kLe || b.op == Op::kGt || b.op == Op::kGe;
      return {fmt::format("({} {} {})", l, op, r), compare ? "bool" : "double"};
    }
    const bool stringy = (lt->kind == K::kString || lt->kind == K::kLiterals);
    if (stringy) {
      auto [l, r] = both(info_.types.string());
      if (b.op == Op::kAdd) return {fmt::format("({} + {})", l, r), "std::string"};
      return {fmt::format("({} {} {})", l, op, r), "bool"};
    }
    if (lt->kind == K::kDuration) {
      const Code l = emit(b.lhs.get(), scope);
      const TypePtr other =
          rt->kind == K::kDuration ? info_.types.duration() : info_.types.floating();
      const std::string r = as(b.rhs.get(), other, scope);
      const bool compare = b.op == Op::kLt || b.op == Op::kLe || b.op == Op::kGt || b.op == Op::kGe;
      return {fmt::format("({} {} {})", l.text, op, r), compare ? "bool" : "::jr2rt::Duration"};
    }
    const TypePtr num = (lt->kind == K::kFloat || rt->kind == K::kFloat) ? info_.types.floating()
                                                                         : info_.types.integer();
    auto [l, r] = both(num);
    if (num->kind == K::kInt && (b.op == Op::kAdd || b.op == Op::kSub || b.op == Op::kMul)) {
      const char* fn = b.op == Op::kAdd ? "Add" : b.op == Op::kSub ? "Sub" : "Mul";
      return {fmt::format("::jr2rt::{}({}, {}, {})", fn, l, r, where(b.opRange)), "int64_t"};
    }
    if (num->kind == K::kInt && (b.op == Op::kDiv || b.op == Op::kMod)) {
      return {fmt::format("::jr2rt::{}({}, {}, {})", b.op == Op::kDiv ? "Div" : "Mod", l, r,
                          where(b.opRange)),
              "int64_t"};
    }
    if (b.op == Op::kMod) return {fmt::format("std::fmod({}, {})", l, r), "double"};
    const bool compare = b.op == Op::kLt || b.op == Op::kLe || b.op == Op::kGt || b.op == Op::kGe;
    return {fmt::format("({} {} {})", l, op, r), compare ? "bool" : cpp(num)};
  }

  // ---- the header -----------------------------------------------------------------------------

  void banner(Printer& p) const {
    p.print(
        "// Generated by jr2c $version$ from $file$. DO NOT EDIT.\n"
        "// Change the .jr2 file and compile it again; each `// from $base$:LINE` comment below\n"
        "// points at the line this code comes from.\n",
        {{"version", version_}, {"file", FileName(file_)}, {"base", FileName(file_)}});
  }

  std::vector<const ast::Decl*> decls(ast::Decl::Kind kind) const {
    std::vector<const ast::Decl*> out;
    for (const auto& d : module_.ast->decls) {
      if (d->kind == kind) out.push_back(d.get());
    }
    return out;
  }

  // Records in an order C++ accepts: a record after the records its fields hold by value.
  std::vector<const ast::Decl*> recordOrder() const {
    std::vector<const ast::Decl*> all = decls(ast::Decl::Kind::kType);
    for (const ast::Decl* e : decls(ast::Decl::Kind::kEvent)) all.push_back(e);
    std::vector<const ast::Decl*> out;
    std::set<const ast::Decl*> done, visiting;
    std::function<void(const ast::Decl*)> visit = [&](const ast::Decl* d) {
      if (done.count(d) || visiting.count(d)) return;
      visiting.insert(d);
      std::function<void(TypePtr)> deps = [&](TypePtr t) {
        if (t->kind == K::kOptional || t->kind == K::kList || t->kind == K::kMap)
          return deps(t->elem);
        if (const ast::Decl* r = recordDecl(t); r && moduleOf(r) == &module_) visit(r);
      };
      for (const auto& f : info_.declTypes.at(d)->record->fields) deps(f.type);
      visiting.erase(d);
      done.insert(d);
      out.push_back(d);
    };
    for (const ast::Decl* d : all) visit(d);
    return out;
  }

  void header() {
    Printer& p = h_;
    banner(p);
    p.print(
        "#pragma once\n\n#include <cstdint>\n#include <map>\n#include <memory>\n#include "
        "<optional>\n"
        "#include <string>\n#include <string_view>\n#include <vector>\n\n#include "
        "\"jr2/runtime.h\"\n");
    for (const auto& [stem, m] : module_.imports) {
      p.print("#include \"$name$.h\"\n", {{"name", FileName(m->source->name())}});
    }
    p.print(
        "\nstatic_assert(JR2_RUNTIME_VERSION == 3,\n"
        "              \"$file$ was generated by jr2c $version$ for runtime version 3; compile it "
        "again \"\n"
        "              \"with the jr2c that matches this runtime\");\n\n"
        "namespace $ns$ {\n",
        {{"file", FileName(file_)}, {"version", version_}, {"ns", ns_}});
    for (const ast::Decl* d : recordOrder()) recordStruct(*d);
    externDecls();
    for (const ir::Machine* m : machines()) machineClass(*m);
    for (const ast::Decl* d : decls(ast::Decl::Kind::kPool)) {
      p.print("\n// from $from$\nconst ::jr2rt::PoolSpec& $name$_pool();\n",
              {{"from", from(d->name.range)}, {"name", Ident(d->name.text)}});
    }
    p.print(
        "\n// Registers this file's workflows, machines, pools and host functions with the "
        "runner.\n"
        "void RegisterWorkflows(::jr2rt::Registry& registry);\n\n"
        "}  // namespace $ns$\n",
        {{"ns", ns_}});
  }

  void recordStruct(const ast::Decl& d) {
    Printer& p = h_;
    const sema::Record& r = *info_.declTypes.at(&d)->record;
    const auto& fields = d.kind == ast::Decl::Kind::kType ? llvm::cast<ast::TypeDecl>(d).fields
                                                          : llvm::cast<ast::EventDecl>(d).fields;
    p.print("\n// from $from$\nstruct $name$ {\n",
            {{"from", from(d.name.range)}, {"name", structName(&d)}});
    p.indent();
    for (size_t i = 0; i < fields.size(); ++i) {
      const sema::RecordField& f = r.fields[i];
      std::string init;
      if (fields[i].defaultValue)
        init = " = " + as(fields[i].defaultValue.get(), f.type, Scope{});
      else if (f.type->kind == K::kInt || f.type->kind == K::kFloat)
        init = " = 0";
      else if (f.type->kind == K::kBool)
        init = " = false";
      std::string doc = fields[i].description ? " // " + *fields[i].description : "";
      p.print("$type$ $name$$init$;$doc$\n",
              {{"type", cpp(f.type)}, {"name", Ident(f.name)}, {"init", init}, {"doc", doc}});
    }
    p.outdent();
    p.print(
        "};\nvoid to_json(::jr2rt::Json& j, const $name$& v);\nvoid from_json(const ::jr2rt::Json& "
        "j, $name$& v);\n"
        "void read_json(const ::jr2rt::Json& j, $name$& v, const ::jr2rt::Path& path);\n",
        {{"name", structName(&d)}});
  }

  void recordJson(const ast::Decl& d) {
    Printer& p = c_;
    const sema::Record& r = *info_.declTypes.at(&d)->record;
    const std::string name = structName(&d);
    p.print(
        "\n// from $from$\nvoid to_json(::jr2rt::Json& j, [[maybe_unused]] const $name$& v) {\n  j "
        "= ::jr2rt::Json::object();\n",
        {{"from", from(d.name.range)}, {"name", name}});
    for (const auto& f : r.fields) {
      p.print("  j[$key$] = v.$field$;\n", {{"key", CppString(f.name)}, {"field", Ident(f.name)}});
    }
    p.print(
        "}\n\nvoid from_json(const ::jr2rt::Json& j, $name$& v) { read_json(j, v, $record$); }\n\n"
        "void read_json(const ::jr2rt::Json& j, [[maybe_unused]] $name$& v, const ::jr2rt::Path& "
        "path) {\n",
        {{"name", name}, {"record", CppString(r.name)}});
    std::string names;
    for (const auto& f : r.fields) names += (names.empty() ? "" : ", ") + CppString(f.name);
    p.print("  ::jr2rt::CheckRecord(j, path, {$names$});\n", {{"names", names}});
    for (const auto& f : r.fields) {
      p.print("  ::jr2rt::ReadField(j, path, $key$, v.$field$, $req$);\n",
              {{"key", CppString(f.name)},
               {"field", Ident(f.name)},
               {"req", f.required ? "true" : "false"}});
      const TypePtr ft = f.type->kind == K::kOptional ? f.type->elem : f.type;
      if (ft->kind == K::kLiterals) {
        std::string list;
        for (const auto& lit : ft->literals) list += (list.empty() ? "" : ", ") + CppString(lit);
        const std::string value = f.type->kind == K::kOptional ? fmt::format("*v.{}", Ident(f.name))
                                                               : "v." + Ident(f.name);
        const std::string guard =
            f.type->kind == K::kOptional ? fmt::format("if (v.{}) ", Ident(f.name)) : "";
        p.print("  $guard$::jr2rt::CheckLiteral($value$, {$list$}, $where$);\n",
                {{"guard", guard},
                 {"value", value},
                 {"list", list},
                 {"where", fmt::format("path.field({})", CppString(f.name))}});
      }
    }
    p.print("}\n");
  }

  // ---- externs --------------------------------------------------------------------------------

  struct ExternUse {
    std::string name;
    enum Kind { kHost, kNext } kind;
    const ast::ExternDecl* decl;
  };

  std::vector<ExternUse> externs() const {
    std::map<std::string, ExternUse> uses;
    auto add = [&](const ast::QualName& q, ExternUse::Kind kind) {
      const auto* d = llvm::dyn_cast_or_null<ast::ExternDecl>(q.resolved);
      if (d != nullptr && moduleOf(d) != &module_) return;  // std's are the runtime's
      uses.emplace(q.str(), ExternUse{q.str(), kind, d});
    };
    for (const auto& d : module_.ast->decls) {
      if (const auto* s = llvm::dyn_cast<ast::SourceDecl>(d.get());
          s && s->call && s->call->isExtern) {
        add(s->call->function,
            s->form == ast::SourceDecl::Form::kNext ? ExternUse::kNext : ExternUse::kHost);
      }
    }
    for (const ir::Machine* m : machines()) {
      for (const ir::State& s : m->states) {
        for (const ast::Invoke* inv : s.invokes) {
          if (inv->kind == ast::Invoke::Kind::kExtern) add(inv->target, ExternUse::kHost);
        }
      }
    }
    std::vector<ExternUse> out;
    for (auto& [k, v] : uses) out.push_back(v);
    return out;
  }

  void externDecls() {
    const auto list = externs();
    if (list.empty()) return;
    Printer& p = h_;
    p.print(
        "\n// Host functions: define each in your C++ (a missing one is a link error that names "
        "it).\n");
    for (const ExternUse& x : list) {
      if (x.kind == ExternUse::kNext) {
        p.print(
            "// `next: extern $name$`: given the source's arguments (by parameter name) and the\n"
            "// query, answers the next item, null, or { item, open }.\n"
            "::jr2rt::Json $ident$(const ::jr2rt::Json& args, const ::jr2rt::NextQuery& query);\n",
            {{"name", x.name}, {"ident", Ident(x.name)}});
      } else {
        p.print(
            "// `extern $name$`: given its arguments as a JSON object by parameter name "
            "(positional ones\n"
            "// are `arg0`, `arg1` …); throw ::jr2rt::Failure to fail the invoking machine.\n"
            "::jr2rt::Json $ident$(const ::jr2rt::Json& args);\n",
            {{"name", x.name}, {"ident", Ident(x.name)}});
      }
    }
  }

  // ---- machines -------------------------------------------------------------------------------

  std::vector<const ir::Machine*> machines() const {
    std::vector<const ir::Machine*> out;
    for (const ir::Machine& m : charts_.machines) {
      if (moduleOf(m.decl) == &module_) out.push_back(&m);
    }
    return out;
  }

  static std::string ClassName(const ast::MachineDecl& m) {
    return Ident(m.name.text) + "_machine";
  }

  // The events a machine handles, sorted: their index is the machine's event id.
  static std::vector<const ast::Decl*> EventsOf(const ir::Machine& m) {
    std::vector<const ast::Decl*> out;
    for (const ir::State& s : m.states) {
      for (const auto& t : s.body->transitions) {
        if (t.trigger == ast::Transition::Trigger::kEvent && t.event.resolved &&
            std::find(out.begin(), out.end(), t.event.resolved) == out.end()) {
          out.push_back(t.event.resolved);
        }
      }
    }
    std::sort(out.begin(), out.end(),
              [](const ast::Decl* a, const ast::Decl* b) { return a->name.text < b->name.text; });
    return out;
  }

  // A machine with no parallel state and no `always` has exactly one active leaf, and each
  // (leaf, transition) has a static exit and entry sequence: such a machine gets a generated
  // dispatch() that is a switch over its leaf, and the table engine is not used for events.
  bool fastPathFor(const ir::Machine& m) const {
    if (!options_.fastPath) return false;
    for (const ir::State& s : m.states) {
      if (s.kind == ir::State::Kind::kParallel) return false;
      for (const ir::Transition& t : s.transitions) {
        if (t.ast->kind == ast::Transition::Kind::kAlways) return false;
      }
    }
    return true;
  }

  void machineClass(const ir::Machine& m) {
    Printer& p = h_;
    const auto& d = *m.decl;
    p.print("\n// from $from$\nclass $cls$ final : public ::jr2rt::Statechart {\n public:\n",
            {{"from", from(d.name.range)}, {"cls", ClassName(d)}});
    p.indent();
    p.print("// The machine's context: its parameters and its `var`s.\nstruct Context {\n");
    p.indent();
    for (const auto& prm : d.params) {
      p.print("$type$ $name${};\n",
              {{"type", cpp(typeOf(prm.type.get()))}, {"name", Ident(prm.name.text)}});
    }
    for (const auto& v : d.vars) {
      p.print("$type$ $name${};\n",
              {{"type", cpp(typeOf(v.type.get()))}, {"name", Ident(v.name.text)}});
    }
    p.outdent();
    p.print("};\n\n$cls$();\n", {{"cls", ClassName(d)}});
    p.print(
        "const char* name() const override { return $name$; }\n"
        "void start(::jr2rt::MachineHost& host, const ::jr2rt::Json& input) override;\n"
        "void checkInput(const ::jr2rt::Json& input) const override;\n"
        "int eventId(std::string_view name) const override;\n"
        "std::vector<::jr2rt::EventSpec> eventSpecs() const override;\n"
        "void checkPayload(int event, const ::jr2rt::Json& payload) const override;\n"
        "::jr2rt::Json output() const override;\n"
        "::jr2rt::Json snapshot() const override;\n"
        "void restore(::jr2rt::MachineHost& host, const ::jr2rt::Json& snapshot) override;\n"
        "const Context& context() const { return ctx_; }\n",
        {{"name", CppString(d.name.text)}});
    p.outdent();
    p.print(" protected:\n");
    p.indent();
    p.print(
        "bool guard(int transition, const ::jr2rt::Event& event) override;\n"
        "void act(int transition, const ::jr2rt::Event& event) override;\n"
        "void enter(int state) override;\n"
        "void exit(int state) override;\n");
    p.outdent();
    if (fastPathFor(m)) {
      p.print(
          " public:\n  // The generated fast path: a switch over the active leaf (see the .cpp).\n"
          "  bool dispatch(const ::jr2rt::Event& event) override;\n\n");
    }
    p.print(
        " private:\n"
        "  // The input into the parameters, with their defaults: start()'s and checkInput()'s.\n"
        "  static void readInput(const ::jr2rt::Json& input, Context& ctx);\n\n"
        "  Context ctx_;\n$leaf$};\n\nstd::unique_ptr<::jr2rt::Machine> "
        "Make_$name$();\n",
        {{"name", Ident(d.name.text)},
         {"leaf", std::string(fastPathFor(m)
                                  ? "  int leaf_ = -1;  // the one active atomic or final state\n"
                                  : "")}});
  }

  // Ids: every invoke of the machine, and every `after` transition (its timer), in state order.
  struct Ids {
    std::map<const ast::Invoke*, int> invokes;
    std::map<const ast::Transition*, int> timers;
  };

  Ids ids(const ir::Machine& m) const {
    Ids out;
    for (const ir::State& s : m.states) {
      for (const ast::Invoke* inv : s.invokes)
        out.invokes.emplace(inv, static_cast<int>(out.invokes.size()));
      for (const auto& t : s.body->transitions) {
        if (t.kind == ast::Transition::Kind::kAfter)
          out.timers.emplace(&t, static_cast<int>(out.timers.size()));
      }
    }
    return out;
  }

  Scope machineScope(const ast::MachineDecl& d) const {
    Scope scope;
    for (const auto& prm : d.params)
      scope.names[prm.name.text] = {"ctx_." + Ident(prm.name.text), cpp(typeOf(prm.type.get()))};
    for (const auto& v : d.vars)
      scope.names[v.name.text] = {"ctx_." + Ident(v.name.text), cpp(typeOf(v.type.get()))};
    return scope;
  }

  void actions(Printer& p, const std::vector<ast::Action>& acts, const Scope& scope,
               const ast::MachineDecl& d) {
    for (const auto& a : acts) {
      p.print("// from $from$\n", {{"from", from(a.range)}});
      switch (a.kind) {
        case ast::Action::Kind::kAssign: {
          TypePtr t = info_.types.json();
          for (const auto& v : d.vars) {
            if (v.name.text == a.target.text) t = typeOf(v.type.get());
          }
          p.print("ctx_.$name$ = $value$;\n",
                  {{"name", Ident(a.target.text)}, {"value", as(a.value.get(), t, scope)}});
          break;
        }
        case ast::Action::Kind::kFail:
          p.print(
              "throw ::jr2rt::Failure($reason$, $detail$);\n",
              {{"reason", as(a.value.get(), info_.types.string(), scope)},
               {"detail", a.detail ? as(a.detail.get(), info_.types.json(), scope) : "nullptr"}});
          break;
        case ast::Action::Kind::kLog:
          p.print("host().log($value$);\n",
                  {{"value", as(a.value.get(), info_.types.json(), scope)}});
          break;
      }
    }
  }

  // The scope of a transition's guard and actions: `event`, `done`, `error`, `as` names.
  // Whether the guard (or, with `actions`, the actions) of a transition read `name`.
  static bool Reads(const ast::Transition& t, bool actions, const std::string& name) {
    if (!actions) return ast::ReadsName(t.guard.get(), name);
    for (const auto& a : t.actions) {
      if (ast::ReadsName(a.value.get(), name) || ast::ReadsName(a.detail.get(), name)) return true;
    }
    return false;
  }

  Scope transitionScope(const ir::Machine& m, const ir::Transition& t, std::string* prelude,
                        bool forActions) const {
    Scope scope = machineScope(*m.decl);
    const ast::Transition& a = *t.ast;
    if (a.kind != ast::Transition::Kind::kOn) return scope;
    if (a.trigger == ast::Transition::Trigger::kEvent) {
      const ast::Decl* ev = a.event.resolved;
      if (ev != nullptr && Reads(a, forActions, "event")) {
        const std::string type = structName(ev);
        *prelude = fmt::format(
            "[[maybe_unused]] const auto event_ = ::jr2rt::FromJson<{}>(event.data.is_null() ? "
            "::jr2rt::Json::object() : event.data, {});\n",
            moduleOf(ev) && !moduleOf(ev)->isStd ? type : kJson, where(a.event.range));
        scope.names["event"] = {"event_", type};
      }
      return scope;
    }
    const bool done = a.trigger == ast::Transition::Trigger::kDone;
    const std::string value =
        done ? "::jr2rt::Json::object({{\"output\", event.data}})" : "event.data";
    *prelude = fmt::format("[[maybe_unused]] const ::jr2rt::Json {}_ = {};\n",
                           done ? "done" : "error", value);
    scope.names[done ? "done" : "error"] = {done ? "done_" : "error_", kJson};
    // The invoke this transition hears may be read by its `as` name too.
    const ir::State& src = m.states[t.source];
    for (const ast::Invoke* inv : src.invokes) {
      const bool heard =
          a.invokeName ? (inv->as && inv->as->text == a.invokeName->text) : src.invokes.size() == 1;
      if (heard && inv->as) scope.names[inv->as->text] = {done ? "done_" : "error_", kJson};
    }
    return scope;
  }

  static std::vector<const ast::Transition*> AftersOf(const ir::State& s) {
    std::vector<const ast::Transition*> out;
    for (const auto& t : s.body->transitions) {
      if (t.kind == ast::Transition::Kind::kAfter) out.push_back(&t);
    }
    return out;
  }
  // Whether entering (exiting) a state runs anything: actions, invokes, `after` timers.
  static bool HasEntryCode(const ir::State& s) {
    return !s.body->entry.empty() || !s.invokes.empty() || !AftersOf(s).empty();
  }
  static bool HasExitCode(const ir::State& s) {
    return !s.body->exit.empty() || !s.invokes.empty() || !AftersOf(s).empty();
  }

  // `case ID: {  // path` … `break; }` around what `body` prints.
  void stateCase(Printer& p, const ir::State& s, const std::function<void()>& body) {
    p.print("    case $i$: {  // $path$\n",
            {{"i", std::to_string(s.id)}, {"path", s.path.empty() ? "the root" : s.path}});
    for (int k = 0; k < 3; ++k) p.indent();
    body();
    p.print("break;\n");
    for (int k = 0; k < 3; ++k) p.outdent();
    p.print("    }\n");
  }

  // The fast path's dispatch(): for each leaf, its candidate transitions (the leaf's, then its
  // ancestors', each in document order), each with its exits and entries spelled out. It takes
  // exactly the steps the table engine would (docs/semantics.md), without searching for them.
  void fastDispatch(Printer& p, const ir::Machine& m, const std::vector<const ir::Transition*>& ts,
                    const std::vector<std::pair<std::string, int>>& triggers) {
    auto kindOf = [](const std::string& trigger) {
      return trigger == "kOn"      ? "kExternal"
             : trigger == "kAfter" ? "kTimer"
             : trigger == "kDone"  ? "kDone"
                                   : "kError";
    };
    p.print(
        "bool $cls$::dispatch([[maybe_unused]] const ::jr2rt::Event& event) {\n"
        "  if (isDone()) return false;\n"
        "  if (!::jr2rt::FastPath()) {  // JR2_NO_FAST_PATH: the table engine takes the step\n"
        "    const bool moved = Statechart::dispatch(event);\n"
        "    leaf_ = activeLeaf();\n"
        "    return moved;\n"
        "  }\n"
        "  switch (leaf_) {\n",
        {{"cls", ClassName(*m.decl)}});
    for (const ir::State& leaf : m.states) {
      if (leaf.kind != ir::State::Kind::kAtomic && leaf.kind != ir::State::Kind::kFinal) continue;
      if (leaf.id == 0) continue;
      p.print("    case $id$: {  // $path$\n",
              {{"id", std::to_string(leaf.id)}, {"path", leaf.path}});
      for (int st = leaf.id; st != -1; st = m.states[st].parent) {
        for (size_t i = 0; i < ts.size(); ++i) {
          const ir::Transition& t = *ts[i];
          if (t.source != st || triggers[i].first == "kAlways") continue;
          std::string cond = fmt::format("event.kind == ::jr2rt::Event::Kind::{} && event.id == {}",
                                         kindOf(triggers[i].first), triggers[i].second);
          if (t.ast->guard) cond += fmt::format(" && guard({}, event)", i);
          p.print("      if ($cond$) {  // from $from$\n",
                  {{"cond", cond}, {"from", from(t.ast->range)}});
          if (t.target == ir::kNoState) {
            if (!t.ast->actions.empty())
              p.print("        act($i$, event);\n", {{"i", std::to_string(i)}});
            p.print("        return true;\n      }\n");
            continue;
          }
          // The transition's sets as the lowering computed them (the tables hold the same): from
          // this leaf, the active states of its exit set are the leaf's chain below the domain,
          // exited deepest first; its entry set is entered in document order. Only states with
          // entry or exit code are called; the others are only marked.
          for (auto x = t.exits.rbegin(); x != t.exits.rend(); ++x) {
            if (!m.contains(*x, leaf.id)) continue;
            p.print(HasExitCode(m.states[*x])
                        ? "        exit($x$);\n        markActive($x$, false);\n"
                        : "        markActive($x$, false);\n",
                    {{"x", std::to_string(*x)}});
          }
          if (!t.ast->actions.empty())
            p.print("        act($i$, event);\n", {{"i", std::to_string(i)}});
          const std::vector<ir::StateId>& down = t.entries;
          for (int x : down) {
            p.print(HasEntryCode(m.states[x])
                        ? "        markActive($x$, true);\n        enter($x$);\n"
                        : "        markActive($x$, true);\n",
                    {{"x", std::to_string(x)}});
          }
          const int last = down.back();
          p.print("        leaf_ = $x$;\n", {{"x", std::to_string(last)}});
          if (m.states[last].kind == ir::State::Kind::kFinal && m.states[last].parent == 0) {
            p.print("        markDone();\n");
          }
          p.print("        return true;\n      }\n");
        }
      }
      p.print("      return false;\n    }\n");
    }
    p.print("    default:\n      return false;\n  }\n}\n\n");
  }

  // An event as a Gate lists it: `{name, audience, description, {fields}}` (an EventSpec).
  std::string eventSpec(const ast::Decl* ev) const {
    const auto* e = llvm::cast<ast::EventDecl>(ev);
    const char* audience = e->audience == ast::Audience::kAgent      ? "kAgent"
                           : e->audience == ast::Audience::kExternal ? "kExternal"
                           : e->audience == ast::Audience::kAny      ? "kAny"
                                                                     : "kUnset";
    std::string fields;
    const sema::Record& r = *info_.declTypes.at(ev)->record;
    for (size_t i = 0; i < r.fields.size(); ++i) {
      fields += fmt::format("{{{}, {}, {}, {}}}, ", CppString(r.fields[i].name),
                            CppString(sema::Spell(r.fields[i].type)),
                            r.fields[i].required ? "true" : "false",
                            CppString(e->fields[i].description.value_or("")));
    }
    return fmt::format("{{{}, ::jr2rt::EventSpec::Audience::{}, {}, {{{}}}}}",
                       CppString(e->name.text), audience, CppString(e->description.value_or("")),
                       fields);
  }

  // A transition's row in the table: its trigger and the id it matches (the event's, the
  // timer's of an `after`, the invoke's of an `on done`/`on error`; -1 for `always`).
  std::pair<std::string, int> trigger(const ir::Machine& m, const Ids& id,
                                      const std::vector<const ast::Decl*>& events,
                                      const ir::Transition& t) const {
    const ast::Transition& a = *t.ast;
    if (a.kind == ast::Transition::Kind::kAfter) return {"kAfter", id.timers.at(&a)};
    if (a.kind != ast::Transition::Kind::kOn) return {"kAlways", -1};
    if (a.trigger == ast::Transition::Trigger::kEvent) {
      return {"kOn", static_cast<int>(std::find(events.begin(), events.end(), a.event.resolved) -
                                      events.begin())};
    }
    const ir::State& src = m.states[t.source];
    const ast::Invoke* inv = nullptr;
    for (const ast::Invoke* x : src.invokes) {
      if (a.invokeName ? (x->as && x->as->text == a.invokeName->text) : true) inv = x;
      if (inv) break;
    }
    return {a.trigger == ast::Transition::Trigger::kDone ? "kDone" : "kError",
            inv ? id.invokes.at(inv) : -1};
  }

  void machineSource(const ir::Machine& m) {
    Printer& p = c_;
    const auto& d = *m.decl;
    const std::string cls = ClassName(d);
    const Ids id = ids(m);
    const auto events = EventsOf(m);
    // Tables.
    p.print("\n// ---- machine $name$ (from $from$) ----\n\nnamespace {\n\n",
            {{"name", d.name.text}, {"from", from(d.name.range)}});
    std::vector<const ir::Transition*> ts;
    std::vector<int> firstOf(m.states.size(), 0);  // each state's first transition
    for (const ir::State& s : m.states) {
      firstOf[static_cast<size_t>(s.id)] = static_cast<int>(ts.size());
      for (const ir::Transition& t : s.transitions) ts.push_back(&t);
    }
    std::vector<std::pair<std::string, int>> triggers;  // (table trigger, id) per transition
    triggers.reserve(ts.size());
    for (const ir::Transition* t : ts) triggers.push_back(trigger(m, id, events, *t));
    // The sets the transitions' exits and entries are runs of (sema's lowering computed them,
    // ir::Transition): one table, each distinct run once. The initial configuration first.
    std::vector<int> sets;
    std::map<std::vector<int>, int> runAt;
    auto runOf = [&](const std::vector<ir::StateId>& run) {
      if (run.empty()) return 0;
      auto [it, fresh] = runAt.emplace(run, static_cast<int>(sets.size()));
      if (fresh) sets.insert(sets.end(), run.begin(), run.end());
      return it->second;
    };
    const int initialAt = runOf(m.initial);
    const std::string name = Ident(d.name.text);
    p.print(
        "// Its states (path, parent, kind, initial, depth, transitions: first, count).\n"
        "const ::jr2rt::StateInfo k_$name$_states[] = {\n",
        {{"name", name}});
    for (const ir::State& s : m.states) {
      const char* kind = s.kind == ir::State::Kind::kAtomic     ? "kAtomic"
                         : s.kind == ir::State::Kind::kCompound ? "kCompound"
                         : s.kind == ir::State::Kind::kParallel ? "kParallel"
                                                                : "kFinal";
      p.print(
          "    {$path$, $parent$, ::jr2rt::StateInfo::$kind$, $initial$, $depth$, $first$, $n$},"
          "  // $id$$from$\n",
          {{"path", CppString(s.path)},
           {"parent", std::to_string(s.parent)},
           {"kind", kind},
           {"initial", std::to_string(s.initial)},
           {"depth", std::to_string(s.depth)},
           {"first", std::to_string(firstOf[static_cast<size_t>(s.id)])},
           {"n", std::to_string(s.transitions.size())},
           {"id", std::to_string(s.id)},
           {"from", s.ast ? " " + from(s.ast->name.range) : ""}});
    }
    p.print("};\n\n");
    std::vector<std::pair<int, int>> exitRuns, entryRuns;  // (first, count) per transition
    for (const ir::Transition* t : ts) {
      exitRuns.emplace_back(runOf(t->exits), static_cast<int>(t->exits.size()));
      entryRuns.emplace_back(runOf(t->entries), static_cast<int>(t->entries.size()));
    }
    p.print(
        "// The exit and entry sets of its transitions, and its initial configuration.\n"
        "const int k_$name$_sets[] = {",
        {{"name", name}});
    for (size_t i = 0; i < sets.size(); ++i) {
      p.print(i % 20 == 0 ? "\n    $x$," : " $x$,", {{"x", std::to_string(sets[i])}});
    }
    p.print(sets.empty() ? "0};\n\n" : "\n};\n\n");
    p.print(
        "// Its transitions (source, trigger, id, target, guarded, domain, exits: first, count,\n"
        "// entries: first, count).\n"
        "const ::jr2rt::TransitionInfo k_$name$_transitions[] = {\n",
        {{"name", name}});
    bool hasAlways = false;
    for (size_t i = 0; i < ts.size(); ++i) {
      const ir::Transition& t = *ts[i];
      hasAlways = hasAlways || triggers[i].first == "kAlways";
      p.print(
          "    {$source$, ::jr2rt::TransitionInfo::$trigger$, $id$, $target$, $guarded$, $domain$, "
          "$xf$, $xn$, $ef$, $en$},  // $i$ $from$\n",
          {{"source", std::to_string(t.source)},
           {"trigger", triggers[i].first},
           {"id", std::to_string(triggers[i].second)},
           {"target", std::to_string(t.target)},
           {"guarded", t.ast->guard ? "true" : "false"},
           {"domain", std::to_string(t.domain)},
           {"xf", std::to_string(exitRuns[i].first)},
           {"xn", std::to_string(exitRuns[i].second)},
           {"ef", std::to_string(entryRuns[i].first)},
           {"en", std::to_string(entryRuns[i].second)},
           {"i", std::to_string(i)},
           {"from", from(t.ast->range)}});
    }
    if (ts.empty())
      p.print("    {0, ::jr2rt::TransitionInfo::kAlways, -1, -1, true, 0, 0, 0, 0, 0},  // none\n");
    p.print(
        "};\n\nconst ::jr2rt::MachineTables k_$name$_tables = {\n"
        "    k_$name$_states, $ns$, k_$name$_transitions, $nt$, k_$name$_sets, $if$, $in$, "
        "$always$};"
        "\n\n}  // namespace\n\n$cls$::$cls$() : ::jr2rt::Statechart(k_$name$_tables) {}\n\n",
        {{"cls", cls},
         {"name", name},
         {"ns", std::to_string(m.states.size())},
         {"nt", std::to_string(ts.size())},
         {"if", std::to_string(initialAt)},
         {"in", std::to_string(m.initial.size())},
         {"always", hasAlways ? "true" : "false"}});

    // readInput(), checkInput() and start(): the input and the parameters' defaults (the same
    // code for both), then the vars and the initial configuration.
    const Scope scope = machineScope(d);
    std::string paramNames;
    for (const auto& prm : d.params)
      paramNames += (paramNames.empty() ? "" : ", ") + CppString(prm.name.text);
    p.print("void $cls$::readInput(const ::jr2rt::Json& input, [[maybe_unused]] Context& ctx) {\n",
            {{"cls", cls}});
    p.indent();
    p.print(
        "if (!input.is_object()) throw ::jr2rt::SchemaError(\"input\", \"the input of `$name$` "
        "must be an object\");\n"
        "::jr2rt::CheckFields(input, $root$, {$names$});\n",
        {{"name", d.name.text},
         {"root", CppString("input of " + d.name.text)},
         {"names", paramNames}});
    for (const auto& prm : d.params) {
      const TypePtr t = typeOf(prm.type.get());
      const bool required = !prm.defaultValue && t->kind != K::kOptional && t->kind != K::kJson;
      if (prm.defaultValue) {
        p.print("ctx.$name$ = $value$;\n", {{"name", Ident(prm.name.text)},
                                            {"value", as(prm.defaultValue.get(), t, Scope{})}});
      }
      p.print("::jr2rt::ReadField(input, $machine$, $key$, ctx.$name$, $req$);\n",
              {{"machine", CppString("input of " + d.name.text)},
               {"key", CppString(prm.name.text)},
               {"name", Ident(prm.name.text)},
               {"req", required ? "true" : "false"}});
    }
    p.outdent();
    p.print(
        "}\n\nvoid $cls$::checkInput(const ::jr2rt::Json& input) const {\n"
        "  Context scratch;\n  readInput(input, scratch);\n}\n\n",
        {{"cls", cls}});
    p.print("void $cls$::start(::jr2rt::MachineHost& host, const ::jr2rt::Json& input) {\n",
            {{"cls", cls}});
    p.indent();
    // start() reads leniently whatever scope its caller is in: a worker's input is made from an
    // item, which may carry more fields than the worker's records (checkInput is the strict
    // check of a run's input).
    p.print(
        "{\n  ::jr2rt::LenientFields lenient;  // an item may carry more fields\n"
        "  readInput(input, ctx_);\n}\n");
    Scope paramsOnly;
    for (const auto& prm : d.params)
      paramsOnly.names[prm.name.text] = scope.names.at(prm.name.text);
    for (const auto& v : d.vars) {
      p.print("// from $from$\nctx_.$name$ = $value$;\n",
              {{"from", from(v.range)},
               {"name", Ident(v.name.text)},
               {"value", as(v.init.get(), typeOf(v.type.get()), paramsOnly)}});
    }
    p.print(fastPathFor(m) ? "begin(host);\nleaf_ = activeLeaf();\n" : "begin(host);\n");
    p.outdent();
    p.print("}\n\n");

    // eventId().
    p.print("int $cls$::eventId([[maybe_unused]] std::string_view name) const {\n", {{"cls", cls}});
    for (size_t i = 0; i < events.size(); ++i) {
      p.print("  if (name == $name$) return $i$;\n",
              {{"name", CppString(events[i]->name.text)}, {"i", std::to_string(i)}});
    }
    p.print("  return -1;\n}\n\n");

    // eventSpecs() and checkPayload(): what a Gate lists, and the payload check before delivery.
    p.print("std::vector<::jr2rt::EventSpec> $cls$::eventSpecs() const {\n  return {\n",
            {{"cls", cls}});
    for (const ast::Decl* ev : events) p.print("      $spec$,\n", {{"spec", eventSpec(ev)}});
    p.print("  };\n}\n\n");
    p.print(
        "void $cls$::checkPayload([[maybe_unused]] int event, [[maybe_unused]] const "
        "::jr2rt::Json& payload) const {\n  switch (event) {\n",
        {{"cls", cls}});
    for (size_t i = 0; i < events.size(); ++i) {
      const sema::Module* em = moduleOf(events[i]);
      if (em == nullptr || em->isStd) continue;
      p.print(
          "    case $i$: {\n      [[maybe_unused]] const auto parsed = (payload.is_null() ? "
          "::jr2rt::Json::object() : payload).get<$type$>();\n      return;\n    }\n",
          {{"i", std::to_string(i)}, {"type", structName(events[i])}});
    }
    p.print("    default:\n      return;\n  }\n}\n\n");

    // output().
    p.print("::jr2rt::Json $cls$::output() const {\n", {{"cls", cls}});
    if (d.output && d.outputExpr) {
      p.print("  if (!isDone()) return nullptr;\n  // from $from$\n  return $value$;\n",
              {{"from", from(d.outputRange)},
               {"value", asJson(d.outputExpr.get(), typeOf(d.output.get()), scope)}});
    } else {
      p.print("  return nullptr;\n");
    }
    p.print("}\n\n");

    // snapshot() / restore().
    p.print(
        "::jr2rt::Json $cls$::snapshot() const {\n  ::jr2rt::Json context = "
        "::jr2rt::Json::object();\n",
        {{"cls", cls}});
    for (const auto& prm : d.params)
      p.print("  context[$k$] = ctx_.$n$;\n",
              {{"k", CppString(prm.name.text)}, {"n", Ident(prm.name.text)}});
    for (const auto& v : d.vars)
      p.print("  context[$k$] = ctx_.$n$;\n",
              {{"k", CppString(v.name.text)}, {"n", Ident(v.name.text)}});
    p.print(
        "  return {{\"machine\", name()}, {\"active\", activeStates()}, {\"done\", isDone()}, "
        "{\"context\", context}};\n"
        "}\n\n"
        "void $cls$::restore(::jr2rt::MachineHost& host, const ::jr2rt::Json& snapshot) {\n"
        "  ::jr2rt::LenientFields lenient;  // a snapshot may hold fields a record has lost\n"
        "  [[maybe_unused]] const ::jr2rt::Json& context = snapshot.at(\"context\");\n",
        {{"cls", cls}});
    // A field the snapshot lacks (it was saved by an older version of the machine) gets what
    // start() would give it: a parameter its default, a `var` its initial value. A required
    // parameter with no default cannot be made up: the restore is refused with its name.
    for (const auto& prm : d.params) {
      const TypePtr t = typeOf(prm.type.get());
      const bool required = !prm.defaultValue && t->kind != K::kOptional && t->kind != K::kJson;
      std::string missing;
      if (prm.defaultValue) {
        missing = fmt::format("ctx_.{} = {};", Ident(prm.name.text),
                              as(prm.defaultValue.get(), t, Scope{}));
      } else if (required) {
        missing = fmt::format(
            "throw ::jr2rt::NoLongerFits({});",
            CppString("the saved run of `" + d.name.text + "` has no value for the parameter `" +
                      prm.name.text +
                      "`, which has no default; it was saved by a version of the machine "
                      "without it: give the parameter a default to restore it"));
      }
      p.print(missing.empty()
                  ? "  ::jr2rt::ReadField(context, \"context\", $k$, ctx_.$n$, false);\n"
                  : "  if (context.contains($k$)) {\n"
                    "    ::jr2rt::ReadField(context, \"context\", $k$, ctx_.$n$, false);\n"
                    "  } else {\n    $missing$\n  }\n",
              {{"k", CppString(prm.name.text)}, {"n", Ident(prm.name.text)}, {"missing", missing}});
    }
    {
      Scope paramsOnly;
      for (const auto& prm : d.params)
        paramsOnly.names[prm.name.text] = scope.names.at(prm.name.text);
      for (const auto& v : d.vars)
        p.print(
            "  if (context.contains($k$)) {\n"
            "    ::jr2rt::ReadField(context, \"context\", $k$, ctx_.$n$, false);\n"
            "  } else {  // from $from$\n    ctx_.$n$ = $value$;\n  }\n",
            {{"k", CppString(v.name.text)},
             {"n", Ident(v.name.text)},
             {"from", from(v.range)},
             {"value", as(v.init.get(), typeOf(v.type.get()), paramsOnly)}});
    }
    p.print(
        "  setActive(host, snapshot.at(\"active\").get<std::vector<std::string>>(), "
        "snapshot.at(\"done\").get<bool>());\n$leaf$}\n\n",
        {{"leaf", std::string(fastPathFor(m) ? "  leaf_ = activeLeaf();\n" : "")}});

    // guard() and act().
    p.print(
        "bool $cls$::guard(int transition, [[maybe_unused]] const ::jr2rt::Event& event) {\n  "
        "switch (transition) {\n",
        {{"cls", cls}});
    for (size_t i = 0; i < ts.size(); ++i) {
      if (!ts[i]->ast->guard) continue;
      std::string prelude;
      const Scope s = transitionScope(m, *ts[i], &prelude, false);
      p.print("    case $i$: {  // from $from$\n",
              {{"i", std::to_string(i)}, {"from", from(ts[i]->ast->guard->range)}});
      p.indent();
      p.indent();
      p.indent();
      p.print(prelude);
      p.print("return $g$;\n", {{"g", as(ts[i]->ast->guard.get(), info_.types.boolean(), s)}});
      p.outdent();
      p.outdent();
      p.outdent();
      p.print("    }\n");
    }
    p.print("    default:\n      return true;\n  }\n}\n\n");
    p.print(
        "void $cls$::act(int transition, [[maybe_unused]] const ::jr2rt::Event& event) {\n  switch "
        "(transition) {\n",
        {{"cls", cls}});
    for (size_t i = 0; i < ts.size(); ++i) {
      if (ts[i]->ast->actions.empty()) continue;
      std::string prelude;
      const Scope s = transitionScope(m, *ts[i], &prelude, true);
      p.print("    case $i$: {  // from $from$\n",
              {{"i", std::to_string(i)}, {"from", from(ts[i]->ast->range)}});
      p.indent();
      p.indent();
      p.indent();
      p.print(prelude);
      actions(p, ts[i]->ast->actions, s, d);
      p.print("break;\n");
      p.outdent();
      p.outdent();
      p.outdent();
      p.print("    }\n");
    }
    p.print("    default:\n      break;\n  }\n}\n\n");

    // enter() and exit(): a case for each state with code to run.
    p.print("void $cls$::enter(int state) {\n  switch (state) {\n", {{"cls", cls}});
    for (const ir::State& s : m.states) {
      if (!HasEntryCode(s)) continue;
      stateCase(p, s, [&] {
        for (const auto& block : s.body->entry) actions(p, block, scope, d);
        for (const ast::Invoke* inv : s.invokes) invokeStart(p, *inv, s, id.invokes.at(inv), scope);
        for (const ast::Transition* t : AftersOf(s)) {
          p.print("host().startTimer($id$, ::jr2rt::Duration{$ms$});  // from $from$\n",
                  {{"id", std::to_string(id.timers.at(t))},
                   {"ms", std::to_string(t->delayMillis)},
                   {"from", from(t->range)}});
        }
      });
    }
    p.print("    default:\n      break;\n  }\n}\n\n");
    p.print("void $cls$::exit(int state) {\n  switch (state) {\n", {{"cls", cls}});
    for (const ir::State& s : m.states) {
      if (!HasExitCode(s)) continue;
      stateCase(p, s, [&] {
        for (const auto& block : s.body->exit) actions(p, block, scope, d);
        for (const ast::Transition* t : AftersOf(s)) {
          p.print("host().cancelTimer($id$);\n", {{"id", std::to_string(id.timers.at(t))}});
        }
        for (const ast::Invoke* inv : s.invokes) {
          p.print("host().cancelInvoke($id$);\n", {{"id", std::to_string(id.invokes.at(inv))}});
        }
      });
    }
    p.print("    default:\n      break;\n  }\n}\n\n");
    if (fastPathFor(m)) fastDispatch(p, m, ts, triggers);
    p.print(
        "std::unique_ptr<::jr2rt::Machine> Make_$name$() { return std::make_unique<$cls$>(); }\n",
        {{"name", Ident(d.name.text)}, {"cls", cls}});
  }

  // The arguments of a call as a JSON object by parameter name (`arg0` … for positional ones
  // when the callee's parameters are unknown).
  std::string argsJson(const std::vector<ast::Arg>& args, const std::vector<ast::Param>* params,
                       const Scope& scope) const {
    std::string out = "::jr2rt::Json::object({";
    size_t position = 0;
    for (const auto& a : args) {
      std::string key;
      TypePtr want = info_.types.json();
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
          if (prm.name.text == key) want = typeOf(prm.type.get());
        }
      }
      out += fmt::format("{{{}, {}}}, ", CppString(key), asJson(a.value.get(), want, scope));
    }
    return out + "})";
  }

  static const std::vector<ast::Param>* ParamsOf(const ast::Decl* d) {
    if (const auto* m = llvm::dyn_cast_or_null<ast::MachineDecl>(d)) return &m->params;
    if (const auto* p = llvm::dyn_cast_or_null<ast::PoolDecl>(d)) return &p->params;
    if (const auto* x = llvm::dyn_cast_or_null<ast::ExternDecl>(d)) return &x->params;
    if (const auto* s = llvm::dyn_cast_or_null<ast::SourceDecl>(d)) return &s->params;
    return nullptr;
  }

  void invokeStart(Printer& p, const ast::Invoke& inv, const ir::State& s, int id,
                   const Scope& scope) {
    std::string kind = "kGate";
    std::string target;
    std::string input = "::jr2rt::Json::object()";
    std::string name = inv.as ? inv.as->text : "";
    if (inv.kind == ast::Invoke::Kind::kGate) {
      if (inv.gateName) name = inv.gateName->text;
      if (inv.object) input = as(inv.object.get(), info_.types.json(), scope);
    } else {
      const ast::Decl* d = inv.target.resolved;
      target = inv.target.str();
      if (inv.kind == ast::Invoke::Kind::kExtern) {
        kind = "kExtern";
      } else if (d && d->kind == ast::Decl::Kind::kAgent) {
        kind = "kAgent";
      } else if (d && d->kind == ast::Decl::Kind::kExtern) {
        kind = "kStd";
      } else {
        kind = "kMachine";
      }
      if (kind == "kAgent") {
        if (inv.object) input = as(inv.object.get(), info_.types.json(), scope);
      } else {
        input = argsJson(inv.args, ParamsOf(d), scope);
      }
    }
    p.print(
        "host().startInvoke({::jr2rt::InvokeSpec::Kind::$kind$, $id$, $target$, $name$, $path$,\n"
        "                    $input$});  // from $from$\n",
        {{"kind", kind},
         {"id", std::to_string(id)},
         {"target", CppString(target)},
         {"name", CppString(name)},
         {"path", CppString(s.path)},
         {"input", input},
         {"from", from(inv.range)}});
  }

  // ---- pools and workflows --------------------------------------------------------------------

  void poolSource(const ast::PoolDecl& pool) {
    Printer& p = c_;
    const std::string name = Ident(pool.name.text);
    p.print(
        "\n// ---- pool $pname$ (from $from$) ----\n\nconst ::jr2rt::PoolSpec& $name$_pool() {\n",
        {{"pname", pool.name.text}, {"from", from(pool.name.range)}, {"name", name}});
    p.indent();
    p.print("static const ::jr2rt::PoolSpec spec = [] {\n");
    p.indent();
    p.print(
        "::jr2rt::PoolSpec s;\ns.name = $name$;\ns.worker = $worker$;\ns.dispatch = $dispatch$;\n",
        {{"name", CppString(pool.name.text)},
         {"worker", CppString(pool.worker.target.str())},
         {"dispatch", pool.worker.dispatch ? "true" : "false"}});
    const auto* standing = llvm::dyn_cast_or_null<ast::BoolLit>(pool.standing.get());
    p.print("s.standing = $v$;\ns.reportFailures = $r$;\n",
            {{"v", standing && standing->value ? "true" : "false"},
             {"r", pool.failures == ast::PoolDecl::Failures::kReport ? "true" : "false"}});
    if (!pool.worker.dispatch && pool.worker.target.resolved) {
      const ast::Decl* w = pool.worker.target.resolved;
      const sema::Module* wm = moduleOf(w);
      const std::string prefix = wm == &module_ ? "" : fmt::format("::jr2gen::{}::", wm->stem);
      if (w->kind == ast::Decl::Kind::kMachine) {
        p.print("s.makeWorker = &$prefix$Make_$name$;\n",
                {{"prefix", prefix}, {"name", Ident(w->name.text)}});
      }
    }
    // The pool's input: its parameters, with their defaults.
    // Under StrictFields, a field no parameter has is refused; a null takes the default.
    std::string paramNames;
    for (const auto& prm : pool.params)
      paramNames += (paramNames.empty() ? "" : ", ") + CppString(prm.name.text);
    p.print("s.parseInput = [](const ::jr2rt::Json& given) {\n");
    p.indent();
    p.print(
        "if (!given.is_null() && !given.is_object()) throw ::jr2rt::SchemaError(\"input\", \"the "
        "input of `$n$` must be an object\");\n"
        "::jr2rt::Json input = given.is_null() ? ::jr2rt::Json::object() : given;\n"
        "::jr2rt::CheckFields(input, $root$, {$names$});\n",
        {{"n", pool.name.text},
         {"root", CppString("input of " + pool.name.text)},
         {"names", paramNames}});
    for (const auto& prm : pool.params) {
      const TypePtr t = typeOf(prm.type.get());
      if (prm.defaultValue) {
        p.print(
            "if (!input.contains($k$) || input[$k$].is_null()) input[$k$] = $v$;\n",
            {{"k", CppString(prm.name.text)}, {"v", asJson(prm.defaultValue.get(), t, Scope{})}});
      }
      p.print(
          "{ $type$ check{}; ::jr2rt::ReadField(input, $rec$, $k$, check, $req$); }\n",
          {{"type", cpp(t)},
           {"rec", CppString("input of " + pool.name.text)},
           {"k", CppString(prm.name.text)},
           {"req", !prm.defaultValue && t->kind != K::kOptional && t->kind != K::kJson ? "true"
                                                                                       : "false"}});
    }
    p.print("return input;\n");
    p.outdent();
    p.print("};\n");
    Scope withInput;
    withInput.names["input"] = {"input", kJson};
    Scope withItem = withInput;
    withItem.names["item"] = {"item", kJson};
    // The source.
    if (const auto* src = llvm::dyn_cast_or_null<ast::SourceDecl>(pool.sourceRef.resolved)) {
      const char* form = src->form == ast::SourceDecl::Form::kRead   ? "kRead"
                         : src->form == ast::SourceDecl::Form::kPush ? "kPush"
                                                                     : "kNext";
      p.print("s.source.name = $n$;\ns.source.form = ::jr2rt::SourceSpec::Form::$f$;\n",
              {{"n", CppString(src->name.text)}, {"f", form}});
      if (src->call)
        p.print("s.source.function = $f$;\n", {{"f", CppString(src->call->function.str())}});
      if (src->wake && src->wake->resolved) {
        const ast::Decl* wake = src->wake->resolved;
        const sema::Module* wm = moduleOf(wake);
        // The wake event as the `source` Gate lists it, and the check of its payload (like a
        // machine's checkPayload; std's events are plain JSON and take any object).
        p.print("s.source.wake = $w$;\ns.source.wakeSpec = $spec$;\n",
                {{"w", CppString(wake->name.text)}, {"spec", eventSpec(wake)}});
        if (wm != nullptr && !wm->isStd) {
          p.print(
              "s.source.checkWake = [](const ::jr2rt::Json& payload) {\n"
              "  [[maybe_unused]] const auto parsed = (payload.is_null() ? ::jr2rt::Json::object() "
              ": payload).get<$type$>();\n};\n",
              {{"type", structName(wake)}});
        } else {
          p.print(
              "s.source.checkWake = [](const ::jr2rt::Json& payload) {\n"
              "  if (!payload.is_null() && !payload.is_object()) throw "
              "::jr2rt::SchemaError(\"payload\", $msg$);\n};\n",
              {{"msg", CppString("`event " + wake->name.text + "` must be an object")}});
        }
      }
      if (const auto* d = llvm::dyn_cast_or_null<ast::DurationLit>(src->pollEvery.get())) {
        p.print("s.source.pollEveryMs = $ms$;\n", {{"ms", std::to_string(d->millis)}});
      }
      if (const auto* h = llvm::dyn_cast_or_null<ast::IntLit>(src->hold.get()))
        p.print("s.source.hold = $h$;\n", {{"h", std::to_string(h->value)}});
      // The source's arguments: the pool's `source: NAME(ARGS)`, bound to the source's
      // parameters, then the source's call arguments over those parameters.
      std::string poolArgs = "::jr2rt::Json::object()";
      if (const auto* call = llvm::dyn_cast_or_null<ast::CallExpr>(pool.source.get())) {
        poolArgs = argsJson(call->args, &src->params, withInput);
      }
      Scope params;
      for (const auto& prm : src->params) {
        params.names[prm.name.text] = {fmt::format("::jr2rt::Member(source_, {}, {})",
                                                   CppString(prm.name.text), where(prm.name.range)),
                                       kJson};
      }
      const std::string callArgs =
          src->call ? argsJson(src->call->args, ParamsOf(src->call->function.resolved), params)
                    : "::jr2rt::Json::object()";
      p.print(
          "s.source.args = []([[maybe_unused]] const ::jr2rt::Json& input) {\n"
          "  [[maybe_unused]] const ::jr2rt::Json source_ = $pool$;\n"
          "  return $call$;\n};\n",
          {{"pool", poolArgs}, {"call", callArgs}});
      // The Source's own arguments, and its hooks (served once `serve` takes deliveries): each
      // value reads `payload` and the Source's parameters.
      p.print(
          "s.source.params = []([[maybe_unused]] const ::jr2rt::Json& input) -> ::jr2rt::Json "
          "{\n  return $pool$;\n};\n",
          {{"pool", poolArgs}});
      for (const ast::Hook& h : src->hooks) {
        Scope hookScope = params;
        hookScope.names["payload"] = {"payload", kJson};
        const char* verdict = h.verdict == ast::Hook::Verdict::kCarry  ? "kCarry"
                              : h.verdict == ast::Hook::Verdict::kSkip ? "kSkip"
                                                                       : "kReread";
        std::string value = "nullptr";
        if (h.value) {
          value = h.verdict == ast::Hook::Verdict::kSkip
                      ? fmt::format("::jr2rt::Json({})",
                                    as(h.value.get(), info_.types.string(), hookScope))
                      : fmt::format("::jr2rt::Json({})",
                                    as(h.value.get(), info_.types.json(), hookScope));
        }
        p.print(
            "s.source.hooks.push_back({$svc$, $key$, ::jr2rt::HookSpec::Verdict::$v$,\n"
            "    []([[maybe_unused]] const ::jr2rt::Json& payload, [[maybe_unused]] const "
            "::jr2rt::Json& source_) -> ::jr2rt::Json { return $value$; }});  // from $from$\n",
            {{"svc", CppString(h.service.text)},
             {"key", CppString(h.eventKey)},
             {"v", verdict},
             {"value", value},
             {"from", from(h.range)}});
      }
      if (src->items) {
        Scope answer;
        answer.names["answer"] = {"answer", kJson};
        p.print(
            "s.source.items = [](const ::jr2rt::Json& answer) { return ::jr2rt::Json($v$); };\n",
            {{"v", as(src->items.get(), info_.types.json(), answer)}});
      }
    }
    if (pool.itemId) {
      p.print(
          "s.itemId = []([[maybe_unused]] const ::jr2rt::Json& item, [[maybe_unused]] const "
          "::jr2rt::Json& input) {\n"
          "  return $v$;  // from $from$\n};\n",
          {{"v", as(pool.itemId.get(), info_.types.string(), withItem)},
           {"from", from(pool.itemId->range)}});
    }
    if (pool.cap) {
      p.print(
          "s.cap = []([[maybe_unused]] const ::jr2rt::Json& input) -> int64_t {\n  return $v$;  // "
          "from $from$\n};\n",
          {{"v", as(pool.cap.get(), info_.types.integer(), withInput)},
           {"from", from(pool.cap->range)}});
    }
    // The worker's input.
    std::string itemInput;
    if (pool.worker.dispatch && pool.worker.dispatchSpec) {
      for (const auto& e : pool.worker.dispatchSpec->entries) {
        if (e.key.text == "input") itemInput = as(e.value.get(), info_.types.json(), withItem);
      }
    } else if (pool.itemInput) {
      itemInput = as(pool.itemInput.get(), info_.types.json(), withItem);
    } else if (const auto* params = ParamsOf(pool.worker.target.resolved)) {
      const ast::Param* bound = params->size() == 1 ? &(*params)[0] : nullptr;
      size_t required = 0;
      for (const auto& prm : *params) {
        if (!prm.defaultValue) ++required, bound = &prm;
      }
      if (params->size() == 1 || required == 1) {
        itemInput =
            fmt::format("::jr2rt::Json::object({{{{{}, item}}}})", CppString(bound->name.text));
      }
    }
    if (itemInput.empty()) itemInput = "item";
    p.print(
        "s.itemInput = []([[maybe_unused]] const ::jr2rt::Json& item, [[maybe_unused]] const "
        "::jr2rt::Json& input) {\n"
        "  return ::jr2rt::Json($v$);\n};\n",
        {{"v", itemInput}});
    p.print("return s;\n");
    p.outdent();
    p.print("}();\nreturn spec;\n");
    p.outdent();
    p.print("}\n");
  }

  void registration() {
    Printer& p = c_;
    p.print("\nvoid RegisterWorkflows([[maybe_unused]] ::jr2rt::Registry& registry) {\n");
    p.indent();
    for (const ir::Machine* m : machines()) {
      p.print("registry.addMachine($n$, &Make_$i$);\n",
              {{"n", CppString(m->decl->name.text)}, {"i", Ident(m->decl->name.text)}});
    }
    for (const ast::Decl* d : decls(ast::Decl::Kind::kPool)) {
      p.print("registry.addPool(&$n$_pool());\n", {{"n", Ident(d->name.text)}});
    }
    for (const ExternUse& x : externs()) {
      if (x.kind == ExternUse::kNext) {
        p.print("registry.addNext($n$, &$i$);\n", {{"n", CppString(x.name)}, {"i", Ident(x.name)}});
      } else {
        p.print("registry.addHost($n$, &$i$$idem$);\n",
                {{"n", CppString(x.name)},
                 {"i", Ident(x.name)},
                 {"idem", x.decl != nullptr && x.decl->idempotent ? ", /*idempotent=*/true" : ""}});
      }
    }
    for (const ast::Decl* d : decls(ast::Decl::Kind::kWorkflow)) {
      const auto* w = llvm::cast<ast::WorkflowDecl>(d);
      const ast::Decl* top = w->target.resolved;
      if (top == nullptr) continue;
      const sema::Module* tm = moduleOf(top);
      const std::string prefix = tm == &module_ ? "" : fmt::format("::jr2gen::{}::", tm->stem);
      std::string machine = "nullptr", pool = "nullptr";
      if (top->kind == ast::Decl::Kind::kMachine)
        machine = fmt::format("&{}Make_{}", prefix, Ident(top->name.text));
      else
        pool = fmt::format("&{}{}_pool()", prefix, Ident(top->name.text));
      p.print("registry.addWorkflow({$name$, $file$, $machine$, $pool$});  // from $from$\n",
              {{"name", CppString(w->name.text)},
               {"file", CppString(FileName(file_))},
               {"machine", machine},
               {"pool", pool},
               {"from", from(w->name.range)}});
    }
    // The module's text, hashed: a runner's assembly is the hash of its modules' (a standing
    // Pool's run is handed over to a new run at a new build, RUNTIME.md §3).
    uint64_t hash = 1469598103934665603ULL;  // FNV-1a, 64 bits
    for (const char ch : module_.source->text()) {
      hash ^= static_cast<unsigned char>(ch);
      hash *= 1099511628211ULL;
    }
    p.print(
        "registry.addModule($file$, $hash$);\n",
        {{"file", CppString(FileName(file_))}, {"hash", CppString(fmt::format("{:016x}", hash))}});
    p.outdent();
    p.print("}\n");
  }

  void source(const std::string& headerName) {
    Printer& p = c_;
    banner(p);
    p.print("#include \"$h$\"\n\n#include <cmath>\n#include <stdexcept>\n\nnamespace $ns$ {\n",
            {{"h", headerName}, {"ns", ns_}});
    for (const ast::Decl* d : recordOrder()) recordJson(*d);
    for (const ir::Machine* m : machines()) machineSource(*m);
    for (const ast::Decl* d : decls(ast::Decl::Kind::kPool))
      poolSource(*llvm::cast<ast::PoolDecl>(d));
    registration();
    p.print("\n}  // namespace $ns$\n", {{"ns", ns_}});
  }

  Options options_;
  const sema::Program& program_;
  const sema::Module& module_;
  const ir::Program& charts_;
  const sema::TypeInfo& info_;
  std::string version_;
  std::string file_;
  std::string ns_;
  Printer h_;
  Printer c_;
};

}  // namespace

Output Generate(const sema::Program& program, const sema::Module& module, const ir::Program& charts,
                const std::string& version, const Options& options) {
  return Generator(program, module, charts, version, options).run();
}

}  // namespace jr2::codegen
