#include "compiler/lsp/index.h"

#include <fmt/format.h>
#include <llvm/Support/Casting.h>

#include <algorithm>

#include "compiler/driver/pipeline.h"
#include "compiler/sema/rules.h"

namespace jr2::lsp {

// ---- Analysis ---------------------------------------------------------------------------------

namespace {

bool Before(const SourceRange& a, const SourceRange& b) {
  if (a.file != b.file) return a.file < b.file;
  if (a.begin != b.begin) return a.begin < b.begin;
  return a.end > b.end;  // the outer first
}

}  // namespace

const Occurrence* Analysis::occurrenceAt(FileId file, uint32_t offset) const {
  // The first occurrence that starts after `offset`; the one before it may hold it.
  auto it = std::upper_bound(occurrences.begin(), occurrences.end(), offset,
                             [&](uint32_t off, const Occurrence& o) {
                               if (o.range.file != file) return file < o.range.file;
                               return off < o.range.begin;
                             });
  // Names never overlap, but a name and the next may touch (`a.b`): prefer the one that starts
  // at `offset`, then the one that ends at it.
  const Occurrence* best = nullptr;
  for (int back = 0; back < 2 && it != occurrences.begin(); ++back) {
    --it;
    if (it->range.file != file) break;
    if (it->range.begin <= offset && offset <= it->range.end) {
      if (best == nullptr || it->range.begin == offset) best = &*it;
    }
  }
  return best;
}

const TypedExpr* Analysis::typedEndingAt(FileId file, uint32_t end) const {
  const TypedExpr* best = nullptr;
  for (const TypedExpr& t : typed) {  // linear, but only for `x.` completion
    if (t.range.file != file || t.range.end != end) continue;
    if (best == nullptr || t.range.begin > best->range.begin) best = &t;
  }
  return best;
}

const TypedExpr* Analysis::typedAt(FileId file, uint32_t offset) const {
  auto it =
      std::upper_bound(typed.begin(), typed.end(), offset, [&](uint32_t off, const TypedExpr& t) {
        if (t.range.file != file) return file < t.range.file;
        return off < t.range.begin;
      });
  // Sorted by begin, outer first: walk back to the nearest that holds it (the innermost).
  const TypedExpr* best = nullptr;
  int looked = 0;
  while (it != typed.begin() && looked++ < 64) {
    --it;
    if (it->range.file != file) break;
    if (it->range.begin <= offset && offset < it->range.end) {
      if (best == nullptr ||
          (it->range.end - it->range.begin) < (best->range.end - best->range.begin))
        best = &*it;
    }
  }
  return best;
}

std::vector<const Occurrence*> Analysis::occurrencesOf(int symbol) const {
  std::vector<const Occurrence*> out;
  for (const Occurrence& o : occurrences) {
    if (o.symbol == symbol) out.push_back(&o);
  }
  std::stable_partition(out.begin(), out.end(), [](const Occurrence* o) { return o->declaration; });
  return out;
}

const sema::Module* Analysis::moduleOf(FileId file) const {
  for (const auto& m : program.modules) {
    if (m->source != nullptr && m->source->id() == file) return m.get();
  }
  return nullptr;
}

// ---- the index --------------------------------------------------------------------------------

class IndexBuilder {
 public:
  explicit IndexBuilder(Analysis& a) : a_(a) {}

  void run() {
    for (const auto& m : a_.program.modules) declareModule(*m);
    if (a_.checked) {
      for (const auto& m : a_.program.modules) {
        module_ = m.get();
        for (const auto& d : m->ast->decls) refsOfDecl(*d);
      }
      for (const ir::Machine& m : a_.charts.machines) targets(m);
      if (a_.program.typeInfo) {
        for (const auto& [decl, type] : a_.program.typeInfo->inputTypes) {
          if (type != nullptr && type->record != nullptr) inputOwners_[type->record] = decl;
        }
      }
      for (const auto& m : a_.program.modules) {
        module_ = m.get();
        for (const auto& d : m->ast->decls) exprsOfDecl(*d);
      }
    }
    std::sort(a_.occurrences.begin(), a_.occurrences.end(),
              [](const Occurrence& x, const Occurrence& y) { return Before(x.range, y.range); });
    // One occurrence a place: a name two phases both bound (a pool's `source: backlog(…)`).
    a_.occurrences.erase(std::unique(a_.occurrences.begin(), a_.occurrences.end(),
                                     [](const Occurrence& x, const Occurrence& y) {
                                       return x.range.file == y.range.file &&
                                              x.range.begin == y.range.begin &&
                                              x.range.end == y.range.end;
                                     }),
                         a_.occurrences.end());
    std::sort(a_.typed.begin(), a_.typed.end(),
              [](const TypedExpr& x, const TypedExpr& y) { return Before(x.range, y.range); });
  }

