// Moving in (docs/scaling.md#moving-in, #32): a SQLite store copied into PostgreSQL by
// CopySqliteToPostgres (`<runner> store copy --to`), against the real server of the ctest fixture
// `pg` (store_fixture.h), each test with a database and a folder of its own: every table copied
// as it was (text made valid UTF-8), runs owned by nobody and claimed by a host, the refusals
// (each one line, nothing written), a copy onto a store that holds runs, all or nothing, and a
// source read as of one instant while a writer holds it.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/pieces.h"
#include "jr2/postgres_store.h"
#include "jr2/sqlite_store.h"
#include "jr2/store.h"
#include "jr2/store_copy.h"
#include "store_fixture.h"

namespace {

namespace fs = std::filesystem;
using jr2rt::Json;
using jr2test::Contains;
using jr2test::ErrorOf;
using jr2test::PgDatabase;
using jr2test::PgServer;
using jr2test::PgSql;
using jr2test::Stored;

class PgCopy : public testing::Test {
 protected:
  void SetUp() override {
    server_ = PgServer();
    if (server_.empty()) GTEST_SKIP() << jr2test::kNoServer;
    db_ = std::make_unique<PgDatabase>(server_);
    const auto* info = testing::UnitTest::GetInstance()->current_test_info();
    dir_ = jr2test::FreshDir(std::string("copy-") + info->name());
    sqlitePath_ = dir_ + "jr2.db";
  }
  std::string location() const { return db_->location(); }
  std::string sql(const std::string& statements) { return PgSql(location(), statements); }
  std::unique_ptr<jr2rt::Store> source() { return jr2rt::OpenSqliteStore(sqlitePath_); }
  std::unique_ptr<jr2rt::Store> target() { return jr2rt::OpenPostgresStore(location()); }
  jr2rt::StoreCopyCounts copy(bool onto = false) {
    return jr2rt::CopySqliteToPostgres(sqlitePath_, location(), {onto});
  }
  std::string tables() {
    return sql(
        "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = 'public'");
  }

