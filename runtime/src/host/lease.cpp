// Hosts sharing one store (docs/scaling.md#several-hosts, #32): this host's lease on the runs it
// drives. The store (Hosts) owns the rules — the epoch that only grows, the database's clock that
// alone judges expiry, the lease checked in every commit's own transaction — and the keeper that
// renews the lease on a thread of its own; here is what the host does with them: the wake-ups
// the keeper brings, the reaping of dead hosts, and the self-fence when its lease is lost.
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "effects/orphans.h"
#include "host/host_internal.h"
#include "jr2/errors.h"
#include "jr2/host.h"

namespace jr2rt {

namespace {

// A heartbeat every 2 s, or five to a lease when its TTL is shorter than 10 s: a lease of 3 s
// survives one late beat.
int64_t BeatMs(int64_t ttlMs) { return std::min<int64_t>(2000, ttlMs / 5); }

}  // namespace

bool RunHost::joinHosts(const std::string& name, int64_t ttlMs, int64_t capacity, bool pollOnly) {
  hosts_ = store_.hosts();
  if (hosts_ == nullptr) return false;
  hostName_ = name;
  ttlMs_ = ttlMs;
  capacity_ = capacity;
  pollOnly_ = pollOnly;
  const Hosts::Lease lease = hosts_->join(name, ttlMs);
  // Called on the keeper's thread: the bits are left for the engine's thread, which is woken.
  // A lost lease kills every process the runs started at once, whatever the engine's thread is
  // doing (its next commit is refused by the database anyway).
  keeper_ = hosts_->keep(BeatMs(ttlMs), pollOnly, [this, engine = engine_](unsigned wake) {
    if ((wake & Hosts::kWakeFenced) != 0) {
      const int killed = KillGroupsAndHold();
      if (killed > 0) wakes_.fetch_or(static_cast<unsigned>(killed) << 8);
    }
    wakes_.fetch_or(wake & 0xffU);
    WakeEngine(*engine);
  });
  note("joined the run store's hosts as `" + name + "` (epoch " + std::to_string(lease.epoch) +
       ", lease " + DurationText(ttlMs) + ", a heartbeat every " + DurationText(BeatMs(ttlMs)) +
       (pollOnly ? "; polling only: no LISTEN" : "") + ")");
  return true;
}

bool RunHost::listening() const { return keeper_ != nullptr && keeper_->listening(); }

Hosts::Keeper::Counts RunHost::keeperCounts() const {
  return keeper_ != nullptr ? keeper_->counts() : Hosts::Keeper::Counts{};
}

void RunHost::takeWakes(bool* claimNow) {
  const unsigned wake = wakes_.exchange(0);
  if (wake == 0) return;
  if ((wake & Hosts::kWakeInbox) != 0) {
    ++metrics_.wokenInbox;
    inboxCheckedMs_ = 0;  // read at this pass
  }
  if ((wake & Hosts::kWakeAnswers) != 0) {
    ++metrics_.wokenAnswers;
    inboxCheckedMs_ = 0;  // the answers to what this host forwarded are read with the inbox
  }
  if ((wake & Hosts::kWakeRuns) != 0) {
    ++metrics_.wokenRuns;
    *claimNow = true;
  }
  if ((wake & Hosts::kWakeFenced) != 0 && fenced_.empty() && keeper_ != nullptr) {
    fenced_ = keeper_->fenced();  // let go at this pass, before the turn's effects go out
  }
  metrics_.killedOnFence += static_cast<int64_t>(wake >> 8);
}

void RunHost::keepLease() {
  if (hosts_ == nullptr) return;
  if (fenced_.empty() && keeper_ != nullptr) {
    // The keeper judges the lease: a heartbeat refused, or none through for two thirds of the
    // TTL (it has killed the runs' processes already).
    fenced_ = keeper_->fenced();
    const std::string trouble = keeper_->trouble();
    if (trouble != leaseTrouble_) {
      note(trouble.empty() ? std::string("the heartbeat goes through again") : trouble);
      leaseTrouble_ = trouble;
    }
  }
  if (!fenced_.empty()) refence();
  if (!fenced_.empty()) return;  // not joined again yet: nothing more this second
  try {
    const auto reaped = hosts_->reap();
    for (const auto& name : reaped) {
      ++metrics_.reaped;
      note("host `" + name + "` has not renewed its lease: its runs are released for others");
    }
  } catch (const StoreError&) {
    // Reaping is any host's chore: the next second's.
  }
}

void RunHost::refence() {
  if (fenced_.empty()) return;
  settle();  // the batch in flight first: what waited for it is let go below with the rest
  // Another serve joined under this one's name (below): this one does not join again.
  const bool replaced = fenced_.find("another incarnation of it registered") != std::string::npos;
  if (!runs_.empty() || !afterCommit_.empty()) {
    ++metrics_.fences;
    note("this host lost its lease (" + fenced_ + "): it stops driving its " +
         std::to_string(runs_.size()) + " run" + (runs_.size() == 1 ? "" : "s") +
         ", nothing more of them is stored by it, and it " + (replaced ? "stops" : "joins again"));
    // What waited for a commit that will never be: answered that nothing of it was kept.
    std::vector<AfterCommit> due;
    due.swap(afterCommit_);
    for (auto& a : due) {
      if (a.lost) a.lost();
    }
    // The inbox requests it took and had not answered: told that nothing of them was kept.
    for (const auto& [seq, id, machine] : answersDue_) {
      answerRequest(seq, {{"error", "the serve that drove run " + id +
                                        " lost its lease before the change was stored; nothing "
                                        "of it was kept: send it again"},
                          {"kind", RuleOf(ErrorKind::kBusy).name}});
    }
    answersDue_.clear();
    // Every process killed with its run (the keeper killed them already when it judged the
    // lease lost); what the turn held back never starts.
    KillGroupsAndHold();
    for (auto& [id, h] : runs_) stoppedEffects_ += h.run->stopEffects();
    runs_.clear();
    endedSeen_.clear();
  }
  // The keys this host dispatched under its lost lease: its reservations are stale now (taken
  // over by the next dispatch of the key), and what it knew of them is read from the store again.
  keys_.clear();
  tried_.clear();
  unreleased_.clear();  // released by the join below (or by the host that reaps this one)
  parked_.clear();
  if (replaced) {
    // Another serve joined under this one's name: this one restarted elsewhere (the newer
    // incarnation is the host now), or two serves were given one --host-name. Joining again
    // would fence that one, which would join again and fence this one, without end: this serve
    // stops instead, having let go of everything above.
    throw UsageError("another serve joined the run store as host `" + hostName_ +
                     "` while this one served under that name (" + fenced_ +
                     "); it is the host now, and this serve stops. Give each serve its own "
                     "--host-name (the default is the machine's name and the port)");
  }
  try {
    const Hosts::Lease lease = hosts_->join(hostName_, ttlMs_);
    if (keeper_ != nullptr) keeper_->renewed(lease);
    LetGroupsStart();
    fenced_.clear();
    // A store that could not be reached answers again (the join went through), and what the
    // runs did meanwhile went with them: changes are taken again (a full disk stays full until
    // a commit finds space).
    if (full_ && !fullDisk_) {
      note("the run store answers again");
      full_ = false;
      fullReason_.clear();
    }
    leaseTrouble_.clear();
    note("joined again as `" + hostName_ + "` (epoch " + std::to_string(lease.epoch) + ")");
  } catch (const StoreError& e) {
    if (leaseTrouble_ != e.what()) note(std::string("cannot join again yet: ") + e.what());
    leaseTrouble_ = e.what();
  }
}

void RunHost::leaveHosts() {
  if (hosts_ == nullptr) return;
  keeper_.reset();  // no heartbeat after the leave
  if (!fenced_.empty()) return;
  try {
    hosts_->leave();  // every run and head let go in one statement, the host marked gone
  } catch (const StoreError& e) {
    note(std::string("could not mark this host gone (its lease runs out instead): ") + e.what());
  }
  runs_.clear();  // their locks have nothing left to release
  parked_.clear();
  unreleased_.clear();
}

}  // namespace jr2rt
