// Items per second through a Pool of trivial workers (cap 1, 8, 64), without and with the
// store, and the memory of a parked worker. The program is the conformance suite's
// (tests/runtime/pool.jr2): an item with mode "done" finishes at once; "wait" parks at a Gate.
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "jr2/host.h"
#include "jr2/run.h"
#include "jr2/saver.h"
#include "jr2/sqlite_store.h"
#include "jr2/stdlib.h"
#include "jr2/store.h"
#include "pool.jr2.h"

namespace {

using jr2rt::Json;

// Scripts `next`: items 0…n-1 with `mode`, then nothing.
jr2rt::StoredRun Stored(const jr2rt::Run& run) {
  jr2rt::StoredRun r;
  r.id = "bench";
  r.workflow = "conformance_jobs";
  r.status = "waiting";
  r.snapshot = run.snapshot();
  return r;
}

void Script(jr2rt::Run& run, int64_t n, const char* mode, int64_t* next) {
  run.scriptNext("scripted_next",
                 [n, mode, next](const jr2rt::NextQuery&, const std::function<void(Json)>& answer) {
                   // Built member by member: nlohmann's nested initializer lists copy each level,
                   // which would be the Source's cost here, not the Pool's (the peers make a bare
                   // object).
                   Json a(Json::value_t::object);
                   Json& item = a["item"];
                   if (*next < n) {
                     item["id"] = "i" + std::to_string((*next)++);
                     item["mode"] = mode;
                   }
                   a["open"] = 0;
                   answer(std::move(a));
                 });
}

// A Pool of N items whose workers finish at once, at cap C, three ways (range 2):
//   0: in memory, the peer: no store;
//   1: durable as the runner runs it (RunSaver: one commit per turn of the executor, the top
//      Pool's items in the journal, its typed events in the feed), the counter `commits/item`
//      saying how many saves it made;
//   2: the way before #10: the whole snapshot saved after every settle.
void BM_PoolItems(benchmark::State& state) {
  jr2rt::Registry registry;
  jr2gen::pool::RegisterWorkflows(registry);
  const int64_t items = state.range(0);
  const int64_t cap = state.range(1);
  const int64_t mode = state.range(2);
  const std::string path = "/tmp/jr2_pool_bench.db";
  int64_t commits = 0;
  for (auto _ : state) {
    // A fresh store for each iteration, made outside the timing as BM_StoredPool makes it: the
    // store's making (its schema, eight fsyncs) is not the Pool's storing, and was a fifth of
    // this arm's time at 2,000 items. The runner's arm (`stored_runner_*`) pays it.
    state.PauseTiming();
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
    auto db = mode != 0 ? jr2rt::OpenSqliteStore(path) : nullptr;
    state.ResumeTiming();
    jr2rt::ManualClock clock;
    jr2rt::Run run(registry, *registry.workflow("conformance_jobs"), "bench", clock);
    int64_t next = 0;
    Script(run, items, "done", &next);
    std::unique_ptr<jr2rt::RunSaver> saver;
    if (mode == 1) {
      saver = std::make_unique<jr2rt::RunSaver>(*db, clock);
      saver->attach(run, /*fresh=*/true);
      // The typed events the runner stores (RunHost::attach), not progress lines: a Pool's marks
      // are the rows a stored Pool writes (store/rows.h).
      run.onEvent([&](jr2rt::Run::FeedEvent& e) { saver->addEvent(e, clock.nowMs()); });
    } else if (mode == 2) {
      run.onProgress([&](const std::string& line) {
        if (line.size() < 8 || line.compare(line.size() - 8, 8, " settled") != 0) return;
        db->save(Stored(run));
      });
    }
    run.start({{"jobs", cap}});
    if (run.status() != jr2rt::RunStatus::kDone) state.SkipWithError("the run did not drain");
    if (saver) commits += saver->saves();
  }
  state.SetItemsProcessed(state.iterations() * items);
  if (mode == 1) {
    state.counters["commits/item"] =
        static_cast<double>(commits) / static_cast<double>(state.iterations() * items);
  }
}
BENCHMARK(BM_PoolItems)
    ->Args({2000, 8, 0})  // bench/run.sh --quick
    ->Args({2000, 8, 1})
    ->Args({10000, 8, 0})
    ->Args({10000, 64, 0})
    ->Args({10000, 8, 1})
    ->Args({10000, 64, 1})
    ->Args({2000, 8, 2})
    // Wall time, as a user pays it: the durable arms wait for their fsync, which the CPU time
    // of the bench's thread (Google Benchmark's default for items/s) left out.
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Workers that stay live until answered (bench/run.sh, `pool_live_capC`): N items whose workers
// park at their Gates, at cap C; the bench answers every live worker, then the next batch the
// Pool started, until the Pool drains. At most C workers are live at once, as many as the cap,
// which a Pool whose workers finish at once never has. Each answer is one `send`: a turn.
// The same Pool written by hand in C++, what a user could write without jr2c (#33 goal 5): the
// same Source (a callback answering JSON items, built as Script builds them), items claimed
// under the cap while the Source has more, each item read into its typed struct (its `id` a
// string, its `mode` one of the five, "wait" when absent) and refused when not, one worker per
// item (a small state machine: its mode decides how it ends), a worker's failure caught per
// item, each item id taken once, the typed outputs collected by item id. No actors, no engine,
// no feed: the floor of this Pool in C++.
struct HandItem {
  std::string id;
  enum class Mode { kWait, kDone, kFail, kDefect, kNap } mode = Mode::kWait;
};

HandItem ReadHandItem(const Json& j) {
  if (!j.is_object()) throw std::runtime_error("an item is not an object");
  HandItem item;
  const auto id = j.find("id");
  if (id == j.end() || !id->is_string()) throw std::runtime_error("an item has no string `id`");
  item.id = id->get<std::string>();
  if (const auto mode = j.find("mode"); mode != j.end()) {
    if (!mode->is_string()) throw std::runtime_error("`mode` is not a string");
    const auto& m = mode->get_ref<const std::string&>();
    if (m == "wait") {
      item.mode = HandItem::Mode::kWait;
    } else if (m == "done") {
      item.mode = HandItem::Mode::kDone;
    } else if (m == "fail") {
      item.mode = HandItem::Mode::kFail;
    } else if (m == "defect") {
      item.mode = HandItem::Mode::kDefect;
    } else if (m == "nap") {
      item.mode = HandItem::Mode::kNap;
    } else {
      throw std::runtime_error("`mode` is not one of its five");
    }
  }
  return item;
}

struct HandWorker {
  HandItem item;
  enum class State { kStart, kFinished, kFailed, kWaiting } state = State::kStart;
  std::string output;
  // One step of the machine: the mode decides where it goes.
  void step() {
    switch (item.mode) {
      case HandItem::Mode::kDone:
        state = State::kFinished;
        output = item.id;
        break;
      case HandItem::Mode::kFail:
        throw std::runtime_error("item " + item.id + " failed");
      case HandItem::Mode::kDefect:
        throw std::logic_error("item " + item.id + ": a null where a value was needed");
      case HandItem::Mode::kNap:
      case HandItem::Mode::kWait:
        state = State::kWaiting;
        break;
    }
  }
};

void BM_HandPool(benchmark::State& state) {
  const int64_t items = state.range(0);
  const auto cap = static_cast<size_t>(state.range(1));
  for (auto _ : state) {
    int64_t next = 0;
    const auto source = [&]() {
      Json a(Json::value_t::object);
      Json& item = a["item"];
      if (next < items) {
        item["id"] = "i" + std::to_string(next++);
        item["mode"] = "done";
      }
      a["open"] = 0;
      return a;
    };
    std::unordered_set<std::string> seen;
    std::map<std::string, std::string> outputs;
    std::map<std::string, std::string> failures;
    std::vector<HandWorker> live;
    bool more = true;
    while (more || !live.empty()) {
      // Claim under the cap while the Source has more.
      while (more && live.size() < cap) {
        const Json answer = source();
        const Json& item = answer["item"];
        if (item.is_null() || item.empty()) {
          more = false;
          break;
        }
        HandWorker w;
        try {
          w.item = ReadHandItem(item);
        } catch (const std::exception& e) {
          failures.emplace("?", e.what());
          continue;
        }
        if (!seen.insert(w.item.id).second) continue;  // taken once
        live.push_back(std::move(w));
      }
      // Each live worker takes its step; the ended ones settle.
      for (auto it = live.begin(); it != live.end();) {
        try {
          it->step();
        } catch (const std::exception& e) {
          failures.emplace(it->item.id, e.what());
          it = live.erase(it);
          continue;
        }
        if (it->state == HandWorker::State::kFinished) {
          outputs.emplace(it->item.id, std::move(it->output));
          it = live.erase(it);
        } else {
          ++it;
        }
      }
    }
    if (static_cast<int64_t>(outputs.size()) != items) state.SkipWithError("not every item ended");
    benchmark::DoNotOptimize(outputs);
  }
  state.SetItemsProcessed(state.iterations() * items);
}
// Wall time, as BM_PoolItems, which it is compared with.
BENCHMARK(BM_HandPool)->Args({2000, 8})->Args({10000, 8})->UseRealTime();

void BM_LiveWorkers(benchmark::State& state) {
  jr2rt::Registry registry;
  jr2gen::pool::RegisterWorkflows(registry);
  const int64_t items = state.range(0);
  const int64_t cap = state.range(1);
  for (auto _ : state) {
    jr2rt::ManualClock clock;
    jr2rt::Run run(registry, *registry.workflow("conformance_jobs"), "bench", clock);
    int64_t next = 0;
    Script(run, items, "wait", &next);
    run.start({{"jobs", cap}});
    int64_t answered = 0;
    while (answered < items) {
      int64_t batch = 0;
      for (const jr2rt::OpenGate& g : run.gates()) {
        if (g.kind != jr2rt::OpenGate::Kind::kGate) continue;
        run.send(g.name, "finish", Json::object());
        ++batch;
      }
      if (batch == 0) {
        state.SkipWithError("no worker waits, and items are left");
        break;
      }
      answered += batch;
    }
    if (run.status() != jr2rt::RunStatus::kDone) state.SkipWithError("the run did not drain");
  }
  state.SetItemsProcessed(state.iterations() * items);
}
BENCHMARK(BM_LiveWorkers)
    ->Args({2000, 8})  // bench/run.sh --quick
    ->Args({2000, 1024})
    ->Args({10000, 8})
    ->Args({10000, 1024})
    // Wall time, as the xstate peer of pool_live_capC is measured.
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// The same through the real run host (RunHost, as `run` drives it) with the SQLite store: a Pool
// of N items from a backlog file whose workers finish at once, at cap C (range 2 = 1), against
// the same Pool on a Run with no store (range 2 = 0). `commits/item`: the store's revisions per
// settled item (each revision is one transaction, one fsync).
void BM_HostItems(benchmark::State& state) {
  jr2rt::Registry registry;
  jr2gen::pool::RegisterWorkflows(registry);
  const int64_t n = state.range(0);
  const int64_t cap = state.range(1);
  const bool durable = state.range(2) == 1;
  const std::string dir = "/tmp/jr2_host_bench/";
  std::filesystem::create_directories(dir);
  {
    // Written only when it is not there as wanted, and then left 2 s before the timed loop:
    // std.backlog trusts a file's stamp only once the file is 2 s older than its read (a change in
    // the same timestamp tick would be missed), and reads and compares the bytes at every call
    // until then. Rewriting it at each call made the in-memory arm read 10,000 items per `next`
    // (~3x slower); a user's backlog file is not written the instant before the run.
    Json items = Json::array();
    for (int64_t i = 0; i < n; ++i) items.push_back({{"id", "t" + std::to_string(i)}});
    const std::string want = items.dump();
    std::ifstream in(dir + "tasks.json");
    const std::string have((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (have != want) {
      std::ofstream(dir + "tasks.json") << want;
      std::this_thread::sleep_for(std::chrono::milliseconds(2100));
    }
  }
  const Json input = {{"tasks", dir + "tasks.json"}, {"jobs", cap}};
  int64_t commits = 0;
  for (auto _ : state) {
    jr2rt::SystemClock clock;
    if (durable) {
      state.PauseTiming();
      for (const char* suffix : {"", "-wal", "-shm"}) std::remove((dir + "s.db" + suffix).c_str());
      auto store = jr2rt::OpenSqliteStore(dir + "s.db");
      state.ResumeTiming();
      jr2rt::RunHost host(registry, *store, clock);
      const std::string id = host.start("conformance_instant", input, dir);
      if (host.run(id).status() != jr2rt::RunStatus::kDone)
        state.SkipWithError("the run did not drain");
      commits += store->revision(id);
    } else {
      jr2rt::Run run(registry, *registry.workflow("conformance_instant"), "bench", clock);
      run.setHome(dir);
      run.start(input);
      if (run.status() != jr2rt::RunStatus::kDone) state.SkipWithError("the run did not drain");
    }
  }
  state.SetItemsProcessed(state.iterations() * n);
  if (durable) {
    state.counters["commits/item"] =
        static_cast<double>(commits) / static_cast<double>(state.iterations() * n);
  }
}
BENCHMARK(BM_HostItems)
    ->Args({10000, 8, 0})
    ->Args({10000, 8, 1})
    ->Args({10000, 64, 0})
    ->Args({10000, 64, 1})
    ->Unit(benchmark::kMillisecond);

// A save stays flat as a run settles items
// (docs/runtime.md#saved-as-it-moves-effects-at-most-once): N items settled one per step (cap 1,
// each worker answered at its Gate), each step one commit through RunSaver. The counters compare
// the first 1,000 steps with the last 1,000 before the run ends (the last step, which ends it,
// writes the whole output once): time and snapshot bytes per step.
void BM_FlatSaves(benchmark::State& state) {
  jr2rt::Registry registry;
  jr2gen::pool::RegisterWorkflows(registry);
  const int64_t n = state.range(0);
  const std::string path = "/tmp/jr2_flat_bench.db";
  for (auto _ : state) {
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
    auto db = jr2rt::OpenSqliteStore(path);
    jr2rt::ManualClock clock;
    jr2rt::Run run(registry, *registry.workflow("conformance_jobs"), "bench", clock);
    int64_t next = 0;
    Script(run, n, "wait", &next);
    jr2rt::RunSaver saver(*db, clock);
    saver.attach(run, /*fresh=*/true);
    run.start({{"jobs", 1}});
    using Clock = std::chrono::steady_clock;
    double firstMs = 0, lastMs = 0;
    size_t firstBytes = 0, lastBytes = 0;
    for (int64_t i = 0; i < n; ++i) {
      const auto t0 = Clock::now();
      run.send("i" + std::to_string(i) + ".working", "finish", Json::object());
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (i < 1000) firstMs += ms;
      if (i >= n - 1001 && i < n - 1) lastMs += ms;
      if (i == 999) firstBytes = run.snapshot().dump().size();
      if (i == n - 2) lastBytes = run.snapshot().dump().size();
    }
    if (run.status() != jr2rt::RunStatus::kDone) state.SkipWithError("the run did not drain");
    state.counters["first_1000_ms"] = firstMs;
    state.counters["last_1000_ms"] = lastMs;
    state.counters["last/first"] = lastMs / firstMs;
    state.counters["snapshot_bytes_first"] = static_cast<double>(firstBytes);
    state.counters["snapshot_bytes_last"] = static_cast<double>(lastBytes);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_FlatSaves)->Arg(100000)->Iterations(1)->Unit(benchmark::kMillisecond);

// Starting N workers that each park at a Gate (cap N): what a Pool with a cap in the thousands
// pays to fill its slots. Each call of `next` is given every live id, so this was quadratic
// while the ids were copied into each query.
void BM_StartParkedWorkers(benchmark::State& state) {
  jr2rt::Registry registry;
  jr2gen::pool::RegisterWorkflows(registry);
  const int64_t n = state.range(0);
  jr2rt::ManualClock clock;
  int64_t next = 0;
  std::unique_ptr<jr2rt::Run> last;  // torn down untimed: that is not starting workers
  for (auto _ : state) {
    state.PauseTiming();
    last.reset();
    auto run = std::make_unique<jr2rt::Run>(registry, *registry.workflow("conformance_jobs"),
                                            "bench", clock);
    next = 0;
    Script(*run, n, "wait", &next);
    state.ResumeTiming();
    run->start({{"jobs", n}});
    if (run->status() != jr2rt::RunStatus::kWaiting) state.SkipWithError("the run is not waiting");
    last = std::move(run);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_StartParkedWorkers)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

// `std.backlog` over a file of N independent items through a Pool (cap 8): each call reads the
// file again (so edits are seen) and skips what is live or settled.
void BM_BacklogItems(benchmark::State& state) {
  jr2rt::Registry registry;
  jr2gen::pool::RegisterWorkflows(registry);
  const int64_t n = state.range(0);
  const std::string path = "/tmp/jr2_backlog_bench.json";
  {
    Json items = Json::array();
    for (int64_t i = 0; i < n; ++i)
      items.push_back({{"id", "t" + std::to_string(i)}, {"mode", "done"}});
    std::ofstream(path) << items.dump();
  }
  const Json args = {{"path", path}};
  for (auto _ : state) {
    jr2rt::ManualClock clock;
    jr2rt::Run run(registry, *registry.workflow("conformance_jobs"), "bench", clock);
    run.scriptNext("scripted_next",
                   [&args](const jr2rt::NextQuery& q, std::function<void(Json)> answer) {
                     answer(jr2rt::StdBacklog(args, q));
                   });
    run.start({{"jobs", 8}});
    if (run.status() != jr2rt::RunStatus::kDone) state.SkipWithError("the run did not drain");
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_BacklogItems)->Arg(1000)->Arg(5000)->Unit(benchmark::kMillisecond);

// Bytes the allocator has handed out (RSS would hide reuse of memory freed by earlier runs).
size_t HeapBytes() { return mallinfo2().uordblks; }

// The process's resident set, from /proc/self/statm (its second field, in pages); 0 if unread.
size_t RssBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0;
  size_t resident = 0;
  if (!(statm >> pages >> resident)) return 0;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// N workers parked at their Gates: the heap bytes (mallinfo2) and the resident bytes they add,
// per worker (bench/run.sh's `parked_memory` and `parked_rss`). RSS counts the pages the parking
// touched, not the bytes: a page is 4 KiB, so at small N (and when the allocator reuses pages an
// earlier phase freed, which it does not count again) the figure is coarse, and it includes the
// allocator's own overhead and slack that mallinfo2's bytes do not. xstate's `rssBytesPerWorker`
// (bench/peers/xstate_parked.mjs) is the same delta for the Node process after a full GC.
void BM_ParkedWorkerMemory(benchmark::State& state) {
  jr2rt::Registry registry;
  jr2gen::pool::RegisterWorkflows(registry);
  const int64_t n = state.range(0);
  for (auto _ : state) {
    jr2rt::ManualClock clock;
    const size_t before = HeapBytes();
    const size_t rssBefore = RssBytes();
    jr2rt::Run run(registry, *registry.workflow("conformance_jobs"), "bench", clock);
    int64_t next = 0;
    Script(run, n, "wait", &next);
    run.start({{"jobs", n}});
    const size_t after = HeapBytes();
    const size_t rssAfter = RssBytes();
    int64_t parked = 0;
    for (const jr2rt::OpenGate& g : run.gates()) parked += g.kind == jr2rt::OpenGate::Kind::kGate;
    if (parked != n) {
      state.SkipWithError("not every worker is parked at its Gate");
      break;
    }
    state.counters["bytes_per_parked_worker"] =
        static_cast<double>(after - before) / static_cast<double>(n);
    // Resident pages only say something in a fresh process (bench/run.sh runs this benchmark
    // alone): after other benchmarks, the parking reuses pages they freed, which are resident
    // already, and the set barely grows. Then (growth under half the heap's) there is no
    // `rss_bytes_per_parked_worker`, and `parked_rss` fails for want of it rather than report
    // a few bytes.
    if (rssBefore > 0 && rssAfter > rssBefore && 2 * (rssAfter - rssBefore) >= after - before) {
      state.counters["rss_bytes_per_parked_worker"] =
          static_cast<double>(rssAfter - rssBefore) / static_cast<double>(n);
    }
    state.counters["snapshot_bytes_per_worker"] =
        static_cast<double>(run.snapshot().dump().size()) / static_cast<double>(n);
  }
}
BENCHMARK(BM_ParkedWorkerMemory)
    ->Arg(2000)  // bench/run.sh --quick
    ->Arg(10000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
