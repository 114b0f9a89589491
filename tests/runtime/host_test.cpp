// The run host (docs/runtime.md#the-run-host, issue #10): group commit, the engine's turns, a stop
// by signal. Nothing here sleeps: workers finish at once, Sources are scripted, and a signal is
// asked for before the call it stops.
#include "jr2/host.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/post.hpp>
#include <condition_variable>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "counted_pool.h"
#include "host/host_internal.h"
#include "host/replay.h"
#include "host/trace.h"
#include "jr2/errors.h"
#include "jr2/run.h"
#include "jr2/sqlite_store.h"
#include "jr2/store.h"
#include "jr2/views.h"
#include "pool.jr2.h"
#include "run/engine.h"
#include "serve.jr2.h"
#include "standing.jr2.h"
#include "store/sqlite/db.h"

namespace {

namespace fs = std::filesystem;
using jr2rt::Json;
using jr2rt::RunStatus;

std::string FreshDir(const std::string& name) {
  const fs::path dir =
      fs::path(testing::TempDir()) / ("jr2-host-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string() + "/";
}

// The kinds of run `id`'s stored feed lines, in order.
std::vector<std::string> FeedKinds(jr2rt::Store& store, const std::string& id) {
  std::vector<std::string> kinds;
  for (const auto& line : store.feed(id, 0)) kinds.push_back(line.kind);
  return kinds;
}

// What a test lets the commit thread of a pipelined commit do: each saveAll waits until the test
// allows that many, and the one numbered `failAt` finds the disk full.
struct CommitGate {
  std::mutex mu;
  std::condition_variable cv;
  int entered = 0;
  int allowed = 0;
  int failAt = 0;
  int count() {
    std::lock_guard<std::mutex> lock(mu);
    return entered;
  }
  void allow(int n) {
    std::lock_guard<std::mutex> lock(mu);
    allowed = n;
    cv.notify_all();
  }
};

// A commit connection that saves only when its CommitGate allows (the rest is the real one's).
class GatedRows final : public jr2rt::RunRows {
 public:
  GatedRows(std::unique_ptr<jr2rt::RunRows> inner, CommitGate& gate)
      : inner_(std::move(inner)), gate_(gate) {}
  std::vector<int64_t> saveAll(const std::vector<Save>& batch) override {
    std::unique_lock<std::mutex> lock(gate_.mu);
    const int n = ++gate_.entered;
    gate_.cv.notify_all();  // for a test that waits for a batch to reach the commit thread
    gate_.cv.wait(lock, [&] { return gate_.allowed >= n; });
    if (n == gate_.failAt) throw jr2rt::StoreFull("the disk is full (a test's)");
    return inner_->saveAll(batch);
  }
  int64_t save(const jr2rt::StoredRun& run, const std::vector<jr2rt::FeedLine>& feed) override {
    return inner_->save(run, feed);
  }
  jr2rt::StoredRun load(const std::string& p) override { return inner_->load(p); }
  std::string resolve(const std::string& p) override { return inner_->resolve(p); }
  std::vector<jr2rt::RunSummary> list(bool all, bool views) override {
    return inner_->list(all, views);
  }
  jr2rt::RunSummary find(const std::string& p, bool view) override { return inner_->find(p, view); }
  std::optional<jr2rt::RunSummary> summary(const std::string& id) override {
    return inner_->summary(id);
  }
  int64_t revision(const std::string& id) override { return inner_->revision(id); }
  std::optional<jr2rt::RunSummary> byKey(const std::string& w, const std::string& k) override {
    return inner_->byKey(w, k);
  }
  std::vector<jr2rt::RunSummary> page(const jr2rt::RunQuery& q) override { return inner_->page(q); }
  std::map<std::pair<std::string, std::string>, int64_t> runCounts() override {
    return inner_->runCounts();
  }
  int64_t prune(int64_t beforeMs, const std::string& w) override {
    return inner_->prune(beforeMs, w);
  }

 private:
  std::unique_ptr<jr2rt::RunRows> inner_;
  CommitGate& gate_;
};

// The SQLite store, counting its transactions that write.
class CountingStore final : public jr2rt::Store {
 public:
  explicit CountingStore(const std::string& path) : inner_(jr2rt::OpenSqliteStore(path)) {}
  int64_t commits = 0;
  int64_t runsSaved = 0;
  size_t largestBatch = 0;
  int64_t locks = 0;      // drive locks asked for (lock()), taken or not
  int64_t gateScans = 0;  // feeds read for the Gates they opened (gatesOpened, gateOpened)

  std::vector<size_t> inputs;  // the size of the input each saved run gave (0: none)

  int64_t save(const jr2rt::StoredRun& run, const std::vector<jr2rt::FeedLine>& feed) override {
    ++commits;
    ++runsSaved;
    inputs.push_back(run.inputText.size());
    return inner_->save(run, feed);
  }
  bool full = false;  // every save refused, as a full disk refuses it
  std::vector<int64_t> saveAll(const std::vector<Save>& batch) override {
    if (full) throw jr2rt::StoreFull("the disk is full (a test's)");
    ++commits;
    runsSaved += static_cast<int64_t>(batch.size());
    for (const Save& save : batch) inputs.push_back(save.run.inputText.size());
    largestBatch = std::max(largestBatch, batch.size());
    return inner_->saveAll(batch);
  }
  jr2rt::StoredRun load(const std::string& prefix) override { return inner_->load(prefix); }
  std::string resolve(const std::string& prefix) override { return inner_->resolve(prefix); }
  std::vector<jr2rt::RunSummary> list(bool all, bool views) override {
    return inner_->list(all, views);
  }
  jr2rt::RunSummary find(const std::string& prefix, bool view) override {
    return inner_->find(prefix, view);
  }
  std::vector<Json> journal(const std::string& id) override { return inner_->journal(id); }
  int64_t statements() const override { return inner_->statements(); }
  // With a gate: serve's commit thread saves through it (a pipelined commit); without, the host
  // commits on the engine's thread, so that `commits` counts every one.
  CommitGate* gate = nullptr;
  std::unique_ptr<jr2rt::RunRows> commitConnection() override {
    if (gate == nullptr) return nullptr;
    return std::make_unique<GatedRows>(inner_->commitConnection(), *gate);
  }
  int64_t revision(const std::string& id) override { return inner_->revision(id); }
  std::optional<jr2rt::RunSummary> summary(const std::string& id) override {
    return inner_->summary(id);
  }
  std::vector<jr2rt::FeedLine> feed(const std::string& id, int64_t after) override {
    return inner_->feed(id, after);
  }
  std::vector<jr2rt::RunSummary> page(const jr2rt::RunQuery& q) override { return inner_->page(q); }
  std::map<std::pair<std::string, std::string>, int64_t> runCounts() override {
    return inner_->runCounts();
  }
  std::vector<std::string> gatesOpened(const std::string& id) override {
    ++gateScans;
    return inner_->gatesOpened(id);
  }
  bool gateOpened(const std::string& id, const std::string& gate) override {
    ++gateScans;
    return inner_->gateOpened(id, gate);
  }
  std::optional<StartKey> startKey(const std::string& c, const std::string& w,
                                   const std::string& k) override {
    return inner_->startKey(c, w, k);
  }
  StartKey keepStartKey(const std::string& c, const std::string& w, const std::string& k,
                        const StartKey& s) override {
    return inner_->keepStartKey(c, w, k, s);
  }
  int64_t prune(int64_t before, const std::string& wf) override {
    return inner_->prune(before, wf);
  }
  std::unique_ptr<jr2rt::RunLock> lock(
      const std::string& id, const std::function<void(const std::string&)>& onWait) override {
    ++locks;
    return inner_->lock(id, onWait);
  }
  int64_t ask(const std::string& id, const std::string& verb, const Json& body) override {
    return inner_->ask(id, verb, body);
  }
  std::optional<Head> head(const std::string& wf) override { return inner_->head(wf); }
  std::vector<Head> heads() override { return inner_->heads(); }
  std::vector<Request> asked() override { return inner_->asked(); }
  bool takeRequest(int64_t seq) override { return inner_->takeRequest(seq); }
  void answer(int64_t seq, const Json& a) override { inner_->answer(seq, a); }
  std::optional<Json> answerOf(int64_t seq) override { return inner_->answerOf(seq); }
  bool withdraw(int64_t seq) override { return inner_->withdraw(seq); }
  bool taken(int64_t seq) override { return inner_->taken(seq); }
  std::optional<Json> hookAnswer(const std::string& hook, const std::string& d) override {
    return inner_->hookAnswer(hook, d);
  }
  void logHooks(const std::vector<HookEntry>& entries) override {
    ++hookLogs;
    inner_->logHooks(entries);
  }
  int64_t hookLogs = 0;  // hook-log transactions of their own
  // Hosts sharing the store, when a test gives them (FakeHosts).
  jr2rt::Hosts* fakeHosts = nullptr;
  jr2rt::Hosts* hosts() override { return fakeHosts; }
  std::optional<jr2rt::RunSummary> byKey(const std::string& w, const std::string& k) override {
    return inner_->byKey(w, k);
  }
  std::vector<Json> hookLog(const std::string& hook, int64_t limit) override {
    return inner_->hookLog(hook, limit);
  }

 private:
  std::unique_ptr<jr2rt::Store> inner_;
};

// One host's lease and the dispatch keys' reservations, in memory, over a CountingStore: what
// RunHost::dispatch asks of the PostgreSQL store's (pg_hosts_test.cpp holds the real one), with
// the faults a server restart brings. `loseNextReserve`: the next reservation is made and its
// answer lost (StoreUnreachable, as a connection cut after the statement went through).
// `reserve()` makes one for another host, `kill()` ends that host's lease.
class FakeHosts final : public jr2rt::Hosts {
 public:
  explicit FakeHosts(jr2rt::Store& store) : store_(store) {}
  bool loseNextReserve = false;
  int reserves = 0;
  void reserve(const std::string& wf, const std::string& key, const std::string& run) {
    keys_[{wf, key}] = {run, "other", true};
  }
  void kill(const std::string& host) {
    for (auto& [k, r] : keys_) r.live = r.live && r.host != host;
  }
  bool reserved(const std::string& wf, const std::string& key) const {
    return keys_.count({wf, key}) != 0;
  }

  Lease join(const std::string& name, int64_t ttlMs) override {
    lease_ = Lease{name, lease_ ? lease_->epoch + 1 : 1, ttlMs};
    return *lease_;
  }
  std::optional<Lease> lease() const override { return lease_; }
  void heartbeat() override {}
  std::vector<std::string> reap() override { return {}; }
  std::vector<jr2rt::RunSummary> claim(int64_t, const std::vector<std::string>&) override {
    return {};
  }
  std::string instanceToken() override { return token_; }
  void release(const std::vector<std::string>&) override {}
  void leave() override {}
  bool takeHead(const std::string&) override { return true; }
  std::optional<Owner> owner(const std::string&) override { return std::nullopt; }
  std::string reserveKey(const std::string& wf, const std::string& key,
                         const std::string& run) override {
    ++reserves;
    if (auto live = store_.byKey(wf, key); live && live->status == "waiting") return live->id;
    auto it = keys_.find({wf, key});
    if (it != keys_.end()) {
      const auto stored = store_.summary(it->second.run);
      if (stored && stored->status == "waiting") return it->second.run;
      // Held while its host lives and its run has not come.
      if (!stored && it->second.live) return it->second.run;
    }
    keys_[{wf, key}] = {run, lease_->host, true};
    if (loseNextReserve) {
      loseNextReserve = false;
      throw jr2rt::StoreUnreachable("lost the connection to the run store (a test's)");
    }
    return run;
  }
  void releaseKey(const std::string& wf, const std::string& key, const std::string& run) override {
    auto it = keys_.find({wf, key});
    if (it != keys_.end() && it->second.run == run) keys_.erase(it);
  }
  bool reservedLive(const std::string& id) override {
    for (const auto& [k, r] : keys_) {
      if (r.run == id && r.live) return true;
    }
    return false;
  }
  // A keeper that never judges the lease lost, and wakes nobody.
  struct Keeper final : jr2rt::Hosts::Keeper {
    std::string fenced() override { return ""; }
    std::string trouble() override { return ""; }
    void renewed(const Lease&) override {}
    bool listening() override { return false; }
    Counts counts() override { return {}; }
  };
  std::unique_ptr<jr2rt::Hosts::Keeper> keep(int64_t, bool,
                                             std::function<void(unsigned)>) override {
    return std::make_unique<Keeper>();
  }
  int64_t notifies() const override { return 0; }

 private:
  const std::string token_ = std::string(64, 'a');
  struct Reservation {
    std::string run;
    std::string host;
    bool live = true;
  };
  jr2rt::Store& store_;
  std::optional<Lease> lease_;
  std::map<std::pair<std::string, std::string>, Reservation> keys_;
};

// Exports every stored run of `workflow` and replays it (docs/runtime.md#replay): how many replay
// as they ran (each that does not is a failure naming its divergence).
int ReplayEvery(jr2rt::Store& store, const jr2rt::Registry& registry, const std::string& workflow) {
  int identical = 0;
  for (const auto& r : store.list(true)) {
    if (r.workflow != workflow) continue;
    std::stringstream trace;
    jr2rt::ExportTrace(store, registry, workflow, r.id, trace);
    const jr2rt::ReadTrace read(trace, r.id);
    const jr2rt::ReplayResult got = jr2rt::Replay(registry, read);
    EXPECT_TRUE(got.identical) << r.id << ": " << got.message;
    identical += got.identical ? 1 : 0;
  }
  return identical;
}

std::string Tasks(const std::string& dir, int n) {
  Json tasks = Json::array();
  char id[16];
  for (int i = 0; i < n; ++i) {
    std::snprintf(id, sizeof id, "t%05d", i);
    tasks.push_back({{"id", id}});
  }
  const std::string path = dir + "tasks.json";
  std::ofstream(path) << tasks.dump();
  return path;
}

struct Host : testing::Test {
  jr2rt::Registry registry;
  jr2rt::SystemClock clock;
  Host() {
    jr2gen::pool::RegisterWorkflows(registry);
    jr2gen::serve::RegisterWorkflows(registry);
    jr2gen::standing::RegisterWorkflows(registry);
  }
  ~Host() override { jr2rt::RunHost::Interrupt(0); }
};

TEST_F(Host, WorkersThatFinishAtOnceCostAFractionOfACommitEach) {
  const std::string dir = FreshDir("group");
  const int kItems = 2000;
  CountingStore store(dir + "store.db");
  std::string id;
  {
    jr2rt::RunHost host(registry, store, clock);
    id = host.start("conformance_instant", {{"tasks", Tasks(dir, kItems)}, {"jobs", 8}}, dir);
    ASSERT_EQ(host.run(id).status(), RunStatus::kDone) << host.run(id).reason();
  }
  const double perItem = static_cast<double>(store.commits) / kItems;
  std::cout << "[ host ] " << kItems << " items at cap 8: " << store.commits << " commits, "
            << perItem << " per settled item\n";
  EXPECT_LE(perItem, 0.25);
  // Every item is stored, once, in the journal; the feed tells each settle.
  const jr2rt::StoredRun stored = store.load(id);
  EXPECT_EQ(stored.status, "done");
  EXPECT_EQ(stored.snapshot["output"]["items"].size(), static_cast<size_t>(kItems));
  int64_t settled = 0;
  for (const auto& f : store.feed(id, 0)) settled += f.kind == "settled" ? 1 : 0;
  EXPECT_EQ(settled, kItems);
}

TEST_F(Host, OneTurnThatMovesTwoRunsIsOneCommitOfBoth) {
  // Two runs on one engine, each waiting for its Source; both answers arrive before the next
  // turn: that turn commits both runs at once.
  auto engine = std::make_shared<jr2rt::Engine>(2);
  std::vector<std::vector<jr2rt::Run*>> turns;
  engine->onTurn([&](const std::vector<jr2rt::Run*>& runs) {
    turns.push_back(runs);
    return true;
  });
  jr2rt::ManualClock manual;
  std::vector<std::function<void(Json)>> pending;
  auto make = [&](const std::string& id) {
    auto run = std::make_unique<jr2rt::Run>(registry, *registry.workflow("conformance_jobs"), id,
                                            manual, engine);
    run->scriptNext("scripted_next", [&](const jr2rt::NextQuery&, std::function<void(Json)> a) {
      pending.push_back(std::move(a));
    });
    return run;
  };
  auto a = make("a");
  auto b = make("b");
  a->start(Json::object());
  b->start(Json::object());
  ASSERT_EQ(pending.size(), 2u);
  turns.clear();
  for (auto& answer : pending) answer({{"item", {{"id", "X"}, {"mode", "wait"}}}, {"open", 0}});
  engine->drive();
  ASSERT_FALSE(turns.empty());
  EXPECT_EQ(turns.front().size(), 2u) << "both runs moved in one turn: one commit for both";
  EXPECT_EQ(turns.size(), 1u);
  EXPECT_EQ(a->gates().size(), b->gates().size());
}

TEST(Engine, HandleUntilRunsWhatOtherThreadsPostUntilDoneAndNoTurn) {
  // serve's drain: the engine's handlers run (a connection's message, said on its thread) while
  // the connections end, and no turn comes.
  jr2rt::Engine engine(1);
  uint64_t turnsSeen = 0;
  engine.onTurn([&](const std::vector<jr2rt::Run*>&) {
    ++turnsSeen;
    return true;
  });
  std::atomic<int> ran{0};
  std::thread other([&] {
    for (int i = 0; i < 3; ++i) boost::asio::post(engine.io(), [&ran] { ++ran; });
  });
  // Nothing of its own is outstanding on the context: it waits for what the other thread posts.
  engine.handleUntil([&] { return ran.load() == 3; },
                     std::chrono::steady_clock::now() + std::chrono::seconds(30));
  other.join();
  EXPECT_EQ(ran.load(), 3);
  EXPECT_EQ(turnsSeen, 0u);
  // A deadline gone already: no wait, and what is posted after waits for the next call.
  boost::asio::post(engine.io(), [&ran] { ++ran; });
  engine.handleUntil([] { return false; }, std::chrono::steady_clock::now());
  EXPECT_EQ(ran.load(), 3);
  engine.handleUntil([&] { return ran.load() == 4; },
                     std::chrono::steady_clock::now() + std::chrono::seconds(30));
  EXPECT_EQ(ran.load(), 4);
}

TEST_F(Host, ASignalStopsAtTheTurnAndTheEffectsItHeldReadInterrupted) {
  // SIGTERM arrives before the first turn ends: the turn is committed (its workers and their
  // effects recorded as started), nothing more is, and no process starts. A new host finds each
  // effect started without a result: `interrupted`, never run again.
  const std::string dir = FreshDir("signal");
  const std::string log = dir + "log.txt";
  auto store = jr2rt::OpenSqliteStore(dir + "store.db");
  const Json input = {{"tasks", Tasks(dir, 3)}, {"log", log}, {"nap", "30"}};
  std::string id;
  {
    jr2rt::RunHost host(registry, *store, clock);
    jr2rt::RunHost::Interrupt(SIGTERM);
    EXPECT_THROW(host.start("conformance_torture", input, dir), jr2rt::HostInterrupted);
    EXPECT_EQ(host.stoppedEffects(), 0) << "the effects were held for the commit: none started";
    ASSERT_EQ(store->list(false).size(), 1u) << "the run is stored, waiting";
    id = store->list(false).front().id;
  }
  jr2rt::RunHost::Interrupt(0);
  jr2rt::RunHost again(registry, *store, clock);
  again.take(id, "conformance_torture");
  again.tick(id);
  jr2rt::Run& run = again.run(id);
  ASSERT_TRUE(run.ended()) << run.reason();
  const Json& failures = run.output()["failures"];
  EXPECT_EQ(failures.size(), 3u);
  for (const auto& [item, f] : failures.items()) {
    EXPECT_EQ(f["reason"], "interrupted: the process stopped while std.command ran") << item;
  }
  EXPECT_FALSE(fs::exists(log) && fs::file_size(log) > 0) << "no process ran";
}

// A save the store refused (a full disk) gives its lines back, before the lines told since, all
// under its turn's mark: the save that stores them stores one turn, whose mark comes first, in
// the order the lines were told — whether the refusal came before more lines (the commit on the
// engine's thread) or after them (serve's commit thread, while the turns went on).
TEST_F(Host, AFailedSavesLinesGoBeforeLaterOnesUnderItsTurnsMark) {
  const std::string dir = FreshDir("failed-mark");
  auto store = jr2rt::OpenSqliteStore(dir + "store.db");
  for (const bool toldMeanwhile : {true, false}) {
    const std::string id = toldMeanwhile ? "fa11ed000001" : "fa11ed000002";
    jr2rt::Run run(registry, *registry.workflow("conformance_secret"), id, clock);
    run.start({{"note", {{"deep", {{"secret", "s"}}}}}});
    jr2rt::RunSaver saver(*store, clock);
    saver.addLine("a1", 1);
    saver.addLine("a2", 1);
    auto first = saver.prepare(run);
    ASSERT_TRUE(first.has_value());
    if (toldMeanwhile) saver.addLine("b1", 2);  // told while the store had the save
    saver.failed(run, *first);                  // the store refused it
    if (!toldMeanwhile) saver.addLine("b1", 2);
    auto again = saver.prepare(run);
    ASSERT_TRUE(again.has_value());
    saver.committed(store->save(again->run, again->feed), *again);
    std::vector<std::string> stored;
    for (const auto& line : store->feed(id, 0))
      stored.push_back(line.kind == "turn" ? "<turn>" : line.line);
    EXPECT_EQ(stored, (std::vector<std::string>{"<turn>", "a1", "a2", "b1"}))
        << (toldMeanwhile ? "lines told while the save was refused" : "lines told after");
  }
}

// A run's input is stored once, beside its snapshot (#33): a host that takes the run up (another
// process, serve after a restart) does not give it again at its first save, as it did before.
TEST_F(Host, ARunTakenUpDoesNotStoreItsInputAgain) {
  const std::string dir = FreshDir("input-once");
  CountingStore store(dir + "store.db");
  const Json input = {{"note", {{"deep", {{"secret", "s"}}}}}};
  std::string id;
  {
    jr2rt::RunHost host(registry, store, clock);
    id = host.start("conformance_secret", input, dir);
  }
  ASSERT_FALSE(store.inputs.empty());
  EXPECT_GT(store.inputs.front(), 0u) << "the first save gives the input";
  const size_t before = store.inputs.size();
  jr2rt::RunHost again(registry, store, clock);
  again.take(id, "conformance_secret");
  again.run(id).deliver("approval", "rate", {{"score", 1}});
  again.tick(id);
  ASSERT_GT(store.inputs.size(), before) << "the step was stored";
  for (size_t i = before; i < store.inputs.size(); ++i)
    EXPECT_EQ(store.inputs[i], 0u) << "save " << i << " gave the input again";
  EXPECT_EQ(store.load(id).snapshot["input"], input) << "the input stored first is kept";
}

TEST_F(Host, AStoredRunThatNoLongerFitsIsMarkedDriftedOnce) {
  const std::string dir = FreshDir("drift");
  auto store = jr2rt::OpenSqliteStore(dir + "store.db");
  jr2rt::StoredRun bad;
  bad.id = "abcdef123456";
  bad.workflow = "conformance_instant";
  bad.status = "waiting";
  bad.snapshot = {{"version", 1},
                  {"id", bad.id},
                  {"workflow", bad.workflow},
                  {"status", "waiting"},
                  {"reason", ""},
                  {"input", Json::object()},
                  {"output", nullptr},
                  {"top", {{"kind", "no such actor"}}}};
  store->save(bad);
  jr2rt::RunHost host(registry, *store, clock);
  EXPECT_THROW(host.take("abcd", "conformance_instant"), jr2rt::RunDrifted);
  EXPECT_EQ(store->load("abcd").status, "drifted");
  EXPECT_THROW(host.peek("abcd", "conformance_instant"), jr2rt::RunDrifted);
  EXPECT_THROW(host.peek("abcd", "conformance_torture"), jr2rt::BadInput)
      << "another workflow's run is refused, not restored";
}

// Reads come from the view each save stores (#31): one statement, no restore — a reader whose
// build does not even know the workflow reads it — stamped by the host's clock. A view another
// build saved is not trusted: the run is restored once, which finds whether it still fits.
TEST_F(Host, ReadsComeFromTheSavedViewAndNeverRestoreTheRun) {
  const std::string dir = FreshDir("views");
  CountingStore store(dir + "store.db");
  jr2rt::ManualClock manual;
  manual.set(1'700'000'000'000);
  std::string id;
  {
    jr2rt::RunHost host(registry, store, manual);
    id = host.start("conformance_secret", {{"note", {{"deep", {{"secret", "s3"}}}}}}, dir);
    ASSERT_EQ(host.run(id).status(), RunStatus::kWaiting) << host.run(id).reason();
  }
  for (const auto& f : store.feed(id, 0)) EXPECT_EQ(f.timeMs, manual.nowMs()) << f.kind;
  EXPECT_EQ(store.summary(id)->updatedMs, manual.nowMs());

  jr2rt::Registry bare;  // a reader that could not restore this run if it tried
  jr2rt::RunHost reader(bare, store, manual);
  const int64_t before = store.statements();
  const Json view = reader.view(id.substr(0, 8), "conformance_secret");
  const int64_t statements = store.statements() - before;
  std::cout << "[ host ] a run read through its view: " << statements << " statement\n";
  EXPECT_EQ(statements, 1);
  const Json& report = view["report"];
  EXPECT_EQ(report["runId"], id);
  EXPECT_EQ(report["status"], "waiting");
  std::set<std::string> gates;
  for (const auto& g : report["gates"]) gates.insert(g["gate"].get<std::string>());
  EXPECT_EQ(gates, (std::set<std::string>{"approval", "both.x.review"}));
  EXPECT_EQ(report["text"]["fields"]["rate"][0]["name"], "score");
  EXPECT_FALSE(view["observe"]["value"].empty());
  EXPECT_FALSE(view["observe"].dump().find("s3") != std::string::npos)
      << "the observation never carries the context";
  EXPECT_EQ(view["working"], false);
  EXPECT_THROW(reader.view(id, "conformance_torture"), jr2rt::BadInput);

  // The same run as another build saved it: restored once to be read (a build that cannot
  // restore it says so), and what it reads is what the view said.
  jr2rt::StoredRun stored = store.load(id);
  Json other = Json::parse(store.find(id, true).view);
  other["build"] = "another build";
  stored.viewText = other.dump();
  store.save(stored, {});
  jr2rt::RunHost full(registry, store, manual);
  const Json restored = full.view(id, "conformance_secret");
  EXPECT_EQ(restored["report"]["gates"], report["gates"]);
  EXPECT_EQ(restored["observe"], view["observe"]);
  EXPECT_THROW(reader.view(id, "conformance_secret"), jr2rt::RunDrifted);
}

// A Gate answer as serve takes it (#31): the run found with one read (RunHost::summary, what
// serve's find() calls), the Gate checked once (Run::deliver through RunHost::answerAt), and the
// turn that delivers it stored by one commit: one statement for the run's row, one per feed line.
TEST_F(Host, AGateAnswerReadsTheStoreOnceAndCommitsOnce) {
  const std::string dir = FreshDir("answer");
  CountingStore store(dir + "store.db");
  jr2rt::ManualClock manual;
  jr2rt::RunHost host(registry, store, manual);
  const std::string id =
      host.start("conformance_secret", {{"note", {{"deep", {{"secret", "s"}}}}}}, dir);
  ASSERT_EQ(host.run(id).gates().size(), 2u);
  const size_t lines = store.feed(id, 0).size();
  const int64_t before = store.statements();
  const int64_t commits = store.commits;
  const int64_t afterRead = [&] {
    const jr2rt::RunSummary r = host.summary(id.substr(0, 8));
    const int64_t n = store.statements();
    host.answerAt(r, "approval", "rate", {{"score", 3}}, "reviewer");
    return n;
  }();
  host.tick(id);  // the engine's next turn: the answer delivered, the turn committed
  const int64_t statements = store.statements() - before;  // before the feed is read below
  const int64_t written = static_cast<int64_t>(store.feed(id, 0).size() - lines);
  std::cout << "[ host ] a Gate answer: " << afterRead - before << " read, "
            << store.commits - commits << " commit, " << statements << " statements in all ("
            << written << " feed lines)\n";
  EXPECT_EQ(afterRead - before, 1) << "the store is read once";
  EXPECT_EQ(store.commits - commits, 1);
  // The answer's turn tells three lines: its `turn` mark (docs/runtime.md#traces), `answered`
  // (who, what) and `gate-closed`; they are stored as one row (store/rows.h, its number found by
  // the insert), so the commit's statements are what they would be for one line: 5, where a row
  // a line (the last number read first, then each line) made 8.
  EXPECT_EQ(written, 3);
  EXPECT_EQ(statements, 5);
  EXPECT_EQ(host.run(id).gates().size(), 1u);
  // Who answered, what and with what (#34): the feed's audit trail of the Gate.
  {
    const auto feed = store.feed(id, 0);
    const auto answered =
        std::find_if(feed.begin(), feed.end(), [](const auto& l) { return l.kind == "answered"; });
    ASSERT_NE(answered, feed.end()) << "no `answered` line on the feed";
    EXPECT_EQ(answered->data, Json({{"gate", "approval"},
                                    {"event", "rate"},
                                    {"payload", {{"score", 3}}},
                                    {"by", "reviewer"}}));
    EXPECT_EQ(answered->line, "approval answered rate by reviewer");
  }
  // Each refusal by its kind, before anything moved.
  const jr2rt::RunSummary r = host.summary(id);
  EXPECT_THROW(host.answerAt(r, "approval", "rate", {{"score", 1}}, "reviewer"),
               jr2rt::GateRefused);
  EXPECT_THROW(host.answerAt(r, "both.x.review", "rate", {{"score", 1}}, "reviewer"),
               jr2rt::BadInput);
  EXPECT_THROW(host.answerAt(r, "both.x.review", "accept", {{"extra", 1}}, "reviewer"),
               jr2rt::BadInput);
  host.answerAt(r, "both.x.review", "accept", Json::object(), "reviewer");
  try {
    host.answerAt(r, "both.x.review", "accept", Json::object(), "reviewer");
    ADD_FAILURE() << "a second answer in one turn was taken";
  } catch (const jr2rt::GateRefused& e) {
    EXPECT_EQ(e.why, jr2rt::GateRefused::Why::kTaken);
    EXPECT_EQ(jr2rt::RuleOf(jr2rt::KindOf(e)).http, 409u);
  }
  host.tick(id);
  ASSERT_TRUE(host.run(id).ended());
  try {
    host.answerAt(host.summary(id), "approval", "rate", {{"score", 1}}, "reviewer");
    ADD_FAILURE() << "an ended run took an answer";
  } catch (const jr2rt::RunEnded& e) {
    EXPECT_EQ(jr2rt::RuleOf(jr2rt::KindOf(e)).exit, 65);
    EXPECT_EQ(jr2rt::RuleOf(jr2rt::KindOf(e)).http, 409u);
  }
}

// A Pool's items are in its journal, not in each save's view; a read gives them back from it, as
// a restore would.
TEST_F(Host, APoolsViewTakesItsItemsFromTheJournal) {
  const std::string dir = FreshDir("views-pool");
  auto store = jr2rt::OpenSqliteStore(dir + "store.db");
  { std::ofstream(dir + "tasks.json") << R"([{"id": "T-1"}, {"id": "T-2"}, {"id": "T-3"}])"; }
  std::string id;
  {
    jr2rt::RunHost host(registry, *store, clock);
    id = host.start("conformance_hooked", {{"tasks", dir + "tasks.json"}}, dir);
    host.send(id, "T-2.review", "accept", Json::object());
    ASSERT_EQ(host.run(id).status(), RunStatus::kWaiting) << host.run(id).reason();
  }
  const Json saved = Json::parse(store->find(id, true).view);
  EXPECT_EQ(saved["report"]["sofar"]["journaled"], true);
  EXPECT_FALSE(saved["report"]["sofar"].contains("items")) << "a save writes no item again";
  EXPECT_EQ(saved["menus"].size(), 1u) << "two Gates of one kind store one Menu";
  EXPECT_TRUE(saved["report"]["gates"][0].contains("menuOf"));
  jr2rt::RunHost reader(registry, *store, clock);
  const Json view = reader.view(id, "conformance_hooked");
  const std::unique_ptr<jr2rt::Run> run = reader.peek(id, "conformance_hooked");
  EXPECT_EQ(view["report"]["sofar"], run->sofar()) << "the same as a restore finds";
  EXPECT_EQ(view["report"]["sofar"]["items"], (Json{{"T-2", "T-2"}}));
  EXPECT_EQ(view["report"]["gates"].size(), 2u);
  EXPECT_EQ(view["report"]["gates"][0]["menu"], view["report"]["gates"][1]["menu"]);
  EXPECT_EQ(view["report"]["gates"][0]["menu"][0]["event"], "accept");
  EXPECT_FALSE(view.contains("menus"));
}

// A read of a running Pool's view takes its items from the journal by the rule its restore reads
// them by (ReadJournalEntry, jr2/pool_lines.h): what is not one item's settle or failure is left
// out (a load of the run names the damage; a read shows what it can).
TEST(Views, ARunningPoolsViewLeavesOutJournalEntriesThatAreNotAnItems) {
  Json view = {{"report", {{"sofar", {{"journaled", true}, {"status", "running"}}}}}};
  const std::vector<Json> journal = {
      {{"settled", "A"}, {"output", {{"n", 1}}}},
      {{"failed", "B"}, {"failure", {{"reason", "it broke"}, {"detail", nullptr}}}},
      {{"settled", "C"}, {"output", 3}, {"extra", 0}},         // a member more
      {{"failed", "D"}, {"failure", {{"why", "no reason"}}}},  // a failure without its reason
      {{"failed", "E"}, {"failure", "text"}},                  // a failure that is not an object
      {{"settled", 7}, {"output", 7}},                         // an id that is not text
      Json::array({"F", "f"}),                                 // not an entry as loaded
  };
  jr2rt::FillFromJournal(view, journal);
  const Json& sofar = view["report"]["sofar"];
  EXPECT_EQ(sofar["items"], (Json{{"A", {{"n", 1}}}}));
  EXPECT_EQ(sofar["failures"], (Json{{"B", {{"reason", "it broke"}, {"detail", nullptr}}}}));
  EXPECT_FALSE(sofar.contains("journaled"));
  EXPECT_EQ(sofar["status"], "running");
}

// An ended Pool's output (#33): its items are in its journal, one entry each, and neither the
// run's snapshot nor its view stores them again (220 kB each at 10,000 items); a load, a read of
// its view and a restore give them back whole. A read that asks for no items gets none.
TEST_F(Host, AnEndedPoolsOutputIsStoredOnceInItsJournal) {
  const std::string dir = FreshDir("output-once");
  auto store = jr2rt::OpenSqliteStore(dir + "store.db");
  std::string id;
  Json output;
  {
    jr2rt::RunHost host(registry, *store, clock);
    id = host.start("conformance_instant", {{"tasks", Tasks(dir, 40)}, {"jobs", 8}}, dir);
    ASSERT_EQ(host.run(id).status(), RunStatus::kDone) << host.run(id).reason();
    output = host.run(id).output();
    EXPECT_EQ(host.view(id, "conformance_instant")["report"]["output"], output)
        << "the host that drives it reads it whole";
  }
  ASSERT_EQ(output["items"].size(), 40u);
  ASSERT_EQ(output["items"]["t00017"], "t00017");
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir + "store.db").c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT snapshot, view FROM runs", -1, &st, nullptr),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    const std::string snapshot = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    const std::string view = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
    sqlite3_finalize(st);
    sqlite3_close(db);
    EXPECT_EQ(snapshot.find("t00017"), std::string::npos) << snapshot;
    EXPECT_NE(snapshot.find("\"output\":{\"status\":\"drained\"},\"outputInJournal\":true"),
              std::string::npos)
        << snapshot;
    EXPECT_EQ(view.find("t00017"), std::string::npos) << view;
    EXPECT_NE(view.find("\"outputInJournal\":true"), std::string::npos) << view;
  }
  const jr2rt::StoredRun loaded = store->load(id);
  EXPECT_EQ(loaded.snapshot["output"], output);
  EXPECT_FALSE(loaded.snapshot.contains("outputInJournal"));
  jr2rt::RunHost reader(registry, *store, clock);
  const Json view = reader.view(id, "conformance_instant");
  EXPECT_EQ(view["report"]["output"], output);
  EXPECT_FALSE(view["report"].contains("outputInJournal"));
  const Json bare = reader.view(reader.summary(id, true), /*items=*/false);
  EXPECT_FALSE(bare["report"]["output"].contains("items")) << "none read for a read without items";
  EXPECT_EQ(reader.peek(id, "conformance_instant")->output(), output);
}

