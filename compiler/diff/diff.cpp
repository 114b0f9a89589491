#include "compiler/diff/diff.h"

#include <fmt/format.h>
#include <llvm/Support/Casting.h>

#include <algorithm>
#include <map>
#include <set>

#include "compiler/diag/suggest.h"
#include "runtime/include/jr2/meant.h"

namespace jr2::diff {
namespace {

using sema::Type;
using sema::TypePtr;
using Kind = Type::Kind;

// The pairs of records being compared, so that a record that holds itself ends.
using Seen = std::set<std::pair<const sema::Record*, const sema::Record*>>;

bool FitsIn(TypePtr from, TypePtr to, bool strict, std::string* why, Seen& seen);

bool RecordFits(const sema::Record& from, const sema::Record& to, bool strict, std::string* why,
                Seen& seen) {
  if (!seen.insert({&from, &to}).second) return true;  // already being compared, further up
  for (const sema::RecordField& f : to.fields) {
    const sema::RecordField* old = from.find(f.name);
    if (old == nullptr) {
      if (f.required) {
        if (why) *why = fmt::format("has no field `{}`, which is now required", f.name);
        return false;
      }
      continue;
    }
    std::string inner;
    if (!FitsIn(old->type, f.type, strict, &inner, seen)) {
      if (why) *why = fmt::format("has a field `{}` that {}", f.name, inner);
      return false;
    }
  }
  if (strict) {
    for (const sema::RecordField& f : from.fields) {
      if (to.find(f.name) == nullptr) {
        if (why) *why = fmt::format("may give the field `{}`, which is gone", f.name);
        return false;
      }
    }
  }
  return true;
}

bool FitsIn(TypePtr from, TypePtr to, bool strict, std::string* why, Seen& seen) {
  if (from == nullptr || to == nullptr) return true;
  if (from->kind == Kind::kError || to->kind == Kind::kError) return true;
  auto no = [&](std::string text) {
    if (why) *why = std::move(text);
    return false;
  };
  switch (to->kind) {
    case Kind::kJson:
      return true;
    case Kind::kOptional:
      if (from->kind == Kind::kNull) return true;
      return FitsIn(from->kind == Kind::kOptional ? from->elem : from, to->elem, strict, why, seen);
    default:
      break;
  }
  if (from->kind == Kind::kOptional || from->kind == Kind::kNull)
    return no(fmt::format("may be null, which `{}` is not", sema::Spell(to)));
  if (from->kind == Kind::kJson) return no(fmt::format("is any JSON, not only `{}`", Spell(to)));
  switch (to->kind) {
    case Kind::kString:
      if (from->kind == Kind::kString || from->kind == Kind::kLiterals) return true;
      break;
    case Kind::kFloat:
      if (from->kind == Kind::kFloat || from->kind == Kind::kInt) return true;
      break;
    case Kind::kLiterals:
      if (from->kind == Kind::kLiterals) {
        for (const std::string& l : from->literals) {
          if (!std::binary_search(to->literals.begin(), to->literals.end(), l))
            return no(fmt::format("may be \"{}\", which is no longer one of them", l));
        }
        return true;
      }
      break;
    case Kind::kList:
    case Kind::kMap:
      if (from->kind == to->kind) {
        std::string inner;
        if (FitsIn(from->elem, to->elem, strict, &inner, seen)) return true;
        return no(fmt::format("holds a value that {}", inner));
      }
      break;
    case Kind::kRecord:
      if (from->kind == Kind::kRecord && from->record != nullptr && to->record != nullptr)
        return RecordFits(*from->record, *to->record, strict, why, seen);
      break;
    default:
      if (from->kind == to->kind) return true;
      break;
  }
  return no(fmt::format("is `{}`, not `{}`", sema::Spell(from), sema::Spell(to)));
}

// How a type changed, for a message: `was `int` and is `string``, or, when the two are spelled
// alike (a record whose fields changed), `is `Ticket`, whose fields changed`.
std::string Changed(TypePtr was, TypePtr is) {
  const std::string a = sema::Spell(was);
  const std::string b = sema::Spell(is);
  if (a == b) return fmt::format("is `{}`, whose fields changed", b);
  return fmt::format("was `{}` and is `{}`", a, b);
}

// A declaration's name as the other version finds it: its own in a root file, `stem.name` in an
// imported one.
std::string KeyOf(const sema::Program& p, const ast::Decl* d) {
  const sema::Module* m = p.moduleOf(d);
  if (m == nullptr) return std::string(d->name.text);
  const bool root = std::find(p.roots.begin(), p.roots.end(), m) != p.roots.end();
  return root ? std::string(d->name.text) : m->stem + "." + std::string(d->name.text);
}

// A version's declarations by key, and its charts by machine.
struct Index {
  const Version& v;
  std::map<std::string, const ast::Decl*> decls;  // machines, pools, events, workflows
  std::map<const ast::MachineDecl*, const ir::Machine*> charts;

