// The run host (jr2/host.h; docs/runtime.md#the-run-host): runs begun and adopted, each turn's
// group commit, the drive and the stop by signal, a send and a cancel, serve's loop, and the
// wait for timers (follow). The inbox and the drive locks are in inbox.cpp, the dispatch door in
// dispatch.cpp, hooks in hooks.cpp, the standing Pools in standing.cpp, the reads in reads.cpp.
#include "jr2/host.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <chrono>
#include <csignal>
#include <random>
#include <thread>

#include "host/host_internal.h"
#include "jr2/errors.h"
#include "jr2/views.h"
#include "run/engine.h"

namespace jr2rt {
namespace {

volatile std::sig_atomic_t g_signal = 0;  // the signal that asked the hosts to stop

// What fired during this call before the answer was delivered, for a person to read.
std::string FiredText(const Run& run) {
  const auto& fired = run.firedTimers();
  if (fired.empty()) return "the run moved on by itself before this answer";
  const auto& last = fired.back();
  std::string what = "the deadline";
  if (last.afterMs >= 0) what += " `after " + DurationText(last.afterMs) + "`";
  if (!last.state.empty()) what += " in `" + Printable(last.state) + "`";
  return what + " fired before this answer";
}

}  // namespace

std::string NewRunId() {
  std::random_device rd;
  std::mt19937_64 gen(
      (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  static const char* hex = "0123456789abcdef";
  std::string id;
  uint64_t v = gen();
  for (int i = 0; i < 12; ++i, v >>= 4) id += hex[v & 15];
  return id;
}

void CheckWorkflow(const std::string& id, const std::string& actual, const std::string& wanted) {
  if (actual != wanted) {
    throw BadInput("run " + id + " is a run of `" + Printable(actual) + "`, not `" +
                   Printable(wanted) + "`");
  }
}

void AskAnotherTurn(Engine& engine) { engine.again(); }

void WakeEngine(Engine& engine) {
  boost::asio::post(engine.io(), [] {});
}

void RunHost::Interrupt(int signal) { g_signal = signal; }

int RunHost::Interrupted() { return g_signal; }

RunHost::RunHost(const Registry& registry, Store& store, Clock& clock, int threads)
    : registry_(registry),
      store_(store),
      clock_(clock),
      engine_(std::make_shared<Engine>(threads)) {
  engine_->onTurn([this](const std::vector<Run*>& runs) { return commit(runs); });
  // A signal stops every drive at the end of the turn under way; while processes run, the
  // engine looks every 100 ms.
  engine_->stopWhen(
      [this] {
        // The answers to deliveries that the turn just committed go out first, stop or not.
        if (!unwritten_.empty()) writeAnswers();
        answerDue();
        if (g_signal != 0) return true;
        serveInbox();
        return false;
      },
      100);
}

RunHost::~RunHost() {
  // The commit thread first (a batch it was given is stored), then the keeper's: each tells this
  // host what it finds.
  committer_.reset();
  keeper_.reset();
  // The runs go before the engine they live on.
  runs_.clear();
}

RunHost::Hosted& RunHost::hosted(const std::string& id) {
  auto it = runs_.find(id);
  if (it == runs_.end()) throw BadInput("run " + id + " is not driven by this host");
  return it->second;
}

Run& RunHost::run(const std::string& id) { return *hosted(id).run; }

std::vector<std::string> RunHost::ids() const {
  std::vector<std::string> out;
  for (const auto& [id, h] : runs_) out.push_back(id);
  return out;
}

void RunHost::attach(Hosted& h, bool fresh) {
  Run& run = *h.run;
  if (fresh) run.keepJournal();  // its top Pool's items go to the journal, one entry each
  const std::string id = run.id();
  RunSaver* saver = h.saver.get();
  h.gates = std::make_shared<GatesSeen>();
  saver->onSaved([this, id, gates = h.gates](const std::vector<FeedLine>& lines) {
    if (saved_) saved_(id, lines);
    gates->stored(lines);
  });
  run.onEvent([this, id, saver, gates = h.gates](Run::FeedEvent& e) {
    const int64_t now = clock_.nowMs();
    count(id, e, now);
    if (e.kind == "gate-opened" && e.data.is_object()) gates->opened(e.data.value("gate", ""));
    if (e.kind == "ended") ++endedSince_;
    if (event_) event_(id, e);
    // The saver keeps the event's parts: moved, not copied (a Pool tells two a settled item).
    saver->addEvent(e, now);
  });
  if (!agents_.is_null()) run.scriptAgents(agents_);
  if (model_) run.modelAgents(model_);
  for (const auto& [function, call] : reads_) run.scriptRead(function, call);
  run.setDispatcher(this);
  if (run.dispatchedBy().is_object())
    keys_[{run.workflow().name, run.dispatchedBy().value("key", "")}] = id;
}

void GatesSeen::opened(const std::string& name) {
  if (loaded_) {
    names_.insert(Hash(name));
  } else {
    unsaved_.push_back(Hash(name));
  }
}

void GatesSeen::stored(const std::vector<FeedLine>& lines) {
  if (loaded_ || head_ == unsaved_.size()) return;  // nothing to let go: no line looked at
  for (const FeedLine& line : lines) {
    if (line.kind == "gate-opened" && head_ < unsaved_.size()) ++head_;
  }
  // What is stored goes once it is half the vector: under serve's pipelined commit the run opens
  // Gates while each batch is stored, so the vector never empties, and without this it would
  // keep every Gate the run ever opened. Each hash is moved at most once per time it halves.
  if (head_ * 2 >= unsaved_.size()) {
    unsaved_.erase(unsaved_.begin(), unsaved_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
    if (unsaved_.capacity() > 64 && unsaved_.capacity() > 4 * unsaved_.size())
      unsaved_.shrink_to_fit();
  }
}

bool GatesSeen::had(const std::string& gate,
                    const std::function<std::vector<std::string>()>& read) {
  if (!loaded_) {
    for (const std::string& name : read()) names_.insert(Hash(name));
    names_.insert(unsaved_.begin() + static_cast<std::ptrdiff_t>(head_), unsaved_.end());
    std::vector<uint64_t>().swap(unsaved_);
    head_ = 0;
    loaded_ = true;
  }
  return names_.count(Hash(gate)) > 0;
}

void RunHost::Histogram::observe(double seconds) {
  if (counts.size() != bounds.size() + 1) counts.assign(bounds.size() + 1, 0);
  size_t i = 0;
  while (i < bounds.size() && seconds > bounds[i]) ++i;
  ++counts[i];
  sum += seconds;
  ++count;
}

void RunHost::count(const std::string& id, const Run::FeedEvent& e, int64_t nowMs) {
  ++metrics_.events[e.kind];
  if (e.kind == "gate-opened" && e.data.value("kind", "") != "source") {
    metrics_.gateOpened[{id, e.data.value("gate", "")}] = nowMs;
  } else if (e.kind == "gate-closed") {
    const auto it = metrics_.gateOpened.find({id, e.data.value("gate", "")});
    if (it != metrics_.gateOpened.end()) {
      metrics_.gateWait.observe(static_cast<double>(nowMs - it->second) / 1000.0);
      metrics_.gateOpened.erase(it);
    }
  } else if (e.kind == "agent" && e.data.is_object()) {
    if (e.data.contains("pick") && e.data.contains("model")) ++metrics_.modelRequests;
    if (e.data.contains("waitMs")) ++metrics_.modelRetries;
  }
}

int RunHost::effectsOut() const { return engine_->out(); }

void RunHost::drive() {
  engine_->drive();
  if (g_signal != 0) stopForSignal();
}

void RunHost::stopForSignal() {
  // What is stored stays; nothing more is: the processes the runs started are killed (a restore
  // finds them `interrupted`), held effects never start.
  for (auto& [id, h] : runs_) stoppedEffects_ += h.run->stopEffects();
  const char* name = g_signal == SIGTERM   ? "SIGTERM"
                     : g_signal == SIGINT  ? "SIGINT"
                     : g_signal == SIGHUP  ? "SIGHUP (its terminal closed)"
                     : g_signal == SIGPIPE ? "SIGPIPE (what read its output went away)"
                                           : nullptr;
  throw HostInterrupted(std::string("stopped by ") + (name != nullptr
                                                          ? std::string(name)
                                                          : "signal " + std::to_string(g_signal)));
}

std::string RunHost::start(const std::string& workflow, const Json& input, const std::string& home,
                           std::optional<JsonValue> checked) {
  std::string id = begin(workflow, input, home, "", std::move(checked));
  drive();  // saved from its first turn on, as it moves
  return id;
}

std::string RunHost::begin(const std::string& workflow, const Json& input, const std::string& home,
                           std::string id, std::optional<JsonValue> checked) {
  return beginRun(workflow, input, home, nullptr, nullptr, std::move(id), std::move(checked));
}

JsonValue RunHost::checkStart(const std::string& workflow, const Json& input) const {
  const WorkflowInfo* wf = registry_.workflow(workflow);
  if (wf == nullptr) throw BadInput("there is no workflow `" + Printable(workflow) + "` here");
  return CheckInput(*wf, input);
}

std::string RunHost::NewId() { return NewRunId(); }

std::string RunHost::beginRun(const std::string& workflow, const Json& input,
                              const std::string& home, const Json& by, const Json& carried,
                              std::string id, std::optional<JsonValue> checked) {
  const WorkflowInfo* wf = registry_.workflow(workflow);
  if (wf == nullptr) throw BadInput("there is no workflow `" + Printable(workflow) + "` here");
  // A refused input stores nothing; what the check read, the run starts from (a Pool's input is
  // read once).
  JsonValue read = checked ? std::move(*checked) : CheckInput(*wf, input);
  if (id.empty()) id = NewRunId();
  Hosted h;
  h.lock = store_.lock(id, [](const std::string&) {});
  h.saver = std::make_unique<RunSaver>(store_, clock_);
  h.run = std::make_unique<Run>(registry_, *wf, id, clock_, engine_);
  h.run->setHome(home);
  if (!by.is_null()) h.run->setDispatchedBy(by);
  if (!carried.is_null()) h.run->setCarried(carried);
  Hosted& ref = runs_[id] = std::move(h);
  attach(ref, /*fresh=*/true);
  try {
    ref.run->begin(input, std::move(read));
  } catch (...) {
    runs_.erase(id);  // refused before its first turn: nothing of it was stored
    throw;
  }
  return id;
}

namespace {

// A start queued by a host that had no room for it (RunHost::queueStart): stored, not begun.
bool Queued(const StoredRun& stored) {
  return stored.snapshot.is_object() && stored.snapshot.contains("queued");
}

}  // namespace

void RunHost::queueStart(const std::string& workflow, const Json& input, const std::string& home,
                         const std::string& id) {
  (void)checkStart(workflow, input);  // a refused input stores nothing
  Run run(registry_, *registry_.workflow(workflow), id, clock_, engine_);
  run.setHome(home);
  StoredRun stored;
  stored.id = id;
  stored.workflow = workflow;
  stored.status = ToString(run.status());
  stored.updatedMs = clock_.nowMs();
  stored.snapshot = {{"id", id},
                     {"queued", {{"input", input}, {"home", home}}},
                     {"status", stored.status},
                     {"workflow", workflow}};
  stored.viewText = SavedViewText(run);
  // Stored as this host's (the save checks its lease), then let go with a NOTIFY to the others.
  store_.save(stored, {FeedLine(0, stored.updatedMs,
                                "queued: the serve it was started on drives its --capacity "
                                "of runs; the first serve with room begins it",
                                "note")});
  ++metrics_.queued;
  try {
    hosts_->release({id});
  } catch (const StoreError&) {
    // Stored, so started: let go at the next claim instead (until then it is this host's, and
    // nobody else's to claim).
    unreleased_.push_back(id);
  }
}

std::unique_ptr<Run> RunHost::restore(const StoredRun& stored, RunSaver* saver) {
  if (Queued(stored)) {
    // Not begun: what reads of it see is a run that waits, with nothing done yet.
    const WorkflowInfo* wf = registry_.workflow(stored.workflow);
    if (wf == nullptr)
      throw RunDrifted("run " + stored.id + " was queued for workflow `" +
                       Printable(stored.workflow) + "`, which this build does not have");
    auto run = std::make_unique<Run>(registry_, *wf, stored.id, clock_, engine_);
    run->setHome(stored.snapshot["queued"].value("home", std::string()));
    if (saver != nullptr) saver->resume(stored);
    return run;
  }
  if (stored.status == "drifted") {
    throw RunDrifted(
        "run " + stored.id + " no longer fits this build of `" + Printable(stored.workflow) +
        "`: " + Printable(stored.snapshot.value("reason", std::string("it cannot be restored"))) +
        ". It is marked `drifted`; the other runs are not affected. Finish it with the runner "
        "built from the .jr2 that started it, or start a new run");
  }
  try {
    if (saver != nullptr) return saver->restore(registry_, stored, clock_, engine_);
    return Run::Restore(registry_, stored.snapshot, clock_, &stored.journal);
  } catch (const StoreDamaged&) {
    throw;  // damage in the store is not drift of the build: said as it is, nothing marked
  } catch (const std::exception& e) {
    // A snapshot that no longer fits this build: marked `drifted` with the reason, so that
    // `runs` says so and no verb trips on it again.
    StoredRun marked = stored;
    marked.journal.clear();
    marked.status = "drifted";
    marked.snapshotText.clear();  // written again from the edited snapshot
    marked.snapshot["status"] = "drifted";
    marked.snapshot["reason"] = ErrorText(e);
    marked.updatedMs = clock_.nowMs();
    try {
      store_.save(marked, {FeedLine(0, marked.updatedMs, "drifted: " + ErrorText(e), "drifted",
                                    Json{{"reason", ErrorText(e)}})});
    } catch (const StoreConflict&) {
      // Another command changed it meanwhile; it finds the drift itself.
    }
    return restore(marked, saver);  // throws RunDrifted
  }
}

RunHost::Hosted& RunHost::adopt(const StoredRun& stored, std::unique_ptr<RunLock>&& lock) {
  Hosted h;
  h.saver = std::make_unique<RunSaver>(store_, clock_);
  h.run = restore(stored, h.saver.get());
  h.lock = std::move(lock);
  Hosted& ref = runs_[stored.id] = std::move(h);
  if (Queued(stored)) {
    // A queued start, begun by the host that took it (its input was checked when it was queued;
    // a build that refuses it now leaves it stored as it was).
    attach(ref, /*fresh=*/true);
    try {
      ref.run->begin(stored.snapshot["queued"].value("input", Json::object()));
    } catch (...) {
      lock = std::move(ref.lock);  // the caller's again, as for a run that cannot be restored
      runs_.erase(stored.id);
      throw;
    }
    return ref;
  }
  attach(ref, /*fresh=*/false);
  return ref;
}

std::unique_ptr<Run> RunHost::peek(const std::string& prefix, const std::string& workflow) {
  const StoredRun stored = store_.load(prefix);
  CheckWorkflow(stored.id, stored.workflow, workflow);
  return restore(stored, nullptr);
}

void RunHost::send(const std::string& id, const std::string& gate, const std::string& event,
                   const Json& payload, const std::string& by) {
  Run& run = *hosted(id).run;
  // A refused event or payload at a Gate open now is refused before anything is driven.
  const Run::CheckedAnswer checked = run.precheck(gate, event, payload);
  // Timers that fell due while no process ran fire first. If they changed the run, that is
  // stored even when the answer itself is then refused.
  const bool wasEnded = run.ended();
  run.tick();
  if (g_signal != 0) stopForSignal();
  if (!wasEnded && run.ended()) {
    throw BadInput(FiredText(run) + "; the run ended `" + ToString(run.status()) +
                   "`, and the answer was not delivered");
  }
  run.send(gate, event, payload, &checked, by);
  if (g_signal != 0) stopForSignal();
}

void RunHost::cancel(const std::string& id) {
  Hosted& h = hosted(id);
  Run& run = *h.run;
  if (run.ended())
    throw RunEnded("run " + id + " has already ended `" + ToString(run.status()) + "`");
  cancelNow(h);
  // The processes killed end now: awaited (and reaped) here; the run, ended, takes no result.
  engine_->drive();
}

void RunHost::cancelNow(Hosted& h) {
  h.run->cancel();  // its children stop: processes killed, held effects never start
  h.saver->addEvent(FeedLine(0, clock_.nowMs(), "cancelled", "cancelled"));
  commit({h.run.get()}, /*now=*/true);
  if (!fenced_.empty()) {
    // Not stored, and never will be by this host: the run goes on elsewhere, not cancelled.
    throw RunBusy("this serve lost its lease on the run store before the cancel of run " +
                      h.run->id() + " was stored; nothing of it was kept: send it again",
                  "");
  }
}

void RunHost::queue(std::function<void()> action) {
  actions_.push_back(std::move(action));
  engine_->again();
}

void RunHost::afterCommit(std::function<void()> fn, std::function<void()> lost, bool reply) {
  afterCommit_.push_back({std::move(fn), std::move(lost),
                          reply ? AfterCommit::Order::kReply : AfterCommit::Order::kStore});
  engine_->again();
}

int64_t RunHost::liveRuns() const {
  auto live = static_cast<int64_t>(runs_.size());
  if (live < capacity_) return live;  // room either way: not counted
  for (const auto& [id, h] : runs_) live -= h.run->ended() ? 1 : 0;
  return live;
}

int RunHost::releaseEnded() {
  settle();  // a run that ended in the batch in flight is let go once it is stored
  int released = 0;
  for (auto it = runs_.begin(); it != runs_.end();) {
    if (!it->second.run->ended()) {
      ++it;
      continue;
    }
    if (endedSeen_.insert(it->first).second) {
      ++it;
      continue;
    }
    endedSeen_.erase(it->first);
    it = runs_.erase(it);  // its lock goes with it
    ++released;
  }
  return released;
}

void RunHost::answerCommitted() {
  if (full_) return;  // nothing of the last turns is stored: their answers wait
  answerDue();
  std::vector<AfterCommit> due;
  due.swap(afterCommit_);
  runAfterCommit(due);
}

void RunHost::cancelHosted(const std::string& id) {
  Hosted& h = hosted(id);
  if (h.run->ended())
    throw RunEnded("run " + id + " has already ended `" + ToString(h.run->status()) + "`");
  cancelNow(h);
}

void RunHost::serve(const std::function<void()>& every, const std::function<void()>& refill) {
  auto last = std::chrono::steady_clock::now();
  auto refilled = last;
  serving_ = true;
  bool first = true;
  engine_->stopWhen(
      [this, &every, &refill, &last, &refilled, &first] {
        // serve's first turn was committed on this thread: what it took up and stood up at its
        // start is stored before any request is answered (a serve that answers is one whose
        // standing runs are in the store). The commit thread takes the turns after it.
        if (first) {
          first = false;
          startCommitter();
        }
        // What the keeper brought: the inbox read at this pass, runs claimed (or a lost lease
        // handled) now rather than at the next second.
        bool now = false;
        takeWakes(&now);
        if (now) last = std::chrono::steady_clock::time_point{};
        // A lost lease first: what waited for a commit is answered that nothing was kept.
        if (!fenced_.empty()) refence();
        // The answers to what the handlers changed before this commit, then their new
        // requests. While the disk is full nothing of the last turns is stored: their answers
        // wait for the commit that stores them.
        // A pipelined batch in flight: they wait for it, or for the next (commit.cpp). The
        // answers a store outage held back go first, in order.
        if (!unwritten_.empty()) writeAnswers();
        if (!inFlight()) answerCommitted();
        if (g_signal != 0) return true;
        try {
          if (!full_) serveInbox();
        } catch (const StoreFull&) {
          // Nothing was taken from the inbox: it is read again when there is space.
        } catch (const StoreError& e) {
          // A shared store that cannot be reached now: read again at the next pass.
          if (hosts_ == nullptr || dynamic_cast<const StoreConflict*>(&e) != nullptr) throw;
        }
        std::vector<std::function<void()>> actions;
        actions.swap(actions_);
        for (auto& action : actions) action();
        const auto at = std::chrono::steady_clock::now();
        const bool second = every && at - last >= std::chrono::seconds(1);
        // While a claim may find more (runs queued for this host's room), the ended runs are let
        // go and more claimed every 100 ms rather than each second.
        const bool refilling = !second && refill && backlog_ && !full_ && fenced_.empty() &&
                               (endedSince_ > 0 || at - refilled >= std::chrono::milliseconds(100));
        if (second || refilling) {
          if (second) last = at;
          refilled = at;
          endedSince_ = 0;
          try {
            if (second) keepLease();
            if (!full_ && fenced_.empty()) (second ? every : refill)();
          } catch (const StoreFenced& e) {
            fenced_ = e.what();  // a claim or a take with a lease gone: let go at the next turn
          } catch (const StoreFull&) {
            // Taking up runs and standing Pools waits for space too.
          } catch (const StoreError& e) {
            // A shared store that cannot be reached now: the next second tries again.
            if (hosts_ == nullptr || dynamic_cast<const StoreConflict*>(&e) != nullptr) throw;
          }
        }
        return false;
      },
      100);
  try {
    engine_->serve();
  } catch (...) {
    committer_.reset();
    serving_ = false;
    throw;
  }
  // The batch in flight stored and settled, then what changed since stored here: a stop stores
  // every step under way (a standing Pool's hand-over among them), and answers them in the drain.
  stopCommitter();
  engine_->commitChanged();
  writeAnswers();
  answerCommitted();
  writeAnswers();  // the ones the last answers could not write: once more before the host goes
  serving_ = false;
  for (auto& [id, h] : runs_) stoppedEffects_ += h.run->stopEffects();
}

void RunHost::tick(const std::string& id) {
  hosted(id).run->tick();
  if (g_signal != 0) stopForSignal();
}

bool RunHost::follow(const std::string& id, bool all) {
  bool told = false;
  for (;;) {
    Hosted* h = &hosted(id);
    Run* run = h->run.get();
    if (run->ended()) return true;
    // While the host stays, every timer fires on time, deadlines and polls included.
    const auto next = all || run->nextUnattendedTimer() ? run->nextTimer() : std::nullopt;
    if (!next) return true;
    const int64_t wait = *next - clock_.nowMs();
    if (wait > 0) {
      if (!clock_.real()) return true;  // a manual clock moves only when its owner says
      if (!told) {
        note("run " + id + " has a timer due in " + DurationText(wait) +
             (all ? "; waiting for it (--follow)"
                  : " for work under way; waiting for it (Ctrl-C stops the wait, and `run "
                    "--resume " +
                        id + "` takes it up again)"));
        told = true;
      }
      h->lock->release();  // others may drive the run while this host sleeps
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait);
      while (std::chrono::steady_clock::now() < until) {
        if (g_signal != 0) stopForSignal();
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
            until - std::chrono::steady_clock::now(), std::chrono::milliseconds(100)));
      }
      if (!h->lock->tryTake()) {
        // Another command took the run over during the wait (`serve`): it goes on there.
        note("run " + id + " is driven by another command now; it goes on there");
        h->lock.reset();
        runs_.erase(id);
        return false;
      }
      // A `send` or a `cancel` may have changed the run meanwhile: go on from what it stored,
      // never from this host's older copy, which would undo it.
      if (store_.revision(id) != h->saver->revision()) {
        note("run " + id +
             " was changed by another command during the wait; going on from what it stored");
        auto lock = std::move(h->lock);
        runs_.erase(id);
        adopt(store_.load(id), std::move(lock));
      }
    }
    hosted(id).run->tick();  // a restored run schedules its timers as it is driven
    if (g_signal != 0) stopForSignal();
  }
}

}  // namespace jr2rt
