#include "jr2/saver.h"

#include <cstdio>
#include <cstdlib>

#include "core/pieces.h"
#include "jr2/views.h"

namespace jr2rt {
namespace {

// JR2_CHECK_SAVES set (CheckingSaves, core/pieces.h): each save's text, written from what each
// Pool worker wrote before (Actor::touch), is checked against the whole snapshot and observation
// built again (SameOrDie). A difference is a change made without touch(): it would be lost at a
// restore, so the process stops at once, saying where the texts part.
void SameOrDie(const Run& run, const char* what, const std::string& written,
               const std::string& whole) {
  if (written == whole) return;
  size_t at = 0;
  while (at < written.size() && at < whole.size() && written[at] == whole[at]) ++at;
  const size_t from = at > 200 ? at - 200 : 0;
  std::fprintf(stderr,
               "JR2_CHECK_SAVES: run %s: the %s written from kept parts differs from the whole "
               "at byte %zu\n  written: ...%s\n  whole:   ...%s\n",
               run.id().c_str(), what, at, written.substr(from, 400).c_str(),
               whole.substr(from, 400).c_str());
  std::abort();
}

}  // namespace

void RunSaver::attach(Run& run, bool fresh) {
  if (fresh) run.keepJournal();
  Run* r = &run;
  run.onCommit([this, r] { checkpoint(*r); });
}

std::unique_ptr<Run> RunSaver::restore(const Registry& registry, const StoredRun& stored,
                                       Clock& clock, std::shared_ptr<Engine> engine) {
  auto run = Run::Restore(registry, stored.snapshot, clock, &stored.journal, std::move(engine));
  revision_ = stored.revision;
  journalCount_ = stored.journalBefore;
  // Its input stored beside the snapshot is not given again at the next save (190 kB for a Pool
  // of 10,000 queued items, once per take-up). A snapshot that held its own (a row from before
  // inputs were stored apart) gives it at the next save, which moves it out.
  inputStored_ = stored.inputApart;
  // What is stored: a turn that changes nothing is not written again (marked as prepare()
  // writes it: the same parts, the same pieces).
  {
    MarkPieces marked;
    lastSaved_ = run->snapshotText();
  }
  restored_ = true;
  return run;
}

void RunSaver::addLine(std::string line, int64_t timeMs) {
  addEvent(FeedLine(0, timeMs, std::move(line)));
}

void RunSaver::beginTurn(int64_t timeMs) {
  // Where the turn begins, for a replay (docs/runtime.md#traces): a turn that told nothing took
  // no input, and needs no mark. Put first as the turn's first line comes: put there at the
  // save, it moved every line of the turn (20,000 for a Pool of 10,000 instant items, #33).
  if (pending_.empty()) {
    pending_.emplace_back(0, timeMs, "", "turn",
                          restored_ ? Json{{"restored", true}} : Json::object());
  }
}

void RunSaver::addEvent(FeedLine event) {
  beginTurn(event.timeMs);
  pending_.push_back(std::move(event));
}

void RunSaver::addEvent(Run::FeedEvent& e, int64_t timeMs) {
  beginTurn(timeMs);
  FeedLine& line =
      pending_.emplace_back(0, timeMs, std::move(e.line), std::move(e.kind), std::move(e.data));
  line.dataText = std::move(e.dataText);
  line.form = e.form;
}

void RunSaver::checkpoint(Run& run) {
  if (auto save = prepare(run)) committed(store_.save(save->run, save->feed), *save);
}

std::optional<Store::Save> RunSaver::prepare(Run& run, bool ahead) {
  // Every kept part marked as the piece it is (core/pieces.h): a store that keeps them apart
  // writes only those it does not hold.
  MarkPieces marked;
  // The input is stored once, beside the snapshot (StoredRun::inputText), not in each one.
  std::string text = run.snapshotText();
  if (CheckingSaves()) {
    SameOrDie(run, "snapshot", Unmarked(text),
              run.snapshot(/*withInput=*/false, /*asStored=*/true)
                  .dump(-1, ' ', false, Json::error_handler_t::replace));
    SameOrDie(run, "observation", Unmarked(run.observeText()),
              run.observe().dump(-1, ' ', false, Json::error_handler_t::replace));
  }
  // Compared with what the save in flight stores, when one is (it is stored, or it is given
  // back before anything is prepared again).
  const std::string& last = ahead_.empty() ? lastSaved_ : ahead_.back().text;
  if (pending_.empty() && !run.journalPending() && text == last &&
      (revision_ != 0 || !ahead_.empty()))
    return std::nullopt;
  int64_t entriesAhead = 0;
  bool inputAhead = false;
  for (const Ahead& a : ahead_) {
    entriesAhead += a.entries;
    inputAhead = inputAhead || a.input;
  }
  Store::Save save;
  StoredRun& stored = save.run;
  stored.id = run.id();
  stored.workflow = run.workflow().name;
  stored.status = ToString(run.status());
  stored.updatedMs = clock_.nowMs();
  stored.revision = revision_;
  stored.journalText = run.takeJournal();
  stored.journalBefore = journalCount_ + entriesAhead;
  if (run.dispatchedBy().is_object()) stored.key = run.dispatchedBy().value("key", "");
  // As text, but a dispatched run's at its end: that is kept as JSON too, for the Pool that waits
  // for it (RunHost::tellEnded reads its output and reason). Not every ended run's: a Pool's
  // output is every item's, 10,000 values copied for nobody (#33).
  if (run.ended() && !stored.key.empty()) stored.snapshot = run.snapshot(/*withInput=*/false);
  stored.snapshotText = std::move(text);
  if (!inputStored_ && !inputAhead) AppendJson(stored.inputText, run.input());
  stored.viewText = SavedViewText(run);
  // Each open Gate's part of the view, kept from an earlier save of its opening: the same bytes
  // as written afresh, or a Gate changed in one opening and the stored view would be stale.
  if (CheckingSaves())
    SameOrDie(run, "view", Unmarked(stored.viewText), Unmarked(SavedViewText(run, /*kept=*/false)));
  save.feed.swap(pending_);  // the turn's mark first (addEvent)
  if (ahead) {
    ahead_.push_back({stored.snapshotText, static_cast<int64_t>(stored.journalText.size()),
                      !stored.inputText.empty()});
  }
  return save;
}

void RunSaver::failed(Run& run, Store::Save& save) {
  // The latest prepared ahead is given back first; a save not prepared ahead only when none is.
  if (!ahead_.empty()) ahead_.pop_back();
  // The save's lines before those told since, under one turn's mark (the first's): the turn that
  // stores them stores them all.
  if (!save.feed.empty()) {
    if (!pending_.empty()) {
      save.feed.insert(save.feed.end(), std::make_move_iterator(pending_.begin() + 1),
                       std::make_move_iterator(pending_.end()));
    }
    pending_ = std::move(save.feed);
  }
  run.restoreJournal(std::move(save.run.journalText));
}

void RunSaver::committed(int64_t revision, Store::Save& save) {
  // The oldest prepared ahead is stored first; a save not prepared ahead only when none is.
  if (!ahead_.empty()) ahead_.erase(ahead_.begin());
  revision_ = revision;
  ++saves_;
  inputStored_ = true;
  journalCount_ += static_cast<int64_t>(save.run.journalText.size());
  if (!save.feed.empty()) restored_ = false;
  // What was written is what the next turn compares with; the Save is spent after this.
  lastSaved_ = std::move(save.run.snapshotText);
  viewText_ = std::move(save.run.viewText);
  view_ = nullptr;
  if (saved_) saved_(save.feed);
}

}  // namespace jr2rt

namespace jr2rt {

const Json& RunSaver::view() const {
  // Parsed when first read after a save: a run that nobody reads between its commits (a Pool's)
  // never pays for it.
  if (view_.is_null() && !viewText_.empty()) view_ = Json::parse(Unmarked(viewText_));
  return view_;
}

}  // namespace jr2rt
