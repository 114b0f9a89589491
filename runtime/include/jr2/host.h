// The run host (docs/runtime.md#the-run-host): the one way anything drives runs. It hosts runs on
// one engine (one executor, a strand per run, one thread pool for blocking host functions, timers
// that fire on time), takes each run's drive lock in the store, stores every turn of its runs in
// one transaction (group commit) before anything of that turn is told or started, and offers the
// verbs as calls that take and give data. The runner's command line is a front end over it
// (arguments and printing only); `serve` will be another.
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "jr2/registry.h"
#include "jr2/run.h"
#include "jr2/saver.h"
#include "jr2/store.h"

namespace jr2rt {

class Engine;

// A stored run that no longer fits this build (a state renamed, a parameter without a default
// added): the host marks it `drifted` in the store, so no verb trips on it again.
class RunDrifted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The run has ended: it takes no events and no cancel (65; serve's 409).
class RunEnded : public BadInput {
 public:
  using BadInput::BadInput;
};

// What a host call was given back instead of finishing: SIGINT or SIGTERM reached the host.
class HostInterrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class GatesSeen;  // host/host_internal.h

class RunHost : private Dispatcher {
 public:
  // `threads`: for blocking host functions (`--threads`); 0 the default (the cores, at least 2).
  RunHost(const Registry& registry, Store& store, Clock& clock, int threads = 0);
  ~RunHost() override;
  RunHost(const RunHost&) = delete;
  RunHost& operator=(const RunHost&) = delete;

  // ---- what the host tells -------------------------------------------------------------------
  // After each commit: the feed events stored for run `id` in it, in order (what a front end
  // prints or streams: nothing of a step is told before it is stored).
  void onSaved(std::function<void(const std::string& id, const std::vector<FeedLine>&)> fn) {
    saved_ = std::move(fn);
  }
  // As it happens, before it is stored (for counts on a live line, never for what is told).
  void onEvent(std::function<void(const std::string& id, const Run::FeedEvent&)> fn) {
    event_ = std::move(fn);
  }
  // Notes for a person: a wait for another command's lock, a timer waited for, a run changed by
  // another command during a wait.
  void onNote(std::function<void(const std::string& note)> fn) { note_ = std::move(fn); }
  // The scripted Agent harness (Run::scriptAgents), for every run this host drives.
  void scriptAgents(Json script) { agents_ = std::move(script); }
  // The OpenAI-compatible harness (Run::modelAgents), for every run this host drives.
  void modelAgents(std::shared_ptr<const ModelServer> server) { model_ = std::move(server); }
  // For tests: how a read Source's `read` function is called (Run::scriptRead), in every run this
  // host drives from now on.
  void scriptRead(const std::string& function, ReadCall call) {
    reads_[function] = std::move(call);
  }

  // ---- the verbs -----------------------------------------------------------------------------
  // Starts a run of `workflow` with `input` and drives it until nothing more can happen now.
  // The input is checked before anything is stored (BadInput); `checked`: what the caller's check
  // read (checkStart, CheckInput), which the run starts from: the input is neither checked nor
  // read again (a Pool's 100,000 items, #33). `home`: its working directory. Gives the run's id.
  std::string start(const std::string& workflow, const Json& input, const std::string& home,
                    std::optional<JsonValue> checked = std::nullopt);
  // Takes the stored run `prefix` of `workflow` up to drive it: its drive lock (waiting for
  // another command that drives it: onNote says so), then the run as it was stored.
  // Throws StoreError (unknown, damaged), BadInput (another workflow's run), RunDrifted.
  std::string take(const std::string& prefix, const std::string& workflow);
  // Loads a stored run to read it, without its lock and without driving it.
  std::unique_ptr<Run> peek(const std::string& prefix, const std::string& workflow);
  // What reads show of the stored run `prefix` of `workflow` (views.h SavedView: `{build,
  // report, observe, working}`), read from the view its last save wrote, never restored; with
  // `items`, a Pool's settled items and failures are read from its journal into
  // `report.sofar`. A run saved by another build (or before views were stored) is restored once
  // to check that it still fits this one: RunDrifted as take() finds it. Throws StoreError
  // (unknown, damaged) and BadInput (another workflow's run).
  Json view(const std::string& prefix, const std::string& workflow, bool items = true);
  // The same from a summary read with its view (Store::list with views, Store::find). With
  // `expand` false its Gates still name their Menus in `menus` (views.h DumpExpanded).
  Json view(const RunSummary& run, bool items = true, bool expand = true);

  // The run `id` that this host drives (start or take), and the ids of all it drives.
  Run& run(const std::string& id);
  std::vector<std::string> ids() const;
  // Delivers `event` with `payload` at Gate `gate` of run `id`. A payload refused at a Gate open
  // now is refused before anything moves; then the timers that fell due fire first (and are
  // stored even when the answer is then refused, with BadInput saying what fired); then the
  // event is delivered and the run driven. `by`: who answered (Run::send).
  void send(const std::string& id, const std::string& gate, const std::string& event,
            const Json& payload, const std::string& by = "");

  // Cancels run `id` (BadInput if it has ended): it ends `cancelled`, its effects stop, and the
  // cancel is stored with its `cancelled` and `ended` events.
  void cancel(const std::string& id);
  // Takes the stored run `prefix` of `workflow` up to do `verb` (`send`, `cancel`) with `body`
  // (`send`: `{gate, event, payload}`) — or, when another command drives it now (a `run`
  // waiting for its processes), hands the verb to that command through the store's inbox: it
  // does it at the end of its current turn and answers once the step is stored. Gives the run's
  // id and true when this host took the run (the caller then does the verb itself), false when
  // the other command did it. One that does not answer within `patienceMs` is waited for as
  // any lock is. BadInput: the other command refused the verb (the message is its).
  std::pair<std::string, bool> takeOrHand(const std::string& prefix, const std::string& workflow,
                                          const std::string& verb, const Json& body,
                                          int64_t patienceMs = 3000);
  // A hook delivery (`POST /hooks/HOOK`): event `eventKey`, id `delivery` ("" when it has none),
  // body `payload`, to every run this host drives (Run::hook), and the answer: `{verdict,
  // reason, runs: [{run, verdict, reason}]}`, `reread` when a run reads again, else `skipped`
  // with the first reason. The answer is kept in the hook log; a delivery id already logged gets
  // its first answer and changes nothing.
  // With `drive` false the runs are not driven here (`serve`: their reads go out at the engine's
  // next turn).
  Json deliverHook(const std::string& hook, const std::string& eventKey,
                   const std::string& delivery, const Json& payload, bool drive = true,
                   bool retried = false);
  // Fires run `id`'s timers that are due and drives it.
  void tick(const std::string& id);
  // Waits for run `id`'s timers and drives it on as they fire: the timers of work under way
  // (an actor that holds no Gate, a retry's cool-down), or every timer with `all`, until it
  // ends or only Gates remain. While it sleeps it gives up the run's lock; a run changed by
  // another command meanwhile is taken up again from what that command stored. False when,
  // during a wait, another command (`serve`) took the run over: this host no longer drives it.
  bool follow(const std::string& id, bool all);

  // ---- reading the store ---------------------------------------------------------------------
  // The full id of the stored run `prefix`, a run of `workflow` (BadInput for another's).
  std::string resolve(const std::string& prefix, const std::string& workflow);
  // The summary of the stored run `prefix` (StoreError when there is none): one read; with
  // `view`, with its view.
  RunSummary summary(const std::string& prefix, bool view = false);
  // Whether run `id` (full) is stored or hosted.
  bool known(const std::string& id);
  // What `GET /metrics` tells of the host (#30): counts since it started, and two histograms
  // (upper bounds in seconds; the counts are per bucket, not cumulative).
  struct Histogram {
    std::vector<double> bounds;
    std::vector<int64_t> counts;  // one more than bounds: the last is +Inf
    double sum = 0;
    int64_t count = 0;
    void observe(double seconds);
  };
  struct Metrics {
    std::map<std::string, int64_t> events;  // feed lines by kind (`settled`, `failed`, …)
    int64_t modelRequests = 0;              // an Agent's asks of its model
    int64_t modelRetries = 0;               // and the tries again after a failed one
    int64_t commitsFailed = 0;              // group commits the disk refused
    int64_t fences = 0;                     // leases lost: this host fenced itself, joined again
    int64_t claimed = 0;                    // runs claimed (hosts sharing a store)
    int64_t queued = 0;                     // starts queued for a host with room
    int64_t reaped = 0;                     // hosts this host found dead and released
    int64_t killedOnFence = 0;              // process groups the keeper killed with a lost lease
    // Wake-ups taken from other hosts' NOTIFYs, by kind (inbox, answers, runs).
    int64_t wokenInbox = 0;
    int64_t wokenAnswers = 0;
    int64_t wokenRuns = 0;
    Histogram gateWait{{1, 10, 60, 300, 900, 3600, 14400, 86400}, {}};
    Histogram commit{{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}, {}};
    std::map<std::pair<std::string, std::string>, int64_t> gateOpened;  // (run, Gate): ms
  };
  const Metrics& metrics() const { return metrics_; }
  int effectsOut() const;
  // Runs in the store by (workflow, status).
  std::map<std::pair<std::string, std::string>, int64_t> runCounts();
  // A page of runs, newest change first (Store::page): up to `q.limit` + 1.
  std::vector<RunSummary> page(const RunQuery& q);

  // While serving: the store's disk was full at the last commit (why, "" when it was not).
  // Reads go on; changes are refused until a commit stores again.
  std::string storeFull() const { return full_ ? fullReason_ : std::string(); }
  // Whether Gate `gate` of run `id` was ever open (Store::gatesOpened): a run this host drives
  // reads its feed once, at the first call, and knows from its events after; any other, each
  // call.
  bool hadGate(const std::string& id, const std::string& gate);
  // serve's starts by idempotency key (Store::startKey, Store::keepStartKey).
  std::optional<Store::StartKey> startKey(const std::string& caller, const std::string& workflow,
                                          const std::string& key);
  Store::StartKey keepStartKey(const std::string& caller, const std::string& workflow,
                               const std::string& key, const Store::StartKey& start);
  // The newest `limit` deliveries of hook `hook` (`{delivery, time, event, answer}`).
  std::vector<Json> hookLog(const std::string& hook, int64_t limit);
  // The runs of `workflow` (every workflow for ""): the waiting ones, or all with `ended`; with
  // `views`, each with the view its last save wrote (for view()).
  std::vector<RunSummary> runs(bool ended, const std::string& workflow, bool views = false);
  // Run `id`'s feed after line `afterSeq`; its stored revision and status (to follow it).
  std::vector<FeedLine> feed(const std::string& id, int64_t afterSeq, int64_t limit = -1);
  // The stored run `prefix` of `workflow`'s trace (docs/runtime.md#traces) to `out`, whole: the
  // runner's `export` (trace.cpp), every page of tracePage().
  void exportTrace(const std::string& prefix, const std::string& workflow, std::ostream& out);
  // The same trace a page at a time: serve's `GET /runs/:id/trace` writes a page a pump, between
  // turns, so that a long trace never holds the engine. openTrace() finds the run (throwing what
  // exportTrace throws); tracePage() appends its next part to `out` — the header with the first
  // page of its feed, then pages of at most `limit` lines, then its `end` — and is true once the
  // end is written.
  struct TraceCursor {
    std::string id;
    Json header;        // written with the first page (its `time` is the first line's)
    int64_t after = 0;  // the last feed line written
    bool headed = false;
    std::shared_ptr<void> told;  // the lines of commands' output seen so far (trace.cpp)
  };
  TraceCursor openTrace(const std::string& prefix, const std::string& workflow);
  bool tracePage(TraceCursor& cursor, int64_t limit, std::string& out);
  int64_t revision(const std::string& id);
  // The number of run `id`'s last feed line (0 when none).
  int64_t lastSeq(const std::string& id);
  std::string storedStatus(const std::string& id);
  // Deletes the runs of `workflow` that ended before `beforeMs`; gives how many.
  int64_t prune(int64_t beforeMs, const std::string& workflow);

  // ---- serving -------------------------------------------------------------------------------
  // Takes up every waiting run of `workflows` that no other command drives now (a run whose lock
  // is held is left for later); gives how many it took this time. A host with a lease (below)
  // claims runs nobody owns, at most `capacity` hosted in all.
  int takeLive(const std::vector<std::string>& workflows);
  // Hosts sharing a store: whether this host drives `--capacity` runs already. A start it has no
  // room for is queued (queueStart) instead of driven here.
  bool atCapacity() const { return hosts_ != nullptr && liveRuns() >= capacity_; }
  // The runs this host drives that have not ended (an ended run is let go at the next second,
  // and takes no room meanwhile).
  int64_t liveRuns() const;
  // Stores a start of `workflow` with `input` as run `id`, not begun and owned by nobody (its
  // input checked first: a refused one stores nothing), and tells the other hosts: the first with
  // room claims it and begins it (adopt). Its view says `waiting`, with no Gate.
  void queueStart(const std::string& workflow, const Json& input, const std::string& home,
                  const std::string& id);

  // ---- hosts sharing a store (docs/scaling.md#several-hosts; lease.cpp) ----------------------
  // Joins the hosts of a store that has them (PostgreSQL) as `name`, with a lease of `ttlMs`:
  // from then on this host owns the runs it drives, and every commit checks the lease. False,
  // and nothing done, for a store that has no hosts (SQLite: one serve, by its lock).
  // Its lease is kept by the store's keeper (Hosts::Keeper: a thread and a connection of its
  // own), which LISTENs for the other hosts' NOTIFYs unless `pollOnly` (a connection pooler in
  // transaction mode, where LISTEN never fires): polling alone then finds what they asked.
  bool joinHosts(const std::string& name, int64_t ttlMs, int64_t capacity, bool pollOnly = false);
  // The store's hosts (nullptr for a store without them: SQLite).
  Hosts* storeHosts() { return store_.hosts(); }
  // serve's each second, and at once when the keeper says the lease is lost: the reaping of hosts
  // whose lease ran out, and the self-fence of this host when it lost its lease (a commit or a
  // heartbeat refused, or no heartbeat for two thirds of its TTL: the keeper has killed every
  // process its runs started already): it lets go of every run, answers what waited for a commit
  // 503, joins again and claims afresh.
  void keepLease();
  // The keeper's state, for `GET /metrics` and notes: whether the other hosts' NOTIFYs reach this
  // host now, and its counts (zero without a keeper).
  bool listening() const;
  Hosts::Keeper::Counts keeperCounts() const;
  // On SIGTERM, after the last commit: lets go of every run and head, and marks the host gone.
  void leaveHosts();
  // serve's each second: the ends of the runs this host's `dispatch` workers wait for and
  // another host drives (a claim split a Pool from its runs), read from the store and told to the
  // runs here. Gives how many ended.
  int hearEnds();
  // Hands `verb` (`send` with {gate, event, payload}, or `cancel`) of run `id`, which another
  // serve sharing the store drives, to that serve through the inbox, without waiting: `done` is
  // called on a later turn with its answer (`{status, gates}` once the step is stored there, or
  // `{error, kind}`), or with nothing when no host took it within `patienceMs` (then it was
  // withdrawn, and nothing of it was done).
  void forward(const std::string& id, const std::string& verb, const Json& body, int64_t patienceMs,
               std::function<void(const std::optional<Json>&)> done);
  // While fenced (between a lost lease and the next join): why; "" otherwise. A change asked of
  // serve then is refused 503 (nothing of it is stored).
  const std::string& fenced() const { return fenced_; }
  // Drives every run it hosts for as long as no signal comes: timers fire on time, the inbox is
  // answered, `every()` is called about every second (to take up new runs, say). On SIGTERM or
  // SIGINT it returns after the turn under way is committed, the processes its runs started
  // killed (they read `interrupted` when a host takes the runs up again).
  // `refill()`, when given, is called every 100 ms instead while a claim may find more than
  // this host took (its last claim was full, or it had no room): the runs that ended let go, and
  // more claimed, without waiting for the next second.
  void serve(const std::function<void()>& every, const std::function<void()>& refill = {});
  const Registry& registry() const { return registry_; }
  // The engine, for a front end that puts its own handlers on it (serve's HTTP).
  Engine& engine() { return *engine_; }

  // ---- serving: calls for handlers on the engine (serve's HTTP) -------------------------------
  // None of these drives the engine (a handler runs inside one of its turns): each change is a
  // step of the next turn, and is stored by that turn's commit.
  //
  // Runs `action` after the commit of the turn under way (beside the inbox's requests): what it
  // reads of a run is what is stored, and what it changes is the next turn's.
  void queue(std::function<void()> action);
  // Calls `fn` once the next turn is committed: the answer to a change that `action` made; or
  // `lost` instead when that turn is never stored (this host lost its lease: keepLease).
  // `reply`: `fn` only answers a client and writes nothing to the store, so it may run while
  // serve's commit thread already stores the next batch (the answers go out meanwhile).
  void afterCommit(std::function<void()> fn, std::function<void()> lost = nullptr,
                   bool reply = false);
  // Starts a run of `workflow` without driving it (BadInput when the input is refused, and
  // nothing is kept; `checked` as start's). Gives its id.
  std::string begin(const std::string& workflow, const Json& input, const std::string& home,
                    std::string id = "", std::optional<JsonValue> checked = std::nullopt);
  // What begin() refuses of a start (an unknown workflow, an input it refuses: BadInput), asked
  // before anything is kept of it (an idempotency key), giving what it read for begin()'s
  // `checked`; and a new run's id, for begin().
  JsonValue checkStart(const std::string& workflow, const Json& input) const;
  static std::string NewId();
  // Whether this host drives run `id`.
  bool hosts(const std::string& id) const { return runs_.count(id) != 0; }
  // Run `id` (its whole id) when this host drives it: its id, workflow and status as this host
  // holds them, with no read of the store (serve's Gate answer, #33); nullopt for any other.
  std::optional<RunSummary> hostedSummary(const std::string& id) const;
  // Run `r` to change now: hosted, or taken up at once. RunEnded when it has ended (said as the
  // local `send` says it, or with `cancel` as the local `cancel` does); RunBusy while another
  // command drives it.
  Run& changeable(const RunSummary& r, bool cancel = false);
  // serve's answer to Gate `gate` of run `r` (as summary() found it: the one read of the store),
  // for the next turn (stored by its commit): the run taken up if it is not hosted, and the
  // answer checked and queued by Run::deliver, the one check of a Gate. Throws RunEnded, RunBusy,
  // GateRefused, BadInput (the event or its payload).
  void answerAt(const RunSummary& r, const std::string& gate, const std::string& event,
                const Json& payload, const std::string& by);
  // Takes up the stored waiting run `id` now, if no other command drives it; else false, with
  // the holder of its lock (`pid N`) in `holder`.
  bool host(const std::string& id, std::string* holder);
  // Lets go of the runs that had ended at the previous call already (their answers are out by
  // then): a long-lived host keeps only the live runs. Gives how many.
  int releaseEnded();
  // Starts the standing Pools of `workflows`
  // (docs/runtime.md#standing-pools-of-runs-over-push-sources-12): one live run of each, started
  // now when none waits and its newest run was not cancelled (a cancel of a standing run is a
  // pause). Gives the ids started.
  std::vector<std::string> standUp(const std::vector<std::string>& workflows);
  // Hands each standing run this host drives that is at its bound (500 items it took, or a
  // day) over to a new run: the new run's start and the old run's end are stored by one commit.
  // Gives the new ids.
  std::vector<std::string> handOverDue();
  // Hands standing run `id` over to a new run now (`why`); gives the new run's id.
  std::string handOver(const std::string& id, const std::string& why);
  // Resumes the standing workflow `workflow` after a pause (a cancel, or a fourth counted run in
  // a row): a new run takes the held items (none with `dropHeld`) and the live keys of the run
  // its head names, and the count starts again. BadInput when it is live, or waits out a
  // back-off. Gives the new run's id.
  std::string resume(const std::string& workflow, bool dropHeld);
  // Standing workflow `workflow` as a person sees it
  // (docs/runtime.md#standing-pools-of-runs-over-push-sources-12): `{workflow, state, run,
  // startedMs, streak, held, keys}` with `state` `live`, `paused` (with `paused` and `why`),
  // `waiting` (its run ended; the next starts at `retryAtMs`) or `new` (it never ran); null for a
  // workflow that does not stand.
  Json standingState(const std::string& workflow);
  // Cancels run `id` that this host drives, without driving: stored at once with its
  // `cancelled` and `ended` events (BadInput if it has ended).
  void cancelHosted(const std::string& id);

  // ---- stopping ------------------------------------------------------------------------------
  // Async-signal-safe: asks every host of this process to stop (a SIGINT or SIGTERM handler
  // calls it). A host call under way then stops at the end of the current turn — everything
  // stored so far stays stored — kills the processes its runs started (a restore finds them
  // `interrupted`), and throws HostInterrupted.
  static void Interrupt(int signal);
  static int Interrupted();  // the signal, or 0
  // How many processes the interrupt killed.
  int stoppedEffects() const { return stoppedEffects_; }

 private:
  struct Hosted {
    std::unique_ptr<Run> run;
    std::unique_ptr<RunSaver> saver;
    std::unique_ptr<RunLock> lock;
    int head = 0;  // a standing run's head as this host wrote it: 0 not yet, 1 its start, 2 its end
    int headOut = 0;  // the same, as a batch handed and not stored yet writes it (commit.cpp)
    std::shared_ptr<GatesSeen> gates;  // made by attach
  };
  Hosted& hosted(const std::string& id);
  // Hosts a run taken from the store, with its lock: its saver, the run restored, attached.
  // `lock` is taken only when the run is adopted: one that cannot be restored leaves it with the
  // caller.
  Hosted& adopt(const StoredRun& stored, std::unique_ptr<RunLock>&& lock);
  // Cancels a hosted run and stores it with its `cancelled` and `ended` events.
  void cancelNow(Hosted& h);
  void attach(Hosted& h, bool fresh);
  std::unique_ptr<Run> restore(const StoredRun& stored, RunSaver* saver);
  // Drives the engine until it is quiet; then throws HostInterrupted if a signal came.
  void drive();
  void stopForSignal();
  // Answers the requests in the store's inbox for the runs this host drives (at most every
  // 200 ms: the engine asks after each turn).
  void serveInbox();
  // The engine's group commit at the end of each turn (onTurn); with `now`, stored before it
  // returns even while serving (a cancel, a hand-over: answered as stored).
  bool commit(const std::vector<Run*>& runs, bool now = false);
  // Counts a feed event of run `id` into metrics_.
  void count(const std::string& id, const Run::FeedEvent& e, int64_t nowMs);
  Metrics metrics_;
  // Hosts sharing the store (lease.cpp): its Hosts, this host's name, TTL and capacity; when its
  // heartbeat last went through; why it is fenced ("" when it is not).
  Hosts* hosts_ = nullptr;
  std::string hostName_;
  int64_t ttlMs_ = 0;
  int64_t capacity_ = 0;
  bool backlog_ = false;                 // takeLive's last claim may have left waiting runs behind
  std::vector<std::string> unreleased_;  // queued starts whose release failed: tried again
  int64_t endedSince_ = 0;  // runs that ended since serve last refilled (their room is free)
  std::string fenced_;
  std::string leaseTrouble_;  // the last heartbeat's error, told once
  bool pollOnly_ = false;
  std::unique_ptr<Hosts::Keeper> keeper_;
  // What the keeper's thread found (Hosts::Wake bits), taken by the engine's thread.
  std::atomic<unsigned> wakes_{0};
  // Takes the wake-ups the keeper left: an inbox or answers to look at now, runs to claim now.
  void takeWakes(bool* claimNow);
  // Lets go of everything after a lost lease and joins again (keepLease).
  void refence();
  bool serving_ = false;  // in serve(): a full disk is waited out, not thrown
  bool full_ = false;     // the last group commit found the disk full (or the store unreachable)
  bool fullDisk_ = true;  // full_ is the disk's (not a shared store that cannot be reached)
  std::string fullReason_;
  std::chrono::steady_clock::time_point fullTried_;
  void note(const std::string& text) {
    if (note_) note_(text);
  }

  // The door of the runs' `dispatch` workers (Dispatcher): a run per key per workflow.
  Dispatched dispatch(const std::string& workflow, const std::string& key, const Json& input,
                      const Json& by) override;
  std::optional<Dispatched> find(const std::string& workflow, const std::string& key) override;
  void forget(const std::string& workflow, const std::string& key) override;
  // Starts a run (not driven); `by`: the Pool of runs that dispatched it, or null; `checked`:
  // what CheckInput read of its input, when the caller checked it already.
  std::string beginRun(const std::string& workflow, const Json& input, const std::string& home,
                       const Json& by, const Json& carried = nullptr, std::string id = "",
                       std::optional<JsonValue> checked = std::nullopt);
  // The head to store with this save of a standing run: at its start (or when taken up), and at
  // its end, by the one rule that counts runs (none when it was handed over: the new run's is).
  std::optional<Store::Head> headOf(const Hosted& h) const;
  // The head of standing workflow `workflow` as it is now: the stored one, with the end of its
  // run read from the run's row when that run ended with no head written; nothing when it never
  // ran.
  std::optional<Store::Head> currentHead(const std::string& workflow);
  // After a commit: tells the dispatching runs of the runs that ended in it.
  void tellEnded(const std::vector<Store::Save>& batch);

  const Registry& registry_;
  Store& store_;
  Clock& clock_;
  std::shared_ptr<Engine> engine_;
  std::map<std::string, Hosted> runs_;
  std::function<void(const std::string&, const std::vector<FeedLine>&)> saved_;
  std::function<void(const std::string&, const Run::FeedEvent&)> event_;
  std::function<void(const std::string&)> note_;
  Json agents_;
  std::shared_ptr<const ModelServer> model_;
  std::map<std::string, ReadCall> reads_;
  std::set<std::string> refused_;  // runs takeLive could not take, told once
  // Hosts sharing a store: the runs it claimed and could not restore (damaged, or of a build it
  // does not have), held (owned, not driven) so that no host claims them again and again while
  // this one lives; let go with the rest when it leaves or loses its lease.
  std::map<std::string, std::unique_ptr<RunLock>> parked_;
  std::set<std::string> endedSeen_;
  std::map<std::pair<std::string, std::string>, std::string> keys_;  // (workflow, key) -> run
  // Hosts sharing a store: the run id of a dispatch that failed after it may have reserved its
  // key (the store went away mid-try), asked again under the same id so that the reservation it
  // left is its own (dispatch.cpp). Forgotten with the lease (a new epoch's reservations).
  std::map<std::pair<std::string, std::string>, std::string> tried_;
  // The standing workflows with no live run: paused, or in a back-off until `retryAtMs`.
  struct Standing {
    std::string state;
    int64_t retryAtMs = 0;
    std::string why;
  };
  std::map<std::string, Standing>
      standing_;  // ended runs that releaseEnded() lets go at its next call
  int stoppedEffects_ = 0;
  int64_t inboxCheckedMs_ = 0;  // steady ms
  // Requests whose step was queued (an answer delivered): answered after the turn that stores
  // it, with the run's status and Gates then (those of `machine`, whose Gate it answered, as
  // views.h AnsweredGates).
  struct AnswerDue {
    int64_t seq;
    std::string run;
    std::string machine;
  };
  std::vector<AnswerDue> answersDue_;
  // Asks the holder of run `id`'s lock for `verb` with `body` through the inbox; gives its
  // answer, or nothing when it did not answer within `patienceMs` (the request withdrawn).
  // `told`: the person was told already that the run is handed over.
  std::optional<Json> askHolder(const std::string& id, const std::string& holder,
                                const std::string& verb, const Json& body, int64_t patienceMs,
                                bool told);
  // Writes the answers of answersDue_ (after the turn that stored their steps), or of `due`.
  void answerDue();
  void answerDue(const std::vector<AnswerDue>& due);
  // Writes the answer to inbox request `seq`. The store gone away meanwhile (a server restarted
  // after the commit that stored what it answers), it is kept in unwritten_ and written again
  // at each pass (writeAnswers) rather than lost or thrown out of serve.
  void answerRequest(int64_t seq, const Json& answer);
  void writeAnswers();
  std::vector<std::pair<int64_t, Json>> unwritten_;
  // What forward() asked and waits for: polled with the inbox (pollForwarded).
  struct Forwarded {
    int64_t seq = 0;
    std::chrono::steady_clock::time_point deadline;
    std::function<void(const std::optional<Json>&)> done;
  };
  std::vector<Forwarded> forwarded_;
  void pollForwarded();
  // serve's handlers: what queue() and afterCommit() were given.
  std::vector<std::function<void()>> actions_;
  struct AfterCommit {
    std::function<void()> fn;
    std::function<void()> lost;
    // When it runs after the commit (runAfterCommit): a delivery's log entry (hooks.cpp) first,
    // then what writes the store, then the replies (afterCommit's `reply`), which write nothing.
    enum class Order { kHookLog, kStore, kReply } order = Order::kStore;
  };
  std::vector<AfterCommit> afterCommit_;
  // Runs `due` once the commit that stored their turns is done: first the hook deliveries whose
  // turn stored no run, logged in one transaction (hookLogNow_), then the others that write the
  // store, then `between` (a pipelined commit hands the next batch there, so that the store's
  // connections never wait for each other), then the replies, so that no delivery is answered
  // before it is logged.
  void runAfterCommit(std::vector<AfterCommit>& due, const std::function<void()>& between = {});
  std::vector<Store::HookEntry> hookLogNow_;  // gathered by one pass of runAfterCommit
  // Hook deliveries answered and not logged yet (logged with the turn's commit), by (hook, id).
  std::vector<Store::HookEntry> hookLogDue_;
  std::map<std::pair<std::string, std::string>, Json> hookAnswers_;
  // Whether run `id`'s lock is free now (taken and let go at once); if not, who holds it.
  bool lockFree(const std::string& id, std::string* holder);

  // A group commit from prepare to what it lets go: the saves, and, when it is pipelined (the
  // commit thread stores it while the turns go on), what waits for it — each run's effects
  // held then, the answers registered then (afterCommit_, answersDue_).
  // A batch may be prepared while the one before it is stored (commit.cpp): a save of a run
  // whose save is in that batch is `chained`, its revision the one that batch gives the run.
  struct Batch {
    std::vector<Store::Save> saves;
    std::vector<Hosted*> hosted;
    std::vector<bool> chained;
    // Each run's effects this batch lets go once stored: the first `n` its run holds then (the
    // batch before it let go of its own first).
    std::vector<std::pair<Run*, size_t>> held;
    std::vector<AfterCommit> after;
    std::vector<AnswerDue> answers;
    // What runs after its commit writes the store (an inbox answer, afterCommit's writers): the
    // batch behind it waits for that (Committer::release), so the two connections never wait
    // for each other.
    bool writesAfter() const;
  };
  // The saves of `runs` that changed (RunSaver::prepare), with the turn's hook deliveries;
  // `ahead`: prepared for the commit thread, which may store it after a batch not stored yet.
  Batch prepareBatch(const std::vector<Run*>& runs, bool ahead);
  // Effects held for batches handed and not settled, by run (what the next batch leaves them).
  std::map<Run*, size_t> heldOut_;
  // A batch that was not stored (or not tried, behind one that was not): its saves, lines and
  // entries given back to the savers, its runs changed still, what waited for it waiting for
  // the next (or told it was lost, when the lease was: refence). `tried`: its commit was tried
  // (settleBatch gave the savers back what a full disk refused). `again`: its runs are marked
  // changed (not when it is prepared again at once).
  void giveBack(Batch& b, bool tried, bool again = true);
  // A batch's saves not stored: their lines and entries back to their savers, its hook
  // deliveries back to be logged with the next (a full disk's, and a batch given back).
  void returnSaves(Batch& b);
  // A batch handed is settled: its held effects no longer counted in heldOut_.
  void heldSettled(const Batch& b);
  // What a commit of `b` leaves: the savers and heads told of the revisions, or, when `error`,
  // the lines and entries given back (a full disk), the lease lost (fenced_), or the error
  // thrown where nothing waits it out. True when stored. The one place for both the commit on
  // the engine's thread and the pipelined one.
  bool settleBatch(Batch& b, const std::exception_ptr& error, const std::vector<int64_t>& revisions,
                   double seconds);
  // The commit thread (commit.cpp): one batch at a time, on the store's commitConnection();
  // serve starts it (when the store gives one) and stops it once the last batch is settled.
  class Committer;
  struct CommitterGone {  // joins its thread (commit.cpp, where a Committer is whole)
    void operator()(Committer* c) const;
  };
  std::unique_ptr<Committer, CommitterGone> committer_;
  void startCommitter();
  void stopCommitter();
  // Between turns, nothing in flight: the inbox's answers and what afterCommit() was given, for
  // the changes the last commit stored (none while the disk is full).
  void answerCommitted();
  // The pipelined batch is done (on the engine's thread): settled, then its effects, answers
  // and afterCommit_ go out, or they wait for the next batch. With `handNext`, the runs changed
  // while it was stored go to the commit thread as the next batch before the replies are
  // written, so that writing them overlaps the next commit instead of coming before it.
  void batchDone(bool handNext = false, bool wait = false);
  // Waits for the batches in flight and settles them: before anything that lets go of a run, or
  // stores one at once.
  void settle();
  bool inFlight() const;
};

// A standing Pool's chain, from its hooks to the workflow its runs are of: `sentry → alerts →
// triage` ("" for a workflow that does not stand).
std::string StandingChain(const WorkflowInfo& workflow);
// What a resume of standing Pool `workflow` tells (RunHost::resume, and `run --server`): run `id`
// takes over from run `from`.
std::string ResumedText(const std::string& workflow, const std::string& id, const std::string& from,
                        bool dropHeld);
// What `serve` says of the standing Pools of `workflows` when it starts: each chain, and a
// warning for two that dispatch to one workflow.
std::vector<std::string> StandingNotes(const Registry& registry,
                                       const std::vector<std::string>& workflows);

// The working directory: the home of a run started here ("." when it cannot be read).
std::string CurrentDirectory();

// A time on the wall clock (ms) as a person reads it here: `2026-11-30 18:04:27`, local time.
std::string LocalTime(int64_t ms);

// A wait for a person to read: "250 ms", "30 s", "1 min 30 s", "2 h 5 min", "3 d 4 h".
std::string DurationText(int64_t ms);

}  // namespace jr2rt
