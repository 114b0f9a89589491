// `type` and `event` records: a struct in the header, its JSON conversions in the source. An
// `event`'s struct is `<name>_event`; a field with a default is initialized with it.

#include <fmt/format.h>
#include <llvm/Support/Casting.h>

#include <functional>
#include <set>

#include "compiler/codegen/generators.h"

namespace jr2::codegen {

using sema::TypePtr;
using K = sema::Type::Kind;

const std::vector<ast::Field>& FieldsOf(const ast::Decl& d) {
  return d.kind == ast::Decl::Kind::kType ? llvm::cast<ast::TypeDecl>(d).fields
                                          : llvm::cast<ast::EventDecl>(d).fields;
}

std::vector<const ast::Decl*> RecordOrder(const Context& cx) {
  std::vector<const ast::Decl*> all = cx.decls(ast::Decl::Kind::kType);
  for (const ast::Decl* e : cx.decls(ast::Decl::Kind::kEvent)) all.push_back(e);
  std::vector<const ast::Decl*> out;
  std::set<const ast::Decl*> done, visiting;
  std::function<void(const ast::Decl*)> visit = [&](const ast::Decl* d) {
    if (done.count(d) || visiting.count(d)) return;
    visiting.insert(d);
    std::function<void(TypePtr)> deps = [&](const TypePtr& t) {
      if (t->kind == K::kOptional || t->kind == K::kList || t->kind == K::kMap)
        return deps(t->elem);
      if (t->kind != K::kRecord) return;
      auto it = cx.info.recordDecls.find(t->record);
      if (it != cx.info.recordDecls.end() && cx.program.moduleOf(it->second) == &cx.module)
        visit(it->second);
    };
    for (const auto& f : cx.info.declTypes.at(d)->record->fields) deps(f.type);
    visiting.erase(d);
    done.insert(d);
    out.push_back(d);
  };
  for (const ast::Decl* d : all) visit(d);
  return out;
}

void DeclareRecord(const Context& cx, Printer& p, const ast::Decl& d) {
  const sema::Record& r = *cx.info.declTypes.at(&d)->record;
  const auto& fields = FieldsOf(d);
  const ExprGen expr(cx);
  p.emit(R"gen(

           // from $from$
           struct $name$ {
             $fields$
           };
           void to_json(::jr2rt::Json& j, const $name$& v);
           void from_json(const ::jr2rt::Json& j, $name$& v);
           void read_json(const ::jr2rt::Json& j, $name$& v, const ::jr2rt::Path& path);
         )gen",
         {{"from", cx.from(d.name.range)},
          {"name", cx.structName(&d)},
          {"fields", [&] {
             for (size_t i = 0; i < fields.size(); ++i) {
               const sema::RecordField& f = r.fields[i];
               std::string init;
               if (fields[i].defaultValue)
                 init = " = " + expr.as(fields[i].defaultValue.get(), f.type, Scope{});
               else if (f.type->kind == K::kInt || f.type->kind == K::kFloat)
                 init = " = 0";
               else if (f.type->kind == K::kBool)
                 init = " = false";
               if (fields[i].description)
                 p.print("// $doc$\n", {{"doc", CommentText(*fields[i].description)}});
               p.print("$type$ $name$$init$;\n",
                       {{"type", cx.cpp(f.type).spell()}, {"name", Ident(f.name)}, {"init", init}});
             }
           }}});
}

void DefineRecord(const Context& cx, Printer& p, const ast::Decl& d) {
  const sema::Record& r = *cx.info.declTypes.at(&d)->record;
  std::string names;
  for (const auto& f : r.fields) names += (names.empty() ? "" : ", ") + CppString(f.name);
  p.emit(R"gen(

    // from $from$
    void to_json(::jr2rt::Json& j, [[maybe_unused]] const $name$& v) {
      ::jr2rt::MakeObject(j);
      $write$
    }

    void from_json(const ::jr2rt::Json& j, $name$& v) {
      read_json(j, v, $record$);
    }

    void read_json(
        const ::jr2rt::Json& j, [[maybe_unused]] $name$& v, const ::jr2rt::Path& path) {
      ::jr2rt::CheckRecord(j, path, {$names$});
      $read$
    }
  )gen",
         {{"from", cx.from(d.name.range)},
          {"name", cx.structName(&d)},
          {"record", CppString(r.name)},
          {"names", names},
          {"write",
           [&] {
             for (const auto& f : r.fields) {
               p.print("::jr2rt::Put(::jr2rt::SetField(j, $key$), v.$field$);\n",
                       {{"key", CppString(f.name)}, {"field", Ident(f.name)}});
             }
           }},
          {"read", [&] {
             for (const auto& f : r.fields) {
               p.print("::jr2rt::ReadField(j, path, $key$, v.$field$, $req$);\n",
                       {{"key", CppString(f.name)},
                        {"field", Ident(f.name)},
                        {"req", f.required ? "true" : "false"}});
               const bool optional = f.type->kind == K::kOptional;
               const TypePtr ft = optional ? f.type->elem : f.type;
               if (ft->kind != K::kLiterals) continue;
               std::string list;
               for (const auto& lit : ft->literals)
                 list += (list.empty() ? "" : ", ") + CppString(lit);
               const Printer::Vars vars = {
                   {"field", Ident(f.name)}, {"key", CppString(f.name)}, {"list", list}};
               if (optional) {
                 p.print(
                     "if (v.$field$) ::jr2rt::CheckLiteral(*v.$field$, {$list$}, "
                     "path.field($key$));\n",
                     vars);
               } else {
                 p.print("::jr2rt::CheckLiteral(v.$field$, {$list$}, path.field($key$));\n", vars);
               }
             }
           }}});
}

void CheckLiterals(Printer& p, const TypePtr& t, const std::string& member, const std::string& root,
                   const std::string& name) {
  const bool optional = t->kind == K::kOptional;
  const TypePtr lt = optional ? t->elem : t;
  if (lt == nullptr || lt->kind != K::kLiterals) return;
  std::string list;
  for (const auto& lit : lt->literals) list += (list.empty() ? "" : ", ") + CppString(lit);
  const Printer::Vars vars = {{"m", member},
                              {"list", list},
                              {"root", root},
                              {"key", CppString(name)},
                              {"deref", optional ? "*" : ""},
                              {"cond", optional ? "if (" + member + ") " : ""}};
  p.print(
      "$cond$::jr2rt::CheckLiteral($deref$$m$, {$list$}, ::jr2rt::Path($root$).field($key$));\n",
      vars);
}

}  // namespace jr2::codegen
