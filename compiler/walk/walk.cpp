// The load walk (docs/checks.md). Each check says why, as
// docs/diagnostics.md#how-a-message-is-worded asks, points at the offending construct, adds notes
// on the related ones, and gives the fix.

#include "compiler/walk/walk.h"

#include <fmt/format.h>
#include <llvm/Support/Casting.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <set>

#include "compiler/sema/rules.h"
#include "compiler/walk/budget.h"

namespace jr2::walk {
namespace {

using ir::StateId;

class Walker {
 public:
  Walker(const sema::Program& program, const ir::Program& charts, Diagnostics& diags)
      : program_(program), charts_(charts), diags_(diags) {}

  void run() {
    collectUses();
    for (const auto& m : program_.modules) {
      for (const auto& d : m->ast->decls) {
        if (const auto* p = llvm::dyn_cast<ast::PoolDecl>(d.get())) pool(*p);
        if (const auto* s = llvm::dyn_cast<ast::SourceDecl>(d.get())) source(*s);
        if (const auto* a = llvm::dyn_cast<ast::AgentDecl>(d.get())) agentPicks(*a);
      }
    }
    for (const ir::Machine& m : charts_.machines) {
      eventNames(m);
      agents(m);
      gates(m);
      audience(m);
      modes(m);
      shadowed(m);
    }
    unhandledEvents();
    budgets();
  }

 private:
  // E0412: each workflow's declared budget against what its caps allow (walk/budget.h).
  void budgets() {
    bool any = false;
    for (const auto& m : program_.modules) {
      for (const auto& d : m->ast->decls) {
        if (const auto* w = llvm::dyn_cast<ast::WorkflowDecl>(d.get()); w && !w->budget.empty())
          any = true;
      }
    }
    if (!any) return;
    for (const WorkflowConcurrency& wc : WorkOutConcurrency(program_, charts_)) {
      const ast::WorkflowDecl& w = *wc.workflow;
      for (const ast::BodyEntry& e : w.budget) {
        const std::string key(e.key.text);
        const auto n = ConstantInt(e.value.get());
        if (!n || *n < 1) {
          const SourceFile* f = nullptr;
          for (const auto& mod : program_.modules) {
            if (mod->source != nullptr && mod->source->id() == e.value->range.file) f = mod->source;
          }
          const std::string text =
              f == nullptr ? "?"
                           : std::string(f->text().substr(
                                 e.value->range.begin, e.value->range.end - e.value->range.begin));
          diags_.emit(diag::BudgetNotPositive, e.value->range, key, text);
          continue;
        }
        const Figure& f = key == "workers"     ? wc.most.workers
                          : key == "processes" ? wc.most.processes
                                               : wc.most.runs;
        if (f.unbounded) {
          diags_
              .emit(diag::BudgetUnbounded, e.value->range, std::string(w.name.text), *n, key, f.why,
                    f.boundedHint.empty()
                        ? std::string("run it at a fixed depth (a machine cannot invoke itself "
                                      "under a budget)")
                        : fmt::format("bound it: write `cap: min({}, N)`", f.boundedHint))
              .note(diag::NoteUnboundedCap, f.at);
        } else if (f.most > *n) {
          diags_.emit(diag::BudgetExceeded, e.value->range, std::string(w.name.text), f.most, key,
                      *n, fmt::format("{} = {} {}", f.path, f.most, key));
        }
      }
    }
  }

  // Who names each pool (workflows) and who invokes it (machines, pools).
  void collectUses() {
    for (const auto& m : program_.modules) {
      for (const auto& d : m->ast->decls) {
        if (const auto* w = llvm::dyn_cast<ast::WorkflowDecl>(d.get())) {
          if (w->target.resolved) workflowsOf_[w->target.resolved].push_back(w);
        }
        if (const auto* p = llvm::dyn_cast<ast::PoolDecl>(d.get())) {
          if (!p->worker.dispatch && p->worker.target.resolved) {
            invokedBy_[p->worker.target.resolved].push_back(p->worker.target.range);
          }
        }
      }
    }
    for (const ir::Machine& m : charts_.machines) {
      for (const ir::State& s : m.states) {
        for (const ast::Invoke* inv : s.invokes) {
          if (inv->target.resolved) invokedBy_[inv->target.resolved].push_back(inv->target.range);
        }
        // From the written transitions, not the IR's: a transition whose target is wrong
        // (E0302) still says which event the author meant to handle.
        for (const ast::Transition& t : s.body->transitions) {
          // Only `on EVENT` names an event: `always` and `after` keep the default trigger but
          // name none, and must not count as an `on` whose event did not resolve.
          if (t.kind != ast::Transition::Kind::kOn ||
              t.trigger != ast::Transition::Trigger::kEvent) {
            continue;
          }
          if (t.event.resolved) {
            handled_.insert(t.event.resolved);
          } else {
            unresolvedEvent_ = true;
          }
        }
      }
    }
  }

