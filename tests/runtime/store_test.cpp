// The run store (docs/runtime.md#the-store, docs/scaling.md): one conformance suite run on both
// backends, the SQLite file and the PostgreSQL database (StoreTest, store_fixture.h) — revisions
// keep two commands on one run from losing each other's steps, a group commit is one
// transaction, a read-only open creates nothing, a damaged row names its run and leaves the
// others usable, the feed, the journal, prune, keys, heads, the inbox, the drive lock — then what
// only the SQLite store has (SqliteStore): a file that is not a jr2 store is refused and left
// byte for byte as it was, its migrations, WAL, and its drive locks as files. What only the
// PostgreSQL store has is pg_store_test.cpp.
#include "jr2/store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>
#include <tuple>

#include "core/pieces.h"
#include "jr2/sqlite_store.h"
#include "jr2/value.h"
#include "store/sqlite/db.h"
#include "store/sqlite/sqlite_store.h"
#include "store_fixture.h"

namespace {

namespace fs = std::filesystem;
using jr2rt::Json;
using jr2test::Contains;
using jr2test::ErrorOf;
using jr2test::FreshDir;
using jr2test::Sql;
using jr2test::Stored;
using jr2test::StoreTest;

constexpr int64_t kJr2AppId = 0x6A723243;

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Pragma(const std::string& path, const std::string& name) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(db, ("PRAGMA " + name).c_str(), -1, &st, nullptr) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW) {
    out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

// ---- The conformance suite: every case on both backends ------------------------------------

// ---- Revisions -----------------------------------------------------------------------------

TEST_P(StoreTest, ASaveFromAStaleRevisionIsAConflictAndWritesNothing) {
  auto store = open();
  EXPECT_EQ(store->save(Stored("waiting", 0)), 1) << "a new run starts at revision 1";
  const jr2rt::StoredRun loaded = store->load("0123");
  EXPECT_EQ(loaded.revision, 1);
  // Two commands loaded revision 1; the first saves, the second is refused.
  EXPECT_EQ(store->save(Stored("waiting", 1)), 2);
  const std::string text =
      ErrorOf<jr2rt::StoreConflict>([&] { store->save(Stored("cancelled", 1)); });
  EXPECT_EQ(text,
            "run 0123456789ab was changed by another command (revision 2, this command had 1)");
  EXPECT_EQ(store->load("0123").status, "waiting") << "the refused save wrote nothing";
  EXPECT_EQ(store->load("0123").revision, 2);
  EXPECT_EQ(store->revision("0123456789ab"), 2);
  EXPECT_EQ(store->revision("ffffffffffff"), 0) << "no such run";
  EXPECT_EQ(store->save(Stored("done", 2)), 3);
  EXPECT_EQ(store->list(true).front().revision, 3);
  EXPECT_GT(store->statements(), 0);
}

// A group commit is one transaction: a conflict on one run of the batch writes none of it, not
// the runs before it, their feed lines, their heads or the hook deliveries logged with them.
TEST_P(StoreTest, AConflictInASaveAllWritesNoneOfTheBatch) {
  auto store = open();
  store->save(Stored("waiting", 0, "aaaa00000001"));
  store->save(Stored("waiting", 0, "aaaa00000002"));
  store->save(Stored("waiting", 1, "aaaa00000002"));  // now at revision 2
  std::vector<jr2rt::RunRows::Save> batch(3);
  batch[0].run = Stored("done", 1, "aaaa00000001");
  batch[0].feed = {{0, 5, "first"}};
  batch[0].head = jr2rt::Heads::Head{"tickets", "aaaa00000001", 5, 1, "", 0, "", ""};
  batch[1].run = Stored("waiting", 0, "aaaa00000003");
  batch[1].run.journalText = jr2test::Entries({Json{{"settled", "A"}}});
  batch[2].run = Stored("done", 1, "aaaa00000002");  // stale
  batch[2].feed = {{0, 6, "lost"}};
  batch[0].hooks = {{"forge", "d-1", 5, "ping", {{"verdict", "reread"}}}};
  EXPECT_THROW(store->saveAll(batch), jr2rt::StoreConflict);
  EXPECT_FALSE(store->hookAnswer("forge", "d-1").has_value()) << "the hook log with the runs";
  EXPECT_EQ(store->revision("aaaa00000001"), 1);
  EXPECT_EQ(store->revision("aaaa00000003"), 0);
  EXPECT_TRUE(store->feed("aaaa00000001", 0).empty());
  EXPECT_TRUE(store->journal("aaaa00000003").empty());
  EXPECT_FALSE(store->head("tickets").has_value());
  // Fixed, the same batch is written whole, the heads after the runs.
  batch[2].run.revision = 2;
  EXPECT_EQ(store->saveAll(batch), (std::vector<int64_t>{2, 1, 3}));
  EXPECT_EQ(store->feed("aaaa00000001", 0).size(), 1u);
  EXPECT_EQ(store->journal("aaaa00000003").size(), 1u);
  ASSERT_TRUE(store->head("tickets").has_value());
  EXPECT_EQ(store->head("tickets")->run, "aaaa00000001");
  EXPECT_EQ(store->hookAnswer("forge", "d-1").value(), Json({{"verdict", "reread"}}));
  EXPECT_EQ(store->hookLog("forge", 10).size(), 1u);
  EXPECT_TRUE(store->saveAll({}).empty());
}

// ---- The hook log --------------------------------------------------------------------------

// Newest first by arrival, even for deliveries logged in one millisecond (one turn's are logged
// in one transaction); an id logged twice keeps its first answer.
TEST_P(StoreTest, TheHookLogIsNewestFirstByArrivalAndKeepsTheFirstAnswer) {
  auto store = open();
  const Json reread = {{"verdict", "reread"}};
  EXPECT_FALSE(store->hookAnswer("forge", "d-1").has_value());
  store->logHooks({{"forge", "d-1", 1000, "ping", reread},
                   {"forge", "d-2", 1000, "ping", reread},
                   {"other", "d-1", 1000, "ping", reread}});
  store->logHooks({{"forge", "d-3", 1000, "ping", reread},
                   {"forge", "d-1", 1000, "ping", {{"verdict", "skipped"}}}});
  store->logHooks({});
  std::vector<std::string> order;
  for (const Json& e : store->hookLog("forge", 10)) order.push_back(e["delivery"]);
  EXPECT_EQ(order, (std::vector<std::string>{"d-3", "d-2", "d-1"}));
  EXPECT_EQ(store->hookAnswer("forge", "d-1").value(), reread) << "the first answer is kept";
  EXPECT_EQ(store->hookLog("other", 10).size(), 1u);
  const auto two = store->hookLog("forge", 2);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0],
            (Json{{"delivery", "d-3"}, {"time", 1000}, {"event", "ping"}, {"answer", reread}}));
}

// ---- Opening ---------------------------------------------------------------------------------

TEST_P(StoreTest, AReadOnlyOpenOfAMissingStoreCreatesNothing) {
  const std::string text = ErrorOf<jr2rt::StoreMissing>([&] { open(jr2rt::StoreMode::kReadOnly); });
  std::cout << text << "\n";
  EXPECT_TRUE(Contains(text, "no run store at `" + name() + "`")) << text;
  EXPECT_TRUE(nothingThere()) << "no file, no lock folder, no table";
  open()->save(Stored("waiting", 0));
  auto reader = open(jr2rt::StoreMode::kReadOnly);
  EXPECT_EQ(reader->list(false).size(), 1u);
  EXPECT_EQ(reader->load("0123").status, "waiting");
  // Opened again: it is recognised as ours and keeps its runs.
  EXPECT_EQ(open()->load("0123").status, "waiting");
}

// ---- Prefixes, summaries, damaged rows -----------------------------------------------------

TEST_P(StoreTest, APrefixNamesOneRunOrTheMessageListsThem) {
  auto store = open();
  const char* statuses[] = {"waiting", "done", "failed"};
  for (int i = 0; i < 12; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "3f2a%08d", i);
    store->save(Stored(statuses[i % 3], 0, id));
  }
  store->save(Stored("done", 0, "abcd00000001"));
  store->save(Stored("waiting", 0, "abcd00000002"));
  EXPECT_EQ(store->resolve("abcd00000001"), "abcd00000001");
  EXPECT_EQ(store->resolve("3f2a00000011"), "3f2a00000011");
  const std::string many = ErrorOf<jr2rt::StoreError>([&] { store->resolve("3f2a"); });
  std::cout << many << "\n";
  EXPECT_EQ(many,
            "`3f2a` names 12 runs: 3f2a00000000 (waiting), 3f2a00000001 (done), 3f2a00000002 "
            "(failed), 3f2a00000003 (waiting), 3f2a00000004 (done), 3f2a00000005 (failed), "
            "3f2a00000006 (waiting), 3f2a00000007 (done), 3f2a00000008 (failed), 3f2a00000009 "
            "(waiting), and 2 more; give more of the id");
  EXPECT_EQ(
      ErrorOf<jr2rt::StoreError>([&] { store->load("abcd"); }),
      "`abcd` names 2 runs: abcd00000001 (done), abcd00000002 (waiting); give more of the id");
  EXPECT_EQ(ErrorOf<jr2rt::StoreError>([&] { store->resolve("abc"); }),
            "a run id needs at least 4 characters; `abc` is too short");
  EXPECT_EQ(ErrorOf<jr2rt::StoreError>([&] { store->load("ffff"); }),
            "no run `ffff` in `" + name() + "`; `runs --all` lists them");
  EXPECT_TRUE(Contains(ErrorOf<jr2rt::StoreError>([&] { store->resolve("ffff"); }),
                       "`; `runs --all` lists them"));
  // Bytes no id has (not UTF-8, a NUL, the last code point) name no run, in either store.
  for (const std::string& odd :
       {std::string("abc\xff"), std::string("ab\0cd", 5), std::string("abc\xf4\x8f\xbf\xbf")}) {
    EXPECT_TRUE(Contains(ErrorOf<jr2rt::StoreError>([&] { store->resolve(odd); }), "no run `"));
  }
  // Summaries: one read, with the view when asked.
  jr2rt::StoredRun viewed = Stored("waiting", 0, "b0b0b0b0b0b0", 7);
  viewed.viewText = "{\"gates\":[]}";
  viewed.key = "K-1";
  store->save(viewed);
  const jr2rt::RunSummary found = store->find("b0b0", true);
  EXPECT_EQ(found.id, "b0b0b0b0b0b0");
  EXPECT_EQ(found.updatedMs, 7);
  EXPECT_EQ(found.revision, 1);
  EXPECT_EQ(found.view, "{\"gates\":[]}");
  EXPECT_EQ(store->find("b0b0", false).view, "");
  EXPECT_EQ(store->summary("b0b0b0b0b0b0")->status, "waiting");
  EXPECT_FALSE(store->summary("b0b0").has_value()) << "a whole id";
  const auto listed = store->list(false, true);
  ASSERT_FALSE(listed.empty());
  EXPECT_EQ(listed.back().view, "{\"gates\":[]}") << "the newest change last";
  EXPECT_EQ(store->list(false, false).back().view, "");
}

TEST_P(StoreTest, ADamagedRowNamesItsRunAndTheOthersGoOn) {
  auto store = open();
  store->save(Stored("waiting", 0));
  // Rows another tool wrote: a snapshot that is not JSON, JSON that is not a run's snapshot (a
  // number, an object that names no run).
  sql("INSERT INTO runs (id, workflow, status, updated, rev, snapshot) VALUES"
      " ('badbadbadbad', 'tickets', 'done', 2, 1, '{not json'),"
      " ('a42a42a42a42', 'tickets', 'done', 4, 1, '42'),"
      " ('e0e0e0e0e0e0', 'tickets', 'done', 5, 1, '{}');");
  const std::string text = ErrorOf<jr2rt::StoreDamaged>([&] { store->load("badb"); });
  std::cout << text << "\n";
  EXPECT_TRUE(Contains(text, "run badbadbadbad in `" + name() +
                                 "` is damaged: its stored snapshot "
                                 "is not valid JSON (at line 1, "
                                 "column 3"))
      << text;
  EXPECT_TRUE(Contains(text, "the other runs are unaffected")) << text;
  EXPECT_FALSE(Contains(text, "json.exception")) << "no library text: " << text;
  const std::string number = ErrorOf<jr2rt::StoreDamaged>([&] { store->load("a42a"); });
  EXPECT_TRUE(Contains(number, "is damaged: its stored snapshot is not a run's (it is a number)"))
      << number;
  const std::string empty = ErrorOf<jr2rt::StoreDamaged>([&] { store->load("e0e0"); });
  EXPECT_TRUE(Contains(empty, "is not a run's (it has no `id`)")) << empty;
  // Everything that does not read the snapshot still works, and so does every other run.
  EXPECT_EQ(store->list(true).size(), 4u);
  EXPECT_EQ(store->list(false).size(), 1u);
  EXPECT_EQ(store->resolve("badb"), "badbadbadbad");
  EXPECT_EQ(store->revision("badbadbadbad"), 1);
  EXPECT_EQ(store->load("0123").status, "waiting");
  // A save over the damaged run (revision 0: whatever is stored) repairs it.
  EXPECT_EQ(store->save(Stored("done", 0, "badbadbadbad")), 2);
  EXPECT_EQ(store->load("badb").status, "done");
}

// ---- The input, stored once (#33) ------------------------------------------------------------