  std::string server_;
  std::unique_ptr<PgDatabase> db_;
  std::string dir_;
  std::string sqlitePath_;
};

// A waiting run with a dispatch key, its view, a feed (one line not UTF-8) and a journal; an ended
// run; a standing workflow's head; a start key; two hook deliveries; a request in the inbox.
void Fill(jr2rt::Store& s) {
  auto waiting = Stored("waiting", 0, "aaaa0000waiting", 10, "callee");
  waiting.key = "K-1";
  waiting.viewText = R"({"status":"waiting","gates":[]})";
  waiting.snapshot["pool"] = {{"live", {"T-1", "T-2"}}, {"started", {"T-2"}}};
  waiting.journalText = jr2test::Entries({Json{{"settled", "T-0"}}, Json{{"failed", "T-9"}}});
  s.save(waiting, {jr2rt::FeedLine(0, 11, "started T-1", "started", Json{{"item", "T-1"}}),
                   jr2rt::FeedLine(0, 12, std::string("caf\xE9 \x00 bytes", 12), "log")});
  jr2rt::RunRows::Save standing;
  standing.run = Stored("done", 0, "bbbb1111standing", 20, "alerts");
  standing.feed = {jr2rt::FeedLine(0, 21, "done", "ended")};
  standing.head = jr2rt::Heads::Head{"alerts", "bbbb1111standing", 19, 2, "error", 21, "", ""};
  s.saveAll({standing});
  s.keepStartKey("ops", "alerts", "idem-1", {"bbbb1111standing", "sha256:ab"});
  s.logHooks({{"forge", "d-1", 30, "issues.labeled", Json{{"status", 202}}},
              {"forge", "d-2", 31, "issues.closed", Json{{"status", 200}}}});
  s.ask("aaaa0000waiting", "cancel", Json::object());
}

TEST_F(PgCopy, EveryTableIsCopiedAndTheRunsAreOwnedByNobody) {
  Fill(*source());
  const jr2rt::StoreCopyCounts n = copy();
  EXPECT_EQ(n.runs, 2);
  EXPECT_EQ(n.waiting, 1);
  EXPECT_EQ(n.feed, 3);
  EXPECT_EQ(n.journal, 2);
  EXPECT_EQ(n.heads, 1);
  EXPECT_EQ(n.starts, 1);
  EXPECT_EQ(n.hooks, 2);
  EXPECT_EQ(n.hooksKept, 0);
  EXPECT_EQ(n.requestsLeft, 1);

  auto from = source();
  auto to = target();
  for (const char* id : {"aaaa0000waiting", "bbbb1111standing"}) {
    const jr2rt::StoredRun a = from->load(id), b = to->load(id);
    EXPECT_EQ(a.workflow, b.workflow);
    EXPECT_EQ(a.status, b.status);
    EXPECT_EQ(a.updatedMs, b.updatedMs);
    EXPECT_EQ(a.revision, b.revision);
    EXPECT_EQ(a.snapshot, b.snapshot);
    EXPECT_EQ(a.journal, b.journal);
    EXPECT_EQ(from->find(id, true).view, to->find(id, true).view);
    EXPECT_EQ(from->lastSeq(id), to->lastSeq(id));
  }
  ASSERT_TRUE(to->byKey("callee", "K-1"));
  EXPECT_EQ(to->byKey("callee", "K-1")->id, "aaaa0000waiting");
  const auto feed = to->feed("aaaa0000waiting", 0);
  ASSERT_EQ(feed.size(), 2u);
  EXPECT_EQ(feed[0].kind, "started");
  EXPECT_EQ(feed[0].data, (Json{{"item", "T-1"}}));
  // A byte of no UTF-8 sequence and a NUL become U+FFFD, as the PostgreSQL store writes any text.
  EXPECT_EQ(feed[1].line, "caf\xEF\xBF\xBD \xEF\xBF\xBD bytes");
  const auto head = to->head("alerts");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->run, "bbbb1111standing");
  EXPECT_EQ(head->streak, 2);
  EXPECT_EQ(head->ended, "error");
  const auto start = to->startKey("ops", "alerts", "idem-1");
  ASSERT_TRUE(start);
  EXPECT_EQ(start->digest, "sha256:ab");
  EXPECT_EQ(to->hookLog("forge", 10), from->hookLog("forge", 10));
  EXPECT_EQ(to->hookAnswer("forge", "d-1"), (Json{{"status", 202}}));
  // Nobody owns what was copied; the inbox stayed behind.
  EXPECT_EQ(sql("SELECT count(*) FROM runs WHERE owner IS NOT NULL OR owner_epoch IS NOT NULL"),
            "0");
  EXPECT_EQ(sql("SELECT count(*) FROM heads WHERE owner IS NOT NULL"), "0");
  EXPECT_EQ(sql("SELECT count(*) FROM requests"), "0");
  // The source is unchanged: its inbox still holds its request.
  EXPECT_EQ(from->asked().size(), 1u);

  // A host sharing the store claims the waiting run, and can save it.
  auto host = target();
  ASSERT_NE(host->hosts(), nullptr);
  host->hosts()->join("web-1", 15000);
  const auto claimed = host->hosts()->claim(10, {});
  ASSERT_EQ(claimed.size(), 1u);
  EXPECT_EQ(claimed[0].id, "aaaa0000waiting");
  jr2rt::StoredRun moved = host->load("aaaa0000waiting");
  moved.status = "done";
  moved.journal.clear();
  moved.journalBefore = 2;
  EXPECT_GT(host->save(moved, {jr2rt::FeedLine(0, 40, "done on PostgreSQL", "ended")}), 0);
  EXPECT_EQ(host->lastSeq("aaaa0000waiting"), 3);
}

