// A machine's tables: its states, the exit and entry sets of its transitions and its initial
// configuration, and its transitions with the trigger, the target and the sets ir::Build lowered
// — the runtime's MachineTables, which the table engine (::jr2rt::Statechart) runs on and the
// fast path's code is spelled out from. The rest of the machine is machine.cpp's.

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/generators.h"

namespace jr2::codegen {

using Trigger = ir::Transition::Trigger;

namespace {

// The row a transition's trigger has in the runtime's table.
const char* TableTrigger(Trigger t) {
  switch (t) {
    case Trigger::kEvent:
      return "kOn";
    case Trigger::kTimer:
      return "kAfter";
    case Trigger::kDone:
      return "kDone";
    case Trigger::kError:
      return "kError";
    case Trigger::kAlways:
      break;
  }
  return "kAlways";
}

const char* StateKind(ir::State::Kind k) {
  switch (k) {
    case ir::State::Kind::kAtomic:
      return "kAtomic";
    case ir::State::Kind::kCompound:
      return "kCompound";
    case ir::State::Kind::kParallel:
      return "kParallel";
    case ir::State::Kind::kFinal:
      break;
  }
  return "kFinal";
}

}  // namespace

InvokeShape ShapeOf(const ast::Invoke& inv) {
  InvokeShape shape{"kGate", "", inv.as ? std::string(inv.as->text) : ""};
  if (inv.kind == ast::Invoke::Kind::kGate) {
    if (inv.gateName) shape.name = inv.gateName->text;
    return shape;
  }
  const ast::Decl* d = inv.target.resolved;
  shape.target = inv.target.str();
  if (inv.kind == ast::Invoke::Kind::kExtern) {
    shape.kind = "kExtern";
  } else if (d && d->kind == ast::Decl::Kind::kAgent) {
    shape.kind = "kAgent";
  } else if (d && d->kind == ast::Decl::Kind::kExtern) {
    shape.kind = "kStd";
  } else {
    shape.kind = "kMachine";
  }
  return shape;
}

void DefineMachineTables(const Context& cx, Printer& p, const ir::Machine& m,
                         const std::vector<const ir::Transition*>& transitions,
                         const std::string& cls) {
  const ast::MachineDecl& d = *m.decl;
  const std::string name = Ident(d.name.text);
  std::vector<int> firstOf(m.states.size(), 0);  // each state's first transition
  int at = 0;
  for (const ir::State& s : m.states) {
    firstOf[static_cast<size_t>(s.id)] = at;
    at += static_cast<int>(s.transitions.size());
  }
  // The sets the transitions' exits and entries are runs of (ir::Transition): one table, each
  // distinct run once. The initial configuration first.
  std::vector<int> sets;
  std::map<std::vector<int>, int> runAt;
  auto runOf = [&](const std::vector<ir::StateId>& run) {
    if (run.empty()) return 0;
    auto [it, fresh] = runAt.emplace(run, static_cast<int>(sets.size()));
    if (fresh) sets.insert(sets.end(), run.begin(), run.end());
    return it->second;
  };
  const int initialAt = runOf(m.initial);
  std::vector<std::pair<int, int>> exitRuns, entryRuns;  // (first, count) per transition
  for (const ir::Transition* t : transitions) {
    exitRuns.emplace_back(runOf(t->exits), static_cast<int>(t->exits.size()));
    entryRuns.emplace_back(runOf(t->entries), static_cast<int>(t->entries.size()));
  }
  bool hasAlways = false;
  for (const ir::Transition* t : transitions)
    hasAlways = hasAlways || t->trigger == Trigger::kAlways;
  p.emit(R"gen(

    // ---- machine $jr2name$ (from $from$) ----

    namespace {

    // Its states (path, parent, kind, initial, depth, transitions: first, count).
    const ::jr2rt::StateInfo k_$name$_states[] = {
        $states$
    };

    // The exit and entry sets of its transitions, and its initial configuration.
    const int k_$name$_sets[] = {
        $sets$
    };

    // Its transitions (source, trigger, id, target, guarded, domain, exits: first, count,
    // entries: first, count).
    const ::jr2rt::TransitionInfo k_$name$_transitions[] = {
        $transitions$
    };

    $invokes$
    $timers$
    const ::jr2rt::MachineTables k_$name$_tables = {
        k_$name$_states, $ns$, k_$name$_transitions, $nt$, k_$name$_sets, $if$, $in$, $always$,
        $invokeTable$, $ni$, $timerTable$, $nm$};

    }  // namespace

    $cls$::$cls$() : ::jr2rt::Statechart(k_$name$_tables) {}
  )gen",
         {{"jr2name", d.name.text},
          {"from", cx.from(d.name.range)},
          {"name", name},
          {"cls", cls},
          {"ns", std::to_string(m.states.size())},
          {"nt", std::to_string(transitions.size())},
          {"if", std::to_string(initialAt)},
          {"in", std::to_string(m.initial.size())},
          {"always", hasAlways ? "true" : "false"},
          {"ni", std::to_string(m.invokes.size())},
          {"nm", std::to_string(m.timers.size())},
          {"invokeTable", m.invokes.empty() ? "nullptr" : "k_" + name + "_invokes"},
          {"timerTable", m.timers.empty() ? "nullptr" : "k_" + name + "_timers"},
          {"invokes",
           [&] {
             if (m.invokes.empty()) return;
             std::map<const ast::Invoke*, ir::StateId> stateOf;
             for (const ir::State& s : m.states) {
               for (const ast::Invoke* inv : s.invokes) stateOf[inv] = s.id;
             }
             p.print(
                 "// Its invokes by id (state, kind, target, name): what a restore matches a "
                 "stored child by.\n"
                 "const ::jr2rt::InvokeInfo k_$name$_invokes[] = {\n",
                 {{"name", name}});
             for (size_t i = 0; i < m.invokes.size(); ++i) {
               const InvokeShape shape = ShapeOf(*m.invokes[i]);
               p.print(
                   "    {$state$, ::jr2rt::InvokeSpec::Kind::$kind$, $target$, $as$},  // $i$\n",
                   {{"state", std::to_string(stateOf.at(m.invokes[i]))},
                    {"kind", shape.kind},
                    {"target", CppString(shape.target)},
                    {"as", CppString(shape.name)},
                    {"i", std::to_string(i)}});
             }
             p.print("};\n\n");
           }},
          {"timers",
           [&] {
             if (m.timers.empty()) return;
             p.print(
                 "// Its timers by id (state, milliseconds): what a restore matches a stored "
                 "timer by.\n"
                 "const ::jr2rt::TimerInfo k_$name$_timers[] = {\n",
                 {{"name", name}});
             for (size_t i = 0; i < m.timers.size(); ++i) {
               p.print("    {$state$, $ms$},  // $i$\n",
                       {{"state", std::to_string(m.timers[i]->source)},
                        {"ms", std::to_string(m.timers[i]->ast->delayMillis)},
                        {"i", std::to_string(i)}});
             }
             p.print("};\n\n");
           }},
          {"states",
           [&] {
             for (const ir::State& s : m.states) {
               p.print(
                   "{$path$, $parent$, ::jr2rt::StateInfo::$kind$, $initial$, $depth$, "
                   "$first$, $n$},  // $id$$from$\n",
                   {{"path", CppString(s.path)},
                    {"parent", std::to_string(s.parent)},
                    {"kind", StateKind(s.kind)},
                    {"initial", std::to_string(s.initial)},
                    {"depth", std::to_string(s.depth)},
                    {"first", std::to_string(firstOf[static_cast<size_t>(s.id)])},
                    {"n", std::to_string(s.transitions.size())},
                    {"id", std::to_string(s.id)},
                    {"from", s.ast ? " " + cx.from(s.ast->name.range) : ""}});
             }
           }},
          {"sets",
           [&] {
             if (sets.empty()) {
               p.print("0,\n");
               return;
             }
             for (size_t i = 0; i < sets.size(); i += 20) {
               std::string line;
               for (size_t k = i; k < std::min(i + 20, sets.size()); ++k)
                 line += (k == i ? "" : " ") + std::to_string(sets[k]) + ",";
               p.print("$line$\n", {{"line", line}});
             }
           }},
          {"transitions", [&] {
             for (size_t i = 0; i < transitions.size(); ++i) {
               const ir::Transition& t = *transitions[i];
               p.print(
                   "{$source$, ::jr2rt::TransitionInfo::$trigger$, $id$, $target$, $guarded$, "
                   "$domain$, $xf$, $xn$, $ef$, $en$},  // $i$ $from$\n",
                   {{"source", std::to_string(t.source)},
                    {"trigger", TableTrigger(t.trigger)},
                    {"id", std::to_string(t.triggerId)},
                    {"target", std::to_string(t.target)},
                    {"guarded", t.ast->guard ? "true" : "false"},
                    {"domain", std::to_string(t.domain)},
                    {"xf", std::to_string(exitRuns[i].first)},
                    {"xn", std::to_string(exitRuns[i].second)},
                    {"ef", std::to_string(entryRuns[i].first)},
                    {"en", std::to_string(entryRuns[i].second)},
                    {"i", std::to_string(i)},
                    {"from", cx.from(t.ast->range)}});
             }
             if (transitions.empty()) {
               p.print(
                   "{0, ::jr2rt::TransitionInfo::kAlways, -1, -1, true, 0, 0, 0, 0, 0},"
                   "  // none\n");
             }
           }}});
}

}  // namespace jr2::codegen
