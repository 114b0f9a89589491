// The syntax phase: what the AST holds for valid input.
#include <gtest/gtest.h>
#include <llvm/Support/Casting.h>

#include <string>

#include "compiler/syntax/parse.h"

namespace jr2 {
namespace {

struct Parsed {
  SourceManager sm;
  Diagnostics diags;
  std::unique_ptr<ast::File> file;
  explicit Parsed(const std::string& text) {
    file = syntax::Parse(*sm.add("t.jr2", "", text), diags);
  }
};

TEST(Syntax, DurationsAreMilliseconds) {
  Parsed p("machine m { initial state a { after 250ms -> b } state b { after 2h -> a } }");
  ASSERT_EQ(p.diags.errorCount(), 0u);
  auto* m = llvm::cast<ast::MachineDecl>(p.file->decls[0].get());
  EXPECT_EQ(m->body.states[0]->body.transitions[0].delayMillis, 250);
  EXPECT_EQ(m->body.states[1]->body.transitions[0].delayMillis, 2 * 3600 * 1000);
}

TEST(Syntax, PrecedenceAndAssociativity) {
  // a || b && c == d + e * f  →  a || (b && (c == (d + (e * f))))
  Parsed p(
      "machine m { var x: bool = a || b && c == d + e * f ? 1 : 2 ?? 3\n initial state s {} }");
  ASSERT_EQ(p.diags.errorCount(), 0u);
  auto* m = llvm::cast<ast::MachineDecl>(p.file->decls[0].get());
  auto* cond = llvm::dyn_cast<ast::ConditionalExpr>(m->vars[0].init.get());
  ASSERT_NE(cond, nullptr);
  auto* orE = llvm::dyn_cast<ast::BinaryExpr>(cond->cond.get());
  ASSERT_NE(orE, nullptr);
  EXPECT_EQ(orE->op, ast::BinaryOp::kOr);
  auto* andE = llvm::cast<ast::BinaryExpr>(orE->rhs.get());
  EXPECT_EQ(andE->op, ast::BinaryOp::kAnd);
  auto* eq = llvm::cast<ast::BinaryExpr>(andE->rhs.get());
  EXPECT_EQ(eq->op, ast::BinaryOp::kEq);
  auto* add = llvm::cast<ast::BinaryExpr>(eq->rhs.get());
  EXPECT_EQ(add->op, ast::BinaryOp::kAdd);
  EXPECT_EQ(llvm::cast<ast::BinaryExpr>(add->rhs.get())->op, ast::BinaryOp::kMul);
  // `??` binds tighter than `?:`, so the else branch is `2 ?? 3`.
  EXPECT_EQ(llvm::cast<ast::BinaryExpr>(cond->otherwise.get())->op, ast::BinaryOp::kCoalesce);
}

TEST(Syntax, StringEscapesAndTextBlocks) {
  Parsed p(
      "agent a {\n  model: \"x\\ty\\n\\\"q\\\" \\u{1F600}\"\n  instructions: \"\"\"\n"
      "    Line one.\n      Indented.\n    Line three.\n    \"\"\"\n}");
  ASSERT_EQ(p.diags.errorCount(), 0u);
  auto* a = llvm::cast<ast::AgentDecl>(p.file->decls[0].get());
  EXPECT_EQ(llvm::cast<ast::StringLit>(a->entries[0].value.get())->value, "x\ty\n\"q\" 😀");
  EXPECT_EQ(llvm::cast<ast::StringLit>(a->entries[1].value.get())->value,
            "Line one.\n  Indented.\nLine three.");
}

TEST(Syntax, KeywordsAreNamesAfterDotAndBeforeColon) {
  Parsed p(
      "type T { source: string\n state: int }\n"
      "machine m { var o: json = { initial: done.output, if: 1 }\n initial state s {} }");
  EXPECT_EQ(p.diags.errorCount(), 0u);
  auto* t = llvm::cast<ast::TypeDecl>(p.file->decls[0].get());
  EXPECT_EQ(t->fields[0].name.text, "source");
  EXPECT_EQ(t->fields[1].name.text, "state");
}

TEST(Syntax, SourceFormsAndHooks) {
  Parsed p(
      "type A { id: string }\n"
      "source r: A {\n read: extern list_issues idempotent\n items: answer.issues\n poll_every: "
      "1m\n"
      " hook forge \"issues.labeled\" => reread\n}\n"
      "source s: A {\n push\n hold: 10\n hook sentry \"a\" => carry { id: payload.id }\n"
      " hook sentry \"b\" => skip \"why\"\n}");
  ASSERT_EQ(p.diags.errorCount(), 0u);
  auto* r = llvm::cast<ast::SourceDecl>(p.file->decls[1].get());
  EXPECT_EQ(r->form, ast::SourceDecl::Form::kRead);
  ASSERT_TRUE(r->call.has_value());
  EXPECT_TRUE(r->call->isExtern);
  EXPECT_TRUE(r->call->idempotent);
  EXPECT_EQ(r->hooks[0].verdict, ast::Hook::Verdict::kReread);
  auto* s = llvm::cast<ast::SourceDecl>(p.file->decls[2].get());
  EXPECT_EQ(s->form, ast::SourceDecl::Form::kPush);
  ASSERT_EQ(s->hooks.size(), 2u);
  EXPECT_EQ(s->hooks[0].verdict, ast::Hook::Verdict::kCarry);
  EXPECT_EQ(s->hooks[1].verdict, ast::Hook::Verdict::kSkip);
  EXPECT_EQ(s->hooks[1].eventKey, "b");
}

TEST(Syntax, EveryNodeHasARange) {
  Parsed p("event go\nmachine m {\n  initial state a {\n    on go -> b\n  }\n  final state b\n}");
  ASSERT_EQ(p.diags.errorCount(), 0u);
  auto* m = llvm::cast<ast::MachineDecl>(p.file->decls[1].get());
  const auto& t = m->body.states[0]->body.transitions[0];
  EXPECT_TRUE(t.range.valid());
  const auto& text = p.sm.file(1).text();
  EXPECT_EQ(text.substr(t.event.range.begin, t.event.range.end - t.event.range.begin), "go");
  EXPECT_EQ(text.substr(t.target->range.begin, t.target->range.end - t.target->range.begin), "b");
  EXPECT_TRUE(m->body.states[1]->final);
}

TEST(Syntax, RecoversAndReportsSeveralErrors) {
  Parsed p("machine m {\n  initial state a {\n    foo\n  }\n  state b {\n    bar\n  }\n}\n");
  EXPECT_EQ(p.diags.errorCount(), 2u);
}

// The parse frees the tokens behind it, a chunk of 2,048 at a time; a file whose first
// declarations parsed clean and whose last does not is parsed again from its first token, from
// tokens made again. Its reports must be those of the same mistakes in a short file: each once
// (the token filter's among them, which the second lexing must not repeat), in the same words,
// and at their own lines.
TEST(Syntax, AMistakePastTheFreedTokensIsReportedAsInAShortFile) {
  const std::string early = "event first external;\n";  // the token filter's report
  const std::string late = "machine m {\n  initial state a { on first -> }\n}\n";
  std::string filler;
  for (int i = 0; i < 2000; ++i) filler += "event e" + std::to_string(i) + " external\n";
  Parsed shortFile(early + late);
  Parsed longFile(early + filler + late);
  ASSERT_EQ(shortFile.diags.all().size(), 2u) << "the `;` and the missing target";
  ASSERT_EQ(longFile.diags.all().size(), shortFile.diags.all().size());
  for (size_t i = 0; i < shortFile.diags.all().size(); ++i) {
    const Diagnostic& a = shortFile.diags.all()[i];
    const Diagnostic& b = longFile.diags.all()[i];
    EXPECT_STREQ(a.code(), b.code());
    EXPECT_EQ(a.message, b.message);
    const SourceFile& fa = shortFile.sm.file(a.range.file);
    const SourceFile& fb = longFile.sm.file(b.range.file);
    const uint32_t shift = i == 0 ? 0 : 2000;  // the filler's lines
    EXPECT_EQ(fa.lineCol(a.range.begin).line + shift, fb.lineCol(b.range.begin).line);
    EXPECT_EQ(fa.lineCol(a.range.begin).column, fb.lineCol(b.range.begin).column);
  }
  // And a long file without a mistake parses whole, past every freed chunk.
  Parsed clean(filler + "machine m {\n  initial state a { on e1999 -> b }\n  state b {}\n}\n");
  EXPECT_EQ(clean.diags.all().size(), 0u);
  EXPECT_EQ(clean.file->decls.size(), 2001u);
}

// A name is a view (ast::Text): of the source's bytes when they are its token's text, else of a
// copy its File keeps. ANTLR's recovery makes up tokens that are not in the source (`<missing
// IDENT>`), and a recovered name can span tokens (`{a`): those read as before, from the File,
// after the builder that made them is gone.
TEST(Syntax, ANameIsAViewOfTheSourceOrOfItsFile) {
  auto inside = [](std::string_view part, std::string_view whole) {
    return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
  };
  Parsed clean("event go\nmachine m {\n  initial state a { on go -> b }\n  state b {}\n}\n");
  ASSERT_EQ(clean.diags.errorCount(), 0u);
  const std::string_view source = clean.sm.file(clean.file->file).text();
  auto* m = llvm::cast<ast::MachineDecl>(clean.file->decls[1].get());
  const ast::Transition& on = m->body.states[0]->body.transitions[0];
  EXPECT_EQ(on.event.parts[0].text, "go");
  EXPECT_TRUE(inside(on.event.parts[0].text, source));
  EXPECT_TRUE(inside(on.target->parts[0].text, source));
  EXPECT_TRUE(clean.file->texts.empty()) << "a clean file copies no name";

  Parsed missing("machine m {\n  initial state a { on go -> }\n}\n");
  ASSERT_GT(missing.diags.errorCount(), 0u);
  auto* mm = llvm::cast<ast::MachineDecl>(missing.file->decls[0].get());
  const ast::Transition& t = mm->body.states[0]->body.transitions[0];
  ASSERT_TRUE(t.target.has_value());
  const ast::Text made = t.target->parts[0].text;
  EXPECT_EQ(made, "<missing IDENT>");
  ASSERT_EQ(missing.file->texts.size(), 1u);
  EXPECT_TRUE(inside(made, missing.file->texts.front()));

  Parsed spanning("type { a: string }\n");
  ASSERT_EQ(spanning.file->decls.size(), 1u);
  EXPECT_EQ(spanning.file->decls[0]->name.text, "{a") << "the recovered name reads as before";
  EXPECT_TRUE(inside(spanning.file->decls[0]->name.text, spanning.file->texts.front()));
}

TEST(Syntax, RefusesDeepNestingWithoutCrashing) {
  std::string deep = "machine m { var x: int = " + std::string(10000, '(') + "1" +
                     std::string(10000, ')') + "\n initial state a {} }";
  Parsed p(deep);
  ASSERT_EQ(p.diags.errorCount(), 1u);
  EXPECT_NE(p.diags.all()[0].message.find("nest more than"), std::string::npos);
}

}  // namespace
}  // namespace jr2
