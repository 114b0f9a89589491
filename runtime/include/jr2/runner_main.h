// What a workflow's runner needs for its main() (jr2_add_workflow generates it), and nothing
// more: no JSON, no Asio, no registry of its own, so that main compiles in a moment
// (docs/performance.md, "The generated code's build"). RunnerMain (runner.h) is the same front
// for a program that makes its own Registry.
#pragma once

namespace jr2rt {

class Registry;

// One generated file's `jr2gen::<stem>::RegisterWorkflows`.
using RegisterWorkflowsFn = void (*)(Registry&);

// Makes a Registry, registers what each of the `count` functions of `registers` registers, in
// order, and runs the runner of `workflow` on the command line: RunnerMain's exit code.
int RunnerMainOf(const RegisterWorkflowsFn* registers, int count, const char* workflow, int argc,
                 char** argv);

}  // namespace jr2rt
