// Name resolution: every name a `.jr2` file writes is bound to its declaration, or refused with
// E0100 (unknown, with a "did you mean"), E0101 (declared twice, with a note at the first) or
// E0105 (a declaration of the wrong kind in that place). Names inside expressions are checked
// against the scope of the place they stand in; their types are the type checker's.

#include <fmt/format.h>
#include <llvm/Support/Casting.h>

#include <filesystem>
#include <set>

#include "compiler/diag/suggest.h"
#include "compiler/sema/program.h"
#include "compiler/sema/rules.h"

namespace jr2::sema {
namespace {

using ast::Decl;
using DeclKind = ast::Decl::Kind;

// A set of declaration kinds a place accepts.
using KindSet = unsigned;
constexpr KindSet Bit(DeclKind k) { return 1u << static_cast<unsigned>(k); }
constexpr KindSet kTypes = Bit(DeclKind::kType);
constexpr KindSet kEvents = Bit(DeclKind::kEvent);
constexpr KindSet kMachines = Bit(DeclKind::kMachine) | Bit(DeclKind::kPool);
constexpr KindSet kWorkflows = Bit(DeclKind::kWorkflow);
constexpr KindSet kSources = Bit(DeclKind::kSource);
constexpr KindSet kExterns = Bit(DeclKind::kExtern);
constexpr KindSet kInvokable = kMachines | Bit(DeclKind::kAgent) | kExterns;

bool IsBuiltinFunction(const std::string& n) {
  for (const char* f : kBuiltinFunctions) {
    if (n == f) return true;
  }
  return false;
}

std::string Closest(const std::string& word, const std::vector<std::string>& candidates) {
  return ClosestName(word, candidates);
}

// What a bare expression name means, where it applies, for "unknown name" messages.
const char* ContextNameHelp(const std::string& n) {
  if (n == "item")
    return "`item` is the item a Source gave; it is defined in a pool's `item_id`, `item_input` "
           "and `dispatch` input";
  if (n == "input")
    return "`input` is a pool's run input; a pool's `source:`, `cap:`, `item_input:` and "
           "`dispatch` input read it";
  if (n == "event")
    return "`event` is the event that fired a transition; it is defined in the guard and actions "
           "of `on EVENT`";
  if (n == "done")
    return "`done` is an invoked child's completion; it is defined in the guard and actions of `on "
           "done`";
  if (n == "error")
    return "`error` is an invoked child's Failure; it is defined in the guard and actions of `on "
           "error`";
  if (n == "payload")
    return "`payload` is a hook delivery's JSON body; it is defined in a hook's `carry` and `skip`";
  if (n == "answer") return "`answer` is a read's result; it is defined in a source's `items:`";
  return nullptr;
}

// The names an expression may use where it stands.
struct Scope {
  std::map<std::string, std::string> names;  // name → what it is (for messages)
  std::string where;                         // "in machine `review`"
};

class Resolver {
 public:
  Resolver(Program& program, Diagnostics& diags) : program_(program), diags_(diags) {}

  void run() {
    for (auto& m : program_.modules) declare(*m);
    for (auto& m : program_.modules) {
      module_ = m.get();
      for (auto& d : m->ast->decls) resolveDecl(*d);
    }
  }

 private:
  // ---- declarations ---------------------------------------------------------------------------

  void declare(Module& m) {
    for (const auto& d : m.ast->decls) {
      auto [it, inserted] = m.decls.emplace(d->name.text, d.get());
      if (!inserted) {
        diags_.emit(diag::DuplicateDecl, d->name.range, d->name.text)
            .note(diag::NoteFirstDeclaredHere, it->second->name.range, d->name.text,
                  ast::KindNoun(it->second->kind));
      }
    }
    std::set<std::string> reported;
    for (const auto& imp : m.ast->imports) {
      const std::string stem = std::filesystem::path(imp.path).stem().string();
      auto it = m.decls.find(stem);
      if (it != m.decls.end() && m.imports.count(stem) != 0 && reported.insert(stem).second) {
        diags_.emit(diag::ImportStemIsDecl, imp.pathRange, stem, ast::KindNoun(it->second->kind))
            .note(diag::NoteDeclaredHere, it->second->name.range, stem);
      }
    }
  }

  // ---- lookup ---------------------------------------------------------------------------------

