#include "compiler/ast/ast.h"

namespace jr2::ast {

std::string QualName::str() const {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += '.';
    out += parts[i].text;
  }
  return out;
}

const char* Spelling(BinaryOp op) {
  switch (op) {
    case BinaryOp::kMul:
      return "*";
    case BinaryOp::kDiv:
      return "/";
    case BinaryOp::kMod:
      return "%";
    case BinaryOp::kAdd:
      return "+";
    case BinaryOp::kSub:
      return "-";
    case BinaryOp::kLt:
      return "<";
    case BinaryOp::kLe:
      return "<=";
    case BinaryOp::kGt:
      return ">";
    case BinaryOp::kGe:
      return ">=";
    case BinaryOp::kEq:
      return "==";
    case BinaryOp::kNe:
      return "!=";
    case BinaryOp::kAnd:
      return "&&";
    case BinaryOp::kOr:
      return "||";
    case BinaryOp::kCoalesce:
      return "??";
  }
  return "?";
}

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

}  // namespace jr2::ast
