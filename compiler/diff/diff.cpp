#include "compiler/diff/diff.h"

#include <fmt/format.h>
#include <llvm/Support/Casting.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
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

bool FitsIn(TypePtr from, TypePtr to, Read read, std::string* why, Seen& seen);

// `T?` as `T`: what a value that may be null is when it is not (null itself stays null).
TypePtr NonNull(TypePtr t) {
  return t != nullptr && t->kind == Kind::kOptional && t->elem != nullptr ? t->elem : t;
}

// A list's element or map's value of a literal union or a string: read as a plain string by the
// runtime, whatever its literals.
bool ElementIsText(TypePtr t) {
  return t != nullptr && (t->kind == Kind::kLiterals || t->kind == Kind::kString);
}

// ValueFits, below a place that has no default. `element`: a list's element or a map's value,
// which the runtime reads as a plain string when its type is a literal union (only a record's
// field, a parameter and a `var` are checked against their literals).
bool ValueIn(const nlohmann::json& v, TypePtr to, bool element = false);

bool RecordFits(const sema::Record& from, const sema::Record& to, Read read, std::string* why,
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
    if (f.required && !old->required && read != Read::kStored) {
      // What a caller sent may lack a field that had a default (a stored value has them all).
      if (why)
        *why = fmt::format(
            "may lack the field `{}` (it had a default or was optional), which is now required",
            f.name);
      return false;
    }
    std::string inner;
    // A null reads as absent: a field with a default takes it (ReadField).
    if (!FitsIn(f.required ? old->type : NonNull(old->type), f.type, read, &inner, seen)) {
      if (why) *why = fmt::format("has a field `{}` that {}", f.name, inner);
      return false;
    }
  }
  if (read == Read::kStrict) {
    for (const sema::RecordField& f : from.fields) {
      if (to.find(f.name) == nullptr) {
        if (why) *why = fmt::format("may give the field `{}`, which is gone", f.name);
        return false;
      }
    }
  }
  return true;
}

bool FitsIn(TypePtr from, TypePtr to, Read read, std::string* why, Seen& seen) {
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
      return FitsIn(from->kind == Kind::kOptional ? from->elem : from, to->elem, read, why, seen);
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
      if (from->kind == to->kind && ElementIsText(from->elem) && ElementIsText(to->elem)) {
        return true;  // a literal union's element is read as a plain string (ValueIn)
      }
      if (from->kind == to->kind) {
        std::string inner;
        if (FitsIn(from->elem, to->elem, read, &inner, seen)) return true;
        return no(fmt::format("holds a value that {}", inner));
      }
      break;
    case Kind::kRecord:
      if (from->kind == Kind::kRecord && from->record != nullptr && to->record != nullptr)
        return RecordFits(*from->record, *to->record, read, why, seen);
      break;
    default:
      if (from->kind == to->kind) return true;
      break;
  }
  return no(fmt::format("is `{}`, not `{}`", sema::Spell(from), sema::Spell(to)));
}

