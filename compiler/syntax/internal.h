// Shared by the files of compiler/syntax: the AST builder the parse hands its trees to, and where
// a token or a parse-tree node stands in the source. Never included outside compiler/syntax.
#pragma once

#include <memory>

#include "Jr2Parser.h"
#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostics.h"
#include "compiler/source/source.h"

namespace jr2::syntax {

// Converts a parse tree (possibly with error nodes) into the AST, reporting the "mistake"
// alternatives of the grammar as E0001 with fix-its.
// `treeHasErrors`: the parser reported errors, so the tree holds recovery fragments.
std::unique_ptr<ast::File> BuildAst(gen::Jr2Parser::FileContext* tree, const SourceFile& file,
                                    Diagnostics& diags, bool treeHasErrors);

// Builds the AST one top-level declaration at a time, for the parse that goes a declaration at a
// time and frees each one's parse tree once it is built. Same AST and diagnostics as BuildAst on a
// tree with no errors.
class AstBuilder {
 public:
  AstBuilder(const SourceFile& file, Diagnostics& diags);
  ~AstBuilder();
  AstBuilder(const AstBuilder&) = delete;
  AstBuilder& operator=(const AstBuilder&) = delete;

  void addImport(gen::Jr2Parser::ImportDeclContext* imp);
  void addDecl(gen::Jr2Parser::DeclContext* decl);
  std::unique_ptr<ast::File> finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The byte range of one token / one parse-tree node in `file`.
SourceRange RangeOf(const SourceFile& file, const antlr4::Token* token);
SourceRange RangeOf(const SourceFile& file, antlr4::ParserRuleContext* ctx);

}  // namespace jr2::syntax