  explicit Index(const Version& version) : v(version) {
    for (const auto& m : v.program.modules) {
      if (m->isStd || m->ast == nullptr) continue;
      for (const auto& d : m->ast->decls) {
        if (d->kind == ast::Decl::Kind::kMachine || d->kind == ast::Decl::Kind::kPool ||
            d->kind == ast::Decl::Kind::kEvent || d->kind == ast::Decl::Kind::kWorkflow)
          decls.emplace(Key(d->kind, KeyOf(v.program, d.get())), d.get());
      }
    }
    for (const ir::Machine& m : v.charts.machines) charts[m.decl] = &m;
  }
  static std::string Key(ast::Decl::Kind kind, const std::string& name) {
    return std::to_string(static_cast<int>(kind)) + ":" + name;
  }
  const ast::Decl* find(ast::Decl::Kind kind, const std::string& name) const {
    const auto it = decls.find(Key(kind, name));
    return it == decls.end() ? nullptr : it->second;
  }
  const ast::Decl* counterpart(const sema::Program& other, const ast::Decl* d) const {
    return find(d->kind, KeyOf(other, d));
  }
};

std::string InvokeText(const ast::Invoke& inv) {
  switch (inv.kind) {
    case ast::Invoke::Kind::kGate:
      return inv.gateName ? fmt::format("the Gate `{}`", inv.gateName->text) : "its Gate";
    case ast::Invoke::Kind::kExtern:
      return fmt::format("`extern {}`", inv.target.str());
    case ast::Invoke::Kind::kNamed:
      break;
  }
  return fmt::format("`{}`", inv.target.str());
}

// What identifies an invoke across versions: its kind, what it invokes and its `as`.
std::string InvokeKey(const ast::Invoke& inv) {
  std::string k = std::to_string(static_cast<int>(inv.kind)) + ":";
  k += inv.kind == ast::Invoke::Kind::kGate ? (inv.gateName ? std::string(inv.gateName->text) : "")
                                            : inv.target.str();
  if (inv.as) k += " as " + std::string(inv.as->text);
  return k;
}

class Comparer {
 public:
  Comparer(const Version& before, const Version& after, Diagnostics& diags,
           const std::vector<WaitingRun>* waiting)
      : old_(before), new_(after), diags_(diags), waiting_(waiting) {}

  void run() {
    const std::set<const ast::Decl*> liveDecls = live();
    for (const auto& [key, d] : old_.decls) {
      (void)key;
      switch (d->kind) {
        case ast::Decl::Kind::kWorkflow:
          workflow(*llvm::cast<ast::WorkflowDecl>(d));
          break;
        case ast::Decl::Kind::kMachine:
          if (liveDecls.count(d) != 0) machine(*llvm::cast<ast::MachineDecl>(d));
          break;
        case ast::Decl::Kind::kPool:
          if (liveDecls.count(d) != 0) pool(*llvm::cast<ast::PoolDecl>(d));
          break;
        case ast::Decl::Kind::kEvent:
          event(*llvm::cast<ast::EventDecl>(d));
          break;
        default:
          break;
      }
    }
  }

