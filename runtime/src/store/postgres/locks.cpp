// The drive locks of the PostgreSQL store (docs/scaling.md#the-drive-lock). With a lease
// (Hosts::join), a run's drive lock is its ownership: taken by a row update in a transaction that
// checks the lease first (jr2_take_run), when nobody owns the run or its owner's lease is not
// current, and when no runner command holds its advisory lock; released by clearing the owner.
// Without one (a runner command), it is for now a session advisory lock per run on the store's
// connection, `pg_try_advisory_lock` of a 64-bit key made from the run id, polled every 50 ms,
// and a run a live host owns is held (the lock is let go again at once). It ends with its holder
// as a flock does: the server drops it when the connection closes (a killed command, a lost
// network). The advisory lock is INTERIM: it carries no fencing token, so a command whose
// connection was cut (and who does not know it yet) could still write after another took the
// run; a host's lease carries one (its epoch, checked in every commit).
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "store/postgres/pg_store.h"

namespace jr2rt::pg {
namespace {

constexpr auto kPoll = std::chrono::milliseconds(50);

class PgLock final : public RunLock {
 public:
  PgLock(std::shared_ptr<Conn> db, std::string id)
      : db_(std::move(db)), id_(std::move(id)), key_(LockKey(id_)), lease_(db_->lease()) {}
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

  // The advisory lock unlocked, unless the connection that held it is gone.
  void letGo() {
    if (Pq().status(db_->handle()) != CONNECTION_OK) return;  // the server dropped it already
    const Result r = db_->run(
        "SELECT pg_advisory_unlock($1), EXISTS (SELECT 1 FROM runs WHERE id = $2"
        " AND status = 'waiting' AND owner IS NULL)",
        Params().integer(static_cast<int64_t>(key_)).text(id_));
    // A run left waiting is there for a serve sharing the store to claim: told, once it is free.
    if (r.rows() == 1 && r.boolean(0, 1)) {
      db_->run("SELECT pg_notify('jr2_runs', '')");
      db_->notified();
    }
  }

  void release() override {
    if (!held_) return;
    held_ = false;
    if (lease_) {
      auto hold = db_->hold();
      // A join or a leave since released every run of the lease in one statement: nothing left.
      if (db_->owned().erase(id_) == 0) return;
      // A run let go while it waits is there for another host to claim: told (once).
      db_->notified(db_->run("WITH r AS (UPDATE runs SET owner = NULL, owner_epoch = NULL"
                             " WHERE id = $1 AND owner = $2 AND owner_epoch = $3 RETURNING status)"
                             " SELECT pg_notify('jr2_runs', '') FROM r WHERE status = 'waiting'",
                             Params().text(id_).text(lease_->host).integer(lease_->epoch))
                        .rows());
      return;
    }
    std::lock_guard<std::recursive_mutex> hold(db_->mutex());
    db_->locks().erase(id_);
    letGo();
  }

  void take() override { acquire(nullptr); }

  bool tryTake() override {
    if (held_) return true;
    auto hold = db_->hold();
    if (lease_) {
      // Another lock of this store holds it: the row says it is this lease's either way.
      if (db_->owned().count(id_) != 0) return false;
      Pipeline p(*db_);
      p.add("SELECT jr2_check_lease($1, $2)", Params().text(lease_->host).integer(lease_->epoch));
      const size_t at =
          p.add("SELECT jr2_take_run($1, $2, $3, $4)", Params()
                                                           .text(id_)
                                                           .text(lease_->host)
                                                           .integer(lease_->epoch)
                                                           .integer(static_cast<int64_t>(key_)));
      if (!p.finish()[at].boolean(0, 0)) return false;
      db_->owned().insert(id_);
      held_ = true;
      return true;
    }
    // Another lock of this store holds it: one connection's advisory locks do not exclude each
    // other, so this store does (as two flocks in one process do).
    if (db_->locks().count(id_) != 0) return false;
    const Result r =
        db_->run("SELECT pg_try_advisory_lock($1)", Params().integer(static_cast<int64_t>(key_)));
    if (!r.boolean(0, 0)) return false;
    // A run a live host owns is held, though its lock is free: let go at once. Read after the
    // lock is taken, so that a host's take (which tries the same lock) either came first and is
    // seen, or comes after and fails.
    std::string owner;
    try {
      owner = liveOwner();
    } catch (const StoreError&) {
      letGo();
      throw;
    }
    if (!owner.empty()) {
      letGo();
      return false;
    }
    db_->locks()[id_] = 1;
    held_ = true;
    return true;
  }

 private:
  // The host that owns the run and whose lease is current; "" when none (a store of version 1
  // has no owners).
  std::string liveOwner() {
    if (db_->version() < 2) return "";
    const Result r = db_->run(
        "SELECT owner FROM runs WHERE id = $1 AND owner IS NOT NULL"
        " AND jr2_host_live(owner, owner_epoch)",
        Params().text(id_));
    return r.rows() > 0 ? r.text(0, 0) : "";
  }

  // Who holds the run: the live host that owns it ("host NAME"), else the command that holds its
  // advisory lock, as it named itself when it connected ("jr2 (pid 1234)"): "pid 1234"; "" when
  // it cannot be told.
  std::string holder() {
    auto hold = db_->hold();
    if (db_->locks().count(id_) != 0) return "pid " + std::to_string(::getpid());
    if (lease_ && db_->owned().count(id_) != 0) return "host " + lease_->host;
    try {
      const std::string host = liveOwner();
      if (!host.empty()) return "host " + host;
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
  // The lease the store held when the lock was made: the lock is that lease's ownership.
  std::optional<Hosts::Lease> lease_;
  bool held_ = false;
};

}  // namespace

uint64_t LockKey(const std::string& id) {
  uint64_t h = 14695981039346656037ULL;
  for (const unsigned char c : "jr2 run " + id) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::unique_ptr<RunLock> PgStore::lock(const std::string& id,
                                       const std::function<void(const std::string&)>& onWait) {
  auto lock = std::make_unique<PgLock>(db_, id);
  lock->acquire(&onWait);
  return lock;
}

}  // namespace jr2rt::pg
