// A run (jr2/run.h, docs/runtime.md#a-run): its strand and queue of steps, its Gates and
// timers, effects offloaded and held for the turn's commit, `std.command`, the Agent harnesses'
// turns, a Pool of runs' door, and the run stored and restored. The actors are in run/actors/
// (and the Pool's in run/pool/); the engine they are driven on is engine.h.

#include "jr2/run.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <csignal>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>
#include <typeindex>
#include <unordered_map>
#include <unordered_set>

#include "effects/process.h"
#include "jr2/stdlib.h"
#include "run/actors/dispatch_actor.h"
#include "run/actors/machine_actor.h"
#include "run/agents.h"
#include "run/engine.h"
#include "run/pool/pool_actor.h"

namespace jr2rt {

int64_t SystemClock::nowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const char* ToString(RunStatus s) {
  switch (s) {
    case RunStatus::kWaiting:
      return "waiting";
    case RunStatus::kDone:
      return "done";
    case RunStatus::kFailed:
      return "failed";
    case RunStatus::kDeadlocked:
      return "deadlocked";
    case RunStatus::kError:
      return "error";
    case RunStatus::kCancelled:
      return "cancelled";
  }
  return "error";
}

RunStatus RunStatusFrom(const std::string& s) {
  for (RunStatus r : {RunStatus::kWaiting, RunStatus::kDone, RunStatus::kFailed,
                      RunStatus::kDeadlocked, RunStatus::kError, RunStatus::kCancelled}) {
    if (s == ToString(r)) return r;
  }
  throw NoLongerFits("unknown run status `" + s + "`");
}

// ---- the run --------------------------------------------------------------------------------

namespace {
std::atomic<int> g_effectThreads{0};  // 0: the default
}  // namespace

void SetEffectThreads(int threads) { g_effectThreads = threads; }

int EffectThreads() {
  if (const int set = g_effectThreads.load(); set > 0) return set;
  return std::max(2, static_cast<int>(std::thread::hardware_concurrency()));
}

struct Run::Strand {
  explicit Strand(boost::asio::io_context& io) : strand(boost::asio::make_strand(io)) {}
  boost::asio::strand<boost::asio::io_context::executor_type> strand;
};

Run::Run(const Registry& registry, const WorkflowInfo& workflow, std::string id, Clock& clock,
         std::shared_ptr<Engine> engine)
    : registry_(registry),
      workflow_(workflow),
      id_(std::move(id)),
      clock_(clock),
      engine_(engine ? std::move(engine) : std::make_shared<Engine>()),
      strand_(std::make_unique<Strand>(engine_->io())) {
  engine_->add(this);
}

void Run::post(Task task) {
  {
    std::lock_guard<std::mutex> lock(tasksMu_);
    tasks_.push_back(std::move(task));
    if (drainPosted_) return;
    drainPosted_ = true;
  }
  std::weak_ptr<int> life = life_;
  Engine::PostOn(strand_->strand, [this, life] {
    if (!life.expired()) drainTasks();
  });
}

// Runs the queued steps in the order posted, each one step (counted for the commit, its
// exceptions classified by guard), the steps they post included, up to kStepsPerHandler: then
// the rest go behind whatever else is ready, so one run's chain of steps does not keep the other
// handlers of the turn waiting. A step may end the run (the rest are dropped) or destroy it
// (`life` tells: nothing of it is touched again).
void Run::drainTasks() {
  constexpr int kStepsPerHandler = 256;
  const std::weak_ptr<int> life = life_;
  for (int n = 0; n < kStepsPerHandler; ++n) {
    Task task;
    {
      std::lock_guard<std::mutex> lock(tasksMu_);
      if (tasks_.empty()) {
        drainPosted_ = false;
        return;
      }
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    if (ended()) continue;
    ++steps_;
    guard(std::move(task), Origin::kStep);
    if (life.expired()) return;
  }
  Engine::PostOn(strand_->strand, [this, life] {
    if (!life.expired()) drainTasks();
  });
}

Run::~Run() {
  event_ = nullptr;  // a run torn down tells nobody: its host may be gone already
  progress_ = nullptr;
  commit_ = nullptr;
  // Work of this run still out (a host function on the pool) comes back to a run that is gone:
  // Back() sees `life_` expired and drops it. A running process is killed with its actor.
  if (top_ && !ended()) top_->stop();
  life_.reset();
  engine_->remove(this);
  top_.reset();
  strand_.reset();  // before the engine: a strand is a service of the engine's io_context
}

JsonValue CheckInput(const WorkflowInfo& workflow, const Json& input) {
  StrictFields strict;  // a field no parameter or record has is refused
  if (workflow.pool != nullptr) return PoolActor::ReadInput(*workflow.pool, input);
  try {
    if (workflow.machine != nullptr) workflow.machine()->checkInput(input);
  } catch (const SchemaError& e) {
    throw BadInput(std::string("the input does not fit: ") + e.what());
  }
  return nullptr;
}

void Run::checkInput(const Json& input) const { CheckInput(workflow_, input); }

void Run::start(const Json& input) {
  begin(input);
  drain();
}

void Run::begin(const Json& input) {
  // What comes from outside is checked strictly first (unknown fields refused, with the path),
  // before anything starts; the start itself then reads it as usual. A Pool's input is read
  // once: checked here, and started from what the check read (a Pool of 100,000 items read them
  // twice, #33).
  begin(input, CheckInput(workflow_, input));
}

void Run::begin(const Json& input, JsonValue read) {
  // A Pool starts from what the check read (its input with its parameters' defaults); a machine
  // reads its input as it starts. A read that is null (none kept) has the Pool read it.
  std::optional<JsonValue> parsed;
  if (workflow_.pool != nullptr && !IsNull(read.json())) parsed = std::move(read);
  assembly_ = registry_.assembly();
  input_ = input;
  PoolActor* pool = nullptr;
  if (workflow_.pool != nullptr) {
    auto made = std::make_unique<PoolActor>(*this, nullptr, 0, "", *workflow_.pool);
    pool = made.get();
    top_ = std::move(made);
  } else {
    MachineFactory make = workflow_.machine;
    if (make == nullptr) throw Defect("workflow `" + workflow_.name + "` has no top machine");
    const std::string name = make()->name();
    top_ = std::make_unique<MachineActor>(*this, nullptr, 0, "", name);
  }
  try {
    guard(
        [&] {
          if (parsed) {
            pool->startParsed(std::move(*parsed));
          } else {
            top_->start(input);
          }
        },
        Origin::kCommand);
  } catch (const SchemaError& e) {
    throw BadInput(std::string("the input does not fit: ") + e.what());
  }
  dirty_ = true;
}

void Run::send(const std::string& gate, const std::string& event, const Json& payload,
               const CheckedAnswer* checked, const std::string& by) {
  deliver(gate, event, payload, checked, by);
  drain();
}

void Run::deliver(const std::string& gate, const std::string& event, const Json& payload,
                  const CheckedAnswer* checked, const std::string& by) {
  // The one place an answer is checked against the Gates (the runner's `send`, serve's answer).
  if (ended())
    throw GateRefused(GateRefused::Why::kEnded, "",
                      "run " + id_ + " has ended `" + ToString(status_) + "`; it takes no events");
  auto it = gates_.find(gate);
  if (it == gates_.end() || it->second.answered) {
    std::string open;
    for (const auto& [name, g] : gates_) {
      if (!g.answered) open += (open.empty() ? "" : ", ") + name;
    }
    const bool taken = it != gates_.end();
    throw GateRefused(taken ? GateRefused::Why::kTaken : GateRefused::Why::kNotOpen, open,
                      "run " + id_ + " has no open Gate `" + gate + "`" +
                          (taken ? " (another answer to it is being delivered)" : "") +
                          (open.empty() ? "" : "; its open Gates are " + open));
  }
  accept(gate, event, payload, checked, by);
  dirty_ = true;
}

Run::CheckedAnswer Run::precheck(const std::string& gate, const std::string& event,
                                 const Json& payload) const {
  auto it = gates_.find(gate);
  if (it == gates_.end()) return {};  // it may open when due timers fire: send() says
  return {it->second.opening, validate(it->second, gate, event, payload)};
}

std::shared_ptr<const Payload> Run::validate(const GateEntry& entry, const std::string& gate,
                                             const std::string& event, const Json& payload) const {
  bool accepted = false;
  std::string names;
  std::vector<std::string> all;
  for (const auto& e : *entry.accepts) {
    names += (names.empty() ? "" : ", ") + e.name;
    all.push_back(e.name);
    if (e.name == event) accepted = true;
  }
  if (!accepted) {
    // A typo (`accpt`) over HTTP or from the CLI alike: the event it was likely meant to be.
    const std::string close = ClosestName(event, all);
    throw BadInput("the Gate `" + gate + "` takes " + (names.empty() ? "no event" : names) +
                   ", not `" + event + "`" +
                   (close.empty() ? "" : "; did you mean `" + close + "`?"));
  }
  StrictFields strict;  // a payload from outside: a field its event lacks is refused
  return entry.owner->check(entry.invokeId, event, payload);
}

void Run::accept(const std::string& gate, const std::string& event, const Json& payload,
                 const CheckedAnswer* checked, const std::string& by) {
  auto it = gates_.find(gate);
  if (it == gates_.end() || it->second.answered) throw BadInput("no open Gate `" + gate + "`");
  const GateEntry entry = it->second;
  // Read once: the payload as its type goes to the transition's action with the event (read
  // by precheck() when that was at this opening of the Gate).
  std::shared_ptr<const Payload> typed = checked != nullptr && checked->opening == entry.opening
                                             ? checked->typed
                                             : validate(entry, gate, event, payload);
  // Taken now: a second answer before the next turn delivers this one finds the Gate answered
  // (two clients answering one Gate between two turns: one wins, the other is refused). A
  // Source's wake Gate takes any number of wakes.
  it->second.answered = entry.kind != OpenGate::Kind::kSource;
  const uint64_t opening = entry.opening;
  entry.owner->later([this, gate, opening, entry, event, payload, by, typed = std::move(typed)] {
    // Who answered, what and with what: the audit trail of a Gate (its `gate-closed` says only
    // that it closed), on the feed before what the answer does.
    if (heard()) {
      emit("answered", {{"gate", gate}, {"event", event}, {"payload", payload}, {"by", by}},
           gate + " answered " + event + (by.empty() ? "" : " by " + by));
    }
    entry.owner->deliver(entry.invokeId, event, payload, typed);
    // A Gate the event left open (a transition that stays in the state) takes answers again.
    auto again = gates_.find(gate);
    if (again != gates_.end() && again->second.opening == opening) again->second.answered = false;
  });
}

bool Run::hears(const std::string& service) const {
  const auto* pool = dynamic_cast<const PoolActor*>(top_.get());
  return !ended() && pool != nullptr && pool->hears(service);
}

HookVerdict Run::hook(const std::string& service, const std::string& eventKey, const Json& payload,
                      bool drive) {
  auto* pool = dynamic_cast<PoolActor*>(top_.get());
  if (ended() || pool == nullptr) {
    return Skipped(ended() ? "run " + id_ + " has ended `" + ToString(status_) + "`"
                           : "run " + id_ + " is not a Pool over a Source");
  }
  HookVerdict verdict = pool->hook(service, eventKey, payload);
  // A delivery the Source took is an input of the turn it is taken in (docs/runtime.md#traces);
  // a skipped one changed nothing, and is in the hook log alone.
  if (heard() && verdict.kind != HookVerdict::Kind::kSkipped) {
    Json data = {{"service", service}, {"event", eventKey}, {"payload", payload}};
    // Found by the host's door (a run of the callee holds its key): the host's answer, kept
    // for a replay, which knows only the runs this run dispatched.
    if (verdict.kind == HookVerdict::Kind::kExisting && verdict.status && verdict.run &&
        verdict.run->is_string())
      data["found"] = {{"item", verdict.item}, {"run", *verdict.run}, {"status", *verdict.status}};
    emit("hook", std::move(data), "");
  }
  dirty_ = true;
  if (drive) drain();
  return verdict;
}

void Run::tick() {
  if (ended()) return;
  if (fireDue()) dirty_ = true;
  drain();
}

void Run::drive() {
  dirty_ = true;
  drain();
}

bool Run::replayRefusedPick(const std::string& gate) {
  auto it = gates_.find(gate);
  if (it == gates_.end() || it->second.kind != OpenGate::Kind::kAgent) return false;
  pickAgain(it->second);
  dirty_ = true;
  return true;
}

bool Run::fireDue() {
  if (ended()) return false;
  const int64_t now = clock_.nowMs();
  // A model's retry on a manual clock (on a real one, its timer is the engine's).
  bool retried = false;
  for (auto& [gate, turn] : modelTurns_) {
    if (!turn.retryDueMs || *turn.retryDueMs > now) continue;
    turn.retryDueMs.reset();
    post([this, gate = gate, opening = turn.opening] { retryModel(gate, opening); });
    retried = true;
  }
  std::vector<Timer> due;
  for (const Timer& t : timers_) {
    if (t.due <= now) due.push_back(t);
  }
  std::stable_sort(due.begin(), due.end(),
                   [](const Timer& a, const Timer& b) { return a.due < b.due; });
  for (const Timer& t : due) {
    unschedule(t.owner, t.id);
    Actor* owner = t.owner;
    const int id = t.id;
    owner->later([owner, id] { owner->timer(id); });
  }
  return retried || !due.empty();
}

void Run::cancel() {
  if (ended()) return;
  // What was done before the cancel is kept: a Pool's settled items and failures stay in the
  // output, with the workers that were live when it was cancelled.
  if (handOverCarry_.is_null()) handOverCarry_ = handOverState();  // a standing run's, for a resume
  if (standingEnd_.is_null()) standingEnd_ = standing();
  // At every depth: a machine keeps what its child Pools did (MachineActor::kept).
  Json done = top_ ? top_->kept() : Json(nullptr);
  if (done.is_object()) done["status"] = "cancelled";
  dirty_ = true;
  if (top_) top_->stop();
  status_ = RunStatus::kCancelled;
  output_ = std::move(done);
  reason_ = "cancelled";
  gates_.clear();
  modelTurns_.clear();  // a retry waited for is cancelled with its timer
  timers_.clear();
  emit("ended", {{"status", ToString(status_)}, {"reason", reason_}}, "");
}

Json Run::observe() const {
  Json out = top_ ? top_->observe() : Json{{"value", Json::array()}, {"children", Json::array()}};
  out.erase("kind");
  // An ended run is nowhere in its machine any more: its last configuration is not shown.
  if (ended()) {
    out["value"] = Json::array();
    out["children"] = Json::array();
  }
  out["runId"] = id_;
  out["workflow"] = workflow_.name;
  out["status"] = ToString(status_);
  return out;
}

std::string Run::observeText() const {
  std::string out;
  if (!top_ || ended()) {
    AppendJson(out, observe());
  } else {
    top_->observeText(out, {{"kind", nullptr},
                            {"runId", id_},
                            {"workflow", workflow_.name},
                            {"status", ToString(status_)}});
  }
  return out;
}

Json Run::sofar(bool items) const { return top_ && !ended() ? top_->sofar(items) : Json(nullptr); }

std::vector<std::string> Run::effectsOut() const {
  std::vector<std::string> out;
  if (top_ && !ended()) top_->effectsOut(out);
  return out;
}

void Run::timerFired(const std::string& state, int64_t afterMs) {
  fired_.push_back({state, afterMs});
  emit("timer", {{"state", state}, {"after", afterMs >= 0 ? Json(afterMs) : Json(nullptr)}}, "");
}

void Run::guard(Task step, Origin origin) {
  // The one place a step's exception is classified (docs/runtime.md#the-pool). A SchemaError or a
  // BadInput is the caller's when the value came from the command (its input: refused, 65/400)
  // and a defect of the run when a step made it (a nested Pool's `cap` below 1, a value that
  // does not fit its type). A Pool's item that does not fit its worker is classified where the
  // item is read (PoolActor: that item's Failure).
  try {
    step();
  } catch (const SchemaError& e) {
    if (origin == Origin::kCommand) throw;
    finish(RunStatus::kError, nullptr, e.what());
  } catch (const BadInput& e) {
    if (origin == Origin::kCommand) throw;
    finish(RunStatus::kError, nullptr, e.what());
  } catch (const Defect& d) {
    finish(RunStatus::kError, nullptr, d.what());
  } catch (const Failure& f) {
    finish(RunStatus::kFailed, f.detail(), f.reason());
  } catch (const std::exception& e) {
    // Anything else that is not a Failure is a defect.
    finish(RunStatus::kError, nullptr, ErrorText(e));
  }
}

bool Run::commits() const { return commit_ != nullptr || engine_->grouped(); }

void Run::drain() {
  // The engine runs turns until nothing is ready and no effect is out (engine.cpp): each turn
  // runs every ready handler, commits what changed (group commit), and only then lets the
  // effects the turn started go out.
  engine_->drive();
}

void Run::finish(RunStatus status, Json output, std::string reason) {
  if (ended()) return;
  if (handOverCarry_.is_null()) handOverCarry_ = handOverState();  // a standing run's, for the next
  if (standingEnd_.is_null()) standingEnd_ = standing();
  status_ = status;
  output_ = std::move(output);
  reason_ = std::move(reason);
  if (top_) top_->stop();
  gates_.clear();
  modelTurns_.clear();  // a retry waited for is cancelled with its timer
  timers_.clear();
  emit("ended", {{"status", ToString(status_)}, {"reason", reason_}}, "");
}

std::vector<OpenGate> Run::gates() const {
  std::vector<OpenGate> out;
  for (const auto& [name, g] : gates_) {
    if (g.answered) continue;  // an answer is on its way to it
    out.push_back(shown(name, g));
  }
  return out;
}

void Run::visitGates(const std::function<void(const GateView&)>& fn) const {
  static const Json kNoMeta = Json::object();
  for (const auto& [name, g] : gates_) {
    if (g.answered) continue;  // as gates()
    const InvokeSpec* spec = g.owner->invokeSpec(g.invokeId);
    const Json& meta = spec == nullptr || spec->input->is_null() ? kNoMeta : spec->input.json();
    fn(GateView{name, g.kind, meta, *g.accepts, g.owner->prefix(), g.savedView, g.savedViewPiece});
  }
}

std::optional<std::string> Run::gateMachine(const std::string& gate) const {
  const auto it = gates_.find(gate);
  if (it == gates_.end()) return std::nullopt;
  return it->second.owner->prefix();
}

OpenGate Run::shown(const std::string& name, const GateEntry& entry) const {
  OpenGate g;
  g.name = name;
  g.kind = entry.kind;
  g.accepts = *entry.accepts;
  if (const InvokeSpec* spec = entry.owner->invokeSpec(entry.invokeId)) {
    g.meta = spec->input->is_null() ? Json::object() : spec->input.json();
    if (entry.kind == OpenGate::Kind::kAgent) g.agent = spec->target;
  }
  return g;
}

std::string Run::agentOf(const GateEntry& entry) const {
  if (entry.kind != OpenGate::Kind::kAgent) return "";
  const InvokeSpec* spec = entry.owner->invokeSpec(entry.invokeId);
  return spec != nullptr ? spec->target : "";
}

std::optional<int64_t> Run::nextUnattendedTimer() const {
  // Where somebody is waited for: each open Gate, as (the actor, the state that invoked it),
  // and up the tree (each parent, at the state that invoked the child). With no timer, nothing
  // to tell apart: a Pool of 64 workers at their Gates asks at every save (#33).
  std::set<std::pair<const Actor*, std::string>> waited;
  if (!timers_.empty()) {
    for (const auto& [name, g] : gates_) {
      const Actor* a = g.owner;
      std::string at = a->invokeState(g.invokeId);
      while (a != nullptr && waited.emplace(a, at).second) {
        const Actor* parent = a->parent();
        at = parent != nullptr ? parent->invokeState(a->key()) : std::string();
        a = parent;
      }
    }
  }
  // A timer is a deadline on an answer when somebody is waited for inside the state that
  // started it (the machine's body covers the whole machine); otherwise it is work under way.
  auto within = [](const std::string& path, const std::string& state) {
    return state.empty() || path == state ||
           (path.size() > state.size() && path.compare(0, state.size(), state) == 0 &&
            path[state.size()] == '.');
  };
  std::optional<int64_t> best;
  for (const Timer& t : timers_) {
    const std::string state = t.owner->timerState(t.id);
    bool attended = false;
    for (auto it = waited.lower_bound({t.owner, std::string()});
         it != waited.end() && it->first == t.owner && !attended; ++it) {
      attended = within(it->second, state);
    }
    if (attended) continue;
    if (!best || t.due < *best) best = t.due;
  }
  // A model's retry is work under way (its Gate waits for the Agent, not a person).
  for (const auto& [gate, turn] : modelTurns_) {
    if (turn.retryDueMs && (!best || *turn.retryDueMs < *best)) best = turn.retryDueMs;
  }
  return best;
}

std::optional<int64_t> Run::nextTimer() const {
  std::optional<int64_t> best;
  for (const Timer& t : timers_) {
    if (!best || t.due < *best) best = t.due;
  }
  for (const auto& [gate, turn] : modelTurns_) {
    if (turn.retryDueMs && (!best || *turn.retryDueMs < *best)) best = turn.retryDueMs;
  }
  return best;
}

void Run::openGate(OpenGate gate, std::shared_ptr<const std::vector<EventSpec>> accepts,
                   Actor* owner, int invokeId) {
  // Two live Gates with one name are a defect, never a silent overwrite.
  if (gates_.count(gate.name) != 0) throw Defect("two live Gates are named `" + gate.name + "`");
  const std::string name = gate.name;
  if (heard()) {
    emit("gate-opened",
         {{"gate", name},
          {"kind", gate.kind == OpenGate::Kind::kSource  ? "source"
                   : gate.kind == OpenGate::Kind::kAgent ? "agent"
                                                         : "gate"}},
         gate.kind != OpenGate::Kind::kSource ? "Gate " + name + " opened" : "");
  }
  const bool agent = gate.kind == OpenGate::Kind::kAgent;
  gates_.emplace(name, GateEntry{gate.kind, std::move(accepts), owner, invokeId, ++openings_});
  if (agent && (!agentScript_.is_null() || modelServer_)) answerAgent(name);
}

void Run::closeGate(const std::string& name) {
  modelTurns_.erase(name);
  if (gates_.erase(name) != 0 && heard()) emit("gate-closed", {{"gate", name}}, "");
}

void Run::schedule(Actor* owner, int timerId, int64_t dueMs) {
  unschedule(owner, timerId);
  timers_.push_back({owner, timerId, dueMs});
}

void Run::unschedule(Actor* owner, int timerId) {
  timers_.erase(std::remove_if(timers_.begin(), timers_.end(),
                               [&](const Timer& t) { return t.owner == owner && t.id == timerId; }),
                timers_.end());
}

const NextCall* Run::scripted(const std::string& function) const {
  auto it = scripted_.find(function);
  return it == scripted_.end() ? nullptr : &it->second;
}

Json Run::snapshotBase(bool withInput, bool withOutput) const {
  const bool standingEnded = ended() && workflow_.pool != nullptr && workflow_.pool->standing;
  // The picks refused at each Agent's Gate open now: a run taken up again goes on counting, and
  // one whose `picks:` are spent is not put to its Agent again.
  Json refused = Json::object();
  for (const auto& [name, g] : gates_) {
    if (g.kind == OpenGate::Kind::kAgent && g.refusedPicks > 0) refused[name] = g.refusedPicks;
  }
  Json out = Obj()("version", 1)("id", id_)("workflow", workflow_.name)("home", home_)(
      "status", ToString(status_))("reason", reason_)("output", withOutput ? output_ : Json())(
      "agentReplies", agentReplies_)("journal", journaling_)("dispatchedBy", dispatchedBy_)(
      "assembly", assembly_)
      // A standing run that ended keeps what a new run takes of it (held items, live keys).
      ("carry", standingEnded ? handOverCarry_ : Json(nullptr))(
          "standing", ended() ? standingEnd_ : Json(nullptr));
  if (!refused.empty()) out["refusedPicks"] = std::move(refused);
  if (withInput) out["input"] = input_;
  return out;
}

Json Run::storedOutput() const {
  if (!outputInJournal()) return output_;
  Json out = Json::object();
  for (const auto& [name, value] : output_.items()) {
    if (name != "items" && name != "failures") out[name] = value;
  }
  return out;
}

Json Run::snapshot(bool withInput, bool asStored) const {
  Json out = snapshotBase(withInput, /*withOutput=*/!asStored);
  if (asStored) {
    out["output"] = storedOutput();
    if (outputInJournal()) out["outputInJournal"] = true;
  }
  out["top"] = top_ && !ended() ? top_->snapshot() : Json(nullptr);
  return out;
}

std::string Run::snapshotText() const {
  std::string out;
  Json base = snapshotBase(/*withInput=*/false, /*withOutput=*/false);
  if (outputInJournal()) base["outputInJournal"] = true;
  WriteMerged(out, base,
              {{"output",
                [this](std::string& to) {
                  if (outputInJournal()) {
                    AppendJson(to, storedOutput());
                  } else {
                    AppendJson(to, output_);
                  }
                }},
               {"top", [this](std::string& to) {
                  if (top_ && !ended()) {
                    top_->snapshotText(to);
                  } else {
                    to += "null";
                  }
                }}});
  return out;
}

Json Run::CarryOf(const Json& snapshot) {
  if (snapshot.contains("carry") && !snapshot["carry"].is_null()) return snapshot["carry"];
  const Json top = snapshot.value("top", Json(nullptr));
  if (!top.is_object() || top.value("kind", "") != "pool") return nullptr;
  Json keys = Json::array();
  for (const auto& w : top.value("workers", Json::array())) {
    const Json actor = w.value("actor", Json::object());
    if (actor.value("kind", "") == "dispatch")
      keys.push_back({{"item", w.value("id", "")}, {"run", actor.value("run", "")}});
  }
  return {{"held", top.value("held", Json::array())}, {"keys", keys}};
}

Json Run::handOverState() const {
  const auto* pool = dynamic_cast<const PoolActor*>(top_.get());
  if (pool == nullptr || workflow_.pool == nullptr || !workflow_.pool->standing) return nullptr;
  return pool->handOverState();
}

bool Run::atBound() const {
  const auto* pool = dynamic_cast<const PoolActor*>(top_.get());
  return !ended() && pool != nullptr && workflow_.pool != nullptr && workflow_.pool->standing &&
         pool->atBound(clock_.nowMs());
}

Json Run::standing() const {
  if (workflow_.pool == nullptr || !workflow_.pool->standing) return nullptr;
  const auto* pool = dynamic_cast<const PoolActor*>(top_.get());
  if (ended() || pool == nullptr) return standingEnd_;
  return pool->standing();
}

void Run::endAtBound(const std::string& why) {
  if (ended()) return;
  standingEnd_ = standing();
  standingEnd_["bound"] = true;
  emit("bound", {{"why", why}}, "at its bound (" + why + "), and no item it took got a run");
  finish(RunStatus::kDone, nullptr,
         "at its bound (" + why +
             "), and no item it took got a run: the next run starts after "
             "a back-off");
  dirty_ = true;
}

void Run::handOver(const std::string& to, const std::string& why) {
  if (ended()) return;
  emit("handed-over", {{"to", to}, {"why", why}}, "handed over to run " + to + " (" + why + ")");
  finish(RunStatus::kDone, Json{{"handedOverTo", to}}, "handed over to run " + to + ": " + why);
  dirty_ = true;
}

void Run::dispatchedEnded(const std::string& id, const std::string& status, const Json& output,
                          const std::string& reason) {
  auto it = awaited_.find(id);
  if (it == awaited_.end()) return;
  auto* worker = dynamic_cast<DispatchActor*>(it->second);
  if (worker == nullptr) return;
  // Told once: a host that hears the end again (a store read each second, hearEnds) before the
  // worker takes it changes nothing.
  awaited_.erase(it);
  worker->later([worker, status, output, reason] { worker->ended(status, output, reason); });
}

std::vector<std::string> Run::awaited() const {
  std::vector<std::string> out;
  for (const auto& [id, worker] : awaited_) out.push_back(id);
  return out;
}

std::unique_ptr<Run> Run::Restore(const Registry& registry, const Json& snap, Clock& clock,
                                  const std::vector<Json>* journal,
                                  std::shared_ptr<Engine> engine) {
  const std::string wf = snap.at("workflow").get<std::string>();
  const WorkflowInfo* info = registry.workflow(wf);
  if (info == nullptr)
    throw NoLongerFits("the stored run is of workflow `" + wf + "`, which this runner lacks");
  auto run = std::make_unique<Run>(registry, *info, snap.at("id").get<std::string>(), clock,
                                   std::move(engine));
  run->status_ = RunStatusFrom(snap.at("status").get<std::string>());
  run->reason_ = snap.at("reason").get<std::string>();
  run->input_ = snap.at("input");
  run->home_ = snap.value("home", std::string("."));
  run->output_ = snap.at("output");
  run->agentReplies_ = snap.value("agentReplies", Json::object());
  run->dispatchedBy_ = snap.value("dispatchedBy", Json(nullptr));
  run->handOverCarry_ = snap.value("carry", Json(nullptr));
  run->standingEnd_ = snap.value("standing", Json(nullptr));
  run->assembly_ = snap.value("assembly", "");
  // A run restored with its journal goes on keeping one.
  run->journaling_ = journal != nullptr && snap.value("journal", false);
  run->restoringJournal_ = journal;
  if (!snap.at("top").is_null()) {
    // The workflow's top as this build has it: a run saved with another (a Pool where the build
    // runs a machine, another machine) cannot go on as this workflow (`jr2c diff`'s D0701).
    const Json& top = snap.at("top");
    const std::string kind = top.at("kind").get<std::string>();
    const std::string name = top.at("name").get<std::string>();
    const bool fits = info->pool != nullptr
                          ? kind == "pool" && name == info->pool->name
                          : kind == "machine" && registry.machine(name) == info->machine;
    if (!fits) {
      throw NoLongerFits("the stored run of workflow `" + wf + "` runs " + kind + " `" + name +
                         "`, and this build's `" + wf + "` runs " +
                         (info->pool != nullptr ? "pool `" + info->pool->name + "`"
                          : kind == "machine"   ? std::string("another machine")
                                                : std::string("a machine")) +
                         ": it no longer fits (`jr2c diff` says so beforehand as D0701)");
    }
    run->top_ = Actor::Restore(*run, nullptr, top);
  }
  run->restoringJournal_ = nullptr;
  // The Gates are open again: their refused picks go on from where they were (none stored by a
  // runtime before issue #30: a count of 0, as then).
  const Json refused = snap.value("refusedPicks", Json::object());
  for (const auto& [name, count] : refused.items()) {
    auto it = run->gates_.find(name);
    if (it != run->gates_.end() && it->second.kind == OpenGate::Kind::kAgent &&
        count.is_number_integer())
      it->second.refusedPicks = std::max(0, count.get<int>());
  }
  return run;
}

Json MenuJson(const OpenGate& gate) {
  Json menu = Json::array();
  for (const EventSpec& e : gate.accepts) {
    const char* audience = e.audience == EventSpec::Audience::kAgent      ? "agent"
                           : e.audience == EventSpec::Audience::kExternal ? "external"
                           : e.audience == EventSpec::Audience::kAny      ? "any"
                                                                          : "unset";
    Json schema = e.schema.empty() ? Json(nullptr) : Json::parse(e.schema, nullptr, false);
    if (schema.is_discarded()) schema = nullptr;  // not JSON: a defect of the generator, not shown
    menu.push_back({{"event", e.name},
                    {"audience", audience},
                    {"description", e.description},
                    {"schema", std::move(schema)}});
  }
  return menu;
}

}  // namespace jr2rt
