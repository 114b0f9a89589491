// Parse tree → AST. This is also where the grammar's "mistake" alternatives become E0001
// diagnostics with fix-its, and where the shape of each declaration body is checked (which keys
// a pool, a source or an agent takes). After a syntax error the tree can have missing children:
// every accessor here is null-checked, and whatever cannot be built is left out.

#include <fmt/format.h>
#include <llvm/Support/Casting.h>

#include <charconv>
#include <deque>
#include <optional>
#include <string>

#include "compiler/diag/suggest.h"
#include "compiler/syntax/internal.h"
#include "compiler/syntax/parse.h"
#include "compiler/syntax/parse_tree.h"
#include "runtime/include/jr2/meant.h"

namespace jr2::syntax {
namespace {

using P = gen::Jr2Parser;

std::string Closest(const std::string& word, std::initializer_list<const char*> candidates) {
  return ClosestName(word, std::vector<std::string>(candidates.begin(), candidates.end()));
}

std::string KeyList(std::initializer_list<const char*> keys) {
  std::string out;
  size_t i = 0;
  for (const char* k : keys) {
    if (i > 0)
      out += ++i == keys.size() ? " and " : ", ";
    else
      ++i;
    out += fmt::format("`{}`", k);
  }
  return out;
}

// The text of a parse tree node: what RuleContext::getText gives (the leaves' texts joined),
// without the std::stringstream it builds for every call (5 % of a check's instructions went
// there).
void AppendText(antlr4::tree::ParseTree* t, std::string& out) {
  if (t->children.empty()) {
    out += t->getText();  // a token, or an empty rule ("")
    return;
  }
  for (antlr4::tree::ParseTree* child : t->children) {
    if (child != nullptr) AppendText(child, out);
  }
}

std::string TextOf(antlr4::tree::ParseTree* t) {
  std::string out;
  AppendText(t, out);
  return out;
}

class Builder {
 public:
  Builder(const SourceFile& file, Diagnostics& diags, bool treeHasErrors)
      : file_(file), diags_(diags), treeHasErrors_(treeHasErrors) {}

  std::unique_ptr<ast::File> build(P::FileContext* tree) {
    auto out = std::make_unique<ast::File>();
    out->file = file_.id();
    if (tree == nullptr) return out;
    for (auto* imp : tree->importDecl()) addImport(imp, *out);
    for (auto* d : tree->decl()) addDecl(d, *out);
    finish(*out);
    return out;
  }

  void addImport(P::ImportDeclContext* imp, ast::File& out) {
    if (imp->STRING() == nullptr) return;
    ast::Import i;
    i.range = range(imp);
    i.pathRange = range(imp->STRING()->getSymbol());
    i.path = decodeString(imp->STRING()->getSymbol());
    out.imports.push_back(std::move(i));
  }

  void addDecl(P::DeclContext* d, ast::File& out) {
    if (auto decl = buildDecl(d)) out.decls.push_back(std::move(decl));
  }

  void finish(ast::File& out) {
    if (out.decls.empty() && out.imports.empty() && !diags_.hasErrors()) {
      diags_.emit(diag::SyntaxEmptyFile, SourceRange::point(file_.id(), 0), file_.name());
    }
    out.texts.swap(texts_);  // a swap moves no string: the names' views stay valid
  }

 private:
  // ---- ranges and names -----------------------------------------------------------------------

  SourceRange range(const antlr4::Token* t) const { return RangeOf(file_, t); }
  SourceRange range(antlr4::ParserRuleContext* c) const { return RangeOf(file_, c); }
  SourceRange range(antlr4::tree::TerminalNode* n) const {
    return n ? RangeOf(file_, n->getSymbol()) : SourceRange{};
  }

  // A name's text (ast::Name): the source's own bytes at its range when they are the text;
  // otherwise (a token ANTLR's recovery made up, a recovered name of several tokens) a copy
  // that the File keeps.
  std::string_view nameText(const std::string& text, SourceRange r) const {
    const std::string_view source = file_.text();
    if (r.begin <= r.end && r.end <= source.size() &&
        source.substr(r.begin, r.end - r.begin) == text) {
      return source.substr(r.begin, r.end - r.begin);
    }
    texts_.push_back(text);
    return texts_.back();
  }
  ast::Name nameOf(antlr4::tree::TerminalNode* n) const {
    const SourceRange r = range(n);
    return {nameText(n->getText(), r), r};
  }

  ast::Name word(P::AnyWordContext* c) const {
    if (c == nullptr) return {};
    const SourceRange r = range(c);
    return {nameText(TextOf(c), r), r};
  }

  // A declared name. A reserved word here is the common mistake `state final` / `event done`.
  // `finalState`: the name is a final state's, where `error` means "the machine fails".
  ast::Name declName(P::DeclNameContext* c, const char* what, bool finalState = false) {
    if (c == nullptr) return {};
    const SourceRange at = range(c);
    ast::Name name{nameText(TextOf(c), at), at};
    if (c->keyword() != nullptr) {
      std::string hint;
      if (finalState && name.text == "error") {
        // The user wants the machine to fail: that is `fail(…)`, not a state named `error`.
        diags_
            .emit(diag::SyntaxKeywordAsName, name.range, name.text, what,
                  ", such as `failed`; to make the machine fail with a reason, write "
                  "`fail(\"reason\")` in an `entry { … }` action of a state that is not final")
            .fix(name.range, "failed");
        return name;
      }
      if (name.text == "done") {
        hint = " (`on done` is how a state hears its invoked child finish)";
      } else if (name.text == "error") {
        hint = " (`on error` is how a state hears its invoked child fail)";
      }
      diags_.emit(diag::SyntaxKeywordAsName, name.range, name.text, what,
                  hint.empty() ? fmt::format(", such as `{}_`", name.text) : hint);
    }
    return name;
  }

  ast::QualName qualName(P::QualNameContext* c) const {
    ast::QualName q;
    if (c == nullptr) return q;
    q.range = range(c);
    // Every vector of the AST is reserved to its size where the tree says it: growth by doubling
    // left a third of the AST's memory unused, and the AST is most of a check's peak.
    const auto words = c->anyWord();
    q.parts.reserve((c->IDENT() != nullptr ? 1 : 0) + words.size());
    if (c->IDENT()) q.parts.push_back(nameOf(c->IDENT()));
    for (auto* w : words) q.parts.push_back(word(w));
    return q;
  }

  void commaInBody(antlr4::tree::TerminalNode* comma, const std::string& what) {
    if (comma == nullptr) return;
    const SourceRange r = range(comma);
    diags_.emit(diag::SyntaxCommaInBody, r, what).fix(r, "");
  }

  // `=` where a declaration body wants `:`.
  void checkColon(antlr4::Token* sep, const char* what, const std::string& key) {
    if (sep == nullptr || sep->getType() != P::ASSIGN) return;
    const SourceRange r = range(sep);
    diags_.emit(diag::SyntaxAssignForColon, r, what, key).fix(r, ":");
  }

  // ---- strings --------------------------------------------------------------------------------

