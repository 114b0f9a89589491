// The store conformance suite's fixture (store_test.cpp, pg_store_test.cpp): each test runs on a
// fresh store of one backend — a SQLite file in a folder of its own, or a PostgreSQL database of
// its own (`CREATE DATABASE jr2_t_…` on the server whose libpq connection string is in the file
// $JR2_TEST_PG names, dropped at the end). Under ctest the fixture `pg` starts that server
// (tests/pg/server.sh) and sets JR2_TEST_PG, so the PostgreSQL cases always run there; run by hand
// without it, they are skipped, saying how to start one.
#pragma once

#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "jr2/postgres_store.h"
#include "jr2/store.h"

namespace jr2test {

namespace fs = std::filesystem;
using jr2rt::Json;

// A fresh, empty folder per test: tests may run in parallel, and "no file appeared" is checked
// by listing it.
inline std::string FreshDir(const std::string& name) {
  const fs::path dir =
      fs::path(testing::TempDir()) / ("jr2-store-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string() + "/";
}

inline jr2rt::StoredRun Stored(const std::string& status, int64_t revision,
                               const std::string& id = "0123456789ab", int64_t updatedMs = 1,
                               const std::string& workflow = "tickets") {
  jr2rt::StoredRun r;
  r.id = id;
  r.workflow = workflow;
  r.status = status;
  r.updatedMs = updatedMs;
  r.snapshot = Json{{"id", id}, {"workflow", workflow}, {"status", status}};
  r.revision = revision;
  return r;
}

// Journal entries as a save takes them (StoredRun::journalText): each one's JSON text.
inline std::vector<std::string> Entries(std::initializer_list<jr2rt::Json> entries) {
  std::vector<std::string> out;
  for (const jr2rt::Json& e : entries) out.push_back(e.dump());
  return out;
}

// The message of what `f` throws, checked to be one line; "" when it throws nothing.
template <typename Error, typename F>
std::string ErrorOf(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    const std::string text = e.what();
    EXPECT_EQ(text.find('\n'), std::string::npos) << "one line: " << text;
    return text;
  }
  ADD_FAILURE() << "nothing was thrown";
  return "";
}

inline bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// ---- The PostgreSQL server of the tests ------------------------------------------------------

constexpr const char* kNoServer =
    "no PostgreSQL server for the PostgreSQL cases: start one with `tests/pg/server.sh start DIR` "
    "and set JR2_TEST_PG=DIR/url (ctest does both, fixture `pg`)";

// The server's connection string (from the file $JR2_TEST_PG names); "" when the variable is not
// set. A variable naming a file that cannot be read fails the test.
inline std::string PgServer() {
  const char* file = std::getenv("JR2_TEST_PG");
  if (file == nullptr || *file == '\0') return "";
  std::ifstream in(file);
  std::string url;
  std::getline(in, url);
  EXPECT_FALSE(url.empty()) << "JR2_TEST_PG=" << file << " names no readable connection string";
  return url;
}

// Runs `sql` on `conninfo` with a plain libpq connection: another tool, the test's admin. Gives
// the first column of the first row, "" when none; fails the test on an error.
inline std::string PgSql(const std::string& conninfo, const std::string& sql) {
  PGconn* c = PQconnectdb(conninfo.c_str());
  std::string out;
  if (PQstatus(c) != CONNECTION_OK) {
    ADD_FAILURE() << "cannot connect to " << conninfo << ": " << PQerrorMessage(c);
  } else {
    PGresult* r = PQexec(c, sql.c_str());
    const ExecStatusType s = PQresultStatus(r);
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
      ADD_FAILURE() << sql << ": " << PQresultErrorMessage(r);
    } else if (s == PGRES_TUPLES_OK && PQntuples(r) > 0) {
      out = PQgetvalue(r, 0, 0);
    }
    PQclear(r);
  }
  PQfinish(c);
  return out;
}

// A database of its own on the test server, dropped when this goes (with any connection a test
// left open).
class PgDatabase {
 public:
  explicit PgDatabase(std::string server) : server_(std::move(server)) {
    std::random_device rd;
    name_ = "jr2_t_" + std::to_string(getpid()) + "_" + std::to_string(rd() % 1000000000);
    PgSql(server_, "CREATE DATABASE " + name_);
  }
  ~PgDatabase() { PgSql(server_, "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)"); }
  PgDatabase(const PgDatabase&) = delete;
  PgDatabase& operator=(const PgDatabase&) = delete;
  const std::string& name() const { return name_; }
  // The server's connection string for this database (a later keyword wins in libpq).
  std::string location() const { return server_ + " dbname=" + name_; }

 private:
  std::string server_;
  std::string name_;
};

// ---- The fixture: one backend per instantiation ----------------------------------------------

enum class Backend { kSqlite, kPostgres };

// Runs `sql` on the SQLite file `path` with a plain connection: another tool, an older jr2.
inline void Sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  const std::string why = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << why;
}

// The first value `query` gives on the SQLite file `path`, as text ("" when none), read by a
// connection of another tool.
inline std::string SqliteValue(const std::string& path, const std::string& query) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(db, query.c_str(), -1, &st, nullptr) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != nullptr) {
    out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

inline std::string BackendName(const testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::kSqlite ? "Sqlite" : "Postgres";
}
// How gtest (and ctest's test names) print a backend.
inline void PrintTo(Backend backend, std::ostream* os) {
  *os << (backend == Backend::kSqlite ? "sqlite" : "postgres");
}

class StoreTest : public testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::kPostgres) {
      const std::string server = PgServer();
      if (server.empty()) GTEST_SKIP() << kNoServer;
      db_ = std::make_unique<PgDatabase>(server);
      location_ = db_->location();
      name_ = jr2rt::PostgresLocationName(location_);
    } else {
      const auto* info = testing::UnitTest::GetInstance()->current_test_info();
      std::string test = info->name();
      std::replace(test.begin(), test.end(), '/', '-');
      dir_ = FreshDir(test);
      location_ = dir_ + "jr2.db";
      name_ = location_;
    }
  }

  bool postgres() const { return GetParam() == Backend::kPostgres; }
  // The store, opened by location as a runner opens it (OpenStore picks the backend).
  std::unique_ptr<jr2rt::Store> open(jr2rt::StoreMode mode = jr2rt::StoreMode::kReadWrite) {
    return jr2rt::OpenStore(location_, mode);
  }
  const std::string& location() const { return location_; }
  // What messages name the store.
  const std::string& name() const { return name_; }
  // Runs `sql` (the same text in both: plain SQL) with a connection of another tool.
  void sql(const std::string& statements) {
    if (postgres()) {
      PgSql(location_, statements);
      return;
    }
    Sql(location_, statements);
  }
  // The first value `query` gives, as text ("" when none), read by a connection of another tool.
  std::string value(const std::string& query) {
    if (postgres()) return PgSql(location_, query);
    return SqliteValue(location_, query);
  }
  // Whether the location holds nothing at all: no file in the folder, no table in the database.
  bool nothingThere() {
    if (postgres()) {
      return PgSql(location_,
                   "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                   " WHERE n.nspname = 'public'") == "0";
    }
    return fs::is_empty(dir_);
  }

 private:
  std::unique_ptr<PgDatabase> db_;
  std::string dir_;
  std::string location_;
  std::string name_;
};

}  // namespace jr2test