 private:
  using K = Symbol::Kind;

  int add(Symbol s, const void* node) {
    const int id = static_cast<int>(a_.symbols.size());
    a_.symbols.push_back(s);
    a_.byNode_[node] = id;
    if (s.nameRange.valid() && !s.name.empty()) a_.occurrences.push_back({s.nameRange, id, true});
    return id;
  }
  void ref(SourceRange r, int symbol) {
    if (symbol >= 0 && r.valid() && r.end > r.begin) a_.occurrences.push_back({r, symbol, false});
  }

  static K KindOf(ast::Decl::Kind k) {
    switch (k) {
      case ast::Decl::Kind::kType:
        return K::kType;
      case ast::Decl::Kind::kEvent:
        return K::kEvent;
      case ast::Decl::Kind::kAgent:
        return K::kAgent;
      case ast::Decl::Kind::kExtern:
        return K::kExtern;
      case ast::Decl::Kind::kSource:
        return K::kSource;
      case ast::Decl::Kind::kMachine:
        return K::kMachine;
      case ast::Decl::Kind::kPool:
        return K::kPool;
      case ast::Decl::Kind::kWorkflow:
        return K::kWorkflow;
    }
    return K::kType;
  }

  // ---- declarations ---------------------------------------------------------------------------

  void declareModule(const sema::Module& m) {
    for (const auto& dp : m.ast->decls) {
      const ast::Decl& d = *dp;
      Symbol s;
      s.kind = KindOf(d.kind);
      s.name = d.name.text;
      s.nameRange = d.name.range;
      s.range = d.range;
      s.decl = &d;
      const int id = add(s, &d);
      auto fields = [&](const std::vector<ast::Field>& fs) {
        for (const ast::Field& f : fs) {
          Symbol fsym;
          fsym.kind = K::kField;
          fsym.name = f.name.text;
          fsym.nameRange = f.name.range;
          fsym.range = f.range;
          fsym.field = &f;
          fsym.parent = id;
          add(fsym, &f);
        }
      };
      if (const auto* t = llvm::dyn_cast<ast::TypeDecl>(&d)) fields(t->fields);
      if (const auto* e = llvm::dyn_cast<ast::EventDecl>(&d)) fields(e->fields);
      if (const auto* params = sema::ParamsOf(&d)) {
        for (const ast::Param& p : *params) {
          Symbol ps;
          ps.kind = K::kParam;
          ps.name = p.name.text;
          ps.nameRange = p.name.range;
          ps.range = p.range;
          ps.param = &p;
          ps.parent = id;
          add(ps, &p);
        }
      }
      if (const auto* mach = llvm::dyn_cast<ast::MachineDecl>(&d)) {
        for (const ast::Var& v : mach->vars) {
          Symbol vs;
          vs.kind = K::kVar;
          vs.name = v.name.text;
          vs.nameRange = v.name.range;
          vs.range = v.range;
          vs.var = &v;
          vs.parent = id;
          add(vs, &v);
        }
        const ir::Machine* chart = nullptr;
        for (const ir::Machine& c : a_.charts.machines) {
          if (c.decl == mach) chart = &c;
        }
        states(mach->body, id, chart);
      }
    }
  }

  void states(const ast::StateBody& body, int parent, const ir::Machine* chart) {
    for (const auto& sp : body.states) {
      const ast::State& st = *sp;
      Symbol s;
      s.kind = K::kState;
      s.name = st.name.text;
      s.nameRange = st.name.range;
      s.range = st.range;
      s.state = &st;
      s.parent = parent;
      s.machine = chart;
      if (chart != nullptr) {
        for (const ir::State& is : chart->states) {
          if (is.ast == &st) s.stateId = is.id;
        }
      }
      const int id = add(s, &st);
      states(st.body, id, chart);
    }
  }