  // Every name visible from the current module with a kind in `kinds`, for suggestions.
  std::vector<std::string> candidates(KindSet kinds) const {
    std::vector<std::string> out;
    for (const auto& [name, d] : module_->decls) {
      if (kinds & Bit(d->kind)) out.push_back(name);
    }
    for (const auto& [stem, m] : module_->imports) {
      for (const auto& [name, d] : m->decls) {
        if (kinds & Bit(d->kind)) out.push_back(fmt::format("{}.{}", stem, name));
      }
    }
    if (program_.std != nullptr && module_ != program_.std) {
      for (const auto& [name, d] : program_.std->decls) {
        if (kinds & Bit(d->kind)) out.push_back("std." + name);
      }
    }
    return out;
  }

  static std::string DeclareHint(KindSet kinds, const std::string& name) {
    if (kinds == kTypes) return fmt::format("declare it with `type {} {{ … }}` or import it", name);
    if (kinds == kEvents) return fmt::format("declare it with `event {}` or import it", name);
    if (kinds == kSources) return fmt::format("declare it with `source {}: ITEM {{ … }}`", name);
    if (kinds == kWorkflows) return fmt::format("declare it with `workflow {} = MACHINE`", name);
    return "declare it, or import the file that declares it";
  }

  // Finds the declaration `q` names. Reports what is wrong and returns null when it cannot.
  const Decl* lookup(ast::QualName& q, KindSet kinds, const char* thing, const char* place,
                     const char* wanted) {
    if (q.parts.empty()) return nullptr;
    const Decl* found = nullptr;
    if (q.parts.size() == 1) {
      auto it = module_->decls.find(q.parts[0].text);
      if (it != module_->decls.end()) found = it->second;
    } else if (q.parts.size() == 2) {
      const std::string& stem = q.parts[0].text;
      const Module* target = nullptr;
      if (stem == "std")
        target = program_.std;
      else if (auto it = module_->imports.find(stem); it != module_->imports.end())
        target = it->second;
      if (target == nullptr && module_->failedImports.count(stem) != 0) return nullptr;
      if (target == nullptr) {
        diags_.emit(diag::UnknownName, q.parts[0].range, "file", stem,
                    fmt::format("`{0}.{1}` names a declaration of an imported file; add `import "
                                "\"{0}.jr2\"` at the top of this file",
                                stem, q.parts[1].text));
        return nullptr;
      }
      auto it = target->decls.find(q.parts[1].text);
      if (it == target->decls.end()) {
        std::vector<std::string> names;
        for (const auto& [name, d] : target->decls) {
          if (kinds & Bit(d->kind)) names.push_back(name);
        }
        const std::string guess = Closest(q.parts[1].text, names);
        auto b = diags_.emit(diag::UnknownMember, q.parts[1].range, stem, q.parts[1].text,
                             guess.empty()
                                 ? fmt::format("check the name in `{}`", target->source->name())
                                 : fmt::format("did you mean `{}.{}`?", stem, guess));
        if (!guess.empty()) b.fix(q.parts[1].range, guess);
        return nullptr;
      }
      found = it->second;
    } else {
      diags_.emit(diag::UnknownName, q.range, thing, q.str(),
                  "a name has at most one dot, between a file's stem and a declaration "
                  "(`tickets.Ticket`)");
      return nullptr;
    }
    if (found == nullptr) {
      const std::string name = q.parts[0].text;
      const std::string guess = Closest(name, candidates(kinds));
      auto b = diags_.emit(
          diag::UnknownName, q.range, thing, q.str(),
          guess.empty() ? DeclareHint(kinds, name) : fmt::format("did you mean `{}`?", guess));
      if (!guess.empty()) {
        b.fix(q.range, guess);
        if (auto it = module_->decls.find(guess); it != module_->decls.end()) {
          b.note(diag::NoteDeclaredHere, it->second->name.range, guess);
        }
      }
      return nullptr;
    }
    if ((kinds & Bit(found->kind)) == 0) {
      auto b =
          diags_.emit(diag::WrongKind, q.range, q.str(), ast::KindNoun(found->kind), place, wanted);
      // A workflow wanted (`dispatch job_machine`) and a workflow that runs the machine or Pool
      // named: that workflow's name is the fix.
      const ast::WorkflowDecl* runs = nullptr;
      if ((kinds & Bit(ast::Decl::Kind::kWorkflow)) != 0) {
        for (const auto& [name, d] : module_->decls) {
          const auto* w = llvm::dyn_cast<ast::WorkflowDecl>(d);
          if (w != nullptr && w->target.str() == q.str()) runs = w;
        }
      }
      if (runs != nullptr) {
        b.fix(q.range, runs->name.text.str())
            .note(diag::NoteWorkflowRunsIt, runs->name.range, runs->name.text.str(), q.str());
      } else {
        b.note(diag::NoteDeclaredHere, found->name.range, found->name.text);
      }
      return nullptr;
    }
    q.resolved = found;
    return found;
  }

