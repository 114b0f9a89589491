// A Pool's Source, in each of its three forms (docs/runtime.md#the-pool, #read-sources, and
// #standing-pools-of-runs-over-push-sources-12): the one interface the Pool asks. The Pool keeps
// the workers, the cap, the ids it knows, the latch and what it stores; a Source claims items
// for its free slots, hears that one settled, and gives a hook delivery's verdict.
//   pull  `next:` (pull_source.cpp): one item an answer, asked again while a slot is free; the
//         function behind it is a NextSource (jr2/source.h, next_source.cpp)
//   read  `read:` (read_source.cpp): the set read again, whole, one read claiming every free slot
//   push  `hook … => carry` (push_source.cpp): the items deliveries carried, held in arrival
//         order until a slot claims them
#pragma once

#include <memory>
#include <string>

#include "jr2/registry.h"
#include "jr2/run.h"

namespace jr2rt {

class PoolActor;

class PoolSource {
 public:
  virtual ~PoolSource() = default;
  // The Pool has a free slot and no call of its Source out (PoolActor::request): the Source
  // claims items for it, each through PoolActor::claim.
  virtual void claim() = 0;
  // An item of the Pool settled (done, or `failed`), and the Pool knows it now: the Source may
  // claim again.
  virtual void settled(const std::string& id, bool failed) = 0;
  // A delivery that hook line `line` of this Source takes, with `reread` or `carry` (a `skip`
  // line, and an event key no line takes, are the Pool's: the same for every form).
  virtual HookVerdict hook(const HookSpec& line, const std::string& service,
                           const std::string& eventKey, const Json& payload) = 0;
};

// The Source of `pool` for its spec's form; one of these three.
std::unique_ptr<PoolSource> MakePoolSource(PoolActor& pool);
std::unique_ptr<PoolSource> MakePullSource(PoolActor& pool);
std::unique_ptr<PoolSource> MakeReadSource(PoolActor& pool);
std::unique_ptr<PoolSource> MakePushSource(PoolActor& pool);

// A Source that the Pool calls, pull or read: one call out at a time, and a settle, a wake or a
// hook's `reread` during one sets the latch, for one more call after it (docs/runtime.md#the-pool).
class CalledSource : public PoolSource {
 public:
  void settled(const std::string& id, bool failed) override;
  // `reread` calls now (or latches); `carry` is for push Sources.
  HookVerdict hook(const HookSpec& line, const std::string& service, const std::string& eventKey,
                   const Json& payload) override;

 protected:
  CalledSource(PoolActor& pool, const char* form) : pool_(pool), form_(form) {}
  // A call goes out: the Pool stops polling (it polls only while it waits), the latch is cleared.
  void callOut();
  // The call's answer came back: whether the Pool is still there to take it.
  bool answered();
  PoolActor& pool_;
  const char* form_;  // `pull`, `read`: what a refused `carry` says
};

// A `skipped` verdict with `reason`.
HookVerdict Skipped(std::string reason);

}  // namespace jr2rt
