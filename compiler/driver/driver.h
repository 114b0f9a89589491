// The `jr2c` command line as a library function, so tests run it in-process.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "compiler/driver/pipeline.h"  // Analyze, which every command runs

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

// The jr2c version string.
const char* Version();

}  // namespace jr2::driver
