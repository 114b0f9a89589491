// The Pool (docs/runtime.md#the-pool), rule by rule, on a manual clock. The Source is scripted:
// each test answers `next` itself, at once or later, and counts the calls.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>

#include "counted_pool.h"
#include "jr2/run.h"
#include "jr2/stdlib.h"
#include "jr2/store.h"
#include "pool.jr2.h"
#include "store/rows.h"

namespace {

using jr2rt::Json;
using jr2rt::RunStatus;

Json Item(const std::string& id, const std::string& mode = "wait") {
  return {{"id", id}, {"mode", mode}};
}

// A Source whose answers the test controls. `deferred` holds calls not answered yet.
struct ScriptedSource {
  std::deque<Json> answers;  // answered in order; when empty: {item: null, open: openWhenEmpty}
  int64_t openWhenEmpty = 0;
  bool defer = false;
  int calls = 0;
  std::vector<jr2rt::NextQuery> queries;
  std::deque<std::function<void(Json)>> deferred;

  Json nextAnswer() {
    if (answers.empty()) return {{"item", nullptr}, {"open", openWhenEmpty}};
    Json a = answers.front();
    answers.pop_front();
    return a;
  }
  void attach(jr2rt::Run& run) {
    run.scriptNext("scripted_next",
                   [this](const jr2rt::NextQuery& q, std::function<void(Json)> answer) {
                     ++calls;
                     queries.push_back(q);
                     if (defer) {
                       deferred.push_back(std::move(answer));
                     } else {
                       answer(nextAnswer());
                     }
                   });
  }
};

struct Fixture : testing::Test {
  jr2rt::Registry registry;
  jr2rt::ManualClock clock;
  ScriptedSource source;
  std::vector<std::string> lines;
  Fixture() { jr2gen::pool::RegisterWorkflows(registry); }
  std::unique_ptr<jr2rt::Run> make(const std::string& workflow) {
    auto run = std::make_unique<jr2rt::Run>(registry, *registry.workflow(workflow), "r1", clock);
    source.attach(*run);
    run->onProgress([this](const std::string& l) { lines.push_back(l); });
    return run;
  }
  std::vector<std::string> started() const {
    std::vector<std::string> out;
    for (const auto& l : lines) {
      if (l.size() > 8 && l.substr(l.size() - 8) == " started")
        out.push_back(l.substr(0, l.size() - 8));
    }
    return out;
  }
  static std::vector<std::string> GateNames(const jr2rt::Run& run) {
    std::vector<std::string> out;
    for (const auto& g : run.gates()) out.push_back(g.name);
    return out;
  }
};

// A Pool's input is read once when its run starts: the check of what came from outside is the
// read the Pool starts from (a Pool over 100,000 items read them twice, #33). Refused, it is
// refused as before, and nothing starts.
TEST(PoolInput, IsReadOnceAtStart) {
  jr2rt::Registry registry;
  jr2gen::pool::RegisterWorkflows(registry);
  jr2test::CountedPool counted(registry, "conformance_jobs");
  const jr2rt::WorkflowInfo& workflow = counted.workflow;
  const int& reads = counted.reads;
  jr2rt::ManualClock clock;
  int calls = 0;
  {
    jr2rt::Run run(registry, workflow, "r1", clock);
    run.scriptNext("scripted_next",
                   [&](const jr2rt::NextQuery&, const std::function<void(Json)>& answer) {
                     ++calls;
                     answer({{"item", nullptr}, {"open", 0}});
                   });
    run.start({{"jobs", 3}});
    EXPECT_EQ(reads, 1) << "checked and started from one read";
    EXPECT_EQ(calls, 1);
  }
  jr2rt::Run refused(registry, workflow, "r2", clock);
  try {
    refused.start({{"jobs", 3}, {"jbos", 4}});
    FAIL() << "an unknown field is refused";
  } catch (const jr2rt::BadInput& e) {
    EXPECT_EQ(std::string(e.what()),
              "the input of pool `jobs_pool` does not fit: `input of jobs_pool` has no field "
              "`jbos`; did you mean `jobs`? Its fields are jobs");
  }
  EXPECT_EQ(reads, 2);
  EXPECT_EQ(refused.status(), RunStatus::kWaiting) << "nothing started";
  EXPECT_EQ(calls, 1) << "its Source never asked";
  EXPECT_TRUE(refused.gates().empty());
}

// The live list a Source is given stays in start order however workers settle, at a wide cap
// where the Pool keeps it with holes (a query that is not held is never copied): each call
// sees the live ids in the order they started, the newest last, and their count.
TEST(PoolLiveList, KeepsStartOrderAcrossSettlesInAnyOrder) {
  jr2rt::Registry registry;
  jr2gen::pool::RegisterWorkflows(registry);
  jr2rt::ManualClock clock;
  jr2rt::Run run(registry, *registry.workflow("conformance_jobs"), "r1", clock);
  std::deque<Json> answers;
  for (const char* id : {"A", "B", "C", "D", "E", "F", "G", "H"}) answers.push_back(Item(id));
  struct Seen {
    std::vector<std::string> active;
    size_t count;
    std::string newest;
  };
  std::vector<Seen> seen;
  run.scriptNext("scripted_next",
                 [&](const jr2rt::NextQuery& q, const std::function<void(Json)>& answer) {
                   const std::string* newest = q.newestActive();
                   seen.push_back({q.active(), q.activeCount(), newest != nullptr ? *newest : ""});
                   if (answers.empty()) return answer({{"item", nullptr}, {"open", 0}});
                   Json a = answers.front();
                   answers.pop_front();
                   answer(a);
                 });
  using Ids = std::vector<std::string>;
  run.start({{"jobs", 6}});
  ASSERT_EQ(seen.size(), 6U);
  EXPECT_EQ(seen.back().active, (Ids{"A", "B", "C", "D", "E"}));
  // Settled out of order: each next call sees the rest in start order, the newest last.
  run.send("B.working", "finish", Json::object());
  EXPECT_EQ(seen.back().active, (Ids{"A", "C", "D", "E", "F"}));
  run.send("D.working", "finish", Json::object());
  EXPECT_EQ(seen.back().active, (Ids{"A", "C", "E", "F", "G"}));
  EXPECT_EQ(seen.back().count, 5U);
  EXPECT_EQ(seen.back().newest, "G");
  run.send("G.working", "finish", Json::object());  // the newest settles
  EXPECT_EQ(seen.back().active, (Ids{"A", "C", "E", "F", "H"}));
  for (const char* id : {"A", "C", "E", "F"})
    run.send(std::string(id) + ".working", "finish", Json::object());
  EXPECT_EQ(seen.back().active, (Ids{"H"}));
  EXPECT_EQ(seen.back().count, 1U);
  EXPECT_EQ(seen.back().newest, "H");
  run.send("H.working", "finish", Json::object());
  EXPECT_EQ(run.status(), RunStatus::kDone);
  EXPECT_TRUE(seen.back().active.empty());
  EXPECT_EQ(seen.back().count, 0U);
  EXPECT_EQ(seen.back().newest, "");
}

TEST_F(Fixture, StartsInOrderAndSaturatesAtCapTwo) {
  source.answers = {Item("A"), Item("B"), Item("C")};
  auto run = make("conformance_jobs");
  run->start(Json::object());
  EXPECT_EQ(started(), (std::vector<std::string>{"A", "B"}));
  EXPECT_EQ(source.calls, 2) << "no call while `cap` workers run";
  EXPECT_EQ(run->status(), RunStatus::kWaiting);
  EXPECT_EQ(GateNames(*run), (std::vector<std::string>{"A.working", "B.working", "source"}));
  run->send("A.working", "finish", Json::object());
  EXPECT_EQ(started(), (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_EQ(source.queries.back().settled(), std::vector<std::string>{"A"});
  EXPECT_EQ(source.queries.back().active(), std::vector<std::string>{"B"});
  EXPECT_TRUE(source.queries.back().isActive("B"));
  EXPECT_TRUE(source.queries.back().isSettled("A"));
  EXPECT_FALSE(source.queries.back().isActive("A"));
  // A query keeps what it was given: the Pool changed its lists since, by copy on write.
  EXPECT_TRUE(source.queries.front().active().empty());
  EXPECT_EQ(source.queries[1].active(), std::vector<std::string>{"A"});
  EXPECT_TRUE(source.queries[1].settled().empty());
}

TEST_F(Fixture, WithoutCapOneAtATime) {
  source.answers = {Item("A"), Item("B")};
  auto run = make("conformance_one");
  run->start(Json::object());
  EXPECT_EQ(started(), std::vector<std::string>{"A"});
  EXPECT_EQ(source.calls, 1);
  run->send("A.working", "finish", Json::object());
  EXPECT_EQ(started(), (std::vector<std::string>{"A", "B"}));
}

TEST_F(Fixture, CapComesFromTheInputAndBelowOneIsRefused) {
  source.answers = {Item("A"), Item("B"), Item("C"), Item("D")};
  auto run = make("conformance_jobs");
  run->start({{"jobs", 3}});
  EXPECT_EQ(started().size(), 3u);
  auto bad = make("conformance_jobs");
  EXPECT_THROW(bad->start({{"jobs", 0}}), jr2rt::BadInput);
}

TEST_F(Fixture, LatchedSignalsDuringACallMakeExactlyOneMoreCall) {
  source.answers = {Item("A")};
  auto run = make("conformance_jobs");
  run->start(Json::object());  // A starts; the second call answers "nothing ready" (open 0)
  ASSERT_EQ(source.calls, 2);
  source.defer = true;
  run->send("source", "poke", Json::object());  // a call goes out and stays in flight
  ASSERT_EQ(source.calls, 3);
  // While it is in flight: a settle and a wake. Neither cancels it; both latch.
  run->send("A.working", "finish", Json::object());
  run->send("source", "poke", Json::object());
  EXPECT_EQ(source.calls, 3) << "a call in flight is never cancelled or doubled";
  source.defer = false;
  source.answers = {Item("B")};
  auto answer = source.deferred.front();
  source.deferred.pop_front();
  answer({{"item", nullptr}, {"open", 0}});
  run->tick();  // drive the run: the answer is processed, then the one latched call goes out
  // Call 4 is the latch's one extra call (two latched signals, not two calls), and it sees the
  // settle that came during call 3. It claims B; a slot is still free, so call 5 follows at once
  // (docs/runtime.md#the-pool), answers nothing, and the Pool waits.
  ASSERT_EQ(source.calls, 5);
  EXPECT_EQ(source.queries[3].settled(), std::vector<std::string>{"A"}) << "no change is lost";
  EXPECT_EQ(source.queries[4].active(), std::vector<std::string>{"B"});
  EXPECT_EQ(started(), (std::vector<std::string>{"A", "B"}));
}

TEST_F(Fixture, PollEveryAloneClaimsAnAddedItem) {
  source.answers = {Item("A")};
  auto run = make("conformance_jobs");
  run->start(Json::object());
  EXPECT_EQ(started(), std::vector<std::string>{"A"});
  source.answers = {Item("B")};  // the set changed under the Pool
  clock.advance(9'999);
  run->tick();
  EXPECT_EQ(started().size(), 1u) << "not before poll_every";
  clock.advance(1);
  run->tick();
  EXPECT_EQ(started(), (std::vector<std::string>{"A", "B"}));
}

TEST_F(Fixture, APollIsOnlyDueAfterAFullWait) {
  // poll_every counts from when the Pool began to wait, not from an earlier wait.
  source.answers = {Item("A")};
  auto run = make("conformance_jobs");
  run->start(Json::object());  // A; then nothing ready: the wait begins at 0
  ASSERT_EQ(source.calls, 2);
  clock.set(9'000);
  source.answers = {Item("B")};
  run->send("A.working", "finish", Json::object());  // a call (B), a call (nothing): wait from 9s
  ASSERT_EQ(source.calls, 4);
  clock.set(10'000);
  run->tick();
  EXPECT_EQ(source.calls, 4) << "the poll of the earlier wait must not fire";
  clock.set(19'000);
  run->tick();
  EXPECT_EQ(source.calls, 5);
}

TEST_F(Fixture, AWakeWhileSaturatedClaimsNothingUntilASlotFrees) {
  source.answers = {Item("A"), Item("B")};
  auto run = make("conformance_jobs");
  run->start(Json::object());
  ASSERT_EQ(source.calls, 2);
  source.answers = {Item("C")};
  run->send("source", "poke", Json::object());
  EXPECT_EQ(source.calls, 2) << "saturated: a wake does not call";
  run->send("B.working", "finish", Json::object());
  EXPECT_EQ(started(), (std::vector<std::string>{"A", "B", "C"}));
}

// A hostile item: beside the fields its worker reads, one nested 10,000 lists deep (a Source's
// items keep width subtyping: the worker ignores it). The Pool takes it and runs it, and the
// answer and the worker's input are torn down without recursing to that depth (the Pool's
// teardown of them stops 4 levels down and leaves the rest to nlohmann's iterative destructor).
// Wrapped as `{item, open}` and bare, and beside a shallow item that settles after it.
TEST_F(Fixture, AnItemNestedTenThousandDeepIsTakenAndTornDownSafely) {
  Json deep = Json::array();
  Json* at = &deep;
  for (int i = 0; i < 10000; ++i) {
    at->push_back(Json::array());
    at = &(*at)[0];
  }
  Json a = Item("A", "done");
  a["deep"] = deep;
  Json b = Item("B", "done");
  b["deep"] = Json{{"x", Json{{"y", Json{{"z", Json::array({1, Json{{"w", deep}}})}}}}}};
  source.answers = {Json{{"item", a}, {"open", 0}}, b, Item("C", "done")};
  auto run = make("conformance_jobs");
  run->start(Json::object());
  EXPECT_EQ(run->status(), RunStatus::kDone);
  EXPECT_EQ(run->output()["items"], (Json{{"A", "A"}, {"B", "B"}, {"C", "C"}}));
}

TEST_F(Fixture, DrainedDeadlockedAndWaiting) {
  {
    source.answers = {Item("A", "done")};
    auto run = make("conformance_jobs");
    run->start(Json::object());
    EXPECT_EQ(run->status(), RunStatus::kDone);
    EXPECT_EQ(run->output()["status"], "drained");
    EXPECT_EQ(run->output()["items"], (Json{{"A", "A"}}));
  }
  {
    source.answers = {Item("A", "done")};
    source.openWhenEmpty = 1;
    auto run = make("conformance_jobs");
    run->start(Json::object());
    EXPECT_EQ(run->status(), RunStatus::kDeadlocked);
    EXPECT_EQ(run->output()["status"], "deadlocked");
  }
  {
    source.openWhenEmpty = 0;
    source.answers = {Item("A")};
    auto run = make("conformance_jobs");
    run->start(Json::object());
    EXPECT_EQ(run->status(), RunStatus::kWaiting) << "workers parked at Gates: the run stays open";
    EXPECT_TRUE(run->output().is_null());
  }
}

TEST_F(Fixture, FailuresFailTheRunWithTheExactReason) {
  source.answers = {Item("A", "fail"), Item("B", "done"), Item("C", "fail")};
  auto run = make("conformance_jobs");
  run->start({{"jobs", 1}});
  EXPECT_EQ(run->status(), RunStatus::kFailed);
  EXPECT_EQ(run->reason(), "2 of 3 items failed");
  EXPECT_EQ(run->output()["status"], "drained");
  EXPECT_EQ(run->output()["items"], (Json{{"B", "B"}}));
  EXPECT_EQ(run->output()["failures"]["A"],
            (Json{{"reason", "item A failed"}, {"detail", {{"id", "A"}}}}));
  EXPECT_EQ(started(), (std::vector<std::string>{"A", "B", "C"}))
      << "one failed item never stops its siblings";
}

TEST_F(Fixture, ABareNullAnswerIsDrainedAndFailuresWithADeadlockFailTheRun) {
  {
    auto run = make("conformance_jobs");
    run->scriptNext("scripted_next", [](const jr2rt::NextQuery&, std::function<void(Json)> answer) {
      answer(nullptr);
    });
    run->start(Json::object());
    EXPECT_EQ(run->status(), RunStatus::kDone);
    EXPECT_EQ(run->output()["status"], "drained") << "a bare null, with no worker live, is drained";
  }
  {
    source.answers = {Item("A", "fail"), Item("B", "done")};
    source.openWhenEmpty = 2;
    auto run = make("conformance_jobs");
    run->start({{"jobs", 1}});
    EXPECT_EQ(run->status(), RunStatus::kFailed)
        << "failures end the run failed, deadlocked or not";
    EXPECT_EQ(run->reason(), "1 of 2 items failed");
    EXPECT_EQ(run->output()["status"], "deadlocked") << "the detail says which end it was";
  }
  {
    source.answers = {Item("A", "fail")};
    source.openWhenEmpty = 1;
    auto run = make("conformance_one");
    run->start(Json::object());
    EXPECT_EQ(run->status(), RunStatus::kDone)
        << "report: with a failure the run ends done, deadlocked or not "
           "(docs/runtime.md#failures-report-and-a-deadlock)";
    EXPECT_EQ(run->output()["status"], "deadlocked") << "the output says which end it was";
    EXPECT_EQ(run->output()["failures"].size(), 1u);
  }
}

TEST_F(Fixture, ReportEndsDoneWithTheFailuresInTheOutput) {
  source.answers = {Item("A", "fail"), Item("B", "done")};
  auto run = make("conformance_one");
  run->start(Json::object());
  EXPECT_EQ(run->status(), RunStatus::kDone);
  EXPECT_EQ(run->output()["failures"].size(), 1u);
  EXPECT_EQ(run->output()["items"], (Json{{"B", "B"}}));
}

// The runner waits for a timer only while it is work under way (a machine with no open Gate):
// not for a deadline on a person's answer, and not for a Pool's poll.
TEST_F(Fixture, OnlyATimerOfWorkUnderWayIsUnattended) {
  source.answers = {Item("A", "nap"), Item("B", "wait")};
  auto run = make("conformance_jobs");
  run->start(Json::object());
  EXPECT_EQ(run->status(), RunStatus::kWaiting);
  EXPECT_EQ(run->nextUnattendedTimer(), std::optional<int64_t>(1'000)) << "A naps, at no Gate";
  clock.advance(1'000);
  run->tick();
  EXPECT_EQ(lines.back(), "A settled");
  EXPECT_EQ(run->nextUnattendedTimer(), std::nullopt) << "B waits at its Gate; the poll is no work";
  EXPECT_EQ(run->nextTimer(), std::optional<int64_t>(11'000))
      << "the Pool polls: 10 s after its last call";

  auto napper = make("conformance_napper");
  napper->start(Json::object());
  EXPECT_EQ(napper->nextUnattendedTimer(), std::optional<int64_t>(3'000));
  clock.advance(2'000);
  napper->tick();
  EXPECT_EQ(GateNames(*napper), std::vector<std::string>{"asking"});
  EXPECT_EQ(napper->nextUnattendedTimer(), std::nullopt) << "a deadline on an answer";
  EXPECT_EQ(napper->nextTimer(), std::optional<int64_t>(3'000 + 3'600'000));

  // The granularity is the state: a nap in one region is work under way beside a Gate in the
  // other region of the same machine; a timer on the machine's body covers the Gate.
  auto split = make("conformance_split_nap");
  split->start(Json::object());
  EXPECT_EQ(GateNames(*split), std::vector<std::string>{"both.right.asking"});
  EXPECT_EQ(split->nextUnattendedTimer(), std::optional<int64_t>(3'000 + 2'000));
  clock.advance(2'000);
  split->tick();
  EXPECT_EQ(split->nextUnattendedTimer(), std::nullopt) << "only the body's deadline is left";
  EXPECT_EQ(split->nextTimer(), std::optional<int64_t>(3'000 + 3'600'000));
}

TEST_F(Fixture, ADefectEndsTheRunErrorAndStopsEveryWorker) {
  source.answers = {Item("A"), Item("B", "defect")};
  auto run = make("conformance_jobs");
  run->start(Json::object());
  EXPECT_EQ(run->status(), RunStatus::kError);
  EXPECT_NE(run->reason().find("`!` on a null value at pool.jr2:44:14"), std::string::npos)
      << run->reason();
  EXPECT_TRUE(run->gates().empty()) << "no worker is left waiting";
}

TEST_F(Fixture, EveryIdRuleIsADefectThatNamesTheSourceTheIdAndTheRule) {
  const std::vector<std::pair<Json, std::string>> cases = {
      {Item(""), "is empty"},
      {Item("a.b"), "contains `.`"},
      {Item("source"), "is `source`"},
      // The whole message survives a NUL in the id (it used to end there).
      {Item(std::string("nul\0byte", 8)),
       "the item id `nul\\0byte`, which contains a NUL character"},
  };
  for (const auto& [item, rule] : cases) {
    source.answers = {item};
    auto run = make("conformance_jobs");
    run->start(Json::object());
    EXPECT_EQ(run->status(), RunStatus::kError);
    EXPECT_NE(run->reason().find("source `items`"), std::string::npos) << run->reason();
    EXPECT_NE(run->reason().find(rule), std::string::npos) << run->reason();
  }
  source.answers = {Item("A"), Item("A")};
  auto live = make("conformance_jobs");
  live->start(Json::object());
  EXPECT_NE(live->reason().find("the item id `A`, which a live worker holds"), std::string::npos)
      << live->reason();
  source.answers = {Item("A", "done"), Item("A")};
  auto finished = make("conformance_jobs");
  finished->start(Json::object());
  EXPECT_NE(finished->reason().find("already finished in this run"), std::string::npos)
      << finished->reason();
}

TEST_F(Fixture, GatesAreNamedByItemAndStatePathAndRefuseWhatTheyDoNotTake) {
  source.answers = {Item("T-1")};
  auto run = make("conformance_jobs");
  run->start(Json::object());
  EXPECT_EQ(GateNames(*run), (std::vector<std::string>{"T-1.working", "source"}));
  const auto gates = run->gates();
  std::vector<std::string> accepts;
  for (const auto& e : gates[0].accepts) accepts.push_back(e.name);
  EXPECT_EQ(accepts, (std::vector<std::string>{"boom", "finish"}));
  EXPECT_THROW(run->send("T-1.working", "poke", Json::object()), jr2rt::BadInput);
  EXPECT_THROW(run->send("T-2.working", "finish", Json::object()), jr2rt::BadInput);
  EXPECT_THROW(run->send("source", "finish", Json::object()), jr2rt::BadInput);
}

TEST_F(Fixture, RestoredAtEveryStepNoItemIsLostOrStartedTwice) {
  // The story, with the run saved and restored in a "new process" between every step.
  source.answers = {Item("A"), Item("B"), Item("C")};
  auto run = make("conformance_jobs");
  run->start(Json::object());
  const std::vector<std::pair<std::string, std::string>> steps = {
      {"A.working", "finish"}, {"B.working", "boom"}, {"C.working", "finish"}};
  for (const auto& [gate, event] : steps) {
    const Json saved = run->snapshot();
    run.reset();
    run = jr2rt::Run::Restore(registry, Json::parse(saved.dump()), clock);
    source.attach(*run);
    run->onProgress([this](const std::string& l) { lines.push_back(l); });
    run->send(gate, event, Json::object());
  }
  EXPECT_EQ(started(), (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_EQ(run->status(), RunStatus::kFailed);
  EXPECT_EQ(run->reason(), "1 of 3 items failed");
  EXPECT_EQ(run->output()["items"], (Json{{"A", "A"}, {"C", "C"}}));
}

// A restored Pool knows its live workers: the next query lists them, and the id rules hold.
TEST_F(Fixture, ARestoredPoolKnowsItsLiveWorkers) {
  source.answers = {Item("A"), Item("B")};
  auto run = make("conformance_jobs");
  run->start(Json::object());
  const Json saved = run->snapshot();
  run.reset();
  run = jr2rt::Run::Restore(registry, Json::parse(saved.dump()), clock);
  source.attach(*run);
  source.answers = {Item("B")};  // B is still live: a defect of the Source
  run->send("A.working", "finish", Json::object());
  EXPECT_EQ(source.queries.back().active(), std::vector<std::string>{"B"});
  EXPECT_EQ(source.queries.back().settled(), std::vector<std::string>{"A"});
  EXPECT_EQ(run->status(), RunStatus::kError);
  EXPECT_NE(run->reason().find("which a live worker holds"), std::string::npos) << run->reason();
}

// An item the worker's input refuses is a Failure of that item only; the Pool goes on.
TEST_F(Fixture, AnItemThatDoesNotFitItsWorkerFailsOnlyThatItem) {
  source.answers = {Item("A", "bogus"), Item("B", "done")};
  auto run = make("conformance_one");
  run->start(Json::object());
  EXPECT_EQ(run->status(), RunStatus::kDone) << run->reason();
  const Json failure = run->output()["failures"]["A"];
  EXPECT_EQ(failure["reason"].get<std::string>().rfind("the item does not fit the worker: ", 0), 0u)
      << failure;
  EXPECT_EQ(run->output()["items"], (Json{{"B", "B"}}));
  EXPECT_EQ(started(), (std::vector<std::string>{"A", "B"}));
}

// An Agent's Gate shows its Menu: the events of audience `agent` or `any` it accepts, each with its
// description and its payload's JSON Schema, generated from the event's type
// (docs/runtime.md#the-menu).
TEST_F(Fixture, AnAgentsGateShowsItsMenuWithEachPayloadsSchema) {
  auto run = make("conformance_asker");
  run->start(Json::object());
  const auto gates = run->gates();
  ASSERT_EQ(gates.size(), 1u);
  EXPECT_EQ(gates[0].kind, jr2rt::OpenGate::Kind::kAgent);
  EXPECT_EQ(jr2rt::MenuJson(gates[0]), Json::parse(R"([{"event": "answer", "audience": "agent",
                             "description": "Answer the question.",
                             "schema": {"type": "object", "description": "Answer the question.",
                                        "properties": {"text": {"type": "string"}},
                                        "required": ["text"], "additionalProperties": false}}])"));
  // A person's Gate shows its Menu too: `skipped` accepts `finish`, of audience `external`.
  auto skipped = make("conformance_asker");
  skipped->start({{"skip", true}});
  const auto open = skipped->gates();
  ASSERT_EQ(open.size(), 1u);
  const Json menu = jr2rt::MenuJson(open[0]);
  ASSERT_EQ(menu.size(), 1u);
  EXPECT_EQ(menu[0]["event"], "finish");
  EXPECT_EQ(menu[0]["audience"], "external");
  EXPECT_EQ(menu[0]["schema"]["additionalProperties"], false);
}

// The scripted Agent harness: each time the Agent's Gate opens, the next reply is delivered
// there; the count is stored with the run; a refused reply ends the run error; a reply whose
// Gate closed first is kept; without a reply the Gate waits.
TEST_F(Fixture, AScriptedAgentAnswersAtItsGate) {
  const Json script = {{"helper", {{{"event", "answer"}, {"payload", {{"text", "42"}}}}}}};
  {
    auto run = make("conformance_asker");
    run->scriptAgents(script);
    run->start(Json::object());
    EXPECT_EQ(run->status(), RunStatus::kDone) << run->reason();
    EXPECT_EQ(run->output(), "42");
    EXPECT_EQ(run->snapshot()["agentReplies"], (Json{{"helper", 1}}));
  }
  {
    auto run = make("conformance_asker");
    run->start(Json::object());
    EXPECT_EQ(GateNames(*run), std::vector<std::string>{"asking"}) << "no script: it waits";
    // A later process with a script answers the Gate that is open.
    const Json saved = run->snapshot();
    run = jr2rt::Run::Restore(registry, Json::parse(saved.dump()), clock);
    run->scriptAgents(script);
    run->tick();
    EXPECT_EQ(run->status(), RunStatus::kDone) << run->reason();
  }
  {
    // A refused pick (a payload its schema refuses, an event not on the Menu) is told and the
    // Agent picks again: here its second reply answers.
    auto run = make("conformance_asker");
    std::vector<std::string> feed;
    run->onProgress([&](const std::string& line) { feed.push_back(line); });
    run->scriptAgents({{"helper",
                        {{{"event", "answer"}, {"payload", {{"text", 7}}}},
                         {{"event", "finish"}, {"payload", Json::object()}},
                         {{"event", "answer"}, {"payload", {{"text", "42"}}}}}}});
    run->start(Json::object());
    EXPECT_EQ(run->status(), RunStatus::kDone) << run->reason();
    EXPECT_EQ(run->output(), "42");
    size_t refusals = 0;
    for (const auto& line : feed) {
      if (line.find("is refused") != std::string::npos &&
          line.find("it picks again") != std::string::npos)
        ++refusals;
    }
    EXPECT_EQ(refusals, 2u) << ::testing::PrintToString(feed);
  }
  {
    // After the slot's `picks: 4` refused picks the Gate waits for a person, who answers it.
    auto run = make("conformance_asker");
    std::vector<std::string> feed;
    run->onProgress([&](const std::string& line) { feed.push_back(line); });
    const Json bad = {{"event", "answer"}, {"payload", {{"text", 7}}}};
    run->scriptAgents({{"helper", {bad, bad, bad, bad, bad}}});
    run->start(Json::object());
    EXPECT_EQ(run->status(), RunStatus::kWaiting) << run->reason();
    EXPECT_EQ(GateNames(*run), std::vector<std::string>{"asking"});
    EXPECT_EQ(run->snapshot()["agentReplies"], (Json{{"helper", 4}}))
        << "the fifth reply is never used at this opening";
    ASSERT_FALSE(feed.empty());
    EXPECT_NE(feed.back().find("4 picks refused, the Gate asking waits for a person"),
              std::string::npos)
        << feed.back();
    run->send("asking", "answer", {{"text", "by hand"}});
    EXPECT_EQ(run->status(), RunStatus::kDone) << run->reason();
    EXPECT_EQ(run->output(), "by hand");
  }
  {
    auto run = make("conformance_asker");
    run->scriptAgents(script);
    run->start({{"skip", true}});
    EXPECT_EQ(GateNames(*run), std::vector<std::string>{"skipped"}) << run->reason();
    EXPECT_EQ(run->snapshot()["agentReplies"], Json::object())
        << "a Gate left before its reply came uses no reply";
  }
  {
    // Two Gates of one Agent open at once (two Pool workers would be the same): one reply each,
    // in order, and the count says two.
    source.answers = {Item("A"), Item("B")};
    auto run = make("conformance_two_askers");
    run->scriptAgents({{"helper",
                        {{{"event", "answer"}, {"payload", {{"text", "one"}}}},
                         {{"event", "answer"}, {"payload", {{"text", "two"}}}}}}});
    run->start(Json::object());
    EXPECT_EQ(run->status(), RunStatus::kDone) << run->reason();
    EXPECT_EQ(run->output()["items"], (Json{{"A", "one"}, {"B", "two"}}));
    EXPECT_EQ(run->snapshot()["agentReplies"], (Json{{"helper", 2}}));
  }
}

TEST(StdBacklog, AFailedNeedKeepsItsDependentsFromEverBeingReady) {
  const std::string path = testing::TempDir() + "backlog.json";
  {
    std::ofstream out(path);
    out << R"([{"id":"A","needs":[]},{"id":"B","needs":["A"]},{"id":"C","needs":["Z"]}])";
  }
  using Ids = std::vector<std::string>;
  auto ids = [](Ids v) { return std::make_shared<const Ids>(std::move(v)); };
  const Json args = {{"path", path}};
  EXPECT_EQ(jr2rt::StdBacklog(args, jr2rt::NextQuery()),
            (Json{{"item", {{"id", "A"}, {"needs", Json::array()}}}, {"open", 2}}));
  EXPECT_EQ(jr2rt::StdBacklog(args, jr2rt::NextQuery(ids({"A"}), nullptr, nullptr, {}))["item"],
            nullptr)
      << "B waits for A";
  EXPECT_EQ(
      jr2rt::StdBacklog(args, jr2rt::NextQuery(nullptr, ids({"A"}), nullptr, {}))["item"]["id"],
      "B");
  // A failed.
  const Json none = jr2rt::StdBacklog(args, jr2rt::NextQuery(nullptr, ids({"A"}), ids({"A"}), {}));
  EXPECT_EQ(none["item"], nullptr) << "a failed need blocks B for good";
  EXPECT_EQ(none["open"], 2) << "B and C are open and never ready: the Pool ends deadlocked";
  EXPECT_THROW(jr2rt::StdBacklog({{"path", path + ".missing"}}, jr2rt::NextQuery()), jr2rt::Defect);
  {
    std::ofstream out(path);
    out << R"([{"id":"A"},{"id":"B"},{"id":"C","needs":["A"]}])";
  }
  EXPECT_EQ(jr2rt::StdBacklog(args, jr2rt::NextQuery{})["open"], 1)
      << "`open` counts only the items that are not ready (B is ready, C is not)";
  {
    std::ofstream out(path);
    out << "[{";
  }
  EXPECT_THROW(jr2rt::StdBacklog(args, jr2rt::NextQuery{}), jr2rt::Defect) << "invalid JSON";
  // Every call reads the file: an edit of the same size, at once, is seen (the parse is reused
  // only while the bytes are the same).
  for (const char* id : {"P", "Q"}) {
    {
      std::ofstream out(path);
      out << R"([{"id":")" << id << R"("}])";
    }
    EXPECT_EQ(jr2rt::StdBacklog(args, jr2rt::NextQuery{})["item"]["id"], id);
  }
  {
    std::ofstream out(path);
    out << R"([{"id":"R","needs":"P"}])";
  }
  EXPECT_THROW(jr2rt::StdBacklog(args, jr2rt::NextQuery{}), jr2rt::Defect)
      << "`needs` must be a list";
}

TEST_F(Fixture, AHostProcessRunsOnThePoolAndReportsBackToTheStrand) {
  auto ok = make("conformance_command");
  ok->start({{"argv", {"true"}}});
  EXPECT_EQ(ok->status(), RunStatus::kDone);
  EXPECT_EQ(ok->output(), 0);
  auto bad = make("conformance_command");
  bad->start({{"argv", {"false"}}});
  EXPECT_EQ(bad->status(), RunStatus::kFailed);
  EXPECT_EQ(bad->reason(), "the command failed: `false` exited 1");
  EXPECT_EQ(bad->output()["exit"], 1);
}

// A process's output reaches the feed as it comes: each line, stdout's with ` | `, stderr's with
// ` ! `, named by the invoking state (or its `as` name); at most kCommandFeedLines of each, then
// one line saying the rest is in the result, each line cut at kCommandFeedLineBytes.
TEST_F(Fixture, AProcesssOutputReachesTheFeedAsItComesBounded) {
  auto run = make("conformance_command");
  std::vector<std::string> feed;
  run->onProgress([&](const std::string& line) { feed.push_back(line); });
  run->start(
      {{"argv",
        {"sh", "-c",
         "echo one; echo two >&2; printf 'no newline'; echo; "
         "printf '%0500d\\n' 7; i=0; while [ $i -lt 150 ]; do echo l$i; i=$((i+1)); done"}}});
  ASSERT_EQ(run->status(), RunStatus::kDone) << run->reason();
  std::vector<std::string> out, err;
  for (const auto& line : feed) {
    if (line.rfind("process | ", 0) == 0) out.push_back(line.substr(10));
    if (line.rfind("process ! ", 0) == 0) err.push_back(line.substr(10));
  }
  EXPECT_EQ(err, std::vector<std::string>{"two"});
  ASSERT_EQ(out.size(), static_cast<size_t>(jr2rt::kCommandFeedLines) + 1)
      << ::testing::PrintToString(out);
  EXPECT_EQ(out[0], "one");
  EXPECT_EQ(out[1], "no newline");
  EXPECT_EQ(out[2], std::string(jr2rt::kCommandFeedLineBytes, '0') + "…") << "a long line is cut";
  EXPECT_EQ(out[3], "l0");
  EXPECT_EQ(out.back(), "… more lines: the result keeps the output (its last MiB)");
  // The result still has all of it.
  EXPECT_EQ(run->output(), 0);
}

// A program that is not there, or a working directory that is not there: a Failure that says
// which, not an exit code to decode.
TEST(StdCommand, WhatCannotBeStartedIsAFailureThatSaysWhy) {
  auto reason = [](const Json& spec) {
    try {
      jr2rt::StdEffect("std.command", {{"spec", spec}});
    } catch (const jr2rt::Failure& f) {
      return f.reason();
    }
    return std::string("no Failure");
  };
  EXPECT_EQ(reason({{"argv", {"jr2-no-such-program"}}}),
            "`jr2-no-such-program` cannot be started in `.`: No such file or directory");
  EXPECT_EQ(reason({{"argv", {"true"}}, {"cwd", "/jr2-no-such-dir"}}),
            "`true` cannot be started in `/jr2-no-such-dir`: No such file or directory");
  // A process that closes its output and goes on running is still held to its timeout: it is
  // killed at the deadline, not waited for until it ends on its own.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(reason({{"argv", {"sh", "-c", "exec >&- 2>&-; sleep 5"}}, {"timeout", 200}}),
            "`sh` timed out after 200 ms");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  const Json echoed = jr2rt::StdEffect(
      "std.command", {{"spec", {{"argv", {"sh", "-c", "pwd; echo oops >&2"}}, {"cwd", "/"}}}});
  EXPECT_EQ(echoed, (Json{{"exit", 0}, {"stdout", "/\n"}, {"stderr", "oops\n"}}));
}

}  // namespace

namespace {

TEST_F(Fixture, GateNamesNestAndAuthoredNamesReplaceThePath) {
  source.answers = {Item("A")};
  auto run = make("conformance_outer");
  run->start(Json::object());
  EXPECT_EQ(GateNames(*run), (std::vector<std::string>{"inner.A.approval", "inner.source"}));
  run->send("inner.A.approval", "finish", Json::object());
  EXPECT_EQ(run->status(), RunStatus::kDone) << "the inner Pool drained, so `outer` finished";
}

TEST_F(Fixture, TwoLiveGatesWithOneNameAreADefect) {
  source.answers = {Item("A")};
  auto run = make("conformance_twin");
  run->start(Json::object());
  EXPECT_EQ(run->status(), RunStatus::kError);
  EXPECT_EQ(run->reason(), "two live Gates are named `inner.A.approval`");
}

}  // namespace

TEST_F(Fixture, AGateTakesOnlyTheEventsItsStateHandles) {
  auto run = make("conformance_two_step");
  run->start(Json::object());
  const auto gates = run->gates();
  ASSERT_EQ(gates.size(), 1u);
  std::vector<std::string> accepts;
  for (const auto& e : gates[0].accepts) accepts.push_back(e.name);
  EXPECT_EQ(accepts, std::vector<std::string>{"finish"}) << "`boom` is handled only at `second`";
  const std::string before = run->snapshot().dump();
  try {
    run->send("first", "boom", Json::object());
    FAIL() << "an event its state does not handle must be refused";
  } catch (const jr2rt::BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("takes finish, not `boom`"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(run->snapshot().dump(), before) << "the refusal changed nothing";
  run->send("first", "finish", Json::object());
  ASSERT_EQ(GateNames(*run), std::vector<std::string>{"second"});
  EXPECT_THROW(run->send("second", "finish", Json::object()), jr2rt::BadInput);
  run->send("second", "boom", Json::object());
  EXPECT_EQ(run->status(), RunStatus::kDone);
}

// #30 item 11: the compiler allows an Agent on `active` to send `wrote`, handled in
// `active.working` (E0503 looks above the transition for a party); the runtime's Gate takes it
// while `working` is active, and refuses `answer` there, naming the state that takes it.
TEST_F(Fixture, AnAgentOnACompoundStateSendsTheEventsOfTheStatesBelowIt) {
  auto run = make("conformance_nested_agent");
  run->start(Json::object());
  ASSERT_EQ(GateNames(*run), std::vector<std::string>{"active"});
  const auto gates = run->gates();
  std::vector<std::string> accepts;
  for (const auto& e : gates[0].accepts) accepts.push_back(e.name);
  EXPECT_EQ(accepts, (std::vector<std::string>{"answer", "wrote"})) << "the states below it";
  const std::string before = run->snapshot().dump();
  try {
    run->send("active", "answer", {{"text", "early"}});
    FAIL() << "`answer` is taken only in active.checking";
  } catch (const jr2rt::BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("`answer` is taken only in active.checking"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("is in active.working now"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(run->snapshot().dump(), before) << "the refusal changed nothing";
  run->send("active", "wrote", {{"summary", "patch"}});
  ASSERT_EQ(GateNames(*run), std::vector<std::string>{"active"}) << "the Gate stays open";
  EXPECT_THROW(run->send("active", "wrote", {{"summary", "again"}}), jr2rt::BadInput);
  run->send("active", "answer", {{"text", "ok"}});
  EXPECT_EQ(run->status(), RunStatus::kDone) << run->reason();
  EXPECT_EQ(run->output(), "patch / ok");

  // The scripted Agent's pick of `wrote` is taken at once (it was refused before #30: "the Gate
  // active takes no event, not `wrote`", and the run waited for a person).
  auto agent = make("conformance_nested_agent");
  agent->scriptAgents({{"helper", {{{"event", "wrote"}, {"payload", {{"summary", "p"}}}}}}});
  agent->start(Json::object());
  EXPECT_EQ(agent->status(), RunStatus::kWaiting) << agent->reason();
  agent->send("active", "answer", {{"text", "fine"}});
  EXPECT_EQ(agent->status(), RunStatus::kDone) << agent->reason();
  EXPECT_EQ(agent->output(), "p / fine");
}

// #30 item 12: a cancel keeps what a Pool inside a machine did, as it does for a top-level Pool.
TEST_F(Fixture, ACancelKeepsWhatANestedPoolDid) {
  source.answers = {Item("A"), Item("B")};
  auto run = make("conformance_outer");
  run->start(Json::object());
  run->send("inner.A.approval", "finish", Json::object());
  run->cancel();
  EXPECT_EQ(run->status(), RunStatus::kCancelled);
  EXPECT_EQ(run->output(), Json::parse(R"({"status": "cancelled", "children": {"inner":
                             {"items": {"A": "A"}, "failures": {}, "live": ["B"]}}})"));
  auto again = jr2rt::Run::Restore(registry, run->snapshot(), clock);
  EXPECT_EQ(again->output(), run->output());
}

TEST_F(Fixture, ACancelKeepsWhatWasDone) {
  source.answers = {Item("A"), Item("B", "fail"), Item("C")};
  auto run = make("conformance_jobs");
  run->start({{"jobs", 2}});
  run->send("A.working", "finish", Json::object());
  // A settled, B failed, C live at its Gate: what `status` shows while the run waits.
  const Json sofar = run->sofar();
  EXPECT_EQ(sofar["items"], (Json{{"A", "A"}}));
  EXPECT_TRUE(sofar["failures"].contains("B"));
  EXPECT_EQ(sofar["live"], (Json{"C"}));
  run->cancel();
  EXPECT_EQ(run->status(), RunStatus::kCancelled);
  EXPECT_EQ(run->output()["status"], "cancelled");
  EXPECT_EQ(run->output()["items"], (Json{{"A", "A"}})) << "the settled item is kept";
  EXPECT_TRUE(run->output()["failures"].contains("B")) << "and the failure";
  EXPECT_EQ(run->output()["live"], (Json{"C"})) << "and who was live when it was cancelled";
  EXPECT_TRUE(run->gates().empty());
  // It survives a save and a restore.
  auto again = jr2rt::Run::Restore(registry, run->snapshot(), clock);
  EXPECT_EQ(again->status(), RunStatus::kCancelled);
  EXPECT_EQ(again->output(), run->output());
}

TEST_F(Fixture, AFiredDeadlineIsRecordedWithItsStateAndDuration) {
  auto run = make("conformance_napper");
  run->start(Json::object());
  EXPECT_TRUE(run->firedTimers().empty());
  clock.advance(2000);
  run->tick();
  ASSERT_EQ(run->firedTimers().size(), 1u);
  EXPECT_EQ(run->firedTimers()[0].state, "napping");
  EXPECT_EQ(run->firedTimers()[0].afterMs, 2000);
  // The `after 1h` on the Gate, across a save and a restore: its duration is stored.
  auto again = jr2rt::Run::Restore(registry, run->snapshot(), clock);
  clock.advance(3600 * 1000);
  again->tick();
  ASSERT_EQ(again->firedTimers().size(), 1u);
  EXPECT_EQ(again->firedTimers()[0].state, "asking");
  EXPECT_EQ(again->firedTimers()[0].afterMs, 3600 * 1000);
  EXPECT_EQ(again->status(), RunStatus::kDone);
}

TEST_F(Fixture, APoolWhoseWorkerIsAPoolRunsOnePoolPerItem) {
  // The outer Pool claims A; A's own Pool claims x (which ends at once), drains, and settles A.
  source.answers = {Item("A"), Item("x", "done")};
  auto run = make("conformance_nest");
  run->start(Json::object());
  EXPECT_EQ(run->status(), RunStatus::kDone) << run->reason();
  const Json inner = {{"status", "drained"}, {"items", {{"x", "x"}}}, {"failures", Json::object()}};
  EXPECT_EQ(run->output()["items"]["A"], inner);
  EXPECT_EQ(started(), (std::vector<std::string>{"A", "x"}));
}

TEST_F(Fixture, AWorkerPoolGatesNestUnderItsItemAndSurviveARestore) {
  source.answers = {Item("A"), Item("x")};
  auto run = make("conformance_nest");
  run->start(Json::object());
  EXPECT_EQ(GateNames(*run), (std::vector<std::string>{"A.source", "A.x.working", "source"}));
  auto again = jr2rt::Run::Restore(registry, run->snapshot(), clock);
  source.attach(*again);
  again->send("A.x.working", "finish", Json::object());
  EXPECT_EQ(again->status(), RunStatus::kDone) << again->reason();
  EXPECT_EQ(again->output()["items"]["A"]["items"]["x"], "x");
}

// A save writes each Pool worker's part from the text it kept, unless the worker moved since
// (Actor::touch, #33). Whatever moves a worker — its Gate answered, its timer, its failure, a new
// worker, a restore, a Pool of Pools — the text must be the whole snapshot's and observation's,
// byte for byte: a part kept after its worker moved would be lost at the next restore.
TEST_F(Fixture, ASnapshotWrittenFromKeptWorkerPartsIsTheWholeOneAtEveryStep) {
  auto same = [](const jr2rt::Run& run, const std::string& when) {
    const auto dump = [](const Json& j) {
      return j.dump(-1, ' ', false, Json::error_handler_t::replace);
    };
    EXPECT_EQ(run.snapshotText(), dump(run.snapshot(false, /*asStored=*/true)))
        << "the snapshot " << when;
    EXPECT_EQ(run.observeText(), dump(run.observe())) << "the observation " << when;
  };
  for (int i = 0; i < 10; ++i) source.answers.push_back(Item("I" + std::to_string(i)));
  auto run = make("conformance_steppers");
  run->start(Json::object());
  same(*run, "at the start");
  same(*run, "written twice with nothing between");
  int step = 0;
  while (run->status() == RunStatus::kWaiting && step < 80) {
    ++step;
    // One worker's Gate answered at a time, oldest first (the others keep what they wrote), or
    // the clock moved on when none is open.
    const auto gates = GateNames(*run);
    const auto open = std::find_if(gates.begin(), gates.end(), [](const std::string& g) {
      return g.size() > 7 &&
             (g.substr(g.size() - 7) == ".asking" || g.substr(g.size() - 8) == ".closing");
    });
    if (open != gates.end() && step % 3 != 0) {
      const bool closing = open->substr(open->size() - 8) == ".closing";
      run->send(*open, closing && step % 7 == 0 ? "boom" : "finish", Json::object());
    } else {
      clock.advance(1'000);
      run->tick();
    }
    same(*run, "after step " + std::to_string(step));
    if (step == 5 || step == 17) {
      // Restored: the new actors keep nothing yet, and write their parts afresh.
      Json snap = run->snapshot();
      run = jr2rt::Run::Restore(registry, snap, clock);
      source.attach(*run);
      same(*run, "after a restore at step " + std::to_string(step));
    }
  }
  EXPECT_NE(run->status(), RunStatus::kWaiting) << "the Pool drains within 80 steps";
  same(*run, "once the run ended");

  // A Pool whose workers are Pools: such a worker's part is written whole each time.
  source.answers = {Item("A"), Item("x"), Item("y", "nap")};
  auto nest = make("conformance_nest");
  nest->start(Json::object());
  same(*nest, "a Pool of Pools at its start");
  nest->send("A.x.working", "finish", Json::object());
  same(*nest, "a Pool of Pools after an inner answer");
  clock.advance(1'000);
  nest->tick();
  same(*nest, "a Pool of Pools after an inner timer");
}

namespace {

// Saved as it moves (#10): with a journal, the top Pool's items are entries, not snapshot; a run
// restored at every step from snapshot + journal loses nothing and starts nothing twice, and
// the snapshot does not grow with what the run settled.
TEST_F(Fixture, JournaledRunRestoredAtEveryStepLosesNothingAndItsSnapshotStaysFlat) {
  for (int i = 0; i < 40; ++i) source.answers.push_back(Item("I" + std::to_string(i)));
  auto run = make("conformance_jobs");
  run->keepJournal();
  run->start(Json::object());
  std::vector<Json> journal;
  size_t firstSize = 0, lastSize = 0;
  for (int i = 0; i < 40; ++i) {
    const std::string id = "I" + std::to_string(i);
    for (const auto& e : run->takeJournal()) jr2rt::AppendEntries(journal, Json::parse(e));
    const std::string saved = run->snapshot().dump();
    if (i == 2) firstSize = saved.size();
    lastSize = saved.size();
    run.reset();
    run = jr2rt::Run::Restore(registry, Json::parse(saved), clock, &journal);
    EXPECT_TRUE(run->journaling()) << "a run restored with its journal goes on keeping one";
    source.attach(*run);
    run->onProgress([this](const std::string& l) { lines.push_back(l); });
    run->send(id + ".working", i % 7 == 3 ? "boom" : "finish", Json::object());
  }
  std::vector<std::string> want;
  for (int i = 0; i < 40; ++i) want.push_back("I" + std::to_string(i));
  EXPECT_EQ(started(), want) << "each item started once, in order";
  ASSERT_EQ(run->status(), RunStatus::kFailed) << run->reason();
  EXPECT_EQ(run->output()["items"].size() + run->output()["failures"].size(), 40u);
  EXPECT_EQ(run->output()["failures"].size(), 6u);
  // Two live workers and the lists of a Pool that settled 2 vs 39 items: the same order of size
  // (the item ids are not in the snapshot, only their count).
  EXPECT_LT(lastSize, firstSize + 64)
      << "the snapshot grew with the settled items: " << firstSize << " then " << lastSize;
}

// A Pool's per-item marks (`started`, `settled`) are told short and its journal entries written as
// text, with no JSON tree per item (#33): a mark's data as the store writes it alone
// (AppendFeedFormData) and each entry are byte for byte what a dump of the same JSON writes,
// whatever the item's id holds — quotes, backslashes, control characters, UTF-8, and bytes that
// are not UTF-8 (which a dump replaces).
TEST_F(Fixture, APoolsMarksAndJournalEntriesAreTheTextADumpWrites) {
  const std::vector<std::string> ids = {"plain", "q\"uote\\back", "nl\nt\tab\x01x", "caf\xC3\xA9",
                                        std::string("bad\xFF") + "-byte"};
  for (const auto& id : ids) source.answers.push_back(Item(id));
  auto run = make("conformance_jobs");
  run->keepJournal();
  std::vector<jr2rt::Run::FeedEvent> marks;
  run->onEvent([&](jr2rt::Run::FeedEvent& e) {
    if (e.kind == "started" || e.kind == "settled") marks.push_back(e);
  });
  run->start(Json::object());
  for (const auto& id : ids) run->send(id + ".working", "finish", Json::object());
  ASSERT_EQ(run->status(), RunStatus::kDone) << run->reason();
  const auto dump = [](const Json& j) {
    return j.dump(-1, ' ', false, Json::error_handler_t::replace);
  };
  ASSERT_EQ(marks.size(), 2 * ids.size());
  std::map<std::string, int> seen;
  for (const auto& e : marks) {
    // The line is `<id> started` or `<id> settled`.
    const std::string id = e.line.substr(0, e.line.size() - e.kind.size() - 1);
    ASSERT_NE(std::find(ids.begin(), ids.end(), id), ids.end()) << e.line;
    ++seen[id];
    // Told short: nothing built for its data, which is made from the line when read.
    EXPECT_EQ(e.form, jr2rt::FeedForm::kTopMark) << e.line;
    EXPECT_TRUE(e.data.is_null()) << e.line;
    EXPECT_TRUE(e.dataText.empty()) << e.line;
    EXPECT_EQ(e.parsedData(), Json::parse(dump(Json{{"item", id}, {"pool", ""}})));
    std::string text;
    jr2rt::AppendFeedFormData(text, e.form, e.kind, e.line, e.data, e.dataText);
    EXPECT_EQ(text, dump(Json{{"item", id}, {"pool", ""}})) << e.line;
  }
  for (const auto& id : ids) EXPECT_EQ(seen[id], 2) << "started and settled: " << id;
  // Each journal entry is `[id, output]` as a dump writes that array (17 bytes fewer than the
  // object), read back by the store as `{"output": …, "settled": id}` (store/rows.h).
  const std::vector<std::string> journal = run->takeJournal();
  ASSERT_EQ(journal.size(), ids.size());
  for (const auto& entry : journal) {
    std::vector<Json> read;
    jr2rt::AppendEntries(read, Json::parse(entry));
    ASSERT_EQ(read.size(), 1u) << entry;
    const std::string id = read[0]["settled"];
    const auto it = std::find_if(ids.begin(), ids.end(), [&](const std::string& i) {
      return Json::parse(dump(Json(i))) == Json(id);
    });
    ASSERT_NE(it, ids.end()) << entry;
    EXPECT_EQ(entry, dump(Json::array({*it, run->output()["items"][*it]})));
    EXPECT_EQ(dump(read[0]), dump(Json{{"output", run->output()["items"][*it]}, {"settled", *it}}));
  }
}

// A snapshot that keeps its items in the journal cannot be restored without it: said, not
// silently empty.
TEST_F(Fixture, AJournaledSnapshotWithoutItsJournalIsRefused) {
  source.answers = {Item("A"), Item("B")};
  auto run = make("conformance_jobs");
  run->keepJournal();
  run->start(Json::object());
  run->send("A.working", "finish", Json::object());
  const Json saved = run->snapshot();
  try {
    jr2rt::Run::Restore(registry, saved, clock);
    FAIL() << "restored without its journal";
  } catch (const jr2rt::NoLongerFits& e) {
    EXPECT_NE(std::string(e.what()).find("journal"), std::string::npos) << e.what();
  }
  // A journal that does not match is damage in the store (65), not drift of the build: each
  // said as it is, naming the entry.
  auto damage = [&](std::vector<Json> journal) -> std::string {
    try {
      jr2rt::Run::Restore(registry, saved, clock, &journal);
    } catch (const jr2rt::StoreDamaged& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      return what;
    }
    ADD_FAILURE() << "restored with a damaged journal";
    return "";
  };
  EXPECT_NE(damage({}).find("settled 1 items, and its journal has 0"), std::string::npos);
  EXPECT_NE(damage({Json::array({1, 2})}).find("entry 1 is damaged: it is not a settled or failed"),
            std::string::npos);
  EXPECT_NE(damage({Json{{"failed", "A"}, {"failure", 42}}}).find("not a settled or failed"),
            std::string::npos);
  EXPECT_NE(damage({Json{{"failed", "A"}, {"failure", {{"why", "x"}}}}}).find("not a settled or"),
            std::string::npos);
  EXPECT_NE(damage({Json{{"settled", "A"}, {"output", 1}, {"x", 0}}}).find("not a settled or"),
            std::string::npos);
  EXPECT_NE(damage({Json{{"settled", "B"}, {"output", "B"}}}).find("item B is settled and live"),
            std::string::npos);
  // One entry settling A twice (the count is right: the snapshot says 2).
  source.answers = {Item("C")};
  run->send("B.working", "finish", Json::object());
  const Json twice = run->snapshot();
  try {
    std::vector<Json> j = {Json{{"settled", "A"}, {"output", "A"}},
                           Json{{"settled", "A"}, {"output", "A"}}};
    jr2rt::Run::Restore(registry, twice, clock, &j);
    ADD_FAILURE() << "an item settled twice was taken";
  } catch (const jr2rt::StoreDamaged& e) {
    EXPECT_NE(std::string(e.what()).find("item A is settled twice"), std::string::npos) << e.what();
  }
}

// The commit hook: each turn is committed before its effects go out, and a run restored with a
// non-idempotent effect out fails that invoke `interrupted` instead of running it again.
TEST_F(Fixture, ANonIdempotentEffectOutAtRestoreIsInterruptedNotRunAgain) {
  const std::string dir = ::testing::TempDir() + "jr2_interrupt_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string marker = dir + "/ran";
  std::filesystem::remove(marker);
  auto run = std::make_unique<jr2rt::Run>(registry, *registry.workflow("conformance_command"), "r2",
                                          clock);
  std::vector<Json> commits;
  bool ranAtFirstCommit = true;
  run->onCommit([&] {
    if (commits.empty()) ranAtFirstCommit = std::filesystem::exists(marker);
    commits.push_back(run->snapshot());
  });
  run->start({{"argv", {"sh", "-c", "echo x >> " + marker}}});
  ASSERT_EQ(run->status(), RunStatus::kDone) << run->reason();
  EXPECT_FALSE(ranAtFirstCommit) << "the process went out before the turn that started it was "
                                    "committed";
  ASSERT_GE(commits.size(), 2u);
  // The first commit has the child out with no result: restored from it, the invoke fails
  // `interrupted` and the process does not run again.
  std::filesystem::remove(marker);
  auto restored = jr2rt::Run::Restore(registry, commits.front(), clock);
  restored->tick();
  EXPECT_EQ(restored->status(), RunStatus::kFailed);
  EXPECT_NE(restored->reason().find("interrupted: the process stopped while std.command ran"),
            std::string::npos)
      << restored->reason();
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the process ran again after the restore";
}

}  // namespace

namespace {

// Blocking host functions hold a thread each: with more out than threads, the run says so once
// (a Pool's cap of such workers is then the thread count), and every one still completes.
TEST_F(Fixture, MoreHostFunctionsOutThanThreadsIsSaidOnce) {
  jr2rt::SetEffectThreads(1);
  source.answers = {Item("A"), Item("B"), Item("C"), Item("D")};
  auto run = make("conformance_echo");
  run->start(Json::object());
  jr2rt::SetEffectThreads(0);
  ASSERT_EQ(run->status(), RunStatus::kDone) << run->reason();
  EXPECT_EQ(run->output()["items"].size(), 4u);
  int notes = 0;
  for (const auto& l : lines) {
    if (l.rfind("note: ", 0) == 0) {
      ++notes;
      EXPECT_NE(l.find("host functions are out and 1 threads run them"), std::string::npos) << l;
    }
  }
  EXPECT_EQ(notes, 1) << "said once per run";
  EXPECT_GE(jr2rt::EffectThreads(), 2) << "the default: the cores, at least 2";
}

}  // namespace

namespace {

// A host function that throws what is not a std::exception (`throw 42`) is a defect that ends
// the run `error` (docs/host-functions.md), not an abort of the host (#30).
TEST_F(Fixture, AHostFunctionThatThrowsANonExceptionEndsTheRunError) {
  source.answers = {Item("A"), Item("throw-42")};
  auto run = make("conformance_echo");
  run->start(Json::object());
  EXPECT_EQ(run->status(), RunStatus::kError) << run->reason();
  EXPECT_NE(run->reason().find("not a std::exception"), std::string::npos) << run->reason();
}

}  // namespace

namespace {

// An effect whose invoke is cancelled is stopped (#10): when a defect ends the run, the processes
// of the other workers are killed, and the run ends at once instead of waiting 30 s for them.
TEST_F(Fixture, AProcessWhoseInvokeIsCancelledIsKilled) {
  source.answers = {Item("s1"), Item("s2"), Item("d", "defect"), Item("s3")};
  auto run = make("conformance_fail_fast");
  const auto began = std::chrono::steady_clock::now();
  run->start(Json::object());
  const auto took = std::chrono::steady_clock::now() - began;
  EXPECT_EQ(run->status(), RunStatus::kError) << run->reason();
  EXPECT_LT(took, std::chrono::seconds(10)) << "the run waited for processes it no longer needs";
}

}  // namespace
