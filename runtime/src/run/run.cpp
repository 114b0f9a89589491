// The run host: actors for machines and Pools, Gates, timers and the standard library's
// Sources and effects. RUNTIME.md §2 fixes the Pool's rules; each is marked here as (§2.N).

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
#include "jr2/source.h"
#include "jr2/stdlib.h"
#include "run/agents.h"
#include "run/engine.h"

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

namespace {
// Empties a JSON value from its leaves up, a few levels deep, before it is destroyed: nlohmann's
// destructor moves the members of an object or list that has any onto a heap vector of its own (a
// malloc, and a realloc as it grows), which was three of a Pool item's mallocs (the Source's
// answer, the worker's input). Below kDepth levels the destructor does the rest as before, so a
// hostile item nested 10,000 deep costs no stack here.
void Dismantle(Json& j, int depth = 0) {
  constexpr int kDepth = 4;
  if (depth >= kDepth || !j.is_structured() || j.empty()) return;
  for (Json& member : j) Dismantle(member, depth + 1);
  j.clear();  // the members are leaves or empty now: no vector is made for them
}

std::string Join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// What is wrong with an item id (§2.4), or "": a Pool starts no worker under such an id.
std::string IdProblem(const std::string& id) {
  if (id.empty()) return "is empty";
  // A NUL cannot be passed in a command's arguments: that item's Gates could never be answered.
  if (id.find('\0') != std::string::npos) return "contains a NUL character";
  if (id.find('.') != std::string::npos) return "contains `.` (ids name Gates: `<id>.<state>`)";
  if (id == "source") return "is `source`, the name of the Pool's own Gate";
  return "";
}

// A stable fingerprint of a text (64-bit FNV-1a, hex): what a run keeps of an item it skipped.
std::string Fingerprint(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  static const char* hex = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) out[static_cast<size_t>(i)] = hex[h & 15];
  return out;
}
}  // namespace

// ---- actors --------------------------------------------------------------------------------

// One node of the run's tree. Its parent hears its end through childDone / childFailed; the top
// actor's end is the run's.
class Actor {
 public:
  Actor(Run& run, Actor* parent, int key, std::string prefix)
      : run_(run), parent_(parent), key_(key), prefix_(std::move(prefix)) {}
  virtual ~Actor() = default;

  // Posts `fn` to run on this actor later, unless the actor is gone by then (a cancelled child,
  // a settled worker): a task never touches a deleted actor.
  template <typename F>
  void later(F&& fn) {
    std::weak_ptr<int> alive = token();
    run_.post([alive, fn = std::forward<F>(fn)]() mutable {
      if (!alive.expired()) fn();
    });
  }

  virtual void start(const Json& input) = 0;
  virtual void deliver(int invokeId, const std::string& event, const Json& payload) = 0;
  virtual void timer(int id) = 0;
  virtual void childDone(int key, Json output) = 0;  // by value: a Pool keeps it
  virtual void childFailed(int key, const Failure& failure) = 0;
  virtual void stop() = 0;
  virtual Json snapshot() const = 0;
  // What the actor has done so far, for `status` and a cancel: a Pool's settled items, its
  // failures and live workers; null for a machine.
  virtual Json sofar() const { return nullptr; }
  // What a cancel keeps of the actor: a Pool's sofar() (its settled items, failures and live
  // workers); a machine's children that kept anything, at every depth, as `{"children": {NAME:
  // kept}}` (NAME the invoke's `as` name, else its state's path); null when nothing was done.
  virtual Json kept() const {
    Json out = sofar();
    if (out.is_object()) out.erase("open");
    return out;
  }
  // Where the actor is, for the observation (Run::observe): `{kind, value, children}`, never
  // its context, input or output.
  virtual Json observe() const = 0;
  // Appends the effects of this actor and those below it that are out now and would not be run
  // again by a restore (not idempotent), each as resumeEffect names them (Run::effectsOut).
  virtual void effectsOut(std::vector<std::string>& out) const { (void)out; }
  // Checks an event and its payload before delivery (throws BadInput).
  virtual void check(int invokeId, const std::string& event, const Json& payload) const = 0;
  // Checks an input as start() would read it, changing nothing (throws SchemaError).
  virtual void checkInput(const Json& input) const = 0;

  static std::unique_ptr<Actor> Restore(Run& run, Actor* parent, const Json& snap);

  // A `dispatch` worker of this Pool got a run for an item the Pool took (started it, or found
  // it under its key): a standing Pool's hand-over counts on it (RUNTIME.md §3).
  virtual void itemGotRun() {}

  const Actor* parent() const { return parent_; }
  int key() const { return key_; }
  // The path of the state that started timer `id` or invoke `id` ("" for the actor as a whole:
  // a Pool, a machine's body).
  virtual std::string timerState(int id) const {
    (void)id;
    return {};
  }
  virtual std::string invokeState(int id) const {
    (void)id;
    return {};
  }
  // The invoke `id` of this actor (a Gate's meta and Agent slot), or null.
  virtual const InvokeSpec* invokeSpec(int id) const {
    (void)id;
    return nullptr;
  }

 protected:
  // Runs one step of this actor: its Failure ends it, and its parent (or the run) hears of it.
  void step(const std::function<void()>& fn) {
    if (ended_) return;
    try {
      fn();
    } catch (const Failure& f) {
      fail(f);
    }
  }
  void complete(Json output) {
    if (ended_) return;
    ended_ = true;
    stop();
    if (parent_ != nullptr) {
      Actor* parent = parent_;
      const int key = key_;
      parent->later([parent, key, output = std::move(output)]() mutable {
        parent->childDone(key, std::move(output));
      });
    } else {
      run_.finish(RunStatus::kDone, std::move(output), "");
    }
  }
  void fail(const Failure& f) {
    if (ended_) return;
    ended_ = true;
    stop();
    if (parent_ != nullptr) {
      Actor* parent = parent_;
      const int key = key_;
      parent->later([parent, key, copy = f] { parent->childFailed(key, copy); });
    } else {
      run_.finish(RunStatus::kFailed, f.detail(), f.reason());
    }
  }

  Run& run_;
  Actor* parent_;
  int key_;
  std::string prefix_;
  bool ended_ = false;
  // The liveness token that tasks posted for this actor hold weakly: made when one is first
  // posted (a worker that finishes at once never needs one), gone with the actor.
  std::weak_ptr<int> token() {
    if (!alive_) alive_ = std::make_shared<int>(0);
    return alive_;
  }
  friend class Run;

 private:
  std::shared_ptr<int> alive_;
};

namespace {

std::vector<EventSpec> Accepted(const std::vector<EventSpec>& all, bool agent) {
  std::vector<EventSpec> out;
  for (const auto& e : all) {
    const bool ok =
        e.audience == EventSpec::Audience::kAny || e.audience == EventSpec::Audience::kUnset ||
        e.audience == (agent ? EventSpec::Audience::kAgent : EventSpec::Audience::kExternal);
    if (ok) out.push_back(e);
  }
  return out;
}

// The events a Gate that machine `m` opens in state `statePath` takes: those a transition of
// that state, an ancestor or a descendant handles (an event handled in another state would be
// taken and do nothing; one of a descendant is taken only while a state that handles it is
// active: MachineActor::check), for its audience. The same for every instance of the machine's
// class, so computed once per (class, state, audience) and shared: a parked worker holds a pointer.
std::shared_ptr<const std::vector<EventSpec>> AcceptedAt(const Machine& m,
                                                         const std::string& statePath, bool agent) {
  using Key = std::tuple<std::type_index, std::string, bool>;
  static std::mutex mutex;
  static std::map<Key, std::shared_ptr<const std::vector<EventSpec>>> cache;
  Key key{std::type_index(typeid(m)), statePath, agent};
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  const std::vector<EventSpec> all = m.eventSpecs();
  std::vector<EventSpec> handled;
  for (int id : m.eventsHandledAt(statePath)) {
    if (id >= 0 && id < static_cast<int>(all.size()))
      handled.push_back(all[static_cast<size_t>(id)]);
  }
  auto accepts = std::make_shared<const std::vector<EventSpec>>(Accepted(handled, agent));
  const std::lock_guard<std::mutex> lock(mutex);
  return cache.emplace(std::move(key), std::move(accepts)).first->second;
}

// A snapshot is built at every settle that is stored, so its objects are built member by
// member: nlohmann's initializer list makes a two-element array per member and deep-copies every
// lvalue in it (a Pool's workers, a machine's children), which was most of a durable settle's
// cost (#15, docs/performance.md).
class Obj {
 public:
  Obj& operator()(const char* key, Json value) & {
    json_.emplace(key, std::move(value));
    return *this;
  }
  Obj&& operator()(const char* key, Json value) && {
    json_.emplace(key, std::move(value));
    return std::move(*this);
  }
  operator Json() && { return std::move(json_); }  // NOLINT(google-explicit-constructor)

 private:
  Json json_ = Json::object();
};

Json SpecJson(const InvokeSpec& s) {
  return Obj()("kind", static_cast<int>(s.kind))("id", s.id)("target", s.target)("name", s.name)(
      "state", s.statePath)("input", s.input);
}
InvokeSpec SpecFrom(const Json& j) {
  InvokeSpec s;
  s.kind = static_cast<InvokeSpec::Kind>(j.at("kind").get<int>());
  s.id = j.at("id").get<int>();
  s.target = j.at("target").get<std::string>();
  s.name = j.at("name").get<std::string>();
  s.statePath = j.at("state").get<std::string>();
  s.input = j.at("input");
  return s;
}

}  // namespace

class PoolActor;

// A generated machine, and the host it runs on.
class MachineActor final : public Actor, public MachineHost {
 public:
  MachineActor(Run& run, Actor* parent, int key, std::string prefix, const std::string& machine)
      : MachineActor(run, parent, key, std::move(prefix), Resolve(run, machine)) {}
  // A machine class looked up once (a Pool's worker): its registered name and factory.
  struct Class {
    const std::string* name;
    MachineFactory make;
  };
  static Class Resolve(Run& run, const std::string& machine) {
    Class c{run.registry().machineName(machine), run.registry().machine(machine)};
    if (c.make == nullptr || c.name == nullptr)
      throw Defect("no machine `" + machine + "` is registered with this runner");
    return c;
  }
  MachineActor(Run& run, Actor* parent, int key, std::string prefix, const Class& c)
      : Actor(run, parent, key, std::move(prefix)), name_(c.name), m_(c.make()) {}

  void start(const Json& input) override {
    step([&] {
      m_->start(*this, input);
      after();
    });
  }

  std::string timerState(int id) const override { return m_->timerState(id); }
  void checkInput(const Json& input) const override { m_->checkInput(input); }
  std::string invokeState(int id) const override {
    auto it = children_.find(id);
    return it == children_.end() ? std::string() : it->second.spec.statePath;
  }
  const InvokeSpec* invokeSpec(int id) const override {
    auto it = children_.find(id);
    return it == children_.end() ? nullptr : &it->second.spec;
  }

