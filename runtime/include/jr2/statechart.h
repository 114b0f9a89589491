// The machine interface generated code implements, and the statechart engine that runs it.
//
// jr2c lowers each machine to static tables (its states and transitions, in document order, and
// each transition's domain, exit and entry sets, computed once at compile time) and to switch
// statements over their ids for what is the machine's own: guards, actions, entry and exit. The
// engine is the one implementation of the SCXML algorithm those tables drive: it selects
// transitions, takes the exit and entry sets from the tables, and runs eventless transitions to a
// fixed point; a machine instance costs its active flags and nothing else. docs/semantics.md says
// what it does, step by step.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jr2/json_value.h"

namespace jr2rt {

// An event's payload as its generated type: what Machine::parsePayload made when the answer was
// checked, handed to the transition's action so that the payload is read from JSON once.
struct Payload {
  virtual ~Payload() = default;
};
template <class T>
struct TypedPayload final : Payload {
  explicit TypedPayload(T v) : value(std::move(v)) {}
  T value;
};

// What reaches a machine: an external event at a Gate or from an Agent, the completion or the
// Failure of an invoked child, or a timer of an `after` transition.
struct Event {
  enum class Kind : uint8_t { kExternal, kDone, kError, kTimer };
  Kind kind = Kind::kExternal;
  int id = -1;     // kExternal: the machine's event id; kDone/kError: invoke id; kTimer: timer id
  JsonValue data;  // the payload; for kDone the child's output, for kError {reason, detail}
  // kExternal: the payload already read as its type when the answer was checked (null when it
  // was not: an event restored from a store, or one with no fields).
  std::shared_ptr<const Payload> typed = nullptr;
};

// The payload of `event` as the generated type `T`: the one the check read (Event::typed), or
// read from `event.data` now when there is none. `where` names the transition for an error.
template <class T>
T PayloadOf(const Event& event, const char* where) {
  if (const auto* t = dynamic_cast<const TypedPayload<T>*>(event.typed.get())) return t->value;
  return FromJson<T>(OrEmptyObject(event.data), where);
}

// A child a state invokes (docs/language.md#invokes), described for the host that runs it.
struct InvokeSpec {
  enum class Kind : uint8_t { kGate, kAgent, kMachine, kExtern, kStd };
  Kind kind = Kind::kGate;
  int id = -1;            // the invoke's id in its machine
  std::string target;     // agent, machine, pool or function name (`std.command`)
  std::string name;       // the authored Gate name or `as` name; "" when none
  std::string statePath;  // the invoking state's path (`review`), for Gate names
  JsonValue input;        // arguments, Gate meta or `{ prompt }`
};

// What a running machine asks of its run: timers and children. The run host implements it; a
// test implements it with a manual clock.
class MachineHost {
 public:
  virtual ~MachineHost() = default;
  virtual void startTimer(int timerId, Duration after) = 0;
  virtual void cancelTimer(int timerId) = 0;
  virtual void startInvoke(const InvokeSpec& spec) = 0;
  virtual void cancelInvoke(int invokeId) = 0;
  virtual void log(const Json& value) = 0;
};

// An event a machine handles, as a Gate lists it for a person (or an Agent's menu would).
struct EventSpec {
  enum class Audience : uint8_t { kUnset, kAgent, kExternal, kAny };
  struct Field {
    std::string name;
    std::string type;  // as written in `.jr2`: `string`, `list<Ticket>`, `"a" | "b"`
    bool required;
    std::string description;
  };
  std::string name;
  Audience audience = Audience::kUnset;
  std::string description;
  std::vector<Field> fields;
  // The payload's JSON Schema, as JSON text (sema::JsonSchema; "" when not known): what an
  // Agent's Menu gives a harness for this event.
  std::string schema = "";
};

// The interface of every generated machine.
// Event specs as generated code writes them: constants in static tables, made into EventSpecs by
// the library (a vector of EventSpecs built in place was the largest function of a generated
// source, and the slowest to compile).
struct EventFieldRow {
  const char* name;
  const char* type;
  bool required;
  const char* description;
};
struct EventSpecRow {
  const char* name;
  EventSpec::Audience audience;
  const char* description;
  const EventFieldRow* fields;
  int fieldCount;
  const char* schema;
};
std::vector<EventSpec> EventSpecs(const EventSpecRow* rows, int count);

class Machine {
 public:
  virtual ~Machine() = default;
  // The machine's name as declared.
  virtual const char* name() const = 0;
  // Checks `input` against the parameters (a clear error naming the field when it does not fit)
  // and enters the initial configuration.
  virtual void start(MachineHost& host, const Json& input) = 0;
  // Reads `input` exactly as start() does (the same checks, messages and defaults) into a scratch
  // context, and throws SchemaError where start() would; it changes nothing and needs
  // no host. The runtime calls it under a StrictFields scope before start(), so a run's input
  // with a field no parameter (or record) has is refused before anything begins.
  virtual void checkInput(const Json& input) const = 0;
  // One macrostep: the event, then every eventless transition it enables. Returns whether any
  // transition was taken. Throws Failure (the machine failed) or Defect (a broken invariant).
  virtual bool dispatch(const Event& event) = 0;
  // Maps an event name to its id for this machine (-1: the machine does not know it).
  virtual int eventId(std::string_view name) const = 0;
  // The events the machine handles, in id order.
  virtual std::vector<EventSpec> eventSpecs() const = 0;
  // Reads an event's payload as its type, checking it against its fields; throws SchemaError
  // naming the field. Null for an event with no fields. The run hands the result to dispatch()
  // (Event::typed), so an answer's payload is read once.
  virtual std::shared_ptr<const Payload> parsePayload(int eventId, const Json& payload) const = 0;
  // parsePayload(), for its check alone.
  void checkPayload(int eventId, const Json& payload) const {
    (void)parsePayload(eventId, payload);
  }
  virtual bool isDone() const = 0;
  // The output, once done (null for a machine without one).
  virtual JsonValue output() const = 0;
  // The active states' paths, in document order.
  virtual std::vector<std::string> activeStates() const = 0;
  // The active configuration and the context, and back. Restoring does not re-run entry actions.
  virtual JsonValue snapshot() const = 0;
  virtual void restore(MachineHost& host, const Json& snapshot) = 0;
  // The path of the state whose `after` starts timer `timerId` ("" for the machine's body, or
  // when unknown). The run host uses it to tell a deadline on an answer from work under way.
  virtual std::string timerState(int timerId) const {
    (void)timerId;
    return {};
  }
  // The ids of the events that a transition of state `statePath`, of one of its ancestors or of
  // one of its descendants handles, in id order: what a Gate (or an Agent) invoked from that state
  // accepts, as the load walk allows it (docs/language.md#invokes: "the state, or a state below
  // it"). ("" or a path the machine lacks: every event the machine handles.)
  virtual std::vector<int> eventsHandledAt(const std::string& statePath) const {
    (void)statePath;
    std::vector<int> all;
    for (int i = 0; i < static_cast<int>(eventSpecs().size()); ++i) all.push_back(i);
    return all;
  }
  // Whether a transition of an active state handles event `eventId` now: a Gate on a compound
  // state takes the events of the states below it only while one of them is active.
  virtual bool handlesNow(int eventId) const {
    (void)eventId;
    return true;
  }
  // The paths of the states whose transitions handle event `eventId`, for the refusal that names
  // them.
  virtual std::vector<std::string> statesHandling(int eventId) const {
    (void)eventId;
    return {};
  }
  // Where a stored run's child or timer belongs in this build (docs/runtime.md#what-a-new-build-
  // restores). Ids are indexes into the machine's invokes and timers, so another build's ids may
  // name other ones: a restore matches by what they are instead. The id this build gives the
  // `rank`-th invoke (0 first) that state `stored.statePath` makes of `stored.kind`,
  // `stored.target` and `stored.name`; -1 when it makes none (the run no longer fits). The
  // default, for a machine without tables, trusts the stored id.
  virtual int invokeIdNow(const InvokeSpec& stored, int rank) const {
    (void)rank;
    return stored.id;
  }
  // The same for the `rank`-th `after` of `afterMs` on state `statePath`.
  virtual int timerIdNow(const std::string& statePath, int64_t afterMs, int rank,
                         int storedId) const {
    (void)statePath, (void)afterMs, (void)rank;
    return storedId;
  }
};

using MachineFactory = std::unique_ptr<Machine> (*)();

// The static description of a machine jr2c generates.
struct StateInfo {
  enum Kind : uint8_t { kAtomic, kCompound, kParallel, kFinal };
  const char* path;  // "" for the root
  int parent;        // -1 for the root
  Kind kind;
  int initial;  // compound: the initial child
  int depth;
  int firstTransition;  // its transitions: [firstTransition, firstTransition + transitions)
  int transitions;
};

// A transition, with what jr2c computed for it: the exit and entry sets are runs of the
// machine's `sets` table (`k_*_sets`), state ids in document order.
struct TransitionInfo {
  enum Trigger : uint8_t { kOn, kAlways, kAfter, kDone, kError };
  int source;
  Trigger trigger;
  int id;      // kOn: event id; kAfter: timer id; kDone/kError: invoke id
  int target;  // -1: targetless (stays, runs its actions only)
  bool guarded;
  int domain;      // the state whose descendants it exits and enters (0 when targetless)
  int exitFirst;   // the states it may exit: the domain's descendants (the active ones exit,
  int exits;       //   deepest first)
  int entryFirst;  // the states it enters: the target, its default descendants, its ancestors
  int entries;     //   below the domain and the other regions of a parallel one among them
};

// A machine's tables, as jr2c generates them (`k_*_tables`): states and transitions in document
// order, the sets the transitions' runs index, the initial configuration (a run of `sets`: the
// root's default descendants, in document order) and whether any transition is eventless.
// A machine's invokes and timers by id, for restoring another build's snapshot
// (Machine::invokeIdNow, timerIdNow).
struct InvokeInfo {
  int state;  // the invoking state
  InvokeSpec::Kind kind;
  const char* target;  // as InvokeSpec::target
  const char* name;    // as InvokeSpec::name
};
struct TimerInfo {
  int state;  // the state whose `after` it is
  int64_t ms;
};

struct MachineTables {
  const StateInfo* states;
  int stateCount;
  const TransitionInfo* transitions;
  int transitionCount;
  const int* sets;
  int initialFirst;
  int initialCount;
  bool hasAlways;
  const InvokeInfo* invokes;
  int invokeCount;
  const TimerInfo* timers;
  int timerCount;
};

// Whether generated machines take their generated fast path (on by default). Off with the
// environment variable JR2_NO_FAST_PATH=1, read once, or SetFastPath(false): a machine started
// or restored while it is off runs on the table engine alone, so that one program can run one
// trace both ways (tests/codegen). `jr2c compile --no-fast-path` generates no fast path at all.
namespace detail {
extern std::atomic<int> g_fastPath;  // -1: not read yet; then 0 or 1
bool ReadFastPath();                 // reads JR2_NO_FAST_PATH, once
}  // namespace detail
inline bool FastPath() {
  const int on = detail::g_fastPath.load(std::memory_order_relaxed);
  return on < 0 ? detail::ReadFastPath() : on == 1;
}
// How many events a generated fast path handed to the table engine while it held a leaf: none,
// ever, unless the generated switch over the leaves misses one (the tables would then answer
// the event rightly and slowly, so no other test would see it). tests/codegen reads it.
uint64_t FastPathMisses();
void SetFastPath(bool on);

// Runs the SCXML algorithm over a generated machine's tables.
class Statechart : public Machine {
 public:
  bool dispatch(const Event& event) override;
  bool isDone() const override { return done_; }
  std::vector<std::string> activeStates() const override;
  std::string timerState(int timerId) const override;
  std::vector<int> eventsHandledAt(const std::string& statePath) const override;
  bool handlesNow(int eventId) const override;
  std::vector<std::string> statesHandling(int eventId) const override;
  int invokeIdNow(const InvokeSpec& stored, int rank) const override;
  int timerIdNow(const std::string& statePath, int64_t afterMs, int rank,
                 int storedId) const override;

