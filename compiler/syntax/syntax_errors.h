// Syntax errors in our words: the parse's error strategy, which turns each of ANTLR's errors into
// one E0001 that says what was expected, where, and what was found ("expected a state, a
// transition or `}` in the body of state `review`; found `foo`").
#pragma once

#include <memory>

#include "compiler/diag/diagnostics.h"
#include "compiler/source/source.h"

namespace antlr4 {
class ANTLRErrorStrategy;
}  // namespace antlr4

namespace jr2::syntax {

// The error strategy of the parse's second stage, which reports into `diags`.
// `eofAlreadyReported`: a diagnostic already speaks of the end of the file (the token passes
// found an unclosed bracket or a token that ran to the end), so an error there is not reported
// again.
std::shared_ptr<antlr4::ANTLRErrorStrategy> MakeErrorStrategy(const SourceFile& file,
                                                              Diagnostics& diags,
                                                              bool eofAlreadyReported);

}  // namespace jr2::syntax
