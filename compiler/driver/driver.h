// The `jr2c` command line as a library function, so tests run it in-process.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "compiler/diag/diagnostics.h"
#include "compiler/ir/statechart.h"
#include "compiler/sema/program.h"

namespace jr2::driver {

// Exit codes of `jr2c` (docs/diagnostics.md#exit-codes).
inline constexpr int kExitClean = 0;
inline constexpr int kExitErrors = 1;
inline constexpr int kExitUsage = 2;
// `jr2c diff`: a change strands stored runs or refuses what was accepted (as `buf breaking`).
inline constexpr int kExitBreaking = 100;

// Runs `jr2c ARGS…` (args exclude the program name). Diagnostics in text form go to `err`; JSON
// and SARIF go to `out`. Returns the exit code.
int Run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// Every check after loading, in the phases' order: names, types, the statechart IR and the load
// walk. A program with a syntax error (E0001) gets none of them (its trees are partial) and an
// empty IR. The one pipeline the driver, the fuzzer and the benchmarks share. `keep`: whether
// code generation follows (sema::Keep).
ir::Program Analyze(sema::Program& program, Diagnostics& diags,
                    sema::Keep keep = sema::Keep::kCodegen);

// The jr2c version string.
const char* Version();

}  // namespace jr2::driver