// A saver gives the run's input once and leaves it out of every snapshot after: load() puts it
// back as the snapshot's `input`. A snapshot that holds its own input (a row from before, a run
// marked drifted) keeps it; an input that is not JSON is damage, named.
TEST_P(StoreTest, TheInputIsStoredOnceAndPutBackOnLoad) {
  auto store = open();
  const Json input = Json{{"items", {{{"id", "A"}}, {{"id", "B"}}}}, {"jobs", 2}};
  jr2rt::StoredRun first = Stored("waiting", 0);
  first.inputText = input.dump();
  EXPECT_EQ(store->save(first), 1);
  EXPECT_EQ(store->load("0123").snapshot["input"], input);
  EXPECT_TRUE(store->load("0123").inputText.empty()) << "load() gives it in the snapshot";
  EXPECT_TRUE(store->load("0123").inputApart) << "a saver taking it up need not give it again";
  // Later saves leave it out: what was stored stays.
  EXPECT_EQ(store->save(Stored("waiting", 1)), 2);
  EXPECT_EQ(store->save(Stored("waiting", 2)), 3);
  EXPECT_EQ(store->load("0123").snapshot["input"], input);
  EXPECT_EQ(value("SELECT count(*) FROM runs WHERE snapshot LIKE '%items%'"), "0")
      << "no snapshot holds the input";
  // A snapshot with an input of its own keeps it.
  jr2rt::StoredRun own = Stored("drifted", 3);
  own.snapshot["input"] = Json{{"mine", true}};
  EXPECT_EQ(store->save(own), 4);
  EXPECT_EQ(store->load("0123").snapshot["input"], (Json{{"mine", true}}));
  EXPECT_FALSE(store->load("0123").inputApart) << "its own input is given again at a save";
  // A row from before inputs were stored apart (its column NULL) is read as it was.
  jr2rt::StoredRun old = Stored("waiting", 0, "0ld0ld0ld0ld");
  old.snapshot["input"] = Json{{"before", 1}};
  store->save(old);
  EXPECT_EQ(store->load("0ld0").snapshot["input"], (Json{{"before", 1}}));
  EXPECT_FALSE(store->load("0ld0").inputApart);
  // SQLite keeps inputs in a table of their own, PostgreSQL beside the snapshot.
  EXPECT_EQ(value(postgres() ? "SELECT count(*) FROM runs WHERE input IS NULL"
                             : "SELECT count(*) FROM runs WHERE input IS NULL AND id NOT IN"
                               " (SELECT run FROM inputs)"),
            "1");
  // An input another tool broke: the run is damaged, named; the others go on.
  jr2rt::StoredRun broken = Stored("waiting", 0, "b0b0b0b0b0b0");
  broken.inputText = "{}";
  store->save(broken);
  sql(postgres() ? "UPDATE runs SET input = '{not json' WHERE id = 'b0b0b0b0b0b0'"
                 : "UPDATE inputs SET input = '{not json' WHERE run = 'b0b0b0b0b0b0'");
  const std::string text = ErrorOf<jr2rt::StoreDamaged>([&] { store->load("b0b0"); });
  std::cout << text << "\n";
  EXPECT_TRUE(Contains(
      text, "run b0b0b0b0b0b0 in `" + name() + "` is damaged: its stored input is not valid JSON"))
      << text;
  EXPECT_EQ(store->load("0123").status, "drifted");
}

// A later save does not write the input again (#33): SQLite rewrites a changed row whole, and
// with the input in the run's row every commit of a Pool over a list wrote the list again (a
// Pool of 10,000 napping items: 190 kB a commit, 1,300 commits). Measured by what the WAL grew:
// twenty saves of a run whose input is 10,000 items (about 190 kB, the bench's).
TEST_P(StoreTest, ALaterSaveDoesNotWriteTheInputAgain) {
  if (postgres()) GTEST_SKIP() << "PostgreSQL keeps an unchanged TOASTed input where it is";
  auto store = open();
  Json items = Json::array();
  for (int i = 0; i < 10000; ++i) items.push_back({{"id", "item-" + std::to_string(i)}});
  jr2rt::StoredRun first = Stored("waiting", 0);
  first.inputText = Json{{"items", items}}.dump();
  ASSERT_EQ(store->save(first), 1);
  const auto walBytes = [&] { return std::filesystem::file_size(location() + "-wal"); };
  const auto before = walBytes();
  for (int64_t rev = 1; rev <= 20; ++rev) {
    jr2rt::StoredRun next = Stored("waiting", rev);
    next.snapshot["step"] = std::string(static_cast<size_t>(rev), 'x');  // a row of another size
    ASSERT_EQ(store->save(next), rev + 1);
  }
  const auto grew = walBytes() - before;
  std::cout << "twenty saves after the first grew the WAL by " << grew << " bytes\n";
  const size_t input = first.inputText.size();
  EXPECT_LT(grew, 4 * input) << "less than four copies of the " << input
                             << "-byte input in twenty saves (a save that wrote it again: twenty)";
  EXPECT_EQ(store->load("0123").snapshot["input"]["items"].size(), items.size());
}

// ---- What `jr2c diff --store` reads (jr2c-store) ----------------------------------------------

// Each waiting run's workflow, snapshot and input, oldest change first, in one read; an ended
// run is not given; a row whose snapshot holds its input (saved before inputs were kept apart)
// gives it there and "" beside.
TEST_P(StoreTest, EachWaitingGivesTheWaitingRunsWithTheirInputs) {
  auto store = open();
  jr2rt::StoredRun first = Stored("waiting", 0, "0123456789ab", 5, "tickets");
  first.inputText = R"({"items":[{"id":"A"}]})";
  store->save(first);
  store->save(Stored("done", 0, "d0d0d0d0d0d0", 3));
  jr2rt::StoredRun old = Stored("waiting", 0, "0ld0ld0ld0ld", 4, "triage");
  old.snapshot["input"] = Json{{"before", 1}};
  store->save(old);
  std::vector<std::tuple<std::string, Json, std::string>> seen;
  store->eachWaiting(
      [&](const std::string& workflow, const std::string& snapshot, const std::string& input) {
        seen.emplace_back(workflow, Json::parse(snapshot), input);
      });
  ASSERT_EQ(seen.size(), 2U);
  EXPECT_EQ(std::get<0>(seen[0]), "triage");  // updated 4, before 5
  EXPECT_EQ(std::get<1>(seen[0])["input"], (Json{{"before", 1}}));
  EXPECT_EQ(std::get<2>(seen[0]), "");
  EXPECT_EQ(std::get<0>(seen[1]), "tickets");
  EXPECT_EQ(std::get<1>(seen[1])["id"], "0123456789ab");
  EXPECT_FALSE(std::get<1>(seen[1]).contains("input")) << "kept beside the snapshot";
  EXPECT_EQ(Json::parse(std::get<2>(seen[1])), Json::parse(first.inputText));
}

// ---- The feed ------------------------------------------------------------------------------

TEST_P(StoreTest, FeedLinesAreNumberedAcrossSavesAndNoneOnAConflict) {
  auto store = open();
  // The seq given is ignored: the store numbers the lines.
  ASSERT_EQ(store->save(Stored("waiting", 0), {{7, 100, "started"}, {7, 101, "T-1 started"}}), 1);
  ASSERT_EQ(store->save(Stored("waiting", 1), {{0, 102, "T-1 settled"}}), 2);
  store->save(Stored("waiting", 0, "ffff00000000"), {{0, 50, "another run"}});
  EXPECT_THROW(store->save(Stored("done", 1), {{0, 103, "lost"}}), jr2rt::StoreConflict);
  const auto all = store->feed("0123456789ab", 0);
  ASSERT_EQ(all.size(), 3u) << "the refused save wrote no line";
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].seq, static_cast<int64_t>(i + 1));
    EXPECT_EQ(all[i].timeMs, 100 + static_cast<int64_t>(i));
  }
  EXPECT_EQ(all[0].line, "started");
  EXPECT_EQ(all[2].line, "T-1 settled");
  const auto after = store->feed("0123456789ab", 2);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].line, "T-1 settled");
  const auto other = store->feed("ffff00000000", 0);
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0].seq, 1) << "each run numbers its own lines";
  EXPECT_TRUE(store->feed("0123456789ab", 3).empty());
  // A page of it, and where it ends.
  const auto page = store->feedPage("0123456789ab", 0, 2);
  ASSERT_EQ(page.size(), 2u);
  EXPECT_EQ(page[1].line, "T-1 started");
  EXPECT_EQ(store->feedPage("0123456789ab", 1, 0).size(), 2u) << "no limit";
  EXPECT_EQ(store->lastSeq("0123456789ab"), 3);
  EXPECT_EQ(store->lastSeq("eeee00000000"), 0);
}

// A turn of many lines (#33): SQLite keeps a save's lines as rows of up to 128 (store/rows.h),
// each ending where it fills its pages,
// PostgreSQL a row each; both give them back one by one, numbered, from any cursor, in pages of
// any size. A turn with a line that is not UTF-8 keeps its bytes, a row a line.
TEST_P(StoreTest, ATurnOfManyLinesReadsBackLineByLineFromAnyCursor) {
  auto store = open();
  const std::string id = "0123456789ab";
  std::vector<jr2rt::FeedLine> turn;
  for (int i = 1; i <= 300; ++i) {
    const std::string item = "T-" + std::to_string(i);
    turn.emplace_back(0, 1000 + i, item + " started", "started", Json{{"item", item}});
  }
  ASSERT_EQ(store->save(Stored("waiting", 0), turn), 1);
  ASSERT_EQ(store->save(Stored("waiting", 1), {{0, 2000, "one more"}}), 2);
  if (postgres()) {
    EXPECT_EQ(value("SELECT count(*) FROM feed"), "301");
  } else {
    EXPECT_EQ(value("SELECT count(*) FROM feed WHERE kind <> 'lines'"), "1") << "the one";
    EXPECT_EQ(value("SELECT sum(json_array_length(data)) FROM feed WHERE kind = 'lines'"), "300");
    EXPECT_EQ(value("SELECT max(json_array_length(data)) <= 128 FROM feed"), "1");
  }
  const auto all = store->feed(id, 0);
  ASSERT_EQ(all.size(), 301u);
  for (size_t i = 0; i < 300; ++i) {
    const std::string item = "T-" + std::to_string(i + 1);
    EXPECT_EQ(all[i].seq, static_cast<int64_t>(i + 1));
    EXPECT_EQ(all[i].timeMs, 1001 + static_cast<int64_t>(i));
    EXPECT_EQ(all[i].kind, "started");
    EXPECT_EQ(all[i].line, item + " started");
    EXPECT_EQ(all[i].data, (Json{{"item", item}}));
  }
  EXPECT_EQ(all[300].seq, 301);
  EXPECT_EQ(all[300].line, "one more");
  EXPECT_EQ(all[300].kind, "line");
  // From a cursor inside a row, and a page that ends inside one.
  const auto page = store->feedPage(id, 100, 50);
  ASSERT_EQ(page.size(), 50u);
  EXPECT_EQ(page.front().seq, 101);
  EXPECT_EQ(page.back().seq, 150);
  const auto tail = store->feedPage(id, 250, 128);
  ASSERT_EQ(tail.size(), 51u);
  EXPECT_EQ(tail.front().seq, 251);
  EXPECT_EQ(tail.back().line, "one more");
  // Paged through at 7 lines a page: every line once, in order.
  int64_t cursor = 0;
  for (int pages = 0; pages < 100; ++pages) {
    const auto p = store->feedPage(id, cursor, 7);
    if (p.empty()) break;
    EXPECT_LE(p.size(), 7u);
    for (const auto& line : p) EXPECT_EQ(line.seq, ++cursor);
  }
  EXPECT_EQ(cursor, 301);
  EXPECT_EQ(store->lastSeq(id), 301);
  // A line that is not UTF-8 (a process's Latin-1) keeps its bytes in SQLite.
  const std::string latin = "caf\xe9 \x01";
  ASSERT_EQ(store->save(Stored("waiting", 2), {{0, 3000, latin, "log"}, {0, 3001, "after it"}}), 3);
  const auto more = store->feed(id, 301);
  ASSERT_EQ(more.size(), 2u);
  EXPECT_EQ(more[0].seq, 302);
  EXPECT_EQ(more[0].line, postgres() ? "caf\xef\xbf\xbd \x01" : latin)
      << "PostgreSQL's text is UTF-8: it stores the replacement";
  EXPECT_EQ(more[1].seq, 303);
  EXPECT_EQ(more[1].line, "after it");
}

