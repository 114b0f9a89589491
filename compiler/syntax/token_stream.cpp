#include "compiler/syntax/token_stream.h"

#include <fmt/format.h>

namespace jr2::syntax {

namespace {

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

}  // namespace

antlr4::TokenSource* TheTokenSource() {
  static NoTokenSource source;
  return &source;
}

antlr4::TokenSource* Jr2Token::getTokenSource() const { return TheTokenSource(); }

std::string Jr2Token::toString() const {
  return fmt::format("[@{},{}:{}='{}',<{}>,{}:{}]", index_, getStartIndex(), getStopIndex(),
                     getText(), getType(), getLine(), getCharPositionInLine());
}

}  // namespace jr2::syntax
