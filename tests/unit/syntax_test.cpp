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

// An expression as a fully bracketed S-expression, to say how the parser grouped it.
std::string Sexp(const ast::Expr* e) {
  if (e == nullptr) return "<null>";
  switch (e->kind) {
    case ast::Expr::Kind::kName:
      return std::string(llvm::cast<ast::NameExpr>(e)->name.text);
    case ast::Expr::Kind::kInt:
      return std::to_string(llvm::cast<ast::IntLit>(e)->value);
    case ast::Expr::Kind::kMember: {
      auto* m = llvm::cast<ast::MemberExpr>(e);
      return "(. " + Sexp(m->object.get()) + " " + std::string(m->member.text) + ")";
    }
    case ast::Expr::Kind::kIndex: {
      auto* x = llvm::cast<ast::IndexExpr>(e);
      return "([] " + Sexp(x->object.get()) + " " + Sexp(x->index.get()) + ")";
    }
    case ast::Expr::Kind::kCall: {
      auto* c = llvm::cast<ast::CallExpr>(e);
      std::string out = "(call " + Sexp(c->callee.get());
      for (const auto& a : c->args) out += " " + Sexp(a.value.get());
      return out + ")";
    }
    case ast::Expr::Kind::kNonNull:
      return "(! " + Sexp(llvm::cast<ast::NonNullExpr>(e)->operand.get()) + ")";
    case ast::Expr::Kind::kUnary: {
      auto* u = llvm::cast<ast::UnaryExpr>(e);
      return std::string(u->op == ast::UnaryOp::kNot ? "(not " : "(neg ") + Sexp(u->operand.get()) +
             ")";
    }
    case ast::Expr::Kind::kBinary: {
      auto* b = llvm::cast<ast::BinaryExpr>(e);
      return "(" + std::string(ast::Spelling(b->op)) + " " + Sexp(b->lhs.get()) + " " +
             Sexp(b->rhs.get()) + ")";
    }
    case ast::Expr::Kind::kConditional: {
      auto* c = llvm::cast<ast::ConditionalExpr>(e);
      return "(? " + Sexp(c->cond.get()) + " " + Sexp(c->then.get()) + " " +
             Sexp(c->otherwise.get()) + ")";
    }
    case ast::Expr::Kind::kList: {
      std::string out = "[";
      for (const auto& x : llvm::cast<ast::ListExpr>(e)->elements) {
        out += (out.size() > 1 ? " " : "") + Sexp(x.get());
      }
      return out + "]";
    }
    default:
      return "<other>";
  }
}

// `var x: json = TEXT` parsed; the initial value's S-expression, or the first diagnostic.
struct OneExpr {
  Parsed parsed;
  std::string sexp;
  explicit OneExpr(const std::string& text)
      : parsed("machine m { var x: json = " + text + "\n initial state s {} }") {
    auto* m = llvm::dyn_cast<ast::MachineDecl>(parsed.file->decls.at(0).get());
    sexp = m != nullptr && !m->vars.empty() ? Sexp(m->vars[0].init.get()) : "<no var>";
  }
  std::string source(SourceRange r) const {
    return std::string(parsed.sm.file(r.file).text().substr(r.begin, r.end - r.begin));
  }
};