 protected:
  explicit Statechart(const MachineTables& tables);

  // Enters the initial configuration and runs eventless transitions (call from start()).
  void begin(MachineHost& host);
  MachineHost& host() { return *host_; }
  // For restore(): the active configuration by paths.
  void setActive(MachineHost& host, const std::vector<std::string>& paths, bool done);
  // setActive from a snapshot's `active` (its paths) and `done`.
  void restoreActive(MachineHost& host, const Json& snapshot);
  // For generated fast paths, which take the engine's steps themselves (see codegen.cpp): a
  // machine with one active leaf keeps it here, and a step sets it and nothing else. The active
  // flags are made from it (the leaf and its ancestors) only when they are read: by the table
  // engine, a snapshot (activeStates), activeLeaf, the final exit. -1 for a machine without
  // one, whose flags are kept by every step, and for one that is done or runs on the tables
  // (JR2_NO_FAST_PATH): its generated dispatch() hands those to Statechart::dispatch. Declared
  // last (below), next to the generated class's context, which a step reads and writes with it.
  // After begin() or setActive(): leaf_ from the flags, or -1 as said above. So FastPath() is
  // read when a machine starts or is restored, and the step itself asks nothing but its leaf.
  void takeLeaf();
  void markDone() {
    done_ = true;
    exitAll();
    leaf_ = flagsLeaf_ = -1;  // the flags keep the final configuration; no step follows
  }
  // When the machine is done: run the exit of every active state, deepest first, down to the
  // root (SCXML's final exit). The configuration stays recorded for snapshots and status.
  void exitAll();
  // The first active atomic or final state, in document order (-1: none).
  int activeLeaf() const;

