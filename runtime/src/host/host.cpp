#include "jr2/host.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <random>
#include <thread>

#include "jr2/errors.h"
#include "jr2/views.h"
#include "run/engine.h"

namespace jr2rt {
namespace {

volatile std::sig_atomic_t g_signal = 0;  // the signal that asked the hosts to stop

// ---- the one rule that counts a standing run (RUNTIME.md §3, ADR-0017 at 0.7.0) -------------
// After the n-th counted run in a row, the next run starts after 1 s, 4 s, then 16 s; the run
// counted after three hand-overs from counted runs pauses the Pool.
constexpr int64_t kPauseAfter = 3;
int64_t BackoffMs(int64_t streak) {
  constexpr int64_t kSteps[] = {1000, 4000, 16000};
  return kSteps[std::clamp<int64_t>(streak, 1, 3) - 1];
}

// The head of `workflow` once its standing run `id` ended `status` (`st`: the run's standing()).
// A run counts when it ended `error` or `failed`, or at its bound, and no item it took got a
// run; a run in which one did starts the count again. A cancel is a pause and counts nothing.
Store::Head EndedHead(const std::string& workflow, const std::string& id, const std::string& status,
                      const Json& st, int64_t nowMs) {
  Store::Head h;
  h.workflow = workflow;
  h.run = id;
  h.startedMs = st.value("startedMs", int64_t{0});
  h.streak = st.value("streak", int64_t{0});
  h.endedMs = nowMs;
  if (status == "cancelled") {
    h.ended = h.paused = "cancelled";
    h.why = "its run " + id + " was cancelled";
    return h;
  }
  const bool bound = st.value("bound", false);  // endAtBound: it took items, none got a run
  h.ended = bound ? "bound" : status;
  if (status != "error" && status != "failed" && !bound) return h;  // not an end that counts
  h.streak = st.value("ran", int64_t{0}) > 0 ? 0 : h.streak + 1;
  if (h.streak > kPauseAfter) {
    h.paused = bound ? "bound" : "errors";
    h.why = "its last " + std::to_string(h.streak) + " runs in a row " +
            (bound ? "took their bound" : "ended error or failed") +
            " and no item they took got a run (the newest: " + id + ", " + h.ended + ")";
  }
  return h;
}

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

// Refuses another workflow's run: a runner drives the runs of its own workflows only.
void CheckWorkflow(const std::string& id, const std::string& actual, const std::string& wanted) {
  if (actual != wanted) {
    throw BadInput("run " + id + " is a run of `" + Printable(actual) + "`, not `" +
                   Printable(wanted) + "`");
  }
}

}  // namespace

std::string CurrentDirectory() {
  std::string home = ".";
  if (char* cwd = getcwd(nullptr, 0)) {
    home = cwd;
    std::free(cwd);
  }
  return home;
}

namespace {}  // namespace

std::string DurationText(int64_t ms) {
  if (ms < 1000) return std::to_string(ms) + " ms";
  const int64_t s = (ms + 500) / 1000;  // to the nearest second: 3,599.9 s reads "1 h"
  auto two = [](int64_t big, const char* bigUnit, int64_t small, const char* smallUnit) {
    std::string out = std::to_string(big) + " " + bigUnit;
    if (small != 0) out += " " + std::to_string(small) + " " + smallUnit;
    return out;
  };
  if (s < 60) return std::to_string(s) + " s";
  if (s < 3600) return two(s / 60, "min", s % 60, "s");
  if (s < 86400) return two(s / 3600, "h", s % 3600 / 60, "min");
  return two(s / 86400, "d", s % 86400 / 3600, "h");
}

std::string ResumedText(const std::string& workflow, const std::string& id, const std::string& from,
                        bool dropHeld) {
  return "standing Pool `" + workflow + "` resumed: run " + id + " takes over from run " + from +
         (dropHeld ? " (its held items dropped)" : "");
}

std::string StandingChain(const WorkflowInfo& wf) {
  if (wf.pool == nullptr || !wf.pool->standing) return "";
  std::set<std::string> services;
  for (const HookSpec& h : wf.pool->source.hooks) services.insert(h.service);
  std::string from;
  for (const auto& s : services) from += (from.empty() ? "" : ", ") + s;
  return (from.empty() ? std::string("(no hook)") : from) + " → " + wf.name + " → " +
         wf.pool->worker;
}

std::vector<std::string> StandingNotes(const Registry& registry,
                                       const std::vector<std::string>& workflows) {
  std::vector<std::string> out;
  std::map<std::string, std::vector<std::string>> byCallee;
  for (const auto& name : workflows) {
    const WorkflowInfo* wf = registry.workflow(name);
    if (wf == nullptr || wf->pool == nullptr || !wf->pool->standing) continue;
    out.push_back("standing: " + StandingChain(*wf));
    byCallee[wf->pool->worker].push_back(name);
  }
  for (const auto& [callee, pools] : byCallee) {
    if (pools.size() < 2) continue;
    std::string names;
    for (const auto& p : pools) names += (names.empty() ? "`" : "`, `") + p;
    std::string warning = "warning: the standing Pools " + names;
    warning.append("` all dispatch to `").append(callee).append("`: a key is one run of `");
    warning.append(callee).append("`, whichever of them gives it first");
    out.push_back(std::move(warning));
  }
  return out;
}

std::string LocalTime(int64_t ms) {
  const auto t = static_cast<std::time_t>(ms / 1000);
  std::tm local{};
  localtime_r(&t, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &local);
  return text;
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
        answerDue();
        if (g_signal != 0) return true;
        serveInbox();
        return false;
      },
      100);
}

