// What one durable settle costs against the floor under it (bench/run.sh, `save_per_settle`):
// jr2c settling one item and committing it through RunSaver, against a bare SQLite commit of a
// row of the same size (WAL, synchronous NORMAL and FULL: the store uses FULL) and one
// `fdatasync` of a file. Each iteration is one settle or one commit, timed on the wall clock.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "jr2/run.h"
#include "jr2/saver.h"
#include "jr2/sqlite_store.h"
#include "jr2/store.h"
#include "jr2/views.h"
#include "pool.jr2.h"

namespace {

using jr2rt::Json;

constexpr int64_t kSettles = 2000;

void Remove(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
}

// jr2c: a Pool at cap 1 whose workers park at a Gate; each iteration answers one, which settles
// its item and starts the next, and RunSaver commits that turn (one transaction, its journal
// entry and the run's row).
void BM_SavePerSettle(benchmark::State& state) {
  jr2rt::Registry registry;
  jr2gen::pool::RegisterWorkflows(registry);
  const std::string path = "/tmp/jr2_settle_bench.db";
  Remove(path);
  auto db = jr2rt::OpenSqliteStore(path);
  jr2rt::ManualClock clock;
  jr2rt::Run run(registry, *registry.workflow("conformance_jobs"), "bench", clock);
  int64_t next = 0;
  run.scriptNext(
      "scripted_next", [&next](const jr2rt::NextQuery&, const std::function<void(Json)>& answer) {
        if (next > kSettles) return answer({{"item", nullptr}, {"open", 0}});
        answer({{"item", {{"id", "i" + std::to_string(next++)}, {"mode", "wait"}}}, {"open", 0}});
      });
  jr2rt::RunSaver saver(*db, clock);
  saver.attach(run, /*fresh=*/true);
  run.start({{"jobs", 1}});
  int64_t i = 0;
  const int64_t before = saver.saves();
  for (auto _ : state) {
    run.send("i" + std::to_string(i++) + ".working", "finish", Json::object());
  }
  if (saver.saves() - before != i) state.SkipWithError("not one commit per settle");
  state.counters["commits/settle"] =
      static_cast<double>(saver.saves() - before) / static_cast<double>(i);
  Remove(path);
}
BENCHMARK(BM_SavePerSettle)->Iterations(kSettles)->UseRealTime()->Unit(benchmark::kMicrosecond);

// The parts of a save's CPU for the run of BM_SavePerSettle (a Pool at cap 1, one worker parked
// at its Gate), each alone: range 0 = the snapshot and its text (what every save wrote before
// #31), 1 = the view's text reads need (SavedViewText, #31's addition), 2 = the observation
// alone, inside it. Where a commit's own CPU goes (#33's first goal). Measured on 3 December 2026
// (RelWithDebInfo, CPU time): the snapshot 892 bytes in 7.8 us, the view 1,405 bytes in 20.9 us
// (its observation 3.6 us) while the view was built as JSON with a copy of each Menu and then
// written out; the Menus, the same at every save of one kind of Gate, are 45 % of its text, and
// are now copied as text written once (docs/performance.md).
void BM_SaveParts(benchmark::State& state) {
  jr2rt::Registry registry;
  jr2gen::pool::RegisterWorkflows(registry);
  jr2rt::ManualClock clock;
  jr2rt::Run run(registry, *registry.workflow("conformance_jobs"), "bench", clock);
  int64_t next = 0;
  run.scriptNext(
      "scripted_next", [&next](const jr2rt::NextQuery&, const std::function<void(Json)>& answer) {
        answer({{"item", {{"id", "i" + std::to_string(next++)}, {"mode", "wait"}}}, {"open", 0}});
      });
  // Saved as BM_SavePerSettle saves it (a journaling Pool: its settled items are in the journal).
  const std::string path = "/tmp/jr2_save_parts_bench.db";
  Remove(path);
  auto db = jr2rt::OpenSqliteStore(path);
  jr2rt::RunSaver saver(*db, clock);
  saver.attach(run, /*fresh=*/true);
  run.start({{"jobs", 1}});
  for (int i = 0; i < 100; ++i)
    run.send("i" + std::to_string(i) + ".working", "finish", Json::object());
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text;
    switch (state.range(0)) {
      case 0:
        text = run.snapshot().dump(-1, ' ', false, Json::error_handler_t::replace);
        break;
      case 1:
        text = jr2rt::SavedViewText(run);
        break;
      default:
        text = run.observe().dump();
        break;
    }
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
  Remove(path);
}
BENCHMARK(BM_SaveParts)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

// A bare SQLite commit of one ~300-byte row, in WAL mode, synchronous NORMAL (range 0) or FULL (1).
void BM_BareCommit(benchmark::State& state) {
  const std::string path = "/tmp/jr2_bare_commit.db";
  Remove(path);
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) state.SkipWithError("cannot open");
  sqlite3_exec(db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
  sqlite3_exec(db, state.range(0) == 0 ? "PRAGMA synchronous=NORMAL" : "PRAGMA synchronous=FULL",
               nullptr, nullptr, nullptr);
  sqlite3_exec(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT)", nullptr, nullptr, nullptr);
  sqlite3_stmt* insert = nullptr;
  sqlite3_prepare_v2(db, "INSERT INTO t(body) VALUES (?)", -1, &insert, nullptr);
  const std::string body(300, 'x');
  for (auto _ : state) {
    sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
    sqlite3_bind_text(insert, 1, body.data(), static_cast<int>(body.size()), SQLITE_STATIC);
    if (sqlite3_step(insert) != SQLITE_DONE) state.SkipWithError("insert failed");
    sqlite3_reset(insert);
    if (sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK)
      state.SkipWithError("commit failed");
  }
  sqlite3_finalize(insert);
  sqlite3_close(db);
  Remove(path);
}
BENCHMARK(BM_BareCommit)
    ->Arg(0)
    ->Arg(1)
    ->Iterations(kSettles)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// One 300-byte write and one fdatasync of a file: the disk's floor under any durable commit.
void BM_Fdatasync(benchmark::State& state) {
  const std::string path = "/tmp/jr2_fdatasync.bin";
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) state.SkipWithError("cannot open");
  const std::string body(300, 'x');
  for (auto _ : state) {
    if (write(fd, body.data(), body.size()) != static_cast<ssize_t>(body.size()) ||
        fdatasync(fd) != 0) {
      state.SkipWithError("write or fdatasync failed");
    }
  }
  close(fd);
  std::remove(path.c_str());
}
BENCHMARK(BM_Fdatasync)->Iterations(kSettles)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