  // ---- types ----------------------------------------------------------------------------------

  void type(ast::TypeRef* t) {
    if (t == nullptr) return;
    if (t->kind == ast::TypeRef::Kind::kUnion) {
      for (auto& a : t->args) type(a.get());
      return;
    }
    if (t->kind != ast::TypeRef::Kind::kNamed) return;
    for (auto& a : t->args) type(a.get());
    if (t->name.isSimple()) {
      const std::string& n = t->name.parts[0].text;
      for (const char* b : kBuiltinTypes) {
        if (n != b) continue;
        const bool generic = n == "list" || n == "map";
        if (generic && t->args.size() != 1) {
          diags_.emit(diag::SyntaxTypeArgCount, t->range, n);
        } else if (!generic && !t->args.empty()) {
          diags_.emit(diag::SyntaxTypeArgOnBuiltin, t->range, n);
        }
        return;
      }
    }
    if (!t->args.empty()) {
      diags_.emit(diag::SyntaxTypeArgOnDecl, t->range, t->name.str());
    }
    std::vector<std::string> extra(std::begin(kBuiltinTypes), std::end(kBuiltinTypes));
    if (t->name.isSimple() && module_->decls.count(t->name.parts[0].text) == 0) {
      // Suggest a built-in type too (`strng` → `string`).
      const std::string guess = Closest(t->name.parts[0].text, extra);
      if (!guess.empty()) {
        diags_
            .emit(diag::UnknownName, t->name.range, "type", t->name.str(),
                  fmt::format("did you mean `{}`?", guess))
            .fix(t->name.range, guess);
        return;
      }
    }
    lookup(t->name, kTypes, "type", "a type", "a type (`string`, `int`, a `type` declaration …)");
  }

  template <typename Member>
  void duplicates(const std::vector<Member>& members, const char* what, const std::string& owner) {
    std::map<std::string, const ast::Name*> seen;
    for (const auto& mem : members) {
      auto [it, inserted] = seen.emplace(mem.name.text, &mem.name);
      if (!inserted && !mem.name.text.empty()) {
        diags_.emit(diag::DuplicateMember, mem.name.range, what, mem.name.text, owner)
            .note(diag::NoteFirstHere, it->second->range, mem.name.text);
      }
    }
  }

  void fields(std::vector<ast::Field>& fs, const std::string& owner) {
    duplicates(fs, "the field", owner);
    Scope none{{}, "in a default value"};
    for (auto& f : fs) {
      type(f.type.get());
      expr(f.defaultValue.get(), none);
    }
  }

  void params(std::vector<ast::Param>& ps, const std::string& owner) {
    duplicates(ps, "the parameter", owner);
    Scope none{{}, "in a default value"};
    for (auto& p : ps) {
      type(p.type.get());
      expr(p.defaultValue.get(), none);
    }
  }

  // ---- expressions ----------------------------------------------------------------------------