  std::string decodeString(const antlr4::Token* t) {
    const std::string text = t->getText();
    const SourceRange r = range(t);
    if (t->getType() == P::TEXT_BLOCK) return decodeTextBlock(text);
    std::string out;
    // text is `"…"`; escapes are checked here, the lexer lets any `\x` through.
    for (size_t i = 1; i + 1 < text.size(); ++i) {
      const char c = text[i];
      if (c != '\\') {
        out += c;
        continue;
      }
      const char e = i + 2 < text.size() ? text[i + 1] : '\0';
      const auto at = static_cast<uint32_t>(r.begin + i);
      switch (e) {
        case '"':
          out += '"', ++i;
          break;
        case '\\':
          out += '\\', ++i;
          break;
        case 'n':
          out += '\n', ++i;
          break;
        case 't':
          out += '\t', ++i;
          break;
        case 'u': {
          const size_t close = text.find('}', i);
          uint32_t cp = 0;
          bool ok = i + 2 < text.size() && text[i + 2] == '{' && close != std::string::npos;
          if (ok) {
            const char* b = text.data() + i + 3;
            const char* en = text.data() + close;
            auto res = std::from_chars(b, en, cp, 16);
            ok = res.ec == std::errc() && res.ptr == en && cp <= 0x10FFFF &&
                 !(cp >= 0xD800 && cp <= 0xDFFF);
          }
          if (!ok) {
            diags_.emit(diag::SyntaxBadEscape, SourceRange{file_.id(), at, at + 2}, "\\u");
            ++i;
            break;
          }
          AppendUtf8(out, cp);
          i = close;
          break;
        }
        default:
          diags_.emit(diag::SyntaxBadEscape, SourceRange{file_.id(), at, at + 2},
                      std::string("\\") + e);
          ++i;
          break;
      }
    }
    return out;
  }

  static void AppendUtf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // `"""…"""`: a first line that is only a line break is dropped, the common leading
  // indentation of the non-blank lines is removed, and trailing blank space is trimmed.
  static std::string decodeTextBlock(const std::string& text) {
    std::string body = text.substr(3, text.size() - 6);
    if (!body.empty() && body[0] == '\n')
      body.erase(0, 1);
    else if (body.size() > 1 && body[0] == '\r' && body[1] == '\n')
      body.erase(0, 2);
    std::vector<std::string> lines;
    size_t start = 0;
    while (true) {
      const size_t nl = body.find('\n', start);
      std::string line =
          body.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      lines.push_back(line);
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
    size_t indent = std::string::npos;
    for (const auto& l : lines) {
      const size_t first = l.find_first_not_of(" \t");
      if (first == std::string::npos) continue;
      indent = std::min(indent, first);
    }
    if (indent == std::string::npos) indent = 0;
    std::string out;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) out += '\n';
      if (lines[i].size() >= indent) out += lines[i].substr(indent);
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ' || out.back() == '\t')) {
      out.pop_back();
    }
    return out;
  }

  // ---- types ----------------------------------------------------------------------------------

  std::unique_ptr<ast::TypeRef> typeRef(P::TypeRefContext* c) {
    if (c == nullptr) return nullptr;
    auto atoms = c->typeAtom();
    std::unique_ptr<ast::TypeRef> result;
    if (atoms.size() == 1) {
      result = typeAtom(atoms[0]);
      if (!result) return nullptr;
    } else {
      result = std::make_unique<ast::TypeRef>();
      result->kind = ast::TypeRef::Kind::kUnion;
      for (auto* a : atoms) {
        if (auto t = typeAtom(a)) result->args.push_back(std::move(t));
      }
    }
    result->range = range(c);
    if (c->QUESTION() != nullptr) result->optional = true;
    return result;
  }

  std::unique_ptr<ast::TypeRef> typeAtom(P::TypeAtomContext* c) {
    if (c == nullptr) return nullptr;
    if (c->typeRef() != nullptr && c->LPAREN() != nullptr) return typeRef(c->typeRef());
    auto t = std::make_unique<ast::TypeRef>();
    t->range = range(c);
    if (c->STRING() != nullptr) {
      t->kind = ast::TypeRef::Kind::kLiteral;
      t->literal = decodeString(c->STRING()->getSymbol());
      return t;
    }
    t->kind = ast::TypeRef::Kind::kNamed;
    t->name = qualName(c->qualName());
    if (c->typeRef() != nullptr) {
      if (auto arg = typeRef(c->typeRef())) t->args.push_back(std::move(arg));
    }
    return t;
  }

  ast::Field field(P::FieldDeclContext* c, const std::string& bodyOf) {
    ast::Field f;
    f.range = range(c);
    f.name = word(c->anyWord());
    if (c->COLON() == nullptr && c->typeRef() != nullptr) {
      const SourceRange at = SourceRange::point(file_.id(), f.name.range.end);
      diags_.emit(diag::SyntaxMissingColon, at, "the field", f.name.text).fix(at, ":");
    }
    f.type = typeRef(c->typeRef());
    if (c->STRING() != nullptr) f.description = decodeString(c->STRING()->getSymbol());
    if (c->expr() != nullptr) f.defaultValue = expr(c->expr());
    commaInBody(c->COMMA(), bodyOf);
    return f;
  }

  std::vector<ast::Param> params(P::ParamListContext* c) {
    std::vector<ast::Param> out;
    if (c == nullptr) return out;
    for (auto* p : c->param()) {
      ast::Param param;
      param.range = range(p);
      param.name = declName(p->declName(), "a parameter");
      if (p->typeRef() == nullptr) {
        const SourceRange at = SourceRange::point(file_.id(), param.name.range.end);
        diags_.emit(diag::SyntaxParamNeedsType, param.name.range, param.name.text)
            .fix(at, ": TYPE");
      }
      param.type = typeRef(p->typeRef());
      if (p->expr() != nullptr) param.defaultValue = expr(p->expr());
      out.push_back(std::move(param));
    }
    return out;
  }

  // ---- expressions ----------------------------------------------------------------------------

  template <typename T>
  std::unique_ptr<T> make(antlr4::ParserRuleContext* c) {
    return std::make_unique<T>(range(c));
  }

  std::vector<ast::Arg> args(P::ArgListContext* c) {
    std::vector<ast::Arg> out;
    if (c == nullptr) return out;
    const auto all = c->arg();
    out.reserve(all.size());
    for (auto* a : all) {
      ast::Arg arg;
      if (a->anyWord() != nullptr) arg.name = word(a->anyWord());
      arg.value = expr(a->expr());
      if (arg.value) out.push_back(std::move(arg));
    }
    return out;
  }

  ast::ExprPtr expr(P::ExprContext* c) {
    if (c == nullptr) return nullptr;
    if (!enter(1, c->getStart())) return nullptr;
    ast::ExprPtr e = chain(c);
    --depth_;
    return e;
  }

  // Goes `levels` deeper into nested expressions; false, and reported once, past kMaxExprDepth
  // (the later phases walk an expression by recursion).
  bool enter(int levels, const antlr4::Token* at) {
    depth_ += levels;
    if (depth_ <= kMaxExprDepth) return true;
    depth_ -= levels;
    tooDeep(at);
    return false;
  }

  void tooDeep(const antlr4::Token* at) {
    if (reportedDepth_) return;
    reportedDepth_ = true;
    diags_.emit(diag::SyntaxTooDeep, range(at), "expressions", kMaxExprDepth);
  }

