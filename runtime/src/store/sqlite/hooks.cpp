// The hook log, the heads of standing workflows and the start keys in the SQLite store
// (docs/runtime.md#the-store): tables `hooks` (each delivery by its id, with the answer it got),
// `heads` (written with the run each names,
// docs/runtime.md#standing-pools-of-runs-over-push-sources-12) and `starts` (serve's starts by
// idempotency key, docs/serve.md#sending-again).
#include <optional>
#include <string>
#include <vector>

#include "store/sqlite/sqlite_store.h"

namespace jr2rt::sqlite {

std::optional<Json> SqliteStore::hookAnswer(const std::string& hook, const std::string& delivery) {
  Stmt s(*db_, "SELECT answer FROM hooks WHERE hook = ? AND delivery = ?");
  s.bind(1, hook).bind(2, delivery);
  if (!s.step()) return std::nullopt;
  return Json::parse(s.text(0), nullptr, false);
}

void SqliteStore::logHooks(const std::vector<HookEntry>& entries) {
  if (entries.empty()) return;
  Txn txn(*db_, "BEGIN IMMEDIATE");
  writeHooks(entries);
  txn.commit();
}

// The deliveries, inside the caller's transaction.
void SqliteStore::writeHooks(const std::vector<HookEntry>& entries) {
  for (const HookEntry& e : entries) {
    Stmt s(*db_,
           "INSERT INTO hooks (hook, delivery, time, event, answer, seq) VALUES (?, ?, ?, ?, ?,"
           " (SELECT coalesce(max(seq), 0) + 1 FROM hooks WHERE hook = ?1)) "
           "ON CONFLICT DO NOTHING");
    s.bind(1, e.hook).bind(2, e.delivery).bind(3, e.timeMs).bind(4, e.event);
    s.bind(5, e.answer.dump(-1, ' ', false, Json::error_handler_t::replace));
    s.step();
  }
}

std::vector<Json> SqliteStore::hookLog(const std::string& hook, int64_t limit) {
  Stmt s(*db_,
         "SELECT delivery, time, event, answer FROM hooks WHERE hook = ? "
         "ORDER BY seq DESC, time DESC LIMIT ?");
  s.bind(1, hook).bind(2, limit);
  std::vector<Json> out;
  while (s.step()) {
    out.push_back({{"delivery", s.text(0)},
                   {"time", s.integer(1)},
                   {"event", s.text(2)},
                   {"answer", Json::parse(s.text(3), nullptr, false)}});
  }
  return out;
}

void SqliteStore::writeHead(const Head& h) {
  Stmt s(*db_,
         "INSERT INTO heads (workflow, run, started, streak, ended, ended_at, paused, why)"
         " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (workflow) DO UPDATE SET"
         " run = ?2, started = ?3, streak = ?4, ended = ?5, ended_at = ?6, paused = ?7, why = ?8");
  s.bind(1, h.workflow).bind(2, h.run).bind(3, h.startedMs).bind(4, h.streak);
  s.bind(5, h.ended).bind(6, h.endedMs).bind(7, h.paused).bind(8, h.why);
  s.step();
}

std::optional<SqliteStore::Head> SqliteStore::head(const std::string& workflow) {
  for (auto& h : readHeads(workflow)) return std::move(h);
  return std::nullopt;
}

std::vector<SqliteStore::Head> SqliteStore::heads() { return readHeads(""); }

std::vector<SqliteStore::Head> SqliteStore::readHeads(const std::string& workflow) {
  std::vector<Head> out;
  Stmt s(*db_,
         "SELECT workflow, run, started, streak, ended, ended_at, paused, why FROM heads"
         " WHERE ?1 = '' OR workflow = ?1 ORDER BY workflow");
  s.bind(1, workflow);
  while (s.step()) {
    Head h;
    h.workflow = s.text(0);
    h.run = s.text(1);
    h.startedMs = s.integer(2);
    h.streak = s.integer(3);
    h.ended = s.text(4);
    h.endedMs = s.integer(5);
    h.paused = s.text(6);
    h.why = s.text(7);
    out.push_back(std::move(h));
  }
  return out;
}

std::optional<SqliteStore::StartKey> SqliteStore::startKey(const std::string& caller,
                                                           const std::string& workflow,
                                                           const std::string& key) {
  Stmt s(*db_, "SELECT run, digest FROM starts WHERE caller = ? AND workflow = ? AND key = ?");
  s.bind(1, caller).bind(2, workflow).bind(3, key);
  if (!s.step()) return std::nullopt;
  return StartKey{s.text(0), s.text(1)};
}

SqliteStore::StartKey SqliteStore::keepStartKey(const std::string& caller,
                                                const std::string& workflow, const std::string& key,
                                                const StartKey& start) {
  // One serve drives a SQLite store: its starts of a key come one at a time, and each is kept.
  Txn txn(*db_, "BEGIN IMMEDIATE");
  Stmt s(*db_,
         "INSERT OR REPLACE INTO starts (caller, workflow, key, run, digest, time)"
         " VALUES (?, ?, ?, ?, ?, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))");
  s.bind(1, caller).bind(2, workflow).bind(3, key).bind(4, start.run).bind(5, start.digest);
  s.step();
  txn.commit();
  return start;
}

}  // namespace jr2rt::sqlite
