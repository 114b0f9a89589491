// A pool: `const PoolSpec& <name>_pool()` in the header; in the source, the functions its spec
// calls (its input's check, its Source's arguments, hooks, wake check and items, the item's id,
// the cap, the worker's input), each a named function in `namespace <name>_pool_fns`, and the
// spec that points at them. Their names end in `_`, as the generated code's own names do
// (`ctx_`, `leaf_`), so a record the code names is not hidden by one of them.

#include <fmt/format.h>
#include <llvm/Support/Casting.h>

#include "compiler/codegen/generators.h"
#include "compiler/sema/rules.h"

namespace jr2::codegen {

using sema::TypePtr;
using K = sema::Type::Kind;

namespace {

const char* VerdictName(ast::Hook::Verdict v) {
  switch (v) {
    case ast::Hook::Verdict::kCarry:
      return "kCarry";
    case ast::Hook::Verdict::kSkip:
      return "kSkip";
    case ast::Hook::Verdict::kReread:
      break;
  }
  return "kReread";
}

const char* FormName(ast::SourceDecl::Form f) {
  if (f == ast::SourceDecl::Form::kRead) return "kRead";
  if (f == ast::SourceDecl::Form::kPush) return "kPush";
  return "kNext";
}

class PoolGen {
 public:
  PoolGen(const Context& cx, Printer& p, const ast::PoolDecl& pool)
      : cx_(cx),
        p_(p),
        pool_(pool),
        name_(Ident(pool.name.text)),
        fns_(Ident(pool.name.text) + "_pool_fns"),
        source_(llvm::dyn_cast_or_null<ast::SourceDecl>(pool.sourceRef.resolved)),
        expr_(cx) {
    withInput_.names["input"] = {"input", CppType::Of(CppType::Kind::kJson)};
    withItem_ = withInput_;
    withItem_.names["item"] = {"item", CppType::Of(CppType::Kind::kJson)};
  }

  void run() {
    p_.emit(R"gen(

      // ---- pool $jr2name$ (from $from$) ----

      namespace $fns$ {

      $functions$
      }  // namespace $fns$

      const ::jr2rt::PoolSpec& $name$_pool() {
        static const ::jr2rt::PoolSpec spec = [] {
          ::jr2rt::PoolSpec s;
          $fields$
          return s;
        }();
        return spec;
      }
    )gen",
            {{"jr2name", pool_.name.text},
             {"from", cx_.from(pool_.name.range)},
             {"fns", fns_},
             {"name", name_},
             {"functions", [&] { functions(); }},
             {"fields", [&] { fields(); }}});
  }