  // `a + b * c … [? then : otherwise]`, an `expr` or a list element without its `,`: a chain of
  // operands and binary operators, and a `?:` that the rule's own recursion groups to the right.
  // Each operand of a chain, and the condition, is one level deeper.
  ast::ExprPtr chain(antlr4::ParserRuleContext* c) {
    const auto& kids = c->children;
    size_t chainEnd = 0;  // the operands and operators: kids[0, chainEnd)
    while (chainEnd < kids.size() &&
           (chainEnd % 2 == 0 || gen::AsRule<P::BinaryOpContext>(kids[chainEnd]) != nullptr)) {
      ++chainEnd;
    }
    if (chainEnd == kids.size()) return binary(kids, chainEnd);
    auto e = make<ast::ConditionalExpr>(c);
    if (enter(1, c->getStart())) {
      e->cond = binary(kids, chainEnd);
      --depth_;
    }
    // `?` then, `:` otherwise: the two expressions after the chain.
    std::vector<P::ExprContext*> branches;
    for (size_t i = chainEnd; i < kids.size(); ++i) {
      if (auto* x = gen::AsRule<P::ExprContext>(kids[i])) branches.push_back(x);
    }
    e->then = expr(branches.size() > 0 ? branches[0] : nullptr);
    e->otherwise = expr(branches.size() > 1 ? branches[1] : nullptr);
    if (!e->cond || !e->then || !e->otherwise) return nullptr;
    return e;
  }

  // One operand of a chain: a unary expression, or the head of a list element without its `,`.
  ast::ExprPtr operand(antlr4::tree::ParseTree* t) {
    if (auto* u = gen::AsRule<P::UnaryExprContext>(t)) return unary(u);
    return withPostfixes(gen::AsRule<P::GluedHeadContext>(t));
  }

  // `a + b * c …` comes from the grammar flat, operands and operators in turn; it is grouped here
  // by precedence (group()), so a long chain does not recurse.
  ast::ExprPtr binary(const std::vector<antlr4::tree::ParseTree*>& kids, size_t count) {
    if (count == 1) return operand(kids[0]);
    if (count % 2 == 0) return nullptr;  // recovery left an operator without its operand
    const Grouping grouping = group(kids, count);
    struct Operand {
      ast::ExprPtr expr;
      SourceRange range;  // the operand's text, brackets included
    };
    std::vector<Operand> operands;
    std::vector<const Grouping::Operator*> ops;  // the operators not yet applied
    operands.reserve(count / 2 + 1);
    ops.reserve(count / 2);
    bool whole = true;
    auto reduce = [&] {
      const Grouping::Operator& op = *ops.back();
      ops.pop_back();
      Operand rhs = std::move(operands.back());
      operands.pop_back();
      Operand& lhs = operands.back();
      auto e = std::make_unique<ast::BinaryExpr>(lhs.range.to(rhs.range));
      e->op = op.op;
      e->opRange = op.range;
      e->lhs = std::move(lhs.expr);
      e->rhs = std::move(rhs.expr);
      lhs.range = e->range;
      lhs.expr = std::move(e);
    };
    for (size_t i = 0; i < count; ++i) {
      if (i % 2 == 1) {
        const Grouping::Operator& op = grouping.operators[i / 2];
        if (!op.read) return nullptr;
        for (size_t k = 0; k < op.applyFirst; ++k) reduce();
        ops.push_back(&op);
        continue;
      }
      auto* rule = gen::AsAnyRule(kids[i]);
      if (rule == nullptr) return nullptr;
      Operand next{nullptr, range(rule)};
      const int level = grouping.levels[i / 2];
      if (enter(level, rule->getStart())) {
        next.expr = operand(rule);
        depth_ -= level;
      }
      whole = whole && next.expr != nullptr;
      // The operands are built left to right, and the first two always: an operand that could
      // not be built ends the chain, and what comes after it is not looked at.
      if (!whole && i >= 2) return nullptr;
      operands.push_back(std::move(next));
    }
    while (!ops.empty()) reduce();
    if (!whole) return nullptr;
    return std::move(operands.back().expr);
  }

  // How a chain groups, decided before any operand is built (operator precedence parsing with
  // two stacks, ast::Precedence): each operator, and how many of the operators before it that
  // are still pending are applied before it is pushed; and how many levels deep each operand sits,
  // as the depth limit counts them: a chain is walked down its left side, and goes one level
  // deeper into each right operand, and one more into the operand itself (`a + b * c`: 1, 2, 2).
  // The grouping is run on the runs of operands each pending subtree covers, building nothing.
  struct Grouping {
    struct Operator {
      bool read = false;  // recovery may have left a rule without its token
      ast::BinaryOp op = ast::BinaryOp::kAdd;
      SourceRange range;
      size_t applyFirst = 0;  // how many pending operators are applied before this one
      // ast::Precedence's; an operator recovery left without its token binds loosest of all.
      int precedence() const { return read ? ast::Precedence(op) : 0; }
    };
    std::vector<Operator> operators;
    std::vector<int> levels;  // each operand's
  };
  Grouping group(const std::vector<antlr4::tree::ParseTree*>& kids, size_t count) {
    const size_t n = count / 2 + 1;
    Grouping g;
    g.operators.resize(n - 1);
    std::vector<int> rightEdges(n, 0);
    std::vector<bool> rightLeaf(n, false);
    std::vector<std::pair<size_t, size_t>> runs;  // the operands each pending subtree covers
    std::vector<const Grouping::Operator*> pending;
    auto reduce = [&] {
      const auto rhs = runs.back();
      runs.pop_back();
      pending.pop_back();
      for (size_t k = rhs.first; k <= rhs.second; ++k) ++rightEdges[k];
      if (rhs.first == rhs.second) rightLeaf[rhs.first] = true;
      runs.back().second = rhs.second;
    };
    runs.emplace_back(0, 0);
    for (size_t j = 0; j + 1 < n; ++j) {
      Grouping::Operator& op = g.operators[j];
      auto* rule = gen::AsRule<P::BinaryOpContext>(kids[2 * j + 1]);
      op.read = rule != nullptr && rule->getStart() != nullptr;
      if (op.read) {
        op.op = BinaryOpOf(rule->getStart()->getType());
        op.range = range(rule->getStart());
      }
      for (; !pending.empty() && pending.back()->precedence() >= op.precedence(); ++op.applyFirst) {
        reduce();
      }
      pending.push_back(&op);
      runs.emplace_back(j + 1, j + 1);
    }
    while (!pending.empty()) reduce();
    g.levels.resize(n);
    for (size_t k = 0; k < n; ++k) g.levels[k] = rightEdges[k] - (rightLeaf[k] ? 1 : 0) + 1;
    return g;
  }

  static ast::BinaryOp BinaryOpOf(size_t type) {
    switch (type) {
      case P::STAR:
        return ast::BinaryOp::kMul;
      case P::SLASH:
        return ast::BinaryOp::kDiv;
      case P::PERCENT:
        return ast::BinaryOp::kMod;
      case P::PLUS:
        return ast::BinaryOp::kAdd;
      case P::MINUS:
        return ast::BinaryOp::kSub;
      case P::LT:
        return ast::BinaryOp::kLt;
      case P::LE:
        return ast::BinaryOp::kLe;
      case P::GT:
        return ast::BinaryOp::kGt;
      case P::GE:
        return ast::BinaryOp::kGe;
      case P::EQ:
        return ast::BinaryOp::kEq;
      case P::NEQ:
        return ast::BinaryOp::kNe;
      case P::AND:
        return ast::BinaryOp::kAnd;
      case P::OR:
        return ast::BinaryOp::kOr;
      default:
        return ast::BinaryOp::kCoalesce;
    }
  }

  // A prefix `!x` `-x`, or a primary and its postfixes `.x [i] (args) !`.
  ast::ExprPtr unary(P::UnaryExprContext* c) {
    if (c == nullptr || c->children.empty()) return nullptr;
    if (c->op != nullptr) {
      auto* operand =
          c->children.size() == 2 ? gen::AsRule<P::UnaryExprContext>(c->children[1]) : nullptr;
      if (operand == nullptr || !enter(1, operand->getStart())) return nullptr;
      auto e = make<ast::UnaryExpr>(c);
      e->op = c->op->getType() == P::BANG ? ast::UnaryOp::kNot : ast::UnaryOp::kNeg;
      e->opRange = range(c->op);
      e->operand = unary(operand);
      --depth_;
      if (!e->operand) return nullptr;
      return e;
    }
    return withPostfixes(c);
  }

