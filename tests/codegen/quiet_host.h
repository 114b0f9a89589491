// A MachineHost that does nothing: for the codegen tests that drive a generated machine through
// its events alone (no timers, invokes or logs looked at).
#pragma once

#include "jr2/statechart.h"
#include "jr2/value.h"

namespace jr2test {

struct QuietHost : jr2rt::MachineHost {
  void startTimer(int, jr2rt::Duration) override {}
  void cancelTimer(int) override {}
  void startInvoke(const jr2rt::InvokeSpec&) override {}
  void cancelInvoke(int) override {}
  void log(const jr2rt::Json&) override {}
};

}  // namespace jr2test
