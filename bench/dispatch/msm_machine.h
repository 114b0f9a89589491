// The dispatch benchmark's ring machine (machine20.jr2) in Boost.MSM, behind a small non-template
// interface so that MSM's templates compile in their own translation unit (msm_machine.cpp).
#pragma once

#include <cstdint>
#include <memory>

namespace jr2bench {

class MsmRing {
 public:
  MsmRing();
  ~MsmRing();
  MsmRing(const MsmRing&) = delete;
  MsmRing& operator=(const MsmRing&) = delete;

  void step();   // the `step` event
  void reset();  // the `reset` event
  int64_t count() const;
  // The active leaf as the hand switch numbers it: top * 3 + {a: 0, b: 1, k: 2}; -1 if none or
  // more than one is active (a broken machine).
  int leaf() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The same ring with its twelve leaves as the states of one flat machine, MSM's defaults
// (msm_machine.cpp): MSM at its fastest honest shape for this machine.
class MsmFlatRing {
 public:
  MsmFlatRing();
  ~MsmFlatRing();
  MsmFlatRing(const MsmFlatRing&) = delete;
  MsmFlatRing& operator=(const MsmFlatRing&) = delete;

  void step();
  void reset();
  int64_t count() const;
  int leaf() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace jr2bench
