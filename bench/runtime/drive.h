// What the two in-memory arms of the stored Pool comparisons share (bench/compare.py's
// `stored_*`): the same input, and a run driven to its end on the system clock, waiting for each
// timer as the runner does (RunHost::follow sleeps until the next one is due, then ticks).
#pragma once

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>

#include "jr2/run.h"
#include "jr2/value.h"

namespace jr2bench {

// `{"items": [{"id": "J-000000"}, …], "jobs": cap}`: the input of stored_pool.jr2's workflows.
inline jr2rt::Json PoolInput(int64_t items, int64_t cap) {
  jr2rt::Json list = jr2rt::Json::array();
  for (int64_t i = 0; i < items; ++i) {
    char id[32];
    std::snprintf(id, sizeof id, "J-%06lld", static_cast<long long>(i));
    list.push_back(jr2rt::Json{{"id", id}});
  }
  return jr2rt::Json{{"items", std::move(list)}, {"jobs", cap}};
}

// Starts `run` and drives it until it ends, sleeping until each next timer is due.
inline void DriveToEnd(jr2rt::Run& run, const jr2rt::Json& input, const jr2rt::Clock& clock) {
  run.start(input);
  while (!run.ended()) {
    const auto next = run.nextTimer();
    if (!next) throw std::runtime_error("the run waits, and no timer will wake it");
    const int64_t wait = *next - clock.nowMs();
    if (wait > 0) std::this_thread::sleep_for(std::chrono::milliseconds(wait));
    run.tick();
  }
}

}  // namespace jr2bench
