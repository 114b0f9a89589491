// The SQLite run store (RUNTIME.md §7): a file that is ours or refused untouched, WAL so that
// readers never make a writer fail, summaries read without snapshots, a feed per run, and the
// per-run drive lock as a flock on a file that is never reached through a symlink.
#include "jr2/sqlite_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace jr2rt {
namespace {

// "jr2C": the SQLite application_id that marks a file as a jr2 run store.
constexpr int32_t kAppId = 0x6A723243;
// How long a command waits for another one's write before it gives up.
constexpr int kBusyTimeoutMs = 10000;

const char* const kSchema =
    "CREATE TABLE IF NOT EXISTS runs ("
    " id TEXT PRIMARY KEY, workflow TEXT NOT NULL, status TEXT NOT NULL,"
    " updated INTEGER NOT NULL, rev INTEGER NOT NULL DEFAULT 1, snapshot TEXT NOT NULL);"
    // Covers what `runs` shows, so a listing never reads a snapshot; status first because the
    // usual listing is the waiting runs, oldest change first.
    "CREATE INDEX IF NOT EXISTS runs_summary ON runs (status, updated, id, workflow, rev);"
    "CREATE TABLE IF NOT EXISTS feed ("
    " run TEXT NOT NULL, seq INTEGER NOT NULL, time INTEGER NOT NULL, line TEXT NOT NULL,"
    " kind TEXT NOT NULL DEFAULT 'line', data TEXT,"
    " PRIMARY KEY (run, seq)) WITHOUT ROWID;"
    // A run's journal: what its top Pool settled and failed, one row each, appended with the
    // step that made it, so that a save writes what changed (RUNTIME.md §7), not every item.
    "CREATE TABLE IF NOT EXISTS journal ("
    " run TEXT NOT NULL, seq INTEGER NOT NULL, entry TEXT NOT NULL,"
    " PRIMARY KEY (run, seq)) WITHOUT ROWID;"
    // The inbox: what a command asks of the host that drives a run (a `cancel` while `run`
    // waits for a process), and that host's answer.
    "CREATE TABLE IF NOT EXISTS requests ("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT, run TEXT NOT NULL, verb TEXT NOT NULL,"
    " body TEXT NOT NULL, taken INTEGER NOT NULL DEFAULT 0, answer TEXT);"
    // The hook log: each delivery by its id, with the answer it got (a delivery sent again gets
    // its first answer).
    "CREATE TABLE IF NOT EXISTS hooks ("
    " hook TEXT NOT NULL, delivery TEXT NOT NULL, time INTEGER NOT NULL, event TEXT NOT NULL,"
    " answer TEXT NOT NULL, seq INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (hook, delivery))"
    " WITHOUT ROWID;"
    // The head of each standing workflow (Store::Head), written with the run it names.
    "CREATE TABLE IF NOT EXISTS heads ("
    " workflow TEXT PRIMARY KEY, run TEXT NOT NULL, started INTEGER NOT NULL,"
    " streak INTEGER NOT NULL DEFAULT 0, ended TEXT NOT NULL DEFAULT '',"
    " ended_at INTEGER NOT NULL DEFAULT 0, paused TEXT NOT NULL DEFAULT '',"
    " why TEXT NOT NULL DEFAULT '') WITHOUT ROWID;"
    // serve's starts by idempotency key: a start sent again with its key gets the first run.
    "CREATE TABLE IF NOT EXISTS starts ("
    " caller TEXT NOT NULL, workflow TEXT NOT NULL, key TEXT NOT NULL, run TEXT NOT NULL,"
    " digest TEXT NOT NULL, time INTEGER NOT NULL,"
    " PRIMARY KEY (caller, workflow, key)) WITHOUT ROWID;";

std::string Quoted(const std::string& path) { return "`" + path + "`"; }

// A file that is not a jr2 store: told apart from a read that failed while looking at it.
class NotOurs : public StoreError {
 public:
  using StoreError::StoreError;
};

[[noreturn]] void Refuse(const std::string& path, const std::string& why) {
  throw NotOurs(Quoted(path) + " is not a jr2 run store (" + why +
                "); give another path with --store or JR2_STORE");
}

// One SQLite connection and the statements prepared on it, kept: a save after the first
// prepares nothing.
class Db {
 public:
  Db(const std::string& path, const std::string& name, int flags) : path_(path) {
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
  ~Db() {
    for (auto& [sql, st] : cache_) sqlite3_finalize(st);
    sqlite3_close(db_);
  }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }

  [[noreturn]] void fail(int rc) const {
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

  void exec(const char* sql) {
    ++statements_;
    const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) fail(rc);
  }

  // `sql` is a literal: its address keys the cache.
  sqlite3_stmt* prepare(const char* sql) {
    auto it = cache_.find(sql);
    if (it != cache_.end()) return it->second;
    sqlite3_stmt* st = nullptr;
    const int rc = sqlite3_prepare_v2(db_, sql, -1, &st, nullptr);
    if (rc != SQLITE_OK) fail(rc);
    cache_.emplace(sql, st);
    return st;
  }

