// What the files of the run host (jr2/host.h's RunHost, defined by concern) share and nothing
// else sees: host.cpp holds adopt, the group commit, the drive and the signal; inbox.cpp the
// inbox and the runs' drive locks; dispatch.cpp the door of the `dispatch` workers; hooks.cpp
// the hook deliveries; standing.cpp the standing Pools' lifecycle; reads.cpp the reads of the
// store; text.cpp the host's small words for a person.
#pragma once

#include <string>

namespace jr2rt {

class Engine;

// Refuses another workflow's run (BadInput): a runner drives the runs of its own workflows only.
void CheckWorkflow(const std::string& id, const std::string& actual, const std::string& wanted);

// Engine::again(), for the files of the host that do not include run/engine.h (and so pay
// nothing for Boost.Asio's headers): one more turn after the current one.
void AskAnotherTurn(Engine& engine);

// A new run's id: 12 hex digits (48 random bits).
std::string NewRunId();

// From any thread: the engine's wait between turns ends now (its stop test is asked at once).
void WakeEngine(Engine& engine);

}  // namespace jr2rt
