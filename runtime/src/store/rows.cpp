#include "store/rows.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
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
  const bool many = parsed.is_array() && !IsShortEntry(parsed);
  const int64_t n = many ? static_cast<int64_t>(parsed.size()) : 1;
  if (n == 0 || seq != last + n) {
    throw RunDamaged(id, store,
                     n == 0 ? "a journal row holds no entry"
                            : "its journal skips from entry " + std::to_string(last) + " to " +
                                  std::to_string(seq - n + 1));
  }
  last = seq;
  AppendEntries(journal, std::move(parsed));
}

void AppendEntries(std::vector<Json>& out, Json row) {
  const auto add = [&out](Json&& entry) {
    if (IsShortEntry(entry)) {
      out.push_back({{"output", std::move(entry[1])}, {"settled", std::move(entry[0])}});
    } else {
      out.push_back(std::move(entry));
    }
  };
  if (!row.is_array() || IsShortEntry(row)) {
    add(std::move(row));
    return;
  }
  for (Json& entry : row) add(std::move(entry));  // a save's entries (JournalRows)
}

namespace {

// `n` elements in rows of up to `bound`, element i's text appended to a row by append(out, i)
// (false: it cannot be written, and there are no rows); RowFits (rows.h) says where a row may end
// short of its bound. `bare`: a row of one element is the element itself, not an array of it.
template <class Append>
std::vector<RowText> ArrayRows(size_t n, size_t bound, const RowFits& fits, bool bare,
                               size_t perElement, Append&& append) {
  std::vector<RowText> rows;
  std::string out = "[";
  std::vector<size_t> ends;  // where each element of the row being written ends in `out`
  ends.reserve(bound);
  const auto emit = [&](std::string text, size_t count) {
    if (bare && count == 1) text = text.substr(1, text.size() - 2);
    rows.push_back(RowText{std::move(text), count});
  };
  // Ends the row: whole, or after its last element where it fits (the rest begins the next).
  const auto end = [&](bool last) {
    const size_t total = ends.back();
    size_t keep = ends.size();
    if (fits && !fits(total + 1)) {
      for (size_t k = ends.size() - 1; k >= 1 && ends[k - 1] * 2 >= total; --k) {
        if (fits(ends[k - 1] + 1) && (!last || fits(total - ends[k - 1] + 1))) {
          keep = k;
          break;
        }
      }
    }
    if (keep == ends.size()) {
      out += ']';
      emit(std::move(out), keep);
      out = "[";
      ends.clear();
      return;
    }
    const size_t cut = ends[keep - 1];
    std::string rest = "[";
    rest.reserve(std::max(out.capacity(), total - cut + 1));
    rest.append(out, cut + 1);  // after the comma
    out.resize(cut);
    out += ']';
    emit(std::move(out), keep);
    out = std::move(rest);
    ends.erase(ends.begin(), ends.begin() + static_cast<std::ptrdiff_t>(keep));
    for (size_t& e : ends) e -= cut;
    if (last) {
      out += ']';
      emit(std::move(out), ends.size());
      ends.clear();
    }
  };
  rows.reserve(n / bound + 2);
  out.reserve(std::min(bound, n) * perElement);
  for (size_t i = 0; i < n; ++i) {
    if (!ends.empty()) out += ',';
    if (!append(out, i)) return {};
    ends.push_back(out.size());
    if (ends.size() == bound) end(/*last=*/false);
  }
  if (!ends.empty()) end(/*last=*/true);
  return rows;
}

}  // namespace

std::vector<RowText> JournalRows(const std::vector<std::string>& entries, const RowFits& fits) {
  return ArrayRows(entries.size(), kEntriesPerRow, fits, /*bare=*/true, 48,
                   [&](std::string& out, size_t i) {
                     out += entries[i];
                     return true;
                   });
}

std::vector<RowText> FeedRows(const std::vector<FeedLine>& lines, const RowFits& fits) {
  if (lines.size() < 2) return {};
  return ArrayRows(lines.size(), kLinesPerRow, fits, /*bare=*/false, 96,
                   [&](std::string& out, size_t i) {
                     const FeedLine& l = lines[i];
                     out += '[';
                     // The time of the line before it, or its row's own (rows.h): left out.
                     if (i == 0 || lines[i - 1].timeMs != l.timeMs) {
                       out += std::to_string(l.timeMs);
                       out += ',';
                     }
                     if (!AppendUtf8String(out, l.kind)) return false;
                     out += ',';
                     // A top Pool's lines told short (FeedForm) are written short (rows.h).
                     if (l.form == FeedForm::kTopAnswer) {
                       out += l.dataText;
                       out += ']';
                       return true;
                     }
                     if (l.form == FeedForm::kTopMark) {
                       if (!AppendUtf8String(out, MarkItem(l.line, l.kind))) return false;
                       out += ']';
                       return true;
                     }
                     if (!AppendUtf8String(out, l.line)) return false;
                     out += ',';
                     AppendFeedData(out, l);
                     out += ']';
                     return true;
                   });
}

