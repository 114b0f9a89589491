// Event dispatch: a generated machine (machine20.jr2: 20 states in 3 levels) against a
// hand-written C++ switch of the same machine. Both count their steps in a context variable.
#include <benchmark/benchmark.h>

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
}
BENCHMARK(BM_HandWrittenSwitch);

}  // namespace

BENCHMARK_MAIN();
