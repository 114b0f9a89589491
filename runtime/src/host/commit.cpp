// The group commit (docs/runtime.md#saved-as-it-moves-effects-at-most-once): at the end of each
// turn every run the turn changed is stored in one transaction, and only then is anything of the
// turn told (onSaved, the answers that waited for it) or started (its held effects).
//
// While serve runs on a store that gives a second connection (SQLite's), the commit is
// pipelined, so that serve uses both cores (#33): a thread of its own (Committer) stores one
// batch while the engine's thread goes on with the next turns. The runs those turns change go
// in the next batch, which the engine prepares at once, while the one before is stored, and
// queues behind it: the commit thread goes from one to the next without waiting for the
// engine's thread (the next batch's saves take the revisions the one before gave, its "unchanged
// since stored" test compares with what that one stores: RunSaver::prepare's `ahead`). At most
// two batches are out, one stored and one queued; until the commit thread takes the queued
// one, a turn that changes a run takes it back and prepares it again with its own steps
// (Committer::unhand), and only what changes after the commit thread took it waits for the
// batch after it. What waited for a batch (the effects each of its runs held when it was
// prepared, the answers registered until then) goes out when it is stored, never before; what
// came after waits for the next. A batch that is not stored (a full
// disk) takes the one queued behind it back with it, untried. A batch whose commit is followed
// by writes of the engine's own (an inbox answer) holds the one behind it until those are
// written (Batch::writesAfter). Anything that lets go of a run or must store one at once
// settles every batch out first (settle()).
#include <sys/prctl.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "jr2/host.h"
#include "run/engine.h"

namespace jr2rt {

class RunHost::Committer {
 public:
  // A batch handed back: stored (revisions), refused (error), or not tried (behind a refused
  // one: neither).
  struct Done {
    Batch batch;
    std::exception_ptr error;
    std::vector<int64_t> revisions;
    double seconds = 0;
  };

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
    thread_.join();  // the batches handed are stored first: as a kill after their commit
  }

  // On the engine's thread: queues `b` behind the batches out (at most one). It is stored once
  // the one before it is, at once when that one writes nothing after its commit; else when the
  // engine's thread releases it (release()).
  void hand(Batch b) {
    std::lock_guard<std::mutex> lock(mu_);
    const bool go = q_.empty() || !q_.back().batch.writesAfter();
    Slot& slot = q_.emplace_back();
    slot.batch = std::move(b);
    slot.go = go;
    out_ = q_.size();
    cv_.notify_all();
  }
  // On the engine's thread: the batch queued may be stored (what the one before wrote after its
  // commit is written).
  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    for (Slot& s : q_) s.go = true;
    cv_.notify_all();
  }
  // On the engine's thread: the batch queued last, taken back if the commit thread has not
  // begun it (to be prepared again with what changed since).
  std::optional<Batch> unhand() {
    std::lock_guard<std::mutex> lock(mu_);
    if (q_.empty() || q_.back().started) return std::nullopt;
    std::optional<Batch> b(std::move(q_.back().batch));
    q_.pop_back();
    out_ = q_.size();
    return b;
  }
  // On the engine's thread: the batches handed and not taken back.
  size_t out() const { return out_; }
  // On the engine's thread: the batches finished, in the order handed (a refused one with the
  // batch queued behind it, untried); with `wait`, every batch out, waiting for them (and
  // releasing a batch held for the engine's writes: nothing is written meanwhile).
  std::vector<Done> take(bool wait) {
    std::unique_lock<std::mutex> lock(mu_);
    if (wait) {
      for (Slot& s : q_) s.go = true;
      cv_.notify_all();
      cv_.wait(lock, [this] {
        for (const Slot& s : q_) {
          if (!s.finished) return false;
          if (s.error) return true;  // those behind it are never tried
        }
        return true;
      });
    }
    std::vector<Done> out;
    while (!q_.empty() && q_.front().finished) {
      Slot& s = q_.front();
      const bool refused = s.error != nullptr;
      out.push_back(Done{std::move(s.batch), s.error, std::move(s.revisions), s.seconds});
      q_.pop_front();
      if (refused) {
        for (Slot& behind : q_) out.push_back(Done{std::move(behind.batch), nullptr, {}, 0});
        q_.clear();
        refused_ = false;
      }
    }
    out_ = q_.size();
    return out;
  }

 private:
  struct Slot {
    Batch batch;
    bool go = true;
    bool started = false;
    bool finished = false;
    std::exception_ptr error;
    std::vector<int64_t> revisions;
    double seconds = 0;
  };

  // The first slot not started, when it may start now.
  Slot* next() {
    if (refused_) return nullptr;  // the batches behind a refused one are never tried
    for (Slot& s : q_) {
      if (s.started) continue;
      return s.go || stop_ ? &s : nullptr;
    }
    return nullptr;
  }

  void loop() {
    prctl(PR_SET_NAME, "jr2-commit", 0, 0, 0);  // as `top -H` and the bench name it
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return next() != nullptr || stop_; });
      Slot* s = next();
      if (s == nullptr) return;  // stopped, with nothing to store
      s->started = true;
      lock.unlock();
      // The slot is the committer's until finished: the engine's thread does not touch it (a
      // deque's elements stay where they are as others are added and taken).
      std::exception_ptr error;
      std::vector<int64_t> revisions;
      const auto began = std::chrono::steady_clock::now();
      try {
        chain(s->batch);
        revisions = rows_->saveAll(s->batch.saves);
        lastIds_.clear();
        for (const Store::Save& save : s->batch.saves) lastIds_.push_back(save.run.id);
        lastRevisions_ = revisions;
      } catch (...) {
        error = std::current_exception();
      }
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
      lock.lock();
      s->error = error;
      s->revisions = std::move(revisions);
      s->seconds = seconds;
      s->finished = true;
      if (error) refused_ = true;
      cv_.notify_all();
      lock.unlock();
      done_();
      lock.lock();
    }
  }

  // A chained save takes the revision the batch before it gave its run (stored by this thread
  // just before: a batch behind one that was not stored is never tried).
  void chain(Batch& b) {
    for (size_t i = 0; i < b.saves.size(); ++i) {
      if (!b.chained[i]) continue;
      StoredRun& run = b.saves[i].run;
      size_t at = 0;
      while (at < lastIds_.size() && lastIds_[at] != run.id) ++at;
      if (at == lastIds_.size()) {
        throw std::logic_error("run " + run.id +
                               " was prepared after a save the batch before did not hold");
      }
      run.revision = lastRevisions_[at];
    }
  }

  std::unique_ptr<RunRows> rows_;
  std::function<void()> done_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Slot> q_;
  bool stop_ = false;
  bool refused_ = false;  // a batch was refused: none behind it starts until it is taken back
  size_t out_ = 0;        // the engine's thread's own
  // The commit thread's own: the runs of the batch it stored last, and their revisions.
  std::vector<std::string> lastIds_;
  std::vector<int64_t> lastRevisions_;
  std::thread thread_;  // last: started once every member above is made
};

