// The runs in the PostgreSQL store (docs/scaling.md): table `runs(id, workflow, status, updated,
// rev, snapshot, dkey, view)`, one row a run, as in the SQLite store (sqlite/runs.cpp). A save
// (and a saveAll of many runs) is one transaction sent as one pipeline: each run's row, its
// revision checked and bumped by the statement that writes it (a revision that moved raises in
// the server, so nothing of the batch is written), its feed lines and journal entries in one
// statement each, then the heads. Summaries never read a snapshot; a prune deletes a run with
// everything kept for it.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/pieces.h"
#include "store/postgres/pg_store.h"
#include "store/rows.h"

namespace jr2rt::pg {
namespace {

// Decodes valid UTF-8 without NUL (what a PostgreSQL text can hold) into code points; false when
// `s` is not that.
bool CodePoints(const std::string& s, std::vector<uint32_t>& out) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    int n = 0;
    uint32_t cp = 0;
    if (c == 0) return false;
    if (c < 0x80) {
      cp = c;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + static_cast<size_t>(n) >= s.size()) return false;
    for (int k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    static const uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    out.push_back(cp);
    i += static_cast<size_t>(n) + 1;
  }
  return true;
}

// The smallest text above every text that starts with `cps` (byte order, COLLATE "C": UTF-8's
// order is its code points'); "" when there is none. Always valid UTF-8, as the server wants.
std::string PrefixEnd(std::vector<uint32_t> cps) {
  while (!cps.empty() && cps.back() == 0x10FFFF) cps.pop_back();
  if (cps.empty()) return "";
  uint32_t& last = cps.back();
  last = last + 1 == 0xD800 ? 0xE000 : last + 1;
  std::string out;
  for (const uint32_t cp : cps) AppendUtf8(cp, out);
  return out;
}

// The owner parameters of a write: this store's lease ($host, $epoch), NULL and NULL without
// one (the owner is left as it is).
void AddOwner(Params& params, const std::optional<Hosts::Lease>& lease) {
  if (lease) {
    params.text(lease->host).integer(lease->epoch);
  } else {
    params.null().null();
  }
}

RunSummary SummaryAt(const Result& r, int row) {
  return {r.text(row, 0),    r.text(row, 1),    r.text(row, 2),
          r.integer(row, 3), r.integer(row, 4), r.null(row, 5) ? "" : r.text(row, 5)};
}

}  // namespace

int64_t PgStore::save(const StoredRun& run, const std::vector<FeedLine>& feed) {
  auto hold = db_->hold();
  Pipeline p(*db_);
  begin(p);
  const size_t at = write(p, run, feed);
  return p.finish()[at].integer(0, 0);
}

std::vector<int64_t> PgStore::saveAll(const std::vector<Save>& batch) {
  std::vector<int64_t> out;
  if (batch.empty()) return out;
  auto hold = db_->hold();
  Pipeline p(*db_);
  begin(p);
  std::vector<size_t> at;
  at.reserve(batch.size());
  for (const Save& s : batch) at.push_back(write(p, s.run, s.feed));
  for (const Save& s : batch) {
    if (s.head) writeHead(p, *s.head, db_->lease());
  }
  for (const Save& s : batch) writeHooks(p, s.hooks);
  const std::vector<Result> results = p.finish();
  out.reserve(batch.size());
  for (const size_t i : at) out.push_back(results[i].integer(0, 0));
  return out;
}

// The start of a transaction that writes: a store of version 1 opened read-only writes nothing,
// and with a lease its check comes first (jr2_check_lease: StoreFenced, nothing written, when it
// is not current; its host's row share-locked until the commit, so that no reap or join fences it
// in the middle).
void PgStore::begin(Pipeline& p) {
  if (db_->version() < 2) {
    throw StoreError("the run store " + Quoted(db_->name()) +
                     " has schema version 1 and was opened read-only: nothing can be written to "
                     "it; open it read-write (any `run`) to migrate it to version 3");
  }
  if (const auto lease = db_->lease()) {
    p.add("SELECT jr2_check_lease($1, $2)", Params().text(lease->host).integer(lease->epoch));
  }
}