  // ---- names the phases bound -----------------------------------------------------------------

  void qual(const ast::QualName& q) {
    if (q.resolved == nullptr || q.parts.empty()) return;
    ref(q.parts.back().range, a_.symbolOf(q.resolved));
  }
  void typeRef(const ast::TypeRef* t) {
    if (t == nullptr) return;
    qual(t->name);
    for (const auto& arg : t->args) typeRef(arg.get());
  }
  void params(const std::vector<ast::Param>& ps) {
    for (const ast::Param& p : ps) typeRef(p.type.get());
  }

  void refsOfDecl(const ast::Decl& d) {
    if (const auto* t = llvm::dyn_cast<ast::TypeDecl>(&d)) {
      for (const auto& f : t->fields) typeRef(f.type.get());
    } else if (const auto* e = llvm::dyn_cast<ast::EventDecl>(&d)) {
      for (const auto& f : e->fields) typeRef(f.type.get());
    } else if (const auto* x = llvm::dyn_cast<ast::ExternDecl>(&d)) {
      params(x->params);
      typeRef(x->result.get());
    } else if (const auto* s = llvm::dyn_cast<ast::SourceDecl>(&d)) {
      params(s->params);
      typeRef(s->itemType.get());
      if (s->call) qual(s->call->function);
      if (s->wake) qual(*s->wake);
    } else if (const auto* m = llvm::dyn_cast<ast::MachineDecl>(&d)) {
      params(m->params);
      typeRef(m->output.get());
      for (const auto& v : m->vars) typeRef(v.type.get());
      body(m->body);
    } else if (const auto* p = llvm::dyn_cast<ast::PoolDecl>(&d)) {
      params(p->params);
      qual(p->worker.target);
      qual(p->sourceRef);
    } else if (const auto* w = llvm::dyn_cast<ast::WorkflowDecl>(&d)) {
      qual(w->target);
    }
  }

  void body(const ast::StateBody& b) {
    for (const auto& t : b.transitions) qual(t.event);
    for (const auto& inv : b.invokes) qual(inv.target);
    for (const auto& s : b.states) body(s->body);
  }

  // A transition's target, as the IR resolved it: a dotted target is a path from the root, so
  // its n-th part names the target's ancestor n levels below the root.
  void targets(const ir::Machine& m) {
    for (const ir::State& s : m.states) {
      for (const ir::Transition& t : s.transitions) {
        if (t.ast == nullptr || !t.ast->target || t.target == ir::kNoState) continue;
        const auto& parts = t.ast->target->parts;
        std::vector<ir::StateId> chain;
        for (ir::StateId id = t.target; id > 0; id = m.states[id].parent) chain.push_back(id);
        std::reverse(chain.begin(), chain.end());
        if (parts.size() == 1) {
          ref(parts[0].range, a_.symbolOf(m.states[t.target].ast));
        } else {
          for (size_t i = 0; i < parts.size() && i < chain.size(); ++i) {
            ref(parts[i].range, a_.symbolOf(m.states[chain[i]].ast));
          }
        }
      }
    }
  }

  // ---- names in expressions -------------------------------------------------------------------

  // The names a bare name may mean where an expression stands: a machine's parameters and
  // `var`s, a source's parameters.
  std::map<std::string_view, int> scope_;
  const sema::Module* module_ = nullptr;
  std::map<const sema::Record*, const ast::Decl*> inputOwners_;

  sema::TypePtr typeOf(const ast::Expr* e) const {
    if (!a_.program.typeInfo) return nullptr;
    return a_.program.typeInfo->exprTypes.find(e);
  }