  // An Agent's `picks:` (E0504): from 1 to kMaxAgentPicks, when it is a constant integer (its
  // type is checked with the other entries).
  void agentPicks(const ast::AgentDecl& a) {
    for (const ast::BodyEntry& e : a.entries) {
      if (e.key.text != "picks") continue;
      const auto n = ConstantInt(e.value.get());
      if (n && (*n < 1 || *n > sema::kMaxAgentPicks)) {
        diags_.emit(diag::AgentPicksRange, e.value->range, std::to_string(*n), a.name.text,
                    *n < 1 ? "no pick at all" : "more picks than a person should wait for",
                    static_cast<int>(sema::kMaxAgentPicks));
      }
    }
  }

  // ---- Pools and Sources (E04xx) --------------------------------------------------------------

  void pool(const ast::PoolDecl& p) { poolRules(p); }

  // The rules of E0400–E0411 for one pool; returns whether it stands.
  bool poolRules(const ast::PoolDecl& p) {
    const bool runs = p.worker.dispatch;
    bool standing = false;
    SourceRange standingRange;
    if (p.standing) {
      standingRange = p.standing->range;
      if (const auto* b = llvm::dyn_cast<ast::BoolLit>(p.standing.get())) {
        standing = b->value;
      } else {
        diags_.emit(diag::SyntaxStandingNotWord, p.standing->range);
      }
    }
    const std::string workerName = p.worker.target.str();
    const ast::Decl* worker = p.worker.target.resolved;
    const bool childWorker = worker != nullptr && (worker->kind == ast::Decl::Kind::kMachine ||
                                                   worker->kind == ast::Decl::Kind::kPool);
    if (standing && !runs && childWorker) {
      diags_.emit(diag::StandingChildPool, standingRange, p.name.text, workerName)
          .note(diag::NoteChildMachineOfPool, p.worker.range, workerName);
    }
    if (standing && runs) {
      auto wf = workflowsOf_.find(&p);
      auto inv = invokedBy_.find(&p);
      if (inv != invokedBy_.end()) {
        auto b = diags_.emit(
            diag::StandingInvoked, standingRange, p.name.text,
            wf == workflowsOf_.end()
                ? fmt::format("give the Pool its own `workflow NAME = {}` and remove the invoke",
                              p.name.text)
                : std::string(
                      "remove the invoke: the Pool is the top machine of its own workflow"));
        b.note(diag::NoteInvokedHere, inv->second.front(), p.name.text);
        if (wf != workflowsOf_.end()) {
          b.note(diag::NoteWorkflowRunsPool, wf->second.front()->name.range,
                 wf->second.front()->name.text);
        }
        b.note(diag::NotePoolDeclaredHere, p.name.range, p.name.text);
      } else if (wf == workflowsOf_.end()) {
        diags_.emit(diag::StandingNotTop, standingRange, p.name.text)
            .note(diag::NotePoolDeclaredHere, p.name.range, p.name.text)
            .fix(SourceRange::point(p.range.file, p.range.end),
                 fmt::format("\nworkflow {}_workflow = {}", p.name.text, p.name.text));
      }
    }
    if (runs && !standing) {
      diags_.emit(diag::RunsPoolNotStanding, p.worker.range, p.name.text, workerName)
          .note(diag::NotePoolDeclaredHere, p.name.range, p.name.text);
    }
    if (runs) dispatch(p);
    if (runs && !p.cap) diags_.emit(diag::RunsPoolNoCap, p.name.range, p.name.text, workerName);
    if (const auto* s = llvm::dyn_cast_or_null<ast::SourceDecl>(p.sourceRef.resolved);
        s && s->form == ast::SourceDecl::Form::kPush && !standing) {
      diags_.emit(diag::PushOnDrainingPool, p.source->range, s->name.text, p.name.text)
          .note(diag::NotePushSourceDeliveriesOnly, s->formRange, s->name.text)
          .note(diag::NotePoolDoesNotStand, p.name.range, p.name.text);
    }
    if (!p.itemId) {
      diags_.emit(diag::ItemIdMissing, p.name.range, p.name.text);
    } else if (!ast::ReadsName(p.itemId.get(), "item")) {
      diags_.emit(diag::ItemIdNotOverItem, p.itemId->range);
    }
    if (standing && p.failures != ast::PoolDecl::Failures::kUnset) {
      diags_.emit(diag::FailuresOnStanding, p.failuresRange, p.name.text).fix(p.failuresRange, "");
    }
    if (auto cap = ConstantInt(p.cap.get()); cap && *cap < 1) {
      diags_.emit(diag::CapNotPositive, p.cap->range, std::to_string(*cap));
    }
    return standing;
  }

