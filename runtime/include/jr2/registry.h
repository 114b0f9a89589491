// What generated code registers for the runner: its workflows, the description of each pool, and
// the host functions (`extern`) the program calls. Registration is an explicit function the
// runner calls (`jr2gen::<file>::RegisterWorkflows`), never a static initializer.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "jr2/json_value.h"
#include "jr2/statechart.h"

namespace jr2rt {

// What a pull Source's `next` is given (docs/runtime.md#the-pool): the ids of live workers in the
// order they started, the ids of items that finished or failed in this run, the failed subset, and
// the Pool's run input. The lists are shared with the Pool, which changes them in place only while
// no query holds them (copy on write): a Pool of 10,000 live workers or 100,000 settled items
// copies nothing per call. The `is…` lookups take constant time; their index is built on the first
// lookup (once, whichever thread asks: a query and its copies may be read from several threads).
// The live ids as a Pool keeps them: in the order they started, with a hole (an empty id, which
// no item has) where a worker settled since the list was last compacted, so that a settle shifts
// nothing however large the cap. The last slot is never a hole.
struct LiveIds {
  std::vector<std::string> slots;
  size_t holes = 0;
  size_t size() const { return slots.size() - holes; }
};

class NextQuery {
 public:
  using Ids = std::shared_ptr<const std::vector<std::string>>;
  NextQuery();
  // The input is shared, not copied: a Pool gives every call the same one.
  NextQuery(Ids active, Ids settled, Ids failed, std::shared_ptr<const Json> input);
  // The same with the Pool's live ids as it keeps them (the list is made without holes once,
  // when active() is first read).
  static NextQuery OfPool(std::shared_ptr<const LiveIds> live, Ids settled, Ids failed,
                          std::shared_ptr<const Json> input);

  // The Pool's run input.
  const Json& input() const { return input_ ? *input_ : Null(); }
  const std::vector<std::string>& active() const;
  // How many are live, and the newest of them (null when none), without making the list.
  size_t activeCount() const;
  const std::string* newestActive() const;
  const std::vector<std::string>& settled() const { return settled_ ? *settled_ : Empty(); }
  const std::vector<std::string>& failed() const { return failed_ ? *failed_ : Empty(); }
  bool isActive(const std::string& id) const;
  bool isSettled(const std::string& id) const;  // finished, done or failed
  bool isFailed(const std::string& id) const;

