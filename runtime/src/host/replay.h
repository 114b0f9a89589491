// A replay (docs/runtime.md#replay): a run's trace (trace.h) driven again through this build, on a
// manual clock set to each input's recorded time, with every effect and Source call held and
// answered from the trace, so that nothing runs. Turn by turn, what this build did is compared
// with what the run did: the same events (as a multiset: the order of one turn's steps depends on
// when its effects came back), the same end. `<runner> replay FILE` and `test --traces DIR`.
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <memory>
#include <string>

#include "jr2/registry.h"
#include "jr2/value.h"

namespace jr2rt {

struct ReplayResult {
  std::string run, workflow;
  int turns = 0;       // of the trace
  int64_t inputs = 0;  // delivered or found made by the run itself (a restore's `interrupted`)
  int64_t held = 0;    // effects and Source calls this build asked for, none of them run
  bool identical = true;
  // How the replayed run stands at the end (or at the divergence).
  std::string status;
  Json output;
  std::string reason;
  // The first divergence, when not identical: its turn (0: the end), the seq of the trace's
  // line where it shows, and what was recorded and what this build did there (each a list of
  // `{kind, data, line}`), with a message a person reads
  // (`turn 17: recorded T-3 settled; this build: T-3 failed: …`).
  int turn = 0;
  int64_t seq = 0;
  Json recorded, replayed;
  std::string message;
  Json json() const;
};

// A trace read and checked, not yet replayed.
struct Trace;
class ReadTrace {
 public:
  // Reads the trace from `in` (`name` names it in errors). Throws BadInput, naming the trace's
  // line, when it is not a trace this runner reads (not JSON lines, another version, no turns,
  // cut short).
  ReadTrace(std::istream& in, const std::string& name);
  ~ReadTrace();
  ReadTrace(const ReadTrace&) = delete;
  ReadTrace& operator=(const ReadTrace&) = delete;
  const std::string& workflow() const;
  const Trace& trace() const { return *trace_; }

 private:
  std::unique_ptr<Trace> trace_;
};

// Replays `trace` through `registry`'s build of its workflow. `line` takes each line a person
// would have been shown as the replay makes it. Throws BadInput when the build lacks the
// workflow.
ReplayResult Replay(const Registry& registry, const ReadTrace& trace,
                    const std::function<void(const std::string&)>& line = nullptr);

}  // namespace jr2rt