  void dispatch(const ast::PoolDecl& p) {
    const ast::ObjectExpr* spec = p.worker.dispatchSpec.get();
    const ast::ObjectEntry* wait = nullptr;
    const ast::ObjectEntry* target = nullptr;
    if (spec != nullptr) {
      for (const auto& e : spec->entries) {
        if (e.key.text == "wait") wait = &e;
        if (e.key.text == "target") target = &e;
      }
    }
    const std::string wf = p.worker.target.str();
    if (wait == nullptr) {
      diags_.emit(diag::DispatchNoWait, spec ? spec->range : p.worker.range, wf);
    } else if (const auto* b = llvm::dyn_cast<ast::BoolLit>(wait->value.get()); !b || !b->value) {
      diags_.emit(diag::DispatchWaitNotTrue, wait->value->range, wf)
          .fix(wait->value->range, "true");
    }
    if (target != nullptr) {
      diags_.emit(diag::DispatchTarget, target->key.range, p.name.text);
    }
    // A standing workflow has one run, kept by jr2: nothing else starts it (the runtime would
    // refuse each item's run as `start-refused`, one by one).
    const auto* callee = llvm::dyn_cast_or_null<ast::WorkflowDecl>(p.worker.target.resolved);
    const auto* pool =
        callee ? llvm::dyn_cast_or_null<ast::PoolDecl>(callee->target.resolved) : nullptr;
    const auto* stands =
        pool ? llvm::dyn_cast_or_null<ast::BoolLit>(pool->standing.get()) : nullptr;
    if (stands != nullptr && stands->value) {
      diags_
          .emit(diag::DispatchToStanding, p.worker.target.range, p.name.text, wf, pool->name.text,
                pool->worker.target.str())
          .note(diag::NotePoolDeclaredHere, pool->name.range, pool->name.text);
    }
  }

  void source(const ast::SourceDecl& s) {
    if (s.form == ast::SourceDecl::Form::kRead && s.call) {
      bool idempotent = s.call->idempotent;
      if (const auto* x = llvm::dyn_cast_or_null<ast::ExternDecl>(s.call->function.resolved)) {
        idempotent = idempotent || x->idempotent;
      }
      if (!idempotent) {
        diags_.emit(diag::ReadNotIdempotent, s.call->range, s.name.text, s.call->function.str())
            .fix(SourceRange::point(s.call->range.file, s.call->range.end), " idempotent");
      }
    }
    for (const ast::Hook& h : s.hooks) {
      const bool push = s.form == ast::SourceDecl::Form::kPush;
      if (h.verdict == ast::Hook::Verdict::kCarry && !push) {
        diags_.emit(diag::CarryOnReadingSource, h.verdictRange, s.name.text)
            .note(diag::NoteSourceOfForm, s.formRange, s.name.text,
                  s.form == ast::SourceDecl::Form::kRead ? "read" : "next");
      } else if (h.verdict == ast::Hook::Verdict::kReread && push) {
        diags_.emit(diag::RereadOnPush, h.verdictRange, s.name.text)
            .note(diag::NotePushSource, s.formRange, s.name.text);
      }
    }
    if (s.wake && s.wake->resolved) handled_.insert(s.wake->resolved);
  }

