// Hosts, leases, ownership and fencing in the PostgreSQL store (docs/scaling.md#hosts-leases-and-
// fencing, #32 items 2, 3 and 6 at the store's level), against the real server of the ctest
// fixture `pg` (store_fixture.h), each test in a database of its own. A lease runs out when a
// test moves its host's `alive_until` into the past by SQL (the database's clock is the only
// judge, and nothing here waits for it); two store objects are two hosts.
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "jr2/postgres_store.h"
#include "jr2/store.h"
#include "store_fixture.h"

namespace {

using jr2rt::Json;
using jr2test::Contains;
using jr2test::ErrorOf;
using jr2test::PgDatabase;
using jr2test::PgServer;
using jr2test::PgSql;
using jr2test::Stored;

// A lease long enough that no test sees it run out by itself.
constexpr int64_t kTtlMs = 600000;

// Version 1's schema, as the first jr2 on PostgreSQL made it (commit 0831dd2): what a migration
// starts from.
const char* const kVersion1 =
    "CREATE TABLE jr2_meta (key text COLLATE \"C\" PRIMARY KEY, value text NOT NULL);"
    "CREATE TABLE runs ("
    " id text COLLATE \"C\" PRIMARY KEY, workflow text COLLATE \"C\" NOT NULL,"
    " status text COLLATE \"C\" NOT NULL, updated bigint NOT NULL, rev bigint NOT NULL DEFAULT 1,"
    " snapshot text NOT NULL, dkey text COLLATE \"C\", view text);"
    "CREATE INDEX runs_summary ON runs (status, updated, id, workflow, rev);"
    "CREATE INDEX runs_by_key ON runs (workflow, dkey) WHERE dkey IS NOT NULL;"
    "CREATE TABLE feed ("
    " run text COLLATE \"C\" NOT NULL, seq bigint NOT NULL, time bigint NOT NULL,"
    " line text NOT NULL, kind text NOT NULL DEFAULT 'line', data text, PRIMARY KEY (run, seq));"
    "CREATE TABLE journal ("
    " run text COLLATE \"C\" NOT NULL, seq bigint NOT NULL, entry text NOT NULL,"
    " PRIMARY KEY (run, seq));"
    "CREATE TABLE requests ("
    " seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, run text COLLATE \"C\" NOT NULL,"
    " verb text NOT NULL, body text NOT NULL, taken boolean NOT NULL DEFAULT false, answer text);"
    "CREATE TABLE hooks ("
    " hook text COLLATE \"C\" NOT NULL, delivery text COLLATE \"C\" NOT NULL, time bigint NOT NULL,"
    " event text NOT NULL, answer text NOT NULL, seq bigint NOT NULL DEFAULT 0,"
    " PRIMARY KEY (hook, delivery));"
    "CREATE INDEX hooks_by_seq ON hooks (hook, seq);"
    "CREATE TABLE heads ("
    " workflow text COLLATE \"C\" PRIMARY KEY, run text COLLATE \"C\" NOT NULL,"
    " started bigint NOT NULL, streak bigint NOT NULL DEFAULT 0, ended text NOT NULL DEFAULT '',"
    " ended_at bigint NOT NULL DEFAULT 0, paused text NOT NULL DEFAULT '',"
    " why text NOT NULL DEFAULT '');"
    "CREATE TABLE starts ("
    " caller text COLLATE \"C\" NOT NULL, workflow text COLLATE \"C\" NOT NULL,"
    " key text COLLATE \"C\" NOT NULL, run text COLLATE \"C\" NOT NULL, digest text NOT NULL,"
    " time bigint NOT NULL, PRIMARY KEY (caller, workflow, key));"
    "CREATE FUNCTION jr2_conflict_revision(p_run text, p_had bigint) RETURNS bigint"
    " LANGUAGE plpgsql SET search_path FROM CURRENT AS $$ BEGIN"
    " RAISE EXCEPTION USING ERRCODE = 'JR001', MESSAGE = format("
    "'run %s was changed by another command (revision %s, this command had %s)', p_run,"
    " coalesce((SELECT rev FROM runs WHERE id = p_run), 0), p_had);"
    " END $$;"
    "CREATE FUNCTION jr2_check_journal(p_run text, p_before bigint) RETURNS bigint"
    " LANGUAGE plpgsql SET search_path FROM CURRENT AS $$ DECLARE n bigint; BEGIN"
    " SELECT coalesce(max(seq), 0) INTO n FROM journal WHERE run = p_run;"
    " IF n <> p_before THEN RAISE EXCEPTION USING ERRCODE = 'JR002', MESSAGE = format("
    "'run %s''s journal has %s entries, and this command had %s', p_run, n, p_before); END IF;"
    " RETURN n; END $$;";

// One host: a store of its own (its own connection) and its Hosts.
struct Host {
  std::unique_ptr<jr2rt::Store> store;
  jr2rt::Hosts* hosts = nullptr;
};

class PgHosts : public testing::Test {
 protected:
  void SetUp() override {
    const std::string server = PgServer();
    if (server.empty()) GTEST_SKIP() << jr2test::kNoServer;
    db_ = std::make_unique<PgDatabase>(server);
  }
  std::string location() const { return db_->location(); }
  std::string sql(const std::string& statements) { return PgSql(location(), statements); }
  // A store that has joined as `name` (none: a runner command's, without a lease).
  Host host(const std::string& name = "") {
    Host h;
    h.store = jr2rt::OpenStore(location());
    h.hosts = h.store->hosts();
    EXPECT_NE(h.hosts, nullptr);
    if (!name.empty() && h.hosts != nullptr) h.hosts->join(name, kTtlMs);
    return h;
  }
  // Host `name`'s lease run out, by the database's clock.
  void expire(const std::string& name) {
    sql("UPDATE hosts SET alive_until = clock_timestamp() - interval '1 second' WHERE name = '" +
        name + "'");
  }
  std::string ownerOf(const std::string& id) {
    return sql("SELECT coalesce(owner, '') FROM runs WHERE id = '" + id + "'");
  }
  // Waiting runs w0001…, oldest first, saved by a runner command (nobody owns them).
  std::vector<std::string> waiting(int n) {
    auto store = jr2rt::OpenStore(location());
    std::vector<jr2rt::RunRows::Save> batch;
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) {
      char id[16];
      std::snprintf(id, sizeof id, "w%011d", i);
      ids.emplace_back(id);
      batch.push_back({Stored("waiting", 0, id, 100 + i), {}, std::nullopt});
    }
    store->saveAll(batch);
    return ids;
  }

  std::unique_ptr<PgDatabase> db_;
};