// A Pool over a list in its input (#33): the input is stored once, beside the snapshot; no
// commit after the first writes it again, and a run taken up by another host has it whole.
TEST_F(Host, APoolsInputIsStoredOnceAndARestoreHasItWhole) {
  const std::string dir = FreshDir("input-once");
  auto store = jr2rt::OpenSqliteStore(dir + "store.db");
  Json tasks = Json::array();
  for (int i = 0; i < 6; ++i) tasks.push_back({{"id", "Q-" + std::to_string(i)}});
  const Json input = {{"tasks", tasks}};  // `jobs` left to its default, 2
  std::string id;
  {
    jr2rt::RunHost host(registry, *store, clock);
    id = host.start("conformance_queued", input, dir);
    host.send(id, "Q-0.review", "accept", Json::object());
    host.send(id, "Q-1.review", "accept", Json::object());
    ASSERT_EQ(host.run(id).status(), RunStatus::kWaiting) << host.run(id).reason();
  }
  EXPECT_EQ(store->load(id).snapshot["input"], input) << "put back by load()";
  {
    // What is stored: the input in a row of its own (`inputs`), none in the run's row, no
    // snapshot text holding an item.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir + "store.db").c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db,
                                 "SELECT snapshot, (SELECT input FROM inputs WHERE run = runs.id),"
                                 " runs.input IS NULL FROM runs",
                                 -1, &st, nullptr),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    const std::string snapshot = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    const std::string stored = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
    EXPECT_EQ(sqlite3_column_int(st, 2), 1) << "the run's row holds no input";
    sqlite3_finalize(st);
    sqlite3_close(db);
    EXPECT_EQ(snapshot.find("Q-5"), std::string::npos) << snapshot;
    EXPECT_EQ(Json::parse(stored), input);
    EXPECT_NE(snapshot.find("\"inputOver\":{\"jobs\":2}"), std::string::npos)
        << "the Pool keeps only what its input adds to the run's: " << snapshot;
  }
  // Another host takes the run up: its Pool has the whole input and goes on to the end.
  jr2rt::RunHost next(registry, *store, clock);
  next.take(id, "conformance_queued");
  for (int i = 2; i < 6; ++i) {
    next.send(id, "Q-" + std::to_string(i) + ".review", "accept", Json::object());
  }
  ASSERT_EQ(next.run(id).status(), RunStatus::kDone) << next.run(id).reason();
  EXPECT_EQ(next.run(id).output()["items"].size(), 6u);
  EXPECT_EQ(next.run(id).input(), input);
}