TEST(Syntax, EachBinaryLevelGroupsToTheLeftAndBindsAsTheTableSays) {
  // The parser reads a chain of operands and operators flat; the AST builder groups it. Each row
  // is one rule of docs/language.md's precedence table.
  const std::pair<const char*, const char*> cases[] = {
      {"a - b - c", "(- (- a b) c)"},
      {"a / b * c % d", "(% (* (/ a b) c) d)"},
      {"a < b < c", "(< (< a b) c)"},
      {"a == b != c", "(!= (== a b) c)"},
      {"a && b && c", "(&& (&& a b) c)"},
      {"a || b || c", "(|| (|| a b) c)"},
      {"a ?? b ?? c", "(?? (?? a b) c)"},
      {"a ?? b || c && d == e < f + g * h", "(?? a (|| b (&& c (== d (< e (+ f (* g h)))))))"},
      {"a * b + c < d == e && f || g ?? h", "(?? (|| (&& (== (< (+ (* a b) c) d) e) f) g) h)"},
      {"a + b * c - d", "(- (+ a (* b c)) d)"},
      {"a * (b + c)", "(* a (+ b c))"},
      {"-a * b", "(* (neg a) b)"},
      {"-a.b", "(neg (. a b))"},
      {"!a! == b", "(== (not (! a)) b)"},
      {"- -a", "(neg (neg a))"},
      {"f(a)[0].b!", "(! (. ([] (call f a) 0) b))"},
      {"(a)(b)", "(call a b)"},
      {"[a][0]", "([] [a] 0)"},
      {"a ? b : c ? d : e", "(? a b (? c d e))"},
      {"a ? b ? c : d : e", "(? a (? b c d) e)"},
      {"a || b ? c + d : e ?? f", "(? (|| a b) (+ c d) (?? e f))"},
      {"(a ? b : c) + d", "(+ (? a b c) d)"},
  };
  for (const auto& [text, want] : cases) {
    OneExpr e(text);
    EXPECT_EQ(e.parsed.diags.errorCount(), 0u) << text;
    EXPECT_EQ(e.sexp, want) << text;
  }
}

TEST(Syntax, AnExpressionsRangeCoversItsTextBracketsIncluded) {
  OneExpr e("(a) + b * c");
  ASSERT_EQ(e.parsed.diags.errorCount(), 0u);
  auto* m = llvm::cast<ast::MachineDecl>(e.parsed.file->decls[0].get());
  auto* add = llvm::cast<ast::BinaryExpr>(m->vars[0].init.get());
  EXPECT_EQ(e.source(add->range), "(a) + b * c");
  EXPECT_EQ(e.source(add->opRange), "+");
  EXPECT_EQ(e.source(add->lhs->range), "a");  // the name itself, inside its brackets
  EXPECT_EQ(e.source(add->rhs->range), "b * c");

  OneExpr chain("f(x).y[0]!");
  auto* cm = llvm::cast<ast::MachineDecl>(chain.parsed.file->decls[0].get());
  const ast::Expr* node = cm->vars[0].init.get();
  for (const char* want : {"f(x).y[0]!", "f(x).y[0]", "f(x).y", "f(x)"}) {
    ASSERT_NE(node, nullptr);
    EXPECT_EQ(chain.source(node->range), want);
    if (auto* n = llvm::dyn_cast<ast::NonNullExpr>(node))
      node = n->operand.get();
    else if (auto* x = llvm::dyn_cast<ast::IndexExpr>(node))
      node = x->object.get();
    else if (auto* mem = llvm::dyn_cast<ast::MemberExpr>(node))
      node = mem->object.get();
    else
      node = nullptr;
  }

  OneExpr minus("-a.b ?? c");
  auto* mm = llvm::cast<ast::MachineDecl>(minus.parsed.file->decls[0].get());
  auto* co = llvm::cast<ast::BinaryExpr>(mm->vars[0].init.get());
  EXPECT_EQ(minus.source(co->lhs->range), "-a.b");
  EXPECT_EQ(minus.source(llvm::cast<ast::UnaryExpr>(co->lhs.get())->opRange), "-");
}

TEST(Syntax, AListElementWithoutItsCommaIsReportedUnlessItGoesOnTheOneBefore) {
  // A `,` left out before an element that cannot continue the one before it: reported, with
  // its fix, and the element kept.
  OneExpr glued("[1 2 x.y f(z) {k: 1}]");
  EXPECT_EQ(glued.sexp, "[1 2 (. x y) (call f z) <other>]");
  ASSERT_EQ(glued.parsed.diags.errorCount(), 4u);
  for (const auto& d : glued.parsed.diags.all()) {
    EXPECT_NE(d.message.find("missing `,` between two elements of a list"), std::string::npos)
        << d.message;
  }
  // What would go on the element before it goes on it, as in any other expression.
  const std::pair<const char*, const char*> cases[] = {
      {"[a -1]", "[(- a 1)]"},
      {"[f (x)]", "[(call f x)]"},
      {"[a [0]]", "[([] a 0)]"},
      {"[a ! b]", "[(! a) b]"},  // `a!`, then `b` without its `,`
  };
  for (const auto& [text, want] : cases) {
    OneExpr e(text);
    EXPECT_EQ(e.sexp, want) << text;
  }
  EXPECT_EQ(OneExpr("[a ! b]").parsed.diags.errorCount(), 1u);
  EXPECT_EQ(OneExpr("[a -1]").parsed.diags.errorCount(), 0u);
  // Past its first operand, such an element is an expression like any other.
  OneExpr chained("[1 2 + 3 * x, y z ? 1 : 2]");
  EXPECT_EQ(chained.sexp, "[1 (+ 2 (* 3 x)) y (? z 1 2)]");
  EXPECT_EQ(chained.parsed.diags.errorCount(), 2u);
}