  // Two events of one name (`ea.go`, `eb.go` from two imports) handled by one machine: a Gate
  // and an Agent name events by their name, so they could not be told apart (E0101).
  void eventNames(const ir::Machine& m) {
    std::map<std::string, const ast::Transition*> seen;
    for (const ir::State& s : m.states) {
      for (const auto& t : s.body->transitions) {
        if (t.trigger != ast::Transition::Trigger::kEvent || t.event.resolved == nullptr) continue;
        const std::string& name = t.event.resolved->name.text;
        auto [it, inserted] = seen.emplace(name, &t);
        if (inserted || it->second->event.resolved == t.event.resolved) continue;
        diags_
            .emit(diag::DuplicateMember, t.event.range, "the event name", name,
                  fmt::format("machine `{}` (`{}` and `{}` are two events, and a Gate or an Agent "
                              "names an event by its name)",
                              m.decl->name.text, it->second->event.str(), t.event.str()))
            .note(diag::NoteHandledHere, it->second->event.range, it->second->event.str());
      }
    }
  }

  // ---- Agents (E0500, E0501) ------------------------------------------------------------------

  struct AgentUse {
    StateId state;
    const ast::Invoke* invoke;
  };

  void agents(const ir::Machine& m) {
    std::map<const ast::Decl*, std::vector<AgentUse>> uses;
    for (const ir::State& s : m.states) {
      for (const ast::Invoke* inv : s.invokes) {
        if (inv->target.resolved && inv->target.resolved->kind == ast::Decl::Kind::kAgent) {
          uses[inv->target.resolved].push_back({s.id, inv});
        }
      }
    }
    for (const auto& [agent, list] : uses) {
      for (size_t j = 1; j < list.size(); ++j) {
        for (size_t i = 0; i < j; ++i) {
          if (!m.canBeActiveTogether(list[i].state, list[j].state)) continue;
          diags_
              .emit(diag::AgentSlotTwice, list[j].invoke->target.range, agent->name.text,
                    where(m, list[i].state), why(m, list[i].state, list[j].state))
              .note(diag::NoteAlsoInvokedHere, list[i].invoke->target.range, agent->name.text);
          break;
        }
      }
      for (const AgentUse& use : list) parallelBelow(m, use);
    }
  }

  std::string where(const ir::Machine& m, StateId s) const {
    return s == 0 ? "the machine root" : fmt::format("state `{}`", m.states[s].path);
  }

  std::string why(const ir::Machine& m, StateId a, StateId b,
                  const char* same = "one state invokes it twice") const {
    if (a == b) return same;
    if (m.contains(a, b) || m.contains(b, a)) return "one state is inside the other";
    return fmt::format("they are regions of parallel state `{}`", m.states[m.lca(a, b)].path);
  }

  void parallelBelow(const ir::Machine& m, const AgentUse& use) {
    for (const ir::State& s : m.states) {
      if (s.kind != ir::State::Kind::kParallel || !m.contains(use.state, s.id)) continue;
      if (reportedParallel_.count(&s)) continue;
      reportedParallel_.insert(&s);
      diags_
          .emit(diag::ParallelBelowAgent,
                s.ast->parallelRange.valid() ? s.ast->parallelRange : s.ast->name.range, s.path,
                std::string(s.id == use.state ? "the Agent's own" : "inside"),
                m.states[use.state].path, use.invoke->target.str())
          .note(diag::NoteAgentInvokedHere, use.invoke->target.range);
    }
  }

  // ---- Gate names (E0309) ----------------------------------------------------------------------

  // A Gate's name is its authored name or, without one, its state's path
  // (docs/language.md#invokes); two Gates of one name that can be open together could not be told
  // apart by whoever answers.
  void gates(const ir::Machine& m) {
    struct GateUse {
      StateId state;
      const ast::Invoke* invoke;
    };
    std::map<std::string, std::vector<GateUse>> byName;
    for (const ir::State& s : m.states) {
      for (const ast::Invoke* inv : s.invokes) {
        if (inv->kind != ast::Invoke::Kind::kGate) continue;
        byName[inv->gateName ? inv->gateName->text.str() : s.path].push_back({s.id, inv});
      }
    }
    for (const auto& [name, list] : byName) {
      for (size_t j = 1; j < list.size(); ++j) {
        for (size_t i = 0; i < j; ++i) {
          if (!m.canBeActiveTogether(list[i].state, list[j].state)) continue;
          const ast::Invoke& here = *list[j].invoke;
          diags_
              .emit(diag::GateNameTwice, here.gateName ? here.gateName->range : here.range,
                    name.empty() ? std::string("(the machine root)") : name,
                    fmt::format("invoked in {}", where(m, list[i].state)),
                    why(m, list[i].state, list[j].state, "one state invokes both"))
              .note(diag::NoteOtherGateNamed,
                    list[i].invoke->gateName ? list[i].invoke->gateName->range
                                             : list[i].invoke->range,
                    name);
          break;
        }
      }
    }
  }