bool RunHost::Batch::writesAfter() const {
  if (!answers.empty()) return true;
  for (const AfterCommit& a : after) {
    if (a.order == AfterCommit::Order::kStore) return true;
  }
  return false;
}

void RunHost::CommitterGone::operator()(Committer* c) const { delete c; }

void RunHost::startCommitter() {
  auto rows = store_.commitConnection();
  if (!rows) return;
  Engine* engine = engine_.get();
  committer_.reset(new Committer(std::move(rows), [this, engine] {
    boost::asio::post(engine->io(), [this] {
      // settle() may have taken it already.
      if (committer_ && committer_->out() > 0) batchDone(/*handNext=*/true);
    });
  }));
}

void RunHost::stopCommitter() {
  settle();
  committer_.reset();
}

bool RunHost::inFlight() const { return committer_ && committer_->out() > 0; }

RunHost::Batch RunHost::prepareBatch(const std::vector<Run*>& runs, bool ahead) {
  Batch b;
  for (Run* r : runs) {
    auto it = runs_.find(r->id());
    if (it == runs_.end() || it->second.run.get() != r) continue;
    const bool chained = it->second.saver->outstanding() > 0;
    if (auto save = it->second.saver->prepare(*r, ahead)) {
      save->head = headOf(it->second);  // a standing run's start or end: its head, with it
      if (ahead && save->head) it->second.headOut = save->head->ended.empty() ? 1 : 2;
      b.saves.push_back(std::move(*save));
      b.hosted.push_back(&it->second);
      b.chained.push_back(chained);
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
  const bool pipelined = !now && serving_ && committer_;
  if (inFlight() && !pipelined) return false;
  if (full_ && std::chrono::steady_clock::now() - fullTried_ < std::chrono::seconds(1))
    return false;
  std::vector<Run*> changed;
  const std::vector<Run*>* batchRuns = &runs;
  if (pipelined && committer_->out() >= 2) {
    // One batch stored and one queued behind it at most. The queued one, if the commit thread
    // has not begun it, is prepared again with what this turn changed: a batch holds what
    // changed until the commit thread takes it, not only until the first turn after the one
    // before it was handed (which left most answers for the batch after, #33).
    std::optional<Batch> queued = committer_->unhand();
    if (!queued) return false;  // begun: what changed waits for the next
    changed = runs;
    for (Hosted* h : queued->hosted) {
      if (std::find(changed.begin(), changed.end(), h->run.get()) == changed.end())
        changed.push_back(h->run.get());
    }
    giveBack(*queued, /*tried=*/false, /*again=*/false);
    batchRuns = &changed;
  }
  Batch b = prepareBatch(*batchRuns, pipelined);
  if (b.saves.empty()) return true;
  if (pipelined) {
    // What waits for this batch goes with it: the effects its runs hold now, but those the
    // batch before it lets go of.
    for (Hosted* h : b.hosted) {
      Run* run = h->run.get();
      size_t& out = heldOut_[run];
      const size_t n = Engine::heldCount(*run) - std::min(out, Engine::heldCount(*run));
      out += n;
      b.held.emplace_back(run, n);
    }
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

void RunHost::heldSettled(const Batch& b) {
  for (const auto& [run, n] : b.held) {
    auto it = heldOut_.find(run);
    if (it != heldOut_.end()) it->second -= std::min(it->second, n);
  }
}

void RunHost::returnSaves(Batch& b) {
  for (size_t i = 0; i < b.saves.size(); ++i)
    b.hosted[i]->saver->failed(*b.hosted[i]->run, b.saves[i]);
  // Logged with the commit that stores their turn, before the deliveries heard since.
  auto& hooks = b.saves.front().hooks;
  hookLogDue_.insert(hookLogDue_.begin(), std::make_move_iterator(hooks.begin()),
                     std::make_move_iterator(hooks.end()));
}

void RunHost::giveBack(Batch& b, bool tried, bool again) {
  heldSettled(b);
  // Its lines, entries and hook deliveries go back as a full disk's do: settleBatch gave back
  // those of a batch the disk refused (its savers have nothing out then), not those of one never
  // tried, or of a lease lost.
  if (!tried || b.hosted.front()->saver->outstanding() > 0) returnSaves(b);
  for (size_t i = 0; i < b.hosted.size(); ++i) {
    Hosted* h = b.hosted[i];
    if (again) Engine::changed(*h->run);
    if (b.saves[i].head) h->headOut = 0;  // its head is written by the batch that stores it
  }
  afterCommit_.insert(afterCommit_.begin(), std::make_move_iterator(b.after.begin()),
                      std::make_move_iterator(b.after.end()));
  answersDue_.insert(answersDue_.begin(), std::make_move_iterator(b.answers.begin()),
                     std::make_move_iterator(b.answers.end()));
}

void RunHost::batchDone(bool handNext, bool wait) {
  std::vector<Committer::Done> done = committer_->take(wait);
  if (done.empty()) return;
  const bool out = committer_->out() > 0;
  if (!out) {
    engine_->holdReleases(false);
    heldOut_.clear();
  }
  engine_->again();  // the runs changed meanwhile: the next batch at once
  // Refused: what was handed after it goes back first (the latest first), so that what it gave
  // back comes before them.
  size_t refused = done.size();
  for (size_t i = 0; i < done.size(); ++i) {
    if (done[i].error) {
      refused = i;
      break;
    }
  }
  for (size_t i = done.size(); i-- > refused + 1;) giveBack(done[i].batch, /*tried=*/false);
  for (size_t i = 0; i < done.size() && i <= refused; ++i) {
    Committer::Done& d = done[i];
    if (!settleBatch(d.batch, d.error, d.revisions, d.seconds)) {
      giveBack(d.batch, /*tried=*/true);
      return;
    }
    heldSettled(d.batch);
    for (auto& [run, n] : d.batch.held) Engine::releaseFirst(*run, n);
    answerDue(d.batch.answers);
    // The batch queued behind it may go once this one's writes are written; the runs changed
    // while it was stored (another turn's steps) go as the next batch before the replies are
    // written: the commit thread stores it meanwhile.
    const bool last = i + 1 == done.size();
    runAfterCommit(d.batch.after, [this, last, handNext] {
      if (!committer_) return;
      committer_->release();
      if (last && handNext) engine_->commitChanged();
    });
  }
}

void RunHost::settle() {
  if (inFlight()) batchDone(/*handNext=*/false, /*wait=*/true);
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
      returnSaves(b);
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
