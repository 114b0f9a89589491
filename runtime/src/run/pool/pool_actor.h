// The Pool actor (docs/runtime.md#the-pool): child machines (or runs, or Pools) over a Source,
// one worker per item, at most `cap` at once. The Pool keeps the workers, the ids it knows
// (live, settled, failed, held), the latch, the poll and what it stores; its Source (one of
// three forms, pool_source.h) claims items for its free slots. The Sources are its friends: they
// read and set its state as the Pool's own steps did.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/occupancy.h"
#include "jr2/registry.h"
#include "jr2/run.h"
#include "run/actors/actor.h"
#include "run/actors/machine_actor.h"
#include "run/pool/pool_source.h"

namespace jr2rt {

// Empties a JSON value from its leaves up, a few levels deep, before it is destroyed (a Source's
// answer, a worker's input): see pool_actor.cpp.
void Dismantle(Json& j, int depth = 0);
// What is wrong with an item id (docs/runtime.md#the-pool), or "": a Pool starts no worker under
// such an id.
std::string IdProblem(const std::string& id);

class PoolActor final : public Actor {
 public:
  PoolActor(Run& run, Actor* parent, int key, std::string prefix, const PoolSpec& spec)
      : Actor(run, parent, key, std::move(prefix)), spec_(spec) {
    markPool();
  }

  void start(const Json& given) override;
  // A Pool's input read by its spec's parseInput (its parameters' defaults filled in), or
  // BadInput naming the Pool: start's read, and Run's strict check of a top Pool's input.
  static JsonValue ReadInput(const PoolSpec& spec, const Json& given);
  // start() with the input read already by the spec's parseInput (Run::begin, which checks it
  // strictly in the same read): a Pool over 100,000 items reads them once (#33).
  void startParsed(JsonValue input);
  void checkInput(const Json& input) const override { spec_.parseInput(input); }
  std::shared_ptr<const Payload> check(int, const std::string& event,
                                       const Json& payload) const override;
  // The `source` Gate: the wake event (never cancels a call; latches instead).
  void deliver(int, const std::string&, const Json&, std::shared_ptr<const Payload>) override;
  void timer(int) override;
  void childDone(int key, Json output) override;
  void childFailed(int key, const Failure& f) override;
  void stop() override;
  Json snapshot() const override;
  // Each worker's part from the text it wrote at its version, when nothing below it moved since
  // (Actor::touch): a commit writes again only the workers that changed (#33).
  void snapshotText(std::string& out) const override;
  void effectsOut(std::vector<std::string>& out) const override;
  Json observe() const override;
  void observeText(std::string& out, const Json& over) const override;
  Json sofar(bool items = true) const override;
  void restoreFrom(const Json& snap);

  // Whether the Pool's Source has a `hook SERVICE …` line.
  bool hears(const std::string& service) const;
  // A hook delivery for this Pool's Source (docs/runtime.md#read-sources): its verdict, decided
  // now from the Source's hook lines alone (a `reread` is a step of the Pool's, posted).
  HookVerdict hook(const std::string& service, const std::string& key, const Json& payload);

  // ---- hand-over (a standing Pool, docs/runtime.md#standing-pools-of-runs-over-push-sources-12)
  // What a new run takes of this one: the held items, in order, and the active keys (each live
  // `dispatch` worker's item and run).
  Json handOverState() const;
  // Items this run took itself (a carried key is not one), and when it started: at 500 items or
  // a day, it is handed over.
  bool atBound(int64_t nowMs) const;
  // For the head of its standing workflow: when it started, the counted runs in a row before it
  // (`streak`), the items it took and how many of those got a run (`ran`).
  Json standing() const;
  void itemGotRun() override { ++ran_; }

 private:
  // At start: whether the input is the run's plus members (inputFromRun_, inputOver_).
  void keepInputAsRuns();
  friend class CalledSource;
  friend class PullSource;
  friend class ReadSource;
  friend class PushSource;
  friend std::unique_ptr<PoolSource> MakePoolSource(PoolActor& pool);

  // A worker's parts of the snapshot and the observation as last written, each with the
  // worker's version then (made at the first save: a run nobody stores keeps none), and the
  // piece each is while it is not written again (core/pieces.h: a store writes it once).
  struct Written {
    uint64_t snapshotAt = 0;
    std::string snapshot;  // `{actor, id, key}`
    uint64_t snapshotPiece = 0;
    uint64_t observeAt = 0;
    std::string observe;  // its observation with its `id`
    uint64_t observePiece = 0;
  };
  struct Worker {
    const std::string* id;  // the key of its `liveIds_` entry: one copy of the id, not two
    std::unique_ptr<Actor> actor;
    mutable std::unique_ptr<Written> written = nullptr;
    LiveOne live = {};  // a worker, or a dispatched run (core/occupancy.h)
  };
  // The snapshot without its `workers` (snapshot() and snapshotText() add them).
  Json snapshotBase() const;
  // A worker `a`'s part (of the snapshot or the observation) appended to `out`: `text` as `write`
  // wrote it at version `at`, written again when the worker moved since (a new `piece` then,
  // core/pieces.h); written each time, and kept by nobody, for a worker with a Pool at or below
  // it.
  static void Kept(std::string& out, const Actor& a, uint64_t& at, std::string& text,
                   uint64_t& piece, const std::function<void(std::string&)>& write);

  // Takes what the run before handed over: each active key again (it finds its run: the wait
  // follows it, and `cap` counts it), then the held items, parsed by this build's item id (one
  // that does not parse is dropped with a `carry-refused` mark).
  void takeOver(const Json& carried);
  // A standing Pool has no output: what an item gave is on the feed, and only its id is kept
  // (known for the rest of the run, so a poison item never loops).
  void forgetOutput(const std::string& id);
  void openWakeGate();

