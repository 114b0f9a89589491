// A pull Source's `next` (docs/runtime.md#the-pool): what a Pool asks for its next item. The
// Pool keeps claim, settle, cap and the latch; a Source only answers. A Pool makes its Source at
// its first call and keeps it, so a Source may keep what it worked out (std.backlog's ready
// set). The Pool's one interface over its three forms of Source (pull, read, push) is private
// to the runtime: runtime/src/run/pool/pool_source.h.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "jr2/registry.h"
#include "jr2/value.h"

namespace jr2rt {

class Run;

// The Pool a call is for, as its Source sees it. One per Pool, shared by all its calls, so a
// call allocates nothing for it (two std::functions a call were a tenth of a Pool item's mallocs).
class SourcePort {
 public:
  virtual ~SourcePort() = default;
  // The lists and the input as they are when the call runs (a query held in a queue would make
  // every settle before it copy the settled list).
  virtual NextQuery query() const = 0;
  // The answer: an item, null, or `{ item, open }`; called once a call, from the run's strand or
  // another thread (it is posted onto the strand; a Pool gone by then is told nothing).
  virtual void answer(Json answer) const = 0;
};

// What a Source is given with each call, and how it answers.
struct SourceCall {
  // The Source's arguments, made once per Pool from its input.
  std::shared_ptr<const Json> args;
  std::shared_ptr<const SourcePort> port;
  NextQuery query() const { return port->query(); }
  void answer(Json a) const { port->answer(std::move(a)); }
};

class NextSource {
 public:
  virtual ~NextSource() = default;
  // Asks for the next item. A Source that cannot answer throws Defect (the run's error).
  virtual void next(Run& run, SourceCall call) = 0;
};

// The Source of one Pool: its `next:` function name, the Pool's `item_id` and the run's home.
struct SourceSite {
  std::string function;
  ItemIdOf idOf;
  std::string home;
};
using SourceFactory = std::function<std::unique_ptr<NextSource>(const SourceSite&)>;

// The Source for `site.function` in `run`: a scripted one (Run::scriptNext, for tests), one the
// registry has a factory for (the standard library's, RegisterStd), or an `extern` `next`
// function run on the thread pool. Throws Defect when the runner has none of them.
std::unique_ptr<NextSource> MakeNextSource(Run& run, const SourceSite& site);

// Registers the standard library with `registry`: the Sources `std.backlog` and `std.queue`, the
// effect `std.http_get` (a blocking, idempotent host function) and the process `std.command`.
// Every Registry does this when it is made.
void RegisterStd(Registry& registry);

}  // namespace jr2rt
