// The SQLite store's connection (docs/runtime.md#the-store): one connection and the statements
// prepared on it, a use of a statement, and a transaction that rolls back unless committed. The
// files of runtime/src/store/sqlite/ talk to SQLite only through these.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "jr2/store.h"

namespace jr2rt::sqlite {

// "jr2C": the SQLite application_id that marks a file as a jr2 run store.
constexpr int32_t kAppId = 0x6A723243;
// How long a command waits for another one's write before it gives up.
constexpr int kBusyTimeoutMs = 10000;

inline std::string Quoted(const std::string& path) { return "`" + path + "`"; }

// Where SQLite keeps a row's payload of `P` bytes in a WITHOUT ROWID table (an index B-tree;
// btree.c's btreeParseCellAdjustSizeForOverflow), on pages of `usable` bytes: in its leaf whole
// when P <= maxLocal; else, with S = minLocal + (P - minLocal) % (usable - 4), S bytes in the leaf
// and the rest in full overflow pages when S <= maxLocal, and otherwise minLocal bytes in the leaf
// and a last overflow page that is partly empty. A feed row of 128 lines (about 9.8 kB) left 2 kB
// of its last page empty on average: a fifth of the feed's pages (docs/performance.md, #33).
class PageFit {
 public:
  // `overhead`: what a row's record adds to its text (its key, its other columns, the header).
  PageFit(int64_t pageSize, size_t overhead)
      : overflow_(static_cast<size_t>(pageSize) - 4),
        maxLocal_(static_cast<size_t>((pageSize - 12) * 64 / 255 - 23)),
        minLocal_(static_cast<size_t>((pageSize - 12) * 32 / 255 - 23)),
        overhead_(overhead) {}
  // Whether a row whose text is `bytes` long fills its pages: in the leaf, or in full overflow
  // pages, with kSlack bytes to spare either way for a record a little larger or smaller than
  // estimated.
  bool operator()(size_t bytes) const {
    const size_t payload = bytes + overhead_;
    if (payload + kSlack <= maxLocal_) return true;
    const size_t spill = (payload - minLocal_) % overflow_;
    return spill >= kSlack && minLocal_ + spill + kSlack <= maxLocal_;
  }

 private:
  static constexpr size_t kSlack = 16;
  size_t overflow_, maxLocal_, minLocal_, overhead_;
};

// A run's input in a SELECT from `runs`: its row's `input` (a store from before the table
// `inputs`), else its row of `inputs` (schema.cpp). A macro, so that a statement stays one literal
// (Db::prepare keys its cache by the literal's address).
#define JR2_SQLITE_RUN_INPUT \
  "coalesce(runs.input, (SELECT i.input FROM inputs i WHERE i.run = runs.id))"

// One SQLite connection and the statements prepared on it, kept: a save after the first
// prepares nothing.
class Db {
 public:
  // Opens `name` (the path, or a `file:` URI for it) with SQLite's `flags`; `path` is what
  // messages name. Throws StoreError when SQLite cannot open it.
  Db(const std::string& path, const std::string& name, int flags);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }

  // Throws what SQLite's result `rc` means: busy past the timeout, a full disk (StoreFull), or
  // another failure, each naming the store.
  [[noreturn]] void fail(int rc) const;

