// Hosts sharing one store (docs/scaling.md#several-hosts, #32): this host's lease on the runs it
// drives. The store (Hosts) owns the rules — the epoch that only grows, the database's clock that
// alone judges expiry, the lease checked in every commit's own transaction; here is what the host
// does with them: the heartbeat, the reaping of dead hosts, claims, and the self-fence when its
// lease is lost.
#include <chrono>
#include <string>
#include <vector>

#include "host/host_internal.h"
#include "jr2/errors.h"
#include "jr2/host.h"

namespace jr2rt {

namespace {

constexpr auto kHeartbeat = std::chrono::seconds(2);

}  // namespace

bool RunHost::joinHosts(const std::string& name, int64_t ttlMs, int64_t capacity) {
  hosts_ = store_.hosts();
  if (hosts_ == nullptr) return false;
  hostName_ = name;
  ttlMs_ = ttlMs;
  capacity_ = capacity;
  const Hosts::Lease lease = hosts_->join(name, ttlMs);
  beat_ = std::chrono::steady_clock::now();
  note("joined the run store's hosts as `" + name + "` (epoch " + std::to_string(lease.epoch) +
       ", lease " + DurationText(ttlMs) + ")");
  return true;
}

void RunHost::keepLease() {
  if (hosts_ == nullptr) return;
  const auto now = std::chrono::steady_clock::now();
  if (fenced_.empty() && now - beat_ >= kHeartbeat) {
    try {
      hosts_->heartbeat();
      beat_ = now;
      if (!leaseTrouble_.empty()) note("the heartbeat goes through again");
      leaseTrouble_.clear();
    } catch (const StoreFenced& e) {
      fenced_ = e.what();
    } catch (const StoreError& e) {
      // The database cannot be reached: tried again at the next second, until the lease would
      // run out (below).
      if (leaseTrouble_.empty()) note(std::string("the heartbeat failed: ") + e.what());
      leaseTrouble_ = e.what();
    }
  }
  // Two thirds of the TTL without a heartbeat that went through: the lease may run out before
  // the next one, and another host may take the runs. Fenced now, before it can happen.
  if (fenced_.empty() && now - beat_ >= std::chrono::milliseconds(ttlMs_ * 2 / 3)) {
    fenced_ =
        "no heartbeat went through for " +
        DurationText(std::chrono::duration_cast<std::chrono::milliseconds>(now - beat_).count()) +
        (leaseTrouble_.empty() ? std::string() : " (" + leaseTrouble_ + ")");
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
  if (!runs_.empty() || !afterCommit_.empty()) {
    ++metrics_.fences;
    note("this host lost its lease (" + fenced_ + "): it stops driving its " +
         std::to_string(runs_.size()) + " run" + (runs_.size() == 1 ? "" : "s") +
         ", nothing more of them is stored by it, and it joins again");
    // What waited for a commit that will never be: answered that nothing of it was kept.
    std::vector<AfterCommit> due;
    due.swap(afterCommit_);
    for (auto& a : due) {
      if (a.lost) a.lost();
    }
    // The inbox requests it took and had not answered: told that nothing of them was kept.
    for (const auto& [seq, id] : answersDue_) {
      try {
        store_.answer(seq, {{"error", "the serve that drove run " + id +
                                          " lost its lease before the change was stored; nothing "
                                          "of it was kept: send it again"},
                            {"kind", RuleOf(ErrorKind::kBusy).name}});
      } catch (const StoreError&) {
        // The store cannot be reached: the asker times out instead.
      }
    }
    answersDue_.clear();
    // Every process killed with its run; what the turn held back never starts.
    for (auto& [id, h] : runs_) stoppedEffects_ += h.run->stopEffects();
    runs_.clear();
    endedSeen_.clear();
  }
  try {
    const Hosts::Lease lease = hosts_->join(hostName_, ttlMs_);
    beat_ = std::chrono::steady_clock::now();
    fenced_.clear();
    leaseTrouble_.clear();
    note("joined again as `" + hostName_ + "` (epoch " + std::to_string(lease.epoch) + ")");
  } catch (const StoreError& e) {
    if (leaseTrouble_ != e.what()) note(std::string("cannot join again yet: ") + e.what());
    leaseTrouble_ = e.what();
  }
}

void RunHost::leaveHosts() {
  if (hosts_ == nullptr || !fenced_.empty()) return;
  try {
    hosts_->leave();  // every run and head let go in one statement, the host marked gone
  } catch (const StoreError& e) {
    note(std::string("could not mark this host gone (its lease runs out instead): ") + e.what());
  }
  runs_.clear();  // their locks have nothing left to release
}

}  // namespace jr2rt
