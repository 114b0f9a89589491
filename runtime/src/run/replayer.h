// A replay's hold on a run (docs/runtime.md#replay): while a Run has one (Run::replayWith), no
// effect and no Source call of it goes out. Each is handed to the Replayer instead, which answers
// it later, on the run's strand, from the trace's recorded inputs (runtime/src/host/replay.h).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "jr2/stdlib.h"
#include "jr2/value.h"

namespace jr2rt {

class Replayer {
 public:
  virtual ~Replayer() = default;
  // An effect the run starts — a host function, `std.command`, `std.http_get` —, named as its
  // trace's `result` names it (`T-1.build: std.command`). `then` takes its output, `failed` its
  // Failure; either must be called on the run's strand.
  // `input` is what the build asks of it (compared with what the run asked); `control` says
  // when its invoke was cancelled (its state left), after which it takes no answer.
  // `defect` takes a Failure recorded as a host function's defect (a throw that was not a
  // Failure: the run ends `error`, as it did).
  virtual void effect(const std::string& name, const Json& input,
                      std::shared_ptr<EffectControl> control, std::function<void(Json)> then,
                      std::function<void(const Failure&)> failed,
                      std::function<void(const Failure&)> defect) = 0;
  // A Source call of the Pool at `pool` ("" for the run's own): `call` is `next` (a pull
  // Source's, but std.queue's, which the run answers itself) or `read`. `failed` is null for a
  // `next`, whose failure is a defect of the run.
  // `alive` expires with the Pool (its state was left): the call then takes no answer.
  // False when it does not answer this call: the Source is then called as with no Replayer (a
  // replay answers every call; the agreement test's walks read a `std.backlog` file for real).
  virtual bool call(const std::string& pool, const std::string& call, std::weak_ptr<int> alive,
                    std::function<void(Json)> answer,
                    std::function<void(const Failure&)> failed) = 0;
};

}  // namespace jr2rt