  // ---- Audience (E0503) -----------------------------------------------------------------------

  void audience(const ir::Machine& m) {
    for (const ir::State& s : m.states) {
      if (s.kind == ir::State::Kind::kFinal) continue;  // its transitions are E0303 already
      for (const ir::Transition& t : s.transitions) {
        if (t.ast->trigger != ast::Transition::Trigger::kEvent) continue;
        const auto* ev = llvm::dyn_cast_or_null<ast::EventDecl>(t.ast->event.resolved);
        if (ev == nullptr) continue;
        if (ev->audience != ast::Audience::kAgent && ev->audience != ast::Audience::kExternal)
          continue;
        const bool agent = ev->audience == ast::Audience::kAgent;
        if (partyNear(m, s.id, agent)) continue;
        diags_
            .emit(agent ? diag::AgentEventNoAgent : diag::ExternalEventNoGate, t.ast->event.range,
                  ev->name.text, where(m, s.id))
            .note(diag::NoteDeclaredAudienceHere, ev->audienceRange, ev->name.text,
                  agent ? "agent" : "external");
      }
    }
  }

  // Whether a party of the right kind may send on `s`'s transitions: an Agent (or a Gate) invoked
  // in `s` or a state above it (docs/checks.md#who-may-send-an-event). A transition with no party
  // at all at or above it belongs to every party, so then a party invoked inside `s` also counts:
  // its accepted set takes its ancestors' transitions.
  bool partyNear(const ir::Machine& m, StateId s, bool agent) const {
    auto isParty = [](const ast::Invoke* inv, bool wantAgent) {
      if (wantAgent) {
        return inv->target.resolved != nullptr &&
               inv->target.resolved->kind == ast::Decl::Kind::kAgent;
      }
      return inv->kind == ast::Invoke::Kind::kGate;
    };
    bool anyAbove = false;
    for (StateId a = s; a != ir::kNoState; a = m.states[a].parent) {
      for (const ast::Invoke* inv : m.states[a].invokes) {
        if (isParty(inv, agent)) return true;
        if (isParty(inv, !agent)) anyAbove = true;
      }
    }
    if (anyAbove) return false;
    for (const ir::State& x : m.states) {
      if (x.id == s || !m.contains(s, x.id)) continue;
      for (const ast::Invoke* inv : x.invokes) {
        if (isParty(inv, agent)) return true;
      }
    }
    return false;
  }

  // ---- Modes (W0600) and shadowed transitions (W0601) -----------------------------------------

  void modes(const ir::Machine& m) {
    // A compound state with no initial child is E0300; what it cannot enter follows from that.
    for (const ir::State& s : m.states) {
      if (s.kind == ir::State::Kind::kCompound && s.initial == ir::kNoState) return;
    }
    // A target that did not resolve (E0302) is most likely the way into the state it misspells:
    // what nothing enters then follows from that one mistake, and is not reported again.
    // (ir::Build drops such a transition, so a state has fewer than it wrote.)
    for (const ir::State& s : m.states) {
      if (s.transitions.size() != s.body->transitions.size()) return;
    }
    const std::vector<bool> entered = m.enterable();
    for (const ir::State& s : m.states) {
      if (s.id == 0 || entered[s.id]) continue;
      // Report only the outermost state nothing enters; its children follow from it.
      if (s.parent != 0 && !entered[s.parent]) continue;
      diags_.emit(diag::StateNeverEntered, s.ast->name.range, s.path);
    }
  }

  // What a transition's trigger hears, resolved once: the event of an `on EVENT`, the invoke of
  // an `on done` / `on error` (its `as NAME`, or the state's only invoke when there is no `as`),
  // so that `on done` and `on done as NAME` in a state with one invoke are one trigger.
  struct Trigger {
    const ast::Decl* event = nullptr;
    const ast::Invoke* invoke = nullptr;
  };

  static Trigger resolveTrigger(const ast::Transition& t, const ast::StateBody& body) {
    Trigger r;
    if (t.kind != ast::Transition::Kind::kOn) return r;
    if (t.trigger == ast::Transition::Trigger::kEvent) {
      r.event = t.event.resolved;
      return r;
    }
    std::vector<const ast::Invoke*> invokes;
    for (const ast::Invoke& inv : body.invokes) invokes.push_back(&inv);
    r.invoke = sema::HeardInvoke(t, invokes);
    return r;
  }

