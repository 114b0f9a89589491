// jr2rt::Task, the run's step: a move-only callable kept in place up to 56 bytes, on the heap
// beyond. Each callable is called where it is, moved whole, and destroyed exactly once, whichever
// way it is stored.
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <string>
#include <utility>

#include "jr2/run.h"

namespace {

// Counts the live copies of what a callable captured: `use_count() - 1` of the test's own.
struct Probe {
  std::shared_ptr<int> token = std::make_shared<int>(0);
  long held() const { return token.use_count() - 1; }
};

TEST(Task, SmallCallableRunsMovesAndDiesOnce) {
  Probe p;
  std::string seen;
  {
    jr2rt::Task t([token = p.token, &seen, text = std::string("inline")] { seen += text; });
    EXPECT_EQ(p.held(), 1);
    t();
    t();
    EXPECT_EQ(seen, "inlineinline");
    jr2rt::Task moved(std::move(t));
    EXPECT_FALSE(static_cast<bool>(t));  // NOLINT(bugprone-use-after-move): the test's point
    EXPECT_TRUE(static_cast<bool>(moved));
    EXPECT_EQ(p.held(), 1) << "a move leaves one callable, not two";
    moved();
    EXPECT_EQ(seen, "inlineinlineinline");
  }
  EXPECT_EQ(p.held(), 0) << "destroyed with its Task";
}

TEST(Task, LargeCallableGoesToTheHeapWithTheSameSemantics) {
  Probe p;
  std::array<char, 200> big{};  // more than the 56 bytes kept in place
  big[199] = 'x';
  char seen = 0;
  {
    jr2rt::Task t([token = p.token, big, &seen] { seen = big[199]; });
    jr2rt::Task moved(std::move(t));
    EXPECT_EQ(p.held(), 1);
    moved();
    EXPECT_EQ(seen, 'x');
  }
  EXPECT_EQ(p.held(), 0);
}

TEST(Task, AssignmentDestroysWhatItReplaces) {
  Probe first, second;
  jr2rt::Task t([token = first.token] {});
  t = jr2rt::Task([token = second.token] {});
  EXPECT_EQ(first.held(), 0) << "the replaced callable is destroyed at once";
  EXPECT_EQ(second.held(), 1);
  jr2rt::Task empty;
  t = std::move(empty);
  EXPECT_EQ(second.held(), 0);
  EXPECT_FALSE(static_cast<bool>(t));
}

// A mutable callable keeps its state across calls (the run's steps are called once, but a
// lambda that moves its capture out on the call must be allowed).
TEST(Task, MutableCallableMovesItsCaptureOut) {
  std::string out;
  jr2rt::Task t([s = std::string(100, 'a'), &out]() mutable { out = std::move(s); });
  t();
  EXPECT_EQ(out, std::string(100, 'a'));
}

}  // namespace