TEST_F(PgHosts, AJoinBumpsTheEpochAndFencesTheIncarnationBefore) {
  Host first = host();
  const auto lease = first.hosts->join("alpha", kTtlMs);
  EXPECT_EQ(lease.epoch, 1);
  EXPECT_EQ(first.hosts->lease()->host, "alpha");
  first.store->save(Stored("waiting", 0), {{0, 1, "started"}});
  EXPECT_EQ(ownerOf("0123456789ab"), "alpha") << "a run a lease saves is owned by it";
  first.hosts->heartbeat();
  // The same name again (a restarted serve): epoch 2, and what epoch 1 owned is released.
  Host second = host();
  EXPECT_EQ(second.hosts->join("alpha", kTtlMs).epoch, 2);
  EXPECT_EQ(ownerOf("0123456789ab"), "");
  const std::string fenced = ErrorOf<jr2rt::StoreFenced>([&] {
    first.store->save(Stored("done", 1), {{0, 2, "never stored"}});
  });
  std::cout << fenced << "\n";
  EXPECT_TRUE(Contains(fenced,
                       "host `alpha` (epoch 1) is fenced: another incarnation of it "
                       "registered (epoch 2); nothing was written to the run store"))
      << fenced;
  EXPECT_EQ(second.store->revision("0123456789ab"), 1) << "nothing written";
  EXPECT_EQ(second.store->feed("0123456789ab", 0).size(), 1u);
  EXPECT_THROW(first.hosts->heartbeat(), jr2rt::StoreFenced);
  EXPECT_THROW(first.hosts->claim(5, {}), jr2rt::StoreFenced);
  EXPECT_THROW(first.store->lock("0123456789ab", {}), jr2rt::StoreFenced);
  // The new incarnation goes on.
  second.hosts->heartbeat();
  EXPECT_EQ(second.store->save(Stored("done", 1), {{0, 2, "ended"}}), 2);
  EXPECT_EQ(ownerOf("0123456789ab"), "alpha");
  EXPECT_EQ(sql("SELECT epoch FROM hosts WHERE name = 'alpha'"), "2");
}

TEST_F(PgHosts, AJoinThatFencesAHostWaitsForItsCommitInFlight) {
  Host a = host("alpha");
  a.store->save(Stored("waiting", 0));
  // Alpha's commit in flight, as a save sends it: the lease's check first, then the row.
  PGconn* inFlight = PQconnectdb(location().c_str());
  ASSERT_EQ(PQstatus(inFlight), CONNECTION_OK);
  PGresult* r = PQexec(inFlight,
                       "BEGIN; SELECT jr2_check_lease('alpha', 1);"
                       " UPDATE runs SET status = 'done', rev = rev + 1 WHERE id = '0123456789ab'");
  ASSERT_EQ(PQresultStatus(r), PGRES_COMMAND_OK) << PQresultErrorMessage(r);
  PQclear(r);
  Host again = host();
  std::atomic<int64_t> epoch{0};
  std::thread restarted([&] { epoch = again.hosts->join("alpha", kTtlMs).epoch; });
  // The join waits on alpha's row until that commit ends (seen by the server, not by a timer).
  bool waits = false;
  for (int i = 0; i < 1000 && !waits; ++i) {
    waits = sql("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND wait_event_type = 'Lock'") == "1";
    if (!waits) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(waits);
  EXPECT_EQ(epoch, 0) << "not joined while the commit is in flight";
  PQclear(PQexec(inFlight, "COMMIT"));
  PQfinish(inFlight);
  restarted.join();
  EXPECT_EQ(epoch, 2);
  EXPECT_EQ(again.store->load("0123").status, "done") << "committed before the fence";
  EXPECT_EQ(ownerOf("0123456789ab"), "") << "and released by the join after it";
  EXPECT_THROW(a.store->save(Stored("waiting", 2)), jr2rt::StoreFenced);
}

TEST_F(PgHosts, AReapedHostsRunsAreClaimedByAnotherAndItsSavesAreRefused) {
  Host a = host("alpha");
  Host b = host("beta");
  for (const char* id : {"aaaa00000001", "aaaa00000002"}) a.store->save(Stored("waiting", 0, id));
  EXPECT_TRUE(b.hosts->claim(10, {}).empty()) << "alpha owns them";
  EXPECT_TRUE(b.hosts->reap().empty()) << "alpha is alive";
  expire("alpha");
  // Fenced as soon as its lease ran out, before anyone reaps it; never renewed again.
  const std::string text = ErrorOf<jr2rt::StoreFenced>([&] { a.hosts->heartbeat(); });
  std::cout << text << "\n";
  EXPECT_TRUE(Contains(text, "its lease ran out at ")) << text;
  EXPECT_THROW(a.store->save(Stored("done", 1, "aaaa00000001")), jr2rt::StoreFenced);
  EXPECT_EQ(b.hosts->reap(), std::vector<std::string>{"alpha"});
  EXPECT_TRUE(b.hosts->reap().empty()) << "reaped once";
  EXPECT_EQ(sql("SELECT gone FROM hosts WHERE name = 'alpha'"), "t");
  EXPECT_FALSE(b.hosts->owner("aaaa00000001").has_value());
  const auto claimed = b.hosts->claim(10, {});
  ASSERT_EQ(claimed.size(), 2u);
  EXPECT_EQ(claimed[0].id, "aaaa00000001");
  EXPECT_EQ(claimed[0].revision, 2) << "a claim bumps the revision";
  const auto owner = b.hosts->owner("aaaa00000001");
  ASSERT_TRUE(owner.has_value());
  EXPECT_EQ(owner->host, "beta");
  EXPECT_TRUE(owner->live);
  // The reaped host's next save is refused, whatever revision it has.
  const std::string after =
      ErrorOf<jr2rt::StoreFenced>([&] { a.store->save(Stored("done", 2, "aaaa00000001")); });
  EXPECT_TRUE(Contains(after, "it left, or was reaped after its lease ran out")) << after;
  EXPECT_EQ(b.store->revision("aaaa00000001"), 2);
  EXPECT_EQ(b.store->save(Stored("done", 2, "aaaa00000001")), 3);
  // It joins again, and owns nothing until it claims.
  EXPECT_EQ(a.hosts->join("alpha", kTtlMs).epoch, 2);
  EXPECT_TRUE(a.hosts->claim(10, {}).empty());
}

TEST_F(PgHosts, TwoHostsClaimingAtOnceNeverClaimOneRun) {
  const auto ids = waiting(300);
  Host a = host("alpha");
  Host b = host("beta");
  std::vector<std::string> byA, byB;
  auto claimAll = [](jr2rt::Hosts* hosts, std::vector<std::string>& mine) {
    for (;;) {
      const auto got = hosts->claim(7, {});
      if (got.empty()) return;
      for (const auto& r : got) mine.push_back(r.id);
    }
  };
  std::thread ta([&] { claimAll(a.hosts, byA); });
  std::thread tb([&] { claimAll(b.hosts, byB); });
  ta.join();
  tb.join();
  std::set<std::string> both(byA.begin(), byA.end());
  size_t twice = 0;
  for (const auto& id : byB) twice += both.insert(id).second ? 0 : 1;
  std::cout << "two hosts claiming 300 runs, 7 at a time: alpha " << byA.size() << ", beta "
            << byB.size() << ", claimed twice " << twice << "\n";
  EXPECT_EQ(twice, 0u);
  EXPECT_EQ(both.size(), 300u);
  EXPECT_EQ(byA.size() + byB.size(), 300u);
  EXPECT_EQ(sql("SELECT count(*) FROM runs WHERE owner = 'alpha'"), std::to_string(byA.size()));
  EXPECT_EQ(sql("SELECT count(*) FROM runs WHERE owner = 'beta'"), std::to_string(byB.size()));
  EXPECT_EQ(sql("SELECT count(*) FROM runs WHERE rev <> 2"), "0") << "each claimed once";
}

TEST_F(PgHosts, AClaimSkipsARunAnotherTransactionHoldsRatherThanWait) {
  const auto ids = waiting(2);
  // Another host's claim in the middle of its transaction: the oldest run's row locked.
  PGconn* other = PQconnectdb(location().c_str());
  ASSERT_EQ(PQstatus(other), CONNECTION_OK);
  PQclear(PQexec(other, "BEGIN"));
  PGresult* r =
      PQexec(other, ("SELECT id FROM runs WHERE id = '" + ids[0] + "' FOR UPDATE").c_str());
  ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK);
  PQclear(r);
  Host a = host("alpha");
  const auto claimed = a.hosts->claim(5, {});  // SKIP LOCKED: no wait for `other`
  ASSERT_EQ(claimed.size(), 1u);
  EXPECT_EQ(claimed[0].id, ids[1]);
  PQclear(PQexec(other, "ROLLBACK"));
  PQfinish(other);
  ASSERT_EQ(a.hosts->claim(5, {}).size(), 1u);
}

