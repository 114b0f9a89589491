#include "run/engine.h"

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <optional>

#include "jr2/run.h"

namespace jr2rt {

Engine::Engine(int threads) : threads_(threads > 0 ? threads : EffectThreads()) {}

Engine::~Engine() {
  // Host functions still running finish first; what they post back is dropped with io_.
  if (pool_) pool_->join();
}

boost::asio::thread_pool& Engine::pool() {
  if (!pool_) pool_ = std::make_unique<boost::asio::thread_pool>(static_cast<size_t>(threads_));
  return *pool_;
}

void Engine::PostOn(Strand& strand, std::function<void()> fn) {
  boost::asio::post(strand, std::move(fn));
}

void Engine::add(Run* run) { runs_.push_back(run); }

void Engine::remove(Run* run) {
  runs_.erase(std::remove(runs_.begin(), runs_.end(), run), runs_.end());
}

bool Engine::commitTurn() {
  std::vector<Run*> changed;
  for (Run* r : runs_) {
    if (r->dirty_ || r->steps_ != r->committed_) {
      r->dirty_ = false;
      r->committed_ = r->steps_;
      changed.push_back(r);
    }
  }
  if (!changed.empty()) {
    if (turn_) {
      // One transaction for every run the turn changed; not stored, they stay changed.
      if (!turn_(changed)) {
        for (Run* r : changed) r->dirty_ = true;
        return false;
      }
    } else {
      for (Run* r : changed) {
        if (r->commit_) r->commit_();
      }
    }
  }
  return true;
}

size_t Engine::heldCount(const Run& r) { return r.held_.size(); }

void Engine::releaseFirst(Run& r, size_t n) {
  const auto end = r.held_.begin() + static_cast<std::ptrdiff_t>(std::min(n, r.held_.size()));
  std::vector<std::function<void()>> go(std::make_move_iterator(r.held_.begin()),
                                        std::make_move_iterator(end));
  r.held_.erase(r.held_.begin(), end);
  for (auto& start : go) start();
}

void Engine::changed(Run& r) { r.dirty_ = true; }

bool Engine::releaseHeld() {
  // Only now, the turn stored, do the effects it started go out (a pipelined commit's host
  // releases them itself, each run's once the commit that stored them is done).
  if (holdReleases_) return false;
  bool released = false;
  for (Run* r : runs_) {
    if (r->held_.empty()) continue;
    releaseFirst(*r, r->held_.size());
    released = true;
  }
  return released;
}

bool Engine::fireDue() {
  bool fired = false;
  for (Run* r : runs_) {
    if (r->clock().real() && r->fireDue()) {
      r->dirty_ = true;
      fired = true;
    }
  }
  return fired;
}

std::optional<int64_t> Engine::nextDue() const {
  std::optional<int64_t> best;
  for (Run* r : runs_) {
    if (!r->clock().real() || r->ended()) continue;
    if (const auto due = r->nextTimer()) {
      const int64_t wait = *due - r->clock().nowMs();
      if (!best || wait < *best) best = wait;
    }
  }
  return best;
}

uint64_t Engine::drive() { return turns(/*forever=*/false); }

void Engine::serve() { turns(/*forever=*/true); }

void Engine::handleUntil(const std::function<bool()>& done,
                         std::chrono::steady_clock::time_point deadline) {
  if (io_.stopped()) io_.restart();
  // Held as working: with nothing of its own outstanding, each wait would return at once.
  const auto working = boost::asio::make_work_guard(io_);
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    io_.run_one_until(
        std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(50)));
  }
}

uint64_t Engine::turns(bool forever) {
  uint64_t turns = 0;
  // Serving, the engine's io_context may have nothing of its own outstanding (serve's
  // connections are its network thread's): held as working, or poll() would stop it each pass
  // and the wait below would return at once, spinning.
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> serving;
  if (forever) serving.emplace(io_.get_executor());
  for (;;) {
    if (io_.stopped()) io_.restart();
    io_.poll();
    ++turns;
    const bool stored = commitTurn();
    if (stop_ && stop_()) return turns;
    // Nothing of a turn that was not stored goes out: its effects wait for the commit.
    if ((stored && releaseHeld()) || fireDue()) continue;
    if (again_) {
      again_ = false;
      continue;
    }
    if (!forever && out_.load() == 0) return turns;
    // Wait for an effect's result, the next timer of a run on a real clock, or the next look at
    // stop_, whichever comes first (serving, at least every stopEvery_, 100 ms by default).
    std::optional<int64_t> waitMs = nextDue();
    const int64_t every = stopEvery_ > 0 ? stopEvery_ : (forever ? 100 : 0);
    if ((stop_ || forever) && every > 0) waitMs = waitMs ? std::min(*waitMs, every) : every;
    auto work = boost::asio::make_work_guard(io_);
    if (waitMs) {
      io_.run_one_for(std::chrono::milliseconds(std::max<int64_t>(0, *waitMs)));
    } else {
      io_.run_one();
    }
    work.reset();
  }
}

}  // namespace jr2rt