// SQLite keeps a save's lines and entries as rows of many (store/rows.h); PostgreSQL gets a row a
// line and an entry, each numbered as SQLite reads it. A row of lines another tool broke is
// copied as one line with its text as it was.
TEST_F(PgCopy, RowsOfManyLinesAndEntriesArriveOneByOne) {
  {
    auto from = source();
    auto run = Stored("waiting", 0, "aaaa0000many", 10, "callee");
    std::vector<jr2rt::FeedLine> turn;
    for (int i = 1; i <= 200; ++i) {
      const std::string item = "T-" + std::to_string(i);
      run.journalText.push_back(Json{{"settled", item}, {"output", i}}.dump());
      turn.emplace_back(0, 10 + i, item + " settled", "settled", Json{{"item", item}});
    }
    for (int i = 201; i <= 300; ++i)
      run.journalText.push_back(Json{{"settled", "T-" + std::to_string(i)}}.dump());
    from->save(run, turn);
  }
  jr2test::Sql(sqlitePath_,
               "INSERT INTO feed (run, seq, time, line, kind, data) VALUES"
               " ('aaaa0000many', 201, 500, '', 'lines', '[oops')");
  const jr2rt::StoreCopyCounts n = copy();
  EXPECT_EQ(n.feed, 201);
  EXPECT_EQ(n.journal, 300);
  auto from = source();
  auto to = target();
  const auto a = from->feed("aaaa0000many", 0), b = to->feed("aaaa0000many", 0);
  ASSERT_EQ(b.size(), 201u);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].seq, b[i].seq);
    EXPECT_EQ(a[i].timeMs, b[i].timeMs);
    EXPECT_EQ(a[i].line, b[i].line);
    EXPECT_EQ(a[i].kind, b[i].kind);
    EXPECT_EQ(a[i].data, b[i].data);
  }
  EXPECT_EQ(b[199].line, "T-200 settled");
  EXPECT_EQ(sql("SELECT data FROM feed WHERE seq = 201"), "[oops");
  EXPECT_EQ(from->load("aaaa0000many").journal, to->load("aaaa0000many").journal);
  EXPECT_EQ(to->load("aaaa0000many").journalBefore, 300);
  EXPECT_EQ(sql("SELECT count(*) FROM journal"), "300");
}

TEST_F(PgCopy, AnEmptySourceCopiesNothingAndATargetWithRunsIsRefused) {
  source();  // made, empty
  const jr2rt::StoreCopyCounts none = copy();
  EXPECT_EQ(none.runs, 0);
  Fill(*source());
  EXPECT_EQ(copy().runs, 2);
  // Again: the target holds runs now.
  const std::string why = ErrorOf<jr2rt::StoreConflict>([&] { copy(); });
  EXPECT_TRUE(Contains(why, "holds 2 runs already")) << why;
  EXPECT_TRUE(Contains(why, "--onto-nonempty")) << why;
  EXPECT_TRUE(Contains(why, "nothing was written")) << why;
  EXPECT_FALSE(Contains(why, "password")) << why;
  // With --onto-nonempty, the same runs are refused by their ids.
  const std::string twice = ErrorOf<jr2rt::StoreConflict>([&] { copy(true); });
  EXPECT_TRUE(Contains(twice, "run `aaaa0000waiting` is in both")) << twice;
  EXPECT_EQ(sql("SELECT count(*) FROM runs"), "2");
  EXPECT_EQ(sql("SELECT count(*) FROM feed"), "3");
}

