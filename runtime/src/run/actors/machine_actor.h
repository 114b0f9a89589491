// A generated machine, and the host it runs on (docs/runtime.md#a-run): its timers, its invokes
// (child machines and Pools, Gates and Agents' Gates, effects), and what it stores.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "jr2/run.h"
#include "jr2/statechart.h"
#include "run/actors/actor.h"

namespace jr2rt {

class MachineActor final : public Actor, public MachineHost {
 public:
  MachineActor(Run& run, Actor* parent, int key, std::string prefix, const std::string& machine)
      : MachineActor(run, parent, key, std::move(prefix), Resolve(run, machine)) {}
  // A machine class looked up once (a Pool's worker): its registered name and factory.
  struct Class {
    const std::string* name;
    MachineFactory make;
  };
  static Class Resolve(Run& run, const std::string& machine);
  MachineActor(Run& run, Actor* parent, int key, std::string prefix, const Class& c)
      : Actor(run, parent, key, std::move(prefix)), name_(c.name), m_(c.make()) {}
  void start(const Json& input) override;
  std::string timerState(int id) const override { return m_->timerState(id); }
  void checkInput(const Json& input) const override { m_->checkInput(input); }
  std::string invokeState(int id) const override;
  const InvokeSpec* invokeSpec(int id) const override;
  std::shared_ptr<const Payload> check(int, const std::string& event,
                                       const Json& payload) const override;
  Json kept() const override;
  void deliver(int, const std::string& event, const Json& payload,
               std::shared_ptr<const Payload> typed) override;
  void timer(int id) override;
  void childDone(int key, Json output) override;
  void childFailed(int key, const Failure& f) override;
  void stop() override;
  Json observe() const override;
  void observeText(std::string& out, const Json& over) const override;
  void effectsOut(std::vector<std::string>& out) const override;
  Json snapshot() const override;
  void snapshotText(std::string& out) const override;
  void restoreFrom(const Json& snap);

  // ---- MachineHost ---------------------------------------------------------------------------
  void startTimer(int id, Duration after) override;
  void cancelTimer(int id) override;
  void startInvoke(const InvokeSpec& spec) override;
  void cancelInvoke(int id) override;
  void log(const Json& value) override;

 private:
  struct Child {
    InvokeSpec spec;
    std::unique_ptr<Actor> actor;
    std::shared_ptr<EffectControl> effect;  // a host function's or a process's
  };

  // A child as a refusal names it: `the Gate `review``, `the effect `std.command``.
  static std::string KindText(const InvokeSpec& spec);
  static bool Idempotent(const Registry& registry, const std::string& target);
  // Sends out the effect of child `id` (a host function or a std effect).
  void launchEffect(int id, const std::string& target, const Json& input);
  // A restored run found child `id`'s effect out with no result: run again when idempotent,
  // else the child fails `interrupted`.
  void resumeEffect(int id, const std::string& target, const Json& input);
  // Records what effect `id` came back with (one of the two) on the feed, as a `result`: an
  // input of the turn it is taken in (docs/runtime.md#traces).
  // `defect`: the Failure is a host function's throw that was not one (the run ends `error`).
  void traceResult(int id, const Json* output, const Failure* failure, bool defect = false);
  // An effect as `status` names it when it was out at a save: `WHERE: TARGET`.
  std::string effectName(const InvokeSpec& spec) const;
  std::string gateName(const InvokeSpec& spec) const;
  // A child in the observation: its `id`, and what a child with no actor (a Gate, an Agent's
  // Gate, an effect) shows.
  std::string childId(const InvokeSpec& spec) const;
  static Json LeafObservation(const InvokeSpec& spec);
  // The snapshot without its `children` (snapshot() and snapshotText() add them).
  Json snapshotBase() const;
  void openIfGate(const InvokeSpec& spec);
  void closeChild(Child& c);
  void after();

  const std::string* name_;  // the registry's copy: a parked worker keeps no name of its own
  std::unique_ptr<Machine> m_;
  std::map<int, Child> children_;
  // The places whose processes' `output` lines may mix: one was cancelled while it ran (its
  // late lines may come after a later one's began), or two ran at once (parallel regions that
  // name their invokes alike). A `result` there keeps its whole output (traceResult).
  std::set<std::string> mixedOut_;
  // The armed timers: when each falls due, and its `after` (what is told when it fires; -1 when
  // a restored snapshot did not say). One map, not three: a parked worker holds it.
  struct Armed {
    int64_t due;
    int64_t after;
  };
  std::map<int, Armed> timers_;
};

}  // namespace jr2rt
