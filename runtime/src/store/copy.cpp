// Moving in (docs/scaling.md#moving-in, #32): `<runner> store copy --to LOCATION` copies a SQLite
// run store into a PostgreSQL one. The source is read through its own connection in one read
// transaction (WAL: a snapshot of one instant, a writer never blocked, nothing written to it);
// the target is written through the PostgreSQL store's connection (store/postgres/conn.h) in one
// transaction, table by table in batches of rows sent as arrays (`unnest`), so that a failure
// anywhere writes nothing. Rows are copied as they are stored (a damaged snapshot stays damaged,
// to be told by the reads that meet it), text made valid for PostgreSQL (AsText: U+FFFD for a byte
// of no UTF-8 sequence, as the PostgreSQL store writes any text); runs and heads owned by nobody.
//
// Table by table (sqlite/schema.cpp against postgres/schema.cpp): runs (their kept `parts` put
// back into each snapshot and view, which PostgreSQL keeps whole), feed, journal, heads, starts
// and hooks are copied; `requests` (the inbox) is not — each request is a command's
// question to the host driving a run on the SQLite store, waited for there by its number, and
// withdrawn by its asker when no host takes it: moved, nobody would read its answer. `hosts` and
// `jr2_meta` are the PostgreSQL store's own (the SQLite store has neither).
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jr2/postgres_store.h"
#include "jr2/store.h"
#include "jr2/store_copy.h"
#include "store/postgres/conn.h"
#include "store/rows.h"
#include "store/sqlite/db.h"
#include "store/sqlite/sqlite_store.h"

namespace jr2rt {
namespace {

// Rows sent in one statement, and the bytes of text that end a batch sooner (a snapshot can be
// large): a round trip per batch, memory bounded whatever the store's size.
constexpr size_t kBatchRows = 500;
constexpr size_t kBatchBytes = size_t{8} << 20;

// Two copies into one database at once: one waits for the other's commit, then sees its runs.
// (FNV-1a of "jr2 store copy".)
constexpr const char* kCopyLock = "SELECT pg_advisory_xact_lock(-3750763034362895579)";

class Copier {
 public:
  Copier(sqlite::Db& src, pg::Conn& dst, const StoreCopyOptions& options)
      : src_(src), dst_(dst), options_(options) {}

  StoreCopyCounts copy() {
    dst_.run(kCopyLock);
    checkTarget();
    {
      sqlite::Stmt s(src_, "SELECT count(*) FROM requests");
      if (s.step()) counts_.requestsLeft = s.integer(0);
    }
    copyRuns();
    copyFeed();
    copyJournal();
    copyHeads();
    copyStarts();
    copyHooks();
    return counts_;
  }

 private:
  std::string from() const { return pg::Quoted(src_.path()); }
  std::string to() const { return pg::Quoted(dst_.name()); }
  static std::string nothing() { return "nothing was written"; }

  // Without --onto-nonempty the target holds nothing of runs yet.
  void checkTarget() {
    if (options_.ontoNonempty) return;
    const pg::Result r = dst_.run(
        "SELECT (SELECT count(*) FROM runs), EXISTS (SELECT 1 FROM feed),"
        " EXISTS (SELECT 1 FROM journal), EXISTS (SELECT 1 FROM heads WHERE run <> ''),"
        " EXISTS (SELECT 1 FROM starts), EXISTS (SELECT 1 FROM hooks)");
    const int64_t runs = r.integer(0, 0);
    std::string what;
    if (runs > 0) {
      what = std::to_string(runs) + " run" + (runs == 1 ? "" : "s");
    } else {
      static const char* const kWhat[] = {"feed lines", "journal entries",
                                          "heads of standing workflows", "start keys",
                                          "hook deliveries"};
      for (int i = 0; i < 5 && what.empty(); ++i) {
        if (r.boolean(0, i + 1)) what = kWhat[i];
      }
    }
    if (what.empty()) return;
    throw StoreConflict("the run store " + to() + " holds " + what +
                        " already, and `store copy` moves a store into an empty one (" + nothing() +
                        "); give an empty database (or schema), or add --onto-nonempty to copy "
                        "beside what it holds");
  }

  // ---- runs -------------------------------------------------------------------------------

  struct Runs {
    std::vector<std::string> id, workflow, status, snapshot, dkey, view, input;
    std::vector<int64_t> updated, rev;
    size_t bytes = 0;
    size_t size() const { return id.size(); }
  };

