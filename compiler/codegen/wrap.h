// The last pass over generated C++: keeps every line within a column limit.
//
// Compiled user expressions, string literals, tables and `// from file:line` comments make some
// generated lines hundreds of columns long. WrapLines() breaks them where C++ allows whitespace
// between tokens, so the program's tokens (adjacent string literals counted as one) stay the same:
// - a trailing `//` comment that does not fit moves onto its own line above the code, and a
//   full-line `//` comment that does not fit is word-wrapped into several;
// - code breaks after `, ` and `; `, after an opening bracket that is not closed at once, before
//   ` && `, ` || `, ` + `, ` ? ` and ` : ` (the operator starts the continuation), and between
//   adjacent string literals; the break at the shallowest bracket depth wins, as long as it does
//   not leave most of the line empty, and the rightmost wins a tie;
// - failing those, a plain "..." literal splits after a space into two adjacent literals;
// - continuation lines are indented four columns more than the line they came from.
// Lines within the limit, preprocessor lines (and their `\` continuations), and lines in or
// around a multi-line /* */ comment or raw string are left as they are, byte for byte. A line
// with nowhere to break — one long identifier or literal — stays long. Columns count UTF-8 code
// points. The result is deterministic and WrapLines(WrapLines(x)) == WrapLines(x).
#pragma once

#include <cstddef>
#include <string>

namespace jr2::codegen {

// Breaks the lines of generated C++ `text` longer than `limit` columns, at places where C++
// allows whitespace between tokens, without changing the program's tokens. Only '\n' ends a
// line; a text without a final newline keeps having none.
std::string WrapLines(const std::string& text, size_t limit = 100);

}  // namespace jr2::codegen
