#include "compiler/walk/budget.h"

#include <fmt/format.h>
#include <llvm/Support/Casting.h>

#include <map>
#include <set>

namespace jr2::walk {
namespace {

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}
int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

// Two figures that are live together: their sum.
Figure Plus(const Figure& a, const Figure& b) {
  if (a.most == 0 && !a.unbounded) return b;
  if (b.most == 0 && !b.unbounded) return a;
  Figure out;
  out.most = SaturatingAdd(a.most, b.most);
  out.unbounded = a.unbounded || b.unbounded;
  const Figure& first = a.unbounded ? a : b;
  out.why = first.why;
  out.at = first.at;
  out.boundedHint = first.boundedHint;
  out.path = (a.path.empty() ? "1" : a.path) + " + " + (b.path.empty() ? "1" : b.path);
  return out;
}

// Two figures of which one is live at a time: the larger.
Figure Larger(const Figure& a, const Figure& b) {
  if (a.unbounded) return a;
  if (b.unbounded) return b;
  return b.most > a.most ? b : a;
}

// `n` of what `each` counts, under the cap of pool `name`.
Figure Times(int64_t n, bool unbounded, const std::string& name, const Figure& each,
             const Figure& cap) {
  if (each.most == 0 && !each.unbounded) return each;
  Figure out;
  if (unbounded) {
    out = cap;
    out.unbounded = true;
  } else {
    out.unbounded = each.unbounded;
    out.why = each.why;
    out.at = each.at;
    out.boundedHint = each.boundedHint;
  }
  out.most = SaturatingMul(n, each.most);
  const std::string factor = unbounded ? fmt::format("{} ∞", name) : fmt::format("{} {}", name, n);
  if (each.path.empty()) {
    out.path = factor;
  } else if (each.path.find(" + ") != std::string::npos) {
    out.path = fmt::format("{} × ({})", factor, each.path);
  } else {
    out.path = fmt::format("{} × {}", factor, each.path);
  }
  return out;
}

Concurrency Plus(const Concurrency& a, const Concurrency& b) {
  return {Plus(a.workers, b.workers), Plus(a.processes, b.processes), Plus(a.runs, b.runs)};
}
Concurrency Larger(const Concurrency& a, const Concurrency& b) {
  return {Larger(a.workers, b.workers), Larger(a.processes, b.processes), Larger(a.runs, b.runs)};
}

std::string_view TextOf(const sema::Program& program, SourceRange r) {
  for (const auto& m : program.modules) {
    if (m->source != nullptr && m->source->id() == r.file)
      return m->source->text().substr(r.begin, r.end - r.begin);
  }
  return {};
}

class Counter {
 public:
  Counter(const sema::Program& program, const ir::Program& charts)
      : program_(program), charts_(charts) {}

  Concurrency of(const ast::Decl* d) {
    if (d == nullptr) return {};
    if (auto it = memo_.find(d); it != memo_.end()) return it->second;
    if (!onStack_.insert(d).second) {
      // A machine that invokes itself, through others: each level could start another.
      Concurrency loop;
      for (Figure* f : {&loop.workers, &loop.processes, &loop.runs}) {
        f->unbounded = true;
        f->why = fmt::format("`{}` invokes itself, so its depth has no bound", d->name.text);
        f->at = d->name.range;
      }
      return loop;
    }
    Concurrency c;
    if (const auto* m = llvm::dyn_cast<ast::MachineDecl>(d)) {
      for (const ir::Machine& chart : charts_.machines) {
        if (chart.decl == m) c = state(chart, 0);
      }
    } else if (const auto* p = llvm::dyn_cast<ast::PoolDecl>(d)) {
      c = pool(*p);
    } else if (const auto* w = llvm::dyn_cast<ast::WorkflowDecl>(d)) {
      c = of(w->target.resolved);
    }
    onStack_.erase(d);
    memo_[d] = c;
    return c;
  }

 private:
  // A state: its invokes, all live while it is, and its children: every region of a parallel
  // state at once, one child of a compound state at a time.
  Concurrency state(const ir::Machine& m, ir::StateId id) {
    const ir::State& s = m.states[id];
    Concurrency c;
    for (const ast::Invoke* inv : s.invokes) c = Plus(c, invoke(*inv));
    Concurrency children;
    for (ir::StateId child : s.children) {
      const Concurrency cc = state(m, child);
      children = s.kind == ir::State::Kind::kParallel ? Plus(children, cc) : Larger(children, cc);
    }
    return Plus(c, children);
  }

  Concurrency invoke(const ast::Invoke& inv) {
    if (inv.kind != ast::Invoke::Kind::kNamed) return {};  // a Gate; a host function runs inside
    const ast::Decl* d = inv.target.resolved;
    if (d == nullptr) return {};
    if (const auto* x = llvm::dyn_cast<ast::ExternDecl>(d)) {
      const sema::Module* owner = program_.moduleOf(x);
      if (owner != nullptr && owner->isStd && x->name.text == "command") {
        Concurrency c;
        c.processes.most = 1;
        return c;
      }
      return {};  // `std.http_get`, a host function: no process
    }
    if (llvm::isa<ast::MachineDecl>(d) || llvm::isa<ast::PoolDecl>(d)) return of(d);
    return {};  // an Agent: a model's answer, no process
  }