  // A run's snapshot or view with its kept parts put back: the PostgreSQL store keeps none apart
  // (store/sqlite/parts.cpp). One whose part is missing is copied as it is stored, damaged.
  std::string whole(const std::string& id, std::string text) {
    try {
      return sqlite::WholeText(src_, id, text, from());
    } catch (const StoreDamaged&) {
      return text;
    }
  }

  void copyRuns() {
    Runs b;
    sqlite::Stmt s(
        src_,
        "SELECT id, workflow, status, updated, rev, snapshot, dkey, view, " JR2_SQLITE_RUN_INPUT
        " FROM runs ORDER BY id");
    while (s.step()) {
      b.id.push_back(s.text(0));
      b.workflow.push_back(s.text(1));
      b.status.push_back(s.text(2));
      b.updated.push_back(s.integer(3));
      b.rev.push_back(s.integer(4));
      b.snapshot.push_back(whole(b.id.back(), s.text(5)));
      b.dkey.push_back(s.text(6));
      b.view.push_back(whole(b.id.back(), s.text(7)));
      b.input.push_back(s.text(8));  // "" for NULL: the snapshot holds its input
      b.bytes += b.snapshot.back().size() + b.view.back().size() + b.input.back().size();
      if (b.status.back() == "waiting") ++counts_.waiting;
      if (b.size() >= kBatchRows || b.bytes >= kBatchBytes) flushRuns(b);
    }
    flushRuns(b);
  }

  void flushRuns(Runs& b) {
    if (b.size() == 0) return;
    pg::Params p;
    p.texts(b.id)
        .texts(b.workflow)
        .texts(b.status)
        .integers(b.updated)
        .integers(b.rev)
        .texts(b.snapshot)
        .texts(b.dkey)
        .texts(b.view)
        .texts(b.input);
    // Owned by nobody (owner NULL): any serve sharing the store claims the waiting ones. A row
    // that meets a unique key (its id, or a live dispatch key) is not written, and told below.
    const pg::Result r = dst_.run(
        "INSERT INTO runs (id, workflow, status, updated, rev, snapshot, dkey, view, input)"
        " SELECT t.id, t.workflow, t.status, t.updated, t.rev, t.snapshot, nullif(t.dkey, ''),"
        " nullif(t.view, ''), nullif(t.input, '') FROM unnest($1::text[], $2::text[],"
        " $3::text[], $4::bigint[], $5::bigint[], $6::text[], $7::text[], $8::text[], $9::text[])"
        " AS t(id, workflow, status, updated, rev, snapshot, dkey, view, input)"
        " ON CONFLICT DO NOTHING RETURNING id",
        p);
    counts_.runs += r.rows();
    if (static_cast<size_t>(r.rows()) != b.size()) {
      std::map<std::string, bool> written;
      for (int i = 0; i < r.rows(); ++i) written[r.text(i, 0)] = true;
      for (size_t i = 0; i < b.size(); ++i) {
        if (written.count(pg::AsText(b.id[i])) == 0) refuseRun(b, i);
      }
    }
    if (options_.ontoNonempty) {
      // A feed or journal the target kept of a run id it has no row for (written by hand): the
      // copy's lines would meet it.
      const pg::Result orphan = dst_.run(
          "SELECT run FROM feed WHERE run = ANY($1::text[])"
          " UNION ALL SELECT run FROM journal WHERE run = ANY($1::text[]) LIMIT 1",
          pg::Params().texts(b.id));
      if (orphan.rows() > 0) {
        throw StoreConflict("the run store " + to() +
                            " holds feed lines or journal entries of run " +
                            pg::Quoted(orphan.text(0, 0)) + " without its run, which " + from() +
                            " holds (" + nothing() +
                            "); delete them there (DELETE FROM feed WHERE run = …; DELETE FROM "
                            "journal WHERE run = …), then copy again");
      }
    }
    b = Runs();
  }

