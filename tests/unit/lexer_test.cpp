// The hand-written lexer (compiler/syntax/scanner.cpp) against ANTLR's lexer generated from
// grammar/Jr2Lexer.g4, which stays the specification: every token of the default channel and
// EOF, its type, code-point range, line, column and text, on every `.jr2` of the project, the
// fuzz corpus, and seeded mutations of them (inserted, deleted and replaced characters, so that
// unterminated strings and comments, stray characters, numbers with units and broken escapes
// all come up). The only ANTLR outside compiler/syntax: this test's own translation unit.
// ANTLR's generated headers first: they declare `FAIL()` and `EOF()` members, which gtest's and
// <cstdio>'s macros of those names would break.
#include "Jr2Lexer.h"
#include "antlr4-runtime.h"
#include "compiler/syntax/scanner.h"
#include "tests/unit/project_files.h"
// Then the rest.
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using jr2::SourceFile;
using jr2::syntax::LexedToken;

std::vector<LexedToken> AntlrTokens(const std::string& text) {
  antlr4::ANTLRInputStream input(text);
  jr2::syntax::gen::Jr2Lexer lexer(&input);
  lexer.removeErrorListeners();
  std::vector<LexedToken> out;
  for (;;) {
    std::unique_ptr<antlr4::Token> t = lexer.nextToken();
    const bool eof = t->getType() == antlr4::Token::EOF;
    if (t->getChannel() == antlr4::Token::DEFAULT_CHANNEL) {
      out.push_back({t->getType(), t->getStartIndex(), t->getStopIndex(), t->getLine(),
                     t->getCharPositionInLine(), eof ? std::string() : t->getText()});
    }
    if (eof) break;
  }
  return out;
}

std::string Show(const LexedToken& t) {
  std::ostringstream s;
  s << "<" << t.type << "> " << t.start << ".." << t.stop << " at " << t.line << ":" << t.column
    << " `" << t.text << "`";
  return s.str();
}

// The first token where the two lexers differ, or "" when they agree.
std::string Difference(const std::string& text) {
  const SourceFile file(1, "t.jr2", "", text);
  const std::vector<LexedToken> ours = jr2::syntax::LexForTest(file);
  const std::vector<LexedToken> antlr = AntlrTokens(text);
  for (size_t i = 0; i < std::max(ours.size(), antlr.size()); ++i) {
    if (i >= ours.size()) return "ours ends before ANTLR's " + Show(antlr[i]);
    if (i >= antlr.size()) return "ANTLR's ends before ours " + Show(ours[i]);
    const LexedToken& a = ours[i];
    const LexedToken& b = antlr[i];
    // Of EOF, only where it stands is compared (its text is ANTLR's "<EOF>").
    const bool eof = a.type == antlr4::Token::EOF;
    if (a.type != b.type || a.start != b.start || a.stop != b.stop ||
        (!eof && (a.line != b.line || a.column != b.column || a.text != b.text))) {
      return "token " + std::to_string(i) + ": ours " + Show(a) + ", ANTLR's " + Show(b);
    }
  }
  return "";
}

std::vector<std::string> ProjectFiles() {
  return jr2::testing::ProjectFiles({"samples", "tests", "golden", "stdlib", "bench", "grammar"});
}

TEST(Lexer, AgreesWithAntlrOnEveryFileOfTheProject) {
  const std::vector<std::string> texts = ProjectFiles();
  ASSERT_GT(texts.size(), 100u) << "the project's .jr2 files were not found";
  for (const std::string& text : texts) {
    const std::string diff = Difference(text);
    ASSERT_EQ(diff, "") << text.substr(0, 200);
  }
  std::printf("lexer: %zu files, every token as ANTLR's\n", texts.size());
}

TEST(Lexer, AgreesWithAntlrOnMutatedFiles) {
  const std::vector<std::string> texts = ProjectFiles();
  ASSERT_FALSE(texts.empty());
  // Characters that start or end tokens, whole UTF-8 characters, and a BOM.
  const std::vector<std::string> pieces = {
      "\"", "'", "\\", "/",  "*", "/*", "*/", "//", "\n", "\r", "\t", " ", "u{", "}",
      "{",  "5", "5m", "in", "x", "_",  ".",  "=",  "=>", ";",  "-",  "é", "→",  "\xEF\xBB\xBF"};
  const jr2::testing::Mutation mutate{pieces, /*maxEdits=*/4, /*maxCut=*/8, /*twice=*/true};
  std::mt19937 rng(20261201);
  constexpr int kMutations = 4000;
  for (int m = 0; m < kMutations; ++m) {
    const std::string text = mutate(texts, rng);
    std::string why;
    if (jr2::FindInvalidUtf8(text, &why)) continue;
    const std::string diff = Difference(text);
    ASSERT_EQ(diff, "") << "mutation " << m << ":\n" << text.substr(0, 400);
  }
  std::printf("lexer: %d mutations, every token as ANTLR's\n", kMutations);
}

}  // namespace
