// The SQLite store's connection (docs/runtime.md#the-store): opened with a busy timeout (a
// command waits for another one's write), a store it makes the user's alone (0600), and SQLite's
// failures said as the store's errors.
#include "store/sqlite/db.h"

#include <fcntl.h>
#include <unistd.h>

namespace jr2rt::sqlite {

Db::Db(const std::string& path, const std::string& name, int flags) : path_(path) {
  // A store it makes is the user's alone, as its token and lock files are (0600): SQLite
  // makes a file with the umask's mode, and gives its -wal and -shm files the store's.
  if ((flags & SQLITE_OPEN_CREATE) != 0) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) ::close(fd);
  }
  if (sqlite3_open_v2(name.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError("cannot open the run store " + Quoted(path) + ": " + why);
  }
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
}

Db::~Db() {
  for (auto& [sql, st] : cache_) sqlite3_finalize(st);
  for (auto& [sql, st] : built_) sqlite3_finalize(st);
  sqlite3_close(db_);
}

int64_t Db::pageSize() {
  if (pageSize_ == 0) {
    sqlite3_stmt* st = prepare("PRAGMA page_size");
    pageSize_ = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 4096;
    sqlite3_reset(st);
  }
  return pageSize_;
}

void Db::fail(int rc) const {
  if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
    throw StoreError("the run store " + Quoted(path_) + " stayed busy for " +
                     std::to_string(kBusyTimeoutMs / 1000) +
                     " s (another command is using it); try again");
  }
  if ((rc & 0xff) == SQLITE_FULL) {
    throw StoreFull("the disk of the run store " + Quoted(path_) +
                    " is full: nothing more could be stored; make space");
  }
  throw StoreError("the run store " + Quoted(path_) + " cannot be used: " + sqlite3_errmsg(db_));
}

}  // namespace jr2rt::sqlite