  // Run `b.id[i]` was not written: its id is the target's already, or its dispatch key is a
  // waiting run's there (one waiting run per workflow and key).
  [[noreturn]] void refuseRun(const Runs& b, size_t i) {
    const std::string id = pg::AsText(b.id[i]);
    if (dst_.run("SELECT 1 FROM runs WHERE id = $1", pg::Params().text(id)).rows() > 0) {
      throw StoreConflict("run " + pg::Quoted(id) + " is in both " + from() + " and " + to() +
                          " (copied before?): a copy writes no run over another (" + nothing() +
                          "); drive the copy that is there, or prune or remove the run from one "
                          "of the stores, then copy again");
    }
    const pg::Result k = dst_.run(
        "SELECT id FROM runs WHERE workflow = $1 AND dkey = $2 AND status = 'waiting' LIMIT 1",
        pg::Params().text(b.workflow[i]).text(b.dkey[i]));
    const std::string other = k.rows() > 0 ? k.text(0, 0) : std::string("?");
    throw StoreConflict("waiting runs " + pg::Quoted(id) + " and " + pg::Quoted(other) +
                        " of workflow " + pg::Quoted(pg::AsText(b.workflow[i])) +
                        " have one dispatch key " + pg::Quoted(pg::AsText(b.dkey[i])) +
                        ", and the run store " + to() +
                        " keeps one waiting run per workflow and key (" + nothing() +
                        "); cancel one of them, then copy again");
  }

  // ---- feed and journal --------------------------------------------------------------------

  void copyFeed() {
    std::vector<std::string> run, line, kind, data;
    std::vector<int64_t> seq, time;
    size_t bytes = 0;
    auto flush = [&] {
      if (run.empty()) return;
      pg::Params p;
      p.texts(run).integers(seq).integers(time).texts(line).texts(kind).texts(data);
      counts_.feed += dst_.run(
                              "INSERT INTO feed (run, seq, time, line, kind, data)"
                              " SELECT t.run, t.seq, t.time, t.line, t.kind, nullif(t.data, '')"
                              " FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[],"
                              " $5::text[], $6::text[]) AS t(run, seq, time, line, kind, data)",
                              p)
                          .changed();
      run.clear(), seq.clear(), time.clear(), line.clear(), kind.clear(), data.clear();
      bytes = 0;
    };
    sqlite::Stmt s(src_, "SELECT run, seq, time, line, kind, data FROM feed ORDER BY run, seq");
    std::vector<FeedLine> lines;
    while (s.step()) {
      if (s.text(4) != kFeedLinesKind) {
        run.push_back(s.text(0));
        seq.push_back(s.integer(1));
        time.push_back(s.integer(2));
        line.push_back(s.text(3));
        kind.push_back(s.text(4));
        data.push_back(s.text(5));
        bytes += line.back().size() + data.back().size();
      } else {
        // A save's lines in one row (store/rows.h): a row each in PostgreSQL.
        lines.clear();
        AppendFeedRow(lines, s.integer(1), s.integer(2), s.text(3), s.text(4), s.text(5), 0);
        // A row that cannot be read as lines (another tool's) is copied as it is, its text kept.
        const bool unread = lines.size() == 1 && lines.front().kind == kFeedLinesKind;
        for (FeedLine& l : lines) {
          run.push_back(s.text(0));
          seq.push_back(l.seq);
          time.push_back(l.timeMs);
          data.push_back(unread ? s.text(5)
                                : l.data.dump(-1, ' ', false, Json::error_handler_t::replace));
          line.push_back(std::move(l.line));
          kind.push_back(std::move(l.kind));
          bytes += line.back().size() + data.back().size();
        }
      }
      if (run.size() >= kBatchRows * 4 || bytes >= kBatchBytes) flush();
    }
    flush();
  }

  void copyJournal() {
    std::vector<std::string> run, entry;
    std::vector<int64_t> seq;
    size_t bytes = 0;
    auto flush = [&] {
      if (run.empty()) return;
      counts_.journal += dst_.run(
                                 "INSERT INTO journal (run, seq, entry)"
                                 " SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[])",
                                 pg::Params().texts(run).integers(seq).texts(entry))
                             .changed();
      run.clear(), seq.clear(), entry.clear();
      bytes = 0;
    };
    sqlite::Stmt s(src_, "SELECT run, seq, entry FROM journal ORDER BY run, seq");
    while (s.step()) {
      std::string text = s.text(2);
      const Json row =
          text.empty() || text.front() != '[' ? Json() : Json::parse(text, nullptr, false);
      if (!row.is_array() || row.empty() || IsShortEntry(row)) {  // one entry
        run.push_back(s.text(0));
        seq.push_back(s.integer(1));
        entry.push_back(std::move(text));
        bytes += entry.back().size();
      } else {
        // A save's entries in one row (store/rows.h): a row each in PostgreSQL.
        int64_t at = s.integer(1) - static_cast<int64_t>(row.size());
        for (const Json& e : row) {
          run.push_back(s.text(0));
          seq.push_back(++at);
          entry.push_back(e.dump(-1, ' ', false, Json::error_handler_t::replace));
          bytes += entry.back().size();
        }
      }
      if (run.size() >= kBatchRows * 4 || bytes >= kBatchBytes) flush();
    }
    flush();
  }

