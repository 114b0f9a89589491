// The hook log, the heads of standing workflows and the start keys in the PostgreSQL store
// (docs/scaling.md): tables `hooks`, `heads` and `starts`, as sqlite/hooks.cpp keeps them. A head
// row whose run is '' is a workflow's head taken by a host (Hosts::takeHead) before its first run:
// no head to read.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "store/postgres/pg_store.h"

namespace jr2rt::pg {

std::optional<Json> PgStore::hookAnswer(const std::string& hook, const std::string& delivery) {
  auto hold = db_->hold();
  const Result s = db_->run("SELECT answer FROM hooks WHERE hook = $1 AND delivery = $2",
                            Params().text(hook).text(delivery));
  if (s.rows() == 0) return std::nullopt;
  return Json::parse(s.text(0, 0), nullptr, false);
}

void PgStore::logHooks(const std::vector<HookEntry>& entries) {
  if (entries.empty()) return;
  auto hold = db_->hold();
  // One transaction, one round trip; each delivery numbered after its hook's last, in order.
  Pipeline p(*db_);
  writeHooks(p, entries);
  p.finish();
}

// The deliveries, queued in the caller's transaction.
void PgStore::writeHooks(Pipeline& p, const std::vector<HookEntry>& entries) {
  for (const HookEntry& e : entries) {
    p.add(
        "INSERT INTO hooks (hook, delivery, time, event, answer, seq) VALUES ($1, $2, $3, $4, $5,"
        " (SELECT coalesce(max(seq), 0) + 1 FROM hooks WHERE hook = $1)) ON CONFLICT DO NOTHING",
        Params()
            .text(e.hook)
            .text(e.delivery)
            .integer(e.timeMs)
            .text(e.event)
            .text(Dump(e.answer)));
  }
}

std::vector<Json> PgStore::hookLog(const std::string& hook, int64_t limit) {
  auto hold = db_->hold();
  const Result s = db_->run(
      "SELECT delivery, time, event, answer FROM hooks WHERE hook = $1"
      " ORDER BY seq DESC, time DESC LIMIT $2",
      Params().text(hook).integer(limit));
  std::vector<Json> out;
  out.reserve(static_cast<size_t>(s.rows()));
  for (int i = 0; i < s.rows(); ++i) {
    out.push_back({{"delivery", s.text(i, 0)},
                   {"time", s.integer(i, 1)},
                   {"event", s.text(i, 2)},
                   {"answer", Json::parse(s.text(i, 3), nullptr, false)}});
  }
  return out;
}

// With a lease the head is owned by it, and written only if nobody else owns it (or its owner's
// lease is not current); else the server raises the conflict (jr2_head_refused) and the
// transaction writes nothing. Without one its owner is left as it is.
void PgStore::writeHead(Pipeline& p, const Head& h, const std::optional<Lease>& lease) {
  Params params;
  params.text(h.workflow)
      .text(h.run)
      .integer(h.startedMs)
      .integer(h.streak)
      .text(h.ended)
      .integer(h.endedMs)
      .text(h.paused)
      .text(h.why);
  if (lease) {
    params.text(lease->host).integer(lease->epoch);
  } else {
    params.null().null();
  }
  p.add(
      "WITH u AS (INSERT INTO heads (workflow, run, started, streak, ended, ended_at, paused, why,"
      " owner, owner_epoch) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::bigint)"
      " ON CONFLICT (workflow) DO UPDATE SET run = $2, started = $3, streak = $4, ended = $5,"
      " ended_at = $6, paused = $7, why = $8, owner = coalesce($9, heads.owner),"
      " owner_epoch = CASE WHEN $9::text IS NULL THEN heads.owner_epoch ELSE $10::bigint END"
      " WHERE $9::text IS NULL OR heads.owner IS NULL"
      " OR (heads.owner = $9 AND heads.owner_epoch = $10::bigint)"
      " OR NOT jr2_host_live(heads.owner, heads.owner_epoch) RETURNING 1)"
      " SELECT coalesce((SELECT 1 FROM u), jr2_head_refused($1, $9))",
      std::move(params));
}

std::optional<PgStore::Head> PgStore::head(const std::string& workflow) {
  for (auto& h : readHeads(workflow)) return std::move(h);
  return std::nullopt;
}

std::vector<PgStore::Head> PgStore::heads() { return readHeads(""); }

std::vector<PgStore::Head> PgStore::readHeads(const std::string& workflow) {
  auto hold = db_->hold();
  const Result s = db_->run(
      "SELECT workflow, run, started, streak, ended, ended_at, paused, why FROM heads"
      " WHERE ($1 = '' OR workflow = $1) AND run <> '' ORDER BY workflow",
      Params().text(workflow));
  std::vector<Head> out;
  for (int i = 0; i < s.rows(); ++i) {
    Head h;
    h.workflow = s.text(i, 0);
    h.run = s.text(i, 1);
    h.startedMs = s.integer(i, 2);
    h.streak = s.integer(i, 3);
    h.ended = s.text(i, 4);
    h.endedMs = s.integer(i, 5);
    h.paused = s.text(i, 6);
    h.why = s.text(i, 7);
    out.push_back(std::move(h));
  }
  return out;
}

std::optional<PgStore::StartKey> PgStore::startKey(const std::string& caller,
                                                   const std::string& workflow,
                                                   const std::string& key) {
  auto hold = db_->hold();
  const Result s =
      db_->run("SELECT run, digest FROM starts WHERE caller = $1 AND workflow = $2 AND key = $3",
               Params().text(caller).text(workflow).text(key));
  if (s.rows() == 0) return std::nullopt;
  return StartKey{s.text(0, 0), s.text(0, 1)};
}

PgStore::StartKey PgStore::keepStartKey(const std::string& caller, const std::string& workflow,
                                        const std::string& key, const StartKey& start) {
  auto hold = db_->hold();
  // Kept unless another start holds the key: its run is stored, or was kept less than 30 s ago
  // (under way on another host, its first commit to come). One statement: two hosts keeping one
  // key at once keep one. A key that is kept and gone between the two statements (pruned) is
  // tried again, a few times at most.
  for (int tries = 0; tries < 5; ++tries) {
    const Result r = db_->run(
        "WITH k AS (INSERT INTO starts (caller, workflow, key, run, digest, time)"
        " VALUES ($1, $2, $3, $4, $5, (extract(epoch FROM clock_timestamp()) * 1000)::bigint)"
        " ON CONFLICT (caller, workflow, key) DO UPDATE SET run = excluded.run,"
        " digest = excluded.digest, time = excluded.time"
        " WHERE NOT EXISTS (SELECT 1 FROM runs WHERE id = starts.run)"
        " AND starts.time < excluded.time - 30000 RETURNING run, digest)"
        " SELECT run, digest FROM k",
        Params().text(caller).text(workflow).text(key).text(start.run).text(start.digest));
    if (r.rows() == 1) return {r.text(0, 0), r.text(0, 1)};
    // Another start holds it (committed after this statement's snapshot, perhaps): read now.
    if (auto held = startKey(caller, workflow, key)) return *held;
  }
  throw StoreUnreachable("the `Idempotency-Key` " + key +
                         " was kept and let go five times while this start read it; send the "
                         "start again");
}

}  // namespace jr2rt::pg
