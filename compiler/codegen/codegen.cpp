// Code generation: one C++ header and one source per `.jr2` file. The generators per construct
// (generators.h) print through one Printer each; this file holds what they share — identifiers,
// literals, the C++ type of a value, the module's context — and puts the two files together.

#include "compiler/codegen/codegen.h"

#include <fmt/format.h>
#include <llvm/Support/Casting.h>

#include <set>

#include "compiler/codegen/generators.h"
#include "compiler/codegen/wrap.h"

namespace jr2::codegen {
namespace {

// The runtime's interface version the generated code is written for (jr2/runtime.h's
// JR2_RUNTIME_VERSION): said once, in the static_assert and in its message.
constexpr int kRuntimeVersion = 6;

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

}  // namespace

std::string Ident(const std::string& name) {
  if (CppKeywords().count(name) != 0 || (!name.empty() && name[0] == '_')) return name + "_";
  return name;
}

std::string CppString(const std::string& s) {
  std::string out = "\"";
  char last = 0;
  for (unsigned char c : s) {
    // `??=`, `??/` …: trigraphs to older compilers, and -Wtrigraphs (in -Wall) warns of them
    // even where they are ignored; a `?` after a `?` is written `\?`.
    if (c == '?' && last == '?') {
      out += "\\?";  // and the next `?` is escaped too: `\??` would hold `??`
      continue;
    }
    last = static_cast<char>(c);
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

std::string CommentText(const std::string& s) {
  std::string out;
  for (const char c : s) out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? ' ' : c;
  for (size_t at = out.find("??"); at != std::string::npos; at = out.find("??", at))
    out.replace(at, 2, "? ?");
  while (!out.empty() && (out.back() == '\\' || out.back() == ' ')) out.pop_back();
  return out;
}

std::string CppType::spell() const {
  switch (kind) {
    case Kind::kJson:
      return "::jr2rt::JsonValue";
    case Kind::kNull:
      return "std::nullopt_t";
    case Kind::kString:
      return "std::string";
    case Kind::kInt:
      return "int64_t";
    case Kind::kDouble:
      return "double";
    case Kind::kBool:
      return "bool";
    case Kind::kDuration:
      return "::jr2rt::Duration";
    case Kind::kVector:
      return fmt::format("std::vector<{}>", elem->spell());
    case Kind::kMap:
      return fmt::format("std::map<std::string, {}>", elem->spell());
    case Kind::kOptional:
      return fmt::format("std::optional<{}>", elem->spell());
    case Kind::kStruct:
      return name;
  }
  return "::jr2rt::JsonValue";
}

bool CppType::operator==(const CppType& o) const {
  if (kind != o.kind || name != o.name) return false;
  if (elem == nullptr || o.elem == nullptr) return elem == o.elem;
  return *elem == *o.elem;
}

namespace {

std::string BaseName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

Context::Context(const sema::Program& program, const sema::Module& module,
                 const ir::Program& charts, std::string version, const Options& options)
    : program(program),
      module(module),
      charts(charts),
      info(*program.typeInfo),
      options(options),
      version(std::move(version)),
      file(BaseName(module.source->name())),
      ns("jr2gen::" + module.stem) {}

std::string Context::from(SourceRange r) const {
  return fmt::format("{}:{}", CommentText(file), module.source->lineCol(r.begin).line);
}

std::string Context::where(SourceRange r) const {
  const LineCol lc = module.source->lineCol(r.begin);
  return CppString(fmt::format("{}:{}:{}", file, lc.line, lc.column));
}

sema::TypePtr Context::typeOf(const ast::Expr* e) const {
  sema::TypePtr t = info.exprTypes.find(e);
  return t != nullptr ? t : info.types.json();
}

sema::TypePtr Context::typeOf(const ast::TypeRef* t) const {
  return t->checked != nullptr ? t->checked : info.types.json();
}

bool Context::hasStruct(const ast::Decl* d) const {
  const sema::Module* m = program.moduleOf(d);
  return m != nullptr && !m->isStd;
}

std::string Context::prefixOf(const ast::Decl* d) const {
  const sema::Module* m = program.moduleOf(d);
  return m == nullptr || m == &module ? "" : fmt::format("::jr2gen::{}::", m->stem);
}

std::string Context::structName(const ast::Decl* d) const {
  const std::string local =
      d->kind == ast::Decl::Kind::kEvent ? Ident(d->name.text) + "_event" : Ident(d->name.text);
  return prefixOf(d) + local;
}

CppType Context::cpp(const sema::TypePtr& t) const {
  using K = sema::Type::Kind;
  using C = CppType::Kind;
  switch (t->kind) {
    case K::kError:
    case K::kJson:
    case K::kNull:
      return CppType::Of(C::kJson);
    case K::kString:
    case K::kLiterals:
      return CppType::Of(C::kString);
    case K::kInt:
      return CppType::Of(C::kInt);
    case K::kFloat:
      return CppType::Of(C::kDouble);
    case K::kBool:
      return CppType::Of(C::kBool);
    case K::kDuration:
      return CppType::Of(C::kDuration);
    case K::kList:
      return CppType::Wrap(C::kVector, cpp(t->elem));
    case K::kMap:
      return CppType::Wrap(C::kMap, cpp(t->elem));
    case K::kOptional:
      return CppType::Wrap(C::kOptional, cpp(t->elem));
    case K::kRecord: {
      auto it = info.recordDecls.find(t->record);
      // An object literal's record, and std's records, are plain JSON here.
      if (it == info.recordDecls.end() || !hasStruct(it->second)) return CppType::Of(C::kJson);
      return CppType{C::kStruct, nullptr, structName(it->second)};
    }
  }
  return CppType::Of(C::kJson);
}

std::vector<const ast::Decl*> Context::decls(ast::Decl::Kind kind) const {
  std::vector<const ast::Decl*> out;
  for (const auto& d : module.ast->decls) {
    if (d->kind == kind) out.push_back(d.get());
  }
  return out;
}

std::vector<const ir::Machine*> Context::machines() const {
  std::vector<const ir::Machine*> out;
  for (const ir::Machine& m : charts.machines) {
    if (program.moduleOf(m.decl) == &module) out.push_back(&m);
  }
  return out;
}

std::vector<ExternUse> Context::externs() const {
  std::map<std::string, ExternUse> uses;
  auto add = [&](const ast::QualName& q, ExternUse::Kind kind) {
    const auto* d = llvm::dyn_cast_or_null<ast::ExternDecl>(q.resolved);
    if (d != nullptr && program.moduleOf(d) != &module) return;  // std's are the runtime's
    uses.emplace(q.str(), ExternUse{q.str(), kind, d});
  };
  for (const auto& d : module.ast->decls) {
    if (const auto* s = llvm::dyn_cast<ast::SourceDecl>(d.get()); s && s->call && s->call->isExtern)
      add(s->call->function,
          s->form == ast::SourceDecl::Form::kNext ? ExternUse::kNext : ExternUse::kHost);
  }
  for (const ir::Machine* m : machines()) {
    for (const ast::Invoke* inv : m->invokes) {
      if (inv->kind == ast::Invoke::Kind::kExtern) add(inv->target, ExternUse::kHost);
    }
  }
  std::vector<ExternUse> out;
  out.reserve(uses.size());
  for (auto& [k, v] : uses) out.push_back(v);
  return out;
}

namespace {

void Banner(const Context& cx, Printer& p) {
  p.emit(R"gen(
           // Generated by jr2c $version$ from $file$. DO NOT EDIT.
           // Change the .jr2 file and compile it again; each `// from $file$:LINE` comment below
           // points at the line this code comes from.
         )gen",
         {{"version", cx.version}, {"file", CommentText(cx.file)}});
}

std::string Header(const Context& cx) {
  Printer p;
  Banner(cx, p);
  p.emit(R"gen(
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jr2/runtime.h"

// Host functions written in C++ work with `Json` in full. This file's own source defines
// JR2_GENERATED_SOURCE: it builds without nlohmann/json (see jr2/json_value.h).
#ifndef JR2_GENERATED_SOURCE
#include "jr2/value.h"
#endif
  )gen");
  for (const auto& [stem, m] : cx.module.imports)
    p.print("#include \"$name$.h\"\n", {{"name", BaseName(m->source->name())}});
  p.emit(R"gen(

           static_assert(JR2_RUNTIME_VERSION == $runtime$,
                         $why$);

           namespace $ns$ {
         )gen",
         {{"runtime", std::to_string(kRuntimeVersion)},
          {"why", CppString(fmt::format("{} was generated by jr2c {} for runtime version {}; ",
                                        cx.file, cx.version, kRuntimeVersion)) +
                      "\n" + CppString("compile it again with the jr2c that matches this runtime")},
          {"ns", cx.ns}});
  for (const ast::Decl* d : RecordOrder(cx)) DeclareRecord(cx, p, *d);
  DeclareExterns(cx, p);
  for (const ir::Machine* m : cx.machines()) DeclareMachine(cx, p, *m);
  for (const ast::Decl* d : cx.decls(ast::Decl::Kind::kPool))
    DeclarePool(cx, p, *llvm::cast<ast::PoolDecl>(d));
  p.emit(R"gen(

           // Registers this file's workflows, machines, pools and host functions with the runner.
           void RegisterWorkflows(::jr2rt::Registry& registry);

           }  // namespace $ns$
         )gen",
         {{"ns", cx.ns}});
  return WrapLines(p.str());
}

std::string Source(const Context& cx, const std::string& headerName) {
  Printer p;
  Banner(cx, p);
  p.emit(R"gen(
    // This source sees JSON only through the runtime's calls (jr2/json_value.h), not
    // nlohmann/json: it builds in a fraction of the time.
    #ifndef JR2_GENERATED_SOURCE
    #define JR2_GENERATED_SOURCE
    #endif
    #include $header$

    #include <cmath>
    #include <stdexcept>

    // A .jr2 may compare a value with itself (`x <= x`): that is what it says, not a slip of
    // this code, which is held to -Wall -Wextra -Werror otherwise.
    #if defined(__GNUC__)
    #pragma GCC diagnostic ignored "-Wtautological-compare"
    #endif

    namespace $ns$ {
  )gen",
         {{"header", CppString(headerName)}, {"ns", cx.ns}});
  for (const ast::Decl* d : RecordOrder(cx)) DefineRecord(cx, p, *d);
  for (const ir::Machine* m : cx.machines()) DefineMachine(cx, p, *m);
  for (const ast::Decl* d : cx.decls(ast::Decl::Kind::kPool))
    DefinePool(cx, p, *llvm::cast<ast::PoolDecl>(d));
  DefineRegistration(cx, p);
  p.print("\n}  // namespace $ns$\n", {{"ns", cx.ns}});
  return WrapLines(p.str());
}

}  // namespace

Output Generate(const sema::Program& program, const sema::Module& module, const ir::Program& charts,
                const std::string& version, const Options& options) {
  const Context cx(program, module, charts, version, options);
  Output out;
  out.headerName = cx.file + ".h";
  out.sourceName = cx.file + ".cpp";
  out.header = Header(cx);
  out.source = Source(cx, out.headerName);
  return out;
}

}  // namespace jr2::codegen