// PageFit (store/sqlite/db.h) is SQLite's own layout of a row: every feed row it says fills its
// pages leaves no overflow page partly empty, on pages of 4 kB (the store's) and of 16 kB, and it
// finds such rows often (a row of lines can end at one of them). Read off SQLite's dbstat.
TEST(PageFit, SaysWhatSqlitesPagesHold) {
  for (const int64_t pageSize : {4096, 16384}) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
    const std::string make = "PRAGMA page_size=" + std::to_string(pageSize) +
                             "; CREATE TABLE feed (run TEXT NOT NULL, seq INTEGER NOT NULL, time "
                             "INTEGER NOT NULL, line TEXT NOT NULL, kind TEXT NOT NULL, data TEXT,"
                             " PRIMARY KEY (run, seq)) WITHOUT ROWID;";
    ASSERT_EQ(sqlite3_exec(db, make.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    const std::string id = "0123456789ab";
    const jr2rt::sqlite::PageFit fits(pageSize, id.size() + jr2rt::sqlite::kFeedRecord);
    int said = 0, wrong = 0, spilled = 0;
    for (size_t bytes = 200; bytes < static_cast<size_t>(pageSize) * 5; bytes += 7) {
      sqlite3_exec(db, "DELETE FROM feed", nullptr, nullptr, nullptr);
      sqlite3_stmt* st = nullptr;
      sqlite3_prepare_v2(db, "INSERT INTO feed VALUES (?, ?, 1796517700099, '', 'lines', ?)", -1,
                         &st, nullptr);
      const std::string text(bytes, 'x');
      sqlite3_bind_text(st, 1, id.c_str(), -1, SQLITE_STATIC);
      sqlite3_bind_int64(st, 2, static_cast<int64_t>(bytes));  // a seq of 2 or 3 bytes
      sqlite3_bind_text(st, 3, text.c_str(), static_cast<int>(text.size()), SQLITE_STATIC);
      ASSERT_EQ(sqlite3_step(st), SQLITE_DONE);
      sqlite3_finalize(st);
      sqlite3_prepare_v2(db,
                         "SELECT coalesce(sum(unused), 0) FROM dbstat WHERE name = 'feed' AND "
                         "pagetype = 'overflow'",
                         -1, &st, nullptr);
      ASSERT_EQ(sqlite3_step(st), SQLITE_ROW) << sqlite3_errmsg(db);
      const int64_t unused = sqlite3_column_int64(st, 0);
      sqlite3_finalize(st);
      if (unused > 0) ++spilled;
      if (!fits(bytes)) continue;
      ++said;
      if (unused > 0) {
        ++wrong;
        ADD_FAILURE() << bytes << " bytes on pages of " << pageSize
                      << ": PageFit says it fills its pages, and SQLite left " << unused
                      << " bytes of an overflow page empty";
      }
    }
    std::cout << "pages of " << pageSize << ": " << said << " sizes fill their pages, " << spilled
              << " leave an overflow page partly empty, " << wrong << " wrongly said to fit\n";
    EXPECT_GT(said * 10, spilled) << "fitting sizes are found often enough to end rows at";
    EXPECT_GT(spilled, 0) << "the check can fail";
    sqlite3_close(db);
  }
}

// A turn's rows of lines and of journal entries fill the SQLite pages they are kept in (#33):
// rows of 128 lines left the last page each overflows into 2 kB empty on average, a fifth of the
// feed's pages. Lines of many lengths, as items' names and outputs are; every one read back.
TEST_P(StoreTest, ATurnsRowsFillTheirPages) {
  if (postgres()) GTEST_SKIP() << "PostgreSQL keeps a row a line and an entry";
  auto store = open();
  jr2rt::StoredRun run = Stored("waiting", 0);
  std::vector<jr2rt::FeedLine> turn;
  for (int i = 1; i <= 3000; ++i) {
    const std::string item =
        "T-" + std::to_string(i) + std::string(static_cast<size_t>(i % 37), 'x');
    turn.emplace_back(0, 1796517700000 + i / 7, item + " settled", "settled",
                      Json{{"item", item}, {"pool", ""}});
    run.journalText.push_back(Json{{"settled", item}, {"output", i}}.dump());
  }
  ASSERT_EQ(store->save(run, turn), 1);
  for (const char* table : {"feed", "journal"}) {
    const std::string where =
        std::string(" FROM dbstat WHERE name = '") + table + "' AND pagetype = 'overflow'";
    const int64_t pages = std::stoll(value("SELECT count(*)" + where));
    const int64_t unused = std::stoll(value("SELECT coalesce(sum(unused), 0)" + where));
    std::cout << table << ": " << pages << " overflow pages, " << unused << " bytes unused\n";
    EXPECT_GT(pages, 20) << table;
    EXPECT_LT(unused * 50, pages * 4096) << table << ": under 2% of its overflow pages empty";
  }
  const auto feed = store->feed("0123456789ab", 0);
  ASSERT_EQ(feed.size(), 3000u);
  for (size_t i = 0; i < feed.size(); ++i) {
    EXPECT_EQ(feed[i].seq, static_cast<int64_t>(i + 1));
    EXPECT_EQ(feed[i].line, turn[i].line);
    EXPECT_EQ(feed[i].timeMs, turn[i].timeMs);
  }
  const jr2rt::StoredRun loaded = store->load("0123456789ab");
  ASSERT_EQ(loaded.journal.size(), 3000u);
  EXPECT_EQ(loaded.journal.back()["output"], 3000);
}

// A row of lines another tool broke is read as one line of its kind with its text, never a
// throw (as a line whose data is not JSON is).
TEST_P(StoreTest, ABrokenRowOfLinesIsOneLineOfItsText) {
  if (postgres()) GTEST_SKIP() << "PostgreSQL keeps a row a line";
  auto store = open();
  store->save(Stored("waiting", 0), {{0, 1, "T-1 started"}});
  sql("INSERT INTO feed (run, seq, time, line, kind, data) VALUES"
      " ('0123456789ab', 3, 2, '', 'lines', '[[2, \"log\"]]'),"
      " ('0123456789ab', 5, 3, '', 'lines', '[oops');");
  const auto feed = store->feed("0123456789ab", 0);
  ASSERT_EQ(feed.size(), 3u);
  EXPECT_EQ(feed[1].seq, 3);
  EXPECT_EQ(feed[1].kind, "lines");
  EXPECT_EQ(feed[1].data, Json::parse("[[2, \"log\"]]"));
  EXPECT_EQ(feed[2].kind, "lines");
  EXPECT_EQ(feed[2].data, "[oops");
}

// Whether the feed of run `id` says Gate `gate` opened.
// gateOpened and gatesOpened must agree.
bool HadGate(jr2rt::Store& store, const std::string& id, const std::string& gate) {
  const bool had = store.gateOpened(id, gate);
  const std::vector<std::string> opened = store.gatesOpened(id);
  EXPECT_EQ(had, std::find(opened.begin(), opened.end(), gate) != opened.end()) << gate;
  return had;
}

// Typed feed events (#10): kind and data round-trip, text that needs quoting included; a Gate
// that opened is found by its name.
TEST_P(StoreTest, FeedEventsKeepTheirKindAndData) {
  auto store = open();
  const std::string odd = "quote \" backslash \\ comma , braces {} é \t";
  store->save(Stored("waiting", 0),
              {jr2rt::FeedLine(0, 1, "T-1 started", "started", Json{{"item", "T-1"}}),
               jr2rt::FeedLine(0, 2, "", "gate-closed", Json{{"gate", "T-1.review"}}),
               jr2rt::FeedLine(0, 3, odd, "log", Json{{"text", odd}, {"n", 1.5}}),
               jr2rt::FeedLine(0, 4, "T-2 asks", "gate-opened", Json{{"gate", "T-2.review"}})});
  const auto feed = store->feed("0123456789ab", 0);
  ASSERT_EQ(feed.size(), 4u);
  EXPECT_EQ(feed[0].kind, "started");
  EXPECT_EQ(feed[0].data, (Json{{"item", "T-1"}}));
  EXPECT_EQ(feed[1].line, "");
  EXPECT_EQ(feed[1].data["gate"], "T-1.review");
  EXPECT_EQ(feed[2].line, odd);
  EXPECT_EQ(feed[2].data, (Json{{"text", odd}, {"n", 1.5}}));
  EXPECT_TRUE(HadGate(*store, "0123456789ab", "T-2.review"));
  EXPECT_FALSE(HadGate(*store, "0123456789ab", "T-1.review")) << "closed, never opened here";
  EXPECT_FALSE(HadGate(*store, "0123456789ab", "T-2"));
  EXPECT_FALSE(HadGate(*store, "ffff00000000", "T-2.review"));
  EXPECT_FALSE(store->gateOpened("0123456789ab", "")) << "no name is no Gate, not every Gate";
  // A line another tool wrote, whose data is not JSON: kept as its text.
  sql("INSERT INTO feed (run, seq, time, line, kind, data) VALUES"
      " ('0123456789ab', 5, 5, 'x', 'gate-opened', '{\"gate\": \"T-3\" oops');");
  EXPECT_EQ(store->feed("0123456789ab", 4).at(0).data, "{\"gate\": \"T-3\" oops");
  EXPECT_FALSE(HadGate(*store, "0123456789ab", "T-3"));
  // Lines of one time in a row (in SQLite each after the first `[kind, line, data]`,
  // store/rows.h), and a row of the shape earlier builds wrote (every line with its time).
  store->save(Stored("waiting", 1),
              {jr2rt::FeedLine(0, 9, "T-4 started", "started", Json{{"item", "T-4"}}),
               jr2rt::FeedLine(0, 9, "T-4 asks", "gate-opened", Json{{"gate", "T-4.review"}}),
               jr2rt::FeedLine(0, 10, "T-4 told", "log", Json{{"text", "told"}})});
  if (!postgres()) {
    const std::string newest = " FROM feed WHERE kind = 'lines' ORDER BY seq DESC LIMIT 1";
    EXPECT_EQ(
        value("SELECT json_array_length(data, '$[1]') || json_array_length(data, '$[2]')" + newest),
        "34")
        << "the second line at the first's time without it, the third with its own: "
        << value("SELECT data" + newest);
  }
  EXPECT_TRUE(HadGate(*store, "0123456789ab", "T-4.review"));
  {
    std::vector<std::string> opened = store->gatesOpened("0123456789ab");
    std::sort(opened.begin(), opened.end());
    EXPECT_EQ(opened, (std::vector<std::string>{"T-2.review", "T-4.review"}))
        << "every Gate opened, the line that is not JSON naming none";
  }
  const auto told = store->feed("0123456789ab", 5);
  ASSERT_EQ(told.size(), 3u);
  EXPECT_EQ(told[1].timeMs, 9);
  EXPECT_EQ(told[1].kind, "gate-opened");
  EXPECT_EQ(told[1].line, "T-4 asks");
  EXPECT_EQ(told[1].data, (Json{{"gate", "T-4.review"}}));
  EXPECT_EQ(told[2].timeMs, 10);
  if (!postgres()) {
    sql("INSERT INTO feed (run, seq, time, line, kind, data) VALUES ('0123456789ab', 10, 11, '',"
        " 'lines', '[[11,\"log\",\"a\",{}],[11,\"gate-opened\",\"T-5 asks\","
        "{\"gate\":\"T-5.review\"}]]');");
    EXPECT_TRUE(HadGate(*store, "0123456789ab", "T-5.review"));
    const auto older = store->feed("0123456789ab", 8);
    ASSERT_EQ(older.size(), 2u);
    EXPECT_EQ(older[1].seq, 10);
    EXPECT_EQ(older[1].timeMs, 11);
    EXPECT_EQ(older[1].line, "T-5 asks");
  }
}

// `turn` saved as run 0123456789ab's first save, and its feed read back: every line as it was
// told (its time, kind, line and data), numbered from 1.
void SaveAndReadBack(jr2rt::Store& store, const std::vector<jr2rt::FeedLine>& turn) {
  ASSERT_EQ(store.save(Stored("waiting", 0), turn), 1);
  const auto feed = store.feed("0123456789ab", 0);
  ASSERT_EQ(feed.size(), turn.size());
  for (size_t i = 0; i < feed.size(); ++i) {
    EXPECT_EQ(feed[i].seq, static_cast<int64_t>(i + 1)) << i;
    EXPECT_EQ(feed[i].timeMs, turn[i].timeMs) << i;
    EXPECT_EQ(feed[i].kind, turn[i].kind) << i;
    EXPECT_EQ(feed[i].line, turn[i].line) << i;
    EXPECT_EQ(feed[i].parsedData(), turn[i].parsedData()) << i;
  }
}

// A top Pool's marks (`started`, `settled`), told short as pool_actor.cpp tells them (FeedForm
// kTopMark: line `<item> <kind>`, no data), are stored as `[kind, item]` in SQLite's rows
// (store/rows.h, #33: 22 bytes of the 61 each took) and read back whole, with their data
// `{"item": …, "pool": ""}`, from both stores. Lines told whole, even one that looks like a mark
// (a nested Pool's, other data), are stored as they are. A save that holds a mark whose item is
// not UTF-8 keeps a row per line, the mark's data written whole (its bad bytes replaced, as a
// dump replaces them).
TEST_P(StoreTest, APoolsMarksAreStoredShortAndReadBackWhole) {
  auto store = open();
  const auto mark = [](int64_t time, const std::string& item, const std::string& kind) {
    jr2rt::FeedLine l(0, time, item + " " + kind, kind);
    l.form = jr2rt::FeedForm::kTopMark;
    return l;
  };
  std::vector<jr2rt::FeedLine> turn = {
      jr2rt::FeedLine(0, 5, "", "turn", Json::object()),
      mark(5, "J-1", "started"),
      mark(5, "J-1", "settled"),
      mark(6, "quote \" é \\ x", "started"),  // a time of its own, an item JSON must escape
      mark(6, "J 2 settled", "settled"),      // spaces in the item
  };
  jr2rt::FeedLine nested(0, 6, "J-3 started", "started");  // a nested Pool's: whole
  nested.dataText = R"({"item":"J-3","pool":"inner"})";
  turn.push_back(nested);
  turn.emplace_back(0, 6, "J-6 started", "started", Json{{"item", "J-6"}, {"pool", ""}});
  SaveAndReadBack(*store, turn);
  const auto feed = store->feed("0123456789ab", 0);
  EXPECT_EQ(feed.at(3).line, "quote \" é \\ x started");
  EXPECT_EQ(feed.at(3).data, (Json{{"item", "quote \" é \\ x"}, {"pool", ""}}));
  EXPECT_EQ(feed.at(4).data, (Json{{"item", "J 2 settled"}, {"pool", ""}}));
  for (const auto& l : feed) EXPECT_EQ(l.form, jr2rt::FeedForm::kWhole) << "read back whole";
  if (!postgres()) {
    const std::string row = value("SELECT data FROM feed WHERE kind = 'lines'");
    std::cout << "the row: " << row << "\n";
    EXPECT_NE(row.find("{}],[\"started\",\"J-1\"],[\"settled\",\"J-1\"],"), std::string::npos);
    EXPECT_NE(row.find("[6,\"started\",\"quote \\\" é \\\\ x\"]"), std::string::npos);
    EXPECT_NE(row.find("[\"settled\",\"J 2 settled\"]"), std::string::npos);
    EXPECT_EQ(row.find("J-1 started"), std::string::npos);
    EXPECT_NE(row.find("\"J-3 started\""), std::string::npos) << "a nested Pool's, whole";
    EXPECT_NE(row.find("\"J-6 started\""), std::string::npos) << "told whole, stored whole";
  }
  // An item that is not UTF-8: every line of that save a row of its own, read back whole.
  const std::string bad = std::string("bad\xFF") + "-id";
  const std::vector<jr2rt::FeedLine> badTurn = {
      jr2rt::FeedLine(0, 7, "", "turn", Json::object()),
      mark(7, bad, "started"),
      mark(7, "J-7", "started"),
  };
  ASSERT_EQ(store->save(Stored("waiting", 1), badTurn), 2);
  const auto back = store->feed("0123456789ab", static_cast<int64_t>(turn.size()));
  ASSERT_EQ(back.size(), 3u);
  // (PostgreSQL's text holds no byte that is not UTF-8: its line is replaced as it is stored.)
  EXPECT_EQ(back[1].line, postgres() ? "bad\xEF\xBF\xBD-id started" : bad + " started");
  EXPECT_EQ(back[1].data, (Json{{"item", "bad\xEF\xBF\xBD-id"}, {"pool", ""}}));
  EXPECT_EQ(back[2].data, (Json{{"item", "J-7"}, {"pool", ""}}));
}

// A top Pool's trace of each answer of its `next`, told short as PoolActor::traceSource tells it
// (FeedForm kTopAnswer: kind `source`, no line, the answer A's text, an object or array), is
// stored as `["source", A]` in SQLite's rows (store/rows.h, #33: 37 bytes fewer than its data
// `{"answer": A, "call": "next", "pool": ""}`) and read back whole, from both stores, whatever
// its strings hold; a trace told whole (the first call's, with `args`) is stored as it is.
TEST_P(StoreTest, APoolsTracesOfNextAreStoredShortAndReadBackWhole) {
  auto store = open();
  const auto answer = [](int64_t time, const std::string& text) {
    jr2rt::FeedLine l(0, time, "", "source");
    l.dataText = text;
    l.form = jr2rt::FeedForm::kTopAnswer;
    return l;
  };
  jr2rt::FeedLine first(0, 5, "", "source");
  first.dataText =
      R"({"answer":{"item":{"id":"J-1"},"open":0},"args":{"f":"x"},"call":"next","pool":""})";
  const std::vector<jr2rt::FeedLine> turn = {
      jr2rt::FeedLine(0, 5, "", "turn", Json::object()),
      first,
      answer(5, R"({"item":{"id":"J-2"},"open":0})"),
      // strings that hold what a careless reader would take for the value's end
      answer(6, R"({"item":{"id":"}\",\"call\":\"x"},"open":[1,{"a":"]"}]})"),
      answer(6, R"([])"),
  };
  SaveAndReadBack(*store, turn);
  const auto feed = store->feed("0123456789ab", 0);
  EXPECT_EQ(feed.at(3).data["answer"]["item"]["id"], "}\",\"call\":\"x");
  EXPECT_EQ(feed.at(2).data, Json::parse(R"({"answer":{"item":{"id":"J-2"},"open":0},)"
                                         R"("call":"next","pool":""})"));
  if (!postgres()) {
    const std::string row = value("SELECT data FROM feed WHERE kind = 'lines'");
    std::cout << "the row: " << row << "\n";
    EXPECT_NE(row.find(R"(["source",{"item":{"id":"J-2"},"open":0}])"), std::string::npos);
    EXPECT_NE(row.find(R"([6,"source",{"item":{"id":"}\",\"call\":\"x"},"open":[1,{"a":"]"}]}])"),
              std::string::npos);
    EXPECT_NE(row.find(R"(["source",[]])"), std::string::npos);
    EXPECT_NE(row.find(R"("args":{"f":"x"})"), std::string::npos) << "the first call, whole";
  }
}