TEST_F(PgHosts, AClaimComesOldestFirstAndASaveFromACopyBeforeItConflicts) {
  const auto ids = waiting(3);
  auto runner = jr2rt::OpenStore(location());
  const jr2rt::StoredRun copy = runner->load(ids[0]);
  ASSERT_EQ(copy.revision, 1);
  Host a = host("alpha");
  const auto claimed = a.hosts->claim(2, {});
  ASSERT_EQ(claimed.size(), 2u);
  EXPECT_EQ(claimed[0].id, ids[0]);
  EXPECT_EQ(claimed[1].id, ids[1]);
  jr2rt::StoredRun older = copy;
  older.status = "done";
  const std::string text = ErrorOf<jr2rt::StoreConflict>([&] { runner->save(older); });
  std::cout << text << "\n";
  EXPECT_EQ(text, "run " + ids[0] +
                      " was changed by another command (revision 2, this command "
                      "had 1)");
  EXPECT_EQ(runner->load(ids[0]).status, "waiting");
  EXPECT_EQ(a.hosts->claim(5, {}).size(), 1u) << "the third";
}

TEST_F(PgHosts, AClaimSkipsARunARunnerCommandDrives) {
  const auto ids = waiting(2);
  auto runner = jr2rt::OpenStore(location());
  auto drive = runner->lock(ids[0], {});
  Host a = host("alpha");
  const auto claimed = a.hosts->claim(5, {});
  ASSERT_EQ(claimed.size(), 1u);
  EXPECT_EQ(claimed[0].id, ids[1]);
  EXPECT_EQ(ownerOf(ids[0]), "");
  EXPECT_EQ(runner->revision(ids[0]), 1) << "not touched";
  drive.reset();
  const auto later = a.hosts->claim(5, {});
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].id, ids[0]);
}

TEST_F(PgHosts, ARunALiveHostOwnsIsHeldUntilItIsReaped) {
  const auto ids = waiting(1);
  const std::string& id = ids[0];
  // Beta's lock and a runner command's, each taken and given up while the run was free.
  Host b = host("beta");
  auto bLock = b.store->lock(id, {});
  bLock->release();
  auto runner = jr2rt::OpenStore(location());
  auto rLock = runner->lock(id, {});
  rLock->release();
  Host a = host("alpha");
  auto held = a.store->lock(id, {});
  EXPECT_EQ(ownerOf(id), "alpha") << "with a lease a drive lock is ownership";
  EXPECT_FALSE(bLock->tryTake()) << "a live host owns it";
  EXPECT_FALSE(rLock->tryTake()) << "a live host owns it: a runner command holds off too";
  std::string holder;
  EXPECT_THROW(b.store->lock(id,
                             [&](const std::string& who) {
                               holder = who;
                               throw jr2rt::StoreError("gave up");
                             }),
               jr2rt::StoreError);
  EXPECT_EQ(holder, "host alpha");
  // A runner command's wait is told which host owns it.
  std::string told;
  EXPECT_THROW(runner->lock(id,
                            [&](const std::string& who) {
                              told = who;
                              throw jr2rt::StoreError("gave up");
                            }),
               jr2rt::StoreError);
  EXPECT_EQ(told, "host alpha");
  // Another lease's save of it is refused, from the current revision too.
  const std::string refused =
      ErrorOf<jr2rt::StoreConflict>([&] { b.store->save(Stored("done", 1, id, 100)); });
  std::cout << refused << "\n";
  EXPECT_EQ(refused, "run " + id +
                         " is owned by host `alpha`, whose lease is current: only its owner "
                         "saves it, and this host is `beta`");
  expire("alpha");
  EXPECT_EQ(b.hosts->reap(), std::vector<std::string>{"alpha"});
  EXPECT_TRUE(bLock->tryTake()) << "reaped: nobody owns it";
  EXPECT_EQ(ownerOf(id), "beta");
  EXPECT_EQ(b.store->save(Stored("done", 1, id, 100)), 2);
  // The old owner's lock says nothing more: its release leaves beta's ownership alone.
  held->release();
  EXPECT_EQ(ownerOf(id), "beta");
}

