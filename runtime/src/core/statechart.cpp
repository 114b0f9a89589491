// The SCXML algorithm (W3C SCXML, Appendix D) over jr2c's tables, simplified where `.jr2` is
// simpler: transitions are external, there is one target, and no history states exist.

#include "jr2/statechart.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "jr2/value.h"

namespace jr2rt {

namespace detail {
std::atomic<int> g_fastPath{-1};

bool ReadFastPath() {
  const char* off = std::getenv("JR2_NO_FAST_PATH");
  const int on = off != nullptr && *off != '\0' && std::string_view(off) != "0" ? 0 : 1;
  g_fastPath.store(on, std::memory_order_relaxed);
  return on == 1;
}
}  // namespace detail

namespace {
std::atomic<uint64_t> g_fast_path_misses{0};
}  // namespace

uint64_t FastPathMisses() { return g_fast_path_misses.load(std::memory_order_relaxed); }

void SetFastPath(bool on) { detail::g_fastPath.store(on ? 1 : 0, std::memory_order_relaxed); }

Statechart::Statechart(const MachineTables& tables)
    : tables_(tables),
      states_(tables.states),
      transitions_(tables.transitions),
      stateCount_(tables.stateCount),
      active_(static_cast<size_t>(tables.stateCount)) {}

bool Statechart::isDescendant(int s, int ancestor) const {
  for (int p = states_[s].parent; p != -1; p = states_[p].parent) {
    if (p == ancestor) return true;
  }
  return false;
}

void Statechart::begin(MachineHost& host) {
  host_ = &host;
  flagsLeaf_ = leaf_;  // the flags set here are the configuration
  for (int i = 0; i < tables_.initialCount; ++i) {
    const int s = tables_.sets[tables_.initialFirst + i];
    flag(s, kActive, true);
    this->enter(s);
    if (states_[s].kind == StateInfo::kFinal && states_[s].parent == 0) done_ = true;
  }
  if (done_) exitAll();
  runEventless();
}

void Statechart::runEventless() {
  if (!tables_.hasAlways) return;
  const Event none;
  for (int steps = 0; !done_; ++steps) {
    if (steps > kMaxEventlessSteps) throw Defect("eventless transitions loop forever");
    Picked ts;
    select(nullptr, ts);
    if (ts.n == 0) break;
    microstep(ts, none);
  }
}

void Statechart::takeLeaf() {
  leaf_ = FastPath() && !done_ ? activeLeaf() : -1;
  flagsLeaf_ = leaf_;
}

void Statechart::flagsFromLeaf() const {
  for (auto& f : active_) f = static_cast<uint8_t>(f & ~kActive);
  for (int s = leaf_; s != -1; s = states_[s].parent) active_[static_cast<size_t>(s)] |= kActive;
  flagsLeaf_ = leaf_;
}

std::vector<EventSpec> EventSpecs(const EventSpecRow* rows, int count) {
  std::vector<EventSpec> out;
  out.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    const EventSpecRow& row = rows[i];
    EventSpec spec;
    spec.name = row.name;
    spec.audience = row.audience;
    spec.description = row.description;
    for (int k = 0; k < row.fieldCount; ++k) {
      const EventFieldRow& f = row.fields[k];
      spec.fields.push_back({f.name, f.type, f.required, f.description});
    }
    spec.schema = row.schema;
    out.push_back(std::move(spec));
  }
  return out;
}

void Statechart::restoreActive(MachineHost& host, const Json& snapshot) {
  setActive(host, snapshot.at("active").get<std::vector<std::string>>(),
            snapshot.at("done").get<bool>());
}

void Statechart::setActive(MachineHost& host, const std::vector<std::string>& paths, bool done) {
  host_ = &host;
  flagsLeaf_ = leaf_;  // the flags set here are the configuration, whatever leaf_ says
  std::fill(active_.begin(), active_.end(), 0);
  for (const std::string& p : paths) {
    bool found = false;
    for (int s = 0; s < stateCount_; ++s) {
      if (p == states_[s].path) {
        flag(s, kActive, true);
        found = true;
      }
    }
    if (!found) throw NoLongerFits("the snapshot names no state `" + p + "` of " + name());
  }
  done_ = done;
}