  // Store::statements(): each statement executed counts once, however many rows it gave.
  int64_t statements() const { return statements_; }
  void executed() { ++statements_; }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
  std::map<const char*, sqlite3_stmt*> cache_;
  int64_t statements_ = 0;
};

// A use of a prepared statement; it is reset (and its bindings dropped) when the use ends.
class Stmt {
 public:
  Stmt(Db& db, const char* sql) : db_(db), st_(db.prepare(sql)) {}
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

// ---- What a file is, found without writing to it -------------------------------------------

enum class Kind {
  kAbsent,  // no file at the path
  kEmpty,   // a 0-byte file, or a database with no application_id and nothing in it
  kOurs,    // application_id jr2C
  kLegacy,  // a jr2 store from before application_id: exactly its `runs` table
};

// Classifies the database `db` is open on, with reads only. Throws (Refuse) when it is not ours.
Kind Classify(Db& db) {
  int64_t appId = 0;
  {
    Stmt s(db, "PRAGMA application_id");
    if (s.step()) appId = s.integer(0);
  }
  if (appId == kAppId) return Kind::kOurs;
  if (appId != 0) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08X", static_cast<unsigned>(appId));
    Refuse(db.path(),
           std::string("it is another application's SQLite database, application_id ") + hex);
  }
  std::vector<std::string> others;
  bool runs = false;
  {
    Stmt s(db, "SELECT type, name, tbl_name FROM sqlite_master ORDER BY name");
    while (s.step()) {
      const std::string type = s.text(0), name = s.text(1), table = s.text(2);
      if (type == "table" && name == "runs") {
        runs = true;
      } else if (!(type == "index" && table == "runs" && name.rfind("sqlite_autoindex_", 0) == 0)) {
        others.push_back(name);
      }
    }
  }
  if (!runs && others.empty()) return Kind::kEmpty;
  if (!others.empty()) {
    std::string names;
    for (size_t i = 0; i < others.size() && i < 3; ++i)
      names += (i ? ", `" : "`") + others[i] + "`";
    if (others.size() > 3) names += " and " + std::to_string(others.size() - 3) + " more";
    Refuse(db.path(), "it is another application's SQLite database: it holds " + names);
  }
  // Exactly the columns jr2 wrote before application_id, `id` the key; `rev` came later.
  std::set<std::string> columns;
  bool idIsKey = false;
  {
    Stmt s(db, "PRAGMA table_info(runs)");
    while (s.step()) {
      columns.insert(s.text(1));
      if (s.text(1) == "id" && s.integer(5) == 1) idIsKey = true;
    }
  }
  std::set<std::string> legacy = {"id", "workflow", "status", "updated", "snapshot"};
  if (idIsKey && columns == legacy) return Kind::kLegacy;
  legacy.insert("rev");
  if (idIsKey && columns == legacy) return Kind::kLegacy;
  Refuse(db.path(), "it is another application's SQLite database: its table `runs` is not jr2's");
}

bool Exists(const std::string& path, off_t* size = nullptr) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return false;
  if (size) *size = st.st_size;
  return true;
}

