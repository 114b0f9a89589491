// Hosts, leases and ownership in the PostgreSQL store (docs/scaling.md#hosts-leases-and-fencing,
// #32): table `hosts(name, epoch, alive_until, gone, ttl_ms, joined)`, and the owner (a host's name
// and the epoch it had) of each run and head. A join bumps its host's epoch, which fences every
// earlier incarnation at once; every write with a lease checks it first in its own transaction
// (jr2_check_lease, runs.cpp); only the database's clock (clock_timestamp()) judges a lease's
// expiry. Every transaction here that changes a host's row does so before it touches runs or
// heads, as the writes do: no two of them wait for each other in a circle.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "store/postgres/pg_store.h"

namespace jr2rt::pg {

PgStore::Lease PgStore::held(const char* what) const {
  const auto lease = db_->lease();
  if (!lease) {
    throw StoreError(std::string(what) + " needs a host's lease, and this store of " +
                     Quoted(db_->name()) + " holds none: join first");
  }
  return *lease;
}

PgStore::Lease PgStore::join(const std::string& name, int64_t ttlMs) {
  if (name.empty()) throw StoreError("a host joins the run store under a name, and it has none");
  if (ttlMs <= 0) {
    throw StoreError("host `" + name + "`'s lease needs a TTL above 0 ms; it has " +
                     std::to_string(ttlMs));
  }
  auto hold = db_->hold();
  if (db_->version() < 2) {
    throw StoreError("the run store " + Quoted(db_->name()) +
                     " has schema version 1 and was opened read-only: a host cannot join it");
  }
  Pipeline p(*db_);
  const size_t at = p.add(
      "INSERT INTO hosts (name, epoch, alive_until, gone, ttl_ms)"
      " VALUES ($1, 1, clock_timestamp() + $2::bigint * interval '1 millisecond', false, $2)"
      " ON CONFLICT (name) DO UPDATE SET epoch = hosts.epoch + 1,"
      " alive_until = excluded.alive_until, gone = false, ttl_ms = excluded.ttl_ms"
      " RETURNING epoch",
      Params().text(name).integer(ttlMs));
  // What every earlier incarnation owned, released in the same transaction.
  p.add("UPDATE runs SET owner = NULL, owner_epoch = NULL WHERE owner = $1", Params().text(name));
  p.add("UPDATE heads SET owner = NULL, owner_epoch = NULL WHERE owner = $1", Params().text(name));
  notify(p, "jr2_runs");
  Lease lease{name, p.finish()[at].integer(0, 0), ttlMs};
  db_->setLease(lease);
  db_->owned().clear();
  return lease;
}

void PgStore::heartbeat() {
  auto hold = db_->hold();
  const Lease lease = held("a heartbeat");
  db_->run(kHeartbeatSql, Params().text(lease.host).integer(lease.epoch).integer(lease.ttlMs));
}

std::unique_ptr<Hosts::Keeper> PgStore::keep(int64_t beatMs, bool pollOnly,
                                             std::function<void(unsigned)> woken) {
  const Lease lease = held("a keeper");
  return MakeKeeper(*db_, lease, beatMs, pollOnly, std::move(woken));
}

void PgStore::notify(Pipeline& p, const char* channel, const std::string& payload) {
  p.add("SELECT pg_notify($1, $2)", Params().text(channel).text(payload));
  db_->notified();
}

std::vector<std::string> PgStore::reap() {
  auto hold = db_->hold();
  Pipeline p(*db_);
  // A host whose heartbeats stopped: its row waits for its writes in flight (they share-lock it),
  // and is then marked gone; what every gone host owned is released.
  const size_t at = p.add(
      "UPDATE hosts SET gone = true WHERE NOT gone AND alive_until <= clock_timestamp()"
      " RETURNING name",
      {});
  p.add(
      "UPDATE runs SET owner = NULL, owner_epoch = NULL"
      " WHERE owner IN (SELECT name FROM hosts WHERE gone)",
      {});
  p.add(
      "UPDATE heads SET owner = NULL, owner_epoch = NULL"
      " WHERE owner IN (SELECT name FROM hosts WHERE gone)",
      {});
  const Result r = p.finish()[at];
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(r.rows()));
  for (int i = 0; i < r.rows(); ++i) out.push_back(r.text(i, 0));
  if (!out.empty()) {
    // What the reaped hosts owned is there to claim: told to the other hosts, once.
    db_->run("SELECT pg_notify('jr2_runs', '')");
    db_->notified();
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<RunSummary> PgStore::claim(int64_t limit, const std::vector<std::string>& workflows) {
  auto hold = db_->hold();
  const Lease lease = held("a claim");
  std::vector<RunSummary> out;
  if (limit <= 0) return out;
  Txn txn(*db_);
  db_->run("SELECT jr2_check_lease($1, $2)", Params().text(lease.host).integer(lease.epoch));
  // The oldest waiting runs nobody owns, by the partial index runs_unowned; a row another host is
  // claiming now is skipped, not waited for.
  const Result found = db_->run(
      "SELECT id FROM runs WHERE status = 'waiting' AND owner IS NULL"
      " AND (cardinality($2::text[]) = 0 OR workflow = ANY($2::text[]))"
      " ORDER BY updated, id LIMIT $1 FOR UPDATE SKIP LOCKED",
      Params().integer(limit).texts(workflows));
  if (found.rows() == 0) {
    txn.commit();
    return out;
  }
  std::vector<std::string> ids;
  std::vector<int64_t> keys;
  for (int i = 0; i < found.rows(); ++i) {
    ids.push_back(found.text(i, 0));
    keys.push_back(static_cast<int64_t>(LockKey(ids.back())));
  }
  // Each one a runner command does not drive now (its drive lock, a session advisory lock on
  // another connection, conflicts with this transaction's), owned by this lease, its revision
  // bumped: a save from a copy older than the claim conflicts.
  const Result claimed = db_->run(
      "UPDATE runs r SET owner = $1, owner_epoch = $2, rev = r.rev + 1"
      " FROM unnest($3::text[], $4::bigint[]) AS c(id, k)"
      " WHERE r.id = c.id AND pg_try_advisory_xact_lock(c.k)"
      " RETURNING r.id, r.workflow, r.status, r.updated, r.rev",
      Params().text(lease.host).integer(lease.epoch).texts(ids).integers(keys));
  txn.commit();
  out.reserve(static_cast<size_t>(claimed.rows()));
  for (int i = 0; i < claimed.rows(); ++i) {
    out.push_back({claimed.text(i, 0), claimed.text(i, 1), claimed.text(i, 2),
                   claimed.integer(i, 3), claimed.integer(i, 4), ""});
  }
  std::sort(out.begin(), out.end(), [](const RunSummary& a, const RunSummary& b) {
    return a.updatedMs != b.updatedMs ? a.updatedMs < b.updatedMs : a.id < b.id;
  });
  return out;
}

std::string PgStore::instanceToken() {
  auto hold = db_->hold();
  // Two UUIDs of version 4 (122 random bits each, from the server's strong random source) as
  // 64 hex digits; the first host to ask makes it, every later one reads that one.
  db_->run(
      "INSERT INTO jr2_meta (key, value) VALUES ('instance_token',"
      " replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''))"
      " ON CONFLICT (key) DO NOTHING");
  const Result r = db_->run("SELECT value FROM jr2_meta WHERE key = 'instance_token'");
  if (r.rows() != 1) throw StoreError("the run store " + Quoted(db_->name()) + " keeps no token");
  return r.text(0, 0);
}

void PgStore::release(const std::vector<std::string>& ids) {
  if (ids.empty()) return;
  auto hold = db_->hold();
  const Lease lease = held("a release");
  // Told to the other hosts (once) when one was let go.
  db_->notified(db_->run("WITH r AS (UPDATE runs SET owner = NULL, owner_epoch = NULL"
                         " WHERE id = ANY($1::text[]) AND owner = $2 AND owner_epoch = $3"
                         " RETURNING 1) SELECT pg_notify('jr2_runs', '')"
                         " WHERE EXISTS (SELECT 1 FROM r)",
                         Params().texts(ids).text(lease.host).integer(lease.epoch))
                    .rows());
  for (const std::string& id : ids) db_->owned().erase(id);
}

void PgStore::leave() {
  auto hold = db_->hold();
  const Lease lease = held("leaving");
  Pipeline p(*db_);
  p.add("UPDATE hosts SET gone = true WHERE name = $1 AND epoch = $2",
        Params().text(lease.host).integer(lease.epoch));
  p.add("UPDATE runs SET owner = NULL, owner_epoch = NULL WHERE owner = $1 AND owner_epoch = $2",
        Params().text(lease.host).integer(lease.epoch));
  p.add("UPDATE heads SET owner = NULL, owner_epoch = NULL WHERE owner = $1 AND owner_epoch = $2",
        Params().text(lease.host).integer(lease.epoch));
  notify(p, "jr2_runs");
  p.finish();
  db_->owned().clear();
}

bool PgStore::takeHead(const std::string& workflow) {
  auto hold = db_->hold();
  const Lease lease = held("taking a head");
  Pipeline p(*db_);
  p.add("SELECT jr2_check_lease($1, $2)", Params().text(lease.host).integer(lease.epoch));
  // A workflow that has had no run yet gets a head row without one (run '': reads skip it).
  const size_t at = p.add(
      "INSERT INTO heads (workflow, run, started, owner, owner_epoch) VALUES ($1, '', 0, $2, $3)"
      " ON CONFLICT (workflow) DO UPDATE SET owner = $2, owner_epoch = $3"
      " WHERE heads.owner IS NULL OR (heads.owner = $2 AND heads.owner_epoch = $3)"
      " OR NOT jr2_host_live(heads.owner, heads.owner_epoch) RETURNING 1",
      Params().text(workflow).text(lease.host).integer(lease.epoch));
  return p.finish()[at].rows() == 1;
}

std::string PgStore::reserveKey(const std::string& workflow, const std::string& key,
                                const std::string& run) {
  auto hold = db_->hold();
  const Lease lease = held("a key's reservation");
  // Reserved when nobody holds the key: no waiting run has it, and no reservation does, or the
  // one there is stale (its run is not waiting, and either ended or will never come: its host is
  // not live). In autocommit: a conflict here fails nothing else. A reservation that is gone
  // between the two statements (its run ended) is asked again, a few times at most.
  for (int tries = 0; tries < 5; ++tries) {
    const Result r = db_->run(
        "WITH live AS (SELECT id FROM runs WHERE workflow = $1 AND dkey = $2"
        " AND status = 'waiting' LIMIT 1),"
        " ins AS (INSERT INTO keys (workflow, key, run, host, epoch)"
        "  SELECT $1, $2, $3, $4, $5 WHERE NOT EXISTS (SELECT 1 FROM live)"
        "  ON CONFLICT (workflow, key) DO UPDATE SET run = excluded.run, host = excluded.host,"
        "  epoch = excluded.epoch"
        "  WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = keys.run AND r.status = 'waiting')"
        "  AND (EXISTS (SELECT 1 FROM runs r WHERE r.id = keys.run)"
        "  OR NOT jr2_host_live(keys.host, keys.epoch))"
        "  RETURNING run)"
        " SELECT (SELECT run FROM ins), (SELECT id FROM live)",
        Params().text(workflow).text(key).text(run).text(lease.host).integer(lease.epoch));
    if (!r.null(0, 0)) return r.text(0, 0);
    if (!r.null(0, 1)) return r.text(0, 1);
    // A reservation held it (one committed after this statement's snapshot, too): read now.
    const Result held = db_->run("SELECT run FROM keys WHERE workflow = $1 AND key = $2",
                                 Params().text(workflow).text(key));
    if (held.rows() == 1) return held.text(0, 0);
  }
  throw StoreUnreachable("dispatch key " + key + " of `" + workflow +
                         "` was reserved and let go five times while this host read it; the "
                         "dispatch is tried again");
}

void PgStore::releaseKey(const std::string& workflow, const std::string& key,
                         const std::string& run) {
  auto hold = db_->hold();
  db_->run("DELETE FROM keys WHERE workflow = $1 AND key = $2 AND run = $3",
           Params().text(workflow).text(key).text(run));
}

bool PgStore::reservedLive(const std::string& id) {
  auto hold = db_->hold();
  const Result r =
      db_->run("SELECT EXISTS (SELECT 1 FROM keys WHERE run = $1 AND jr2_host_live(host, epoch))",
               Params().text(id));
  return r.boolean(0, 0);
}

std::optional<Hosts::Owner> PgStore::owner(const std::string& id) {
  auto hold = db_->hold();
  if (db_->version() < 2) return std::nullopt;  // a store of version 1: nobody owns anything
  const Result r = db_->run(
      "SELECT owner, owner_epoch, jr2_host_live(owner, owner_epoch) FROM runs"
      " WHERE id = $1 AND owner IS NOT NULL",
      Params().text(id));
  if (r.rows() == 0) return std::nullopt;
  return Owner{r.text(0, 0), r.integer(0, 1), r.boolean(0, 2)};
}

}  // namespace jr2rt::pg
