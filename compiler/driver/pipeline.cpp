#include "compiler/driver/pipeline.h"

#include <algorithm>
#include <string_view>

#include "compiler/walk/walk.h"

namespace jr2::driver {

ir::Program Analyze(sema::Program& program, Diagnostics& diags, sema::Keep keep) {
  // A file with syntax errors has a partial tree: checking its meaning would only report the
  // echoes of those errors.
  const bool syntaxErrors =
      std::any_of(diags.all().begin(), diags.all().end(), [](const Diagnostic& d) {
        return d.severity == Severity::kError && std::string_view(d.code()) == "E0001";
      });
  if (syntaxErrors) return {};
  sema::ResolveNames(program, diags);
  sema::CheckTypes(program, diags, keep);
  ir::Program charts = ir::Build(program, diags);
  walk::LoadWalk(program, charts, diags);
  return charts;
}

}  // namespace jr2::driver
