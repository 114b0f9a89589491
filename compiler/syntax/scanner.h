// The scanner: a file's text → its tokens, in the TokenTable that the token passes rewrite and
// the parse reads (scanner.cpp says why it is hand-written, not ANTLR's). A token's type is the
// number ANTLR's Jr2Lexer gives it (grammar/Jr2Lexer.g4), but nothing of ANTLR is needed here.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/source/source.h"

namespace jr2::syntax {

// What TokenTable::type says at the end of the file: ANTLR's Token::EOF (scanner.cpp holds the
// two equal), spelled here so that this header needs no ANTLR header.
inline constexpr size_t kEofType = static_cast<size_t>(-1);

// The tokens of one file, as the lexer made them: 20 bytes a token. The passes before the parse
// (token_passes.h: the filter, the recovery, the bracket pass) rewrite them in one vector; the
// parse reads them from chunks (freeze), and its first stage frees the chunks it is past
// (releaseBefore), as it frees each declaration's parse tree: the whole table, about four bytes a
// source byte, had been the largest single thing at the peak memory of a check (#15). The parser
// sees each token through a Jr2Token, made on demand a block at a time and freed the same way
// (TokenVectorStream, token_stream.h).
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
    return t == kEof ? kEofType : size_t{t};
  }
  void setType(size_t i, size_t type) {
    at(i).type = type == kEofType ? kEof : static_cast<uint16_t>(type);
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

// Splits `file` (valid UTF-8, checked before) into the tokens of the default channel.
// `codePoints` is set to the length of the text in code points, where the EOF token stands.
TokenTable Lex(const SourceFile& file, size_t* codePoints);

// Whether a token type is a keyword of grammar/Jr2Lexer.g4 (IMPORT … NULL_KW).
bool IsKeyword(size_t type);
// The keywords' spellings, in grammar/Jr2Lexer.g4's order (`import` … `null`).
std::vector<std::string_view> Keywords();

// What the hand-written lexer makes of `file` (valid UTF-8), the default channel's tokens and
// EOF, as ANTLR would say them: for the test that holds it to ANTLR's lexer generated from
// grammar/Jr2Lexer.g4, which stays the specification (tests/unit/lexer_test.cpp).
struct LexedToken {
  size_t type, start, stop, line, column;
  std::string text;
};
std::vector<LexedToken> LexForTest(const SourceFile& file);

}  // namespace jr2::syntax