bool ValueIn(const nlohmann::json& v, TypePtr to, bool element) {
  if (to == nullptr) return true;
  switch (to->kind) {
    case Kind::kError:
    case Kind::kJson:
      return true;
    case Kind::kNull:
      return v.is_null();
    case Kind::kOptional:
      return v.is_null() || ValueIn(v, to->elem, element);
    case Kind::kString:
      return v.is_string();
    case Kind::kLiterals:
      return v.is_string() &&
             (element || std::binary_search(to->literals.begin(), to->literals.end(),
                                            v.get_ref<const std::string&>()));
    case Kind::kBool:
      return v.is_boolean();
    case Kind::kFloat:
      return v.is_number() || v.is_null();  // a number not finite is stored as null, read as 0
    case Kind::kInt:
    case Kind::kDuration: {
      // runtime/src/core/value.cpp: an integer up to 64 bits, or a whole number written with a
      // fraction below 2^53.
      if (v.is_number_unsigned()) return v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX);
      if (v.is_number_integer()) return true;
      if (!v.is_number_float()) return false;
      const double d = v.get<double>();
      return std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 0x1p53;
    }
    case Kind::kList:
      if (!v.is_array()) return false;
      for (const nlohmann::json& e : v) {
        if (!ValueIn(e, to->elem, true)) return false;
      }
      return true;
    case Kind::kMap:
      if (!v.is_object()) return false;
      for (const auto& [key, e] : v.items()) {
        (void)key;
        if (!ValueIn(e, to->elem, true)) return false;
      }
      return true;
    case Kind::kRecord: {
      if (!v.is_object() || to->record == nullptr) return v.is_object();
      for (const sema::RecordField& f : to->record->fields) {
        const auto it = v.find(f.name);
        if (it == v.end() || it->is_null()) {
          if (f.required) return false;  // absent or null: its default, or refused
          continue;
        }
        if (!ValueIn(*it, f.type)) return false;
      }
      return true;
    }
  }
  return true;
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
           const std::vector<WaitingRun>* waiting, std::vector<std::vector<std::string>>* stranding)
      : old_(before), new_(after), diags_(diags), waiting_(waiting), stranding_(stranding) {
    if (stranding_ != nullptr && waiting_ != nullptr) stranding_->resize(waiting_->size());
  }

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
      // Only a live worker is the old worker's (a Pool with none takes the new one from now on).
      count(d, now->worker.range, fmt::format("have pool `{}` live with workers", name),
            [&name](const WaitingRun& r) { return HasPool(r, name, true); });
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
      const bool optional =
          now->type && now->type->checked &&
          (now->type->checked->kind == Kind::kOptional || now->type->checked->kind == Kind::kJson);
      if (!fits("parameter", owner, p, *now, now->defaultValue != nullptr || optional,
                pool ? &name : nullptr))
        continue;
      // Stored values fit; what a caller sends is read strictly.
      std::string why;
      if (!Fits(Checked(p), Checked(*now), Read::kStrict, &why)) {
        diags_
            .emit(diag::DiffInputNarrowed, now->type->range, std::string(p.name.text),
                  std::string(owner), Changed(Checked(p), Checked(*now)), why)
            .note(diag::NoteDiffWasHere, p.type->range, std::string(p.name.text));
      }
    }
  }

  void values(const char* what, std::string_view owner, const std::vector<ast::Var>& was,
              const std::vector<ast::Var>& is) {
    for (const ast::Var& v : was) {
      for (const ast::Var& now : is) {
        if (now.name.text == v.name.text) fits(what, owner, v, now, true, nullptr);
      }
    }
  }

  // Whether a stored value of `old` reads as `now`'s type; reported when not. `hasDefault`: a
  // stored null reads as absent (a `var`'s initializer, a parameter's default). With a store,
  // the runs counted are those whose stored value does not read as `now`'s type (a machine's),
  // or, for a Pool's parameter (`pool`), those with it live.
  template <typename Named>
  bool fits(const char* what, std::string_view owner, const Named& old, const Named& now,
            bool hasDefault, const std::string* pool) {
    std::string why;
    const TypePtr was = hasDefault ? NonNull(Checked(old)) : Checked(old);
    if (Fits(was, Checked(now), pool != nullptr ? Read::kSent : Read::kStored, &why)) return true;
    auto d = diags_.emit(diag::DiffValueNoLongerFits, now.type->range, std::string(what),
                         std::string(now.name.text), std::string(owner),
                         Changed(Checked(old), Checked(now)), why);
    d.note(diag::NoteDiffWasHere, old.type->range, std::string(old.name.text));
    const std::string field(now.name.text);
    const TypePtr to = Checked(now);
    if (pool != nullptr) {
      count(d, now.type->range,
            fmt::format("have pool `{}` live with a stored `{}` that does not read as `{}`", *pool,
                        field, sema::Spell(to)),
            [&](const WaitingRun& r) { return InputMisfits(r, *pool, field, to, hasDefault); });
      return false;
    }
    const std::string machine(owner);
    count(d, now.type->range,
          fmt::format("have a `{}` whose stored `{}` does not read as `{}`", machine, field,
                      sema::Spell(to)),
          [&](const WaitingRun& r) { return Misfits(r, machine, field, to, hasDefault); });
    return false;
  }

  // Whether a stored value `field` of `values` (an object) does not read as `to`.
  static bool FieldMisfits(const nlohmann::json& values, const std::string& field, TypePtr to,
                           bool hasDefault) {
    if (!values.is_object()) return true;  // no values to read: it cannot be restored
    const auto it = values.find(field);
    // Absent, or a null read as absent: a default, a type that holds null, or refused.
    if (it == values.end() || it->is_null()) return !(hasDefault || ValueIn(nullptr, to));
    return !ValueIn(*it, to);
  }

  // Whether a run has `pool` live with a stored input whose `field` does not read as `to`.
  static bool InputMisfits(const WaitingRun& r, const std::string& pool, const std::string& field,
                           TypePtr to, bool hasDefault) {
    for (const WaitingRun::Pool& p : r.pools) {
      if (p.name != pool) continue;
      nlohmann::json input;
      if (p.input.size != 0) {
        input = nlohmann::json::parse(r.text(p.input), nullptr, false);
      } else {
        const std::string_view run = r.input.empty() ? r.text(r.inputInSnapshot) : r.input;
        input = nlohmann::json::parse(run.empty() ? "null" : run, nullptr, false);
        const nlohmann::json over = nlohmann::json::parse(
            p.inputOver.size == 0 ? std::string_view("{}") : r.text(p.inputOver), nullptr, false);
        if (input.is_object() && over.is_object()) {
          for (const auto& [key, value] : over.items()) input[key] = value;
        }
      }
      if (FieldMisfits(input, field, to, hasDefault)) return true;
    }
    return false;
  }

  // Whether a run has a `machine` live whose stored `field` does not read as `to`.
  static bool Misfits(const WaitingRun& r, const std::string& machine, const std::string& field,
                      TypePtr to, bool hasDefault) {
    for (const WaitingRun::Machine& m : r.machines) {
      if (m.name != machine) continue;
      if (FieldMisfits(nlohmann::json::parse(r.text(m.context), nullptr, false), field, to,
                       hasDefault))
        return true;
    }
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
    if (Fits(was, is, Read::kStrict, &why)) return;
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
    for (size_t k = 0; k < waiting_->size(); ++k) {
      if (!strands((*waiting_)[k])) continue;
      ++n;
      if (stranding_ != nullptr) (*stranding_)[k].push_back(diags_.all().back().code());
    }
    d.note(diag::NoteDiffStored, at, n, static_cast<int64_t>(waiting_->size()), what);
  }
  static bool Runs(const WaitingRun& r, const std::string& machine, const std::string& state) {
    for (const WaitingRun::Machine& m : r.machines) {
      if (m.name != machine) continue;
      if (state.empty()) return true;
      for (const std::string& p : m.active) {
        if (p == state || p.rfind(state + ".", 0) == 0) return true;
      }
    }
    return false;
  }
  static bool HasPool(const WaitingRun& r, const std::string& pool, bool withWorkers = false) {
    return std::any_of(r.pools.begin(), r.pools.end(), [&](const WaitingRun::Pool& p) {
      return p.name == pool && (p.workers || !withWorkers);
    });
  }

  Index old_;
  Index new_;
  Diagnostics& diags_;
  const std::vector<WaitingRun>* waiting_;
  std::vector<std::vector<std::string>>* stranding_;
};

}  // namespace

bool Fits(TypePtr from, TypePtr to, Read read, std::string* why) {
  Seen seen;
  return FitsIn(from, to, read, why, seen);
}

bool ValueFits(const nlohmann::json& value, TypePtr to) { return ValueIn(value, to); }

bool CountsReadValues(const Diagnostics& changes) {
  return std::any_of(changes.all().begin(), changes.all().end(), [](const Diagnostic& d) {
    return d.kind == diag::Kind::DiffValueNoLongerFits;
  });
}

void Compare(const Version& before, const Version& after, Diagnostics& diags,
             const std::vector<WaitingRun>* waiting,
             std::vector<std::vector<std::string>>* stranding) {
  Comparer(before, after, diags, waiting, stranding).run();
}

}  // namespace jr2::diff
