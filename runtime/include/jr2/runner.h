// The command line of a workflow runner (docs/runtime.md#the-runner). jr2_add_workflow generates a
// main() per workflow that registers the generated code and calls RunnerMain.
#pragma once

#include "jr2/registry.h"
#include "jr2/run.h"

namespace jr2rt {

// Exit codes of a runner (docs/runtime.md#the-runner).
inline constexpr int kExitDone = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitDeadlocked = 2;
inline constexpr int kExitWaiting = 3;
inline constexpr int kExitError = 4;
inline constexpr int kExitCancelled = 5;  // a run that ended `cancelled`
inline constexpr int kExitUsage = 64;
inline constexpr int kExitBadInput = 65;

// The exit code that reports a run's status (docs/runtime.md#the-runner).
int ExitCodeOf(RunStatus s);

int RunnerMain(const Registry& registry, const char* workflow, int argc, char** argv);

}  // namespace jr2rt
