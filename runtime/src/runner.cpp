#include "jr2/runner.h"

#include <iostream>
#include <string>

namespace jr2rt {

int RunnerMain(const Registry& registry, const char* workflow, int argc, char** argv) {
  const WorkflowInfo* wf = registry.workflow(workflow);
  if (wf == nullptr) {
    std::cerr << workflow << ": error: this runner was built without the workflow `" << workflow
              << "`; rebuild it\n";
    return kExitError;
  }
  const std::string verb = argc > 1 ? argv[1] : "";
  if (verb.empty() || verb == "--help" || verb == "-h" || verb == "help") {
    std::cout << "usage: " << workflow << " <verb> …\n\n"
              << "The runner of workflow `" << workflow << "` (" << wf->file
              << "), whose top machine is "
              << (wf->pool ? "pool `" + wf->pool->name + "`" : std::string("a machine")) << ".\n\n"
              << "verbs: run, send, status, gates, runs, cancel (RUNTIME.md §4)\n";
    return verb.empty() ? kExitUsage : kExitDone;
  }
  if (verb == "run" || verb == "send" || verb == "status" || verb == "gates" || verb == "runs" ||
      verb == "cancel") {
    std::cerr << workflow << ": error: `" << verb
              << "` needs the run host and the store, which this runtime does not have yet\n";
    return kExitUsage;
  }
  std::cerr << workflow << ": error: unknown verb `" << verb << "`; run `" << workflow
            << " --help`\n";
  return kExitUsage;
}

}  // namespace jr2rt
