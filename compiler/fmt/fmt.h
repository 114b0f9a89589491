// `jr2c fmt`: one layout for every `.jr2` file, with no options (docs/editors.md#jr2c-fmt).
//
// The formatter works on the scanner's tokens and the gaps between them, never on the tree: it
// changes only the space between tokens, so the formatted file has the same tokens, hence the
// same tree and the same diagnostics, and every comment stays where its author put it. The
// author's line breaks are kept (a line that is long stays long; nothing is joined or split).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace jr2::layout {

// The result of formatting one file's text.
struct Formatted {
  std::string text;  // the formatted text (meaningful when ok)
  bool ok = false;   // false when the file's tokens are not a program's (see `why`)
  std::string why;   // one line: what stopped it
};

// Phase entry: formats `text` (a `.jr2` file's bytes; CRLF, a byte order mark and tabs in the
// indentation read as LF, nothing and spaces). The rules:
//  - indentation: two spaces for each bracket (`{`, `[`, `(`) left open on an earlier line, by
//    the line that opened it; a line that starts by closing a bracket is indented as the line
//    that opened it;
//  - at most one blank line in a row, none at the start or the end; no trailing spaces; one
//    line break at the end;
//  - between two tokens of one line: none before `,` `:` `.` `)` `]` and after `(` `[` `.`; one
//    after `,` and `:`; one around `->`, `=>`, `=`, comparisons, `&&`, `||`, `??`, `+`, `*`,
//    `/`, `%`, and inside `{ … }`; what the author wrote (none or one) where a token's role
//    depends on its place (`-`, `!`, `?`, `<`, `>`, `|`, and before `(` and `[`); one elsewhere;
//  - a comment: on a line of its own, indented as the code around it; after code, as far from
//    it as the author put it; a block comment's later lines as they were.
// A file whose text the scanner does not read as tokens (a stray character, a string or comment
// left open) is refused: `ok` false.
Formatted Format(std::string_view text);

// Whether `a` and `b` are the same tokens (read as Format reads them): what `jr2c fmt` holds
// of every file before it writes one, and the property tests hold of every file they format.
bool SameTokens(std::string_view a, std::string_view b);

// The comments of `text`, in order, each as written (a line comment without its trailing spaces):
// what a formatted file must hold unchanged.
std::vector<std::string> Comments(std::string_view text);

// `b` against `a` as a unified diff (`--- NAME`, `+++ NAME`, hunks with 3 lines of context);
// "" when they are equal. Myers' algorithm: time and memory grow with the lines that differ.
std::string UnifiedDiff(const std::string& name, std::string_view a, std::string_view b);

}  // namespace jr2::layout