RunHost::~RunHost() {
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
  saver->onSaved([this, id](const std::vector<FeedLine>& lines) {
    if (saved_) saved_(id, lines);
  });
  run.onEvent([this, id, saver](const Run::FeedEvent& e) {
    const int64_t now = clock_.nowMs();
    count(id, e, now);
    saver->addEvent(FeedLine(0, now, e.line, e.kind, e.data));
    if (event_) event_(id, e);
  });
  if (!agents_.is_null()) run.scriptAgents(agents_);
  if (model_) run.modelAgents(model_);
  for (const auto& [function, call] : reads_) run.scriptRead(function, call);
  run.setDispatcher(this);
  if (run.dispatchedBy().is_object())
    keys_[{run.workflow().name, run.dispatchedBy().value("key", "")}] = id;
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

std::map<std::pair<std::string, std::string>, int64_t> RunHost::runCounts() {
  return store_.runCounts();
}

bool RunHost::commit(const std::vector<Run*>& runs) {
  // Group commit (RUNTIME.md §7): every run the turn changed, in one transaction; only then is
  // anything of the turn told (onSaved) or started (the engine releases the held effects).
  // While the store's disk is full, serve tries again once a second; what the runs did
  // meanwhile is held in memory, and nothing of it is told or started.
  const auto now = std::chrono::steady_clock::now();
  if (full_ && now - fullTried_ < std::chrono::seconds(1)) return false;
  std::vector<Store::Save> batch;
  std::vector<Hosted*> saved;
  for (Run* r : runs) {
    auto it = runs_.find(r->id());
    if (it == runs_.end() || it->second.run.get() != r) continue;
    if (auto save = it->second.saver->prepare(*r)) {
      save->head = headOf(it->second);  // a standing run's start or end: its head, with it
      batch.push_back(std::move(*save));
      saved.push_back(&it->second);
    }
  }
  if (batch.empty()) return true;
  std::vector<int64_t> revisions;
  try {
    revisions = store_.saveAll(batch);
    metrics_.commit.observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - now).count());
  } catch (const StoreFull& e) {
    ++metrics_.commitsFailed;
    for (size_t i = 0; i < batch.size(); ++i) saved[i]->saver->failed(*saved[i]->run, batch[i]);
    if (!serving_) throw;  // a command says so and exits; serve waits for space
    if (!full_) {
      note(std::string(e.what()) +
           "; serve keeps answering reads, refuses changes (503), and stores what its runs do "
           "once there is space (it tries every second)");
    }
    full_ = true;
    fullReason_ = e.what();
    fullTried_ = now;
    return false;
  }
  if (full_) note("the run store has space again: what the runs did meanwhile is stored");
  full_ = false;
  for (size_t i = 0; i < batch.size(); ++i) {
    saved[i]->saver->committed(revisions[i], batch[i]);
    if (batch[i].head) saved[i]->head = batch[i].head->ended.empty() ? 1 : 2;
  }
  tellEnded(batch);
  return true;
}

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

std::string RunHost::start(const std::string& workflow, const Json& input,
                           const std::string& home) {
  std::string id = begin(workflow, input, home);
  drive();  // saved from its first turn on, as it moves
  return id;
}

std::string RunHost::begin(const std::string& workflow, const Json& input,
                           const std::string& home) {
  return beginRun(workflow, input, home, nullptr);
}

std::string RunHost::beginRun(const std::string& workflow, const Json& input,
                              const std::string& home, const Json& by, const Json& carried) {
  const WorkflowInfo* wf = registry_.workflow(workflow);
  if (wf == nullptr) throw BadInput("there is no workflow `" + Printable(workflow) + "` here");
  CheckInput(*wf, input);  // a refused input stores nothing
  std::string id = NewRunId();
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
    ref.run->begin(input);
  } catch (...) {
    runs_.erase(id);  // refused before its first turn: nothing of it was stored
    throw;
  }
  return id;
}

Dispatched RunHost::dispatch(const std::string& workflow, const std::string& key, const Json& input,
                             const Json& by) {
  const WorkflowInfo* wf = registry_.workflow(workflow);
  if (wf == nullptr)
    throw BadInput("this runner has no workflow `" + Printable(workflow) + "` to dispatch to");
  if (wf->pool != nullptr && wf->pool->standing)
    throw BadInput("`" + workflow +
                   "` is a standing Pool: serve keeps its one run, and a "
                   "dispatch to it is refused");
  if (auto found = find(workflow, key)) {
    found->existing = true;
    return *found;
  }
  std::string home = ".";
  if (auto parent = runs_.find(by.value("run", "")); parent != runs_.end())
    home = parent->second.run->home();
  const std::string id = beginRun(workflow, input, home, by);
  keys_[{workflow, key}] = id;
  Dispatched out;
  out.run = id;
  return out;
}

