#include "compiler/ir/statechart.h"

#include <fmt/format.h>
#include <llvm/Support/Casting.h>

#include <algorithm>
#include <deque>
#include <map>

#include "compiler/diag/suggest.h"
#include "compiler/sema/rules.h"

namespace jr2::ir {

bool Machine::contains(StateId a, StateId b) const {
  for (StateId s = b; s != kNoState; s = states[s].parent) {
    if (s == a) return true;
  }
  return false;
}

StateId Machine::lca(StateId a, StateId b) const {
  while (states[a].depth > states[b].depth) a = states[a].parent;
  while (states[b].depth > states[a].depth) b = states[b].parent;
  while (a != b) {
    a = states[a].parent;
    b = states[b].parent;
  }
  return a;
}

bool Machine::canBeActiveTogether(StateId a, StateId b) const {
  if (contains(a, b) || contains(b, a)) return true;
  return states[lca(a, b)].kind == State::Kind::kParallel;
}

std::vector<bool> Machine::enterable() const {
  // A state is entered when the run starts in it (the root, the initial child of an entered
  // compound state, every region of an entered parallel state), or when an enterable state
  // outside it has a transition into it or a state inside it. Neither a state's own transitions
  // into itself nor its own `initial` count (docs/checks.md#which-states-can-be-entered).
  std::vector<bool> entered(states.size(), false);
  std::deque<StateId> work;
  auto enter = [&](StateId s) {
    // Entering a state enters its ancestors and its default descendants.
    std::vector<StateId> todo;
    for (StateId a = s; a != kNoState; a = states[a].parent) todo.push_back(a);
    while (!todo.empty()) {
      const StateId x = todo.back();
      todo.pop_back();
      if (entered[x]) continue;
      entered[x] = true;
      work.push_back(x);
      const State& st = states[x];
      if (st.kind == State::Kind::kParallel) {
        for (StateId c : st.children) todo.push_back(c);
      } else if (st.initial != kNoState) {
        todo.push_back(st.initial);
      }
    }
  };
  enter(0);
  while (!work.empty()) {
    const StateId s = work.front();
    work.pop_front();
    for (const Transition& t : states[s].transitions) {
      if (t.target == kNoState) continue;
      // A transition into the state it stands in (or one inside it) enters nothing new.
      if (contains(t.target, s) && t.target != s) continue;
      if (!entered[t.target]) enter(t.target);
    }
  }
  return entered;
}

namespace {

size_t CountStates(const ast::StateBody& body) {
  size_t n = body.states.size();
  for (const auto& child : body.states) n += CountStates(child->body);
  return n;
}

class Builder {
 public:
  Builder(Machine& m, Diagnostics& diags) : m_(m), diags_(diags) {}

  void build() {
    State root;
    root.id = 0;
    root.kind = State::Kind::kCompound;
    root.body = &m_.decl->body;
    // Every vector here is reserved to its size: growth by doubling left a third of the IR's
    // memory unused, and the IR is made while the whole AST is alive, at a check's peak (#15).
    m_.states.reserve(1 + CountStates(m_.decl->body));
    m_.states.push_back(root);
    addChildren(0, m_.decl->body);
    for (const State& s : m_.states) shape(s);
    // Transitions after every state exists: targets may point anywhere.
    for (size_t i = 0; i < m_.states.size(); ++i) {
      const ast::StateBody* body = m_.states[i].body;
      m_.states[i].transitions.reserve(body->transitions.size());
      for (const ast::Transition& t : body->transitions) {
        Transition tr;
        tr.ast = &t;
        tr.source = static_cast<StateId>(i);
        tr.target = t.target ? resolve(static_cast<StateId>(i), *t.target) : kNoState;
        if (t.target && tr.target == kNoState) continue;  // reported
        m_.states[i].transitions.push_back(tr);
        alwaysLoop(m_.states[i], tr);
      }
    }
    lowerSets();
    lowerTriggers();
  }

 private:
  // Each transition's trigger and the id it matches, and the machine's id spaces (see Machine).
  void lowerTriggers() {
    std::map<const ast::Invoke*, int> invokeId;
    for (const State& s : m_.states) {
      for (const ast::Invoke* inv : s.invokes) {
        invokeId.emplace(inv, static_cast<int>(m_.invokes.size()));
        m_.invokes.push_back(inv);
      }
      for (const Transition& t : s.transitions) {
        const ast::Decl* ev = t.ast->event.resolved;
        if (t.ast->kind == ast::Transition::Kind::kOn &&
            t.ast->trigger == ast::Transition::Trigger::kEvent && ev != nullptr &&
            std::find(m_.events.begin(), m_.events.end(), ev) == m_.events.end()) {
          m_.events.push_back(ev);
        }
      }
    }
    std::stable_sort(
        m_.events.begin(), m_.events.end(),
        [](const ast::Decl* a, const ast::Decl* b) { return a->name.text < b->name.text; });
    for (State& s : m_.states) {
      for (Transition& t : s.transitions) {
        const ast::Transition& a = *t.ast;
        if (a.kind == ast::Transition::Kind::kAfter) {
          t.trigger = Transition::Trigger::kTimer;
          t.triggerId = static_cast<int>(m_.timers.size());
          m_.timers.push_back(&t);
        } else if (a.kind == ast::Transition::Kind::kAlways) {
          t.trigger = Transition::Trigger::kAlways;
        } else if (a.trigger == ast::Transition::Trigger::kEvent) {
          t.trigger = Transition::Trigger::kEvent;
          t.event = a.event.resolved;
          const auto at = std::find(m_.events.begin(), m_.events.end(), t.event);
          if (at != m_.events.end()) t.triggerId = static_cast<int>(at - m_.events.begin());
        } else {
          t.trigger = a.trigger == ast::Transition::Trigger::kDone ? Transition::Trigger::kDone
                                                                   : Transition::Trigger::kError;
          t.heard = sema::HeardInvoke(a, s.invokes);
          if (t.heard != nullptr) t.triggerId = invokeId.at(t.heard);
        }
      }
    }
  }

