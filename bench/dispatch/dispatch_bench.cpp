// Event dispatch: a generated machine (machine20.jr2: 20 states in 3 levels) against a
// hand-written C++ switch of the same machine and the same machine in Boost.MSM
// (msm_machine.cpp). All count their steps in a context variable.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "bench/dispatch/msm_machine.h"
#include "machine20.jr2.h"

namespace {

struct NullHost : jr2rt::MachineHost {
  void startTimer(int, jr2rt::Duration) override {}
  void cancelTimer(int) override {}
  void startInvoke(const jr2rt::InvokeSpec&) override {}
  void cancelInvoke(int) override {}
  void log(const jr2rt::Json&) override {}
};

// The same machine, written by hand: the leaf state is all the configuration it needs.
class HandWritten {
 public:
  enum Event { kStep, kReset };
  void dispatch(Event e) {
    if (e == kReset) {
      leaf_ = 0;
      count_ = 0;
      return;
    }
    const int top = leaf_ / 3;
    switch (leaf_ % 3) {
      case 0:  // a_i -> b_i
      case 1:  // b_i -> k_i
        ++leaf_;
        ++count_;
        break;
      case 2:  // k_i -> t_{i+1}.m.a
        if (count_ >= 0) {
          leaf_ = ((top + 1) % 4) * 3;
          ++count_;
        }
        break;
    }
  }
  int64_t count() const { return count_; }
  int leaf() const { return leaf_; }

 private:
  int leaf_ = 0;
  int64_t count_ = 0;
};

void BM_GeneratedMachine(benchmark::State& state) {
  NullHost host;
  jr2gen::machine20::ring_machine m;
  m.start(host, jr2rt::Json::object());
  const jr2rt::Event step{jr2rt::Event::Kind::kExternal, m.eventId("step"), nullptr};
  for (auto _ : state) {
    m.dispatch(step);
  }
  benchmark::DoNotOptimize(m.context().count);
  state.SetItemsProcessed(state.iterations());
  if (m.context().count != static_cast<int64_t>(state.iterations())) {
    state.SkipWithError("the generated machine did not count every step");
  }
}
BENCHMARK(BM_GeneratedMachine);

void BM_HandWrittenSwitch(benchmark::State& state) {
  HandWritten m;
  for (auto _ : state) {
    m.dispatch(HandWritten::kStep);
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(m.count());
  state.SetItemsProcessed(state.iterations());
  if (m.count() != static_cast<int64_t>(state.iterations())) {
    state.SkipWithError("the hand switch did not count every step");
  }
}
BENCHMARK(BM_HandWrittenSwitch);

// Many machines, as a Pool has: 4,096 of each, and each event goes to one drawn at random (the
// same seeded order for both arms), so the leaf a step finds is not the one the last step left.
// The ring above is the best case for a branch predictor; this is close to its worst.
constexpr int kMachines = 4096;
std::vector<int> RandomOrder() {
  std::vector<int> order(static_cast<size_t>(kMachines) * 16);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pick(0, kMachines - 1);
  for (int& i : order) i = pick(rng);
  return order;
}

void BM_GeneratedMachines(benchmark::State& state) {
  NullHost host;
  std::vector<jr2gen::machine20::ring_machine> ms(kMachines);
  for (auto& m : ms) m.start(host, jr2rt::Json::object());
  const std::vector<int> order = RandomOrder();
  const jr2rt::Event step{jr2rt::Event::Kind::kExternal, ms[0].eventId("step"), nullptr};
  size_t next = 0;
  for (auto _ : state) {
    ms[order[next]].dispatch(step);
    if (++next == order.size()) next = 0;
  }
  state.SetItemsProcessed(state.iterations());
  int64_t steps = 0;
  for (const auto& m : ms) steps += m.context().count;
  if (steps != static_cast<int64_t>(state.iterations())) {
    state.SkipWithError("the generated machines did not count every step");
  }
}
BENCHMARK(BM_GeneratedMachines);

void BM_HandWrittenSwitches(benchmark::State& state) {
  std::vector<HandWritten> ms(kMachines);
  const std::vector<int> order = RandomOrder();
  size_t next = 0;
  for (auto _ : state) {
    ms[order[next]].dispatch(HandWritten::kStep);
    benchmark::ClobberMemory();
    if (++next == order.size()) next = 0;
  }
  state.SetItemsProcessed(state.iterations());
  int64_t steps = 0;
  for (const auto& m : ms) steps += m.count();
  if (steps != static_cast<int64_t>(state.iterations())) {
    state.SkipWithError("the hand switches did not count every step");
  }
}
BENCHMARK(BM_HandWrittenSwitches);

// Boost.MSM: one call into msm_machine.cpp an event (as jr2c's dispatch is a call into the
// generated machine's translation unit). Afterwards the hand switch takes as many steps, then a
// reset and a few more: the MSM machine must be in the same leaf with the same count each time,
// or the arm errors rather than time a machine that does something else. MsmRing is the ring
// with its compound states as submachines; MsmFlatRing the same leaves in one flat machine.
template <class Machine>
void BoostMsm(benchmark::State& state) {
  Machine m;
  for (auto _ : state) {
    m.step();
  }
  state.SetItemsProcessed(state.iterations());
  HandWritten h;
  for (benchmark::IterationCount i = 0; i < state.iterations(); ++i) h.dispatch(HandWritten::kStep);
  const auto same = [&] { return m.count() == h.count() && m.leaf() == h.leaf(); };
  if (!same()) {
    state.SkipWithError("Boost.MSM's machine and the hand switch differ after the same steps");
    return;
  }
  m.reset();
  h.dispatch(HandWritten::kReset);
  for (int i = 0; i < 7; ++i) {
    m.step();
    h.dispatch(HandWritten::kStep);
  }
  if (!same()) state.SkipWithError("Boost.MSM's machine and the hand switch differ after a reset");
}
void BM_BoostMsm(benchmark::State& state) { BoostMsm<jr2bench::MsmRing>(state); }
BENCHMARK(BM_BoostMsm);
void BM_BoostMsmFlat(benchmark::State& state) { BoostMsm<jr2bench::MsmFlatRing>(state); }
BENCHMARK(BM_BoostMsmFlat);

}  // namespace

BENCHMARK_MAIN();
