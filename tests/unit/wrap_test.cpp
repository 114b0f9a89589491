// WrapLines: generated C++ keeps its tokens, and its lines fit in 100 columns where they can.
#include "compiler/codegen/wrap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#ifndef JR2_SOURCE_DIR
#error "JR2_SOURCE_DIR must name the source tree, as a string"
#endif

namespace jr2::codegen {
namespace {

bool IsIdent(char c) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) || c == '_' || u >= 0x80;
}
bool IsBracket(char c) { return std::string_view("(){}[]").find(c) != std::string_view::npos; }

// The bytes a plain literal's body stands for, so that "\x1" "b" and "\x1b" differ.
std::string Decode(std::string_view body) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 >= body.size()) {
      out += body[i];
      continue;
    }
    const char e = body[++i];
    const std::string_view simple = "n\nt\tr\rv\va\ab\bf\f\\\\\"\"''??";
    const size_t at = simple.find(e);
    if (at != std::string_view::npos && at % 2 == 0) {
      out += simple[at + 1];
    } else if (e == 'x') {
      int v = 0;
      while (i + 1 < body.size() && std::isxdigit(static_cast<unsigned char>(body[i + 1]))) {
        const char h = body[++i];
        v = v * 16 +
            (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (h | 0x20) - 'a' + 10);
      }
      out += static_cast<char>(v & 0xFF);
    } else if (e >= '0' && e <= '7') {
      int v = e - '0';
      for (int n = 0; n < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7';
           ++n) {
        v = v * 8 + body[++i] - '0';
      }
      out += static_cast<char>(v & 0xFF);
    } else {
      out += '\\';  // \u and \U: kept as written
      out += e;
    }
  }
  return out;
}

