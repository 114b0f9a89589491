// The pull Source (`next:`, docs/runtime.md#the-pool): the Pool calls `next` with its query and
// claims the one item an answer gives, then calls again while a slot is free. What answers is a
// NextSource (jr2/source.h: scripted, the standard library's, or an `extern`), made at the
// first call and kept: a call costs what changed.
#include <memory>
#include <utility>

#include "jr2/source.h"
#include "run/pool/pool_actor.h"
#include "run/pool/pool_source.h"
#include "run/replayer.h"

namespace jr2rt {

// A friend of PoolActor's: the Pool's state is its to read and set.
class PullSource final : public CalledSource {
 public:
  explicit PullSource(PoolActor& pool) : CalledSource(pool, "pull") {}

  void claim() override {
    PoolActor& pool = pool_;
    callOut();
    // The call's arguments are made once per Pool (they depend on the input alone) and shared by
    // every call, as the input is: a call copies neither, however large they are.
    if (!pool.args_) {
      pool.args_ = std::make_shared<const Json>(
          pool.spec_.source.args ? pool.spec_.source.args(*pool.input_).take() : Json::object());
    }
    const std::string& fn = pool.spec_.source.function;
    Run& run = pool.run_;
    if (!port_) port_ = std::make_shared<const Port>(this, run, pool.token());
    // A replay answers it from its trace (docs/runtime.md#replay), but std.queue's: the run
    // makes those from its input.
    if (Replayer* replayer = run.replayer();
        replayer != nullptr && fn != "std.queue" &&
        replayer->call(
            pool.prefix_, "next", pool.token(),
            [port = port_](Json a) { port->answer(std::move(a)); }, nullptr)) {
      return;
    }
    if (!next_) {
      // One Source per Pool, kept across calls: a call costs what changed (jr2/source.h).
      const PoolSpec& spec = pool.spec_;
      const std::shared_ptr<const Json> input = pool.input_;
      next_ = MakeNextSource(
          run,
          {fn, [&spec, input](const Json& item) { return spec.itemId(item, *input); }, run.home()});
      if (!next_) {
        throw Defect("source `" + spec.source.name + "` calls `" + fn +
                     "`, which this runner does not have");
      }
    }
    next_->next(run, {pool.args_, port_});
  }

 private:
  // The Pool as its Source sees it (jr2/source.h). The answer may come after this Pool is gone
  // (its state was left): it is posted through the Pool's liveness token, never through the raw
  // pointer alone; and the query is made when the call runs, so a Pool gone by then is asked
  // nothing.
  class Port final : public SourcePort {
   public:
    Port(PullSource* source, Run& run, std::weak_ptr<int> alive)
        : source_(source), run_(run), alive_(std::move(alive)) {}
    NextQuery query() const override {
      return alive_.expired() ? NextQuery() : source_->pool_.query();
    }
    void answer(Json a) const override {
      PullSource* source = source_;
      std::weak_ptr<int> alive = alive_;
      run_.post([source, alive = std::move(alive), a = std::move(a)]() mutable {
        if (!alive.expired()) source->answered(std::move(a));
      });
    }

   private:
    PullSource* source_;  // the Pool's own: gone with it
    Run& run_;  // outlives every answer: a Source answers on the run's strand, or through Back
    std::weak_ptr<int> alive_;
  };

  void answered(Json answer) {
    if (!CalledSource::answered()) return;
    PoolActor& pool = pool_;
    // An input of the turn (docs/runtime.md#traces), but std.queue's: its answers are made from
    // the run's input, and a replay makes them again.
    if (pool.spec_.source.function != "std.queue") pool.traceSource("next", "answer", answer);
    // An item, null, or { item, open } (the concept page's SourceNextResult): moved out, never
    // copied.
    Json item;
    int64_t open = 0;
    const auto field = [&answer](const char* name) {
      auto it = answer.find(name);
      return it == answer.end() ? nullptr : &*it;
    };
    Json* given = answer.is_object() ? field("item") : nullptr;
    const Json* opens = given != nullptr ? field("open") : nullptr;
    if (given != nullptr && (opens != nullptr || answer.size() == 1)) {
      if (opens != nullptr) open = opens->get<int64_t>();
      item = std::move(*given);
      Dismantle(answer);
    } else {
      item = std::move(answer);
    }
    pool.lastOpen_ = open;
    if (!item.is_null()) {
      pool.claim(std::move(item));  // one claim per answer (docs/runtime.md#the-pool)
      pool.request();               // and at once again while a slot is free
      return;
    }
    if (pool.latch_) {
      pool.latch_ = false;
      pool.request();
      return;
    }
    if (pool.workers_.empty()) return pool.end();
    pool.armPoll();  // waiting: workers live, nothing ready
  }

  std::shared_ptr<const Port> port_;  // made at the first call, shared by every call
  std::unique_ptr<NextSource> next_;
};

std::unique_ptr<PoolSource> MakePullSource(PoolActor& pool) {
  return std::make_unique<PullSource>(pool);
}

}  // namespace jr2rt
