// The syntax phase: text → ast::File. ANTLR is used inside this folder only; no ANTLR type
// appears in this header or anywhere else in the compiler.
#pragma once

#include <memory>

#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostics.h"
#include "compiler/source/source.h"

namespace jr2::syntax {

// How deep brackets, prefix operators and expressions may nest before the file is refused. The
// limits keep a hostile file (10,000 nested braces) from exhausting the stack.
inline constexpr int kMaxNesting = 256;
inline constexpr int kMaxExprDepth = 1000;

// Parses one file. Every lexical and syntax error is an E0001 diagnostic; recovery continues
// after an error, so one call reports several independent mistakes. Always returns a File
// (with whatever declarations could be built).
std::unique_ptr<ast::File> Parse(const SourceFile& file, Diagnostics& diags);

// Frees what the parser learned about the grammar while parsing (ANTLR's prediction cache, its
// DFA, shared by every parse of the process: about 1 MB after a 10,000-line file). Call it when
// no more files will be parsed, so that what follows can reuse the memory; a later Parse still
// works, only slower while it learns again.
void ReleaseParserCaches();

}  // namespace jr2::syntax
