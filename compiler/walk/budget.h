// A workflow's concurrency, worked out before anything runs (docs/checks.md#e0412): the most
// Pool workers, processes (`invoke std.command`) and dispatched runs it can have live at once.
// Caps multiply down each nesting path (a Pool's worker that invokes a Pool); parallel regions
// and the invokes of one state add; the states of one region take the largest. The load walk
// holds a workflow's declared `budget { … }` to it (E0412), and `jr2c graph` shows it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/statechart.h"
#include "compiler/sema/program.h"

namespace jr2::walk {

// One figure: the most at once, and the path that reaches it (`tickets 4 × build 8`). Unbounded
// when a cap on the way has no bound (`why` says which, and where).
struct Figure {
  int64_t most = 0;
  bool unbounded = false;
  std::string path;         // how `most` is reached; empty when it is 0
  std::string why;          // unbounded: which cap, in words
  SourceRange at;           // unbounded: the cap
  std::string boundedHint;  // unbounded: the cap's expression, for the fix (`input.jobs`)
};

struct Concurrency {
  Figure workers;    // Pool workers (child machines of a Pool of machines)
  Figure processes;  // processes started by `invoke std.command`
  Figure runs;       // runs dispatched by a Pool of runs
};

struct WorkflowConcurrency {
  const ast::WorkflowDecl* workflow = nullptr;
  Concurrency most;
};

// Phase entry (read by the load walk and `jr2c graph`): every workflow's concurrency, in the
// order the program declares them.
std::vector<WorkflowConcurrency> WorkOutConcurrency(const sema::Program& program,
                                                    const ir::Program& charts);

// A constant integer, if the expression is one: an `int` literal, or unary minus and
// `+ - * / %` over constants (parentheses leave no node, so `(0)` folds too). An expression that
// reads a name (`input`, …) is not a constant. Division and remainder truncate, as the runtime's
// `Div` and `Mod` do. An overflow or a division by zero makes the expression not a constant: the
// run reports it as a defect when it evaluates the expression, and no check here claims a value.
// (The load walk's checks of `cap` read it too.)
std::optional<int64_t> ConstantInt(const ast::Expr* e);

// `8 workers, 8 processes, 0 runs` (with `unbounded` where one is).
std::string Describe(const Concurrency& c);

}  // namespace jr2::walk
