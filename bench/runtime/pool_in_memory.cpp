// The in-memory arm of bench/compare.py's `stored_runner_*` comparisons (#33's first goal): the
// workflow a runner of bench/runtime/stored_pool.jr2 runs, as a process of its own that stores
// nothing and prints nothing while it works — what the same Pool costs without jr2c's durable
// run host, timed like the runner from fork to exit.
//
//   jr2_pool_in_memory WORKFLOW INPUT_FILE    prints the run's output (the Pool's, as JSON)
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "drive.h"
#include "jr2/registry.h"
#include "stored_pool.jr2.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: jr2_pool_in_memory WORKFLOW INPUT_FILE\n";
    return 2;
  }
  try {
    jr2rt::Registry registry;
    jr2gen::stored_pool::RegisterWorkflows(registry);
    const jr2rt::WorkflowInfo* workflow = registry.workflow(argv[1]);
    if (workflow == nullptr) {
      std::cerr << "jr2_pool_in_memory: no workflow `" << argv[1] << "`\n";
      return 2;
    }
    std::ifstream in(argv[2]);
    std::stringstream text;
    text << in.rdbuf();
    const jr2rt::Json input = jr2rt::Json::parse(text.str());
    jr2rt::SystemClock clock;
    jr2rt::Run run(registry, *workflow, "memory", clock);
    jr2bench::DriveToEnd(run, input, clock);
    if (run.status() != jr2rt::RunStatus::kDone) {
      std::cerr << "jr2_pool_in_memory: the run ended " << jr2rt::ToString(run.status()) << "\n";
      return 1;
    }
    std::cout << run.output().dump() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "jr2_pool_in_memory: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
