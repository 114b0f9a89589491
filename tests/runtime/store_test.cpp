// The SQLite run store: revisions keep two commands on one run from losing each other's steps,
// a store written before revisions opens, and a file that is not a store is refused whole.
#include "jr2/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace {

using jr2rt::Json;

std::string FreshPath(const char* name) {
  const std::string path = testing::TempDir() + name;
  std::remove(path.c_str());
  return path;
}

jr2rt::StoredRun Stored(const std::string& status, int64_t revision) {
  return {"0123456789ab", "tickets", status, 1, Json{{"status", status}}, revision};
}

TEST(Store, ASaveFromAStaleRevisionIsAConflictAndWritesNothing) {
  auto store = jr2rt::OpenSqliteStore(FreshPath("revisions.db"));
  EXPECT_EQ(store->save(Stored("waiting", 0)), 1) << "a new run starts at revision 1";
  const jr2rt::StoredRun loaded = store->load("0123");
  EXPECT_EQ(loaded.revision, 1);
  // Two commands loaded revision 1; the first saves, the second is refused.
  EXPECT_EQ(store->save(Stored("waiting", 1)), 2);
  try {
    store->save(Stored("cancelled", 1));
    FAIL() << "a save from a stale revision must be refused";
  } catch (const jr2rt::StoreConflict& e) {
    EXPECT_NE(std::string(e.what()).find("was changed by another command"), std::string::npos);
  }
  EXPECT_EQ(store->load("0123").status, "waiting") << "the refused save wrote nothing";
  EXPECT_EQ(store->load("0123").revision, 2);
  EXPECT_EQ(store->revision("0123456789ab"), 2);
  EXPECT_EQ(store->revision("ffffffffffff"), 0) << "no such run";
  EXPECT_EQ(store->save(Stored("done", 2)), 3);
  EXPECT_EQ(store->list(true).front().revision, 3);
}

TEST(Store, AStoreWrittenBeforeRevisionsOpensAtRevisionOne) {
  const std::string path = FreshPath("old.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "CREATE TABLE runs (id TEXT PRIMARY KEY, workflow TEXT NOT NULL, status "
                         "TEXT NOT NULL, updated INTEGER NOT NULL, snapshot TEXT NOT NULL);"
                         "INSERT INTO runs VALUES ('abcdabcdabcd', 'tickets', 'waiting', 1, '{}');",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto store = jr2rt::OpenSqliteStore(path);
  const jr2rt::StoredRun old = store->load("abcd");
  EXPECT_EQ(old.revision, 1);
  EXPECT_EQ(old.status, "waiting");
  jr2rt::StoredRun next = old;
  next.status = "done";
  EXPECT_EQ(store->save(next), 2);
}

TEST(Store, AFileThatIsNotAStoreIsRefusedAndLeftAsItWas) {
  const std::string path = FreshPath("not-a-store.db");
  std::ofstream(path) << "not a database";
  EXPECT_THROW(jr2rt::OpenSqliteStore(path), jr2rt::StoreError);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "not a database");
}

}  // namespace