  // Asks the Source for items (PoolSource::claim) unless a call is in flight (then the latch)
  // or `cap` workers run.
  void request();
  PoolSource& source();
  // What `next` is given: the lists and the input, shared with the Pool, never copied.
  NextQuery query() const { return NextQuery::OfPool(live_, settled_, failed_, input_); }
  // Starts a worker for `item` (one claim per item; a broken id rule is a defect of the Source).
  void claim(Json item);
  // A `skipped` mark on the feed, once per item in the run's life (a read at each poll finds
  // it again).
  void skip(const Json& item, const std::string& why);
  void armPoll();
  // A Source's answer (`key`: `answer` or `failure`, and its value) to `call` (`next`, `read`)
  // as an input of the turn (docs/runtime.md#traces), with the call's arguments the first time
  // in its life. Written as JSON text, the value neither copied nor made a tree of its own (an
  // answer a claim, #33).
  void traceSource(const char* call, const char* key, const Json& value);
  // Item `id`'s mark of `kind` (`started`, `settled`) on the feed, `<id> <kind>`.
  void mark(const char* kind, const std::string& id);
  // Why the items left can never start, in the output (`blocked`, `cycle`): what a `std.backlog`
  // says of its items (ExplainBacklog), read once, when the Pool ends deadlocked. Another Source
  // (an `extern` next) knows its own items: the output says how many it left open.
  void explainDeadlock(Json& output);
  // No live worker and no item: drained or deadlocked; a standing Pool parks instead, until a
  // delivery, a wake or its poll.
  void end();

  // The live list, its own (copied, without holes, when a query holds it) and, with `compact`,
  // without holes.
  LiveIds& ownLive(bool compact);
  void enlist(int key, const std::string& id, std::unique_ptr<Actor> actor);
  void retire(std::map<int, Worker>::iterator it);
  // Rebuilds what the Pool settled from the run's stored journal, in the order it settled.
  void readJournal(const Json& snap);
  // The top Pool of a run that keeps a journal: its items are stored one entry each, not in
  // its snapshot.
  bool journaled() const { return parent() == nullptr && run_.journaling(); }
  void settle(const std::string& id, bool failed);

  const PoolSpec& spec_;
  // Items from a backlog file are read strictly (claim); decided once, not per item.
  const bool strictItems_ = spec_.source.function == "std.backlog";
  MachineActor::Class workerClass_{nullptr, nullptr};
  // A Pool of Pools: each item's worker is this Pool (looked up once, not by name per item).
  const PoolSpec* const innerPool_ = run_.registry().pool(spec_.worker);
  // Its input, with its parameters' defaults: shared with every Source call and query, never
  // copied.
  std::shared_ptr<const Json> input_ = std::make_shared<const Json>();
  // The top Pool's input is the run's input with the Pool's defaults: what differs from the
  // run's is all its snapshot keeps (`inputOver`), and the run's input, stored once beside the
  // snapshot, is not written again at each commit (#33). False for a Pool inside a machine, or
  // an input that is not the run's plus members.
  bool inputFromRun_ = false;
  Json inputOver_;
  int64_t cap_ = 1;
  std::map<int, Worker> workers_;
  // Settled and failed ids, shared with the queries given to `next` (copy on write).
  std::shared_ptr<std::vector<std::string>> settled_ = std::make_shared<std::vector<std::string>>();
  std::shared_ptr<std::vector<std::string>> failed_ = std::make_shared<std::vector<std::string>>();
  std::unordered_set<std::string> settledSet_;
  // The live workers' ids in the order they started, with holes (LiveIds; shared with queries,
  // copy on write), and each id's key, so the id rules and a settle cost no walk over the
  // workers. Keys grow as workers start, so `liveKeys_` (the key of each slot, a hole's too) is
  // sorted: a settle finds its slot by binary search and leaves a hole, and the holes are
  // dropped when they are as many as the live (or the list is copied for a query that holds it):
  // a settle costs the same at cap 1,024 as at cap 8.
  std::shared_ptr<LiveIds> live_ = std::make_shared<LiveIds>();
  std::vector<int> liveKeys_;
  std::unordered_map<std::string, int> liveIds_;
  Json items_ = Json::object();
  Json failures_ = Json::object();
  int64_t lastOpen_ = 0;
  int nextKey_ = 0;
  bool inFlight_ = false;
  std::set<std::string> skipped_;  // the items a read skipped, by fingerprint: marked once
  std::deque<Json> held_;          // a push Source's items, in arrival order, until claimed
  std::unordered_set<std::string> heldIds_;
  int64_t taken_ = 0;      // items this run took itself (a standing Pool's bound)
  int64_t ran_ = 0;        // of those, the ones that got a run (a `dispatch` Pool)
  int64_t streak_ = 0;     // counted runs in a row before this standing run (its head's)
  int64_t startedMs_ = 0;  // when it started (its bound of a day)
  bool latch_ = false;
  // Its Source's arguments are in the trace (the first answer's `source` line): once in the
  // Pool's life, stored with it, so every process that drives it tells the same lines.
  bool argsTold_ = false;
  bool wakeOpen_ = false;
  bool pollArmed_ = false;
  int64_t pollDue_ = 0;
  std::shared_ptr<const Json> args_;    // the Source's arguments, made once
  std::unique_ptr<PoolSource> source_;  // made at its first use, kept
};

}  // namespace jr2rt
