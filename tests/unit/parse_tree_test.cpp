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
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "compiler/source/source.h"

namespace {

namespace fs = std::filesystem;
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

std::vector<std::string> ProjectFiles() {
  std::vector<std::string> texts;
  for (const char* dir : {"samples", "tests", "golden", "stdlib"}) {
    const fs::path root = fs::path(JR2_SOURCE_DIR) / dir;
    if (!fs::exists(root)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      if (!e.is_regular_file()) continue;
      if (e.path().extension() != ".jr2" && e.path().parent_path().filename() != "corpus") continue;
      std::ifstream in(e.path(), std::ios::binary);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::string why;
      if (jr2::FindInvalidUtf8(text, &why)) continue;
      // ANTLR's parser recurses once a bracket: a fuzz file nested thousands deep would need the
      // big stack `jr2c` parses on (compiler/syntax/parse.cpp), which this test does not set up.
      int depth = 0;
      int deepest = 0;
      for (char ch : text) {
        depth += (ch == '(' || ch == '[' || ch == '{')   ? 1
                 : (ch == ')' || ch == ']' || ch == '}') ? -1
                                                         : 0;
        deepest = std::max(deepest, depth);
      }
      if (deepest > 200) continue;
      texts.push_back(std::move(text));
    }
  }
  return texts;
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
  // Tokens put in, taken out and doubled: recovery inserts, deletes and conjures tokens, and
  // makes error nodes.
  const std::vector<std::string> pieces = {
      "{", "}", "(", ")",  "[",     "]",  ",",       ":",     "=", "->",         "=>",    "?",
      "!", ".", "+", "&&", "state", "on", "machine", "\"x\"", "1", "idempotent", "extern"};
  std::mt19937 rng(20261206);
  Counts counts;
  constexpr int kMutations = 300;
  for (int m = 0; m < kMutations; ++m) {
    std::string text = texts[rng() % texts.size()];
    for (int edits = 1 + static_cast<int>(rng() % 3); edits > 0; --edits) {
      size_t at = text.empty() ? 0 : rng() % text.size();
      while (at > 0 && at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80)
        --at;
      const std::string piece = " " + pieces[rng() % pieces.size()] + " ";
      if (rng() % 2 == 0) {
        text.insert(at, piece);
      } else {
        size_t end = std::min(text.size(), at + 1 + rng() % 6);
        while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) ++end;
        text.erase(at, end - at);
      }
    }
    CheckText(text, counts);
    ASSERT_FALSE(HasFatalFailure()) << "mutation " << m << ":\n" << text.substr(0, 400);
  }
  EXPECT_GT(counts.errorNodes, 0u) << "no mutation made an error node: the test lost its point";
  std::printf("parse tree: %d mutations, %zu nodes (%zu error nodes), %zu lookups alike\n",
              kMutations, counts.nodes, counts.errorNodes, counts.lookups);
}

}  // namespace