  // `head postfix*`: the head an atom, a list literal or `(expr)` (the head of a list element
  // without its `,`, only an atom).
  ast::ExprPtr withPostfixes(antlr4::ParserRuleContext* c) {
    if (c == nullptr || c->children.empty() || c->getStart() == nullptr) return nullptr;
    const bool bracketed = c->getStart()->getType() == P::LPAREN;
    const size_t first = bracketed ? 3 : 1;  // `(` expr `)`, or one rule
    if (c->children.size() < first) return nullptr;
    // Each postfix holds what is left of it one level deeper: the head is `postfixes` deep. A
    // node past kMaxExprDepth is not built; the ones above it still build their index and
    // arguments (and report in them), and come out null.
    const int postfixes = static_cast<int>(c->children.size() - first);
    const int top = depth_;
    ast::ExprPtr e;
    depth_ = top + postfixes;
    if (depth_ > kMaxExprDepth) {
      tooDeep(c->getStart());
    } else if (bracketed) {
      e = expr(gen::AsRule<P::ExprContext>(c->children[1]));
    } else if (c->getStart()->getType() == P::LBRACK) {
      auto* l = gen::AsRule<P::ListLitContext>(c->children[0]);
      if (l != nullptr) e = list(l);
    } else {
      e = atom(gen::AsRule<P::AtomContext>(c->children[0]));
    }
    const SourceRange begin = range(c->getStart());
    for (size_t i = first; i < c->children.size(); ++i) {
      --depth_;
      if (depth_ > kMaxExprDepth) continue;
      auto* post = gen::AsRule<P::PostfixContext>(c->children[i]);
      if (post == nullptr || post->getStart() == nullptr) {
        e = nullptr;
        continue;
      }
      const SourceRange at = begin.to(range(post->getStop()));
      switch (post->getStart()->getType()) {
        case P::DOT: {
          if (!e) break;
          auto m = std::make_unique<ast::MemberExpr>(at);
          m->object = std::move(e);
          m->member = word(post->anyWord());
          e = std::move(m);
          break;
        }
        case P::LBRACK: {
          auto x = std::make_unique<ast::IndexExpr>(at);
          x->object = std::move(e);
          x->index = expr(post->expr());
          if (x->object && x->index) e = std::move(x);
          break;
        }
        case P::LPAREN: {
          auto call = std::make_unique<ast::CallExpr>(at);
          call->callee = std::move(e);
          call->args = args(post->argList());
          if (call->callee) e = std::move(call);
          break;
        }
        default: {  // BANG
          if (!e) break;
          auto n = std::make_unique<ast::NonNullExpr>(at);
          n->operand = std::move(e);
          e = std::move(n);
          break;
        }
      }
    }
    depth_ = top;
    return e;
  }

  // A literal, a name or an object literal.
  ast::ExprPtr atom(P::AtomContext* c) {
    if (c == nullptr || c->children.empty()) return nullptr;
    auto* t = c->getStart();
    if (t == nullptr) return nullptr;
    if (t->getType() == P::LBRACE) {
      return object(gen::AsRule<P::ObjectLitContext>(c->children[0]));
    }
    const std::string text = t->getText();
    switch (t->getType()) {
      case P::INT: {
        auto e = make<ast::IntLit>(c);
        auto res = std::from_chars(text.data(), text.data() + text.size(), e->value);
        if (res.ec != std::errc()) {
          diags_.emit(diag::SyntaxIntTooBig, range(t), text);
        }
        return e;
      }
      case P::DECIMAL: {
        auto e = make<ast::FloatLit>(c);
        e->value = std::strtod(text.c_str(), nullptr);
        return e;
      }
      case P::DURATION: {
        auto e = make<ast::DurationLit>(c);
        e->millis = DurationMillis(text, range(t));
        return e;
      }
      case P::STRING:
      case P::TEXT_BLOCK: {
        auto e = make<ast::StringLit>(c);
        e->value = decodeString(t);
        return e;
      }
      case P::TRUE_KW:
      case P::FALSE_KW: {
        auto e = make<ast::BoolLit>(c);
        e->value = t->getType() == P::TRUE_KW;
        return e;
      }
      case P::NULL_KW:
        return make<ast::NullLit>(c);
      case P::IDENT:
      case P::DONE:
      case P::ERROR_KW:
      case P::EVENT: {
        auto e = make<ast::NameExpr>(c);
        e->name = {nameText(text, range(t)), range(t)};
        return e;
      }
      default:
        return nullptr;
    }
  }

  // A duration literal in milliseconds; one that does not fit in 64 bits is refused here.
  int64_t DurationMillis(const std::string& text, SourceRange at) {
    size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    int64_t n = 0;
    const auto res = std::from_chars(text.data(), text.data() + digits, n);
    const std::string unit = text.substr(digits);
    // (The scanner took only the language's units: `5min` is a number and a name.)
    const int64_t scale = meant::UnitMillis(unit);
    int64_t ms = 0;
    if (res.ec != std::errc() || __builtin_mul_overflow(n, scale, &ms)) {
      diags_.emit(diag::SyntaxDurationTooLong, at, text);
      return 0;
    }
    return ms;
  }

  std::unique_ptr<ast::ObjectExpr> object(P::ObjectLitContext* c) {
    if (c == nullptr) return nullptr;
    auto e = make<ast::ObjectExpr>(c);
    missingCommas(c, "an object literal");
    const auto entries = c->objectEntry();
    e->entries.reserve(entries.size());
    for (auto* entry : entries) {
      ast::ObjectEntry oe{word(entry->anyWord()), expr(entry->expr())};
      if (oe.value) e->entries.push_back(std::move(oe));
    }
    return e;
  }

  ast::ExprPtr list(P::ListLitContext* c) {
    auto e = make<ast::ListExpr>(c);
    missingCommas(c, "a list");
    for (auto* child : c->children) {
      ast::ExprPtr v;
      if (auto* x = gen::AsRule<P::ExprContext>(child)) {
        v = expr(x);
      } else if (auto* glued = gen::AsRule<P::GluedExprContext>(child)) {
        // Reported by missingCommas; an element like any other.
        if (!enter(1, glued->getStart())) continue;
        v = chain(glued);
        --depth_;
      }
      if (v) e->elements.push_back(std::move(v));
    }
    return e;
  }

  // Object and list literals accept a missing `,` between elements only so that it can be
  // reported here with a fix-it.
  void missingCommas(antlr4::ParserRuleContext* c, const char* what) {
    // After a syntax error, recovery leaves fragments side by side that only look like a
    // missing comma.
    if (treeHasErrors_) return;
    antlr4::ParserRuleContext* prev = nullptr;
    for (auto* child : c->children) {
      auto* rule = gen::AsAnyRule(child);
      if (rule == nullptr) {
        prev = nullptr;
        continue;
      }
      if (prev != nullptr) {
        const SourceRange at = SourceRange::point(file_.id(), range(prev).end);
        diags_.emit(diag::SyntaxMissingComma, range(rule->getStart()), what).fix(at, ",");
      }
      prev = rule;
    }
  }

  // ---- actions --------------------------------------------------------------------------------

