// A machine: a class deriving ::jr2rt::Statechart in the header; in the source its tables
// (machine_tables.cpp), the code of its guards, actions, entries and exits, its input, output and
// snapshot, and — when it has one — its generated fast path.

#include <fmt/format.h>
#include <llvm/Support/Casting.h>

#include <map>
#include <string>
#include <vector>

#include "compiler/codegen/generators.h"
#include "compiler/sema/rules.h"

namespace jr2::codegen {

using sema::TypePtr;
using K = sema::Type::Kind;
using Trigger = ir::Transition::Trigger;

namespace {

std::string ClassName(const ast::MachineDecl& m) { return Ident(m.name.text) + "_machine"; }

// A machine with no parallel state and no `always` has exactly one active leaf, and each
// (leaf, transition) has a static exit and entry sequence: such a machine gets a generated
// dispatch() that is a switch over its leaf, and the table engine is not used for events.
bool HasFastPath(const Context& cx, const ir::Machine& m) {
  if (!cx.options.fastPath) return false;
  for (const ir::State& s : m.states) {
    if (s.kind == ir::State::Kind::kParallel) return false;
    for (const ir::Transition& t : s.transitions) {
      if (t.trigger == Trigger::kAlways) return false;
    }
  }
  return true;
}

bool HasTimers(const ir::State& s) {
  for (const ir::Transition& t : s.transitions) {
    if (t.trigger == Trigger::kTimer) return true;
  }
  return false;
}
// Whether entering (exiting) a state runs anything: actions, invokes, `after` timers.
bool HasEntryCode(const ir::State& s) {
  return !s.body->entry.empty() || !s.invokes.empty() || HasTimers(s);
}
bool HasExitCode(const ir::State& s) {
  return !s.body->exit.empty() || !s.invokes.empty() || HasTimers(s);
}

// The kind of event a transition's trigger matches, for the fast path's tests.
const char* EventKind(Trigger t) {
  switch (t) {
    case Trigger::kEvent:
      return "kExternal";
    case Trigger::kTimer:
      return "kTimer";
    case Trigger::kDone:
      return "kDone";
    case Trigger::kError:
    case Trigger::kAlways:
      break;
  }
  return "kError";
}

// Whether a required parameter: no default, and not one that may be absent.
bool Required(const ast::Param& prm, const TypePtr& t) {
  return !prm.defaultValue && t->kind != K::kOptional && t->kind != K::kJson;
}

// Whether a saved context holds a value for a parameter or `var` of type `t`: a stored null is
// a value only of a type that holds null; of another (a `string?` made `string`) it reads as
// absent, so the default (or initializer) is taken, or a parameter without one is refused —
// the rule `jr2c diff` applies (docs/diff.md#the-rules).
std::string Present(const TypePtr& t, const std::string& name) {
  const std::string key = CppString(name);
  // (A `float` stays as before: a number that is not finite is written as null, and reads back
  // as 0.)
  return t->kind == K::kOptional || t->kind == K::kJson || t->kind == K::kNull ||
                 t->kind == K::kFloat
             ? "::jr2rt::FindField(context, " + key + ") != nullptr"
             : "::jr2rt::HasValue(context, " + key + ")";
}

// The definitions of one machine; `p` is the source's printer.
class MachineGen {
 public:
  MachineGen(const Context& cx, Printer& p, const ir::Machine& m)
      : cx_(cx),
        p_(p),
        m_(m),
        d_(*m.decl),
        cls_(ClassName(*m.decl)),
        name_(Ident(m.decl->name.text)),
        fast_(HasFastPath(cx, m)),
        expr_(cx) {
    for (const ir::State& s : m.states) {
      for (const ir::Transition& t : s.transitions) ts_.push_back(&t);
    }
    for (size_t i = 0; i < m.invokes.size(); ++i) invokeId_[m.invokes[i]] = static_cast<int>(i);
    for (const auto& prm : d_.params) {
      scope_.names[prm.name.text] = {"ctx_." + Ident(prm.name.text),
                                     cx.cpp(cx.typeOf(prm.type.get()))};
    }
    params_ = scope_;
    for (const auto& v : d_.vars) {
      scope_.names[v.name.text] = {"ctx_." + Ident(v.name.text), cx.cpp(cx.typeOf(v.type.get()))};
    }
  }