  // Marks `s` and its default descendants: a compound state's initial child, every region of a
  // parallel one.
  void addDefault(StateId s, std::vector<bool>& into) const {
    into[s] = true;
    const State& st = m_.states[s];
    if (st.kind == State::Kind::kParallel) {
      for (StateId c : st.children) addDefault(c, into);
    } else if (st.initial != kNoState) {
      addDefault(st.initial, into);
    }
  }

  // Each transition's domain, exit and entry sets, and the initial configuration (see
  // Transition): computed once, here, for the tables and the fast path alike.
  void lowerSets() {
    const auto n = static_cast<StateId>(m_.states.size());
    auto inside = [&](StateId s, StateId a) { return s != a && m_.contains(a, s); };
    std::vector<bool> start(m_.states.size(), false);
    std::vector<StateId> scratch;  // a transition's exit or entry set, before its copy
    addDefault(0, start);
    for (StateId x = 0; x < n; ++x) {
      if (start[x]) m_.initial.push_back(x);
    }
    for (State& s : m_.states) {
      for (Transition& t : s.transitions) {
        if (t.target == kNoState) continue;
        for (StateId p = m_.states[t.source].parent; p != kNoState; p = m_.states[p].parent) {
          if (m_.states[p].kind == State::Kind::kParallel) continue;
          if (p == 0 || inside(t.target, p)) {
            t.domain = p;
            break;
          }
        }
        // Collected once into `scratch`, then copied at their exact size.
        scratch.clear();
        for (StateId x = 0; x < n; ++x) {
          if (inside(x, t.domain)) scratch.push_back(x);
        }
        t.exits.assign(scratch.begin(), scratch.end());
        std::vector<bool> enter(m_.states.size(), false);
        addDefault(t.target, enter);
        for (StateId a = m_.states[t.target].parent; a != t.domain && a != kNoState;
             a = m_.states[a].parent) {
          enter[a] = true;
          if (m_.states[a].kind != State::Kind::kParallel) continue;
          for (StateId c : m_.states[a].children) {
            bool entered = false;
            for (StateId x = 0; x < n && !entered; ++x) entered = enter[x] && m_.contains(c, x);
            if (!entered) addDefault(c, enter);
          }
        }
        scratch.clear();
        for (StateId x = 0; x < n; ++x) {
          if (enter[x]) scratch.push_back(x);
        }
        t.entries.assign(scratch.begin(), scratch.end());
      }
    }
  }

  void addChildren(StateId parent, const ast::StateBody& body) {
    m_.states[parent].invokes.reserve(body.invokes.size());
    m_.states[parent].children.reserve(body.states.size());
    for (const ast::Invoke& inv : body.invokes) m_.states[parent].invokes.push_back(&inv);
    for (const auto& child : body.states) {
      State s;
      s.id = static_cast<StateId>(m_.states.size());
      s.name = child->name.text;
      s.path = m_.states[parent].path.empty() ? s.name : m_.states[parent].path + "." + s.name;
      s.parent = parent;
      s.depth = m_.states[parent].depth + 1;
      s.ast = child.get();
      s.body = &child->body;
      if (child->final)
        s.kind = State::Kind::kFinal;
      else if (child->parallel)
        s.kind = State::Kind::kParallel;
      else if (!child->body.states.empty())
        s.kind = State::Kind::kCompound;
      m_.states.push_back(s);
      m_.states[parent].children.push_back(s.id);
      if (child->initial && m_.states[parent].kind != State::Kind::kParallel) {
        if (m_.states[parent].initial == kNoState) m_.states[parent].initial = s.id;
      }
      addChildren(s.id, child->body);
    }
  }

  std::string describe(const State& s) const {
    return s.id == 0 ? fmt::format("machine `{}`", m_.decl->name.text)
                     : fmt::format("state `{}`", s.path);
  }

  SourceRange rangeOf(const State& s) const {
    return s.id == 0 ? m_.decl->name.range : s.ast->name.range;
  }