TEST(Syntax, TheDepthLimitCountsEachRightOperandOfAChainAsALevel) {
  // A chain is walked down its left side; each right operand is one level deeper, as is each
  // operand itself. `a ?? a || … * (` nests 8 levels: 124 of them fit in 1,000, 126 do not.
  const std::string level = "a ?? a || a && a == a < a + a * (";
  auto nested = [&](int n) {
    std::string text;
    for (int i = 0; i < n; ++i) text += level;
    return text + "a" + std::string(n, ')');
  };
  EXPECT_EQ(OneExpr(nested(124)).parsed.diags.errorCount(), 0u);
  OneExpr deep(nested(126));
  ASSERT_EQ(deep.parsed.diags.errorCount(), 1u);
  EXPECT_NE(deep.parsed.diags.all()[0].message.find("expressions nest more than 1000"),
            std::string::npos);
  // A long chain of one operator is walked, not nested: 5,000 operands are one level each.
  std::string flat = "a";
  for (int i = 0; i < 5000; ++i) flat += " + a";
  EXPECT_EQ(OneExpr(flat).parsed.diags.errorCount(), 0u);
}

TEST(Syntax, APostfixChainPastTheDepthLimitIsOneError) {
  std::string ok = "a";
  for (int i = 1; i < syntax::kMaxExprDepth; ++i) ok += ".b";  // 999 postfixes: 1,000 deep
  EXPECT_EQ(OneExpr(ok).parsed.diags.errorCount(), 0u);
  OneExpr deep(ok + ".b");
  ASSERT_EQ(deep.parsed.diags.errorCount(), 1u);
  EXPECT_NE(deep.parsed.diags.all()[0].message.find("expressions nest more than 1000"),
            std::string::npos);
  std::string far = ok;
  for (int i = 0; i < 30000; ++i) far += ".b";  // built in a loop: no stack to run out of
  EXPECT_EQ(OneExpr(far).parsed.diags.errorCount(), 1u);
}

