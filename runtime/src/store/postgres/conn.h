// The PostgreSQL store's connection (docs/scaling.md): one libpq connection, the statements
// prepared on it, a result, a transaction that rolls back unless committed, and a pipeline that
// sends a whole transaction in one round trip. The files of runtime/src/store/postgres/ talk to
// libpq only through these. Parameters and results are text (PostgreSQL's text format).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "jr2/store.h"
#include "store/postgres/libpq.h"

namespace jr2rt::pg {

inline std::string Quoted(const std::string& name) { return "`" + name + "`"; }

// `s` as PostgreSQL text can hold it: UTF-8 without NUL. Each byte that is not (a NUL, a byte of
// no UTF-8 sequence: Latin-1 in a process's output) becomes U+FFFD, as the JSON the store writes
// already does; the SQLite store keeps such bytes as they are. Text that is valid is unchanged.
std::string AsText(std::string s);

// The parameters of one statement, $1, $2, … in order; nullopt is NULL. Text parameters are
// made valid (AsText).
class Params {
 public:
  Params& text(std::string s) {
    values_.emplace_back(AsText(std::move(s)));
    return *this;
  }
  Params& integer(int64_t v) {
    values_.emplace_back(std::to_string(v));
    return *this;
  }
  Params& null() {
    values_.emplace_back(std::nullopt);
    return *this;
  }
  // A text[] or bigint[] parameter, written as an array literal.
  Params& texts(const std::vector<std::string>& items);
  Params& integers(const std::vector<int64_t>& items);

  int size() const { return static_cast<int>(values_.size()); }
  // For libpq: pointers into the values, valid while this object is.
  std::vector<const char*> pointers() const;

 private:
  std::vector<std::optional<std::string>> values_;
};

// A statement's result; owns the PGresult.
class Result {
 public:
  Result() = default;
  explicit Result(PGresult* r) : r_(r, Pq().clear) {}
  PGresult* get() const { return r_.get(); }
  int rows() const { return r_ ? Pq().ntuples(r_.get()) : 0; }
  bool null(int row, int col) const { return Pq().getisnull(r_.get(), row, col) != 0; }
  std::string text(int row, int col) const {
    return std::string(Pq().getvalue(r_.get(), row, col),
                       static_cast<size_t>(Pq().getlength(r_.get(), row, col)));
  }
  int64_t integer(int row, int col) const;
  bool boolean(int row, int col) const { return text(row, col) == "t"; }
  // Rows an INSERT, UPDATE or DELETE changed.
  int64_t changed() const;

 private:
  std::shared_ptr<PGresult> r_;
};

// One libpq connection and the statements prepared on it. Every public method of the store holds
// its mutex for the whole of what it does: one connection is never used by two threads at once.
class Conn {
 public:
  // Connects to `location` (a libpq keyword string or URL); `name` is what messages say of it
  // (its password left out), `secrets` what no message may print. A connect waits for the server
  // at most `connectTimeoutS` (libpq waits forever by default); a location's own connect_timeout
  // wins. Throws StoreError.
  Conn(std::string location, std::string name, std::vector<std::string> secrets,
       int connectTimeoutS = 10);
  ~Conn();
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  const std::string& name() const { return name_; }
  // Where it connects and what no message may print of it: for another connection to the same
  // database (the keeper's, keeper.cpp).
  const std::string& location() const { return location_; }
  const std::vector<std::string>& secrets() const { return secrets_; }
  // The server process of this connection (0 before it is made): NOTIFYs it sent are this
  // store's own. Read from any thread.
  int backendPid() const { return pid_.load(); }
  std::recursive_mutex& mutex() { return mutex_; }
  std::unique_lock<std::recursive_mutex> hold() {
    std::unique_lock<std::recursive_mutex> lock(mutex_);
    ready();
    return lock;
  }

  // `sql` (several statements allowed, no parameters) as one simple query; counts once.
  void exec(const char* sql);
  // A statement with parameters, prepared on first use: `sql` is a literal whose address keys
  // the cache (as the SQLite store's).
  Result run(const char* sql, const Params& params = Params());