// A small C++ tokenizer: identifiers and numbers, brackets one by one, other punctuation in runs,
// char literals, and string literals with adjacent ones merged into one token of their bytes.
// Comments and whitespace are skipped.
std::vector<std::string> Tokens(const std::string& s) {
  std::vector<std::string> out;
  bool lastString = false;
  size_t i = 0;
  const size_t n = s.size();
  auto at = [&](size_t k) { return k < n ? s[k] : '\0'; };
  while (i < n) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (c == '/' && at(i + 1) == '/') {
      while (i < n && s[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && at(i + 1) == '*') {
      const size_t end = s.find("*/", i + 2);
      i = end == std::string::npos ? n : end + 2;
      continue;
    }
    if (c == '"') {
      size_t j = i + 1;
      while (j < n && s[j] != '"' && s[j] != '\n') j += s[j] == '\\' ? 2 : 1;
      const std::string bytes = Decode(std::string_view(s).substr(i + 1, j - i - 1));
      if (lastString) {
        out.back() += bytes;
      } else {
        out.push_back("\"" + bytes);
      }
      lastString = true;
      i = j + 1;
      continue;
    }
    lastString = false;
    if (c == '\'') {
      size_t j = i + 1;
      while (j < n && s[j] != '\'' && s[j] != '\n') j += s[j] == '\\' ? 2 : 1;
      out.push_back(s.substr(i, j + 1 - i));
      i = j + 1;
      continue;
    }
    size_t j = i + 1;
    if (IsIdent(c)) {
      while (j < n && (IsIdent(s[j]) || (std::isdigit(static_cast<unsigned char>(c)) &&
                                         (s[j] == '.' || (s[j] == '\'' && IsIdent(at(j + 1))))))) {
        ++j;
      }
    } else if (!IsBracket(c)) {
      while (j < n && !IsIdent(s[j]) && !IsBracket(s[j]) && s[j] != '"' && s[j] != '\'' &&
             !std::isspace(static_cast<unsigned char>(s[j])) &&
             !(s[j] == '/' && (at(j + 1) == '/' || at(j + 1) == '*'))) {
        ++j;
      }
    }
    out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

size_t Columns(const std::string& s) {
  return std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; });
}

// Whether the wrapper could have broken `line` (indentation stripped) anywhere: written apart
// from wrap.cpp, so a long line it leaves is checked to be really unbreakable.
bool HasBreak(const std::string& line) {
  if (line.rfind("//", 0) == 0) {
    const size_t body = line.find_first_not_of('/');
    return body != std::string::npos &&
           line.find(' ', line.find_first_not_of(' ', body)) != std::string::npos;
  }
  const size_t n = line.size();
  for (size_t i = 0; i < n; ++i) {
    const char c = line[i];
    if (c == '/' && i + 1 < n && line[i + 1] == '/') return true;  // should have moved up
    if (c == '/' && i + 1 < n && line[i + 1] == '*') {
      i = std::min(line.find("*/", i + 2), n) + 1;
      continue;
    }
    if (c == '"') {
      const bool plain = i == 0 || !IsIdent(line[i - 1]);
      size_t j = i + 1;
      for (; j < n && line[j] != '"'; ++j) {
        if (line[j] == '\\') {
          ++j;
        } else if (line[j] == ' ' && plain && j + 1 < n && line[j + 1] != '"') {
          return true;
        }
      }
      i = j;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) && (i == 0 || !IsIdent(line[i - 1]))) {
      // A number, whose digit separators are no char literals.
      while (i + 1 < n && (IsIdent(line[i + 1]) || line[i + 1] == '.' ||
                           (line[i + 1] == '\'' && i + 2 < n && IsIdent(line[i + 2])))) {
        i += line[i + 1] == '\'' ? 2 : 1;
      }
      continue;
    }
    if (c == '\'') {
      size_t j = i + 1;
      while (j < n && line[j] != '\'') j += line[j] == '\\' ? 2 : 1;
      i = j;
      continue;
    }
    const std::string rest = line.substr(i);
    if ((c == ',' || c == ';') && rest.size() > 2 && rest[1] == ' ' && rest[2] != ' ') return true;
    if ((c == '(' || c == '{') && rest.size() > 1 && !IsBracket(rest[1]) && rest[1] != ' ') {
      return true;
    }
    for (const char* op : {" && ", " || ", " + ", " ? ", " : "}) {
      if (i > 0 && rest.rfind(op, 0) == 0) return true;
    }
  }
  return false;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Checks everything WrapLines promises about `in`; returns the output.
std::string CheckWrap(const std::string& in, size_t limit = 100) {
  std::string out = WrapLines(in, limit);
  EXPECT_EQ(Tokens(out), Tokens(in));
  EXPECT_EQ(WrapLines(out, limit), out) << "not idempotent";
  EXPECT_EQ(!in.empty() && in.back() == '\n', !out.empty() && out.back() == '\n');
  const std::vector<std::string> inLines = Lines(in);
  const std::vector<std::string> outLines = Lines(out);
  // The lines that fit stay, in order, byte for byte.
  size_t k = 0;
  for (const std::string& line : inLines) {
    if (Columns(line) > limit) continue;
    while (k < outLines.size() && outLines[k] != line) ++k;
    EXPECT_LT(k, outLines.size()) << "short line lost: " << line;
    ++k;
  }
  bool preprocessor = false;
  for (const std::string& line : outLines) {
    const bool continued = preprocessor;
    const size_t text = line.find_first_not_of(' ');
    preprocessor = (continued || (text != std::string::npos && line[text] == '#')) &&
                   !line.empty() && line.back() == '\\';
    if (text == std::string::npos) {
      EXPECT_EQ(line, "") << "whitespace-only line";
      continue;
    }
    EXPECT_NE(line.back(), ' ') << "trailing whitespace: " << line;
    if (continued || line[text] == '#' || Columns(line) <= limit) continue;
    EXPECT_FALSE(HasBreak(line.substr(text))) << "long line that could break: " << line;
  }
  return out;
}

TEST(WrapTest, GoldenFilesKeepTheirTokens) {
  const std::string dir = JR2_SOURCE_DIR "/golden/codegen";
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  ASSERT_FALSE(paths.empty());
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    const std::string in = ReadFile(path);
    const std::string out = CheckWrap(in);
    size_t longIn = 0, longOut = 0;
    for (const std::string& line : Lines(in)) longIn += Columns(line) > 100;
    for (const std::string& line : Lines(out)) longOut += Columns(line) > 100;
    std::cout << std::filesystem::path(path).filename().string() << ": " << longIn
              << " long lines wrapped into " << Lines(out).size() - Lines(in).size() + longIn
              << " lines; " << longOut << " still long\n";
    EXPECT_EQ(longOut, 0u);
    // Narrow limits stress every kind of break, and still keep the tokens.
    for (size_t limit : {60, 30, 8}) {
      SCOPED_TRACE(limit);
      CheckWrap(in, limit);
    }
  }
}

