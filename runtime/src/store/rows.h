// What both stores decide alike about the rows of a run, each backend reading them its own way:
// the run named by a prefix of its id (RunRows::find), and whether a stored snapshot and journal
// are a run's (RunRows::load) — the same refusal, word for word, from SQLite and PostgreSQL.
#pragma once

#include <cstdint>
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
void PutInputBack(Json& snapshot, bool stored, const std::string& input, const std::string& id,
                  const std::string& store);

// Appends journal entry number `seq` (stored as `text`) to `journal`, whose last entry was number
// `last` (0 before the first): StoreDamaged when the numbering skips (a row someone removed) or
// the entry is not JSON.
void AppendEntry(std::vector<Json>& journal, int64_t& last, int64_t seq, const std::string& text,
                 const std::string& id, const std::string& store);

}  // namespace jr2rt