void Statechart::exitAll() {
  syncFlags();
  for (int s = stateCount_ - 1; s >= 0; --s) {
    if (active(s)) exit(s);
  }
}

int Statechart::activeLeaf() const {
  syncFlags();
  for (int s = 0; s < stateCount_; ++s) {
    const auto kind = states_[s].kind;
    if (active(s) && (kind == StateInfo::kAtomic || kind == StateInfo::kFinal)) return s;
  }
  return -1;
}

std::string Statechart::timerState(int timerId) const {
  for (int t = 0; t < tables_.transitionCount; ++t) {
    const TransitionInfo& info = transitions_[t];
    if (info.trigger == TransitionInfo::kAfter && info.id == timerId)
      return states_[info.source].path;
  }
  return {};
}

int Statechart::invokeIdNow(const InvokeSpec& stored, int rank) const {
  for (int i = 0; i < tables_.invokeCount; ++i) {
    const InvokeInfo& info = tables_.invokes[i];
    if (info.kind == stored.kind && stored.statePath == states_[info.state].path &&
        stored.target == info.target && stored.name == info.name && rank-- == 0) {
      return i;
    }
  }
  return -1;
}

int Statechart::timerIdNow(const std::string& statePath, int64_t afterMs, int rank,
                           int /*storedId*/) const {
  for (int i = 0; i < tables_.timerCount; ++i) {
    const TimerInfo& info = tables_.timers[i];
    if (info.ms == afterMs && statePath == states_[info.state].path && rank-- == 0) return i;
  }
  return -1;
}

