// A run's kept parts in rows of their own (docs/runtime.md#the-store, #33): table `parts(run, id,
// text)`. A save's snapshot and view come marked (core/pieces.h): each Pool worker's part and
// each open Gate's, named by a piece id that always means the same bytes. The row of `runs`
// stores the texts with each piece's text taken out (the skeleton), and `parts` the pieces. A
// save writes only the pieces the run's rows do not hold yet, and deletes those its texts no
// longer name, so what a commit writes no longer grows with the run: SQLite writes a changed row
// whole, with every overflow page (a Pool of 1,024 workers at their Gates: 770 kB a commit).
// At 64 workers the pieces save little (15 WAL pages a commit against 17: the workers turn over
// at each answer, docs/performance.md). Texts that fit a page together are stored whole.
//
// Which pieces the rows hold is known without reading them only when this store object wrote
// the run's current revision itself (held_): then no other writer came between, since any save
// bumps the revision that the UPDATE checks. Else the run's parts are all written again. Piece
// ids are unique in one process, not across processes: a piece written by another process is
// never taken for one of ours.
#include <algorithm>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/pieces.h"
#include "store/rows.h"
#include "store/sqlite/sqlite_store.h"

namespace jr2rt::sqlite {
namespace {

// What a row of `runs` holds besides its texts, at most, as a page's share (its id, workflow,
// status, numbers, key and the record's header).
constexpr size_t kRowRest = 512;
// The most pieces a save's JR2_CHECK_SAVES check reads back whole.
constexpr size_t kCheckWhole = 256;

}  // namespace

std::string WholeText(Db& db, const std::string& run, std::string text, const std::string& store) {
  if (!HasPieces(text)) return text;
  std::unordered_map<uint64_t, std::string> parts;
  Stmt s(db, "SELECT id, text FROM parts WHERE run = ?");
  s.bind(1, run);
  while (s.step()) parts.emplace(static_cast<uint64_t>(s.integer(0)), s.text(1));
  try {
    return Assemble(text, [&](uint64_t id) -> const std::string* {
      const auto it = parts.find(id);
      return it == parts.end() ? nullptr : &it->second;
    });
  } catch (const std::exception& e) {
    throw RunDamaged(run, store,
                     std::string("a part of its stored text is missing (") + e.what() + ")");
  }
}

std::string SqliteStore::whole(const std::string& run, std::string text) {
  return WholeText(*db_, run, std::move(text), Quoted(path_));
}

std::vector<uint64_t> SqliteStore::writeParts(const StoredRun& run, bool fresh,
                                              const std::string& snapshot, const std::string& view,
                                              std::string& snapshotSkeleton,
                                              std::string& viewSkeleton) {
  std::vector<Piece> pieces, viewPieces;
  // A text without marks is left as given (its skeleton ""), not copied: a save binds it as it is.
  snapshotSkeleton.clear();
  viewSkeleton.clear();
  if (snapshot.size() + view.size() + kRowRest < static_cast<size_t>(db_->pageSize())) {
    // Texts that fit the row's page whole: one page written either way, and one statement
    // rather than a row for each part (a Pool of one worker at its Gate, save_per_settle).
    if (HasPieces(snapshot)) snapshotSkeleton = Unmarked(snapshot);
    if (HasPieces(view)) viewSkeleton = Unmarked(view);
  } else {
    if (HasPieces(snapshot)) SplitPieces(snapshot, snapshotSkeleton, pieces);
    if (HasPieces(view)) SplitPieces(view, viewSkeleton, viewPieces);
  }
  pieces.insert(pieces.end(), viewPieces.begin(), viewPieces.end());
  std::sort(pieces.begin(), pieces.end(),
            [](const Piece& a, const Piece& b) { return a.id < b.id; });
  pieces.erase(std::unique(pieces.begin(), pieces.end(),
                           [](const Piece& a, const Piece& b) { return a.id == b.id; }),
               pieces.end());
  // What the run's rows hold: known when this object wrote the revision the save follows.
  const std::vector<uint64_t>* held = nullptr;
  if (!fresh) {
    const auto it = held_.find(run.id);
    if (it != held_.end() && it->second.revision == run.revision) held = &it->second.ids;
  }
  if (held == nullptr) {
    Stmt gone(*db_, "DELETE FROM parts WHERE run = ?");
    gone.bind(1, run.id).step();
  } else {
    // Those the texts no longer name (both lists are in order).
    Stmt gone(*db_, "DELETE FROM parts WHERE run = ? AND id = ?");
    size_t at = 0;
    for (const uint64_t id : *held) {
      while (at < pieces.size() && pieces[at].id < id) ++at;
      if (at < pieces.size() && pieces[at].id == id) continue;
      gone.bind(1, run.id).bind(2, static_cast<int64_t>(id));
      gone.step();
      gone.reset();
    }
  }
  {
    Stmt add(*db_,
             "INSERT INTO parts (run, id, text) VALUES (?1, ?2, ?3)"
             " ON CONFLICT (run, id) DO UPDATE SET text = ?3");
    for (const Piece& p : pieces) {
      if (held != nullptr && std::binary_search(held->begin(), held->end(), p.id)) continue;
      add.bind(1, run.id).bind(2, static_cast<int64_t>(p.id)).bindKept(3, p.text);
      add.step();
      add.reset();
    }
  }
  // JR2_CHECK_SAVES: each save that wrote pieces reads its texts back whole, inside its
  // transaction, and stops the process when they differ from what it was given; a run of more
  // than kCheckWhole pieces has its rows counted instead (a test's Pool of 1,000 held workers
  // would read them all at each of 10,000 commits).
  if (CheckingSaves() && !pieces.empty()) {
    auto die = [&](const char* what) {
      std::fprintf(stderr, "JR2_CHECK_SAVES: run %s: its %s read back from parts differs\n",
                   run.id.c_str(), what);
      std::abort();
    };
    if (pieces.size() > kCheckWhole) {
      Stmt n(*db_, "SELECT count(*) FROM parts WHERE run = ?");
      n.bind(1, run.id);
      if (!n.step() || n.integer(0) != static_cast<int64_t>(pieces.size())) die("pieces");
    } else {
      try {
        if (!snapshotSkeleton.empty() && whole(run.id, snapshotSkeleton) != Unmarked(snapshot))
          die("snapshot");
        if (!viewSkeleton.empty() && whole(run.id, viewSkeleton) != Unmarked(view)) die("view");
      } catch (const StoreDamaged&) {
        die("texts");
      }
    }
  }
  std::vector<uint64_t> ids;
  ids.reserve(pieces.size());
  for (const Piece& p : pieces) ids.push_back(p.id);
  return ids;
}

void SqliteStore::committed() {
  // What each run's rows now hold, at the revision its save gave; none kept for a run that
  // ended (its next save, if any, writes its parts again).
  for (auto& [id, next] : heldNext_) {
    if (next.keep) {
      held_[id] = std::move(next);
    } else {
      held_.erase(id);
    }
  }
  heldNext_.clear();
}

}  // namespace jr2rt::sqlite
