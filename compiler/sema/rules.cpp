#include "compiler/sema/rules.h"

#include <llvm/Support/Casting.h>

#include <cctype>

namespace jr2::sema {

bool IsIdentifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

const ast::Invoke* HeardInvoke(const ast::Transition& t,
                               const std::vector<const ast::Invoke*>& invokes) {
  if (t.invokeName) {
    for (const ast::Invoke* inv : invokes) {
      if (inv->as && inv->as->text == t.invokeName->text) return inv;
    }
    return nullptr;
  }
  return invokes.size() == 1 ? invokes.front() : nullptr;
}

const ast::Param* BoundParam(const std::vector<ast::Param>& params) {
  if (params.size() == 1) return &params.front();
  const ast::Param* bound = nullptr;
  for (const ast::Param& p : params) {
    if (p.defaultValue) continue;
    if (bound != nullptr) return nullptr;  // two without a default: the item is the input
    bound = &p;
  }
  return bound;
}

const std::vector<ast::Param>* ParamsOf(const ast::Decl* d) {
  if (const auto* m = llvm::dyn_cast_or_null<ast::MachineDecl>(d)) return &m->params;
  if (const auto* p = llvm::dyn_cast_or_null<ast::PoolDecl>(d)) return &p->params;
  if (const auto* x = llvm::dyn_cast_or_null<ast::ExternDecl>(d)) return &x->params;
  if (const auto* s = llvm::dyn_cast_or_null<ast::SourceDecl>(d)) return &s->params;
  return nullptr;
}

}  // namespace jr2::sema
