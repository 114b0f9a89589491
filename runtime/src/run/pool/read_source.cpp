// The read Source (`read:`, docs/runtime.md#read-sources): the set is read again, whole, through
// an idempotent effect, and one read claims every free slot. Known ids are dropped before a
// claim; an item with no usable id gets no worker and a `skipped` mark, once in the run's life.
// A read that fails gives no items; the next poll, wake or settle reads again.
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>

#include "run/pool/pool_actor.h"
#include "run/pool/pool_source.h"
#include "run/replayer.h"

namespace jr2rt {

// A friend of PoolActor's: the Pool's state is its to read and set.
class ReadSource final : public CalledSource {
 public:
  explicit ReadSource(PoolActor& pool) : CalledSource(pool, "read") {}

  void claim() override {
    PoolActor& pool = pool_;
    callOut();
    if (!pool.args_) {
      pool.args_ = std::make_shared<const Json>(
          pool.spec_.source.args ? pool.spec_.source.args(*pool.input_).take() : Json::object());
    }
    const std::string& fn = pool.spec_.source.function;
    ReadSource* self = this;
    std::weak_ptr<int> alive = pool.token();
    // Both come back on the strand; a Pool gone by then (and its Source) is told nothing.
    // What the read came back with is an input of the turn it is taken in
    // (docs/runtime.md#traces).
    auto answer = [self, alive](const Json& a) {
      if (alive.expired()) return;
      self->trace("answer", a);
      self->onRead(a);
    };
    auto failed = [self, alive](const Failure& f) {
      if (alive.expired()) return;
      self->trace("failure", Json{{"reason", f.reason()}, {"detail", f.detail()}});
      self->onReadFailed(f);
    };
    Run& run = pool.run_;
    if (Replayer* replayer = run.replayer();  // answered from its trace
        replayer != nullptr && replayer->call(pool.prefix_, "read", alive, answer, failed)) {
      return;
    }
    if (const ReadCall* scripted = run.scriptedRead(fn)) {
      (*scripted)(
          *pool.args_, [&run, answer](const Json& a) { run.post([answer, a] { answer(a); }); },
          [&run, failed](const Failure& f) { run.post([failed, f] { failed(f); }); });
      return;
    }
    const HostFunction* host = run.registry().host(fn);
    if (host == nullptr) {
      throw Defect("source `" + pool.spec_.source.name + "` reads with `" + fn +
                   "`, which this runner does not have");
    }
    run.offload([host, args = pool.args_] { return (*host)(*args); }, answer, failed);
  }

 private:
  void trace(const char* key, const Json& value) { pool_.traceSource("read", key, value); }

  void onRead(const Json& answer) {
    if (!answered()) return;
    PoolActor& pool = pool_;
    Json items;
    try {
      items = pool.spec_.source.items ? pool.spec_.source.items(answer).take() : answer;
    } catch (const std::exception& e) {
      return onReadFailed(Failure(std::string("its answer has no items: ") + ErrorText(e)));
    }
    if (!items.is_array()) {
      return onReadFailed(Failure("its items are " + KindOf(items) + ", not a list"));
    }
    // Known ids are dropped before a claim; an item with no usable id gets no worker and a
    // `skipped` mark, once in the run's life; every free slot is claimed from this one read.
    std::unordered_set<std::string> seen;
    for (Json& item : items) {
      if (static_cast<int64_t>(pool.workers_.size()) >= pool.cap_) break;
      std::string id;
      try {
        id = pool.spec_.itemId(item, *pool.input_);
      } catch (const std::exception& e) {
        pool.skip(item, "its id cannot be read: " + ErrorText(e));
        continue;
      }
      if (const std::string why = IdProblem(id); !why.empty()) {
        pool.skip(item, "its id `" + Printable(id) + "` " + why);
        continue;
      }
      if (pool.liveIds_.count(id) != 0 || pool.settledSet_.count(id) != 0 ||
          !seen.insert(id).second) {
        continue;
      }
      pool.claim(std::move(item));
    }
    if (pool.latch_) {
      pool.latch_ = false;
      return pool.request();
    }
    if (pool.workers_.empty()) return pool.end();
    pool.armPoll();
  }

  void onReadFailed(const Failure& f) {
    PoolActor& pool = pool_;
    pool.inFlight_ = false;
    if (pool.ended_) return;
    const std::string& name = pool.spec_.source.name;
    pool.run_.emit("read-failed", {{"pool", pool.prefix_}, {"reason", f.reason()}},
                   "source `" + name + "`: the read failed: " + f.reason() + "; it gave no items");
    if (pool.latch_) {
      pool.latch_ = false;
      return pool.request();
    }
    if (pool.spec_.source.pollEveryMs > 0) return pool.armPoll();  // the next poll reads again
    if (pool.workers_.empty() && pool.spec_.source.wake.empty()) {
      // Nothing would ever read again: the Pool cannot go on.
      return pool.fail(Failure("the read of source `" + name + "` failed (" + f.reason() +
                               ") and it has no poll_every or wake to read again"));
    }
  }
};

std::unique_ptr<PoolSource> MakeReadSource(PoolActor& pool) {
  return std::make_unique<ReadSource>(pool);
}

}  // namespace jr2rt