 private:
  // The machines and Pools a stored run of OLD can have live: each workflow's top, and what it
  // invokes or runs as workers, down. (A dispatched run is a run of its own workflow.)
  std::set<const ast::Decl*> live() const {
    std::set<const ast::Decl*> live;
    std::vector<const ast::Decl*> todo;
    for (const auto& [key, d] : old_.decls) {
      (void)key;
      if (const auto* w = llvm::dyn_cast<ast::WorkflowDecl>(d); w && w->target.resolved)
        todo.push_back(w->target.resolved);
    }
    while (!todo.empty()) {
      const ast::Decl* d = todo.back();
      todo.pop_back();
      if (d == nullptr || !live.insert(d).second) continue;
      if (const auto* m = llvm::dyn_cast<ast::MachineDecl>(d)) {
        const auto it = old_.charts.find(m);
        if (it == old_.charts.end()) continue;
        for (const ast::Invoke* inv : it->second->invokes) {
          const ast::Decl* t = inv->target.resolved;
          if (t && (llvm::isa<ast::MachineDecl>(t) || llvm::isa<ast::PoolDecl>(t)))
            todo.push_back(t);
        }
      } else if (const auto* p = llvm::dyn_cast<ast::PoolDecl>(d)) {
        if (!p->worker.dispatch) todo.push_back(p->worker.target.resolved);
      }
    }
    return live;
  }

  void workflow(const ast::WorkflowDecl& w) {
    const auto* now =
        llvm::dyn_cast_or_null<ast::WorkflowDecl>(new_.counterpart(old_.v.program, &w));
    const std::string name(w.name.text);
    auto ofIt = [&name](const WaitingRun& r) { return r.workflow == name; };
    if (now == nullptr) {
      auto d = diags_.emit(diag::DiffWorkflowRemoved, w.name.range, name);
      count(d, w.name.range, fmt::format("are runs of `{}`", name), ofIt);
      return;
    }
    const ast::Decl* was = w.target.resolved;
    const ast::Decl* is = now->target.resolved;
    if (was == nullptr || is == nullptr) return;
    if (was->kind != is->kind || KeyOf(old_.v.program, was) != KeyOf(new_.v.program, is)) {
      auto d = diags_.emit(diag::DiffTopChanged, now->target.range, std::string(now->name.text),
                           KeyOf(new_.v.program, is), KeyOf(old_.v.program, was));
      d.note(diag::NoteDiffWasHere, w.target.range, std::string(w.name.text));
      count(d, now->target.range, fmt::format("are runs of `{}`", name), ofIt);
    }
  }

  // Who uses `d` in OLD, for the message: `the workflow `x` runs it`, ``m` invokes it`.
  std::string usedBy(const ast::Decl* d) const {
    for (const auto& [key, other] : old_.decls) {
      (void)key;
      if (const auto* w = llvm::dyn_cast<ast::WorkflowDecl>(other); w && w->target.resolved == d)
        return fmt::format("workflow `{}` runs it", w->name.text);
      if (const auto* p = llvm::dyn_cast<ast::PoolDecl>(other); p && p->worker.target.resolved == d)
        return fmt::format("pool `{}` runs it as its worker", p->name.text);
      if (const auto* m = llvm::dyn_cast<ast::MachineDecl>(other)) {
        const auto it = old_.charts.find(m);
        if (it == old_.charts.end()) continue;
        for (const ast::Invoke* inv : it->second->invokes) {
          if (inv->target.resolved == d) return fmt::format("`{}` invokes it", m->name.text);
        }
      }
    }
    return "a run can have it live";
  }

  void machine(const ast::MachineDecl& m) {
    const auto* now =
        llvm::dyn_cast_or_null<ast::MachineDecl>(new_.counterpart(old_.v.program, &m));
    const std::string name(m.name.text);
    if (now == nullptr) {
      auto d = diags_.emit(diag::DiffDeclRemoved, m.name.range, std::string("machine"), name,
                           usedBy(&m));
      count(d, m.name.range, fmt::format("have a `{}` live", name),
            [&name](const WaitingRun& r) { return Runs(r, name, ""); });
      return;
    }
    params(m.name.text, m.params, now->params, false);
    values("`var`", m.name.text, m.vars, now->vars);
    const auto was = old_.charts.find(&m);
    const auto is = new_.charts.find(now);
    if (was != old_.charts.end() && is != new_.charts.end()) states(*was->second, *is->second);
  }