  void run() {
    DefineMachineTables(cx_, p_, m_, ts_, cls_);
    input();
    events();
    output();
    snapshot();
    guards();
    acts();
    entriesAndExits();
    if (fast_) dispatch();
    p_.emit(R"gen(
              std::unique_ptr<::jr2rt::Machine> Make_$name$() {
                return std::make_unique<$cls$>();
              }
            )gen",
            {{"name", name_}, {"cls", cls_}});
  }

 private:
  // readInput(), checkInput() and start(): the input and the parameters' defaults (the same
  // code for both), then the vars and the initial configuration.
  void input() {
    std::string paramNames;
    for (const auto& prm : d_.params)
      paramNames += (paramNames.empty() ? "" : ", ") + CppString(prm.name.text);
    const std::string root = CppString("input of " + d_.name.text);
    p_.emit(R"gen(

      void $cls$::readInput(const ::jr2rt::Json& input, [[maybe_unused]] Context& ctx) {
        ::jr2rt::CheckInputObject(input, $name$, false);
        ::jr2rt::CheckFields(input, $root$, {$names$});
        $params$
      }

      void $cls$::checkInput(const ::jr2rt::Json& input) const {
        Context scratch;
        readInput(input, scratch);
      }

      void $cls$::start(::jr2rt::MachineHost& host, const ::jr2rt::Json& input) {
        // start() reads leniently: a worker's input is made from an item, which may carry more
        // fields than the worker's records (checkInput is the strict check of a run's input).
        {
          ::jr2rt::LenientFields lenient;
          readInput(input, ctx_);
        }
        $vars$
        begin(host);$leaf$
      }
    )gen",
            {{"cls", cls_},
             {"name", CppString(d_.name.text)},
             {"root", root},
             {"names", paramNames},
             {"leaf", fast_ ? "\ntakeLeaf();" : ""},
             {"params",
              [&] {
                for (const auto& prm : d_.params) {
                  const TypePtr t = cx_.typeOf(prm.type.get());
                  if (prm.defaultValue) {
                    p_.print("ctx.$name$ = $value$;\n",
                             {{"name", Ident(prm.name.text)},
                              {"value", expr_.as(prm.defaultValue.get(), t, Scope{})}});
                  }
                  p_.print("::jr2rt::ReadField(input, $root$, $key$, ctx.$name$, $req$);\n",
                           {{"root", root},
                            {"key", CppString(prm.name.text)},
                            {"name", Ident(prm.name.text)},
                            {"req", Required(prm, t) ? "true" : "false"}});
                  CheckLiterals(p_, t, "ctx." + Ident(prm.name.text), root,
                                std::string(prm.name.text));
                }
              }},
             {"vars", [&] {
                for (const auto& v : d_.vars) {
                  p_.print("// from $from$\nctx_.$name$ = $value$;\n",
                           {{"from", cx_.from(v.range)},
                            {"name", Ident(v.name.text)},
                            {"value", expr_.as(v.init.get(), cx_.typeOf(v.type.get()), params_)}});
                }
              }}});
  }

