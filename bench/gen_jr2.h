// A generator of large, valid `.jr2` programs for the benchmarks (and for anyone who needs a big
// realistic file): `jr2_gen 10000 > big.jr2`.
#pragma once

#include <string>

namespace jr2::bench {

// Returns a `.jr2` program of about `approxLines` lines (never fewer; at most one unit, ~200
// lines, more) that `jr2c check` accepts without a diagnostic. The same seed gives the same text
// on every platform.
//
// The program is a series of units, each self-contained but for a few references to earlier
// units: record types (fields with descriptions, defaults, optionals, unions of literals, `list`,
// `map`, `json`, `duration`), events of every audience with fields, agents with text blocks,
// externs, sources of all three forms (`next: std.backlog(…)`/`std.queue(…)` with `wake` and
// `poll_every`, `read: extern … idempotent` with `items` and a `reread` hook, `push` with `carry`
// and `skip` hooks), machines with `var`s, `entry`/`exit`, nested, compound and parallel states,
// `on`/`always`/`after` transitions with guards and actions (assignments of object and list
// literals, arithmetic, `??`, `!`, `?:`, `len`, `contains`, `str`, `keys`), invokes (gates with and
// without a name and meta, agents, machines and pools `as NAME`, `std.command`, `extern`) with
// `on done`/`on error`, pools (of machines, and standing pools of `dispatch` runs) and workflows.
//
// It is written to the whole of docs/language.md, not only to what `jr2c check` checks today: every
// event is handled and sent only by a party that may send it, every state is entered, each
// compound state has one `initial` child, no transition is shadowed, and the types agree.
std::string GenerateJr2(int approxLines, unsigned seed = 1);

}  // namespace jr2::bench