// ---- The journal -----------------------------------------------------------------------------

// The journal (#10): entries are appended with the save that made them, read back in order, and
// a save that does not start where the stored journal ends is a conflict that writes nothing.
TEST_P(StoreTest, JournalEntriesAppendInOrderAndAStaleStartIsAConflict) {
  auto store = open();
  jr2rt::StoredRun first = Stored("waiting", 0);
  first.journalText =
      jr2test::Entries({Json{{"settled", "A"}, {"output", 1}}, Json{{"failed", "B"}}});
  EXPECT_EQ(store->save(first), 1);
  jr2rt::StoredRun loaded = store->load("0123");
  ASSERT_EQ(loaded.journal.size(), 2u);
  EXPECT_EQ(loaded.journal[0]["settled"], "A");
  EXPECT_EQ(loaded.journal[1]["failed"], "B");
  EXPECT_EQ(loaded.journalBefore, 2);
  jr2rt::StoredRun next = Stored("waiting", 1);
  next.journalText = jr2test::Entries({Json{{"settled", "C"}, {"output", 3}}});
  next.journalBefore = 1;  // this command thinks one entry is stored
  EXPECT_EQ(ErrorOf<jr2rt::StoreConflict>([&] { store->save(next); }),
            "run 0123456789ab's journal has 2 entries, and this command had 1");
  EXPECT_EQ(store->load("0123").journal.size(), 2u) << "the refused save wrote nothing";
  EXPECT_EQ(store->load("0123").revision, 1);
  next.journalBefore = 3;  // or more than are stored
  EXPECT_THROW(store->save(next), jr2rt::StoreConflict);
  next.journalBefore = 2;
  EXPECT_EQ(store->save(next), 2);
  EXPECT_EQ(store->load("0123").journal.back()["settled"], "C");
  EXPECT_EQ(store->journal("0123456789ab").size(), 3u);
  // Pruned with its run.
  EXPECT_EQ(store->save(Stored("done", 2)), 3);
  EXPECT_EQ(store->prune(INT64_MAX, ""), 1);
  EXPECT_THROW(store->load("0123"), jr2rt::StoreError);
  EXPECT_TRUE(store->journal("0123456789ab").empty());
}

// A Pool's settle written short, `[id, output]` (pool_actor.cpp, #33: 17 bytes fewer), is read
// as `{"output": …, "settled": id}` beside entries written whole, alone in its save (a row of its
// own in SQLite) or among others, by a load and by a read of the journal alike; the numbering
// counts it once.
TEST_P(StoreTest, AShortSettleIsReadAsItsEntry) {
  auto store = open();
  jr2rt::StoredRun first = Stored("waiting", 0);
  first.journalText = {R"(["A",{"n":[1,2]}])"};  // alone: its row is the entry
  ASSERT_EQ(store->save(first), 1);
  jr2rt::StoredRun next = Stored("waiting", 1);
  next.journalBefore = 1;
  next.journalText = {R"(["B","b"])", R"({"failed":"C","failure":{"reason":"x"}})",
                      R"(["q\"u",null])", R"({"output":4,"settled":"D"})"};
  ASSERT_EQ(store->save(next), 2);
  const std::vector<Json> want = {
      Json{{"output", {{"n", {1, 2}}}}, {"settled", "A"}},
      Json{{"output", "b"}, {"settled", "B"}},
      Json{{"failed", "C"}, {"failure", {{"reason", "x"}}}},
      Json{{"output", nullptr}, {"settled", "q\"u"}},
      Json{{"output", 4}, {"settled", "D"}},
  };
  const jr2rt::StoredRun loaded = store->load("0123");
  EXPECT_EQ(loaded.journal, want);
  EXPECT_EQ(loaded.journalBefore, 5);
  EXPECT_EQ(store->journal("0123456789ab"), want);
  jr2rt::StoredRun third = Stored("waiting", 2);
  third.journalBefore = 5;
  third.journalText = {R"(["E",5])"};
  EXPECT_EQ(store->save(third), 3) << "five entries stored, counted once each";
  EXPECT_EQ(store->load("0123").journal.back(), (Json{{"output", 5}, {"settled", "E"}}));
}

// An ended Pool's output whose items its journal holds (#33, Run::outputInJournal): the
// snapshot stores it without them and says so (`outputInJournal`); a load gives it back whole,
// as the Pool had it, items by id and failures by id, and without the marker. A journal that
// cannot be the Pool's (an item twice, an entry that is not an item's) is damage, named.
TEST_P(StoreTest, AnOutputKeptInTheJournalIsLoadedWhole) {
  auto store = open();
  jr2rt::StoredRun run = Stored("done", 0);
  run.snapshot["journal"] = true;
  run.snapshot["outputInJournal"] = true;
  run.snapshot["output"] = {{"status", "drained"}};
  run.journalText = {R"(["B",{"n":2}])", R"({"failed":"C","failure":{"reason":"x"}})",
                     R"(["A","a"])"};
  ASSERT_EQ(store->save(run), 1);
  const jr2rt::StoredRun loaded = store->load("0123");
  EXPECT_EQ(loaded.snapshot["output"], (Json{{"status", "drained"},
                                             {"items", {{"A", "a"}, {"B", {{"n", 2}}}}},
                                             {"failures", {{"C", {{"reason", "x"}}}}}}));
  EXPECT_FALSE(loaded.snapshot.contains("outputInJournal"));
  EXPECT_EQ(loaded.journal.size(), 3u) << "the journal is loaded as it is";
  // An output stored whole is left as it is, whatever its journal holds.
  jr2rt::StoredRun whole = Stored("done", 0, "whole0000001");
  whole.snapshot["output"] = {{"status", "drained"}, {"items", {{"Z", 1}}}, {"failures", {}}};
  whole.journalText = {R"(["A","a"])"};
  ASSERT_EQ(store->save(whole), 1);
  EXPECT_EQ(store->load("whole").snapshot["output"]["items"], (Json{{"Z", 1}}));
  // An item settled twice: not a journal a Pool wrote.
  jr2rt::StoredRun twice = run;
  twice.id = "twice0000001";
  twice.snapshot["id"] = twice.id;
  twice.journalText = {R"(["A","a"])", R"(["A","b"])"};
  ASSERT_EQ(store->save(twice), 1);
  const std::string why = ErrorOf<jr2rt::StoreDamaged>([&] { store->load("twice"); });
  EXPECT_NE(why.find("run twice0000001"), std::string::npos) << why;
  EXPECT_NE(why.find("its output's items are kept in its journal"), std::string::npos) << why;
  // A failure with no reason, or an entry with a member more: not an entry a Pool wrote, read by
  // the rule the Pool's restore reads it by (ReadJournalEntry), so the load refuses it too.
  int n = 0;
  for (const char* bad :
       {R"({"failed":"C","failure":{"why":"x"}})", R"({"output":1,"settled":"C","x":0})"}) {
    jr2rt::StoredRun odd = run;
    odd.id = "odd00000000" + std::to_string(++n);
    odd.snapshot["id"] = odd.id;
    odd.journalText = {R"(["A","a"])", bad};
    ASSERT_EQ(store->save(odd), 1);
    const std::string oddWhy = ErrorOf<jr2rt::StoreDamaged>([&] { store->load(odd.id); });
    EXPECT_NE(oddWhy.find("its output's items are kept in its journal"), std::string::npos)
        << bad << ": " << oddWhy;
  }
}

// A save of many entries (#33): SQLite keeps them as rows of up to 256 (store/rows.h),
// PostgreSQL a row each; both load every one, in order, and count them alike.
TEST_P(StoreTest, ASaveOfManyJournalEntriesLoadsEveryOneInOrder) {
  auto store = open();
  jr2rt::StoredRun first = Stored("waiting", 0);
  for (int i = 0; i < 600; ++i) {
    first.journalText.push_back(Json{{"settled", "T-" + std::to_string(i)}, {"output", i}}.dump());
  }
  store->save(first);
  if (postgres()) {
    EXPECT_EQ(value("SELECT count(*) FROM journal"), "600");
  } else {
    // Rows of up to 256 that end where they fill their pages: three or a few more.
    EXPECT_GE(std::stoi(value("SELECT count(*) FROM journal")), 3);
    EXPECT_LE(std::stoi(value("SELECT count(*) FROM journal")), 5);
    EXPECT_EQ(value("SELECT max(json_array_length(entry)) <= 256 FROM journal"), "1");
  }
  jr2rt::StoredRun loaded = store->load("0123");
  ASSERT_EQ(loaded.journal.size(), 600u);
  EXPECT_EQ(loaded.journalBefore, 600);
  for (int i = 0; i < 600; ++i) EXPECT_EQ(loaded.journal[i]["output"], i);
  EXPECT_EQ(store->journal("0123456789ab").size(), 600u);
  jr2rt::StoredRun next = Stored("waiting", 1);
  next.journalText = jr2test::Entries({Json{{"settled", "T-600"}, {"output", 600}}});
  next.journalBefore = 599;
  EXPECT_EQ(ErrorOf<jr2rt::StoreConflict>([&] { store->save(next); }),
            "run 0123456789ab's journal has 600 entries, and this command had 599");
  next.journalBefore = 600;
  EXPECT_EQ(store->save(next), 2);
  EXPECT_EQ(store->load("0123").journal.back()["settled"], "T-600");
}

// A journal with a row removed is damage, named, not a conflict or a silent shorter journal.
// (SQLite keeps a save's entries in one row numbered by its last, PostgreSQL a row each: the row
// numbered 2 holds entries 1 and 2 in one, entry 2 in the other.)
TEST_P(StoreTest, AJournalWithAGapIsDamaged) {
  auto store = open();
  jr2rt::StoredRun first = Stored("waiting", 0);
  first.journalText = jr2test::Entries(
      {Json{{"settled", "A"}, {"output", 1}}, Json{{"settled", "B"}, {"output", 2}}});
  store->save(first);
  jr2rt::StoredRun second = Stored("waiting", 1);
  second.journalText = jr2test::Entries(
      {Json{{"settled", "C"}, {"output", 3}}, Json{{"settled", "D"}, {"output", 4}}});
  second.journalBefore = 2;
  store->save(second);
  ASSERT_EQ(store->load("0123").journal.size(), 4u);
  EXPECT_EQ(store->load("0123").journal[2]["settled"], "C");
  sql("DELETE FROM journal WHERE seq = 2;");
  EXPECT_TRUE(Contains(ErrorOf<jr2rt::StoreDamaged>([&] { store->load("0123"); }),
                       GetParam() == jr2test::Backend::kSqlite
                           ? "its journal skips from entry 0 to 3"
                           : "its journal skips from entry 1 to 3"));
  sql("UPDATE journal SET entry = '{oops' WHERE seq = 4;");
  EXPECT_TRUE(Contains(ErrorOf<jr2rt::StoreDamaged>([&] { store->journal("0123456789ab"); }),
                       "is damaged: a journal entry is not valid JSON"));
}

// ---- Prune -----------------------------------------------------------------------------------

