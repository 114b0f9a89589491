// The machine actor (machine_actor.h): a generated machine's steps, its Gates, timers and
// children, and its effects, sent out at most once
// (docs/runtime.md#saved-as-it-moves-effects-at-most-once).
#include "run/actors/machine_actor.h"

#include <mutex>
#include <tuple>
#include <typeindex>
#include <utility>

#include "jr2/meant.h"
#include "run/pool/pool_actor.h"
#include "run/replayer.h"

namespace jr2rt {
namespace {

// Takes out of a command's `result` (`{stdout, stderr, …}`) the start of each stream that its
// `output` lines `told` hold verbatim (a line cut short, a `\r` taken off or a byte replaced ends
// it), and gives what export needs to put it back (ReadTold, trace.cpp): per stream, how many
// lines the process told (`of`), how many of the first of them were left out (`used`), and
// their bytes. Null when nothing was left out.
Json LeaveOutTold(Json& result, const std::vector<std::string> (&told)[2]) {
  if (!result.is_object()) return nullptr;
  Json out = Json::object();
  const char* names[2] = {"stdout", "stderr"};
  for (int n = 0; n < 2; ++n) {
    const auto it = result.find(names[n]);
    if (it == result.end() || !it->is_string() || told[n].empty()) continue;
    const auto& text = it->get_ref<const std::string&>();
    size_t at = 0;
    size_t used = 0;
    for (const std::string& line : told[n]) {
      if (text.compare(at, line.size(), line) != 0 || at + line.size() > text.size()) break;
      if (at + line.size() == text.size()) {  // its last line, with no newline after it
        at += line.size();
        ++used;
        break;
      }
      if (text[at + line.size()] != '\n') break;
      at += line.size() + 1;
      ++used;
    }
    if (used == 0) continue;
    out[names[n]] = {{"of", told[n].size()}, {"used", used}, {"bytes", at}};
    *it = text.substr(at);
  }
  return out.empty() ? Json(nullptr) : out;
}

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

MachineActor::Class MachineActor::Resolve(Run& run, const std::string& machine) {
  Class c{run.registry().machineName(machine), run.registry().machine(machine)};
  if (c.make == nullptr || c.name == nullptr)
    throw Defect("no machine `" + machine + "` is registered with this runner");
  return c;
}

void MachineActor::start(const Json& input) {
  step([&] {
    m_->start(*this, input);
    after();
  });
}

std::string MachineActor::invokeState(int id) const {
  auto it = children_.find(id);
  return it == children_.end() ? std::string() : it->second.spec.statePath;
}

const InvokeSpec* MachineActor::invokeSpec(int id) const {
  auto it = children_.find(id);
  return it == children_.end() ? nullptr : &it->second.spec;
}

std::shared_ptr<const Payload> MachineActor::check(int, const std::string& event,
                                                   const Json& payload) const {
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
    return m_->parsePayload(id, payload);
  } catch (const std::exception& e) {
    throw BadInput("the payload of `" + event + "` does not fit: " + e.what());
  }
}

Json MachineActor::kept() const {
  Json children = Json::object();
  for (const auto& [key, c] : children_) {
    if (!c.actor) continue;
    Json k = c.actor->kept();
    if (!k.is_null()) children[c.spec.name.empty() ? c.spec.statePath : c.spec.name] = std::move(k);
  }
  if (children.empty()) return nullptr;
  return {{"children", std::move(children)}};
}

void MachineActor::deliver(int, const std::string& event, const Json& payload,
                           std::shared_ptr<const Payload> typed) {
  step([&] {
    m_->dispatch({Event::Kind::kExternal, m_->eventId(event), payload, std::move(typed)});
    after();
  });
}

void MachineActor::timer(int id) {
  touch();
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

void MachineActor::childDone(int key, Json output) {
  step([&] {
    if (children_.erase(key) == 0) return;  // cancelled meanwhile
    m_->dispatch({Event::Kind::kDone, key, output});
    after();
  });
}

void MachineActor::childFailed(int key, const Failure& f) {
  step([&] {
    if (children_.erase(key) == 0) return;
    const bool handled = m_->dispatch(
        {Event::Kind::kError, key, Json{{"reason", f.reason()}, {"detail", f.detail()}}});
    // An unhandled `on error` is this machine's Failure too (docs/runtime.md#the-pool).
    if (!handled) throw Failure(f.reason(), f.detail());
    after();
  });
}

void MachineActor::stop() {
  touch();
  for (auto& [id, child] : children_) closeChild(child);
  children_.clear();
  for (const auto& [t, armed] : timers_) run_.unschedule(this, t);
  timers_.clear();
}

Json MachineActor::observe() const {
  Json children = Json::array();
  for (const auto& [id, c] : children_) {
    Json child = c.actor ? c.actor->observe() : LeafObservation(c.spec);
    child["id"] = childId(c.spec);
    children.push_back(std::move(child));
  }
  return {{"kind", "machine"}, {"value", m_->activeStates()}, {"children", children}};
}

void MachineActor::observeText(std::string& out, const Json& over) const {
  WriteMerged(out, Over({{"kind", "machine"}, {"value", m_->activeStates()}}, over), "children",
              [this](std::string& to) {
                to += '[';
                for (const auto& [id, c] : children_) {
                  if (to.back() != '[') to += ',';
                  const Json childOver = {{"id", childId(c.spec)}};
                  if (c.actor) {
                    c.actor->observeText(to, childOver);
                  } else {
                    AppendJson(to, Over(LeafObservation(c.spec), childOver));
                  }
                }
                to += ']';
              });
}

Json MachineActor::LeafObservation(const InvokeSpec& spec) {
  return {{"kind", spec.kind == InvokeSpec::Kind::kGate    ? "gate"
                   : spec.kind == InvokeSpec::Kind::kAgent ? "agent"
                                                           : "effect"},
          {"value", Json::array()},
          {"children", Json::array()}};
}

std::string MachineActor::childId(const InvokeSpec& spec) const {
  return spec.kind == InvokeSpec::Kind::kGate || spec.kind == InvokeSpec::Kind::kAgent
             ? gateName(spec)
             : Join(prefix_, spec.name.empty() ? spec.target : spec.name);
}

void MachineActor::effectsOut(std::vector<std::string>& out) const {
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

Json MachineActor::snapshotBase() const {
  Json timers = Json::array();
  for (const auto& [t, armed] : timers_) {
    Obj timer;
    timer("id", t)("due", armed.due)("state", m_->timerState(t));
    if (armed.after >= 0) timer("after", armed.after);
    timers.push_back(std::move(timer));
  }
  return Obj()("kind", "machine")("name", *name_)("key", key_)("prefix", prefix_)(
      "state", m_->snapshot())("timers", std::move(timers))("ended", ended_);
}

Json MachineActor::snapshot() const {
  Json children = Json::array();
  for (const auto& [id, c] : children_) {
    children.push_back(
        Obj()("spec", SpecJson(c.spec))("actor", c.actor ? c.actor->snapshot() : Json(nullptr)));
  }
  Json out = snapshotBase();
  out["children"] = std::move(children);
  return out;
}

void MachineActor::snapshotText(std::string& out) const {
  WriteMerged(out, snapshotBase(), "children", [this](std::string& to) {
    to += '[';
    for (const auto& [id, c] : children_) {
      if (to.back() != '[') to += ',';
      to += "{\"actor\":";  // {actor, spec}, by name
      if (c.actor) {
        c.actor->snapshotText(to);
      } else {
        to += "null";
      }
      to += ",\"spec\":";
      AppendJson(to, SpecJson(c.spec));
      to += '}';
    }
    to += ']';
  });
}

std::string MachineActor::KindText(const InvokeSpec& spec) {
  switch (spec.kind) {
    case InvokeSpec::Kind::kGate:
      return spec.name.empty() ? "a Gate" : "the Gate `" + spec.name + "`";
    case InvokeSpec::Kind::kAgent:
      return "the Agent `" + spec.target + "`";
    case InvokeSpec::Kind::kMachine:
      return "`" + spec.target + "`" + (spec.name.empty() ? "" : " as `" + spec.name + "`");
    case InvokeSpec::Kind::kExtern:
    case InvokeSpec::Kind::kStd:
      break;
  }
  return "the effect `" + spec.target + "`" + (spec.name.empty() ? "" : " as `" + spec.name + "`");
}

// Another build's ids may name other invokes and timers (they are indexes), so each stored child
// and timer is matched to this build's by what it is: its state, kind, target and name (a timer:
// its state and duration), the n-th such to the n-th. One this build lacks fails the restore
// (NoLongerFits: the run is `drifted`), as `jr2c diff` says beforehand (D0706, D0708).
void MachineActor::restoreFrom(const Json& snap) {
  m_->restore(*this, snap.at("state"));
  ended_ = snap.at("ended").get<bool>();
  std::map<std::tuple<int, std::string, std::string, std::string>, int> seen;  // → rank
  for (const auto& c : snap.at("children")) {
    InvokeSpec spec = SpecFrom(c.at("spec"));
    const int rank = seen[{static_cast<int>(spec.kind), spec.statePath, spec.target, spec.name}]++;
    const int id = m_->invokeIdNow(spec, rank);
    if (id < 0) {
      throw NoLongerFits("the saved run of `" + std::string(m_->name()) + "` waits on " +
                         KindText(spec) + " in state `" + spec.statePath +
                         "`, which this build no longer invokes there");
    }
    const bool moved = id != spec.id;
    spec.id = id;
    Child child{spec, nullptr, nullptr};
    if (!c.at("actor").is_null())
      child.actor = Actor::Restore(run_, this, c.at("actor"), moved ? id : -1);
    children_.emplace(spec.id, std::move(child));
    openIfGate(spec);
    if (spec.kind == InvokeSpec::Kind::kExtern || spec.kind == InvokeSpec::Kind::kStd) {
      resumeEffect(spec.id, spec.target, spec.input);
    }
  }
  std::map<std::pair<std::string, int64_t>, int> timerSeen;  // → rank
  for (const auto& t : snap.at("timers")) {
    int id = t.at("id").get<int>();
    const Armed armed{t.at("due").get<int64_t>(),
                      t.contains("after") ? t.at("after").get<int64_t>() : -1};
    // A snapshot from before timers kept their state (or their duration) keeps its ids.
    if (const auto state = t.find("state"); state != t.end() && armed.after >= 0) {
      const std::string path = state->get<std::string>();
      id = m_->timerIdNow(path, armed.after, timerSeen[{path, armed.after}]++, id);
      if (id < 0) {
        throw NoLongerFits("the saved run of `" + std::string(m_->name()) + "` has the `after " +
                           jr2::meant::DurationLiteral(armed.after) + "` of state `" + path +
                           "` armed, which this build no longer has");
      }
    }
    timers_[id] = armed;
    run_.schedule(this, id, armed.due);
  }
}

void MachineActor::startTimer(int id, Duration after) {
  touch();
  const Armed armed{run_.clock().nowMs() + after.ms, after.ms};
  timers_[id] = armed;
  run_.schedule(this, id, armed.due);
}

void MachineActor::cancelTimer(int id) {
  touch();
  timers_.erase(id);
  run_.unschedule(this, id);
}

void MachineActor::cancelInvoke(int id) {
  touch();
  auto it = children_.find(id);
  if (it == children_.end()) return;
  closeChild(it->second);
  children_.erase(it);
}

void MachineActor::log(const Json& value) {
  run_.emit(
      "log", {{"machine", Join(prefix_, *name_)}, {"value", value}},
      Join(prefix_, *name_) + ": " + (value.is_string() ? value.get<std::string>() : value.dump()));
}

std::string MachineActor::effectName(const InvokeSpec& spec) const {
  std::string what = Join(prefix_, spec.name.empty() ? spec.statePath : spec.name);
  return what + (what.empty() ? "" : ": ") + spec.target;
}

std::string MachineActor::gateName(const InvokeSpec& spec) const {
  return Join(prefix_, spec.name.empty() ? spec.statePath : spec.name);
}

void MachineActor::openIfGate(const InvokeSpec& spec) {
  if (spec.kind != InvokeSpec::Kind::kGate && spec.kind != InvokeSpec::Kind::kAgent) return;
  OpenGate g;
  g.name = gateName(spec);
  g.kind = spec.kind == InvokeSpec::Kind::kAgent ? OpenGate::Kind::kAgent : OpenGate::Kind::kGate;
  // Its meta and Agent slot stay in `spec` (Run::shown reads them through invokeSpec).
  run_.openGate(std::move(g),
                AcceptedAt(*m_, spec.statePath, spec.kind == InvokeSpec::Kind::kAgent), this,
                spec.id);
}

void MachineActor::closeChild(Child& c) {
  if (c.spec.kind == InvokeSpec::Kind::kGate || c.spec.kind == InvokeSpec::Kind::kAgent) {
    run_.closeGate(gateName(c.spec));
  }
  if (c.actor) c.actor->stop();
  if (c.effect) {
    if (c.effect->pid >= 0 && !c.effect->reaped) mixedOut_.insert(gateName(c.spec));
    c.effect->cancel();  // held: never starts; a process: killed
  }
}

void MachineActor::after() {
  if (m_->isDone()) complete(m_->output());
}

void MachineActor::startInvoke(const InvokeSpec& spec) {
  touch();
  Child child{spec, nullptr, nullptr};
  switch (spec.kind) {
    case InvokeSpec::Kind::kGate:
    case InvokeSpec::Kind::kAgent:
      // A Gate with no meta keeps null, not an empty object (a heap map a parked worker would
      // hold for nothing); Run::shown shows `{}` for it, as the author wrote none.
      if (child.spec.input->is_object() && child.spec.input->empty()) child.spec.input = nullptr;
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
    // Set on the thread that ran it, read back on the strand (the post between orders them).
    auto defect = std::make_shared<bool>(false);
    if (!registry.isProcess(target)) {
      const HostFunction* fn = registry.host(target);
      if (fn == nullptr) throw Defect("no host function `" + target + "` is registered");
      // What it throws that is not a Failure is a defect of the run (docs/host-functions.md):
      // carried back as a Failure, with `defect` set beside it (no Failure of the function's own
      // can set it), so that it is recorded as the call's result (marked `defect`: a replay ends
      // the run `error` where it did) before the run ends `error`.
      work = [call = *fn, input, defect] {
        try {
          return call(input);
        } catch (const Failure&) {
          throw;
        } catch (const std::exception& e) {
          *defect = true;
          throw Failure(ErrorText(e));
        } catch (...) {
          *defect = true;
          throw Failure("a host function threw something that is not a std::exception");
        }
      };
    }
    std::weak_ptr<int> alive = self->token();
    auto then = [self, id, alive](const Json& out) {
      if (alive.expired()) return;
      self->traceResult(id, &out, nullptr);
      self->childDone(id, out);
    };
    auto failed = [self, id, alive, defect](const Failure& f) {
      // A defect ends the run even when its call's machine is gone (as it always did).
      if (alive.expired()) {
        if (*defect) throw Defect(f.reason());
        return;
      }
      self->traceResult(id, nullptr, &f, *defect);
      if (*defect) throw Defect(f.reason());
      self->childFailed(id, f);
    };
    // A replay answers it from its trace: nothing goes out (docs/runtime.md#replay).
    if (Replayer* replayer = self->run_.replayer()) {
      auto defected = [failed, defect](const Failure& f) {
        *defect = true;
        failed(f);
      };
      replayer->effect(self->effectName(child->second.spec), input, control, std::move(then),
                       std::move(failed), std::move(defected));
      return;
    }
    // At most once (docs/runtime.md#saved-as-it-moves-effects-at-most-once): a non-idempotent
    // effect goes out only after the commit that stores this child, so a restore that finds the
    // child without a result knows it may have run, and does not run it again. A process is awaited
    // on the executor, holding no thread.
    if (registry.isProcess(target)) {
      const InvokeSpec& spec = child->second.spec;
      for (const auto& [other, c] : self->children_) {
        if (other != id && c.effect && self->gateName(c.spec) == self->gateName(spec))
          self->mixedOut_.insert(self->gateName(spec));
      }
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
    const Failure interrupted("interrupted: the process stopped while " + target + " ran",
                              Json{{"effect", target},
                                   {"why",
                                    "it is not idempotent, so it is not run again by "
                                    "itself; `on error` may retry it on purpose"}});
    self->traceResult(id, nullptr, &interrupted);
    self->childFailed(id, interrupted);
  });
}

void MachineActor::traceResult(int id, const Json* output, const Failure* failure, bool defect) {
  if (!run_.heard()) return;
  const auto child = children_.find(id);
  if (child == children_.end()) return;  // cancelled meanwhile: its result goes nowhere
  // What it was asked, beside what it gave: a replay compares what a build asks with it.
  Json data = {{"effect", effectName(child->second.spec)},
               {"input", child->second.spec.input.json()}};
  if (output != nullptr) {
    data["output"] = *output;
  } else {
    data["failure"] = {{"reason", failure->reason()}, {"detail", failure->detail()}};
    if (defect) data["failure"]["defect"] = true;
  }
  // A process's stdout and stderr are in its `output` lines already, as far as those hold them
  // verbatim: stored once, its result keeps only the rest (export puts it together again).
  const std::shared_ptr<EffectControl>& control = child->second.effect;
  if (control && mixedOut_.count(gateName(child->second.spec)) == 0) {
    Json& result = output != nullptr ? data["output"] : data["failure"]["detail"];
    Json told = LeaveOutTold(result, control->told);
    if (!told.is_null()) {
      told["lines"] = gateName(child->second.spec);
      data["told"] = std::move(told);
    }
  }
  run_.emit("result", std::move(data), "");
}

}  // namespace jr2rt