// One run's save, queued: the row (the revision checked and bumped by the same statement), then
// its feed lines numbered after the run's last, then its journal entries after the
// `journalBefore` the command had. With a lease the row is owned by it, and written only if
// nobody else owns it (or its owner's lease is not current); else the server raises the
// conflict (jr2_save_refused). Without one its owner is left as it is.
size_t PgStore::write(Pipeline& p, const StoredRun& run, const std::vector<FeedLine>& feed) {
  // Kept parts are not kept apart here (core/pieces.h): the row holds the whole texts.
  std::string text = run.snapshotText.empty() ? Dump(run.snapshot) : Unmarked(run.snapshotText);
  size_t at = 0;
  Params params;
  params.text(run.id)
      .text(run.workflow)
      .text(run.status)
      .integer(run.updatedMs)
      .integer(run.revision)
      .text(std::move(text))
      .text(run.key)
      .text(HasPieces(run.viewText) ? Unmarked(run.viewText) : run.viewText);
  AddOwner(params, db_->lease());
  params.text(run.inputText);  // $11
  if (run.revision != 0) {
    // Written only if the stored run still has the revision this command had; else the server
    // raises the conflict (jr2_conflict_revision) and the transaction writes nothing.
    at = p.add(
        "WITH u AS (UPDATE runs SET workflow = $2, status = $3, updated = $4, rev = rev + 1,"
        " snapshot = $6, dkey = nullif($7, ''), view = nullif($8, ''),"
        " input = coalesce(nullif($11, ''), input), owner = coalesce($9, owner),"
        " owner_epoch = CASE WHEN $9::text IS NULL THEN owner_epoch ELSE $10::bigint END"
        " WHERE id = $1 AND rev = $5 AND ($9::text IS NULL OR owner IS NULL"
        " OR (owner = $9 AND owner_epoch = $10::bigint) OR NOT jr2_host_live(owner, owner_epoch))"
        " RETURNING rev)"
        " SELECT coalesce((SELECT rev FROM u), CASE WHEN $9::text IS NULL"
        " THEN jr2_conflict_revision($1, $5) ELSE jr2_save_refused($1, $5, $9, $10) END)",
        std::move(params));
  } else {
    // A new run (or a benchmark's bare save): whatever is stored is written over.
    at = p.add(
        "WITH u AS (INSERT INTO runs (id, workflow, status, updated, rev, snapshot, dkey, view,"
        " owner, owner_epoch, input) VALUES ($1, $2, $3, $4, 1, $6, nullif($7, ''),"
        " nullif($8, ''), $9, $10::bigint, nullif($11, '')) ON CONFLICT (id)"
        " DO UPDATE SET workflow = excluded.workflow, status = excluded.status,"
        " updated = excluded.updated, rev = runs.rev + 1, snapshot = excluded.snapshot,"
        " dkey = excluded.dkey, view = excluded.view, input = excluded.input,"
        " owner = coalesce($9, runs.owner),"
        " owner_epoch = CASE WHEN $9::text IS NULL THEN runs.owner_epoch ELSE $10::bigint END"
        " WHERE $9::text IS NULL OR runs.owner IS NULL"
        " OR (runs.owner = $9 AND runs.owner_epoch = $10::bigint)"
        " OR NOT jr2_host_live(runs.owner, runs.owner_epoch) RETURNING rev)"
        " SELECT coalesce((SELECT rev FROM u), jr2_save_refused($1, $5, $9, $10))",
        std::move(params));
  }
  if (!run.key.empty() && run.status != "waiting" && db_->version() >= 3) {
    // The run's end lets its dispatch key go: its reservation (Hosts::reserveKey), with it.
    p.add("DELETE FROM keys WHERE workflow = $1 AND key = $2 AND run = $3",
          Params().text(run.workflow).text(run.key).text(run.id));
  }
  if (!feed.empty()) {
    // Every line of the step in one statement, numbered after the run's last line (read once).
    std::vector<int64_t> times;
    std::vector<std::string> lines, kinds, data;
    for (const FeedLine& line : feed) {
      times.push_back(line.timeMs);
      lines.push_back(line.line);
      kinds.push_back(line.kind);
      data.push_back(FeedDataText(line));
    }
    p.add(
        "INSERT INTO feed (run, seq, time, line, kind, data)"
        " SELECT $1, m.last + t.n, t.time, t.line, t.kind, t.data"
        " FROM (SELECT coalesce(max(seq), 0) AS last FROM feed WHERE run = $1) m,"
        " unnest($2::bigint[], $3::text[], $4::text[], $5::text[])"
        " WITH ORDINALITY AS t(time, line, kind, data, n)",
        Params().text(run.id).integers(times).texts(lines).texts(kinds).texts(data));
  }
  if (!run.journalText.empty()) {
    // Appended where the command's journal ended, or the server raises the conflict
    // (jr2_check_journal, evaluated once before any entry is written).
    p.add(
        "WITH c AS MATERIALIZED (SELECT jr2_check_journal($1, $2) AS n)"
        " INSERT INTO journal (run, seq, entry)"
        " SELECT $1, c.n + t.i, t.entry FROM c, unnest($3::text[]) WITH ORDINALITY AS t(entry, i)",
        Params().text(run.id).integer(run.journalBefore).texts(run.journalText));
  }
  return at;
}