  // Throws what the failed result `r` means (StoreFull for a full disk, StoreFenced for a lease
  // that is not current, StoreConflict for a revision or journal that moved, a run or head another
  // host owns, or a dispatch key a waiting run has, StoreError otherwise), in one line naming the
  // store.
  [[noreturn]] void fail(const PGresult* r, const char* what = nullptr);
  // Throws for a failure that left no result (the connection), with libpq's message.
  [[noreturn]] void failConnection(const char* what);

  // Store::statements().
  int64_t statements() const { return statements_; }
  // Hosts::notifies(): the NOTIFYs sent on this connection, counted by what sends them.
  int64_t notifies() const { return notifies_; }
  void notified(int64_t n = 1) { notifies_ += n; }

  // The advisory locks this connection holds, by run id (locks.cpp): a lost connection loses
  // them, so it is then not silently made again.
  std::map<std::string, int>& locks() { return locks_; }
  // The runs a drive lock of this store holds by ownership (with a lease, locks.cpp): two locks
  // of one store exclude each other. Ownership is the database's: a reconnect keeps it.
  std::set<std::string>& owned() { return owned_; }

  // The lease this store holds since Hosts::join (hosts.cpp); nothing before.
  std::optional<Hosts::Lease> lease() {
    const std::lock_guard<std::recursive_mutex> lock(mutex_);
    return lease_;
  }
  void setLease(Hosts::Lease lease) {
    const std::lock_guard<std::recursive_mutex> lock(mutex_);
    lease_ = std::move(lease);
  }
  // The schema version of the database (schema.cpp): 2, or 1 for a store of version 1 opened
  // read-only (not migrated: it has no hosts and no owners).
  int64_t version() const { return version_; }
  void setVersion(int64_t version) { version_ = version; }

  PGconn* handle() { return pg_; }
  // The name statement `sql` is prepared under, preparing it now if it is not yet.
  std::string prepared(const char* sql);
  void counted(int n = 1) { statements_ += n; }
  // Text with the store's secrets taken out, in one line.
  std::string clean(std::string text) const;

 private:
  // Before each use: a connection lost since (a server restart) is made again, unless it held
  // drive locks.
  void ready();

  std::string location_;
  std::string name_;
  std::vector<std::string> secrets_;
  PGconn* pg_ = nullptr;
  std::recursive_mutex mutex_;
  std::map<const char*, std::string> prepared_;
  std::map<std::string, int> locks_;
  std::set<std::string> owned_;
  std::optional<Hosts::Lease> lease_;
  int64_t version_ = 0;
  int64_t statements_ = 0;
  int64_t notifies_ = 0;
  std::atomic<int> pid_{0};
};

// A transaction on `conn`, rolled back unless committed: a throw in the middle writes nothing.
class Txn {
 public:
  explicit Txn(Conn& conn, const char* begin = "BEGIN") : conn_(conn) { conn_.exec(begin); }
  ~Txn();
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  void commit() {
    conn_.exec("COMMIT");
    done_ = true;
  }

 private:
  Conn& conn_;
  bool done_ = false;
};

// Statements sent together in libpq's pipeline mode, in one transaction (BEGIN first, COMMIT
// last) and one round trip: a saveAll of many runs waits for the server once. A statement that
// fails (a revision that moved raises inside the server) ends the transaction there: nothing of
// it is written, and finish() throws what it means.
class Pipeline {
 public:
  explicit Pipeline(Conn& conn) : conn_(conn) {}
  // Adds a statement; gives the index of its result in what finish() gives.
  size_t add(const char* sql, Params params);
  std::vector<Result> finish();

 private:
  Conn& conn_;
  std::vector<std::pair<const char*, Params>> queued_;
};

// The connection to the store at `location`, its schema checked (or made) (schema.cpp).
std::shared_ptr<Conn> OpenConn(const std::string& location, StoreMode mode);

}  // namespace jr2rt::pg
