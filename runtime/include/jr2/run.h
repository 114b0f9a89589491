// A run: one tree of actors — the top machine or Pool, invoked children, a Pool's workers, Gates,
// timers and Source calls — driven on one Boost.Asio strand (docs/runtime.md#a-run). Host functions
// run on a thread pool and report back onto the strand. The Run is deterministic: with the manual
// clock and scripted Sources, the same inputs give the same starts, settles and statuses. It never
// sleeps: timers fire when the clock says they are due.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "jr2/pool_lines.h"
#include "jr2/registry.h"
#include "jr2/statechart.h"
#include "jr2/stdlib.h"
#include "jr2/value.h"

namespace jr2rt {

// Time for a run. The runner uses the system clock; tests use ManualClock.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t nowMs() const = 0;
  // True for the wall clock: an executor then fires a run's timers on time by itself. A manual
  // clock's timers fire only at tick().
  virtual bool real() const { return false; }
};

class SystemClock final : public Clock {
 public:
  int64_t nowMs() const override;
  bool real() const override { return true; }
};

class ManualClock final : public Clock {
 public:
  int64_t nowMs() const override { return now_; }
  void set(int64_t ms) { now_ = ms; }
  void advance(int64_t ms) { now_ += ms; }

 private:
  int64_t now_ = 0;
};

// The threads that run blocking host functions (`extern`, `std.http_get`, an `extern` `next`)
// for each Run made from now on: `--threads`; by default the number of cores, at least 2. A
// process (`std.command`) needs none.
void SetEffectThreads(int threads);
int EffectThreads();

enum class RunStatus { kWaiting, kDone, kFailed, kDeadlocked, kError, kCancelled };
const char* ToString(RunStatus s);
RunStatus RunStatusFrom(const std::string& s);

// A Gate that is open: what needs a person (or a scripted Agent).
struct OpenGate {
  std::string name;  // `T-1.review`, `source`
  enum class Kind { kGate, kAgent, kSource } kind = Kind::kGate;
  Json meta;                       // what the author wrote for the person
  std::vector<EventSpec> accepts;  // the events it takes, with their fields
  std::string agent;               // kAgent: the Agent slot's name (`triager`)
};

// Why Run::deliver refused an answer at a Gate, before anything moved (the message says it for
// a person): the run has ended, no Gate of that name is open, or another answer to it was taken
// in this turn. `open` names the Gates open now (`A, B`). serve answers each with its status.
class GateRefused : public BadInput {
 public:
  enum class Why { kEnded, kNotOpen, kTaken };
  GateRefused(Why why, std::string open, const std::string& message)
      : BadInput(message), why(why), open(std::move(open)) {}
  Why why;
  std::string open;
};

// A Gate's Menu (docs/runtime.md#the-menu): each event it accepts as `{event, audience,
// description, schema}`, the schema its payload's JSON Schema (null when the generated code gave
// none). An Agent's Gate accepts only the events whose audience is `agent` or `any`. What `gates`,
// `status --json` and `GET /gates` show, and what a harness gives a model.
Json MenuJson(const OpenGate& gate);

// A Source's `next`, answered later: tests script it; the standard library answers at once. The
// answer is one function per Pool, given by reference: a script that answers later copies it.
using NextCall =
    std::function<void(const NextQuery& query, const std::function<void(Json answer)>& answer)>;

class Actor;
class Engine;
class Replayer;

// A read Source's `read`, answered later: tests script it (Run::scriptRead). `answer` takes the
// read's result; `failed` a Failure (a failed read gives no items).
using ReadCall = std::function<void(const Json& args, std::function<void(Json)> answer,
                                    std::function<void(const Failure&)> failed)>;

// A Pool of runs' door to its host (docs/runtime.md#standing-pools-of-runs-over-push-sources-12): a
// `dispatch` worker asks it to start the run of a workflow for an item, or to find the run that
// holds the item's key.
struct Dispatched {
  std::string run;                 // the run that holds the key
  std::string status = "waiting";  // its status now: `waiting`, or how it ended
  Json output;                     // once it ended
  std::string reason;
  bool existing = false;  // found under the key, not started now
};
// The key is reserved by a dispatch of another host (or of an earlier try) whose run is not
// stored yet: there is nothing to follow, and nothing may start under the key. The `dispatch`
// worker asks again a second later, as for StoreUnreachable: by then the run is stored (and
// followed), or its host stopped and the key is taken over (a run started here).
class DispatchPending : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
class Dispatcher {
 public:
  virtual ~Dispatcher() = default;
  // Starts a run of `workflow` with `input`, keyed `key` and marked `by` (`{run, pool, key}`),
  // or finds the run that holds the key for that workflow. BadInput: the callee's input refuses
  // the item (`start-refused`); StoreUnreachable or DispatchPending: nothing was started, asked
  // again a second later; anything else thrown is a `dispatch-error`. The host tells the
  // dispatching run when the run ends (Run::dispatchedEnded).
  virtual Dispatched dispatch(const std::string& workflow, const std::string& key,
                              const Json& input, const Json& by) = 0;
  // The run that holds `key` for `workflow`, if any, as it is now.
  virtual std::optional<Dispatched> find(const std::string& workflow, const std::string& key) = 0;
  // The worker that asked for `key`'s run is gone before it got one: what an earlier try of it
  // may have left reserved is let go (RunHost's tried_), so that no other host waits on it.
  virtual void forget(const std::string& /*workflow*/, const std::string& /*key*/) {}
};