TEST(WrapTest, ShortLinesAreUntouched) {
  const std::string in = "int f() {\n  return 1;   \n}\n\n  // a, b && c\nint x";
  EXPECT_EQ(WrapLines(in), in);
  EXPECT_EQ(WrapLines(""), "");
  EXPECT_EQ(WrapLines("\n\n"), "\n\n");
}

TEST(WrapTest, TrailingCommentMovesAbove) {
  const std::string code = "    ctx_.verdict = Decide(ctx_.alert, ctx_.proposal);";
  const std::string comment = "// from alert_triage.jr2:86, where the person says what to do";
  const std::string out = CheckWrap(code + "  " + comment + "\n");
  EXPECT_EQ(out, "    " + comment + "\n" + code + "\n");
}

TEST(WrapTest, LongCodeAndCommentBothWrap) {
  const std::string in =
      "  Call(first_argument_here, second_argument_here, third_argument_here, "
      "fourth_argument);  // from some_file.jr2:12, and a long note after it to make it long\n";
  const std::string out = CheckWrap(in);
  EXPECT_EQ(out.rfind("  // from some_file.jr2:12", 0), 0u) << out;
}

TEST(WrapTest, FullLineCommentIsWordWrapped) {
  std::string words;
  for (int i = 0; i < 40; ++i) words += " word" + std::to_string(i);
  const std::string out = CheckWrap("      //" + words + "\n");
  std::string joined;
  for (const std::string& line : Lines(out)) {
    ASSERT_EQ(line.rfind("      // ", 0), 0u) << line;
    EXPECT_LE(Columns(line), 100u);
    joined += line.substr(8);
  }
  EXPECT_EQ(joined, words);
  EXPECT_GT(Lines(out).size(), 2u);
}

TEST(WrapTest, CodeBreaksAtShallowCandidatesWithDeeperIndent) {
  const std::string in =
      "    if (alpha_beta_gamma(one, two) && delta_epsilon(three, four) && zeta_eta(five, six) && "
      "theta(seven)) {\n";
  const std::string out = CheckWrap(in);
  const std::vector<std::string> lines = Lines(out);
  ASSERT_EQ(lines.size(), 2u) << out;
  EXPECT_EQ(lines[1].rfind("        && theta(seven)) {", 0), 0u) << out;
}

TEST(WrapTest, ContinuationsShareOneIndentation) {
  std::string in = "  return {";
  for (int i = 0; i < 60; ++i)
    in += "{\"key" + std::to_string(i) + "\", value" + std::to_string(i) + "}, ";
  in += "};\n";
  const std::string out = CheckWrap(in);
  const std::vector<std::string> lines = Lines(out);
  ASSERT_GT(lines.size(), 5u);
  for (size_t i = 1; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].rfind("      ", 0), 0u) << lines[i];
    EXPECT_NE(lines[i][6], ' ') << lines[i];
  }
}

