// What only the PostgreSQL store has (docs/scaling.md, #32), against the real server of the
// ctest fixture `pg` (store_fixture.h): the location told apart from a path and named without its
// password, the schema's version and the refusal of a newer one or of another application's
// tables (the database left unchanged), two store objects on one database (two hosts) that
// conflict rather than lose a step, the interim advisory drive lock between them, a full disk as
// StoreFull. Each test has a database of its own.
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "jr2/postgres_store.h"
#include "jr2/store.h"
#include "store/postgres/libpq.h"
#include "store_fixture.h"

namespace {

using jr2rt::Json;
using jr2test::Contains;
using jr2test::ErrorOf;
using jr2test::PgDatabase;
using jr2test::PgServer;
using jr2test::PgSql;
using jr2test::Stored;

class PgStore : public testing::Test {
 protected:
  void SetUp() override {
    server_ = PgServer();
    if (server_.empty()) GTEST_SKIP() << jr2test::kNoServer;
    db_ = std::make_unique<PgDatabase>(server_);
  }
  std::string location() const { return db_->location(); }
  std::string sql(const std::string& statements) { return PgSql(location(), statements); }
  // A keyword of the server's connection string ("host", "port", "user").
  std::string serverKey(const std::string& key) const {
    const std::string mark = key + "=";
    size_t at = 0;
    while ((at = server_.find(mark, at)) != std::string::npos) {
      if (at == 0 || server_[at - 1] == ' ') break;
      ++at;
    }
    if (at == std::string::npos) return "";
    const size_t start = at + mark.size();
    return server_.substr(start, server_.find(' ', start) - start);
  }
  std::string tables() {
    return sql(
        "SELECT coalesce(string_agg(relname, ' ' ORDER BY relname), '') FROM pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'"
        " AND c.relkind = 'r'");
  }

