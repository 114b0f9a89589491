// What a file is, the schema and its migrations, and the open of the SQLite store
// (docs/runtime.md#the-store): a file that is ours or refused untouched — its header read without
// SQLite, its tables only through an immutable open, looked at again under the write lock —, the
// tables made or a store from before a column migrated, and WAL so that readers never make a
// writer fail.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "jr2/sqlite_store.h"
#include "store/sqlite/db.h"
#include "store/sqlite/sqlite_store.h"

namespace jr2rt::sqlite {
namespace {

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
    // step that made it, so that a save writes what changed, not every item
    // (docs/runtime.md#saved-as-it-moves-effects-at-most-once).
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
    // The head of each standing workflow (Heads::Head), written with the run it names.
    "CREATE TABLE IF NOT EXISTS heads ("
    " workflow TEXT PRIMARY KEY, run TEXT NOT NULL, started INTEGER NOT NULL,"
    " streak INTEGER NOT NULL DEFAULT 0, ended TEXT NOT NULL DEFAULT '',"
    " ended_at INTEGER NOT NULL DEFAULT 0, paused TEXT NOT NULL DEFAULT '',"
    " why TEXT NOT NULL DEFAULT '') WITHOUT ROWID;"
    // A run's input, written once when the run is made (StoredRun::inputText): in its row, it
    // was written again by every save of the run, since SQLite rewrites a changed row whole (a
    // Pool of 10,000 items: 190 kB a commit, for nothing). Rows of runs.input are those of
    // stores from before it, read as they were.
    "CREATE TABLE IF NOT EXISTS inputs (run TEXT PRIMARY KEY, input TEXT NOT NULL) WITHOUT ROWID;"
    // A run's kept parts (parts.cpp): each Pool worker's part of its snapshot and observation,
    // each open Gate's part of its view, named by a piece id; the row of `runs` names them where
    // they go. A save writes the parts that moved, not the run's whole row (#33).
    "CREATE TABLE IF NOT EXISTS parts ("
    " run TEXT NOT NULL, id INTEGER NOT NULL, text TEXT NOT NULL, PRIMARY KEY (run, id))"
    " WITHOUT ROWID;"
    // serve's starts by idempotency key: a start sent again with its key gets the first run.
    "CREATE TABLE IF NOT EXISTS starts ("
    " caller TEXT NOT NULL, workflow TEXT NOT NULL, key TEXT NOT NULL, run TEXT NOT NULL,"
    " digest TEXT NOT NULL, time INTEGER NOT NULL,"
    " PRIMARY KEY (caller, workflow, key)) WITHOUT ROWID;";

// A file that is not a jr2 store: told apart from a read that failed while looking at it.
class NotOurs : public StoreError {
 public:
  using StoreError::StoreError;
};

[[noreturn]] void Refuse(const std::string& path, const std::string& why) {
  throw NotOurs(Quoted(path) + " is not a jr2 run store (" + why +
                "); give another path with --store or JR2_STORE");
}

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

}  // namespace

std::unique_ptr<Db> OpenDbAgain(const std::string& path) {
  auto db = std::make_unique<Db>(path, path, SQLITE_OPEN_READWRITE);
  db->exec("PRAGMA synchronous=FULL");  // the connection's own, as OpenDb's
  return db;
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
             " 'heads', 'starts', 'runs_by_workflow', 'inputs', 'parts')");
      complete = h.step() && h.integer(0) == 7;
    }
    if (complete) {
      // A store from before stored views or inputs stored once: the columns are added.
      Stmt v(*db, "SELECT count(*) FROM pragma_table_info('runs') WHERE name IN ('view', 'input')");
      complete = v.step() && v.integer(0) == 2;
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
      // A dispatched run's key, per callee workflow
      // (docs/runtime.md#standing-pools-of-runs-over-push-sources-12): every Pool that gives the
      // same key for that workflow finds the same run while its row lives.
      Stmt k(*db, "SELECT 1 FROM pragma_table_info('runs') WHERE name = 'dkey'");
      if (!k.step()) db->exec("ALTER TABLE runs ADD COLUMN dkey TEXT");
      db->exec(
          "CREATE INDEX IF NOT EXISTS runs_by_key ON runs (workflow, dkey) WHERE dkey IS NOT NULL");
      // A caller's runs (GET /runs, the console's first page): their counts by workflow and
      // status read off this index in order (8 ms at 100,000 runs, where runs_summary's scan and
      // sort took 90), and a page of a caller's workflows from it alone. Without updated and id
      // here, the planner would pick it for a page and read every row (600 ms).
      db->exec(
          "CREATE INDEX IF NOT EXISTS runs_by_workflow ON runs (workflow, status, updated, id)");
      // What reads need of a run (StoredRun::viewText); NULL in the rows saved before it.
      Stmt v(*db, "SELECT 1 FROM pragma_table_info('runs') WHERE name = 'view'");
      if (!v.step()) db->exec("ALTER TABLE runs ADD COLUMN view TEXT");
      // The run's input, stored once beside its snapshot (StoredRun::inputText); NULL in the
      // rows saved before it, whose snapshots hold their input.
      Stmt i(*db, "SELECT 1 FROM pragma_table_info('runs') WHERE name = 'input'");
      if (!i.step()) db->exec("ALTER TABLE runs ADD COLUMN input TEXT");
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

}  // namespace jr2rt::sqlite

namespace jr2rt {

std::unique_ptr<Store> OpenSqliteStore(const std::string& path, StoreMode mode) {
  return std::make_unique<sqlite::SqliteStore>(sqlite::OpenDb(path, mode));
}

}  // namespace jr2rt
