// Lexing, the token filter, the two-stage parse and our own syntax error messages.
//
// The pipeline: validate UTF-8 → lex every token → the token filter reports the lexer's error
// tokens (`;`, unterminated strings, `5min`, stray characters …) and rewrites each into what the
// author meant → a bracket pass reports unclosed brackets and refuses absurd nesting → SLL parse
// with a bail-out strategy → on failure, a full LL parse with our error strategy, which turns
// every ANTLR error into one E0001 in words ("expected a state, a transition or `}` in the body
// of state `review`; found `foo`") → BuildAst.

#include "compiler/syntax/parse.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "Jr2Lexer.h"
#include "Jr2Parser.h"
#include "antlr4-runtime.h"
#include "compiler/syntax/internal.h"

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

namespace {

// ---- the lexer ---------------------------------------------------------------------------------
//
// A hand-written scanner for grammar/Jr2Lexer.g4, which stays the specification: same token
// types, the longest match, ties to the rule written first. ANTLR's generated lexer walked its
// DFA one code point at a time under a lock and made a 112-byte CommonToken (plus a UTF-32 copy
// of the whole file) for every token, whitespace and comments included: a third of the
// instructions of `jr2c check` and over a third of its peak heap. This one reads the UTF-8 bytes
// in place and never makes the whitespace and comment tokens (the grammar's HIDDEN channel),
// which no later pass looks at.

// The tokens of one file, as the lexer made them: 20 bytes a token. The passes before the parse
// (the filter, the recovery, the bracket pass) rewrite them in one vector; the parse reads them
// from chunks (freeze), and its first stage frees the chunks it is past (releaseBefore), as it
// frees each declaration's parse tree: the whole table, about four bytes a source byte, had been
// the largest single thing at the peak memory of a check (#15). The parser sees each token
// through a Jr2Token, made on demand a block at a time and freed the same way
// (TokenVectorStream).
struct LexToken {
  uint32_t byteBegin;  // with `ownText`, the index of the token's text in TokenTable::texts
  uint32_t byteEnd;
  uint32_t start;   // in code points, as ANTLR counts positions
  uint32_t length;  // in code points: the stop index is start + length - 1
  uint16_t type;    // TokenTable::kEof for EOF
  uint16_t ownText;
};

struct TokenTable {
  static constexpr uint16_t kEof = 0xFFFF;

  const SourceFile* file = nullptr;
  // 32-bit fields: a file is at most 8 MiB (SourceManager::kMaxFileBytes). Empty once frozen.
  std::vector<LexToken> tokens;
  // The code point index at which each line starts (line 1 at [0]): a token's line and column
  // are computed from its start, as the lexer counted them (`\n` alone ends a line).
  std::vector<uint32_t> lineStarts{0};
  // The texts the token filter gave to tokens (an unterminated string gets its closing quote).
  std::vector<std::string> texts;

  size_t size() const { return frozen_ ? count_ : tokens.size(); }
  const LexToken& at(size_t i) const { return const_cast<TokenTable*>(this)->at(i); }
  LexToken& at(size_t i) {
    if (!frozen_) return tokens[i];
    LexToken* chunk = chunks_[i / kChunk].get();
    // A bug, not an input: the parse never looks back past the declaration it is in.
    if (chunk == nullptr) throw std::logic_error("jr2c: a token was read after it was freed");
    return chunk[i % kChunk];
  }
  // Moves the tokens into chunks, which the parse can free behind it.
  void freeze() {
    count_ = tokens.size();
    chunks_.resize((count_ + kChunk - 1) / kChunk);
    for (size_t c = 0; c < chunks_.size(); ++c) {
      const size_t n = std::min(kChunk, count_ - c * kChunk);
      chunks_[c] = std::make_unique<LexToken[]>(n);
      std::copy_n(tokens.begin() + static_cast<ptrdiff_t>(c * kChunk), n, chunks_[c].get());
    }
    std::vector<LexToken>().swap(tokens);
    frozen_ = true;
  }
  // Frees the chunks whose every token is before `index - 1` (the parser may still read the
  // token before the one it is at, as the stop of the rule it just left).
  void releaseBefore(size_t index) {
    for (; released_ < chunks_.size() && (released_ + 1) * kChunk + 1 <= index; ++released_) {
      chunks_[released_].reset();
    }
  }
  bool anyReleased() const { return released_ > 0; }

  size_t type(size_t i) const {
    const uint16_t t = at(i).type;
    return t == kEof ? antlr4::Token::EOF : size_t{t};
  }
  void setType(size_t i, size_t type) {
    at(i).type = type == antlr4::Token::EOF ? kEof : static_cast<uint16_t>(type);
  }
  std::string text(size_t i) const {
    const LexToken& t = at(i);
    if (t.ownText != 0) return texts[t.byteBegin];
    return std::string(file->text().substr(t.byteBegin, t.byteEnd - t.byteBegin));
  }
  void setText(size_t i, const std::string& text) {
    texts.push_back(text);
    LexToken& t = at(i);
    t.byteBegin = static_cast<uint32_t>(texts.size() - 1);
    t.byteEnd = 0;
    t.ownText = 1;
  }
  // 1-based; 0 for EOF, as ANTLR's EOF token made by us had.
  uint32_t line(size_t i) const {
    const LexToken& t = at(i);
    if (t.type == kEof) return 0;
    return static_cast<uint32_t>(std::upper_bound(lineStarts.begin(), lineStarts.end(), t.start) -
                                 lineStarts.begin());
  }
  uint32_t column(size_t i) const {
    const LexToken& t = at(i);
    if (t.type == kEof) return 0;
    return t.start - lineStarts[line(i) - 1];
  }

