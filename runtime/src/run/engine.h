// The executor that runs are driven on (docs/runtime.md#a-run, docs/runtime.md#the-run-host): one
// io_context, one strand per run, one thread pool for blocking host functions, shared by every run
// made on it. A turn runs every handler that is ready (of every run), then commits the runs the
// turn changed (in one group commit when a host set one), and only then releases the effects those
// steps started. While work is out, the timers of runs on a real clock fire on time. Private to the
// runtime: run.cpp and host.cpp include it, and they alone pay for Boost.Asio's headers.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace jr2rt {

class Run;

class Engine {
 public:
  // `threads`: for blocking host functions; 0 takes EffectThreads().
  explicit Engine(int threads = 0);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  boost::asio::io_context& io() { return io_; }
  using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;
  // Posts `fn` on `strand` (a run's). Out of line: clang-analyzer, following Boost.Asio's
  // recycling allocator through an inlined post, reports a leak that is not there.
  static void PostOn(Strand& strand, std::function<void()> fn);
  // Made at its first use: a host that only reads runs starts no thread.
  boost::asio::thread_pool& pool();
  int threads() const { return threads_; }

  // The runs made on this engine (Run's constructor and destructor call these).
  void add(Run* run);
  void remove(Run* run);
  const std::vector<Run*>& runs() const { return runs_; }

  // Effects out (host functions on the pool, processes awaited): while there is one, a drive
  // waits for it. Counted on the strand side: up when the effect goes out, down in the handler
  // that takes its result.
  void effectOut() { ++out_; }
  void effectBack() { --out_; }
  int out() const { return out_.load(); }

  // Group commit: when set, the end of each turn calls `fn` once with every run the turn
  // changed (to store them in one transaction), instead of each run's own onCommit.
  // `fn` answers whether the runs were stored: when not (the disk was full), they are changed
  // still, and the effects the turn started stay held until a later commit stores them.
  void onTurn(std::function<bool(const std::vector<Run*>&)> fn) { turn_ = std::move(fn); }
  bool grouped() const { return turn_ != nullptr; }
  // A pipelined group commit (the run host's, while it serves): `fn` may answer true having only
  // handed the runs to a thread that stores them while the turns go on. While `held` is set, no
  // turn releases an effect; the host releases each run's own (releaseFirst) once its commit
  // stored them, or marks the runs changed again (changed) when it did not.
  void holdReleases(bool held) { holdReleases_ = held; }
  // How many effects run `r` holds for a commit now, and the first `n` of them released.
  static size_t heldCount(const Run& r);
  static void releaseFirst(Run& r, size_t n);
  static void changed(Run& r);
  // Commits the runs changed since the last commit, now (a host that stops between turns).
  bool commitChanged() { return commitTurn(); }

  // Every drive ends early when `stop()` is true after a turn's commit (before the effects it
  // started go out); while effects are out, it is asked at least every `everyMs`.
  void stopWhen(std::function<bool()> stop, int64_t everyMs) {
    stop_ = std::move(stop);
    stopEvery_ = everyMs;
  }

  // Asks for one more turn after the current one even when no effect is out: the stop test
  // queued a step (a delivery a host took from its inbox).
  void again() { again_ = true; }

  // Runs turns until nothing is ready and no effect is out, or stopWhen's test is true. Timers
  // of runs on a real clock that fall due meanwhile fire on time. Gives the number of turns.
  uint64_t drive();
  // Runs turns for as long as stopWhen's test is false, waiting between them for whatever comes
  // (an effect's result, a timer on the wall clock, a handler such as an HTTP connection's),
  // and asking the test at least every stopWhen period: `serve`.
  void serve();
  // Runs the handlers put on the engine's io_context (no turn: serve() is over) until `done` is
  // true or `deadline` passes, asking `done` at least every 50 ms: serve's drain, while its
  // connections end.
  void handleUntil(const std::function<bool()>& done,
                   std::chrono::steady_clock::time_point deadline);

 private:
  // The turn loop of drive() (until quiet) and serve() (until stopped).
  uint64_t turns(bool forever);
  // Commits the runs that changed (one group commit when onTurn set one). False when the group
  // commit could not store them.
  bool commitTurn();
  // Releases the effects the committed turn started. True when one was released.
  bool releaseHeld();
  // Fires the due timers of runs on a real clock. True when one fired.
  bool fireDue();
  // The earliest timer of a run on a real clock, if any.
  std::optional<int64_t> nextDue() const;

  boost::asio::io_context io_;
  int threads_;
  std::unique_ptr<boost::asio::thread_pool> pool_;
  std::vector<Run*> runs_;
  std::atomic<int> out_{0};
  std::function<bool(const std::vector<Run*>&)> turn_;
  std::function<bool()> stop_;
  int64_t stopEvery_ = 0;
  bool again_ = false;
  bool holdReleases_ = false;
};

}  // namespace jr2rt
