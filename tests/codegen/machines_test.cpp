// Generated machines on the runtime's engine, driven by a scripted host: the code jr2c writes for
// the samples does what their `.jr2` says.
#include <gtest/gtest.h>

#include "alert_triage.jr2.h"
#include "build_matrix.jr2.h"
#include "finish.jr2.h"
#include "tickets.jr2.h"
#include "wide.jr2.h"

namespace {

using jr2rt::Event;
using jr2rt::Json;

// Records what a machine asks of its run.
struct ScriptedHost : jr2rt::MachineHost {
  std::map<int, jr2rt::Duration> timers;
  std::map<int, jr2rt::InvokeSpec> invokes;
  std::vector<int> cancelledInvokes;
  std::vector<Json> logs;
  void startTimer(int id, jr2rt::Duration after) override { timers[id] = after; }
  void cancelTimer(int id) override { timers.erase(id); }
  void startInvoke(const jr2rt::InvokeSpec& spec) override { invokes[spec.id] = spec; }
  void cancelInvoke(int id) override {
    invokes.erase(id);
    cancelledInvokes.push_back(id);
  }
  void log(const Json& value) override { logs.push_back(value); }
};

Event External(const jr2rt::Machine& m, const char* name, Json data = Json::object()) {
  return {Event::Kind::kExternal, m.eventId(name), std::move(data)};
}

const Json kTicket = {{"id", "T-1"}, {"title", "Trim the name."}, {"needs", Json::array()}};

TEST(TicketsReview, WaitsAtItsGateThenApproves) {
  ScriptedHost host;
  auto m = jr2gen::tickets::Make_review();
  m->start(host, {{"ticket", kTicket}});
  EXPECT_EQ(m->activeStates(), std::vector<std::string>{"review"});
  ASSERT_EQ(host.invokes.size(), 1u);
  const auto& gate = host.invokes.begin()->second;
  EXPECT_EQ(gate.kind, jr2rt::InvokeSpec::Kind::kGate);
  EXPECT_EQ(gate.statePath, "review");
  EXPECT_EQ(gate.input, (Json{{"title", "Trim the name."}}));
  EXPECT_FALSE(m->isDone());
  EXPECT_TRUE(m->dispatch(External(*m, "approve")));
  EXPECT_TRUE(m->isDone());
  EXPECT_EQ(m->activeStates(), std::vector<std::string>{"decided"});
  EXPECT_TRUE(host.invokes.empty()) << "leaving `review` cancels its Gate";
  EXPECT_EQ(m->output(), (Json{{"id", "T-1"}, {"outcome", "approved"}, {"reason", nullptr}}));
  // Done, it has no leaf to switch on: the event goes to the table engine, which refuses it,
  // and the final configuration stays as it was.
  EXPECT_FALSE(m->dispatch(External(*m, "reject"))) << "a done machine takes no event";
  EXPECT_EQ(m->activeStates(), std::vector<std::string>{"decided"});
}

TEST(TicketsReview, RejectCarriesTheReason) {
  ScriptedHost host;
  auto m = jr2gen::tickets::Make_review();
  m->start(host, {{"ticket", kTicket}});
  m->dispatch(External(*m, "reject", {{"reason", "Not now."}}));
  EXPECT_EQ(m->output()["outcome"], "rejected");
  EXPECT_EQ(m->output()["reason"], "Not now.");
}

TEST(TicketsReview, RefusesABadInputAndABadPayload) {
  ScriptedHost host;
  auto m = jr2gen::tickets::Make_review();
  try {
    m->start(host, {{"ticket", {{"id", "T-1"}}}});
    FAIL() << "a ticket without a title must be refused";
  } catch (const jr2rt::SchemaError& e) {
    EXPECT_NE(std::string(e.what()).find("`input of review.ticket` needs the field `title`"),
              std::string::npos)
        << e.what();
  }
  auto n = jr2gen::tickets::Make_review();
  n->start(host, {{"ticket", kTicket}});
  EXPECT_THROW(n->dispatch(External(*n, "reject", Json::object())), jr2rt::Defect)
      << "`reject` needs its `reason`";
  EXPECT_EQ(n->eventId("no_such_event"), -1);
}

TEST(TicketsReview, SnapshotAndRestoreInANewInstance) {
  ScriptedHost host;
  auto m = jr2gen::tickets::Make_review();
  m->start(host, {{"ticket", kTicket}});
  const Json snap = m->snapshot();
  EXPECT_EQ(snap["active"], Json::array({"review"}));
  EXPECT_EQ(snap["context"]["ticket"]["id"], "T-1");
  auto restored = jr2gen::tickets::Make_review();
  ScriptedHost other;
  restored->restore(other, snap);
  EXPECT_EQ(restored->activeStates(), std::vector<std::string>{"review"});
  restored->dispatch(External(*restored, "approve"));
  EXPECT_EQ(restored->output()["id"], "T-1");
  EXPECT_EQ(restored->snapshot()["done"], true);
}

const Json kPackage = {{"package", {{"id", "core"}, {"path", "libs/core"}}}};

// The one invoke live now: the step the worker runs.
jr2rt::InvokeSpec Step(const ScriptedHost& host) {
  EXPECT_EQ(host.invokes.size(), 1u);
  return host.invokes.begin()->second;
}

// The step ends with exit 0 and `stdout`.
void StepDone(jr2rt::Machine& m, const ScriptedHost& host, const std::string& out = "") {
  m.dispatch(
      {Event::Kind::kDone, Step(host).id, Json{{"exit", 0}, {"stdout", out}, {"stderr", ""}}});
}

TEST(BuildMatrix, ConfiguresBuildsTestsAndInstalls) {
  ScriptedHost host;
  auto m = jr2gen::build_matrix::Make_build_package();
  m->start(host, kPackage);
  EXPECT_EQ(m->activeStates(), (std::vector<std::string>{"work", "work.configure"}));
  EXPECT_EQ(host.timers.size(), 1u) << "the 90-minute limit of `work` runs";
  const auto configure = Step(host);
  EXPECT_EQ(configure.kind, jr2rt::InvokeSpec::Kind::kStd);
  EXPECT_EQ(configure.target, "std.command");
  EXPECT_EQ(configure.input["spec"]["argv"],
            Json::array({"cmake", "-S", ".", "-B", "build", "-DCMAKE_BUILD_TYPE=Release"}));
  EXPECT_EQ(configure.input["spec"]["cwd"], "libs/core");
  StepDone(*m, host);
  EXPECT_EQ(m->activeStates(), (std::vector<std::string>{"work", "work.build"}));
  EXPECT_EQ(Step(host).input["spec"]["argv"],
            Json::array({"cmake", "--build", "build", "--config", "Release"}));
  EXPECT_EQ(Step(host).input["spec"]["timeout"], 20 * 60 * 1000);
  StepDone(*m, host);
  EXPECT_EQ(m->activeStates(), (std::vector<std::string>{"work", "work.test"}));
  EXPECT_EQ(Step(host).input["spec"]["argv"][0], "ctest");
  StepDone(*m, host, "100% passed");
  EXPECT_EQ(m->activeStates(), (std::vector<std::string>{"work", "work.install"}));
  EXPECT_EQ(Step(host).input["spec"]["argv"],
            Json::array({"cmake", "--install", "build", "--config", "Release"}));
  StepDone(*m, host);
  EXPECT_TRUE(m->isDone());
  EXPECT_EQ(m->output(), (Json{{"id", "core"}, {"attempts", 1}, {"tests", "100% passed"}}));
  EXPECT_TRUE(host.timers.empty()) << "leaving `work` cancels its timer";
}

TEST(BuildMatrix, APackageThatDoesNotConfigureFailsAtOnce) {
  ScriptedHost host;
  auto m = jr2gen::build_matrix::Make_build_package();
  m->start(host, kPackage);
  try {
    m->dispatch(
        {Event::Kind::kError, Step(host).id, Json{{"reason", "exit 1"}, {"detail", nullptr}}});
    FAIL() << "a configure error fails the machine, with no retry";
  } catch (const jr2rt::Failure& f) {
    EXPECT_EQ(f.reason(), "`core` does not configure: exit 1");
  }
}

TEST(BuildMatrix, RetriesAfterACoolDownThenFails) {
  ScriptedHost host;
  auto m = jr2gen::build_matrix::Make_build_package();
  m->start(host, kPackage);
  StepDone(*m, host);  // configured
  const int build = Step(host).id;
  m->dispatch({Event::Kind::kError, build, Json{{"reason", "exit 2"}, {"detail", nullptr}}});
  EXPECT_EQ(m->activeStates(), (std::vector<std::string>{"work", "work.cool_down"}));
  ASSERT_EQ(host.logs.size(), 1u);
  EXPECT_EQ(host.logs[0], "`core` failed to build (exit 2); trying again");
  // The cool-down's own timer: the one that is not the 90-minute limit.
  int coolDown = -1;
  for (const auto& [id, d] : host.timers) {
    if (d.ms == 30000) coolDown = id;
  }
  ASSERT_NE(coolDown, -1);
  m->dispatch({Event::Kind::kTimer, coolDown, nullptr});
  EXPECT_EQ(m->activeStates(), (std::vector<std::string>{"work", "work.build"}));
  try {
    m->dispatch({Event::Kind::kError, Step(host).id,
                 Json{{"reason", "exit 2"}, {"detail", {{"log", "…"}}}}});
    FAIL() << "the second failure fails the machine";
  } catch (const jr2rt::Failure& f) {
    EXPECT_EQ(f.reason(), "`core` does not build: exit 2");
    EXPECT_EQ(f.detail(), (Json{{"log", "…"}}));
  }
}

TEST(BuildMatrix, TheTimeLimitFailsTheMachine) {
  ScriptedHost host;
  auto m = jr2gen::build_matrix::Make_build_package();
  m->start(host, kPackage);
  int limit = -1;
  for (const auto& [id, d] : host.timers) {
    if (d.ms == 90 * 60 * 1000) limit = id;
  }
  ASSERT_NE(limit, -1);
  EXPECT_THROW(m->dispatch({Event::Kind::kTimer, limit, nullptr}), jr2rt::Failure);
}

// A run saved by an older version of the machine lacks the fields added since: restore gives
// each what start() would (a parameter its default, a `var` its initial value), keeps what the
// snapshot holds (null included), and refuses a required parameter it cannot make up.
TEST(BuildMatrix, RestoreFillsFieldsAnOlderSnapshotLacks) {
  ScriptedHost host;
  auto m = jr2gen::build_matrix::Make_build_package();
  Json input = kPackage;
  input["profile"] = "Debug";
  input["retries"] = 3;
  m->start(host, input);
  StepDone(*m, host);  // configured
  const int build = Step(host).id;
  m->dispatch({Event::Kind::kError, build, Json{{"reason", "exit 2"}, {"detail", nullptr}}});
  Json snap = m->snapshot();
  ASSERT_EQ(snap["context"]["attempts"], 1);
  snap["context"].erase("retries");
  snap["context"].erase("tests");
  {
    auto restored = jr2gen::build_matrix::Make_build_package();
    ScriptedHost other;
    restored->restore(other, snap);
    const Json context = restored->snapshot()["context"];
    EXPECT_EQ(context["retries"], 1) << "the parameter's default";
    EXPECT_EQ(context["tests"], "") << "the var's initial value";
    EXPECT_EQ(context["profile"], "Debug") << "what the snapshot holds is kept";
    EXPECT_EQ(context["attempts"], 1) << "not reset to its initial value";
    EXPECT_EQ(restored->activeStates(), (std::vector<std::string>{"work", "work.cool_down"}));
  }
  snap["context"].erase("package");
  auto restored = jr2gen::build_matrix::Make_build_package();
  ScriptedHost other;
  try {
    restored->restore(other, snap);
    FAIL() << "a required parameter with no default cannot be restored";
  } catch (const jr2rt::NoLongerFits& e) {
    EXPECT_NE(std::string(e.what()).find("no value for the parameter `package`"), std::string::npos)
        << e.what();
  }
}

TEST(Registration, RegistersWorkflowsPoolsAndMachines) {
  jr2rt::Registry r;
  jr2gen::tickets::RegisterWorkflows(r);
  const auto* wf = r.workflow("tickets");
  ASSERT_NE(wf, nullptr);
  ASSERT_NE(wf->pool, nullptr);
  EXPECT_EQ(wf->pool->name, "ticket_pool");
  EXPECT_EQ(wf->pool->source.function, "std.backlog");
  EXPECT_EQ(wf->pool->source.wake, "tickets_changed");
  const Json input = wf->pool->parseInput(nullptr);
  EXPECT_EQ(input, (Json{{"backlog_file", "samples/tickets/backlog.json"}}));
  EXPECT_EQ(wf->pool->source.args(input), (Json{{"path", "samples/tickets/backlog.json"}}));
  EXPECT_EQ(wf->pool->itemId(kTicket, input), "T-1");
  EXPECT_EQ(wf->pool->cap(input), 2);
  EXPECT_EQ(wf->pool->itemInput(kTicket, input), (Json{{"ticket", kTicket}}));
  EXPECT_THROW(wf->pool->parseInput(Json{{"backlog_file", 5}}), jr2rt::SchemaError);
  EXPECT_NE(r.machine("review"), nullptr);
}

TEST(Registration, AlertTriageIsAStandingPoolOfRuns) {
  jr2rt::Registry r;
  jr2gen::alert_triage::RegisterWorkflows(r);
  const auto* wf = r.workflow("alerts");
  ASSERT_NE(wf, nullptr);
  ASSERT_NE(wf->pool, nullptr);
  EXPECT_TRUE(wf->pool->dispatch);
  EXPECT_TRUE(wf->pool->standing);
  EXPECT_EQ(wf->pool->source.form, jr2rt::SourceSpec::Form::kPush);
  EXPECT_EQ(wf->pool->cap(Json::object()), 4);
}

// nlohmann/json's messages never reach a person with their library prefix.
TEST(Values, JsonErrorsReadAsPlainText) {
  auto message = [](auto&& fn) {
    try {
      fn();
    } catch (const std::exception& e) {
      return jr2rt::ErrorText(e);
    }
    return std::string("nothing thrown");
  };
  EXPECT_EQ(message([] { (void)Json(5).get<std::string>(); }), "must be a string, not a number");
  EXPECT_EQ(message([] { (void)Json::array().get<std::string>(); }),
            "must be a string, not an array");
  EXPECT_EQ(message([] { const Json j = Json::parse(R"({"a": )"); }),
            "at line 1, column 7: unexpected end of input; expected '[', '{', or a literal");
  EXPECT_EQ(message([] { throw std::runtime_error("plain"); }), "plain");
  // The generated code's record reader says which field, and how it is wrong.
  EXPECT_EQ(message([] {
              (void)Json{{"id", 5}, {"title", "t"}}.get<jr2gen::tickets::Ticket>();
            }),
            "`Ticket.id` must be a string, not a number");
}

}  // namespace

