// What the files of the run host (jr2/host.h's RunHost, defined by concern) share and nothing
// else sees: host.cpp holds adopt, the group commit, the drive and the signal; inbox.cpp the
// inbox and the runs' drive locks; dispatch.cpp the door of the `dispatch` workers; hooks.cpp
// the hook deliveries; standing.cpp the standing Pools' lifecycle; reads.cpp the reads of the
// store; text.cpp the host's small words for a person. And GatesSeen, what a hosted run keeps of
// its Gates (host.cpp; its tests drive it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "jr2/store.h"

namespace jr2rt {

class Engine;

// The Gates a run hosted by a RunHost ever opened, by the hashes of their names (hadGate): read
// from the store at the first answer refused, then kept by the run's events. Nothing is kept for
// a run no answer was refused (a Pool of a million Gates would keep a million names) but the
// Gates whose lines are not stored yet (a batch or two). Two names of one hash read as one: a 409
// for a 404, one chance in 2^64 a pair.
class GatesSeen {
 public:
  // The run opened Gate `name` (its event, told before its line is stored).
  void opened(const std::string& name);
  // The run's lines stored, in the order they were told (a refused save's go back before
  // later ones, RunSaver::failed): the first of the Gates not stored yet are the ones here.
  void stored(const std::vector<FeedLine>& lines);
  // Whether the run ever opened `gate`. The first ask reads the store (`read`, every Gate
  // opened that it has) and takes the Gates not stored yet with it; the run's events tell the
  // rest from then on.
  bool had(const std::string& gate, const std::function<std::vector<std::string>()>& read);
  // How many hashes it holds room for until loaded (for the tests: a batch or two, never every
  // Gate the run opened).
  size_t unsavedCapacity() const { return unsaved_.capacity(); }

 private:
  static uint64_t Hash(const std::string& name) { return std::hash<std::string>()(name); }
  bool loaded_ = false;
  std::unordered_set<uint64_t> names_;  // once loaded
  // Until loaded: the Gates opened whose lines are not stored yet, in the order they opened,
  // from `head_` on (a vector, not a deque: an empty one costs no allocation). A save that
  // throws instead of giving its lines back (a fenced host, a command) leaves them here: the
  // host lets go of its runs then.
  std::vector<uint64_t> unsaved_;
  size_t head_ = 0;
};

// Refuses another workflow's run (BadInput): a runner drives the runs of its own workflows only.
void CheckWorkflow(const std::string& id, const std::string& actual, const std::string& wanted);

// Engine::again(), for the files of the host that do not include run/engine.h (and so pay
// nothing for Boost.Asio's headers): one more turn after the current one.
void AskAnotherTurn(Engine& engine);

// A new run's id: 12 hex digits (48 random bits).
std::string NewRunId();

// From any thread: the engine's wait between turns ends now (its stop test is asked at once).
void WakeEngine(Engine& engine);

}  // namespace jr2rt
