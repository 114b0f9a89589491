// What this process has live at once: Pool workers, processes and dispatched runs, the three
// figures `jr2c check` works out per workflow before anything runs (docs/checks.md#e0412). The
// runner's `--peak` prints the most of each at once beside the workflow's figures, and serve's
// /metrics gives them (`jr2_live`, `jr2_live_peak`), so that an operator sees how close a run
// came to what the compiler promised.
//
// Counted where each begins and ends: a worker while its Pool holds it (a child machine or an
// inner Pool: a worker; a dispatched run: a run), a process from its spawn to its reaping.
#pragma once

#include <cstdint>

namespace jr2rt {

enum class Live { kWorker = 0, kProcess = 1, kRun = 2 };

struct Occupied {
  int64_t now = 0;   // live now
  int64_t peak = 0;  // the most live at once since the process started
};

// How many of `what` are live, and the most at once. Safe from any thread.
Occupied Occupancy(Live what);

// One more, or one fewer, of `what` (a process's spawn and reaping).
void Occupy(Live what);
void Vacate(Live what);

// One of `what`, live while this lives (a Pool's worker). Moves; never copies.
class LiveOne {
 public:
  LiveOne() = default;
  explicit LiveOne(Live what) : what_(static_cast<int>(what)) { Occupy(what); }
  LiveOne(LiveOne&& o) noexcept : what_(o.what_) { o.what_ = -1; }
  LiveOne& operator=(LiveOne&& o) noexcept {
    if (this != &o) {
      end();
      what_ = o.what_;
      o.what_ = -1;
    }
    return *this;
  }
  LiveOne(const LiveOne&) = delete;
  LiveOne& operator=(const LiveOne&) = delete;
  ~LiveOne() { end(); }
  void end() {
    if (what_ >= 0) Vacate(static_cast<Live>(what_));
    what_ = -1;
  }

 private:
  int what_ = -1;
};

}  // namespace jr2rt