  void shadowed(const ir::Machine& m) {
    for (const ir::State& s : m.states) {
      const auto& ts = s.body->transitions;
      std::vector<Trigger> heard;
      heard.reserve(ts.size());
      for (const ast::Transition& t : ts) heard.push_back(resolveTrigger(t, *s.body));
      for (size_t j = 1; j < ts.size(); ++j) {
        for (size_t i = 0; i < j; ++i) {
          if (ts[i].guard || !sameTrigger(ts[i], heard[i], ts[j], heard[j])) continue;
          diags_
              .emit(diag::TransitionShadowed, ts[j].keywordRange, describe(ts[i]),
                    s.path.empty() ? m.decl->name.text.str() : s.path)
              .note(diag::NoteEarlierTransition, ts[i].keywordRange);
          break;
        }
      }
    }
  }

  static bool sameTrigger(const ast::Transition& a, const Trigger& ha, const ast::Transition& b,
                          const Trigger& hb) {
    if (a.kind != b.kind) return false;
    switch (a.kind) {
      case ast::Transition::Kind::kAlways:
        return true;
      case ast::Transition::Kind::kAfter:
        return a.delayMillis == b.delayMillis;
      case ast::Transition::Kind::kOn:
        if (a.trigger != b.trigger) return false;
        if (a.trigger == ast::Transition::Trigger::kEvent) {
          return ha.event != nullptr && ha.event == hb.event;
        }
        if (ha.invoke != nullptr || hb.invoke != nullptr) return ha.invoke == hb.invoke;
        // Neither resolves (E0305, or an unknown or ambiguous invoke): compare as written.
        return (a.invokeName ? a.invokeName->text : "") == (b.invokeName ? b.invokeName->text : "");
    }
    return false;
  }

  static std::string describe(const ast::Transition& t) {
    switch (t.kind) {
      case ast::Transition::Kind::kAlways:
        return "`always`";
      case ast::Transition::Kind::kAfter:
        return "`after` with the same delay";
      case ast::Transition::Kind::kOn:
        break;
    }
    if (t.trigger != ast::Transition::Trigger::kEvent) {
      const char* word = t.trigger == ast::Transition::Trigger::kDone ? "done" : "error";
      return t.invokeName ? fmt::format("`on {} as {}`", word, t.invokeName->text)
                          : fmt::format("`on {}`", word);
    }
    return fmt::format("`on {}`", t.event.str());
  }

  // ---- Events (E0502) -------------------------------------------------------------------------

  void unhandledEvents() {
    // An `on` whose event did not resolve (E0100) may be the handler the author meant.
    if (unresolvedEvent_) return;
    // Only the files being checked: a shared file of events imported here may declare events that
    // other programs handle. A second declaration of one name is E0101 already.
    // A file of declarations only (types, events, agents, externs: no machine, pool or source)
    // is a vocabulary for the files that import it, and is compiled on its own by
    // jr2_add_workflow: whether its events are handled is for its importers to say.
    auto declaresOnly = [](const sema::Module* m) {
      for (const auto& d : m->ast->decls) {
        if (d->kind == ast::Decl::Kind::kMachine || d->kind == ast::Decl::Kind::kPool ||
            d->kind == ast::Decl::Kind::kSource) {
          return false;
        }
      }
      return true;
    };
    for (const sema::Module* m : program_.roots) {
      if (declaresOnly(m)) continue;
      for (const auto& d : m->ast->decls) {
        auto first = m->decls.find(d->name.text);
        if (first != m->decls.end() && first->second != d.get()) continue;
        if (d->kind == ast::Decl::Kind::kEvent && handled_.count(d.get()) == 0) {
          diags_.emit(diag::EventUnhandled, d->name.range, d->name.text);
        }
      }
    }
  }

  const sema::Program& program_;
  const ir::Program& charts_;
  Diagnostics& diags_;
  std::map<const ast::Decl*, std::vector<const ast::WorkflowDecl*>> workflowsOf_;
  std::map<const ast::Decl*, std::vector<SourceRange>> invokedBy_;
  std::set<const ast::Decl*> handled_;
  bool unresolvedEvent_ = false;
  std::set<const ir::State*> reportedParallel_;
};

}  // namespace

void LoadWalk(const sema::Program& program, const ir::Program& charts, Diagnostics& diags) {
  Walker(program, charts, diags).run();
}

}  // namespace jr2::walk