// What a hook delivery did at one run, as its top Pool's Source decided it (Run::hook;
// docs/runtime.md#read-sources, its Hooks).
struct HookVerdict {
  // Weakest first: a host answers a delivery with the strongest of its runs' verdicts.
  enum class Kind { kSkipped, kHoldFull, kReread, kExisting, kHeld };
  Kind kind = Kind::kSkipped;
  std::string reason;  // why it was skipped, held back or found existing; "" otherwise
  // Whether a hook line of the Source takes the delivery's event key. An event no line takes is
  // a skip weaker than any other: its reason is a delivery's only when no run heard it.
  bool heard = true;
  std::string item;         // the item carried, once it has an id ("" when none)
  std::optional<Json> run;  // `existing`: the run that holds its key (null: a worker, no run)
  std::optional<std::string> status;  // `existing` by the host's door: that run's status now
  // As serve answers it for one run: `{verdict, reason}`, then `item`, `run`, `status` when set.
  Json json() const;
};
const char* ToString(HookVerdict::Kind kind);

// Throws BadInput when `input` does not fit `workflow` (unknown fields refused, with the path);
// for a host that must know before it stores anything, or makes a store. Returns what a Pool's
// check read (its input with its parameters' defaults), for Run::begin to start from instead of
// reading it again (100,000 items, #33); null for a machine's.
JsonValue CheckInput(const WorkflowInfo& workflow, const Json& input);

// The picks an Agent's Turn gets at one opening of its Gate (docs/runtime.md#the-menu): a pick
// outside the Menu, or a payload its schema refuses, is told to the Agent, which may pick again;
// after this many refused picks the Gate waits for a person. An agent declaration's `picks:` sets
// it per slot (the generated code always gives it); this is the bound of an Agent no module
// declares.
inline constexpr int kAgentPicks = 3;

// How the harness reaches its model server (runtime/src/run/agents.h): tests give a fake.
struct ModelTransport;

// The OpenAI-compatible Agent harness (docs/runtime.md, Agents): a model server that answers
// `POST …/v1/chat/completions` with tool calls (llama.cpp's server, vLLM, Ollama, a hosted API
// over https). Each time an Agent's Gate opens, the Agent's `instructions` and the
// Gate's meta go to the model with the Gate's Menu as its tools, and the tool call it answers is
// the Agent's pick.
struct ModelServer {
  std::string url;     // the completions endpoint: `http[s]://HOST[:PORT]/v1/chat/completions`
  std::string shown;   // `HOST:PORT`, for the feed
  std::string model;   // sent as `model`
  std::string apiKey;  // sent as a Bearer token; never on the feed, in a log or stored
  int64_t timeoutMs = 120000;  // one request's deadline
  int attempts = 4;            // tries of one request: a timeout, a 429, a 5xx or a body that is
                               // not a chat completion is tried again, up to this many times
  int64_t backoffMs = 1000;    // the first wait between tries, doubled at each
  int64_t maxRetryAfterMs = 60000;  // the longest `Retry-After` obeyed (a longer one waits this)
  std::shared_ptr<const ModelTransport> transport;  // null: HTTP to `url` (tests give a fake)
};

// The harness from the environment: JR2_AGENT_BASE_URL (`http[s]://HOST[:PORT]` or `…/v1`),
// JR2_AGENT_MODEL, JR2_AGENT_API_KEY (optional) and JR2_AGENT_TIMEOUT (seconds, optional).
// Throws BadInput naming the variable that is missing or wrong, and how to set it.
ModelServer ModelServerFromEnv();

// A standing run's bound (docs/runtime.md#standing-pools-of-runs-over-push-sources-12): 500 items
// it took itself, or a day.
inline constexpr int64_t kStandingBoundItems = 500;
inline constexpr int64_t kStandingBoundMs = 24LL * 60 * 60 * 1000;