  // The symbol of a record's field `name`: a `type`'s or an `event`'s field, or the parameter of
  // the machine or pool whose input the record is.
  int fieldSymbol(sema::TypePtr t, std::string_view name) const {
    t = t == nullptr ? nullptr : sema::StripOptional(t);
    if (t == nullptr || t->kind != sema::Type::Kind::kRecord || t->record == nullptr) return -1;
    const ast::Decl* owner = nullptr;
    if (auto it = a_.program.typeInfo->recordDecls.find(t->record);
        it != a_.program.typeInfo->recordDecls.end()) {
      owner = it->second;
    } else if (auto in = inputOwners_.find(t->record); in != inputOwners_.end()) {
      owner = in->second;
    }
    if (owner == nullptr) return -1;
    if (const auto* td = llvm::dyn_cast<ast::TypeDecl>(owner)) {
      for (const auto& f : td->fields)
        if (f.name.text.view() == name) return a_.symbolOf(&f);
    } else if (const auto* ed = llvm::dyn_cast<ast::EventDecl>(owner)) {
      for (const auto& f : ed->fields)
        if (f.name.text.view() == name) return a_.symbolOf(&f);
    } else if (const auto* ps = sema::ParamsOf(owner)) {
      for (const auto& p : *ps)
        if (p.name.text.view() == name) return a_.symbolOf(&p);
    }
    return -1;
  }

  // The declaration `stem.name` or `std.name` names, when `object` is a file's stem.
  const ast::Decl* moduleMember(const ast::Expr* object, std::string_view name) const {
    const auto* n = llvm::dyn_cast<ast::NameExpr>(object);
    if (n == nullptr || scope_.count(n->name.text.view()) != 0) return nullptr;
    const sema::Module* target = nullptr;
    if (n->name.text == "std") {
      target = a_.program.std;
    } else if (auto it = module_->imports.find(n->name.text); it != module_->imports.end()) {
      target = it->second;
    }
    if (target == nullptr) return nullptr;
    auto it = target->decls.find(std::string(name));
    return it == target->decls.end() ? nullptr : it->second;
  }

  void namedArgs(const std::vector<ast::Arg>& args, const ast::Decl* callee) {
    const auto* ps = callee == nullptr ? nullptr : sema::ParamsOf(callee);
    for (const ast::Arg& arg : args) {
      if (arg.name && ps != nullptr) {
        for (const auto& p : *ps)
          if (p.name.text == arg.name->text) ref(arg.name->range, a_.symbolOf(&p));
      }
      expr(arg.value.get());
    }
  }

  const ast::Decl* calleeDecl(const ast::Expr* callee) const {
    if (const auto* n = llvm::dyn_cast<ast::NameExpr>(callee)) {
      if (scope_.count(n->name.text.view()) != 0) return nullptr;
      auto it = module_->decls.find(n->name.text);
      return it == module_->decls.end() ? nullptr : it->second;
    }
    if (const auto* m = llvm::dyn_cast<ast::MemberExpr>(callee)) {
      return moduleMember(m->object.get(), m->member.text);
    }
    return nullptr;
  }

  void expr(const ast::Expr* e) {
    if (e == nullptr) return;
    if (sema::TypePtr t = typeOf(e)) a_.typed.push_back({e->range, e, t});
    switch (e->kind) {
      case ast::Expr::Kind::kName: {
        const auto* n = llvm::cast<ast::NameExpr>(e);
        if (auto it = scope_.find(n->name.text.view()); it != scope_.end()) {
          ref(n->name.range, it->second);
        } else if (auto d = module_->decls.find(n->name.text); d != module_->decls.end()) {
          ref(n->name.range, a_.symbolOf(d->second));
        }
        break;
      }
      case ast::Expr::Kind::kMember: {
        const auto* m = llvm::cast<ast::MemberExpr>(e);
        if (const ast::Decl* d = moduleMember(m->object.get(), m->member.text)) {
          ref(m->member.range, a_.symbolOf(d));
        } else {
          expr(m->object.get());
          ref(m->member.range, fieldSymbol(typeOf(m->object.get()), m->member.text));
        }
        break;
      }
      case ast::Expr::Kind::kIndex: {
        const auto* x = llvm::cast<ast::IndexExpr>(e);
        expr(x->object.get());
        expr(x->index.get());
        break;
      }
      case ast::Expr::Kind::kCall: {
        const auto* c = llvm::cast<ast::CallExpr>(e);
        expr(c->callee.get());
        namedArgs(c->args, calleeDecl(c->callee.get()));
        break;
      }
      case ast::Expr::Kind::kObject:
        object(llvm::cast<ast::ObjectExpr>(e));
        break;
      case ast::Expr::Kind::kList:
        for (const auto& x : llvm::cast<ast::ListExpr>(e)->elements) expr(x.get());
        break;
      case ast::Expr::Kind::kUnary:
        expr(llvm::cast<ast::UnaryExpr>(e)->operand.get());
        break;
      case ast::Expr::Kind::kBinary: {
        const auto* b = llvm::cast<ast::BinaryExpr>(e);
        expr(b->lhs.get());
        expr(b->rhs.get());
        break;
      }
      case ast::Expr::Kind::kConditional: {
        const auto* c = llvm::cast<ast::ConditionalExpr>(e);
        expr(c->cond.get());
        expr(c->then.get());
        expr(c->otherwise.get());
        break;
      }
      case ast::Expr::Kind::kNonNull:
        expr(llvm::cast<ast::NonNullExpr>(e)->operand.get());
        break;
      default:
        break;
    }
  }