  void expr(ast::Expr* e, const Scope& scope) {
    if (e == nullptr) return;
    using K = ast::Expr::Kind;
    switch (e->kind) {
      case K::kName:
        name(*llvm::cast<ast::NameExpr>(e), scope, false);
        return;
      case K::kMember: {
        auto* m = llvm::cast<ast::MemberExpr>(e);
        if (auto* n = llvm::dyn_cast<ast::NameExpr>(m->object.get()); n && n->name.text == "std") {
          ast::QualName q;
          q.parts = {n->name, m->member};
          q.range = m->range;
          lookup(q, kExterns, "name", "an expression", "a function");
          return;
        }
        expr(m->object.get(), scope);
        return;
      }
      case K::kIndex: {
        auto* i = llvm::cast<ast::IndexExpr>(e);
        expr(i->object.get(), scope);
        expr(i->index.get(), scope);
        return;
      }
      case K::kCall: {
        auto* c = llvm::cast<ast::CallExpr>(e);
        if (auto* n = llvm::dyn_cast<ast::NameExpr>(c->callee.get())) {
          if (!IsBuiltinFunction(n->name.text)) {
            std::vector<std::string> fns(std::begin(kBuiltinFunctions),
                                         std::end(kBuiltinFunctions));
            const std::string guess = Closest(n->name.text, fns);
            diags_.emit(diag::UnknownName, n->name.range, "function", n->name.text,
                        guess.empty() ? std::string("the built-in functions are `len`, `contains`, "
                                                    "`keys` and `str`")
                                      : fmt::format("did you mean `{}`?", guess));
          }
        } else {
          expr(c->callee.get(), scope);
        }
        for (auto& a : c->args) expr(a.value.get(), scope);
        return;
      }
      case K::kObject: {
        auto* o = llvm::cast<ast::ObjectExpr>(e);
        objectKeys(*o);
        for (auto& entry : o->entries) expr(entry.value.get(), scope);
        return;
      }
      case K::kList:
        for (auto& x : llvm::cast<ast::ListExpr>(e)->elements) expr(x.get(), scope);
        return;
      case K::kUnary:
        expr(llvm::cast<ast::UnaryExpr>(e)->operand.get(), scope);
        return;
      case K::kBinary: {
        // Walk the left spine without recursion: `a + b + c …` can be very long.
        std::vector<ast::BinaryExpr*> spine;
        ast::Expr* cur = e;
        while (auto* b = llvm::dyn_cast<ast::BinaryExpr>(cur)) {
          spine.push_back(b);
          cur = b->lhs.get();
        }
        expr(cur, scope);
        for (auto it = spine.rbegin(); it != spine.rend(); ++it) expr((*it)->rhs.get(), scope);
        return;
      }
      case K::kConditional: {
        auto* c = llvm::cast<ast::ConditionalExpr>(e);
        expr(c->cond.get(), scope);
        expr(c->then.get(), scope);
        expr(c->otherwise.get(), scope);
        return;
      }
      case K::kNonNull:
        expr(llvm::cast<ast::NonNullExpr>(e)->operand.get(), scope);
        return;
      default:
        return;
    }
  }

  void objectKeys(const ast::ObjectExpr& o) {
    std::map<std::string, const ast::Name*> seen;
    for (const auto& entry : o.entries) {
      auto [it, inserted] = seen.emplace(entry.key.text, &entry.key);
      if (!inserted) {
        diags_
            .emit(diag::DuplicateMember, entry.key.range, "the key", entry.key.text,
                  "an object literal")
            .note(diag::NoteFirstHere, it->second->range, entry.key.text);
      }
    }
  }

  void name(const ast::NameExpr& n, const Scope& scope, bool callee) {
    const std::string& text = n.name.text;
    if (scope.names.count(text) != 0) return;
    if (text == "std") {
      diags_.emit(diag::WrongKind, n.range, "std", "the standard library", "a value",
                  "a value; write `std.NAME(…)`");
      return;
    }
    if (!callee && IsBuiltinFunction(text)) {
      diags_.emit(diag::WrongKind, n.range, text, "a built-in function", "a value",
                  fmt::format("a value; call it: `{}(…)`", text));
      return;
    }
    std::vector<std::string> names;
    for (const auto& [k, v] : scope.names) names.push_back(k);
    const std::string guess = Closest(text, names);
    std::string fix;
    if (!guess.empty()) {
      fix = fmt::format("did you mean `{}`?", guess);
    } else if (const char* help = ContextNameHelp(text)) {
      fix = fmt::format("{}, and not {}", help, scope.where);
    } else if (module_->decls.count(text) != 0) {
      fix = fmt::format("`{}` is {}, not a value", text, ast::KindNoun(module_->decls[text]->kind));
    } else if (names.empty()) {
      fix = fmt::format("no names are defined {}", scope.where);
    } else {
      std::string list;
      for (size_t i = 0; i < names.size() && i < 6; ++i) {
        if (i > 0) list += ", ";
        list += "`" + names[i] + "`";
      }
      fix = fmt::format("the names {} are {}", scope.where, list);
    }
    auto b = diags_.emit(diag::UnknownName, n.range, "name", text, fix);
    if (!guess.empty()) b.fix(n.range, guess);
  }

  // ---- declarations ---------------------------------------------------------------------------