namespace {

TEST(Values, IntegerOverflowAndDivisionByZeroAreDefects) {
  EXPECT_EQ(jr2rt::Add(2, 3, "x"), 5);
  EXPECT_THROW(jr2rt::Add(INT64_MAX, 1, "t.jr2:1:1"), jr2rt::Defect);
  EXPECT_THROW(jr2rt::Sub(INT64_MIN, 1, "t.jr2:1:1"), jr2rt::Defect);
  EXPECT_THROW(jr2rt::Mul(INT64_MAX, 2, "t.jr2:1:1"), jr2rt::Defect);
  EXPECT_THROW(jr2rt::Div(INT64_MIN, -1, "t.jr2:1:1"), jr2rt::Defect);
  EXPECT_THROW(jr2rt::Div(1, 0, "t.jr2:1:1"), jr2rt::Defect);
  EXPECT_EQ(jr2rt::Mod(INT64_MIN, -1, "x"), 0);
  try {
    jr2rt::Add(INT64_MAX, 1, "t.jr2:4:7");
  } catch (const jr2rt::Defect& d) {
    EXPECT_STREQ(d.what(), "integer overflow at t.jr2:4:7");
  }
}

}  // namespace

namespace {

TEST(Completion, TheBodyExitsLastAndItsTimerIsCancelled) {
  ScriptedHost host;
  auto m = jr2gen::finish::Make_finisher();
  m->start(host, Json::object());
  EXPECT_EQ(host.timers.size(), 1u);
  m->dispatch(External(*m, "go"));
  EXPECT_TRUE(m->isDone());
  EXPECT_TRUE(host.timers.empty()) << "the machine-level `after` is cancelled";
  ASSERT_EQ(host.logs.size(), 1u);
  EXPECT_EQ(host.logs[0], "bye");
  EXPECT_EQ(m->activeStates(), std::vector<std::string>{"finished"});
}

}  // namespace

