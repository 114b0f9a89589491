// Every process a run starts dies with the run's host, however the host dies (#30): each
// `std.command` is the leader of its own process group, and a guard process outside the host
// kills every group still registered the moment the host is gone — by exit, by a signal it
// handles, or by SIGKILL. Private to the runtime (stdlib.cpp spawns, process.cpp reaps).
#pragma once

namespace jr2rt {

// Registers the process group `pgid` (a spawned command's pid) with the guard, starting the
// guard on first use. Never throws: without a guard (fork refused) a group is unguarded, and
// the host still kills it on every stop it handles.
void GuardGroup(int pgid);

// The group's leader was reaped: what it left running in its group is killed now (a command is
// over when its process ends), and the group is no longer the guard's.
void EndGroup(int pgid);

// The host lost its lease (docs/scaling.md#the-keeper): every group it holds is killed now, from
// any thread, and every group started from now on is killed as it is registered, until
// LetGroupsStart(). Gives how many groups were killed.
int KillGroupsAndHold();
void LetGroupsStart();

// The pid of the guard process, or -1 while none runs (tests).
int GuardPid();

}  // namespace jr2rt
