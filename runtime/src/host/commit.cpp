// The group commit (docs/runtime.md#saved-as-it-moves-effects-at-most-once): at the end of each
// turn every run the turn changed is stored in one transaction, and only then is anything of the
// turn told (onSaved, the answers that waited for it) or started (its held effects).
//
// While serve runs on a store that gives a second connection (SQLite's), the commit is
// pipelined, so that serve uses both cores (#33): a thread of its own (Committer) stores one
// batch while the engine's thread goes on with the next turns. The runs those turns change wait
// for the next batch, which is prepared only once this one is settled, so that revisions and the
// "unchanged since stored" test stay one batch at a time. What waited for a batch (the effects
// each of its runs held when it was prepared, the answers registered until then) goes out when
// it is stored, never before; what came after waits for the next. Anything that lets go of a run
// or must store one at once settles the batch in flight first (settle()).
#include <sys/prctl.h>

#include <boost/asio/post.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "jr2/host.h"
#include "run/engine.h"

namespace jr2rt {

class RunHost::Committer {
 public:
  // `done` is called on the committer's thread after each batch (it posts to the engine).
  Committer(std::unique_ptr<RunRows> rows, std::function<void()> done)
      : rows_(std::move(rows)), done_(std::move(done)), thread_([this] { loop(); }) {}
  Committer(const Committer&) = delete;
  Committer& operator=(const Committer&) = delete;
  ~Committer() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();  // a batch handed is stored first: as a kill after its commit, nothing told
  }

  // On the engine's thread: stores `b` (none in flight).
  void hand(Batch b) {
    std::lock_guard<std::mutex> lock(mu_);
    batch_ = std::move(b);
    handed_ = true;
    finished_ = false;
    busy_ = true;
    cv_.notify_all();
  }
  // On the engine's thread: a batch was handed and not taken back.
  bool busy() const { return busy_; }
  bool finished() {
    std::lock_guard<std::mutex> lock(mu_);
    return finished_;
  }
  // On the engine's thread: waits until the batch is stored or refused, and takes it back.
  Batch take(std::exception_ptr* error, std::vector<int64_t>* revisions, double* seconds) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return finished_; });
    finished_ = false;
    busy_ = false;
    *error = error_;
    *revisions = std::move(revisions_);
    *seconds = seconds_;
    return std::move(batch_);
  }

 private:
  void loop() {
    prctl(PR_SET_NAME, "jr2-commit", 0, 0, 0);  // as `top -H` and the bench name it
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stop_ || handed_; });
      if (!handed_) return;  // stopped, with nothing handed
      handed_ = false;
      lock.unlock();
      // batch_ is the committer's until finished_: the engine's thread does not touch it.
      std::exception_ptr error;
      std::vector<int64_t> revisions;
      const auto began = std::chrono::steady_clock::now();
      try {
        revisions = rows_->saveAll(batch_.saves);
      } catch (...) {
        error = std::current_exception();
      }
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
      lock.lock();
      error_ = error;
      revisions_ = std::move(revisions);
      seconds_ = seconds;
      finished_ = true;
      cv_.notify_all();
      lock.unlock();
      done_();
      lock.lock();
    }
  }

  std::unique_ptr<RunRows> rows_;
  std::function<void()> done_;
  std::mutex mu_;
  std::condition_variable cv_;
  Batch batch_;
  bool handed_ = false;
  bool finished_ = false;
  bool stop_ = false;
  bool busy_ = false;  // the engine's thread's own
  std::exception_ptr error_;
  std::vector<int64_t> revisions_;
  double seconds_ = 0;
  std::thread thread_;  // last: started once every member above is made
};

void RunHost::CommitterGone::operator()(Committer* c) const { delete c; }

void RunHost::startCommitter() {
  auto rows = store_.commitConnection();
  if (!rows) return;
  Engine* engine = engine_.get();
  committer_.reset(new Committer(std::move(rows), [this, engine] {
    boost::asio::post(engine->io(), [this] {
      // settle() may have taken it already.
      if (committer_ && committer_->busy() && committer_->finished()) batchDone(/*handNext=*/true);
    });
  }));
}

void RunHost::stopCommitter() {
  settle();
  committer_.reset();
}

bool RunHost::inFlight() const { return committer_ && committer_->busy(); }

RunHost::Batch RunHost::prepareBatch(const std::vector<Run*>& runs) {
  Batch b;
  for (Run* r : runs) {
    auto it = runs_.find(r->id());
    if (it == runs_.end() || it->second.run.get() != r) continue;
    if (auto save = it->second.saver->prepare(*r)) {
      save->head = headOf(it->second);  // a standing run's start or end: its head, with it
      b.saves.push_back(std::move(*save));
      b.hosted.push_back(&it->second);
    }
  }
  // The turn's hook deliveries, logged in the same transaction (hooks.cpp).
  if (!b.saves.empty()) b.saves.front().hooks.swap(hookLogDue_);
  return b;
}