TEST_F(PgHosts, ALockOfALeaseTakesAnUnownedRunAndItsReleaseGivesItUp) {
  const auto ids = waiting(2);
  Host a = host("alpha");
  auto lock = a.store->lock(ids[0], {});
  EXPECT_EQ(ownerOf(ids[0]), "alpha");
  // Two locks of one store exclude each other, as two flocks of one process do.
  std::string holder;
  EXPECT_THROW(a.store->lock(ids[0],
                             [&](const std::string& who) {
                               holder = who;
                               throw jr2rt::StoreError("gave up");
                             }),
               jr2rt::StoreError);
  EXPECT_EQ(holder, "host alpha");
  lock->release();
  EXPECT_EQ(ownerOf(ids[0]), "") << "released";
  EXPECT_TRUE(lock->tryTake());
  EXPECT_EQ(ownerOf(ids[0]), "alpha");
  // A new run's id, not stored yet, is taken; its first save is owned.
  auto fresh = a.store->lock("feed00000001", {});
  a.store->save(Stored("waiting", 0, "feed00000001"));
  EXPECT_EQ(ownerOf("feed00000001"), "alpha");
  // A runner command's advisory lock holds a lease's take off.
  auto runner = jr2rt::OpenStore(location());
  auto driven = runner->lock(ids[1], {});
  Host b = host("beta");
  std::string waitedFor;
  EXPECT_THROW(b.store->lock(ids[1],
                             [&](const std::string& who) {
                               waitedFor = who;
                               throw jr2rt::StoreError("gave up");
                             }),
               jr2rt::StoreError);
  EXPECT_EQ(waitedFor, "pid " + std::to_string(::getpid()));
  driven.reset();
  auto taken = b.store->lock(ids[1], {});
  EXPECT_EQ(ownerOf(ids[1]), "beta");
  taken.reset();
  EXPECT_EQ(ownerOf(ids[1]), "") << "a lock that goes gives the run up";
}

TEST_F(PgHosts, ReleaseAndLeaveClearOwnership) {
  const auto ids = waiting(3);
  Host a = host("alpha");
  ASSERT_EQ(a.hosts->claim(3, {}).size(), 3u);
  ASSERT_TRUE(a.hosts->takeHead("alerts"));
  Host b = host("beta");
  b.hosts->release({ids[0]});
  EXPECT_EQ(ownerOf(ids[0]), "alpha") << "only the owner's release counts";
  a.hosts->release({ids[0]});
  EXPECT_FALSE(a.hosts->owner(ids[0]).has_value());
  EXPECT_EQ(ownerOf(ids[1]), "alpha");
  a.hosts->leave();
  EXPECT_EQ(sql("SELECT count(*) FROM runs WHERE owner IS NOT NULL"), "0");
  EXPECT_EQ(sql("SELECT count(*) FROM heads WHERE owner IS NOT NULL"), "0");
  EXPECT_EQ(sql("SELECT gone FROM hosts WHERE name = 'alpha'"), "t");
  EXPECT_TRUE(b.hosts->reap().empty()) << "it left: nothing to reap";
  const std::string text =
      ErrorOf<jr2rt::StoreFenced>([&] { a.store->save(Stored("done", 2, ids[1], 101)); });
  EXPECT_TRUE(Contains(text, "host `alpha` (epoch 1) is fenced: it left")) << text;
  EXPECT_EQ(b.hosts->claim(5, {}).size(), 3u);
  EXPECT_TRUE(b.hosts->takeHead("alerts"));
}

TEST_F(PgHosts, AStandingWorkflowsHeadHasOneOwner) {
  Host a = host("alpha");
  Host b = host("beta");
  EXPECT_TRUE(a.hosts->takeHead("alerts"));
  EXPECT_TRUE(a.hosts->takeHead("alerts")) << "already its own";
  EXPECT_FALSE(b.hosts->takeHead("alerts"));
  EXPECT_TRUE(b.hosts->takeHead("digest")) << "another workflow's is free";
  EXPECT_FALSE(a.store->head("alerts").has_value()) << "taken, with no run yet";
  EXPECT_EQ(a.store->heads().size(), 0u);
  // Only the head's owner writes it: beta's saveAll with alerts' head writes nothing.
  const jr2rt::Heads::Head head{"alerts", "aaaa00000001", 10, 0, "", 0, "", ""};
  const std::string text = ErrorOf<jr2rt::StoreConflict>([&] {
    b.store->saveAll({{Stored("waiting", 0, "aaaa00000001", 10, "alerts"), {}, head}});
  });
  std::cout << text << "\n";
  EXPECT_EQ(text,
            "the head of standing workflow alerts is owned by host `alpha`, whose lease is "
            "current: only the head's owner stands it up, hands it over and backs it off, and "
            "this host is `beta`");
  EXPECT_EQ(a.store->revision("aaaa00000001"), 0) << "nor the run before it";
  a.store->saveAll({{Stored("waiting", 0, "aaaa00000001", 10, "alerts"), {}, head}});
  ASSERT_TRUE(a.store->head("alerts").has_value());
  EXPECT_EQ(a.store->head("alerts")->run, "aaaa00000001");
  EXPECT_EQ(sql("SELECT owner FROM heads WHERE workflow = 'alerts'"), "alpha");
  expire("alpha");
  EXPECT_TRUE(b.hosts->takeHead("alerts")) << "its owner's lease ran out";
  EXPECT_EQ(b.store->head("alerts")->run, "aaaa00000001") << "the head keeps its run";
  EXPECT_THROW(a.hosts->takeHead("alerts"), jr2rt::StoreFenced);
}

TEST_F(PgHosts, ASaveAllWhoseLeaseRanOutWritesNeitherRun) {
  Host a = host("alpha");
  a.store->saveAll({{Stored("waiting", 0, "aaaa00000001"), {}, std::nullopt},
                    {Stored("waiting", 0, "aaaa00000002"), {}, std::nullopt}});
  expire("alpha");
  EXPECT_THROW(a.store->saveAll({{Stored("done", 1, "aaaa00000001"), {{0, 1, "a"}}, std::nullopt},
                                 {Stored("done", 1, "aaaa00000002"), {{0, 1, "b"}}, std::nullopt}}),
               jr2rt::StoreFenced);
  EXPECT_EQ(sql("SELECT string_agg(status || rev, ' ' ORDER BY id) FROM runs"),
            "waiting1 waiting1");
  EXPECT_EQ(sql("SELECT count(*) FROM feed"), "0");
}

