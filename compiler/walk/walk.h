// The load walk: the checks of docs/checks.md that look at a whole program — Pools and Sources
// (E0400–E0411), Agent slots, modes and audience (E0500–E0503), and the warnings W0600/W0601.
#pragma once

#include "compiler/diag/diagnostics.h"
#include "compiler/ir/statechart.h"
#include "compiler/sema/program.h"

namespace jr2::walk {

// Phase entry: runs every load-walk check over the resolved, typed program and its statecharts.
void LoadWalk(const sema::Program& program, const ir::Program& charts, Diagnostics& diags);

}  // namespace jr2::walk
