// The run store (docs/runtime.md#the-store, docs/architecture.md#the-runtime): small interfaces,
// one per thing the store keeps — runs, feed, journal, inbox, hook log, heads, start keys, drive
// locks — and `Store`, all of them, which one backend implements: today the embedded one over a
// SQLite file (jr2/sqlite_store.h). No interface names a SQLite type or a file: a networked store
// shared by several hosts can honour each of them.
// A run is saved in one transaction after each step that changed it, with the feed lines of
// that step, before anything about the step is printed or answered.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jr2/pool_lines.h"
#include "jr2/value.h"

namespace jr2rt {

struct StoredRun {
  std::string id;
  std::string workflow;
  std::string status;
  int64_t updatedMs = 0;
  Json snapshot;
  // `snapshot` as text, when the saver already wrote it so (RunSaver::prepare, which then leaves
  // `snapshot` null while the run waits: the text is what is stored); "" means save() writes it
  // from `snapshot`. load() leaves it empty. Whoever edits `snapshot` clears it.
  std::string snapshotText;
  // Bumped by each save. 0: a run not loaded from the store (a new one).
  int64_t revision = 0;
  // The run's journal: load() gives every entry in order in `journal`; save() appends the
  // entries of `journalText` (each one entry's JSON text, as Run::takeJournal gives them: no tree
  // made and freed for each of 10,000 items, #33), after the `journalBefore` the command had
  // (else StoreConflict). A save never writes `journal`.
  std::vector<Json> journal;
  std::vector<std::string> journalText;
  int64_t journalBefore = 0;
  // A run a Pool of runs dispatched: its key, unique per workflow while its row lives ("" none).
  std::string key;
  // The run's input as JSON text, written beside the snapshot when given ("" leaves what is
  // stored): a saver gives it at its first save and leaves it out of every snapshot it writes
  // (Run::snapshot(false)), so that a Pool over 10,000 queued items does not write them again
  // at each commit (#33). load() puts the stored input back into `snapshot` as its `input`, when
  // the snapshot has none, and leaves this "".
  std::string inputText;
  // load(): the input was stored beside the snapshot and put back into it (the snapshot had none
  // of its own), so a saver that takes the run up need not give it again (RunSaver::restore).
  bool inputApart = false;
  // What reads of the run need, as JSON text (host/views.h SavedView): written with each save so
  // that `status`, `gates` and every HTTP read come from it, never from a restore. "" stores
  // none (a benchmark's bare save).
  std::string viewText;
};

// What `runs` shows of a run: its summary columns, never its snapshot.
struct RunSummary {
  std::string id;
  std::string workflow;
  std::string status;
  int64_t updatedMs = 0;
  int64_t revision = 0;
  // The view its last save wrote (StoredRun::viewText), when it was asked for; "" when it was not,
  // or the row has none (a store written before views, a bare save).
  std::string view;
  // The key a Pool of runs dispatched it with (StoredRun::key): filled by Store::page only.
  std::string key = {};
};

// A page of runs (`GET /runs?limit=`, the console's runs list): newest change first, after a
// cursor, filtered. Every filter is a column an index covers, so a page costs the same at 100
// runs and at 100,000 (docs/console.md).
struct RunQuery {
  std::vector<std::string> workflows;  // only these workflows (required: a Caller's own)
  std::string status;                  // only this status; "" any
  // Only the runs whose id starts with it, or that a Pool of runs dispatched with it as their
  // key (an item's id); "" any.
  std::string text;
  // The cursor: only runs changed before (beforeMs, beforeId), in (updated, id) order; 0 from
  // the newest.
  int64_t beforeMs = 0;
  std::string beforeId;
  // Following the changes (`GET /runs?follow=true`): when sinceMs is 0 or more, only the runs
  // changed after (sinceMs, sinceId), OLDEST change first, and beforeMs is not read. Each stored
  // status is then its own range of the runs_summary index, so a follower's look costs the same
  // at 100 runs and at 100,000.
  int64_t sinceMs = -1;
  std::string sinceId;
  int64_t limit = 50;
};

// Every status a stored run can have: a RunStatus's (run.h) or `drifted`, which the host marks a
// stored run that no longer fits its build (host.h). What `GET /runs?status=` takes.
const std::vector<std::string>& StoredStatuses();

// One event of a run's feed (`log RUN`; `serve` streams it): what happened, typed — `started`,
// `settled`, `failed`, `gate-opened`, `answered` (who answered a Gate, what, with what),
// `gate-closed`, `log`, `timer`, `woken`, `agent`, `note`, `cancelled`, `skipped`, `read-failed`,
// `ended` — with its data, and the line a person reads ("" for an event that is only data, such as
// `gate-closed`). A store written before kinds reads its lines as `line`.
struct FeedLine {
  FeedLine() = default;
  FeedLine(int64_t seq, int64_t timeMs, std::string line, std::string kind = "line",
           Json data = nullptr)
      : seq(seq),
        timeMs(timeMs),
        line(std::move(line)),
        kind(std::move(kind)),
        data(std::move(data)) {}
  int64_t seq = 0;  // 1, 2, … per run, in the order the lines were saved; 0 before saving
  int64_t timeMs = 0;
  std::string line;
  std::string kind = "line";
  Json data = nullptr;
  // The data as JSON text instead, when its maker wrote it so (Run::FeedEvent::dataText; then
  // `data` is null): what a save writes as it is. A load gives `data`.
  std::string dataText = {};
  // A top Pool's per-item line as it was told, short (FeedForm, jr2/pool_lines.h): its data is made
  // when read. A save writes it short; a load gives it whole.
  FeedForm form = FeedForm::kWhole;
  Json parsedData() const { return FeedFormData(form, kind, line, data, dataText); }
};

// Another command saved the run since this one loaded it: nothing was written.
class StoreConflict : public StoreError {
 public:
  using StoreError::StoreError;
};

// A save, heartbeat, claim or take by a host whose lease is no longer current (Hosts: another
// incarnation of its name registered, it left, or its lease ran out by the database's clock):
// nothing was written. The host must stop driving what it holds and join again.
class StoreFenced : public StoreConflict {
 public:
  using StoreConflict::StoreConflict;
};

// A read-only open of a location where no store exists: nothing was created.
class StoreMissing : public StoreError {
 public:
  using StoreError::StoreError;
};

// The store's disk is full (SQLite's SQLITE_FULL): nothing of the write was stored. serve keeps
// serving reads and stores again when there is space (docs/operations.md#a-full-disk); a command
// exits 65 saying so.
class StoreFull : public StoreError {
 public:
  using StoreError::StoreError;
};

// The head of a standing workflow (docs/runtime.md#standing-pools-of-runs-over-push-sources-12):
// its newest run, when that run started, how many counted runs in a row ended (`streak`), how the
// run ended (`ended`: "" while it is live, else `error`, `failed`, `bound` or `cancelled`, at
// `endedMs`) and why the Pool is paused (`paused`: "" when it is not, else `errors`, `bound` or
// `cancelled`; `why` says it in a sentence). Written in the transaction that saves the run it
// names (RunRows::saveAll); read here.
class Heads {
 public:
  struct Head {
    std::string workflow;
    std::string run;
    int64_t startedMs = 0;
    int64_t streak = 0;
    std::string ended;
    int64_t endedMs = 0;
    std::string paused;
    std::string why;
  };
  virtual ~Heads() = default;
  // The head of standing workflow `workflow`, if it ever had a run; every head.
  virtual std::optional<Head> head(const std::string& workflow) = 0;
  virtual std::vector<Head> heads() = 0;
};

// The runs: each one's row (snapshot, revision, summary, view, dispatch key), saved with its
// feed lines, journal entries and head in one transaction.
// One delivery of a hook, as the hook log keeps it (HookLog).
struct HookEntry {
  std::string hook;
  std::string delivery;
  int64_t timeMs = 0;
  std::string event;
  Json answer;
};

class RunRows {
 public:
  virtual ~RunRows() = default;
  // Saves the run and appends `feed` to its feed, in one transaction, and gives the new
  // revision. With a `revision` other than 0 (the one it was loaded or last saved at) it writes
  // only if the stored run still has that revision, and otherwise throws StoreConflict: two
  // commands on one run never lose each other's steps. With 0 it writes whatever is stored (a
  // new run, a benchmark).
  virtual int64_t save(const StoredRun& run, const std::vector<FeedLine>& feed) = 0;
  int64_t save(const StoredRun& run) { return save(run, {}); }
  // Group commit (docs/runtime.md#saved-as-it-moves-effects-at-most-once): saves several runs,
  // each with its feed lines, in one transaction, and gives their new revisions in order. A
  // conflict on one writes none.
  struct Save {
    StoredRun run;
    std::vector<FeedLine> feed;
    std::optional<Heads::Head> head;  // written after the run, in the same transaction
    // Hook deliveries logged in the same transaction (HookLog::logHooks, after every run of the
    // batch): a turn's deliveries are stored with what they did, with one commit (#33).
    std::vector<HookEntry> hooks = {};
  };
  virtual std::vector<int64_t> saveAll(const std::vector<Save>& batch) = 0;
  // The run whose id starts with `prefix` (4 characters or more). Throws StoreError when none
  // match, and when several do (the message lists them); StoreDamaged when its row cannot be
  // read.
  virtual StoredRun load(const std::string& prefix) = 0;
  // The full id of the run whose id starts with `prefix` (the same rules as load), without
  // reading its snapshot.
  virtual std::string resolve(const std::string& prefix) = 0;
  // Summaries, oldest change first: the waiting runs, or every run with `includeEnded`; with
  // `views`, each with its view.
  virtual std::vector<RunSummary> list(bool includeEnded, bool views = false) = 0;
  // Each waiting run's workflow, snapshot text and input text (as stored beside the snapshot;
  // "" when the snapshot holds it), oldest change first, read in one query: what `jr2c diff
  // --store` counts the runs a change strands from (through `jr2c-store`, docs/diff.md). This
  // default lists them and loads each.
  using EachWaiting = std::function<void(const std::string& workflow, const std::string& snapshot,
                                         const std::string& input)>;
  virtual void eachWaiting(const EachWaiting& fn);
  // The run whose id starts with `prefix`, by the rules of load(), as a summary, with its view
  // when `view`: one read, never its snapshot.
  virtual RunSummary find(const std::string& prefix, bool view) = 0;
  // Run `id`'s summary (its full id), without reading its snapshot; nothing when there is none.
  virtual std::optional<RunSummary> summary(const std::string& id) = 0;
  // The stored revision of run `id` (its full id), without reading its snapshot; 0 when none.
  virtual int64_t revision(const std::string& id) = 0;
  // The run of `workflow` that a dispatch keyed `key` (the newest, if ever two), while its row
  // lives: live, or ended and not pruned.
  virtual std::optional<RunSummary> byKey(const std::string& workflow, const std::string& key) = 0;
  // Up to `q.limit` + 1 summaries (the one more says a next page exists), newest change first
  // (oldest first when following, RunQuery::sinceMs), each with its key; never a view or a
  // snapshot.
  virtual std::vector<RunSummary> page(const RunQuery& q) = 0;
  // How many runs the store holds, by (workflow, status): `GET /metrics`.
  virtual std::map<std::pair<std::string, std::string>, int64_t> runCounts() = 0;
  // Deletes the runs that ended (any status but `waiting`) before `beforeMs`, with their feeds,
  // journals, start keys and whatever else the store keeps for them (the SQLite store: their
  // lock files); gives how many. `workflow` "" means every workflow. Never the run a head names:
  // a paused standing Pool keeps what it holds for as long as it is paused.
  virtual int64_t prune(int64_t beforeMs, const std::string& workflow) = 0;
};

// Each run's feed: appended by RunRows::save with the step that made the lines, read here.
class FeedLog {
 public:
  virtual ~FeedLog() = default;
  // The feed of run `id` after line `afterSeq`, in order.
  virtual std::vector<FeedLine> feed(const std::string& id, int64_t afterSeq) = 0;
  // At most `limit` lines of it: what a follower of a long feed is sent at a time.
  virtual std::vector<FeedLine> feedPage(const std::string& id, int64_t afterSeq, int64_t limit) {
    auto lines = feed(id, afterSeq);
    if (limit > 0 && static_cast<int64_t>(lines.size()) > limit) lines.resize(limit);
    return lines;
  }
  // The number of run `id`'s last feed line (0 when it has none): where a follower that wants
  // only what comes next starts.
  virtual int64_t lastSeq(const std::string& id) {
    const auto lines = feed(id, 0);
    return lines.empty() ? 0 : lines.back().seq;
  }
  // The names of the Gates run `id`'s feed says opened, a name once for each time it opened: an
  // answer to a Gate that is not open now was taken already, or its state was left, rather than
  // never there (RunHost::hadGate). A line whose data is not JSON names none.
  virtual std::vector<std::string> gatesOpened(const std::string& id) = 0;
  // Whether run `id`'s feed says Gate `gate` opened, by the rules of gatesOpened; the read stops
  // at the first line that says so.
  virtual bool gateOpened(const std::string& id, const std::string& gate) = 0;
};

// Each run's journal (StoredRun::journal): appended by RunRows::save, read whole by load() or
// here.
class Journal {
 public:
  virtual ~Journal() = default;
  // Run `id`'s journal, every entry in order, without its snapshot.
  virtual std::vector<Json> journal(const std::string& id) = 0;
};

// The inbox: a command asks the host that holds run `id`'s lock to do `verb` (`cancel`), and
// waits for its answer. ask() gives the request's number; the host reads asked() (requests no
// host has taken), takes one with takeRequest() (false: another took it, or it was withdrawn)
// and answers it; answerOf() gives the answer once there is one (and forgets the request);
// withdraw() takes back a request no host has taken (false: one took it — wait for its answer).
class Inbox {
 public:
  struct Request {
    int64_t seq = 0;
    std::string run;
    std::string verb;
    Json body;
  };
  virtual ~Inbox() = default;
  virtual int64_t ask(const std::string& id, const std::string& verb, const Json& body) = 0;
  virtual std::vector<Request> asked() = 0;
  virtual bool takeRequest(int64_t seq) = 0;
  virtual void answer(int64_t seq, const Json& answer) = 0;
  virtual std::optional<Json> answerOf(int64_t seq) = 0;
  virtual bool withdraw(int64_t seq) = 0;
  // Whether a host has taken request `seq` (and not answered it yet, or the asker not read it).
  virtual bool taken(int64_t seq) = 0;
};

// The hook log (`GET /hooks/NAME`): each delivery of hook `hook` with its id, its event and
// the answer it got. hookAnswer() gives the first answer to a delivery id already logged (a
// delivery sent again gets it, and changes nothing); logHooks() writes deliveries in one
// transaction, in order, and keeps the first of two with one id (as RunRows::saveAll does with a
// Save's `hooks`).
class HookLog {
 public:
  using HookEntry = jr2rt::HookEntry;
  virtual ~HookLog() = default;
  virtual std::optional<Json> hookAnswer(const std::string& hook, const std::string& delivery) = 0;
  virtual void logHooks(const std::vector<HookEntry>& entries) = 0;
  // The newest `limit` deliveries of `hook`, newest first: `{delivery, time, event, answer}`.
  virtual std::vector<Json> hookLog(const std::string& hook, int64_t limit) = 0;
};

// Starts by idempotency key (serve's `Idempotency-Key`, docs/serve.md#sending-again): the run
// that a Caller's start of `workflow` with `key` made, and the digest of its input; kept until
// that run is pruned.
class StartKeys {
 public:
  struct StartKey {
    std::string run;
    std::string digest;
  };
  virtual ~StartKeys() = default;
  virtual std::optional<StartKey> startKey(const std::string& caller, const std::string& workflow,
                                           const std::string& key) = 0;
  // Keeps the run a key starts, stored at once, before that run's first commit; gives the key's
  // start after the call: `start` when kept. It replaces a start whose run was never stored (its
  // serve stopped before its first commit). Shared by hosts (PostgreSQL), a key is kept for the
  // first start only: another host's start of it gives that start (its run may not be stored yet:
  // it is under way), and a start whose run was not stored within 30 s is replaced.
  virtual StartKey keepStartKey(const std::string& caller, const std::string& workflow,
                                const std::string& key, const StartKey& start) = 0;
};

// The per-run drive lock: one command (or one host) drives a run at a time. Held from the
// moment it is made until it is destroyed; release() and take() let a process that sleeps give
// it up meanwhile. It ends with its holder: a killed command never leaves a run locked (the
// SQLite store's are flocks, which the kernel drops when the process dies).
class RunLock {
 public:
  virtual ~RunLock() = default;
  virtual void release() = 0;
  virtual void take() = 0;
  // take() without waiting: false when another process holds the lock now.
  virtual bool tryTake() = 0;
};

class RunLocks {
 public:
  virtual ~RunLocks() = default;
  // Takes the drive lock of run `id` (its full id), waiting while another process holds it;
  // `onWait` is called once before such a wait (to tell the person), with the holder as it named
  // itself ("pid 1234"; "host NAME" for a run a live host owns, Hosts; "" when unknown).
  // `onWait` may throw to give up instead of waiting (the lock is then not taken).
  virtual std::unique_ptr<RunLock> lock(
      const std::string& id, const std::function<void(const std::string& holder)>& onWait) = 0;
};

// Hosts sharing one store (docs/scaling.md#hosts-leases-and-fencing, #32): each run host (a
// `serve`) registers under a stable name and holds a lease, renewed by heartbeats and judged by
// the database's clock only; a host whose lease is no longer current is fenced (StoreFenced) and
// writes nothing. Runs and standing heads are owned by one host at a time. With a lease, this
// store's saves check it in their own transaction and own what they write, and RunLocks takes
// ownership (the row) instead of a lock: lock()/tryTake() take a run nobody owns (or whose owner's
// lease is not current), false while a live host owns it; release() gives it up. Without a lease
// (a runner command), a run a live host owns is held: tryTake() is false and lock() waits, its
// `onWait` told "host NAME". Only the PostgreSQL store has it (Store::hosts()).
class Hosts {
 public:
  struct Lease {
    std::string host;
    int64_t epoch = 0;  // 1, 2, … one more at each join of `host`: only ever grows
    int64_t ttlMs = 0;
  };
  struct Owner {
    std::string host;
    int64_t epoch = 0;
    bool live = false;  // its lease is current (that epoch, not gone, not run out)
  };
  virtual ~Hosts() = default;
  // Registers host `name` (its row: epoch, alive until now + `ttlMs` by the database's clock,
  // not gone), bumping its epoch: every earlier incarnation of `name` is fenced at once, and the
  // runs and heads it owned are released (owner cleared) in the same transaction. From then on
  // this store object holds the lease: every save and saveAll checks it in its own transaction
  // (StoreFenced, nothing written, when it is not current), and the runs it saves are owned by
  // it. Throws StoreError for an empty name or a TTL that is not positive.
  virtual Lease join(const std::string& name, int64_t ttlMs) = 0;
  // The lease this store holds (after join); nothing before.
  virtual std::optional<Lease> lease() const = 0;
  // Renews the lease: alive until now + its TTL, by the database's clock. StoreFenced when it is
  // no longer current (a lease that ran out is never renewed: join again).
  virtual void heartbeat() = 0;
  // Every host whose lease ran out (by the database's clock) and that is not gone: marked gone,
  // and every run and head it owned released, in one transaction; gives their names, sorted. Any
  // store may call it, with a lease or without.
  virtual std::vector<std::string> reap() = 0;
  // Claims up to `limit` waiting runs that nobody owns, oldest change first, skipping any another
  // host is claiming now (FOR UPDATE SKIP LOCKED) and any a runner command drives now (its drive
  // lock); each claim bumps the run's revision, so that a save from an older copy conflicts.
  // Gives their summaries (with the new revision), oldest change first. StoreFenced as a save.
  // `workflows`: only runs of these (a host claims what its program can drive); empty: any.
  virtual std::vector<RunSummary> claim(int64_t limit,
                                        const std::vector<std::string>& workflows) = 0;
  // The instance token every host of this store accepts (every scope; `serve`'s own), made on
  // first use and kept in the database: 64 hex digits.
  virtual std::string instanceToken() = 0;
  // Gives up runs `ids`: their owner cleared where this lease owns them (others are left). For
  // runs claimed and not locked: a run a drive lock of this store holds is given up by that
  // lock's release(). Either way a later save of it with this lease is refused once another host
  // owns it.
  virtual void release(const std::vector<std::string>& ids) = 0;
  // Releases every run and head this lease owns and marks the host gone (on SIGTERM): the store
  // keeps the lease, and every later save with it is StoreFenced.
  virtual void leave() = 0;
  // Takes the head of standing workflow `workflow` (its row made if the workflow has had no run
  // yet): true when nobody owns it, this lease does, or its owner's lease is not current; false
  // when a live host owns it. Only the head's owner stands the workflow up, hands it over and
  // backs it off: with a lease, a saveAll that writes a head another live host owns is refused
  // (StoreConflict, nothing written). StoreFenced as a save.
  virtual bool takeHead(const std::string& workflow) = 0;
  // Who owns run `id` now, and whether that host's lease is current; nothing when nobody does
  // (or there is no such run).
  virtual std::optional<Owner> owner(const std::string& id) = 0;

