#include "store/rows.h"

#include <string>
#include <utility>
#include <vector>

namespace jr2rt {

void RunRows::eachWaiting(const EachWaiting& fn) {
  for (const RunSummary& r : list(false)) {
    const StoredRun run = load(r.id);  // its input put back in its snapshot
    fn(run.workflow, run.snapshot.dump(), "");
  }
}

const std::vector<std::string>& StoredStatuses() {
  // ToString(RunStatus) of each (host_test holds them equal), and the host's `drifted`.
  static const std::vector<std::string> kAll{"waiting", "done",      "failed", "deadlocked",
                                             "error",   "cancelled", "drifted"};
  return kAll;
}

RunSummary OneRunOf(std::vector<RunSummary>& found, int64_t count, const std::string& prefix,
                    const std::string& none) {
  if (count == 0) throw StoreError(none);
  if (count == 1) return std::move(found.front());
  std::string names;
  for (const RunSummary& r : found) {
    names.append(names.empty() ? "" : ", ").append(r.id).append(" (").append(r.status).append(")");
  }
  if (count > static_cast<int64_t>(found.size())) {
    names += ", and " + std::to_string(count - static_cast<int64_t>(found.size())) + " more";
  }
  throw StoreError("`" + prefix + "` names " + std::to_string(count) + " runs: " + names +
                   "; give more of the id");
}

StoreDamaged RunDamaged(const std::string& id, const std::string& store, const std::string& why) {
  return StoreDamaged{"run " + id + " in " + store + " is damaged: " + why +
                      "; it cannot go on, the other runs are unaffected"};
}

Json SnapshotOf(const std::string& text, const std::string& id, const std::string& store) {
  Json snapshot;
  try {
    snapshot = Json::parse(text);
  } catch (const Json::exception& e) {
    throw RunDamaged(id, store, "its stored snapshot is not valid JSON (" + ErrorText(e) + ")");
  }
  // A snapshot is an object naming its run: anything else was not written by a run.
  for (const char* key : {"id", "workflow", "status"}) {
    if (!snapshot.is_object() || !snapshot.contains(key) || !snapshot[key].is_string()) {
      throw RunDamaged(id, store,
                       std::string("its stored snapshot is not a run's (") +
                           (snapshot.is_object() ? "it has no `" + std::string(key) + "`"
                                                 : "it is " + KindOf(snapshot)) +
                           ")");
    }
  }
  return snapshot;
}

void AppendEntry(std::vector<Json>& journal, int64_t& last, int64_t seq, const std::string& text,
                 const std::string& id, const std::string& store) {
  // The entries are numbered 1, 2, … as they were appended: a gap is a row someone removed.
  if (seq != last + 1) {
    throw RunDamaged(
        id, store,
        "its journal skips from entry " + std::to_string(last) + " to " + std::to_string(seq));
  }
  last = seq;
  try {
    journal.push_back(Json::parse(text));
  } catch (const Json::exception& e) {
    throw RunDamaged(id, store, "a journal entry is not valid JSON (" + ErrorText(e) + ")");
  }
}

void PutInputBack(Json& snapshot, bool stored, const std::string& input, const std::string& id,
                  const std::string& store) {
  if (!stored || snapshot.contains("input")) return;
  try {
    snapshot["input"] = Json::parse(input);
  } catch (const Json::exception& e) {
    throw RunDamaged(id, store, "its stored input is not valid JSON (" + ErrorText(e) + ")");
  }
}

}  // namespace jr2rt