// Ended runs before the time go with their feeds, journals and start keys; waiting runs, newer
// ones, other workflows' (when one is named) and the run a head names stay.
TEST_P(StoreTest, PruneDeletesEndedRunsWithWhatIsKeptForThem) {
  auto store = open();
  store->save(Stored("done", 0, "old0done0000", 100), {{0, 1, "a"}});
  store->save(Stored("failed", 0, "old0fail0000", 100, "other"), {{0, 1, "b"}});
  jr2rt::StoredRun journaled = Stored("cancelled", 0, "old0jour0000", 100);
  journaled.journalText = jr2test::Entries({Json{{"settled", "A"}}});
  store->save(journaled, {{0, 1, "c"}});
  store->save(Stored("waiting", 0, "old0wait0000", 100), {{0, 1, "d"}});
  store->save(Stored("done", 0, "new0done0000", 900), {{0, 1, "e"}});
  store->saveAll({{Stored("done", 0, "old0head0000", 100, "standing"),
                   {},
                   jr2rt::Heads::Head{"standing", "old0head0000", 50, 0, "done", 100, "", ""}}});
  store->keepStartKey("alice", "tickets", "k-1", {"old0done0000", "d1"});
  store->keepStartKey("alice", "tickets", "k-2", {"old0wait0000", "d2"});
  const int64_t asked = store->ask("old0done0000", "cancel", Json::object());

  const int64_t tickets = store->prune(500, "tickets");
  const int64_t rest = store->prune(500, "");
  std::cout << "pruned: " << tickets << " of tickets, then " << rest << " more\n";
  EXPECT_EQ(tickets, 2) << "old0done0000 and old0jour0000: ended before 500, of tickets";
  EXPECT_EQ(rest, 1) << "old0fail0000";
  EXPECT_EQ(store->prune(500, ""), 0);
  std::vector<std::string> left;
  for (const auto& r : store->list(true)) left.push_back(r.id);
  EXPECT_EQ(left, (std::vector<std::string>{"old0head0000", "old0wait0000", "new0done0000"}));
  for (const char* id : {"old0done0000", "old0fail0000", "old0jour0000"}) {
    EXPECT_TRUE(store->feed(id, 0).empty()) << id;
  }
  EXPECT_TRUE(store->journal("old0jour0000").empty());
  EXPECT_EQ(store->feed("old0wait0000", 0).size(), 1u);
  EXPECT_FALSE(store->startKey("alice", "tickets", "k-1").has_value()) << "went with its run";
  EXPECT_EQ(store->startKey("alice", "tickets", "k-2")->run, "old0wait0000");
  EXPECT_FALSE(store->taken(asked));
  EXPECT_TRUE(store->asked().empty()) << "a request of a run that is gone";
}

// ---- Dispatch keys, counts, heads, start keys, the inbox -------------------------------------

TEST_P(StoreTest, ARunIsFoundByItsDispatchKeyAndCounted) {
  auto store = open();
  jr2rt::StoredRun a = Stored("waiting", 0, "aaaa00000001", 10, "callee");
  a.key = "K-1";
  jr2rt::StoredRun b = Stored("done", 0, "aaaa00000002", 20, "callee");
  b.key = "K-1";  // the newest of two with one key
  jr2rt::StoredRun c = Stored("waiting", 0, "aaaa00000003", 30, "other");
  c.key = "K-1";
  store->saveAll({{a, {}, std::nullopt}, {b, {}, std::nullopt}, {c, {}, std::nullopt}});
  store->save(Stored("waiting", 0, "aaaa00000004", 40, "callee"));
  EXPECT_EQ(store->byKey("callee", "K-1")->id, "aaaa00000002");
  EXPECT_EQ(store->byKey("other", "K-1")->id, "aaaa00000003");
  EXPECT_FALSE(store->byKey("callee", "K-2").has_value());
  EXPECT_FALSE(store->byKey("callee", "").has_value()) << "no key is no key";
  // A save without the key drops it.
  jr2rt::StoredRun unkeyed = Stored("done", 1, "aaaa00000002", 50, "callee");
  store->save(unkeyed);
  EXPECT_EQ(store->byKey("callee", "K-1")->id, "aaaa00000001");
  const auto counts = store->runCounts();
  EXPECT_EQ(counts,
            (std::map<std::pair<std::string, std::string>, int64_t>{
                {{"callee", "done"}, 1}, {{"callee", "waiting"}, 2}, {{"other", "waiting"}, 1}}));
}

TEST_P(StoreTest, APageIsNewestFirstFilteredAndGoesOnFromItsCursor) {
  auto store = open();
  std::vector<jr2rt::Store::Save> batch;
  // 30 runs of two workflows and a third the Caller does not read; two share a changed time.
  for (int i = 0; i < 30; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "bbbb%08d", i);
    const std::string workflow = i % 3 == 0 ? "other" : (i % 2 == 0 ? "alpha" : "beta");
    jr2rt::StoredRun r = Stored(i % 4 == 0 ? "waiting" : "done", 0, id, i == 29 ? 28 : i, workflow);
    if (i == 7) r.key = "ITEM-7";
    batch.push_back({r, {}, std::nullopt});
  }
  store->saveAll(batch);
  jr2rt::RunQuery q;
  q.workflows = {"alpha", "beta"};
  q.limit = 6;
  std::vector<std::string> seen;
  for (int pages = 0; pages < 10; ++pages) {
    auto page = store->page(q);
    ASSERT_LE(page.size(), 7u) << "at most one more than the limit";
    const bool more = page.size() == 7;
    if (more) page.pop_back();
    for (const auto& r : page) {
      EXPECT_NE(r.workflow, "other") << "only the workflows asked for";
      seen.push_back(r.id);
    }
    if (!more) break;
    q.beforeMs = page.back().updatedMs;
    q.beforeId = page.back().id;
  }
  std::vector<std::string> want;
  for (int i = 29; i >= 0; --i) {
    if (i % 3 == 0) continue;
    char id[16];
    std::snprintf(id, sizeof id, "bbbb%08d", i);
    want.emplace_back(id);
  }
  // 29 and 28 share `updated` 28: the larger id first.
  EXPECT_EQ(seen, want) << "every run once, newest change first, across pages";

  jr2rt::RunQuery waiting;
  waiting.workflows = {"alpha", "beta"};
  waiting.status = "waiting";
  for (const auto& r : store->page(waiting)) EXPECT_EQ(r.status, "waiting");
  EXPECT_EQ(store->page(waiting).size(), 5u);  // 4, 8, 16, 20, 28

  jr2rt::RunQuery byKey;
  byKey.workflows = {"alpha", "beta"};
  byKey.text = "ITEM-7";
  auto keyed = store->page(byKey);
  ASSERT_EQ(keyed.size(), 1u) << "a dispatch key finds its run";
  EXPECT_EQ(keyed[0].id, "bbbb00000007");
  EXPECT_EQ(keyed[0].key, "ITEM-7");

  jr2rt::RunQuery byId;
  byId.workflows = {"alpha", "beta"};
  byId.text = "bbbb0000002";
  std::vector<std::string> ids;
  for (const auto& r : store->page(byId)) ids.push_back(r.id);
  EXPECT_EQ(
      ids, (std::vector<std::string>{"bbbb00000029", "bbbb00000028", "bbbb00000026", "bbbb00000025",
                                     "bbbb00000023", "bbbb00000022", "bbbb00000020"}))
      << "a run id's start finds its runs, not those of another workflow";
  byId.text = "bbbb\xff";
  EXPECT_TRUE(store->page(byId).empty())
      << "text that is not UTF-8 finds nothing and throws nothing";
  jr2rt::RunQuery none;
  EXPECT_TRUE(store->page(none).empty()) << "no workflow, no runs";

  // Pages of different shapes, one after the other (two Callers, one reading two workflows and
  // one reading one): each its own statement. The SQLite store once kept a built statement by its
  // text's address, which the next text reused: a page of the other shape, bound short, and a
  // `datatype mismatch` that stopped serve.
  for (int i = 0; i < 50; ++i) {
    jr2rt::RunQuery two;
    two.workflows = {"alpha", "beta"};
    two.limit = 3;
    jr2rt::RunQuery one;
    one.workflows = {"other"};
    one.limit = 3;
    jr2rt::RunQuery follow = one;
    follow.sinceMs = 0;
    for (const jr2rt::RunQuery* q : {&two, &one, &follow}) {
      const auto got = store->page(*q);
      ASSERT_EQ(got.size(), 4u) << "round " << i;
      for (const auto& r : got) ASSERT_EQ(r.workflow == "other", q != &two) << "round " << i;
    }
  }
}

// `GET /runs?follow=true` (the console's live runs list): what changed after a cursor, oldest
// change first, so that a follower can move its cursor along; each status a range of the index.
TEST_P(StoreTest, AFollowerGetsTheChangesAfterItsCursorOldestFirst) {
  auto store = open();
  std::vector<jr2rt::Store::Save> batch;
  for (int i = 0; i < 12; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "cccc%08d", i);
    const char* status = i % 4 == 0   ? "waiting"
                         : i % 4 == 1 ? "done"
                         : i % 4 == 2 ? "error"
                                      : "drifted";
    // 6 and 7 share `updated` 6: ordered by id after it.
    batch.push_back(
        {Stored(status, 0, id, i == 7 ? 6 : i, i % 3 == 0 ? "other" : "alpha"), {}, std::nullopt});
  }
  store->saveAll(batch);
  jr2rt::RunQuery q;
  q.workflows = {"alpha"};
  q.sinceMs = 5;
  q.sinceId = "cccc00000005";
  q.limit = 3;
  std::vector<std::string> seen;
  for (int looks = 0; looks < 10; ++looks) {
    auto got = store->page(q);
    ASSERT_LE(got.size(), 4u);
    const bool more = got.size() == 4;
    if (more) got.pop_back();
    for (const auto& r : got) seen.push_back(r.id + " " + r.status);
    if (got.empty()) break;
    q.sinceMs = got.back().updatedMs;
    q.sinceId = got.back().id;
    if (!more) break;
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"cccc00000007 drifted", "cccc00000008 waiting",
                                            "cccc00000010 error", "cccc00000011 drifted"}))
      << "after (5, cccc…05), oldest first: 7 (at 6) then 8, 10 and 11; every status, never "
         "another workflow's run (6 and 9 are `other`'s)";
  // Nothing new: nothing. A run saved again later comes once more, with its new status.
  EXPECT_TRUE(store->page(q).empty());
  jr2rt::StoredRun again = Stored("done", 1, "cccc00000002", 20, "alpha");
  store->saveAll({{again, {}, std::nullopt}});
  auto later = store->page(q);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].id, "cccc00000002");
  EXPECT_EQ(later[0].status, "done");
  // A status filter follows only that status.
  jr2rt::RunQuery errors;
  errors.workflows = {"alpha"};
  errors.status = "error";
  errors.sinceMs = 0;
  for (const auto& r : store->page(errors)) EXPECT_EQ(r.status, "error");
  EXPECT_EQ(store->page(errors).size(), 1u) << "10 alone: 2 was `error` until it was saved `done`";
}

TEST_P(StoreTest, HeadsAreWrittenWithTheirRunsAndStartKeysAreKept) {
  auto store = open();
  EXPECT_FALSE(store->head("alerts").has_value());
  EXPECT_TRUE(store->heads().empty());
  const jr2rt::Heads::Head first{"alerts", "aaaa00000001", 10, 0, "", 0, "", ""};
  store->saveAll({{Stored("waiting", 0, "aaaa00000001", 10, "alerts"), {}, first}});
  const jr2rt::Heads::Head paused{
      "alerts", "aaaa00000001", 10, 3, "error", 20, "errors", "3 runs in a row ended in an error"};
  store->saveAll({{Stored("failed", 1, "aaaa00000001", 20, "alerts"), {}, paused},
                  {Stored("waiting", 0, "bbbb00000001", 20, "beacons"),
                   {},
                   jr2rt::Heads::Head{"beacons", "bbbb00000001", 20, 0, "", 0, "", ""}}});
  const auto head = store->head("alerts");
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->run, "aaaa00000001");
  EXPECT_EQ(head->startedMs, 10);
  EXPECT_EQ(head->streak, 3);
  EXPECT_EQ(head->ended, "error");
  EXPECT_EQ(head->endedMs, 20);
  EXPECT_EQ(head->paused, "errors");
  EXPECT_EQ(head->why, "3 runs in a row ended in an error");
  const auto all = store->heads();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].workflow, "alerts");
  EXPECT_EQ(all[1].workflow, "beacons");

  EXPECT_FALSE(store->startKey("alice", "alerts", "k").has_value());
  store->keepStartKey("alice", "alerts", "k", {"aaaa00000001", "digest-1"});
  store->keepStartKey("bob", "alerts", "k", {"bbbb00000001", "digest-2"});
  EXPECT_EQ(store->startKey("alice", "alerts", "k")->digest, "digest-1");
  // A start of the key again, its run (aaaa00000001) not stored: SQLite's one serve stopped
  // before the first commit, and the key goes to this start; on a store shared by hosts the first
  // may be under way on another, and is kept (replaced only after 30 s: pg_hosts_test.cpp).
  const auto kept = store->keepStartKey("alice", "alerts", "k", {"bbbb00000001", "digest-3"});
  const std::string want = postgres() ? "aaaa00000001" : "bbbb00000001";
  EXPECT_EQ(kept.run, want);
  EXPECT_EQ(store->startKey("alice", "alerts", "k")->run, want);
  EXPECT_EQ(store->startKey("alice", "alerts", "k")->digest, postgres() ? "digest-1" : "digest-3");
  EXPECT_EQ(store->startKey("bob", "alerts", "k")->run, "bbbb00000001");
}

// The inbox: a request is taken by one host only, answered once, and withdrawn only while no
// host has taken it.
TEST_P(StoreTest, TheInboxHandsARequestToOneHostAndItsAnswerBackOnce) {
  auto store = open();
  auto other = open();  // another host, on its own connection
  const int64_t a = store->ask("aaaa00000001", "cancel", Json{{"why", "enough"}});
  const int64_t b = store->ask("aaaa00000002", "send", Json{{"event", "go"}});
  EXPECT_LT(a, b);
  const auto asked = other->asked();
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_EQ(asked[0].seq, a);
  EXPECT_EQ(asked[0].run, "aaaa00000001");
  EXPECT_EQ(asked[0].verb, "cancel");
  EXPECT_EQ(asked[0].body, (Json{{"why", "enough"}}));
  EXPECT_FALSE(store->taken(a));
  EXPECT_TRUE(other->takeRequest(a));
  EXPECT_FALSE(store->takeRequest(a)) << "taken once";
  EXPECT_TRUE(store->taken(a));
  EXPECT_FALSE(store->withdraw(a)) << "a host took it: wait for its answer";
  EXPECT_EQ(store->asked().size(), 1u);
  EXPECT_FALSE(store->answerOf(a).has_value()) << "not answered yet";
  other->answer(a, Json{{"ok", true}});
  EXPECT_EQ(store->answerOf(a).value(), (Json{{"ok", true}}));
  EXPECT_FALSE(store->answerOf(a).has_value()) << "read once, then forgotten";
  EXPECT_FALSE(store->taken(a));
  EXPECT_TRUE(store->withdraw(b));
  EXPECT_FALSE(other->takeRequest(b)) << "withdrawn";
  EXPECT_TRUE(store->asked().empty());
}