  // eventId(), eventSpecs() and parsePayload(): the events by name, what a Gate lists, and the
  // payload read as its type when an answer is checked, which dispatch() then hands its action.
  void events() {
    const auto& events = m_.events;
    p_.emit(R"gen(

      int $cls$::eventId([[maybe_unused]] std::string_view name) const {
        $ids$
        return -1;
      }

      $table$
      std::vector<::jr2rt::EventSpec> $cls$::eventSpecs() const {
        $specs$
      }

      std::shared_ptr<const ::jr2rt::Payload> $cls$::parsePayload(
          [[maybe_unused]] int event, [[maybe_unused]] const ::jr2rt::Json& payload) const {
        switch (event) {
          $cases$
          default:
            return nullptr;
        }
      }
    )gen",
            {{"cls", cls_},
             {"ids",
              [&] {
                for (size_t i = 0; i < events.size(); ++i) {
                  p_.print("if (name == $name$) return $i$;\n",
                           {{"name", CppString(events[i]->name.text)}, {"i", std::to_string(i)}});
                }
              }},
             {"table",
              [&] {
                if (events.empty()) return;
                // Each event's fields, then the events, as constants (EventSpecRow).
                std::string rows;
                p_.print("namespace {\n\n", {});
                for (size_t i = 0; i < events.size(); ++i) {
                  const std::string fields = fmt::format("k_{}_fields_{}", cls_, i);
                  std::string decl;
                  rows += EventSpecRowOf(cx_, events[i], fields, &decl) + ",\n";
                  if (!decl.empty()) p_.print("$decl$\n", {{"decl", decl}});
                }
                p_.print("const ::jr2rt::EventSpecRow k_$cls$_events[] = {\n    $rows$};\n\n",
                         {{"cls", cls_}, {"rows", rows}});
                p_.print("}  // namespace\n\n", {});
              }},
             {"specs",
              [&] {
                if (events.empty()) {
                  p_.print("return {};\n", {});
                } else {
                  p_.print("return ::jr2rt::EventSpecs(k_$cls$_events, $n$);\n",
                           {{"cls", cls_}, {"n", std::to_string(events.size())}});
                }
              }},
             {"cases", [&] {
                for (size_t i = 0; i < events.size(); ++i) {
                  if (!cx_.hasStruct(events[i])) continue;
                  p_.emit(R"gen(
                            case $i$: {
                              $type$ value;
                              from_json(::jr2rt::OrEmptyObject(payload), value);
                              return std::make_shared<const ::jr2rt::TypedPayload<$type$>>(std::move(value));
                            }
                          )gen",
                          {{"i", std::to_string(i)}, {"type", cx_.structName(events[i])}});
                }
              }}});
  }

  void output() {
    if (d_.output && d_.outputExpr) {
      p_.emit(R"gen(

                ::jr2rt::JsonValue $cls$::output() const {
                  if (!isDone()) return nullptr;
                  // from $from$
                  return $value$;
                }
              )gen",
              {{"cls", cls_},
               {"from", cx_.from(d_.outputRange)},
               {"value", expr_.asJson(d_.outputExpr.get(), cx_.typeOf(d_.output.get()), scope_)}});
    } else {
      p_.print("\n::jr2rt::JsonValue $cls$::output() const { return nullptr; }\n", {{"cls", cls_}});
    }
  }

  // snapshot() / restore(). A field the snapshot lacks (it was saved by an older version of the
  // machine) gets what start() would give it: a parameter its default, a `var` its initial
  // value. A required parameter with no default cannot be made up: the restore is refused with
  // its name.
  void snapshot() {
    p_.emit(
        R"gen(

      ::jr2rt::JsonValue $cls$::snapshot() const {
        ::jr2rt::JsonValue context = ::jr2rt::EmptyObject();
        $save$
        return ::jr2rt::Object("machine", name(), "active", activeStates(), "done", isDone(),
                               "context", std::move(context));
      }

      void $cls$::restore(::jr2rt::MachineHost& host, const ::jr2rt::Json& snapshot) {
        ::jr2rt::LenientFields lenient;  // a snapshot may hold fields a record has lost
        [[maybe_unused]] const ::jr2rt::Json& context = ::jr2rt::FieldAt(snapshot, "context");
        $params$
        $vars$
        restoreActive(host, snapshot);$leaf$
      }
    )gen",
        {{"cls", cls_},
         {"leaf", fast_ ? "\ntakeLeaf();" : ""},
         {"save",
          [&] {
            for (const auto& prm : d_.params) {
              p_.print("::jr2rt::Put(::jr2rt::SetField(context.json(), $k$), ctx_.$n$);\n",
                       {{"k", CppString(prm.name.text)}, {"n", Ident(prm.name.text)}});
            }
            for (const auto& v : d_.vars) {
              p_.print("::jr2rt::Put(::jr2rt::SetField(context.json(), $k$), ctx_.$n$);\n",
                       {{"k", CppString(v.name.text)}, {"n", Ident(v.name.text)}});
            }
          }},
         {"params",
          [&] {
            for (const auto& prm : d_.params) {
              const TypePtr t = cx_.typeOf(prm.type.get());
              const Printer::Vars vars = {
                  {"k", CppString(prm.name.text)},
                  {"n", Ident(prm.name.text)},
                  {"default", prm.defaultValue ? expr_.as(prm.defaultValue.get(), t, Scope{}) : ""},
                  {"present", Present(t, std::string(prm.name.text))},
                  {"refusal",
                   CppString("the saved run of `" + d_.name.text +
                             "` has no value for the parameter `" + prm.name.text +
                             "`, which has no default; it was saved by a version of the "
                             "machine without it: give the parameter a default to restore "
                             "it")}};
              if (prm.defaultValue) {
                p_.emit(R"gen(
                          if ($present$) {
                            ::jr2rt::ReadField(context, "context", $k$, ctx_.$n$, false);
                          } else {
                            ctx_.$n$ = $default$;
                          }
                        )gen",
                        vars);
              } else if (Required(prm, t)) {
                p_.emit(R"gen(
                          if ($present$) {
                            ::jr2rt::ReadField(context, "context", $k$, ctx_.$n$, false);
                          } else {
                            throw ::jr2rt::NoLongerFits($refusal$);
                          }
                        )gen",
                        vars);
              } else {
                p_.print("::jr2rt::ReadField(context, \"context\", $k$, ctx_.$n$, false);\n", vars);
              }
              CheckLiterals(p_, t, "ctx_." + Ident(prm.name.text), "\"context\"",
                            std::string(prm.name.text));
            }
          }},
         {"vars", [&] {
            for (const auto& v : d_.vars) {
              const TypePtr t = cx_.typeOf(v.type.get());
              p_.emit(R"gen(
                        if ($present$) {
                          ::jr2rt::ReadField(context, "context", $k$, ctx_.$n$, false);
                        } else {  // from $from$
                          ctx_.$n$ = $value$;
                        }
                      )gen",
                      {{"k", CppString(v.name.text)},
                       {"n", Ident(v.name.text)},
                       {"present", Present(t, std::string(v.name.text))},
                       {"from", cx_.from(v.range)},
                       {"value", expr_.as(v.init.get(), t, params_)}});
              CheckLiterals(p_, t, "ctx_." + Ident(v.name.text), "\"context\"",
                            std::string(v.name.text));
            }
          }}});
  }

  // The scope of a transition's guard and actions: `event`, `done`, `error`, `as` names, each
  // bound by a prelude that reads it from the event (only when the code reads it).
  Scope transitionScope(const ir::Transition& t, std::string* prelude, bool forActions) const {
    Scope scope = scope_;
    const ast::Transition& a = *t.ast;
    auto reads = [&](const std::string& name) {
      if (!forActions) return ast::ReadsName(a.guard.get(), name);
      for (const auto& x : a.actions) {
        if (ast::ReadsName(x.value.get(), name) || ast::ReadsName(x.detail.get(), name))
          return true;
      }
      return false;
    };
    if (t.trigger == Trigger::kEvent) {
      if (t.event != nullptr && reads("event")) {
        const CppType type = cx_.hasStruct(t.event)
                                 ? CppType{CppType::Kind::kStruct, nullptr, cx_.structName(t.event)}
                                 : CppType::Of(CppType::Kind::kJson);
        // The payload as the check read it (Event::typed), or read here from the JSON.
        *prelude =
            fmt::format("[[maybe_unused]] const auto event_ = ::jr2rt::PayloadOf<{}>(event, {});\n",
                        type.spell(), cx_.where(a.event.range));
        scope.names["event"] = {"event_", type};
      }
      return scope;
    }
    if (t.trigger != Trigger::kDone && t.trigger != Trigger::kError) return scope;
    const bool done = t.trigger == Trigger::kDone;
    const Code value = {done ? "done_" : "error_", CppType::Of(CppType::Kind::kJson)};
    *prelude = done ? "[[maybe_unused]] const ::jr2rt::JsonValue done_ =\n"
                      "    ::jr2rt::Object(\"output\", event.data);\n"
                    : "[[maybe_unused]] const ::jr2rt::JsonValue error_ = event.data;\n";
    scope.names[done ? "done" : "error"] = value;
    // The invoke this transition hears may be read by its `as` name too.
    if (t.heard != nullptr && t.heard->as) scope.names[t.heard->as->text] = value;
    return scope;
  }

  void actions(const std::vector<ast::Action>& acts, const Scope& scope) {
    for (const auto& a : acts) {
      p_.print("// from $from$\n", {{"from", cx_.from(a.range)}});
      switch (a.kind) {
        case ast::Action::Kind::kAssign: {
          TypePtr t = cx_.info.types.json();
          for (const auto& v : d_.vars) {
            if (v.name.text == a.target.text) t = cx_.typeOf(v.type.get());
          }
          // A present value into an optional variable is assigned as itself (std::optional's
          // own assignment), not made an optional first: the temporary optional of a record
          // was most of a transition's code.
          const TypePtr vt = cx_.typeOf(a.value.get());
          if (t->kind == sema::Type::Kind::kOptional && vt->kind != sema::Type::Kind::kOptional &&
              vt->kind != sema::Type::Kind::kNull && vt->kind != sema::Type::Kind::kJson &&
              vt->kind != sema::Type::Kind::kError)
            t = t->elem;
          p_.print("ctx_.$name$ = $value$;\n",
                   {{"name", Ident(a.target.text)}, {"value", expr_.as(a.value.get(), t, scope)}});
          break;
        }
        case ast::Action::Kind::kFail:
          p_.print("throw ::jr2rt::Failure($reason$, $detail$);\n",
                   {{"reason", expr_.as(a.value.get(), cx_.info.types.string(), scope)},
                    {"detail", a.detail ? expr_.as(a.detail.get(), cx_.info.types.json(), scope)
                                        : "nullptr"}});
          break;
        case ast::Action::Kind::kLog:
          p_.print("host().log($value$);\n",
                   {{"value", expr_.as(a.value.get(), cx_.info.types.json(), scope)}});
          break;
      }
    }
  }

  // `case N: {  // from …` … `}` around what `body` prints, inside a switch.
  void transitionCase(size_t i, SourceRange from, const std::function<void()>& body) {
    p_.emit(R"gen(
              case $i$: {  // from $from$
                $body$
              }
            )gen",
            {{"i", std::to_string(i)}, {"from", cx_.from(from)}, {"body", body}});
  }

  void guards() {
    p_.emit(R"gen(

      bool $cls$::guard(int transition, [[maybe_unused]] const ::jr2rt::Event& event) {
        switch (transition) {
          $cases$
          default:
            return true;
        }
      }
    )gen",
            {{"cls", cls_},
             {"cases", [&] {
                for (size_t i = 0; i < ts_.size(); ++i) {
                  const ir::Transition& t = *ts_[i];
                  if (!t.ast->guard) continue;
                  transitionCase(i, t.ast->guard->range, [&] {
                    std::string prelude;
                    const Scope s = transitionScope(t, &prelude, false);
                    p_.raw(prelude);
                    p_.print("return $g$;\n",
                             {{"g", expr_.as(t.ast->guard.get(), cx_.info.types.boolean(), s)}});
                  });
                }
              }}});
  }

  void acts() {
    p_.emit(R"gen(

      void $cls$::act(int transition, [[maybe_unused]] const ::jr2rt::Event& event) {
        switch (transition) {
          $cases$
          default:
            break;
        }
      }
    )gen",
            {{"cls", cls_}, {"cases", [&] {
                               for (size_t i = 0; i < ts_.size(); ++i) {
                                 const ir::Transition& t = *ts_[i];
                                 if (t.ast->actions.empty()) continue;
                                 transitionCase(i, t.ast->range, [&] {
                                   std::string prelude;
                                   const Scope s = transitionScope(t, &prelude, true);
                                   p_.raw(prelude);
                                   actions(t.ast->actions, s);
                                   p_.print("break;\n");
                                 });
                               }
                             }}});
  }

  void invokeStart(const ast::Invoke& inv, const ir::State& s) {
    const InvokeShape shape = ShapeOf(inv);
    std::string input = "::jr2rt::EmptyObject()";
    if (inv.kind == ast::Invoke::Kind::kGate) {
      if (inv.object) input = expr_.as(inv.object.get(), cx_.info.types.json(), scope_);
    } else {
      const ast::Decl* d = inv.target.resolved;
      if (d && d->kind == ast::Decl::Kind::kAgent && inv.kind != ast::Invoke::Kind::kExtern) {
        if (inv.object) input = expr_.as(inv.object.get(), cx_.info.types.json(), scope_);
      } else {
        input = expr_.argsJson(inv.args, sema::ParamsOf(d), scope_);
      }
    }
    p_.emit(R"gen(
      // from $from$
      host().startInvoke({::jr2rt::InvokeSpec::Kind::$kind$, $id$, $target$, $name$, $path$,
                          $input$});
    )gen",
            {{"kind", shape.kind},
             {"id", std::to_string(invokeId_.at(&inv))},
             {"target", CppString(shape.target)},
             {"name", CppString(shape.name)},
             {"path", CppString(s.path)},
             {"input", input},
             {"from", cx_.from(inv.range)}});
  }

  // `case ID: {  // path` … `break; }` around what `body` prints.
  void stateCase(const ir::State& s, const std::function<void()>& body) {
    p_.emit(R"gen(
      case $i$: {  // $path$
        $body$
        break;
      }
    )gen",
            {{"i", std::to_string(s.id)},
             {"path", s.path.empty() ? "the root" : s.path},
             {"body", body}});
  }

  // enter() and exit(): a case for each state with code to run.
  void entriesAndExits() {
    p_.emit(
        R"gen(

      void $cls$::enter(int state) {
        switch (state) {
          $entries$
          default:
            break;
        }
      }

      void $cls$::exit(int state) {
        switch (state) {
          $exits$
          default:
            break;
        }
      }
    )gen",
        {{"cls", cls_},
         {"entries",
          [&] {
            for (const ir::State& s : m_.states) {
              if (!HasEntryCode(s)) continue;
              stateCase(s, [&] {
                for (const auto& block : s.body->entry) actions(block, scope_);
                for (const ast::Invoke* inv : s.invokes) invokeStart(*inv, s);
                for (const ir::Transition& t : s.transitions) {
                  if (t.trigger != Trigger::kTimer) continue;
                  p_.print("host().startTimer($id$, ::jr2rt::Duration{$ms$});  // from $from$\n",
                           {{"id", std::to_string(t.triggerId)},
                            {"ms", std::to_string(t.ast->delayMillis)},
                            {"from", cx_.from(t.ast->range)}});
                }
              });
            }
          }},
         {"exits", [&] {
            for (const ir::State& s : m_.states) {
              if (!HasExitCode(s)) continue;
              stateCase(s, [&] {
                for (const auto& block : s.body->exit) actions(block, scope_);
                for (const ir::Transition& t : s.transitions) {
                  if (t.trigger != Trigger::kTimer) continue;
                  p_.print("host().cancelTimer($id$);\n", {{"id", std::to_string(t.triggerId)}});
                }
                for (const ast::Invoke* inv : s.invokes) {
                  p_.print("host().cancelInvoke($id$);\n",
                           {{"id", std::to_string(invokeId_.at(inv))}});
                }
              });
            }
          }}});
  }

  // The fast path's dispatch(): for each leaf, its candidate transitions (the leaf's, then its
  // ancestors', each in document order), each with its exits and entries spelled out from the
  // sets ir::Build lowered (the tables hold the same). It takes exactly the steps the table
  // engine would (docs/semantics.md), without searching for them.
  void dispatch() {
    p_.emit(R"gen(

      bool $cls$::dispatch([[maybe_unused]] const ::jr2rt::Event& event) {
        switch (leaf_) {
          $leaves$
          default:  // done, or started with JR2_NO_FAST_PATH: the table engine answers
            return Statechart::dispatch(event);
        }
      }
    )gen",
            {{"cls", cls_}, {"leaves", [&] {
                               for (const ir::State& leaf : m_.states) {
                                 if (leaf.kind != ir::State::Kind::kAtomic &&
                                     leaf.kind != ir::State::Kind::kFinal)
                                   continue;
                                 if (leaf.id == 0) continue;
                                 p_.emit(R"gen(
      case $id$: {  // $path$
        $candidates$
        return false;
      }
    )gen",
                                         {{"id", std::to_string(leaf.id)},
                                          {"path", leaf.path},
                                          {"candidates", [&] { candidates(leaf); }}});
                               }
                             }}});
  }

  void candidates(const ir::State& leaf) {
    for (int st = leaf.id; st != -1; st = m_.states[st].parent) {
      for (size_t i = 0; i < ts_.size(); ++i) {
        const ir::Transition& t = *ts_[i];
        if (t.source != st || t.trigger == Trigger::kAlways) continue;
        std::string cond = fmt::format("event.kind == ::jr2rt::Event::Kind::{} && event.id == {}",
                                       EventKind(t.trigger), t.triggerId);
        if (t.ast->guard) cond += fmt::format(" && guard({}, event)", i);
        p_.emit(R"gen(
      // from $from$
      if ($cond$) {
        $steps$
        return true;
      }
    )gen",
                {{"cond", cond}, {"from", cx_.from(t.ast->range)}, {"steps", [&] {
                                                                      steps(leaf, t, i);
                                                                    }}});
      }
    }
  }

  // From this leaf, the active states of a transition's exit set are the leaf's chain below the
  // domain, exited deepest first; its entry set is entered in document order. Only states with
  // entry or exit code are called; the others are not touched: the flags follow leaf_.
  void steps(const ir::State& leaf, const ir::Transition& t, size_t i) {
    const std::string index = std::to_string(i);
    if (t.target == ir::kNoState) {
      if (!t.ast->actions.empty()) p_.print("act($i$, event);\n", {{"i", index}});
      return;
    }
    for (auto x = t.exits.rbegin(); x != t.exits.rend(); ++x) {
      if (!m_.contains(*x, leaf.id)) continue;
      if (HasExitCode(m_.states[*x])) p_.print("exit($x$);\n", {{"x", std::to_string(*x)}});
    }
    if (!t.ast->actions.empty()) p_.print("act($i$, event);\n", {{"i", index}});
    for (int x : t.entries) {
      if (HasEntryCode(m_.states[x])) p_.print("enter($x$);\n", {{"x", std::to_string(x)}});
    }
    // The new configuration is the last state entered and its ancestors: the flags follow.
    const int last = t.entries.back();
    p_.print("leaf_ = $x$;\n", {{"x", std::to_string(last)}});
    if (m_.states[last].kind == ir::State::Kind::kFinal && m_.states[last].parent == 0)
      p_.print("markDone();\n");
  }

  const Context& cx_;
  Printer& p_;
  const ir::Machine& m_;
  const ast::MachineDecl& d_;
  const std::string cls_;
  const std::string name_;
  const bool fast_;
  const ExprGen expr_;
  std::vector<const ir::Transition*> ts_;  // the machine's transitions, in table order
  std::map<const ast::Invoke*, int> invokeId_;
  Scope scope_;   // the parameters and the vars
  Scope params_;  // the parameters alone: what a var's initial value reads
};

}  // namespace