  std::vector<ast::Action> actions(P::ActionBlockContext* c) {
    std::vector<ast::Action> out;
    if (c == nullptr) return out;
    for (auto* a : c->action()) {
      ast::Action act;
      act.range = range(a);
      if (a->FAIL() != nullptr) {
        act.kind = ast::Action::Kind::kFail;
        act.value = expr(a->expr(0));
        if (a->expr().size() > 1) act.detail = expr(a->expr(1));
      } else if (a->IDENT() == nullptr) {
        continue;  // a fragment the parser recovered from; it reported the error
      } else if (a->LPAREN() != nullptr) {
        const std::string name = a->IDENT()->getText();
        if (name != "log") {
          const std::string guess = Closest(name, {"log", "fail"});
          diags_.emit(diag::SyntaxBadAction, range(a->IDENT()), name,
                      guess.empty() ? "" : fmt::format("; did you mean `{}`?", guess));
          continue;
        }
        if (a->expr().size() != 1) {
          diags_.emit(diag::SyntaxLogArity, range(a));
          continue;
        }
        act.kind = ast::Action::Kind::kLog;
        act.value = expr(a->expr(0));
      } else {
        act.kind = ast::Action::Kind::kAssign;
        act.target = nameOf(a->IDENT());
        if (a->sep != nullptr && a->sep->getType() == P::COLON) {
          diags_.emit(diag::SyntaxColonForAssign, range(a->sep), act.target.text)
              .fix(range(a->sep), "=");
        }
        act.value = expr(a->expr(0));
        auto commas = a->COMMA();
        commaInBody(commas.empty() ? nullptr : commas.back(), "an action block");
      }
      if (act.value) out.push_back(std::move(act));
    }
    return out;
  }

  // ---- machines -------------------------------------------------------------------------------

  void stateMembers(P::StateBlockContext* c, ast::StateBody& body, ast::MachineDecl* machine,
                    const std::string& owner) {
    if (c == nullptr) return;
    const auto members = c->member();
    size_t states = 0;
    size_t transitions = 0;
    size_t invokes = 0;
    for (auto* m : members) {
      states += m->stateDecl() != nullptr ? 1 : 0;
      transitions += m->transition() != nullptr ? 1 : 0;
      invokes += m->invoke() != nullptr ? 1 : 0;
    }
    body.states.reserve(states);
    body.transitions.reserve(transitions);
    body.invokes.reserve(invokes);
    for (auto* m : members) {
      if (auto* v = m->varDecl()) {
        ast::Var var = varDecl(v);
        if (machine == nullptr) {
          diags_.emit(diag::SyntaxVarInState, range(v), var.name.text, owner);
        } else {
          machine->vars.push_back(std::move(var));
        }
      } else if (auto* s = m->stateDecl()) {
        if (auto st = state(s)) body.states.push_back(std::move(st));
      } else if (auto* t = m->transition()) {
        if (auto tr = transition(t)) body.transitions.push_back(std::move(*tr));
      } else if (auto* i = m->invoke()) {
        if (auto inv = invoke(i)) body.invokes.push_back(std::move(*inv));
      } else if (auto* ee = m->entryExit()) {
        auto acts = actions(ee->actionBlock());
        (ee->ENTRY() != nullptr ? body.entry : body.exit).push_back(std::move(acts));
      } else if (auto* o = m->outputDecl()) {
        if (machine == nullptr) {
          diags_.emit(diag::SyntaxOutputInState, range(o), owner);
        } else if (machine->outputExpr) {
          diags_.emit(diag::SyntaxSecondOutput, range(o), machine->name.text)
              .note(diag::NoteFirstOutput, machine->outputRange);
        } else {
          machine->outputExpr = expr(o->expr());
          machine->outputRange = range(o);
        }
      }
    }
  }

  ast::Var varDecl(P::VarDeclContext* v) {
    ast::Var var;
    var.range = range(v);
    var.name = declName(v->declName(), "a `var`");
    var.type = typeRef(v->typeRef());
    if (!var.type) {
      diags_.emit(diag::SyntaxVarNeedsType, var.name.range, var.name.text)
          .fix(SourceRange::point(file_.id(), var.name.range.end), ": TYPE");
    }
    if (v->expr() == nullptr) {
      diags_.emit(diag::SyntaxVarNeedsValue, var.name.range, var.name.text,
                  var.type
                      ? std::string(file_.text().substr(
                            var.type->range.begin, var.type->range.end - var.type->range.begin))
                      : "TYPE");
    } else {
      var.init = expr(v->expr());
    }
    return var;
  }

  std::unique_ptr<ast::State> state(P::StateDeclContext* c) {
    auto s = std::make_unique<ast::State>();
    s->range = range(c);
    bool finalState = false;
    for (auto* m : c->stateModifier()) finalState = finalState || m->FINAL() != nullptr;
    s->name = declName(c->declName(), "a state", finalState);
    // Modifiers: `[initial] [parallel | final] state`, each at most once.
    int order = 0;
    for (auto* m : c->stateModifier()) {
      const SourceRange r = range(m);
      std::string problem;
      if (m->INITIAL() != nullptr) {
        if (s->initial)
          problem = "`initial` is written twice";
        else if (order > 0)
          problem = "`initial` comes first";
        s->initial = true, s->initialRange = r;
        order = std::max(order, 1);
      } else if (m->FINAL() != nullptr || m->PARALLEL() != nullptr) {
        const bool isFinal = m->FINAL() != nullptr;
        if (s->final || s->parallel) {
          problem = s->final == isFinal && s->parallel != isFinal
                        ? fmt::format("`{}` is written twice", isFinal ? "final" : "parallel")
                        : "a state is `parallel` or `final`, not both";
        }
        (isFinal ? s->final : s->parallel) = true;
        (isFinal ? s->finalRange : s->parallelRange) = r;
        order = 2;
      }
      if (!problem.empty()) diags_.emit(diag::SyntaxModifiers, r, problem);
    }
    if (c->stateBlock() != nullptr) {
      s->hasBody = true;
      s->bodyRange = range(c->stateBlock());
      stateMembers(c->stateBlock(), s->body, nullptr, fmt::format("state `{}`", s->name.text));
    }
    return s;
  }

  std::optional<ast::Transition> transition(P::TransitionContext* c) {
    ast::Transition t;
    t.range = range(c);
    t.keywordRange = range(c->getStart());
    if (c->ON() != nullptr) {
      t.kind = ast::Transition::Kind::kOn;
      auto* trig = c->trigger();
      if (trig == nullptr) return std::nullopt;
      t.triggerRange = range(trig);
      if (trig->DONE() != nullptr || trig->ERROR_KW() != nullptr) {
        t.trigger = trig->DONE() != nullptr ? ast::Transition::Trigger::kDone
                                            : ast::Transition::Trigger::kError;
        if (trig->IDENT() != nullptr) t.invokeName = nameOf(trig->IDENT());
      } else {
        t.trigger = ast::Transition::Trigger::kEvent;
        t.event = qualName(trig->qualName());
      }
    } else if (c->ALWAYS() != nullptr) {
      t.kind = ast::Transition::Kind::kAlways;
    } else {
      t.kind = ast::Transition::Kind::kAfter;
      auto* d = c->afterDelay();
      if (d == nullptr) return std::nullopt;
      t.delayRange = range(d);
      if (d->DURATION() != nullptr) {
        t.delayMillis = DurationMillis(d->getText(), t.delayRange);
      } else if (d->getText().find_first_not_of("0123456789") == std::string::npos) {
        diags_.emit(diag::SyntaxDelayUnit, t.delayRange, d->getText())
            .fix(SourceRange::point(file_.id(), t.delayRange.end), "s");
      }
    }
    if (auto* g = c->guard()) {
      t.guard = expr(g->expr(0));
      if (g->ASSIGN() != nullptr) {
        diags_.emit(diag::SyntaxAssignInGuard, range(g->ASSIGN())).fix(range(g->ASSIGN()), "==");
      }
    }
    if (c->target() != nullptr) {
      t.target = qualName(c->target()->qualName());
      if (c->arrow == nullptr) {
        const SourceRange at = SourceRange::point(file_.id(), t.target->range.begin);
        diags_.emit(diag::SyntaxMissingArrow, t.target->range, t.target->str()).fix(at, "-> ");
      } else if (c->arrow->getType() == P::FATARROW) {
        diags_.emit(diag::SyntaxFatArrow, range(c->arrow)).fix(range(c->arrow), "->");
      }
    }
    t.actions = actions(c->actionBlock());
    return t;
  }

