// The codegen Printer: named and callback substitutions, block templates, indentation, and
// text that is never read as a template.

#include "compiler/codegen/printer.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace jr2::codegen {
namespace {

TEST(Printer, NamedSubstitutionsAndDollar) {
  Printer p;
  p.print("int $name$ = $value$; // $$5\n", {{"name", "x"}, {"value", std::string("1")}});
  EXPECT_EQ(p.str(), "int x = 1; // $5\n");
}

TEST(Printer, AValueIsNeverReadAsATemplate) {
  Printer p;
  // A user's string with dollars in it goes in through a substitution or raw(), unexpanded.
  p.print("s = $s$;\n", {{"s", "\"$name$ costs $5\""}});
  p.raw("// a file called $x$.jr2\n");
  EXPECT_EQ(p.str(), "s = \"$name$ costs $5\";\n// a file called $x$.jr2\n");
}

TEST(Printer, AMissingValueOrAnUnclosedDollarIsAGeneratorBug) {
  Printer p;
  EXPECT_THROW(p.print("$nope$\n"), std::logic_error);
  EXPECT_THROW(p.print("$open\n"), std::logic_error);
  EXPECT_THROW(p.emit("not a block"), std::logic_error);
}

TEST(Printer, IndentsEveryLineAndKeepsBlankLinesBlank) {
  Printer p;
  p.print("a {\n");
  p.indent();
  p.print("b;\n\nc;\n");
  p.outdent();
  p.print("}\n");
  EXPECT_EQ(p.str(), "a {\n  b;\n\n  c;\n}\n");
}

TEST(Printer, BlockTemplatesLoseTheirFirstNewlineAndCommonIndentation) {
  Printer p;
  p.emit(R"gen(
    void f() {
      g();
    }
  )gen");
  EXPECT_EQ(p.str(), "void f() {\n  g();\n}\n");
}

TEST(Printer, ACallbackAloneOnItsLinePrintsAtThatLinesIndentation) {
  Printer p;
  p.emit(R"gen(
    switch (x) {
      $cases$
      default:
        break;
    }
  )gen",
         {{"cases", [&] {
             p.print("case 1:\n  one();\n");
             p.emit(R"gen(
                      case 2: {
                        $body$
                      }
                    )gen",
                    {{"body", [&] { p.print("two();\nbreak;\n"); }}});
           }}});
  EXPECT_EQ(p.str(),
            "switch (x) {\n"
            "  case 1:\n"
            "    one();\n"
            "  case 2: {\n"
            "    two();\n"
            "    break;\n"
            "  }\n"
            "  default:\n"
            "    break;\n"
            "}\n");
}

TEST(Printer, ACallbackThatPrintsNothingLeavesNoBlankLine) {
  Printer p;
  p.emit(R"gen(
    a;
    $nothing$
    b;
  )gen",
         {{"nothing", [] {}}});
  EXPECT_EQ(p.str(), "a;\nb;\n");
}

TEST(Printer, AValueOfSeveralLinesIsIndentedLikeItsLine) {
  Printer p;
  p.indent();
  p.emit(R"gen(
    {
      f();$more$
    }
  )gen",
         {{"more", "\ng();"}});
  EXPECT_EQ(p.str(), "  {\n    f();\n    g();\n  }\n");
}

}  // namespace
}  // namespace jr2::codegen