namespace {
// An event's audience as EventSpec::Audience spells it.
const char* AudienceName(ast::Audience a) {
  return a == ast::Audience::kAgent      ? "kAgent"
         : a == ast::Audience::kExternal ? "kExternal"
         : a == ast::Audience::kAny      ? "kAny"
                                         : "kUnset";
}
}  // namespace

std::string EventSpecOf(const Context& cx, const ast::Decl* ev) {
  const auto* e = llvm::cast<ast::EventDecl>(ev);
  const char* audience = AudienceName(e->audience);
  // One line for the name and the audience, one for the description, one for each field.
  std::string fields;
  const sema::Record& r = *cx.info.declTypes.at(ev)->record;
  for (size_t i = 0; i < r.fields.size(); ++i) {
    fields += fmt::format("{}{{{}, {}, {}, {}}}", i == 0 ? "" : ",\n     ",
                          CppString(r.fields[i].name), CppString(sema::Spell(r.fields[i].type)),
                          r.fields[i].required ? "true" : "false",
                          CppString(e->fields[i].description.value_or("")));
  }
  // Then the payload's JSON Schema (sema::JsonSchema), for an Agent's Menu.
  return fmt::format("{{{}, ::jr2rt::EventSpec::Audience::{},\n    {},\n    {{{}}},\n    {}}}",
                     CppString(e->name.text), audience, CppString(e->description.value_or("")),
                     fields, CppString(sema::JsonSchema(r, e->description.value_or(""))));
}