 private:
  // The spec's fields: plain values, and pointers to the functions.
  void fields() {
    const auto* standing = llvm::dyn_cast_or_null<ast::BoolLit>(pool_.standing.get());
    p_.emit(R"gen(
              s.name = $name$;
              s.worker = $worker$;
              s.dispatch = $dispatch$;
              s.standing = $standing$;
              s.reportFailures = $report$;
            )gen",
            {{"name", CppString(pool_.name.text)},
             {"worker", CppString(pool_.worker.target.str())},
             {"dispatch", pool_.worker.dispatch ? "true" : "false"},
             {"standing", standing && standing->value ? "true" : "false"},
             {"report", pool_.failures == ast::PoolDecl::Failures::kReport ? "true" : "false"}});
    const ast::Decl* w = pool_.worker.target.resolved;
    if (!pool_.worker.dispatch && w != nullptr && w->kind == ast::Decl::Kind::kMachine) {
      p_.print("s.makeWorker = &$prefix$Make_$name$;\n",
               {{"prefix", cx_.prefixOf(w)}, {"name", Ident(w->name.text)}});
    }
    fn("s.parseInput", "parse_input_");
    if (source_ != nullptr) {
      p_.print("s.source.name = $n$;\ns.source.form = ::jr2rt::SourceSpec::Form::$f$;\n",
               {{"n", CppString(source_->name.text)}, {"f", FormName(source_->form)}});
      if (source_->call) {
        p_.print("s.source.function = $f$;\n", {{"f", CppString(source_->call->function.str())}});
      }
      if (const ast::Decl* wake = source_->wake ? source_->wake->resolved : nullptr) {
        p_.print("s.source.wake = $w$;\ns.source.wakeSpec = $spec$;\n",
                 {{"w", CppString(wake->name.text)}, {"spec", EventSpecOf(cx_, wake)}});
        fn("s.source.checkWake", "check_wake_");
      }
      if (const auto* d = llvm::dyn_cast_or_null<ast::DurationLit>(source_->pollEvery.get()))
        p_.print("s.source.pollEveryMs = $ms$;\n", {{"ms", std::to_string(d->millis)}});
      if (const auto* h = llvm::dyn_cast_or_null<ast::IntLit>(source_->hold.get()))
        p_.print("s.source.hold = $h$;\n", {{"h", std::to_string(h->value)}});
      fn("s.source.args", "source_args_");
      fn("s.source.params", "source_params_");
      for (size_t i = 0; i < source_->hooks.size(); ++i) {
        const ast::Hook& h = source_->hooks[i];
        p_.emit(R"gen(
                  s.source.hooks.push_back({$svc$, $key$, ::jr2rt::HookSpec::Verdict::$v$,
                                            &$fns$::hook$i$_});  // from $from$
                )gen",
                {{"svc", CppString(h.service.text)},
                 {"key", CppString(h.eventKey)},
                 {"v", VerdictName(h.verdict)},
                 {"fns", fns_},
                 {"i", std::to_string(i)},
                 {"from", cx_.from(h.range)}});
      }
      if (source_->items) fn("s.source.items", "items_");
    }
    if (pool_.itemId) fn("s.itemId", "item_id_");
    if (pool_.cap) fn("s.cap", "cap_");
    fn("s.itemInput", "item_input_");
  }

  void fn(const std::string& field, const char* function) {
    p_.print("$field$ = &$fns$::$fn$;\n", {{"field", field}, {"fns", fns_}, {"fn", function}});
  }

  // The functions, in the order the fields name them.
  void functions() {
    parseInput();
    if (source_ != nullptr) sourceFunctions();
    if (pool_.itemId) {
      p_.emit(R"gen(
        std::string item_id_(
            [[maybe_unused]] const ::jr2rt::Json& item, [[maybe_unused]] const ::jr2rt::Json& input) {
          // from $from$
          return $v$;
        }

      )gen",
              {{"v", expr_.as(pool_.itemId.get(), cx_.info.types.string(), withItem_)},
               {"from", cx_.from(pool_.itemId->range)}});
    }
    if (pool_.cap) {
      p_.emit(R"gen(
                int64_t cap_([[maybe_unused]] const ::jr2rt::Json& input) {
                  // from $from$
                  return $v$;
                }

              )gen",
              {{"v", expr_.as(pool_.cap.get(), cx_.info.types.integer(), withInput_)},
               {"from", cx_.from(pool_.cap->range)}});
    }
    p_.emit(R"gen(
      ::jr2rt::JsonValue item_input_(
          [[maybe_unused]] ::jr2rt::JsonValue item, [[maybe_unused]] const ::jr2rt::Json& input) {
        return ::jr2rt::ToJson($v$);
      }
    )gen",
            {{"v", itemInput()}});
  }

  // The pool's input: its parameters, with their defaults. Under StrictFields, a field no
  // parameter has is refused; a null takes the default.
  void parseInput() {
    std::string paramNames;
    for (const auto& prm : pool_.params)
      paramNames += (paramNames.empty() ? "" : ", ") + CppString(prm.name.text);
    const std::string root = CppString("input of " + pool_.name.text);
    p_.emit(R"gen(
      ::jr2rt::JsonValue parse_input_(const ::jr2rt::Json& given) {
        ::jr2rt::CheckInputObject(given, $name$, true);
        ::jr2rt::JsonValue input =
            ::jr2rt::IsNull(given) ? ::jr2rt::EmptyObject() : ::jr2rt::JsonValue(given);
        ::jr2rt::CheckFields(input, $root$, {$names$});
        $params$
        return input;
      }

    )gen",
            {{"name", CppString(pool_.name.text)},
             {"root", root},
             {"names", paramNames},
             {"params", [&] {
                for (const auto& prm : pool_.params) {
                  const TypePtr t = cx_.typeOf(prm.type.get());
                  const std::string key = CppString(prm.name.text);
                  if (prm.defaultValue) {
                    p_.print(
                        "if (!::jr2rt::HasValue(input, $k$)) {\n"
                        "  ::jr2rt::Put(::jr2rt::SetField(input.json(), $k$), $v$);\n}\n",
                        {{"k", key}, {"v", expr_.asJson(prm.defaultValue.get(), t, Scope{})}});
                  }
                  const bool required =
                      !prm.defaultValue && t->kind != K::kOptional && t->kind != K::kJson;
                  const TypePtr plain = t->kind == K::kOptional ? t->elem : t;
                  if (plain == nullptr || plain->kind != K::kLiterals) {
                    // Checked, not kept: a `list<json>` of 100,000 items is not copied (#33).
                    p_.print("::jr2rt::CheckField<$type$>(input, $root$, $k$, $req$);\n",
                             {{"type", cx_.cpp(t).spell()},
                              {"root", root},
                              {"k", key},
                              {"req", required ? "true" : "false"}});
                    continue;
                  }
                  p_.emit(R"gen(
                            {
                              $type$ check{};
                              ::jr2rt::ReadField(input, $root$, $k$, check, $req$);
                              $literals$
                            }
                          )gen",
                          {{"type", cx_.cpp(t).spell()},
                           {"root", root},
                           {"k", key},
                           {"req", required ? "true" : "false"},
                           {"literals", [&] {
                              CheckLiterals(p_, t, "check", root, std::string(prm.name.text));
                            }}});
                }
              }}});
  }

  // The Source's arguments: the pool's `source: NAME(ARGS)`, bound to the Source's parameters,
  // then the Source's call arguments over those parameters; its own arguments; its hooks (each
  // value reads `payload` and the Source's parameters); the check of its wake event's payload;
  // the items of a read Source's answer.
  void sourceFunctions() {
    std::string poolArgs = "::jr2rt::EmptyObject()";
    if (const auto* call = llvm::dyn_cast_or_null<ast::CallExpr>(pool_.source.get()))
      poolArgs = expr_.argsJson(call->args, &source_->params, withInput_);
    Scope params;
    for (const auto& prm : source_->params) {
      params.names[prm.name.text] = {
          fmt::format("::jr2rt::Member(source_, {}, {})", CppString(prm.name.text),
                      cx_.where(prm.name.range)),
          CppType::Of(CppType::Kind::kJson)};
    }
    const std::string callArgs =
        source_->call ? expr_.argsJson(source_->call->args,
                                       sema::ParamsOf(source_->call->function.resolved), params)
                      : "::jr2rt::EmptyObject()";
    p_.emit(R"gen(
              ::jr2rt::JsonValue source_params_([[maybe_unused]] const ::jr2rt::Json& input) {
                return $pool$;
              }

              ::jr2rt::JsonValue source_args_([[maybe_unused]] const ::jr2rt::Json& input) {
                [[maybe_unused]] const ::jr2rt::JsonValue source_ = source_params_(input);
                return $call$;
              }

            )gen",
            {{"pool", poolArgs}, {"call", callArgs}});
    for (size_t i = 0; i < source_->hooks.size(); ++i) {
      const ast::Hook& h = source_->hooks[i];
      Scope hookScope = params;
      hookScope.names["payload"] = {"payload", CppType::Of(CppType::Kind::kJson)};
      std::string value = "nullptr";
      if (h.value) {
        const TypePtr want = h.verdict == ast::Hook::Verdict::kSkip ? cx_.info.types.string()
                                                                    : cx_.info.types.json();
        value = fmt::format("::jr2rt::ToJson({})", expr_.as(h.value.get(), want, hookScope));
      }
      p_.emit(R"gen(
        // from $from$: on $svc$ `$key$`
        ::jr2rt::JsonValue hook$i$_(
            [[maybe_unused]] const ::jr2rt::Json& payload, [[maybe_unused]] const ::jr2rt::Json& source_) {
          return $value$;
        }

      )gen",
              {{"i", std::to_string(i)},
               {"svc", CommentText(h.service.text)},
               {"key", CommentText(h.eventKey)},
               {"value", value},
               {"from", cx_.from(h.range)}});
    }
    if (const ast::Decl* wake = source_->wake ? source_->wake->resolved : nullptr) {
      // Like a machine's checkPayload; std's events are plain JSON and take any object.
      if (cx_.hasStruct(wake)) {
        p_.emit(R"gen(
                  void check_wake_(const ::jr2rt::Json& payload) {
                    $type$ parsed;
                    from_json(::jr2rt::OrEmptyObject(payload), parsed);
                  }

                )gen",
                {{"type", cx_.structName(wake)}});
      } else {
        p_.emit(R"gen(
                  void check_wake_(const ::jr2rt::Json& payload) {
                    if (!::jr2rt::IsNull(payload) && !::jr2rt::IsObject(payload)) {
                      throw ::jr2rt::SchemaError("payload", $msg$);
                    }
                  }

                )gen",
                {{"msg", CppString("`event " + wake->name.text + "` must be an object")}});
      }
    }
    if (source_->items) {
      Scope answer;
      answer.names["answer"] = {"answer", CppType::Of(CppType::Kind::kJson)};
      p_.emit(R"gen(
        ::jr2rt::JsonValue items_(const ::jr2rt::Json& answer) {
          return ::jr2rt::ToJson($v$);
        }

      )gen",
              {{"v", expr_.as(source_->items.get(), cx_.info.types.json(), answer)}});
    }
  }

  // The worker's input from an item: a dispatch's `input`, the pool's `item_input`, the item
  // bound to the one parameter sema chose (sema::BoundParam), or else the item itself.
  std::string itemInput() const {
    const sema::Types& types = cx_.info.types;
    if (pool_.worker.dispatch && pool_.worker.dispatchSpec) {
      for (const auto& e : pool_.worker.dispatchSpec->entries) {
        if (e.key.text == "input") return expr_.as(e.value.get(), types.json(), withItem_);
      }
      return "std::move(item)";
    }
    if (pool_.itemInput) return expr_.as(pool_.itemInput.get(), types.json(), withItem_);
    // The item whole: moved, since the Pool hands it over (PoolSpec::itemInput).
    if (auto it = cx_.info.boundParams.find(&pool_); it != cx_.info.boundParams.end())
      return fmt::format("::jr2rt::Object({}, std::move(item))", CppString(it->second->name.text));
    return "std::move(item)";
  }

  const Context& cx_;
  Printer& p_;
  const ast::PoolDecl& pool_;
  const std::string name_;
  const std::string fns_;
  const ast::SourceDecl* source_;
  const ExprGen expr_;
  Scope withInput_;
  Scope withItem_;
};

}  // namespace

void DeclarePool(const Context& cx, Printer& p, const ast::PoolDecl& pool) {
  p.print("\n// from $from$\nconst ::jr2rt::PoolSpec& $name$_pool();\n",
          {{"from", cx.from(pool.name.range)}, {"name", Ident(pool.name.text)}});
}

void DefinePool(const Context& cx, Printer& p, const ast::PoolDecl& pool) {
  PoolGen(cx, p, pool).run();
}

}  // namespace jr2::codegen