  void check(int, const std::string& event, const Json& payload) const override {
    const int id = m_->eventId(event);
    if (id < 0) throw BadInput("machine `" + *name_ + "` takes no event `" + event + "`");
    if (!m_->handlesNow(id)) {
      // A Gate on a compound state takes the events of the states below it while they are
      // active; this one is not, now.
      std::string where;
      for (const auto& path : m_->statesHandling(id)) where += (where.empty() ? "" : ", ") + path;
      std::string now;
      for (const auto& path : m_->activeStates()) now = path;  // the innermost comes last
      throw BadInput("`" + event + "` is taken only in " + (where.empty() ? "no state" : where) +
                     ", and machine `" + *name_ + "` is in " + (now.empty() ? "its root" : now) +
                     " now; answer with an event that state takes");
    }
    try {
      m_->checkPayload(id, payload);
    } catch (const std::exception& e) {
      throw BadInput("the payload of `" + event + "` does not fit: " + e.what());
    }
  }

  Json kept() const override {
    Json children = Json::object();
    for (const auto& [key, c] : children_) {
      if (!c.actor) continue;
      Json k = c.actor->kept();
      if (!k.is_null())
        children[c.spec.name.empty() ? c.spec.statePath : c.spec.name] = std::move(k);
    }
    if (children.empty()) return nullptr;
    return {{"children", std::move(children)}};
  }

  void deliver(int, const std::string& event, const Json& payload) override {
    step([&] {
      m_->dispatch({Event::Kind::kExternal, m_->eventId(event), payload});
      after();
    });
  }

  void timer(int id) override {
    // A timer cancelled after it fell due (an earlier timer's transition left its state) is
    // not delivered; nor is one re-armed since, whose new deadline has not come.
    const auto armed = timers_.find(id);
    if (armed == timers_.end() || armed->second.due > run_.clock().nowMs()) return;
    const int64_t afterMs = armed->second.after;
    timers_.erase(armed);
    run_.timerFired(Join(prefix_, m_->timerState(id)), afterMs);
    step([&] {
      m_->dispatch({Event::Kind::kTimer, id, nullptr});
      after();
    });
  }

  void childDone(int key, Json output) override {
    step([&] {
      if (children_.erase(key) == 0) return;  // cancelled meanwhile
      m_->dispatch({Event::Kind::kDone, key, output});
      after();
    });
  }

  void childFailed(int key, const Failure& f) override {
    step([&] {
      if (children_.erase(key) == 0) return;
      const bool handled = m_->dispatch(
          {Event::Kind::kError, key, {{"reason", f.reason()}, {"detail", f.detail()}}});
      // An unhandled `on error` is this machine's Failure too (RUNTIME.md §2.5).
      if (!handled) throw Failure(f.reason(), f.detail());
      after();
    });
  }

  void stop() override {
    for (auto& [id, child] : children_) closeChild(child);
    children_.clear();
    for (const auto& [t, armed] : timers_) run_.unschedule(this, t);
    timers_.clear();
  }

  Json observe() const override {
    Json children = Json::array();
    for (const auto& [id, c] : children_) {
      Json child;
      if (c.actor) {
        child = c.actor->observe();
      } else {
        child = {{"kind", c.spec.kind == InvokeSpec::Kind::kGate    ? "gate"
                          : c.spec.kind == InvokeSpec::Kind::kAgent ? "agent"
                                                                    : "effect"},
                 {"value", Json::array()},
                 {"children", Json::array()}};
      }
      child["id"] =
          c.spec.kind == InvokeSpec::Kind::kGate || c.spec.kind == InvokeSpec::Kind::kAgent
              ? gateName(c.spec)
              : Join(prefix_, c.spec.name.empty() ? c.spec.target : c.spec.name);
      children.push_back(std::move(child));
    }
    return {{"kind", "machine"}, {"value", m_->activeStates()}, {"children", children}};
  }

  void effectsOut(std::vector<std::string>& out) const override {
    for (const auto& [id, c] : children_) {
      if (c.actor) {
        c.actor->effectsOut(out);
      } else if ((c.spec.kind == InvokeSpec::Kind::kExtern ||
                  c.spec.kind == InvokeSpec::Kind::kStd) &&
                 !Idempotent(run_.registry(), c.spec.target)) {
        out.push_back(effectName(c.spec));
      }
    }
  }

  Json snapshot() const override {
    Json children = Json::array();
    for (const auto& [id, c] : children_) {
      children.push_back(
          Obj()("spec", SpecJson(c.spec))("actor", c.actor ? c.actor->snapshot() : Json(nullptr)));
    }
    Json timers = Json::array();
    for (const auto& [t, armed] : timers_) {
      Obj timer;
      timer("id", t)("due", armed.due);
      if (armed.after >= 0) timer("after", armed.after);
      timers.push_back(std::move(timer));
    }
    return Obj()("kind", "machine")("name", *name_)("key", key_)("prefix", prefix_)(
        "state", m_->snapshot())("children", std::move(children))("timers", std::move(timers))(
        "ended", ended_);
  }

  void restoreFrom(const Json& snap) {
    m_->restore(*this, snap.at("state"));
    ended_ = snap.at("ended").get<bool>();
    for (const auto& c : snap.at("children")) {
      const InvokeSpec spec = SpecFrom(c.at("spec"));
      Child child{spec, nullptr, nullptr};
      if (!c.at("actor").is_null()) child.actor = Actor::Restore(run_, this, c.at("actor"));
      children_.emplace(spec.id, std::move(child));
      openIfGate(spec);
      if (spec.kind == InvokeSpec::Kind::kExtern || spec.kind == InvokeSpec::Kind::kStd) {
        resumeEffect(spec.id, spec.target, spec.input);
      }
    }
    for (const auto& t : snap.at("timers")) {
      const int id = t.at("id").get<int>();
      const Armed armed{t.at("due").get<int64_t>(),
                        t.contains("after") ? t.at("after").get<int64_t>() : -1};
      timers_[id] = armed;
      run_.schedule(this, id, armed.due);
    }
  }

  // ---- MachineHost ---------------------------------------------------------------------------
  void startTimer(int id, Duration after) override {
    const Armed armed{run_.clock().nowMs() + after.ms, after.ms};
    timers_[id] = armed;
    run_.schedule(this, id, armed.due);
  }
  void cancelTimer(int id) override {
    timers_.erase(id);
    run_.unschedule(this, id);
  }
  void startInvoke(const InvokeSpec& spec) override;
  void cancelInvoke(int id) override {
    auto it = children_.find(id);
    if (it == children_.end()) return;
    closeChild(it->second);
    children_.erase(it);
  }
  void log(const Json& value) override {
    run_.emit("log", {{"machine", Join(prefix_, *name_)}, {"value", value}},
              Join(prefix_, *name_) + ": " +
                  (value.is_string() ? value.get<std::string>() : value.dump()));
  }

 private:
  struct Child {
    InvokeSpec spec;
    std::unique_ptr<Actor> actor;
    std::shared_ptr<EffectControl> effect;  // a host function's or a process's
  };

  static bool Idempotent(const Registry& registry, const std::string& target);
  // Sends out the effect of child `id` (a host function or a std effect).
  void launchEffect(int id, const std::string& target, const Json& input);
  // A restored run found child `id`'s effect out with no result: run again when idempotent,
  // else the child fails `interrupted`.
  void resumeEffect(int id, const std::string& target, const Json& input);

  // An effect as `status` names it when it was out at a save: `WHERE: TARGET`.
  std::string effectName(const InvokeSpec& spec) const {
    std::string what = Join(prefix_, spec.name.empty() ? spec.statePath : spec.name);
    return what + (what.empty() ? "" : ": ") + spec.target;
  }

  std::string gateName(const InvokeSpec& spec) const {
    return Join(prefix_, spec.name.empty() ? spec.statePath : spec.name);
  }

  void openIfGate(const InvokeSpec& spec) {
    if (spec.kind != InvokeSpec::Kind::kGate && spec.kind != InvokeSpec::Kind::kAgent) return;
    OpenGate g;
    g.name = gateName(spec);
    g.kind = spec.kind == InvokeSpec::Kind::kAgent ? OpenGate::Kind::kAgent : OpenGate::Kind::kGate;
    // Its meta and Agent slot stay in `spec` (Run::shown reads them through invokeSpec).
    run_.openGate(std::move(g),
                  AcceptedAt(*m_, spec.statePath, spec.kind == InvokeSpec::Kind::kAgent), this,
                  spec.id);
  }

  void closeChild(Child& c) {
    if (c.spec.kind == InvokeSpec::Kind::kGate || c.spec.kind == InvokeSpec::Kind::kAgent) {
      run_.closeGate(gateName(c.spec));
    }
    if (c.actor) c.actor->stop();
    if (c.effect) c.effect->cancel();  // held: never starts; a process: killed
  }

  void after() {
    if (m_->isDone()) complete(m_->output());
  }

  const std::string* name_;  // the registry's copy: a parked worker keeps no name of its own
  std::unique_ptr<Machine> m_;
  std::map<int, Child> children_;
  // The armed timers: when each falls due, and its `after` (what is told when it fires; -1 when
  // a restored snapshot did not say). One map, not three: a parked worker holds it.
  struct Armed {
    int64_t due;
    int64_t after;
  };
  std::map<int, Armed> timers_;
};

// A Pool of child Machines over a Source (ADR-0017, RUNTIME.md §2).
// A `dispatch` worker of a Pool of runs (RUNTIME.md §3): its item is a run of another workflow,
// keyed by the item's id, started (or found under its key) through the host's door. It holds
// no state of the run's: it waits for the host to say that the run ended. A cancel of the Pool
// never cancels the run.
class DispatchActor final : public Actor {
 public:
  DispatchActor(Run& run, Actor* parent, int key, std::string prefix, std::string workflow,
                std::string item, std::string pool)
      : Actor(run, parent, key, std::move(prefix)),
        workflow_(std::move(workflow)),
        item_(std::move(item)),
        pool_(std::move(pool)) {}

  void start(const Json& input) override {
    Dispatcher* door = run_.dispatcher();
    if (door == nullptr) {
      return refuse("dispatch-error",
                    "nothing here starts runs of `" + workflow_ +
                        "`: a Pool of runs runs under a run host (`serve`, or the runner)");
    }
    Dispatched got;
    try {
      got = door->dispatch(workflow_, item_, input,
                           {{"run", run_.id()}, {"pool", pool_}, {"key", item_}});
    } catch (const BadInput& e) {
      return refuse("start-refused", e.what());
    } catch (const Failure& f) {
      return refuse("dispatch-error", f.reason());
    } catch (const std::runtime_error& e) {
      return refuse("dispatch-error", ErrorText(e));
    }
    run_id_ = got.run;
    if (parent_ != nullptr) parent_->itemGotRun();
    run_.emit("dispatched",
              {{"item", item_}, {"pool", pool_}, {"run", run_id_}, {"existing", got.existing}},
              item_ + ": run " + run_id_ + " of " + workflow_ +
                  (got.existing ? " holds its key already" : " started"));
    follow(got);
  }

  // The host says the run ended.
  void ended(const std::string& status, const Json& output, const std::string& reason) {
    run_.unawait(run_id_);
    if (status == "done") return complete(output);
    fail(Failure("run " + run_id_ + " of " + workflow_ + " ended " + status +
                     (reason.empty() ? "" : ": " + reason),
                 {{"run", run_id_}, {"status", status}, {"mark", "settled"}}));
  }

