// A run's trace (docs/runtime.md#traces): what each of its turns took in from outside — Gate and
// Agent answers, timers fired, effects' results, Source answers, hook deliveries, how dispatched
// runs ended —, read from its feed, where each is stored in the commit of the turn that took it.
// `<runner> export RUN` writes it; a replay answers every effect from it.
#pragma once

#include <ostream>
#include <string>

#include "jr2/registry.h"
#include "jr2/store.h"

namespace jr2rt {

// The version of the trace's format: its first line says it (`{"trace": 2, …}`). Version 1
// (jr2c before replay) had the inputs alone, with no turns: it cannot be replayed.
inline constexpr int kTraceVersion = 2;

// Whether a feed event of `kind` with `data` is an input of the turn it was stored with. The others
// (a Gate opened, an item settled, a line of a command's output) are what the run did with its
// inputs: a replay does them again.
bool IsTraceInput(const std::string& kind, const Json& data);

// Writes run `prefix` of `workflow` from `store` as a trace, one JSON object per line: a header
// (`trace`, `run`, `workflow`, `assembly`, `input`, `time`), each line of its feed in order
// (`seq`, `time`, `kind`, `data`, `line`) — each turn's `turn` mark, the inputs (IsTraceInput)
// and what the run did with them, which a replay compares —, and last how the run stands
// (`end`: `status`, `output`, `reason`). Throws what RunHost::resolve and Store::load throw.
void ExportTrace(Store& store, const Registry& registry, const std::string& workflow,
                 const std::string& prefix, std::ostream& out);

}  // namespace jr2rt
