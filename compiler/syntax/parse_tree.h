// A parse tree node's children by kind, found as ANTLR's generated accessors find them
// (`ctx->expr()`, `ctx->IDENT()`), without a dynamic_cast on each child: those casts, and the
// type-name comparisons inside them, were a fifth of a cold `jr2c check`'s instructions (#33,
// docs/performance.md). The generated accessors are rewritten to call these when the parser is
// generated (cmake/Jr2ParserAccessors.cmake); the AST builder calls them too.
//
// The grammar labels no alternative, so a rule's node is exactly its context class; and a token's
// node is one of the runtime's two (Parser::createTerminalNode, Parser::createErrorNode). So the
// dynamic type's `typeid` says what a child is.
#pragma once

#include <typeinfo>
#include <vector>

#include "antlr4-runtime.h"

namespace jr2::syntax::gen {

// `t` as a token's node (a TerminalNodeImpl, or the ErrorNodeImpl recovery makes), or null.
inline antlr4::tree::TerminalNode* AsToken(antlr4::tree::ParseTree* t) {
  const std::type_info& type = typeid(*t);
  if (type == typeid(antlr4::tree::TerminalNodeImpl) ||
      type == typeid(antlr4::tree::ErrorNodeImpl)) {
    return static_cast<antlr4::tree::TerminalNode*>(t);
  }
  return nullptr;
}

// `t` as a rule's node of context T (a generated class), or null.
template <class T>
T* AsRule(antlr4::tree::ParseTree* t) {
  return t != nullptr && typeid(*t) == typeid(T) ? static_cast<T*>(t) : nullptr;
}

// `t` as any rule's node, or null.
inline antlr4::ParserRuleContext* AsAnyRule(antlr4::tree::ParseTree* t) {
  return t != nullptr && AsToken(t) == nullptr ? static_cast<antlr4::ParserRuleContext*>(t)
                                               : nullptr;
}

// ParserRuleContext::getRuleContext<T>(i): the i-th child of context T.
template <class T>
T* RuleChild(antlr4::ParserRuleContext* c, size_t i) {
  size_t j = 0;
  for (antlr4::tree::ParseTree* child : c->children) {
    if (T* rule = AsRule<T>(child); rule != nullptr && j++ == i) return rule;
  }
  return nullptr;
}

// ParserRuleContext::getRuleContexts<T>(): every child of context T.
template <class T>
std::vector<T*> RuleChildren(antlr4::ParserRuleContext* c) {
  std::vector<T*> out;
  for (antlr4::tree::ParseTree* child : c->children) {
    if (T* rule = AsRule<T>(child)) out.push_back(rule);
  }
  return out;
}

// ParserRuleContext::getToken(type, i): the i-th child that is a token of that type.
inline antlr4::tree::TerminalNode* TokenChild(antlr4::ParserRuleContext* c, size_t type, size_t i) {
  if (i >= c->children.size()) return nullptr;  // as getToken
  size_t j = 0;
  for (antlr4::tree::ParseTree* child : c->children) {
    antlr4::tree::TerminalNode* token = AsToken(child);
    if (token != nullptr && token->getSymbol()->getType() == type && j++ == i) return token;
  }
  return nullptr;
}

// ParserRuleContext::getTokens(type): every child that is a token of that type.
inline std::vector<antlr4::tree::TerminalNode*> TokenChildren(antlr4::ParserRuleContext* c,
                                                              size_t type) {
  std::vector<antlr4::tree::TerminalNode*> out;
  for (antlr4::tree::ParseTree* child : c->children) {
    antlr4::tree::TerminalNode* token = AsToken(child);
    if (token != nullptr && token->getSymbol()->getType() == type) out.push_back(token);
  }
  return out;
}

}  // namespace jr2::syntax::gen