  void deliver(int, const std::string&, const Json&) override {}
  void timer(int) override {}
  void childDone(int, Json) override {}
  void childFailed(int, const Failure&) override {}
  void stop() override {
    if (!run_id_.empty()) run_.unawait(run_id_);
  }
  void check(int, const std::string& event, const Json&) const override {
    throw BadInput("the worker of item " + item_ + " is a run of its own; it takes no `" + event +
                   "` here");
  }
  void checkInput(const Json&) const override {}  // the callee's door checks it

  Json snapshot() const override {
    return Obj()("kind", "dispatch")("key", key_)("prefix", prefix_)("name", workflow_)(
        "item", item_)("pool", pool_)("run", run_id_);
  }
  void restoreFrom(const Json& snap) {
    run_id_ = snap.value("run", "");
    if (run_id_.empty()) return;
    // Where the run is now (it may have ended while nobody hosted this one).
    run_.await(run_id_, this);
    later([this] {
      Dispatcher* door = run_.dispatcher();
      if (door == nullptr) return;
      if (auto got = door->find(workflow_, item_); got && got->run == run_id_) follow(*got);
    });
  }
  Json observe() const override {
    return {{"kind", "run"}, {"value", Json::array()}, {"children", Json::array()}};
  }
  const std::string& runId() const { return run_id_; }

 private:
  void follow(const Dispatched& got) {
    if (got.status == "waiting") {
      run_.await(run_id_, this);
      return;
    }
    const Dispatched copy = got;
    later([this, copy] { ended(copy.status, copy.output, copy.reason); });
  }
  void refuse(const std::string& mark, const std::string& why) {
    fail(Failure(mark + ": " + why, {{"run", nullptr}, {"status", nullptr}, {"mark", mark}}));
  }

  std::string workflow_;
  std::string item_;
  std::string pool_;
  std::string run_id_;
};

class PoolActor final : public Actor {
 public:
  PoolActor(Run& run, Actor* parent, int key, std::string prefix, const PoolSpec& spec)
      : Actor(run, parent, key, std::move(prefix)), spec_(spec) {}

  void start(const Json& given) override {
    try {
      input_ = spec_.parseInput(given);
    } catch (const SchemaError& e) {
      throw BadInput(std::string("the input of pool `") + spec_.name +
                     "` does not fit: " + e.what());
    }
    // `cap` is read once, at start (§2.3).
    cap_ = spec_.cap ? spec_.cap(input_) : 1;
    if (cap_ < 1) {
      throw BadInput("pool `" + spec_.name + "` has `cap` " + std::to_string(cap_) +
                     " for this input, and a Pool needs at least 1");
    }
    if (!spec_.source.wake.empty()) openWakeGate();
    startedMs_ = run_.clock().nowMs();
    if (spec_.standing && run_.carried().is_object()) {
      streak_ = run_.carried().value("streak", int64_t{0});
      takeOver(run_.carried());
    }
    request();
  }

  void checkInput(const Json& input) const override { spec_.parseInput(input); }

  // ---- hand-over (a standing Pool, RUNTIME.md §3) --------------------------------------------
  // What a new run takes of this one: the held items, in order, and the active keys (each live
  // `dispatch` worker's item and run).
  Json handOverState() const {
    Json keys = Json::array();
    for (const auto& [k, w] : workers_) {
      if (const auto* d = dynamic_cast<const DispatchActor*>(w.actor.get()))
        keys.push_back({{"item", *w.id}, {"run", d->runId()}});
    }
    return {{"held", Json(std::vector<Json>(held_.begin(), held_.end()))}, {"keys", keys}};
  }
  // Items this run took itself (a carried key is not one), and when it started: at 500 items or
  // a day, it is handed over.
  bool atBound(int64_t nowMs) const {
    return taken_ >= kStandingBoundItems || nowMs - startedMs_ >= kStandingBoundMs;
  }
  // For the head of its standing workflow: when it started, the counted runs in a row before it
  // (`streak`), the items it took and how many of those got a run (`ran`).
  Json standing() const {
    return {{"startedMs", startedMs_}, {"streak", streak_}, {"taken", taken_}, {"ran", ran_}};
  }
  void itemGotRun() override { ++ran_; }

 private:
  // Takes what the run before handed over: each active key again (it finds its run: the wait
  // follows it, and `cap` counts it), then the held items, parsed by this build's item id (one
  // that does not parse is dropped with a `carry-refused` mark).
  void takeOver(const Json& carried) {
    for (const auto& k : carried.value("keys", Json::array())) {
      const std::string id = k.value("item", "");
      const std::string runId = k.value("run", "");
      if (id.empty() || runId.empty() || liveIds_.count(id) != 0) continue;
      const int key = nextKey_++;
      auto worker = std::make_unique<DispatchActor>(run_, this, key, Join(prefix_, id),
                                                    spec_.worker, id, prefix_);
      DispatchActor* raw = worker.get();
      enlist(key, id, std::move(worker));
      raw->restoreFrom({{"run", runId}});
    }
    for (const auto& item : carried.value("held", Json::array())) {
      std::string id;
      try {
        id = spec_.itemId(item, input_);
      } catch (const std::exception& e) {
        run_.emit("carry-refused", {{"pool", prefix_}, {"item", item}, {"reason", ErrorText(e)}},
                  "a held item was dropped at the hand-over: " + ErrorText(e));
        continue;
      }
      if (heldIds_.count(id) != 0 || liveIds_.count(id) != 0) continue;
      held_.push_back(item);
      heldIds_.insert(id);
    }
    run_.emit("taken-over", {{"pool", prefix_}, {"held", held_.size()}, {"keys", workers_.size()}},
              "took over " + std::to_string(held_.size()) + " held items and " +
                  std::to_string(workers_.size()) + " live runs");
  }

 public:
  void check(int, const std::string& event, const Json& payload) const override {
    if (event != spec_.source.wake) {
      throw BadInput("the Gate `" + Join(prefix_, "source") + "` takes only `" + spec_.source.wake +
                     "`");
    }
    if (!spec_.source.checkWake) return;
    try {
      spec_.source.checkWake(payload.is_null() ? Json::object() : payload);
    } catch (const SchemaError& e) {
      throw BadInput("the payload of `" + event + "` does not fit: " + e.what());
    }
  }

  // The `source` Gate: the wake event (§2.2: never cancels a call; latches instead).
  void deliver(int, const std::string&, const Json&) override {
    run_.emit("woken", {{"gate", Join(prefix_, "source")}}, Join(prefix_, "source") + ": woken");
    request();
  }

  void timer(int) override {
    if (!pollArmed_) return;
    pollArmed_ = false;
    request();
  }

  void childDone(int key, Json output) override {
    auto it = workers_.find(key);
    if (it == workers_.end()) return;
    const std::string id = *it->second.id;
    if (journaled()) run_.journal({{"settled", id}, {"output", output}});
    items_[id] = std::move(output);
    settle(id, false);
    retire(it);
    if (!run_.heard()) {
    } else if (spec_.dispatch) {
      run_.emit("settled", {{"item", id}, {"pool", prefix_}, {"status", "done"}},
                id + " settled: its run ended done");
    } else {
      run_.emit("settled", {{"item", id}, {"pool", prefix_}}, id + " settled");
    }
    if (spec_.standing) forgetOutput(id);
    request();
  }

  void childFailed(int key, const Failure& f) override {
    auto it = workers_.find(key);
    if (it == workers_.end()) return;
    const std::string id = *it->second.id;
    // A worker's Failure ends only its item (§2.5).
    failures_[id] = {{"reason", f.reason()}, {"detail", f.detail()}};
    if (journaled()) run_.journal({{"failed", id}, {"failure", failures_[id]}});
    settle(id, true);
    retire(it);
    if (spec_.dispatch) {
      // A Pool of runs: the run's end (or a start refused) fails the item, never the Pool.
      const std::string mark =
          f.detail().is_object() ? f.detail().value("mark", "settled") : std::string("settled");
      run_.emit(mark,
                {{"item", id},
                 {"pool", prefix_},
                 {"status", f.detail().is_object() ? f.detail().value("status", Json(nullptr))
                                                   : Json(nullptr)},
                 {"reason", f.reason()}},
                id + " " + (mark == "settled" ? "settled" : mark) + ": " + f.reason());
    } else {
      run_.emit("failed", {{"item", id}, {"pool", prefix_}, {"reason", f.reason()}},
                id + " failed: " + f.reason());
    }
    if (spec_.standing) forgetOutput(id);
    request();
  }

  // A standing Pool has no output: what an item gave is on the feed, and only its id is kept
  // (known for the rest of the run, so a poison item never loops).
  void forgetOutput(const std::string& id) {
    items_.erase(id);
    failures_.erase(id);
  }

  void stop() override {
    for (auto& [k, w] : workers_) w.actor->stop();
    if (wakeOpen_) run_.closeGate(Join(prefix_, "source"));
    wakeOpen_ = false;
    if (pollArmed_) run_.unschedule(this, 0);
    pollArmed_ = false;
  }

  Json snapshot() const override {
    Json workers = Json::array();
    for (const auto& [k, w] : workers_) {
      workers.push_back(Obj()("key", k)("id", *w.id)("actor", w.actor->snapshot()));
    }
    Json skipped = Json::array();
    for (const auto& s : skipped_) skipped.push_back(s);
    Json held = Json::array();
    for (const auto& h : held_) held.push_back(h);
    return Obj()("kind", "pool")("name", spec_.name)("key", key_)("prefix", prefix_)(
        "input", input_)("cap", cap_)("workers", std::move(workers))(
        "settled", journaled() ? Json::array() : Json(*settled_))(
        "failed", journaled() ? Json::array() : Json(*failed_))(
        "items", journaled() ? Json::object() : items_)("failures",
                                                        journaled() ? Json::object() : failures_)(
        "journaled", journaled() ? Json(settled_->size()) : Json(nullptr))("open", lastOpen_)(
        "nextKey", nextKey_)("ended", ended_)("calling", inFlight_ || latch_)(
        "skipped", std::move(skipped))("held", std::move(held))("taken", taken_)("ran", ran_)(
        "streak", streak_)("startedMs", startedMs_)("pollDue",
                                                    pollArmed_ ? Json(pollDue_) : Json(nullptr));
  }

  void effectsOut(std::vector<std::string>& out) const override {
    for (const auto& [key, w] : workers_) w.actor->effectsOut(out);
  }

  Json observe() const override {
    Json children = Json::array();
    for (const auto& [key, w] : workers_) {
      Json child = w.actor->observe();
      child["id"] = *w.id;
      children.push_back(std::move(child));
    }
    return {{"kind", "pool"}, {"value", Json::array()}, {"children", children}};
  }

  Json sofar() const override {
    Json live = Json::array();
    for (const auto& id : live_->slots) {
      if (!id.empty()) live.push_back(id);
    }
    Json out = {{"items", items_}, {"failures", failures_}, {"live", live}, {"open", lastOpen_}};
    if (spec_.standing) {
      // A standing Pool forgets each item's output once it settled (forgetOutput): its counts
      // are kept instead, for `status`'s `so far`.
      const auto failed = static_cast<int64_t>(failed_->size());
      out["settledCount"] = static_cast<int64_t>(settled_->size()) - failed;
      out["failedCount"] = failed;
    }
    return out;
  }