  // ---- heads, start keys, the hook log -------------------------------------------------------

  // Few rows: one statement each.
  void copyHeads() {
    std::vector<std::string> workflow, run, ended, paused, why;
    std::vector<int64_t> started, streak, endedAt;
    sqlite::Stmt s(src_,
                   "SELECT workflow, run, started, streak, ended, ended_at, paused, why FROM heads"
                   " ORDER BY workflow");
    while (s.step()) {
      workflow.push_back(s.text(0));
      run.push_back(s.text(1));
      started.push_back(s.integer(2));
      streak.push_back(s.integer(3));
      ended.push_back(s.text(4));
      endedAt.push_back(s.integer(5));
      paused.push_back(s.text(6));
      why.push_back(s.text(7));
    }
    if (workflow.empty()) return;
    pg::Params p;
    p.texts(workflow)
        .texts(run)
        .integers(started)
        .integers(streak)
        .texts(ended)
        .integers(endedAt)
        .texts(paused)
        .texts(why);
    // Owned by nobody: the serve that claims the head's workflow first stands it up.
    const pg::Result r = dst_.run(
        "INSERT INTO heads (workflow, run, started, streak, ended, ended_at, paused, why)"
        " SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[],"
        " $6::bigint[], $7::text[], $8::text[]) ON CONFLICT DO NOTHING RETURNING workflow",
        p);
    counts_.heads = r.rows();
    if (static_cast<size_t>(r.rows()) == workflow.size()) return;
    std::map<std::string, bool> written;
    for (int i = 0; i < r.rows(); ++i) written[r.text(i, 0)] = true;
    for (const std::string& w : workflow) {
      if (written.count(pg::AsText(w)) > 0) continue;
      throw StoreConflict("standing workflow " + pg::Quoted(pg::AsText(w)) +
                          " has a head in both " + from() + " and " + to() +
                          " (a serve there stood it up, or took it to): a standing workflow has "
                          "one head, and one live run (" +
                          nothing() +
                          "); cancel and prune its runs on one of the stores (on the target, "
                          "with its serves stopped), then copy again");
    }
  }

  void copyStarts() {
    std::vector<std::string> caller, workflow, key, run, digest;
    std::vector<int64_t> time;
    sqlite::Stmt s(src_,
                   "SELECT caller, workflow, key, run, digest, time FROM starts"
                   " ORDER BY caller, workflow, key");
    auto flush = [&] {
      if (caller.empty()) return;
      pg::Params p;
      p.texts(caller).texts(workflow).texts(key).texts(run).texts(digest).integers(time);
      const pg::Result r = dst_.run(
          "INSERT INTO starts (caller, workflow, key, run, digest, time)"
          " SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],"
          " $6::bigint[]) ON CONFLICT DO NOTHING RETURNING caller, workflow, key",
          p);
      counts_.starts += r.rows();
      if (static_cast<size_t>(r.rows()) != caller.size()) {
        std::map<std::string, bool> written;
        for (int i = 0; i < r.rows(); ++i)
          written[r.text(i, 0) + '\n' + r.text(i, 1) + '\n' + r.text(i, 2)] = true;
        for (size_t i = 0; i < caller.size(); ++i) {
          if (written.count(pg::AsText(caller[i]) + '\n' + pg::AsText(workflow[i]) + '\n' +
                            pg::AsText(key[i])) > 0)
            continue;
          throw StoreConflict("Caller " + pg::Quoted(pg::AsText(caller[i])) + "'s start of " +
                              pg::Quoted(pg::AsText(workflow[i])) + " with Idempotency-Key " +
                              pg::Quoted(pg::AsText(key[i])) + " is in both " + from() + " and " +
                              to() + ": one key starts one run (" + nothing() +
                              "); prune the run it started on one of the stores, then copy again");
        }
      }
      caller.clear(), workflow.clear(), key.clear(), run.clear(), digest.clear(), time.clear();
    };
    while (s.step()) {
      caller.push_back(s.text(0));
      workflow.push_back(s.text(1));
      key.push_back(s.text(2));
      run.push_back(s.text(3));
      digest.push_back(s.text(4));
      time.push_back(s.integer(5));
      if (caller.size() >= kBatchRows * 4) flush();
    }
    flush();
  }

