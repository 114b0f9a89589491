// The runner's verbs sent to a `serve` (`--server URL`, docs/serve.md): the Verbs of verbs.h over
// serve's HTTP routes instead of the store, giving the same documents, so that the runner prints
// them with the same printers (report.h). Private to the runner.
#pragma once

#include <memory>
#include <string>

#include "jr2/verbs.h"

namespace jr2rt {

struct RemoteCall {
  std::string server;    // http://HOST:PORT
  std::string token;     // JR2_TOKEN, or the instance token of the store
  std::string workflow;  // the runner's workflow
  std::string command;   // how printed commands call the runner (its name, or its path)
};

// The verbs of `call.workflow` on the serve at `call.server`; what they tell while they wait
// (the run's lines as serve stores them, notes) goes to `tell`. A refused request throws BadInput
// with the serve's own line (RunDrifted for a drifted run, exit 4 as against the store), as does
// a serve that cannot be reached.
std::unique_ptr<Verbs> OpenServerVerbs(const RemoteCall& call, VerbTell tell);

}  // namespace jr2rt