  // An object literal the checker typed as a record: each key is that record's field.
  // `target`: the record the literal stands for where the checker typed it as a literal of its
  // own (a machine's `output`, a pool's `item_input`, a dispatch's `input`): the place says
  // which record, and the keys are that record's fields, nested literals included.
  void object(const ast::ObjectExpr* o, sema::TypePtr target = nullptr) {
    if (o == nullptr) return;
    const sema::TypePtr t = target != nullptr ? target : typeOf(o);
    if (target != nullptr) {
      if (sema::TypePtr own = typeOf(o)) a_.typed.push_back({o->range, o, own});
    }
    for (const auto& entry : o->entries) {
      if (t != nullptr) ref(entry.key.range, fieldSymbol(t, entry.key.text));
      const auto* nested = llvm::dyn_cast_or_null<ast::ObjectExpr>(entry.value.get());
      if (target != nullptr && nested != nullptr) {
        object(nested, FieldType(t, entry.key.text));
      } else {
        expr(entry.value.get());
      }
    }
  }
  // An expression that may be a literal standing for `target` (see `object`).
  void exprFor(const ast::Expr* e, sema::TypePtr target) {
    const auto* o = llvm::dyn_cast_or_null<ast::ObjectExpr>(e);
    if (o != nullptr && target != nullptr) {
      object(o, target);
    } else {
      expr(e);
    }
  }
  static sema::TypePtr FieldType(sema::TypePtr t, std::string_view name) {
    t = t == nullptr ? nullptr : sema::StripOptional(t);
    if (t == nullptr || t->kind != sema::Type::Kind::kRecord || t->record == nullptr)
      return nullptr;
    const sema::RecordField* f = t->record->find(std::string(name));
    return f == nullptr ? nullptr : f->type;
  }
  // The input record of the machine or pool `d` names (a workflow: its top machine's).
  sema::TypePtr inputOf(const ast::Decl* d) const {
    if (const auto* w = llvm::dyn_cast_or_null<ast::WorkflowDecl>(d)) d = w->target.resolved;
    if (d == nullptr || !a_.program.typeInfo) return nullptr;
    auto it = a_.program.typeInfo->inputTypes.find(d);
    return it == a_.program.typeInfo->inputTypes.end() ? nullptr : it->second;
  }

  void actions(const std::vector<ast::Action>& as) {
    for (const ast::Action& act : as) {
      if (act.kind == ast::Action::Kind::kAssign) {
        if (auto it = scope_.find(act.target.text.view()); it != scope_.end())
          ref(act.target.range, it->second);
      }
      expr(act.value.get());
      expr(act.detail.get());
    }
  }

  void bodyExprs(const ast::StateBody& b) {
    for (const auto& t : b.transitions) {
      expr(t.guard.get());
      actions(t.actions);
    }
    for (const auto& inv : b.invokes) {
      namedArgs(inv.args, inv.target.resolved);
      object(inv.object.get());
    }
    for (const auto& block : b.entry) actions(block);
    for (const auto& block : b.exit) actions(block);
    for (const auto& s : b.states) bodyExprs(s->body);
  }