  void restoreFrom(const Json& snap) {
    input_ = snap.at("input");
    cap_ = snap.at("cap").get<int64_t>();
    settled_ = std::make_shared<std::vector<std::string>>(
        snap.at("settled").get<std::vector<std::string>>());
    failed_ = std::make_shared<std::vector<std::string>>(
        snap.at("failed").get<std::vector<std::string>>());
    settledSet_.insert(settled_->begin(), settled_->end());
    items_ = snap.at("items");
    failures_ = snap.at("failures");
    lastOpen_ = snap.at("open").get<int64_t>();
    if (snap.contains("skipped")) {
      for (const auto& k : snap.at("skipped")) skipped_.insert(k.get<std::string>());
    }
    nextKey_ = snap.at("nextKey").get<int>();
    ended_ = snap.at("ended").get<bool>();
    taken_ = snap.value("taken", int64_t{0});
    ran_ = snap.value("ran", int64_t{0});
    streak_ = snap.value("streak", int64_t{0});
    startedMs_ = snap.value("startedMs", int64_t{0});
    if (snap.contains("held")) {
      for (const auto& item : snap.at("held")) {
        held_.push_back(item);
        heldIds_.insert(spec_.itemId(item, input_));
      }
    }
    for (const auto& w : snap.at("workers")) {
      enlist(w.at("key").get<int>(), w.at("id").get<std::string>(),
             Actor::Restore(run_, this, w.at("actor")));
    }
    // After the live workers: an entry that settles a live item is damage.
    if (snap.contains("journaled") && !snap.at("journaled").is_null()) readJournal(snap);
    if (spec_.standing) {
      // A standing Pool keeps no output (forgetOutput): only the ids, known for its run's life.
      items_ = Json::object();
      failures_ = Json::object();
    }
    if (!ended_ && !spec_.source.wake.empty()) openWakeGate();
    // A call that was out when the run was saved is made again (it is never lost).
    if (snap.value("calling", false) && !ended_) later([this] { request(); });
    if (!snap.at("pollDue").is_null()) {
      pollArmed_ = true;
      pollDue_ = snap.at("pollDue").get<int64_t>();
      run_.schedule(this, 0, pollDue_);
    }
  }

 private:
  struct Worker {
    const std::string* id;  // the key of its `liveIds_` entry: one copy of the id, not two
    std::unique_ptr<Actor> actor;
  };

  void openWakeGate() {
    OpenGate g;
    g.name = Join(prefix_, "source");
    g.kind = OpenGate::Kind::kSource;
    EventSpec wake = spec_.source.wakeSpec;
    if (wake.name.empty()) {
      wake.name = spec_.source.wake;
      wake.audience = EventSpec::Audience::kExternal;
    }
    run_.openGate(std::move(g), std::make_shared<const std::vector<EventSpec>>(1, wake), this, -1);
    wakeOpen_ = true;
  }

  // Calls `next` (or reads) unless a call is in flight (then latch, §2.2) or `cap` workers run
  // (§2.3).
  void request() {
    if (ended_) return;
    if (inFlight_) {
      latch_ = true;
      return;
    }
    if (static_cast<int64_t>(workers_.size()) >= cap_) return;
    if (spec_.source.form == SourceSpec::Form::kRead) return read();
    if (spec_.source.form == SourceSpec::Form::kPush) return claimHeld();
    // The Pool polls only while it waits: a call going out ends that wait.
    if (pollArmed_) {
      run_.unschedule(this, 0);
      pollArmed_ = false;
    }
    inFlight_ = true;
    latch_ = false;
    // The input and the call's arguments are made once per Pool (they depend on the input
    // alone) and shared by every call: a call copies neither, however large they are.
    if (!shared_) {
      shared_ = std::make_shared<const Json>(input_);
      args_ = std::make_shared<const Json>(spec_.source.args ? spec_.source.args(input_)
                                                             : Json::object());
    }
    const std::string& fn = spec_.source.function;
    Run& run = run_;
    if (!port_) port_ = std::make_shared<const Port>(this, run_, token());
    if (!source_) {
      // One Source per Pool, kept across calls: a call costs what changed (jr2/source.h).
      const PoolSpec& spec = spec_;
      const std::shared_ptr<const Json> input = shared_;
      source_ = MakeNextSource(
          run,
          {fn, [&spec, input](const Json& item) { return spec.itemId(item, *input); }, run.home()});
      if (!source_) {
        throw Defect("source `" + spec_.source.name + "` calls `" + fn +
                     "`, which this runner does not have");
      }
    }
    source_->next(run, {args_, port_});
  }

  // The Pool as its Source sees it (jr2/source.h). The answer may come after this Pool is gone
  // (its state was left): it is posted through a liveness token, never through the raw pointer
  // alone; and the query is made when the call runs, so a Pool gone by then is asked nothing.
  class Port final : public SourcePort {
   public:
    Port(PoolActor* pool, Run& run, std::weak_ptr<int> alive)
        : pool_(pool), run_(run), alive_(std::move(alive)) {}
    NextQuery query() const override { return alive_.expired() ? NextQuery() : pool_->query(); }
    void answer(Json a) const override {
      PoolActor* pool = pool_;
      std::weak_ptr<int> alive = alive_;
      run_.post([pool, alive = std::move(alive), a = std::move(a)]() mutable {
        if (!alive.expired()) pool->onAnswer(std::move(a));
      });
    }

   private:
    PoolActor* pool_;
    Run& run_;  // outlives every answer: a Source answers on the run's strand, or through Back
    std::weak_ptr<int> alive_;
  };

 public:
  // A hook delivery for this Pool's Source (ADR-0017 0.7.0): its verdict, decided now from the
  // Source's hook lines alone; a `reread` is a step of the Pool's, posted.
  // Whether the Pool's Source has a `hook SERVICE …` line.
  bool hears(const std::string& service) const {
    for (const HookSpec& h : spec_.source.hooks) {
      if (h.service == service) return true;
    }
    return false;
  }

  Json hook(const std::string& service, const std::string& key, const Json& payload) {
    auto skipped = [](const std::string& reason) {
      return Json{{"verdict", "skipped"}, {"reason", reason}};
    };
    if (ended_) return skipped("pool `" + spec_.name + "` has ended");
    for (const HookSpec& h : spec_.source.hooks) {
      if (h.service != service || h.eventKey != key) continue;
      switch (h.verdict) {
        case HookSpec::Verdict::kReread: {
          if (spec_.source.form == SourceSpec::Form::kPush)
            return skipped("`reread` is for pull and read Sources, and `" + spec_.source.name +
                           "` is a push Source");
          run_.emit(
              "reread", {{"pool", prefix_}, {"hook", service}, {"event", key}},
              "source `" + spec_.source.name + "`: hook " + service + " " + key + ": read again");
          later([this] { request(); });  // during a call, the latch: one more after it
          return {{"verdict", "reread"}, {"reason", ""}};
        }
        case HookSpec::Verdict::kSkip: {
          try {
            const Json params = spec_.source.params ? spec_.source.params(input_) : Json::object();
            const Json reason = h.value ? h.value(payload, params) : Json("");
            return skipped(reason.is_string() ? reason.get<std::string>() : reason.dump());
          } catch (const std::exception& e) {
            return skipped("the hook's `skip` failed: " + ErrorText(e));  // a throw is a skip
          }
        }
        case HookSpec::Verdict::kCarry:
          if (spec_.source.form == SourceSpec::Form::kPush) return carry(h, service, key, payload);
          return skipped("`carry` is for push Sources, and `" + spec_.source.name + "` is a " +
                         (spec_.source.form == SourceSpec::Form::kRead ? "read" : "pull") +
                         " Source");
      }
    }
    Json none =
        skipped("source `" + spec_.source.name + "` has no hook for " + service + " `" + key + "`");
    none["unheard"] = true;  // weaker than any other skip (RunHost::deliverHook)
    return none;
  }

 private:
  // A read Source (ADR-0017 0.7.0, RUNTIME.md §3): the set is read again, whole, through an
  // idempotent effect, and one read claims every free slot. A settle, a wake (or a hook's
  // `reread`) during a read sets the latch: one more read after it.
  void read() {
    if (pollArmed_) {
      run_.unschedule(this, 0);
      pollArmed_ = false;
    }
    inFlight_ = true;
    latch_ = false;
    if (!args_) {
      args_ = std::make_shared<const Json>(spec_.source.args ? spec_.source.args(input_)
                                                             : Json::object());
    }
    const std::string& fn = spec_.source.function;
    PoolActor* self = this;
    std::weak_ptr<int> alive = token();
    // Both come back on the strand; a Pool gone by then is told nothing.
    auto answer = [self, alive](const Json& a) {
      if (!alive.expired()) self->onRead(a);
    };
    auto failed = [self, alive](const Failure& f) {
      if (!alive.expired()) self->onReadFailed(f);
    };
    if (const ReadCall* scripted = run_.scriptedRead(fn)) {
      Run& run = run_;
      (*scripted)(
          *args_, [&run, answer](Json a) { run.post([answer, a] { answer(a); }); },
          [&run, failed](const Failure& f) { run.post([failed, f] { failed(f); }); });
      return;
    }
    const HostFunction* host = run_.registry().host(fn);
    if (host == nullptr) {
      throw Defect("source `" + spec_.source.name + "` reads with `" + fn +
                   "`, which this runner does not have");
    }
    run_.offload([host, args = args_] { return (*host)(*args); }, answer, failed);
  }

  void onRead(const Json& answer) {
    inFlight_ = false;
    if (ended_) return;
    Json items;
    try {
      items = spec_.source.items ? spec_.source.items(answer) : answer;
    } catch (const std::exception& e) {
      return onReadFailed(Failure(std::string("its answer has no items: ") + ErrorText(e)));
    }
    if (!items.is_array()) {
      return onReadFailed(Failure("its items are " + KindOf(items) + ", not a list"));
    }
    // Known ids are dropped before a claim; an item with no usable id gets no worker and a
    // `skipped` mark, once in the run's life; every free slot is claimed from this one read.
    std::unordered_set<std::string> seen;
    for (Json& item : items) {
      if (static_cast<int64_t>(workers_.size()) >= cap_) break;
      std::string id;
      try {
        id = spec_.itemId(item, input_);
      } catch (const std::exception& e) {
        skip(item, "its id cannot be read: " + ErrorText(e));
        continue;
      }
      if (const std::string why = IdProblem(id); !why.empty()) {
        skip(item, "its id `" + Printable(id) + "` " + why);
        continue;
      }
      if (liveIds_.count(id) != 0 || settledSet_.count(id) != 0 || !seen.insert(id).second) {
        continue;
      }
      claim(std::move(item));
    }
    if (latch_) {
      latch_ = false;
      return request();
    }
    if (workers_.empty()) return end();
    armPoll();
  }

  void onReadFailed(const Failure& f) {
    inFlight_ = false;
    if (ended_) return;
    run_.emit("read-failed", {{"pool", prefix_}, {"reason", f.reason()}},
              "source `" + spec_.source.name + "`: the read failed: " + f.reason() +
                  "; it gave no items");
    if (latch_) {
      latch_ = false;
      return request();
    }
    if (spec_.source.pollEveryMs > 0) return armPoll();  // the next poll reads again
    if (workers_.empty() && spec_.source.wake.empty()) {
      // Nothing would ever read again: the Pool cannot go on.
      return fail(Failure("the read of source `" + spec_.source.name + "` failed (" + f.reason() +
                          ") and it has no poll_every or wake to read again"));
    }
  }

