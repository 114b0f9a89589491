// A workflow's concurrency worked out at compile time (walk/budget.h, docs/checks.md#e0412): the
// samples' figures, and the rules one at a time — caps multiply down a path, regions and sibling
// invokes add, one region's states take the largest, `min` bounds a cap, a dispatch counts runs.
#include "compiler/walk/budget.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/driver/driver.h"
#include "compiler/sema/program.h"

namespace jr2 {
namespace {

struct Figures {
  SourceManager sm;
  Diagnostics diags;
  sema::Program program;
  ir::Program charts;
  std::vector<walk::WorkflowConcurrency> all;

  static Figures FromText(const std::string& text) {
    Figures f;
    f.program = std::move(sema::LoadText(f.sm, "t.jr2", text, f.diags, false).program);
    f.charts = driver::Analyze(f.program, f.diags);
    f.all = walk::WorkOutConcurrency(f.program, f.charts);
    return f;
  }
  static Figures FromFile(const std::string& path) {
    Figures f;
    f.program = std::move(sema::Load(f.sm, {path}, f.diags).program);
    f.charts = driver::Analyze(f.program, f.diags);
    f.all = walk::WorkOutConcurrency(f.program, f.charts);
    return f;
  }
  std::string of(const std::string& workflow) const {
    for (const auto& wc : all) {
      if (wc.workflow->name.text == workflow) return walk::Describe(wc.most);
    }
    return "no workflow " + workflow;
  }
  const walk::Concurrency* most(const std::string& workflow) const {
    for (const auto& wc : all) {
      if (wc.workflow->name.text == workflow) return &wc.most;
    }
    return nullptr;
  }
};

TEST(Budget, Samples) {
  const std::string root = JR2_SOURCE_DIR;
  {
    const Figures f = Figures::FromFile(root + "/samples/tickets/tickets.jr2");
    ASSERT_FALSE(f.diags.hasErrors());
    EXPECT_EQ(f.of("tickets"), "2 workers, 0 processes, 0 runs");  // cap 2, Gates only
  }
  {
    const Figures f = Figures::FromFile(root + "/samples/build-matrix/build_matrix.jr2");
    ASSERT_FALSE(f.diags.hasErrors());
    // `cap: min(input.jobs, 8)`; each build runs one command at a time.
    EXPECT_EQ(f.of("build_matrix"), "8 workers, 8 processes, 0 runs");
    EXPECT_EQ(f.most("build_matrix")->processes.path, "matrix 8");
  }
  {
    const Figures f = Figures::FromFile(root + "/samples/alert-triage/alert_triage.jr2");
    ASSERT_FALSE(f.diags.hasErrors());
    EXPECT_EQ(f.of("triage"), "0 workers, 0 processes, 0 runs");  // an Agent and a Gate
    EXPECT_EQ(f.of("alerts"), "0 workers, 0 processes, 4 runs");  // a Pool of runs, cap 4
  }
}

constexpr const char* kTypes = R"(
type P {
  id: string
  parts: list<P> = []
}
source ps(items: list<P>): P {
  next: std.queue(items)
}
)";

TEST(Budget, CapsMultiplyDownAPath) {
  const Figures f = Figures::FromText(std::string(kTypes) + R"(
machine build(p: P) {
  initial state running {
    invoke std.command({ argv: ["make", p.id] })
    on done -> built
  }
  final state built
}
pool builds(items: list<P>) of build {
  source: ps(input.items)
  item_id: item.id
  cap: 8
}
machine ticket(t: P) {
  initial state building {
    invoke builds(items: t.parts)
    on done -> finished
  }
  final state finished
}
pool tickets(items: list<P>) of ticket {
  source: ps(input.items)
  item_id: item.id
  cap: 4
}
workflow w = tickets
)");
  ASSERT_FALSE(f.diags.hasErrors());
  EXPECT_EQ(f.of("w"), "36 workers, 32 processes, 0 runs");  // 4 × (1 + 8), 4 × 8
  EXPECT_EQ(f.most("w")->processes.path, "tickets 4 × builds 8");
}

TEST(Budget, RegionsAndInvokesAddAndStatesTakeTheLargest) {
  const Figures f = Figures::FromText(std::string(kTypes) + R"(
machine m(p: P) {
  initial parallel state both {
    state a {
      initial state one {
        invoke std.command({ argv: ["a"] }) as x
        invoke std.command({ argv: ["b"] }) as y
        on done as x -> two
      }
      state two {
        invoke std.command({ argv: ["c"] })
        on done -> three
      }
      final state three
    }
    state b {
      initial state one {
        invoke std.command({ argv: ["d"] })
        on done -> two
      }
      final state two
    }
  }
}
pool many(items: list<P>, jobs: int = 5) of m {
  source: ps(input.items)
  item_id: item.id
  cap: min(input.jobs, 3)
}
workflow w = many
workflow one = m
)");
  ASSERT_FALSE(f.diags.hasErrors()) << f.diags.all().front().message;
  EXPECT_EQ(f.of("one"), "0 workers, 3 processes, 0 runs");  // (1 + 1) in region a, + 1 in b
  EXPECT_EQ(f.of("w"), "3 workers, 9 processes, 0 runs");    // min(jobs, 3) × 3
}

TEST(Budget, AGateAnAgentAndAHostFunctionStartNoProcess) {
  const Figures f = Figures::FromText(R"(
event go external "Go."
extern host(x: string) -> string
machine m {
  initial state waiting {
    invoke gate
    on go -> calling
  }
  state calling {
    invoke extern host("x")
    on done -> finished
  }
  final state finished
}
workflow w = m
)");
  ASSERT_FALSE(f.diags.hasErrors());
  EXPECT_EQ(f.of("w"), "0 workers, 0 processes, 0 runs");
}

}  // namespace
}  // namespace jr2