TEST_F(PgHosts, ADispatchKeyIsUniquePerWorkflowAmongWaitingRuns) {
  auto store = jr2rt::OpenStore(location());
  jr2rt::StoredRun first = Stored("waiting", 0, "aaaa00000001", 10, "callee");
  first.key = "K-1";
  store->save(first);
  jr2rt::StoredRun second = Stored("waiting", 0, "aaaa00000002", 20, "callee");
  second.key = "K-1";
  const std::string text = ErrorOf<jr2rt::StoreConflict>([&] { store->save(second); });
  std::cout << text << "\n";
  EXPECT_EQ(text,
            "a waiting run of workflow `callee` has dispatch key `K-1` already in the run "
            "store `" +
                jr2rt::PostgresLocationName(location()) +
                "`: a dispatch key is unique per workflow among its waiting runs; find "
                "that run by its key rather than start another (nothing was written)");
  EXPECT_FALSE(store->summary("aaaa00000002").has_value());
  // Two hosts at once: one of them has it.
  Host a = host("alpha");
  Host b = host("beta");
  jr2rt::StoredRun x = Stored("waiting", 0, "bbbb00000001", 30, "callee");
  x.key = "K-2";
  jr2rt::StoredRun y = Stored("waiting", 0, "bbbb00000002", 30, "callee");
  y.key = "K-2";
  std::atomic<int> refused{0};
  auto save = [&](jr2rt::Store& s, const jr2rt::StoredRun& r) {
    try {
      s.save(r);
    } catch (const jr2rt::StoreConflict&) {
      ++refused;
    }
  };
  std::thread ta([&] { save(*a.store, x); });
  std::thread tb([&] { save(*b.store, y); });
  ta.join();
  tb.join();
  EXPECT_EQ(refused, 1);
  EXPECT_EQ(sql("SELECT count(*) FROM runs WHERE dkey = 'K-2'"), "1");
  // Another workflow's key, an ended run's key: no conflict. A key lives on an ended run's row
  // (byKey finds it until prune), and the one waiting run per key is what the index holds.
  jr2rt::StoredRun other = Stored("waiting", 0, "aaaa00000003", 40, "other");
  other.key = "K-1";
  store->save(other);
  store->save(Stored("done", 1, "aaaa00000001", 50, "callee"));  // a save without the key drops it
  jr2rt::StoredRun ended = Stored("done", 0, "aaaa00000004", 60, "callee");
  ended.key = "K-1";
  store->save(ended);
  EXPECT_EQ(store->save(second), 1) << "its first run's key is dropped: free again";
}

TEST_F(PgHosts, AVersion1StoreIsReadAsItIsAndMigratedByAReadWriteOpen) {
  sql(std::string(kVersion1) +
      "INSERT INTO jr2_meta VALUES ('schema_version', '1');"
      "INSERT INTO runs (id, workflow, status, updated, rev, snapshot, dkey) VALUES"
      " ('aaaa00000001', 'tickets', 'waiting', 10, 3,"
      " '{\"id\":\"aaaa00000001\",\"workflow\":\"tickets\",\"status\":\"waiting\"}', 'K-1'),"
      " ('aaaa00000002', 'tickets', 'done', 20, 1,"
      " '{\"id\":\"aaaa00000002\",\"workflow\":\"tickets\",\"status\":\"done\"}', 'K-1');"
      "INSERT INTO feed VALUES ('aaaa00000001', 1, 10, 'started', 'started', 'null');"
      "INSERT INTO journal VALUES ('aaaa00000001', 1, '{\"n\":1}');"
      "INSERT INTO heads (workflow, run, started) VALUES ('alerts', 'aaaa00000002', 20);");
  {
    // Read-only: read as it is, nothing migrated.
    auto reader = jr2rt::OpenStore(location(), jr2rt::StoreMode::kReadOnly);
    EXPECT_EQ(reader->load("aaaa00000001").revision, 3);
    EXPECT_EQ(reader->list(true).size(), 2u);
    EXPECT_EQ(reader->byKey("tickets", "K-1")->id, "aaaa00000002");
    EXPECT_EQ(reader->head("alerts")->run, "aaaa00000002");
    EXPECT_EQ(reader->hosts(), nullptr) << "version 1 has no hosts";
    auto lock = reader->lock("aaaa00000001", {});
    const std::string text =
        ErrorOf<jr2rt::StoreError>([&] { reader->save(Stored("done", 3, "aaaa00000001")); });
    std::cout << text << "\n";
    EXPECT_TRUE(Contains(text, "has schema version 1 and was opened read-only")) << text;
    EXPECT_EQ(sql("SELECT value FROM jr2_meta WHERE key = 'schema_version'"), "1");
    EXPECT_EQ(sql("SELECT count(*) FROM pg_class WHERE relname = 'hosts'"), "0");
  }
  Host a = host("alpha");
  EXPECT_EQ(sql("SELECT value FROM jr2_meta WHERE key = 'schema_version'"), "4")
      << "migrated through versions 2 and 3 to 4";
  EXPECT_EQ(sql("SELECT count(*) FROM information_schema.columns WHERE table_name = 'runs'"
                " AND column_name = 'input'"),
            "1")
      << "version 4: the run's input beside its snapshot";
  EXPECT_EQ(sql("SELECT count(*) FROM pg_class WHERE relname = 'keys'"), "1");
  const jr2rt::StoredRun kept = a.store->load("aaaa00000001");
  EXPECT_EQ(kept.revision, 3);
  EXPECT_EQ(kept.journal.size(), 1u);
  EXPECT_EQ(a.store->feed("aaaa00000001", 0).size(), 1u);
  EXPECT_EQ(a.store->byKey("tickets", "K-1")->id, "aaaa00000002");
  EXPECT_EQ(a.store->head("alerts")->run, "aaaa00000002");
  const auto claimed = a.hosts->claim(5, {});
  ASSERT_EQ(claimed.size(), 1u);
  EXPECT_EQ(claimed[0].id, "aaaa00000001");
  EXPECT_EQ(claimed[0].revision, 4);
  EXPECT_TRUE(a.hosts->takeHead("alerts"));
  // Opened again: version 3, nothing to do.
  EXPECT_NE(jr2rt::OpenStore(location())->hosts(), nullptr);
}