  // Generated: the machine's own code, as switches over state and transition ids.
  virtual bool guard(int transition, const Event& event) = 0;
  virtual void act(int transition, const Event& event) = 0;
  virtual void enter(int state) = 0;  // entry actions, then the state's invokes and timers
  virtual void exit(int state) = 0;   // exit actions, then cancel the state's invokes and timers

 private:
  bool enabled(int t, const Event& event);
  bool matches(const TransitionInfo& t, const Event& event) const;
  // The transitions one microstep takes: on the stack of the macrostep that selects them (no
  // heap up to 8, and nothing kept in the instance: a parked machine holds no scratch space).
  struct Picked {
    static constexpr size_t kInline = 8;
    size_t n = 0;
    int small[kInline];
    std::vector<int> more;  // all of them, once there are more than kInline
    int* data() { return more.empty() ? small : more.data(); }
    const int* begin() const { return more.empty() ? small : more.data(); }
    const int* end() const { return begin() + n; }
    void push(int t);
  };
  void select(const Event* event, Picked& out);  // null: eventless
  void microstep(const Picked& transitions, const Event& event);
  void runEventless();
  bool isDescendant(int s, int ancestor) const;
  bool active(int state) const { return (active_[static_cast<size_t>(state)] & kActive) != 0; }
  // The flags made from leaf_ when it moved since they were last made or read as they are.
  void syncFlags() const {
    if (leaf_ != flagsLeaf_) flagsFromLeaf();
  }
  void flagsFromLeaf() const;
  bool flagged(int s, uint8_t flag) const { return (active_[static_cast<size_t>(s)] & flag) != 0; }
  void flag(int s, uint8_t flag, bool on) {
    auto& f = active_[static_cast<size_t>(s)];
    f = static_cast<uint8_t>(on ? f | flag : f & ~flag);
  }

