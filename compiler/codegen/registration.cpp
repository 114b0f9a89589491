// Host functions and registration: the header declares each extern the module calls (the user
// defines them; a missing one is a link error that names it), and the source's
// RegisterWorkflows() gives the runner the module's machines, pools, host functions, workflows
// and the hash of its text.

#include <fmt/format.h>
#include <llvm/Support/Casting.h>

#include "compiler/codegen/generators.h"
#include "compiler/sema/rules.h"
#include "compiler/walk/budget.h"

namespace jr2::codegen {

void DeclareExterns(const Context& cx, Printer& p) {
  const auto list = cx.externs();
  if (list.empty()) return;
  p.emit(R"gen(

    // Host functions: define each in your C++ (a missing one is a link error that names it).
  )gen");
  for (const ExternUse& x : list) {
    if (x.kind == ExternUse::kNext) {
      p.emit(R"gen(
               // `next: extern $name$`: given the source's arguments (by parameter name) and the
               // query, answers the next item, null, or { item, open }.
               ::jr2rt::Json $ident$(const ::jr2rt::Json& args, const ::jr2rt::NextQuery& query);
             )gen",
             {{"name", x.name}, {"ident", Ident(x.name)}});
    } else {
      p.emit(R"gen(
        // `extern $name$`: given its arguments as a JSON object by parameter name (positional
        // ones are `arg0`, `arg1` …); throw ::jr2rt::Failure to fail the invoking machine.
        ::jr2rt::Json $ident$(const ::jr2rt::Json& args);
      )gen",
             {{"name", x.name}, {"ident", Ident(x.name)}});
    }
  }
}

namespace {

// A workflow's input as JSON Schema text (sema::JsonSchema of its top's parameters), as a C++
// string; `nullptr` when sema kept none (its top did not check).
std::string InputSchemaOf(const Context& cx, const ast::Decl* top) {
  const auto it = cx.info.inputTypes.find(top);
  if (it == cx.info.inputTypes.end() || it->second->record == nullptr) return "nullptr";
  return CppString(sema::JsonSchema(*it->second->record));
}

// What the workflow can have live at once (walk::WorkOutConcurrency) as a C++ string of JSON:
// `{"workers":2,"processes":0,"runs":0}`, null for an unbounded figure.
std::string ConcurrencyOf(const std::vector<walk::WorkflowConcurrency>& all,
                          const ast::WorkflowDecl* w) {
  for (const walk::WorkflowConcurrency& wc : all) {
    if (wc.workflow != w) continue;
    auto one = [](const walk::Figure& f) {
      return f.unbounded ? std::string("null") : std::to_string(f.most);
    };
    return CppString(fmt::format(R"({{"workers":{},"processes":{},"runs":{}}})",
                                 one(wc.most.workers), one(wc.most.processes), one(wc.most.runs)));
  }
  return "nullptr";
}

}  // namespace

void DefineRegistration(const Context& cx, Printer& p) {
  // The module's text, hashed: a runner's assembly is the hash of its modules' (a standing
  // Pool's run is handed over to a new run at a new build: "Hand-overs" in
  // docs/runtime.md#standing-pools-of-runs-over-push-sources-12).
  uint64_t hash = 1469598103934665603ULL;  // FNV-1a, 64 bits
  for (const char ch : cx.module.source->text()) {
    hash ^= static_cast<unsigned char>(ch);
    hash *= 1099511628211ULL;
  }
  p.emit(R"gen(

    void RegisterWorkflows([[maybe_unused]] ::jr2rt::Registry& registry) {
      $machines$
      $pools$
      $hosts$
      $agents$
      $workflows$
      registry.addModule($file$, $hash$);
    }
  )gen",
         {{"file", CppString(cx.file)},
          {"hash", CppString(fmt::format("{:016x}", hash))},
          {"machines",
           [&] {
             for (const ir::Machine* m : cx.machines()) {
               p.print("registry.addMachine($n$, &Make_$i$);\n",
                       {{"n", CppString(m->decl->name.text)}, {"i", Ident(m->decl->name.text)}});
             }
           }},
          {"pools",
           [&] {
             for (const ast::Decl* d : cx.decls(ast::Decl::Kind::kPool))
               p.print("registry.addPool(&$n$_pool());\n", {{"n", Ident(d->name.text)}});
           }},
          {"hosts",
           [&] {
             for (const ExternUse& x : cx.externs()) {
               const Printer::Vars vars = {{"n", CppString(x.name)}, {"i", Ident(x.name)}};
               if (x.kind == ExternUse::kNext)
                 p.print("registry.addNextFunction($n$, &$i$);\n", vars);
               else if (x.decl != nullptr && x.decl->idempotent)
                 p.print("registry.addHostFunction($n$, &$i$, /*idempotent=*/true);\n", vars);
               else
                 p.print("registry.addHostFunction($n$, &$i$);\n", vars);
             }
           }},
          {"agents",
           [&] {
             // Each agent declaration as a harness reads it; `picks` always set (sema's default
             // when the declaration has none).
             const ExprGen expr(cx);
             for (const ast::Decl* d : cx.decls(ast::Decl::Kind::kAgent)) {
               const auto* a = llvm::cast<ast::AgentDecl>(d);
               std::string entries;
               bool picks = false;
               for (const ast::BodyEntry& e : a->entries) {
                 const bool count = e.key.text == "picks";
                 picks = picks || count;
                 const sema::TypePtr t = count ? cx.info.types.integer() : cx.info.types.string();
                 entries += fmt::format("{}, {}, ", CppString(e.key.text),
                                        expr.asJson(e.value.get(), t, Scope{}));
               }
               if (!picks) {
                 entries += fmt::format("\"picks\", int64_t{{{}}}, ", sema::kDefaultAgentPicks);
               }
               p.emit(R"gen(
                        // from $from$
                        registry.addAgent($name$, ::jr2rt::Object($entries$));
                      )gen",
                      {{"name", CppString(d->name.text)},
                       {"entries", entries.substr(0, entries.size() - 2)},
                       {"from", cx.from(d->name.range)}});
             }
           }},
          {"workflows", [&] {
             const std::vector<walk::WorkflowConcurrency> concurrency =
                 walk::WorkOutConcurrency(cx.program, cx.charts);
             for (const ast::Decl* d : cx.decls(ast::Decl::Kind::kWorkflow)) {
               const auto* w = llvm::cast<ast::WorkflowDecl>(d);
               const ast::Decl* top = w->target.resolved;
               if (top == nullptr) continue;
               const bool machine = top->kind == ast::Decl::Kind::kMachine;
               p.emit(R"gen(
                        // from $from$
                        registry.addWorkflow({$name$, $file$, $machine$, $pool$, $schema$,
                                              $concurrency$});
                      )gen",
                      {{"name", CppString(w->name.text)},
                       {"concurrency", ConcurrencyOf(concurrency, w)},
                       {"schema", InputSchemaOf(cx, top)},
                       {"file", CppString(cx.file)},
                       {"machine",
                        machine ? fmt::format("&{}Make_{}", cx.prefixOf(top), Ident(top->name.text))
                                : "nullptr"},
                       {"pool", machine ? "nullptr"
                                        : fmt::format("&{}{}_pool()", cx.prefixOf(top),
                                                      Ident(top->name.text))},
                       {"from", cx.from(w->name.range)}});
             }
           }}});
}

}  // namespace jr2::codegen
