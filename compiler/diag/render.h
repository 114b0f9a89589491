// Renders sorted diagnostics as text (for people), JSON (for scripts) or SARIF 2.1.0 (for code
// review tools). Rendering never changes what was emitted.
#pragma once

#include <ostream>
#include <string>

#include "compiler/diag/diagnostics.h"
#include "compiler/source/source.h"

namespace jr2 {

enum class DiagFormat { kText, kJson, kSarif };

// `file:line:col: error[E0100]: message`, the source line, a `^~~~` caret under the range, the
// fix-it text under the caret, then each note the same way.
void RenderText(const Diagnostics& diags, const SourceManager& sm, std::ostream& out);
// `{"version":1,"diagnostics":[…],"errors":N,"warnings":N}`, one object per diagnostic.
void RenderJson(const Diagnostics& diags, const SourceManager& sm, std::ostream& out);
// A SARIF 2.1.0 log with one run; every registered kind is a rule.
void RenderSarif(const Diagnostics& diags, const SourceManager& sm, const std::string& version,
                 std::ostream& out);

}  // namespace jr2