 private:
  struct Index;  // built once, on the first lookup, by whichever thread asks first
  const Index& index() const;
  static const std::vector<std::string>& Empty() {
    static const std::vector<std::string> kEmpty;
    return kEmpty;
  }
  static const Json& Null();
  std::shared_ptr<const Json> input_;
  std::shared_ptr<const LiveIds> live_;  // set, or active_ (or neither: none live)
  Ids active_, settled_, failed_;
  std::shared_ptr<Index> index_;  // shared by the query's copies
};

// A host function: `invoke extern NAME(ARGS)`, `read: extern NAME(ARGS)`. It takes the
// arguments as a JSON object by parameter name (positional arguments are named `arg0`, …) and
// gives its result; a Failure it throws is the invoking machine's Failure.
using HostFunction = std::function<Json(const Json& args)>;
// `next: extern NAME(ARGS)`: also given the query; it answers an item, null, or
// `{ item, open }` (the concept page's SourceNextResult).
using NextFunction = std::function<Json(const Json& args, const NextQuery& query)>;

// A `hook SERVICE "EVENT-KEY" => VERDICT` line of a source: what a Hook delivery of that service
// and event key does. `value` gives the verdict's value (the item of `carry`, the reason of
// `skip`; null for `reread`) from the delivery's body and the Source's own arguments.
struct HookSpec {
  enum class Verdict { kReread, kCarry, kSkip };
  std::string service;   // `sentry`
  std::string eventKey;  // `issue.created`
  Verdict verdict = Verdict::kReread;
  std::function<JsonValue(const Json& payload, const Json& params)> value;
};

struct SourceSpec {
  enum class Form { kNext, kRead, kPush };
  std::string name;
  Form form = Form::kNext;
  std::string function;  // `std.backlog`, or the extern's name; "" for push
  std::function<JsonValue(const Json& input)> args;  // the call's arguments from the pool's input
  std::string wake;                                  // the wake event's name; "" when none
  EventSpec wakeSpec;  // the wake event as the `source` Gate lists it (fields, description)
  // Checks a wake payload against the wake event's type (throws SchemaError naming
  // the field, like Machine::checkPayload); null when there is no wake event.
  std::function<void(const Json& payload)> checkWake;
  int64_t pollEveryMs = 0;                             // 0: no polling
  int64_t hold = 1000;                                 // push: the bound on held items
  std::function<JsonValue(const Json& answer)> items;  // read: the items of an answer
  // The Source's own arguments (its parameters bound from the pool's `source: NAME(…)`), what
  // a hook's value reads.
  std::function<JsonValue(const Json& input)> params;
  std::vector<HookSpec> hooks;  // in the order written
};

struct PoolSpec {
  std::string name;
  std::string worker;  // the worker machine, or the dispatched workflow
  bool dispatch = false;
  bool standing = false;
  bool reportFailures = false;  // `failures: report`
  MachineFactory makeWorker = nullptr;
  SourceSpec source;
  std::function<JsonValue(const Json& input)> parseInput;  // checks the input, applies defaults
  std::function<std::string(const Json& item, const Json& input)> itemId;
  std::function<int64_t(const Json& input)> cap;  // null: 1
  // The item by value: the Pool is done with it, so the worker's input can take it whole.
  std::function<JsonValue(JsonValue item, const Json& input)> itemInput;
};

struct WorkflowInfo {
  std::string name;
  std::string file;                  // `tickets.jr2`
  MachineFactory machine = nullptr;  // the top machine, when it is a machine
  const PoolSpec* pool = nullptr;    // the top machine, when it is a pool
  // The JSON Schema of its input (its top machine's or Pool's parameters), as JSON text; null
  // from code generated before it (serve's `GET /caller`, the console's start form).
  const char* inputSchema = nullptr;
  // What `jr2c check` worked out it can have live at once (docs/checks.md#e0412), as JSON text:
  // `{"workers": N, "processes": N, "runs": N}`, null where a figure is unbounded; null from
  // code generated before it. The runner's `--peak` and serve's /metrics show it.
  const char* concurrency = nullptr;
};

class NextSource;
struct SourceSite;
using ItemIdOf = std::function<std::string(const Json& item)>;

class Registry {
 public:
  // A Registry knows the standard library from the start (RegisterStd, jr2/source.h). Every
  // member is out of line (next_source.cpp): a generated source, which includes this header,
  // instantiates none of the maps.
  Registry();
  ~Registry();
  Registry(Registry&&) noexcept;
  Registry& operator=(Registry&&) noexcept;
  void addWorkflow(WorkflowInfo info);
  void addPool(const PoolSpec* pool);
  void addMachine(const std::string& name, MachineFactory make);
  // `idempotent`: the `extern` is declared `idempotent`, so a run restored while a call of it
  // was out calls it again; any other host function runs at most once
  // (docs/runtime.md#saved-as-it-moves-effects-at-most-once).
  void addHost(const std::string& name, HostFunction fn, bool idempotent = false);
  bool hostIdempotent(const std::string& name) const;
  // A Source function that makes a Source of its own for each Pool (the standard library's).
  using SourceFactory = std::function<std::unique_ptr<NextSource>(const SourceSite&)>;
  void addSource(const std::string& name, SourceFactory make);
  const SourceFactory* source(const std::string& name) const;
  // An effect that is a process (`std.command`): awaited on the executor, never on a thread.
  void addProcess(const std::string& name);
  bool isProcess(const std::string& name) const;
  void addNext(const std::string& name, NextFunction fn);
  // The same, for generated code: a host function the user defined, by its address (generated
  // code does not see `Json`, so it cannot make the std::function itself).
  using HostFunctionPtr = Json (*)(const Json& args);
  using NextFunctionPtr = Json (*)(const Json& args, const NextQuery& query);
  void addHostFunction(const std::string& name, HostFunctionPtr fn, bool idempotent = false);
  void addNextFunction(const std::string& name, NextFunctionPtr fn);

  // An `agent` declaration as a harness reads it: its entries by key (`model`, `instructions`
  // as text; `picks` as an integer, the bound of its picks at one opening of its Gate).
  void addAgent(const std::string& name, JsonValue definition);
  // The declaration of the Agent slot `name` (`triager`, or `alerts.triager` when the machine
  // invokes an imported Agent); null when no module declares it.
  const Json* agent(const std::string& name) const;

  // A module of the program and the hash of its text (the generated code registers it).
  void addModule(const std::string& file, const std::string& hash);
  // The runner's assembly: one hash of every module it was built from ("" when none says).
  std::string assembly() const;
  // The picture of workflow `workflow` (its machine's statechart or its Pool, as `jr2c graph`
  // draws it, laid out by Graphviz when the runner was built: cmake/Jr2Pictures.cmake), as SVG;
  // null when it was built without Graphviz. The web console shows it.
  void addPicture(const std::string& workflow, const unsigned char* svg, size_t size);
  const std::string* picture(const std::string& workflow) const;

  const std::vector<WorkflowInfo>& workflows() const;
  const WorkflowInfo* workflow(const std::string& name) const;
  const PoolSpec* pool(const std::string& name) const;
  MachineFactory machine(const std::string& name) const;
  // The registry's own copy of a machine's name (kept for the registry's life), or null.
  const std::string* machineName(const std::string& name) const;
  const HostFunction* host(const std::string& name) const;
  const NextFunction* next(const std::string& name) const;

 private:
  struct Tables;
  std::unique_ptr<Tables> t_;
};

}  // namespace jr2rt