std::optional<Dispatched> RunHost::find(const std::string& workflow, const std::string& key) {
  std::string id;
  if (auto it = keys_.find({workflow, key}); it != keys_.end()) {
    id = it->second;
  } else if (auto stored = store_.byKey(workflow, key)) {
    id = stored->id;
  } else {
    return std::nullopt;
  }
  Dispatched out;
  out.run = id;
  if (auto hosted = runs_.find(id); hosted != runs_.end()) {
    const Run& r = *hosted->second.run;
    out.status = ToString(r.status());
    out.output = r.output();
    out.reason = r.reason();
    return out;
  }
  const auto summary = store_.summary(id);
  if (!summary) return std::nullopt;  // pruned meanwhile
  out.status = summary->status;
  if (out.status == "waiting") {
    // Hosted from now on where it can be, so that its end is heard here.
    std::string holder;
    try {
      host(id, &holder);
    } catch (const std::exception& e) {
      note("run " + id + " is not hosted: " + ErrorText(e));
    }
  } else {
    try {
      const StoredRun stored = store_.load(id);
      out.output = stored.snapshot.value("output", Json(nullptr));
      out.reason = stored.snapshot.value("reason", "");
    } catch (const std::exception&) {
      // Its end is known; what it gave is not readable: the item settles without it.
    }
  }
  return out;
}

void RunHost::tellEnded(const std::vector<Store::Save>& batch) {
  for (const Store::Save& save : batch) {
    const StoredRun& r = save.run;
    if (r.status == "waiting" || r.key.empty()) continue;
    // Every run whose `dispatch` worker waits for it: the one that started it, and any other
    // Pool that found it under its key. One that is not hosted finds the end when it is restored.
    const Json output = r.snapshot.value("output", Json(nullptr));
    const std::string reason = r.snapshot.value("reason", "");
    for (auto& [id, h] : runs_) h.run->dispatchedEnded(r.id, r.status, output, reason);
  }
}

std::optional<Store::Head> RunHost::headOf(const Hosted& h) const {
  const Run& run = *h.run;
  const Json st = run.standing();
  if (st.is_null()) return std::nullopt;  // not a standing Pool's run
  if (!run.ended()) {
    if (h.head >= 1) return std::nullopt;  // written when it started (or was taken up)
    Store::Head head;
    head.workflow = run.workflow().name;
    head.run = run.id();
    head.startedMs = st.value("startedMs", int64_t{0});
    head.streak = st.value("streak", int64_t{0});
    return head;
  }
  // Handed over: the new run's head is written by the same commit.
  if (h.head >= 2 || (run.output().is_object() && run.output().contains("handedOverTo")))
    return std::nullopt;
  return EndedHead(run.workflow().name, run.id(), ToString(run.status()), st, clock_.nowMs());
}

std::optional<Store::Head> RunHost::currentHead(const std::string& workflow) {
  std::optional<Store::Head> head = store_.head(workflow);
  if (!head) {
    // A store from before the heads: the newest run stands for it, if any.
    const std::vector<RunSummary> mine = newestFirst(workflow);
    if (mine.empty()) return std::nullopt;
    Store::Head newest;
    newest.workflow = workflow;
    newest.run = mine.front().id;
    head = std::move(newest);
  }
  if (!head->ended.empty()) return head;
  const auto row = store_.summary(head->run);
  if (!row) return std::nullopt;  // its row is gone: nothing to take over
  if (row->status == "waiting") return head;
  // Ended with no head written for its end (outside a host, or a store edited by hand): the end
  // is read from its row, by the same rule.
  Json st = nullptr;
  try {
    const StoredRun stored = store_.load(head->run);
    st = stored.snapshot.value("standing", Json(nullptr));
    if (!st.is_object()) st = stored.snapshot.value("top", Json(nullptr));
  } catch (const std::exception&) {
  }
  if (!st.is_object()) st = Json{{"streak", head->streak}, {"startedMs", head->startedMs}};
  return EndedHead(workflow, head->run, row->status, st, row->updatedMs);
}

Json RunHost::standingState(const std::string& workflow) {
  const WorkflowInfo* wf = registry_.workflow(workflow);
  if (wf == nullptr || wf->pool == nullptr || !wf->pool->standing) return nullptr;
  const std::optional<Store::Head> head = currentHead(workflow);
  if (!head) return {{"workflow", workflow}, {"state", "new"}};
  Json out = {{"workflow", workflow},
              {"run", head->run},
              {"startedMs", head->startedMs},
              {"streak", head->streak}};
  Json carry = nullptr;
  try {
    carry = Run::CarryOf(store_.load(head->run).snapshot);
  } catch (const std::exception&) {
  }
  out["held"] = carry.is_object() ? carry.value("held", Json::array()).size() : 0;
  out["keys"] = carry.is_object() ? carry.value("keys", Json::array()).size() : 0;
  if (head->ended.empty()) {
    out["state"] = "live";
  } else if (!head->paused.empty()) {
    out["state"] = "paused";
    out["paused"] = head->paused;
    out["why"] = head->why;
  } else {
    out["state"] = "waiting";  // ended; the next run starts after its back-off
    out["ended"] = head->ended;
    out["retryAtMs"] = head->endedMs + BackoffMs(head->streak);
  }
  return out;
}

std::vector<RunSummary> RunHost::newestFirst(const std::string& workflow) {
  std::vector<RunSummary> mine;
  for (auto& r : store_.list(true)) {
    if (r.workflow == workflow) mine.push_back(std::move(r));
  }
  std::stable_sort(mine.begin(), mine.end(), [](const RunSummary& a, const RunSummary& b) {
    return a.updatedMs > b.updatedMs;
  });
  return mine;
}

