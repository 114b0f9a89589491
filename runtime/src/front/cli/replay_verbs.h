// `<runner> replay FILE` and `<runner> test --traces DIR` (docs/runtime.md#replay): a trace, or a
// folder of them, driven again through this build with every effect answered from the trace.
#pragma once

#include <string>

#include "jr2/registry.h"

namespace jr2rt {

// Exit codes of both: 0 every trace replayed identically, 1 one diverged (said on stdout, with its
// turn); a trace this runner cannot read throws BadInput (65).
inline constexpr int kExitDiverged = 1;

// Replays FILE, a trace of `workflow` (the runner's: a trace of another is refused, 65); the
// run's lines go to stderr as they are made again, then the run's output (or, with `json`, the
// whole result) on stdout, or the first divergence.
int ReplayVerb(const Registry& registry, const std::string& workflow, const std::string& file,
               bool json);
// Replays every `*.jsonl` trace of `workflow` in DIR, in name order, a line each (`ok`,
// `DIVERGED`, `UNREADABLE`; a trace of another workflow is `skipped`) and a count; with `json`,
// one document. Exit 1 when one diverged, else 65 when one cannot be read or DIR holds no trace
// of `workflow`, else 0.
int TestTracesVerb(const Registry& registry, const std::string& workflow, const std::string& dir,
                   bool json);

}  // namespace jr2rt
