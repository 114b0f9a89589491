// The SCXML algorithm (W3C SCXML, Appendix D) over jr2c's tables, simplified where `.jr2` is
// simpler: transitions are external, there is one target, and no history states exist.

#include "jr2/statechart.h"

#include <algorithm>

namespace jr2rt {

Statechart::Statechart(const StateInfo* states, int stateCount, const TransitionInfo* transitions,
                       int transitionCount)
    : states_(states),
      stateCount_(stateCount),
      transitions_(transitions),
      transitionCount_(transitionCount),
      bySource_(static_cast<size_t>(stateCount)),
      active_(static_cast<size_t>(stateCount), 0) {
  for (int t = 0; t < transitionCount; ++t) {
    bySource_[static_cast<size_t>(transitions[t].source)].push_back(t);
    if (transitions[t].trigger == TransitionInfo::kAlways) hasAlways_ = true;
  }
  const auto n = static_cast<size_t>(transitionCount);
  domain_.assign(n, 0);
  exitCandidates_.assign(n, {});
  entries_.assign(n, {});
  exitMark_.assign(static_cast<size_t>(stateCount), 0);
  enterMark_.assign(static_cast<size_t>(stateCount), 0);
  for (int t = 0; t < transitionCount; ++t) {
    if (transitions[t].target == -1) continue;
    const int d = domain(t);
    domain_[static_cast<size_t>(t)] = d;
    for (int s = 0; s < stateCount; ++s) {
      if (isDescendant(s, d)) exitCandidates_[static_cast<size_t>(t)].push_back(s);
    }
    // The target with its default descendants, its ancestors below the domain, and the other
    // regions of any parallel ancestor among them.
    std::vector<bool> enter(static_cast<size_t>(stateCount), false);
    const int target = transitions[t].target;
    addDescendants(target, enter);
    for (int a = states_[target].parent; a != d && a != -1; a = states_[a].parent) {
      enter[static_cast<size_t>(a)] = true;
      if (states_[a].kind != StateInfo::kParallel) continue;
      for (int c = a + 1; c < stateCount; ++c) {
        if (states_[c].parent != a) continue;
        bool hasEntry = false;
        for (int x = 0; x < stateCount && !hasEntry; ++x) {
          hasEntry = enter[static_cast<size_t>(x)] && (x == c || isDescendant(x, c));
        }
        if (!hasEntry) addDescendants(c, enter);
      }
    }
    for (int s = 0; s < stateCount; ++s) {
      if (enter[static_cast<size_t>(s)]) entries_[static_cast<size_t>(t)].push_back(s);
    }
  }
}

bool Statechart::isDescendant(int s, int ancestor) const {
  for (int p = states_[s].parent; p != -1; p = states_[p].parent) {
    if (p == ancestor) return true;
  }
  return false;
}

void Statechart::addDescendants(int s, std::vector<bool>& into) const {
  into[static_cast<size_t>(s)] = true;
  const StateInfo& st = states_[s];
  if (st.kind == StateInfo::kCompound) {
    if (st.initial >= 0) addDescendants(st.initial, into);
  } else if (st.kind == StateInfo::kParallel) {
    for (int c = s + 1; c < stateCount_; ++c) {
      if (states_[c].parent == s) addDescendants(c, into);
    }
  }
}

void Statechart::begin(MachineHost& host) {
  host_ = &host;
  std::vector<bool> enter(static_cast<size_t>(stateCount_), false);
  addDescendants(0, enter);
  for (int s = 0; s < stateCount_; ++s) {
    if (!enter[static_cast<size_t>(s)]) continue;
    active_[static_cast<size_t>(s)] = true;
    this->enter(s);
    if (states_[s].kind == StateInfo::kFinal && states_[s].parent == 0) done_ = true;
  }
  if (done_) exitAll();
  runEventless();
}

void Statechart::runEventless() {
  if (!hasAlways_) return;
  const Event none;
  for (int steps = 0; !done_; ++steps) {
    if (steps > kMaxEventlessSteps) throw Defect("eventless transitions loop forever");
    const std::vector<int>& ts = select(nullptr);
    if (ts.empty()) break;
    microstep(ts, none);
  }
}

void Statechart::setActive(MachineHost& host, const std::vector<std::string>& paths, bool done) {
  host_ = &host;
  std::fill(active_.begin(), active_.end(), 0);
  for (const std::string& p : paths) {
    bool found = false;
    for (int s = 0; s < stateCount_; ++s) {
      if (p == states_[s].path) {
        active_[static_cast<size_t>(s)] = true;
        found = true;
      }
    }
    if (!found) throw NoLongerFits("the snapshot names no state `" + p + "` of " + name());
  }
  done_ = done;
}

void Statechart::exitAll() {
  for (int s = stateCount_ - 1; s >= 0; --s) {
    if (active_[static_cast<size_t>(s)]) exit(s);
  }
}

int Statechart::activeLeaf() const {
  for (int s = 0; s < stateCount_; ++s) {
    const auto kind = states_[s].kind;
    if (active_[static_cast<size_t>(s)] &&
        (kind == StateInfo::kAtomic || kind == StateInfo::kFinal))
      return s;
  }
  return -1;
}

std::string Statechart::timerState(int timerId) const {
  for (int t = 0; t < transitionCount_; ++t) {
    const TransitionInfo& info = transitions_[t];
    if (info.trigger == TransitionInfo::kAfter && info.id == timerId)
      return states_[info.source].path;
  }
  return {};
}

std::vector<int> Statechart::eventsHandledAt(const std::string& statePath) const {
  int state = -1;
  for (int s = 1; s < stateCount_ && state < 0; ++s) {
    if (statePath == states_[s].path) state = s;
  }
  if (state < 0) return Machine::eventsHandledAt(statePath);
  std::vector<int> out;
  for (int t = 0; t < transitionCount_; ++t) {
    const TransitionInfo& info = transitions_[t];
    if (info.trigger != TransitionInfo::kOn) continue;
    if (info.source != state && !isDescendant(state, info.source)) continue;
    if (std::find(out.begin(), out.end(), info.id) == out.end()) out.push_back(info.id);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> Statechart::activeStates() const {
  std::vector<std::string> out;
  for (int s = 1; s < stateCount_; ++s) {
    if (active_[static_cast<size_t>(s)]) out.emplace_back(states_[s].path);
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

const std::vector<int>& Statechart::select(const Event* event) {
  selected_.clear();
  const Event none;
  for (int s = 0; s < stateCount_; ++s) {
    if (!active_[static_cast<size_t>(s)]) continue;
    const auto kind = states_[s].kind;
    if (kind != StateInfo::kAtomic && kind != StateInfo::kFinal) continue;
    bool found = false;
    for (int st = s; st != -1 && !found; st = states_[st].parent) {
      for (int t : bySource_[static_cast<size_t>(st)]) {
        const TransitionInfo& info = transitions_[t];
        const bool ok =
            event == nullptr ? info.trigger == TransitionInfo::kAlways : matches(info, *event);
        if (!ok || !enabled(t, event == nullptr ? none : *event)) continue;
        if (std::find(selected_.begin(), selected_.end(), t) == selected_.end()) {
          selected_.push_back(t);
        }
        found = true;
        break;
      }
    }
  }
  if (selected_.size() <= 1) return selected_;
  // Conflicts: two transitions whose exit sets intersect. The one from the deeper source wins,
  // else the one selected first (document order).
  kept_.clear();
  for (int t : selected_) {
    bool keep = true;
    for (int& k : kept_) {
      if (transitions_[t].target == -1 || transitions_[k].target == -1) continue;
      const int dt = domain_[static_cast<size_t>(t)];
      const int dk = domain_[static_cast<size_t>(k)];
      const bool intersect = dt == dk || isDescendant(dt, dk) || isDescendant(dk, dt);
      if (!intersect) continue;
      if (isDescendant(transitions_[t].source, transitions_[k].source)) k = t;
      keep = false;
      break;
    }
    if (keep) kept_.push_back(t);
  }
  return kept_;
}

// The state whose descendants the transition exits and enters: the nearest proper ancestor of
// its source that is compound and contains its target.
int Statechart::domain(int t) const {
  const TransitionInfo& info = transitions_[t];
  for (int p = states_[info.source].parent; p != -1; p = states_[p].parent) {
    if (states_[p].kind == StateInfo::kParallel) continue;
    if (p == 0 || isDescendant(info.target, p)) return p;
  }
  return 0;
}

void Statechart::microstep(const std::vector<int>& transitions, const Event& event) {
  // Mark the exit and entry sets from the precomputed lists, then exit in reverse document
  // order, run the transitions' actions, and enter in document order.
  int lowest = stateCount_;
  int highest = -1;
  for (int t : transitions) {
    if (transitions_[t].target == -1) continue;
    for (int s : exitCandidates_[static_cast<size_t>(t)]) {
      if (!active_[static_cast<size_t>(s)]) continue;
      exitMark_[static_cast<size_t>(s)] = 1;
      lowest = std::min(lowest, s);
      highest = std::max(highest, s);
    }
  }
  for (int s = highest; s >= lowest && s >= 0; --s) {
    if (!exitMark_[static_cast<size_t>(s)]) continue;
    exitMark_[static_cast<size_t>(s)] = 0;
    exit(s);
    active_[static_cast<size_t>(s)] = false;
  }
  for (int t : transitions) act(t, event);
  lowest = stateCount_;
  highest = -1;
  for (int t : transitions) {
    if (transitions_[t].target == -1) continue;
    for (int s : entries_[static_cast<size_t>(t)]) {
      enterMark_[static_cast<size_t>(s)] = 1;
      lowest = std::min(lowest, s);
      highest = std::max(highest, s);
    }
  }
  for (int s = lowest; s <= highest; ++s) {
    if (!enterMark_[static_cast<size_t>(s)]) continue;
    enterMark_[static_cast<size_t>(s)] = 0;
    active_[static_cast<size_t>(s)] = true;
    enter(s);
    if (states_[s].kind == StateInfo::kFinal && states_[s].parent == 0) done_ = true;
  }
  if (done_) exitAll();
}

bool Statechart::dispatch(const Event& event) {
  if (done_) return false;
  const std::vector<int>& ts = select(&event);
  if (ts.empty()) return false;
  // `ts` is scratch space of select(); microstep() does not select, so it stays valid.
  microstep(ts, event);
  runEventless();
  return true;
}

}  // namespace jr2rt