// ---- The drive lock --------------------------------------------------------------------------

TEST_P(StoreTest, ASecondLockOnARunWaitsUntilTheFirstIsGone) {
  auto first = open()->lock("0123456789ab", {});
  std::promise<void> waiting;
  std::atomic<bool> acquired{false};
  std::atomic<int> waits{0};
  std::string holder;
  std::thread second([&] {
    auto store = open();
    auto lock = store->lock("0123456789ab", [&](const std::string& who) {
      holder = who;
      if (waits.fetch_add(1) == 0) waiting.set_value();
    });
    acquired = true;
  });
  ASSERT_EQ(waiting.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "the second lock told that it waits";
  EXPECT_FALSE(acquired) << "not while the first is held";
  EXPECT_EQ(holder, "pid " + std::to_string(::getpid())) << "the waiter is told who holds it";
  first.reset();
  second.join();
  EXPECT_TRUE(acquired);
  EXPECT_EQ(waits, 1) << "told once";
}

// Two locks of one store exclude each other too (as two flocks in one process do), release()
// and take() give it up and back, and a thousand locks leave nothing behind.
TEST_P(StoreTest, LocksOfOneStoreExcludeEachOtherAndLeaveNothing) {
  auto store = open();
  auto held = store->lock("0123456789ab", {});
  auto other = open();
  auto second = other->lock("ffff00000000", {});
  EXPECT_TRUE(second->tryTake()) << "held already";
  second->release();
  EXPECT_TRUE(second->tryTake()) << "another run";
  second.reset();
  std::unique_ptr<jr2rt::RunLock> mine;
  int waits = 0;
  std::thread later([&] {
    // A lock of the same store, asked for while the first is held: it waits.
    mine = store->lock("0123456789ab", [&](const std::string&) { ++waits; });
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  held->release();
  later.join();
  EXPECT_EQ(waits, 1);
  EXPECT_FALSE(held->tryTake()) << "the other lock of this store holds it now";
  mine.reset();
  held->take();
  EXPECT_TRUE(held->tryTake());
  held.reset();
  for (int i = 0; i < 200; ++i) {
    auto lock = store->lock("run" + std::to_string(i % 10), [&](const std::string&) { ++waits; });
    if (i % 3 == 0) {
      lock->release();
      lock->take();
    }
    if (i % 7 == 0) lock->release();  // destroyed while released
  }
  EXPECT_EQ(waits, 1);
  EXPECT_TRUE(open()->lock("run3", {})->tryTake()) << "another store takes what was left";
}

// ---- What a commit costs ---------------------------------------------------------------------

// Printed, not held to a bound (the machine and the server's settings decide it): a group commit
// of 100 runs with two feed lines each, and a one-run save with one line (a Gate answer's turn),
// on each backend. docs/scaling.md#measured has the figures of one run.
TEST_P(StoreTest, ASaveAllOfAHundredRunsIsTimed) {
  auto store = open();
  constexpr int kRuns = 100;
  constexpr int kCommits = 20;
  std::vector<jr2rt::RunRows::Save> batch(kRuns);
  for (int i = 0; i < kRuns; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "c0ffee%06d", i);
    batch[i].run = Stored("waiting", 0, id);
    batch[i].run.snapshot["context"] = {{"ticket", "T-" + std::to_string(i)}, {"n", i}};
  }
  auto commit = [&] {
    const std::vector<int64_t> revisions = store->saveAll(batch);
    for (int i = 0; i < kRuns; ++i) {
      batch[i].run.revision = revisions[i];
      batch[i].feed = {{0, i, "T-1 settled"}, {0, i, "T-2 started"}};
    }
  };
  commit();
  const int64_t statements = store->statements();
  const auto start = std::chrono::steady_clock::now();
  for (int c = 0; c < kCommits; ++c) commit();
  const double batchMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
      kCommits;
  const int64_t perCommit = (store->statements() - statements) / kCommits;
  int64_t revision = store->revision("c0ffee000000");
  const auto one = std::chrono::steady_clock::now();
  for (int c = 0; c < 200; ++c) {
    revision = store->save(Stored("waiting", revision, "c0ffee000000"), {{0, c, "answered"}});
  }
  const double oneUs =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - one).count() /
      200;
  std::cout << (postgres() ? "postgres" : "sqlite") << ": saveAll of " << kRuns
            << " runs (2 feed lines each): " << batchMs << " ms a commit, " << perCommit
            << " statements; a one-run save with one line: " << oneUs << " us\n";
  EXPECT_EQ(store->feed("c0ffee000099", 0).size(), 2u * kCommits);
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest,
                         testing::Values(jr2test::Backend::kSqlite, jr2test::Backend::kPostgres),
                         jr2test::BackendName);

// ---- The SQLite store alone: its file, its migrations, its lock files ------------------------

// A store made before the hook log had its order gets the column, its old deliveries after the
// new ones (the order itself is StoreTest.TheHookLogIsNewestFirstByArrivalAndKeepsTheFirstAnswer).
TEST(SqliteStore, AHookLogFromBeforeItsOrderGetsIt) {
  const std::string path = FreshDir("hooklog") + "jr2.db";
  {
    auto store = jr2rt::OpenSqliteStore(path);
    store->save(Stored("waiting", 0));
  }
  {
    // The hooks table as the previous release made it: no `seq`, no index.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    const char* old =
        "DROP INDEX hooks_by_seq; DROP TABLE hooks;"
        "CREATE TABLE hooks (hook TEXT NOT NULL, delivery TEXT NOT NULL, time INTEGER NOT NULL,"
        " event TEXT NOT NULL, answer TEXT NOT NULL, PRIMARY KEY (hook, delivery)) WITHOUT ROWID;"
        "INSERT INTO hooks VALUES ('forge', 'old', 5, 'ping', '{\"verdict\":\"reread\"}');";
    ASSERT_EQ(sqlite3_exec(db, old, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  auto store = jr2rt::OpenSqliteStore(path);
  const Json reread = {{"verdict", "reread"}};
  store->logHooks({{"forge", "d-1", 1000, "ping", reread},
                   {"forge", "d-2", 1000, "ping", reread},
                   {"other", "d-1", 1000, "ping", reread}});
  store->logHooks({{"forge", "d-3", 1000, "ping", reread},
                   {"forge", "d-1", 1000, "ping", {{"verdict", "skipped"}}}});
  std::vector<std::string> order;
  for (const Json& e : store->hookLog("forge", 10)) order.push_back(e["delivery"]);
  EXPECT_EQ(order, (std::vector<std::string>{"d-3", "d-2", "d-1", "old"}));
  EXPECT_EQ(store->hookAnswer("forge", "d-1").value(), reread) << "the first answer is kept";
  EXPECT_EQ(store->hookLog("other", 10).size(), 1u);
  EXPECT_EQ(store->hookLog("forge", 2).size(), 2u);
}

TEST(SqliteStore, ANewStoreCarriesTheJr2ApplicationIdAndUsesWal) {
  const std::string path = FreshDir("new") + "jr2.db";
  jr2rt::OpenSqliteStore(path)->save(Stored("waiting", 0));
  EXPECT_EQ(std::stoll(Pragma(path, "application_id")), kJr2AppId);
  EXPECT_EQ(Pragma(path, "journal_mode"), "wal");
  // Opened again: it is recognised as ours and keeps its runs.
  EXPECT_EQ(jr2rt::OpenSqliteStore(path)->load("0123").status, "waiting");
}

TEST(SqliteStore, AnotherApplicationsDatabaseIsRefusedAndLeftByteForByte) {
  const std::string dir = FreshDir("foreign");
  const std::string notes = dir + "notes.db", marked = dir + "marked.db", mixed = dir + "mixed.db";
  Sql(notes, "CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me');");
  // Another application's id, and nothing in it yet.
  Sql(marked, "PRAGMA application_id = 42; PRAGMA user_version = 1;");
  // jr2's old `runs` table beside a table that is not jr2's.
  Sql(mixed,
      "CREATE TABLE runs (id TEXT PRIMARY KEY, workflow TEXT, status TEXT, updated INTEGER,"
      " snapshot TEXT); CREATE TABLE notes (body TEXT);");
  const std::vector<std::string> before = Entries(dir);
  ASSERT_EQ(before, (std::vector<std::string>{"marked.db", "mixed.db", "notes.db"}));
  for (const std::string& path : {notes, marked, mixed}) {
    for (const auto mode : {jr2rt::StoreMode::kReadWrite, jr2rt::StoreMode::kReadOnly}) {
      const std::string bytes = Bytes(path);
      const std::string text =
          ErrorOf<jr2rt::StoreError>([&] { jr2rt::OpenSqliteStore(path, mode); });
      std::cout << text << "\n";
      EXPECT_TRUE(Contains(text, "`" + path +
                                     "` is not a jr2 run store (it is another "
                                     "application's SQLite database"))
          << text;
      EXPECT_TRUE(Contains(text, "give another path with --store or JR2_STORE")) << text;
      EXPECT_EQ(Bytes(path), bytes) << path << " is byte for byte as it was";
      EXPECT_EQ(Entries(dir), before) << "no -journal, -wal or -shm file, no lock folder";
    }
  }
  EXPECT_TRUE(Contains(ErrorOf<jr2rt::StoreError>([&] { jr2rt::OpenSqliteStore(notes); }),
                       "it holds `notes`"));
  EXPECT_TRUE(Contains(ErrorOf<jr2rt::StoreError>([&] { jr2rt::OpenSqliteStore(marked); }),
                       "application_id 0x0000002A"));
}

TEST(SqliteStore, AnotherApplicationsDatabaseInWalModeIsRefusedAndLeftByteForByte) {
  const std::string dir = FreshDir("foreign-wal");
  const std::string closed = dir + "closed.db", open = dir + "open.db";
  // In WAL mode, closed: everything is in the database file.
  Sql(closed, "PRAGMA journal_mode=WAL; CREATE TABLE notes (body TEXT);");
  // In WAL mode, still open in its application: its table is in `open.db-wal` alone.
  sqlite3* app = nullptr;
  ASSERT_EQ(sqlite3_open(open.c_str(), &app), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(app,
                         "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;"
                         "CREATE TABLE notes (body TEXT);",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  const std::vector<std::string> before = Entries(dir);
  ASSERT_EQ(before,
            (std::vector<std::string>{"closed.db", "open.db", "open.db-shm", "open.db-wal"}));
  for (const std::string& path : {closed, open}) {
    const std::string bytes = Bytes(path), wal = Bytes(path + "-wal");
    const std::string text = ErrorOf<jr2rt::StoreError>([&] { jr2rt::OpenSqliteStore(path); });
    std::cout << text << "\n";
    EXPECT_TRUE(Contains(text, "is not a jr2 run store (it is another application's")) << text;
    EXPECT_EQ(Bytes(path), bytes);
    EXPECT_EQ(Bytes(path + "-wal"), wal);
    EXPECT_EQ(Entries(dir), before);
  }
  sqlite3_close(app);
}

TEST(SqliteStore, AFileThatIsNotADatabaseIsRefusedAndLeftAsItWas) {
  const std::string dir = FreshDir("not-a-db");
  const std::string text = dir + "text.db", fake = dir + "fake.db";
  std::ofstream(text, std::ios::binary) << "not a database";
  // SQLite's magic, then nothing SQLite can read.
  std::ofstream(fake, std::ios::binary)
      << std::string("SQLite format 3\0", 16) << std::string(4080, 'x');
  const std::vector<std::string> before = Entries(dir);
  for (const std::string& path : {text, fake}) {
    const std::string bytes = Bytes(path);
    const std::string message = ErrorOf<jr2rt::StoreError>([&] { jr2rt::OpenSqliteStore(path); });
    std::cout << message << "\n";
    EXPECT_TRUE(Contains(message, "`" + path + "` is not a jr2 run store (")) << message;
    EXPECT_EQ(Bytes(path), bytes);
    EXPECT_EQ(Entries(dir), before);
  }
  EXPECT_TRUE(Contains(ErrorOf<jr2rt::StoreError>([&] { jr2rt::OpenSqliteStore(text); }),
                       "it is not a SQLite database"));
  EXPECT_TRUE(
      Contains(ErrorOf<jr2rt::StoreError>([&] { jr2rt::OpenSqliteStore(dir); }), "it is a folder"));
}

TEST(SqliteStore, AnEmptyFileOrAnEmptyDatabaseBecomesAStore) {
  const std::string dir = FreshDir("empty");
  const std::string zero = dir + "zero.db", blank = dir + "blank.db", walled = dir + "walled.db";
  std::ofstream(zero, std::ios::binary).flush();
  Sql(blank, "PRAGMA user_version = 3;");  // a database file with no tables and no id
  Sql(walled, "PRAGMA journal_mode=WAL; PRAGMA user_version = 3;");  // the same, in WAL mode
  // A read-only command finds no store there, and writes nothing.
  for (const std::string& path : {zero, blank}) {
    const std::string bytes = Bytes(path);
    EXPECT_TRUE(Contains(ErrorOf<jr2rt::StoreMissing>(
                             [&] { jr2rt::OpenSqliteStore(path, jr2rt::StoreMode::kReadOnly); }),
                         "no run store at `" + path + "`"));
    EXPECT_EQ(Bytes(path), bytes);
  }
  EXPECT_EQ(Entries(dir), (std::vector<std::string>{"blank.db", "walled.db", "zero.db"}));
  for (const std::string& path : {zero, blank, walled}) {
    auto store = jr2rt::OpenSqliteStore(path);
    // In the database file itself, not only in its -wal: a process killed now leaves a file
    // the next open recognises.
    EXPECT_EQ(Bytes(path).substr(68, 4), "jr2C") << path;
    EXPECT_EQ(store->save(Stored("waiting", 0)), 1);
    EXPECT_EQ(std::stoll(Pragma(path, "application_id")), kJr2AppId) << path;
  }
}

TEST(SqliteStore, AStoreWrittenBeforeRevisionsOpensAtRevisionOne) {
  const std::string path = FreshDir("old") + "old.db";
  Sql(path,
      "CREATE TABLE runs (id TEXT PRIMARY KEY, workflow TEXT NOT NULL, status "
      "TEXT NOT NULL, updated INTEGER NOT NULL, snapshot TEXT NOT NULL);"
      "INSERT INTO runs VALUES ('abcdabcdabcd', 'tickets', 'waiting', 1,"
      " '{\"id\":\"abcdabcdabcd\",\"workflow\":\"tickets\",\"status\":\"waiting\"}');");
  auto store = jr2rt::OpenSqliteStore(path);
  const jr2rt::StoredRun old = store->load("abcd");
  EXPECT_EQ(old.revision, 1);
  EXPECT_EQ(old.status, "waiting");
  jr2rt::StoredRun next = old;
  next.status = "done";
  EXPECT_EQ(store->save(next, {{0, 5, "finished"}}), 2);
  EXPECT_EQ(store->feed("abcdabcdabcd", 0).size(), 1u);
  EXPECT_EQ(std::stoll(Pragma(path, "application_id")), kJr2AppId) << "adopted";
}

TEST(SqliteStore, ALegacyStoreWithRevisionsIsAdoptedWithItsRuns) {
  const std::string path = FreshDir("legacy") + "legacy.db";
  Sql(path,
      "CREATE TABLE runs (id TEXT PRIMARY KEY, workflow TEXT NOT NULL, status TEXT NOT NULL,"
      " updated INTEGER NOT NULL, snapshot TEXT NOT NULL, rev INTEGER NOT NULL DEFAULT 1);"
      "INSERT INTO runs VALUES ('aaaa00000001', 'tickets', 'waiting', 20,"
      " '{\"id\":\"aaaa00000001\",\"workflow\":\"tickets\",\"status\":\"waiting\"}', 5);"
      "INSERT INTO runs VALUES ('aaaa00000002', 'tickets', 'done', 10, '{\"n\":2}', 7);");
  // A read-only command adopts it too: it is jr2's own file, only older.
  auto store = jr2rt::OpenSqliteStore(path, jr2rt::StoreMode::kReadOnly);
  const auto runs = store->list(true);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].id, "aaaa00000002") << "oldest change first";
  EXPECT_EQ(runs[0].revision, 7);
  EXPECT_EQ(runs[1].revision, 5);
  EXPECT_EQ(store->load("aaaa00000001").snapshot["status"], "waiting");
  EXPECT_EQ(store->list(false).size(), 1u);
  EXPECT_EQ(std::stoll(Pragma(path, "application_id")), kJr2AppId);
}

TEST(SqliteStore, AWriterSucceedsWhileAnotherConnectionHoldsARead) {
  const std::string path = FreshDir("reader") + "jr2.db";
  auto store = jr2rt::OpenSqliteStore(path);
  ASSERT_EQ(store->save(Stored("waiting", 0)), 1);
  sqlite3* reader = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &reader), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(reader, "BEGIN", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(reader, "SELECT id, snapshot FROM runs", -1, &st, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW) << "the reader is in the middle of its read";
  const auto start = std::chrono::steady_clock::now();
  int64_t revision = 1;
  for (int i = 0; i < 200; ++i) revision = store->save(Stored("waiting", revision), {{0, i, "x"}});
  // Another command, with its own connection, saves too.
  jr2rt::OpenSqliteStore(path)->save(Stored("done", revision));
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  std::cout << "201 saves beside an open read: " << ms << " ms\n";
  EXPECT_EQ(store->revision("0123456789ab"), 202);
  // The reader still sees the run as it was when its read began.
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "0123456789ab");
  sqlite3_finalize(st);
  sqlite3_exec(reader, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(reader);
}

TEST(SqliteStore, PruneDeletesEndedRunsWithTheirFeedsAndLockFiles) {
  const std::string path = FreshDir("prune") + "jr2.db";
  const std::string locks = path + ".locks/";
  auto store = jr2rt::OpenSqliteStore(path);
  store->save(Stored("done", 0, "old0done0000", 100), {{0, 1, "a"}});
  store->save(Stored("failed", 0, "old0fail0000", 100, "other"), {{0, 1, "b"}});
  store->save(Stored("cancelled", 0, "old0held0000", 100), {{0, 1, "c"}});
  store->save(Stored("waiting", 0, "old0wait0000", 100), {{0, 1, "d"}});
  store->save(Stored("done", 0, "new0done0000", 900), {{0, 1, "e"}});
  // A lock file a killed command left behind, and a lock someone holds.
  { auto left = store->lock("old0done0000", {}); }
  ASSERT_TRUE(Entries(locks).empty());
  const int leftover = ::open((locks + "old0done0000").c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(leftover, 0);
  ::close(leftover);
  auto held = store->lock("old0held0000", {});
  ASSERT_EQ(Entries(locks), (std::vector<std::string>{"old0done0000", "old0held0000"}));

  const int64_t tickets = store->prune(500, "tickets");
  const int64_t rest = store->prune(500, "");
  std::cout << "pruned: " << tickets << " of tickets, then " << rest << " more\n";
  EXPECT_EQ(tickets, 2) << "old0done0000 and old0held0000: ended before 500, of tickets";
  EXPECT_EQ(rest, 1) << "old0fail0000";
  EXPECT_EQ(store->prune(500, ""), 0);
  std::vector<std::string> left;
  for (const auto& r : store->list(true)) left.push_back(r.id);
  EXPECT_EQ(left, (std::vector<std::string>{"old0wait0000", "new0done0000"}));
  for (const char* id : {"old0done0000", "old0fail0000", "old0held0000"}) {
    EXPECT_TRUE(store->feed(id, 0).empty()) << id;
  }
  EXPECT_EQ(store->feed("old0wait0000", 0).size(), 1u);
  EXPECT_EQ(Entries(locks), (std::vector<std::string>{"old0held0000"}))
      << "a held lock is its holder's to remove";
  held.reset();
  EXPECT_TRUE(Entries(locks).empty());
}

// Typed feed events (#10): kind and data round-trip; a store whose feed predates kinds gets the
// columns on open, and its old lines read as kind `line`.
TEST(SqliteStore, AFeedFromBeforeKindsIsMigrated) {
  const std::string path = FreshDir("feedkinds") + "jr2.db";
  {
    auto store = jr2rt::OpenSqliteStore(path);
    store->save(Stored("waiting", 0),
                {jr2rt::FeedLine(0, 1, "T-1 started", "started", Json{{"item", "T-1"}}),
                 jr2rt::FeedLine(0, 2, "", "gate-closed", Json{{"gate", "T-1.review"}})});
    const auto feed = store->feed("0123456789ab", 0);
    ASSERT_EQ(feed.size(), 2u);
    EXPECT_EQ(feed[0].kind, "started");
    EXPECT_EQ(feed[0].data, (Json{{"item", "T-1"}}));
    EXPECT_EQ(feed[1].line, "");
    EXPECT_EQ(feed[1].data["gate"], "T-1.review");
  }
  // A store from before: its feed table has no kind or data.
  const std::string old = FreshDir("feedold") + "jr2.db";
  Sql(old,
      "PRAGMA application_id = 1785868867;"
      "CREATE TABLE runs (id TEXT PRIMARY KEY, workflow TEXT NOT NULL, status TEXT NOT NULL,"
      " updated INTEGER NOT NULL, rev INTEGER NOT NULL DEFAULT 1, snapshot TEXT NOT NULL);"
      "CREATE INDEX runs_summary ON runs (status, updated, id, workflow, rev);"
      "CREATE TABLE feed (run TEXT NOT NULL, seq INTEGER NOT NULL, time INTEGER NOT NULL,"
      " line TEXT NOT NULL, PRIMARY KEY (run, seq)) WITHOUT ROWID;"
      "INSERT INTO runs VALUES ('abcdabcdabcd', 'tickets', 'waiting', 1, 1,"
      " '{\"id\":\"abcdabcdabcd\",\"workflow\":\"tickets\",\"status\":\"waiting\"}');"
      "INSERT INTO feed VALUES ('abcdabcdabcd', 1, 5, 'T-1 started');");
  auto store = jr2rt::OpenSqliteStore(old, jr2rt::StoreMode::kReadOnly);
  const auto feed = store->feed("abcdabcdabcd", 0);
  ASSERT_EQ(feed.size(), 1u);
  EXPECT_EQ(feed[0].kind, "line");
  EXPECT_EQ(feed[0].line, "T-1 started");
  EXPECT_TRUE(feed[0].data.is_null());
  EXPECT_EQ(store->load("abcd").journal.size(), 0u) << "the journal table is made too";
}

TEST(SqliteStoreLock, ASymlinkedLockFileIsRefusedAndItsTargetIsNotCreated) {
  const std::string dir = FreshDir("lock-symlink");
  const std::string path = dir + "jr2.db";
  auto store = jr2rt::OpenSqliteStore(path);
  ASSERT_EQ(mkdir((path + ".locks").c_str(), 0700), 0);
  const std::string link = path + ".locks/0123456789ab";
  ASSERT_EQ(symlink((dir + "target").c_str(), link.c_str()), 0);
  const std::string text = ErrorOf<jr2rt::StoreError>([&] { store->lock("0123456789ab", {}); });
  std::cout << text << "\n";
  EXPECT_EQ(text,
            "`" + link + "` is a symbolic link; a lock file must be a plain file — remove it");
  EXPECT_FALSE(fs::exists(dir + "target")) << "the link was not followed";
}

TEST(SqliteStoreLock, ALockFolderThatIsASymlinkOrOpenToOthersIsRefused) {
  const std::string dir = FreshDir("lock-folder");
  const std::string path = dir + "jr2.db";
  auto store = jr2rt::OpenSqliteStore(path);
  ASSERT_EQ(mkdir((dir + "elsewhere").c_str(), 0700), 0);
  ASSERT_EQ(symlink((dir + "elsewhere").c_str(), (path + ".locks").c_str()), 0);
  const std::string text = ErrorOf<jr2rt::StoreError>([&] { store->lock("0123456789ab", {}); });
  std::cout << text << "\n";
  EXPECT_EQ(text, "`" + path +
                      ".locks` is a symbolic link; the lock folder must be a real folder — "
                      "remove it");
  EXPECT_TRUE(Entries(dir + "elsewhere").empty());
  ASSERT_EQ(unlink((path + ".locks").c_str()), 0);
  ASSERT_EQ(mkdir((path + ".locks").c_str(), 0700), 0);
  ASSERT_EQ(chmod((path + ".locks").c_str(), 0777), 0);
  const std::string open = ErrorOf<jr2rt::StoreError>([&] { store->lock("0123456789ab", {}); });
  std::cout << open << "\n";
  EXPECT_TRUE(Contains(open, "others can write to it")) << open;
}

TEST(SqliteStoreLock, ANewLockFolderIsPrivate) {
  const std::string path = FreshDir("lock-private") + "jr2.db";
  auto store = jr2rt::OpenSqliteStore(path);
  auto lock = store->lock("0123456789ab", {});
  struct stat st {};
  ASSERT_EQ(lstat((path + ".locks").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(lstat((path + ".locks/0123456789ab").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(SqliteStoreLock, ALockNeedsARunIdThatIsOneFileName) {
  const std::string path = FreshDir("lock-names") + "jr2.db";
  auto store = jr2rt::OpenSqliteStore(path);
  for (const std::string id : {"", ".", "..", "a/b", "../jr2.db"}) {
    EXPECT_THROW(store->lock(id, {}), jr2rt::StoreError) << id;
  }
}

TEST(SqliteStoreLock, AThousandLocksLeaveNoLockFiles) {
  const std::string path = FreshDir("lock-thousand") + "jr2.db";
  auto store = jr2rt::OpenSqliteStore(path);
  int waits = 0;
  for (int i = 0; i < 1000; ++i) {
    auto lock = store->lock("run" + std::to_string(i % 10), [&](const std::string&) { ++waits; });
    if (i % 3 == 0) {
      lock->release();
      lock->take();
    }
    if (i % 7 == 0) lock->release();  // destroyed while released: still removed
  }
  const size_t left = Entries(path + ".locks").size();
  std::cout << "locks left: " << left << "\n";
  EXPECT_EQ(left, 0u);
  EXPECT_EQ(waits, 0);
}

TEST(SqliteStoreLock, ALockReleasedMeanwhileIsTakenBackOnTheFileThatIsThere) {
  const std::string path = FreshDir("lock-take") + "jr2.db";
  const std::string file = path + ".locks/0123456789ab";
  auto store = jr2rt::OpenSqliteStore(path);
  auto sleeper = store->lock("0123456789ab", {});
  sleeper->release();
  bool waited = false;
  // Another command drives the run meanwhile, and removes the lock file when it is done.
  store->lock("0123456789ab", [&](const std::string&) { waited = true; }).reset();
  EXPECT_FALSE(waited);
  EXPECT_FALSE(fs::exists(file));
  sleeper->take();
  // The lock taken back is on the file now at the path: a newcomer cannot have it.
  const int fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0) << "made again";
  EXPECT_NE(flock(fd, LOCK_EX | LOCK_NB), 0);
  ::close(fd);
  sleeper.reset();
  EXPECT_FALSE(fs::exists(file));
}

// A row whose columns are not text (SQLite's columns take any type; PostgreSQL's cannot).
TEST(SqliteStore, ASnapshotThatIsNotTextIsDamaged) {
  const std::string path = FreshDir("blob") + "jr2.db";
  auto store = jr2rt::OpenSqliteStore(path);
  Sql(path,
      "INSERT INTO runs (id, workflow, status, updated, rev, snapshot) VALUES"
      " ('b10b10b10b10', 'tickets', 'waiting', 3, 1, X'7B7D'),"
      " ('d0d0d0d0d0d0', X'6869', 'waiting', 3, 1, '{}');");
  const std::string blob = ErrorOf<jr2rt::StoreDamaged>([&] { store->load("b10b"); });
  std::cout << blob << "\n";
  EXPECT_TRUE(Contains(blob, "run b10b10b10b10 in `" + path +
                                 "` is damaged: its stored snapshot is not text (it is bytes)"))
      << blob;
  EXPECT_TRUE(Contains(ErrorOf<jr2rt::StoreDamaged>([&] { store->load("d0d0"); }),
                       "its workflow is not text (it is bytes)"));
  EXPECT_EQ(store->list(true).size(), 2u);
}

}  // namespace

// ---- Kept parts (#33): a save writes the pieces that moved --------------------------------------

namespace parts {

// A piece as RunSaver::prepare marks it (core/pieces.h), with the id given.
std::string Mark(uint64_t id, const std::string& text) {
  return std::string(1, jr2rt::kPieceOpen) + std::to_string(id) + jr2rt::kPieceName + text +
         jr2rt::kPieceClose;
}

// A run of Pool workers as a saver gives it: each worker's part of the snapshot and of the view
// a piece, each with the id it was given when its text was last written.
struct Workers {
  struct One {
    std::string text;
    uint64_t id = 0;
    uint64_t viewId = 0;
  };
  std::vector<One> live;
  int made = 0;
  bool marked = true;

  void add() {
    const std::string id = "J-" + std::to_string(made++);
    live.push_back({Json{
        {"actor", {{"state", "review"}, {"pad", std::string(280, 'p')}}},
        {"id", id}}.dump()});
  }
  // The run's texts; marked as a saver marks them unless `marked` is false.
  std::pair<std::string, std::string> texts(const std::string& run) {
    std::string snapshot =
        "{\"id\":" + Json(run).dump() + ",\"status\":\"waiting\",\"top\":{\"workers\":[";
    std::string view = "{\"gates\":[";
    std::optional<jr2rt::MarkPieces> marking;
    if (marked) marking.emplace();
    for (size_t i = 0; i < live.size(); ++i) {
      if (i > 0) snapshot += ',', view += ',';
      jr2rt::AppendPiece(snapshot, live[i].id, live[i].text);
      const std::string gate = "{\"gate\":" + Json(Json::parse(live[i].text)["id"]).dump() + "}";
      jr2rt::AppendPiece(view, live[i].viewId, gate);
    }
    return {snapshot + "]},\"workflow\":\"tickets\"}", view + "],\"runId\":\"p\"}"};
  }
  // `n` workers settle and `n` more start: a Pool's turn at its Gates.
  void turn(int n) {
    live.erase(live.begin(), live.begin() + n);
    for (int i = 0; i < n; ++i) add();
  }
};

jr2rt::StoredRun Save(const std::string& id, int64_t revision, Workers& w) {
  jr2rt::StoredRun r = Stored("waiting", revision, id);
  std::tie(r.snapshotText, r.viewText) = w.texts(id);
  return r;
}

}  // namespace parts

// Each Pool worker's part of a run's snapshot and view is a piece (core/pieces.h): the SQLite
// store keeps them in rows of their own and writes a piece once, the PostgreSQL store writes the
// whole text; both read every text back whole, whoever wrote it.
TEST_P(StoreTest, KeptPartsAreReadBackWholeWhoeverWroteThem) {
  auto store = open();
  parts::Workers w;
  for (int i = 0; i < 64; ++i) w.add();
  jr2rt::StoredRun first = parts::Save("pa1tspa1tspa", 0, w);
  ASSERT_TRUE(jr2rt::HasPieces(first.snapshotText) && jr2rt::HasPieces(first.viewText));
  int64_t rev = store->save(first);
  auto same = [&](jr2rt::Store& s, const jr2rt::StoredRun& saved, const char* when) {
    SCOPED_TRACE(when);
    EXPECT_EQ(s.load("pa1t").snapshot, Json::parse(jr2rt::Unmarked(saved.snapshotText)));
    EXPECT_EQ(s.find("pa1t", true).view, jr2rt::Unmarked(saved.viewText));
    for (const auto& r : s.list(true, true)) EXPECT_EQ(r.view, jr2rt::Unmarked(saved.viewText));
    int waiting = 0;
    s.eachWaiting([&](const std::string&, const std::string& snapshot, const std::string&) {
      EXPECT_EQ(snapshot, jr2rt::Unmarked(saved.snapshotText));
      ++waiting;
    });
    EXPECT_EQ(waiting, 1);
  };
  same(*store, first, "the first save");
  if (!postgres()) {
    EXPECT_EQ(value("SELECT count(*) FROM parts WHERE run = 'pa1tspa1tspa'"), "128");
    EXPECT_EQ(value("SELECT count(*) FROM runs WHERE instr(snapshot, 'pppp') > 0"), "0")
        << "the row holds the skeleton";
  }
  jr2rt::StoredRun last = first;
  for (int i = 0; i < 10; ++i) {
    w.turn(3);
    last = parts::Save("pa1tspa1tspa", rev, w);
    rev = store->save(last);
  }
  same(*store, last, "ten turns of three");
  if (!postgres()) {
    EXPECT_EQ(value("SELECT count(*) FROM parts WHERE run = 'pa1tspa1tspa'"), "128")
        << "the settled workers' parts are gone";
  }
  // Another command (another process: nothing held) saves the run with pieces whose ids this
  // process gave to other texts: its own are what is read back.
  auto other = open();
  const jr2rt::StoredRun loaded = other->load("pa1t");
  jr2rt::StoredRun theirs = Stored("waiting", loaded.revision, "pa1tspa1tspa");
  const std::string pad(3000, 't');  // more than a page: kept in parts
  theirs.snapshotText =
      "{\"id\":\"pa1tspa1tspa\",\"status\":\"waiting\",\"workflow\":\"tickets\",\"top\":{"
      "\"workers\":[" +
      parts::Mark(w.live[0].id, Json{{"id", "theirs-0"}, {"pad", pad}}.dump()) + "," +
      parts::Mark(w.live[1].id + 1000000, Json{{"id", "theirs-1"}, {"pad", pad}}.dump()) + "]}}";
  theirs.viewText = "{\"gates\":[" + parts::Mark(w.live[0].viewId, "{\"gate\":\"theirs\"}") +
                    "],\"runId\":\"p\"}";
  const int64_t theirRev = other->save(theirs);
  same(*store, theirs, "another command's save");
  if (!postgres()) {
    EXPECT_EQ(value("SELECT count(*) FROM parts WHERE run = 'pa1tspa1tspa'"), "3")
        << "its three pieces, and none of this one's";
  }
  // This one's next save is refused (its revision is stale) and writes nothing.
  w.turn(1);
  EXPECT_THROW(store->save(parts::Save("pa1tspa1tspa", rev, w)), jr2rt::StoreConflict);
  same(*store, theirs, "after the refused save");
  // Taken up again at the other's revision: every piece is written again, nothing taken as held.
  last = parts::Save("pa1tspa1tspa", theirRev, w);
  rev = store->save(last);
  same(*other, last, "this one's save after the other's");
  // The run ends: its texts have no pieces, and its parts go.
  jr2rt::StoredRun ended = Stored("done", rev, "pa1tspa1tspa");
  store->save(ended);
  EXPECT_EQ(store->load("pa1t").snapshot, ended.snapshot);
  if (!postgres()) {
    EXPECT_EQ(value("SELECT count(*) FROM parts"), "0");
  }
}

// What the pieces buy (#33 goal 2): ten turns of a run of workers at their Gates, three
// moving a turn, with 64 workers and with 256, saved with their parts marked and whole. The WAL
// grows by the pages each save wrote: in pieces, by what moved, whatever the run's size; whole, by
// the run's size (SQLite writes a changed row whole, with every overflow page). The WAL stays
// below SQLite's checkpoint (1,000 pages), which would start it again.
TEST_P(StoreTest, ASaveWritesThePiecesThatMovedNotTheWholeRow) {
  if (postgres()) GTEST_SKIP() << "the PostgreSQL store writes the whole texts";
  auto store = open();
  const auto walBytes = [&] { return std::filesystem::file_size(location() + "-wal"); };
  std::map<std::pair<int, bool>, uintmax_t> perSave;
  for (const int workers : {64, 256}) {
    for (const bool marked : {true, false}) {
      parts::Workers w;
      w.marked = marked;
      for (int i = 0; i < workers; ++i) w.add();
      const std::string id = (marked ? "marked" : "whole0") + std::to_string(100000 + workers);
      int64_t rev = store->save(parts::Save(id, 0, w));
      const auto before = walBytes();
      for (int i = 0; i < 10; ++i) {
        w.turn(3);
        rev = store->save(parts::Save(id, rev, w));
      }
      perSave[{workers, marked}] = (walBytes() - before) / 10;
      EXPECT_EQ(store->load(id).snapshot, Json::parse(jr2rt::Unmarked(w.texts(id).first)));
    }
  }
  for (const int workers : {64, 256}) {
    std::cout << workers << " workers, three moving a turn: a save grew the WAL by "
              << perSave[{workers, true}] << " bytes in pieces, " << perSave[{workers, false}]
              << " whole\n";
  }
  const uintmax_t pieces64 = perSave[{64, true}], pieces256 = perSave[{256, true}];
  const uintmax_t whole64 = perSave[{64, false}], whole256 = perSave[{256, false}];
  EXPECT_LT(pieces256 * 2, pieces64 * 3)
      << "in pieces, a save of 256 workers writes about what one of 64 does";
  EXPECT_GT(whole256, whole64 * 2) << "whole, four times the run";
  EXPECT_LT(pieces256 * 2, whole256) << "in pieces, half the whole row's pages at most";
}

// A part another tool deleted: the run is damaged, named, and the others are read.
TEST_P(StoreTest, AMissingPartDamagesItsRunAlone) {
  if (postgres()) GTEST_SKIP() << "the PostgreSQL store keeps no parts apart";
  auto store = open();
  parts::Workers w;
  for (int i = 0; i < 16; ++i) w.add();  // more than a page: kept in parts
  store->save(parts::Save("broken0parts", 0, w));
  store->save(parts::Save("fine00parts0", 0, w));
  sql("DELETE FROM parts WHERE run = 'broken0parts' AND id = " + std::to_string(w.live[2].id));
  const std::string text = ErrorOf<jr2rt::StoreDamaged>([&] { store->load("broken0"); });
  std::cout << text << "\n";
  EXPECT_TRUE(Contains(text, "run broken0parts in `" + name() +
                                 "` is damaged: a part of its stored text is missing (piece " +
                                 std::to_string(w.live[2].id) + " is missing)"))
      << text;
  EXPECT_EQ(store->load("fine00").snapshot,
            Json::parse(jr2rt::Unmarked(w.texts("fine00parts0").first)));
}

// ---- The marks themselves (core/pieces.h) ---------------------------------------------------

TEST(Pieces, AKeptPartIsMarkedOnlyWhileASaverAsks) {
  uint64_t id = 0;
  std::string plain;
  jr2rt::AppendPiece(plain, id, "{\"a\":1}");
  EXPECT_EQ(plain, "{\"a\":1}");
  EXPECT_EQ(id, 0u) << "no id is given outside MarkPieces";
  std::string marked, again;
  uint64_t other = 0;
  {
    jr2rt::MarkPieces outer;
    {
      jr2rt::MarkPieces inner;  // nests
    }
    jr2rt::AppendPiece(marked, id, "{\"a\":1}");
    jr2rt::AppendPiece(marked, other, "[2]");
    jr2rt::AppendPiece(again, id, "{\"a\":1}");
  }
  EXPECT_NE(id, 0u);
  EXPECT_NE(other, id) << "each part its own id";
  EXPECT_EQ(again, marked.substr(0, again.size())) << "the same id, the same marks";
  EXPECT_EQ(jr2rt::Unmarked(marked), "{\"a\":1}[2]");
  std::string after;
  jr2rt::AppendPiece(after, id, "x");
  EXPECT_EQ(after, "x") << "marking ends with the last MarkPieces";
}

TEST(Pieces, ASkeletonNamesItsPiecesAndIsPutBackWhole) {
  uint64_t a = 0, b = 0;
  std::string marked = "{\"w\":[";
  {
    jr2rt::MarkPieces marking;
    jr2rt::AppendPiece(marked, a, "{\"id\":\"A\"}");
    marked += ',';
    jr2rt::AppendPiece(marked, b, "{\"id\":\"B\"}");
  }
  marked += "]}";
  std::string skeleton;
  std::vector<jr2rt::Piece> pieces;
  jr2rt::SplitPieces(marked, skeleton, pieces);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].id, a);
  EXPECT_EQ(pieces[1].text, "{\"id\":\"B\"}");
  EXPECT_EQ(jr2rt::PieceIds(skeleton), (std::vector<uint64_t>{a, b}));
  EXPECT_LT(skeleton.size(), 20u) << "the texts are taken out";
  std::map<uint64_t, std::string> held = {{a, "{\"id\":\"A\"}"}, {b, "{\"id\":\"B\"}"}};
  const auto find = [&](uint64_t id) -> const std::string* {
    const auto it = held.find(id);
    return it == held.end() ? nullptr : &it->second;
  };
  EXPECT_EQ(jr2rt::Assemble(skeleton, find), "{\"w\":[{\"id\":\"A\"},{\"id\":\"B\"}]}");
  held.erase(b);
  EXPECT_THROW(jr2rt::Assemble(skeleton, find), std::out_of_range);
  // A mark cut short, or without its id: a bug, said, never read as text.
  EXPECT_THROW(jr2rt::SplitPieces(marked.substr(0, 12), skeleton, pieces), std::invalid_argument);
  EXPECT_THROW(jr2rt::Unmarked(std::string("{\x1E"
                                           "1\x1F"
                                           "x")),
               std::invalid_argument);
  EXPECT_THROW(jr2rt::PieceIds(std::string("\x1E\x1D")), std::invalid_argument);
  EXPECT_THROW(jr2rt::PieceIds(std::string("\x1E"
                                           "0\x1D")),
               std::invalid_argument);
}

// Values never hold a mark: JSON text escapes every byte below 0x20, so an item whose text holds
// the marks' bytes is stored as the value it is.
TEST(Pieces, AValueHoldingTheMarksBytesIsNeverAMark) {
  const std::string hostile = std::string("\x1E") + "7" + "\x1F" + "{}" + "\x1D";
  std::string text;
  jr2rt::AppendJson(text, Json{{"id", hostile}});
  EXPECT_FALSE(jr2rt::HasPieces(text)) << text;
  EXPECT_FALSE(jr2rt::HasPieces(Json{{"id", hostile}}.dump()));
  EXPECT_EQ(Json::parse(text)["id"], hostile);
}