  // Reserves dispatch key `key` of `workflow` for run `run`, which this host is about to start
  // and has not stored: in a statement of its own, outside any turn's transaction, so that a key
  // two hosts dispatch at once never fails a commit (docs/scaling.md#dispatch-keys-and-standing-
  // heads). Gives the run that holds the key: `run` when it is reserved now (or taken over from a
  // reservation whose host is not live and whose run never came, or from one whose run ended),
  // else the run a waiting run or a live reservation holds it for. The commit that ends a keyed
  // run deletes its reservation.
  virtual std::string reserveKey(const std::string& workflow, const std::string& key,
                                 const std::string& run) = 0;
  // Lets go of the reservation reserveKey made for `run`, which will not start after all.
  virtual void releaseKey(const std::string& workflow, const std::string& key,
                          const std::string& run) = 0;
  // Whether run `id`, not stored (yet), may still come: a reservation of a live host holds a key
  // for it. False once that host is gone: the run never will.
  virtual bool reservedLive(const std::string& id) = 0;

  // What a keeper tells its host, as bits of one mask: a request in the inbox for a run this host
  // owns (or nobody does), an answer in the inbox, runs let go (released, reaped, or saved
  // waiting by a runner: there may be runs to claim), the lease lost. After the listening
  // connection is made again, every wake-up at once: what was missed meanwhile is polled.
  enum Wake : unsigned { kWakeInbox = 1, kWakeAnswers = 2, kWakeRuns = 4, kWakeFenced = 8 };
  static constexpr unsigned kWakeAll = kWakeInbox | kWakeAnswers | kWakeRuns;
  // The keeper of this store's lease (docs/scaling.md#the-keeper): a connection of its own, on a
  // thread of its own, that renews the lease every `beatMs` whatever the host's own thread is
  // doing, judges it lost (StoreFenced from a heartbeat, or no heartbeat that went through for
  // two thirds of its TTL, however long a call hangs), and, unless `pollOnly`, LISTENs for the
  // other hosts' NOTIFYs. `woken` is called on the keeper's thread with a mask of Wake bits; it
  // must be quick and thread-safe. Stops (and joins its thread) when destroyed.
  class Keeper {
   public:
    struct Counts {
      int64_t beats = 0;       // heartbeats that went through
      int64_t notifies = 0;    // NOTIFYs received from other connections
      int64_t reconnects = 0;  // the keeper's connection made again
    };
    virtual ~Keeper() = default;
    // Why the lease is lost; "" while it holds. Once lost, no heartbeat goes out until renewed().
    virtual std::string fenced() = 0;
    // The last heartbeat's trouble ("" when the last one went through).
    virtual std::string trouble() = 0;
    // After the host joined again: the keeper renews `lease` from now on.
    virtual void renewed(const Lease& lease) = 0;
    // Whether the NOTIFYs of other hosts reach this one now (its LISTEN connection is up).
    virtual bool listening() = 0;
    virtual Counts counts() = 0;
  };
  // The keeper of the lease this store holds (after join). StoreError without one.
  virtual std::unique_ptr<Keeper> keep(int64_t beatMs, bool pollOnly,
                                       std::function<void(unsigned)> woken) = 0;
  // NOTIFYs this store has sent (at most one per channel in a transaction).
  virtual int64_t notifies() const = 0;
};

// All of it: what a backend implements, and what the host and the runner hold. A part that
// needs one interface may take just that one (RunSaver: RunRows).
class Store : public RunRows,
              public FeedLog,
              public Journal,
              public Inbox,
              public HookLog,
              public Heads,
              public StartKeys,
              public RunLocks {
 public:
  ~Store() override = default;
  // How many statements this store has executed since it was opened, through any of its
  // interfaces (the cost of a verb, in tests and in `GET /metrics`); 0 for a store that does not
  // count.
  virtual int64_t statements() const { return 0; }
  // Its hosts, leases and ownership (Hosts), when it has them: the PostgreSQL store (of schema
  // version 2; not one of version 1 opened read-only); nullptr for the SQLite store.
  virtual Hosts* hosts() { return nullptr; }
  // Another connection to this store, for the run host's commit thread (its group commit
  // pipelined while it serves, docs/runtime.md#saved-as-it-moves-effects-at-most-once): it only
  // ever saves, while this one reads and answers on the engine's thread. nullptr when the store
  // has none to give (the host then commits on the engine's thread): today the PostgreSQL
  // store, whose saves carry the lease of this connection.
  virtual std::unique_ptr<RunRows> commitConnection() { return nullptr; }
};

enum class StoreMode {
  kReadWrite,  // creates the store when the location holds none
  kReadOnly,   // creates nothing: a location without a store throws StoreMissing
};

// Opens the store at `location` (`--store`, `$JR2_STORE`, docs/runtime.md#the-store): today
// every location is the path of a SQLite file (OpenSqliteStore); the one place a location names
// its backend.
std::unique_ptr<Store> OpenStore(const std::string& location,
                                 StoreMode mode = StoreMode::kReadWrite);

}  // namespace jr2rt
