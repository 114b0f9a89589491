// `<runner> store backup FILE` (docs/operations.md#backups): SQLite's online backup of the store,
// all pages in one step (one read transaction: a copy of one instant, a writer never blocked),
// written beside the target, checked (integrity_check) and linked to its name once whole.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "jr2/sqlite_store.h"
#include "store/sqlite/db.h"

namespace jr2rt {

using sqlite::Db;
using sqlite::Quoted;
using sqlite::Stmt;

BackupInfo BackupSqliteStore(const std::string& from, const std::string& to) {
  struct stat st {};
  if (lstat(to.c_str(), &st) == 0) {
    throw StoreError(Quoted(to) +
                     " exists; a backup is written to a new file: name another, or remove it");
  }
  auto source = sqlite::OpenDb(from, StoreMode::kReadOnly);
  // Written beside `to` and renamed once whole: a backup cut short leaves no file by its name.
  const std::string part = to + ".part-" + std::to_string(getpid());
  const int fd = ::open(part.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    throw StoreError("cannot write the backup " + Quoted(to) + ": " + std::strerror(errno));
  }
  ::close(fd);
  BackupInfo info;
  try {
    Db dest(part, part, SQLITE_OPEN_READWRITE);
    sqlite3_backup* b = sqlite3_backup_init(dest.handle(), "main", source->handle(), "main");
    if (b == nullptr) dest.fail(sqlite3_errcode(dest.handle()));
    // All pages in one step: one read transaction, so the copy is of one instant. A writer
    // (WAL) is not blocked; a busy source is waited for as any read is.
    int rc = SQLITE_OK;
    for (int tries = 0; tries < 500; ++tries) {
      rc = sqlite3_backup_step(b, -1);
      if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED) break;
      sqlite3_sleep(20);
    }
    sqlite3_backup_finish(b);
    if (rc != SQLITE_DONE) dest.fail(rc);
    {
      Stmt check(dest, "PRAGMA integrity_check");
      if (!check.step() || check.text(0) != "ok")
        throw StoreError("the backup " + Quoted(to) + " did not pass SQLite's integrity check");
    }
    Stmt runs(dest, "SELECT count(*) FROM runs");
    if (runs.step()) info.runs = runs.integer(0);
  } catch (...) {
    ::unlink(part.c_str());
    throw;
  }
  const int synced = ::open(part.c_str(), O_RDONLY | O_CLOEXEC);
  if (synced >= 0) {
    ::fsync(synced);
    ::close(synced);
  }
  if (::link(part.c_str(), to.c_str()) != 0) {  // never over a file made meanwhile
    const int why = errno;
    ::unlink(part.c_str());
    throw StoreError("cannot write the backup " + Quoted(to) + ": " + std::strerror(why));
  }
  ::unlink(part.c_str());
  if (stat(to.c_str(), &st) == 0) info.bytes = st.st_size;
  return info;
}

}  // namespace jr2rt
