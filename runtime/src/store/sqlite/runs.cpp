// The runs in the SQLite store (docs/runtime.md#the-store): table `runs(id, workflow, status,
// updated, rev, snapshot, dkey, view)`, one row a run. A save is one transaction with the run's
// feed lines, journal entries and head, its revision checked and bumped by the statement that
// writes the row; summaries are read through a covering index, never a snapshot; a prune deletes
// a run with everything kept for it.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "store/rows.h"
#include "store/sqlite/sqlite_store.h"

namespace jr2rt::sqlite {
namespace {

// The smallest string above every string that starts with `prefix`; "" when there is none.
std::string PrefixEnd(std::string prefix) {
  while (!prefix.empty() && static_cast<unsigned char>(prefix.back()) == 0xFF) prefix.pop_back();
  if (!prefix.empty()) prefix.back() = static_cast<char>(prefix.back() + 1);
  return prefix;
}

const char* TypeName(int type) {
  switch (type) {
    case SQLITE_NULL:
      return "NULL";
    case SQLITE_INTEGER:
    case SQLITE_FLOAT:
      return "a number";
    case SQLITE_BLOB:
      return "bytes";
    default:
      return "text";
  }
}

}  // namespace

int64_t SqliteStore::save(const StoredRun& run, const std::vector<FeedLine>& feed) {
  heldNext_.clear();
  Txn txn(*db_, "BEGIN IMMEDIATE");
  const int64_t next = write(run, feed);
  txn.commit();
  committed();
  return next;
}

std::vector<int64_t> SqliteStore::saveAll(const std::vector<Save>& batch) {
  std::vector<int64_t> out;
  if (batch.empty()) return out;
  heldNext_.clear();  // a batch that failed before its commit recorded nothing held
  Txn txn(*db_, "BEGIN IMMEDIATE");
  out.reserve(batch.size());
  for (const Save& s : batch) out.push_back(write(s.run, s.feed));
  for (const Save& s : batch) {
    if (s.head) writeHead(*s.head);
  }
  for (const Save& s : batch) writeHooks(s.hooks);
  txn.commit();
  committed();
  return out;
}

// One run's save, inside the caller's transaction: one statement for the row (the revision
// checked and bumped by the same UPDATE), then the feed lines and the journal entries.
int64_t SqliteStore::write(const StoredRun& run, const std::vector<FeedLine>& feed) {
  const std::string snapshot =
      run.snapshotText.empty() ? run.snapshot.dump(-1, ' ', false, Json::error_handler_t::replace)
                               : std::string();
  // The kept parts in rows of their own (parts.cpp); the row holds the skeletons, or a text
  // without marks as it was given (bound without a copy).
  const std::string& given = run.snapshotText.empty() ? snapshot : run.snapshotText;
  std::string snapshotSkeleton, viewSkeleton;
  std::vector<uint64_t> parts =
      writeParts(run, run.revision == 0, given, run.viewText, snapshotSkeleton, viewSkeleton);
  const std::string& text = snapshotSkeleton.empty() ? given : snapshotSkeleton;
  const std::string& view = viewSkeleton.empty() ? run.viewText : viewSkeleton;
  int64_t next = 0;
  if (run.revision != 0) {
    // Written only if the stored run still has the revision this command had.
    Stmt s(*db_,
           "UPDATE runs SET workflow = ?2, status = ?3, updated = ?4, rev = rev + 1,"
           " snapshot = ?6, dkey = nullif(?7, ''), view = nullif(?8, '')"
           " WHERE id = ?1 AND rev = ?5 RETURNING rev");
    s.bind(1, run.id).bind(2, run.workflow).bind(3, run.status).bind(4, run.updatedMs);
    s.bind(5, run.revision).bindKept(6, text).bind(7, run.key).bindKept(8, view);
    if (!s.step()) {
      const int64_t stored = revision(run.id);
      throw StoreConflict("run " + run.id + " was changed by another command (revision " +
                          std::to_string(stored) + ", this command had " +
                          std::to_string(run.revision) + ")");
    }
    next = s.integer(0);
  } else {
    // A new run (or a benchmark's bare save): whatever is stored is written over.
    Stmt s(*db_,
           "INSERT INTO runs (id, workflow, status, updated, rev, snapshot, dkey, view) "
           "VALUES (?1, ?2, ?3, ?4, 1, ?5, nullif(?6, ''), nullif(?7, '')) "
           "ON CONFLICT (id) DO UPDATE SET workflow = ?2, status = ?3, updated = ?4, "
           "rev = rev + 1, snapshot = ?5, dkey = nullif(?6, ''), view = nullif(?7, ''), "
           "input = NULL RETURNING rev");
    s.bind(1, run.id).bind(2, run.workflow).bind(3, run.status).bind(4, run.updatedMs);
    s.bindKept(5, text).bind(6, run.key).bindKept(7, view);
    if (!s.step())
      throw StoreError("the run store " + Quoted(path_) + " did not save run " + run.id);
    next = s.integer(0);
    if (run.inputText.empty()) {
      Stmt gone(*db_, "DELETE FROM inputs WHERE run = ?");
      gone.bind(1, run.id).step();
    }
  }
  heldNext_.emplace_back(run.id, Held{next, std::move(parts), run.status == "waiting"});
  if (!run.inputText.empty()) {
    // Written once, in a row of its own (schema.cpp): later saves of the run leave it alone.
    Stmt in(*db_,
            "INSERT INTO inputs (run, input) VALUES (?1, ?2)"
            " ON CONFLICT (run) DO UPDATE SET input = ?2");
    in.bind(1, run.id).bindKept(2, run.inputText).step();
  }
  auto insert = [&](Stmt& s, const FeedLine& line) {
    s.bind(1, run.id).bind(2, line.timeMs).bind(3, line.line).bind(4, line.kind);
    s.bind(5, FeedDataText(line));
    s.step();
    s.reset();
  };
  if (feed.size() == 1) {
    // One line: its number found by the insert, one statement.
    Stmt s(*db_,
           "INSERT INTO feed (run, time, line, kind, data, seq)"
           " SELECT ?1, ?2, ?3, ?4, ?5, coalesce(max(seq), 0) + 1 FROM feed WHERE run = ?1");
    insert(s, feed.front());
  } else if (const std::vector<RowText> rows =
                 FeedRows(feed, PageFit(db_->pageSize(), run.id.size() + kFeedRecord));
             !rows.empty()) {
    // A turn's lines (a Pool's turn settles and starts items): rows of up to kLinesPerRow that
    // fill their pages, each numbered by its last line (store/rows.h). A row a line made a stored
    // Pool of 10,000 items spend a third of its time in SQLite (docs/performance.md).
    Stmt s(*db_,
           "INSERT INTO feed (run, time, line, kind, data, seq)"
           " SELECT ?1, ?2, '', ?3, ?4, coalesce(max(seq), 0) + ?5 FROM feed WHERE run = ?1");
    const std::string kind = kFeedLinesKind;
    size_t at = 0;
    for (const RowText& row : rows) {
      s.bind(1, run.id).bind(2, feed[at].timeMs).bind(3, kind);
      s.bindKept(4, row.text).bind(5, static_cast<int64_t>(row.count));
      s.step();
      s.reset();
      at += row.count;
    }
  } else if (!feed.empty()) {
    // Lines whose text is not UTF-8: a row each, their bytes as they were. The last number read
    // once, then plain inserts.
    int64_t seq = 0;
    {
      Stmt s(*db_, "SELECT coalesce(max(seq), 0) FROM feed WHERE run = ?");
      s.bind(1, run.id);
      if (s.step()) seq = s.integer(0);
    }
    Stmt s(*db_, "INSERT INTO feed (run, time, line, kind, data, seq) VALUES (?, ?, ?, ?, ?, ?)");
    for (const FeedLine& line : feed) {
      s.bind(6, ++seq);
      insert(s, line);
    }
  }
  if (!run.journalText.empty()) {
    int64_t seq = 0;
    {
      Stmt s(*db_, "SELECT coalesce(max(seq), 0) FROM journal WHERE run = ?");
      s.bind(1, run.id);
      if (s.step()) seq = s.integer(0);
    }
    if (seq != run.journalBefore) {
      throw StoreConflict("run " + run.id + "'s journal has " + std::to_string(seq) +
                          " entries, and this command had " + std::to_string(run.journalBefore));
    }
    // The save's entries in rows of up to kEntriesPerRow that fill their pages, each numbered
    // by its last entry (store/rows.h).
    Stmt s(*db_, "INSERT INTO journal (run, seq, entry) VALUES (?, ?, ?)");
    for (const RowText& row :
         JournalRows(run.journalText, PageFit(db_->pageSize(), run.id.size() + kJournalRecord))) {
      seq += static_cast<int64_t>(row.count);
      s.bind(1, run.id).bind(2, seq).bindKept(3, row.text);
      s.step();
      s.reset();
    }
  }
  return next;
}

StoredRun SqliteStore::load(const std::string& prefix) {
  // One read transaction: the run resolved is the run read.
  Txn txn(*db_, "BEGIN");
  StoredRun r;
  r.id = resolve(prefix);
  Stmt s(*db_, "SELECT workflow, status, updated, rev, snapshot, " JR2_SQLITE_RUN_INPUT
               " FROM runs WHERE id = ?");
  s.bind(1, r.id);
  if (!s.step()) throw StoreError("no run `" + prefix + "` in " + Quoted(path_));
  auto damaged = [&](const std::string& why) { return RunDamaged(r.id, Quoted(path_), why); };
  const char* names[] = {"workflow", "status"};
  for (int i = 0; i < 2; ++i) {
    if (s.type(i) != SQLITE_TEXT) {
      throw damaged(std::string("its ") + names[i] + " is not text (it is " + TypeName(s.type(i)) +
                    ")");
    }
  }
  r.workflow = s.text(0);
  r.status = s.text(1);
  r.updatedMs = s.integer(2);
  r.revision = s.integer(3);
  if (s.type(4) != SQLITE_TEXT) {
    throw damaged(std::string("its stored snapshot is not text (it is ") + TypeName(s.type(4)) +
                  ")");
  }
  r.snapshot = SnapshotOf(whole(r.id, s.text(4)), r.id, Quoted(path_));
  r.inputApart = PutInputBack(r.snapshot, s.type(5) != SQLITE_NULL, s.text(5), r.id, Quoted(path_));
  Stmt j(*db_, "SELECT seq, entry FROM journal WHERE run = ? ORDER BY seq");
  j.bind(1, r.id);
  int64_t last = 0;
  while (j.step()) {
    if (j.type(1) != SQLITE_TEXT) throw damaged("a journal entry is not text");
    AppendEntry(r.journal, last, j.integer(0), j.text(1), r.id, Quoted(path_));
  }
  r.journalBefore = static_cast<int64_t>(r.journal.size());
  PutOutputBack(r.snapshot, r.journal, r.id, Quoted(path_));
  return r;
}

std::string SqliteStore::resolve(const std::string& prefix) { return find(prefix, false).id; }

RunSummary SqliteStore::find(const std::string& prefix, bool view) {
  if (prefix.size() < 4) {
    throw StoreError("a run id needs at least 4 characters; `" + prefix + "` is too short");
  }
  // A range of the primary key, not a scan: `id >= prefix AND id < PrefixEnd(prefix)`.
  // (An `OR` for the unbounded case would cost the upper bound its use of the index.)
  const std::string end = PrefixEnd(prefix);
  Stmt s(*db_, end.empty() ? "SELECT id, workflow, status, updated, rev,"
                             " CASE WHEN ?3 THEN view END FROM runs WHERE id >= ?1 ORDER BY id"
                           : "SELECT id, workflow, status, updated, rev,"
                             " CASE WHEN ?3 THEN view END FROM runs"
                             " WHERE id >= ?1 AND id < ?2 ORDER BY id");
  s.bind(1, prefix).bind(3, int64_t{view ? 1 : 0});
  if (!end.empty()) s.bind(2, end);
  std::vector<RunSummary> found;
  int64_t count = 0;
  while (s.step()) {
    RunSummary r{s.text(0), s.text(1), s.text(2), s.integer(3), s.integer(4), s.text(5)};
    if (view) r.view = whole(r.id, std::move(r.view));
    if (r.id == prefix) return r;  // a whole id names its run, whatever else it starts
    if (found.size() < 10) found.push_back(std::move(r));
    ++count;
  }
  return OneRunOf(found, count, prefix,
                  "no run `" + prefix + "` in " + Quoted(path_) + "; `runs --all` lists them");
}

std::vector<RunSummary> SqliteStore::list(bool includeEnded, bool views) {
  // Without views the index covers the columns: a listing never reads a row.
  Stmt s(*db_, views ? (includeEnded ? "SELECT id, workflow, status, updated, rev, view FROM runs"
                                       " ORDER BY updated, id"
                                     : "SELECT id, workflow, status, updated, rev, view FROM runs"
                                       " WHERE status = 'waiting' ORDER BY updated, id")
                     : (includeEnded ? "SELECT id, workflow, status, updated, rev, '' FROM runs"
                                       " ORDER BY updated, id"
                                     : "SELECT id, workflow, status, updated, rev, '' FROM runs"
                                       " WHERE status = 'waiting' ORDER BY updated, id"));
  std::vector<RunSummary> out;
  while (s.step()) {
    out.push_back({s.text(0), s.text(1), s.text(2), s.integer(3), s.integer(4), s.text(5)});
    if (views) out.back().view = whole(out.back().id, std::move(out.back().view));
  }
  return out;
}

void SqliteStore::eachWaiting(const EachWaiting& fn) {
  Stmt s(*db_, "SELECT workflow, snapshot, " JR2_SQLITE_RUN_INPUT
               ", id FROM runs WHERE status = 'waiting' ORDER BY updated, id");
  while (s.step()) {
    fn(s.text(0), whole(s.text(3), s.text(1)),
       s.type(2) == SQLITE_NULL ? std::string() : s.text(2));
  }
}

std::vector<RunSummary> SqliteStore::page(const RunQuery& q) {
  if (q.workflows.empty() || q.limit <= 0) return {};
  // The page's ids come from runs_summary alone (it covers workflow, status, updated and id), and
  // only the rows of the page are read for their key: a page never reads 100,000 rows. A text
  // is a range of the primary key or a dispatch key (runs_by_key), each its own SELECT. A
  // follower's look names every status, so that each is one range of the index after its cursor.
  const bool follow = q.sinceMs >= 0;
  std::string common = "workflow IN (";
  for (size_t i = 0; i < q.workflows.size(); ++i) common += i == 0 ? "?" : ", ?";
  common += ")";
  std::vector<std::string> statuses;
  if (!q.status.empty()) {
    statuses.push_back(q.status);
  } else if (follow) {
    statuses = StoredStatuses();
  }
  for (size_t i = 0; i < statuses.size(); ++i) common += i == 0 ? " AND status IN (?" : ", ?";
  if (!statuses.empty()) common += ")";
  if (follow) {
    common += " AND (updated > ? OR (updated = ? AND id > ?))";
  } else if (q.beforeMs > 0) {
    common += " AND (updated < ? OR (updated = ? AND id < ?))";
  }
  const std::string end = q.text.empty() ? "" : PrefixEnd(q.text);
  std::string ids;
  if (q.text.empty()) {
    ids = "SELECT id, updated FROM runs WHERE " + common;
  } else {
    ids = "SELECT id, updated FROM runs WHERE id >= ?" +
          std::string(end.empty() ? "" : " AND id < ?") + " AND " + common +
          " UNION SELECT id, updated FROM runs WHERE dkey = ? AND " + common;
  }
  const char* order = follow ? "updated, id" : "updated DESC, id DESC";
  const char* outer = follow ? "r.updated, r.id" : "r.updated DESC, r.id DESC";
  const std::string sql =
      "SELECT r.id, r.workflow, r.status, r.updated, r.rev, coalesce(r.dkey, '') FROM (" + ids +
      " ORDER BY " + order + " LIMIT ?) AS p JOIN runs AS r ON r.id = p.id ORDER BY " + outer;
  Stmt s(*db_, sql);
  int at = 1;
  auto bindCommon = [&] {
    for (const std::string& w : q.workflows) s.bind(at++, w);
    for (const std::string& st : statuses) s.bind(at++, st);
    if (follow || q.beforeMs > 0) {
      const int64_t ms = follow ? q.sinceMs : q.beforeMs;
      s.bind(at++, ms);
      s.bind(at++, ms);
      s.bind(at++, follow ? q.sinceId : q.beforeId);
    }
  };
  if (q.text.empty()) {
    bindCommon();
  } else {
    s.bind(at++, q.text);
    if (!end.empty()) s.bind(at++, end);
    bindCommon();
    s.bind(at++, q.text);
    bindCommon();
  }
  s.bind(at++, q.limit + 1);
  std::vector<RunSummary> out;
  while (s.step()) {
    out.push_back({s.text(0), s.text(1), s.text(2), s.integer(3), s.integer(4), "", s.text(5)});
  }
  return out;
}

std::optional<RunSummary> SqliteStore::summary(const std::string& id) {
  Stmt s(*db_, "SELECT id, workflow, status, updated, rev FROM runs WHERE id = ?");
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  RunSummary r;
  r.id = s.text(0);
  r.workflow = s.text(1);
  r.status = s.text(2);
  r.updatedMs = s.integer(3);
  r.revision = s.integer(4);
  return r;
}

int64_t SqliteStore::revision(const std::string& id) {
  Stmt s(*db_, "SELECT rev FROM runs WHERE id = ?");
  s.bind(1, id);
  return s.step() ? s.integer(0) : 0;
}

std::optional<RunSummary> SqliteStore::byKey(const std::string& workflow, const std::string& key) {
  Stmt s(*db_,
         "SELECT id, workflow, status, updated, rev FROM runs WHERE workflow = ? AND dkey = ? "
         "ORDER BY updated DESC LIMIT 1");
  s.bind(1, workflow).bind(2, key);
  if (!s.step()) return std::nullopt;
  return RunSummary{s.text(0), s.text(1), s.text(2), s.integer(3), s.integer(4), ""};
}

std::map<std::pair<std::string, std::string>, int64_t> SqliteStore::runCounts() {
  Stmt s(*db_, "SELECT workflow, status, count(*) FROM runs GROUP BY workflow, status");
  std::map<std::pair<std::string, std::string>, int64_t> out;
  while (s.step()) out[{s.text(0), s.text(1)}] = s.integer(2);
  return out;
}

int64_t SqliteStore::prune(int64_t beforeMs, const std::string& workflow) {
  std::vector<std::string> ids;
  {
    Txn txn(*db_, "BEGIN IMMEDIATE");
    {
      // Never the run a standing workflow's head names: a paused Pool keeps what it holds (the
      // run's `carry`) for its resume, however long it is paused.
      Stmt s(*db_,
             "SELECT id FROM runs WHERE status <> 'waiting' AND updated < ?1"
             " AND (?2 = '' OR workflow = ?2) AND id NOT IN (SELECT run FROM heads)");
      s.bind(1, beforeMs).bind(2, workflow);
      while (s.step()) ids.push_back(s.text(0));
    }
    for (const std::string& id : ids) {
      Stmt lines(*db_, "DELETE FROM feed WHERE run = ?");
      lines.bind(1, id).step();
      Stmt journal(*db_, "DELETE FROM journal WHERE run = ?");
      journal.bind(1, id).step();
      Stmt input(*db_, "DELETE FROM inputs WHERE run = ?");
      input.bind(1, id).step();
      Stmt parts(*db_, "DELETE FROM parts WHERE run = ?");
      parts.bind(1, id).step();
      held_.erase(id);
      Stmt row(*db_, "DELETE FROM runs WHERE id = ?");
      row.bind(1, id).step();
    }
    // The inbox keeps nothing for long: requests of runs that are gone, and answers whose
    // asker stopped before it read them.
    db_->exec("DELETE FROM requests WHERE answer IS NOT NULL OR run NOT IN (SELECT id FROM runs)");
    {
      // A start key goes with its run.
      Stmt keys(*db_, "DELETE FROM starts WHERE run NOT IN (SELECT id FROM runs)");
      keys.step();
    }
    txn.commit();
  }
  // The lock files go after the commit: a lock file without a run is harmless, the reverse is
  // not possible.
  locks_.remove(ids);
  return static_cast<int64_t>(ids.size());
}

}  // namespace jr2rt::sqlite