TEST_F(PgCopy, OntoNonemptyAddsRunsBesideAndRefusesAKeyBothHoldWritingNothing) {
  {
    auto there = target();
    auto run = Stored("waiting", 0, "cccc2222there", 5, "tickets");
    there->save(run, {jr2rt::FeedLine(0, 5, "there first")});
    there->logHooks({{"forge", "d-1", 3, "issues.labeled", Json{{"status", 409}}}});
  }
  Fill(*source());
  EXPECT_TRUE(Contains(ErrorOf<jr2rt::StoreConflict>([&] { copy(); }), "holds 1 run already"));
  const jr2rt::StoreCopyCounts n = copy(true);
  EXPECT_EQ(n.runs, 2);
  EXPECT_EQ(n.hooks, 1);
  EXPECT_EQ(n.hooksKept, 1);
  auto to = target();
  EXPECT_EQ(to->list(true).size(), 3u);
  // The delivery both logged keeps the target's (first) answer; the copied one comes after it.
  EXPECT_EQ(to->hookAnswer("forge", "d-1"), (Json{{"status", 409}}));
  EXPECT_EQ(to->hookLog("forge", 1)[0]["delivery"], "d-2");
  EXPECT_EQ(sql("SELECT seq FROM hooks WHERE delivery = 'd-2'"), "3");

  // Another SQLite store whose waiting run has the live dispatch key of one copied before: all
  // or nothing — its other run is not written either.
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  {
    auto s = source();
    s->save(Stored("waiting", 0, "0000first", 1, "tickets"));
    auto keyed = Stored("waiting", 0, "dddd3333keyed", 7, "callee");
    keyed.key = "K-1";
    s->save(keyed);
  }
  const std::string why = ErrorOf<jr2rt::StoreConflict>([&] { copy(true); });
  EXPECT_TRUE(Contains(why,
                       "`dddd3333keyed` and `aaaa0000waiting` of workflow `callee` have one "
                       "dispatch key `K-1`"))
      << why;
  EXPECT_TRUE(Contains(why, "nothing was written")) << why;
  EXPECT_EQ(sql("SELECT count(*) FROM runs"), "3");
  EXPECT_EQ(sql("SELECT count(*) FROM runs WHERE id = '0000first'"), "0");

  // A head both hold: refused after the runs were sent, and none of them kept.
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  {
    auto s = source();
    jr2rt::RunRows::Save standing;
    standing.run = Stored("waiting", 0, "eeee4444standing", 9, "alerts");
    standing.head = jr2rt::Heads::Head{"alerts", "eeee4444standing", 9, 0, "", 0, "", ""};
    s->saveAll({standing});
  }
  const std::string head = ErrorOf<jr2rt::StoreConflict>([&] { copy(true); });
  EXPECT_TRUE(Contains(head, "standing workflow `alerts` has a head in both")) << head;
  EXPECT_EQ(sql("SELECT count(*) FROM runs WHERE id = 'eeee4444standing'"), "0");
  EXPECT_EQ(sql("SELECT run FROM heads WHERE workflow = 'alerts'"), "bbbb1111standing");
}