// A Pool of workers at their Gates is stored a worker a row (#33, store/sqlite/parts.cpp): each
// answer's commit writes the pieces that moved, a host that takes the run up writes them all again
// under its own ids, and every read is the run whole. JR2_CHECK_SAVES (set for this suite) reads
// each save back whole inside its transaction.
TEST_F(Host, APoolAtItsGatesIsStoredAWorkerARowAndReadBackWhole) {
  const std::string dir = FreshDir("parts");
  auto store = jr2rt::OpenSqliteStore(dir + "store.db");
  Json tasks = Json::array();
  for (int i = 0; i < 40; ++i) tasks.push_back({{"id", "P-" + std::to_string(100 + i)}});
  const auto parts = [&] {  // the rows of `parts`, read by a connection of another tool
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open((dir + "store.db").c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    std::string out;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM parts", -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      out = std::to_string(sqlite3_column_int64(st, 0));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
  };
  const auto live = [&](const Json& snapshot) {
    std::set<std::string> ids;
    for (const auto& w : snapshot["top"]["workers"]) ids.insert(w["id"].get<std::string>());
    return ids;
  };
  std::string id;
  {
    jr2rt::RunHost host(registry, *store, clock);
    id = host.start("conformance_queued", {{"tasks", tasks}, {"jobs", 16}}, dir);
    EXPECT_EQ(parts(), "48") << "16 workers: each one's snapshot, observation and Gate";
    for (int i = 0; i < 10; ++i) {
      host.send(id, "P-" + std::to_string(100 + i) + ".review", "accept", Json::object());
      const jr2rt::StoredRun stored = store->load(id);
      EXPECT_EQ(live(stored.snapshot), live(host.run(id).snapshot())) << "after answer " << i;
      EXPECT_EQ(parts(), "48") << "the settled worker's parts went, the new one's came";
    }
    const Json view = Json::parse(store->find(id, true).view);
    EXPECT_EQ(view["observe"]["children"].size(), 16u) << view.dump().substr(0, 400);
  }
  // Another host takes it up: its workers' texts are written again under ids of its own.
  jr2rt::RunHost next(registry, *store, clock);
  next.take(id, "conformance_queued");
  for (int i = 10; i < 40; ++i) {
    next.send(id, "P-" + std::to_string(100 + i) + ".review", "accept", Json::object());
    if (i == 20) {
      EXPECT_EQ(live(store->load(id).snapshot), live(next.run(id).snapshot()));
    }
  }
  ASSERT_EQ(next.run(id).status(), RunStatus::kDone) << next.run(id).reason();
  EXPECT_EQ(next.run(id).output()["items"].size(), 40u);
  EXPECT_EQ(parts(), "0") << "an ended run keeps no parts";
  EXPECT_EQ(store->load(id).status, "done");
}

// A run the host starts reads its Pool's input once: the check made before anything is stored is
// the read the Pool starts from, when the host checks it (start) and when its caller did
// (checkStart, then begin: serve's start, #33). A refused input is read once and stores nothing.
TEST_F(Host, APoolsInputIsReadOnceByTheCheckBeforeTheRunIsMade) {
  const std::string dir = FreshDir("read-once");
  auto store = jr2rt::OpenSqliteStore(dir + "store.db");
  jr2test::CountedPool counted(registry, "conformance_queued");
  jr2rt::WorkflowInfo workflow = counted.workflow;
  workflow.name = "counted_queued";
  registry.addWorkflow(workflow);
  const int& reads = counted.reads;
  const Json input = {{"tasks", Json::array({{{"id", "A"}}, {{"id", "B"}}})}, {"jobs", 1}};
  jr2rt::RunHost host(registry, *store, clock);
  const std::string first = host.start("counted_queued", input, dir);
  EXPECT_EQ(reads, 1) << "start: checked and started from one read";
  std::vector<std::string> open;
  for (const auto& g : host.run(first).gates()) open.push_back(g.name);
  EXPECT_EQ(open, (std::vector<std::string>{"A.review"}));
  EXPECT_THROW(host.start("counted_queued", {{"tasks", "A"}}, dir), jr2rt::BadInput);
  EXPECT_EQ(reads, 2);
  EXPECT_EQ(store->list(/*includeEnded=*/true).size(), 1u) << "the refused start stored nothing";
  jr2rt::JsonValue read = host.checkStart("counted_queued", input);
  const std::string second = host.begin("counted_queued", input, dir, "", std::move(read));
  EXPECT_EQ(reads, 3) << "checkStart, then begin from what it read";
  EXPECT_EQ(host.run(second).input(), input);
}

// Items A and B under a cap of 1: A's Gate open, B's not yet.
std::string StartAThenB(jr2rt::RunHost& host, const std::string& dir) {
  const Json tasks = Json::array({{{"id", "A"}}, {{"id", "B"}}});
  return host.start("conformance_queued", {{"tasks", tasks}, {"jobs", 1}}, dir);
}

// An answer refused because its Gate is not open (404, or 409 when it was open once): a run this
// host drives has its feed read once for the Gates it opened, then its events tell the rest. Each
// refusal read the whole feed on the engine's thread: a Pool's reviewers who answer ahead of it
// made a serve of 8,000 items spend 86 % of its engine in that read (#33).
TEST_F(Host, AGateNeverOpenIsToldFromOneReadOfTheFeedThenFromTheEvents) {
  const std::string dir = FreshDir("had-gate");
  CountingStore store(dir + "store.db");
  jr2rt::RunHost host(registry, store, clock);
  const std::string id = StartAThenB(host, dir);
  ASSERT_EQ(host.run(id).gates().size(), 1u) << "cap 1: A's Gate alone";
  EXPECT_FALSE(host.hadGate(id, "B.review")) << "B has not started";
  EXPECT_EQ(store.gateScans, 1);
  EXPECT_TRUE(host.hadGate(id, "A.review"));
  EXPECT_FALSE(host.hadGate(id, "nowhere"));
  EXPECT_EQ(store.gateScans, 1) << "read once";
  host.send(id, "A.review", "accept", Json::object());  // B's Gate opens
  ASSERT_EQ(host.run(id).gates().size(), 1u);
  EXPECT_TRUE(host.hadGate(id, "B.review")) << "opened after the read: told by its event";
  EXPECT_TRUE(host.hadGate(id, "A.review")) << "answered: it was open once (409)";
  EXPECT_EQ(store.gateScans, 1);
  // A run this host does not drive: its feed is read at each call.
  jr2rt::RunHost other(registry, store, clock);
  EXPECT_TRUE(other.hadGate(id, "B.review"));
  EXPECT_FALSE(other.hadGate(id, "C.review"));
  EXPECT_EQ(store.gateScans, 3);
}

// The first read finds the Gates whose lines are not stored yet too (a turn not committed, a
// batch with serve's commit thread or refused for a full disk): the Gates the host keeps until
// their lines are stored.
TEST_F(Host, TheFirstReadOfTheGatesOpenedTakesTheLinesNotStoredYet) {
  const std::string dir = FreshDir("had-gate-pending");
  CountingStore store(dir + "store.db");
  jr2rt::RunHost host(registry, store, clock);
  const std::string id = StartAThenB(host, dir);
  const int64_t revision = store.revision(id);
  // The disk full: B's Gate opens in a turn no commit could store (its lines go back to the
  // saver, for the next).
  store.full = true;
  try {
    host.send(id, "A.review", "accept", Json::object());
  } catch (const jr2rt::StoreError&) {
    // The answer is not stored: said so; the run went on in memory.
  }
  const auto open = host.run(id).gates();
  ASSERT_TRUE(std::any_of(open.begin(), open.end(),
                          [](const jr2rt::OpenGate& g) { return g.name == "B.review"; }));
  ASSERT_EQ(store.revision(id), revision) << "not stored yet";
  EXPECT_TRUE(host.hadGate(id, "B.review"));
  EXPECT_FALSE(host.hadGate(id, "C.review"));
  EXPECT_EQ(store.gateScans, 1);
}

// Under serve's pipelined commit a run opens Gates while each batch is stored, so there is
// always a batch not stored yet: what the host keeps for the first read stays a batch or two,
// never every Gate the run opened, and is exactly the Gates whose lines are not stored.
TEST(GatesSeen, KeepsOnlyTheGatesNotStoredYetWhileTheRunGoesOn) {
  jr2rt::GatesSeen seen;
  std::vector<jr2rt::FeedLine> inFlight;  // told, handed to the commit, not stored yet
  std::vector<std::string> stored;        // what the store would give at the first read
  size_t most = 0;
  for (int batch = 0; batch < 2000; ++batch) {
    std::vector<jr2rt::FeedLine> next;
    for (int i = 0; i < 5; ++i) {
      const std::string name = "G" + std::to_string(batch * 5 + i) + ".review";
      seen.opened(name);
      next.emplace_back(0, 0, "", "gate-opened", Json{{"gate", name}});
      next.emplace_back(0, 0, "", "settled", Json::object());  // not a Gate: passed over
    }
    seen.stored(inFlight);  // the batch before this one is stored now
    for (const jr2rt::FeedLine& line : inFlight) {
      if (line.kind == "gate-opened") stored.push_back(line.data["gate"].get<std::string>());
    }
    inFlight = std::move(next);
    most = std::max(most, seen.unsavedCapacity());
  }
  EXPECT_LE(most, 64u) << "10,000 Gates opened, at most ten not stored at any time";
  // The last batch is not stored: the first read takes it from what was kept, the rest from the
  // store (a store that gave nothing would leave the stored ones unknown).
  jr2rt::GatesSeen copy = seen;
  EXPECT_TRUE(copy.had("G9999.review", [] { return std::vector<std::string>(); }));
  EXPECT_TRUE(copy.had("G9995.review", [] { return std::vector<std::string>(); }));
  EXPECT_FALSE(copy.had("G9994.review", [] { return std::vector<std::string>(); }))
      << "stored: the store's to tell";
  EXPECT_TRUE(seen.had("G0.review", [&] { return stored; }));
  EXPECT_TRUE(seen.had("G9999.review", [&] { return stored; }));
  EXPECT_FALSE(seen.had("G10000.review", [&] { return stored; }));
  EXPECT_EQ(seen.unsavedCapacity(), 0u) << "let go once loaded";
}

// What the 200 of a Gate answer lists (views.h AnsweredGates, GateAnswerBody): the Gates of the
// worker whose Gate was answered, not the Pool's every Gate (`Q-1` is not `Q-10`'s place), and
// how many the Caller may answer in all.
TEST_F(Host, AGateAnswerListsTheGatesOfTheMachineItAnswered) {
  const std::string dir = FreshDir("answered-gates");
  auto store = jr2rt::OpenSqliteStore(dir + "store.db");
  Json tasks = Json::array();
  for (const char* id : {"Q-1", "Q-10", "R-2"}) tasks.push_back({{"id", id}});
  jr2rt::RunHost host(registry, *store, clock);
  const std::string id = host.start("conformance_queued", {{"tasks", tasks}, {"jobs", 3}}, dir);
  const jr2rt::Run& run = host.run(id);
  EXPECT_EQ(run.gateMachine("Q-10.review"), "Q-10");
  EXPECT_EQ(run.gateMachine("Q-9.review"), std::nullopt);
  const Json one = jr2rt::AnsweredGates(run, "Q-1");
  ASSERT_EQ(one["gates"].size(), 1u) << one;
  EXPECT_EQ(one["gates"][0], Json({{"gate", "Q-1.review"},
                                   {"meta", {{"id", "Q-1"}}},
                                   {"accepts", Json::array({"accept"})}}));
  EXPECT_EQ(one["open"], Json({"Q-1.review", "Q-10.review", "R-2.review"}));
  EXPECT_EQ(jr2rt::AnsweredGates(run, "")["gates"].size(), 3u) << "the top machine: every Gate";
  const auto onlyQ = [](const std::string& gate) { return gate.rfind("Q-", 0) == 0; };
  EXPECT_EQ(jr2rt::GateAnswerBody("waiting", one, onlyQ),
            Json({{"status", "waiting"}, {"gates", one["gates"]}, {"open", 2}}));
  const auto onlyR = [](const std::string& gate) { return gate.rfind("R-", 0) == 0; };
  EXPECT_EQ(jr2rt::GateAnswerBody("waiting", one, onlyR),
            Json({{"status", "waiting"}, {"gates", Json::array()}, {"open", 1}}));
  // serve's own answer reads the run in place: the same body as a forwarded answer's.
  const auto any = [](const std::string&) { return true; };
  for (const char* machine : {"Q-1", "Q-10", "R-2", ""}) {
    const Json answered = jr2rt::AnsweredGates(run, machine);
    for (const auto& may : {std::function<bool(const std::string&)>(onlyQ),
                            std::function<bool(const std::string&)>(onlyR),
                            std::function<bool(const std::string&)>(any)}) {
      EXPECT_EQ(jr2rt::GateAnswerBody("waiting", run, machine, may),
                jr2rt::GateAnswerBody("waiting", answered, may))
          << machine;
    }
  }
}

// A hook delivery through the host: its verdict from the run's Source, logged by delivery id; the
// same delivery again gets its first answer and reads nothing.
TEST_F(Host, AHookDeliveryIsAnsweredOnceByItsIdAndLogged) {
  const std::string dir = FreshDir("hook");
  auto store = jr2rt::OpenSqliteStore(dir + "store.db");
  jr2rt::ManualClock manual;
  jr2rt::RunHost host(registry, *store, manual);
  int reads = 0;
  host.scriptRead("scripted_read", [&](const Json&, std::function<void(Json)> answer,
                                       std::function<void(const jr2rt::Failure&)>) {
    ++reads;
    answer({{"items", Json::array({{{"id", "A"}, {"mode", "wait"}}})}});
  });
  const std::string id = host.start("conformance_read", {{"jobs", 2}}, dir);
  ASSERT_EQ(reads, 1);
  const Json first = host.deliverHook("forge", "issues.labeled", "d-1", Json::object());
  EXPECT_EQ(first["verdict"], "reread");
  EXPECT_EQ(first["runs"][0]["run"], id);
  EXPECT_EQ(reads, 2);
  EXPECT_EQ(host.deliverHook("forge", "issues.labeled", "d-1", Json::object()), first)
      << "the same delivery gets its first answer";
  EXPECT_EQ(reads, 2) << "and changes nothing";
  const Json skipped = host.deliverHook("forge", "issues.closed", "d-2", Json::object());
  EXPECT_EQ(skipped["verdict"], "skipped");
  EXPECT_EQ(skipped["reason"], "closed issues start nothing");
  std::map<std::string, std::string> logged;  // delivery -> verdict
  for (const Json& entry : store->hookLog("forge", 10)) {
    logged[entry["delivery"].get<std::string>()] = entry["answer"]["verdict"].get<std::string>();
  }
  EXPECT_EQ(logged, (std::map<std::string, std::string>{{"d-1", "reread"}, {"d-2", "skipped"}}));
  // A run's feed tells the reread; a skip is the hook log's alone.
  int rereads = 0;
  for (const auto& f : store->feed(id, 0)) rereads += f.kind == "reread" ? 1 : 0;
  EXPECT_EQ(rereads, 1);
}

// serve's deliveries: one whose turn changed a run (a reread) is logged by the commit that stores
// it; those whose turn stored no run (skipped) once that turn is committed, all of one pass in
// one transaction; and every one is answered only once it is logged.
TEST_F(Host, ServesDeliveriesAreLoggedWithTheirTurnAndAnsweredAfter) {
  const std::string dir = FreshDir("hook-serve");
  CountingStore store(dir + "store.db");
  jr2rt::RunHost host(registry, store, clock);
  host.scriptRead("scripted_read", [&](const Json&, const std::function<void(Json)>& answer,
                                       const std::function<void(const jr2rt::Failure&)>&) {
    answer({{"items", Json::array({{{"id", "A"}, {"mode", "wait"}}})}});
  });
  const std::string id = host.start("conformance_read", {{"jobs", 2}}, dir);
  const int64_t commits = store.commits;
  std::vector<size_t> loggedWhenAnswered;
  const auto reread = [&] {
    EXPECT_EQ(host.deliverHook("forge", "issues.labeled", "d-4", Json::object(), false)["verdict"],
              "reread");
    host.afterCommit([&] {
      loggedWhenAnswered.push_back(store.hookLog("forge", 10).size());
      jr2rt::RunHost::Interrupt(SIGTERM);  // serve() returns after this turn
    });
  };
  host.queue([&] {
    for (const char* d : {"d-1", "d-2", "d-3"}) {
      EXPECT_EQ(host.deliverHook("forge", "issues.closed", d, Json::object(), false)["verdict"],
                "skipped");
      host.afterCommit([&] { loggedWhenAnswered.push_back(store.hookLog("forge", 10).size()); });
    }
    host.afterCommit([&] { host.queue(reread); });  // a later turn
  });
  host.serve(nullptr);
  EXPECT_EQ(loggedWhenAnswered, (std::vector<size_t>{3, 3, 3, 4})) << "answered once logged";
  EXPECT_EQ(store.commits - commits, 1) << "the reread's turn: one group commit, d-4 in it";
  EXPECT_EQ(store.hookLogs, 1) << "the three skipped: one transaction";
  int rereads = 0;
  for (const auto& f : store.feed(id, 0)) rereads += f.kind == "reread" ? 1 : 0;
  EXPECT_EQ(rereads, 1);
}

// The observation (docs/serve.md#bands-and-scopes) is where a run is, never what it holds. A secret
// planted in the input, kept in the context and printed by a `log(...)` line is in none of it; a
// Pool of Pools shows its workers by item id, each with its states.
TEST_F(Host, TheObservationNeverHoldsTheContextAtAnyDepth) {
  const std::string dir = FreshDir("observe");
  auto store = jr2rt::OpenSqliteStore(dir + "store.db");
  jr2rt::RunHost host(registry, *store, clock);
  const std::string secret = "PLANTED-7f3a9c";
  const std::string id =
      host.start("conformance_secret", {{"note", {{"deep", {{"secret", secret}}}}}}, dir);
  const Json seen = host.run(id).observe();
  const std::string text = seen.dump();
  EXPECT_EQ(text.find(secret), std::string::npos) << text;
  EXPECT_EQ(seen["runId"], id);
  EXPECT_EQ(seen["status"], "waiting");
  EXPECT_NE(std::find(seen["value"].begin(), seen["value"].end(), "both.left.asking"),
            seen["value"].end())
      << text;
  ASSERT_EQ(seen["children"].size(), 2u) << text;
  EXPECT_EQ(seen["children"][0]["kind"], "gate");
  EXPECT_EQ(seen["children"][0]["id"], "approval");
  EXPECT_FALSE(seen["children"][0].contains("meta")) << "a Gate's meta is not observation";
  EXPECT_EQ(Json(seen.items().begin().key()), "children");
  std::set<std::string> keys;
  for (const auto& [key, value] : seen.items()) keys.insert(key);
  EXPECT_EQ(keys, (std::set<std::string>{"runId", "workflow", "status", "value", "children"}));
  // The run's feed does carry it (a `log(...)` line): the guarded feed is where it may be read.
  bool logged = false;
  for (const auto& f : store->feed(id, 0))
    logged = logged || f.line.find(secret) != std::string::npos;
  EXPECT_TRUE(logged);

  // A Pool whose workers are Pools: each level's children by item id.
  auto run =
      std::make_unique<jr2rt::Run>(registry, *registry.workflow("conformance_nest"), "nest", clock);
  int asked = 0;
  run->scriptNext("scripted_next", [&](const jr2rt::NextQuery&, std::function<void(Json)> a) {
    if (asked++ < 2) {
      a({{"item", {{"id", "I" + std::to_string(asked)}, {"mode", "wait"}}}, {"open", 0}});
    } else {
      a({{"item", nullptr}, {"open", 0}});
    }
  });
  run->start(Json::object());
  const Json nest = run->observe();
  ASSERT_FALSE(nest["children"].empty()) << nest.dump();
  EXPECT_EQ(nest["children"][0]["kind"], "pool");
  EXPECT_EQ(nest["children"][0]["id"], "I1");
  ASSERT_FALSE(nest["children"][0]["children"].empty()) << nest.dump();
  EXPECT_EQ(nest["children"][0]["children"][0]["kind"], "machine");
  EXPECT_FALSE(nest["children"][0]["children"][0]["value"].empty()) << nest.dump();
}

// Two answers to one Gate before the turn that delivers the first (two clients of serve): the
// second is refused, and the Gate is not listed as open meanwhile; a Source's wake Gate takes
// any number of wakes.
TEST_F(Host, ASecondAnswerToAGateBeforeItsTurnIsRefused) {
  const std::string dir = FreshDir("twice");
  auto store = jr2rt::OpenSqliteStore(dir + "store.db");
  jr2rt::RunHost host(registry, *store, clock);
  const std::string id =
      host.start("conformance_secret", {{"note", {{"deep", {{"secret", "s"}}}}}}, dir);
  jr2rt::Run& run = host.run(id);
  run.deliver("approval", "rate", {{"score", 1}});
  EXPECT_EQ(run.gates().size(), 1u) << "the answered Gate is not open any more";
  try {
    run.deliver("approval", "rate", {{"score", 2}});
    ADD_FAILURE() << "a second answer must be refused";
  } catch (const jr2rt::BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("being delivered"), std::string::npos) << e.what();
  }
  host.tick(id);
  run.send("both.x.review", "accept", Json::object());
  ASSERT_EQ(run.status(), RunStatus::kDone);
  EXPECT_EQ(run.output(), "s");
}