  void pool(const ast::PoolDecl& p) {
    const auto* now = llvm::dyn_cast_or_null<ast::PoolDecl>(new_.counterpart(old_.v.program, &p));
    const std::string name(p.name.text);
    auto live = [&name](const WaitingRun& r) { return HasPool(r, name); };
    if (now == nullptr) {
      auto d =
          diags_.emit(diag::DiffDeclRemoved, p.name.range, std::string("pool"), name, usedBy(&p));
      count(d, p.name.range, fmt::format("have pool `{}` live", name), live);
      return;
    }
    params(p.name.text, p.params, now->params, true);
    const ast::Decl* was = p.worker.target.resolved;
    const ast::Decl* is = now->worker.target.resolved;
    if (was != nullptr && is != nullptr &&
        (p.worker.dispatch != now->worker.dispatch ||
         KeyOf(old_.v.program, was) != KeyOf(new_.v.program, is))) {
      auto d = diags_.emit(diag::DiffWorkerChanged, now->worker.range, name,
                           KeyOf(old_.v.program, was), KeyOf(new_.v.program, is));
      d.note(diag::NoteDiffWasHere, p.worker.range, std::string("worker"));
      count(d, now->worker.range, fmt::format("have pool `{}` live", name), live);
    }
  }

  // Parameters: a stored run holds each in its context (read leniently: a field it no longer
  // has is ignored), and an input gives them (read strictly: an unknown field is refused).
  // `pool`: whose parameters they are (a Pool's, counted by the Pool; else a machine's).
  void params(std::string_view owner, const std::vector<ast::Param>& was,
              const std::vector<ast::Param>& is, bool pool) {
    const std::string name(owner);
    auto live = [&name, pool](const WaitingRun& r) {
      return pool ? HasPool(r, name) : Runs(r, name, "");
    };
    const std::string what =
        pool ? fmt::format("have pool `{}` live", name) : fmt::format("have a `{}` live", name);
    for (const ast::Param& p : is) {
      const ast::Param* old = Find(was, p.name.text);
      if (old != nullptr) continue;
      const bool optional = p.type && p.type->checked && p.type->checked->kind == Kind::kOptional;
      if (p.defaultValue == nullptr && !optional) {
        auto d = diags_.emit(diag::DiffParamRequired, p.name.range, std::string(p.name.text),
                             std::string(owner));
        count(d, p.name.range, what, live);
      }
    }
    for (const ast::Param& p : was) {
      const ast::Param* now = Find(is, p.name.text);
      if (now == nullptr) {
        diags_.emit(diag::DiffParamRemoved, p.name.range, std::string(p.name.text),
                    std::string(owner));
        continue;
      }
      if (!fits("parameter", owner, p, *now, what, live)) continue;
      // Stored values fit; what a caller sends is read strictly.
      std::string why;
      if (!Fits(Checked(p), Checked(*now), true, &why)) {
        diags_
            .emit(diag::DiffInputNarrowed, now->type->range, std::string(p.name.text),
                  std::string(owner), Changed(Checked(p), Checked(*now)), why)
            .note(diag::NoteDiffWasHere, p.type->range, std::string(p.name.text));
      }
    }
  }

  void values(const char* what, std::string_view owner, const std::vector<ast::Var>& was,
              const std::vector<ast::Var>& is) {
    const std::string name(owner);
    for (const ast::Var& v : was) {
      for (const ast::Var& now : is) {
        if (now.name.text == v.name.text)
          fits(what, owner, v, now, fmt::format("have a `{}` live", name),
               [&name](const WaitingRun& r) { return Runs(r, name, ""); });
      }
    }
  }

