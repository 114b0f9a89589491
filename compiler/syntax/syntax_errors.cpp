// Syntax errors in our words (syntax_errors.h): how a token, the place in the grammar and the
// expected tokens are said.

#include "compiler/syntax/syntax_errors.h"

#include <fmt/format.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "Jr2Lexer.h"
#include "Jr2Parser.h"
#include "antlr4-runtime.h"
#include "compiler/syntax/internal.h"
#include "compiler/syntax/scanner.h"

namespace jr2::syntax {

using gen::Jr2Lexer;
using gen::Jr2Parser;

namespace {

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

// An entry of a pool, an agent or a budget whose key is none of the keys its owner takes: build_ast
// says so, with the keys or a did-you-mean (SyntaxUnknownKey), and that is the one report of the
// mistake; what the parser expected after the key (its `:`) would be a second. The keys are the
// lists the parser's entries and the language server's completion read (ast.h).
bool UnknownKeyEntry(antlr4::RuleContext* ctx) {
  auto* entry = dynamic_cast<antlr4::ParserRuleContext*>(ctx);
  if (entry == nullptr || entry->getStart() == nullptr) return false;
  std::initializer_list<const char*> keys;
  if (dynamic_cast<Jr2Parser::PoolEntryContext*>(entry) != nullptr) {
    keys = ast::kPoolKeys;
  } else if (dynamic_cast<Jr2Parser::BodyEntryContext*>(entry) != nullptr) {
    auto* block = dynamic_cast<antlr4::ParserRuleContext*>(entry->parent);
    auto* owner = block != nullptr ? block->parent : nullptr;
    if (dynamic_cast<Jr2Parser::AgentDeclContext*>(owner) != nullptr) {
      keys = ast::kAgentKeys;
    } else if (dynamic_cast<Jr2Parser::BudgetBlockContext*>(owner) != nullptr) {
      keys = ast::kBudgetKeys;
    } else {
      return false;
    }
  } else {
    return false;
  }
  const std::string key = entry->getStart()->getText();
  for (const char* k : keys) {
    if (key == k) return false;
  }
  return true;
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
        if (dynamic_cast<Jr2Parser::BudgetBlockContext*>(parent) != nullptr) {
          return "in the budget of " +
                 NameOf(dynamic_cast<antlr4::ParserRuleContext*>(parent->parent));
        }
        return "in the body of " + NameOf(parent);
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
    if (UnknownKeyEntry(ctx)) return;  // build_ast reports the unknown key, once
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

}  // namespace

std::shared_ptr<antlr4::ANTLRErrorStrategy> MakeErrorStrategy(const SourceFile& file,
                                                              Diagnostics& diags,
                                                              bool eofAlreadyReported) {
  return std::make_shared<ErrorStrategy>(file, diags, eofAlreadyReported);
}

}  // namespace jr2::syntax
