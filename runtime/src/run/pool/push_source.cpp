// The push Source (`hook … => carry EXPR`,
// docs/runtime.md#standing-pools-of-runs-over-push-sources-12): each delivery carries an item, held
// in the run in arrival order (up to `hold`) until a slot claims it. The key check comes first: a
// held item, a live worker or a run of the callee that holds the key answers `existing`.
#include <memory>
#include <string>
#include <utility>

#include "run/actors/dispatch_actor.h"
#include "run/pool/pool_actor.h"
#include "run/pool/pool_source.h"

namespace jr2rt {

// A friend of PoolActor's: the Pool's state is its to read and set.
class PushSource final : public PoolSource {
 public:
  explicit PushSource(PoolActor& pool) : pool_(pool) {}

  // The held items, in arrival order, while a slot is free.
  void claim() override {
    PoolActor& pool = pool_;
    while (!pool.held_.empty() && static_cast<int64_t>(pool.workers_.size()) < pool.cap_) {
      Json item = std::move(pool.held_.front());
      pool.held_.pop_front();
      pool.heldIds_.erase(pool.spec_.itemId(item, *pool.input_));
      pool.claim(std::move(item));
    }
    if (pool.workers_.empty() && pool.held_.empty()) pool.end();
  }

  void settled(const std::string&, bool) override { pool_.request(); }

  HookVerdict hook(const HookSpec& line, const std::string& service, const std::string& eventKey,
                   const Json& payload) override {
    if (line.verdict == HookSpec::Verdict::kReread) {
      return Skipped("`reread` is for pull and read Sources, and `" + pool_.spec_.source.name +
                     "` is a push Source");
    }
    return carry(line, service, eventKey, payload);
  }

 private:
  // `hook … => carry EXPR`: the item is held in the run until a slot claims it. The key check
  // comes first: `existing` when a held item, a live worker or a run of the callee holds the
  // key; above `hold`, `hold-full` (the delivery is not logged: a resend is heard).
  HookVerdict carry(const HookSpec& h, const std::string& service, const std::string& key,
                    const Json& payload) {
    PoolActor& pool = pool_;
    const PoolSpec& spec = pool.spec_;
    auto answer = [](HookVerdict::Kind kind, std::string reason, std::string item) {
      HookVerdict v;
      v.kind = kind;
      v.reason = std::move(reason);
      v.item = std::move(item);
      return v;
    };
    Json item;
    std::string id;
    const std::string hookName =
        "hook " + service + " `" + key + "` of source `" + spec.source.name + "`";
    try {
      const Json params =
          spec.source.params ? spec.source.params(*pool.input_).take() : Json::object();
      item = h.value ? h.value(payload, params).take() : payload;
    } catch (const std::exception& e) {
      return Skipped("the delivery carries no item: the `carry` of " + hookName +
                     " failed on its payload: " + ErrorText(e));
    }
    try {
      id = spec.itemId(item, *pool.input_);
    } catch (const std::exception& e) {
      // Name the item carried and where its id comes from: the usual cause is a payload
      // without the field that `item_id` reads (`id`).
      std::string shown = item.dump(-1, ' ', false, Json::error_handler_t::replace);
      if (shown.size() > 200) shown = shown.substr(0, 200) + "…";
      return Skipped("the item that " + hookName + " carries has no id (pool `" + spec.name +
                     "`'s `item_id`: " + ErrorText(e) + "); the item carried: " + Printable(shown) +
                     " (send a payload with the field `item_id` reads, or change the `carry`)");
    }
    if (const std::string why = IdProblem(id); !why.empty())
      return Skipped("its item id `" + Printable(id) + "` " + why);
    if (pool.heldIds_.count(id) != 0)
      return answer(HookVerdict::Kind::kExisting, "item " + id + " is held already", id);
    if (auto live = pool.liveIds_.find(id); live != pool.liveIds_.end()) {
      const auto* d =
          dynamic_cast<const DispatchActor*>(pool.workers_.at(live->second).actor.get());
      HookVerdict v = answer(HookVerdict::Kind::kExisting, "item " + id + " has a live worker", id);
      v.run = d != nullptr ? Json(d->runId()) : Json(nullptr);
      return v;
    }
    Run& run = pool.run_;
    if (spec.dispatch && run.dispatcher() != nullptr) {
      if (auto got = run.dispatcher()->find(spec.worker, id)) {
        HookVerdict v = answer(HookVerdict::Kind::kExisting,
                               "run " + got->run + " of " + spec.worker + " holds key " + id, id);
        v.run = Json(got->run);
        v.status = got->status;
        return v;
      }
    }
    if (pool.settledSet_.count(id) != 0) {
      return answer(
          HookVerdict::Kind::kSkipped,
          "item " + id + " ended in this run with no run of its own; it is not taken again", id);
    }
    if (static_cast<int64_t>(pool.held_.size()) >= spec.source.hold) {
      return answer(HookVerdict::Kind::kHoldFull,
                    "pool `" + spec.name + "` holds " + std::to_string(pool.held_.size()) +
                        " items, its `hold`; send it again later",
                    id);
    }
    pool.held_.push_back(item);
    pool.heldIds_.insert(id);
    run.emit("held", {{"pool", pool.prefix_}, {"item", id}, {"hook", service}, {"event", key}},
             "source `" + spec.source.name + "`: hook " + service + " " + key + ": item " + id +
                 " held (" + std::to_string(pool.held_.size()) + " held)");
    PoolActor* self = &pool;
    pool.later([self] { self->request(); });
    return answer(HookVerdict::Kind::kHeld, "", id);
  }

  PoolActor& pool_;
};

std::unique_ptr<PoolSource> MakePushSource(PoolActor& pool) {
  return std::make_unique<PushSource>(pool);
}

}  // namespace jr2rt