  std::string server_;
  std::unique_ptr<PgDatabase> db_;
};

// ---- The location ----------------------------------------------------------------------------

TEST(PgLocation, AUrlOrAKeywordStringIsPostgresAndEveryPathIsSqlite) {
  for (const char* yes :
       {"postgresql://db.example/jr2", "postgres://u@h/d", "postgresql:///jr2?host=/run/pg",
        "host=/run/postgresql dbname=jr2", "dbname=jr2", "user=me", "port=5433", "service=jr2",
        "hostaddr=127.0.0.1 dbname=jr2", "password=x host=h", "host = h dbname=d"}) {
    EXPECT_TRUE(jr2rt::IsPostgresLocation(yes)) << yes;
  }
  for (const char* no : {"jr2.db", "./jr2.db", "/var/lib/jr2/jr2.db", "./host=x", "/tmp/dbname=x",
                         "hosts=x", "hostile.db", "user.db", "dbname", "postgresql:/x",
                         "Postgresql://x", " host=x", "postgresql.db", "", "sqlite://x"}) {
    EXPECT_FALSE(jr2rt::IsPostgresLocation(no)) << no;
  }
}

// libpq is loaded when a PostgreSQL store is opened, not linked (#33): without it, or with a
// library that is not it, the store says what to install; the real one gives every function.
TEST(PgLibpq, WithoutLibpqTheStoreSaysWhatToInstall) {
  try {
    jr2rt::pg::LoadLibpq("libjr2-no-such-libpq.so.5");
    FAIL() << "a library that is not there was loaded";
  } catch (const jr2rt::StoreError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("needs libpq (libjr2-no-such-libpq.so.5)"), std::string::npos) << what;
    EXPECT_NE(what.find("apt-get install libpq5"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  try {
    jr2rt::pg::LoadLibpq("libc.so.6");
    FAIL() << "libc was taken for libpq";
  } catch (const jr2rt::StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("it has no `PQbackendPID`"), std::string::npos)
        << e.what();
  }
  const jr2rt::pg::Libpq pq = jr2rt::pg::LoadLibpq("libpq.so.5");
  EXPECT_EQ(pq.connectdbParams, &PQconnectdbParams);  // the very library the test links
  EXPECT_NE(pq.enterPipelineMode, nullptr);
  EXPECT_EQ(&jr2rt::pg::Pq(), &jr2rt::pg::Pq());  // loaded once
}

TEST(PgLocation, AStoreIsNamedWithoutItsPassword) {
  EXPECT_EQ(jr2rt::PostgresLocationName(
                "postgresql://me:s3cr3t@db.example:5432/jr2?sslmode=require&password=x2&port=1"),
            "postgresql://me@db.example:5432/jr2?sslmode=require&port=1");
  EXPECT_EQ(jr2rt::PostgresLocationName("postgres://me@h/d"), "postgres://me@h/d");
  EXPECT_EQ(jr2rt::PostgresLocationName("postgresql://:pw@h/d"), "postgresql://@h/d");
  EXPECT_EQ(jr2rt::PostgresLocationName("postgresql:///d?password=pw"), "postgresql:///d");
  EXPECT_EQ(jr2rt::PostgresLocationName("host=h password='a b\\' c' dbname=d user=u"),
            "host=h dbname=d user=u");
  EXPECT_EQ(jr2rt::PostgresLocationName("host=h sslpassword=k dbname=d"), "host=h dbname=d");
  EXPECT_EQ(jr2rt::PostgresLocationName("host=h password='unclosed"),
            "a PostgreSQL connection string libpq cannot read");
}

TEST_F(PgStore, APasswordIsNeverPrinted) {
  const std::string host = serverKey("host"), port = serverKey("port"), user = serverKey("user");
  const std::vector<std::string> locations = {
      // A database that does not exist, with a password libpq sends (the server trusts).
      "postgresql://" + user + ":s3cr3t-pw@/jr2_absent?host=" + host + "&port=" + port,
      "host=" + host + " port=" + port + " user=" + user + " password=s3cr3t-pw dbname=jr2_absent",
      "postgresql://" + user + "@/jr2_absent?host=" + host + "&port=" + port +
          "&password=s3cr3t-pw",
      // Nothing listens there.
      "host=" + host + " port=1 password='s3cr3t-pw' dbname=x",
      // libpq cannot read it, and its message quotes the token.
      "postgresql://" + user + ":s3cr3t-pw%zz@/x?host=" + host,
  };
  for (const std::string& location : locations) {
    const std::string text = ErrorOf<jr2rt::StoreError>([&] { jr2rt::OpenStore(location); });
    std::cout << text << "\n";
    EXPECT_FALSE(Contains(text, "s3cr3t")) << text;
    EXPECT_TRUE(Contains(text, "cannot reach the run store `")) << text;
  }
}

TEST_F(PgStore, AKeywordStringAndAUrlOpenTheSameStore) {
  jr2rt::OpenStore(location())->save(Stored("waiting", 0));
  const std::string url = "postgresql://" + serverKey("user") + "@/" + db_->name() +
                          "?host=" + serverKey("host") + "&port=" + serverKey("port");
  auto byUrl = jr2rt::OpenStore(url, jr2rt::StoreMode::kReadOnly);
  EXPECT_EQ(byUrl->load("0123").status, "waiting");
  EXPECT_EQ(ErrorOf<jr2rt::StoreError>([&] { byUrl->load("ffff"); }),
            "no run `ffff` in `" + url + "`; `runs --all` lists them");
  // The keyword string: the same, by the same name.
  auto byKeywords = jr2rt::OpenPostgresStore(location(), jr2rt::StoreMode::kReadOnly);
  EXPECT_EQ(byKeywords->list(false).size(), 1u);
  // A schema named by the location's search_path holds a store of its own.
  sql("CREATE SCHEMA other");
  const std::string other = location() + " options='-csearch_path=other'";
  EXPECT_THROW(jr2rt::OpenStore(other, jr2rt::StoreMode::kReadOnly), jr2rt::StoreMissing);
  jr2rt::OpenStore(other)->save(Stored("done", 0, "0000aaaa0000"));
  EXPECT_EQ(jr2rt::OpenStore(other)->list(true).size(), 1u);
  EXPECT_EQ(byKeywords->list(true).size(), 1u) << "public's runs are its own";
  EXPECT_EQ(sql("SELECT count(*) FROM other.runs"), "1");
  const std::string none = ErrorOf<jr2rt::StoreError>(
      [&] { jr2rt::OpenStore(location() + " options='-csearch_path=nowhere'"); });
  EXPECT_TRUE(Contains(none, "has no schema to make its tables in")) << none;
}

// ---- The schema ------------------------------------------------------------------------------

TEST_F(PgStore, TheSchemaHasAVersionAndANewerOneIsRefusedUnchanged) {
  jr2rt::OpenStore(location())->save(Stored("waiting", 0));
  EXPECT_EQ(sql("SELECT value FROM jr2_meta WHERE key = 'schema_version'"), "4");
  sql("UPDATE jr2_meta SET value = '5' WHERE key = 'schema_version'");
  const std::string before = tables();
  for (const auto mode : {jr2rt::StoreMode::kReadWrite, jr2rt::StoreMode::kReadOnly}) {
    const std::string text =
        ErrorOf<jr2rt::StoreError>([&] { jr2rt::OpenStore(location(), mode); });
    std::cout << text << "\n";
    EXPECT_EQ(text, "the run store `" + jr2rt::PostgresLocationName(location()) +
                        "` has schema version 5, newer than this program knows (4): a newer jr2 "
                        "wrote it; use that one, or give another database");
  }
  EXPECT_EQ(tables(), before);
  EXPECT_EQ(sql("SELECT value FROM jr2_meta WHERE key = 'schema_version'"), "5");
  EXPECT_EQ(sql("SELECT count(*) FROM runs"), "1");
}

TEST_F(PgStore, AnotherApplicationsTablesAreRefusedAndLeftUnchanged) {
  sql("CREATE TABLE runs (id int PRIMARY KEY, note text); INSERT INTO runs VALUES (1, 'keep me');"
      "CREATE TABLE feed (body text); CREATE TABLE invoices (n int);");
  const std::string before = tables();
  ASSERT_EQ(before, "feed invoices runs");
  for (const auto mode : {jr2rt::StoreMode::kReadWrite, jr2rt::StoreMode::kReadOnly}) {
    const std::string text =
        ErrorOf<jr2rt::StoreError>([&] { jr2rt::OpenStore(location(), mode); });
    std::cout << text << "\n";
    EXPECT_EQ(text, "`" + jr2rt::PostgresLocationName(location()) +
                        "` is not a jr2 run store (schema `public` holds `feed`, `runs` of another "
                        "application, and no jr2_meta); give another database or schema with "
                        "--store or JR2_STORE");
    EXPECT_EQ(tables(), before) << "nothing made";
    EXPECT_EQ(sql("SELECT note FROM runs WHERE id = 1"), "keep me");
  }
  // A jr2_meta that jr2 did not write is not ours either.
  sql("DROP TABLE runs, feed; CREATE TABLE jr2_meta (key text, value text);");
  EXPECT_TRUE(Contains(ErrorOf<jr2rt::StoreError>([&] { jr2rt::OpenStore(location()); }),
                       "its jr2_meta in schema `public` has no schema_version jr2 wrote"));
  EXPECT_EQ(tables(), "invoices jr2_meta");
  // Tables of other names beside ours are not in the way.
  sql("DROP TABLE jr2_meta");
  jr2rt::OpenStore(location())->save(Stored("waiting", 0));
  EXPECT_EQ(sql("SELECT count(*) FROM invoices"), "0");
}

TEST_F(PgStore, HostsOpeningAnEmptyDatabaseAtOnceMakeTheSchemaOnce) {
  std::atomic<int> opened{0};
  std::vector<std::thread> hosts;
  hosts.reserve(4);
  for (int i = 0; i < 4; ++i) {
    hosts.emplace_back([&] {
      jr2rt::OpenStore(location());
      ++opened;
    });
  }
  for (auto& t : hosts) t.join();
  EXPECT_EQ(opened, 4);
  EXPECT_EQ(sql("SELECT count(*) FROM jr2_meta"), "1");
}

// ---- Two hosts on one database ---------------------------------------------------------------

TEST_F(PgStore, TwoStoresOnOneDatabaseConflictRatherThanLoseAStep) {
  auto a = jr2rt::OpenStore(location());
  auto b = jr2rt::OpenStore(location());
  a->save(Stored("waiting", 0));
  ASSERT_EQ(b->load("0123").revision, 1);
  EXPECT_EQ(a->save(Stored("waiting", 1), {{0, 1, "a's step"}}), 2);
  EXPECT_THROW(b->save(Stored("done", 1), {{0, 2, "b's step"}}), jr2rt::StoreConflict);
  EXPECT_EQ(b->feed("0123456789ab", 0).size(), 1u);
  // Both at once, many times: each save from a revision either wins or is refused, never both.
  std::atomic<int> saved{0}, refused{0};
  auto host = [&](jr2rt::Store& store) {
    for (int i = 0; i < 40; ++i) {
      const int64_t rev = store.revision("0123456789ab");
      try {
        store.save(Stored("waiting", rev), {{0, i, "step"}});
        ++saved;
      } catch (const jr2rt::StoreConflict&) {
        ++refused;
      }
    }
  };
  std::thread ta([&] { host(*a); });
  std::thread tb([&] { host(*b); });
  ta.join();
  tb.join();
  std::cout << "two hosts, 80 saves: " << saved << " saved, " << refused << " refused\n";
  EXPECT_EQ(saved + refused, 80);
  EXPECT_EQ(a->revision("0123456789ab"), 2 + saved);
  EXPECT_EQ(static_cast<int>(a->feed("0123456789ab", 0).size()), 1 + saved)
      << "a line for each save that won, none for one refused";
}

TEST_F(PgStore, AnAdvisoryLockOfOneStoreHoldsAnotherOff) {
  auto a = jr2rt::OpenStore(location());
  auto b = jr2rt::OpenStore(location());
  auto held = a->lock("0123456789ab", {});
  std::string holder;
  EXPECT_THROW(b->lock("0123456789ab",
                       [&](const std::string& who) {
                         holder = who;
                         throw jr2rt::StoreError("gave up");
                       }),
               jr2rt::StoreError);
  EXPECT_EQ(holder, "pid " + std::to_string(::getpid())) << "named by its connection";
  auto other = b->lock("ffff00000000", {});  // another run's is free
  held->release();
  auto mine = b->lock("0123456789ab", [](const std::string&) { FAIL() << "no wait"; });
  EXPECT_FALSE(held->tryTake());
  mine.reset();
  EXPECT_TRUE(held->tryTake());
  // A holder whose session ends (a killed host) holds nothing: the server drops its locks.
  sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database()"
      " AND pid <> pg_backend_pid() AND application_name LIKE 'jr2 (pid %'"
      " AND pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory')");
  auto c = jr2rt::OpenStore(location());
  auto after = c->lock("0123456789ab", [](const std::string&) { FAIL() << "no wait"; });
  // The store whose connection was cut knows it lost its locks, and says so.
  const std::string lost = ErrorOf<jr2rt::StoreError>([&] { a->list(true); });
  EXPECT_TRUE(Contains(lost, "lost the connection to the run store")) << lost;
}

// ---- Errors ----------------------------------------------------------------------------------

TEST_F(PgStore, AFullDiskIsStoreFullAndWritesNothing) {
  auto store = jr2rt::OpenStore(location());
  store->save(Stored("waiting", 0));
  // The server's own "disk full" (SQLSTATE 53100), raised where a real one would be.
  sql("CREATE FUNCTION full_disk() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
      " RAISE EXCEPTION USING ERRCODE = '53100', MESSAGE = 'could not extend file'; END $$;"
      "CREATE TRIGGER full_disk BEFORE INSERT ON feed FOR EACH ROW EXECUTE FUNCTION full_disk();");
  const std::string text = ErrorOf<jr2rt::StoreFull>([&] {
    store->save(Stored("done", 1), {{0, 1, "never stored"}});
  });
  EXPECT_EQ(text, "the disk of the run store `" + jr2rt::PostgresLocationName(location()) +
                      "` is full: nothing more could be stored; make space");
  EXPECT_EQ(store->revision("0123456789ab"), 1) << "the row's update went with the feed's";
  sql("DROP TRIGGER full_disk ON feed");
  EXPECT_EQ(store->save(Stored("done", 1), {{0, 1, "stored"}}), 2) << "the same store goes on";
}

}  // namespace
