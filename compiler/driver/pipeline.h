// The checks after loading, as one entry function: the pipeline `jr2c`'s commands, the language
// server, the fuzzer and the benchmarks share.
#pragma once

#include "compiler/diag/diagnostics.h"
#include "compiler/ir/statechart.h"
#include "compiler/sema/program.h"

namespace jr2::driver {

// Every check after loading, in the phases' order: names, types, the statechart IR and the load
// walk. A program with a syntax error (E0001) gets none of them (its trees are partial) and an
// empty IR. `keep`: whether code generation follows (sema::Keep).
ir::Program Analyze(sema::Program& program, Diagnostics& diags,
                    sema::Keep keep = sema::Keep::kCodegen);

}  // namespace jr2::driver