  // Whether a stored value of `old` reads as `now`'s type; reported when not.
  template <typename Named, typename Pick>
  bool fits(const char* what, std::string_view owner, const Named& old, const Named& now,
            const std::string& counted, const Pick& live) {
    std::string why;
    if (Fits(Checked(old), Checked(now), false, &why)) return true;
    auto d = diags_.emit(diag::DiffValueNoLongerFits, now.type->range, std::string(what),
                         std::string(now.name.text), std::string(owner),
                         Changed(Checked(old), Checked(now)), why);
    d.note(diag::NoteDiffWasHere, old.type->range, std::string(old.name.text));
    count(d, now.type->range, counted, live);
    return false;
  }

  template <typename Named>
  static TypePtr Checked(const Named& n) {
    return n.type ? n.type->checked : nullptr;
  }
  static const ast::Param* Find(const std::vector<ast::Param>& ps, std::string_view name) {
    for (const ast::Param& p : ps) {
      if (p.name.text.view() == name) return &p;
    }
    return nullptr;
  }

  // States a stored run can be in: every state a run can enter but a final one (a machine in a
  // final state is done: its Pool retires it, its run has ended).
  void states(const ir::Machine& was, const ir::Machine& is) {
    std::map<std::string, const ir::State*> now;
    for (const ir::State& s : is.states) now[s.path] = &s;
    std::set<std::string> oldPaths;
    for (const ir::State& s : was.states) oldPaths.insert(s.path);
    const std::vector<bool> enterable = was.enterable();
    std::set<std::string> gone;
    std::set<std::string> claimed;  // new states already named as a rename, each once
    for (const ir::State& s : was.states) {
      if (s.id == 0 || s.kind == ir::State::Kind::kFinal || !enterable[s.id]) continue;
      const auto it = now.find(s.path);
      if (it == now.end()) {
        if (gone.count(was.states[s.parent].path) != 0) {
          gone.insert(s.path);  // said once, at the state around it
          continue;
        }
        gone.insert(s.path);
        removed(was, s, is, now, oldPaths, claimed);
        continue;
      }
      invokes(was, s, *it->second);
      timers(was, s, *it->second);
    }
  }

  void removed(const ir::Machine& was, const ir::State& s, const ir::Machine& is,
               const std::map<std::string, const ir::State*>& now,
               const std::set<std::string>& oldPaths, std::set<std::string>& claimed) {
    // A rename: a state of NEW under the same parent that OLD had not.
    const std::string parent = was.states[s.parent].path;
    std::vector<std::string> fresh;
    std::map<std::string, const ir::State*> byName;
    const auto p = now.find(parent);
    if (p != now.end()) {
      for (ir::StateId c : p->second->children) {
        const ir::State& cs = is.states[c];
        if (oldPaths.count(cs.path) == 0 && cs.kind != ir::State::Kind::kFinal &&
            claimed.count(cs.path) == 0) {
          fresh.push_back(cs.name);
          byName[cs.name] = &cs;
        }
      }
    }
    std::string guess = fresh.size() == 1 ? fresh[0] : ClosestName(s.name, fresh);
    auto d = diags_.emit(
        diag::DiffStateRemoved, s.ast->name.range, s.path, std::string(was.decl->name.text),
        guess.empty() ? std::string() : fmt::format(" (was it renamed to `{}`?)", guess));
    const std::string machine(was.decl->name.text);
    count(d, s.ast->name.range, fmt::format("are in `{}`", s.path),
          [&](const WaitingRun& r) { return Runs(r, machine, s.path); });
    if (!guess.empty()) {
      claimed.insert(byName[guess]->path);
      d.note(diag::NoteDiffRenamed, byName[guess]->ast->name.range, byName[guess]->path, s.path);
    }
  }

  // The runtime matches a stored child to NEW's invokes by its state, kind, target and name, the
  // n-th such to the n-th (MachineActor::restoreFrom), so each of OLD's needs one of its own.
  void invokes(const ir::Machine& was, const ir::State& s, const ir::State& now) {
    std::map<std::string, int> kept;
    for (const ast::Invoke* inv : now.invokes) ++kept[InvokeKey(*inv)];
    for (const ast::Invoke* inv : s.invokes) {
      if (kept[InvokeKey(*inv)]-- > 0) continue;
      const std::string machine(was.decl->name.text);
      auto d = diags_.emit(diag::DiffInvokeRemoved, inv->range, s.path, machine, InvokeText(*inv));
      count(d, inv->range, fmt::format("are in `{}`", s.path),
            [&](const WaitingRun& r) { return Runs(r, machine, s.path); });
    }
  }

