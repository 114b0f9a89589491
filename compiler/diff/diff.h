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

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
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
// live with that machine's active states (paths, as its snapshot names them) and stored values,
// and each Pool it has live with its stored input. The driver reads them from the store's
// snapshots. A change to a stored value's type counts the runs whose value does not read as the new
// type, by the runtime's own reading rules (`ValueFits`).
struct WaitingRun {
  // A part of `snapshot` (its JSON text), where a value is: read only when a change asks.
  struct Span {
    size_t at = 0;
    size_t size = 0;
  };
  struct Machine {
    std::string name;
    std::vector<std::string> active;
    Span context;  // its parameters' and `var`s' stored values (an object)
  };
  struct Pool {
    std::string name;
    Span input;            // its stored input; or, for the run's top Pool,
    Span inputOver;        // what it differs by from the run's input
    bool workers = false;  // whether it has live workers
  };
  std::string workflow;
  std::string snapshot;  // the snapshot's text, as the store holds it
  Span inputInSnapshot;  // the run's input, when the snapshot holds it
  std::string input;     // the run's input, when the store keeps it beside the snapshot
  std::vector<Machine> machines;
  std::vector<Pool> pools;
  // The text at `s`; "" when the snapshot was not kept (ScanSnapshot's `keepValues`).
  std::string_view text(Span s) const {
    return s.at + s.size <= snapshot.size() ? std::string_view(snapshot).substr(s.at, s.size)
                                            : std::string_view();
  }
};

// A stored run's snapshot text (the runtime's actors: `{kind: "machine", name, state: {active}}`
// and `{kind: "pool", name, workers}`, nested through `workers` and `children`) read into `run`'s
// machines and Pools. False when the text is not one JSON value, or nests deeper than 2,048.
// `keepValues`: the text is kept (`WaitingRun::snapshot`) for the stored values a change to a
// value's type reads; without, the scan copies nothing of it (a store of 10,000 runs is 15 MB).
bool ScanSnapshot(std::string_view text, WaitingRun& run, bool keepValues = true);

// Whether `changes` (what Compare reported without a store) has a change whose count reads the
// stored values (a `var`'s or parameter's type): then the store's snapshots are kept.
bool CountsReadValues(const Diagnostics& changes);

// Phase entry: every change from `before` to `after` that strands, refuses or changes inputs,
// reported into `diags` (removals at the old version's place, the rest at the new one's, with a
// note at the other). Given the waiting runs of a store, each change that strands says how many
// of them it strands (`2 of 41 waiting runs in the store are in `review.escalated``), and, given
// `stranding`, the code of each change that strands a run is added to that run's entry (one per
// waiting run, in order): what the agreement test holds to the runtime's own restore.
void Compare(const Version& before, const Version& after, Diagnostics& diags,
             const std::vector<WaitingRun>* waiting = nullptr,
             std::vector<std::vector<std::string>>* stranding = nullptr);

// How the values being compared were kept: a machine's stored context (every field written,
// read leniently: a field the new type lacks is ignored), a Pool's stored input (as its caller
// sent it, read leniently: a field that had a default may be absent), or what a caller sends
// (a payload, an input: read strictly, a field the new type lacks is refused).
enum class Read { kStored, kSent, kStrict };

// Whether every value of type `from` (what OLD stored or accepted) reads as type `to` (NEW's),
// kept as `read` says. When it does not fit, `why` says how (`has no field `x`, which …`). A
// null reads as absent where a value has a default: a `var` takes its initializer, a parameter
// or a record field its default (the runtime's ReadField and restore).
bool Fits(sema::TypePtr from, sema::TypePtr to, Read read, std::string* why);

// Whether one stored value reads as `to` when a run is restored (leniently: a record's fields
// `to` lacks are ignored; a field absent or null takes its default, and is refused without one).
// The runtime's reading rules (runtime/src/core/value.cpp), restated; the agreement test holds
// the two equal (tests/agreement).
bool ValueFits(const nlohmann::json& value, sema::TypePtr to);

}  // namespace jr2::diff