  std::optional<ast::Invoke> invoke(P::InvokeContext* c) {
    ast::Invoke inv;
    inv.range = range(c);
    if (c->GATE() != nullptr) {
      inv.kind = ast::Invoke::Kind::kGate;
      if (c->IDENT() != nullptr) inv.gateName = nameOf(c->IDENT());
    } else {
      inv.kind = c->EXTERN() != nullptr ? ast::Invoke::Kind::kExtern : ast::Invoke::Kind::kNamed;
      if (c->qualName() == nullptr) return std::nullopt;
      inv.target = qualName(c->qualName());
      inv.hasArgList = c->argList() != nullptr;
      inv.args = args(c->argList());
      if (c->declName() != nullptr) inv.as = declName(c->declName(), "an invoke");
    }
    if (c->objectLit() != nullptr) inv.object = object(c->objectLit());
    return inv;
  }

  // ---- declarations ---------------------------------------------------------------------------

  std::unique_ptr<ast::Decl> buildDecl(P::DeclContext* d) {
    if (auto* c = d->typeDecl()) return typeDecl(c);
    if (auto* c = d->eventDecl()) return eventDecl(c);
    if (auto* c = d->agentDecl()) return agentDecl(c);
    if (auto* c = d->externDecl()) return externDecl(c);
    if (auto* c = d->sourceDecl()) return sourceDecl(c);
    if (auto* c = d->machineDecl()) return machineDecl(c);
    if (auto* c = d->poolDecl()) return poolDecl(c);
    if (auto* c = d->workflowDecl()) return workflowDecl(c);
    return nullptr;
  }

  template <typename T>
  std::unique_ptr<T> start(antlr4::ParserRuleContext* c, P::DeclNameContext* name,
                           const char* what) {
    auto d = std::make_unique<T>();
    d->range = range(c);
    d->keywordRange = range(c->getStart());
    d->name = declName(name, what);
    if (d->name.text.empty()) return nullptr;  // the parse lost the name; it reported why
    return d;
  }

  std::unique_ptr<ast::Decl> typeDecl(P::TypeDeclContext* c) {
    auto d = start<ast::TypeDecl>(c, c->declName(), "a type");
    if (!d) return nullptr;
    if (c->typeBody() != nullptr) {
      const auto fields = c->typeBody()->fieldDecl();
      d->fields.reserve(fields.size());
      for (auto* f : fields) {
        d->fields.push_back(field(f, fmt::format("type `{}`", d->name.text)));
      }
    }
    return d;
  }

  std::unique_ptr<ast::Decl> eventDecl(P::EventDeclContext* c) {
    auto d = start<ast::EventDecl>(c, c->declName(), "an event");
    if (!d) return nullptr;
    if (auto* a = c->audience) {
      d->audienceRange = range(a);
      const std::string text = a->getText();
      if (text == "agent")
        d->audience = ast::Audience::kAgent;
      else if (text == "external")
        d->audience = ast::Audience::kExternal;
      else if (text == "any")
        d->audience = ast::Audience::kAny;
      else {
        const std::string guess = Closest(text, {"agent", "external", "any"});
        diags_.emit(diag::SyntaxAudience, d->audienceRange, text,
                    guess.empty() ? "" : fmt::format("; did you mean `{}`?", guess));
      }
    }
    if (c->STRING() != nullptr) d->description = decodeString(c->STRING()->getSymbol());
    if (c->typeBody() != nullptr) {
      const auto fields = c->typeBody()->fieldDecl();
      d->fields.reserve(fields.size());
      for (auto* f : fields) {
        d->fields.push_back(field(f, fmt::format("event `{}`", d->name.text)));
      }
    }
    return d;
  }

  std::unique_ptr<ast::Decl> agentDecl(P::AgentDeclContext* c) {
    auto d = start<ast::AgentDecl>(c, c->declName(), "an agent");
    if (!d) return nullptr;
    if (auto* body = c->bodyBlock()) {
      const std::string owner = fmt::format("agent `{}`", d->name.text);
      for (auto* e : body->bodyEntry()) {
        ast::BodyEntry entry{word(e->anyWord()), expr(e->expr())};
        checkColon(e->sep, "the agent key", std::string(entry.key.text));
        commaInBody(e->COMMA(), owner);
        if (entry.key.text != "model" && entry.key.text != "instructions" &&
            entry.key.text != "picks") {
          unknownKey(entry.key, owner, ast::kAgentKeys);
          continue;
        }
        if (duplicateKey(entry.key, d->entries, owner)) continue;
        if (entry.value) d->entries.push_back(std::move(entry));
      }
    }
    return d;
  }

  bool duplicateKey(const ast::Name& key, const std::vector<ast::BodyEntry>& seen,
                    const std::string& owner) {
    for (const auto& e : seen) {
      if (e.key.text == key.text) {
        diags_.emit(diag::DuplicateMember, key.range, "the key", key.text, owner)
            .note(diag::NoteFirstGivenHere, e.key.range, key.text);
        return true;
      }
    }
    return false;
  }

  bool duplicateKey(const ast::Name& key, std::vector<std::pair<ast::Name, SourceRange>>& seen,
                    const std::string& owner, SourceRange entryRange) {
    for (const auto& [k, r] : seen) {
      if (k.text == key.text) {
        diags_.emit(diag::DuplicateMember, key.range, "the key", key.text, owner)
            .note(diag::NoteFirstGivenHere, k.range, key.text);
        return true;
      }
    }
    seen.emplace_back(key, entryRange);
    return false;
  }

  void unknownKey(const ast::Name& key, const std::string& owner,
                  std::initializer_list<const char*> keys) {
    const std::string guess = Closest(std::string(key.text), keys);
    std::string fix = guess.empty() ? fmt::format("; its keys are {}", KeyList(keys))
                                    : fmt::format("; did you mean `{}`?", guess);
    auto b = diags_.emit(diag::SyntaxUnknownKey, key.range, key.text, owner, fix);
    if (!guess.empty()) b.fix(key.range, guess);
  }

  std::unique_ptr<ast::Decl> externDecl(P::ExternDeclContext* c) {
    auto d = start<ast::ExternDecl>(c, c->declName(), "an extern");
    if (!d) return nullptr;
    d->hasParams = c->paramList() != nullptr;
    d->params = params(c->paramList());
    d->result = typeRef(c->typeRef());
    d->idempotent = c->idempotentMark() != nullptr;
    if (c->STRING() != nullptr) d->description = decodeString(c->STRING()->getSymbol());
    return d;
  }