// The runner's `send` reads an answer's payload once (#31): what precheck() read, before due
// timers fire, goes with the delivery while that opening of the Gate lasts; an answer checked at
// another opening is read again. (The JSON beside it is deliberately one its check refuses, so
// a second read would throw.)
TEST_F(Host, AnAnswerCheckedBeforeItsTurnIsNotReadAgain) {
  const std::string dir = FreshDir("checked");
  auto store = jr2rt::OpenSqliteStore(dir + "store.db");
  jr2rt::RunHost host(registry, *store, clock);
  const std::string id =
      host.start("conformance_secret", {{"note", {{"deep", {{"secret", "s"}}}}}}, dir);
  jr2rt::Run& run = host.run(id);
  const jr2rt::Run::CheckedAnswer checked = run.precheck("approval", "rate", {{"score", 2}});
  ASSERT_NE(checked.opening, 0u);
  ASSERT_NE(checked.typed, nullptr) << "an event with fields is read as its type";
  EXPECT_THROW(run.precheck("approval", "rate", {{"score", "x"}}), jr2rt::BadInput);
  jr2rt::Run::CheckedAnswer stale = checked;
  stale.opening += 1000;
  EXPECT_THROW(run.deliver("approval", "rate", {{"score", "x"}}, &stale), jr2rt::BadInput);
  EXPECT_NO_THROW(run.deliver("approval", "rate", {{"score", "x"}}, &checked));
  host.tick(id);
  run.send("both.x.review", "accept", Json::object());
  EXPECT_EQ(run.status(), RunStatus::kDone);
}

