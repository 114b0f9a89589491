// A `dispatch` worker of a Pool of runs
// (docs/runtime.md#standing-pools-of-runs-over-push-sources-12): its item is a run of another
// workflow, keyed by the item's id, started (or found under its key) through the host's door
// (Dispatcher). It holds no state of the run's: it waits for the host to say that the run ended. A
// cancel of the Pool never cancels the run.
#pragma once

#include <string>
#include <utility>

#include "jr2/run.h"
#include "run/actors/actor.h"

namespace jr2rt {

class DispatchActor final : public Actor {
 public:
  DispatchActor(Run& run, Actor* parent, int key, std::string prefix, std::string workflow,
                std::string item, std::string pool)
      : Actor(run, parent, key, std::move(prefix)),
        workflow_(std::move(workflow)),
        item_(std::move(item)),
        pool_(std::move(pool)) {}
  void start(const Json& input) override;
  // The host says the run ended.
  void ended(const std::string& status, const Json& output, const std::string& reason);
  void deliver(int, const std::string&, const Json&, std::shared_ptr<const Payload>) override {}
  // The dispatch asked again (kRetry) after the store could not be reached.
  void timer(int id) override;
  void childDone(int, Json) override {}
  void childFailed(int, const Failure&) override {}
  void stop() override;
  std::shared_ptr<const Payload> check(int, const std::string& event, const Json&) const override;
  void checkInput(const Json&) const override {}  // the callee's door checks it

  Json snapshot() const override;
  void restoreFrom(const Json& snap);
  Json observe() const override;
  const std::string& runId() const { return run_id_; }

 private:
  void follow(const Dispatched& got);
  // Nothing was started (StoreUnreachable, DispatchPending): asked again a second later, with
  // `input` kept (and stored with the run, so that a restore asks again).
  void again(const Json& input, const std::string& why);
  void refuse(const std::string& mark, const std::string& why);
  std::string workflow_;
  std::string item_;
  std::string pool_;
  std::string run_id_;
  static constexpr int kRetry = 1;
  bool retrying_ = false;  // the store could not be reached: asked again at kRetry's timer
  Json input_;             // what it asks with meanwhile
};

}  // namespace jr2rt