  void shape(const State& s) {
    const ast::StateBody& body = *s.body;
    if (s.kind == State::Kind::kFinal) {
      std::vector<std::string> what;
      if (!body.states.empty()) what.push_back("child states");
      if (!body.transitions.empty()) what.push_back("transitions");
      if (!body.invokes.empty()) what.push_back("invokes");
      if (!what.empty()) {
        std::string list;
        for (size_t i = 0; i < what.size(); ++i) {
          if (i > 0) list += i + 1 == what.size() ? " and " : ", ";
          list += what[i];
        }
        diags_.emit(diag::FinalStateBody,
                    s.ast->finalRange.valid() ? s.ast->finalRange : rangeOf(s), s.name, list,
                    "remove `final`, or move them to another state");
      }
      return;
    }
    if (s.id == 0 && body.states.empty()) {
      diags_.emit(diag::NoStates, m_.decl->name.range, m_.decl->name.text);
      return;
    }
    if (s.kind == State::Kind::kParallel) {
      for (const auto& c : body.states) {
        if (c->initial) diags_.emit(diag::InitialInParallel, c->initialRange, c->name.text, s.path);
      }
      return;
    }
    if (body.states.empty()) return;
    const ast::State* first = nullptr;
    for (const auto& c : body.states) {
      if (!c->initial) continue;
      if (first == nullptr) {
        first = c.get();
      } else {
        diags_
            .emit(diag::TwoInitialStates, c->initialRange, describe(s), first->name.text,
                  c->name.text)
            .note(diag::NoteMarkedInitialHere, first->initialRange, first->name.text);
      }
    }
    if (first == nullptr) {
      diags_.emit(diag::NoInitialState, rangeOf(s), describe(s), body.states.front()->name.text)
          .fix(
              SourceRange::point(body.states.front()->range.file, body.states.front()->range.begin),
              "initial ");
    }
  }

  // TARGET resolution (docs/language.md#transitions): one name is a sibling of the source state,
  // else a sibling of the nearest enclosing state that has one; a dotted name is absolute.
  StateId resolve(StateId source, const ast::QualName& target) {
    auto childNamed = [&](StateId parent, const std::string& name) {
      for (StateId c : m_.states[parent].children) {
        if (m_.states[c].name == name) return c;
      }
      return kNoState;
    };
    StateId found = kNoState;
    if (target.isSimple()) {
      const std::string& name = target.parts[0].text;
      for (StateId p = source == 0 ? 0 : m_.states[source].parent;
           p != kNoState && found == kNoState; p = m_.states[p].parent) {
        found = childNamed(p, name);
      }
    } else {
      found = 0;
      for (const auto& part : target.parts) {
        found = childNamed(found, part.text);
        if (found == kNoState) break;
      }
    }
    if (found != kNoState) return found;
    std::vector<std::string> candidates;
    for (const State& s : m_.states) {
      if (s.id != 0) candidates.push_back(target.isSimple() ? s.name : s.path);
    }
    const std::string guess = ClosestName(target.str(), candidates);
    std::string fix;
    std::string elsewhere;  // a state of that name that the rule does not reach
    if (target.isSimple()) {
      for (const State& s : m_.states) {
        if (s.id != 0 && s.name == target.str()) elsewhere = s.path;
      }
    }
    if (!elsewhere.empty()) {
      fix = fmt::format(
          "`{}` is not beside this state or one that encloses it; name it by its path "
          "from the machine root: `-> {}`",
          target.str(), elsewhere);
      diags_.emit(diag::TargetNotFound, target.range, target.str(), fix)
          .fix(target.range, elsewhere);
      return kNoState;
    }
    if (!guess.empty()) {
      fix = fmt::format("did you mean `{}`?", guess);
    } else if (!target.isSimple()) {
      fix = "a dotted target is a path from the machine root, such as `review.waiting`";
    } else {
      fix = fmt::format("declare `state {}` beside this state or beside one that encloses it",
                        target.str());
    }
    auto b = diags_.emit(diag::TargetNotFound, target.range, target.str(), fix);
    if (!guess.empty()) b.fix(target.range, guess);
    return kNoState;
  }

  void alwaysLoop(const State& s, const Transition& t) {
    if (t.ast->kind != ast::Transition::Kind::kAlways || t.ast->guard) return;
    if (t.target == s.id)
      diags_.emit(diag::AlwaysLoop, t.ast->keywordRange, s.path.empty() ? "the root" : s.path);
  }

  Machine& m_;
  Diagnostics& diags_;
};

}  // namespace

Program Build(const sema::Program& program, Diagnostics& diags) {
  Program out;
  size_t machines = 0;
  for (const auto& module : program.modules) {
    for (const auto& d : module->ast->decls)
      machines += llvm::isa<ast::MachineDecl>(d.get()) ? 1 : 0;
  }
  out.machines.reserve(machines);
  for (const auto& module : program.modules) {
    for (const auto& d : module->ast->decls) {
      const auto* m = llvm::dyn_cast<ast::MachineDecl>(d.get());
      if (m == nullptr) continue;
      out.machines.emplace_back();
      out.machines.back().decl = m;
      Builder(out.machines.back(), diags).build();
    }
  }
  return out;
}

}  // namespace jr2::ir
