// A turn's commit on PostgreSQL against its floor (#32: "a turn's commit against the floor: the
// same rows written by a bare libpq transaction — goal ≤ 1.5× its time"; bench/compare.py's
// pg_commit, docs/performance.md). The database is $JR2_BENCH_PG (a libpq keyword string or URL;
// compare.py gives each process a fresh one on the throwaway server of bench/run.sh).
//
//   BM_PgSavePerSettle: BM_SavePerSettle (bench/runtime/store_bench.cpp) on the PostgreSQL store:
//     a Pool at cap 1 whose workers park at a Gate; each iteration answers one, which settles its
//     item and starts the next, and RunSaver commits that turn (the run's row with its snapshot
//     and view, the turn's feed lines and its journal entry, one transaction in pipeline mode).
//   BM_PgBareCommit: the same rows by a bare libpq transaction in pipeline mode, one round trip:
//     BEGIN, the run's row updated with the snapshot and view jr2c wrote, the same number of feed
//     lines and journal entries a settle's turn wrote (their texts copied from what it wrote), in
//     the same tables, COMMIT. No revision, journal or lease check, no JSON: what is left when the
//     engine, its checks and its encoding are taken away.
#include <benchmark/benchmark.h>
#include <libpq-fe.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "jr2/run.h"
#include "jr2/saver.h"
#include "jr2/store.h"
#include "pool.jr2.h"

namespace {

using jr2rt::Json;

constexpr int64_t kSettles = 2000;

// A run id new to the database at each call: Google Benchmark calls a function more than once
// (its warm-up), on the same database.
std::string Fresh(const std::string& stem) {
  static int calls = 0;
  return stem + std::to_string(++calls);
}

std::string Location() {
  const char* pg = std::getenv("JR2_BENCH_PG");
  return pg ? pg : "";
}

// A Pool at cap 1 over the scripted Source, saved by RunSaver to the store at `location`, run id
// `id`: send(i) answers worker i, which settles it and starts i + 1 (one commit).
struct SettlingRun {
  jr2rt::Registry registry;
  std::unique_ptr<jr2rt::Store> db;
  jr2rt::ManualClock clock;
  std::unique_ptr<jr2rt::Run> run;
  std::unique_ptr<jr2rt::RunSaver> saver;
  int64_t next = 0;

  SettlingRun(const std::string& location, const std::string& id) {
    jr2gen::pool::RegisterWorkflows(registry);
    db = jr2rt::OpenStore(location);
    run = std::make_unique<jr2rt::Run>(registry, *registry.workflow("conformance_jobs"), id, clock);
    run->scriptNext(
        "scripted_next", [this](const jr2rt::NextQuery&, const std::function<void(Json)>& answer) {
          answer({{"item", {{"id", "i" + std::to_string(next++)}, {"mode", "wait"}}}, {"open", 0}});
        });
    saver = std::make_unique<jr2rt::RunSaver>(*db, clock);
    saver->attach(*run, /*fresh=*/true);
    run->start({{"jobs", 1}});
  }
  void settle(int64_t i) {
    run->send("i" + std::to_string(i) + ".working", "finish", Json::object());
  }
};

void BM_PgSavePerSettle(benchmark::State& state) {
  if (Location().empty()) return state.SkipWithError("JR2_BENCH_PG names no database");
  try {
    SettlingRun r(Location(), Fresh("settle"));
    for (int64_t i = 0; i < 20; ++i) r.settle(i);  // warm: statements prepared, rows there
    int64_t i = 20;
    const int64_t before = r.saver->saves();
    for (auto _ : state) r.settle(i++);
    const int64_t commits = r.saver->saves() - before;
    if (commits != i - 20) state.SkipWithError("not one commit per settle");
    state.counters["commits/settle"] = static_cast<double>(commits) / static_cast<double>(i - 20);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}
BENCHMARK(BM_PgSavePerSettle)->Iterations(kSettles)->UseRealTime()->Unit(benchmark::kMicrosecond);

PGresult* Exec(PGconn* c, const std::string& sql, const std::vector<std::string>& params = {}) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p.c_str());
  PGresult* r = PQexecParams(c, sql.c_str(), static_cast<int>(values.size()), nullptr,
                             values.data(), nullptr, nullptr, 0);
  const auto status = PQresultStatus(r);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    std::string what = PQresultErrorMessage(r);
    PQclear(r);
    throw std::runtime_error(sql + ": " + what);
  }
  return r;
}

