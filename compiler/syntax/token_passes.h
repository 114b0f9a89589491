// The passes over a file's tokens between the scanner and the parse: the token filter reports
// the scanner's error tokens (`;`, unterminated strings, `5min`, stray characters …) and
// rewrites each into what the author meant; the recovery rewrites two mistakes that would
// otherwise be reported at every later token; the bracket pass reports unclosed brackets and
// refuses absurd nesting.
#pragma once

#include <optional>

#include "compiler/diag/diagnostics.h"
#include "compiler/source/source.h"
#include "compiler/syntax/scanner.h"

namespace jr2::syntax {

// Lexes, filters, recovers and checks the nesting of `file`'s tokens, and ends them with EOF,
// frozen for the parse. None when the file must not be parsed at all (CheckNesting).
// `eofReported` is set when a diagnostic already speaks of the end of the file.
std::optional<TokenTable> PrepareTokens(const SourceFile& file, Diagnostics& diags,
                                        bool* eofReported);

}  // namespace jr2::syntax
