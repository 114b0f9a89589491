#include "jr2/saver.h"

namespace jr2rt {

void RunSaver::attach(Run& run, bool fresh) {
  if (fresh) run.keepJournal();
  Run* r = &run;
  run.onCommit([this, r] { checkpoint(*r); });
}

std::unique_ptr<Run> RunSaver::restore(const Registry& registry, const StoredRun& stored,
                                       Clock& clock) {
  auto run = Run::Restore(registry, stored.snapshot, clock, &stored.journal);
  revision_ = stored.revision;
  journalCount_ = stored.journalBefore;
  // What is stored: a turn that changes nothing is not written again.
  lastSaved_ = run->snapshot().dump(-1, ' ', false, Json::error_handler_t::replace);
  return run;
}

void RunSaver::addLine(std::string line, int64_t timeMs) {
  pending_.emplace_back(0, timeMs, std::move(line));
}

void RunSaver::checkpoint(Run& run) {
  Json snapshot = run.snapshot();
  std::string text = snapshot.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (pending_.empty() && !run.journalPending() && text == lastSaved_ && revision_ != 0) return;
  StoredRun stored;
  stored.id = run.id();
  stored.workflow = run.workflow().name;
  stored.status = ToString(run.status());
  stored.updatedMs = SystemClock().nowMs();
  stored.snapshot = std::move(snapshot);
  stored.revision = revision_;
  stored.journal = run.takeJournal();
  stored.journalBefore = journalCount_;
  revision_ = store_.save(stored, pending_);
  ++saves_;
  journalCount_ += static_cast<int64_t>(stored.journal.size());
  lastSaved_ = std::move(text);
  std::vector<FeedLine> lines;
  lines.swap(pending_);
  if (saved_) saved_(lines);
}

}  // namespace jr2rt