  void resolveDecl(Decl& d) {
    switch (d.kind) {
      case DeclKind::kType:
        fields(llvm::cast<ast::TypeDecl>(d).fields, "type `" + d.name.text + "`");
        return;
      case DeclKind::kEvent:
        fields(llvm::cast<ast::EventDecl>(d).fields, "event `" + d.name.text + "`");
        return;
      case DeclKind::kAgent: {
        Scope none{{}, "in an agent"};
        for (auto& e : llvm::cast<ast::AgentDecl>(d).entries) expr(e.value.get(), none);
        return;
      }
      case DeclKind::kExtern: {
        auto& x = llvm::cast<ast::ExternDecl>(d);
        params(x.params, "extern `" + d.name.text + "`");
        type(x.result.get());
        return;
      }
      case DeclKind::kSource:
        source(llvm::cast<ast::SourceDecl>(d));
        return;
      case DeclKind::kMachine:
        machine(llvm::cast<ast::MachineDecl>(d));
        return;
      case DeclKind::kPool:
        pool(llvm::cast<ast::PoolDecl>(d));
        return;
      case DeclKind::kWorkflow:
        lookup(llvm::cast<ast::WorkflowDecl>(d).target, kMachines, "machine", "a workflow",
               "its top machine (a `machine` or a `pool`)");
        return;
    }
  }

  void source(ast::SourceDecl& s) {
    const std::string owner = "source `" + s.name.text + "`";
    params(s.params, owner);
    type(s.itemType.get());
    Scope scope{{}, "in " + owner};
    for (const auto& p : s.params) scope.names[p.name.text] = "a parameter";
    if (s.call)
      sourceCall(*s.call, scope, s.form == ast::SourceDecl::Form::kRead ? "read" : "next");
    if (s.wake) lookup(*s.wake, kEvents, "event", "`wake:`", "an event");
    Scope plain{{}, "in `poll_every:` or `hold:`"};
    expr(s.pollEvery.get(), plain);
    expr(s.hold.get(), plain);
    Scope items = scope;
    items.names["answer"] = "the read's result";
    items.where = "in `items:`";
    expr(s.items.get(), items);
    for (auto& h : s.hooks) {
      Scope hook = scope;
      hook.names["payload"] = "the delivery's body";
      hook.where = "in a hook";
      expr(h.value.get(), hook);
    }
  }

  void sourceCall(ast::SourceCall& call, const Scope& scope, const char* key) {
    for (auto& a : call.args) expr(a.value.get(), scope);
    if (call.isExtern) {
      externName(call.function);
      return;
    }
    const bool isStd = call.function.parts.size() == 2 && call.function.parts[0].text == "std";
    if (isStd) {
      lookup(call.function, kExterns, "function", "a source", "a function");
      return;
    }
    if (call.function.isSimple()) {
      auto it = module_->decls.find(call.function.parts[0].text);
      if (it != module_->decls.end() && it->second->kind == DeclKind::kExtern) {
        diags_
            .emit(diag::WrongKind, call.function.range, call.function.str(), "an extern function",
                  fmt::format("`{}:`", key),
                  fmt::format("a host function with the word `extern`: write `{}: extern {}(…)`",
                              key, call.function.str()))
            .fix(SourceRange::point(call.function.range.file, call.function.range.begin),
                 "extern ");
        return;
      }
    }
    diags_.emit(diag::UnknownName, call.function.range, "function", call.function.str(),
                fmt::format("`{0}:` takes a host function, `{0}: extern NAME(…)`, or a "
                            "standard-library adapter such as `{0}: std.backlog(…)`",
                            key));
  }

  // `extern NAME`: a declared extern binds; an undeclared one takes its signature from its use.
  void externName(ast::QualName& q) {
    if (!q.isSimple()) {
      diags_.emit(diag::UnknownName, q.range, "function", q.str(),
                  "an `extern` names a C++ host function of this program with a plain name; "
                  "remove the `stem.`");
      return;
    }
    auto it = module_->decls.find(q.parts[0].text);
    if (it == module_->decls.end()) return;
    if (it->second->kind != DeclKind::kExtern) {
      diags_
          .emit(diag::WrongKind, q.range, q.str(), ast::KindNoun(it->second->kind), "`extern`",
                "a C++ host function; rename the function or the declaration")
          .note(diag::NoteDeclaredHere, it->second->name.range, q.str());
      return;
    }
    q.resolved = it->second;
  }