  // A `skipped` mark on the feed, once per item in the run's life (a read at each poll finds
  // it again).
  void skip(const Json& item, const std::string& why) {
    const std::string key = Fingerprint(item.dump(-1, ' ', false, Json::error_handler_t::replace));
    if (!skipped_.insert(key).second) return;
    std::string shown = item.dump(-1, ' ', false, Json::error_handler_t::replace);
    if (shown.size() > 120) shown = shown.substr(0, 117) + "...";
    run_.emit("skipped", {{"pool", prefix_}, {"item", item}, {"reason", why}},
              "source `" + spec_.source.name + "` skipped an item: " + why + ": " + shown);
  }

  // What `next` is given (§2.1): the lists and the input, shared with the Pool, never copied.
  NextQuery query() const { return NextQuery::OfPool(live_, settled_, failed_, shared_); }

  void onAnswer(Json answer) {
    inFlight_ = false;
    if (ended_) return;
    // An item, null, or { item, open } (the concept page's SourceNextResult): moved out, never
    // copied.
    Json item;
    int64_t open = 0;
    const auto field = [&answer](const char* name) {
      auto it = answer.find(name);
      return it == answer.end() ? nullptr : &*it;
    };
    Json* given = answer.is_object() ? field("item") : nullptr;
    const Json* opens = given != nullptr ? field("open") : nullptr;
    if (given != nullptr && (opens != nullptr || answer.size() == 1)) {
      if (opens != nullptr) open = opens->get<int64_t>();
      item = std::move(*given);
      Dismantle(answer);
    } else {
      item = std::move(answer);
    }
    lastOpen_ = open;
    if (!item.is_null()) {
      claim(std::move(item));  // one claim per answer (§2.3)
      request();               // and at once again while a slot is free
      return;
    }
    if (latch_) {
      latch_ = false;
      request();
      return;
    }
    if (workers_.empty()) return end();
    armPoll();  // waiting: workers live, nothing ready
  }

  // A push Source: the held items, in arrival order, while a slot is free.
  void claimHeld() {
    while (!held_.empty() && static_cast<int64_t>(workers_.size()) < cap_) {
      Json item = std::move(held_.front());
      held_.pop_front();
      heldIds_.erase(spec_.itemId(item, input_));
      claim(std::move(item));
    }
    if (workers_.empty() && held_.empty()) end();
  }

  // `hook … => carry EXPR` (ADR-0017 0.7.0): the item is held in the run until a slot claims
  // it. The key check comes first: `existing` when a held item, a live worker or a run of the
  // callee holds the key; above `hold`, `hold-full` (the delivery is not logged: a resend is
  // heard).
  Json carry(const HookSpec& h, const std::string& service, const std::string& key,
             const Json& payload) {
    auto answer = [](const std::string& verdict, const std::string& reason, Json more) {
      Json out = {{"verdict", verdict}, {"reason", reason}};
      for (auto& [k, v] : more.items()) out[k] = v;
      return out;
    };
    Json item;
    std::string id;
    const std::string hookName =
        "hook " + service + " `" + key + "` of source `" + spec_.source.name + "`";
    try {
      const Json params = spec_.source.params ? spec_.source.params(input_) : Json::object();
      item = h.value ? h.value(payload, params) : payload;
    } catch (const std::exception& e) {
      return answer("skipped",
                    "the delivery carries no item: the `carry` of " + hookName +
                        " failed on its payload: " + ErrorText(e),
                    Json::object());
    }
    try {
      id = spec_.itemId(item, input_);
    } catch (const std::exception& e) {
      // Name the item carried and where its id comes from: the usual cause is a payload
      // without the field that `item_id` reads (`id`).
      std::string shown = item.dump(-1, ' ', false, Json::error_handler_t::replace);
      if (shown.size() > 200) shown = shown.substr(0, 200) + "…";
      return answer("skipped",
                    "the item that " + hookName + " carries has no id (pool `" + spec_.name +
                        "`'s `item_id`: " + ErrorText(e) +
                        "); the item carried: " + Printable(shown) +
                        " (send a payload with the field `item_id` reads, or change the "
                        "`carry`)",
                    Json::object());
    }
    if (const std::string why = IdProblem(id); !why.empty())
      return answer("skipped", "its item id `" + Printable(id) + "` " + why, Json::object());
    if (heldIds_.count(id) != 0)
      return answer("existing", "item " + id + " is held already", {{"item", id}});
    if (auto live = liveIds_.find(id); live != liveIds_.end()) {
      const auto* d = dynamic_cast<const DispatchActor*>(workers_.at(live->second).actor.get());
      return answer("existing", "item " + id + " has a live worker",
                    {{"item", id}, {"run", d != nullptr ? Json(d->runId()) : Json(nullptr)}});
    }
    if (spec_.dispatch && run_.dispatcher() != nullptr) {
      if (auto got = run_.dispatcher()->find(spec_.worker, id)) {
        return answer("existing", "run " + got->run + " of " + spec_.worker + " holds key " + id,
                      {{"item", id}, {"run", got->run}, {"status", got->status}});
      }
    }
    if (settledSet_.count(id) != 0) {
      return answer("skipped",
                    "item " + id +
                        " ended in this run with no run of its own; it is "
                        "not taken again",
                    {{"item", id}});
    }
    if (static_cast<int64_t>(held_.size()) >= spec_.source.hold) {
      return answer("hold-full",
                    "pool `" + spec_.name + "` holds " + std::to_string(held_.size()) +
                        " items, its `hold`; send it again later",
                    {{"item", id}});
    }
    held_.push_back(item);
    heldIds_.insert(id);
    run_.emit("held", {{"pool", prefix_}, {"item", id}, {"hook", service}, {"event", key}},
              "source `" + spec_.source.name + "`: hook " + service + " " + key + ": item " + id +
                  " held (" + std::to_string(held_.size()) + " held)");
    later([this] { request(); });
    return answer("held", "", {{"item", id}});
  }

  void claim(Json item) {
    std::string id;
    try {
      id = spec_.itemId(item, input_);
    } catch (const std::exception& e) {
      throw Defect("source `" + spec_.source.name + "` gave an item with no id: " + e.what());
    }
    // The id rules (§2.4): each broken rule is a defect of the Source.
    auto defect = [&](const std::string& rule) {
      // The id as text that survives every channel: a NUL would end the message where it stands
      // (what() is a C string), so it is written `\0`.
      std::string shown;
      for (char ch : id) shown += ch == '\0' ? std::string("\\0") : std::string(1, ch);
      throw Defect("source `" + spec_.source.name + "` gave the item id `" + shown + "`, which " +
                   rule);
    };
    if (const std::string why = IdProblem(id); !why.empty()) defect(why);
    if (liveIds_.count(id) != 0) defect("a live worker holds");
    if (settledSet_.count(id) != 0) {
      defect("a worker already finished in this run");
    }
    const int key = nextKey_++;
    ++taken_;
    // A worker is a machine, or a Pool (a Pool of Pools: each item runs a Pool of its own).
    std::unique_ptr<Actor> worker;
    if (spec_.dispatch) {
      worker = std::make_unique<DispatchActor>(run_, this, key, Join(prefix_, id), spec_.worker, id,
                                               spec_.name);
    } else if (innerPool_ != nullptr) {
      worker = std::make_unique<PoolActor>(run_, this, key, Join(prefix_, id), *innerPool_);
    } else {
      // The worker's class, looked up once per Pool rather than by name per item.
      if (workerClass_.make == nullptr) workerClass_ = MachineActor::Resolve(run_, spec_.worker);
      worker = std::make_unique<MachineActor>(run_, this, key, Join(prefix_, id), workerClass_);
    }
    Actor* raw = worker.get();
    enlist(key, id, std::move(worker));
    if (run_.heard()) run_.emit("started", {{"item", id}, {"pool", prefix_}}, id + " started");
    try {
      Json workerInput = spec_.itemInput(std::move(item), input_);
      // A backlog file is written by people for its Pool: its items are read strictly, so a
      // misspelled `neds` is that item's Failure (with did-you-mean), not a need silently
      // dropped. Items from an `extern` Source keep width subtyping: extra fields are ignored.
      if (strictItems_) {
        StrictFields strict;
        raw->checkInput(workerInput);
      }
      raw->start(workerInput);
      Dismantle(workerInput);
    } catch (const std::exception& e) {
      // The item does not fit the worker (a SchemaError, or a worker Pool's BadInput): a
      // Failure of that item, not of the run. It is reported as a later step, so this answer
      // still makes exactly one more call. Anything else is a defect, as everywhere.
      if (dynamic_cast<const SchemaError*>(&e) == nullptr &&
          dynamic_cast<const BadInput*>(&e) == nullptr) {
        throw;
      }
      raw->stop();
      const Failure f(std::string("the item does not fit the worker: ") + e.what());
      later([this, key, f] { childFailed(key, f); });
    }
  }

  void armPoll() {
    if (spec_.source.pollEveryMs <= 0 || pollArmed_) return;
    pollArmed_ = true;
    pollDue_ = run_.clock().nowMs() + spec_.source.pollEveryMs;
    run_.schedule(this, 0, pollDue_);
  }

  // Why the items left can never start, in the output (`blocked`, `cycle`): what a `std.backlog`
  // says of its items (ExplainBacklog), read once, when the Pool ends deadlocked. Another Source
  // (an `extern` next) knows its own items: the output says how many it left open.
  void explainDeadlock(Json& output) {
    if (spec_.source.function != "std.backlog" || !args_ || !shared_) return;
    try {
      const PoolSpec& spec = spec_;
      const std::shared_ptr<const Json> input = shared_;
      Json why = ExplainBacklog(
          *args_, query(), [&spec, input](const Json& item) { return spec.itemId(item, *input); },
          run_.home());
      output["blocked"] = std::move(why["blocked"]);
      if (why.contains("cycle")) output["cycle"] = std::move(why["cycle"]);
    } catch (const std::exception&) {
      // The backlog changed or went since the last call: the deadlock stands unexplained.
    }
  }

  // No live worker and no item: drained or deadlocked (§2.6); a standing Pool parks instead,
  // until a delivery, a wake or its poll.
  void end() {
    if (spec_.standing) return armPoll();
    const bool deadlocked = lastOpen_ > 0;
    const size_t failed = failures_.size();
    // The top Pool's items become the run's output, which nothing reads them from again (an
    // ended run has no snapshot of its Pool, no `sofar`): moved, not copied. A nested Pool's
    // stay: its parent may be saved before it hears of the end.
    const bool top = parent_ == nullptr;
    Json output = Obj()("status", deadlocked ? "deadlocked" : "drained")(
        "items", top ? std::move(items_) : Json(items_))(
        "failures", top ? std::move(failures_) : Json(failures_));
    if (deadlocked) explainDeadlock(output);
    if (failed != 0 && !spec_.reportFailures) {
      fail(Failure(
          std::to_string(failed) + " of " + std::to_string(settled_->size()) + " items failed",
          std::move(output)));
      return;
    }
    // With `failures: report` and a failure, the Pool ends `done` at either end (RUNTIME.md §2.6):
    // the items that never became ready are usually the failed item's dependents, and the
    // output's `status` still says `deadlocked`. Without a failure, a deadlock ends the run so.
    if (top && deadlocked && failed == 0) {
      ended_ = true;
      stop();
      run_.finish(RunStatus::kDeadlocked, std::move(output), "");
      return;
    }
    complete(std::move(output));
  }