  void exec(const char* sql) {
    ++statements_;
    const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) fail(rc);
  }

  // `sql` is a literal: its address keys the cache (a save's statements cost no string compare).
  sqlite3_stmt* prepare(const char* sql) {
    auto it = cache_.find(sql);
    if (it != cache_.end()) return it->second;
    sqlite3_stmt* st = compile(sql);
    cache_.emplace(sql, st);
    return st;
  }
  // `sql` was built at run time (Store::page's filters): its text keys the cache, never its
  // address, which a later text of another statement can reuse. The texts a store builds are
  // few (one per shape of query), so the cache stays small.
  sqlite3_stmt* prepare(const std::string& sql) {
    auto it = built_.find(sql);
    if (it != built_.end()) return it->second;
    sqlite3_stmt* st = compile(sql.c_str());
    built_.emplace(sql, st);
    return st;
  }

  // The database's page size (PRAGMA page_size), read once.
  int64_t pageSize();
  // Store::statements(): each statement executed counts once, however many rows it gave.
  int64_t statements() const { return statements_; }
  void executed() { ++statements_; }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* compile(const char* sql) {
    sqlite3_stmt* st = nullptr;
    const int rc = sqlite3_prepare_v2(db_, sql, -1, &st, nullptr);
    if (rc != SQLITE_OK) fail(rc);
    return st;
  }
  std::map<const char*, sqlite3_stmt*> cache_;
  std::map<std::string, sqlite3_stmt*> built_;
  int64_t statements_ = 0;
  int64_t pageSize_ = 0;
};

// A use of a prepared statement; it is reset (and its bindings dropped) when the use ends.
class Stmt {
 public:
  // A literal's statement.
  Stmt(Db& db, const char* literal) : db_(db), st_(db.prepare(literal)) {}
  // A statement whose text was built at run time (never pass its c_str() as a literal).
  Stmt(Db& db, const std::string& built) : db_(db), st_(db.prepare(built)) {}
  ~Stmt() {
    sqlite3_reset(st_);
    sqlite3_clear_bindings(st_);
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bind(int i, const std::string& s) {
    sqlite3_bind_text(st_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    return *this;
  }
  // A text that outlives this use of the statement (its step and reset), bound without the copy
  // bind() makes: a save's snapshot, view, input and rows of lines are megabytes for a Pool of
  // 10,000 instant items, each copied (and its pages faulted in) once more by SQLITE_TRANSIENT.
  Stmt& bindKept(int i, const std::string& s) {
    sqlite3_bind_text(st_, i, s.data(), static_cast<int>(s.size()), SQLITE_STATIC);
    return *this;
  }
  Stmt& bindKept(int i, std::string_view s) {
    sqlite3_bind_text(st_, i, s.data(), static_cast<int>(s.size()), SQLITE_STATIC);
    return *this;
  }
  Stmt& bind(int i, int64_t v) {
    sqlite3_bind_int64(st_, i, v);
    return *this;
  }
  // True with a row to read, false when done.
  bool step() {
    if (!stepped_) db_.executed();
    stepped_ = true;
    const int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    db_.fail(rc);
  }
  // For another use of the same statement in a loop.
  void reset() {
    sqlite3_reset(st_);
    sqlite3_clear_bindings(st_);
    stepped_ = false;
  }
  int type(int i) const { return sqlite3_column_type(st_, i); }
  // A NULL reads "": a summary of a damaged row still lists.
  std::string text(int i) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st_, i));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(st_, i))) : std::string();
  }
  int64_t integer(int i) const { return sqlite3_column_int64(st_, i); }

 private:
  Db& db_;
  sqlite3_stmt* st_;
  bool stepped_ = false;
};

// A transaction that rolls back unless committed, so a throw in the middle writes nothing.
class Txn {
 public:
  Txn(Db& db, const char* begin) : db_(db) { db_.exec(begin); }
  ~Txn() {
    if (!done_) sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  void commit() {
    db_.exec("COMMIT");
    done_ = true;
  }

 private:
  Db& db_;
  bool done_ = false;
};

// The connection to the store at `path`, checked to be a jr2 store (or made one, or migrated)
// and in WAL mode (schema.cpp).
std::unique_ptr<Db> OpenDb(const std::string& path, StoreMode mode);
// A second connection to the store `path` this process has open already (OpenDb checked it and
// put it in WAL mode): opened by SQLite alone. The file is never opened and closed by hand while
// a connection of this process holds its locks: closing any descriptor of it drops them all
// (POSIX record locks are the process's), and another command could then take the store for
// its own and checkpoint the WAL away under this one.
std::unique_ptr<Db> OpenDbAgain(const std::string& path);

}  // namespace jr2rt::sqlite
