// Code generation (docs/architecture.md#code-generation): one C++ header and one source per `.jr2`
// file, in `namespace jr2gen::<stem>`, against the runtime in runtime/include/jr2.
#pragma once

#include <string>

#include "compiler/ir/statechart.h"
#include "compiler/sema/program.h"

namespace jr2::codegen {

struct Output {
  std::string headerName;  // `tickets.jr2.h`
  std::string sourceName;  // `tickets.jr2.cpp`
  std::string header;
  std::string source;
};

struct Options {
  // A generated fast path for each machine that can have one (no parallel state, no eventless
  // transition); `jr2c compile --no-fast-path` turns it off, and the table engine runs them all.
  bool fastPath = true;
};

// Phase entry: the C++ of one checked module. Deterministic: the same program gives
// byte-identical output. `version` is jr2c's, for the banner.
Output Generate(const sema::Program& program, const sema::Module& module, const ir::Program& charts,
                const std::string& version, const Options& options = {});

}  // namespace jr2::codegen