  const PoolSpec& spec_;
  // Items from a backlog file are read strictly (claim); decided once, not per item.
  const bool strictItems_ = spec_.source.function == "std.backlog";
  MachineActor::Class workerClass_{nullptr, nullptr};
  // A Pool of Pools: each item's worker is this Pool (looked up once, not by name per item).
  const PoolSpec* const innerPool_ = run_.registry().pool(spec_.worker);
  std::shared_ptr<const Port> port_;  // made at the first call, shared by every call
  Json input_;
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

  // The live list, its own (copied, without holes, when a query holds it) and, with `compact`,
  // without holes.
  LiveIds& ownLive(bool compact) {
    const bool shared = live_.use_count() > 1;
    if (!shared && !(compact && live_->holes > 0)) return *live_;
    auto fresh = std::make_shared<LiveIds>();
    fresh->slots.reserve(live_->size());
    std::vector<int> keys;
    keys.reserve(live_->size());
    for (size_t i = 0; i < live_->slots.size(); ++i) {
      if (live_->slots[i].empty()) continue;
      fresh->slots.push_back(shared ? live_->slots[i] : std::move(live_->slots[i]));
      keys.push_back(liveKeys_[i]);
    }
    live_ = std::move(fresh);
    liveKeys_ = std::move(keys);
    return *live_;
  }

  void enlist(int key, const std::string& id, std::unique_ptr<Actor> actor) {
    LiveIds& live = ownLive(false);
    if (!liveKeys_.empty() && key < liveKeys_.back()) {
      // Not the newest (a restore given workers out of order): placed by its key.
      ownLive(true);
      const auto at = std::lower_bound(liveKeys_.begin(), liveKeys_.end(), key);
      live_->slots.insert(live_->slots.begin() + (at - liveKeys_.begin()), id);
      liveKeys_.insert(at, key);
    } else {
      live.slots.push_back(id);
      liveKeys_.push_back(key);
    }
    const auto at = liveIds_.emplace(id, key).first;
    workers_.emplace(key, Worker{&at->first, std::move(actor)});
  }

  void retire(std::map<int, Worker>::iterator it) {
    LiveIds& live = ownLive(false);
    const auto at = std::lower_bound(liveKeys_.begin(), liveKeys_.end(), it->first);
    if (at != liveKeys_.end() && *at == it->first) {
      live.slots[static_cast<size_t>(at - liveKeys_.begin())].clear();
      ++live.holes;
      while (!live.slots.empty() && live.slots.back().empty()) {
        live.slots.pop_back();
        liveKeys_.pop_back();
        --live.holes;
      }
      if (live.holes > live.size()) ownLive(true);
    }
    liveIds_.erase(liveIds_.find(*it->second.id));  // by node: the id is that node's key
    workers_.erase(it);
  }

  // Rebuilds what the Pool settled from the run's stored journal, in the order it settled.
  void readJournal(const Json& snap) {
    const std::vector<Json>* journal = run_.restoringJournal();
    const auto want = snap.at("journaled").get<size_t>();
    if (journal == nullptr) {
      throw NoLongerFits(
          "the stored run keeps its items in the store's journal, and "
          "none was given to restore it");
    }
    if (journal->size() != want) {
      throw StoreDamaged("run " + run_.id() + " is damaged: it settled " + std::to_string(want) +
                         " items, and its journal has " + std::to_string(journal->size()) +
                         "; it cannot go on, the other runs are unaffected");
    }
    // The journal is what the store says was settled: an entry that is not one this runtime
    // wrote, or an id settled twice or both settled and live, is damage, never taken as is.
    size_t n = 0;
    for (const Json& e : *journal) {
      ++n;
      auto damaged = [&](const std::string& why) {
        return StoreDamaged("run " + run_.id() + "'s journal entry " + std::to_string(n) +
                            " is damaged: " + why +
                            "; it cannot go on, the other runs are unaffected");
      };
      const bool settled = e.is_object() && e.contains("settled") && e.size() == 2 &&
                           e.contains("output") && e.at("settled").is_string();
      const bool failed = e.is_object() && e.contains("failed") && e.size() == 2 &&
                          e.contains("failure") && e.at("failed").is_string() &&
                          e.at("failure").is_object() && e.at("failure").contains("reason") &&
                          e.at("failure").at("reason").is_string();
      if (!settled && !failed) throw damaged("it is not a settled or failed item");
      const std::string id = e.at(settled ? "settled" : "failed").get<std::string>();
      if (settledSet_.count(id) != 0) throw damaged("item " + id + " is settled twice");
      if (liveIds_.count(id) != 0) throw damaged("item " + id + " is settled and live");
      if (settled) {
        items_[id] = e.at("output");
        settle(id, false);
      } else {
        failures_[id] = e.at("failure");
        settle(id, true);
      }
    }
  }

  // The top Pool of a run that keeps a journal: its items are stored one entry each, not in
  // its snapshot.
  bool journaled() const { return parent() == nullptr && run_.journaling(); }

  void settle(const std::string& id, bool failed) {
    auto append = [&](std::shared_ptr<std::vector<std::string>>& list) {
      if (list.use_count() > 1) list = std::make_shared<std::vector<std::string>>(*list);
      list->push_back(id);
    };
    append(settled_);
    if (failed) append(failed_);
    settledSet_.insert(id);
  }
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
  bool wakeOpen_ = false;
  bool pollArmed_ = false;
  int64_t pollDue_ = 0;
  std::shared_ptr<const Json> shared_;  // input_, shared with every query
  std::shared_ptr<const Json> args_;    // the Source's arguments, made once
  std::unique_ptr<NextSource> source_;
};

void MachineActor::startInvoke(const InvokeSpec& spec) {
  Child child{spec, nullptr, nullptr};
  switch (spec.kind) {
    case InvokeSpec::Kind::kGate:
    case InvokeSpec::Kind::kAgent:
      // A Gate with no meta keeps null, not an empty object (a heap map a parked worker would
      // hold for nothing); Run::shown shows `{}` for it, as the author wrote none.
      if (child.spec.input.is_object() && child.spec.input.empty()) child.spec.input = nullptr;
      children_.emplace(spec.id, std::move(child));
      openIfGate(spec);
      return;
    case InvokeSpec::Kind::kMachine: {
      const std::string prefix = Join(prefix_, spec.name.empty() ? spec.statePath : spec.name);
      if (const PoolSpec* pool = run_.registry().pool(spec.target)) {
        child.actor = std::make_unique<PoolActor>(run_, this, spec.id, prefix, *pool);
      } else {
        child.actor = std::make_unique<MachineActor>(run_, this, spec.id, prefix, spec.target);
      }
      Actor* raw = child.actor.get();
      children_.emplace(spec.id, std::move(child));
      const Json input = spec.input;
      raw->later([raw, input] { raw->start(input); });
      return;
    }
    case InvokeSpec::Kind::kExtern:
    case InvokeSpec::Kind::kStd: {
      children_.emplace(spec.id, std::move(child));
      launchEffect(spec.id, spec.target, spec.input);
      return;
    }
  }
}

bool MachineActor::Idempotent(const Registry& registry, const std::string& target) {
  return registry.hostIdempotent(target);  // std.http_get, an `extern … idempotent`
}

void MachineActor::launchEffect(int id, const std::string& target, const Json& input) {
  MachineActor* self = this;
  // A cancelled child never runs: the check is made on the strand, before the work goes out.
  later([self, id, target, input] {
    auto child = self->children_.find(id);
    if (child == self->children_.end()) return;
    auto control = std::make_shared<EffectControl>();
    child->second.effect = control;
    const Registry& registry = self->run_.registry();
    std::function<Json()> work;
    if (!registry.isProcess(target)) {
      const HostFunction* fn = registry.host(target);
      if (fn == nullptr) throw Defect("no host function `" + target + "` is registered");
      work = [call = *fn, input] { return call(input); };
    }
    std::weak_ptr<int> alive = self->token();
    auto then = [self, id, alive](const Json& out) {
      if (!alive.expired()) self->childDone(id, out);
    };
    auto failed = [self, id, alive](const Failure& f) {
      if (!alive.expired()) self->childFailed(id, f);
    };
    // At most once (RUNTIME.md §7): a non-idempotent effect goes out only after the commit that
    // stores this child, so a restore that finds the child without a result knows it may have
    // run, and does not run it again. A process is awaited on the executor, holding no thread.
    if (registry.isProcess(target)) {
      const InvokeSpec& spec = child->second.spec;
      self->run_.startCommand(
          input.contains("spec") ? input["spec"] : input.value("arg0", Json::object()),
          std::move(then), std::move(failed), control,
          Join(self->prefix_, spec.name.empty() ? spec.statePath : spec.name));
    } else if (Idempotent(registry, target)) {
      self->run_.offload(std::move(work), std::move(then), std::move(failed));
    } else {
      self->run_.offloadAfterCommit(std::move(work), std::move(then), std::move(failed), control);
    }
  });
}

void MachineActor::resumeEffect(int id, const std::string& target, const Json& input) {
  if (Idempotent(run_.registry(), target)) {
    launchEffect(id, target, input);
    return;
  }
  const auto child = children_.find(id);
  std::string what;
  if (child != children_.end()) {
    what = effectName(child->second.spec);
  } else {
    what = Join(prefix_, "") + (prefix_.empty() ? "" : ": ") + target;
  }
  run_.noteOutAtRestore(what);
  MachineActor* self = this;
  later([self, id, target, what] {
    self->run_.takenUpAtRestore(what);
    self->childFailed(id, Failure("interrupted: the process stopped while " + target + " ran",
                                  {{"effect", target},
                                   {"why",
                                    "it is not idempotent, so it is not run again by "
                                    "itself; `on error` may retry it on purpose"}}));
  });
}

