// The statechart IR: each machine as a flat table of states with resolved transition targets,
// shared by the load walk and code generation. Built by ir::Build, which also checks the shape
// of each machine (E0300–E0303, E0306, E0307).
#pragma once

#include <string>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostics.h"
#include "compiler/sema/program.h"

namespace jr2::ir {

using StateId = int;
inline constexpr StateId kNoState = -1;

struct Transition {
  // What a transition is taken on, resolved: an event the machine handles, the timer of its
  // `after`, the completion or the Failure of the invoke its `on done` / `on error` hears
  // (sema::HeardInvoke), or nothing (`always`).
  enum class Trigger { kEvent, kTimer, kDone, kError, kAlways };

  const ast::Transition* ast = nullptr;
  StateId source = kNoState;
  Trigger trigger = Trigger::kAlways;
  // The id the trigger matches: the event's index in Machine::events, the timer's in
  // Machine::timers, the heard invoke's in Machine::invokes; -1 for `always` (and for an
  // `on done` that hears nothing, which E0305 refuses).
  int triggerId = -1;
  const ast::Decl* event = nullptr;    // kEvent: the event's declaration
  const ast::Invoke* heard = nullptr;  // kDone, kError: the invoke it hears
  StateId target = kNoState;           // kNoState: a targetless transition (it stays)
  // What taking it does, decided here once (the runtime's tables and the generated fast path
  // both read it; docs/semantics.md): its domain, the nearest proper ancestor of the source that
  // is not parallel and strictly contains the target (the root at the latest); the states it may
  // exit, the domain's descendants; and the states it enters, the target with its default
  // descendants, its ancestors below the domain and the other regions of any parallel one among
  // those. Both in document order (state id order). Empty for a targetless transition.
  StateId domain = 0;
  std::vector<StateId> exits;
  std::vector<StateId> entries;
};

struct State {
  enum class Kind { kAtomic, kCompound, kParallel, kFinal };
  StateId id = 0;
  std::string name;  // "" for the root
  std::string path;  // `review.waiting`, "" for the root
  Kind kind = Kind::kAtomic;
  StateId parent = kNoState;
  std::vector<StateId> children;
  StateId initial = kNoState;  // compound states: the initial child
  int depth = 0;
  const ast::State* ast = nullptr;  // null for the root
  const ast::StateBody* body = nullptr;
  std::vector<const ast::Invoke*> invokes;
  std::vector<Transition> transitions;
};

struct Machine {
  const ast::MachineDecl* decl = nullptr;
  std::vector<State> states;     // states[0] is the root; document (pre-)order
  std::vector<StateId> initial;  // the initial configuration: the root's default descendants
  // The ids the generated code and the runtime's tables use. Events: those the machine's
  // transitions are taken on, sorted by name. Invokes: every invoke, in state order. Timers:
  // every `after` transition, in state order.
  std::vector<const ast::Decl*> events;
  std::vector<const ast::Invoke*> invokes;
  std::vector<const Transition*> timers;

  const State& root() const { return states[0]; }
  // Whether `a` is `b` or one of its ancestors.
  bool contains(StateId a, StateId b) const;
  StateId lca(StateId a, StateId b) const;
  // Two states can be active together when they are one state, one is inside the other, or their
  // nearest common ancestor is parallel and they lie in different regions of it.
  bool canBeActiveTogether(StateId a, StateId b) const;
  // For each state, whether a run can enter it (docs/checks.md#which-states-can-be-entered).
  std::vector<bool> enterable() const;
};

struct Program {
  std::vector<Machine> machines;
};

// Phase entry: lowers every machine of the program and reports ill-formed shapes.
Program Build(const sema::Program& program, Diagnostics& diags);

}  // namespace jr2::ir