  void scopeOf(const std::vector<ast::Param>* ps, const std::vector<ast::Var>* vs) {
    scope_.clear();
    if (ps != nullptr)
      for (const auto& p : *ps) scope_[p.name.text.view()] = a_.symbolOf(&p);
    if (vs != nullptr)
      for (const auto& v : *vs) scope_[v.name.text.view()] = a_.symbolOf(&v);
  }

  void exprsOfDecl(const ast::Decl& d) {
    scopeOf(nullptr, nullptr);
    auto fieldDefaults = [&](const std::vector<ast::Field>& fs) {
      for (const auto& f : fs) expr(f.defaultValue.get());
    };
    auto paramDefaults = [&](const std::vector<ast::Param>& ps) {
      for (const auto& p : ps) expr(p.defaultValue.get());
    };
    if (const auto* t = llvm::dyn_cast<ast::TypeDecl>(&d)) {
      fieldDefaults(t->fields);
    } else if (const auto* e = llvm::dyn_cast<ast::EventDecl>(&d)) {
      fieldDefaults(e->fields);
    } else if (const auto* ag = llvm::dyn_cast<ast::AgentDecl>(&d)) {
      for (const auto& entry : ag->entries) expr(entry.value.get());
    } else if (const auto* x = llvm::dyn_cast<ast::ExternDecl>(&d)) {
      paramDefaults(x->params);
    } else if (const auto* s = llvm::dyn_cast<ast::SourceDecl>(&d)) {
      paramDefaults(s->params);
      scopeOf(&s->params, nullptr);
      if (s->call) {
        const ast::Decl* fn = s->call->function.resolved;
        namedArgs(s->call->args, fn);
      }
      expr(s->pollEvery.get());
      expr(s->items.get());
      expr(s->hold.get());
      for (const auto& h : s->hooks) expr(h.value.get());
    } else if (const auto* m = llvm::dyn_cast<ast::MachineDecl>(&d)) {
      paramDefaults(m->params);
      scopeOf(&m->params, &m->vars);
      for (const auto& v : m->vars) expr(v.init.get());
      bodyExprs(m->body);
      exprFor(m->outputExpr.get(), m->output ? m->output->checked : nullptr);
    } else if (const auto* p = llvm::dyn_cast<ast::PoolDecl>(&d)) {
      paramDefaults(p->params);
      if (const ast::ObjectExpr* spec = p->worker.dispatchSpec.get()) {
        for (const auto& entry : spec->entries) {
          exprFor(entry.value.get(),
                  entry.key.text == "input" ? inputOf(p->worker.target.resolved) : nullptr);
        }
      }
      expr(p->source.get());
      expr(p->itemId.get());
      expr(p->cap.get());
      exprFor(p->itemInput.get(), inputOf(p->worker.target.resolved));
      expr(p->standing.get());
    }
  }

