// What a new build restores (docs/runtime.md#what-a-new-build-restores): a stored run's children
// and timers are matched to the new build's by what they are, not by id. restore.jr2 holds the
// builds side by side; a run of `restore_v1` saved in `review` is restored as each later one, its
// snapshot's names swapped. On a manual clock: nothing here sleeps.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "jr2/json_value.h"
#include "jr2/run.h"
#include "restore.jr2.h"

namespace {

using jr2rt::Json;
using jr2rt::RunStatus;
constexpr int64_t kMinute = 60'000;

struct Restore : testing::Test {
  jr2rt::Registry registry;
  jr2rt::ManualClock clock;
  Restore() { jr2gen::restore::RegisterWorkflows(registry); }

  // A run of `restore_v1` escalated to `review`: its child `check` waits at its Gate, its
  // `after 1h` is armed. Its snapshot, as build `k` names it.
  Json savedIn(int k) {
    auto run =
        std::make_unique<jr2rt::Run>(registry, *registry.workflow("restore_v1"), "r1", clock);
    run->start(Json::object());
    run->send("restore_triage", "restore_escalate", Json::object());
    EXPECT_EQ(run->status(), RunStatus::kWaiting);
    std::string text = run->snapshot().dump();
    for (const char* from : {"restore_v1", "restore_m1"}) {
      std::string to = from;
      to.back() = static_cast<char>('0' + k);
      for (size_t at = text.find(from); at != std::string::npos;
           at = text.find(from, at + to.size())) {
        text.replace(at, to.size(), to);
      }
    }
    return Json::parse(text);
  }
};

// `restore_v2` invokes a Gate more, and has an `after` more, in `triage`: the child of `review`
// is invoke 2 there (1 in v1), its timer timer 1 (0 in v1). The child's `done` still reaches
// `on done as check`.
TEST_F(Restore, AChildWhoseIdMovedStillReachesItsOnDone) {
  auto run = jr2rt::Run::Restore(registry, savedIn(2), clock);
  ASSERT_EQ(run->status(), RunStatus::kWaiting);
  run->send("check.restore_checking", "restore_pass", Json::object());
  ASSERT_EQ(run->status(), RunStatus::kDone) << run->reason();
  EXPECT_EQ(run->output(), "approved");
}

// … and its `after 1h` still fires as `review`'s, not as `triage`'s `after 30m`, whose id it
// had in v1.
TEST_F(Restore, ATimerWhoseIdMovedStillFiresItsOwnAfter) {
  auto run = jr2rt::Run::Restore(registry, savedIn(2), clock);
  clock.advance(kMinute * 30);
  run->tick();
  EXPECT_EQ(run->status(), RunStatus::kWaiting) << "30 minutes are not `review`'s hour";
  clock.advance(kMinute * 30);
  run->tick();
  ASSERT_EQ(run->status(), RunStatus::kDone) << run->reason();
  EXPECT_EQ(run->output(), "expired");
}

// A restored run keeps the new ids: saved again and restored again by the same build, it goes on.
TEST_F(Restore, TheNewIdsAreTheOnesSavedNext) {
  auto run = jr2rt::Run::Restore(registry, savedIn(2), clock);
  const Json again = run->snapshot();
  EXPECT_EQ(again["top"]["children"][0]["spec"]["id"], 2);
  EXPECT_EQ(again["top"]["timers"][0]["id"], 1);
  EXPECT_EQ(again["top"]["timers"][0]["state"], "review");
  run = jr2rt::Run::Restore(registry, again, clock);
  run->send("check.restore_checking", "restore_pass", Json::object());
  EXPECT_EQ(run->status(), RunStatus::kDone) << run->reason();
}

// Build `k` no longer fits the saved run: its restore throws NoLongerFits with `reason`.
void ExpectRefused(Restore& t, int k, const char* reason) {
  try {
    jr2rt::Run::Restore(t.registry, t.savedIn(k), t.clock);
    ADD_FAILURE() << "build " << k << " restored a run it no longer fits";
  } catch (const jr2rt::NoLongerFits& e) {
    EXPECT_STREQ(e.what(), reason);
  }
}

// `restore_v3`'s `review` no longer invokes `restore_check`: the run no longer fits, and the
// reason names the child and the state (what `jr2c diff` says beforehand as D0706).
TEST_F(Restore, AChildTheNewBuildNoLongerInvokesIsRefused) {
  ExpectRefused(*this, 3,
                "the saved run of `restore_m3` waits on `restore_check` as `check` in state "
                "`review`, which this build no longer invokes there");
}

// `restore_v4`'s `review` has `after 2h`, not `after 1h` (D0708).
TEST_F(Restore, ATimerTheNewBuildNoLongerHasIsRefused) {
  ExpectRefused(*this, 4,
                "the saved run of `restore_m4` has the `after 1h` of state `review` armed, "
                "which this build no longer has");
}

// A snapshot saved before timers kept their state is restored by id, as before.
TEST_F(Restore, ATimerSavedWithoutItsStateKeepsItsId) {
  Json saved = savedIn(1);
  saved["top"]["timers"][0].erase("state");
  auto run = jr2rt::Run::Restore(registry, saved, clock);
  clock.advance(kMinute * 60);
  run->tick();
  EXPECT_EQ(run->output(), "expired");
}

}  // namespace