std::string EventSpecRowOf(const Context& cx, const ast::Decl* ev, const std::string& fieldsName,
                           std::string* decl) {
  const auto* e = llvm::cast<ast::EventDecl>(ev);
  const char* audience = AudienceName(e->audience);
  const sema::Record& r = *cx.info.declTypes.at(ev)->record;
  if (!r.fields.empty()) {
    *decl = fmt::format("const ::jr2rt::EventFieldRow {}[] = {{\n", fieldsName);
    for (size_t i = 0; i < r.fields.size(); ++i) {
      *decl += fmt::format("    {{{}, {}, {}, {}}},\n", CppString(r.fields[i].name),
                           CppString(sema::Spell(r.fields[i].type)),
                           r.fields[i].required ? "true" : "false",
                           CppString(e->fields[i].description.value_or("")));
    }
    *decl += "};\n";
  }
  return fmt::format("{{{}, ::jr2rt::EventSpec::Audience::{},\n    {},\n    {}, {},\n    {}}}",
                     CppString(e->name.text), audience, CppString(e->description.value_or("")),
                     r.fields.empty() ? "nullptr" : fieldsName, r.fields.size(),
                     CppString(sema::JsonSchema(r, e->description.value_or(""))));
}

void DeclareMachine(const Context& cx, Printer& p, const ir::Machine& m) {
  const auto& d = *m.decl;
  const bool fast = HasFastPath(cx, m);
  p.emit(R"gen(

    // from $from$
    class $cls$ final : public ::jr2rt::Statechart {
     public:
      // The machine's context: its parameters and its `var`s.
      struct Context {
        $context$
      };

      $cls$();
      const char* name() const override { return $name$; }
      void start(::jr2rt::MachineHost& host, const ::jr2rt::Json& input) override;
      void checkInput(const ::jr2rt::Json& input) const override;
      int eventId(std::string_view name) const override;
      std::vector<::jr2rt::EventSpec> eventSpecs() const override;
      std::shared_ptr<const ::jr2rt::Payload> parsePayload(
          int event, const ::jr2rt::Json& payload) const override;
      ::jr2rt::JsonValue output() const override;
      ::jr2rt::JsonValue snapshot() const override;
      void restore(::jr2rt::MachineHost& host, const ::jr2rt::Json& snapshot) override;
      const Context& context() const { return ctx_; }
      $fast$

     protected:
      bool guard(int transition, const ::jr2rt::Event& event) override;
      void act(int transition, const ::jr2rt::Event& event) override;
      void enter(int state) override;
      void exit(int state) override;

     private:
      // The input into the parameters, with their defaults: start()'s and checkInput()'s.
      static void readInput(const ::jr2rt::Json& input, Context& ctx);

      Context ctx_;
    };

    std::unique_ptr<::jr2rt::Machine> Make_$ident$();
  )gen",
         {{"from", cx.from(d.name.range)},
          {"cls", ClassName(d)},
          {"name", CppString(d.name.text)},
          {"ident", Ident(d.name.text)},
          {"context",
           [&] {
             for (const auto& prm : d.params) {
               p.print("$type$ $name${};\n", {{"type", cx.cpp(cx.typeOf(prm.type.get())).spell()},
                                              {"name", Ident(prm.name.text)}});
             }
             for (const auto& v : d.vars) {
               p.print("$type$ $name${};\n", {{"type", cx.cpp(cx.typeOf(v.type.get())).spell()},
                                              {"name", Ident(v.name.text)}});
             }
           }},
          {"fast", [&] {
             if (!fast) return;
             p.print(
                 "// The generated fast path: a switch over the active leaf (see the .cpp).\n"
                 "bool dispatch(const ::jr2rt::Event& event) override;\n");
           }}});
}

void DefineMachine(const Context& cx, Printer& p, const ir::Machine& m) {
  MachineGen(cx, p, m).run();
}

}  // namespace jr2::codegen