  // Each delivery keeps its order within its hook, after the deliveries the target logged of it
  // already (their `seq` from the target's last); a delivery both logged keeps the target's
  // answer, which was the first one given there (the hook log's rule).
  void copyHooks() {
    std::map<std::string, int64_t> last;
    {
      const pg::Result r = dst_.run("SELECT hook, max(seq) FROM hooks GROUP BY hook");
      for (int i = 0; i < r.rows(); ++i) last[r.text(i, 0)] = r.integer(i, 1);
    }
    std::vector<std::string> hook, delivery, event, answer;
    std::vector<int64_t> time, seq;
    size_t bytes = 0;
    auto flush = [&] {
      if (hook.empty()) return;
      pg::Params p;
      p.texts(hook).texts(delivery).integers(time).texts(event).texts(answer).integers(seq);
      const int64_t n = dst_.run(
                                "INSERT INTO hooks (hook, delivery, time, event, answer, seq)"
                                " SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[],"
                                " $4::text[], $5::text[], $6::bigint[]) ON CONFLICT DO NOTHING",
                                p)
                            .changed();
      counts_.hooks += n;
      counts_.hooksKept += static_cast<int64_t>(hook.size()) - n;
      hook.clear(), delivery.clear(), event.clear(), answer.clear(), time.clear(), seq.clear();
      bytes = 0;
    };
    sqlite::Stmt s(src_,
                   "SELECT hook, delivery, time, event, answer, seq FROM hooks ORDER BY hook, seq");
    while (s.step()) {
      hook.push_back(s.text(0));
      delivery.push_back(s.text(1));
      time.push_back(s.integer(2));
      event.push_back(s.text(3));
      answer.push_back(s.text(4));
      const auto at = last.find(pg::AsText(hook.back()));
      seq.push_back(s.integer(5) + (at == last.end() ? 0 : at->second));
      bytes += answer.back().size();
      if (hook.size() >= kBatchRows * 4 || bytes >= kBatchBytes) flush();
    }
    flush();
  }

  sqlite::Db& src_;
  pg::Conn& dst_;
  StoreCopyOptions options_;
  StoreCopyCounts counts_;
};

}  // namespace

StoreCopyCounts CopySqliteToPostgres(const std::string& from, const std::string& to,
                                     const StoreCopyOptions& options) {
  if (IsPostgresLocation(from)) {
    throw StoreError("`store copy` copies a SQLite store, and " +
                     pg::Quoted(PostgresLocationName(from)) +
                     " is a PostgreSQL database already: give the SQLite file with --store or "
                     "JR2_STORE (between databases, use pg_dump)");
  }
  if (!IsPostgresLocation(to)) {
    throw StoreError(
        "`store copy --to` takes a PostgreSQL database (postgresql://… or host=… "
        "dbname=…), and " +
        pg::Quoted(to) +
        " is a path: give the database's location (for a copy into a SQLite file, "
        "use `store backup FILE`)");
  }
  std::unique_ptr<sqlite::Db> src;
  try {
    // Checked as every command checks a store (another application's file is refused untouched),
    // and never made: a path without a store is refused.
    src = sqlite::OpenDb(from, StoreMode::kReadOnly);
  } catch (const StoreMissing&) {
    throw StoreMissing("no run store at " + pg::Quoted(from) +
                       " to copy: `store copy` copies an existing SQLite store; give its path "
                       "with --store or JR2_STORE");
  }
  src->exec("PRAGMA query_only = 1");
  // One read transaction, begun by its first read: every table of one instant.
  sqlite::Txn read(*src, "BEGIN");
  auto dst = pg::OpenConn(to, StoreMode::kReadWrite);
  auto hold = dst->hold();
  pg::Txn write(*dst);
  Copier copier(*src, *dst, options);
  const StoreCopyCounts counts = copier.copy();
  // The serves sharing the database are told there are runs to claim (docs/scaling.md#wake-ups),
  // once, as the copy commits.
  if (counts.waiting > 0) {
    dst->run("SELECT pg_notify('jr2_runs', '')");
    dst->notified();
  }
  write.commit();
  return counts;
}

}  // namespace jr2rt
