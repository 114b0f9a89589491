#include "core/occupancy.h"

#include <atomic>

namespace jr2rt {
namespace {

struct Counter {
  std::atomic<int64_t> now{0};
  std::atomic<int64_t> peak{0};
};

Counter& Of(Live what) {
  static Counter counters[3];
  return counters[static_cast<int>(what)];
}

}  // namespace

Occupied Occupancy(Live what) {
  const Counter& c = Of(what);
  return {c.now.load(std::memory_order_relaxed), c.peak.load(std::memory_order_relaxed)};
}

void Occupy(Live what) {
  Counter& c = Of(what);
  const int64_t now = c.now.fetch_add(1, std::memory_order_relaxed) + 1;
  int64_t peak = c.peak.load(std::memory_order_relaxed);
  while (now > peak && !c.peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

void Vacate(Live what) { Of(what).now.fetch_sub(1, std::memory_order_relaxed); }

}  // namespace jr2rt
