// The runner's verbs sent to a `serve` (`--server URL`, RUNTIME.md §6): the same verbs over its
// HTTP routes instead of the store. Private to the runner.
#pragma once

#include <string>
#include <vector>

#include "jr2/value.h"

namespace jr2rt {

struct RemoteCall {
  std::string server;    // http://HOST:PORT
  std::string token;     // JR2_TOKEN, or the instance token of the store
  std::string workflow;  // the runner's workflow
  std::string command;   // how printed commands call the runner (its name, or its path)
  std::string verb;
  std::vector<std::string> positional;
  Json input = Json::object();  // run --input
  bool json = false;
  bool all = false;
  bool follow = false;
  bool dropHeld = false;  // run --drop-held (a paused standing Pool)
};

// Does `call.verb` on the serve at `call.server` and prints what the verb prints against the
// store, with the same printers (report.h); gives the exit code the verb gives locally. Throws
// BadInput with the serve's own error line for a refused request, and when the serve cannot be
// reached.
int Remote(const RemoteCall& call);

}  // namespace jr2rt
