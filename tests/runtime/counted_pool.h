// A workflow whose top Pool counts the reads of its input (its spec's parseInput): the tests that
// hold a Pool's input to one read at start (pool_test.cpp, host_test.cpp; #33).
#pragma once

#include <string>

#include "jr2/registry.h"

namespace jr2test {

// `of`'s workflow, its Pool's parseInput counting its calls in `reads`. Not copied or moved:
// `workflow` points at `spec`, and `spec` counts into `reads`.
struct CountedPool {
  CountedPool(const jr2rt::Registry& registry, const std::string& of)
      : spec(*registry.workflow(of)->pool), workflow(*registry.workflow(of)) {
    spec.parseInput = [this, read = spec.parseInput](const jr2rt::Json& input) {
      ++reads;
      return read(input);
    };
    workflow.pool = &spec;
  }
  CountedPool(const CountedPool&) = delete;
  CountedPool& operator=(const CountedPool&) = delete;

  jr2rt::PoolSpec spec;
  jr2rt::WorkflowInfo workflow;
  int reads = 0;
};

}  // namespace jr2test