  Analysis& a_;
};

std::unique_ptr<Analysis> Analyze(const std::string& rootPath,
                                  const std::map<std::string, std::string>& overlay) {
  auto a = std::make_unique<Analysis>();
  a->sm.setOverlay(&overlay);
  sema::LoadResult loaded = sema::Load(a->sm, {rootPath}, a->diags);
  a->program = std::move(loaded.program);
  a->sm.setOverlay(nullptr);
  if (!a->program.roots.empty()) a->root = a->program.roots.front()->source;
  a->charts = driver::Analyze(a->program, a->diags, sema::Keep::kCodegen);
  a->checked = a->program.typeInfo != nullptr;
  IndexBuilder(*a).run();
  return a;
}

// ---- what a symbol is -------------------------------------------------------------------------

namespace {

std::string_view TextOf(const Analysis& a, SourceRange r) {
  if (!r.valid()) return {};
  return a.sm.file(r.file).text().substr(r.begin, r.end - r.begin);
}

std::string TypeText(const Analysis& a, const ast::TypeRef* t) {
  if (t == nullptr) return "";
  if (t->checked != nullptr) return sema::Spell(t->checked);
  return std::string(TextOf(a, t->range));
}

std::string ParamList(const Analysis& a, const std::vector<ast::Param>& ps) {
  std::string out;
  for (const auto& p : ps) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{}: {}", p.name.text, TypeText(a, p.type.get()));
    if (p.defaultValue) out += fmt::format(" = {}", TextOf(a, p.defaultValue->range));
  }
  return out;
}

// The comment lines right above a declaration that starts its line, without their `//`.
std::string CommentAbove(const Analysis& a, SourceRange r) {
  if (!r.valid()) return "";
  const SourceFile& f = a.sm.file(r.file);
  uint32_t line = f.lineCol(r.begin).line;
  const std::string_view before = f.text().substr(f.lineStart(line), r.begin - f.lineStart(line));
  if (before.find_first_not_of(" \t") != std::string_view::npos) return "";  // a parameter
  std::vector<std::string> lines;
  while (line > 1) {
    --line;
    std::string_view t = f.lineText(line);
    const size_t at = t.find_first_not_of(" \t");
    if (at == std::string_view::npos || t.substr(at, 2) != "//") break;
    t.remove_prefix(at + 2);
    if (!t.empty() && t.front() == ' ') t.remove_prefix(1);
    lines.emplace_back(t);
  }
  std::reverse(lines.begin(), lines.end());
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

const char* StateKindWord(const ast::State& s) {
  if (s.final) return "final state";
  if (s.parallel) return "parallel state";
  if (!s.body.states.empty()) return "compound state";
  return "state";
}

}  // namespace

std::string QualifiedName(const Analysis& a, const Symbol& s) {
  std::string out(s.name);
  for (int p = s.parent; p >= 0; p = a.symbols[p].parent) {
    out.insert(0, std::string(a.symbols[p].name) + ".");
  }
  return out;
}

std::string Signature(const Analysis& a, const Symbol& s) {
  switch (s.kind) {
    case Symbol::Kind::kType:
      return fmt::format("type {}", s.name);
    case Symbol::Kind::kEvent: {
      const auto* e = llvm::cast<ast::EventDecl>(s.decl);
      const char* audience = e->audience == ast::Audience::kAgent      ? " agent"
                             : e->audience == ast::Audience::kExternal ? " external"
                             : e->audience == ast::Audience::kAny      ? " any"
                                                                       : "";
      return fmt::format("event {}{}", s.name, audience);
    }
    case Symbol::Kind::kAgent:
      return fmt::format("agent {}", s.name);
    case Symbol::Kind::kExtern: {
      const auto* x = llvm::cast<ast::ExternDecl>(s.decl);
      std::string out = fmt::format("extern {}({})", s.name, ParamList(a, x->params));
      if (x->result) out += " -> " + TypeText(a, x->result.get());
      if (x->idempotent) out += " idempotent";
      return out;
    }
    case Symbol::Kind::kSource: {
      const auto* src = llvm::cast<ast::SourceDecl>(s.decl);
      return fmt::format("source {}({}): {}", s.name, ParamList(a, src->params),
                         TypeText(a, src->itemType.get()));
    }
    case Symbol::Kind::kMachine: {
      const auto* m = llvm::cast<ast::MachineDecl>(s.decl);
      std::string out = fmt::format("machine {}({})", s.name, ParamList(a, m->params));
      if (m->output) out += " -> " + TypeText(a, m->output.get());
      return out;
    }
    case Symbol::Kind::kPool: {
      const auto* p = llvm::cast<ast::PoolDecl>(s.decl);
      return fmt::format("pool {}({}) of {}{}", s.name, ParamList(a, p->params),
                         p->worker.dispatch ? "dispatch " : "", p->worker.target.str());
    }
    case Symbol::Kind::kWorkflow:
      return fmt::format("workflow {} = {}", s.name,
                         llvm::cast<ast::WorkflowDecl>(s.decl)->target.str());
    case Symbol::Kind::kState:
      return fmt::format("{} {}", StateKindWord(*s.state), QualifiedName(a, s));
    case Symbol::Kind::kField: {
      std::string out =
          fmt::format("{}: {}", QualifiedName(a, s), TypeText(a, s.field->type.get()));
      if (s.field->defaultValue)
        out += fmt::format(" = {}", TextOf(a, s.field->defaultValue->range));
      return out;
    }
    case Symbol::Kind::kParam: {
      std::string out =
          fmt::format("(parameter) {}: {}", QualifiedName(a, s), TypeText(a, s.param->type.get()));
      if (s.param->defaultValue)
        out += fmt::format(" = {}", TextOf(a, s.param->defaultValue->range));
      return out;
    }
    case Symbol::Kind::kVar:
      return fmt::format("var {}: {}", QualifiedName(a, s), TypeText(a, s.var->type.get()));
  }
  return std::string(s.name);
}

std::string HoverText(const Analysis& a, const Symbol& s) {
  std::string out = fmt::format("```jr2\n{}\n```\n", Signature(a, s));
  auto para = [&](const std::string& text) {
    if (!text.empty()) out += "\n" + text + (text.back() == '\n' ? "" : "\n");
  };
  // What the author wrote for the reader: a description string, else the comment above.
  std::string description;
  if (s.kind == Symbol::Kind::kEvent) {
    if (const auto& d = llvm::cast<ast::EventDecl>(s.decl)->description) description = *d;
  } else if (s.kind == Symbol::Kind::kExtern) {
    if (const auto& d = llvm::cast<ast::ExternDecl>(s.decl)->description) description = *d;
  } else if (s.kind == Symbol::Kind::kField && s.field->description) {
    description = *s.field->description;
  }
  para(description.empty() ? CommentAbove(a, s.range) : description);

  const sema::TypeInfo* info = a.program.typeInfo.get();
  auto fieldList = [&](const std::vector<ast::Field>& fs) {
    if (fs.empty()) return;
    std::string list = "Fields:\n";
    for (const auto& f : fs) {
      list += fmt::format("- `{}: {}`", f.name.text, TypeText(a, f.type.get()));
      if (f.description) list += " — " + *f.description;
      list += "\n";
    }
    para(list);
  };
  if (s.kind == Symbol::Kind::kType) fieldList(llvm::cast<ast::TypeDecl>(s.decl)->fields);
  if (s.kind == Symbol::Kind::kEvent) {
    const auto* e = llvm::cast<ast::EventDecl>(s.decl);
    if (e->fields.empty()) {
      para("No payload.");
    } else if (info != nullptr) {
      auto it = info->declTypes.find(s.decl);
      if (it != info->declTypes.end() && it->second != nullptr && it->second->record != nullptr) {
        para("Payload schema:\n```json\n" + sema::JsonSchema(*it->second->record) + "\n```");
      }
    }
  }
  if (s.kind == Symbol::Kind::kState && s.machine != nullptr && s.stateId != ir::kNoState) {
    const ir::Machine& m = *s.machine;
    const ir::State& st = m.states[s.stateId];
    std::vector<std::string> invokes;
    bool gate = false;
    for (const ast::Invoke* inv : st.invokes) {
      if (inv->kind == ast::Invoke::Kind::kGate) {
        gate = true;
        invokes.push_back(inv->gateName ? "gate " + inv->gateName->text : "gate");
      } else {
        invokes.push_back(inv->target.str());
      }
    }
    // The events a run in this state takes: its own transitions' and its ancestors'.
    std::vector<std::string> events;
    for (ir::StateId id = s.stateId; id != ir::kNoState; id = m.states[id].parent) {
      for (const ir::Transition& t : m.states[id].transitions) {
        if (t.trigger != ir::Transition::Trigger::kEvent || t.ast == nullptr) continue;
        std::string name = "`" + t.ast->event.str() + "`";
        if (std::find(events.begin(), events.end(), name) == events.end()) events.push_back(name);
      }
    }
    if (!invokes.empty()) {
      std::string list;
      for (const auto& i : invokes) list += (list.empty() ? "" : ", ") + ("`" + i + "`");
      para("Invokes " + list + ".");
    }
    std::string list;
    for (const auto& e : events) list += (list.empty() ? "" : ", ") + e;
    if (gate) {
      para(events.empty() ? "Menu: a Gate here accepts no event (nothing answers it)."
                          : "Menu: a Gate here accepts " + list + ".");
    } else if (!events.empty()) {
      para("Takes " + list + ".");
    }
  }
  return out;
}

}  // namespace jr2::lsp