// A standing Pool of runs over a push Source
// (docs/runtime.md#standing-pools-of-runs-over-push-sources-12): a carried item is held, then
// becomes a run of the callee keyed by the item's id. The key is one run per callee workflow,
// whichever Pool gives it; the run's end settles its item; the held items and the active keys
// survive a restore.
TEST_F(Host, AStandingPoolOfRunsHoldsDispatchesOneRunPerKeyAndSettles) {
  const std::string dir = FreshDir("standing");
  auto store = jr2rt::OpenSqliteStore(dir + "store.db");
  auto alert = [](const std::string& id, const std::string& level) {
    return Json{{"alert", {{"id", id}, {"level", level}}}};
  };
  std::string alerts;
  std::string pager;
  std::string a1;
  {
    jr2rt::RunHost host(registry, *store, clock);
    const auto started = host.standUp({"conformance_alerts", "conformance_pager"});
    ASSERT_EQ(started.size(), 2u);
    alerts = started[0];
    pager = started[1];
    host.tick(alerts);
    EXPECT_EQ(host.standUp({"conformance_alerts", "conformance_pager"}).size(), 0u)
        << "one live run of each, never a second";

    EXPECT_EQ(host.deliverHook("monitor", "alert.raised", "d1", alert("A1", "warn"))["verdict"],
              "held");
    const Json again = host.deliverHook("monitor", "alert.raised", "d2", alert("A1", "warn"));
    EXPECT_EQ(again["verdict"], "existing") << again.dump();
    a1 = again.value("run", "");
    ASSERT_FALSE(a1.empty()) << again.dump();
    EXPECT_EQ(store->byKey("conformance_alert_run", "A1")->id, a1);
    // The other Pool gives the same key for the same workflow: that run holds it (`existing`,
    // naming it), and the Pool holds nothing.
    const Json paged = host.deliverHook("pager", "page", "p1", alert("A1", "warn"));
    EXPECT_EQ(paged["verdict"], "existing") << paged.dump();
    EXPECT_EQ(paged.value("run", ""), a1);
    // cap 2, hold 3: two live runs, three held, then `hold-full`, which is not logged.
    for (const char* id : {"A2", "A3", "A4", "A5"})
      EXPECT_EQ(host.deliverHook("monitor", "alert.raised", std::string("d-") + id,
                                 alert(id, "warn"))["verdict"],
                "held");
    EXPECT_EQ(host.deliverHook("monitor", "alert.raised", "d-A6", alert("A6", "warn"))["verdict"],
              "hold-full");
    EXPECT_FALSE(store->hookAnswer("monitor", "d-A6").has_value()) << "a resend is heard";
    EXPECT_EQ(store->hookAnswer("monitor", "d-A2").value()["verdict"], "held");
    int live = 0;
    for (const auto& r : store->list(false)) live += r.workflow == "conformance_alert_run";
    EXPECT_EQ(live, 2) << "cap 2 counts the live runs this Pool dispatched";
    // The observation (the console's children) names the run each worker dispatched.
    const Json seen = host.run(alerts).observe();
    std::set<std::string> runs;
    for (const Json& child : seen.value("children", Json::array())) {
      EXPECT_EQ(child.value("kind", ""), "run") << child.dump();
      if (child.contains("run") && child["run"].is_string())
        runs.insert(child["run"].get<std::string>());
    }
    EXPECT_EQ(runs.size(), 2u) << seen.dump();
    EXPECT_EQ(runs.count(a1), 1u) << "A1's worker names A1's run: " << seen.dump();
  }
  // A new host (a restart): the held items and the live keys are where they were.
  jr2rt::RunHost host(registry, *store, clock);
  EXPECT_EQ(host.takeLive({"conformance_alerts", "conformance_pager", "conformance_alert_run"}), 4);
  host.tick(alerts);
  EXPECT_EQ(host.standUp({"conformance_alerts", "conformance_pager"}).size(), 0u);
  host.send(a1, "review", "close", Json::object());
  host.tick(alerts);
  host.tick(pager);
  std::map<std::string, int> settled;  // pool run -> settled marks of A1
  for (const std::string& pool : {alerts, pager}) {
    for (const auto& f : store->feed(pool, 0)) {
      if (f.kind == "settled" && f.data.value("item", "") == "A1") ++settled[pool];
    }
  }
  EXPECT_EQ(settled[alerts], 1) << "the Pool that started it hears its end, after a restore";
  EXPECT_EQ(settled[pager], 0) << "the other never held it";
  // A1's slot went to the oldest held item, A3 (A2 was live already).
  EXPECT_TRUE(store->byKey("conformance_alert_run", "A3").has_value());
  EXPECT_FALSE(store->byKey("conformance_alert_run", "A5").has_value()) << "still held";
  // Every callee run holds a key of its own: none started twice.
  std::map<std::string, int> perKey;
  for (const auto& r : store->list(true)) {
    if (r.workflow != "conformance_alert_run") continue;
    ++perKey[store->load(r.id).snapshot["dispatchedBy"].value("key", "")];
  }
  for (const auto& [key, n] : perKey) EXPECT_EQ(n, 1) << key;
  EXPECT_EQ(perKey.size(), 3u);  // A1, A2, A3
  // Both replay as they ran, across the restart: the pager's delivery found A1's run, which
  // the other Pool dispatched (the `hook` input says so; the replay knows no other run).
  EXPECT_EQ(ReplayEvery(*store, registry, "conformance_alerts"), 1);
  EXPECT_EQ(ReplayEvery(*store, registry, "conformance_pager"), 1);
}

// Hosts sharing a store (docs/scaling.md#dispatch-keys-and-standing-heads): a dispatch whose
// reservation went through and whose answer was lost (PostgreSQL restarted) asks again under the
// same run id, so that the reservation it left is its own; a key another host reserved for a run
// it has not stored is asked for again each second, never followed: when that host dies first,
// the item still gets its run (pg_faults.py's restart lost an acknowledged delivery to both).
TEST_F(Host, ADispatchWhoseReservationWasLeftAsksAgainAndTheItemGetsItsRun) {
  const std::string dir = FreshDir("keys");
  CountingStore store(dir + "store.db");
  FakeHosts hosts(store);
  store.fakeHosts = &hosts;
  jr2rt::ManualClock manual;
  manual.set(1000000);
  jr2rt::RunHost host(registry, store, manual);
  ASSERT_TRUE(host.joinHosts("alpha", 3000, 100, /*pollOnly=*/true));
  const auto started = host.standUp({"conformance_alerts"});
  ASSERT_EQ(started.size(), 1u);
  std::string pool = started[0];
  const std::string first = pool;
  host.tick(pool);
  auto alert = [](const std::string& id) {
    return Json{{"alert", {{"id", id}, {"level", "warn"}}}};
  };
  auto runsOf = [&](const std::string& key) {
    int n = 0;
    for (const auto& r : store.list(true, false)) {
      n += r.workflow == "conformance_alert_run" &&
           store.load(r.id).snapshot["dispatchedBy"].value("key", "") == key;
    }
    return n;
  };
  auto settledFailed = [&](const std::string& key) {
    for (const auto& f : store.feed(pool, 0)) {
      if (f.kind == "settled" && f.data.value("item", "") == key &&
          f.line.find("ended") != std::string::npos)
        return f.line;
    }
    return std::string();
  };

  // Three seconds of serve's passes: the turn, the ends heard from the store each second.
  auto threeSeconds = [&] {
    for (int second = 0; second < 3; ++second) {
      manual.advance(1000);
      host.tick(pool);
      host.hearEnds();
      host.tick(pool);
    }
  };

  // 1. The reservation is made and its answer lost: nothing started, asked again a second later
  //    under the same id, which finds the reservation its own.
  hosts.loseNextReserve = true;
  hosts.reserves = 0;
  EXPECT_EQ(host.deliverHook("monitor", "alert.raised", "d-A1", alert("A1"))["verdict"], "held");
  EXPECT_EQ(runsOf("A1"), 0) << "the store went away: nothing started yet";
  threeSeconds();
  EXPECT_EQ(runsOf("A1"), 1) << "asked again under its id, the item got its run";
  EXPECT_EQ(hosts.reserves, 2) << "one lost answer, one try again";
  EXPECT_EQ(settledFailed("A1"), "");

  // 2. Another host reserved the key and has not stored its run: asked again each second while
  //    that host lives; once it is gone, the key is taken over and the item gets its run here.
  hosts.reserve("conformance_alert_run", "A2", "bbbb00000002");
  EXPECT_EQ(host.deliverHook("monitor", "alert.raised", "d-A2", alert("A2"))["verdict"], "held");
  threeSeconds();
  EXPECT_EQ(runsOf("A2"), 0) << "the key is another host's, live";
  EXPECT_EQ(settledFailed("A2"), "") << "never settled for a run that may still come";
  // Handed over meanwhile: the next standing run asks on for A2 (it is not dropped).
  pool = host.handOver(first, "a test");
  host.tick(pool);
  hosts.kill("other");
  threeSeconds();
  EXPECT_EQ(runsOf("A2"), 1) << "that host died before storing it: the item got its run here";
  EXPECT_EQ(settledFailed("A2"), "");
  // Started by the worker the new run took over, and named by its Pool as any other.
  EXPECT_EQ(store.load(store.byKey("conformance_alert_run", "A2")->id)
                .snapshot["dispatchedBy"]
                .value("pool", ""),
            "alert_pool");
  // 3. A try's reservation left behind, and then its worker goes (the Pool paused): it is let
  //    go, so that no other host waits on it while this one lives.
  hosts.loseNextReserve = true;
  EXPECT_EQ(host.deliverHook("monitor", "alert.raised", "d-A3", alert("A3"))["verdict"], "held");
  host.send(store.byKey("conformance_alert_run", "A1")->id, "review", "close", Json::object());
  host.hearEnds();  // A1's run ended: its slot goes to A3, whose try loses its answer
  host.tick(pool);
  EXPECT_EQ(runsOf("A3"), 0);
  EXPECT_TRUE(hosts.reserved("conformance_alert_run", "A3")) << "left by the try that failed";
  host.cancel(pool);
  EXPECT_FALSE(hosts.reserved("conformance_alert_run", "A3")) << "let go with its worker";
  // The standing runs replay as they ran: the turns where A2 was asked for again take no input.
  EXPECT_EQ(ReplayEvery(store, registry, "conformance_alerts"), 2);
  bool told = false;
  for (const auto& f : store.feed(first, 0))
    told = told || f.line.find(
                       "A2: key A2 of `conformance_alert_run` is reserved by run "
                       "bbbb00000002, which its host has not stored yet") == 0;
  EXPECT_TRUE(told) << "the wait is said once in the Pool's feed";
}

