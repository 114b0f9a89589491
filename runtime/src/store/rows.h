// What both stores decide alike about the rows of a run, each backend reading them its own way:
// the run named by a prefix of its id (RunRows::find), and whether a stored snapshot and journal
// are a run's (RunRows::load) — the same refusal, word for word, from SQLite and PostgreSQL.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "jr2/store.h"

namespace jr2rt {

// `found`: the first (at most 10) runs whose id starts with `prefix`, of `count` in all. Gives
// the one run; throws StoreError(`none`) when there is none, and when there are several a
// StoreError that names them (and how many more) and asks for more of the id.
RunSummary OneRunOf(std::vector<RunSummary>& found, int64_t count, const std::string& prefix,
                    const std::string& none);

// Run `id` of store `store` (named for a person) is damaged: `why`.
StoreDamaged RunDamaged(const std::string& id, const std::string& store, const std::string& why);

// The stored snapshot `text` of run `id`, parsed; StoreDamaged when it is not JSON or not a run's
// (an object naming its `id`, `workflow` and `status`).
Json SnapshotOf(const std::string& text, const std::string& id, const std::string& store);

// The run's input stored beside its snapshot (StoredRun::inputText; `stored` false when the
// row has none, NULL) put back into `snapshot` as its `input`, when the snapshot has none (one a
// saver wrote). StoreDamaged when that input is not JSON.
// True when it put it back (StoredRun::inputApart).
bool PutInputBack(Json& snapshot, bool stored, const std::string& input, const std::string& id,
                  const std::string& store);

// An ended run's output whose items and failures its journal holds (Run::outputInJournal: its
// snapshot's `outputInJournal` is true, and its output was stored without them) given them back
// from `journal`, as the Pool had them: `items` each settled item's output by its id, `failures`
// each failed item's failure; the marker removed. A load does it (both stores), so that every
// reader of a snapshot reads the whole output. StoreDamaged when an entry is not a settle or a
// failure, or an item is in it twice (as a restore of the Pool would refuse it).
void PutOutputBack(Json& snapshot, const std::vector<Json>& journal, const std::string& id,
                   const std::string& store);
// The same for an output and its marker wherever they are (a saved view's `report`): `holder`'s
// `output` given its items and failures from `journal`, when `holder.outputInJournal` is true.
// False when a journal entry is not a settle or a failure, or an item is in it twice (nothing
// changed).
bool OutputFromJournal(Json& holder, const std::vector<Json>& journal);
// A Pool's items and failures as its `journal` says, added to `items` and `failures` by item id,
// as PoolActor::readJournal rebuilds them when it restores the Pool (a later entry for an id over
// an earlier one). False when the journal cannot be one Pool's: an entry that is not a settle or
// a failure (ReadJournalEntry, jr2/pool_lines.h: left out), or an item in it twice.
bool ItemsFromJournal(const std::vector<Json>& journal, Json& items, Json& failures);

// Appends the journal entries of one row to `journal`, whose last entry was number `last` (0
// before the first). A row is one entry numbered `seq`, or the entries one save appended (a JSON
// array of them, JournalRows) of which the last is number `seq`. An entry is a JSON object, or a
// Pool's settle written short, `[id, output]` (SettleEntry), given as `{"output", "settled"}`.
// StoreDamaged when the numbering skips (a row someone removed) or an entry is not JSON.
void AppendEntry(std::vector<Json>& journal, int64_t& last, int64_t seq, const std::string& text,
                 const std::string& id, const std::string& store);
// The entries of one journal row's JSON `row` (one entry, or an array of them) appended to
// `out`, each short entry given as its object.
void AppendEntries(std::vector<Json>& out, Json row);
// Whether `j` is one journal entry written short, a Pool's settle `[id, output]` as
// pool_actor.cpp writes it (an array whose first member is a string; a row of many entries
// begins with an entry, never a string).
inline bool IsShortEntry(const Json& j) {
  return j.is_array() && j.size() == 2 && j[0].is_string();
}

// A row of a save's journal entries or feed lines (#33: a row each was a third of what storing a
// Pool's settled items cost): its text, a JSON array of them (a journal row of one entry is the
// entry itself), and how many it holds.
struct RowText {
  std::string text;
  size_t count = 0;
};

// Whether a row whose text is `bytes` long fills the pages it is kept in, as the store that writes
// it lays rows out (SQLite: PageFit in store/sqlite/db.h). A row that reaches its bound ends
// instead after its last element where it did, when that keeps at least half its text; a save's
// last row is cut so when both its parts fit. Without it, a row of 128 feed lines left a fifth of
// the feed's pages empty (docs/performance.md). Empty: rows end at their bound alone.
using RowFits = std::function<bool(size_t bytes)>;

// The entries one save appends (each one entry's JSON text, StoredRun::journalText) in rows of up
// to kEntriesPerRow, each numbered by its last entry.
inline constexpr size_t kEntriesPerRow = 256;
std::vector<RowText> JournalRows(const std::vector<std::string>& entries, const RowFits& fits);

// A save's feed lines in rows of up to kLinesPerRow (#33, docs/runtime.md#the-store): the row's
// `kind` is kFeedLinesKind, its `seq` the number of the last of its lines, its `time` the
// first's, its `line` empty and its `data` `[[time, kind, line, data], …]`, a line whose time is
// the line's before it written `[kind, line, data]` (the row's `time` for its first: 14 bytes of
// the 77 a Pool's mark took), and the lines a top Pool tells short (FeedForm, jr2/pool_lines.h)
// written as they are told: its mark (kTopMark: `started`, `settled`, line `<item> <kind>`) `[time,
// kind, item]` or `[kind, item]`, its line and its data `{"item": <item>, "pool": ""}` made again
// when it is read (22 bytes of the 61 it took); its trace of an answer A of its `next` (kTopAnswer:
// kind `source`, A an object or array) `[time, "source", A]` or `["source", A]`, its data
// `{"answer": A, "call": "next", "pool": ""}` made again (37 bytes fewer). Bounded, so that a
// page of a feed (serve sends 128 lines a page) never reads a turn of 20,000 lines, and no row
// is a buffer of megabytes. A save whose lines are not all UTF-8 in kind and text (a process's
// output) keeps their bytes as they were, a row each. FeedRows gives the rows, and none when the
// save is one line or has a line that is not UTF-8.
inline constexpr const char* kFeedLinesKind = "lines";
inline constexpr size_t kLinesPerRow = 128;
std::vector<RowText> FeedRows(const std::vector<FeedLine>& lines, const RowFits& fits);

// A line's data as both stores write it, whether its maker gave it as JSON (`data`, dumped with
// nlohmann's replacement of text that is not UTF-8) or as text (`dataText`, as it is): appended
// to `out`, or as a string of its own.
void AppendFeedData(std::string& out, const FeedLine& line);
std::string FeedDataText(const FeedLine& line);

// Appends the lines of one stored feed row to `out`, those numbered above `afterSeq`: the row
// itself, or, when its kind is kFeedLinesKind, the lines it holds, numbered up to `seq`. Data
// that is not JSON (another tool's) is kept as its text, and a row of lines that cannot be read
// is kept as one line of that kind with its text: a read of a feed never throws.
void AppendFeedRow(std::vector<FeedLine>& out, int64_t seq, int64_t timeMs, std::string line,
                   std::string kind, const std::string& data, int64_t afterSeq);

}  // namespace jr2rt
