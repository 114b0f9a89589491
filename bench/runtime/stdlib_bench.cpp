// std.queue and std.backlog through a real Pool (bench/runtime/std_sources.jr2: cap 64, workers
// that settle at once, items keyed by `pkg`), beside the floor measured in the same run: the same
// Pool over a scripted `next` that hands the items from a vector, which costs the Pool's own work
// and no Source work. docs/performance.md has the figures.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "jr2/run.h"
#include "jr2/stdlib.h"
#include "std_sources.jr2.h"

// The runner's `scripted_next`: the benchmark scripts it on each run instead.
jr2rt::Json jr2gen::std_sources::scripted_next(const jr2rt::Json&, const jr2rt::NextQuery&) {
  throw jr2rt::Defect("scripted_next is scripted by the benchmark");
}

namespace {

using jr2rt::Json;

// N items `p0`…; with `chain`, item i needs item i-64 (so about 64 are ready at any time and
// each settle releases one), else none needs anything.
Json Items(int64_t n, bool chain) {
  Json items = Json::array();
  for (int64_t i = 0; i < n; ++i) {
    Json item = {{"pkg", "p" + std::to_string(i)}};
    item["needs"] = chain && i >= 64 ? Json::array({"p" + std::to_string(i - 64)}) : Json::array();
    items.push_back(std::move(item));
  }
  return items;
}

jr2rt::Registry& Programs() {
  static jr2rt::Registry registry = [] {
    jr2rt::Registry r;
    jr2gen::std_sources::RegisterWorkflows(r);
    return r;
  }();
  return registry;
}

void Drain(benchmark::State& state, jr2rt::Run& run, const Json& input, int64_t n) {
  run.start(input);
  if (run.status() != jr2rt::RunStatus::kDone || run.output()["items"].size() != size_t(n))
    state.SkipWithError(("the run did not drain: " + run.reason()).c_str());
}

// The floor: the items from a vector, one per call.
void BM_Floor(benchmark::State& state) {
  const int64_t n = state.range(0), cap = state.range(1);
  const Json items = Items(n, false);
  const Json input = {{"items", items}, {"jobs", cap}};
  jr2rt::ManualClock clock;
  for (auto _ : state) {
    jr2rt::Run run(Programs(), *Programs().workflow("bench_scripted"), "bench", clock);
    size_t next = 0;
    run.scriptNext("scripted_next",
                   [&](const jr2rt::NextQuery&, const std::function<void(Json)>& answer) {
                     if (next == items.size()) return answer({{"item", nullptr}, {"open", 0}});
                     answer({{"item", items[next++]}, {"open", 0}});
                   });
    Drain(state, run, input, n);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_Floor)->Args({10000, 64})->Unit(benchmark::kMillisecond);

void BM_Queue(benchmark::State& state) {
  const int64_t n = state.range(0), cap = state.range(1);
  const Json input = {{"items", Items(n, false)}, {"jobs", cap}};
  jr2rt::ManualClock clock;
  for (auto _ : state) {
    jr2rt::Run run(Programs(), *Programs().workflow("bench_queue"), "bench", clock);
    Drain(state, run, input, n);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_Queue)->Args({10000, 64})->Unit(benchmark::kMillisecond);

// A backlog file per shape, written once. `settled`: the file is older than the 2 s in which
// stat cannot tell a same-size edit (the usual case: a backlog is not written while the run
// starts), so a call reads only its stamp. Otherwise the file is written again before each run,
// and every call within those 2 s reads and compares its bytes.
std::string BacklogFile(int64_t n, bool chain) {
  std::string path =
      "/tmp/jr2_stdlib_bench_" + std::to_string(n) + (chain ? "_chain" : "") + ".json";
  std::ofstream(path) << Items(n, chain).dump();
  return path;
}

void BM_Backlog(benchmark::State& state) {
  const int64_t n = state.range(0), cap = state.range(1);
  const bool chain = state.range(2) != 0, settled = state.range(3) != 0;
  const std::string path = BacklogFile(n, chain);
  if (settled) std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  const Json input = {{"file", path}, {"jobs", cap}};
  jr2rt::ManualClock clock;
  for (auto _ : state) {
    if (!settled) {
      state.PauseTiming();
      BacklogFile(n, chain);
      state.ResumeTiming();
    }
    jr2rt::Run run(Programs(), *Programs().workflow("bench_backlog"), "bench", clock);
    Drain(state, run, input, n);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_Backlog)
    ->ArgNames({"items", "cap", "chain", "settled"})
    ->Args({10000, 64, 0, 1})
    ->Args({10000, 64, 1, 1})
    ->Args({10000, 64, 0, 0})
    ->Args({10000, 64, 1, 0})
    ->Unit(benchmark::kMillisecond);

// What each call cost before (and still costs in the one-call form, StdBacklog): a full pass,
// so the run is quadratic. At 1,000 and 2,000 items, beside BM_BacklogSmall at the same sizes.
void BM_BacklogFullPass(benchmark::State& state) {
  const int64_t n = state.range(0);
  const std::string path = BacklogFile(n, true);
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  const Json args = {{"path", path}};
  const Json input = {{"jobs", 64}};
  jr2rt::ManualClock clock;
  for (auto _ : state) {
    jr2rt::Run run(Programs(), *Programs().workflow("bench_scripted"), "bench", clock);
    run.scriptNext("scripted_next",
                   [&](const jr2rt::NextQuery& q, const std::function<void(Json)>& answer) {
                     answer(jr2rt::StdBacklog(
                         args, q, [](const Json& item) { return item["pkg"].get<std::string>(); }));
                   });
    Drain(state, run, input, n);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_BacklogFullPass)->Arg(1000)->Arg(2000)->Unit(benchmark::kMillisecond);

void BM_BacklogSmall(benchmark::State& state) {
  const int64_t n = state.range(0);
  const std::string path = BacklogFile(n, true);
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  const Json input = {{"file", path}, {"jobs", 64}};
  jr2rt::ManualClock clock;
  for (auto _ : state) {
    jr2rt::Run run(Programs(), *Programs().workflow("bench_backlog"), "bench", clock);
    Drain(state, run, input, n);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_BacklogSmall)->Arg(1000)->Arg(2000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