TEST_F(PgHosts, AVersion1StoreWithTwoWaitingRunsOfOneKeyIsRefusedUnchanged) {
  sql(std::string(kVersion1) +
      "INSERT INTO jr2_meta VALUES ('schema_version', '1');"
      "INSERT INTO runs (id, workflow, status, updated, snapshot, dkey) VALUES"
      " ('aaaa00000001', 'callee', 'waiting', 10, '{}', 'K-1'),"
      " ('aaaa00000002', 'callee', 'waiting', 20, '{}', 'K-1');");
  const std::string text = ErrorOf<jr2rt::StoreError>([&] { jr2rt::OpenStore(location()); });
  std::cout << text << "\n";
  EXPECT_EQ(text, "the run store `" + jr2rt::PostgresLocationName(location()) +
                      "` cannot move to schema version 2: its waiting runs aaaa00000001, "
                      "aaaa00000002 of workflow `callee` have one dispatch key `K-1`, and "
                      "version 2 allows one; cancel all but one with the jr2 that wrote them (or "
                      "clear the others' key: UPDATE runs SET dkey = NULL WHERE id = …), then "
                      "open it again");
  EXPECT_EQ(sql("SELECT value FROM jr2_meta WHERE key = 'schema_version'"), "1");
  EXPECT_EQ(sql("SELECT count(*) FROM information_schema.columns WHERE table_schema = 'public'"
                " AND column_name = 'owner'"),
            "0");
  sql("UPDATE runs SET dkey = NULL WHERE id = 'aaaa00000001'");
  EXPECT_NE(jr2rt::OpenStore(location())->hosts(), nullptr);
}

// What a lease costs a commit: its check (one statement more, the host's row share-locked) and
// the owner columns, in one round trip still. Printed, not judged: the server does not fsync.
TEST_F(PgHosts, ACommitWithALeaseIsTimed) {
  constexpr int kRuns = 100;
  constexpr int kCommits = 20;
  auto time = [&](jr2rt::Store& store, const std::string& prefix) {
    std::vector<jr2rt::RunRows::Save> batch(kRuns);
    for (int i = 0; i < kRuns; ++i) {
      char id[16];
      std::snprintf(id, sizeof id, "%s%06d", prefix.c_str(), i);
      batch[i].run = Stored("waiting", 0, id);
    }
    auto commit = [&] {
      const std::vector<int64_t> revisions = store.saveAll(batch);
      for (int i = 0; i < kRuns; ++i) {
        batch[i].run.revision = revisions[i];
        batch[i].feed = {{0, i, "T-1 settled"}, {0, i, "T-2 started"}};
      }
    };
    commit();
    const auto start = std::chrono::steady_clock::now();
    for (int c = 0; c < kCommits; ++c) commit();
    const double batchMs =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count() /
        kCommits;
    int64_t revision = batch[0].run.revision;
    const auto one = std::chrono::steady_clock::now();
    for (int c = 0; c < 200; ++c) {
      revision = store.save(Stored("waiting", revision, batch[0].run.id), {{0, c, "answered"}});
    }
    const double oneUs =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - one).count() /
        200;
    return std::make_pair(batchMs, oneUs);
  };
  Host runner = host();
  Host leased = host("alpha");
  const auto without = time(*runner.store, "c0ffee");
  const auto with = time(*leased.store, "1ea5ed");
  std::cout << "saveAll of " << kRuns << " runs: " << without.first << " ms without a lease, "
            << with.first << " ms with one; a one-run save: " << without.second << " us without, "
            << with.second << " us with\n";
  EXPECT_EQ(sql("SELECT count(*) FROM runs WHERE owner = 'alpha'"), std::to_string(kRuns));
}

TEST_F(PgHosts, AHostNeedsANameATtlAndALease) {
  Host a = host();
  EXPECT_EQ(ErrorOf<jr2rt::StoreError>([&] { a.hosts->heartbeat(); }),
            "a heartbeat needs a host's lease, and this store of `" +
                jr2rt::PostgresLocationName(location()) + "` holds none: join first");
  EXPECT_THROW(a.hosts->claim(1, {}), jr2rt::StoreError);
  EXPECT_THROW(a.hosts->join("", kTtlMs), jr2rt::StoreError);
  EXPECT_THROW(a.hosts->join("alpha", 0), jr2rt::StoreError);
  EXPECT_FALSE(a.hosts->lease().has_value());
  EXPECT_TRUE(a.hosts->reap().empty()) << "any store may reap";
}

}  // namespace

// A host claims only the runs of the workflows its program drives (serve gives its own); the
// others are left for the hosts of another program on the same database.
TEST_F(PgHosts, AClaimTakesOnlyTheWorkflowsItIsGiven) {
  auto runner = jr2rt::OpenStore(location());
  runner->save(Stored("waiting", 0, "tick00000001", 1, "tickets"));
  runner->save(Stored("waiting", 0, "alrt00000001", 2, "alerts"));
  Host a = host("alpha");
  const auto claimed = a.hosts->claim(5, {"alerts"});
  ASSERT_EQ(claimed.size(), 1u);
  EXPECT_EQ(claimed[0].id, "alrt00000001");
  EXPECT_EQ(ownerOf("tick00000001"), "");
  EXPECT_EQ(a.hosts->claim(5, {"alerts", "nothing"}).size(), 0u);
  EXPECT_EQ(a.hosts->claim(5, {}).size(), 1u) << "any workflow: the other";
}

// Every host of one database accepts one instance token, made by the first that asks and kept
// in the database: 64 hex digits, the same for every later host and every later start.
TEST_F(PgHosts, TheInstanceTokenIsKeptInTheStoreAndTheSameForEveryHost) {
  Host a = host("alpha");
  Host b = host("beta");
  const std::string token = a.hosts->instanceToken();
  ASSERT_EQ(token.size(), 64u);
  EXPECT_EQ(token.find_first_not_of("0123456789abcdef"), std::string::npos) << token;
  EXPECT_EQ(b.hosts->instanceToken(), token);
  EXPECT_EQ(a.hosts->instanceToken(), token);
}

// ---- The keeper (docs/scaling.md#the-keeper): the lease renewed on a connection and a thread of
// its own, its loss judged however long a call hangs, and the NOTIFYs of the other hosts. These
// wait in real time (a heartbeat is real), each for a condition with a deadline of seconds.