std::vector<std::string> RunHost::standUp(const std::vector<std::string>& workflows) {
  std::vector<std::string> started;
  const int64_t now = clock_.nowMs();
  for (const auto& name : workflows) {
    const WorkflowInfo* wf = registry_.workflow(name);
    if (wf == nullptr || wf->pool == nullptr || !wf->pool->standing) continue;
    bool live = false;
    for (const auto& [id, h] : runs_)
      live = live || (h.run->workflow().name == name && !h.run->ended());
    if (live) {
      // Hosted here and live: nothing to read from the store (this runs every second).
      standing_.erase(name);
      continue;
    }
    // Its head: live elsewhere (another command drives it, or a restore takes it up), paused,
    // in its back-off, or due to start.
    const std::optional<Store::Head> head = currentHead(name);
    if (head && head->ended.empty()) {
      standing_.erase(name);
      continue;
    }
    if (head && !head->paused.empty()) {
      if (standing_[name].state != "paused") {
        std::string told = "standing Pool `" + name + "` is paused (";
        told.append(head->paused)
            .append("): ")
            .append(head->why)
            .append("; it is not started again");
        note(told);
      }
      standing_[name] = {"paused", 0, head->why};
      continue;
    }
    if (head) {
      const int64_t at = head->endedMs + BackoffMs(head->streak);
      if (now < at) {
        std::string why = "its run " + head->run;
        why.append(" ended ").append(head->ended);
        if (standing_[name].state != "backoff") {
          std::string told = "standing Pool `" + name + "`: ";
          told.append(why).append("; the next starts in ").append(DurationText(at - now));
          note(told);
        }
        standing_[name] = {"backoff", at, why};
        continue;
      }
    }
    standing_.erase(name);
    try {
      // After an error (or a drift), the new run takes what the last one held, and its count.
      Json carried = nullptr;
      if (head) {
        try {
          carried = Run::CarryOf(store_.load(head->run).snapshot);
        } catch (const std::exception& e) {
          note("standing Pool `" + name + "`: what run " + head->run + " held cannot be read (" +
               ErrorText(e) + "); the new run starts without it");
        }
        if (!carried.is_object()) carried = Json::object();
        carried["streak"] = head->streak;
      }
      const std::string id = beginRun(name, Json::object(), CurrentDirectory(), nullptr, carried);
      started.push_back(id);
      std::string told = "standing Pool `" + name + "`: run ";
      told.append(id).append(" started");
      if (head) told += ", taking over from run " + head->run;
      note(told);
    } catch (const std::exception& e) {
      standing_[name] = {"paused", 0, "it cannot start: " + ErrorText(e)};
      if (refused_.insert("standing:" + name).second)
        note("standing Pool `" + name + "` cannot start: " + ErrorText(e));
    }
  }
  return started;
}