std::vector<int> Statechart::eventsHandledAt(const std::string& statePath) const {
  int state = -1;
  for (int s = 1; s < stateCount_ && state < 0; ++s) {
    if (statePath == states_[s].path) state = s;
  }
  if (state < 0) return Machine::eventsHandledAt(statePath);
  std::vector<int> out;
  for (int t = 0; t < tables_.transitionCount; ++t) {
    const TransitionInfo& info = transitions_[t];
    if (info.trigger != TransitionInfo::kOn) continue;
    if (info.source != state && !isDescendant(state, info.source) &&
        !isDescendant(info.source, state))
      continue;
    if (std::find(out.begin(), out.end(), info.id) == out.end()) out.push_back(info.id);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool Statechart::handlesNow(int eventId) const {
  syncFlags();
  for (int t = 0; t < tables_.transitionCount; ++t) {
    const TransitionInfo& info = transitions_[t];
    if (info.trigger == TransitionInfo::kOn && info.id == eventId && active(info.source))
      return true;
  }
  return false;
}

std::vector<std::string> Statechart::statesHandling(int eventId) const {
  std::vector<std::string> out;
  for (int t = 0; t < tables_.transitionCount; ++t) {
    const TransitionInfo& info = transitions_[t];
    if (info.trigger != TransitionInfo::kOn || info.id != eventId) continue;
    const std::string& path = states_[info.source].path;
    if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(path);
  }
  return out;
}

std::vector<std::string> Statechart::activeStates() const {
  syncFlags();
  std::vector<std::string> out;
  for (int s = 1; s < stateCount_; ++s) {
    if (active(s)) out.emplace_back(states_[s].path);
  }
  return out;
}

bool Statechart::matches(const TransitionInfo& t, const Event& event) const {
  switch (event.kind) {
    case Event::Kind::kExternal:
      return t.trigger == TransitionInfo::kOn && t.id == event.id;
    case Event::Kind::kTimer:
      return t.trigger == TransitionInfo::kAfter && t.id == event.id;
    case Event::Kind::kDone:
      return t.trigger == TransitionInfo::kDone && t.id == event.id;
    case Event::Kind::kError:
      return t.trigger == TransitionInfo::kError && t.id == event.id;
  }
  return false;
}

bool Statechart::enabled(int t, const Event& event) {
  return !transitions_[t].guarded || guard(t, event);
}

void Statechart::Picked::push(int t) {
  if (more.empty() && n < kInline) {
    small[n++] = t;
    return;
  }
  if (more.empty()) more.assign(small, small + n);
  more.push_back(t);
  ++n;
}

void Statechart::select(const Event* event, Picked& out) {
  out.n = 0;
  out.more.clear();
  const Event none;
  for (int s = 0; s < stateCount_; ++s) {
    if (!active(s)) continue;
    const auto kind = states_[s].kind;
    if (kind != StateInfo::kAtomic && kind != StateInfo::kFinal) continue;
    bool found = false;
    for (int st = s; st != -1 && !found; st = states_[st].parent) {
      const int first = states_[st].firstTransition;
      for (int t = first; t < first + states_[st].transitions; ++t) {
        const TransitionInfo& info = transitions_[t];
        const bool ok =
            event == nullptr ? info.trigger == TransitionInfo::kAlways : matches(info, *event);
        if (!ok || !enabled(t, event == nullptr ? none : *event)) continue;
        if (std::find(out.begin(), out.end(), t) == out.end()) out.push(t);
        found = true;
        break;
      }
    }
  }
  if (out.n <= 1) return;
  // Conflicts: two transitions whose exit sets intersect. The one from the deeper source wins,
  // else the one selected first (document order). Kept in place: the kept ones are a prefix,
  // never longer than the part already read.
  int* ts = out.data();
  size_t kept = 0;
  for (size_t i = 0; i < out.n; ++i) {
    const int t = ts[i];
    bool keep = true;
    for (size_t j = 0; j < kept; ++j) {
      int& k = ts[j];
      if (transitions_[t].target == -1 || transitions_[k].target == -1) continue;
      const int dt = transitions_[t].domain;
      const int dk = transitions_[k].domain;
      const bool intersect = dt == dk || isDescendant(dt, dk) || isDescendant(dk, dt);
      if (!intersect) continue;
      if (isDescendant(transitions_[t].source, transitions_[k].source)) k = t;
      keep = false;
      break;
    }
    if (keep) ts[kept++] = t;
  }
  if (!out.more.empty()) out.more.resize(kept);
  out.n = kept;
}

void Statechart::microstep(const Picked& picked, const Event& event) {
  // Mark the exit and entry sets from the tables, then exit in reverse document order, run the
  // transitions' actions, and enter in document order.
  int lowest = stateCount_;
  int highest = -1;
  for (int t : picked) {
    const TransitionInfo& info = transitions_[t];
    if (info.target == -1) continue;
    for (int i = info.exitFirst; i < info.exitFirst + info.exits; ++i) {
      const int s = tables_.sets[i];
      if (!active(s)) continue;
      flag(s, kExitMark, true);
      lowest = std::min(lowest, s);
      highest = std::max(highest, s);
    }
  }
  for (int s = highest; s >= lowest && s >= 0; --s) {
    if (!flagged(s, kExitMark)) continue;
    flag(s, kExitMark, false);
    exit(s);
    flag(s, kActive, false);
  }
  for (int t : picked) act(t, event);
  lowest = stateCount_;
  highest = -1;
  for (int t : picked) {
    const TransitionInfo& info = transitions_[t];
    if (info.target == -1) continue;
    for (int i = info.entryFirst; i < info.entryFirst + info.entries; ++i) {
      const int s = tables_.sets[i];
      flag(s, kEnterMark, true);
      lowest = std::min(lowest, s);
      highest = std::max(highest, s);
    }
  }
  for (int s = lowest; s <= highest; ++s) {
    if (!flagged(s, kEnterMark)) continue;
    flag(s, kEnterMark, false);
    flag(s, kActive, true);
    enter(s);
    if (states_[s].kind == StateInfo::kFinal && states_[s].parent == 0) done_ = true;
  }
  if (done_) exitAll();
}

bool Statechart::dispatch(const Event& event) {
  if (leaf_ >= 0) g_fast_path_misses.fetch_add(1, std::memory_order_relaxed);
  if (done_) return false;
  syncFlags();
  Picked ts;
  select(&event, ts);
  if (ts.n == 0) return false;
  microstep(ts, event);
  runEventless();
  return true;
}

}  // namespace jr2rt