std::unique_ptr<Actor> Actor::Restore(Run& run, Actor* parent, const Json& snap) {
  const std::string kind = snap.at("kind").get<std::string>();
  const int key = snap.at("key").get<int>();
  const std::string prefix = snap.at("prefix").get<std::string>();
  const std::string name = snap.at("name").get<std::string>();
  if (kind == "dispatch") {
    auto a = std::make_unique<DispatchActor>(run, parent, key, prefix, name, snap.value("item", ""),
                                             snap.value("pool", ""));
    a->restoreFrom(snap);
    return a;
  }
  if (kind == "pool") {
    const PoolSpec* spec = run.registry().pool(name);
    if (spec == nullptr)
      throw NoLongerFits("the stored run names a pool `" + name + "` this runner lacks");
    auto a = std::make_unique<PoolActor>(run, parent, key, prefix, *spec);
    a->restoreFrom(snap);
    return a;
  }
  auto a = std::make_unique<MachineActor>(run, parent, key, prefix, name);
  a->restoreFrom(snap);
  return a;
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

// A result from outside the strand (the thread pool, a process's end): taken on the engine's
// thread, where runs are made and destroyed, so a run destroyed meanwhile is never touched; the
// effect is counted back in either way.
namespace {
void Back(Engine& engine, const std::weak_ptr<int>& life, Run* run, std::function<void()> task) {
  boost::asio::post(engine.io(), [&engine, life, run, task = std::move(task)] {
    engine.effectBack();
    if (!life.expired()) run->post(task);
  });
}
}  // namespace

void Run::offload(std::function<Json()> work, std::function<void(Json)> then,
                  std::function<void(const Failure&)> failed) {
  // A blocking host function holds a thread while it runs: more of them out than threads wait
  // for one, and a Pool's cap of such workers is then the thread count. Said once per run.
  const int threads = engine_->threads();
  if (++offloaded_ > threads && !toldThreads_) {
    toldThreads_ = true;
    emit("note", {{"hostFunctionsOut", offloaded_}, {"threads", threads}},
         "note: " + std::to_string(offloaded_) + " host functions are out and " +
             std::to_string(threads) +
             " threads run them: the others wait for a thread (raise it with --threads)");
  }
  engine_->effectOut();
  Engine& engine = *engine_;
  std::weak_ptr<int> life = life_;
  boost::asio::post(engine.pool(), [this, &engine, life, work = std::move(work),
                                    then = std::move(then), failed = std::move(failed)] {
    std::function<void()> report;
    try {
      Json out = work();
      report = [then, out] { then(out); };
    } catch (const Failure& f) {
      report = [failed, f] { failed(f); };
    } catch (const std::exception& e) {
      const std::string what = ErrorText(e);
      report = [what] { throw Defect(what); };
    } catch (...) {
      // `throw 42`: a defect too (docs/host-functions.md), never an abort of the host.
      report = [] { throw Defect("a host function threw something that is not a std::exception"); };
    }
    Back(engine, life, this, [this, report] {
      --offloaded_;
      report();
    });
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

void CheckInput(const WorkflowInfo& workflow, const Json& input) {
  StrictFields strict;
  try {
    if (workflow.pool != nullptr) {
      workflow.pool->parseInput(input);
    } else if (workflow.machine != nullptr) {
      workflow.machine()->checkInput(input);
    }
  } catch (const SchemaError& e) {
    throw BadInput((workflow.pool != nullptr
                        ? "the input of pool `" + workflow.pool->name + "` does not fit: "
                        : std::string("the input does not fit: ")) +
                   e.what());
  }
}

void Run::checkInput(const Json& input) const { CheckInput(workflow_, input); }

void Run::start(const Json& input) {
  begin(input);
  drain();
}

void Run::begin(const Json& input) {
  assembly_ = registry_.assembly();
  // What comes from outside is checked strictly first (unknown fields refused, with the path),
  // before anything starts; the start itself then reads it as usual.
  checkInput(input);
  input_ = input;
  if (workflow_.pool != nullptr) {
    top_ = std::make_unique<PoolActor>(*this, nullptr, 0, "", *workflow_.pool);
  } else {
    MachineFactory make = workflow_.machine;
    if (make == nullptr) throw Defect("workflow `" + workflow_.name + "` has no top machine");
    const std::string name = make()->name();
    top_ = std::make_unique<MachineActor>(*this, nullptr, 0, "", name);
  }
  try {
    guard([&] { top_->start(input); }, Origin::kCommand);
  } catch (const SchemaError& e) {
    throw BadInput(std::string("the input does not fit: ") + e.what());
  }
  dirty_ = true;
}

void Run::send(const std::string& gate, const std::string& event, const Json& payload) {
  deliver(gate, event, payload);
  drain();
}

void Run::deliver(const std::string& gate, const std::string& event, const Json& payload) {
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
  accept(gate, event, payload);
  dirty_ = true;
}

void Run::precheck(const std::string& gate, const std::string& event, const Json& payload) const {
  auto it = gates_.find(gate);
  if (it == gates_.end()) return;  // it may open when due timers fire: send() says
  validate(it->second, gate, event, payload);
}

void Run::validate(const GateEntry& entry, const std::string& gate, const std::string& event,
                   const Json& payload) const {
  bool accepted = false;
  std::string names;
  for (const auto& e : *entry.accepts) {
    names += (names.empty() ? "" : ", ") + e.name;
    if (e.name == event) accepted = true;
  }
  if (!accepted)
    throw BadInput("the Gate `" + gate + "` takes " + (names.empty() ? "no event" : names) +
                   ", not `" + event + "`");
  StrictFields strict;  // a payload from outside: a field its event lacks is refused
  entry.owner->check(entry.invokeId, event, payload);
}

void Run::accept(const std::string& gate, const std::string& event, const Json& payload) {
  auto it = gates_.find(gate);
  if (it == gates_.end() || it->second.answered) throw BadInput("no open Gate `" + gate + "`");
  const GateEntry entry = it->second;
  validate(entry, gate, event, payload);
  // Taken now: a second answer before the next turn delivers this one finds the Gate answered
  // (two clients answering one Gate between two turns: one wins, the other is refused). A
  // Source's wake Gate takes any number of wakes.
  it->second.answered = entry.kind != OpenGate::Kind::kSource;
  const uint64_t opening = entry.opening;
  entry.owner->later([this, gate, opening, entry, event, payload] {
    entry.owner->deliver(entry.invokeId, event, payload);
    // A Gate the event left open (a transition that stays in the state) takes answers again.
    auto again = gates_.find(gate);
    if (again != gates_.end() && again->second.opening == opening) again->second.answered = false;
  });
}

void Run::scriptAgents(Json script) {
  agentScript_ = std::move(script);
  std::vector<std::string> open;
  for (const auto& [name, g] : gates_) {
    if (g.kind == OpenGate::Kind::kAgent) open.push_back(name);
  }
  for (const auto& name : open) answerAgent(name);
}

// The end of a refused pick's feed line, for either harness: the Agent picks again, or its
// `picks:` are spent and the Gate waits for a person.
static std::string AfterRefusal(bool again, int refused, const std::string& gate) {
  if (again) return "; it picks again";
  return "; " + std::to_string(refused) + " picks refused, the Gate " + gate +
         " waits for a person";
}

void Run::modelAgents(std::shared_ptr<const ModelServer> server) {
  modelServer_ = std::move(server);
  std::vector<std::string> open;
  for (const auto& [name, g] : gates_) {
    if (g.kind == OpenGate::Kind::kAgent) open.push_back(name);
  }
  for (const auto& name : open) answerAgent(name);
}

int Run::agentPicks(const std::string& agent) const {
  const Json* definition = registry_.agent(agent);
  if (definition == nullptr || !definition->value("picks", Json()).is_number_integer())
    return kAgentPicks;
  return std::max(1, (*definition)["picks"].get<int>());
}

bool Run::pickAgain(GateEntry& entry) { return ++entry.refusedPicks < agentPicks(agentOf(entry)); }

void Run::answerAgent(const std::string& gate) {
  auto it = gates_.find(gate);
  // Its `picks:` spent (a run taken up again after it waited for a person): the Gate is a
  // person's now, and neither harness is asked.
  if (it != gates_.end() && it->second.refusedPicks >= agentPicks(agentOf(it->second))) return;
  if (modelServer_) return askModel(gate);
  if (it == gates_.end() || !agentScript_.is_object()) return;
  const std::string agent = agentOf(it->second);
  if (!agentScript_.contains(agent)) return;
  const uint64_t opening = it->second.opening;
  // The reply is chosen when it is delivered, for this opening of the Gate only: the count never
  // runs back, and two Gates of one Agent open at once get one reply each, in order.
  post([this, gate, agent, opening] {
    auto open = gates_.find(gate);
    if (open == gates_.end() || open->second.opening != opening) return;  // left meanwhile
    const Json& replies = agentScript_[agent];
    const int64_t used = agentReplies_.value(agent, int64_t{0});
    if (!replies.is_array() || used >= static_cast<int64_t>(replies.size())) {
      emit("agent", {{"agent", agent}, {"gate", gate}, {"reply", used + 1}, {"answered", false}},
           "agent " + agent + ": the script has no reply " + std::to_string(used + 1) +
               "; the Gate " + gate + " waits for an answer");
      return;
    }
    const Json& reply = replies[static_cast<size_t>(used)];
    const std::string event = reply.value("event", std::string());
    const Json payload = reply.value("payload", Json::object());
    agentReplies_[agent] = used + 1;
    try {
      accept(gate, event, payload);
    } catch (const BadInput& e) {
      // A pick outside the Menu, or a payload its schema refuses: the Turn is told why and may
      // pick again, up to kAgentPicks picks at one opening of the Gate; then the Gate waits for
      // a person, the refusals on the feed.
      const bool again = pickAgain(open->second);
      emit("agent",
           {{"agent", agent},
            {"gate", gate},
            {"reply", used + 1},
            {"answered", false},
            {"refused", ValidUtf8(e.what())}},
           "agent " + agent + ": scripted reply " + std::to_string(used + 1) + " at " + gate +
               " is refused: " + e.what() + AfterRefusal(again, open->second.refusedPicks, gate));
      if (again) answerAgent(gate);
      return;
    }
    emit("agent",
         {{"agent", agent},
          {"gate", gate},
          {"reply", used + 1},
          {"answered", true},
          {"event", event}},
         "agent " + agent + " answered " + event + " at " + gate + " (scripted reply " +
             std::to_string(used + 1) + ")");
  });
}

void Run::askModel(const std::string& gate) {
  auto it = gates_.find(gate);
  if (it == gates_.end() || it->second.kind != OpenGate::Kind::kAgent) return;
  const GateEntry& entry = it->second;
  const OpenGate shownGate = shown(gate, entry);
  const std::string& agent = shownGate.agent;
  ModelTurn& turn = modelTurns_[gate];
  if (turn.opening != entry.opening || !turn.messages.is_array()) {
    const Json* definition = registry_.agent(agent);
    turn = ModelTurn();
    turn.opening = entry.opening;
    turn.messages = ModelMessages(definition ? *definition : Json::object(), shownGate.meta);
  }
  const Json request = ModelRequest(*modelServer_, turn.messages, MenuJson(shownGate));
  turn.body = std::make_shared<const std::string>(request.dump());
  turn.attempt = 1;
  turn.backoffMs = modelServer_->backoffMs;
  turn.retryTimer.reset();
  turn.retryDueMs.reset();
  const int pick = entry.refusedPicks + 1;
  emit("agent", {{"agent", agent}, {"gate", gate}, {"model", modelServer_->model}, {"pick", pick}},
       "agent " + agent + " asks " + modelServer_->model + " at " + modelServer_->shown +
           " for a pick at " + gate +
           (pick > 1 ? " (pick " + std::to_string(pick) + " of " +
                           std::to_string(agentPicks(agent)) + ")"
                     : std::string()));
  tryModel(gate);
}

void Run::tryModel(const std::string& gate) {
  auto it = gates_.find(gate);
  auto turn = modelTurns_.find(gate);
  if (it == gates_.end() || turn == modelTurns_.end() || !turn->second.body) return;
  // A try holds an effect thread while it waits for the server (HttpCall blocks); its answer
  // comes back like a host function's.
  const uint64_t opening = it->second.opening;
  offload(
      [server = modelServer_, body = turn->second.body, attempt = turn->second.attempt,
       backoff = turn->second.backoffMs] {
        return TryModel(*server, *body, attempt, backoff,
                        server->transport ? *server->transport : HttpTransport(*server));
      },
      [this, gate, opening](const Json& answer) { modelAnswered(gate, opening, answer); },
      [](const Failure&) {});  // TryModel answers every failure as {"kind": "failed"}
}

void Run::retryModel(const std::string& gate, uint64_t opening) {
  auto it = gates_.find(gate);
  auto turn = modelTurns_.find(gate);
  if (it == gates_.end() || it->second.opening != opening || turn == modelTurns_.end() ||
      turn->second.opening != opening)
    return;  // the Gate left meanwhile
  turn->second.retryTimer.reset();
  turn->second.retryDueMs.reset();
  tryModel(gate);
}

void Run::modelAnswered(const std::string& gate, uint64_t opening, const Json& answer) {
  auto it = gates_.find(gate);
  if (it == gates_.end() || it->second.opening != opening) return;  // the Gate left meanwhile
  GateEntry& entry = it->second;
  const std::string agent = agentOf(entry);
  const std::string kind = answer.value("kind", "");
  if (kind == "retry") {
    Json told = answer.value("data", Json::object());
    told["agent"] = agent;
    told["gate"] = gate;
    emit("agent", told, "agent " + agent + " at " + gate + ": " + answer.value("line", ""));
    ModelTurn& turn = modelTurns_[gate];
    turn.attempt = answer.value("attempt", turn.attempt + 1);
    turn.backoffMs = answer.value("backoffMs", turn.backoffMs * 2);
    const int64_t waitMs = std::max<int64_t>(0, answer.value("waitMs", int64_t{0}));
    if (!clock_.real()) {
      turn.retryDueMs = clock_.nowMs() + waitMs;  // fired by tick(), when the clock says
      return;
    }
    // The wait is a timer on the engine: no thread waits, and a drive waits for it as for an
    // effect (counted out until its handler runs). Destroying it (the Gate closed, the run
    // ended or destroyed) cancels it; its handler then only counts it back.
    auto timer = std::make_shared<boost::asio::steady_timer>(engine_->io(),
                                                             std::chrono::milliseconds(waitMs));
    engine_->effectOut();
    Engine& engine = *engine_;
    std::weak_ptr<int> life = life_;
    timer->async_wait([this, &engine, life, gate, opening](const boost::system::error_code& ec) {
      engine.effectBack();
      if (ec || life.expired()) return;
      post([this, gate, opening] { retryModel(gate, opening); });
    });
    turn.retryTimer = std::move(timer);
    return;
  }
  Json data = {{"agent", agent}, {"gate", gate}, {"model", modelServer_->model}};
  if (kind == "failed") {
    data["answered"] = false;
    data["failed"] = answer.value("why", "");
    emit("agent", data,
         "agent " + agent + " at " + gate + ": " + answer.value("why", "") + "; the Gate " + gate +
             " waits for a person");
    return;
  }
  ModelTurn& turn = modelTurns_[gate];
  // A refused pick: the model hears why, in the conversation, and may pick again.
  auto refuse = [&](const std::string& why, const Json& reply) {
    data["answered"] = false;
    data["refused"] = why;
    const bool again = pickAgain(entry);
    emit("agent", data,
         "agent " + agent + " at " + gate + ": " + why +
             AfterRefusal(again, entry.refusedPicks, gate));
    if (!again) return;
    turn.messages.push_back(answer.value("message", Json::object()));
    turn.messages.push_back(reply);
    askModel(gate);
  };
  const std::string tell = "Refused: ";
  const std::string pickOne = " Pick again: answer with one tool call.";
  if (kind == "text") {
    const std::string text = answer.value("text", "");
    refuse("the model answered in text, not with a tool call" +
               (text.empty() ? std::string() : " (\"" + ValidUtf8(text.substr(0, 120)) + "\")"),
           {{"role", "user"},
            {"content",
             "You answered in text. Answer with exactly one tool call, one of the "
             "tools you were given."}});
    return;
  }
  const std::string event = answer.value("event", "");
  const std::string callId = answer.value("callId", "call_0");
  if (kind == "bad-arguments") {
    const std::string why = answer.value("why", "");
    refuse("its pick `" + event + "` is refused: " + why,
           {{"role", "tool"}, {"tool_call_id", callId}, {"content", tell + why + "." + pickOne}});
    return;
  }
  try {
    accept(gate, event, answer.value("payload", Json::object()));
  } catch (const BadInput& e) {
    const std::string why = ValidUtf8(e.what());
    refuse("its pick `" + ValidUtf8(event) + "` is refused: " + why,
           {{"role", "tool"}, {"tool_call_id", callId}, {"content", tell + why + "." + pickOne}});
    return;
  }
  data["answered"] = true;
  data["event"] = event;
  // Only the first call is the pick (the harness built no other: agents.h).
  const int64_t calls = answer.value("calls", int64_t{1});
  if (calls > 1) data["calls"] = calls;
  emit("agent", data,
       "agent " + agent + " answered " + event + " at " + gate + " (" + modelServer_->model +
           (calls > 1 ? ", the first of its " + std::to_string(calls) + " tool calls; the other " +
                            std::to_string(calls - 1) + " dropped"
                      : "") +
           ")");
}

bool Run::hears(const std::string& service) const {
  const auto* pool = dynamic_cast<const PoolActor*>(top_.get());
  return !ended() && pool != nullptr && pool->hears(service);
}

Json Run::hook(const std::string& service, const std::string& eventKey, const Json& payload,
               bool drive) {
  auto* pool = dynamic_cast<PoolActor*>(top_.get());
  if (ended() || pool == nullptr) {
    return {{"verdict", "skipped"},
            {"reason", ended() ? "run " + id_ + " has ended `" + ToString(status_) + "`"
                               : "run " + id_ + " is not a Pool over a Source"}};
  }
  Json verdict = pool->hook(service, eventKey, payload);
  dirty_ = true;
  if (drive) drain();
  return verdict;
}

void Run::tick() {
  if (ended()) return;
  if (fireDue()) dirty_ = true;
  drain();
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

Json Run::sofar() const { return top_ && !ended() ? top_->sofar() : Json(nullptr); }

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
  // The one place a step's exception is classified (RUNTIME.md §2.5). A SchemaError or a
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
    // Anything else that is not a Failure is a defect (§2.5).
    finish(RunStatus::kError, nullptr, ErrorText(e));
  }
}

void Run::startCommand(Json spec, std::function<void(Json)> then,
                       std::function<void(const Failure&)> failed,
                       const std::shared_ptr<EffectControl>& control, std::string who) {
  track(control);
  auto go = [this, spec = std::move(spec), then = std::move(then), failed = std::move(failed),
             control, who = std::move(who)]() mutable {
    if (control && control->cancelled) return;  // its invoke was cancelled before it started
    Engine& engine = *engine_;
    std::weak_ptr<int> life = life_;
    auto ok = [this, &engine, life, then](const Json& out) {
      Back(engine, life, this, [this, then, out] {
        --commandsOut_;
        then(out);
      });
    };
    auto bad = [this, &engine, life, failed](const Failure& f) {
      Back(engine, life, this, [this, failed, f] {
        --commandsOut_;
        failed(f);
      });
    };
    // Its output on the feed as it comes, each line told on the strand (a feed entry is stored
    // with the turn that tells it). Called from a handler of the executor, like Back's tasks,
    // but a line is not the effect's end: the effect stays out.
    auto line = [this, life, who](const char* stream, const std::string& text) {
      if (life.expired()) return;
      post([this, who, stream = std::string(stream), text] {
        emit("output", {{"effect", who}, {"stream", stream}, {"line", text}},
             who + (stream == "stderr" ? " ! " : " | ") + text);
      });
    };
    engine.effectOut();
    ++commandsOut_;
    if (!StartCommand(engine.io(), spec, home_, ok, bad, control, line)) {
      // No pidfd on this kernel: the blocking form, on the thread pool.
      engine.effectBack();
      --commandsOut_;
      offload(
          [spec, home = home_] {
            return StdEffect("std.command", {{"spec", spec}}, home);
          },
          std::move(then), std::move(failed));
    }
  };
  if (commits()) {
    held_.emplace_back(std::move(go));
  } else {
    go();
  }
}

void Run::offloadAfterCommit(std::function<Json()> work, std::function<void(Json)> then,
                             std::function<void(const Failure&)> failed,
                             const std::shared_ptr<EffectControl>& control) {
  if (!commits()) {
    offload(std::move(work), std::move(then), std::move(failed));
    return;
  }
  track(control);
  held_.emplace_back([this, work = std::move(work), then = std::move(then),
                      failed = std::move(failed), control]() mutable {
    if (control && control->cancelled) return;  // cancelled while it waited for its commit
    offload(std::move(work), std::move(then), std::move(failed));
  });
}

int Run::stopEffects() {
  int killed = 0;
  for (auto& weak : effects_) {
    if (auto control = weak.lock()) {
      if (control->pid.load() > 0 && !control->reaped.load()) ++killed;
      control->cancel();
    }
  }
  effects_.clear();
  held_.clear();
  for (auto& [gate, turn] : modelTurns_) {  // a model's retry waited for is not tried
    turn.retryTimer.reset();
    turn.retryDueMs.reset();
  }
  return killed;
}

void Run::track(const std::shared_ptr<EffectControl>& control) {
  if (!control) return;
  if (effects_.size() >= 64) {  // now and then, forget the ones that are gone
    effects_.erase(
        std::remove_if(effects_.begin(), effects_.end(),
                       [](const std::weak_ptr<EffectControl>& w) { return w.expired(); }),
        effects_.end());
  }
  effects_.push_back(control);
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

OpenGate Run::shown(const std::string& name, const GateEntry& entry) const {
  OpenGate g;
  g.name = name;
  g.kind = entry.kind;
  g.accepts = *entry.accepts;
  if (const InvokeSpec* spec = entry.owner->invokeSpec(entry.invokeId)) {
    g.meta = spec->input.is_null() ? Json::object() : spec->input;
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
  // and up the tree (each parent, at the state that invoked the child).
  std::set<std::pair<const Actor*, std::string>> waited;
  for (const auto& [name, g] : gates_) {
    const Actor* a = g.owner;
    std::string at = a->invokeState(g.invokeId);
    while (a != nullptr && waited.emplace(a, at).second) {
      const Actor* parent = a->parent();
      at = parent != nullptr ? parent->invokeState(a->key()) : std::string();
      a = parent;
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
  // Two live Gates with one name are a defect, never a silent overwrite (§2.8).
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

Json Run::snapshot() const {
  const bool standingEnded = ended() && workflow_.pool != nullptr && workflow_.pool->standing;
  // The picks refused at each Agent's Gate open now: a run taken up again goes on counting, and
  // one whose `picks:` are spent is not put to its Agent again.
  Json refused = Json::object();
  for (const auto& [name, g] : gates_) {
    if (g.kind == OpenGate::Kind::kAgent && g.refusedPicks > 0) refused[name] = g.refusedPicks;
  }
  Json out = Obj()("version", 1)("id", id_)("workflow", workflow_.name)("home", home_)(
      "status", ToString(status_))("reason", reason_)("input", input_)("output", output_)(
      "agentReplies", agentReplies_)("journal", journaling_)(
      "top", top_ && !ended() ? top_->snapshot() : Json(nullptr))("dispatchedBy", dispatchedBy_)(
      "assembly", assembly_)
      // A standing run that ended keeps what a new run takes of it (held items, live keys).
      ("carry", standingEnded ? handOverCarry_ : Json(nullptr))(
          "standing", ended() ? standingEnd_ : Json(nullptr));
  if (!refused.empty()) out["refusedPicks"] = std::move(refused);
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
  if (!snap.at("top").is_null()) run->top_ = Actor::Restore(*run, nullptr, snap.at("top"));
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