std::unique_ptr<Run> RunHost::restore(const StoredRun& stored, RunSaver* saver) {
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

std::string RunHost::take(const std::string& prefix, const std::string& workflow) {
  std::string id = store_.resolve(prefix);
  if (runs_.count(id) != 0) return id;
  auto lock = store_.lock(id, [&](const std::string& holder) {
    note("another command" + (holder.empty() ? std::string() : " (" + holder + ")") +
         " is driving run " + id + "; waiting for it to finish" +
         (holder.empty() ? std::string()
                         : " (if it is stopped, `kill -CONT " + holder.substr(4) +
                               "` lets it go on; Ctrl-C ends this wait)"));
  });
  const StoredRun stored = store_.load(id);
  CheckWorkflow(id, stored.workflow, workflow);
  adopt(stored, std::move(lock));
  return id;
}

RunHost::Hosted& RunHost::adopt(const StoredRun& stored, std::unique_ptr<RunLock> lock) {
  Hosted h;
  h.saver = std::make_unique<RunSaver>(store_, clock_);
  h.run = restore(stored, h.saver.get());
  h.lock = std::move(lock);
  Hosted& ref = runs_[stored.id] = std::move(h);
  attach(ref, /*fresh=*/false);
  return ref;
}

std::unique_ptr<Run> RunHost::peek(const std::string& prefix, const std::string& workflow) {
  const StoredRun stored = store_.load(prefix);
  CheckWorkflow(stored.id, stored.workflow, workflow);
  return restore(stored, nullptr);
}

void RunHost::send(const std::string& id, const std::string& gate, const std::string& event,
                   const Json& payload) {
  Run& run = *hosted(id).run;
  // A refused event or payload at a Gate open now is refused before anything is driven.
  run.precheck(gate, event, payload);
  // Timers that fell due while no process ran fire first. If they changed the run, that is
  // stored even when the answer itself is then refused.
  const bool wasEnded = run.ended();
  run.tick();
  if (g_signal != 0) stopForSignal();
  if (!wasEnded && run.ended()) {
    throw BadInput(FiredText(run) + "; the run ended `" + ToString(run.status()) +
                   "`, and the answer was not delivered");
  }
  run.send(gate, event, payload);
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
  commit({h.run.get()});
}

void RunHost::answerDue() {
  if (answersDue_.empty()) return;
  std::vector<std::pair<int64_t, std::string>> due;
  due.swap(answersDue_);
  for (const auto& [seq, id] : due) {
    auto it = runs_.find(id);
    if (it == runs_.end()) continue;
    Run& run = *it->second.run;
    Json gates = Json::array();
    for (const auto& g : run.gates()) gates.push_back(g.name);
    store_.answer(seq, {{"status", ToString(run.status())}, {"gates", gates}});
  }
}

void RunHost::serveInbox() {
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  if (now - inboxCheckedMs_ < 200) return;
  inboxCheckedMs_ = now;
  for (const auto& request : store_.asked()) {
    auto it = runs_.find(request.run);
    if (it == runs_.end() || !store_.takeRequest(request.seq)) continue;
    Hosted& h = it->second;
    Run& run = *h.run;
    const Json& body = request.body;
    try {
      if (request.verb == "cancel") {
        if (run.ended())
          throw BadInput("run " + run.id() + " has already ended `" + ToString(run.status()) + "`");
        cancelNow(h);
        note("run " + run.id() + " was cancelled by another command");
        store_.answer(request.seq, {{"status", ToString(run.status())}});
        // Answers handed over before the cancel, in this pass, were never delivered: said so.
        for (auto due = answersDue_.begin(); due != answersDue_.end();) {
          if (due->second != run.id()) {
            ++due;
            continue;
          }
          store_.answer(due->first,
                        {{"error", "run " + run.id() +
                                       " was cancelled by another command before this answer "
                                       "was delivered"}});
          due = answersDue_.erase(due);
        }
      } else if (request.verb == "send") {
        if (!body.is_object() || !body.contains("gate") || !body["gate"].is_string() ||
            !body.contains("event") || !body["event"].is_string() || !body.contains("payload"))
          throw BadInput("the request `send` must be {gate, event, payload}");
        const std::string gate = body["gate"].get<std::string>();
        const std::string event = body["event"].get<std::string>();
        run.deliver(gate, event, body["payload"]);  // checked here; delivered at the next turn
        std::string told = "another command answered ";
        told += event;
        told += " at " + gate;
        told += " of run " + run.id();
        note(told);
        answersDue_.emplace_back(request.seq, run.id());
        engine_->again();  // the delivery is a step of the next turn, even with nothing out
      } else {
        throw BadInput("the request `" + request.verb + "` is not one a host takes");
      }
    } catch (const BadInput& e) {
      store_.answer(request.seq, {{"error", e.what()}});
    }
  }
}

namespace {
struct LockBusy {
  std::string holder;
};
}  // namespace

bool RunHost::lockFree(const std::string& id, std::string* holder) {
  if (runs_.count(id) != 0) return true;
  try {
    auto lock = store_.lock(id, [](const std::string& h) { throw LockBusy{h}; });
    return true;  // free: released here, and taken again as every verb takes it
  } catch (const LockBusy& busy) {
    *holder = busy.holder;
    return false;
  }
}

std::optional<Json> RunHost::askHolder(const std::string& id, const std::string& holder,
                                       const std::string& verb, const Json& body,
                                       int64_t patienceMs, bool told) {
  const int64_t seq = store_.ask(id, verb, body);
  if (!told) {
    note("run " + id + " is driven by another command" +
         (holder.empty() ? std::string() : " (" + holder + ")") + "; handing it the " + verb);
  }
  const auto start = std::chrono::steady_clock::now();
  auto lastLook = start;
  for (;;) {
    if (auto answer = store_.answerOf(seq)) {
      if (answer->contains("error"))
        throw BadInput(answer->value("error", "the " + verb + " was refused"));
      return answer;
    }
    const auto now = std::chrono::steady_clock::now();
    if (g_signal != 0 && store_.withdraw(seq)) stopForSignal();  // taken: its answer comes
    if (now - start >= std::chrono::milliseconds(patienceMs) && store_.withdraw(seq)) {
      return std::nullopt;  // nobody took it: not done, and never done later
    }
    // Taken and not answered: the holder is doing it, unless it stopped meanwhile (its lock is
    // free): then nobody will answer, and whether the verb was done is in the run's feed.
    if (now - lastLook >= std::chrono::seconds(1)) {
      lastLook = now;
      std::string who;
      if (store_.taken(seq) && lockFree(id, &who)) {
        store_.withdraw(seq);
        std::string what = "the command that drove run " + id;
        what.append(" took the ").append(verb).append(" and stopped before it answered; `log ");
        what.append(id).append("` shows whether it was done");
        throw std::runtime_error(what);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::pair<std::string, bool> RunHost::takeOrHand(const std::string& prefix,
                                                 const std::string& workflow,
                                                 const std::string& verb, const Json& body,
                                                 int64_t patienceMs) {
  std::string id = resolve(prefix, workflow);  // another workflow's run is refused first
  bool told = false;
  std::string holder;
  // Handed over for as long as a command holds the run's lock; taken here once it is free. A
  // holder that does not answer (stopped, or not a runner) is asked again after each patience:
  // a runner stopped with SIGSTOP and let go on gets the verb then.
  while (!lockFree(id, &holder)) {
    if (askHolder(id, holder, verb, body, patienceMs, told)) return {id, false};
    if (!told) {
      note("it did not answer in " + DurationText(patienceMs) +
           "; waiting for it (its lock, or its answer: the " + verb + " is asked again)");
    }
    told = true;
  }
  take(id, workflow);
  return {id, true};
}

std::string RunHost::resolve(const std::string& prefix, const std::string& workflow) {
  std::string id = store_.resolve(prefix);
  if (const auto r = store_.summary(id)) CheckWorkflow(id, r->workflow, workflow);
  return id;
}

RunSummary RunHost::summary(const std::string& prefix, bool view) {
  return store_.find(prefix, view);
}

Json RunHost::view(const std::string& prefix, const std::string& workflow, bool items) {
  const RunSummary r = store_.find(prefix, true);
  CheckWorkflow(r.id, r.workflow, workflow);
  return view(r, items);
}

Json RunHost::view(const RunSummary& r, bool items, bool expand) {
  Json v;
  const auto hostedRun = runs_.find(r.id);
  if (hostedRun != runs_.end() && hostedRun->second.saver &&
      hostedRun->second.saver->view().is_object()) {
    // A run this host drives: the view its last commit stored, as this host made it.
    v = hostedRun->second.saver->view();
  } else if (const std::string text = r.view.empty() ? store_.find(r.id, true).view : r.view;
             !text.empty()) {
    try {
      v = Json::parse(text);
    } catch (const Json::exception&) {
      v = nullptr;  // read again from the run itself, which says what is wrong with it
    }
  }
  if (!v.is_object() || !v.contains("report") || v.value("build", "") != BuildId()) {
    // Saved by another build, or before views were stored: the run is restored once, which
    // finds a run that no longer fits (and marks it `drifted`, as take() would).
    const std::unique_ptr<Run> run = peek(r.id, r.workflow);
    v = SavedView(*run);
  }
  if (expand) ExpandView(v);
  // A Pool's items from its journal, as a restore rebuilds them (a standing Pool's run in memory
  // has forgotten the outputs it settled).
  if (items && v["report"].contains("sofar") && v["report"]["sofar"].value("journaled", false))
    FillFromJournal(v, store_.journal(r.id));
  return v;
}

bool RunHost::known(const std::string& id) {
  return runs_.count(id) != 0 || store_.summary(id).has_value();
}

bool RunHost::hadGate(const std::string& id, const std::string& gate) {
  return store_.hadGate(id, gate);
}

std::optional<Store::StartKey> RunHost::startKey(const std::string& caller,
                                                 const std::string& workflow,
                                                 const std::string& key) {
  return store_.startKey(caller, workflow, key);
}

void RunHost::keepStartKey(const std::string& caller, const std::string& workflow,
                           const std::string& key, const Store::StartKey& start) {
  store_.keepStartKey(caller, workflow, key, start);
}

std::vector<Json> RunHost::hookLog(const std::string& hook, int64_t limit) {
  return store_.hookLog(hook, limit);
}

std::vector<RunSummary> RunHost::runs(bool ended, const std::string& workflow, bool views) {
  std::vector<RunSummary> out;
  for (auto& r : store_.list(ended, views)) {
    if (workflow.empty() || r.workflow == workflow) out.push_back(std::move(r));
  }
  return out;
}

std::vector<FeedLine> RunHost::feed(const std::string& id, int64_t afterSeq, int64_t limit) {
  return limit > 0 ? store_.feedPage(id, afterSeq, limit) : store_.feed(id, afterSeq);
}

int64_t RunHost::revision(const std::string& id) { return store_.revision(id); }

int64_t RunHost::lastSeq(const std::string& id) { return store_.lastSeq(id); }

std::string RunHost::storedStatus(const std::string& id) {
  const auto r = store_.summary(id);
  return r ? r->status : std::string();
}

int64_t RunHost::prune(int64_t beforeMs, const std::string& workflow) {
  return store_.prune(beforeMs, workflow);
}

Json RunHost::deliverHook(const std::string& hook, const std::string& eventKey,
                          const std::string& delivery, const Json& payload, bool drive,
                          bool retried) {
  if (!delivery.empty()) {
    // Answered already (stored, or answered in this turn and stored with it): the same answer,
    // and nothing changes.
    if (auto it = hookAnswers_.find({hook, delivery}); it != hookAnswers_.end()) return it->second;
    if (auto first = store_.hookAnswer(hook, delivery)) return *first;
  }
  // The answer is the strongest of the runs' verdicts: held, existing, reread, hold-full,
  // skipped (with the first reason), naming the item and the run when one does.
  auto rank = [](const std::string& v) {
    return v == "held" ? 4 : v == "existing" ? 3 : v == "reread" ? 2 : v == "hold-full" ? 1 : 0;
  };
  Json runs = Json::array();
  Json best = {{"verdict", "skipped"}, {"reason", ""}};
  bool bestUnheard = true;
  for (const auto& id : ids()) {
    Run& r = run(id);
    if (!r.hears(hook)) continue;  // a machine, an ended run, a Source with no such hook
    const HookVerdict heard = r.hook(hook, eventKey, payload, drive);  // a reread's read goes out
    if (drive && g_signal != 0) stopForSignal();
    Json v = heard.json();
    v["run"] = v.contains("run") ? v["run"] : Json(id);
    v["pool"] = id;
    const std::string verdict = v.value("verdict", "skipped");
    // A Pool whose Source has no hook for this event key did not hear it: its skip is the
    // top-level reason only when no Pool heard it.
    const bool unheard = !heard.heard;
    if (rank(verdict) > rank(best["verdict"]) ||
        (verdict == "skipped" && best["verdict"] == "skipped" &&
         (best["reason"] == "" || (bestUnheard && !unheard)))) {
      best = v;
      bestUnheard = unheard;
    }
    runs.push_back(std::move(v));
  }
  if (runs.empty() && !retried) {
    // No run hosted here hears it. A run that another command drives holds it (503, sent again
    // later); a standing Pool with no live run is started now and hears it, or says why not
    // (paused, in its back-off: 503). Never a `skipped` that the log would keep for good.
    std::vector<std::string> standing;
    const std::vector<RunSummary> waiting = store_.list(false);  // read once per delivery
    for (const WorkflowInfo& wf : registry_.workflows()) {
      if (wf.pool == nullptr) continue;
      bool hearsIt = false;
      for (const HookSpec& h : wf.pool->source.hooks) hearsIt = hearsIt || h.service == hook;
      if (!hearsIt) continue;
      for (const auto& r : waiting) {
        if (r.workflow != wf.name || runs_.count(r.id) != 0) continue;
        std::string holder;
        try {
          if (host(r.id, &holder)) continue;  // free: hosted here from now on
        } catch (const std::exception& e) {
          note("run " + r.id + " is not hosted: " + ErrorText(e));
          continue;
        }
        return {{"verdict", "busy"},
                {"reason", "run " + r.id + " of " + wf.name + " is driven by another command" +
                               (holder.empty() ? std::string() : " (" + holder + ")") +
                               "; send it again"},
                {"retryAfter", 1},
                {"runs", Json::array()}};
      }
      if (wf.pool->standing) standing.push_back(wf.name);
    }
    if (!standing.empty()) standUp(standing);
    bool heard = false;
    for (const auto& id : ids()) heard = heard || run(id).hears(hook);
    if (heard) return deliverHook(hook, eventKey, delivery, payload, drive, /*retried=*/true);
    for (const auto& name : standing) {
      auto st = standing_.find(name);
      if (st == standing_.end()) continue;
      Json out = {
          {"verdict", st->second.state == "paused" ? "paused" : "backoff"},
          {"reason", "standing Pool `" + name + "` " +
                         (st->second.state == "paused" ? "is paused: " : "is in its back-off: ") +
                         st->second.why},
          {"runs", Json::array()}};
      if (st->second.state == "backoff")
        out["retryAfter"] =
            std::max<int64_t>(1, (st->second.retryAtMs - clock_.nowMs() + 999) / 1000);
      return out;  // not logged: a resend is heard
    }
  }
  Json answer = {
      {"verdict", best["verdict"]}, {"reason", best.value("reason", "")}, {"runs", runs}};
  if (runs.empty()) answer["reason"] = "no run waits for hook " + hook;
  for (const char* key : {"item", "run"}) {
    if (best.contains(key) && answer["verdict"] != "skipped") answer[key] = best[key];
  }
  // Above `hold`, the delivery is not kept: a resend is heard (HTTP 429).
  if (delivery.empty() || answer["verdict"] == "hold-full") return answer;
  Store::HookEntry entry{hook, delivery, clock_.nowMs(), eventKey, answer};
  if (drive) {
    store_.logHooks({entry});  // after the drive that stored its reread
    return answer;
  }
  // Logged after the commit of the turn that stores what it did (serve answers after it too): a
  // delivery id is never answered from the log for a reread that a kill lost. The deliveries of
  // one turn are logged in one transaction.
  if (hookLogDue_.empty()) {
    afterCommit([this] {
      std::vector<Store::HookEntry> due;
      due.swap(hookLogDue_);
      store_.logHooks(due);
      hookAnswers_.clear();
    });
  }
  hookAnswers_[{hook, delivery}] = answer;
  hookLogDue_.push_back(std::move(entry));
  return answer;
}

int RunHost::takeLive(const std::vector<std::string>& workflows) {
  int taken = 0;
  for (const auto& summary : store_.list(false)) {
    if (runs_.count(summary.id) != 0) continue;
    if (std::find(workflows.begin(), workflows.end(), summary.workflow) == workflows.end())
      continue;
    std::string holder;
    if (!lockFree(summary.id, &holder)) continue;  // another command drives it: later
    try {
      take(summary.id, summary.workflow);
      // The timers that fell due while nobody hosted it fire at the engine's next turn (it is
      // being driven: this is serve's).
      engine_->again();
      ++taken;
    } catch (const std::exception& e) {
      // One run that cannot be taken (damaged, drifted) is told once and left; the others go on.
      runs_.erase(summary.id);
      if (refused_.insert(summary.id).second)
        note("run " + summary.id + " is not hosted: " + ErrorText(e));
    }
  }
  return taken;
}

void RunHost::queue(std::function<void()> action) {
  actions_.push_back(std::move(action));
  engine_->again();
}

void RunHost::afterCommit(std::function<void()> fn) {
  afterCommit_.push_back(std::move(fn));
  engine_->again();
}

Run& RunHost::changeable(const RunSummary& r, bool cancel) {
  const auto ended = [&](const std::string& status) {
    return RunEnded(cancel ? "run " + r.id + " has already ended `" + status + "`"
                           : "run " + r.id + " has ended `" + status + "`; it takes no events");
  };
  if (r.status != "waiting" && !hosts(r.id)) throw ended(r.status);
  std::string holder;
  if (!host(r.id, &holder)) {
    throw RunBusy("run " + r.id + " is driven by another command" +
                      (holder.empty() ? std::string() : " (" + holder + ")") +
                      " now; serve takes it up when that command lets it go: try again",
                  holder);
  }
  Run& run = *runs_.at(r.id).run;
  if (run.ended()) throw ended(ToString(run.status()));
  return run;
}

void RunHost::answerAt(const RunSummary& r, const std::string& gate, const std::string& event,
                       const Json& payload) {
  changeable(r).deliver(gate, event, payload);
}

bool RunHost::host(const std::string& id, std::string* holder) {
  if (runs_.count(id) != 0) return true;
  if (!lockFree(id, holder)) return false;
  const auto summary = store_.summary(id);
  if (!summary) throw StoreError("there is no run " + id + " in the store");
  take(id, summary->workflow);
  engine_->again();  // its due timers fire at the next turn
  return true;
}

int RunHost::releaseEnded() {
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

std::vector<std::string> RunHost::handOverDue() {
  std::vector<std::pair<std::string, std::string>> due, bound;  // run, why
  const std::string assembly = registry_.assembly();
  for (const auto& [id, h] : runs_) {
    const Run& r = *h.run;
    if (r.ended() || r.workflow().pool == nullptr || !r.workflow().pool->standing) continue;
    if (!assembly.empty() && !r.assembly().empty() && r.assembly() != assembly) {
      due.emplace_back(id, "a new build of its workflows");
    } else if (r.atBound()) {
      const Json st = r.standing();
      const std::string why = st.value("taken", int64_t{0}) >= kStandingBoundItems
                                  ? std::to_string(kStandingBoundItems) + " items taken"
                                  : "a day old";
      // A run in which an item it took got a run (or that took none: a quiet day) is handed
      // over at once; one whose items all got none ends, and the next starts after a back-off
      // (it counts: a backlog its callee refuses would otherwise hand over without end).
      if (st.value("ran", int64_t{0}) > 0 || st.value("taken", int64_t{0}) == 0) {
        due.emplace_back(id, "at its bound: " + why);
      } else {
        bound.emplace_back(id, why);
      }
    }
  }
  for (const auto& [id, why] : bound) {
    hosted(id).run->endAtBound(why);
    commit({hosted(id).run.get()});  // stored now, with its head: no other step may come
    std::string told = "standing Pool `" + hosted(id).run->workflow().name;
    told.append("`: run ").append(id).append(" ended at its bound (").append(why);
    told.append(") with no item that got a run; the next starts after a back-off");
    note(told);
  }
  std::vector<std::string> started;
  started.reserve(due.size());
  for (const auto& [id, why] : due) started.push_back(handOver(id, why));
  return started;
}

std::string RunHost::handOver(const std::string& id, const std::string& why) {
  Hosted& old = hosted(id);
  Run& run = *old.run;
  // The count goes on, unless an item this run took got a run.
  Json carried = run.handOverState();
  const Json st = run.standing();
  carried["streak"] = st.value("ran", int64_t{0}) > 0 ? 0 : st.value("streak", int64_t{0});
  std::string next = beginRun(run.workflow().name, run.input(), run.home(), nullptr, carried);
  hosted(id).run->handOver(next, why);  // both are stored by the next commit, in one transaction
  note("standing Pool `" + hosted(id).run->workflow().name + "`: run " + id +
       " handed over to run " + next + " (" + why + ")");
  return next;
}

std::string RunHost::resume(const std::string& workflow, bool dropHeld) {
  const WorkflowInfo* wf = registry_.workflow(workflow);
  if (wf == nullptr || wf->pool == nullptr || !wf->pool->standing)
    throw BadInput("`" + Printable(workflow) + "` is not a standing Pool");
  const std::optional<Store::Head> head = currentHead(workflow);
  if (!head) throw BadInput("standing Pool `" + workflow + "` has never run: `serve` starts it");
  if (head->ended.empty())
    throw BadInput("standing Pool `" + workflow + "` is live: run " + head->run +
                   "; there is nothing to resume");
  if (head->paused.empty() && clock_.nowMs() < head->endedMs + BackoffMs(head->streak))
    throw BadInput("standing Pool `" + workflow + "` waits out a back-off (its run " + head->run +
                   " ended " + head->ended + "); it starts by itself");
  Json carried = Run::CarryOf(store_.load(head->run).snapshot);
  if (!carried.is_object()) carried = Json::object();
  if (dropHeld) carried["held"] = Json::array();
  carried["streak"] = 0;  // a person resumed it: the count starts again
  std::string id = beginRun(workflow, Json::object(), CurrentDirectory(), nullptr, carried);
  standing_.erase(workflow);
  note(ResumedText(workflow, id, head->run, dropHeld));
  return id;
}

void RunHost::cancelHosted(const std::string& id) {
  Hosted& h = hosted(id);
  if (h.run->ended())
    throw RunEnded("run " + id + " has already ended `" + ToString(h.run->status()) + "`");
  cancelNow(h);
}

void RunHost::serve(const std::function<void()>& every) {
  auto last = std::chrono::steady_clock::now();
  serving_ = true;
  engine_->stopWhen(
      [this, &every, &last] {
        // The answers to what the handlers changed before this commit, then their new
        // requests. While the disk is full nothing of the last turns is stored: their answers
        // wait for the commit that stores them.
        if (!full_) {
          answerDue();
          std::vector<std::function<void()>> due;
          due.swap(afterCommit_);
          for (auto& fn : due) fn();
        }
        if (g_signal != 0) return true;
        try {
          if (!full_) serveInbox();
        } catch (const StoreFull&) {
          // Nothing was taken from the inbox: it is read again when there is space.
        }
        std::vector<std::function<void()>> actions;
        actions.swap(actions_);
        for (auto& action : actions) action();
        if (every && std::chrono::steady_clock::now() - last >= std::chrono::seconds(1)) {
          last = std::chrono::steady_clock::now();
          try {
            if (!full_) every();
          } catch (const StoreFull&) {
            // Taking up runs and standing Pools waits for space too.
          }
        }
        return false;
      },
      100);
  engine_->serve();
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