  // A stored timer is matched by its state and duration, the n-th to the n-th, as an invoke is.
  void timers(const ir::Machine& was, const ir::State& s, const ir::State& now) {
    std::map<int64_t, int> kept;
    for (const ir::Transition& t : now.transitions) {
      if (t.trigger == ir::Transition::Trigger::kTimer) ++kept[t.ast->delayMillis];
    }
    for (const ir::Transition& t : s.transitions) {
      if (t.trigger != ir::Transition::Trigger::kTimer || kept[t.ast->delayMillis]-- > 0) continue;
      const std::string machine(was.decl->name.text);
      auto d = diags_.emit(diag::DiffTimerRemoved, t.ast->range, s.path, machine,
                           meant::DurationLiteral(t.ast->delayMillis));
      count(d, t.ast->range, fmt::format("are in `{}`", s.path),
            [&](const WaitingRun& r) { return Runs(r, machine, s.path); });
    }
  }

  void event(const ast::EventDecl& e) {
    const auto* now = llvm::dyn_cast_or_null<ast::EventDecl>(new_.counterpart(old_.v.program, &e));
    const char* who = e.audience == ast::Audience::kAgent      ? "an Agent's pick of"
                      : e.audience == ast::Audience::kExternal ? "a Gate's answer with"
                                                               : "a `send` of";
    if (now == nullptr) {
      diags_.emit(diag::DiffEventRemoved, e.name.range, std::string(e.name.text), std::string(who));
      return;
    }
    const TypePtr was = RecordOf(old_, &e);
    const TypePtr is = RecordOf(new_, now);
    std::string why;
    if (Fits(was, is, true, &why)) return;
    const bool gone = why.rfind("may give the field", 0) == 0;
    diags_
        .emit(diag::DiffPayloadRefused, now->name.range, std::string(e.name.text), why,
              gone ? "keep the field until no run waits for the event"
                   : "give the new field a default, or keep the type")
        .note(diag::NoteDiffWasHere, e.name.range, std::string(e.name.text));
  }

  static TypePtr RecordOf(const Index& v, const ast::Decl* d) {
    const sema::TypeInfo* info = v.v.program.typeInfo.get();
    if (info == nullptr) return nullptr;
    const auto it = info->declTypes.find(d);
    return it == info->declTypes.end() ? nullptr : it->second;
  }

  // With a store: a note on `d` counting the waiting runs `strands` picks, and what they are.
  template <typename Builder, typename Pick>
  void count(Builder& d, SourceRange at, const std::string& what, const Pick& strands) {
    if (waiting_ == nullptr) return;
    int64_t n = 0;
    for (const WaitingRun& r : *waiting_) n += strands(r) ? 1 : 0;
    d.note(diag::NoteDiffStored, at, n, static_cast<int64_t>(waiting_->size()), what);
  }
  static bool Runs(const WaitingRun& r, const std::string& machine, const std::string& state) {
    for (const auto& [name, active] : r.machines) {
      if (name != machine) continue;
      if (state.empty()) return true;
      for (const std::string& p : active) {
        if (p == state || p.rfind(state + ".", 0) == 0) return true;
      }
    }
    return false;
  }
  static bool HasPool(const WaitingRun& r, const std::string& pool) {
    return std::find(r.pools.begin(), r.pools.end(), pool) != r.pools.end();
  }

  Index old_;
  Index new_;
  Diagnostics& diags_;
  const std::vector<WaitingRun>* waiting_;
};

}  // namespace

bool Fits(TypePtr from, TypePtr to, bool strict, std::string* why) {
  Seen seen;
  return FitsIn(from, to, strict, why, seen);
}

void Compare(const Version& before, const Version& after, Diagnostics& diags,
             const std::vector<WaitingRun>* waiting) {
  Comparer(before, after, diags, waiting).run();
}

}  // namespace jr2::diff