// A step posted to a run: a move-only callable kept in place up to 56 bytes. A Pool posts two
// steps an item, each holding a liveness token and a JSON value: std::function would allocate
// (and free) both, a tenth of an item's mallocs (#15, docs/performance.md).
class Task {
 public:
  Task() = default;
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, Task>>>
  Task(F&& f) {  // NOLINT(google-explicit-constructor): a lambda converts, as to std::function
    using D = std::decay_t<F>;
    if constexpr (sizeof(D) <= kInline && alignof(D) <= kAlign &&
                  std::is_nothrow_move_constructible_v<D>) {
      new (buf_) D(std::forward<F>(f));
      ops_ = &kInlineOps<D>;
    } else {
      *reinterpret_cast<D**>(buf_) = new D(std::forward<F>(f));
      ops_ = &kHeapOps<D>;
    }
  }
  Task(Task&& o) noexcept : ops_(o.ops_) {
    if (ops_ != nullptr) ops_->move(o.buf_, buf_);
    o.ops_ = nullptr;
  }
  Task& operator=(Task&& o) noexcept {
    if (this != &o) {
      reset();
      ops_ = o.ops_;
      if (ops_ != nullptr) ops_->move(o.buf_, buf_);
      o.ops_ = nullptr;
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() { reset(); }
  void operator()() { ops_->call(buf_); }
  explicit operator bool() const { return ops_ != nullptr; }

 private:
  static constexpr size_t kInline = 56;
  static constexpr size_t kAlign = alignof(std::max_align_t);
  struct Ops {
    void (*call)(void*);
    void (*move)(void* from, void* to);  // moves into `to` and ends `from`
    void (*destroy)(void*);
  };
  template <typename D>
  static constexpr Ops kInlineOps = {[](void* p) { (*static_cast<D*>(p))(); },
                                     [](void* from, void* to) {
                                       new (to) D(std::move(*static_cast<D*>(from)));
                                       static_cast<D*>(from)->~D();
                                     },
                                     [](void* p) { static_cast<D*>(p)->~D(); }};
  template <typename D>
  static constexpr Ops kHeapOps = {
      [](void* p) { (**static_cast<D**>(p))(); },
      [](void* from, void* to) { *static_cast<D**>(to) = *static_cast<D**>(from); },
      [](void* p) { delete *static_cast<D**>(p); }};
  void reset() {
    if (ops_ != nullptr) ops_->destroy(buf_);
    ops_ = nullptr;
  }
  alignas(kAlign) unsigned char buf_[kInline];
  const Ops* ops_ = nullptr;
};

class Run {
 public:
  // A run on `engine` (the executor a RunHost shares among its runs), or, without one, on an
  // engine of its own (tests, benchmarks: each Run alone).
  Run(const Registry& registry, const WorkflowInfo& workflow, std::string id, Clock& clock,
      std::shared_ptr<Engine> engine = nullptr);
  ~Run();
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  const std::string& id() const { return id_; }
  // The run's home (docs/runtime.md#a-run): the working directory of the `run` that started it,
  // stored with the run; relative paths that the run reads (`std.backlog`, `std.command`'s `cwd`)
  // resolve against it, whichever directory a later command runs in.
  const std::string& home() const { return home_; }
  void setHome(std::string home) { home_ = std::move(home); }
  const WorkflowInfo& workflow() const { return workflow_; }
  const Json& input() const { return input_; }
  // The assembly of the build that started it (Registry::assembly()).
  const std::string& assembly() const { return assembly_; }

  // Throws BadInput when `input` does not fit the workflow (unknown fields refused, with the
  // path); changes nothing. start() checks it too: this is for a host that must know before it
  // stores anything.
  void checkInput(const Json& input) const;
  // Starts the top machine with `input` and drives the run until nothing more can happen now.
  // Throws BadInput when the input does not fit.
  void start(const Json& input);
  // The same as start(), without driving: for a host whose engine is being driven already
  // (`serve` answering a request); the steps go on at the engine's next turn.
  void begin(const Json& input);
  // begin() with the input a host checked already with CheckInput before it made the run
  // (`read`: what CheckInput returned, which a Pool starts from: its input is read once).
  void begin(const Json& input, JsonValue read);
  // An answer that precheck() found good at one opening of its Gate, with its payload as its
  // type: send() and deliver() take it instead of reading the payload again, while that opening
  // lasts (a Gate that closed and opened again in between is checked anew).
  struct CheckedAnswer {
    uint64_t opening = 0;  // 0: not checked (the Gate was not open)
    std::shared_ptr<const Payload> typed;
  };
  // Delivers `event` with `payload` at an open Gate and drives the run. Throws BadInput, and
  // changes nothing, when the Gate, the event or the payload is refused. `by` is who answered
  // (a Caller's name, `user NAME` for the CLI, `agent NAME`): the feed's `answered` event says it
  // with the event and its payload, the audit trail of every answer; "" for a run driven as a
  // library, which says no one.
  void send(const std::string& gate, const std::string& event, const Json& payload,
            const CheckedAnswer* checked = nullptr, const std::string& by = "");
  // The same as send(), without driving: the event is checked and its delivery queued for the
  // next turn of an engine that is being driven already (a host answering its inbox).
  void deliver(const std::string& gate, const std::string& event, const Json& payload,
               const CheckedAnswer* checked = nullptr, const std::string& by = "");
  // Checks `event` and `payload` at Gate `gate` if it is open now (throws BadInput; changes
  // nothing), before anything drives the run: a payload refused is refused before the work it
  // would wait for. A Gate not open now is left for send() to judge.
  CheckedAnswer precheck(const std::string& gate, const std::string& event,
                         const Json& payload) const;
  // A hook delivery (`POST /hooks/NAME`, docs/serve.md#hooks) to this run's top Pool, whose Source
  // maps (`service`, `eventKey`) to a verdict: `reread` (a pull or read Source calls `next` or
  // reads again now; during a call it latches one more), or `skipped` with its reason (a `skip`
  // line, no line for that event, a verdict the Source's form cannot take); a push Source's
  // `carry` holds the item (`held`, `existing`, `hold-full`, or `skipped`). Gives the verdict and
  // drives the run (with `drive` false, the read goes out at the engine's next turn: for a host
  // whose engine is being driven already).
  HookVerdict hook(const std::string& service, const std::string& eventKey, const Json& payload,
                   bool drive = true);
  // Whether a delivery to hook `service` reaches this run: it waits, and its top Pool's Source
  // has a `hook SERVICE …` line.
  bool hears(const std::string& service) const;
  // Fires every timer that is due by the clock and drives the run.
  void tick();
  // Fires every timer that is due by the clock, without driving: true when one fired. The
  // engine calls it for a run on a real clock while work is out.
  bool fireDue();
  // Cancels the run: it ends `cancelled` and its children stop.
  void cancel();
  // Stops every effect of the run that is out or held, without recording anything: a process
  // is killed, a held effect never starts. For a host that is itself stopping (SIGINT,
  // SIGTERM): the run stays as it was last stored, and a restore finds those effects started
  // without a result (`interrupted`), or not started at all. Gives how many processes it killed.
  int stopEffects();

  RunStatus status() const { return status_; }
  bool ended() const { return status_ != RunStatus::kWaiting; }
  const Json& output() const { return output_; }         // the top machine's output (or the Pool's)
  const std::string& reason() const { return reason_; }  // why it failed or errored
  // While it waits: what the top Pool has done so far (`{items, failures, live, open}`; with
  // `items` false, without the items and failures), null for a machine or an ended run.
  Json sofar(bool items = true) const;
  // The timers that fired since this Run object was made or restored, oldest first: the state
  // (its path, with the worker's prefix) and the `after` in ms (-1 when unknown).
  struct FiredTimer {
    std::string state;
    int64_t afterMs;
  };
  const std::vector<FiredTimer>& firedTimers() const { return fired_; }
  std::vector<OpenGate> gates() const;
  // The same Gates, in the same order, each seen in place rather than copied (its events are
  // not): for a read made at every answer (serve's, #33).
  struct GateView {
    const std::string& name;
    OpenGate::Kind kind;
    const Json& meta;
    const std::vector<EventSpec>& accepts;
    // The machine that opened it, by where it is in the run: "" the run's own, a Pool worker's
    // item id, `item.child` for what that worker invoked.
    const std::string& machine;
    // Its part of the saved view, kept for this opening ("" until the view makes it), and the
    // piece it is (core/pieces.h: 0 until a saver marks it).
    std::string& savedView;
    uint64_t& savedViewPiece;
  };
  void visitGates(const std::function<void(const GateView&)>& fn) const;
  // The machine that opened Gate `gate` (GateView::machine), open or answered in this turn;
  // nullopt for a Gate not there.
  std::optional<std::string> gateMachine(const std::string& gate) const;
  // The observation (docs/serve.md#bands-and-scopes): `{runId, workflow, status, value, children}`,
  // where the run is and nothing else — `value` the active state paths of the top machine (`[]` for
  // a Pool), `children` its live children (`{id, kind, value, children}`: invoked machines and
  // Pools, Gates, Agents and effects by name; a Pool's workers by item id). Never the context, the
  // input, the output, a Gate's meta or a payload.
  Json observe() const;
  // observe() as JSON text, each Pool worker's part as it last wrote it unless that worker moved
  // since (Actor::touch): what a save writes at every commit.
  std::string observeText() const;
  // The earliest pending timer, if any (ms on the run's clock).
  std::optional<int64_t> nextTimer() const;
  // The earliest timer with no open Gate inside the state that started it (its subtree, and the
  // children invoked from there): work under way that goes on by itself (a retry's cool-down),
  // not a deadline on a person's answer nor the poll of a Pool that waits at Gates. While there
  // is one, the run is not waiting for anybody.
  std::optional<int64_t> nextUnattendedTimer() const;
  // The effects that were out when the run was last stored, found by its restore and not yet
  // taken up (a drive takes them up: an idempotent one runs again, another reads `interrupted`),
  // each as `WHERE: TARGET` (`T-1.build: std.command`). What `status` says of a run whose host
  // was stopped while a process of it ran.
  const std::vector<std::string>& outAtRestore() const { return outAtRestore_; }
  // The effects out now that a restore would not run again (not idempotent), named as
  // outAtRestore() names them: what the view saved with the run says (views.h SavedView).
  std::vector<std::string> effectsOut() const;
  void noteOutAtRestore(std::string what) { outAtRestore_.push_back(std::move(what)); }
  void takenUpAtRestore(const std::string& what) {
    const auto it = std::find(outAtRestore_.begin(), outAtRestore_.end(), what);
    if (it != outAtRestore_.end()) outAtRestore_.erase(it);
  }
  // Whether work of the run is out now: a host function or a process out (a read, an Agent's
  // exchange), or an effect held for the turn's commit. With nextUnattendedTimer(), what tells a
  // run that goes on by itself from one that waits for somebody (serve's `working`, which the
  // `--server` verbs wait on as the local ones wait for the engine to be quiet).
  bool workOut() const {
    return !ended() && (offloaded_ > 0 || commandsOut_ > 0 || !held_.empty());
  }

  // Progress lines (`T-1 started`, `T-1 settled`, …) as the run moves.
  void onProgress(std::function<void(const std::string&)> fn) { progress_ = std::move(fn); }
  // The same, typed (the feed, docs/runtime.md#the-runner): every event with its kind and data,
  // including the ones that are only data (`gate-closed`, `timer`, `ended`, the `source` Gate
  // opening).
  struct FeedEvent {
    std::string kind;
    Json data;
    std::string line;  // "" for an event a person is not shown
    // The data as JSON text instead, when its maker wrote it so (a Pool's `started` and
    // `settled`: no tree made and freed for each of 10,000 items, #33); `data` is then null.
    // parsedData() gives it either way.
    std::string dataText = {};
    // A top Pool's per-item line told short (FeedForm, jr2/pool_lines.h): its data made when read.
    FeedForm form = FeedForm::kWhole;
    Json parsedData() const { return FeedFormData(form, kind, line, data, dataText); }
  };
  // (The listener may take the event's parts: the run is done with it.)
  void onEvent(std::function<void(FeedEvent&)> fn) { event_ = std::move(fn); }
  // Saved as it moves (docs/runtime.md#saved-as-it-moves-effects-at-most-once): `fn` is called at
  // the end of each turn of the run's executor that changed the run (every handler that was ready,
  // run to completion), and must store the run (snapshot() and the progress lines of the turn)
  // before it returns. Only then do the effects that the turn started go out: a non-idempotent
  // effect (`std.command`, an `extern` not declared idempotent) starts after the commit that
  // records it, so a process killed at any instant leaves either no trace of it or a stored
  // "started", never a run that forgot it ran. With no commit hook (tests, benchmarks) effects
  // start at once.
  void onCommit(std::function<void()> fn) { commit_ = std::move(fn); }

  // The whole run as JSON, and a run restored from it in a new process. Without `withInput`,
  // the run's input is left out (a saver stores it once, beside the snapshot: the store puts it
  // back when it loads the run); Restore needs it in.
  // `asStored`: as snapshotText() writes it — an output whose items are in the journal
  // (outputInJournal()) without them, the snapshot's `outputInJournal` saying so.
  Json snapshot(bool withInput = true, bool asStored = false) const;
  // snapshot(false, true) as JSON text (dumped compact, bad UTF-8 replaced), each Pool worker's
  // part as it last wrote it unless that worker moved since (Actor::touch): what a save writes at
  // every commit (#33).
  std::string snapshotText() const;
  static std::unique_ptr<Run> Restore(const Registry& registry, const Json& snapshot, Clock& clock,
                                      const std::vector<Json>* journal = nullptr,
                                      std::shared_ptr<Engine> engine = nullptr);

  // A save that writes what changed (docs/runtime.md#saved-as-it-moves-effects-at-most-once): with
  // keepJournal() (before start()), the top Pool's settled and failed items are not in snapshot()
  // but in journal entries, one per item, that takeJournal() hands over once each, to be stored in
  // order with the snapshot of the same turn. Restore() then takes every entry stored, in order. A
  // snapshot's size no longer grows with the items a run has settled.
  void keepJournal() { journaling_ = true; }
  bool journaling() const { return journaling_; }
  // The run's output is its journaled top Pool's (`{status, items, failures, …}`), whose items
  // and failures its journal holds, one entry each: a save writes the output without them, once
  // (#33: they were stored three times, in the journal, the snapshot and the view — 220 kB each
  // at 10,000 items), and a load puts them back (store/rows.h PutOutputBack). Said by the Pool as
  // it ends, before the run finishes.
  void keepOutputInJournal() {
    if (!ended() && journaling_) outputInJournal_ = true;
  }
  bool outputInJournal() const {
    return outputInJournal_ && output_.is_object() && output_.contains("items") &&
           output_.contains("failures");
  }
  // The output as a save writes it: without its items and failures when outputInJournal().
  Json storedOutput() const;
  bool journalPending() const { return !journalNew_.empty(); }
  std::vector<std::string> takeJournal() { return std::move(journalNew_); }
  // Entries takeJournal() gave that were not stored: before the ones made since.
  void restoreJournal(std::vector<std::string> entries) {
    entries.insert(entries.end(), std::make_move_iterator(journalNew_.begin()),
                   std::make_move_iterator(journalNew_.end()));
    journalNew_ = std::move(entries);
  }

  // The scripted Agent harness (docs/runtime.md#agents; no model is reachable here): `script` maps
  // an Agent's name to its replies in order, each `{ "event": NAME, "payload": {…} }`. Each time
  // that Agent's Gate opens (and at once for one open now), the next reply is delivered there as
  // the Agent's answer; the replies used are counted in the run, so a later process goes on with
  // the next one. A reply the Gate refuses is told on the feed and the Agent picks again (its
  // slot's `picks:`), then the Gate waits for a person. When the replies run out, the Gate stays
  // open for `send`.
  void scriptAgents(Json script);

  // The OpenAI-compatible harness (ModelServer) for this run's Agents: each Agent Gate that
  // opens (and at once each open now) is put to the model; its answer is the Agent's pick. What
  // the exchange does — a retry, a refused pick, a failure that leaves the Gate to a person — is
  // on the feed. A try holds an effect thread while it waits for the server; the wait between
  // tries holds none (a timer on the run's engine, or on a manual clock, due at tick()). The
  // exchange is not stored: a run restored mid-Turn asks the model again.
  void modelAgents(std::shared_ptr<const ModelServer> server);

  // For tests: replaces how a Source's `next` is called (scripted answers, deferred on purpose).
  void scriptNext(const std::string& function, NextCall call) {
    scripted_[function] = std::move(call);
  }

  // For tests: replaces how a read Source's `read` function is called.
  void scriptRead(const std::string& function, ReadCall call) {
    scriptedReads_[function] = std::move(call);
  }
  const ReadCall* scriptedRead(const std::string& function) const {
    auto it = scriptedReads_.find(function);
    return it == scriptedReads_.end() ? nullptr : &it->second;
  }

  // ---- a replay (docs/runtime.md#replay) -----------------------------------------------------
  // While `replayer` is set (before start() or Restore()'s drive), no effect and no Source call
  // (but std.queue's) goes out: each is handed to it, to be answered from a trace. No Agent
  // harness is asked either: a replay delivers the picks the trace recorded.
  void replayWith(Replayer* replayer) { replayer_ = replayer; }
  Replayer* replayer() const { return replayer_; }
  // Drives the run until nothing more can happen now, firing no timer: what a replay does after
  // each input it delivers.
  void drive();
  // A replayed Agent pick that Gate `gate` refused at its opening now: counted against the
  // Agent's `picks:` as the refusal was (the harness's talk with its model is not replayed).
  // False when no such Gate is open.
  bool replayRefusedPick(const std::string& gate);

  // ---- Pools of runs ---------------------------------------------------------------------------
  // The host's door for this run's `dispatch` workers (none: a Pool of runs cannot start).
  void setDispatcher(Dispatcher* dispatcher) { dispatcher_ = dispatcher; }
  Dispatcher* dispatcher() const { return dispatcher_; }
  // A run that a Pool of runs started: `{run, pool, key}` (set before begin(); stored with it).
  void setDispatchedBy(Json by) { dispatchedBy_ = std::move(by); }
  const Json& dispatchedBy() const { return dispatchedBy_; }
  // The host tells this run that run `id`, which one of its `dispatch` workers waits for,
  // ended `status`: that worker's item settles (done) or fails (any other end), at its next
  // step.
  void dispatchedEnded(const std::string& id, const std::string& status, const Json& output,
                       const std::string& reason);
  // The runs this run's `dispatch` workers wait for (for a host that restores runs).
  std::vector<std::string> awaited() const;

  // ---- a standing Pool's hand-over
  // --------------------------------------------------------------- What a new run takes of this
  // one (`{held, keys}`: the held items in order, the live keys with their runs); null unless this
  // is a standing Pool. An ended standing run keeps it in its record (`carry`), so a run after an
  // error or a pause takes it from there.
  Json handOverState() const;
  // Whether this standing run is at its bound (500 items it took itself, or a day).
  bool atBound() const;
  // Ends this standing run `done`, handed over to run `to` (`why`): its output
  // `{handedOverTo}`. Its `dispatch` runs go on; the new run takes them.
  void handOver(const std::string& to, const std::string& why);
  // Ends this standing run `done` at its bound when no item it took got a run
  // (docs/runtime.md#standing-pools-of-runs-over-push-sources-12): no `handedOverTo`; its head
  // counts it, and the next run starts after a back-off.
  void endAtBound(const std::string& why);
  // A standing run's `{startedMs, streak, taken, ran}` (and `bound: true` when it ended at its
  // bound), kept in its record once it ended; null for any other run.
  Json standing() const;
  // What a new standing run takes over (set before begin()).
  void setCarried(Json carried) { carried_ = std::move(carried); }
  const Json& carried() const { return carried_; }
  // What an ended standing run keeps for the next (handOverState() when it ended).
  const Json& carry() const { return handOverCarry_; }
  // The same, read from a stored run's snapshot: its `carry` once it ended, or, for a run that
  // was live (a drifted one), its top Pool's held items and live keys.
  static Json CarryOf(const Json& snapshot);

  // ---- used by the actors --------------------------------------------------------------------
  void await(const std::string& id, Actor* worker) { awaited_[id] = worker; }
  void unawait(const std::string& id) { awaited_.erase(id); }
  const Registry& registry() const { return registry_; }
  Clock& clock() { return clock_; }
  // Runs `task` on the run's strand (one at a time, in the order posted).
  void post(Task task);
  // Runs `work` (a host function, a process) on the thread pool, then `then` with its result,
  // or `failed` with its Failure, back on the strand. Anything else it throws is a defect.
  void offload(std::function<Json()> work, std::function<void(Json)> then,
               std::function<void(const Failure&)> failed);
  // The same for a non-idempotent effect: held until the end of the turn and the commit that
  // records its start (onCommit), then offloaded.
  void offloadAfterCommit(std::function<Json()> work, std::function<void(Json)> then,
                          std::function<void(const Failure&)> failed,
                          const std::shared_ptr<EffectControl>& control = nullptr);
  // `std.command` with `spec`, awaited on the executor (a running process holds no thread),
  // started after the turn's commit; `then` or `failed` later, on the strand. `who` names it on
  // the feed, where its output's lines go as they come (bounded: runtime/src/effects/process.h).
  void startCommand(Json spec, std::function<void(Json)> then,
                    std::function<void(const Failure&)> failed,
                    const std::shared_ptr<EffectControl>& control, std::string who = "");
  // An entry for the journal, as JSON text (StoredRun::journalText).
  void journal(std::string entry) { journalNew_.push_back(std::move(entry)); }
  // While Restore() runs: the stored journal, for the top Pool to read back.
  const std::vector<Json>* restoringJournal() const { return restoringJournal_; }
  // Whether anyone hears emit(): a Pool's per-item marks are not built when nobody does (a run
  // driven as a library, with no feed and no progress).
  bool heard() const { return event_ != nullptr || progress_ != nullptr; }
  // Tells of `kind` with `data` and, when `line` is not "", the line a person reads.
  void emit(std::string kind, Json data, std::string line) {
    tell(FeedEvent{std::move(kind), std::move(data), std::move(line)});
  }
  // The same with the data as JSON text (FeedEvent::dataText), written by its maker.
  void emitText(std::string kind, std::string dataText, std::string line) {
    tell(FeedEvent{std::move(kind), nullptr, std::move(line), std::move(dataText)});
  }
  // The same told short (FeedForm): a top Pool's mark (`line` `<item> <kind>`, no data text) or
  // the trace of an answer of its `next` (`dataText` the answer's).
  void emitShort(FeedForm form, std::string kind, std::string line, std::string dataText = {}) {
    tell(FeedEvent{std::move(kind), nullptr, std::move(line), std::move(dataText), form});
  }
  void progress(const std::string& line) { emit("line", nullptr, line); }
  // `gate`'s name and kind; its `accepts` are `accepts`, shared by every Gate that a state of
  // one machine opens (a parked worker keeps a pointer, not a copy of its event specs), and its
  // meta and Agent slot are read from `owner`'s invoke `invokeId` when it is shown.
  void openGate(OpenGate gate, std::shared_ptr<const std::vector<EventSpec>> accepts, Actor* owner,
                int invokeId);
  void closeGate(const std::string& name);
  void timerFired(const std::string& state, int64_t afterMs);
  void schedule(Actor* owner, int timerId, int64_t dueMs);
  void unschedule(Actor* owner, int timerId);
  const NextCall* scripted(const std::string& function) const;
  // The top actor finished: done with `output`, or failed.
  void finish(RunStatus status, Json output, std::string reason);

 private:
  // emit()'s and emitText()'s: to the event's listener, then the line to progress_.
  void tell(FeedEvent e) {
    // The line for progress_ is kept aside: the event's listener may take the event's parts.
    const std::string shown = progress_ ? e.line : std::string();
    if (event_) event_(e);
    if (!shown.empty()) progress_(shown);
  }
  // The snapshot without its `top` (snapshot() and snapshotText() add it), and without its
  // `output` unless `withOutput` (snapshotText() writes it, not copying a Pool's 10,000 outputs).
  Json snapshotBase(bool withInput, bool withOutput = true) const;
  // A parked worker's Gate holds no copy of what its owner keeps: its name is the map's key,
  // its meta and Agent slot are the owner's invoke (`owner->invokeSpec(invokeId)`), its events
  // shared by every Gate of its state. shown() makes the whole OpenGate.
  struct GateEntry {
    OpenGate::Kind kind;
    std::shared_ptr<const std::vector<EventSpec>> accepts;
    Actor* owner;
    int invokeId;
    uint64_t opening = 0;   // which opening of the Gate (a name can close and open again)
    bool answered = false;  // an answer accepted, delivered at the next turn
    int refusedPicks = 0;   // an Agent's picks refused at this opening (its `picks:` bound);
                            // stored with the run (snapshot's `refusedPicks`)
    // Its part of the saved view (host/views.cpp, SavedViewText), made at the first save after
    // it opened and kept while it is open: what it is made from (the name, the kind, the events,
    // the invoke's input) does not change in one opening, and a Pool's 64 open Gates were
    // written again at every commit for the three that moved.
    mutable std::string savedView = {};
    mutable uint64_t savedViewPiece = 0;
  };
  // An Agent's Turn with the model at one opening of its Gate: the conversation so far (the
  // request's messages, then each refused pick and why), while the Gate is open; and the ask
  // out now, one try at a time, with the wait before its next try (agents.h, TryModel).
  struct ModelTurn {
    uint64_t opening = 0;
    Json messages;
    std::shared_ptr<const std::string> body;  // the ask's request, as sent
    int attempt = 1;                          // the next try's number
    int64_t backoffMs = 0;                    // the wait after the next try fails
    // A try waited for. On a real clock, a timer on the engine (destroying it cancels the wait);
    // on a manual clock, the time it is due, fired by tick().
    std::shared_ptr<void> retryTimer;
    std::optional<int64_t> retryDueMs;
  };
  struct Timer {
    Actor* owner;
    int id;
    int64_t due;
  };
  void drain();
  // Whether this run's effects wait for a commit: it has a commit hook, or its engine commits
  // its turns as a group.
  bool commits() const;
  void track(const std::shared_ptr<EffectControl>& control);
  // Where a step's work came from, which decides what a SchemaError or BadInput it throws means.
  enum class Origin { kCommand, kStep };
  void guard(Task step, Origin origin);
  // Checks `event` and `payload` at an open Gate (throws BadInput) and schedules the delivery.
  void accept(const std::string& gate, const std::string& event, const Json& payload,
              const CheckedAnswer* checked, const std::string& by);
  std::shared_ptr<const Payload> validate(const GateEntry& entry, const std::string& gate,
                                          const std::string& event, const Json& payload) const;
  // Delivers the Agent's next scripted reply at its open Gate `gate`, if the script has one;
  // with a model server, asks the model (askModel).
  void answerAgent(const std::string& gate);
  void askModel(const std::string& gate);
  // Sends the next try of the ask at `gate` (on an effect thread; its answer on the strand).
  void tryModel(const std::string& gate);
  // A try's answer for the Turn at `gate` (TryModel's JSON), taken on the strand: a retry is
  // waited out on the run's executor, holding no thread.
  void modelAnswered(const std::string& gate, uint64_t opening, const Json& answer);
  void retryModel(const std::string& gate, uint64_t opening);
  // After a refused pick at `gate`: the Agent picks again, or, its `picks:` spent, the Gate waits
  // for a person. Returns whether it picks again.
  bool pickAgain(GateEntry& entry);
  // The Gate `name` as gates() shows it, and the Agent slot that answers it ("" for a Gate).
  OpenGate shown(const std::string& name, const GateEntry& entry) const;
  std::string agentOf(const GateEntry& entry) const;
  int agentPicks(const std::string& agent) const;

  const Registry& registry_;
  const WorkflowInfo& workflow_;
  std::string id_;
  std::string home_ = ".";
  Clock& clock_;
  std::unique_ptr<Actor> top_;
  // The engine this run is driven on, and the run's strand on it (Boost.Asio, kept out of this
  // header so that only the runtime's sources pay for its includes). Handlers that come back
  // from outside the strand (a host function's result, a process's end) check `life_` first: a
  // run destroyed meanwhile is never touched.
  std::shared_ptr<Engine> engine_;
  struct Strand;
  std::unique_ptr<Strand> strand_;
  std::shared_ptr<int> life_ = std::make_shared<int>(0);
  // The steps posted and not yet run, in order: the strand is given one handler per batch, not
  // one per step (a Pool posts two steps an item). Guarded: post() may come from another thread.
  std::mutex tasksMu_;
  std::deque<Task> tasks_;
  bool drainPosted_ = false;  // a handler that runs tasks_ is posted or running
  void drainTasks();
  std::map<std::string, GateEntry> gates_;
  std::vector<Timer> timers_;
  std::map<std::string, NextCall> scripted_;
  std::map<std::string, ReadCall> scriptedReads_;
  std::function<void(const std::string&)> progress_;
  std::function<void(FeedEvent&)> event_;
  std::function<void()> commit_;
  std::vector<std::function<void()>> held_;            // effects waiting for the turn's commit
  std::vector<std::weak_ptr<EffectControl>> effects_;  // of the effects started, for stopEffects()
  bool journaling_ = false;
  bool outputInJournal_ = false;  // keepOutputInJournal()
  std::vector<std::string> journalNew_;
  const std::vector<Json>* restoringJournal_ = nullptr;
  int offloaded_ = 0;                      // host functions out on the thread pool
  int commandsOut_ = 0;                    // processes awaited on the executor
  std::vector<std::string> outAtRestore_;  // outAtRestore()
  bool toldThreads_ = false;
  uint64_t steps_ = 0;      // handlers run on the strand: what a commit is for
  uint64_t committed_ = 0;  // steps_ at the last commit
  bool dirty_ = false;      // changed from outside the strand (start, send, a timer): commit
  RunStatus status_ = RunStatus::kWaiting;
  Json input_;
  Json output_;
  std::string reason_;
  Json agentScript_;                    // scriptAgents(); not stored: each process gives it
  Json agentReplies_ = Json::object();  // replies used, by Agent name; stored with the run
  std::shared_ptr<const ModelServer> modelServer_;  // modelAgents(); not stored
  std::map<std::string, ModelTurn> modelTurns_;     // by Gate, while it is open
  uint64_t openings_ = 0;
  std::vector<FiredTimer> fired_;
  Dispatcher* dispatcher_ = nullptr;
  Replayer* replayer_ = nullptr;           // replayWith(); not stored
  Json dispatchedBy_;                      // null unless a Pool of runs started this run
  std::string assembly_;                   // of the build that started it
  Json carried_;                           // what this standing run took over at its start
  Json standingEnd_;                       // standing() as it was when the run ended
  Json handOverCarry_;                     // what it leaves for the next, once it ended
  std::map<std::string, Actor*> awaited_;  // dispatched run id -> the worker that waits

  friend class Actor;
  friend class Engine;
};

}  // namespace jr2rt