  // The tables jr2c generated (static: no instance computes anything from them at its start).
  const MachineTables& tables_;
  const StateInfo* states_;
  const TransitionInfo* transitions_;
  int stateCount_;
  // Per state: active, and the exit and entry marks of the microstep under way. Bytes, not
  // vector<bool>: a bit update costs more than the step. Up to 16 states they live in the
  // instance (a Pool makes one per item: an allocation each was a tenth of the item's mallocs);
  // a bigger machine's are its one allocation. Mutable: a read remakes them from leaf_
  // (syncFlags).
  static constexpr uint8_t kActive = 1, kExitMark = 2, kEnterMark = 4;
  class StateFlags {
   public:
    explicit StateFlags(size_t n)
        : n_(n), heap_(n > kInline ? std::make_unique<uint8_t[]>(n) : nullptr) {}
    uint8_t& operator[](size_t i) { return data()[i]; }
    uint8_t operator[](size_t i) const { return data()[i]; }
    uint8_t* begin() { return data(); }
    uint8_t* end() { return data() + n_; }

   private:
    static constexpr size_t kInline = 16;
    uint8_t* data() { return heap_ ? heap_.get() : small_; }
    const uint8_t* data() const { return heap_ ? heap_.get() : small_; }
    size_t n_;
    uint8_t small_[kInline] = {};
    std::unique_ptr<uint8_t[]> heap_;  // value-initialized: zeros
  };
  mutable StateFlags active_;
  mutable int flagsLeaf_ = -1;  // the leaf_ the flags agree with
  MachineHost* host_ = nullptr;
  bool done_ = false;

 protected:
  // The fast path's leaf (above). The last member, so that it shares a cache line with the first
  // members of the generated class after it (its context): a step touches both, and a Pool's
  // workers are stepped in no order the cache can guess. 4,096 machines stepped at random took
  // 12.1 ns an event with it beside the vtable pointer, 11.5 ns with it here (`dispatch_many`).
  int leaf_ = -1;
};

// How many eventless microsteps one macrostep may take before the machine is declared looping.
inline constexpr int kMaxEventlessSteps = 10000;

}  // namespace jr2rt
