// The statechart IR: target resolution and the two analyses the load walk relies on.
#include <gtest/gtest.h>
#include <llvm/Support/Casting.h>

#include <algorithm>
#include <stdexcept>

#include "compiler/driver/driver.h"
#include "compiler/ir/statechart.h"
#include "compiler/sema/program.h"
#include "compiler/sema/rules.h"

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

// The lowering (#13): each transition's domain, exit and entry sets, decided once here for the
// runtime's tables and the generated fast path.
TEST(Statechart, TheLoweringDecidesEachTransitionsDomainExitsAndEntries) {
  Charts c(kShape);
  const ir::Machine& m = c.machine();
  auto ids = [&](std::initializer_list<const char*> paths) {
    std::vector<ir::StateId> out;
    for (const char* p : paths) out.push_back(*p == 0 ? 0 : c.id(p));
    std::sort(out.begin(), out.end());  // document order
    return out;
  };
  auto transition = [&](const char* from, size_t i) -> const ir::Transition& {
    return m.states[static_cast<size_t>(c.id(from))].transitions.at(i);
  };
  EXPECT_EQ(m.initial, ids({"", "idle"}));
  // idle -> busy: the root's domain; entering the parallel state enters both regions' defaults.
  const ir::Transition& toBusy = transition("idle", 0);
  EXPECT_EQ(toBusy.domain, 0);
  EXPECT_EQ(toBusy.entries,
            ids({"busy", "busy.left", "busy.left.l1", "busy.right", "busy.right.r1"}));
  EXPECT_EQ(toBusy.exits.size(), m.states.size() - 1) << "every state below the root";
  // l1 -> l2 inside the region `left`: the domain is `left` (a parallel state is never one).
  const ir::Transition& inLeft = transition("busy.left.l1", 0);
  EXPECT_EQ(inLeft.domain, c.id("busy.left"));
  EXPECT_EQ(inLeft.exits, ids({"busy.left.l1", "busy.left.l2"}));
  EXPECT_EQ(inLeft.entries, ids({"busy.left.l2"}));
  // l2 -> idle: out of the parallel state, from the root's domain.
  const ir::Transition& back = transition("busy.left.l2", 0);
  EXPECT_EQ(back.domain, 0);
  EXPECT_EQ(back.entries, ids({"idle"}));
  // inner -> orphan: a transition to its own ancestor leaves and enters it again.
  const ir::Transition& up = transition("orphan.inner", 0);
  EXPECT_EQ(up.domain, 0);
  EXPECT_EQ(up.entries, ids({"orphan", "orphan.inner"}));
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

TEST(Statechart, TheLoweringResolvesEachTrigger) {
  Charts c(R"(
event zeta
event alpha
machine child {
  initial state s {
    on alpha -> e
  }
  final state e {}
}
machine m {
  initial state one {
    invoke child() as kid
    on done -> two
    on zeta -> two
    after 5s -> two
  }
  state two {
    invoke child() as a
    invoke child() as b
    on done as b -> three
    on alpha -> one
    after 1m -> three
  }
  final state three {}
}
)");
  ASSERT_FALSE(c.diags.hasErrors());
  const ir::Machine& m = c.charts.machines.at(1);
  ASSERT_EQ(m.decl->name.text, "m");
  // Events sorted by name; invokes and timers in state order.
  ASSERT_EQ(m.events.size(), 2u);
  EXPECT_EQ(m.events[0]->name.text, "alpha");
  EXPECT_EQ(m.events[1]->name.text, "zeta");
  ASSERT_EQ(m.invokes.size(), 3u);
  EXPECT_EQ(m.invokes[0]->as->text, "kid");
  EXPECT_EQ(m.timers.size(), 2u);
  using T = ir::Transition::Trigger;
  const auto& one = m.states[1].transitions;
  EXPECT_EQ(one[0].trigger, T::kDone);
  EXPECT_EQ(one[0].heard, m.invokes[0]) << "the state's only invoke";
  EXPECT_EQ(one[0].triggerId, 0);
  EXPECT_EQ(one[1].trigger, T::kEvent);
  EXPECT_EQ(one[1].triggerId, 1) << "zeta sorts after alpha";
  EXPECT_EQ(one[2].trigger, T::kTimer);
  EXPECT_EQ(one[2].triggerId, 0);
  const auto& two = m.states[2].transitions;
  EXPECT_EQ(two[0].heard, m.invokes[2]) << "`on done as b` hears `b`";
  EXPECT_EQ(two[0].triggerId, 2);
  EXPECT_EQ(two[1].triggerId, 0);
  EXPECT_EQ(two[2].triggerId, 1);
  EXPECT_EQ(m.timers[1], &two[2]);
}

TEST(SemaRules, AnItemBindsTheOnlyParameterOrTheOnlyOneWithoutADefault) {
  Charts c(R"(
machine one(a: string) {
  initial final state end {}
}
machine defaults(a: string = "x", b: string, c: int = 2) {
  initial final state end {}
}
machine two(a: string, b: string) {
  initial final state end {}
}
machine none(a: string = "x", b: string = "y") {
  initial final state end {}
}
)");
  ASSERT_FALSE(c.diags.hasErrors());
  auto bound = [&](size_t i) {
    const ast::Param* p = sema::BoundParam(c.charts.machines.at(i).decl->params);
    return p == nullptr ? std::string("-") : p->name.text.str();
  };
  EXPECT_EQ(bound(0), "a");
  EXPECT_EQ(bound(1), "b") << "the only one without a default";
  EXPECT_EQ(bound(2), "-") << "two required: the item is the whole input";
  EXPECT_EQ(bound(3), "-") << "all have defaults: nothing to bind";
}

}  // namespace
}  // namespace jr2

namespace jr2 {
namespace {

// `jr2c check` does not keep the type of every expression (sema::Keep::kReports); `compile`
// does, and code generation reads it. Reading what was not kept is a bug of the compiler, and
// says so, rather than every expression reading as `json`.
TEST(TypeInfo, ExpressionTypesAreKeptForCodeGenerationOnly) {
  const std::string text = "machine m(n: int) {\n  var x: int = n + 1\n  initial state a {}\n}\n";
  for (const sema::Keep keep : {sema::Keep::kReports, sema::Keep::kCodegen}) {
    SourceManager sm;
    Diagnostics diags;
    sema::Program program = std::move(sema::LoadText(sm, "t.jr2", text, diags, false).program);
    driver::Analyze(program, diags, keep);
    ASSERT_EQ(diags.errorCount(), 0u);
    const auto* m = llvm::cast<ast::MachineDecl>(program.roots.front()->ast->decls.front().get());
    const ast::Expr* init = m->vars.front().init.get();
    const sema::ExprTypes& types = program.typeInfo->exprTypes;
    if (keep == sema::Keep::kCodegen) {
      ASSERT_NE(types.find(init), nullptr);
      EXPECT_EQ(types.find(init)->kind, sema::Type::Kind::kInt);
      EXPECT_EQ(m->vars.front().type->checked, types.find(init)) << "`int`, the one type";
    } else {
      EXPECT_EQ(types.size(), 0u);
      EXPECT_THROW(types.find(init), std::logic_error);
    }
    // The tree keeps the checker's types (ast::TypeRef::checked): a second check is refused.
    EXPECT_THROW(sema::CheckTypes(program, diags), std::logic_error);
  }
}

}  // namespace
}  // namespace jr2