void AppendFeedData(std::string& out, const FeedLine& line) {
  AppendFeedFormData(out, line.form, line.kind, line.line, line.data, line.dataText);
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
    // Each line `[time, kind, line, data]`, or `[kind, line, data]` at the time of the line before
    // it (the row's own for its first); a top Pool's mark `[time, kind, item]` or `[kind, item]`
    // (FeedRows). Where its kind is, or kNotALine.
    constexpr size_t kNotALine = 4;
    const auto first = [](const Json& r) -> size_t {
      if (!r.is_array() || r.size() < 2 || r.size() > 4) return kNotALine;
      const bool timed = r[0].is_number_integer();
      if (r.size() == 4) return timed ? 1 : kNotALine;
      if (r.size() == 2) return timed ? kNotALine : 0;
      return timed ? 1 : 0;
    };
    // A short line ([kind, item] or [source, answer], with or without its time) ends after the
    // member that follows its kind.
    const auto shortTrace = [](const Json& r, size_t at) {
      return r.size() == at + 2 && (r[at + 1].is_object() || r[at + 1].is_array()) &&
             r[at] == "source";
    };
    bool readable = rows.is_array() && !rows.empty();
    for (const Json& r : rows.is_array() ? rows : Json::array()) {
      const size_t at = first(r);
      readable = readable && at != kNotALine && r[at].is_string() &&
                 (r[at + 1].is_string() || shortTrace(r, at));
    }
    if (readable) {
      int64_t at = seq - static_cast<int64_t>(rows.size());
      int64_t time = timeMs;
      for (Json& r : rows) {
        const size_t f = first(r);
        if (f == 1) time = r[0].get<int64_t>();
        if (++at <= afterSeq) continue;
        std::string kindOf = r[f].get<std::string>();
        if (shortTrace(r, f)) {  // a trace of `next`: its data made again
          out.emplace_back(at, time, std::string(), std::move(kindOf),
                           TopAnswerData(std::move(r[f + 1])));
          continue;
        }
        if (r.size() == f + 2) {  // a mark: its line and data made again
          std::string item = r[f + 1].get<std::string>();
          std::string text = item;
          text.append(" ").append(kindOf);
          out.emplace_back(at, time, std::move(text), std::move(kindOf),
                           TopMarkData(std::move(item)));
          continue;
        }
        out.emplace_back(at, time, r[f + 1].get<std::string>(), std::move(kindOf),
                         std::move(r[f + 2]));
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

bool ItemsFromJournal(const std::vector<Json>& journal, Json& items, Json& failures) {
  bool whole = true;
  for (const Json& e : journal) {
    JournalEntry entry;
    if (!ReadJournalEntry(e, entry)) {
      whole = false;
      continue;
    }
    const std::string& item = *entry.item;
    whole = whole && !items.contains(item) && !failures.contains(item);
    (entry.failed ? failures : items)[item] = *entry.value;
  }
  return whole;
}

bool OutputFromJournal(Json& holder, const std::vector<Json>& journal) {
  if (!holder.is_object()) return true;
  const auto marker = holder.find("outputInJournal");
  if (marker == holder.end()) return true;
  const auto output = holder.find("output");
  if (*marker != true || output == holder.end() || !output->is_object()) return false;
  Json items = Json::object();
  Json failures = Json::object();
  if (!ItemsFromJournal(journal, items, failures)) return false;
  (*output)["items"] = std::move(items);
  (*output)["failures"] = std::move(failures);
  holder.erase("outputInJournal");
  return true;
}

void PutOutputBack(Json& snapshot, const std::vector<Json>& journal, const std::string& id,
                   const std::string& store) {
  if (!OutputFromJournal(snapshot, journal)) {
    throw RunDamaged(id, store,
                     "its output's items are kept in its journal, and an entry there is not one "
                     "item's settle or failure, or names an item twice");
  }
}

bool PutInputBack(Json& snapshot, bool stored, const std::string& input, const std::string& id,
                  const std::string& store) {
  if (!stored || snapshot.contains("input")) return false;
  try {
    snapshot["input"] = Json::parse(input);
  } catch (const Json::exception& e) {
    throw RunDamaged(id, store, "its stored input is not valid JSON (" + ErrorText(e) + ")");
  }
  return true;
}

}  // namespace jr2rt