  std::unique_ptr<ast::Decl> sourceDecl(P::SourceDeclContext* c) {
    auto d = start<ast::SourceDecl>(c, c->declName(), "a source");
    if (!d) return nullptr;
    d->params = params(c->paramList());
    d->itemType = typeRef(c->typeRef());
    const size_t errorsBefore = diags_.errorCount();
    // A source with none of `next`, `read` and `push`, said once: not when a misspelled key
    // (`nxt:`) was reported already, since that is the same mistake.
    auto formless = [&]() {
      if (d->form == ast::SourceDecl::Form::kNone && diags_.errorCount() == errorsBefore &&
          !treeHasErrors_) {
        diags_.emit(diag::SyntaxNoSourceForm, d->name.range, d->name.text);
      }
      return std::move(d);
    };
    if (c->sourceBody() == nullptr) return formless();
    const std::string owner = fmt::format("source `{}`", d->name.text);
    const auto& kKeys = ast::kSourceKeys;
    auto setForm = [&](ast::SourceDecl::Form form, SourceRange r, std::string_view key) {
      if (d->form != ast::SourceDecl::Form::kNone) {
        diags_.emit(diag::SyntaxSecondSourceForm, r, key).note(diag::NoteFirstIsHere, d->formRange);
        return false;
      }
      d->form = form;
      d->formRange = r;
      return true;
    };
    const auto entries = c->sourceBody()->sourceEntry();
    for (size_t at = 0; at < entries.size(); ++at) {
      auto* e = entries[at];
      commaInBody(e->COMMA(), owner);
      // `key: value idempotent`: the word stands as an entry of its own, right after the value
      // with no `,` between (the grammar reserves no `idempotent`); it marks that value.
      std::optional<SourceRange> mark;
      SourceRange whole = range(e);  // the entry's text, its mark included
      if (e->sourceValue() != nullptr && e->COMMA() == nullptr && at + 1 < entries.size() &&
          IsIdempotentWord(entries[at + 1])) {
        commaInBody(entries[at + 1]->COMMA(), owner);
        mark = range(entries[at + 1]->IDENT(0));
        whole = whole.to(range(entries[at + 1]));
        ++at;
      }
      const auto idents = e->IDENT();
      if (e->FATARROW() != nullptr) {
        // hook SERVICE "event" => verdict
        if (idents.size() < 2 || idents[0]->getText() != "hook" || e->STRING() == nullptr) {
          if (!idents.empty()) unknownKey(nameOf(idents[0]), owner, kKeys);
          continue;
        }
        ast::Hook h;
        h.range = range(e);
        h.service = nameOf(idents[1]);
        h.eventKey = decodeString(e->STRING()->getSymbol());
        h.eventKeyRange = range(e->STRING());
        auto* v = e->hookVerdict();
        if (v == nullptr || v->IDENT() == nullptr) continue;
        h.verdictRange = range(v->IDENT());
        const std::string verdict = v->IDENT()->getText();
        if (verdict == "reread")
          h.verdict = ast::Hook::Verdict::kReread;
        else if (verdict == "carry")
          h.verdict = ast::Hook::Verdict::kCarry;
        else if (verdict == "skip")
          h.verdict = ast::Hook::Verdict::kSkip;
        else {
          const std::string guess = Closest(verdict, {"reread", "carry", "skip"});
          diags_.emit(diag::SyntaxBadVerdict, h.verdictRange, verdict,
                      guess.empty() ? "" : fmt::format("; did you mean `{}`?", guess));
          continue;
        }
        if (v->expr() != nullptr) h.value = expr(v->expr());
        if (h.verdict != ast::Hook::Verdict::kReread && !h.value) {
          if (verdict == "carry")
            diags_.emit(diag::SyntaxCarryNeedsItem, h.verdictRange);
          else
            diags_.emit(diag::SyntaxSkipNeedsReason, h.verdictRange);
          continue;
        }
        d->hooks.push_back(std::move(h));
        continue;
      }
      if (e->anyWord() == nullptr) {
        // A bare word: only `push`.
        if (idents.empty()) continue;
        ast::Name w = nameOf(idents[0]);
        if (w.text != "push") {
          unknownKey(w, owner, kKeys);
          continue;
        }
        if (!duplicateKey(w, d->keys, owner, range(e)))
          setForm(ast::SourceDecl::Form::kPush, w.range, "push");
        continue;
      }
      ast::Name key = word(e->anyWord());
      checkColon(e->sep, "the source key", std::string(key.text));
      auto* value = e->sourceValue();
      if (value == nullptr) continue;
      const bool known = key.text == "next" || key.text == "read" || key.text == "wake" ||
                         key.text == "poll_every" || key.text == "items" || key.text == "hold";
      if (!known) {
        unknownKey(key, owner, kKeys);
        continue;
      }
      if (duplicateKey(key, d->keys, owner, whole)) continue;
      const bool isCall = key.text == "next" || key.text == "read";
      if (mark && key.text != "read") {
        diags_.emit(diag::SyntaxMisplacedIdempotent, *mark).fix(*mark, "");
      }
      if (value->EXTERN() != nullptr && !isCall) {
        const SourceRange valueRange = mark ? range(value).to(*mark) : range(value);
        diags_.emit(diag::SyntaxExternValue, valueRange, key.text);
        continue;
      }
      if (isCall) {
        if (!setForm(
                key.text == "next" ? ast::SourceDecl::Form::kNext : ast::SourceDecl::Form::kRead,
                key.range, key.text)) {
          continue;
        }
        if (auto call = sourceCall(value, std::string(key.text), mark)) d->call = std::move(call);
        continue;
      }
      ast::ExprPtr v = expr(value->expr());
      if (!v) continue;
      if (key.text == "wake") {
        d->wake = exprAsName(v.get());
        if (!d->wake) diags_.emit(diag::SyntaxWakeNotEvent, v->range);
      } else if (key.text == "poll_every") {
        d->pollEvery = std::move(v);
      } else if (key.text == "items") {
        d->items = std::move(v);
      } else {
        d->hold = std::move(v);
      }
    }
    return formless();
  }

  // `a` or `a.b` written as an expression, read back as a name; nullopt (the caller reports it)
  // for any other expression.
  std::optional<ast::QualName> exprAsName(const ast::Expr* e) {
    ast::QualName q;
    q.range = e->range;
    const ast::Expr* cur = e;
    std::vector<ast::Name> reversed;
    while (true) {
      if (const auto* m = llvm::dyn_cast<ast::MemberExpr>(cur)) {
        reversed.push_back(m->member);
        cur = m->object.get();
      } else if (const auto* n = llvm::dyn_cast<ast::NameExpr>(cur)) {
        reversed.push_back(n->name);
        break;
      } else {
        return std::nullopt;
      }
    }
    q.parts.assign(reversed.rbegin(), reversed.rend());
    return q;
  }

  // A source body's entry that is the bare word `idempotent`.
  static bool IsIdempotentWord(P::SourceEntryContext* e) {
    return e->FATARROW() == nullptr && e->anyWord() == nullptr && e->IDENT().size() == 1 &&
           e->IDENT(0)->getText() == "idempotent";
  }