namespace {

// A source's hooks are in its spec (#10), in the order written, each verdict's value computed
// from the delivery's body: `carry` gives the item, `skip` its reason.
TEST(GeneratedSources, HooksAreInTheSpecWithTheirValues) {
  jr2rt::Registry registry;
  jr2gen::alert_triage::RegisterWorkflows(registry);
  const jr2rt::PoolSpec* pool = registry.pool("alerts_pool");
  ASSERT_NE(pool, nullptr);
  const auto& hooks = pool->source.hooks;
  ASSERT_EQ(hooks.size(), 3u);
  EXPECT_EQ(hooks[0].service, "sentry");
  EXPECT_EQ(hooks[0].eventKey, "issue.created");
  EXPECT_EQ(hooks[0].verdict, jr2rt::HookSpec::Verdict::kCarry);
  const Json payload = {{"data",
                         {{"issue",
                           {{"id", "F-1"},
                            {"title", "disk full"},
                            {"level", "error"},
                            {"culprit", "db"},
                            {"web_url", "https://example.invalid/F-1"}}}}}};
  const Json params = pool->source.params(Json::object());
  const Json item = hooks[0].value(payload, params);
  EXPECT_EQ(item["fingerprint"], "F-1");
  EXPECT_EQ(item["url"], "https://example.invalid/F-1");
  EXPECT_EQ(hooks[1].verdict, jr2rt::HookSpec::Verdict::kSkip);
  EXPECT_EQ(hooks[1].value(payload, params), "resolved alerts start nothing");
  // A body without the field the item reads: the value says which, as a defect names it.
  EXPECT_THROW(hooks[0].value(Json{{"data", Json::object()}}, params), std::exception);
}

// Ten regions take one event in one microstep: more transitions than a step keeps without the
// heap (eight), each exited and entered once, and the machine takes the next event as before.
TEST(WideParallel, TenTransitionsInOneMicrostep) {
  ScriptedHost host;
  auto m = jr2gen::wide::Make_wide();
  m->start(host, Json::object());
  std::vector<std::string> before, after;
  for (int r = 0; r < 10; ++r) {
    before.push_back("all.r" + std::to_string(r) + ".a");
    after.push_back("all.r" + std::to_string(r) + ".b");
  }
  auto leaves = [&] {
    std::vector<std::string> out;
    for (const auto& s : m->activeStates()) {
      if (s.size() > 5 && (s.substr(s.size() - 2) == ".a" || s.substr(s.size() - 2) == ".b"))
        out.push_back(s);
    }
    return out;
  };
  EXPECT_EQ(leaves(), before);
  EXPECT_TRUE(m->dispatch(External(*m, "go")));
  EXPECT_EQ(leaves(), after);
  EXPECT_FALSE(m->dispatch(External(*m, "go"))) << "no region takes `go` in `b`";
  EXPECT_EQ(host.invokes.size(), 1U) << "the Gate of `all` stays open";
}

}  // namespace
