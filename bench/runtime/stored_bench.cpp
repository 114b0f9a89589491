// #33's first goal in one process (bench/compare.py's `stored_inproc_*`): a Pool of
// bench/runtime/stored_pool.jr2 driven by the run host on a SQLite store — saved at every turn,
// its items in the journal, its feed written, its timers waited for as `run` waits for them —
// against the same Pool in memory (a Run and nothing else, its timers waited for alike). Workers
// that finish at once (NAP 0: the Pool settles in few turns) and workers that each wait 1 ms on
// a timer (NAP 1: a turn, and so a commit, for each batch of settles).
//   BM_StoredPool/ITEMS/NAP/STORED    items/s; with STORED, the counter commits/item
#include <benchmark/benchmark.h>

#include <cstdio>
#include <memory>
#include <string>

#include "drive.h"
#include "jr2/host.h"
#include "jr2/registry.h"
#include "jr2/run.h"
#include "jr2/sqlite_store.h"
#include "jr2/store.h"
#include "stored_pool.jr2.h"

namespace {

using jr2rt::Json;

void BM_StoredPool(benchmark::State& state) {
  jr2rt::Registry registry;
  jr2gen::stored_pool::RegisterWorkflows(registry);
  const int64_t items = state.range(0);
  const bool nap = state.range(1) != 0;
  const bool stored = state.range(2) != 0;
  const std::string workflow = nap ? "stored_napping" : "stored_instant";
  const Json input = jr2bench::PoolInput(items, 8);
  const std::string path = "/tmp/jr2_stored_bench.db";
  int64_t commits = 0;
  for (auto _ : state) {
    // A fresh store for each iteration, made outside the timing (the runner's arm pays it).
    state.PauseTiming();
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
    std::unique_ptr<jr2rt::Store> db = stored ? jr2rt::OpenSqliteStore(path) : nullptr;
    jr2rt::SystemClock clock;
    state.ResumeTiming();
    if (stored) {
      jr2rt::RunHost host(registry, *db, clock);
      const std::string id = host.start(workflow, input, "");
      host.follow(id, /*all=*/false);
      if (host.run(id).status() != jr2rt::RunStatus::kDone)
        state.SkipWithError("the stored run did not end done");
      commits += host.metrics().commit.count;
    } else {
      jr2rt::Run run(registry, *registry.workflow(workflow), "bench", clock);
      jr2bench::DriveToEnd(run, input, clock);
      if (run.status() != jr2rt::RunStatus::kDone)
        state.SkipWithError("the run in memory did not end done");
    }
  }
  state.SetItemsProcessed(state.iterations() * items);
  if (stored) {
    state.counters["commits/item"] =
        static_cast<double>(commits) / static_cast<double>(state.iterations() * items);
  }
}
BENCHMARK(BM_StoredPool)
    ->Args({2000, 0, 0})  // bench/run.sh --quick
    ->Args({2000, 0, 1})
    ->Args({2000, 1, 0})
    ->Args({2000, 1, 1})
    ->Args({10000, 0, 0})  // --full
    ->Args({10000, 0, 1})
    ->Args({10000, 1, 0})
    ->Args({10000, 1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
