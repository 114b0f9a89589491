// `jr2c graph`: one machine's statechart as a picture, in Graphviz DOT or Mermaid
// (`stateDiagram-v2`). Reads only the statechart IR (and the AST nodes it points at).
#pragma once

#include <string>

#include "compiler/ir/statechart.h"

namespace jr2::graph {

enum class Format { kDot, kMermaid };

// Phase entry: renders one machine. Compound states are clusters, a parallel state's regions are
// dashed, initial and final states are marked, each transition is an edge labelled with its
// trigger and guard (a targetless one is a dotted self-loop), and a state's invokes are lines of
// its label (a Gate and an Agent slot also get a colour of their own). Deterministic: the same
// machine gives byte-identical output.
std::string Render(const ir::Machine& machine, Format format);

// Renders a Pool, which has no states of its own: its Source (with the call that gives items,
// and the event that wakes it), the Pool (with `cap`, `item_id`, `failures` and whether it
// stands) and its worker, each item a worker; the `source` Gate when the Source wakes on an
// event. Deterministic, like Render.
std::string RenderPool(const ast::PoolDecl& pool, Format format);

// A picture with a line under it (`at most at once: 8 workers, 0 processes, 0 runs`, a
// workflow's concurrency, walk/budget.h): DOT's graph label at the bottom, or a Mermaid comment.
std::string WithCaption(std::string picture, const std::string& caption, Format format);

}  // namespace jr2::graph