 private:
  // 2,048 tokens (40 KB) a chunk: under malloc's mmap threshold, so a freed chunk is reused by
  // the AST that the parse goes on building.
  static constexpr size_t kChunk = 2048;
  bool frozen_ = false;
  size_t count_ = 0;
  std::vector<std::unique_ptr<LexToken[]>> chunks_;
  size_t released_ = 0;
};

// A view of one token of a TokenTable, for ANTLR. Positions are code point indices, as ANTLR's
// are, so RangeOf reads every token the same way.
class Jr2Token : public antlr4::WritableToken {
 public:
  Jr2Token() = default;
  Jr2Token(TokenTable* table, size_t index) : table_(table), index_(static_cast<uint32_t>(index)) {}

  std::string getText() const override { return table_->text(index_); }
  size_t getType() const override { return table_->type(index_); }
  size_t getLine() const override { return table_->line(index_); }
  size_t getCharPositionInLine() const override { return table_->column(index_); }
  size_t getChannel() const override { return DEFAULT_CHANNEL; }
  size_t getTokenIndex() const override { return index_; }
  size_t getStartIndex() const override { return lexed().start; }
  // start - 1 for an empty token, as in ANTLR (SIZE_MAX for one at 0).
  size_t getStopIndex() const override { return size_t{lexed().start} + lexed().length - 1; }
  antlr4::TokenSource* getTokenSource() const override;
  antlr4::CharStream* getInputStream() const override { return nullptr; }
  std::string toString() const override {
    return fmt::format("[@{},{}:{}='{}',<{}>,{}:{}]", index_, getStartIndex(), getStopIndex(),
                       getText(), getType(), getLine(), getCharPositionInLine());
  }

  // Only the token passes before the parse rewrite tokens; the position of a token in its table
  // is its index, and its line and column follow from its start.
  void setText(const std::string& text) override { table_->setText(index_, text); }
  void setType(size_t type) override { table_->setType(index_, type); }
  void setLine(size_t /*line*/) override {}
  void setCharPositionInLine(size_t /*pos*/) override {}
  void setChannel(size_t /*channel*/) override {}
  void setTokenIndex(size_t /*index*/) override {}

 private:
  const LexToken& lexed() const { return table_->at(index_); }

  TokenTable* table_ = nullptr;
  uint32_t index_ = 0;
};

// ANTLR's error recovery asks the current token for its source when it makes a "missing" token
// (DefaultErrorStrategy::getMissingSymbol); that token's text is given, so no stream is needed.
class NoTokenSource : public antlr4::TokenSource {
 public:
  std::unique_ptr<antlr4::Token> nextToken() override { return nullptr; }
  size_t getLine() const override { return 0; }
  size_t getCharPositionInLine() override { return 0; }
  antlr4::CharStream* getInputStream() override { return nullptr; }
  std::string getSourceName() override { return "jr2"; }
  antlr4::TokenFactory<antlr4::CommonToken>* getTokenFactory() override {
    return antlr4::CommonTokenFactory::DEFAULT.get();
  }
};

antlr4::TokenSource* TheTokenSource() {
  static NoTokenSource source;
  return &source;
}

antlr4::TokenSource* Jr2Token::getTokenSource() const { return TheTokenSource(); }

// The parser's token stream over a TokenTable, which ends with EOF. ANTLR's CommonTokenStream
// wants each token as a heap object it owns (and a ListTokenSource to hand them over one by
// one); this one makes the Jr2Token views on demand, kBlock at a time, and frees those the parse
// is done with (releaseBefore). Every token is on the default channel (the lexer never made the
// others), so looking ahead or back is indexing.
class TokenVectorStream : public antlr4::TokenStream {
 public:
  explicit TokenVectorStream(TokenTable& table)
      : table_(table), blocks_((table.size() + kBlock - 1) / kBlock) {}

  antlr4::Token* LT(ssize_t k) override {
    if (k > 0) return at(std::min(p_ + k - 1, count() - 1));  // EOF repeats at the end
    if (k == 0 || static_cast<ssize_t>(p_) + k < 0) return nullptr;
    return at(p_ + k);
  }
  antlr4::Token* get(size_t index) const override {
    if (index >= count()) throw std::out_of_range("token index");
    return at(index);
  }
  antlr4::TokenSource* getTokenSource() const override { return TheTokenSource(); }
  std::string getText(const antlr4::misc::Interval& interval) override {
    if (interval.a < 0 || interval.b < 0) return {};
    std::string out;
    const auto last = std::min(static_cast<size_t>(interval.b), size() - 1);
    for (auto i = static_cast<size_t>(interval.a); i <= last; ++i) {
      if (table_.type(i) == antlr4::Token::EOF) break;
      out += table_.text(i);
    }
    return out;
  }
  std::string getText() override { return getText(antlr4::misc::Interval(size_t{0}, size() - 1)); }
  std::string getText(antlr4::RuleContext* ctx) override {
    return getText(ctx->getSourceInterval());
  }
  std::string getText(antlr4::Token* start, antlr4::Token* stop) override {
    if (start == nullptr || stop == nullptr) return {};
    return getText(antlr4::misc::Interval(start->getTokenIndex(), stop->getTokenIndex()));
  }

  void consume() override {
    if (LA(1) == antlr4::Token::EOF) throw antlr4::IllegalStateException("cannot consume EOF");
    ++p_;
  }
  size_t LA(ssize_t i) override {
    if (i > 0) return table_.type(std::min(p_ + static_cast<size_t>(i) - 1, size() - 1));
    return LT(i)->getType();
  }
  ssize_t mark() override { return 0; }
  void release(ssize_t /*marker*/) override {}
  size_t index() override { return p_; }
  void seek(size_t index) override { p_ = std::min(index, size() - 1); }
  size_t size() override { return table_.size(); }
  std::string getSourceName() const override { return "jr2"; }

