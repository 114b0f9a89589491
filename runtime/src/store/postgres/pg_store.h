// The run store in a PostgreSQL database (docs/scaling.md): every interface of jr2/store.h on one
// libpq connection (conn.h), with the SQLite store's semantics (runtime/src/store/sqlite/). Its
// methods are defined by concern: the schema and the open in schema.cpp, the runs in runs.cpp,
// the feed and journal in feed.cpp, the inbox in inbox.cpp, the hook log, heads and start keys in
// hooks.cpp, the drive locks in locks.cpp, the hosts, leases and ownership in hosts.cpp.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "jr2/store.h"
#include "store/postgres/conn.h"

namespace jr2rt::pg {

class PgStore final : public Store, public Hosts {
 public:
  explicit PgStore(std::shared_ptr<Conn> db) : db_(std::move(db)) {}

  int64_t statements() const override { return db_->statements(); }
  // Itself, on a store of schema version 2 (one of version 1 opened read-only has no hosts).
  Hosts* hosts() override { return db_->version() >= 2 ? this : nullptr; }

  // Hosts (hosts.cpp)
  Lease join(const std::string& name, int64_t ttlMs) override;
  std::optional<Lease> lease() const override { return db_->lease(); }
  void heartbeat() override;
  std::vector<std::string> reap() override;
  std::vector<RunSummary> claim(int64_t limit, const std::vector<std::string>& workflows) override;
  std::string instanceToken() override;
  void release(const std::vector<std::string>& ids) override;
  void leave() override;
  bool takeHead(const std::string& workflow) override;
  std::optional<Owner> owner(const std::string& id) override;
  std::unique_ptr<Keeper> keep(int64_t beatMs, bool pollOnly,
                               std::function<void(unsigned)> woken) override;
  int64_t notifies() const override { return db_->notifies(); }
  std::string reserveKey(const std::string& workflow, const std::string& key,
                         const std::string& run) override;
  bool reservedLive(const std::string& id) override;
  void releaseKey(const std::string& workflow, const std::string& key,
                  const std::string& run) override;

  // RunRows (runs.cpp)
  int64_t save(const StoredRun& run, const std::vector<FeedLine>& feed) override;
  std::vector<int64_t> saveAll(const std::vector<Save>& batch) override;
  StoredRun load(const std::string& prefix) override;
  std::string resolve(const std::string& prefix) override;
  std::vector<RunSummary> list(bool includeEnded, bool views) override;
  void eachWaiting(const EachWaiting& fn) override;
  RunSummary find(const std::string& prefix, bool view) override;
  std::optional<RunSummary> summary(const std::string& id) override;
  int64_t revision(const std::string& id) override;
  std::optional<RunSummary> byKey(const std::string& workflow, const std::string& key) override;
  std::vector<RunSummary> page(const RunQuery& q) override;
  std::map<std::pair<std::string, std::string>, int64_t> runCounts() override;
  int64_t prune(int64_t beforeMs, const std::string& workflow) override;

  // FeedLog, Journal (feed.cpp)
  std::vector<FeedLine> feed(const std::string& id, int64_t afterSeq) override;
  std::vector<FeedLine> feedPage(const std::string& id, int64_t afterSeq, int64_t limit) override;
  int64_t lastSeq(const std::string& id) override;
  std::vector<std::string> gatesOpened(const std::string& id) override;
  bool gateOpened(const std::string& id, const std::string& gate) override;
  std::vector<Json> journal(const std::string& id) override;

  // Inbox (inbox.cpp)
  int64_t ask(const std::string& id, const std::string& verb, const Json& body) override;
  std::vector<Request> asked() override;
  bool takeRequest(int64_t seq) override;
  void answer(int64_t seq, const Json& answer) override;
  std::optional<Json> answerOf(int64_t seq) override;
  bool withdraw(int64_t seq) override;
  bool taken(int64_t seq) override;

  // HookLog, Heads, StartKeys (hooks.cpp)
  std::optional<Json> hookAnswer(const std::string& hook, const std::string& delivery) override;
  void logHooks(const std::vector<HookEntry>& entries) override;
  std::vector<Json> hookLog(const std::string& hook, int64_t limit) override;
  std::optional<Head> head(const std::string& workflow) override;
  std::vector<Head> heads() override;
  std::optional<StartKey> startKey(const std::string& caller, const std::string& workflow,
                                   const std::string& key) override;
  StartKey keepStartKey(const std::string& caller, const std::string& workflow,
                        const std::string& key, const StartKey& start) override;

  // RunLocks (locks.cpp): with a lease, the run's ownership; without, interim advisory locks on
  // this store's connection, a run a live host owns held.
  std::unique_ptr<RunLock> lock(const std::string& id,
                                const std::function<void(const std::string&)>& onWait) override;

 private:
  // What starts a pipeline that writes: the lease's check (runs.cpp).
  void begin(Pipeline& p);
  // One run's save queued on `p` (runs.cpp); gives the index of the result with its revision.
  size_t write(Pipeline& p, const StoredRun& run, const std::vector<FeedLine>& feed);
  // A head's row queued on `p`; the heads of `workflow` ("" every one) (hooks.cpp).
  static void writeHead(Pipeline& p, const Head& h, const std::optional<Lease>& lease);
  // Hook deliveries queued on `p` (hooks.cpp).
  static void writeHooks(Pipeline& p, const std::vector<HookEntry>& entries);
  // The lease, for a Hosts method that needs one (hosts.cpp): StoreError without.
  Lease held(const char* what) const;
  std::vector<Head> readHeads(const std::string& workflow);

  // A NOTIFY on `channel` with `payload`, queued on `p` (inside its transaction: sent when it
  // commits, once however often it is queued, as PostgreSQL folds equal NOTIFYs of a transaction).
  void notify(Pipeline& p, const char* channel, const std::string& payload = "");

  std::shared_ptr<Conn> db_;
};

// A heartbeat of lease ($1 host, $2 epoch, $3 TTL in ms): renewed only while it is current (a
// lease that ran out stays out: jr2_fenced raises why). PgStore::heartbeat and the keeper's.
inline constexpr const char kHeartbeatSql[] =
    "WITH u AS (UPDATE hosts SET alive_until = clock_timestamp() + $3::bigint * interval"
    " '1 millisecond' WHERE name = $1 AND epoch = $2 AND NOT gone"
    " AND alive_until > clock_timestamp() RETURNING epoch)"
    " SELECT coalesce((SELECT epoch FROM u), jr2_fenced($1, $2))";

// The keeper of `lease` on a connection of its own to `store`'s database (keeper.cpp).
std::unique_ptr<Hosts::Keeper> MakeKeeper(const Conn& store, const Hosts::Lease& lease,
                                          int64_t beatMs, bool pollOnly,
                                          std::function<void(unsigned)> woken);

// The key of run `id`'s advisory lock (locks.cpp): FNV-1a of "jr2 run " and the id, the same in
// every jr2, whatever PostgreSQL's own hashes.
uint64_t LockKey(const std::string& id);

// Text of a Json value as both stores write it.
inline std::string Dump(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace jr2rt::pg
