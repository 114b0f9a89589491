#include "store/rows.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "jr2/value.h"

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
  Json parsed;
  try {
    parsed = Json::parse(text);
  } catch (const Json::exception& e) {
    throw RunDamaged(id, store, "a journal entry is not valid JSON (" + ErrorText(e) + ")");
  }
  // The entries are numbered 1, 2, … as they were appended: a gap is a row someone removed.
  const int64_t n = parsed.is_array() ? static_cast<int64_t>(parsed.size()) : 1;
  if (n == 0 || seq != last + n) {
    throw RunDamaged(id, store,
                     n == 0 ? "a journal row holds no entry"
                            : "its journal skips from entry " + std::to_string(last) + " to " +
                                  std::to_string(seq - n + 1));
  }
  last = seq;
  if (!parsed.is_array()) {
    journal.push_back(std::move(parsed));
    return;
  }
  for (Json& entry : parsed) journal.push_back(std::move(entry));
}

std::string JournalRowText(const std::string* first, size_t n) {
  if (n == 1) return *first;
  size_t size = 2;
  for (const std::string* entry = first; entry != first + n; ++entry) size += entry->size() + 1;
  std::string out = "[";
  out.reserve(size);
  for (const std::string* entry = first; entry != first + n; ++entry) {
    if (out.size() > 1) out += ',';
    out += *entry;
  }
  out += ']';
  return out;
}

std::vector<std::string> FeedRowTexts(const std::vector<FeedLine>& lines) {
  std::vector<std::string> rows;
  if (lines.size() < 2) return rows;
  rows.reserve((lines.size() + kLinesPerRow - 1) / kLinesPerRow);
  for (size_t at = 0; at < lines.size(); ++at) {
    if (at % kLinesPerRow == 0) {
      if (!rows.empty()) rows.back() += ']';
      rows.emplace_back("[");
      rows.back().reserve(std::min(kLinesPerRow, lines.size() - at) * 96);
    }
    std::string& out = rows.back();
    const FeedLine& l = lines[at];
    if (out.size() > 1) out += ',';
    out += '[';
    out += std::to_string(l.timeMs);
    out += ',';
    if (!AppendUtf8String(out, l.kind)) return {};
    out += ',';
    if (!AppendUtf8String(out, l.line)) return {};
    out += ',';
    AppendFeedData(out, l);
    out += ']';
  }
  rows.back() += ']';
  return rows;
}

void AppendFeedData(std::string& out, const FeedLine& line) {
  if (line.dataText.empty()) {
    AppendJson(out, line.data);
  } else {
    out += line.dataText;
  }
}

std::string FeedDataText(const FeedLine& line) {
  std::string out;
  AppendFeedData(out, line);
  return out;
}

void AppendFeedRow(std::vector<FeedLine>& out, int64_t seq, int64_t timeMs, std::string line,
                   std::string kind, const std::string& data, int64_t afterSeq) {
  if (kind == kFeedLinesKind) {
    Json rows = Json::parse(data, nullptr, false);
    bool readable = rows.is_array() && !rows.empty();
    for (const Json& r : rows.is_array() ? rows : Json::array()) {
      readable = readable && r.is_array() && r.size() == 4 && r[0].is_number_integer() &&
                 r[1].is_string() && r[2].is_string();
    }
    if (readable) {
      int64_t at = seq - static_cast<int64_t>(rows.size());
      for (Json& r : rows) {
        if (++at <= afterSeq) continue;
        out.emplace_back(at, r[0].get<int64_t>(), r[2].get<std::string>(), r[1].get<std::string>(),
                         std::move(r[3]));
      }
      return;
    }
  }
  if (seq <= afterSeq) return;
  // Data another tool wrote that is not JSON is kept as its text, never a throw.
  Json parsed = data.empty() ? Json(nullptr) : Json::parse(data, nullptr, false);
  if (parsed.is_discarded()) parsed = data;
  out.emplace_back(seq, timeMs, std::move(line), std::move(kind), std::move(parsed));
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
