// A run's effects (jr2/run.h, docs/runtime.md#saved-as-it-moves-effects-at-most-once): a host
// function offloaded to the engine's thread pool, a non-idempotent one held for the commit that
// records its start, `std.command` awaited on the executor (docs/runtime.md#stdcommand), and the
// effects of a host that stops.
#include <algorithm>
#include <boost/asio/post.hpp>

#include "effects/process.h"
#include "jr2/run.h"
#include "jr2/stdlib.h"
#include "run/engine.h"

namespace jr2rt {

// A result from outside the strand (the thread pool, a process's end): taken on the engine's
// thread, where runs are made and destroyed, so a run destroyed meanwhile is never touched; the
// effect is counted back in either way.
namespace {
void Back(Engine& engine, const std::weak_ptr<int>& life, Run* run, std::function<void()> task) {
  boost::asio::post(engine.io(), [&engine, life, run, task = std::move(task)] {
    engine.effectBack();
    if (!life.expired()) run->post(task);
  });
}
}  // namespace

void Run::offload(std::function<Json()> work, std::function<void(Json)> then,
                  std::function<void(const Failure&)> failed) {
  // A blocking host function holds a thread while it runs: more of them out than threads wait
  // for one, and a Pool's cap of such workers is then the thread count. Said once per run.
  const int threads = engine_->threads();
  if (++offloaded_ > threads && !toldThreads_) {
    toldThreads_ = true;
    emit("note", {{"hostFunctionsOut", offloaded_}, {"threads", threads}},
         "note: " + std::to_string(offloaded_) + " host functions are out and " +
             std::to_string(threads) +
             " threads run them: the others wait for a thread (raise it with --threads)");
  }
  engine_->effectOut();
  Engine& engine = *engine_;
  std::weak_ptr<int> life = life_;
  boost::asio::post(engine.pool(), [this, &engine, life, work = std::move(work),
                                    then = std::move(then), failed = std::move(failed)] {
    std::function<void()> report;
    try {
      Json out = work();
      report = [then, out] { then(out); };
    } catch (const Failure& f) {
      report = [failed, f] { failed(f); };
    } catch (const std::exception& e) {
      const std::string what = ErrorText(e);
      report = [what] { throw Defect(what); };
    } catch (...) {
      // `throw 42`: a defect too (docs/host-functions.md), never an abort of the host.
      report = [] { throw Defect("a host function threw something that is not a std::exception"); };
    }
    Back(engine, life, this, [this, report] {
      --offloaded_;
      report();
    });
  });
}

void Run::startCommand(Json spec, std::function<void(Json)> then,
                       std::function<void(const Failure&)> failed,
                       const std::shared_ptr<EffectControl>& control, std::string who) {
  track(control);
  auto go = [this, spec = std::move(spec), then = std::move(then), failed = std::move(failed),
             control, who = std::move(who)]() mutable {
    if (control && control->cancelled) return;  // its invoke was cancelled before it started
    Engine& engine = *engine_;
    std::weak_ptr<int> life = life_;
    auto ok = [this, &engine, life, then](const Json& out) {
      Back(engine, life, this, [this, then, out] {
        --commandsOut_;
        then(out);
      });
    };
    auto bad = [this, &engine, life, failed](const Failure& f) {
      Back(engine, life, this, [this, failed, f] {
        --commandsOut_;
        failed(f);
      });
    };
    // Its output on the feed as it comes, each line told on the strand (a feed entry is stored
    // with the turn that tells it). Called from a handler of the executor, like Back's tasks,
    // but a line is not the effect's end: the effect stays out.
    auto line = [this, life, who, control](const char* stream, const std::string& text) {
      if (life.expired()) return;
      post([this, who, stream = std::string(stream), text, control] {
        if (control) control->told[stream == "stderr" ? 1 : 0].push_back(text);
        emit("output", {{"effect", who}, {"stream", stream}, {"line", text}},
             who + (stream == "stderr" ? " ! " : " | ") + text);
      });
    };
    engine.effectOut();
    ++commandsOut_;
    if (!StartCommand(engine.io(), spec, home_, ok, bad, control, line)) {
      // No pidfd on this kernel: the blocking form, on the thread pool.
      engine.effectBack();
      --commandsOut_;
      offload(
          [spec, home = home_] {
            return StdEffect("std.command", {{"spec", spec}}, home);
          },
          std::move(then), std::move(failed));
    }
  };
  if (commits()) {
    held_.emplace_back(std::move(go));
  } else {
    go();
  }
}

void Run::offloadAfterCommit(std::function<Json()> work, std::function<void(Json)> then,
                             std::function<void(const Failure&)> failed,
                             const std::shared_ptr<EffectControl>& control) {
  if (!commits()) {
    offload(std::move(work), std::move(then), std::move(failed));
    return;
  }
  track(control);
  held_.emplace_back([this, work = std::move(work), then = std::move(then),
                      failed = std::move(failed), control]() mutable {
    if (control && control->cancelled) return;  // cancelled while it waited for its commit
    offload(std::move(work), std::move(then), std::move(failed));
  });
}

int Run::stopEffects() {
  int killed = 0;
  for (auto& weak : effects_) {
    if (auto control = weak.lock()) {
      if (control->pid.load() > 0 && !control->reaped.load()) ++killed;
      control->cancel();
    }
  }
  effects_.clear();
  held_.clear();
  for (auto& [gate, turn] : modelTurns_) {  // a model's retry waited for is not tried
    turn.retryTimer.reset();
    turn.retryDueMs.reset();
  }
  return killed;
}

void Run::track(const std::shared_ptr<EffectControl>& control) {
  if (!control) return;
  if (effects_.size() >= 64) {  // now and then, forget the ones that are gone
    effects_.erase(
        std::remove_if(effects_.begin(), effects_.end(),
                       [](const std::weak_ptr<EffectControl>& w) { return w.expired(); }),
        effects_.end());
  }
  effects_.push_back(control);
}

}  // namespace jr2rt
