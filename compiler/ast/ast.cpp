#include "compiler/ast/ast.h"

#include <llvm/Support/Casting.h>

#include <iterator>

namespace jr2::ast {

std::string QualName::str() const {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += '.';
    out += parts[i].text;
  }
  return out;
}

namespace {

// Each binary operator's spelling and how tightly it binds, in BinaryOp's order.
struct BinaryOpInfo {
  const char* spelling;
  int precedence;
};
constexpr BinaryOpInfo kBinaryOps[] = {
    {"*", 7}, {"/", 7},  {"%", 7},  {"+", 6},  {"-", 6},  {"<", 5},  {"<=", 5},
    {">", 5}, {">=", 5}, {"==", 4}, {"!=", 4}, {"&&", 3}, {"||", 2}, {"??", 1},
};
static_assert(std::size(kBinaryOps) == static_cast<size_t>(BinaryOp::kCoalesce) + 1,
              "a row for each BinaryOp");

}  // namespace

const char* Spelling(BinaryOp op) { return kBinaryOps[static_cast<size_t>(op)].spelling; }

int Precedence(BinaryOp op) { return kBinaryOps[static_cast<size_t>(op)].precedence; }

const char* KindWord(Decl::Kind kind) {
  switch (kind) {
    case Decl::Kind::kType:
      return "type";
    case Decl::Kind::kEvent:
      return "event";
    case Decl::Kind::kAgent:
      return "agent";
    case Decl::Kind::kExtern:
      return "extern";
    case Decl::Kind::kSource:
      return "source";
    case Decl::Kind::kMachine:
      return "machine";
    case Decl::Kind::kPool:
      return "pool";
    case Decl::Kind::kWorkflow:
      return "workflow";
  }
  return "declaration";
}

const char* KindNoun(Decl::Kind kind) {
  switch (kind) {
    case Decl::Kind::kType:
      return "a type";
    case Decl::Kind::kEvent:
      return "an event";
    case Decl::Kind::kAgent:
      return "an agent";
    case Decl::Kind::kExtern:
      return "an extern function";
    case Decl::Kind::kSource:
      return "a source";
    case Decl::Kind::kMachine:
      return "a machine";
    case Decl::Kind::kPool:
      return "a pool";
    case Decl::Kind::kWorkflow:
      return "a workflow";
  }
  return "a declaration";
}

bool ReadsName(const Expr* e, const std::string& name) {
  if (e == nullptr) return false;
  switch (e->kind) {
    case Expr::Kind::kName:
      return llvm::cast<NameExpr>(e)->name.text == name;
    case Expr::Kind::kMember:
      return ReadsName(llvm::cast<MemberExpr>(e)->object.get(), name);
    case Expr::Kind::kIndex: {
      const auto* i = llvm::cast<IndexExpr>(e);
      return ReadsName(i->object.get(), name) || ReadsName(i->index.get(), name);
    }
    case Expr::Kind::kCall: {
      const auto* c = llvm::cast<CallExpr>(e);
      for (const auto& a : c->args) {
        if (ReadsName(a.value.get(), name)) return true;
      }
      return false;
    }
    case Expr::Kind::kObject:
      for (const auto& entry : llvm::cast<ObjectExpr>(e)->entries) {
        if (ReadsName(entry.value.get(), name)) return true;
      }
      return false;
    case Expr::Kind::kList:
      for (const auto& x : llvm::cast<ListExpr>(e)->elements) {
        if (ReadsName(x.get(), name)) return true;
      }
      return false;
    case Expr::Kind::kUnary:
      return ReadsName(llvm::cast<UnaryExpr>(e)->operand.get(), name);
    case Expr::Kind::kBinary: {
      // Iterative over the left spine, like every walk of a binary chain.
      const Expr* cur = e;
      while (const auto* b = llvm::dyn_cast<BinaryExpr>(cur)) {
        if (ReadsName(b->rhs.get(), name)) return true;
        cur = b->lhs.get();
      }
      return ReadsName(cur, name);
    }
    case Expr::Kind::kConditional: {
      const auto* c = llvm::cast<ConditionalExpr>(e);
      return ReadsName(c->cond.get(), name) || ReadsName(c->then.get(), name) ||
             ReadsName(c->otherwise.get(), name);
    }
    case Expr::Kind::kNonNull:
      return ReadsName(llvm::cast<NonNullExpr>(e)->operand.get(), name);
    default:
      return false;
  }
}

}  // namespace jr2::ast