TEST(WrapTest, LongStringLiteralIsSplit) {
  std::string text;
  for (int i = 0; i < 30; ++i) text += "sentence" + std::to_string(i) + " ";
  text += "end";
  const std::string in = "      throw Error(\"" + text + "\");\n";
  const std::string out = CheckWrap(in);
  EXPECT_GT(Lines(out).size(), 3u) << out;
  // One literal in, one (concatenated) literal out, with the same text.
  const std::vector<std::string> tokens = Tokens(out);
  EXPECT_NE(std::find(tokens.begin(), tokens.end(), "\"" + text), tokens.end());
  for (const std::string& line : Lines(out)) EXPECT_LE(Columns(line), 100u) << line;
}

TEST(WrapTest, EscapesAreNotSplit) {
  std::string body;
  for (int i = 0; i < 12; ++i) body += "a\\\\ b \\\" quoted \\\" \\x1b\"\"[0m \\x1b\\x1b ";
  const std::string in = "  std::string s = \"" + body + "\";\n";
  const std::string out = CheckWrap(in);  // Tokens() decodes escapes: a bad split shows
  EXPECT_GT(Lines(out).size(), 3u) << out;
  for (const std::string& line : Lines(out)) EXPECT_LE(Columns(line), 100u) << line;
}

TEST(WrapTest, SlashesInAStringAreNotAComment) {
  const std::string in =
      "  Fetch(\"https://example.com/a/very/long/path/that/goes/on\", "
      "\"// not a comment, just text\", options_for_the_fetch, more_options);\n";
  const std::string out = CheckWrap(in);
  for (const std::string& line : Lines(out)) {
    EXPECT_NE(line.substr(line.find_first_not_of(' '), 2), "//") << out;
  }
}

TEST(WrapTest, CharLiteralsWithQuotes) {
  const std::string in =
      "    if (c == '\"' || c == '\\'' || c == '\\\\' || c == ',' || c == '(' || c == '/' || "
      "c == ' ' || c == '}') return;  // a \"quote\" in a comment\n";
  const std::string out = CheckWrap(in);
  EXPECT_EQ(out.rfind("    // a \"quote\" in a comment\n", 0), 0u) << out;
}

TEST(WrapTest, PreprocessorLinesAreUntouched) {
  const std::string define =
      "#define LONG_MACRO(a, b) do { Call(a, b, another_argument, "
      "yet_another_argument, and_more_arguments); } while (0) \\";
  const std::string next =
      "    , continued_line_of_the_macro_that_is_also_long, a, b, c, d, e, "
      "f, g, h, i, j, k, l, m, n, o, p";
  const std::string in =
      define + "\n" + next + "\n  #  include \"" + std::string(120, 'x') + ".h\"\n";
  EXPECT_EQ(CheckWrap(in), in);
}

TEST(WrapTest, UnbreakableLinesStayLong) {
  const std::string ident = "    " + std::string(150, 'a') + ";";
  const std::string literal = "    \"" + std::string(150, 'b') + "\";";
  const std::string comment = "    // " + std::string(150, 'c');
  const std::string in = ident + "\n" + literal + "\n" + comment;
  EXPECT_EQ(CheckWrap(in), in);
  // A long token among breakable ones: the breaks still happen, around it.
  const std::string mixed = "  f(x, " + std::string(120, 'y') + ", z);\n";
  EXPECT_EQ(CheckWrap(mixed), "  f(x,\n      " + std::string(120, 'y') + ",\n      z);\n");
}

TEST(WrapTest, BracketsOfLambdasAndAttributesAreKept) {
  const std::string in =
      "      ctx_.verdict = std::optional<Verdict>([&] { [[maybe_unused]] Verdict v_; "
      "v_.fingerprint = ctx_.alert.fingerprint; v_.action = event_.action; return v_; }());\n";
  const std::string out = CheckWrap(in);
  EXPECT_NE(out.find("[&] {"), std::string::npos) << out;
  EXPECT_NE(out.find("[[maybe_unused]]"), std::string::npos) << out;
  EXPECT_EQ(out.find("->\n"), std::string::npos);
}

