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
      active_(static_cast<size_t>(stateCount), false) {
  for (int t = 0; t < transitionCount; ++t) {
    bySource_[static_cast<size_t>(transitions[t].source)].push_back(t);
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
  const Event none;
  for (int steps = 0; !done_; ++steps) {
    if (steps > kMaxEventlessSteps) throw Defect("eventless transitions loop forever");
    auto ts = select(nullptr);
    if (ts.empty()) break;
    microstep(ts, none);
  }
}

void Statechart::setActive(MachineHost& host, const std::vector<std::string>& paths, bool done) {
  host_ = &host;
  std::fill(active_.begin(), active_.end(), false);
  for (const std::string& p : paths) {
    bool found = false;
    for (int s = 0; s < stateCount_; ++s) {
      if (p == states_[s].path) {
        active_[static_cast<size_t>(s)] = true;
        found = true;
      }
    }
    if (!found) throw std::invalid_argument("the snapshot names no state `" + p + "` of " + name());
  }
  done_ = done;
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

std::vector<int> Statechart::select(const Event* event) {
  std::vector<int> selected;
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
        if (std::find(selected.begin(), selected.end(), t) == selected.end()) selected.push_back(t);
        found = true;
        break;
      }
    }
  }
  // Conflicts: two transitions whose exit sets intersect. The one from the deeper source wins,
  // else the one selected first (document order).
  std::vector<int> kept;
  for (int t : selected) {
    bool keep = true;
    for (size_t i = 0; i < kept.size(); ++i) {
      const int k = kept[i];
      if (transitions_[t].target == -1 || transitions_[k].target == -1) continue;
      const int dt = domain(t);
      const int dk = domain(k);
      const bool intersect = dt == dk || isDescendant(dt, dk) || isDescendant(dk, dt);
      if (!intersect) continue;
      if (isDescendant(transitions_[t].source, transitions_[k].source)) {
        kept[i] = t;
      }
      keep = false;
      break;
    }
    if (keep) kept.push_back(t);
  }
  return kept;
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
  std::vector<bool> exitSet(static_cast<size_t>(stateCount_), false);
  std::vector<bool> enterSet(static_cast<size_t>(stateCount_), false);
  for (int t : transitions) {
    const TransitionInfo& info = transitions_[t];
    if (info.target == -1) continue;
    const int d = domain(t);
    for (int s = 0; s < stateCount_; ++s) {
      if (active_[static_cast<size_t>(s)] && isDescendant(s, d))
        exitSet[static_cast<size_t>(s)] = true;
    }
    // The target with its default descendants, and its ancestors below the domain; an ancestor
    // that is parallel enters its other regions too.
    addDescendants(info.target, enterSet);
    for (int a = states_[info.target].parent; a != d && a != -1; a = states_[a].parent) {
      enterSet[static_cast<size_t>(a)] = true;
      if (states_[a].kind != StateInfo::kParallel) continue;
      for (int c = a + 1; c < stateCount_; ++c) {
        if (states_[c].parent != a) continue;
        bool hasEntry = false;
        for (int x = 0; x < stateCount_; ++x) {
          if (enterSet[static_cast<size_t>(x)] && (x == c || isDescendant(x, c))) hasEntry = true;
        }
        if (!hasEntry) addDescendants(c, enterSet);
      }
    }
  }
  // Exit in reverse document order, then the transitions' actions, then enter in document order.
  for (int s = stateCount_ - 1; s >= 0; --s) {
    if (!exitSet[static_cast<size_t>(s)]) continue;
    exit(s);
    active_[static_cast<size_t>(s)] = false;
  }
  for (int t : transitions) act(t, event);
  for (int s = 0; s < stateCount_; ++s) {
    if (!enterSet[static_cast<size_t>(s)]) continue;
    active_[static_cast<size_t>(s)] = true;
    enter(s);
    if (states_[s].kind == StateInfo::kFinal && states_[s].parent == 0) done_ = true;
  }
}

bool Statechart::dispatch(const Event& event) {
  if (done_) return false;
  auto ts = select(&event);
  if (ts.empty()) return false;
  microstep(ts, event);
  const Event none;
  for (int steps = 0; !done_; ++steps) {
    if (steps > kMaxEventlessSteps) throw Defect("eventless transitions loop forever");
    auto more = select(nullptr);
    if (more.empty()) break;
    microstep(more, none);
  }
  return true;
}

}  // namespace jr2rt