TEST(Syntax, APostfixPastANodeNotBuiltStillReadsItsIndexAndArguments) {
  // The head and the first postfixes are past the limit and not built; the postfixes above them
  // are within it, and their index and arguments are read (and report their own mistakes).
  std::string head = "a";
  for (int i = 0; i < syntax::kMaxExprDepth; ++i) head += ".b";  // with the two below: 1,003 deep
  OneExpr deep(head + "[[1 2]](f(x), [3 4])");
  EXPECT_EQ(deep.sexp, "<null>");
  ASSERT_EQ(deep.parsed.diags.errorCount(), 3u);
  EXPECT_NE(deep.parsed.diags.all()[0].message.find("expressions nest more than 1000"),
            std::string::npos);
  for (size_t i : {size_t{1}, size_t{2}}) {
    EXPECT_NE(deep.parsed.diags.all()[i].message.find("missing `,` between two elements"),
              std::string::npos)
        << deep.parsed.diags.all()[i].message;
  }
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

TEST(Syntax, IdempotentMarksTheReadJustBeforeItAndIsANameElsewhere) {
  // The grammar reserves no `idempotent`: in a source body the word is an entry of its own,
  // which the builder gives to the `key: value` right before it, when no `,` stands between.
  auto source = [](const std::string& body) {
    return "type A { id: string }\nsource s: A {\n" + body + "\n}\n";
  };
  {
    Parsed p(source(" read: std.backlog(\"x.json\") idempotent\n hook forge \"e\" => reread"));
    ASSERT_EQ(p.diags.errorCount(), 0u);
    auto* s = llvm::cast<ast::SourceDecl>(p.file->decls[1].get());
    ASSERT_TRUE(s->call.has_value());
    EXPECT_TRUE(s->call->idempotent);
    const std::string_view text = p.sm.file(1).text();
    const auto slice = [&](SourceRange r) { return text.substr(r.begin, r.end - r.begin); };
    EXPECT_EQ(slice(s->call->idempotentRange), "idempotent");
    EXPECT_EQ(slice(s->call->range), "std.backlog(\"x.json\") idempotent");
    EXPECT_EQ(s->hooks.size(), 1u);
  }
  {
    // A key given twice is one report; the first entry's range, kept in the tree
    // (`SourceDecl::keys`), holds its mark, as before the mark was an entry of its own.
    Parsed p(source(" read: std.backlog(\"x.json\") idempotent\n read: std.backlog(\"y.json\")"));
    ASSERT_EQ(p.diags.errorCount(), 1u);
    EXPECT_NE(p.diags.all()[0].message.find("the key `read`"), std::string::npos)
        << p.diags.all()[0].message;
    auto* s = llvm::cast<ast::SourceDecl>(p.file->decls[1].get());
    ASSERT_EQ(s->keys.size(), 1u);
    const std::string_view text = p.sm.file(1).text();
    const SourceRange r = s->keys[0].second;
    EXPECT_EQ(text.substr(r.begin, r.end - r.begin), "read: std.backlog(\"x.json\") idempotent");
  }
  {
    // On the next line, with nothing between: still the read's mark.
    Parsed p(source(" read: std.backlog(\"x.json\")\n idempotent"));
    ASSERT_EQ(p.diags.errorCount(), 0u);
    EXPECT_TRUE(llvm::cast<ast::SourceDecl>(p.file->decls[1].get())->call->idempotent);
  }
  {
    // After a `,` it is not a mark: the comma and the unknown key are reported.
    Parsed p(source(" read: std.backlog(\"x.json\"), idempotent"));
    ASSERT_EQ(p.diags.errorCount(), 2u);
    EXPECT_NE(p.diags.all()[0].message.find("takes no commas"), std::string::npos);
    EXPECT_NE(p.diags.all()[1].message.find("`idempotent` is not a key"), std::string::npos);
  }
  {
    // A value that may not be an extern is reported with its mark.
    // (The mark is reported too: only a `read:` takes one.)
    Parsed p(source(" push\n hold: extern f idempotent"));
    ASSERT_EQ(p.diags.errorCount(), 2u);
    EXPECT_NE(p.diags.all()[0].message.find("only a `read:`"), std::string::npos);
    const auto& d = p.diags.all()[1];
    EXPECT_NE(d.message.find("not a host function"), std::string::npos);
    const std::string_view text = p.sm.file(1).text();
    EXPECT_EQ(text.substr(d.range.begin, d.range.end - d.range.begin), "extern f idempotent");
  }
  {
    // As a value, it is a name.
    Parsed p(source(" push\n hold: idempotent"));
    ASSERT_EQ(p.diags.errorCount(), 0u);
    auto* s = llvm::cast<ast::SourceDecl>(p.file->decls[1].get());
    ASSERT_NE(s->hold, nullptr);
    EXPECT_EQ(llvm::cast<ast::NameExpr>(s->hold.get())->name.text, "idempotent");
  }
  {
    // After an extern's signature, and as the name of its result type.
    Parsed p("extern f(x: int) -> int idempotent \"d\"\nextern g() -> idempotent\n");
    ASSERT_EQ(p.diags.errorCount(), 0u);
    EXPECT_TRUE(llvm::cast<ast::ExternDecl>(p.file->decls[0].get())->idempotent);
    EXPECT_FALSE(llvm::cast<ast::ExternDecl>(p.file->decls[1].get())->idempotent);
  }
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