// A hand-over (docs/runtime.md#standing-pools-of-runs-over-push-sources-12): the new run takes the
// held items in order and the live keys (the runs it waits for), the old one ends `done` naming it;
// nothing is lost, nothing starts twice. At its bound (500 items it took) a standing run is handed
// over; a cancel is a pause, and a resume takes the held items (or drops them).
TEST_F(Host, AStandingRunIsHandedOverPausedAndResumedWithItsHeldItemsAndKeys) {
  const std::string dir = FreshDir("handover");
  auto store = jr2rt::OpenSqliteStore(dir + "store.db");
  jr2rt::RunHost host(registry, *store, clock);
  auto alert = [](const std::string& id, const std::string& level) {
    return Json{{"alert", {{"id", id}, {"level", level}}}};
  };
  const std::string first = host.standUp({"conformance_alerts"}).at(0);
  host.tick(first);
  for (const char* id : {"A1", "A2", "A3", "A4", "A5"}) {
    ASSERT_EQ(host.deliverHook("monitor", "alert.raised", std::string("d-") + id,
                               alert(id, "warn"))["verdict"],
              "held");
  }
  const std::string second = host.handOver(first, "a test");
  host.tick(second);
  EXPECT_EQ(host.run(first).status(), RunStatus::kDone);
  EXPECT_EQ(host.run(first).output()["handedOverTo"], second);
  const Json top = store->load(second).snapshot["top"];
  std::vector<std::string> held;
  for (const auto& item : top["held"]) held.push_back(item["id"]);
  EXPECT_EQ(held, (std::vector<std::string>{"A3", "A4", "A5"}));
  ASSERT_EQ(top["workers"].size(), 2u) << "the live keys, each waiting for its run";
  const std::string a1 = store->byKey("conformance_alert_run", "A1")->id;
  host.send(a1, "review", "close", Json::object());
  host.tick(second);
  int settledA1 = 0;
  for (const auto& f : store->feed(second, 0))
    settledA1 += f.kind == "settled" && f.data.value("item", "") == "A1";
  EXPECT_EQ(settledA1, 1) << "the new run hears the end of a run the old one started";
  EXPECT_TRUE(store->byKey("conformance_alert_run", "A3").has_value()) << "and claims in order";
  EXPECT_EQ(host.deliverHook("monitor", "alert.raised", "again-A2", alert("A2", "warn"))["verdict"],
            "existing");

  // A cancel is a pause: nothing starts it again, a delivery is `paused`; a resume takes over.
  host.cancel(second);
  EXPECT_TRUE(host.standUp({"conformance_alerts"}).empty());
  EXPECT_EQ(host.deliverHook("monitor", "alert.raised", "d-P", alert("P1", "warn"))["verdict"],
            "paused");
  EXPECT_FALSE(store->hookAnswer("monitor", "d-P").has_value()) << "not logged: a resend is heard";
  const std::string third = host.resume("conformance_alerts", /*dropHeld=*/false);
  host.tick(third);
  std::vector<std::string> after;
  const Json thirdTop = store->load(third).snapshot["top"];
  for (const auto& item : thirdTop["held"]) after.push_back(item["id"]);
  EXPECT_EQ(after, (std::vector<std::string>{"A4", "A5"}))
      << "A2 and A3 run (the live keys), A4 and A5 still held";
  try {
    host.resume("conformance_alerts", false);
    ADD_FAILURE() << "a live standing Pool is not resumed";
  } catch (const jr2rt::BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("is live"), std::string::npos) << e.what();
  }
  host.cancel(third);
  const std::string fourth = host.resume("conformance_alerts", /*dropHeld=*/true);
  host.tick(fourth);
  const Json fourthTop = store->load(fourth).snapshot["top"];
  EXPECT_TRUE(fourthTop["held"].empty()) << "--drop-held";
  EXPECT_EQ(fourthTop["workers"].size(), 2u) << "the live keys stay";

  // At its bound: 500 items it took itself (each a `broken` alert whose run fails at once), once
  // the live keys it took over are done.
  for (const char* key : {"A2", "A3"})
    host.send(store->byKey("conformance_alert_run", key)->id, "review", "close", Json::object());
  host.tick(fourth);
  std::map<std::string, int> verdicts;
  for (int i = 0; i < 500; ++i) {
    const std::string id = "B" + std::to_string(i);
    ++verdicts[host.deliverHook("monitor", "alert.raised", "d-" + id, alert(id, "broken"))
                   .value("verdict", "")];
    host.tick(fourth);
  }
  EXPECT_EQ(verdicts["held"], 500) << Json(verdicts).dump();
  const auto handed = host.handOverDue();
  ASSERT_EQ(handed.size(), 1u);
  host.tick(handed[0]);
  EXPECT_EQ(host.run(fourth).status(), RunStatus::kDone);
  EXPECT_EQ(host.run(handed[0]).status(), RunStatus::kWaiting);
  // One run per key, across four hand-overs and two resumes.
  std::map<std::string, int> perKey;
  for (const auto& r : store->list(true)) {
    if (r.workflow == "conformance_alert_run")
      ++perKey[store->load(r.id).snapshot["dispatchedBy"].value("key", "")];
  }
  for (const auto& [key, n] : perKey) EXPECT_EQ(n, 1) << key;
  std::cout << "[ host ] " << perKey.size() << " callee runs, one per key; standing runs: " << first
            << " -> " << second << " -> " << third << " -> " << fourth << " -> " << handed[0]
            << "\n";

  // Each of the five replays as it ran (docs/runtime.md#replay): what it took over at its start
  // (held items, live keys, its streak) and how it ended — handed over, paused — are inputs in
  // its trace, as the host decided them.
  EXPECT_EQ(ReplayEvery(*store, registry, "conformance_alerts"), 5) << "every standing run replays";
}

// A new build (another assembly: the modules' text changed) hands a standing run over to a run
// of this build, with what it held; the same build does not.
TEST_F(Host, ANewBuildHandsAStandingRunOver) {
  const std::string dir = FreshDir("assembly");
  auto store = jr2rt::OpenSqliteStore(dir + "store.db");
  std::string first;
  {
    jr2rt::RunHost host(registry, *store, clock);
    first = host.standUp({"conformance_alerts"}).at(0);
    host.tick(first);
    host.deliverHook("monitor", "alert.raised", "d1", {{"alert", {{"id", "A1"}, {"level", "w"}}}});
    host.tick(first);
    EXPECT_TRUE(host.handOverDue().empty()) << "the same build";
  }
  jr2rt::Registry rebuilt;
  jr2gen::pool::RegisterWorkflows(rebuilt);
  jr2gen::serve::RegisterWorkflows(rebuilt);
  jr2gen::standing::RegisterWorkflows(rebuilt);
  rebuilt.addModule("standing.jr2", "0000000000000001");  // its text changed
  ASSERT_NE(rebuilt.assembly(), registry.assembly());
  jr2rt::RunHost host(rebuilt, *store, clock);
  host.takeLive({"conformance_alerts", "conformance_alert_run"});
  const auto handed = host.handOverDue();
  ASSERT_EQ(handed.size(), 1u);
  host.tick(handed[0]);
  EXPECT_EQ(store->summary(first)->status, "done");
  const Json top = store->load(handed[0]).snapshot["top"];
  ASSERT_EQ(top["workers"].size(), 1u) << "the live key A1 goes with it";
  EXPECT_EQ(top["workers"][0]["id"], "A1");
  EXPECT_TRUE(host.handOverDue().empty()) << "the new run is of this build";
}

// `prune` never deletes what a paused standing Pool holds for its resume.
TEST_F(Host, PruneKeepsWhatAPausedStandingPoolHolds) {
  const std::string dir = FreshDir("prune-standing");
  auto store = jr2rt::OpenSqliteStore(dir + "store.db");
  jr2rt::RunHost host(registry, *store, clock);
  const std::string first = host.standUp({"conformance_alerts"}).at(0);
  host.tick(first);
  for (const char* id : {"A1", "A2", "A3"})
    host.deliverHook("monitor", "alert.raised", id, {{"alert", {{"id", id}, {"level", "w"}}}});
  host.tick(first);
  host.cancel(first);
  EXPECT_EQ(host.prune(clock.nowMs() + 60000, "conformance_alerts"), 0);
  const std::string second = host.resume("conformance_alerts", false);
  host.tick(second);
  const Json top = store->load(second).snapshot["top"];
  EXPECT_EQ(top["workers"].size(), 2u);
  EXPECT_EQ(top["held"].size(), 1u);
  host.cancel(second);
  EXPECT_EQ(host.prune(clock.nowMs() + 60000, "conformance_alerts"), 1) << "the older one goes";
}

