// What every form of a Pool's Source shares (pool_source.h): the verdict of a hook delivery,
// and the Sources that the Pool calls (pull and read), with their latch.
#include "run/pool/pool_source.h"

#include <utility>

#include "run/pool/pool_actor.h"

namespace jr2rt {

const char* ToString(HookVerdict::Kind kind) {
  switch (kind) {
    case HookVerdict::Kind::kSkipped:
      return "skipped";
    case HookVerdict::Kind::kHoldFull:
      return "hold-full";
    case HookVerdict::Kind::kReread:
      return "reread";
    case HookVerdict::Kind::kExisting:
      return "existing";
    case HookVerdict::Kind::kHeld:
      return "held";
  }
  return "skipped";
}

Json HookVerdict::json() const {
  Json out = {{"verdict", ToString(kind)}, {"reason", reason}};
  if (!item.empty()) out["item"] = item;
  if (run) out["run"] = *run;
  if (status) out["status"] = *status;
  return out;
}

HookVerdict Skipped(std::string reason) {
  HookVerdict v;
  v.reason = std::move(reason);
  return v;
}

void CalledSource::settled(const std::string&, bool) { pool_.request(); }

HookVerdict CalledSource::hook(const HookSpec& line, const std::string& service,
                               const std::string& eventKey, const Json&) {
  const SourceSpec& source = pool_.spec_.source;
  if (line.verdict == HookSpec::Verdict::kCarry) {
    return Skipped("`carry` is for push Sources, and `" + source.name + "` is a " + form_ +
                   " Source");
  }
  pool_.run_.emit(
      "reread", {{"pool", pool_.prefix_}, {"hook", service}, {"event", eventKey}},
      "source `" + source.name + "`: hook " + service + " " + eventKey + ": read again");
  PoolActor* pool = &pool_;
  pool_.later([pool] { pool->request(); });  // during a call, the latch: one more after it
  HookVerdict reread;
  reread.kind = HookVerdict::Kind::kReread;
  return reread;
}

void CalledSource::callOut() {
  if (pool_.pollArmed_) {
    pool_.run_.unschedule(&pool_, 0);
    pool_.pollArmed_ = false;
  }
  pool_.inFlight_ = true;
  pool_.latch_ = false;
}

bool CalledSource::answered() {
  pool_.inFlight_ = false;
  return !pool_.ended_;
}

std::unique_ptr<PoolSource> MakePoolSource(PoolActor& pool) {
  switch (pool.spec_.source.form) {
    case SourceSpec::Form::kRead:
      return MakeReadSource(pool);
    case SourceSpec::Form::kPush:
      return MakePushSource(pool);
    case SourceSpec::Form::kNext:
      break;
  }
  return MakePullSource(pool);
}

}  // namespace jr2rt