  void machine(ast::MachineDecl& m) {
    const std::string owner = "machine `" + m.name.text + "`";
    params(m.params, owner);
    type(m.output.get());
    Scope scope{{}, "in " + owner};
    for (const auto& p : m.params) scope.names[p.name.text] = "a parameter";
    Scope initScope = scope;
    initScope.where = "in a `var`'s initial value";
    std::map<std::string, const ast::Name*> seen;
    for (const auto& p : m.params) seen.emplace(p.name.text, &p.name);
    for (auto& v : m.vars) {
      auto [it, inserted] = seen.emplace(v.name.text, &v.name);
      if (!inserted) {
        diags_.emit(diag::DuplicateMember, v.name.range, "the name", v.name.text, owner)
            .note(diag::NoteFirstHere, it->second->range, v.name.text);
      }
      type(v.type.get());
      expr(v.init.get(), initScope);
    }
    for (const auto& v : m.vars) scope.names[v.name.text] = "a `var`";
    body(m.body, scope, owner);
    expr(m.outputExpr.get(), scope);
  }

  void body(ast::StateBody& b, const Scope& scope, const std::string& owner) {
    // Sibling states and invoke names are unique within one body.
    std::map<std::string, const ast::Name*> states;
    for (const auto& s : b.states) {
      auto [it, inserted] = states.emplace(s->name.text, &s->name);
      if (!inserted && !s->name.text.empty()) {
        diags_.emit(diag::DuplicateMember, s->name.range, "the state", s->name.text, owner)
            .note(diag::NoteFirstHere, it->second->range, s->name.text);
      }
    }
    std::map<std::string, const ast::Name*> asNames;
    for (auto& inv : b.invokes) {
      if (inv.as) {
        auto [it, inserted] = asNames.emplace(inv.as->text, &*inv.as);
        if (!inserted) {
          diags_.emit(diag::DuplicateMember, inv.as->range, "the invoke name", inv.as->text, owner)
              .note(diag::NoteFirstHere, it->second->range, inv.as->text);
        }
      }
      invoke(inv, scope);
    }
    for (auto& block : b.entry) actions(block, scope);
    for (auto& block : b.exit) actions(block, scope);
    std::vector<const ast::Invoke*> own;
    for (const auto& inv : b.invokes) own.push_back(&inv);
    for (auto& t : b.transitions) transition(t, scope, own);
    for (auto& s : b.states) {
      body(s->body, scope, "state `" + s->name.text + "`");
    }
  }

  void invoke(ast::Invoke& inv, const Scope& scope) {
    for (auto& a : inv.args) expr(a.value.get(), scope);
    if (inv.object) expr(inv.object.get(), scope);
    if (inv.kind == ast::Invoke::Kind::kExtern) {
      externName(inv.target);
      return;
    }
    if (inv.kind != ast::Invoke::Kind::kNamed) return;
    const Decl* d = lookup(inv.target, kInvokable, "machine", "`invoke`",
                           "a machine, a pool, an agent or a `std` effect (a workflow is run, "
                           "not invoked)");
    if (d != nullptr && d->kind == DeclKind::kExtern && inv.target.isSimple()) {
      diags_
          .emit(diag::WrongKind, inv.target.range, inv.target.str(), "an extern function",
                "`invoke`",
                fmt::format("a machine; call a host function with `invoke extern {}(…)`",
                            inv.target.str()))
          .fix(SourceRange::point(inv.target.range.file, inv.target.range.begin), "extern ");
      inv.target.resolved = nullptr;
    }
  }

  void actions(std::vector<ast::Action>& acts, const Scope& scope) {
    for (auto& a : acts) {
      if (a.kind == ast::Action::Kind::kAssign) {
        auto it = scope.names.find(a.target.text);
        if (it == scope.names.end()) {
          std::vector<std::string> vars;
          for (const auto& [n, what] : scope.names) {
            if (what == "a `var`") vars.push_back(n);
          }
          const std::string guess = Closest(a.target.text, vars);
          auto b = diags_.emit(diag::UnknownName, a.target.range, "`var`", a.target.text,
                               guess.empty() ? fmt::format("declare it at the top of the machine: "
                                                           "`var {}: TYPE = …`",
                                                           a.target.text)
                                             : fmt::format("did you mean `{}`?", guess));
          if (!guess.empty()) b.fix(a.target.range, guess);
        } else if (it->second != "a `var`") {
          diags_.emit(diag::WrongKind, a.target.range, a.target.text, it->second, "an assignment",
                      "a `var` (only a machine's context can change); declare a `var`");
        }
      }
      expr(a.value.get(), scope);
      expr(a.detail.get(), scope);
    }
  }

