// Read Sources (docs/runtime.md#read-sources), on the manual clock with a scripted read: one read
// claims every free slot, known ids are dropped, a settle or a wake during a read makes exactly one
// more read, an item with no usable id is marked `skipped` once in a run's life, and a failed read
// gives no items.
#include <gtest/gtest.h>

#include <deque>

#include "jr2/run.h"
#include "pool.jr2.h"

namespace {

using jr2rt::Json;
using jr2rt::RunStatus;

Json Items(std::initializer_list<const char*> ids) {
  Json items = Json::array();
  for (const char* id : ids) items.push_back({{"id", id}, {"mode", "wait"}});
  return {{"items", items}};
}

struct Reads : testing::Test {
  jr2rt::Registry registry;
  jr2rt::ManualClock clock;
  int reads = 0;
  bool defer = false;
  std::deque<Json> answers;  // answered in order; when empty: no items
  std::deque<std::function<void(Json)>> pending;
  std::deque<std::function<void(const jr2rt::Failure&)>> failing;
  std::vector<jr2rt::Run::FeedEvent> events;
  Reads() { jr2gen::pool::RegisterWorkflows(registry); }

  std::unique_ptr<jr2rt::Run> make(const std::string& workflow) {
    auto run = std::make_unique<jr2rt::Run>(registry, *registry.workflow(workflow), "r", clock);
    run->scriptRead("scripted_read", [this](const Json&, std::function<void(Json)> answer,
                                            std::function<void(const jr2rt::Failure&)> failed) {
      ++reads;
      if (defer) {
        pending.push_back(std::move(answer));
        failing.push_back(std::move(failed));
        return;
      }
      Json a = answers.empty() ? Items({}) : answers.front();
      if (!answers.empty()) answers.pop_front();
      if (a.is_string()) return failed(jr2rt::Failure(a.get<std::string>()));
      answer(a);
    });
    run->onEvent([this](const jr2rt::Run::FeedEvent& e) { events.push_back(e); });
    return run;
  }
  std::vector<std::string> started() const {
    std::vector<std::string> out;
    for (const auto& e : events) {
      if (e.kind == "started") out.push_back(e.parsedData()["item"].get<std::string>());
    }
    return out;
  }
  int count(const std::string& kind) const {
    int n = 0;
    for (const auto& e : events) n += e.kind == kind ? 1 : 0;
    return n;
  }
  // Answers the oldest read in flight, and drives the run.
  void answer(jr2rt::Run& run, const Json& a) {
    auto fn = std::move(pending.front());
    pending.pop_front();
    failing.pop_front();
    fn(a);
    run.tick();
  }
};

TEST_F(Reads, OneReadClaimsEveryFreeSlotInItsOrder) {
  answers = {Items({"A", "B", "C", "D", "E"})};
  auto run = make("conformance_read");
  run->start({{"jobs", 3}});
  EXPECT_EQ(started(), (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_EQ(reads, 1) << "one read fills every free slot: no read per claim";
}

TEST_F(Reads, KnownIdsAreDroppedBeforeAClaim) {
  answers = {Items({"A", "B"}), Items({"A", "B", "C"}), Items({"B", "C", "D"})};
  auto run = make("conformance_read");
  run->start({{"jobs", 2}});
  EXPECT_EQ(started(), (std::vector<std::string>{"A", "B"}));
  // A settles: the read finds A (settled) and B (live) again, and claims only C.
  run->send("A.working", "finish", Json::object());
  EXPECT_EQ(started(), (std::vector<std::string>{"A", "B", "C"}));
  // B settles: B and C are known, D is new.
  run->send("B.working", "finish", Json::object());
  EXPECT_EQ(started(), (std::vector<std::string>{"A", "B", "C", "D"}));
  EXPECT_EQ(reads, 3);
  EXPECT_EQ(count("started"), 4) << "no item started twice";
}

TEST_F(Reads, ASettleAndAWakeDuringAReadMakeExactlyOneMoreRead) {
  defer = true;
  auto run = make("conformance_read");
  run->start({{"jobs", 2}});
  ASSERT_EQ(pending.size(), 1u);
  answer(*run, Items({"A", "B"}));
  EXPECT_EQ(started(), (std::vector<std::string>{"A", "B"}));
  // A settles: read 2 goes out. While it is in flight, B settles and the source is woken.
  run->send("A.working", "finish", Json::object());
  ASSERT_EQ(reads, 2);
  run->send("B.working", "finish", Json::object());
  run->send("source", "poke", Json::object());
  EXPECT_EQ(reads, 2) << "no read while one is in flight: the latch is set";
  answer(*run, Items({"A", "B"}));
  EXPECT_EQ(reads, 3) << "the latch makes one more read after it";
  answer(*run, Items({}));
  EXPECT_EQ(reads, 3) << "and only one";
  EXPECT_EQ(run->status(), RunStatus::kDone) << run->reason();
  EXPECT_EQ(run->output()["status"], "drained");
}

TEST_F(Reads, AnItemWithNoUsableIdIsSkippedWithAMarkOnceInTheRunsLife) {
  const Json noId = {{"mode", "wait"}};
  Json first = Items({"", "X"});
  first["items"].push_back(noId);
  answers = {first, first, first};
  auto run = make("conformance_read");
  run->start({{"jobs", 3}});
  EXPECT_EQ(started(), std::vector<std::string>{"X"}) << "the rest are claimed";
  EXPECT_EQ(count("skipped"), 2) << "the empty id and the missing one, each once";
  for (const auto& e : events) {
    if (e.kind != "skipped") continue;
    EXPECT_TRUE(e.parsedData().contains("item")) << e.line;
    EXPECT_NE(e.line.find("skipped an item"), std::string::npos) << e.line;
  }
  // The poll reads the same items again: no new mark. Nor after a restore.
  clock.advance(10000);
  run->tick();
  EXPECT_EQ(reads, 2);
  EXPECT_EQ(count("skipped"), 2);
  const Json saved = run->snapshot();
  auto again = jr2rt::Run::Restore(registry, saved, clock);
  again->scriptRead("scripted_read", [this, first](const Json&, std::function<void(Json)> answer,
                                                   std::function<void(const jr2rt::Failure&)>) {
    ++reads;
    answer(first);
  });
  again->onEvent([this](const jr2rt::Run::FeedEvent& e) { events.push_back(e); });
  clock.advance(10000);
  again->tick();
  EXPECT_EQ(reads, 3);
  EXPECT_EQ(count("skipped"), 2) << "marked once in the run's life, across a restore";
}

TEST_F(Reads, AFailedReadGivesNoItemsAndThePollReadsAgain) {
  answers = {Json("the service answered 503"), Items({"A"})};
  auto run = make("conformance_read");
  run->start({{"jobs", 2}});
  EXPECT_TRUE(started().empty());
  EXPECT_EQ(count("read-failed"), 1);
  EXPECT_EQ(run->status(), RunStatus::kWaiting) << "waiting for its poll";
  clock.advance(10000);
  run->tick();
  EXPECT_EQ(started(), std::vector<std::string>{"A"});
  EXPECT_EQ(reads, 2);
}

TEST_F(Reads, AnAnswerWithNoListOfItemsIsAFailedRead) {
  answers = {Json{{"items", "not a list"}}};
  auto run = make("conformance_read");
  run->start({{"jobs", 2}});
  ASSERT_EQ(count("read-failed"), 1);
  for (const auto& e : events) {
    if (e.kind == "read-failed") {
      EXPECT_NE(e.line.find("a string, not a list"), std::string::npos) << e.line;
    }
  }
}

TEST_F(Reads, AFailedReadThatNothingWouldReadAgainFailsThePool) {
  answers = {Json("connection refused")};
  auto run = make("conformance_read_once");
  run->start(Json::object());
  EXPECT_EQ(run->status(), RunStatus::kFailed);
  EXPECT_NE(run->reason().find("no poll_every or wake to read again"), std::string::npos)
      << run->reason();
}

TEST_F(Reads, AReadThatFindsNothingNewWithNothingLiveDrainsThePool) {
  answers = {Items({"A"}), Items({"A"})};
  auto run = make("conformance_read_once");
  run->start(Json::object());
  run->send("A.working", "finish", Json::object());
  EXPECT_EQ(run->status(), RunStatus::kDone) << run->reason();
  EXPECT_EQ(run->output()["items"].size(), 1u);
  EXPECT_EQ(reads, 2);
}

// Hooks on a read Source: `reread` reads again now (and latches one more read during one), a
// `skip` line gives its reason, an event with no line is skipped saying so.
TEST_F(Reads, AHookRereadReadsAgainAndASkipSaysWhy) {
  defer = true;
  auto run = make("conformance_read");
  run->start({{"jobs", 3}});
  answer(*run, Items({"A"}));
  ASSERT_EQ(reads, 1);
  EXPECT_EQ(run->hook("forge", "issues.labeled", Json::object()).json(),
            (Json{{"verdict", "reread"}, {"reason", ""}}));
  EXPECT_EQ(reads, 2) << "a free slot and no read out: the reread reads now";
  EXPECT_EQ(run->hook("forge", "issues.labeled", Json::object()).json()["verdict"], "reread");
  EXPECT_EQ(reads, 2) << "a read is out: the reread latches";
  answer(*run, Items({"A", "B"}));
  EXPECT_EQ(reads, 3) << "one more read after it";
  answer(*run, Items({"A", "B", "C"}));
  EXPECT_EQ(started(), (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_EQ(count("reread"), 2);
  EXPECT_EQ(run->hook("forge", "issues.closed", {{"action", "closed"}}).json(),
            (Json{{"verdict", "skipped"}, {"reason", "closed issues start nothing"}}));
  // Not `heard`: no hook of the Source took the event key; RunHost::deliverHook ranks such a
  // skip below any other, for the delivery's top-level reason.
  const jr2rt::HookVerdict unheard = run->hook("forge", "push", Json::object());
  EXPECT_EQ(unheard.json(), (Json{{"verdict", "skipped"},
                                  {"reason", "source `read_items` has no hook for forge `push`"}}));
  EXPECT_FALSE(unheard.heard);
  EXPECT_EQ(run->hook("sentry", "issues.labeled", Json::object()).json()["verdict"], "skipped");
  EXPECT_EQ(reads, 3) << "a skip reads nothing";
}

}  // namespace