// A `file:` URI for `path`, so that query parameters can be given.
std::string FileUri(const std::string& path) {
  std::string out = path.rfind('/', 0) == 0 ? "file://" : "file:";
  static const char* const kHex = "0123456789ABCDEF";
  for (const unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// What the file at `path` is, without writing anything: not to it, and no -journal, -wal or
// -shm beside it. The header (magic, application_id) is read with plain read(2); only a file
// with application_id 0 is opened with SQLite, immutable, to look at its tables.
Kind Inspect(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Kind::kAbsent;
    throw StoreError("cannot read the run store " + Quoted(path) + ": " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) Refuse(path, "it is a folder");
  if (!S_ISREG(st.st_mode)) Refuse(path, "it is not a plain file");
  unsigned char header[100];
  ssize_t got = 0;
  {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
      throw StoreError("cannot read the run store " + Quoted(path) + ": " + std::strerror(errno));
    }
    while (got < static_cast<ssize_t>(sizeof header)) {
      const ssize_t n = ::read(fd, header + got, sizeof header - static_cast<size_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += n;
    }
    ::close(fd);
  }
  if (got == 0) return Kind::kEmpty;
  if (got < static_cast<ssize_t>(sizeof header) ||
      std::memcmp(header, "SQLite format 3", 16) != 0) {
    Refuse(path, "it is not a SQLite database");
  }
  const uint32_t appId = (uint32_t{header[68]} << 24) | (uint32_t{header[69]} << 16) |
                         (uint32_t{header[70]} << 8) | uint32_t{header[71]};
  if (appId == static_cast<uint32_t>(kAppId)) return Kind::kOurs;
  // A -wal file may hold the latest changes, which an immutable open does not read, and a plain
  // open would make a -shm file. jr2 never leaves one beside a database whose own header does
  // not carry its application_id.
  off_t walSize = 0;
  if (Exists(path + "-wal", &walSize) && walSize > 0) {
    Refuse(path, "it is another application's SQLite database, with a -wal file beside it");
  }
  Db db(path, FileUri(path) + "?mode=ro&immutable=1", SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
  try {
    return Classify(db);
  } catch (const NotOurs&) {
    throw;
  } catch (const StoreError&) {
    Refuse(path, std::string("SQLite cannot read it: ") + sqlite3_errmsg(db.handle()));
  }
}

// ---- The drive lock ------------------------------------------------------------------------

// A lock file is named by its run id, which must then be one plain path component.
bool IsLockName(const std::string& id) {
  return !id.empty() && id != "." && id != ".." && id.find('/') == std::string::npos &&
         id.find('\0') == std::string::npos;
}

// Opens the lock folder without following a symlink, and checks it is a folder of this user's
// that no one else can write to: the lock files in it are trusted by name. -1 when it does not
// exist and `create` is false.
int OpenLockDir(const std::string& dir, bool create) {
  if (create && mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw StoreError("cannot make the lock folder " + Quoted(dir) + ": " + std::strerror(errno));
  }
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (!create && error == ENOENT) return -1;
    struct stat st {};
    if (lstat(dir.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      throw StoreError(Quoted(dir) +
                       " is a symbolic link; the lock folder must be a real folder — remove it");
    }
    if (error == ENOTDIR) {
      throw StoreError(Quoted(dir) + " is not a folder; the lock folder must be one — remove it");
    }
    throw StoreError("cannot open the lock folder " + Quoted(dir) + ": " + std::strerror(error));
  }
  struct stat st {};
  std::string why;
  if (fstat(fd, &st) != 0) {
    why = std::strerror(errno);
  } else if (st.st_uid != geteuid()) {
    why = "it belongs to another user (uid " + std::to_string(st.st_uid) +
          "); remove it, or give another path with --store or JR2_STORE";
  } else if ((st.st_mode & 022) != 0) {
    why = "others can write to it; make it private (chmod 700) or remove it";
  }
  if (!why.empty()) {
    ::close(fd);
    throw StoreError("the lock folder " + Quoted(dir) + " cannot be trusted: " + why);
  }
  return fd;
}

// Whether `fd` still is the file named `name` in `dirFd`: a holder that unlinked it meanwhile
// leaves a lock on a file no one else will open.
bool StillAt(int dirFd, const std::string& name, int fd) {
  struct stat byName {};
  struct stat byFd {};
  if (fstatat(dirFd, name.c_str(), &byName, AT_SYMLINK_NOFOLLOW) != 0) return false;
  if (fstat(fd, &byFd) != 0) return false;
  return byName.st_ino == byFd.st_ino && byName.st_dev == byFd.st_dev;
}

class FileLock final : public RunLock {
 public:
  FileLock(int dirFd, std::string dir, std::string name,
           const std::function<void(const std::string&)>& onWait)
      : dirFd_(dirFd), dir_(std::move(dir)), name_(std::move(name)) {
    try {
      acquire(&onWait);
    } catch (...) {
      ::close(dirFd_);
      throw;
    }
  }
  ~FileLock() override {
    if (fd_ >= 0) {
      // Unlinked only by a holder of the lock, and only while it still names this file: then
      // no one else holds it, and a waiter finds the name gone and makes a new one.
      if (!held_) held_ = flock(fd_, LOCK_EX | LOCK_NB) == 0;
      if (held_ && StillAt(dirFd_, name_, fd_)) unlinkat(dirFd_, name_.c_str(), 0);
      ::close(fd_);
    }
    ::close(dirFd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  void release() override {
    if (fd_ >= 0 && held_) flock(fd_, LOCK_UN);
    held_ = false;
  }

  bool tryTake() override {
    if (held_) return true;
    if (fd_ >= 0) {
      if (flock(fd_, LOCK_EX | LOCK_NB) != 0) return false;
      if (StillAt(dirFd_, name_, fd_)) {
        held_ = true;
        return true;
      }
      // The file was replaced meanwhile (its holder unlinked it): nobody holds that one; the
      // new one is tried, without waiting either.
      flock(fd_, LOCK_UN);
      ::close(fd_);
      fd_ = -1;
    }
    const int fd =
        openat(dirFd_, name_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
    if (fd < 0) return false;
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || flock(fd, LOCK_EX | LOCK_NB) != 0 ||
        !StillAt(dirFd_, name_, fd)) {
      ::close(fd);
      return false;
    }
    fd_ = fd;
    held_ = true;
    Stamp();
    return true;
  }

  void take() override {
    if (held_) return;
    if (fd_ >= 0) {
      wait();
      if (StillAt(dirFd_, name_, fd_)) {
        held_ = true;
        return;
      }
      ::close(fd_);
      fd_ = -1;
    }
    acquire(nullptr);
  }

 private:
  std::string path() const { return dir_ + "/" + name_; }

  void wait() {
    while (flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR)
        throw StoreError("cannot lock " + Quoted(path()) + ": " + std::strerror(errno));
    }
  }

  // Opens (or makes) the lock file and locks it, until the file locked is the one at the path.
  void acquire(const std::function<void(const std::string&)>* onWait) {
    for (;;) {
      fd_ =
          openat(dirFd_, name_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
      if (fd_ < 0) {
        if (errno == ELOOP) {
          throw StoreError(Quoted(path()) +
                           " is a symbolic link; a lock file must be a plain file — remove it");
        }
        throw StoreError("cannot open the lock file " + Quoted(path()) + ": " +
                         std::strerror(errno));
      }
      struct stat st {};
      if (fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd_);
        fd_ = -1;
        throw StoreError(Quoted(path()) +
                         " is not a plain file; a lock file must be one — remove it");
      }
      if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) {
          const std::string why = std::strerror(errno);
          ::close(fd_);
          fd_ = -1;
          throw StoreError("cannot lock " + Quoted(path()) + ": " + why);
        }
        if (onWait != nullptr && *onWait) {
          try {
            (*onWait)(Holder());  // it may throw: a command that asks the holder instead
          } catch (...) {
            ::close(fd_);
            fd_ = -1;
            throw;
          }
        }
        onWait = nullptr;  // once, however many times the holder's unlink sends us round
        try {
          wait();
        } catch (...) {
          ::close(fd_);
          fd_ = -1;
          throw;
        }
      }
      if (StillAt(dirFd_, name_, fd_)) {
        held_ = true;
        Stamp();
        return;
      }
      ::close(fd_);
      fd_ = -1;
    }
  }

  // The holder writes its pid into the lock file, so that a waiter can say who it waits for
  // (a process stopped with Ctrl-Z holds the lock until it goes on or ends).
  void Stamp() {
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (ftruncate(fd_, 0) == 0) {
      [[maybe_unused]] const ssize_t n = pwrite(fd_, pid.data(), pid.size(), 0);
    }
  }

  // "pid 1234" of the holder, as it wrote it; "" when the file says nothing readable.
  std::string Holder() const {
    char buf[32] = {};
    const ssize_t n = pread(fd_, buf, sizeof buf - 1, 0);
    if (n <= 0) return "";
    std::string text(buf, static_cast<size_t>(n));
    while (!text.empty() && text.back() == '\n') text.pop_back();
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return "";
    return "pid " + text;
  }

  int dirFd_;
  std::string dir_;
  std::string name_;
  int fd_ = -1;
  bool held_ = false;
};

// Removes the lock file of a pruned run, unless someone holds it (then its holder does).
void RemoveLockFile(int dirFd, const std::string& name) {
  const int fd = openat(dirFd, name.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return;
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0 &&
      StillAt(dirFd, name, fd)) {
    unlinkat(dirFd, name.c_str(), 0);
  }
  ::close(fd);
}

// ---- The store -----------------------------------------------------------------------------

// The smallest string above every string that starts with `prefix`; "" when there is none.
std::string PrefixEnd(std::string prefix) {
  while (!prefix.empty() && static_cast<unsigned char>(prefix.back()) == 0xFF) prefix.pop_back();
  if (!prefix.empty()) prefix.back() = static_cast<char>(prefix.back() + 1);
  return prefix;
}

const char* TypeName(int type) {
  switch (type) {
    case SQLITE_NULL:
      return "NULL";
    case SQLITE_INTEGER:
    case SQLITE_FLOAT:
      return "a number";
    case SQLITE_BLOB:
      return "bytes";
    default:
      return "text";
  }
}

std::unique_ptr<Db> OpenDb(const std::string& path, StoreMode mode) {
  const Kind seen = Inspect(path);
  const std::string missing =
      "no run store at " + Quoted(path) +
      "; `run` makes one, or give the store's path with --store or JR2_STORE";
  if (mode == StoreMode::kReadOnly && (seen == Kind::kAbsent || seen == Kind::kEmpty)) {
    throw StoreMissing(missing);
  }
  int flags = SQLITE_OPEN_READWRITE;
  if (seen == Kind::kAbsent) flags |= SQLITE_OPEN_CREATE;
  auto db = std::make_unique<Db>(path, path, flags);
  bool complete = false;
  if (seen == Kind::kOurs) {
    Stmt s(*db,
           "SELECT count(*) FROM sqlite_master WHERE name IN ('runs', 'runs_summary', 'feed',"
           " 'journal')");
    complete = s.step() && s.integer(0) == 4;
    if (complete) {
      Stmt k(*db, "SELECT 1 FROM pragma_table_info('feed') WHERE name = 'kind'");
      complete = k.step();  // a store from before typed feed events: its columns are added
    }
    if (complete) {
      // A store from before the hook log's order or the keys of dispatched runs: their columns
      // are added.
      Stmt h(*db,
             "SELECT count(*) FROM sqlite_master WHERE name IN ('hooks_by_seq', 'runs_by_key',"
             " 'heads', 'starts')");
      complete = h.step() && h.integer(0) == 4;
    }
    if (complete) {
      Stmt v(*db, "SELECT 1 FROM pragma_table_info('runs') WHERE name = 'view'");
      complete = v.step();  // a store from before stored views: the column is added
    }
  }
  if (!complete) {
    // Looked at again under the write lock: another command may have made or changed the file
    // since. Nothing is written unless it still is ours, empty or a legacy store.
    Txn txn(*db, "BEGIN IMMEDIATE");
    const Kind now = Classify(*db);
    if (now == Kind::kEmpty && mode == StoreMode::kReadOnly) throw StoreMissing(missing);
    if (now == Kind::kLegacy) {
      bool hasRev = false;
      {
        Stmt s(*db, "SELECT 1 FROM pragma_table_info('runs') WHERE name = 'rev'");
        hasRev = s.step();
      }
      // Rebuilt so that `rev` comes before the snapshot: reading it never walks a snapshot's
      // overflow pages. A run saved before revisions is at revision 1.
      db->exec("ALTER TABLE runs RENAME TO runs_before_jr2_app_id");
      db->exec(kSchema);
      db->exec(hasRev ? "INSERT INTO runs (id, workflow, status, updated, rev, snapshot)"
                        " SELECT id, workflow, status, updated, coalesce(rev, 1), snapshot"
                        " FROM runs_before_jr2_app_id"
                      : "INSERT INTO runs (id, workflow, status, updated, rev, snapshot)"
                        " SELECT id, workflow, status, updated, 1, snapshot"
                        " FROM runs_before_jr2_app_id");
      db->exec("DROP TABLE runs_before_jr2_app_id");
    } else {
      db->exec(kSchema);
    }
    {
      bool hasKind = false;
      {
        Stmt k(*db, "SELECT 1 FROM pragma_table_info('feed') WHERE name = 'kind'");
        hasKind = k.step();
      }
      if (!hasKind) {
        db->exec("ALTER TABLE feed ADD COLUMN kind TEXT NOT NULL DEFAULT 'line'");
        db->exec("ALTER TABLE feed ADD COLUMN data TEXT");
      }
      // The hook log's order of arrival (a store from before it: its deliveries keep seq 0).
      Stmt h(*db, "SELECT 1 FROM pragma_table_info('hooks') WHERE name = 'seq'");
      if (!h.step()) db->exec("ALTER TABLE hooks ADD COLUMN seq INTEGER NOT NULL DEFAULT 0");
      db->exec("CREATE INDEX IF NOT EXISTS hooks_by_seq ON hooks (hook, seq)");
      // A dispatched run's key, per callee workflow (RUNTIME.md §3): every Pool that gives the
      // same key for that workflow finds the same run while its row lives.
      Stmt k(*db, "SELECT 1 FROM pragma_table_info('runs') WHERE name = 'dkey'");
      if (!k.step()) db->exec("ALTER TABLE runs ADD COLUMN dkey TEXT");
      db->exec(
          "CREATE INDEX IF NOT EXISTS runs_by_key ON runs (workflow, dkey) WHERE dkey IS NOT NULL");
      // What reads need of a run (StoredRun::viewText); NULL in the rows saved before it.
      Stmt v(*db, "SELECT 1 FROM pragma_table_info('runs') WHERE name = 'view'");
      if (!v.step()) db->exec("ALTER TABLE runs ADD COLUMN view TEXT");
    }
    db->exec(("PRAGMA application_id=" + std::to_string(kAppId)).c_str());
    txn.commit();
  }
  // Only now that the file is known to be ours: journal_mode=WAL writes to it.
  db->exec("PRAGMA journal_mode=WAL");
  db->exec("PRAGMA synchronous=FULL");
  if (!complete) {
    // A database someone had already put in WAL mode got its application_id in the -wal file;
    // moved into the database itself (without waiting for readers), so that the next open sees
    // it there.
    sqlite3_wal_checkpoint_v2(db->handle(), nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
  }
  return db;
}

class SqliteStore final : public Store {
 public:
  explicit SqliteStore(std::unique_ptr<Db> db)
      : db_(std::move(db)), path_(db_->path()), locks_(LockFolder(path_)) {}

  int64_t save(const StoredRun& run, const std::vector<FeedLine>& feed) override {
    Txn txn(*db_, "BEGIN IMMEDIATE");
    const int64_t next = write(run, feed);
    txn.commit();
    return next;
  }

  std::vector<int64_t> saveAll(const std::vector<Save>& batch) override {
    std::vector<int64_t> out;
    if (batch.empty()) return out;
    Txn txn(*db_, "BEGIN IMMEDIATE");
    out.reserve(batch.size());
    for (const Save& s : batch) out.push_back(write(s.run, s.feed));
    for (const Save& s : batch) {
      if (s.head) writeHead(*s.head);
    }
    txn.commit();
    return out;
  }

  void writeHead(const Head& h) {
    Stmt s(
        *db_,
        "INSERT INTO heads (workflow, run, started, streak, ended, ended_at, paused, why)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (workflow) DO UPDATE SET"
        " run = ?2, started = ?3, streak = ?4, ended = ?5, ended_at = ?6, paused = ?7, why = ?8");
    s.bind(1, h.workflow).bind(2, h.run).bind(3, h.startedMs).bind(4, h.streak);
    s.bind(5, h.ended).bind(6, h.endedMs).bind(7, h.paused).bind(8, h.why);
    s.step();
  }

  std::optional<Head> head(const std::string& workflow) override {
    for (auto& h : readHeads(workflow)) return std::move(h);
    return std::nullopt;
  }
  std::vector<Head> heads() override { return readHeads(""); }

  std::vector<Head> readHeads(const std::string& workflow) {
    std::vector<Head> out;
    Stmt s(*db_,
           "SELECT workflow, run, started, streak, ended, ended_at, paused, why FROM heads"
           " WHERE ?1 = '' OR workflow = ?1 ORDER BY workflow");
    s.bind(1, workflow);
    while (s.step()) {
      Head h;
      h.workflow = s.text(0);
      h.run = s.text(1);
      h.startedMs = s.integer(2);
      h.streak = s.integer(3);
      h.ended = s.text(4);
      h.endedMs = s.integer(5);
      h.paused = s.text(6);
      h.why = s.text(7);
      out.push_back(std::move(h));
    }
    return out;
  }

  // One run's save, inside the caller's transaction: one statement for the row (the revision
  // checked and bumped by the same UPDATE), one per feed line (its number found by the insert).
  int64_t write(const StoredRun& run, const std::vector<FeedLine>& feed) {
    const std::string snapshot =
        run.snapshotText.empty() ? run.snapshot.dump(-1, ' ', false, Json::error_handler_t::replace)
                                 : std::string();
    const std::string& text = run.snapshotText.empty() ? snapshot : run.snapshotText;
    int64_t next = 0;
    if (run.revision != 0) {
      // Written only if the stored run still has the revision this command had.
      Stmt s(*db_,
             "UPDATE runs SET workflow = ?2, status = ?3, updated = ?4, rev = rev + 1,"
             " snapshot = ?6, dkey = nullif(?7, ''), view = nullif(?8, '')"
             " WHERE id = ?1 AND rev = ?5 RETURNING rev");
      s.bind(1, run.id).bind(2, run.workflow).bind(3, run.status).bind(4, run.updatedMs);
      s.bind(5, run.revision).bind(6, text).bind(7, run.key).bind(8, run.viewText);
      if (!s.step()) {
        const int64_t stored = revision(run.id);
        throw StoreConflict("run " + run.id + " was changed by another command (revision " +
                            std::to_string(stored) + ", this command had " +
                            std::to_string(run.revision) + ")");
      }
      next = s.integer(0);
    } else {
      // A new run (or a benchmark's bare save): whatever is stored is written over.
      Stmt s(
          *db_,
          "INSERT INTO runs (id, workflow, status, updated, rev, snapshot, dkey, view) "
          "VALUES (?1, ?2, ?3, ?4, 1, ?5, nullif(?6, ''), nullif(?7, '')) ON CONFLICT (id) "
          "DO UPDATE SET workflow = ?2, status = ?3, updated = ?4, rev = rev + 1, snapshot = ?5, "
          "dkey = nullif(?6, ''), view = nullif(?7, '') RETURNING rev");
      s.bind(1, run.id).bind(2, run.workflow).bind(3, run.status).bind(4, run.updatedMs);
      s.bind(5, text).bind(6, run.key).bind(7, run.viewText);
      if (!s.step())
        throw StoreError("the run store " + Quoted(path_) + " did not save run " + run.id);
      next = s.integer(0);
    }
    if (!feed.empty()) {
      Stmt s(*db_,
             "INSERT INTO feed (run, seq, time, line, kind, data)"
             " SELECT ?1, coalesce(max(seq), 0) + 1, ?2, ?3, ?4, ?5 FROM feed WHERE run = ?1");
      for (const FeedLine& line : feed) {
        s.bind(1, run.id).bind(2, line.timeMs).bind(3, line.line).bind(4, line.kind);
        s.bind(5, line.data.dump(-1, ' ', false, Json::error_handler_t::replace));
        s.step();
        s.reset();
      }
    }
    if (!run.journal.empty()) {
      int64_t seq = 0;
      {
        Stmt s(*db_, "SELECT coalesce(max(seq), 0) FROM journal WHERE run = ?");
        s.bind(1, run.id);
        if (s.step()) seq = s.integer(0);
      }
      if (seq != run.journalBefore) {
        throw StoreConflict("run " + run.id + "'s journal has " + std::to_string(seq) +
                            " entries, and this command had " + std::to_string(run.journalBefore));
      }
      Stmt s(*db_, "INSERT INTO journal (run, seq, entry) VALUES (?, ?, ?)");
      for (const Json& entry : run.journal) {
        s.bind(1, run.id).bind(2, ++seq).bind(
            3, entry.dump(-1, ' ', false, Json::error_handler_t::replace));
        s.step();
        s.reset();
      }
    }
    return next;
  }

  StoredRun load(const std::string& prefix) override {
    // One read transaction: the run resolved is the run read.
    Txn txn(*db_, "BEGIN");
    StoredRun r;
    r.id = resolve(prefix);
    Stmt s(*db_, "SELECT workflow, status, updated, rev, snapshot FROM runs WHERE id = ?");
    s.bind(1, r.id);
    if (!s.step()) throw StoreError("no run `" + prefix + "` in " + Quoted(path_));
    auto damaged = [&](const std::string& why) {
      return StoreDamaged("run " + r.id + " in " + Quoted(path_) + " is damaged: " + why +
                          "; it cannot go on, the other runs are unaffected");
    };
    const char* names[] = {"workflow", "status"};
    for (int i = 0; i < 2; ++i) {
      if (s.type(i) != SQLITE_TEXT) {
        throw damaged(std::string("its ") + names[i] + " is not text (it is " +
                      TypeName(s.type(i)) + ")");
      }
    }
    r.workflow = s.text(0);
    r.status = s.text(1);
    r.updatedMs = s.integer(2);
    r.revision = s.integer(3);
    if (s.type(4) != SQLITE_TEXT) {
      throw damaged(std::string("its stored snapshot is not text (it is ") + TypeName(s.type(4)) +
                    ")");
    }
    try {
      r.snapshot = Json::parse(s.text(4));
    } catch (const Json::exception& e) {
      throw damaged("its stored snapshot is not valid JSON (" + ErrorText(e) + ")");
    }
    // A snapshot is an object naming its run: anything else was not written by a run.
    for (const char* key : {"id", "workflow", "status"}) {
      if (!r.snapshot.is_object() || !r.snapshot.contains(key) || !r.snapshot[key].is_string()) {
        throw damaged(std::string("its stored snapshot is not a run's (") +
                      (r.snapshot.is_object() ? "it has no `" + std::string(key) + "`"
                                              : "it is " + KindOf(r.snapshot)) +
                      ")");
      }
    }
    Stmt j(*db_, "SELECT seq, entry FROM journal WHERE run = ? ORDER BY seq");
    j.bind(1, r.id);
    int64_t last = 0;
    while (j.step()) {
      // The entries are numbered 1, 2, … as they were appended: a gap is a row someone removed.
      if (j.integer(0) != last + 1) {
        throw damaged("its journal skips from entry " + std::to_string(last) + " to " +
                      std::to_string(j.integer(0)));
      }
      last = j.integer(0);
      if (j.type(1) != SQLITE_TEXT) throw damaged("a journal entry is not text");
      try {
        r.journal.push_back(Json::parse(j.text(1)));
      } catch (const Json::exception& e) {
        throw damaged("a journal entry is not valid JSON (" + ErrorText(e) + ")");
      }
    }
    r.journalBefore = static_cast<int64_t>(r.journal.size());
    return r;
  }

  std::string resolve(const std::string& prefix) override { return find(prefix, false).id; }

  RunSummary find(const std::string& prefix, bool view) override {
    if (prefix.size() < 4) {
      throw StoreError("a run id needs at least 4 characters; `" + prefix + "` is too short");
    }
    // A range of the primary key, not a scan: `id >= prefix AND id < PrefixEnd(prefix)`.
    // (An `OR` for the unbounded case would cost the upper bound its use of the index.)
    const std::string end = PrefixEnd(prefix);
    Stmt s(*db_, end.empty() ? "SELECT id, workflow, status, updated, rev,"
                               " CASE WHEN ?3 THEN view END FROM runs WHERE id >= ?1 ORDER BY id"
                             : "SELECT id, workflow, status, updated, rev,"
                               " CASE WHEN ?3 THEN view END FROM runs"
                               " WHERE id >= ?1 AND id < ?2 ORDER BY id");
    s.bind(1, prefix).bind(3, int64_t{view ? 1 : 0});
    if (!end.empty()) s.bind(2, end);
    std::vector<RunSummary> found;
    int64_t count = 0;
    while (s.step()) {
      RunSummary r{s.text(0), s.text(1), s.text(2), s.integer(3), s.integer(4), s.text(5)};
      if (r.id == prefix) return r;  // a whole id names its run, whatever else it starts
      if (found.size() < 10) found.push_back(std::move(r));
      ++count;
    }
    if (count == 0) {
      throw StoreError("no run `" + prefix + "` in " + Quoted(path_) + "; `runs --all` lists them");
    }
    if (count == 1) return found.front();
    std::string names;
    for (const RunSummary& r : found) {
      names.append(names.empty() ? "" : ", ")
          .append(r.id)
          .append(" (")
          .append(r.status)
          .append(")");
    }
    if (count > static_cast<int64_t>(found.size())) {
      names += ", and " + std::to_string(count - static_cast<int64_t>(found.size())) + " more";
    }
    throw StoreError("`" + prefix + "` names " + std::to_string(count) + " runs: " + names +
                     "; give more of the id");
  }

  std::vector<Json> journal(const std::string& id) override {
    Stmt j(*db_, "SELECT entry FROM journal WHERE run = ? ORDER BY seq");
    j.bind(1, id);
    std::vector<Json> out;
    while (j.step()) {
      try {
        out.push_back(Json::parse(j.text(0)));
      } catch (const Json::exception& e) {
        throw StoreDamaged("run " + id + " in " + Quoted(path_) +
                           " is damaged: a journal entry is not valid JSON (" + ErrorText(e) + ")");
      }
    }
    return out;
  }

  int64_t statements() const override { return db_->statements(); }

  std::vector<RunSummary> list(bool includeEnded, bool views) override {
    // Without views the index covers the columns: a listing never reads a row.
    Stmt s(*db_, views ? (includeEnded ? "SELECT id, workflow, status, updated, rev, view FROM runs"
                                         " ORDER BY updated, id"
                                       : "SELECT id, workflow, status, updated, rev, view FROM runs"
                                         " WHERE status = 'waiting' ORDER BY updated, id")
                       : (includeEnded ? "SELECT id, workflow, status, updated, rev, '' FROM runs"
                                         " ORDER BY updated, id"
                                       : "SELECT id, workflow, status, updated, rev, '' FROM runs"
                                         " WHERE status = 'waiting' ORDER BY updated, id"));
    std::vector<RunSummary> out;
    while (s.step())
      out.push_back({s.text(0), s.text(1), s.text(2), s.integer(3), s.integer(4), s.text(5)});
    return out;
  }

  int64_t ask(const std::string& id, const std::string& verb, const Json& body) override {
    Stmt s(*db_, "INSERT INTO requests (run, verb, body) VALUES (?, ?, ?)");
    s.bind(1, id).bind(2, verb).bind(3, body.dump(-1, ' ', false, Json::error_handler_t::replace));
    s.step();
    return sqlite3_last_insert_rowid(db_->handle());
  }

  std::vector<Request> asked() override {
    std::vector<Request> out;
    Stmt s(*db_, "SELECT seq, run, verb, body FROM requests WHERE taken = 0 ORDER BY seq");
    while (s.step()) {
      Request r;
      r.seq = s.integer(0);
      r.run = s.text(1);
      r.verb = s.text(2);
      r.body = Json::parse(s.text(3), nullptr, false);
      out.push_back(std::move(r));
    }
    return out;
  }

  bool takeRequest(int64_t seq) override {
    Stmt s(*db_, "UPDATE requests SET taken = 1 WHERE seq = ? AND taken = 0");
    s.bind(1, seq);
    s.step();
    return sqlite3_changes(db_->handle()) == 1;
  }

  void answer(int64_t seq, const Json& answer) override {
    Stmt s(*db_, "UPDATE requests SET answer = ? WHERE seq = ?");
    s.bind(1, answer.dump(-1, ' ', false, Json::error_handler_t::replace)).bind(2, seq);
    s.step();
  }

  std::optional<Json> answerOf(int64_t seq) override {
    // One write transaction, taken at once (it waits for another writer within the busy
    // timeout): a read turned into a write inside it would fail at once under WAL instead.
    Txn txn(*db_, "BEGIN IMMEDIATE");
    std::optional<Json> out;
    {
      Stmt s(*db_, "SELECT answer FROM requests WHERE seq = ? AND answer IS NOT NULL");
      s.bind(1, seq);
      if (!s.step()) return std::nullopt;
      out = Json::parse(s.text(0), nullptr, false);
    }
    Stmt d(*db_, "DELETE FROM requests WHERE seq = ?");
    d.bind(1, seq);
    d.step();
    txn.commit();
    return out;
  }

  std::optional<RunSummary> byKey(const std::string& workflow, const std::string& key) override {
    Stmt s(*db_,
           "SELECT id, workflow, status, updated, rev FROM runs WHERE workflow = ? AND dkey = ? "
           "ORDER BY updated DESC LIMIT 1");
    s.bind(1, workflow).bind(2, key);
    if (!s.step()) return std::nullopt;
    return RunSummary{s.text(0), s.text(1), s.text(2), s.integer(3), s.integer(4), ""};
  }

  std::optional<Json> hookAnswer(const std::string& hook, const std::string& delivery) override {
    Stmt s(*db_, "SELECT answer FROM hooks WHERE hook = ? AND delivery = ?");
    s.bind(1, hook).bind(2, delivery);
    if (!s.step()) return std::nullopt;
    return Json::parse(s.text(0), nullptr, false);
  }

  void logHooks(const std::vector<HookEntry>& entries) override {
    if (entries.empty()) return;
    Txn txn(*db_, "BEGIN IMMEDIATE");
    for (const HookEntry& e : entries) {
      Stmt s(*db_,
             "INSERT INTO hooks (hook, delivery, time, event, answer, seq) VALUES (?, ?, ?, ?, ?,"
             " (SELECT coalesce(max(seq), 0) + 1 FROM hooks WHERE hook = ?1)) "
             "ON CONFLICT DO NOTHING");
      s.bind(1, e.hook).bind(2, e.delivery).bind(3, e.timeMs).bind(4, e.event);
      s.bind(5, e.answer.dump(-1, ' ', false, Json::error_handler_t::replace));
      s.step();
    }
    txn.commit();
  }

  std::vector<Json> hookLog(const std::string& hook, int64_t limit) override {
    Stmt s(*db_,
           "SELECT delivery, time, event, answer FROM hooks WHERE hook = ? "
           "ORDER BY seq DESC, time DESC LIMIT ?");
    s.bind(1, hook).bind(2, limit);
    std::vector<Json> out;
    while (s.step()) {
      out.push_back({{"delivery", s.text(0)},
                     {"time", s.integer(1)},
                     {"event", s.text(2)},
                     {"answer", Json::parse(s.text(3), nullptr, false)}});
    }
    return out;
  }

  bool taken(int64_t seq) override {
    Stmt s(*db_, "SELECT taken FROM requests WHERE seq = ?");
    s.bind(1, seq);
    return s.step() && s.integer(0) != 0;
  }

  bool withdraw(int64_t seq) override {
    Stmt s(*db_, "DELETE FROM requests WHERE seq = ? AND taken = 0");
    s.bind(1, seq);
    s.step();
    return sqlite3_changes(db_->handle()) == 1;
  }

  std::optional<RunSummary> summary(const std::string& id) override {
    Stmt s(*db_, "SELECT id, workflow, status, updated, rev FROM runs WHERE id = ?");
    s.bind(1, id);
    if (!s.step()) return std::nullopt;
    RunSummary r;
    r.id = s.text(0);
    r.workflow = s.text(1);
    r.status = s.text(2);
    r.updatedMs = s.integer(3);
    r.revision = s.integer(4);
    return r;
  }

  int64_t revision(const std::string& id) override {
    Stmt s(*db_, "SELECT rev FROM runs WHERE id = ?");
    s.bind(1, id);
    return s.step() ? s.integer(0) : 0;
  }

  std::vector<FeedLine> feed(const std::string& id, int64_t afterSeq) override {
    return feedPage(id, afterSeq, -1);
  }

  std::map<std::pair<std::string, std::string>, int64_t> runCounts() override {
    Stmt s(*db_, "SELECT workflow, status, count(*) FROM runs GROUP BY workflow, status");
    std::map<std::pair<std::string, std::string>, int64_t> out;
    while (s.step()) out[{s.text(0), s.text(1)}] = s.integer(2);
    return out;
  }

  bool hadGate(const std::string& id, const std::string& gate) override {
    Stmt s(*db_,
           "SELECT 1 FROM feed WHERE run = ? AND kind = 'gate-opened'"
           " AND json_valid(data) AND json_extract(data, '$.gate') = ? LIMIT 1");
    s.bind(1, id).bind(2, gate);
    return s.step();
  }

  std::optional<StartKey> startKey(const std::string& caller, const std::string& workflow,
                                   const std::string& key) override {
    Stmt s(*db_, "SELECT run, digest FROM starts WHERE caller = ? AND workflow = ? AND key = ?");
    s.bind(1, caller).bind(2, workflow).bind(3, key);
    if (!s.step()) return std::nullopt;
    return StartKey{s.text(0), s.text(1)};
  }

  void keepStartKey(const std::string& caller, const std::string& workflow, const std::string& key,
                    const StartKey& start) override {
    Txn txn(*db_, "BEGIN IMMEDIATE");
    Stmt s(*db_,
           "INSERT OR REPLACE INTO starts (caller, workflow, key, run, digest, time)"
           " VALUES (?, ?, ?, ?, ?, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))");
    s.bind(1, caller).bind(2, workflow).bind(3, key).bind(4, start.run).bind(5, start.digest);
    s.step();
    txn.commit();
  }

  int64_t lastSeq(const std::string& id) override {
    Stmt s(*db_, "SELECT coalesce(max(seq), 0) FROM feed WHERE run = ?");
    s.bind(1, id);
    return s.step() ? s.integer(0) : 0;
  }

  std::vector<FeedLine> feedPage(const std::string& id, int64_t afterSeq, int64_t limit) override {
    Stmt s(*db_,
           "SELECT seq, time, line, kind, data FROM feed WHERE run = ? AND seq > ? ORDER BY seq"
           " LIMIT ?");
    s.bind(1, id).bind(2, afterSeq).bind(3, limit > 0 ? limit : int64_t{-1});
    std::vector<FeedLine> out;
    while (s.step()) {
      FeedLine f;
      f.seq = s.integer(0);
      f.timeMs = s.integer(1);
      f.line = s.text(2);
      f.kind = s.text(3);
      // Data another tool wrote that is not JSON is kept as its text, never a throw.
      const std::string data = s.text(4);
      f.data = data.empty() ? Json(nullptr) : Json::parse(data, nullptr, false);
      if (f.data.is_discarded()) f.data = data;
      out.push_back(std::move(f));
    }
    return out;
  }

  int64_t prune(int64_t beforeMs, const std::string& workflow) override {
    std::vector<std::string> ids;
    {
      Txn txn(*db_, "BEGIN IMMEDIATE");
      {
        // Never the run a standing workflow's head names: a paused Pool keeps what it holds (the
        // run's `carry`) for its resume, however long it is paused.
        Stmt s(*db_,
               "SELECT id FROM runs WHERE status <> 'waiting' AND updated < ?1"
               " AND (?2 = '' OR workflow = ?2) AND id NOT IN (SELECT run FROM heads)");
        s.bind(1, beforeMs).bind(2, workflow);
        while (s.step()) ids.push_back(s.text(0));
      }
      for (const std::string& id : ids) {
        Stmt lines(*db_, "DELETE FROM feed WHERE run = ?");
        lines.bind(1, id).step();
        Stmt journal(*db_, "DELETE FROM journal WHERE run = ?");
        journal.bind(1, id).step();
        Stmt row(*db_, "DELETE FROM runs WHERE id = ?");
        row.bind(1, id).step();
      }
      // The inbox keeps nothing for long: requests of runs that are gone, and answers whose
      // asker stopped before it read them.
      db_->exec(
          "DELETE FROM requests WHERE answer IS NOT NULL OR run NOT IN (SELECT id FROM runs)");
      {
        // A start key goes with its run.
        Stmt keys(*db_, "DELETE FROM starts WHERE run NOT IN (SELECT id FROM runs)");
        keys.step();
      }
      txn.commit();
    }
    // The lock files go after the commit: a lock file without a run is harmless, the reverse is
    // not possible.
    const int dirFd = ids.empty() ? -1 : openLockDirQuietly();
    if (dirFd >= 0) {
      for (const std::string& id : ids) {
        if (IsLockName(id)) RemoveLockFile(dirFd, id);
      }
      ::close(dirFd);
    }
    return static_cast<int64_t>(ids.size());
  }

  std::unique_ptr<RunLock> lock(const std::string& id,
                                const std::function<void(const std::string&)>& onWait) override {
    if (!IsLockName(id)) {
      throw StoreError("`" + id + "` is not a run id that can name a lock file");
    }
    return std::make_unique<FileLock>(OpenLockDir(locks_, true), locks_, id, onWait);
  }

 private:
  // The lock folder for pruning: one that is missing or not to be trusted is left alone.
  int openLockDirQuietly() {
    try {
      return OpenLockDir(locks_, false);
    } catch (const StoreError&) {
      return -1;
    }
  }

  // The lock folder beside the store's real file, however its path is spelled (a symlink, `./`):
  // two commands on one run always lock the same file.
  static std::string LockFolder(const std::string& path) {
    std::string real = path;
    if (char* resolved = realpath(path.c_str(), nullptr)) {
      real = resolved;
      std::free(resolved);
    }
    return real + ".locks";
  }

  std::unique_ptr<Db> db_;
  std::string path_;
  std::string locks_;
};

}  // namespace

std::unique_ptr<Store> OpenSqliteStore(const std::string& path, StoreMode mode) {
  return std::make_unique<SqliteStore>(OpenDb(path, mode));
}

BackupInfo BackupSqliteStore(const std::string& from, const std::string& to) {
  struct stat st {};
  if (lstat(to.c_str(), &st) == 0) {
    throw StoreError(Quoted(to) +
                     " exists; a backup is written to a new file: name another, or remove it");
  }
  auto source = OpenDb(from, StoreMode::kReadOnly);
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