  void transition(ast::Transition& t, const Scope& outer,
                  const std::vector<const ast::Invoke*>& ownInvokes) {
    Scope scope = outer;
    if (t.kind == ast::Transition::Kind::kOn) {
      switch (t.trigger) {
        case ast::Transition::Trigger::kEvent:
          lookup(t.event, kEvents, "event", "`on`", "an event");
          scope.names["event"] = "the event";
          scope.where = "in `on " + t.event.str() + "`";
          break;
        case ast::Transition::Trigger::kDone:
        case ast::Transition::Trigger::kError: {
          const bool done = t.trigger == ast::Transition::Trigger::kDone;
          scope.names[done ? "done" : "error"] =
              done ? "the child's completion" : "the child's Failure";
          // The invoke this transition hears may be read by its `as` name too; no other
          // child's output exists when it fires.
          if (const ast::Invoke* heard = HeardInvoke(t, ownInvokes); heard && heard->as)
            scope.names[heard->as->text] = "the invoked child";
          scope.where = done ? "in `on done`" : "in `on error`";
          break;
        }
      }
    }
    expr(t.guard.get(), scope);
    actions(t.actions, scope);
  }

  void pool(ast::PoolDecl& p) {
    const std::string owner = "pool `" + p.name.text + "`";
    params(p.params, owner);
    Scope withInput{{{"input", "the pool's run input"}}, "in " + owner};
    Scope withItem = withInput;
    withItem.names["item"] = "the item";
    if (p.worker.dispatch) {
      lookup(p.worker.target, kWorkflows, "workflow", "`dispatch`", "a workflow");
      if (p.worker.dispatchSpec) expr(p.worker.dispatchSpec.get(), withItem);
    } else if (!p.worker.target.parts.empty()) {
      const Decl* d = nullptr;
      if (p.worker.target.isSimple()) {
        auto it = module_->decls.find(p.worker.target.parts[0].text);
        if (it != module_->decls.end()) d = it->second;
      }
      if (d != nullptr && d->kind == DeclKind::kWorkflow) {
        diags_.emit(diag::BareWorkflowWorker, p.worker.target.range, p.worker.target.str())
            .fix(SourceRange::point(p.worker.target.range.file, p.worker.target.range.begin),
                 "dispatch ")
            .note(diag::NoteDeclaredHere, d->name.range, d->name.text);
      } else {
        lookup(p.worker.target, kMachines, "machine", "a pool's worker",
               "a machine (or `dispatch WORKFLOW { … }`)");
      }
    }
    pool_ = &p;
    if (p.source) poolSource(*p.source, withInput);
    expr(p.itemId.get(), withItem);
    expr(p.cap.get(), withInput);
    expr(p.itemInput.get(), withItem);
    // `standing:` takes the word `true` or `false` and nothing else: the load walk says so, once
    // (SyntaxStandingNotWord); its names are not looked up, which would report `yes` again.
  }

  // `source: NAME` or `source: NAME(ARGS)`, NAME a `source` declaration.
  void poolSource(ast::Expr& e, const Scope& scope) {
    ast::Expr* callee = &e;
    if (auto* c = llvm::dyn_cast<ast::CallExpr>(&e)) {
      callee = c->callee.get();
      for (auto& a : c->args) expr(a.value.get(), scope);
    }
    ast::QualName q;
    q.range = callee->range;
    if (auto* n = llvm::dyn_cast<ast::NameExpr>(callee)) {
      q.parts = {n->name};
    } else if (auto* m = llvm::dyn_cast<ast::MemberExpr>(callee)) {
      if (auto* base = llvm::dyn_cast<ast::NameExpr>(m->object.get()))
        q.parts = {base->name, m->member};
    }
    if (q.parts.empty()) {
      diags_.emit(diag::SyntaxPoolSourceNotName, e.range);
      return;
    }
    lookup(q, kSources, "source", "`source:`", "a `source` declaration");
    pool_->sourceRef = std::move(q);
  }

  Program& program_;
  Diagnostics& diags_;
  Module* module_ = nullptr;
  ast::PoolDecl* pool_ = nullptr;
};

}  // namespace

void ResolveNames(Program& program, Diagnostics& diags) { Resolver(program, diags).run(); }

}  // namespace jr2::sema