namespace {

// What a keeper told its host: each Wake bit counted.
struct Told {
  std::atomic<int> inbox{0}, answers{0}, runs{0}, fenced{0};
  std::function<void(unsigned)> fn() {
    return [this](unsigned w) {
      if ((w & jr2rt::Hosts::kWakeInbox) != 0) ++inbox;
      if ((w & jr2rt::Hosts::kWakeAnswers) != 0) ++answers;
      if ((w & jr2rt::Hosts::kWakeRuns) != 0) ++runs;
      if ((w & jr2rt::Hosts::kWakeFenced) != 0) ++fenced;
    };
  }
};

// Waits up to `seconds` for `cond`; gives the seconds it took, or -1.
template <typename F>
double WaitFor(F cond, double seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (cond()) return took;
    if (took > seconds) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

TEST_F(PgHosts, TheKeeperRenewsTheLeaseOnAConnectionOfItsOwn) {
  Host a = host();
  a.hosts->join("alpha", 3000);
  const int64_t before = a.store->statements();
  Told told;
  auto keeper = a.hosts->keep(200, /*pollOnly=*/true, told.fn());
  EXPECT_GE(WaitFor([&] { return keeper->counts().beats >= 5; }, 5), 0) << "five heartbeats";
  EXPECT_EQ(a.store->statements(), before) << "none of them on the host's own connection";
  EXPECT_FALSE(keeper->listening()) << "polling only: no LISTEN";
  EXPECT_EQ(keeper->fenced(), "");
  // The lease reaches past now by most of its TTL, by the database's clock.
  EXPECT_EQ(sql("SELECT alive_until > clock_timestamp() + interval '2 seconds' FROM hosts"), "t");
  std::cout << "beats " << keeper->counts().beats << ", statements on the host's connection "
            << a.store->statements() - before << "\n";
}

// A heartbeat that hangs (here: the host's row locked by another transaction, as a server gone
// silent would hang it) is given up, and the lease judged lost at two thirds of its TTL: before
// it runs out by the database's clock, so before any other host can take the runs.
TEST_F(PgHosts, TheKeeperJudgesTheLeaseLostWhileAHeartbeatHangs) {
  Host a = host();
  a.hosts->join("alpha", 1500);
  Told told;
  auto keeper = a.hosts->keep(100, /*pollOnly=*/true, told.fn());
  ASSERT_GE(WaitFor([&] { return keeper->counts().beats >= 2; }, 5), 0);
  PGconn* blocker = PQconnectdb(location().c_str());
  ASSERT_EQ(PQstatus(blocker), CONNECTION_OK);
  PQclear(PQexec(blocker, "BEGIN; SELECT 1 FROM hosts WHERE name = 'alpha' FOR UPDATE"));
  const int64_t beats = keeper->counts().beats;
  const double took = WaitFor([&] { return told.fenced.load() > 0; }, 5);
  const std::string why = keeper->fenced();
  const std::string expired =
      sql("SELECT alive_until <= clock_timestamp() FROM hosts WHERE name = 'alpha'");
  std::cout << "fenced after " << took << " s with the row locked: " << why << "\n";
  EXPECT_GE(took, 0) << "the loss judged though every heartbeat hangs";
  EXPECT_LT(took, 1.5) << "before the lease of 1.5 s could run out";
  EXPECT_EQ(expired, "f") << "judged lost while the database still holds the lease";
  EXPECT_TRUE(Contains(why, "no heartbeat went through for ")) << why;
  EXPECT_EQ(keeper->counts().beats, beats);
  EXPECT_EQ(told.fenced.load(), 1) << "told once";
  PQclear(PQexec(blocker, "ROLLBACK"));
  PQfinish(blocker);
  // Joined again: the keeper renews the new lease.
  keeper->renewed(a.hosts->join("alpha", 1500));
  EXPECT_EQ(keeper->fenced(), "");
  EXPECT_GE(WaitFor([&] { return keeper->counts().beats > beats; }, 5), 0);
}

TEST_F(PgHosts, TheKeeperTellsAtOnceThatAnotherIncarnationFencedIt) {
  Host a = host();
  a.hosts->join("alpha", 60000);
  Told told;
  auto keeper = a.hosts->keep(100, /*pollOnly=*/true, told.fn());
  Host again = host("alpha");  // a restarted serve of the same name
  EXPECT_GE(WaitFor([&] { return told.fenced.load() > 0; }, 5), 0);
  EXPECT_TRUE(Contains(keeper->fenced(), "another incarnation of it registered (epoch 2)"))
      << keeper->fenced();
}

// The NOTIFYs: a request wakes the run's owner only, an answer every asker, runs let go (by a
// release, a leave or a runner's lock) the other hosts; one NOTIFY a channel per transaction
// however many runs it let go; a host is not woken by its own.
TEST_F(PgHosts, NotifiesWakeTheHostTheyConcern) {
  Host a = host("alpha");
  Host b = host("beta");
  Told toldA;
  Told toldB;
  auto keepA = a.hosts->keep(1000, false, toldA.fn());
  auto keepB = b.hosts->keep(1000, false, toldB.fn());
  ASSERT_GE(WaitFor([&] { return keepA->listening() && keepB->listening(); }, 5), 0);
  for (int i = 0; i < 50; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "aaaa%08d", i);
    a.store->save(Stored("waiting", 0, id));
  }
  auto runner = jr2rt::OpenStore(location());
  const int64_t seq = runner->ask("aaaa00000000", "send", Json::object());
  EXPECT_GE(WaitFor([&] { return toldA.inbox.load() == 1; }, 5), 0) << "the owner is woken";
  b.store->ask("aaaa00000001", "cancel", Json::object());
  EXPECT_GE(WaitFor([&] { return toldA.inbox.load() == 2; }, 5), 0) << "from another host too";
  ASSERT_TRUE(a.store->takeRequest(seq));
  a.store->answer(seq, {{"status", "waiting"}});
  EXPECT_GE(WaitFor([&] { return toldB.answers.load() == 1; }, 5), 0) << "the askers look";
  // Alpha lets every run go in one transaction: beta hears one NOTIFY, and claims.
  const int64_t heard = keepB->counts().notifies;
  const int64_t sent = a.hosts->notifies();
  a.hosts->leave();
  EXPECT_GE(WaitFor([&] { return toldB.runs.load() == 1; }, 5), 0);
  EXPECT_EQ(a.hosts->notifies() - sent, 1) << "one NOTIFY for 50 runs";
  EXPECT_EQ(b.hosts->claim(100, {}).size(), 50u);
  // A runner's run left waiting when its lock is let go: the hosts are told it can be claimed.
  runner->save(Stored("waiting", 0, "bbbb00000001"));
  { auto lock = runner->lock("bbbb00000001", {}); }
  EXPECT_GE(WaitFor([&] { return toldB.runs.load() == 2; }, 5), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // anything late would be here
  EXPECT_EQ(toldB.inbox.load(), 0) << "beta owns none of the runs asked of";
  EXPECT_EQ(toldA.answers.load(), 0) << "alpha's own answer does not wake alpha";
  EXPECT_EQ(keepB->counts().notifies - heard, 2) << "the leave's one and the runner's one";
  std::cout << "alpha woken: inbox " << toldA.inbox << ", answers " << toldA.answers << ", runs "
            << toldA.runs << "; beta woken: inbox " << toldB.inbox << ", answers " << toldB.answers
            << ", runs " << toldB.runs << "\n";
}

// ---- Key reservations (docs/scaling.md#dispatch-keys-and-standing-heads): a dispatch key taken
// before its run is stored, in a statement of its own, so that two hosts dispatching one key at
// once start one run and no turn's commit fails on it.

TEST_F(PgHosts, AKeyIsReservedOnceAndLetGoWhenItsRunEnds) {
  const auto keyed = [](const char* status, int64_t rev, const char* id, const char* key) {
    jr2rt::StoredRun r = Stored(status, rev, id, rev + 1, "tickets");
    r.key = key;
    return r;
  };
  Host a = host("alpha");
  Host b = host("beta");
  EXPECT_EQ(a.hosts->reserveKey("tickets", "K-1", "aaaa00000001"), "aaaa00000001");
  EXPECT_EQ(b.hosts->reserveKey("tickets", "K-1", "bbbb00000001"), "aaaa00000001")
      << "a live reservation holds it, before its run is stored";
  EXPECT_EQ(b.hosts->reserveKey("alerts", "K-1", "bbbb00000002"), "bbbb00000002")
      << "a key is per workflow";
  EXPECT_TRUE(b.hosts->reservedLive("aaaa00000001"));
  a.store->save(keyed("waiting", 0, "aaaa00000001", "K-1"));
  EXPECT_EQ(b.hosts->reserveKey("tickets", "K-1", "bbbb00000003"), "aaaa00000001")
      << "the waiting run holds it";
  a.store->save(keyed("done", 1, "aaaa00000001", "K-1"));
  EXPECT_EQ(sql("SELECT count(*) FROM keys WHERE key = 'K-1' AND workflow = 'tickets'"), "0")
      << "the commit that ended the run let its key go";
  EXPECT_EQ(b.hosts->reserveKey("tickets", "K-1", "bbbb00000004"), "bbbb00000004");
  b.hosts->releaseKey("tickets", "K-1", "bbbb00000004");
  EXPECT_EQ(a.hosts->reserveKey("tickets", "K-1", "aaaa00000005"), "aaaa00000005")
      << "a reservation let go (its run refused at the door) holds nothing";
}

TEST_F(PgHosts, AReservationWhoseHostDiedIsTakenOverByTheNextDispatch) {
  Host a = host("alpha");
  Host b = host("beta");
  EXPECT_EQ(a.hosts->reserveKey("tickets", "K-9", "aaaa00000009"), "aaaa00000009");
  EXPECT_EQ(b.hosts->reserveKey("tickets", "K-9", "bbbb00000009"), "aaaa00000009");
  expire("alpha");  // alpha died between its reservation and the commit of its run
  EXPECT_FALSE(b.hosts->reservedLive("aaaa00000009")) << "that run will never come";
  EXPECT_EQ(b.hosts->reserveKey("tickets", "K-9", "bbbb00000009"), "bbbb00000009");
  EXPECT_TRUE(b.hosts->reservedLive("bbbb00000009"));
}

TEST_F(PgHosts, HostsReservingOneKeyAtOnceGetOneRun) {
  constexpr int kKeys = 40;
  Host a = host("alpha");
  Host b = host("beta");
  std::vector<std::string> gotA(kKeys), gotB(kKeys);
  // Both hosts reserve each key at the same instant: each waits for the other at every key (a
  // start together alone let one thread, scheduled first on a loaded machine, take all 40 before
  // the other began).
  std::vector<std::atomic<int>> arrived(kKeys);
  const auto meet = [&](int i) {
    for (++arrived[i]; arrived[i] < 2;) std::this_thread::yield();
  };
  std::thread ta([&] {
    for (int i = 0; i < kKeys; ++i) {
      meet(i);
      gotA[i] = a.hosts->reserveKey("tickets", "K" + std::to_string(i), "a" + std::to_string(i));
    }
  });
  std::thread tb([&] {
    for (int i = 0; i < kKeys; ++i) {
      meet(i);
      gotB[i] = b.hosts->reserveKey("tickets", "K" + std::to_string(i), "b" + std::to_string(i));
    }
  });
  ta.join();
  tb.join();
  int wonA = 0;
  int wonB = 0;
  int split = 0;
  for (int i = 0; i < kKeys; ++i) {
    split += gotA[i] != gotB[i] ? 1 : 0;
    wonA += gotA[i] == "a" + std::to_string(i) ? 1 : 0;
    wonB += gotB[i] == "b" + std::to_string(i) ? 1 : 0;
  }
  std::cout << kKeys << " keys reserved by two hosts at once: alpha's run " << wonA << ", beta's "
            << wonB << ", answered differently " << split << "\n";
  EXPECT_EQ(split, 0) << "both hosts are told the same run for every key";
  // Exactly one winner a key; which host wins each is the scheduler's (both usually win some).
  EXPECT_EQ(wonA + wonB, kKeys);
}

// A start sent again with its Idempotency-Key to another serve (a load balancer's retry) while
// the first is under way there: the key is kept for the first start only, and the second is
// told that start; one whose run never came (its serve stopped before its first commit) is
// replaced after 30 s.
TEST_F(PgHosts, AnIdempotencyKeyIsKeptForTheFirstStartOnly) {
  Host a = host("alpha");
  Host b = host("beta");
  const auto first = a.store->keepStartKey("ops", "tickets", "idem-1", {"aaaa00000001", "d1"});
  EXPECT_EQ(first.run, "aaaa00000001");
  const auto second = b.store->keepStartKey("ops", "tickets", "idem-1", {"bbbb00000001", "d1"});
  EXPECT_EQ(second.run, "aaaa00000001") << "under way on alpha: not replaced";
  EXPECT_EQ(second.digest, "d1");
  a.store->save(Stored("waiting", 0, "aaaa00000001"));
  sql("UPDATE starts SET time = time - 60000");
  EXPECT_EQ(b.store->keepStartKey("ops", "tickets", "idem-1", {"bbbb00000002", "d1"}).run,
            "aaaa00000001")
      << "its run is stored: kept for good";
  EXPECT_EQ(a.store->keepStartKey("ops", "tickets", "idem-2", {"aaaa00000002", "d2"}).run,
            "aaaa00000002");
  sql("UPDATE starts SET time = time - 60000 WHERE key = 'idem-2'");
  EXPECT_EQ(b.store->keepStartKey("ops", "tickets", "idem-2", {"bbbb00000003", "d2"}).run,
            "bbbb00000003")
      << "alpha stopped before storing its run: the key goes to the next start";
}
