// compiler/syntax/parse_tree.h, which ANTLR's generated accessors are rewritten to call (#33),
// against ANTLR's own lookups it replaces (ParserRuleContext's getRuleContext, getRuleContexts,
// getToken, getTokens and dynamic_cast): every node of the parse trees ANTLR's own lexer and
// parser make of the project's files and of mutations of them (whose trees hold the error nodes
// recovery makes), every child position, every token type among the children and one that is not.
// ANTLR's generated headers first (they declare `FAIL()` and `EOF()`, which gtest's and <cstdio>'s
// macros would break), as in lexer_test.cpp.
#include "compiler/syntax/parse_tree.h"

#include "Jr2Lexer.h"
#include "Jr2Parser.h"
#include "antlr4-runtime.h"
// Then the rest.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "compiler/source/source.h"
#include "tests/unit/project_files.h"

namespace {

namespace gen = jr2::syntax::gen;
using P = gen::Jr2Parser;

struct Counts {
  size_t nodes = 0;
  size_t errorNodes = 0;
  size_t lookups = 0;
};

// The rule contexts the AST builder asks for most, and a few it never meets as a child.
template <class T>
void SameRuleLookups(antlr4::ParserRuleContext* n, Counts& counts) {
  for (size_t i = 0; i <= n->children.size(); ++i) {
    ASSERT_EQ(gen::RuleChild<T>(n, i), n->getRuleContext<T>(i)) << typeid(T).name() << " " << i;
    ++counts.lookups;
  }
  ASSERT_EQ(gen::RuleChildren<T>(n), n->getRuleContexts<T>()) << typeid(T).name();
  for (antlr4::tree::ParseTree* child : n->children) {
    ASSERT_EQ(gen::AsRule<T>(child), dynamic_cast<T*>(child)) << typeid(T).name();
  }
}

void Check(antlr4::tree::ParseTree* t, Counts& counts) {
  ++counts.nodes;
  if (dynamic_cast<antlr4::tree::ErrorNode*>(t) != nullptr) ++counts.errorNodes;
  ASSERT_EQ(gen::AsToken(t), dynamic_cast<antlr4::tree::TerminalNode*>(t));
  ASSERT_EQ(gen::AsAnyRule(t), dynamic_cast<antlr4::ParserRuleContext*>(t));
  auto* n = dynamic_cast<antlr4::ParserRuleContext*>(t);
  if (n == nullptr) return;
  SameRuleLookups<P::ExprContext>(n, counts);
  SameRuleLookups<P::UnaryExprContext>(n, counts);
  SameRuleLookups<P::BinaryOpContext>(n, counts);
  SameRuleLookups<P::PostfixContext>(n, counts);
  SameRuleLookups<P::QualNameContext>(n, counts);
  SameRuleLookups<P::AnyWordContext>(n, counts);
  SameRuleLookups<P::TypeRefContext>(n, counts);
  SameRuleLookups<P::MemberContext>(n, counts);
  SameRuleLookups<P::StateDeclContext>(n, counts);
  SameRuleLookups<P::TransitionContext>(n, counts);
  SameRuleLookups<P::ObjectEntryContext>(n, counts);
  SameRuleLookups<P::DeclContext>(n, counts);
  SameRuleLookups<P::FileContext>(n, counts);
  // Every token type among the children, and one that is none of them.
  std::set<size_t> types = {P::IDENT};
  for (antlr4::tree::ParseTree* child : n->children) {
    if (auto* token = dynamic_cast<antlr4::tree::TerminalNode*>(child))
      types.insert(token->getSymbol()->getType());
  }
  for (size_t type : types) {
    for (size_t i = 0; i <= n->children.size(); ++i) {
      ASSERT_EQ(gen::TokenChild(n, type, i), n->getToken(type, i)) << type << " " << i;
      ++counts.lookups;
    }
    ASSERT_EQ(gen::TokenChildren(n, type), n->getTokens(type)) << type;
  }
  for (antlr4::tree::ParseTree* child : n->children) {
    Check(child, counts);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

void CheckText(const std::string& text, Counts& counts) {
  antlr4::ANTLRInputStream input(text);
  gen::Jr2Lexer lexer(&input);
  lexer.removeErrorListeners();
  antlr4::CommonTokenStream tokens(&lexer);
  P parser(&tokens);
  parser.removeErrorListeners();
  Check(parser.file(), counts);
}

// ANTLR's parser recurses once a bracket: a fuzz file nested thousands deep is left out
// (project_files.h).
std::vector<std::string> ProjectFiles() {
  return jr2::testing::ProjectFiles({"samples", "tests", "golden", "stdlib"}, /*deepest=*/200);
}

TEST(ParseTree, ChildrenAreFoundAsAntlrFindsThemInEveryTreeOfTheProject) {
  const std::vector<std::string> texts = ProjectFiles();
  ASSERT_GT(texts.size(), 100u) << "the project's .jr2 files were not found";
  Counts counts;
  for (const std::string& text : texts) {
    CheckText(text, counts);
    ASSERT_FALSE(HasFatalFailure()) << text.substr(0, 300);
  }
  std::printf("parse tree: %zu files, %zu nodes (%zu error nodes), %zu lookups alike\n",
              texts.size(), counts.nodes, counts.errorNodes, counts.lookups);
}

TEST(ParseTree, ChildrenAreFoundAsAntlrFindsThemAfterRecovery) {
  const std::vector<std::string> texts = ProjectFiles();
  ASSERT_FALSE(texts.empty());
  // Tokens put in and text taken out: recovery inserts, deletes and conjures tokens, and
  // makes error nodes.
  const std::vector<std::string> pieces = {
      "{", "}", "(", ")",  "[",     "]",  ",",       ":",     "=", "->",         "=>",    "?",
      "!", ".", "+", "&&", "state", "on", "machine", "\"x\"", "1", "idempotent", "extern"};
  jr2::testing::Mutation mutate{{}, /*maxEdits=*/3, /*maxCut=*/6, /*twice=*/false};
  for (const std::string& piece : pieces) mutate.pieces.push_back(" " + piece + " ");
  std::mt19937 rng(20261206);
  Counts counts;
  constexpr int kMutations = 300;
  for (int m = 0; m < kMutations; ++m) {
    const std::string text = mutate(texts, rng);
    CheckText(text, counts);
    ASSERT_FALSE(HasFatalFailure()) << "mutation " << m << ":\n" << text.substr(0, 400);
  }
  EXPECT_GT(counts.errorNodes, 0u) << "no mutation made an error node: the test lost its point";
  std::printf("parse tree: %d mutations, %zu nodes (%zu error nodes), %zu lookups alike\n",
              kMutations, counts.nodes, counts.errorNodes, counts.lookups);
}

}  // namespace