// The head of a standing workflow (docs/runtime.md#standing-pools-of-runs-over-push-sources-12), on
// the manual clock: a run that ends `error` and in which no item it took got a run counts; after
// the n-th counted run in a row the next starts after 1 s, 4 s, then 16 s, and the fourth pauses
// the Pool (`errors`). A resume starts the count again; a run in which an item got a run ends the
// count (back-off 1 s, no pause).
TEST_F(Host, TheHeadCountsRunsBacksOffOneFourSixteenSecondsAndPausesAtTheFourth) {
  const std::string dir = FreshDir("head");
  auto store = jr2rt::OpenSqliteStore(dir + "store.db");
  jr2rt::ManualClock manual;
  manual.set(1'000'000);
  jr2rt::RunHost host(registry, *store, manual);
  const std::vector<std::string> alerts = {"conformance_alerts"};
  auto failNow = [&](const std::string& id) {  // a defect of the run: it ends `error`
    host.run(id).post([] { throw jr2rt::Defect("a planted defect"); });
    host.tick(id);
    ASSERT_EQ(host.run(id).status(), RunStatus::kError) << host.run(id).reason();
  };
  EXPECT_EQ(host.standingState("conformance_alerts")["state"], "new");
  std::string run = host.standUp(alerts).at(0);
  host.tick(run);
  auto head = store->head("conformance_alerts");
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->run, run);
  EXPECT_EQ(head->startedMs, 1'000'000);
  EXPECT_EQ(head->streak, 0);
  EXPECT_EQ(head->ended, "");
  EXPECT_EQ(host.standingState("conformance_alerts")["state"], "live");

  std::vector<int64_t> waited;
  for (int64_t expect : {1000, 4000, 16000}) {
    failNow(run);
    head = store->head("conformance_alerts");
    EXPECT_EQ(head->run, run) << "written by the commit that ended it";
    EXPECT_EQ(head->ended, "error");
    EXPECT_EQ(head->paused, "");
    const Json bo = host.deliverHook("monitor", "alert.raised", "", {{"alert", {{"id", "X"}}}});
    EXPECT_EQ(bo["verdict"], "backoff") << bo.dump();
    EXPECT_EQ(bo["retryAfter"], expect / 1000) << bo.dump();
    manual.advance(expect - 1);
    EXPECT_TRUE(host.standUp(alerts).empty()) << "still in its back-off of " << expect << " ms";
    manual.advance(1);
    const auto next = host.standUp(alerts);
    ASSERT_EQ(next.size(), 1u) << "after " << expect << " ms";
    waited.push_back(expect);
    run = next[0];
    host.tick(run);
    EXPECT_EQ(store->head("conformance_alerts")->streak, static_cast<int64_t>(waited.size()));
  }
  failNow(run);  // the fourth counted run in a row: paused
  head = store->head("conformance_alerts");
  EXPECT_EQ(head->streak, 4);
  EXPECT_EQ(head->paused, "errors");
  EXPECT_NE(head->why.find("ended error or failed"), std::string::npos) << head->why;
  manual.advance(3'600'000);
  EXPECT_TRUE(host.standUp(alerts).empty()) << "a paused Pool is not started again";
  EXPECT_EQ(host.deliverHook("monitor", "alert.raised", "", {{"alert", {{"id", "Y"}}}})["verdict"],
            "paused");
  const Json state = host.standingState("conformance_alerts");
  EXPECT_EQ(state["state"], "paused");
  EXPECT_EQ(state["paused"], "errors");
  EXPECT_EQ(host.prune(jr2rt::SystemClock().nowMs() + 60'000, "conformance_alerts"), 3)
      << "the three ended before it go; the run the head names stays";
  EXPECT_TRUE(store->summary(run).has_value());

  // A resume starts the count again; a run in which an item got a run ends `error` uncounted.
  run = host.resume("conformance_alerts", false);
  host.tick(run);
  EXPECT_EQ(store->head("conformance_alerts")->streak, 0);
  EXPECT_EQ(host.deliverHook("monitor", "alert.raised", "d-A1",
                             {{"alert", {{"id", "A1"}, {"level", "warn"}}}})["verdict"],
            "held");
  host.tick(run);
  ASSERT_TRUE(store->byKey("conformance_alert_run", "A1").has_value());
  failNow(run);
  head = store->head("conformance_alerts");
  EXPECT_EQ(head->streak, 0) << "an item it took got a run";
  EXPECT_EQ(head->paused, "");
  manual.advance(1000);
  const auto after = host.standUp(alerts);
  ASSERT_EQ(after.size(), 1u) << "after 1 s";
  host.tick(after[0]);
  const Json top = store->load(after[0]).snapshot["top"];
  ASSERT_EQ(top["workers"].size(), 1u) << "it takes the live key A1 over";
  std::cout << "[ host ] back-offs " << Json(waited).dump() << " ms, paused at the 4th\n";
}

// At its bound, a standing run whose items all got no run (each refused at the callee's door)
// ends `done` with no hand-over and counts: the next starts after the back-off, taking what it
// held. A run in which none was taken (a quiet day) is handed over at once, counting nothing.
TEST_F(Host, ABoundWithNoItemThatGotARunCountsAndAQuietDayDoesNot) {
  const std::string dir = FreshDir("bound");
  auto store = jr2rt::OpenSqliteStore(dir + "store.db");
  jr2rt::ManualClock manual;
  manual.set(5'000'000);
  jr2rt::RunHost host(registry, *store, manual);
  const std::vector<std::string> refused = {"conformance_refused"};
  std::string run = host.standUp(refused).at(0);
  host.tick(run);
  // A quiet day: handed over at once, the count as it was.
  manual.advance(jr2rt::kStandingBoundMs);
  auto handed = host.handOverDue();
  ASSERT_EQ(handed.size(), 1u);
  EXPECT_EQ(host.run(run).output()["handedOverTo"], handed[0]);
  run = handed[0];
  host.tick(run);
  EXPECT_EQ(store->head("conformance_refused")->streak, 0);
  // 500 items, each refused at the door (a dispatch to a standing Pool): none gets a run.
  int held = 0;
  for (int i = 0; i < 500; ++i) {
    const std::string id = "R" + std::to_string(i);
    held += host.deliverHook("refuser", "alert.raised", "d-" + id,
                             {{"alert", {{"id", id}, {"level", "warn"}}}})["verdict"] == "held";
    host.tick(run);
  }
  EXPECT_EQ(held, 500);
  int refusedMarks = 0;
  for (const auto& f : store->feed(run, 0))
    refusedMarks += f.kind == "failed" || f.line.find("start-refused") != std::string::npos;
  EXPECT_GE(refusedMarks, 500) << "each item refused at the callee's door";
  EXPECT_TRUE(host.handOverDue().empty()) << "no hand-over: it ends";
  EXPECT_EQ(host.run(run).status(), RunStatus::kDone);
  EXPECT_FALSE(host.run(run).output().is_object()) << "no handedOverTo";
  auto head = store->head("conformance_refused");
  EXPECT_EQ(head->ended, "bound");
  EXPECT_EQ(head->streak, 1);
  EXPECT_TRUE(host.standUp(refused).empty()) << "a back-off of 1 s first";
  manual.advance(1000);
  const auto next = host.standUp(refused);
  ASSERT_EQ(next.size(), 1u);
  host.tick(next[0]);
  EXPECT_EQ(store->head("conformance_refused")->streak, 1) << "the count goes on";
  EXPECT_EQ(host.standingState("conformance_refused")["state"], "live");
  // Each replays as it ran: the quiet day's hand-over, the bound, the streak each took over.
  EXPECT_EQ(ReplayEvery(*store, registry, "conformance_refused"), 3);
}

// A host takes a free run up with one take of its lock, kept from then on: a lock taken to see
// that it is free, let go and taken again could be taken by another command in between (and a
// serve would then wait for that command, or a `send` wait instead of handing it the verb).
TEST_F(Host, ARunIsTakenUpWithOneTakeOfItsLock) {
  const std::string dir = FreshDir("lock-once");
  CountingStore store(dir + "store.db");
  jr2rt::ManualClock manual;
  const std::string workflow = "conformance_secret";
  std::string id;
  {
    jr2rt::RunHost first(registry, store, manual);
    id = first.start(workflow, {{"note", {{"deep", {{"secret", "s"}}}}}}, dir);
    ASSERT_FALSE(first.run(id).ended());
  }  // its lock goes with it: the run waits at its Gates, free
  std::string holder;
  {
    jr2rt::RunHost host(registry, store, manual);
    const int64_t before = store.locks;
    ASSERT_TRUE(host.host(id, &holder));  // serve's answer at a Gate
    EXPECT_EQ(store.locks - before, 1);
    EXPECT_TRUE(host.hosts(id));
  }
  {
    jr2rt::RunHost host(registry, store, manual);
    const int64_t before = store.locks;
    const auto [taken, here] = host.takeOrHand(id.substr(0, 8), workflow, "cancel", Json::object());
    EXPECT_EQ(taken, id);
    EXPECT_TRUE(here) << "taken here, not handed over";
    EXPECT_EQ(store.locks - before, 1);
    EXPECT_TRUE(host.hosts(id));
  }
  {
    jr2rt::RunHost host(registry, store, manual);
    const int64_t before = store.locks;
    EXPECT_EQ(host.takeLive({workflow}), 1);  // serve taking up the waiting runs
    EXPECT_EQ(store.locks - before, 1);
    EXPECT_TRUE(host.hosts(id));
  }
  // Held by another: left held, its holder named, and nothing waited for.
  jr2rt::RunHost holderHost(registry, store, manual);
  ASSERT_EQ(holderHost.take(id, workflow), id);
  jr2rt::RunHost host(registry, store, manual);
  EXPECT_FALSE(host.host(id, &holder));
  EXPECT_EQ(holder, "pid " + std::to_string(getpid()));
  EXPECT_EQ(host.takeLive({workflow}), 0);
  EXPECT_FALSE(host.hosts(id));
}

// serve's handlers (RunHost::queue, afterCommit): a change made between two turns is a step of
// the next turn, and its answer comes only once that turn is stored.
TEST_F(Host, AQueuedChangeIsAnsweredAfterTheCommitThatStoresIt) {
  const std::string dir = FreshDir("queue");
  auto store = jr2rt::OpenSqliteStore(dir + "store.db");
  jr2rt::RunHost host(registry, *store, clock);
  std::string id;
  int64_t revisionWhenAnswered = -1;
  std::string statusWhenAnswered;
  std::string refused;
  host.queue([&] {
    try {
      host.begin("conformance_secret", {{"nope", 1}}, dir);
    } catch (const jr2rt::BadInput& e) {
      refused = e.what();
    }
    id = host.begin("conformance_secret", {{"note", {{"deep", {{"secret", "s"}}}}}}, dir);
    EXPECT_EQ(store->revision(id), 0) << "not stored before its turn";
    host.afterCommit([&] {
      revisionWhenAnswered = store->revision(id);
      statusWhenAnswered = store->summary(id)->status;
      // The answer of a Gate delivered now comes after the next commit, the run then done.
      host.run(id).deliver("approval", "rate", {{"score", 1}});
      host.run(id).deliver("both.x.review", "accept", Json::object());
      host.afterCommit([&] {
        statusWhenAnswered = store->summary(id)->status;
        jr2rt::RunHost::Interrupt(SIGTERM);  // serve() returns after this turn
      });
    });
  });
  host.serve(nullptr);
  EXPECT_NE(refused.find("nope"), std::string::npos) << refused;
  EXPECT_GT(revisionWhenAnswered, 0) << "the start was stored before it was answered";
  EXPECT_EQ(statusWhenAnswered, "done");
  EXPECT_EQ(store->list(true).size(), 1u) << "the refused input stored nothing";
}

// serve's pipelined commit (commit.cpp): while the commit thread stores a batch the engine goes
// on; what waited for that batch is answered only once it is stored, a change made meanwhile
// goes in the next batch, and a batch the disk refused is told nothing and stored whole when
// there is space again (serve tries each second: this test waits that second).
TEST_F(Host, AServeCommitsOnItsOwnThreadAndAnswersOnlyWhatIsStored) {
  const std::string dir = FreshDir("pipelined");
  CountingStore store(dir + "store.db");
  CommitGate gate;
  gate.failAt = 2;  // the answers' batch: refused once
  store.gate = &gate;
  jr2rt::RunHost host(registry, store, clock);
  std::string id;
  bool startAnswered = false;
  bool answersAnswered = false;
  int64_t revisionThen = -1;
  std::string statusThen;
  host.queue([&] {
    id = host.begin("conformance_secret", {{"note", {{"deep", {{"secret", "s"}}}}}}, dir);
    host.afterCommit([&] {
      startAnswered = true;
      revisionThen = store.revision(id);
    });
  });
  bool sawFirst = false;
  bool sawRefused = false;
  bool sawFull = false;
  std::function<void()> watch = [&] {
    if (gate.count() == 1 && !sawFirst) {
      // The start's batch is with the commit thread, held there: nothing of it is told yet.
      sawFirst = true;
      EXPECT_FALSE(startAnswered) << "answered before its batch was stored";
      EXPECT_EQ(store.revision(id), 0) << "the batch is not stored yet";
      // Changes made meanwhile: a step of the next turn, stored by the next batch.
      host.run(id).deliver("approval", "rate", {{"score", 1}});
      host.run(id).deliver("both.x.review", "accept", Json::object());
      host.afterCommit([&] {
        answersAnswered = true;
        statusThen = store.summary(id)->status;
        jr2rt::RunHost::Interrupt(SIGTERM);  // serve() returns after this turn
      });
      gate.allow(2);
    }
    if (gate.count() == 2 && startAnswered && !sawRefused) {
      sawRefused = true;
      EXPECT_GE(revisionThen, 1) << "the start was stored before it was answered";
      gate.allow(3);  // the second batch finds the disk full; the third stores it
    }
    if (!host.storeFull().empty()) {
      sawFull = true;  // the refused batch: said so, and nothing of it answered
      EXPECT_FALSE(answersAnswered);
    }
    if (!answersAnswered) host.queue(watch);
  };
  host.queue(watch);
  host.serve(nullptr);
  EXPECT_TRUE(sawFirst && sawRefused && sawFull);
  EXPECT_TRUE(answersAnswered);
  EXPECT_EQ(statusThen, "done") << "answered once the answers were stored";
  EXPECT_EQ(gate.count(), 3) << "the start, the answers refused, the answers stored";
  EXPECT_EQ(store.load(id).snapshot.value("status", ""), "done");
  // Every feed line once, in order, although the batch that first held them was refused.
  const std::vector<std::string> kinds = FeedKinds(store, id);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "ended"), 1);
  EXPECT_EQ(store.feed(id, 0).back().kind, "ended");
}

// While serve's commit thread stores a batch, the runs go on; once it is stored, what changed
// meanwhile goes to the commit thread as the next batch before the replies of the one stored are
// written, so that writing them overlaps the next commit (#33: Gate answers and hook deliveries
// a second rose by about a sixth). What writes the store itself after a commit (the inbox's
// answers, the hook log) runs before the next batch is handed: the store's two connections never
// wait for each other.
TEST_F(Host, AServeHandsTheNextBatchOnBeforeItWritesTheRepliesOfOneStored) {
  const std::string dir = FreshDir("hand-on");
  CountingStore store(dir + "store.db");
  CommitGate gate;
  store.gate = &gate;
  jr2rt::RunHost host(registry, store, clock);
  std::string id;
  int writerSaw = -1;
  int replySaw = -1;
  host.queue([&] {
    id = host.begin("conformance_secret", {{"note", {{"deep", {{"secret", "s"}}}}}}, dir);
    host.afterCommit([&] { writerSaw = gate.count(); });
    host.afterCommit(
        [&] {
          // The next batch reaches the commit thread (held there by the gate) while this waits:
          // a bounded wait, met at once when the batch was handed before this reply.
          std::unique_lock<std::mutex> lock(gate.mu);
          gate.cv.wait_for(lock, std::chrono::seconds(5), [&] { return gate.entered >= 2; });
          replySaw = gate.entered;
          gate.allowed = 2;
          gate.cv.notify_all();
          jr2rt::RunHost::Interrupt(SIGTERM);  // serve() returns after this turn
        },
        nullptr, /*reply=*/true);
  });
  bool changed = false;
  std::function<void()> watch = [&] {
    if (gate.count() == 1 && !changed) {
      // The start's batch is held by the commit thread: a step made now is the next batch's.
      changed = true;
      host.run(id).deliver("approval", "rate", {{"score", 1}});
      gate.allow(1);
    }
    if (replySaw < 0) host.queue(watch);
  };
  host.queue(watch);
  host.serve(nullptr);
  EXPECT_EQ(writerSaw, 1) << "what writes the store runs before the next batch is handed";
  EXPECT_EQ(replySaw, 2) << "the next batch was with the commit thread before the reply";
  EXPECT_EQ(gate.count(), 2);
  EXPECT_EQ(store.load(id).snapshot.value("status", ""), "waiting")
      << "the second batch (the step made while the first was stored) was stored too";
}

// While the commit thread stores a batch, the runs the turns change are prepared as the next
// batch at once and queued behind it: the commit thread goes on to it as soon as the first is
// stored, without waiting for the engine's thread (#33: the gap between two commits was a third
// of serve's cycle). Here the engine's thread is kept busy until the second batch reaches the
// commit thread: before, that batch was prepared only once the engine's thread came back.
TEST_F(Host, AServeQueuesTheNextBatchWhileOneIsStoredAndStoresItWithoutTheEngine) {
  const std::string dir = FreshDir("queued");
  CountingStore store(dir + "store.db");
  CommitGate gate;
  store.gate = &gate;
  jr2rt::RunHost host(registry, store, clock);
  std::string id;
  int repliedAt = -1;  // the batches with the commit thread when each reply was written
  std::vector<int> replies;
  host.queue([&] {
    id = host.begin("conformance_secret", {{"note", {{"deep", {{"secret", "s"}}}}}}, dir);
    host.afterCommit([&] { replies.push_back(gate.count()); }, nullptr, /*reply=*/true);
  });
  int step = 0;
  bool reached = false;
  std::function<void()> watch = [&] {
    if (step == 0 && gate.count() == 1) {
      // The start's batch is held by the commit thread: a step now, and its reply.
      step = 1;
      host.run(id).deliver("approval", "rate", {{"score", 1}});
      host.afterCommit(
          [&] {
            replies.push_back(gate.count());
            repliedAt = static_cast<int>(replies.size());
            jr2rt::RunHost::Interrupt(SIGTERM);  // serve() returns after this turn
          },
          nullptr, /*reply=*/true);
    } else if (step == 1) {
      // The step's turn was committed (queued): the first batch goes, and this thread waits,
      // bounded, for the second to reach the commit thread, which it can only do on its own.
      step = 2;
      std::unique_lock<std::mutex> lock(gate.mu);
      gate.allowed = 1;
      gate.cv.notify_all();
      reached = gate.cv.wait_for(lock, std::chrono::seconds(5), [&] { return gate.entered >= 2; });
      gate.allowed = 2;
      gate.cv.notify_all();
    }
    if (repliedAt < 0) host.queue(watch);
  };
  host.queue(watch);
  host.serve(nullptr);
  EXPECT_TRUE(reached) << "the second batch waited for the engine's thread";
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[0], 2) << "the start's reply, once its batch was stored";
  EXPECT_EQ(gate.count(), 2);
  const jr2rt::StoredRun stored = store.load(id);
  EXPECT_EQ(stored.revision, 2) << "the second batch took the revision the first gave";
  EXPECT_EQ(stored.snapshot.value("status", ""), "waiting");
  // Every line once, in order: the start's turn, then the step's.
  const std::vector<std::string> kinds = FeedKinds(store, id);
  EXPECT_EQ(kinds, (std::vector<std::string>{"turn", "log", "gate-opened", "gate-opened", "turn",
                                             "answered", "gate-closed"}));
}

