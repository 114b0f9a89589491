// The parse: a file's text → ast::File. The steps, each in its own file:
//
// validate UTF-8 → the scanner (scanner.cpp) makes every token → the token passes
// (token_passes.cpp) report the scanner's error tokens and rewrite each into what the author
// meant, report unclosed brackets and refuse absurd nesting → an SLL parse with a bail-out
// strategy (here) → on failure, a full LL parse with our error strategy (syntax_errors.cpp),
// which turns every ANTLR error into one E0001 in words → BuildAst (build_ast.cpp).

#include "compiler/syntax/parse.h"

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "Jr2Lexer.h"
#include "Jr2Parser.h"
#include "antlr4-runtime.h"
#include "compiler/syntax/internal.h"
#include "compiler/syntax/scanner.h"
#include "compiler/syntax/syntax_errors.h"
#include "compiler/syntax/token_passes.h"
#include "compiler/syntax/token_stream.h"

namespace jr2::syntax {

using gen::Jr2Lexer;
using gen::Jr2Parser;

SourceRange RangeOf(const SourceFile& file, const antlr4::Token* token) {
  if (token == nullptr) return {};
  if (token->getType() == antlr4::Token::EOF) {
    const auto end = static_cast<uint32_t>(file.text().size());
    return SourceRange::point(file.id(), end);
  }
  const uint32_t begin = file.byteOffsetOfCodePoint(token->getStartIndex());
  const uint32_t end = file.byteOffsetOfCodePoint(token->getStopIndex() + 1);
  return {file.id(), begin, end < begin ? begin : end};
}

SourceRange RangeOf(const SourceFile& file, antlr4::ParserRuleContext* ctx) {
  if (ctx == nullptr || ctx->getStart() == nullptr) return {};
  const SourceRange begin = RangeOf(file, ctx->getStart());
  const antlr4::Token* stop = ctx->getStop();
  if (stop == nullptr || stop->getTokenIndex() < ctx->getStart()->getTokenIndex() ||
      stop->getType() == antlr4::Token::EOF) {
    return begin;
  }
  return begin.to(RangeOf(file, stop));
}

std::unique_ptr<ast::File> Parse(const SourceFile& file, Diagnostics& diags) {
  std::string why;
  if (auto bad = FindInvalidUtf8(file.text(), &why)) {
    diags.emit(diag::SyntaxInvalidUtf8, SourceRange{file.id(), *bad, *bad + 1}, why);
    auto empty = std::make_unique<ast::File>();
    empty->file = file.id();
    return empty;
  }

  bool eofReported = false;
  std::optional<TokenTable> prepared = PrepareTokens(file, diags, &eofReported);
  if (!prepared) {
    auto empty = std::make_unique<ast::File>();
    empty->file = file.id();
    return empty;
  }
  TokenTable& tokens = *prepared;
  TokenVectorStream stream(tokens);
  Jr2Parser parser(&stream);
  parser.removeErrorListeners();

  // Stage 1: SLL, bail on the first error. Almost every correct file parses here, fast. It goes
  // one top-level declaration at a time (what `file: importDecl* decl* EOF` would do), and each
  // declaration's parse tree is turned into AST and freed before the next is parsed: the trees of
  // the whole file were the largest part of the peak memory of a check (about 10 MB of 24 for a
  // 266 KB file). SLL predicts without the outer context, so the trees are the ones `file()` made.
  // The builder reports into `built`: a file it has something to say about (a "mistake"
  // alternative, an empty file), like one that fails to parse, takes the whole-file path below,
  // which says it exactly as before.
  parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
      antlr4::atn::PredictionMode::SLL);
  parser.setErrorHandler(std::make_shared<antlr4::BailErrorStrategy>());
  {
    Diagnostics built;
    AstBuilder builder(file, built);
    try {
      bool declSeen = false;  // an `import` after a declaration is a syntax error
      while (stream.LA(1) != antlr4::Token::EOF) {
        if (!declSeen && stream.LA(1) == Jr2Lexer::IMPORT) {
          builder.addImport(parser.importDecl());
        } else {
          declSeen = true;
          builder.addDecl(parser.decl());
        }
        parser.getTreeTracker().reset();
        // The declaration's tree is gone, and with it every pointer to its tokens.
        stream.releaseBefore(stream.index());
      }
      std::unique_ptr<ast::File> ast = builder.finish();
      if (built.all().empty()) return ast;
    } catch (const antlr4::ParseCancellationException&) {
    }
  }
  if (tokens.anyReleased()) {
    // Stage 1 freed the tokens behind it; the whole-file parses below start again from the
    // first. The passes are deterministic: the same tokens, and their reports, already made,
    // go to a scratch list.
    Diagnostics again;
    bool eofAgain = false;
    std::optional<TokenTable> remade = PrepareTokens(file, again, &eofAgain);
    if (!remade) throw std::logic_error("jr2c: the tokens of a file came out different twice");
    tokens = std::move(*remade);
    stream.rewind();
  }
  stream.seek(0);
  parser.reset();
  Jr2Parser::FileContext* tree = nullptr;
  try {
    tree = parser.file();
  } catch (const antlr4::ParseCancellationException&) {
    tree = nullptr;
  }
  const size_t errorsBefore = diags.errorCount();
  if (tree == nullptr) {
    // Stage 2: full LL with our error strategy, which reports in words and recovers.
    stream.seek(0);
    parser.reset();
    parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
        antlr4::atn::PredictionMode::LL);
    parser.setErrorHandler(MakeErrorStrategy(file, diags, eofReported));
    tree = parser.file();
  }
  return BuildAst(tree, file, diags, diags.errorCount() > errorsBefore);
}

void ReleaseParserCaches() {
  TokenTable none;
  none.tokens.push_back({0, 0, 0, 0, TokenTable::kEof, 0});
  none.setText(0, "<EOF>");
  TokenVectorStream stream(none);
  Jr2Parser parser(&stream);
  auto* simulator = parser.getInterpreter<antlr4::atn::ParserATNSimulator>();
  simulator->clearDFA();
  simulator->getSharedContextCache().clear();
}

}  // namespace jr2::syntax
