// `jr2c diff OLD NEW` (docs/diff.md): what a change to a program does to what is already stored
// and to what callers send, said before the change ships. Each change is one of:
//
//   - strands stored runs (an error, D0700–D0709): a run saved by OLD cannot be restored by
//     NEW, which marks it `drifted` (a workflow, machine, Pool or state gone, a `var` or
//     parameter whose stored value no longer fits, a parameter without a default added, an
//     invoke gone from a state a run can wait in, a Pool's worker changed);
//   - refuses what was accepted (an error, D0710–D0719): an event gone, or a payload that OLD
//     took and NEW refuses (a required field added, a field removed, a type narrowed);
//   - changes inputs (a warning, D0720–D0729): an input OLD took that NEW refuses, though no
//     stored run is stranded (a parameter removed);
//   - compatible: anything else (not reported).
//
// The rules are the runtime's own restore and reading rules (docs/diff.md#the-rules), stated
// once here: which stored values fit which types is `Fits`, below.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "compiler/diag/diagnostics.h"
#include "compiler/ir/statechart.h"
#include "compiler/sema/program.h"

namespace jr2::diff {

// One checked version of a program: what Analyze gave.
struct Version {
  const sema::Program& program;
  const ir::Program& charts;
};

// A waiting run of a store, as `jr2c diff --store` counts it: its workflow, each machine it has
// live with that machine's active states (paths, as its snapshot names them), and each Pool with
// live workers. The driver reads them from the store's snapshots.
struct WaitingRun {
  std::string workflow;
  std::vector<std::pair<std::string, std::vector<std::string>>> machines;
  std::vector<std::string> pools;
};

// Phase entry: every change from `before` to `after` that strands, refuses or changes inputs,
// reported into `diags` (removals at the old version's place, the rest at the new one's, with a
// note at the other). Given the waiting runs of a store, each change that strands says how many
// of them it strands (`2 of 41 waiting runs in the store are in `review.escalated``).
void Compare(const Version& before, const Version& after, Diagnostics& diags,
             const std::vector<WaitingRun>* waiting = nullptr);

// Whether every value of type `from` (what OLD stored or accepted) reads as type `to` (NEW's).
// `strict`: fields `to` lacks are refused (a payload, an input), not ignored (a stored context).
// When it does not fit, `why` says how (`needs the field `x`, which …`).
bool Fits(sema::TypePtr from, sema::TypePtr to, bool strict, std::string* why);

}  // namespace jr2::diff