StoredRun PgStore::load(const std::string& prefix) {
  auto hold = db_->hold();
  // One read transaction, one state of the database: the run resolved is the run read, and its
  // journal is the one its revision had.
  Txn txn(*db_, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  StoredRun r;
  r.id = resolve(prefix);
  // A store of version 3, read as it is (read-only), has no input column: its snapshots hold
  // their input.
  const Result s = db_->run(db_->version() >= 4
                                ? "SELECT workflow, status, updated, rev, snapshot, input FROM runs"
                                  " WHERE id = $1"
                                : "SELECT workflow, status, updated, rev, snapshot, NULL FROM runs"
                                  " WHERE id = $1",
                            Params().text(r.id));
  if (s.rows() == 0) throw StoreError("no run `" + prefix + "` in " + Quoted(db_->name()));
  r.workflow = s.text(0, 0);
  r.status = s.text(0, 1);
  r.updatedMs = s.integer(0, 2);
  r.revision = s.integer(0, 3);
  r.snapshot = SnapshotOf(s.text(0, 4), r.id, Quoted(db_->name()));
  r.inputApart = PutInputBack(r.snapshot, !s.null(0, 5), s.text(0, 5), r.id, Quoted(db_->name()));
  const Result j =
      db_->run("SELECT seq, entry FROM journal WHERE run = $1 ORDER BY seq", Params().text(r.id));
  int64_t last = 0;
  for (int i = 0; i < j.rows(); ++i)
    AppendEntry(r.journal, last, j.integer(i, 0), j.text(i, 1), r.id, Quoted(db_->name()));
  r.journalBefore = static_cast<int64_t>(r.journal.size());
  PutOutputBack(r.snapshot, r.journal, r.id, Quoted(db_->name()));
  txn.commit();
  return r;
}

std::string PgStore::resolve(const std::string& prefix) { return find(prefix, false).id; }

RunSummary PgStore::find(const std::string& prefix, bool view) {
  if (prefix.size() < 4) {
    throw StoreError("a run id needs at least 4 characters; `" + prefix + "` is too short");
  }
  auto hold = db_->hold();
  const std::string none =
      "no run `" + prefix + "` in " + Quoted(db_->name()) + "; `runs --all` lists them";
  // A run id is text the server holds: a prefix that is not (bytes that are not UTF-8, a NUL)
  // starts none.
  std::vector<uint32_t> cps;
  if (!CodePoints(prefix, cps)) throw StoreError(none);
  // A range of the primary key, not a scan: `id >= prefix AND id < PrefixEnd(prefix)`.
  const std::string end = PrefixEnd(std::move(cps));
  Params params;
  params.text(prefix).text(view ? "true" : "false");
  if (!end.empty()) params.text(end);
  const Result s = db_->run(end.empty() ? "SELECT id, workflow, status, updated, rev,"
                                          " CASE WHEN $2::boolean THEN view END FROM runs"
                                          " WHERE id >= $1 ORDER BY id"
                                        : "SELECT id, workflow, status, updated, rev,"
                                          " CASE WHEN $2::boolean THEN view END FROM runs"
                                          " WHERE id >= $1 AND id < $3 ORDER BY id",
                            params);
  std::vector<RunSummary> found;
  int64_t count = 0;
  for (int i = 0; i < s.rows(); ++i) {
    RunSummary r = SummaryAt(s, i);
    if (r.id == prefix) return r;  // a whole id names its run, whatever else it starts
    if (found.size() < 10) found.push_back(std::move(r));
    ++count;
  }
  return OneRunOf(found, count, prefix, none);
}

std::vector<RunSummary> PgStore::list(bool includeEnded, bool views) {
  auto hold = db_->hold();
  const Result s =
      db_->run(views ? (includeEnded ? "SELECT id, workflow, status, updated, rev, view FROM runs"
                                       " ORDER BY updated, id"
                                     : "SELECT id, workflow, status, updated, rev, view FROM runs"
                                       " WHERE status = 'waiting' ORDER BY updated, id")
                     : (includeEnded ? "SELECT id, workflow, status, updated, rev, '' FROM runs"
                                       " ORDER BY updated, id"
                                     : "SELECT id, workflow, status, updated, rev, '' FROM runs"
                                       " WHERE status = 'waiting' ORDER BY updated, id"));
  std::vector<RunSummary> out;
  out.reserve(static_cast<size_t>(s.rows()));
  for (int i = 0; i < s.rows(); ++i) out.push_back(SummaryAt(s, i));
  return out;
}

void PgStore::eachWaiting(const EachWaiting& fn) {
  auto hold = db_->hold();
  // A store of version 3 (read as it is) has no input column: its snapshots hold their input.
  const Result s = db_->run(db_->version() >= 4 ? "SELECT workflow, snapshot, input FROM runs"
                                                  " WHERE status = 'waiting' ORDER BY updated, id"
                                                : "SELECT workflow, snapshot, NULL FROM runs"
                                                  " WHERE status = 'waiting' ORDER BY updated, id");
  for (int i = 0; i < s.rows(); ++i)
    fn(s.text(i, 0), s.text(i, 1), s.null(i, 2) ? std::string() : s.text(i, 2));
}

std::optional<RunSummary> PgStore::summary(const std::string& id) {
  auto hold = db_->hold();
  const Result s = db_->run("SELECT id, workflow, status, updated, rev, '' FROM runs WHERE id = $1",
                            Params().text(id));
  if (s.rows() == 0) return std::nullopt;
  return SummaryAt(s, 0);
}

int64_t PgStore::revision(const std::string& id) {
  auto hold = db_->hold();
  const Result s = db_->run("SELECT rev FROM runs WHERE id = $1", Params().text(id));
  return s.rows() > 0 ? s.integer(0, 0) : 0;
}

std::optional<RunSummary> PgStore::byKey(const std::string& workflow, const std::string& key) {
  auto hold = db_->hold();
  const Result s = db_->run(
      "SELECT id, workflow, status, updated, rev, '' FROM runs WHERE workflow = $1 AND dkey = $2"
      " ORDER BY updated DESC LIMIT 1",
      Params().text(workflow).text(key));
  if (s.rows() == 0) return std::nullopt;
  return SummaryAt(s, 0);
}

std::vector<RunSummary> PgStore::page(const RunQuery& q) {
  if (q.workflows.empty() || q.limit <= 0) return {};
  // As the SQLite store's: the page's ids from runs_summary, then only its rows for their key; a
  // text is a range of the primary key or a dispatch key, each its own SELECT.
  std::string end;
  if (!q.text.empty()) {
    std::vector<uint32_t> cps;
    if (!CodePoints(q.text, cps)) return {};  // no id or key is text that is not UTF-8
    end = PrefixEnd(std::move(cps));
  }
  // A follower's look names every status, so that each is one range of runs_summary after its
  // cursor (RunQuery::sinceMs).
  const bool follow = q.sinceMs >= 0;
  std::vector<std::string> statuses;
  if (!q.status.empty()) {
    statuses.push_back(q.status);
  } else if (follow) {
    statuses = StoredStatuses();
  }
  Params params;
  params.texts(q.workflows).texts(statuses).integer(follow ? q.sinceMs : q.beforeMs);
  params.text(follow ? q.sinceId : q.beforeId).integer(q.limit + 1);
  if (!q.text.empty()) params.text(q.text).text(end);
  const std::string cursor =
      follow ? " AND (updated > $3::bigint OR (updated = $3::bigint AND id > $4::text))"
             : " AND ($3::bigint = 0 OR updated < $3::bigint OR (updated = $3::bigint AND id < "
               "$4::text))";
  const std::string common = "workflow = ANY($1::text[])" +
                             std::string(statuses.empty() ? " AND cardinality($2::text[]) = 0"
                                                          : " AND status = ANY($2::text[])") +
                             cursor;
  const std::string ids =
      q.text.empty()
          ? "SELECT id, updated FROM runs WHERE " + common
          : "SELECT id, updated FROM runs WHERE id >= $6 AND ($7 = '' OR id < $7) AND " + common +
                " UNION SELECT id, updated FROM runs WHERE dkey = $6 AND " + common;
  const char* order = follow ? "updated, id" : "updated DESC, id DESC";
  const char* outer = follow ? "r.updated, r.id" : "r.updated DESC, r.id DESC";
  auto hold = db_->hold();
  const std::string sql =
      "SELECT r.id, r.workflow, r.status, r.updated, r.rev, coalesce(r.dkey, '') FROM (" + ids +
      " ORDER BY " + order + " LIMIT $5) AS p JOIN runs AS r ON r.id = p.id ORDER BY " + outer;
  const Result s = db_->run(sql.c_str(), params);
  std::vector<RunSummary> out;
  out.reserve(static_cast<size_t>(s.rows()));
  for (int i = 0; i < s.rows(); ++i) {
    out.push_back({s.text(i, 0), s.text(i, 1), s.text(i, 2), s.integer(i, 3), s.integer(i, 4), "",
                   s.text(i, 5)});
  }
  return out;
}

std::map<std::pair<std::string, std::string>, int64_t> PgStore::runCounts() {
  auto hold = db_->hold();
  const Result s =
      db_->run("SELECT workflow, status, count(*) FROM runs GROUP BY workflow, status");
  std::map<std::pair<std::string, std::string>, int64_t> out;
  for (int i = 0; i < s.rows(); ++i) out[{s.text(i, 0), s.text(i, 1)}] = s.integer(i, 2);
  return out;
}

int64_t PgStore::prune(int64_t beforeMs, const std::string& workflow) {
  auto hold = db_->hold();
  Pipeline p(*db_);
  // Never the run a standing workflow's head names: a paused Pool keeps what it holds (the run's
  // `carry`) for its resume, however long it is paused.
  const size_t at = p.add(
      "WITH gone AS (DELETE FROM runs WHERE status <> 'waiting' AND updated < $1"
      " AND ($2 = '' OR workflow = $2) AND id NOT IN (SELECT run FROM heads) RETURNING id),"
      " f AS (DELETE FROM feed WHERE run IN (SELECT id FROM gone)),"
      " j AS (DELETE FROM journal WHERE run IN (SELECT id FROM gone))"
      " SELECT count(*) FROM gone",
      Params().integer(beforeMs).text(workflow));
  // The inbox keeps nothing for long: requests of runs that are gone, and answers whose asker
  // stopped before it read them. A start key goes with its run.
  p.add("DELETE FROM requests WHERE answer IS NOT NULL OR run NOT IN (SELECT id FROM runs)", {});
  p.add("DELETE FROM starts WHERE run NOT IN (SELECT id FROM runs)", {});
  return p.finish()[at].integer(0, 0);
}

}  // namespace jr2rt::pg
