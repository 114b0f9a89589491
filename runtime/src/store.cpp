#include "jr2/store.h"

#include <sqlite3.h>

namespace jr2rt {
namespace {

class SqliteStore final : public Store {
 public:
  explicit SqliteStore(const std::string& path) : path_(path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
        SQLITE_OK) {
      const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      db_ = nullptr;
      throw StoreError("cannot open the run store `" + path + "`: " + why);
    }
    sqlite3_busy_timeout(db_, 5000);
    try {
      exec(
          "CREATE TABLE IF NOT EXISTS runs ("
          " id TEXT PRIMARY KEY, workflow TEXT NOT NULL, status TEXT NOT NULL,"
          " updated INTEGER NOT NULL, snapshot TEXT NOT NULL, rev INTEGER NOT NULL DEFAULT 1)");
      // A store written before revisions: each run starts at revision 1.
      if (!hasColumn("rev")) exec("ALTER TABLE runs ADD COLUMN rev INTEGER NOT NULL DEFAULT 1");
    } catch (...) {
      // A file that is not a database: the destructor does not run for a throwing constructor.
      sqlite3_close(db_);
      db_ = nullptr;
      throw;
    }
  }
  ~SqliteStore() override { sqlite3_close(db_); }

  int64_t save(const StoredRun& run, const std::vector<FeedLine>&) override {
    exec("BEGIN IMMEDIATE");
    const int64_t stored = revision(run.id);
    if (run.revision != 0 && stored != run.revision) {
      exec("ROLLBACK");
      throw StoreConflict("run " + run.id + " was changed by another command (revision " +
                          std::to_string(stored) + ", this command had " +
                          std::to_string(run.revision) + ")");
    }
    const int64_t next = stored + 1;
    Stmt s(*this,
           "INSERT OR REPLACE INTO runs (id, workflow, status, updated, snapshot, rev) "
           "VALUES (?,?,?,?,?,?)");
    sqlite3_bind_text(s.st, 1, run.id.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s.st, 2, run.workflow.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s.st, 3, run.status.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s.st, 4, run.updatedMs);
    const std::string snap = run.snapshot.dump();
    sqlite3_bind_text(s.st, 5, snap.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s.st, 6, next);
    if (sqlite3_step(s.st) != SQLITE_DONE) {
      const std::string why = sqlite3_errmsg(db_);
      exec("ROLLBACK");
      throw StoreError("cannot save run " + run.id + " in `" + path_ + "`: " + why);
    }
    exec("COMMIT");
    return next;
  }

  StoredRun load(const std::string& prefix) override {
    if (prefix.size() < 4)
      throw StoreError("a run id needs at least 4 characters; `" + prefix + "` is too short");
    Stmt s(
        *this,
        "SELECT id, workflow, status, updated, snapshot, rev FROM runs WHERE substr(id, 1, ?) = ? "
        "LIMIT 2");
    sqlite3_bind_int(s.st, 1, static_cast<int>(prefix.size()));
    sqlite3_bind_text(s.st, 2, prefix.c_str(), -1, SQLITE_TRANSIENT);
    std::vector<StoredRun> found;
    while (sqlite3_step(s.st) == SQLITE_ROW) found.push_back(row(s.st));
    if (found.empty())
      throw StoreError("no run `" + prefix + "` in `" + path_ + "`; `runs --all` lists them");
    if (found.size() > 1)
      throw StoreError("`" + prefix + "` names several runs; give more of the id");
    return found.front();
  }

  int64_t revision(const std::string& id) override {
    Stmt q(*this, "SELECT rev FROM runs WHERE id = ?");
    sqlite3_bind_text(q.st, 1, id.c_str(), -1, SQLITE_TRANSIENT);
    return sqlite3_step(q.st) == SQLITE_ROW ? sqlite3_column_int64(q.st, 0) : 0;
  }

  std::string resolve(const std::string& prefix) override { return load(prefix).id; }
  std::vector<FeedLine> feed(const std::string&, int64_t) override { return {}; }
  int64_t prune(int64_t, const std::string&) override { return 0; }
  std::unique_ptr<RunLock> lock(const std::string&, const std::function<void()>&) override {
    throw StoreError("not yet");
  }
  std::vector<RunSummary> list(bool includeEnded) override {
    Stmt s(
        *this,
        includeEnded
            ? "SELECT id, workflow, status, updated, snapshot, rev FROM runs ORDER BY updated, id"
            : "SELECT id, workflow, status, updated, snapshot, rev FROM runs WHERE status = "
              "'waiting' "
              "ORDER BY updated, id");
    std::vector<RunSummary> out;
    while (sqlite3_step(s.st) == SQLITE_ROW) {
      const StoredRun r = row(s.st);
      out.push_back({r.id, r.workflow, r.status, r.updatedMs, r.revision});
    }
    return out;
  }

 private:
  struct Stmt {
    Stmt(SqliteStore& store, const char* sql) {
      if (sqlite3_prepare_v2(store.db_, sql, -1, &st, nullptr) != SQLITE_OK) {
        throw StoreError("the run store `" + store.path_ +
                         "` cannot be read: " + sqlite3_errmsg(store.db_));
      }
    }
    ~Stmt() { sqlite3_finalize(st); }
    sqlite3_stmt* st = nullptr;
  };

  static StoredRun row(sqlite3_stmt* st) {
    StoredRun r;
    r.id = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    r.workflow = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
    r.status = reinterpret_cast<const char*>(sqlite3_column_text(st, 2));
    r.updatedMs = sqlite3_column_int64(st, 3);
    r.snapshot = Json::parse(reinterpret_cast<const char*>(sqlite3_column_text(st, 4)));
    r.revision = sqlite3_column_int64(st, 5);
    return r;
  }

  bool hasColumn(const std::string& name) {
    Stmt s(*this, "PRAGMA table_info(runs)");
    while (sqlite3_step(s.st) == SQLITE_ROW) {
      if (name == reinterpret_cast<const char*>(sqlite3_column_text(s.st, 1))) return true;
    }
    return false;
  }

  void exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      const std::string why = err ? err : "unknown error";
      sqlite3_free(err);
      throw StoreError("the run store `" + path_ + "` cannot be used: " + why);
    }
  }

  std::string path_;
  sqlite3* db_ = nullptr;
};

}  // namespace

std::unique_ptr<Store> OpenSqliteStore(const std::string& path, StoreMode) {
  return std::make_unique<SqliteStore>(path);
}

}  // namespace jr2rt