void BM_PgBareCommit(benchmark::State& state) {
  if (Location().empty()) return state.SkipWithError("JR2_BENCH_PG names no database");
  // The rows to copy: what jr2c's store wrote for 21 settles of the same run, read back, and
  // what the last settle's turn added (its feed lines and journal entries).
  std::string snapshot, view, status;
  struct Line {
    std::string time, line, kind, data;
    bool data_null;
  };
  std::vector<Line> lines;
  std::vector<std::string> entries;
  const std::string tmpl = Fresh("template"), floor = Fresh("floor");
  PGconn* c = PQconnectdb(Location().c_str());
  try {
    if (PQstatus(c) != CONNECTION_OK) throw std::runtime_error(PQerrorMessage(c));
    {
      SettlingRun r(Location(), tmpl);
      for (int64_t i = 0; i < 20; ++i) r.settle(i);
      auto count = [&](const char* table) {
        PGresult* res =
            Exec(c, std::string("SELECT count(*) FROM ") + table + " WHERE run = $1", {tmpl});
        const long long n = std::atoll(PQgetvalue(res, 0, 0));
        PQclear(res);
        return n;
      };
      const long long feed_before = count("feed"), journal_before = count("journal");
      r.settle(20);
      PGresult* res = Exec(c,
                           "SELECT time, line, kind, data FROM feed WHERE run = $2 AND seq > $1"
                           " ORDER BY seq",
                           {std::to_string(feed_before), tmpl});
      for (int k = 0; k < PQntuples(res); ++k) {
        lines.push_back({PQgetvalue(res, k, 0), PQgetvalue(res, k, 1), PQgetvalue(res, k, 2),
                         PQgetvalue(res, k, 3), PQgetisnull(res, k, 3) != 0});
      }
      PQclear(res);
      res = Exec(c, "SELECT entry FROM journal WHERE run = $2 AND seq > $1 ORDER BY seq",
                 {std::to_string(journal_before), tmpl});
      for (int k = 0; k < PQntuples(res); ++k) entries.emplace_back(PQgetvalue(res, k, 0));
      PQclear(res);
      res = Exec(c, "SELECT snapshot, coalesce(view, ''), status FROM runs WHERE id = $1", {tmpl});
      snapshot = PQgetvalue(res, 0, 0);
      view = PQgetvalue(res, 0, 1);
      status = PQgetvalue(res, 0, 2);
      PQclear(res);
    }
    PQclear(Exec(c,
                 "INSERT INTO runs (id, workflow, status, updated, snapshot, view)"
                 " SELECT $2, workflow, status, updated, snapshot, view FROM runs WHERE id = $1",
                 {tmpl, floor}));
    for (const char* sql :
         {"PREPARE floor_run (text, text, bigint, text, text) AS UPDATE runs SET status = $2,"
          " updated = $3, rev = rev + 1, snapshot = $4, view = $5 WHERE id = $1",
          "PREPARE floor_feed (text, bigint, bigint, text, text, text) AS INSERT INTO feed (run, "
          "seq,"
          " time, line, kind, data) VALUES ($1, $2, $3, $4, $5, $6)",
          "PREPARE floor_journal (text, bigint, text) AS INSERT INTO journal (run, seq, entry)"
          " VALUES ($1, $2, $3)"}) {
      PQclear(Exec(c, sql));
    }
  } catch (const std::exception& e) {
    PQfinish(c);
    return state.SkipWithError(e.what());
  }
  state.counters["feed_lines/commit"] = static_cast<double>(lines.size());
  state.counters["journal_entries/commit"] = static_cast<double>(entries.size());
  state.counters["row_bytes"] = static_cast<double>(snapshot.size() + view.size());

  if (PQenterPipelineMode(c) != 1) {
    PQfinish(c);
    return state.SkipWithError("no pipeline mode");
  }
  int64_t feed_seq = 0, journal_seq = 0, updated = 0;
  bool failed = false;
  auto send = [&](const char* name, const std::vector<std::string>& params,
                  const std::vector<bool>& nulls = {}) {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (size_t k = 0; k < params.size(); ++k)
      values.push_back(k < nulls.size() && nulls[k] ? nullptr : params[k].c_str());
    if (PQsendQueryPrepared(c, name, static_cast<int>(values.size()), values.data(), nullptr,
                            nullptr, 0) != 1) {
      failed = true;
    }
  };
  for (auto _ : state) {
    // One transaction, one round trip: everything sent, then one sync, then every answer read.
    if (PQsendQueryParams(c, "BEGIN", 0, nullptr, nullptr, nullptr, nullptr, 0) != 1) failed = true;
    send("floor_run", {floor, status, std::to_string(++updated), snapshot, view});
    for (const auto& l : lines) {
      send("floor_feed", {floor, std::to_string(++feed_seq), l.time, l.line, l.kind, l.data},
           {false, false, false, false, false, l.data_null});
    }
    for (const auto& e : entries) send("floor_journal", {floor, std::to_string(++journal_seq), e});
    if (PQsendQueryParams(c, "COMMIT", 0, nullptr, nullptr, nullptr, nullptr, 0) != 1)
      failed = true;
    if (PQpipelineSync(c) != 1) failed = true;
    for (;;) {
      PGresult* r = PQgetResult(c);
      if (r == nullptr) continue;  // the end of one statement's results
      const auto st = PQresultStatus(r);
      PQclear(r);
      if (st == PGRES_PIPELINE_SYNC) break;
      if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) failed = true;
    }
    if (failed) break;
  }
  if (failed) state.SkipWithError(PQerrorMessage(c));
  PQfinish(c);
}
BENCHMARK(BM_PgBareCommit)->Iterations(kSettles)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