TEST(WrapTest, BlockCommentsAreNotBroken) {
  const std::string in =
      "  Call(argument_one, /* a, b, c && d, and a long note */ argument_two, argument_three, "
      "four);\n/* a multi-line comment whose first line is long enough to need wrapping, a, b, c\n"
      "   and then, \"a string\", goes on */ int x;\n";
  const std::string out = CheckWrap(in);
  EXPECT_NE(out.find("/* a, b, c && d, and a long note */"), std::string::npos) << out;
  EXPECT_NE(out.find("/* a multi-line comment whose first line is long enough to need wrapping, a, "
                     "b, c\n"),
            std::string::npos);
}

// Random lines of the kinds of tokens the generator writes, at many limits.
TEST(WrapTest, RandomLinesKeepTheirTokens) {
  const std::vector<std::string> pieces = {"alpha",
                                           "::jr2rt::Json(x)",
                                           "f(",
                                           "g(a)",
                                           ")",
                                           "{",
                                           "}",
                                           "[&] {",
                                           "[[maybe_unused]]",
                                           ", ",
                                           "; ",
                                           " && ",
                                           " || ",
                                           " + ",
                                           " ? ",
                                           " : ",
                                           "->",
                                           "'\\''",
                                           "'\"'",
                                           "\"a b c\"",
                                           "\"\\x1b\"\"[0m\"",
                                           "\"x\\\\ y\"",
                                           "\"\\\" q \\\"\"",
                                           "\"http://x/y\"",
                                           "/* a, b */",
                                           "std::vector<int>{}",
                                           "1'000",
                                           "0x1Fu",
                                           "\"word \" \"next\"",
                                           "x[i]",
                                           " ",
                                           "\"\xc3\xa9t\xc3\xa9 \xc3\xa9t\xc3\xa9\"",
                                           "::ns::Call(one, two)",
                                           "("};
  uint32_t seed = 12345;
  auto next = [&] {
    seed = seed * 1664525u + 1013904223u;
    return seed >> 8;
  };
  std::string text;
  for (int line = 0; line < 400; ++line) {
    text += std::string(size_t{next() % 4} * 2, ' ');
    const auto count = static_cast<int>(5 + next() % 60);
    for (int i = 0; i < count; ++i) {
      // A space between pieces unless one has its own, so that no piece runs into the next
      // (a number into a char literal, a literal into a suffix).
      const std::string& piece = pieces[next() % pieces.size()];
      if (!text.empty() && text.back() != ' ' && text.back() != '\n' && piece[0] != ' ') {
        text += ' ';
      }
      text += piece;
    }
    while (text.back() == ' ') text.pop_back();
    if (next() % 3 == 0) text += "  // note, with \"quotes\" and words";
    text += '\n';
    if (next() % 10 == 0) text += "  // " + std::string(next() % 150, 'w') + " and more words\n";
  }
  size_t lines = 0;
  for (size_t limit : {100, 80, 50, 35, 20, 10}) {
    SCOPED_TRACE(limit);
    lines += Lines(CheckWrap(text, limit)).size();
  }
  std::cout << "random: 400 lines wrapped into " << lines << " lines over 6 limits\n";
}

TEST(WrapTest, TwoMegabytesIsFast) {
  const std::string golden = ReadFile(JR2_SOURCE_DIR "/golden/codegen/alert_triage.jr2.cpp");
  ASSERT_FALSE(golden.empty());
  std::string big;
  while (big.size() < size_t{2} * 1024 * 1024) big += golden;
  const auto start = std::chrono::steady_clock::now();
  // The goldens are already within 100 columns: wrap at 40, so most of their lines break.
  const std::string out = WrapLines(big, 40);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "wrapped " << big.size() << " bytes (" << Lines(big).size() << " lines) in "
            << seconds * 1000 << " ms\n";
  EXPECT_LT(seconds, 1.0);
  EXPECT_GT(out.size(), big.size());
}

}  // namespace
}  // namespace jr2::codegen
