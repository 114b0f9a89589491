// The statechart IR: target resolution and the two analyses the load walk relies on.
#include <gtest/gtest.h>

#include "compiler/driver/driver.h"
#include "compiler/ir/statechart.h"
#include "compiler/sema/program.h"

namespace jr2 {
namespace {

struct Charts {
  SourceManager sm;
  Diagnostics diags;
  sema::Program program;
  ir::Program charts;

  explicit Charts(const std::string& text) {
    program = std::move(sema::LoadText(sm, "t.jr2", text, diags, false).program);
    charts = driver::Analyze(program, diags);
  }
  const ir::Machine& machine() const { return charts.machines.front(); }
  ir::StateId id(const std::string& path) const {
    for (const auto& s : machine().states) {
      if (s.path == path) return s.id;
    }
    ADD_FAILURE() << "no state " << path;
    return 0;
  }
};

constexpr const char* kShape = R"(
event go
event back
machine m {
  initial state idle {
    on go -> busy
  }
  parallel state busy {
    state left {
      initial state l1 {
        on go -> l2
      }
      state l2 {
        on back -> idle
      }
    }
    state right {
      initial state r1 {}
    }
  }
  state orphan {
    initial state inner {
      on go -> orphan
    }
  }
}
)";

TEST(Statechart, ActiveTogetherFollowsRegionsAndNesting) {
  Charts c(kShape);
  const ir::Machine& m = c.machine();
  // Regions of one parallel state: together.
  EXPECT_TRUE(m.canBeActiveTogether(c.id("busy.left.l1"), c.id("busy.right.r1")));
  EXPECT_TRUE(m.canBeActiveTogether(c.id("busy.left"), c.id("busy.right")));
  // Nested: together. One state with itself: together.
  EXPECT_TRUE(m.canBeActiveTogether(c.id("busy"), c.id("busy.left.l2")));
  EXPECT_TRUE(m.canBeActiveTogether(c.id("idle"), c.id("idle")));
  // Siblings of a compound state, or two states of one region: never together.
  EXPECT_FALSE(m.canBeActiveTogether(c.id("idle"), c.id("busy")));
  EXPECT_FALSE(m.canBeActiveTogether(c.id("busy.left.l1"), c.id("busy.left.l2")));
  EXPECT_FALSE(m.canBeActiveTogether(c.id("idle"), c.id("orphan.inner")));
}

TEST(Statechart, EnterableFromTheInitialConfiguration) {
  Charts c(kShape);
  const auto entered = c.machine().enterable();
  EXPECT_TRUE(entered[c.id("idle")]);
  EXPECT_TRUE(entered[c.id("busy")]);
  EXPECT_TRUE(entered[c.id("busy.right.r1")]);  // a region of an entered parallel state
  EXPECT_TRUE(entered[c.id("busy.left.l2")]);   // by a transition from an entered state
  // `orphan`'s only way in is its own child's transition into it, which does not count.
  EXPECT_FALSE(entered[c.id("orphan")]);
  EXPECT_FALSE(entered[c.id("orphan.inner")]);
}

TEST(Statechart, TargetsResolveToSiblingsThenEnclosingSiblings) {
  Charts c(kShape);
  const ir::Machine& m = c.machine();
  // `on back -> idle` in busy.left.l2 finds `idle` two levels up.
  const auto& l2 = m.states[c.id("busy.left.l2")];
  ASSERT_EQ(l2.transitions.size(), 1u);
  EXPECT_EQ(l2.transitions[0].target, c.id("idle"));
  const auto& l1 = m.states[c.id("busy.left.l1")];
  EXPECT_EQ(l1.transitions[0].target, c.id("busy.left.l2"));
}

}  // namespace
}  // namespace jr2