  // Frees the views of the tokens before `index` (whole blocks only), and the table's chunks
  // before it: nothing may point to them any more, as after a declaration whose parse tree is
  // freed.
  void releaseBefore(size_t index) {
    for (; released_ < index / kBlock && released_ < blocks_.size(); ++released_) {
      blocks_[released_].reset();
    }
    table_.releaseBefore(index);
  }
  // Back to the first token of a table whose tokens were made again: every view is stale.
  void rewind() {
    blocks_.clear();
    blocks_.resize((table_.size() + kBlock - 1) / kBlock);
    released_ = 0;
    p_ = 0;
  }

 private:
  // 32 views (768 bytes) a block: a small-bin allocation for malloc, which a larger one (over
  // 1 KB) is not; each of those consolidated malloc's fast bins.
  static constexpr size_t kBlock = 32;

  size_t count() const { return table_.size(); }
  // `i` < count().
  antlr4::Token* at(size_t i) const {
    if (Jr2Token* block = blocks_[i / kBlock].get()) return &block[i % kBlock];
    return make(i);
  }
  antlr4::Token* make(size_t i) const {
    auto& block = blocks_[i / kBlock];
    const size_t first = i / kBlock * kBlock;
    const size_t n = std::min(kBlock, count() - first);
    block = std::make_unique<Jr2Token[]>(n);
    for (size_t j = 0; j < n; ++j) block[j] = Jr2Token(&table_, first + j);
    if (i / kBlock < released_) released_ = i / kBlock;  // made again: free it again later
    return &block[i % kBlock];
  }