bool RunHost::commit(const std::vector<Run*>& runs, bool now) {
  // While the store's disk is full, serve tries again once a second; what the runs did
  // meanwhile is held in memory, and nothing of it is told or started.
  if (now) settle();
  if (inFlight()) return false;  // the runs stay changed: stored by the next batch
  if (full_ && std::chrono::steady_clock::now() - fullTried_ < std::chrono::seconds(1))
    return false;
  Batch b = prepareBatch(runs);
  if (b.saves.empty()) return true;
  if (!now && serving_ && committer_) {
    // Pipelined: what waits for this batch goes with it.
    for (Hosted* h : b.hosted) b.held.emplace_back(h->run.get(), Engine::heldCount(*h->run));
    b.after.swap(afterCommit_);
    b.answers.swap(answersDue_);
    committer_->hand(std::move(b));
    engine_->holdReleases(true);
    return true;
  }
  std::exception_ptr error;
  std::vector<int64_t> revisions;
  const auto began = std::chrono::steady_clock::now();
  try {
    revisions = store_.saveAll(b.saves);
  } catch (...) {
    error = std::current_exception();
  }
  return settleBatch(
      b, error, revisions,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
}

void RunHost::batchDone(bool handNext) {
  std::exception_ptr error;
  std::vector<int64_t> revisions;
  double seconds = 0;
  Batch b = committer_->take(&error, &revisions, &seconds);
  engine_->holdReleases(false);
  engine_->again();  // the runs changed meanwhile: the next batch at once
  if (settleBatch(b, error, revisions, seconds)) {
    for (auto& [run, n] : b.held) Engine::releaseFirst(*run, n);
    answerDue(b.answers);
    // The runs changed while it was stored (another turn's steps) go as the next batch before
    // the replies are written: the commit thread stores it meanwhile.
    runAfterCommit(b.after, handNext ? std::function<void()>([this] { engine_->commitChanged(); })
                                     : std::function<void()>());
    return;
  }
  // Not stored: its runs are changed still, and what waited for it waits for the next batch
  // (or is told it was lost, when the lease was: refence).
  for (Hosted* h : b.hosted) Engine::changed(*h->run);
  afterCommit_.insert(afterCommit_.begin(), std::make_move_iterator(b.after.begin()),
                      std::make_move_iterator(b.after.end()));
  answersDue_.insert(answersDue_.begin(), std::make_move_iterator(b.answers.begin()),
                     std::make_move_iterator(b.answers.end()));
}

void RunHost::settle() {
  if (inFlight()) batchDone();
}

bool RunHost::settleBatch(Batch& b, const std::exception_ptr& error,
                          const std::vector<int64_t>& revisions, double seconds) {
  if (error) {
    try {
      std::rethrow_exception(error);
    } catch (const StoreFenced& e) {
      // This host's lease is gone (another incarnation joined, or it was reaped): nothing of the
      // turn was stored, and nothing of it goes out; serve lets go of every run (keepLease).
      ++metrics_.commitsFailed;
      if (!serving_) throw;
      fenced_ = e.what();
      return false;
    } catch (const StoreConflict& e) {
      // Hosts sharing a store: this turn met what another live host owns (the head of a standing
      // workflow it drives, a run it claimed meanwhile). Nothing of the turn was stored, and
      // nothing of it goes out; this host lets go of every run and joins again, as when fenced,
      // and claims afresh. One host alone (SQLite), a conflict is a bug to report.
      if (hosts_ == nullptr || !serving_) throw;
      ++metrics_.commitsFailed;
      fenced_ = std::string("a commit met another host's ownership: ") + e.what();
      return false;
    } catch (const StoreError& e) {
      // A store shared by hosts that cannot be reached now (a restart of PostgreSQL, the
      // network): serve waits it out as it waits out a full disk — nothing of the turn goes out,
      // and it stores again once it can (or its lease runs out first, and it fences itself).
      const bool full = dynamic_cast<const StoreFull*>(&e) != nullptr;
      if (!full && (hosts_ == nullptr || !serving_)) throw;
      ++metrics_.commitsFailed;
      for (size_t i = 0; i < b.saves.size(); ++i)
        b.hosted[i]->saver->failed(*b.hosted[i]->run, b.saves[i]);
      // Logged with the commit that stores their turn, before the deliveries heard since.
      auto& hooks = b.saves.front().hooks;
      hookLogDue_.insert(hookLogDue_.begin(), std::make_move_iterator(hooks.begin()),
                         std::make_move_iterator(hooks.end()));
      if (!serving_) throw;  // a command says so and exits; serve waits for space
      if (!full_) {
        note(std::string(e.what()) + "; serve keeps answering reads, refuses changes (503), and " +
             (full ? "stores what its runs do once there is space"
                   : "stores what its runs do once the store answers again") +
             " (it tries every second)");
      }
      full_ = true;
      fullDisk_ = full;
      fullReason_ = e.what();
      fullTried_ = std::chrono::steady_clock::now();
      return false;
    }
  }
  metrics_.commit.observe(seconds);
  if (full_) {
    note(fullDisk_ ? "the run store has space again: what the runs did meanwhile is stored"
                   : "the run store answers again: what the runs did meanwhile is stored");
  }
  full_ = false;
  for (size_t i = 0; i < b.saves.size(); ++i) {
    b.hosted[i]->saver->committed(revisions[i], b.saves[i]);
    if (b.saves[i].head) b.hosted[i]->head = b.saves[i].head->ended.empty() ? 1 : 2;
  }
  tellEnded(b.saves);
  return true;
}

}  // namespace jr2rt