  std::optional<ast::SourceCall> sourceCall(P::SourceValueContext* v, const std::string& key,
                                            std::optional<SourceRange> mark) {
    ast::SourceCall call;
    call.range = range(v);
    if (mark) {
      call.idempotent = true;
      call.idempotentRange = *mark;
      call.range = call.range.to(*mark);
    }
    if (v->EXTERN() != nullptr) {
      call.isExtern = true;
      call.function = qualName(v->qualName());
      call.args = args(v->argList());
      return call;
    }
    // `std.backlog(file)`, or a bare `std.queue`: a call (or a name) of an adapter.
    ast::ExprPtr e = expr(v->expr());
    if (!e) return std::nullopt;
    const ast::Expr* callee = e.get();
    if (auto* c = llvm::dyn_cast<ast::CallExpr>(e.get())) {
      callee = c->callee.get();
      call.args = std::move(c->args);
    }
    auto name = exprAsName(callee);
    if (!name) {
      diags_.emit(diag::SyntaxSourceCallNotName, callee->range, key);
      return std::nullopt;
    }
    call.function = std::move(*name);
    return call;
  }

  std::unique_ptr<ast::Decl> machineDecl(P::MachineDeclContext* c) {
    auto d = start<ast::MachineDecl>(c, c->declName(), "a machine");
    if (!d) return nullptr;
    d->hasParams = c->paramList() != nullptr;
    d->params = params(c->paramList());
    d->output = typeRef(c->typeRef());
    if (c->stateBlock() != nullptr) d->bodyRange = range(c->stateBlock());
    stateMembers(c->stateBlock(), d->body, d.get(), fmt::format("machine `{}`", d->name.text));
    return d;
  }

  std::unique_ptr<ast::Decl> poolDecl(P::PoolDeclContext* c) {
    auto d = start<ast::PoolDecl>(c, c->declName(), "a pool");
    if (!d) return nullptr;
    const size_t errorsBefore = diags_.errorCount();
    d->hasParams = c->paramList() != nullptr;
    d->params = params(c->paramList());
    const std::string owner = fmt::format("pool `{}`", d->name.text);
    if (auto* w = c->worker()) {
      d->worker.range = range(w);
      d->worker.dispatch = w->DISPATCH() != nullptr;
      d->worker.target = qualName(w->qualName());
      if (w->objectLit() != nullptr) d->worker.dispatchSpec = object(w->objectLit());
      if (d->worker.dispatch && c->poolBody() == nullptr && d->worker.dispatchSpec) {
        for (const auto& e : d->worker.dispatchSpec->entries) {
          if (e.key.text == "source" || e.key.text == "item_id" || e.key.text == "cap") {
            diags_.emit(diag::SyntaxPoolBodyAsDispatch, d->worker.dispatchSpec->range, owner);
            break;
          }
        }
      }
    }
    // A pool with no `source:`, said once: not when a misspelled key or a body read as the
    // `dispatch` block (SyntaxPoolBodyAsDispatch) was reported already.
    auto sourceless = [&]() {
      if (!d->source && diags_.errorCount() == errorsBefore && !treeHasErrors_) {
        diags_.emit(diag::SyntaxPoolNoSource, d->name.range, d->name.text);
      }
      return std::move(d);
    };
    if (c->poolBody() == nullptr) return sourceless();
    const auto& kKeys = ast::kPoolKeys;
    for (auto* e : c->poolBody()->poolEntry()) {
      ast::Name key = word(e->anyWord());
      checkColon(e->sep, "the pool key", std::string(key.text));
      commaInBody(e->COMMA(), owner);
      const std::string k(key.text);
      if (k != "source" && k != "item_id" && k != "cap" && k != "item_input" && k != "failures" &&
          k != "standing") {
        unknownKey(key, owner, kKeys);
        continue;
      }
      if (duplicateKey(key, d->keys, owner, range(e))) continue;
      if (k == "failures") {
        std::string value = e->FAIL() != nullptr ? "fail" : (e->expr() ? e->expr()->getText() : "");
        d->failuresRange = e->FAIL() != nullptr ? range(e->FAIL()) : range(e->expr());
        if (value == "fail")
          d->failures = ast::PoolDecl::Failures::kFail;
        else if (value == "report")
          d->failures = ast::PoolDecl::Failures::kReport;
        else {
          diags_.emit(diag::SyntaxFailuresValue, d->failuresRange, value);
        }
        continue;
      }
      if (e->FAIL() != nullptr) {
        diags_.emit(diag::SyntaxFailOutsideFailures, range(e->FAIL()), k);
        continue;
      }
      ast::ExprPtr v = expr(e->expr());
      if (k == "source")
        d->source = std::move(v);
      else if (k == "item_id")
        d->itemId = std::move(v);
      else if (k == "cap")
        d->cap = std::move(v);
      else if (k == "item_input")
        d->itemInput = std::move(v);
      else
        d->standing = std::move(v);
    }
    return sourceless();
  }

  std::unique_ptr<ast::Decl> workflowDecl(P::WorkflowDeclContext* c) {
    auto d = start<ast::WorkflowDecl>(c, c->declName(), "a workflow");
    if (!d) return nullptr;
    d->target = qualName(c->qualName());
    if (c->ASSIGN() == nullptr && !d->target.parts.empty()) {
      diags_.emit(diag::SyntaxMissingAssign, d->target.range, d->name.text, d->target.str())
          .fix(SourceRange::point(file_.id(), d->target.range.begin), "= ");
    }
    if (auto* b = c->budgetBlock()) {
      const ast::Name said = nameOf(b->IDENT());
      if (said.text != "budget") {
        diags_.emit(diag::SyntaxUnknownKey, said.range, said.text,
                    fmt::format("workflow `{}`", d->name.text),
                    "; after the machine a workflow takes only `budget { … }`");
        return d;
      }
      d->budgetRange = said.range;
      const std::string owner = fmt::format("the budget of workflow `{}`", d->name.text);
      if (auto* body = b->bodyBlock()) {
        for (auto* e : body->bodyEntry()) {
          ast::BodyEntry entry{word(e->anyWord()), expr(e->expr())};
          // (Commas are allowed here: a budget is usually one line.)
          checkColon(e->sep, "the budget key", std::string(entry.key.text));
          const std::string k(entry.key.text);
          if (k != "workers" && k != "processes" && k != "runs") {
            unknownKey(entry.key, owner, ast::kBudgetKeys);
            continue;
          }
          if (duplicateKey(entry.key, d->budget, owner)) continue;
          d->budget.push_back(std::move(entry));
        }
      }
    }
    return d;
  }

  const SourceFile& file_;
  Diagnostics& diags_;
  bool treeHasErrors_;
  mutable std::deque<std::string> texts_;  // nameText's copies, until finish gives them to the File
  int depth_ = 0;
  bool reportedDepth_ = false;
};

}  // namespace

std::unique_ptr<ast::File> BuildAst(gen::Jr2Parser::FileContext* tree, const SourceFile& file,
                                    Diagnostics& diags, bool treeHasErrors) {
  return Builder(file, diags, treeHasErrors).build(tree);
}

struct AstBuilder::Impl {
  Impl(const SourceFile& file, Diagnostics& diags) : builder(file, diags, false) {
    out->file = file.id();
  }
  Builder builder;
  std::unique_ptr<ast::File> out = std::make_unique<ast::File>();
};

AstBuilder::AstBuilder(const SourceFile& file, Diagnostics& diags)
    : impl_(std::make_unique<Impl>(file, diags)) {}
AstBuilder::~AstBuilder() = default;

void AstBuilder::addImport(gen::Jr2Parser::ImportDeclContext* imp) {
  impl_->builder.addImport(imp, *impl_->out);
}

void AstBuilder::addDecl(gen::Jr2Parser::DeclContext* decl) {
  impl_->builder.addDecl(decl, *impl_->out);
}

std::unique_ptr<ast::File> AstBuilder::finish() {
  impl_->builder.finish(*impl_->out);
  return std::move(impl_->out);
}

}  // namespace jr2::syntax
