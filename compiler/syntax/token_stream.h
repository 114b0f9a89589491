// The tokens of a TokenTable (scanner.h) as ANTLR's parser reads them: Jr2Token, a view of one
// token, and TokenVectorStream, the parser's stream over the table.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "antlr4-runtime.h"
#include "compiler/syntax/scanner.h"

namespace jr2::syntax {

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
  std::string toString() const override;

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

// The one token source of every Jr2Token and TokenVectorStream (token_stream.cpp says why it
// makes no tokens).
antlr4::TokenSource* TheTokenSource();

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

}  // namespace jr2::syntax
