// A hand-written scanner for grammar/Jr2Lexer.g4, which stays the specification: same token
// types, the longest match, ties to the rule written first. ANTLR's generated lexer walked its
// DFA one code point at a time under a lock and made a 112-byte CommonToken (plus a UTF-32 copy
// of the whole file) for every token, whitespace and comments included: a third of the
// instructions of `jr2c check` and over a third of its peak heap. This one reads the UTF-8 bytes
// in place and never makes the whitespace and comment tokens (the grammar's HIDDEN channel),
// which no later pass looks at.

#include "compiler/syntax/scanner.h"

#include <iterator>
#include <string_view>
#include <utility>

#include "Jr2Lexer.h"
#include "compiler/syntax/token_stream.h"

namespace jr2::syntax {

using gen::Jr2Lexer;

static_assert(kEofType == antlr4::Token::EOF);

namespace {

bool IsWordByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The keywords of grammar/Jr2Lexer.g4 (IMPORT … NULL_KW); a keyword wins its tie with IDENT.
constexpr std::pair<std::string_view, size_t> kKeywords[] = {
    {"import", Jr2Lexer::IMPORT},  {"type", Jr2Lexer::TYPE},
    {"event", Jr2Lexer::EVENT},    {"agent", Jr2Lexer::AGENT},
    {"source", Jr2Lexer::SOURCE},  {"machine", Jr2Lexer::MACHINE},
    {"pool", Jr2Lexer::POOL},      {"workflow", Jr2Lexer::WORKFLOW},
    {"state", Jr2Lexer::STATE},    {"initial", Jr2Lexer::INITIAL},
    {"final", Jr2Lexer::FINAL},    {"parallel", Jr2Lexer::PARALLEL},
    {"on", Jr2Lexer::ON},          {"after", Jr2Lexer::AFTER},
    {"always", Jr2Lexer::ALWAYS},  {"entry", Jr2Lexer::ENTRY},
    {"exit", Jr2Lexer::EXIT},      {"invoke", Jr2Lexer::INVOKE},
    {"gate", Jr2Lexer::GATE},      {"as", Jr2Lexer::AS},
    {"if", Jr2Lexer::IF},          {"fail", Jr2Lexer::FAIL},
    {"output", Jr2Lexer::OUTPUT},  {"var", Jr2Lexer::VAR},
    {"extern", Jr2Lexer::EXTERN},  {"dispatch", Jr2Lexer::DISPATCH},
    {"of", Jr2Lexer::OF},          {"done", Jr2Lexer::DONE},
    {"error", Jr2Lexer::ERROR_KW}, {"true", Jr2Lexer::TRUE_KW},
    {"false", Jr2Lexer::FALSE_KW}, {"null", Jr2Lexer::NULL_KW},
};
static_assert(std::size(kKeywords) == Jr2Lexer::NULL_KW - Jr2Lexer::IMPORT + 1);

size_t KeywordOrIdent(std::string_view word) {
  if (word.size() < 2 || word.size() > 8) return Jr2Lexer::IDENT;
  for (const auto& [keyword, type] : kKeywords) {
    if (keyword == word) return type;
  }
  return Jr2Lexer::IDENT;
}

}  // namespace

TokenTable Lex(const SourceFile& file, size_t* codePoints) {
  const std::string_view s = file.text();
  const size_t n = s.size();
  TokenTable table;
  table.file = &file;
  table.lineStarts.reserve(file.lineCount());  // the file's lines, as the source counted them
  std::vector<LexToken>& out = table.tokens;
  out.reserve(n / 5 + 16);
  size_t i = 0;   // byte offset
  size_t cp = 0;  // code point index of byte i
  // Advances over [i, to), keeping the code point index and the line.
  auto advance = [&](size_t to) {
    for (; i < to; ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      if ((c & 0xC0) == 0x80) continue;
      ++cp;
      if (c == '\n') table.lineStarts.push_back(static_cast<uint32_t>(cp));  // `\n` only, as ANTLR
    }
  };
  // The end of the code point that starts at byte `at`.
  auto nextCodePoint = [&](size_t at) {
    ++at;
    while (at < n && (static_cast<unsigned char>(s[at]) & 0xC0) == 0x80) ++at;
    return at;
  };
  auto find = [&](std::string_view what, size_t from) { return s.find(what, from); };
  // ANTLRInputStream drops a leading byte order mark before counting code points; so does this,
  // so that every position stays what it was.
  if (s.substr(0, 3) == "\xEF\xBB\xBF") i = 3;
  while (i < n) {
    const char c = s[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f') {
      size_t j = i + 1;
      while (j < n && (s[j] == ' ' || s[j] == '\t' || s[j] == '\r' || s[j] == '\n' || s[j] == '\f'))
        ++j;
      advance(j);
      continue;
    }
    const char c1 = i + 1 < n ? s[i + 1] : '\0';
    size_t type = Jr2Lexer::BAD_CHAR;
    size_t end = i + 1;
    bool hidden = false;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
      while (end < n && IsWordByte(s[end])) ++end;
      type = KeywordOrIdent(s.substr(i, end - i));
    } else if (IsDigit(c)) {
      // DURATION, DECIMAL, INT and BAD_NUMBER all start with digits: the longest wins, a tie
      // goes to the rule written first (DURATION, DECIMAL, INT, BAD_NUMBER).
      size_t digits = i;
      while (digits < n && IsDigit(s[digits])) ++digits;
      size_t word = i;  // BAD_NUMBER without a fraction: the whole run of word characters
      while (word < n && IsWordByte(s[word])) ++word;
      size_t duration = 0;
      if (digits + 1 < n && s[digits] == 'm' && s[digits + 1] == 's') {
        duration = digits + 2;
      } else if (digits < n &&
                 (s[digits] == 's' || s[digits] == 'm' || s[digits] == 'h' || s[digits] == 'd')) {
        duration = digits + 1;
      }
      size_t decimal = 0;
      size_t badFraction = 0;
      if (digits + 1 < n && s[digits] == '.' && IsDigit(s[digits + 1])) {
        decimal = digits + 1;
        while (decimal < n && IsDigit(s[decimal])) ++decimal;
        size_t w = digits + 1;
        while (w < n && IsWordByte(s[w])) ++w;
        if (w - (digits + 1) >= 2) badFraction = w;
      }
      const size_t bad = std::max(word - i >= 2 ? word : 0, badFraction);
      const std::pair<size_t, size_t> candidates[] = {{duration, Jr2Lexer::DURATION},
                                                      {decimal, Jr2Lexer::DECIMAL},
                                                      {digits, Jr2Lexer::INT},
                                                      {bad, Jr2Lexer::BAD_NUMBER}};
      end = 0;
      for (const auto& [e, t] : candidates) {
        if (e > end) end = e, type = t;
      }
    } else if (c == '"') {
      if (c1 == '"' && i + 2 < n && s[i + 2] == '"') {
        const size_t close = find("\"\"\"", i + 3);
        if (close != std::string_view::npos) {
          type = Jr2Lexer::TEXT_BLOCK, end = close + 3;
        } else {
          type = Jr2Lexer::UNTERMINATED_TEXT_BLOCK, end = n;
        }
      } else {
        size_t j = i + 1;
        type = Jr2Lexer::UNTERMINATED_STRING;
        while (j < n) {
          const char d = s[j];
          if (d == '"') {
            type = Jr2Lexer::STRING, ++j;
            break;
          }
          if (d == '\r' || d == '\n') break;
          if (d == '\\') {
            if (j + 1 >= n) break;  // a `\` at the end of the file escapes nothing
            j = nextCodePoint(j + 1);
            continue;
          }
          j = nextCodePoint(j);
        }
        end = j;
      }
    } else if (c == '\'') {
      size_t j = i + 1;
      while (j < n && s[j] != '\'' && s[j] != '\r' && s[j] != '\n') ++j;
      if (j < n && s[j] == '\'') type = Jr2Lexer::BAD_SQ_STRING, end = j + 1;
    } else if (c == '/' && c1 == '/') {
      size_t j = i + 2;
      while (j < n && s[j] != '\r' && s[j] != '\n') ++j;
      hidden = true, end = j;
    } else if (c == '/' && c1 == '*') {
      const size_t close = find("*/", i + 2);
      if (close != std::string_view::npos) {
        hidden = true, end = close + 2;
      } else {
        type = Jr2Lexer::UNTERMINATED_COMMENT, end = n;
      }
    } else {
      auto two = [&](char second, size_t pair, size_t single) {
        if (c1 == second) {
          type = pair, end = i + 2;
        } else {
          type = single;
        }
      };
      switch (c) {
        case '-':
          two('>', Jr2Lexer::ARROW, Jr2Lexer::MINUS);
          break;
        case '=':
          if (c1 == '>') {
            type = Jr2Lexer::FATARROW, end = i + 2;
          } else {
            two('=', Jr2Lexer::EQ, Jr2Lexer::ASSIGN);
          }
          break;
        case '!':
          two('=', Jr2Lexer::NEQ, Jr2Lexer::BANG);
          break;
        case '<':
          two('=', Jr2Lexer::LE, Jr2Lexer::LT);
          break;
        case '>':
          two('=', Jr2Lexer::GE, Jr2Lexer::GT);
          break;
        case '&':
          two('&', Jr2Lexer::AND, Jr2Lexer::BAD_CHAR);
          break;
        case '|':
          two('|', Jr2Lexer::OR, Jr2Lexer::PIPE);
          break;
        case '?':
          two('?', Jr2Lexer::COALESCE, Jr2Lexer::QUESTION);
          break;
        case '+':
          type = Jr2Lexer::PLUS;
          break;
        case '*':
          type = Jr2Lexer::STAR;
          break;
        case '/':
          type = Jr2Lexer::SLASH;
          break;
        case '%':
          type = Jr2Lexer::PERCENT;
          break;
        case ':':
          type = Jr2Lexer::COLON;
          break;
        case ',':
          type = Jr2Lexer::COMMA;
          break;
        case '.':
          type = Jr2Lexer::DOT;
          break;
        case '(':
          type = Jr2Lexer::LPAREN;
          break;
        case ')':
          type = Jr2Lexer::RPAREN;
          break;
        case '{':
          type = Jr2Lexer::LBRACE;
          break;
        case '}':
          type = Jr2Lexer::RBRACE;
          break;
        case '[':
          type = Jr2Lexer::LBRACK;
          break;
        case ']':
          type = Jr2Lexer::RBRACK;
          break;
        case ';':
          type = Jr2Lexer::SEMI;
          break;
        default:
          end = nextCodePoint(i);
          break;  // BAD_CHAR: one code point
      }
    }
    const auto start = static_cast<uint32_t>(cp);
    const auto byteBegin = static_cast<uint32_t>(i);
    advance(end);
    if (hidden) continue;
    out.push_back({byteBegin, static_cast<uint32_t>(end), start, static_cast<uint32_t>(cp) - start,
                   static_cast<uint16_t>(type), 0});
  }
  *codePoints = cp;
  return table;
}

bool IsKeyword(size_t type) { return type >= Jr2Lexer::IMPORT && type <= Jr2Lexer::NULL_KW; }

std::vector<std::string_view> Keywords() {
  std::vector<std::string_view> out;
  for (const auto& [keyword, type] : kKeywords) out.push_back(keyword);
  return out;
}

std::vector<LexedToken> LexForTest(const SourceFile& file) {
  size_t codePoints = 0;
  TokenTable table = Lex(file, &codePoints);
  std::vector<LexedToken> out;
  out.reserve(table.tokens.size());
  for (size_t i = 0; i < table.tokens.size(); ++i) {
    const Jr2Token t(&table, i);
    out.push_back({t.getType(), t.getStartIndex(), t.getStopIndex(), t.getLine(),
                   t.getCharPositionInLine(), t.getText()});
  }
  // Where the file ends, as ANTLR's EOF token says it (its line and column are not compared).
  out.push_back({antlr4::Token::EOF, codePoints, codePoints - 1, 0, 0, ""});
  return out;
}

}  // namespace jr2::syntax
