// The drive locks of the PostgreSQL store (docs/scaling.md#the-interim-drive-lock): for now, a
// session advisory lock per run on the store's connection, `pg_try_advisory_lock` of a 64-bit key
// made from the run id, polled every 50 ms. It ends with its holder as a flock does: the server
// drops it when the connection closes (a killed command, a lost network). It is INTERIM: an
// advisory lock carries no fencing token, so a host whose connection was cut (and who does not
// know it yet) could still write after another host took the lock. #32's run ownership (a hosts
// row with an epoch that only grows, checked in every commit's transaction) replaces it.
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "store/postgres/pg_store.h"

namespace jr2rt::pg {
namespace {

constexpr auto kPoll = std::chrono::milliseconds(50);

// FNV-1a of "jr2 run " and the id: the same key in every jr2, whatever PostgreSQL's own hashes.
uint64_t LockKey(const std::string& id) {
  uint64_t h = 14695981039346656037ULL;
  for (const unsigned char c : "jr2 run " + id) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

class PgLock final : public RunLock {
 public:
  PgLock(std::shared_ptr<Conn> db, std::string id)
      : db_(std::move(db)), id_(std::move(id)), key_(LockKey(id_)) {}
  ~PgLock() override {
    try {
      release();
    } catch (
        ...) {  // NOLINT(bugprone-empty-catch): a lock that cannot be told goes with its session
    }
  }
  PgLock(const PgLock&) = delete;
  PgLock& operator=(const PgLock&) = delete;

  void acquire(const std::function<void(const std::string&)>* onWait) {
    while (!tryTake()) {
      if (onWait != nullptr && *onWait) (*onWait)(holder());  // it may throw: not taken then
      onWait = nullptr;
      std::this_thread::sleep_for(kPoll);
    }
  }

  void release() override {
    if (!held_) return;
    held_ = false;
    std::lock_guard<std::recursive_mutex> hold(db_->mutex());
    db_->locks().erase(id_);
    if (PQstatus(db_->handle()) != CONNECTION_OK) return;  // the server dropped it already
    db_->run("SELECT pg_advisory_unlock($1)", Params().integer(static_cast<int64_t>(key_)));
  }

  void take() override { acquire(nullptr); }

  bool tryTake() override {
    if (held_) return true;
    auto hold = db_->hold();
    // Another lock of this store holds it: one connection's advisory locks do not exclude each
    // other, so this store does (as two flocks in one process do).
    if (db_->locks().count(id_) != 0) return false;
    const Result r =
        db_->run("SELECT pg_try_advisory_lock($1)", Params().integer(static_cast<int64_t>(key_)));
    if (!r.boolean(0, 0)) return false;
    db_->locks()[id_] = 1;
    held_ = true;
    return true;
  }

 private:
  // Who holds the lock, as it named itself when it connected ("jr2 (pid 1234)"): "pid 1234";
  // "" when it cannot be told.
  std::string holder() {
    auto hold = db_->hold();
    if (db_->locks().count(id_) != 0) return "pid " + std::to_string(::getpid());
    try {
      const Result r = db_->run(
          "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
          " WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1"
          " AND l.classid = $1::bigint::oid AND l.objid = $2::bigint::oid LIMIT 1",
          Params()
              .integer(static_cast<int64_t>(key_ >> 32))
              .integer(static_cast<int64_t>(key_ & 0xFFFFFFFFULL)));
      if (r.rows() == 0) return "";
      const std::string name = r.text(0, 0);
      const std::string mark = "jr2 (pid ";
      if (name.rfind(mark, 0) != 0 || name.back() != ')') return "";
      return "pid " + name.substr(mark.size(), name.size() - mark.size() - 1);
    } catch (const StoreError&) {
      return "";
    }
  }

  std::shared_ptr<Conn> db_;
  std::string id_;
  uint64_t key_;
  bool held_ = false;
};

}  // namespace

std::unique_ptr<RunLock> PgStore::lock(const std::string& id,
                                       const std::function<void(const std::string&)>& onWait) {
  auto lock = std::make_unique<PgLock>(db_, id);
  lock->acquire(&onWait);
  return lock;
}

}  // namespace jr2rt::pg