  // A Pool: `cap` workers at once, each its worker machine (or its dispatched run) and what that
  // runs. A `cap` read from input is bounded by `min(…, N)`.
  Concurrency pool(const ast::PoolDecl& p) {
    int64_t cap = 1;  // a Pool of child machines without `cap`
    bool unbounded = false;
    Figure capFigure;
    if (p.cap) {
      if (auto n = ConstantInt(p.cap.get())) {
        cap = std::max<int64_t>(*n, 0);
      } else if (auto bound = Bound(p.cap.get())) {
        cap = *bound;
      } else {
        unbounded = true;
        capFigure.why = fmt::format("the `cap` of pool `{}` is `{}`, which nothing bounds",
                                    p.name.text, TextOf(program_, p.cap->range));
        capFigure.at = p.cap->range;
        capFigure.boundedHint = std::string(TextOf(program_, p.cap->range));
      }
    }
    Concurrency each;
    if (p.worker.dispatch) {
      each = of(p.worker.target.resolved);
      each.runs = Plus(each.runs, Figure{1, false, "", "", {}, ""});
    } else {
      each = of(p.worker.target.resolved);
      each.workers = Plus(each.workers, Figure{1, false, "", "", {}, ""});
    }
    const std::string name(p.name.text);
    return {Times(cap, unbounded, name, each.workers, capFigure),
            Times(cap, unbounded, name, each.processes, capFigure),
            Times(cap, unbounded, name, each.runs, capFigure)};
  }

  // `min(EXPR, N)` or `min(N, EXPR)`: at most N.
  static std::optional<int64_t> Bound(const ast::Expr* e) {
    const auto* call = llvm::dyn_cast_or_null<ast::CallExpr>(e);
    if (call == nullptr || call->args.size() != 2) return std::nullopt;
    const auto* callee = llvm::dyn_cast<ast::NameExpr>(call->callee.get());
    if (callee == nullptr || callee->name.text != "min") return std::nullopt;
    std::optional<int64_t> best;
    for (const ast::Arg& a : call->args) {
      if (auto n = ConstantInt(a.value.get()))
        best = best ? std::min(*best, *n) : *n;
      else if (auto b = Bound(a.value.get()))
        best = best ? std::min(*best, *b) : *b;
    }
    if (best) return std::max<int64_t>(*best, 0);
    return std::nullopt;
  }

  const sema::Program& program_;
  const ir::Program& charts_;
  std::map<const ast::Decl*, Concurrency> memo_;
  std::set<const ast::Decl*> onStack_;
};

std::string Say(const Figure& f, const char* one, const char* many) {
  if (f.unbounded) return fmt::format("unbounded {}", many);
  return fmt::format("{} {}", f.most, f.most == 1 ? one : many);
}

}  // namespace

std::optional<int64_t> ConstantInt(const ast::Expr* e) {
  if (const auto* i = llvm::dyn_cast_or_null<ast::IntLit>(e)) return i->value;
  if (const auto* u = llvm::dyn_cast_or_null<ast::UnaryExpr>(e); u && u->op == ast::UnaryOp::kNeg) {
    auto v = ConstantInt(u->operand.get());
    int64_t r = 0;
    if (v && !__builtin_sub_overflow(int64_t{0}, *v, &r)) return r;
    return std::nullopt;
  }
  const auto* b = llvm::dyn_cast_or_null<ast::BinaryExpr>(e);
  if (!b) return std::nullopt;
  using Op = ast::BinaryOp;
  if (b->op != Op::kAdd && b->op != Op::kSub && b->op != Op::kMul && b->op != Op::kDiv &&
      b->op != Op::kMod) {
    return std::nullopt;
  }
  const auto l = ConstantInt(b->lhs.get());
  if (!l) return std::nullopt;
  const auto r = ConstantInt(b->rhs.get());
  if (!r) return std::nullopt;
  int64_t out = 0;
  switch (b->op) {
    case Op::kAdd:
      if (__builtin_add_overflow(*l, *r, &out)) return std::nullopt;
      return out;
    case Op::kSub:
      if (__builtin_sub_overflow(*l, *r, &out)) return std::nullopt;
      return out;
    case Op::kMul:
      if (__builtin_mul_overflow(*l, *r, &out)) return std::nullopt;
      return out;
    case Op::kDiv:
      if (*r == 0 || (*r == -1 && *l == INT64_MIN)) return std::nullopt;
      return *l / *r;
    case Op::kMod:
      if (*r == 0) return std::nullopt;
      if (*r == -1) return 0;
      return *l % *r;
    default:
      return std::nullopt;
  }
}

std::vector<WorkflowConcurrency> WorkOutConcurrency(const sema::Program& program,
                                                    const ir::Program& charts) {
  std::vector<WorkflowConcurrency> out;
  Counter counter(program, charts);
  for (const auto& m : program.modules) {
    if (m->isStd) continue;
    for (const auto& d : m->ast->decls) {
      const auto* w = llvm::dyn_cast<ast::WorkflowDecl>(d.get());
      if (w == nullptr || w->target.resolved == nullptr) continue;
      out.push_back({w, counter.of(w->target.resolved)});
    }
  }
  return out;
}

std::string Describe(const Concurrency& c) {
  return fmt::format("{}, {}, {}", Say(c.workers, "worker", "workers"),
                     Say(c.processes, "process", "processes"), Say(c.runs, "run", "runs"));
}

}  // namespace jr2::walk