  TokenTable& table_;
  mutable std::vector<std::unique_ptr<Jr2Token[]>> blocks_;
  mutable size_t released_ = 0;  // blocks below this one are freed
  size_t p_ = 0;
};

bool IsWordByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The keywords of grammar/Jr2Lexer.g4 (IMPORT … NULL_KW); a keyword wins its tie with IDENT.
size_t KeywordOrIdent(std::string_view word) {
  static constexpr std::pair<std::string_view, size_t> kKeywords[] = {
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
  if (word.size() < 2 || word.size() > 8) return Jr2Lexer::IDENT;
  for (const auto& [keyword, type] : kKeywords) {
    if (keyword == word) return type;
  }
  return Jr2Lexer::IDENT;
}

// Splits `file` (valid UTF-8, checked before) into the tokens of the default channel.
// `codePoints` is set to the length of the text in code points, where the EOF token stands.
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

std::string Quote(std::string_view text) {
  std::string s(text.substr(0, 40));
  if (text.size() > 40) s += "…";
  return fmt::format("`{}`", s);
}

// How a token is named in a message: `foo`, the keyword `state`, the end of the file.
std::string DescribeToken(const antlr4::Token* t) {
  if (t == nullptr || t->getType() == antlr4::Token::EOF) return "the end of the file";
  const size_t type = t->getType();
  if (IsKeyword(type)) return fmt::format("the keyword `{}`", t->getText());
  switch (type) {
    case Jr2Lexer::STRING:
    case Jr2Lexer::TEXT_BLOCK:
      return fmt::format("the string {}", Quote(t->getText()));
    case Jr2Lexer::INT:
    case Jr2Lexer::DECIMAL:
      return fmt::format("the number `{}`", t->getText());
    case Jr2Lexer::DURATION:
      return fmt::format("the duration `{}`", t->getText());
    default:
      return Quote(t->getText());
  }
}

// Names a declaration context for "where" phrases: "state `review`".
std::string NameOf(antlr4::ParserRuleContext* ctx) {
  Jr2Parser::DeclNameContext* name = nullptr;
  std::string what;
  if (auto* c = dynamic_cast<Jr2Parser::StateDeclContext*>(ctx)) {
    name = c->declName(), what = "state";
  } else if (auto* c = dynamic_cast<Jr2Parser::MachineDeclContext*>(ctx)) {
    name = c->declName(), what = "machine";
  } else if (auto* c = dynamic_cast<Jr2Parser::TypeDeclContext*>(ctx)) {
    name = c->declName(), what = "type";
  } else if (auto* c = dynamic_cast<Jr2Parser::EventDeclContext*>(ctx)) {
    name = c->declName(), what = "event";
  } else if (auto* c = dynamic_cast<Jr2Parser::AgentDeclContext*>(ctx)) {
    name = c->declName(), what = "agent";
  } else if (auto* c = dynamic_cast<Jr2Parser::SourceDeclContext*>(ctx)) {
    name = c->declName(), what = "source";
  } else if (auto* c = dynamic_cast<Jr2Parser::PoolDeclContext*>(ctx)) {
    name = c->declName(), what = "pool";
  } else if (auto* c = dynamic_cast<Jr2Parser::WorkflowDeclContext*>(ctx)) {
    name = c->declName(), what = "workflow";
  } else if (auto* c = dynamic_cast<Jr2Parser::ExternDeclContext*>(ctx)) {
    name = c->declName(), what = "extern";
  }
  if (what.empty()) return {};
  if (name == nullptr || name->getText().empty()) return what;
  return fmt::format("{} `{}`", what, name->getText());
}

// "in the body of state `review`": the innermost enclosing construct a person would name.
std::string WhereOf(antlr4::RuleContext* rule) {
  for (auto* r = rule; r != nullptr; r = dynamic_cast<antlr4::RuleContext*>(r->parent)) {
    auto* ctx = dynamic_cast<antlr4::ParserRuleContext*>(r);
    if (ctx == nullptr) continue;
    auto* parent = dynamic_cast<antlr4::ParserRuleContext*>(ctx->parent);
    switch (ctx->getRuleIndex()) {
      case Jr2Parser::RuleStateBlock:
        return "in the body of " + NameOf(parent);
      case Jr2Parser::RuleActionBlock:
        if (dynamic_cast<Jr2Parser::EntryExitContext*>(parent)) {
          return fmt::format("in an `{}` block", parent->getStart()->getText());
        }
        return "in the actions of a transition";
      case Jr2Parser::RuleTransition:
        return "in a transition";
      case Jr2Parser::RuleGuard:
        return "in the guard of a transition";
      case Jr2Parser::RuleInvoke:
        return "in an `invoke`";
      case Jr2Parser::RuleTypeBody:
        return dynamic_cast<Jr2Parser::EventDeclContext*>(parent)
                   ? "in the fields of " + NameOf(parent)
                   : "in the body of " + NameOf(parent);
      case Jr2Parser::RuleBodyBlock:
      case Jr2Parser::RuleSourceBody:
      case Jr2Parser::RulePoolBody:
        return "in the body of " + NameOf(parent);
      case Jr2Parser::RuleParamList:
        return "in the parameters of " + NameOf(parent);
      case Jr2Parser::RuleObjectLit:
        return "in an object literal";
      case Jr2Parser::RuleListLit:
        return "in a list";
      case Jr2Parser::RuleArgList:
        return "in the arguments of a call";
      case Jr2Parser::RuleWorker:
        return "after `of` in " + NameOf(parent);
      case Jr2Parser::RuleImportDecl:
        return "in an `import`";
      case Jr2Parser::RuleVarDecl:
        return "in a `var`";
      case Jr2Parser::RuleHookVerdict:
        return "in a hook verdict";
      case Jr2Parser::RuleStateDecl:
      case Jr2Parser::RuleMachineDecl:
      case Jr2Parser::RuleTypeDecl:
      case Jr2Parser::RuleEventDecl:
      case Jr2Parser::RuleAgentDecl:
      case Jr2Parser::RuleSourceDecl:
      case Jr2Parser::RulePoolDecl:
      case Jr2Parser::RuleWorkflowDecl:
      case Jr2Parser::RuleExternDecl:
        return "in " + NameOf(ctx);
      case Jr2Parser::RuleFile:
      case Jr2Parser::RuleDecl:
        return "at the top level of the file";
      default:
        break;
    }
  }
  return "here";
}

// "a state, a transition or `}`": the expected token set in words, grouped the way a person
// thinks of it.
std::string DescribeExpected(const antlr4::misc::IntervalSet& expected,
                             const antlr4::dfa::Vocabulary& vocab, antlr4::RuleContext* ctx) {
  std::set<size_t> left;
  for (const ssize_t t : expected.toList()) left.insert(static_cast<size_t>(t));
  // The grammar lets `var` and `output` into any state body so that the builder can say where
  // they belong; in a state (not a machine) they are not what to suggest.
  if (auto* block = dynamic_cast<Jr2Parser::StateBlockContext*>(ctx);
      block != nullptr && dynamic_cast<Jr2Parser::StateDeclContext*>(block->parent) != nullptr) {
    left.erase(Jr2Lexer::VAR);
    left.erase(Jr2Lexer::OUTPUT);
  }
  std::vector<std::string> phrases;
  auto take = [&](size_t trigger, std::initializer_list<size_t> group, const char* phrase) {
    if (left.count(trigger) == 0) return;
    for (size_t t : group) left.erase(t);
    left.erase(trigger);
    phrases.emplace_back(phrase);
  };
  const bool wordsToo = left.count(Jr2Lexer::IDENT) > 0 && left.count(Jr2Lexer::MACHINE) > 0 &&
                        left.count(Jr2Lexer::DONE) > 0;
  if (wordsToo) {
    // `anyWord`: every keyword is allowed here too; say "a name", not the 32 keywords.
    for (size_t t = Jr2Lexer::IMPORT; t <= Jr2Lexer::NULL_KW; ++t) left.erase(t);
  }
  take(Jr2Lexer::IMPORT, {}, "an `import`");
  take(Jr2Lexer::MACHINE,
       {Jr2Lexer::TYPE, Jr2Lexer::EVENT, Jr2Lexer::AGENT, Jr2Lexer::EXTERN, Jr2Lexer::SOURCE,
        Jr2Lexer::POOL, Jr2Lexer::WORKFLOW},
       "a declaration");
  take(Jr2Lexer::VAR, {}, "a `var`");
  take(Jr2Lexer::STATE, {Jr2Lexer::INITIAL, Jr2Lexer::FINAL, Jr2Lexer::PARALLEL}, "a state");
  take(Jr2Lexer::ON, {Jr2Lexer::ALWAYS, Jr2Lexer::AFTER}, "a transition");
  take(Jr2Lexer::INVOKE, {}, "an `invoke`");
  take(Jr2Lexer::ENTRY, {Jr2Lexer::EXIT}, "an `entry`/`exit` block");
  take(Jr2Lexer::OUTPUT, {}, "`output`");
  if (left.count(Jr2Lexer::INT) && left.count(Jr2Lexer::IDENT)) {
    take(Jr2Lexer::INT,
         {Jr2Lexer::DECIMAL, Jr2Lexer::DURATION, Jr2Lexer::STRING, Jr2Lexer::TEXT_BLOCK,
          Jr2Lexer::TRUE_KW, Jr2Lexer::FALSE_KW, Jr2Lexer::NULL_KW, Jr2Lexer::IDENT, Jr2Lexer::DONE,
          Jr2Lexer::ERROR_KW, Jr2Lexer::LBRACE, Jr2Lexer::LBRACK, Jr2Lexer::LPAREN, Jr2Lexer::BANG,
          Jr2Lexer::MINUS},
         "an expression");
  }
  if (left.count(Jr2Lexer::PLUS) && left.count(Jr2Lexer::STAR)) {
    take(Jr2Lexer::PLUS,
         {Jr2Lexer::DOT, Jr2Lexer::LBRACK, Jr2Lexer::LPAREN, Jr2Lexer::BANG, Jr2Lexer::STAR,
          Jr2Lexer::SLASH, Jr2Lexer::PERCENT, Jr2Lexer::MINUS, Jr2Lexer::LT, Jr2Lexer::LE,
          Jr2Lexer::GT, Jr2Lexer::GE, Jr2Lexer::EQ, Jr2Lexer::NEQ, Jr2Lexer::AND, Jr2Lexer::OR,
          Jr2Lexer::COALESCE, Jr2Lexer::QUESTION},
         "an operator");
  }
  take(Jr2Lexer::IDENT, {}, "a name");
  for (size_t t : left) {
    if (t == antlr4::Token::EOF) {
      phrases.emplace_back("the end of the file");
    } else if (t == Jr2Lexer::STRING) {
      phrases.emplace_back("a string");
    } else if (t == Jr2Lexer::DURATION) {
      phrases.emplace_back("a duration");
    } else if (t == Jr2Lexer::INT) {
      phrases.emplace_back("an integer");
    } else {
      std::string lit = vocab.getLiteralName(t);
      if (lit.size() >= 2 && lit.front() == '\'') lit = lit.substr(1, lit.size() - 2);
      if (lit.empty()) lit = vocab.getSymbolicName(t);
      phrases.push_back(fmt::format("`{}`", lit));
    }
  }
  if (phrases.empty()) return "something else";
  if (phrases.size() > 7) {
    phrases.resize(6);
    phrases.emplace_back("…");
  }
  std::string out;
  for (size_t i = 0; i < phrases.size(); ++i) {
    if (i > 0) out += i + 1 == phrases.size() ? " or " : ", ";
    out += phrases[i];
  }
  return out;
}

// Turns ANTLR's errors into E0001 diagnostics in our words. Recovery is ANTLR's (single-token
// insertion and deletion, then resynchronization), which lets one parse report several errors.
class ErrorStrategy : public antlr4::DefaultErrorStrategy {
 public:
  ErrorStrategy(const SourceFile& file, Diagnostics& diags, bool eofAlreadyReported)
      : file_(file), diags_(diags), eofReported_(eofAlreadyReported) {}

 protected:
  void reportNoViableAlternative(antlr4::Parser* p,
                                 const antlr4::NoViableAltException& e) override {
    report(p, e.getOffendingToken(), e.getExpectedTokens(), e.getCtx());
  }
  void reportInputMismatch(antlr4::Parser* p, const antlr4::InputMismatchException& e) override {
    report(p, e.getOffendingToken(), e.getExpectedTokens(), e.getCtx());
  }
  void reportFailedPredicate(antlr4::Parser* p,
                             const antlr4::FailedPredicateException& e) override {
    report(p, e.getOffendingToken(), p->getExpectedTokens(), e.getCtx());
  }
  void reportUnwantedToken(antlr4::Parser* p) override {
    if (inErrorRecoveryMode(p)) return;
    beginErrorCondition(p);
    report(p, p->getCurrentToken(), getExpectedTokens(p), p->getContext());
  }
  void reportMissingToken(antlr4::Parser* p) override {
    if (inErrorRecoveryMode(p)) return;
    beginErrorCondition(p);
    report(p, p->getCurrentToken(), getExpectedTokens(p), p->getContext());
  }

 private:
  void report(antlr4::Parser* p, antlr4::Token* offending,
              const antlr4::misc::IntervalSet& expected, antlr4::RuleContext* ctx) {
    if (offending != nullptr && offending->getType() == antlr4::Token::EOF && eofReported_) return;
    const SourceRange range = RangeOf(file_, offending);
    if (!reportedAt_.insert(range.begin).second) return;
    diags_.emit(diag::SyntaxExpected, range, DescribeExpected(expected, p->getVocabulary(), ctx),
                WhereOf(ctx), DescribeToken(offending));
  }

  const SourceFile& file_;
  Diagnostics& diags_;
  bool eofReported_;
  std::set<uint32_t> reportedAt_;
};

// Reports the lexer's error tokens and rewrites them into the token the author meant, so the
// parse that follows sees a plausible program. Returns the tokens the parser should see.
// `swallowed` is set when a token ran to the end of the file (an unterminated text block or
// comment), so what follows it was never seen as code.
// Works in place (the kept tokens move down over the dropped ones): a second vector of tokens
// would double the peak.
void FilterTokens(TokenTable& table, const SourceFile& file, Diagnostics& diags, bool* swallowed) {
  std::vector<LexToken>& tokens = table.tokens;
  size_t kept = 0;
  auto keep = [&](size_t i) {
    if (kept != i) tokens[kept] = tokens[i];
    ++kept;
  };
  size_t hashLine = 0;  // the line of a `#` "comment": the rest of it is dropped, said once
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (hashLine != 0 && table.line(i) == hashLine) continue;
    const size_t type = table.type(i);
    // Only the error tokens need a look at their text or range; most tokens pass straight on.
    if (type < Jr2Lexer::SEMI || (type > Jr2Lexer::SEMI && type < Jr2Lexer::BAD_NUMBER) ||
        type == Jr2Lexer::TEXT_BLOCK || type == Jr2Lexer::STRING || type == Jr2Lexer::IDENT) {
      keep(i);
      continue;
    }
    Jr2Token view(&table, i);
    Jr2Token* t = &view;
    const SourceRange range = RangeOf(file, t);
    const std::string text = t->getText();
    switch (type) {
      case Jr2Lexer::SEMI:
        diags.emit(diag::SyntaxSemicolon, range).fix(range, "");
        continue;
      case Jr2Lexer::UNTERMINATED_STRING:
        diags.emit(diag::SyntaxUnterminatedString, range)
            .fix(SourceRange::point(file.id(), range.end), "\"");
        t->setType(Jr2Lexer::STRING);
        t->setText(text + "\"");
        break;
      case Jr2Lexer::UNTERMINATED_TEXT_BLOCK:
        diags.emit(diag::SyntaxUnterminatedTextBlock, {file.id(), range.begin, range.begin + 3})
            .fix(SourceRange::point(file.id(), range.end), "\"\"\"");
        t->setType(Jr2Lexer::TEXT_BLOCK);
        t->setText(text + "\"\"\"");
        *swallowed = true;
        break;
      case Jr2Lexer::UNTERMINATED_COMMENT:
        diags.emit(diag::SyntaxUnterminatedComment, {file.id(), range.begin, range.begin + 2})
            .fix(SourceRange::point(file.id(), range.end), "*/");
        *swallowed = true;
        continue;
      case Jr2Lexer::BAD_NUMBER:
        // Parse on as a number; the builder knows a number that is not all digits was reported.
        diags.emit(diag::SyntaxBadNumber, range, text);
        t->setType(Jr2Lexer::INT);
        break;
      case Jr2Lexer::BAD_SQ_STRING: {
        diags.emit(diag::SyntaxSingleQuotes, range)
            .fix(range, "\"" + text.substr(1, text.size() - 2) + "\"");
        t->setType(Jr2Lexer::STRING);
        t->setText("\"" + text.substr(1, text.size() - 2) + "\"");
        break;
      }
      case Jr2Lexer::BAD_CHAR: {
        std::string hint;
        if (text == "#") {
          // Read the rest of the line as the comment the author meant, so its words are not
          // reported one by one.
          hint = "; comments start with `//`";
          hashLine = t->getLine();
        } else if (text == "'") {
          hint = "; strings are written in double quotes";
        } else if (text == "&" || text == "|") {
          hint = fmt::format("; did you mean `{0}{0}`?", text);
        } else if (text == "@" || text == "$" || text == "`" || text == "^" || text == "~" ||
                   text == "\\") {
          hint = "; remove it";
        } else {
          hint = "; remove it (names are ASCII letters, digits and `_`)";
        }
        auto d = diags.emit(diag::SyntaxBadChar, range, text, hint);
        if (text == "#") d.fix(range, "//");
        continue;
      }
      default:
        break;
    }
    keep(i);
  }
  tokens.erase(tokens.begin() + static_cast<ptrdiff_t>(kept), tokens.end());
}

// Two mistakes that would otherwise be reported again at every later token, rewritten in the
// token stream so that each is one report (the builder or this pass gives it):
//  - a reserved word that names a parameter or a `var` (`machine handle(entry: Item)`): the
//    declaration is reported by the builder (SyntaxKeywordAsName); each later use of the word in
//    an expression of the same declaration (`entry.id`, `title: entry`) is read as the name.
//  - a Pool of runs that forgot `dispatch` (`pool p of w { input: …, wait: true } { … }`):
//    reported here, once, with the fix, and read as `of dispatch w { … }`.
void RecoverTokens(TokenTable& table, const SourceFile& file, Diagnostics& diags) {
  std::vector<LexToken>& tokens = table.tokens;  // in order, all on the default channel
  auto type = [&](size_t i) -> size_t {
    return i < tokens.size() ? table.type(i) : antlr4::Token::EOF;
  };
  // A keyword that can stand in an expression (`done`, `event`, `true` …) is left alone: the
  // parse reads it as what it is.
  auto expressionWord = [](size_t t) {
    return t == Jr2Lexer::DONE || t == Jr2Lexer::ERROR_KW || t == Jr2Lexer::EVENT ||
           t == Jr2Lexer::TRUE_KW || t == Jr2Lexer::FALSE_KW || t == Jr2Lexer::NULL_KW;
  };
  auto before = [](size_t t) {  // a token after which an expression starts
    switch (t) {
      case Jr2Lexer::COLON:
      case Jr2Lexer::ASSIGN:
      case Jr2Lexer::LPAREN:
      case Jr2Lexer::COMMA:
      case Jr2Lexer::LBRACK:
      case Jr2Lexer::EQ:
      case Jr2Lexer::NEQ:
      case Jr2Lexer::LE:
      case Jr2Lexer::GE:
      case Jr2Lexer::AND:
      case Jr2Lexer::OR:
      case Jr2Lexer::COALESCE:
      case Jr2Lexer::LT:
      case Jr2Lexer::GT:
      case Jr2Lexer::PLUS:
      case Jr2Lexer::MINUS:
      case Jr2Lexer::STAR:
      case Jr2Lexer::SLASH:
      case Jr2Lexer::PERCENT:
      case Jr2Lexer::BANG:
      case Jr2Lexer::QUESTION:
      case Jr2Lexer::OUTPUT:
      case Jr2Lexer::IF:
        return true;
      default:
        return false;
    }
  };
  auto topLevel = [](size_t t) {
    return t == Jr2Lexer::MACHINE || t == Jr2Lexer::POOL || t == Jr2Lexer::SOURCE ||
           t == Jr2Lexer::EXTERN || t == Jr2Lexer::TYPE || t == Jr2Lexer::EVENT ||
           t == Jr2Lexer::AGENT || t == Jr2Lexer::WORKFLOW || t == Jr2Lexer::IMPORT;
  };
  std::set<size_t> renamed;  // keywords that name a parameter or `var` of this declaration
  int braces = 0;
  int parens = 0;
  bool paramList = false;                            // inside the parameter list of a declaration
  std::vector<std::pair<size_t, LexToken>> inserts;  // (index in `tokens`, token)
  for (size_t i = 0; i < tokens.size(); ++i) {
    const size_t t = type(i);
    if (braces == 0 && parens == 0 && topLevel(t)) {
      renamed.clear();
      // `machine NAME (` / `pool NAME (` …: a parameter list follows.
      if (t != Jr2Lexer::EVENT && t != Jr2Lexer::TYPE && type(i + 2) == Jr2Lexer::LPAREN) {
        paramList = true;
      }
      // `pool NAME [(…)] of WORKFLOW { input|wait: … } {`: a Pool of runs without `dispatch`.
      if (t == Jr2Lexer::POOL) {
        size_t j = i + 2;
        if (type(j) == Jr2Lexer::LPAREN) {
          for (int depth = 0; j < tokens.size(); ++j) {
            if (type(j) == Jr2Lexer::LPAREN) ++depth;
            if (type(j) == Jr2Lexer::RPAREN && --depth == 0) break;
          }
          ++j;
        }
        if (type(j) == Jr2Lexer::OF && type(j + 1) == Jr2Lexer::IDENT) {
          const size_t name = j + 1;
          size_t k = name + 1;
          while (type(k) == Jr2Lexer::DOT) k += 2;
          const std::string key = k + 1 < tokens.size() ? table.text(k + 1) : "";
          if (type(k) == Jr2Lexer::LBRACE && (key == "input" || key == "wait") &&
              type(k + 2) == Jr2Lexer::COLON) {
            size_t close = k;
            for (int depth = 0; close < tokens.size(); ++close) {
              if (type(close) == Jr2Lexer::LBRACE) ++depth;
              if (type(close) == Jr2Lexer::RBRACE && --depth == 0) break;
            }
            if (type(close + 1) == Jr2Lexer::LBRACE) {
              std::string target;
              for (size_t n = name; n < k; ++n) target += table.text(n);
              const Jr2Token named(&table, name);
              const SourceRange at = RangeOf(file, &named);
              diags.emit(diag::SyntaxMissingDispatch, at, target)
                  .fix(SourceRange::point(file.id(), at.begin), "dispatch ");
              // Empty, where the name starts (so on its line and column), with its own text.
              table.texts.emplace_back("dispatch");
              const LexToken d{static_cast<uint32_t>(table.texts.size() - 1),
                               0,
                               tokens[name].start,
                               0,
                               Jr2Lexer::DISPATCH,
                               1};
              inserts.emplace_back(name, d);
            }
          }
        }
      }
    }
    switch (t) {
      case Jr2Lexer::LBRACE:
        ++braces;
        break;
      case Jr2Lexer::RBRACE:
        braces = std::max(0, braces - 1);
        break;
      case Jr2Lexer::LPAREN:
        ++parens;
        break;
      case Jr2Lexer::RPAREN:
        parens = std::max(0, parens - 1);
        if (parens == 0) paramList = false;
        break;
      default:
        break;
    }
    if (!IsKeyword(t) || expressionWord(t)) continue;
    const size_t prev = i > 0 ? type(i - 1) : antlr4::Token::INVALID_TYPE;
    // The declaration: `(KW:` or `, KW:` in a parameter list, or `var KW`.
    if ((paramList && parens == 1 && (prev == Jr2Lexer::LPAREN || prev == Jr2Lexer::COMMA) &&
         type(i + 1) == Jr2Lexer::COLON) ||
        prev == Jr2Lexer::VAR) {
      renamed.insert(t);
      continue;
    }
    if (renamed.count(t) == 0) continue;
    const size_t next = type(i + 1);
    if (before(prev) || next == Jr2Lexer::DOT || next == Jr2Lexer::LBRACK ||
        (next == Jr2Lexer::ASSIGN && !paramList)) {
      table.setType(i, Jr2Lexer::IDENT);
    }
  }
  // Insert the `dispatch` tokens, last first so the earlier positions stay right.
  for (auto it = inserts.rbegin(); it != inserts.rend(); ++it) {
    tokens.insert(tokens.begin() + static_cast<ptrdiff_t>(it->first), it->second);
  }
}

// Reports unclosed brackets (at the opener, with a fix-it at the end of the file) and refuses
// nesting deeper than kMaxNesting. Returns false when the file must not be parsed at all.
bool CheckNesting(TokenTable& table, const SourceFile& file, Diagnostics& diags, bool swallowed,
                  bool* eofReported) {
  const size_t count = table.tokens.size();
  auto range = [&](size_t i) {
    const Jr2Token token(&table, i);
    return RangeOf(file, &token);
  };
  struct Open {
    size_t type;
    size_t token;     // its index
    uint32_t indent;  // the indentation of the opener's line
  };
  // The indentation of the line a token stands on, and whether it is the first on that line.
  auto lineIndent = [&](size_t t, bool* first) {
    const SourceRange r = range(t);
    const uint32_t line = file.lineCol(r.begin).line;
    const uint32_t start = file.lineStart(line);
    const std::string_view text = file.text();
    uint32_t i = start;
    while (i < r.begin && (text[i] == ' ' || text[i] == '\t')) ++i;
    if (first) *first = i == r.begin;
    return i - start;
  };
  std::vector<Open> stack;
  std::optional<Open> misplaced;  // an opener whose closer the indentation says is missing
  size_t closedBy = 0;
  int prefixRun = 0;
  // `?:` chains nest in the parse (`a ? b : c ? d : …`) as deeply as brackets do, and ANTLR's
  // recursion on a million of them took 20 s and 3 GB before any error. A line that starts
  // with anything but `:` or `?` starts the count again, so the optional types of a long list
  // of fields (`a: string?` on each line) never add up.
  int conditionalRun = 0;
  for (size_t token = 0; token < count; ++token) {
    const size_t type = table.type(token);
    if (type == Jr2Lexer::QUESTION) {
      if (++conditionalRun > kMaxNesting) {
        diags.emit(diag::SyntaxTooDeep, range(token), "conditional expressions (`?:`)",
                   kMaxNesting);
        return false;
      }
    } else if (conditionalRun > 0 && type != Jr2Lexer::COLON) {
      bool first = false;
      lineIndent(token, &first);
      if (first) conditionalRun = 0;
    }
    if (type == Jr2Lexer::BANG || type == Jr2Lexer::MINUS) {
      if (++prefixRun > kMaxNesting) {
        diags.emit(diag::SyntaxTooDeep, range(token), "prefix operators", kMaxNesting);
        return false;
      }
    } else {
      prefixRun = 0;
    }
    if (type == Jr2Lexer::LBRACE || type == Jr2Lexer::LPAREN || type == Jr2Lexer::LBRACK) {
      stack.push_back({type, token, lineIndent(token, nullptr)});
      if (stack.size() > static_cast<size_t>(kMaxNesting)) {
        diags.emit(diag::SyntaxTooDeep, range(token), "brackets", kMaxNesting);
        return false;
      }
    } else if (type == Jr2Lexer::RBRACE || type == Jr2Lexer::RPAREN || type == Jr2Lexer::RBRACK) {
      const size_t want = type == Jr2Lexer::RBRACE   ? Jr2Lexer::LBRACE
                          : type == Jr2Lexer::RPAREN ? Jr2Lexer::LPAREN
                                                     : Jr2Lexer::LBRACK;
      bool first = false;
      const uint32_t indent = lineIndent(token, &first);
      // A `}` that starts its line belongs to the nearest `{` whose line is indented no deeper:
      // an opener indented deeper than the closer, with such a `{` below it, lost its own `}`.
      if (type == Jr2Lexer::RBRACE && first && !misplaced) {
        while (stack.size() >= 2 && stack.back().type == Jr2Lexer::LBRACE &&
               stack.back().indent > indent &&
               std::any_of(stack.begin(), stack.end() - 1, [&](const Open& o) {
                 return o.type == Jr2Lexer::LBRACE && o.indent <= indent;
               })) {
          if (!misplaced) misplaced = stack.back(), closedBy = token;
          stack.pop_back();
        }
      }
      // A stray closer is the parser's to report; only pop what it closes.
      if (!stack.empty() && stack.back().type == want) stack.pop_back();
    }
  }
  // An unterminated string, text block or comment swallowed the closers after it; the error
  // reported for it is the one to fix, and an unclosed bracket here would only be its echo.
  if (swallowed) return true;
  if (misplaced) {
    // The block most likely ends before the first later line indented no deeper than its opener.
    size_t endsBefore = closedBy;
    for (size_t t = misplaced->token + 1; t < count; ++t) {
      bool first = false;
      const uint32_t indent = lineIndent(t, &first);
      if (first && indent <= misplaced->indent) {
        endsBefore = t;
        break;
      }
    }
    const SourceRange at = range(endsBefore);
    const uint32_t lineStart = file.lineStart(file.lineCol(at.begin).line);
    diags.emit(diag::SyntaxUnclosed, range(misplaced->token), "{", "}", "the block")
        .fix(SourceRange::point(file.id(), lineStart), std::string(misplaced->indent, ' ') + "}\n")
        .note(diag::NoteBlockEndsByIndentation, at);
    *eofReported = true;
    return true;
  }
  if (!stack.empty()) {
    // No indentation to go by: the innermost bracket still open at the end is the one to close.
    const Open& open = stack.back();
    const char* opener = open.type == Jr2Lexer::LBRACE   ? "{"
                         : open.type == Jr2Lexer::LPAREN ? "("
                                                         : "[";
    const char* closer = open.type == Jr2Lexer::LBRACE   ? "}"
                         : open.type == Jr2Lexer::LPAREN ? ")"
                                                         : "]";
    const char* what = open.type == Jr2Lexer::LBRACE ? "the block" : "the list";
    const auto end = static_cast<uint32_t>(file.text().size());
    // Point the note at the last token, not at the end of the file: trailing comments are not
    // where the author lost the bracket.
    const size_t last = count - 1;  // every token is on the default channel
    diags.emit(diag::SyntaxUnclosed, range(open.token), opener, closer, what)
        .fix(SourceRange::point(file.id(), end), closer)
        .note(diag::NoteFileEndsBracketOpen, range(last));
    *eofReported = true;
  }
  return true;
}

// Lexes, filters, recovers and checks the nesting of `file`'s tokens, and ends them with EOF,
// frozen for the parse. None when the file must not be parsed at all (CheckNesting).
// `eofReported` is set when a diagnostic already speaks of the end of the file.
std::optional<TokenTable> PrepareTokens(const SourceFile& file, Diagnostics& diags,
                                        bool* eofReported) {
  bool swallowed = false;
  size_t codePoints = 0;
  TokenTable tokens = Lex(file, &codePoints);
  FilterTokens(tokens, file, diags, &swallowed);
  RecoverTokens(tokens, file, diags);
  *eofReported = swallowed;
  if (!CheckNesting(tokens, file, diags, swallowed, eofReported)) return std::nullopt;
  // The parser needs an EOF token at the end.
  tokens.tokens.push_back({0, 0, static_cast<uint32_t>(codePoints), 0, TokenTable::kEof, 0});
  tokens.setText(tokens.tokens.size() - 1, "<EOF>");
  tokens.freeze();
  return tokens;
}

}  // namespace

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
    parser.setErrorHandler(std::make_shared<ErrorStrategy>(file, diags, eofReported));
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