TEST_F(PgCopy, TheRefusalsAreOneLineAndWriteNothing) {
  const std::string pgSource = ErrorOf<jr2rt::StoreError>(
      [&] { jr2rt::CopySqliteToPostgres(location() + " password=s3cret", location()); });
  EXPECT_TRUE(Contains(pgSource, "is a PostgreSQL database already")) << pgSource;
  EXPECT_FALSE(Contains(pgSource, "s3cret")) << pgSource;
  const std::string sqliteTarget =
      ErrorOf<jr2rt::StoreError>([&] { jr2rt::CopySqliteToPostgres(sqlitePath_, dir_ + "x.db"); });
  EXPECT_TRUE(Contains(sqliteTarget, "is a path")) << sqliteTarget;
  EXPECT_TRUE(Contains(sqliteTarget, "store backup")) << sqliteTarget;
  const std::string missing = ErrorOf<jr2rt::StoreMissing>([&] { copy(); });
  EXPECT_TRUE(Contains(missing, "no run store at")) << missing;
  EXPECT_TRUE(Contains(missing, "to copy")) << missing;
  EXPECT_TRUE(fs::is_empty(dir_)) << "a missing source is not made";

  // Another application's SQLite file is refused and left byte for byte as it was.
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(sqlitePath_.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE accounts (id INTEGER, owner TEXT)", nullptr, nullptr,
                           nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  auto bytes = [&] {
    std::ifstream in(sqlitePath_, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  const std::string before = bytes();
  const std::string foreign = ErrorOf<jr2rt::StoreError>([&] { copy(); });
  EXPECT_TRUE(Contains(foreign, "is not a jr2 run store")) << foreign;
  EXPECT_EQ(bytes(), before);
  // A file that is not a database at all.
  {
    std::ofstream out(sqlitePath_, std::ios::trunc);
    out << "not a database, just text long enough to be read as a header, and more, and more, "
           "and more text";
  }
  EXPECT_TRUE(Contains(ErrorOf<jr2rt::StoreError>([&] { copy(); }), "not a SQLite database"));
  // The refusals before the target is opened made nothing there.
  EXPECT_EQ(tables(), "0");
}

TEST_F(PgCopy, TheSourceIsReadAsOfOneInstantWhileAWriterHoldsIt) {
  {
    auto s = source();
    s->save(Stored("waiting", 0, "ffff5555before", 1));
  }
  // Another connection (a serve) in the middle of a write transaction: the copy neither waits for
  // it nor sees what it has not committed.
  sqlite3* writer = nullptr;
  ASSERT_EQ(sqlite3_open(sqlitePath_.c_str(), &writer), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(writer,
                         "BEGIN IMMEDIATE; INSERT INTO runs (id, workflow, status, updated, rev,"
                         " snapshot) VALUES ('ffff6666during', 'tickets', 'waiting', 2, 1, '{}');",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  const jr2rt::StoreCopyCounts n = copy();
  EXPECT_EQ(n.runs, 1);
  ASSERT_EQ(sqlite3_exec(writer, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(writer);
  EXPECT_EQ(sql("SELECT string_agg(id, ',') FROM runs"), "ffff5555before");
  EXPECT_EQ(source()->list(true).size(), 2u);
}

}  // namespace

namespace {

// A run whose Pool workers' parts the SQLite store keeps in rows of their own (core/pieces.h,
// store/sqlite/parts.cpp) arrives whole: the PostgreSQL store keeps none apart.
TEST_F(PgCopy, ARunKeptInPartsArrivesWhole) {
  std::string snapshot, view;
  {
    auto from = source();
    auto run = Stored("waiting", 0, "aaaa0000parts", 10, "callee");
    std::vector<uint64_t> ids(40, 0), viewIds(40, 0);
    snapshot = R"({"id":"aaaa0000parts","status":"waiting","workflow":"callee","top":{"workers":[)";
    view = R"({"gates":[)";
    {
      jr2rt::MarkPieces marking;
      for (size_t i = 0; i < ids.size(); ++i) {
        if (i > 0) snapshot += ',', view += ',';
        const std::string item = "T-" + std::to_string(i);
        jr2rt::AppendPiece(snapshot, ids[i],
                           Json{{"id", item}, {"pad", std::string(200, 'p')}}.dump());
        jr2rt::AppendPiece(view, viewIds[i], Json{{"gate", item + ".review"}}.dump());
      }
    }
    snapshot += "]}}";
    view += "]}";
    run.snapshotText = snapshot;
    run.viewText = view;
    from->save(run);
  }
  ASSERT_EQ(jr2test::SqliteValue(sqlitePath_, "SELECT count(*) FROM parts"), "80")
      << "the source keeps them apart";
  copy();
  auto to = target();
  EXPECT_EQ(to->load("aaaa0000parts").snapshot, Json::parse(jr2rt::Unmarked(snapshot)));
  EXPECT_EQ(to->find("aaaa0000parts", true).view, jr2rt::Unmarked(view));
  EXPECT_EQ(sql("SELECT count(*) FROM runs WHERE position(chr(30) in snapshot) > 0"
                " OR position(chr(30) in view) > 0"),
            "0")
      << "no mark arrives";
}

}  // namespace
