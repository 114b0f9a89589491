// Saves one run as it moves (docs/runtime.md#saved-as-it-moves-effects-at-most-once): the commit
// side of the run host, shared by the runner and the benchmarks. Attached to a Run, it stores the
// run at the end of each turn that changed it — the snapshot, the turn's feed lines and its journal
// entries, in one transaction — and only then hands the lines on to be shown.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jr2/run.h"
#include "jr2/store.h"

namespace jr2rt {

class RunSaver {
 public:
  // `clock`: what stamps each save (the host's: a test's manual clock stamps what it stores).
  RunSaver(RunRows& store, Clock& clock) : store_(store), clock_(clock) {}
  RunSaver(const RunSaver&) = delete;
  RunSaver& operator=(const RunSaver&) = delete;

  // Commits `run` at the end of each of its turns from now on (Run::onCommit). A run that has
  // not started yet also keeps a journal: its top Pool's items are stored one entry each.
  void attach(Run& run, bool fresh);
  // Restores a run loaded from the store, with its journal; this saver then goes on from the
  // revision and journal it was loaded at. Throws what Run::Restore throws.
  std::unique_ptr<Run> restore(const Registry& registry, const StoredRun& stored, Clock& clock,
                               std::shared_ptr<Engine> engine = nullptr);
  // Goes on from the revision and journal of `stored`, a run queued and not begun yet (its run
  // is begun afresh by the host that claimed it: RunHost::adopt).
  void resume(const StoredRun& stored) {
    revision_ = stored.revision;
    journalCount_ = stored.journalBefore;
  }
  // Stores the run, if it changed since it was last stored or loaded or a line or entry waits,
  // then hands the lines saved to onSaved. Throws StoreConflict when another command saved the
  // run since (nothing is written).
  void checkpoint(Run& run);
  // The two halves of checkpoint(), for a host that stores several runs in one transaction
  // (group commit): prepare() gives what to store, if anything changed; committed() takes the
  // revision the store gave it and hands the lines on. A turn's feed lines begin with a silent
  // `turn` line (`{"restored": true}` for the first turn stored after a restore): where a trace's
  // turns begin (docs/runtime.md#traces).
  //
  // With `ahead` (serve's pipelined commit, host/commit.cpp), the save may be followed by others
  // before it is settled: the next prepare() goes on from it as if it were stored — its
  // snapshot is what an unchanged run is compared with, its journal entries are counted as
  // stored, its input as given — and the store's revision is the one this save will get, which
  // only the commit thread knows (RunHost::Batch::chained). Saves prepared ahead are settled in
  // the order they were prepared; when one is not stored, every one after it is given back
  // first (failed(), the latest first), and the saver is as it was before the first.
  std::optional<Store::Save> prepare(Run& run, bool ahead = false);
  void committed(int64_t revision, Store::Save& save);
  // The Save prepare() gave was not stored (the disk was full): its feed lines and journal
  // entries go back, to be stored with the next one.
  void failed(Run& run, Store::Save& save);
  // Saves prepared ahead and not settled yet: a save prepared now follows one not stored yet.
  int outstanding() const { return static_cast<int>(ahead_.size()); }
  // A feed line (or typed event) of the current turn, stored with the next checkpoint.
  void addLine(std::string line, int64_t timeMs);
  void addEvent(FeedLine event);
  // The same for an event the run tells (Run::onEvent) at `timeMs`: its parts taken, made a line
  // in place (a Pool of 10,000 items tells 30,000 in one turn).
  void addEvent(Run::FeedEvent& event, int64_t timeMs);
  void onSaved(std::function<void(const std::vector<FeedLine>&)> fn) { saved_ = std::move(fn); }
  // The run's revision as this saver last loaded or stored it.
  int64_t revision() const { return revision_; }
  // The view it last stored with the run (views.h SavedView), null before its first save: what
  // a host reads of a run it drives instead of reading it back from the store.
  const Json& view() const;
  // How many saves actually wrote (a turn that changed nothing writes nothing).
  int64_t saves() const { return saves_; }

 private:
  RunRows& store_;
  Clock& clock_;
  // The turn's mark, before its first line (addEvent).
  void beginTurn(int64_t timeMs);
  std::vector<FeedLine> pending_;
  std::function<void(const std::vector<FeedLine>&)> saved_;
  int64_t revision_ = 0;      // of the run as loaded or last saved
  std::string lastSaved_;     // its snapshot then
  int64_t journalCount_ = 0;  // journal entries stored
  int64_t saves_ = 0;
  bool inputStored_ = false;  // the run's input given to the store (StoredRun::inputText)
  bool restored_ = false;     // restored from the store, and no turn of it stored since
  std::string viewText_;      // the view as last stored
  mutable Json view_;         // viewText_ parsed, once it is read
  // Saves prepared ahead and not settled (prepare's `ahead`), oldest first: what each stores
  // (its snapshot, how many journal entries, whether it gives the input). The oldest is
  // committed first (committed), the latest given back first (failed).
  struct Ahead {
    std::string text;
    int64_t entries = 0;
    bool input = false;
  };
  std::vector<Ahead> ahead_;
};

}  // namespace jr2rt