// The batch queued behind the one stored holds what the turns change until the commit thread
// takes it: a turn that changes a run while it waits prepares it again, with both turns' steps
// (#33: prepared once, at the first turn, it left most answers for the batch after it).
TEST_F(Host, AQueuedBatchHoldsWhatChangesUntilTheCommitThreadTakesIt) {
  const std::string dir = FreshDir("queued-again");
  CountingStore store(dir + "store.db");
  CommitGate gate;
  store.gate = &gate;
  jr2rt::RunHost host(registry, store, clock);
  std::string id;
  std::vector<std::pair<std::string, int>> told;  // each reply, and the batches entered then
  host.queue([&] {
    id = host.begin("conformance_secret", {{"note", {{"deep", {{"secret", "s"}}}}}}, dir);
  });
  int step = 0;
  std::function<void()> watch = [&] {
    if (step == 0 && gate.count() == 1) {
      // The start's batch is held by the commit thread: the first step is queued behind it.
      step = 1;
      host.run(id).deliver("approval", "rate", {{"score", 1}});
      host.afterCommit([&] { told.emplace_back("first", gate.count()); }, nullptr,
                       /*reply=*/true);
    } else if (step == 1) {
      // The first step's turn queued its batch; the second step goes in the same one.
      step = 2;
      host.run(id).deliver("both.x.review", "accept", Json::object());
      host.afterCommit([&] { told.emplace_back("second", gate.count()); }, nullptr,
                       /*reply=*/true);
    } else if (step == 2) {
      step = 3;
      gate.allow(10);
    } else if (step == 3 && told.size() == 2) {
      jr2rt::RunHost::Interrupt(SIGTERM);  // serve() returns after this turn
      return;
    }
    host.queue(watch);
  };
  host.queue(watch);
  host.serve(nullptr);
  EXPECT_EQ(gate.count(), 2) << "the start, then both steps in one batch";
  EXPECT_EQ(told, (std::vector<std::pair<std::string, int>>{{"first", 2}, {"second", 2}}));
  const jr2rt::StoredRun stored = store.load(id);
  EXPECT_EQ(stored.snapshot.value("status", ""), "done");
  EXPECT_EQ(stored.revision, 2);
  const std::vector<std::string> kinds = FeedKinds(store, id);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "turn"), 2)
      << "the batch's lines under one mark";
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "ended"), 1);
  EXPECT_EQ(kinds.back(), "ended");
}

// A batch the disk refuses takes the batch queued behind it back, untried: both runs' lines and
// entries go back to their savers in order, nothing of either is told, and both are stored whole
// once there is space (serve tries each second: this test waits that second).
TEST_F(Host, ARefusedBatchTakesTheOneQueuedBehindItBackUntried) {
  const std::string dir = FreshDir("queued-refused");
  CountingStore store(dir + "store.db");
  CommitGate gate;
  gate.failAt = 2;  // the step's batch
  store.gate = &gate;
  jr2rt::RunHost host(registry, store, clock);
  std::string id;
  std::vector<std::string> told;
  host.queue([&] {
    id = host.begin("conformance_secret", {{"note", {{"deep", {{"secret", "s"}}}}}}, dir);
    host.afterCommit([&] { told.emplace_back("start"); }, nullptr, /*reply=*/true);
  });
  int step = 0;
  int enteredWhenFull = -1;
  std::function<void()> watch = [&] {
    if (step == 0 && gate.count() == 1) {
      // The start's batch is held by the commit thread: the first step goes in the next batch,
      // which the commit thread takes once the start is stored, and holds.
      step = 1;
      host.run(id).deliver("approval", "rate", {{"score", 1}});
      host.afterCommit([&] { told.emplace_back("first"); }, nullptr, /*reply=*/true);
      gate.allow(1);
    } else if (step == 1 && !told.empty() && gate.count() == 2) {
      // The first step's batch is held (it will be refused); the second step is queued behind.
      step = 2;
      host.run(id).deliver("both.x.review", "accept", Json::object());
      host.afterCommit([&] { told.emplace_back("second"); }, nullptr, /*reply=*/true);
    } else if (step == 2) {
      step = 3;  // the second step's turn was committed: queued behind the first
      gate.allow(2);
    } else if (step == 3 && !host.storeFull().empty()) {
      step = 4;
      enteredWhenFull = gate.count();
      EXPECT_EQ(told, std::vector<std::string>{"start"}) << "nothing of either batch was told";
      gate.allow(10);
    } else if (step == 4 && told.size() == 3) {
      jr2rt::RunHost::Interrupt(SIGTERM);  // serve() returns after this turn
      return;
    }
    host.queue(watch);
  };
  host.queue(watch);
  host.serve(nullptr);
  EXPECT_EQ(enteredWhenFull, 2) << "the batch queued behind the refused one was never tried";
  EXPECT_EQ(told, (std::vector<std::string>{"start", "first", "second"}));
  EXPECT_EQ(gate.count(), 3) << "the start, the first step refused, both steps stored at once";
  const jr2rt::StoredRun stored = store.load(id);
  EXPECT_EQ(stored.snapshot.value("status", ""), "done");
  EXPECT_EQ(stored.revision, 2);
  const std::vector<std::string> kinds = FeedKinds(store, id);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "ended"), 1);
  EXPECT_EQ(kinds.back(), "ended") << "the lines of both steps once, in order";
}

// A statement whose text is built at run time is kept by its text, never by its address: a
// second text at the same address (a std::string assigned again, or one freed and another made)
// is its own statement. Keyed by address, the SQLite store once answered a page with another
// page's statement, bound short: `datatype mismatch`, and serve stopped.
TEST(SqliteDb, ABuiltStatementIsKeptByItsTextNotItsAddress) {
  const std::string dir = FreshDir("db-built");
  jr2rt::sqlite::Db db(dir + "x.db", dir + "x.db", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  std::string sql = "SELECT 1";
  int64_t first = 0;
  {
    jr2rt::sqlite::Stmt s(db, sql);
    ASSERT_TRUE(s.step());
    first = s.integer(0);
  }
  const auto at = reinterpret_cast<std::uintptr_t>(sql.c_str());
  sql.assign("SELECT 2");
  ASSERT_EQ(at, reinterpret_cast<std::uintptr_t>(sql.c_str()))
      << "the test needs the same address for the second text";
  jr2rt::sqlite::Stmt s(db, sql);
  ASSERT_TRUE(s.step());
  EXPECT_EQ(first, 1);
  EXPECT_EQ(s.integer(0), 2) << "the second text's own statement";
}

TEST(StoredStatuses, AreEveryRunStatusAndDrifted) {
  std::vector<std::string> want;
  for (jr2rt::RunStatus st :
       {jr2rt::RunStatus::kWaiting, jr2rt::RunStatus::kDone, jr2rt::RunStatus::kFailed,
        jr2rt::RunStatus::kDeadlocked, jr2rt::RunStatus::kError, jr2rt::RunStatus::kCancelled})
    want.emplace_back(jr2rt::ToString(st));
  want.emplace_back("drifted");
  EXPECT_EQ(jr2rt::StoredStatuses(), want) << "GET /runs?status= and a follower's look take "
                                              "exactly the statuses a run can be stored with";
}

}  // namespace

// Run::workOut (serve's `working`, what `run --server` and `send --server` wait on): true from
// the turn that starts a process until the turn that takes its end, false for a run that waits
// at a Gate with nothing out. The process waits on a FIFO that the test writes, so nothing sleeps.
TEST_F(Host, WorkIsOutFromAProcesssStartToItsEndAndNotAtAGate) {
  const std::string dir = FreshDir("work-out");
  const std::string fifo = dir + "go";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto store = jr2rt::OpenSqliteStore(dir + "store.db");
  jr2rt::RunHost host(registry, *store, clock);
  std::string command, gate;
  std::vector<bool> seen;  // workOut() of the command's run: at its start, out, after its end
  bool atGate = true;
  std::thread writer;
  std::function<void()> untilEnded = [&] {
    if (!host.run(command).ended()) return host.queue(untilEnded);
    seen.push_back(host.run(command).workOut());
    jr2rt::RunHost::Interrupt(SIGTERM);  // serve() returns after this turn
  };
  host.queue([&] {
    command = host.begin("conformance_command", {{"argv", {"sh", "-c", "read x < " + fifo}}}, dir);
    gate = host.begin("conformance_two_step", Json::object(), dir);
    host.afterCommit([&] {
      seen.push_back(host.run(command).workOut());  // held for this commit
      atGate = host.run(gate).workOut();
      host.queue([&] {
        seen.push_back(host.run(command).workOut());  // out, or about to be
        // The process ends once it reads a line: written from a thread, whose open waits for
        // the process to open its end (the engine's thread must not).
        writer = std::thread([&] { std::ofstream(fifo) << "go\n"; });
        host.queue(untilEnded);
      });
    });
  });
  host.serve(nullptr);
  if (writer.joinable()) writer.join();
  EXPECT_EQ(seen, (std::vector<bool>{true, true, false}));
  EXPECT_FALSE(atGate) << "a run at its Gate has no work out";
  EXPECT_EQ(store->summary(command)->status, "done");
}

// serve's answers write each kind of Gate's Menu once and copy it as text (DumpExpanded): the
// text must be exactly what dumping the expanded document writes, and nothing that only looks
// like a Menu's reference (a key or a string of the program's own) may be touched.
TEST(Views, DumpExpandedWritesWhatExpandingThenDumpingWrites) {
  const Json menus = {
      {"0\nok\nno", Json::array({{{"event", "ok"}, {"schema", {{"type", "object"}}}}})},
      {"1\nsay", Json::array({{{"event", "say"}, {"help", "a \"quoted\" \u00e9"}}})}};
  Json doc = {
      {"status", "waiting"},
      {"gates", Json::array({{{"gate", "a.review"}, {"menuOf", "0\nok\nno"}, {"meta", nullptr}},
                             {{"gate", "b.review"}, {"menuOf", "0\nok\nno"}, {"meta", nullptr}},
                             {{"gate", "c"},
                              {"menuOf", "1\nsay"},
                              {"meta",
                               {{"menuOf", "not a key"},
                                {"note", "\"menuOf\":\"0\\nok\\nno\""},
                                {"nested", {{"menuOf", "0\nok\nno"}}}}}},
                             {{"gate", "d"}, {"menuOf", "2\nunknown"}, {"meta", "\x01"}}})}};
  const std::string text = jr2rt::DumpExpanded(doc, menus);
  // What a reader gets by expanding the same document first (ExpandView's rule: a Gate's own
  // `menuOf` only).
  Json expanded = doc;
  for (Json& g : expanded["gates"]) {
    const std::string of = g["menuOf"].get<std::string>();
    if (!menus.contains(of)) continue;
    g["menu"] = menus[of];
    g.erase("menuOf");
  }
  // A `menuOf` inside a Gate's meta is the program's or the item's data, even when it names a
  // Menu: left as it is, as ExpandView leaves it.
  EXPECT_EQ(text, expanded.dump(-1, ' ', false, Json::error_handler_t::replace));
  EXPECT_NE(text.find("\"menuOf\":\"not a key\""), std::string::npos);
  EXPECT_NE(text.find("\"menuOf\":\"2\\nunknown\""), std::string::npos);
  EXPECT_NE(text.find("\"nested\":{\"menuOf\":\"0\\nok\\nno\"}"), std::string::npos);
  // Each Menu once per Gate that names it (a.review, b.review; never the one in c's meta).
  size_t n = 0;
  for (size_t at = 0; (at = text.find("\"schema\"", at)) != std::string::npos; ++at) ++n;
  EXPECT_EQ(n, 2u);
  // A bare list of Gates (`GET /gates`) is written the same way.
  EXPECT_EQ(jr2rt::DumpExpanded(doc["gates"], menus),
            expanded["gates"].dump(-1, ' ', false, Json::error_handler_t::replace));
}

// Each kind of Gate's Menu is made once per process and stored once per view, under a key (#31).
// Two events of one name with other fields (`approve` of two modules, or of two programs a
// process registers) are two Menus, never one Menu shown for both.
TEST(Views, TwoEventsOfOneNameWithOtherFieldsAreTwoMenus) {
  auto gateTaking = [](const std::string& field, const std::string& type) {
    jr2rt::OpenGate g;
    g.name = "review";
    g.kind = jr2rt::OpenGate::Kind::kGate;
    g.meta = Json::object();
    jr2rt::EventSpec e;
    e.name = "approve";
    e.audience = jr2rt::EventSpec::Audience::kExternal;
    e.fields = {{field, type, true, ""}};
    g.accepts = {e};
    return g;
  };
  const jr2rt::OpenGate a = gateTaking("note", "string");
  const jr2rt::OpenGate b = gateTaking("score", "int");
  const jr2rt::OpenGate again = gateTaking("note", "string");
  Json menus = Json::object();
  const Json refA = jr2rt::GateRef(a, menus);
  const Json refB = jr2rt::GateRef(b, menus);
  const Json refAgain = jr2rt::GateRef(again, menus);
  std::cout << "[ views ] Menu keys: " << refA["menuOf"].dump() << ", " << refB["menuOf"].dump()
            << "\n";
  EXPECT_NE(refA["menuOf"], refB["menuOf"]) << "other fields: another Menu";
  EXPECT_EQ(refA["menuOf"], refAgain["menuOf"]) << "the same events: the same Menu, made once";
  EXPECT_EQ(menus.size(), 2U);
  EXPECT_NE(jr2rt::GateFields(a), jr2rt::GateFields(b));
  EXPECT_EQ(jr2rt::GateFields(b)["approve"][0]["name"], "score");
  EXPECT_EQ(jr2rt::GateJson(a)["accepts"], Json::array({"approve"}));
}

// The view a save stores is the run's view (RunView) with each kind of Gate's Menu stored once
// under its key, and it is written member by member as text (ViewText): that text is exactly what
// dumping the same JSON writes, so what the store holds does not depend on which way it was made.
TEST(Views, TheSavedViewIsTheRunsViewWithEachMenuStoredOnce) {
  jr2rt::Registry registry;
  jr2gen::pool::RegisterWorkflows(registry);
  jr2rt::ManualClock clock;
  jr2rt::Run run(registry, *registry.workflow("conformance_jobs"), "views", clock);
  int next = 0;
  run.scriptNext(
      "scripted_next", [&next](const jr2rt::NextQuery&, const std::function<void(Json)>& answer) {
        if (next >= 3) return answer({{"item", nullptr}, {"open", 0}});
        answer({{"item", {{"id", "i" + std::to_string(next++)}, {"mode", "wait"}}}, {"open", 0}});
      });
  run.start({{"jobs", 3}});
  const Json saved = jr2rt::SavedView(run);
  // The three workers' Gates, of one kind, and the Pool's own.
  ASSERT_EQ(saved["report"]["gates"].size(), 4U) << saved.dump();
  std::set<std::string> kinds;
  for (const Json& g : saved["report"]["gates"]) {
    EXPECT_FALSE(g.contains("menu"));
    EXPECT_TRUE(saved["menus"].contains(g.value("menuOf", ""))) << g.dump();
    kinds.insert(g.value("menuOf", ""));
  }
  EXPECT_EQ(kinds.size(), 2U);
  EXPECT_EQ(saved["menus"].size(), 2U) << "each kind of Gate's Menu once";
  Json expanded = saved;
  jr2rt::ExpandView(expanded);
  const Json view = jr2rt::RunView(run);
  EXPECT_FALSE(view["text"]["fields"].empty());
  EXPECT_FALSE(view["gates"][0]["menu"].empty());
  EXPECT_EQ(expanded["report"], view);
  EXPECT_EQ(jr2rt::SavedViewText(run), saved.dump(-1, ' ', false, Json::error_handler_t::replace));
}
