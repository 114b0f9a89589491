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
// Then the rest.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
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
  std::vector<std::string> texts;
  for (const char* dir : {"samples", "tests", "golden", "stdlib", "bench", "grammar"}) {
    const fs::path root = fs::path(JR2_SOURCE_DIR) / dir;
    if (!fs::exists(root)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      if (!e.is_regular_file()) continue;
      const std::string ext = e.path().extension().string();
      if (ext != ".jr2" && e.path().parent_path().filename() != "corpus") continue;
      std::ifstream in(e.path(), std::ios::binary);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::string why;
      if (jr2::FindInvalidUtf8(text, &why)) continue;  // refused before the lexer runs
      texts.push_back(std::move(text));
    }
  }
  return texts;
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
  std::mt19937 rng(20261201);
  constexpr int kMutations = 4000;
  for (int m = 0; m < kMutations; ++m) {
    std::string text = texts[rng() % texts.size()];
    for (int edits = 1 + static_cast<int>(rng() % 4); edits > 0; --edits) {
      // Byte positions at character boundaries only: the lexer is given valid UTF-8.
      size_t at = text.empty() ? 0 : rng() % text.size();
      while (at > 0 && at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80)
        --at;
      const std::string& piece = pieces[rng() % pieces.size()];
      switch (rng() % 3) {
        case 0:
          text.insert(at, piece);
          break;
        case 1: {
          size_t end = std::min(text.size(), at + 1 + rng() % 8);
          while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) ++end;
          text.erase(at, end - at);
          break;
        }
        default:
          text.insert(at, piece + piece);
          break;
      }
    }
    std::string why;
    if (jr2::FindInvalidUtf8(text, &why)) continue;
    const std::string diff = Difference(text);
    ASSERT_EQ(diff, "") << "mutation " << m << ":\n" << text.substr(0, 400);
  }
  std::printf("lexer: %d mutations, every token as ANTLR's\n", kMutations);
}

}  // namespace
