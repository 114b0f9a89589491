// Each run's feed and journal in the SQLite store (docs/runtime.md#the-store): tables `feed(run,
// seq, time, line, kind, data)` and `journal(run, seq, entry)`, appended by runs.cpp's save (a
// row holds what one save appended, store/rows.h), read here in order without the run's snapshot.
#include <string>
#include <vector>

#include "store/rows.h"
#include "store/sqlite/sqlite_store.h"

namespace jr2rt::sqlite {

std::vector<FeedLine> SqliteStore::feed(const std::string& id, int64_t afterSeq) {
  return feedPage(id, afterSeq, -1);
}

std::vector<FeedLine> SqliteStore::feedPage(const std::string& id, int64_t afterSeq,
                                            int64_t limit) {
  // A row holds one line or more (store/rows.h), so `limit` rows hold at least `limit` lines;
  // the first may hold lines at or before `afterSeq`, which are skipped.
  Stmt s(*db_,
         "SELECT seq, time, line, kind, data FROM feed WHERE run = ? AND seq > ? ORDER BY seq"
         " LIMIT ?");
  s.bind(1, id).bind(2, afterSeq).bind(3, limit > 0 ? limit : int64_t{-1});
  std::vector<FeedLine> out;
  while (s.step() && (limit <= 0 || static_cast<int64_t>(out.size()) < limit)) {
    AppendFeedRow(out, s.integer(0), s.integer(1), s.text(2), s.text(3), s.text(4), afterSeq);
  }
  if (limit > 0 && static_cast<int64_t>(out.size()) > limit) out.resize(static_cast<size_t>(limit));
  return out;
}

int64_t SqliteStore::lastSeq(const std::string& id) {
  Stmt s(*db_, "SELECT coalesce(max(seq), 0) FROM feed WHERE run = ?");
  s.bind(1, id);
  return s.step() ? s.integer(0) : 0;
}

namespace {

// The Gates a run's feed says opened, ?2 the one asked for or '' for all: a line of its own, or
// one of a row of lines ([time, kind, line, data] or [kind, line, data], store/rows.h: the kind
// is third from the end, the data last).
constexpr const char* kGatesOpened =
    "SELECT gate FROM (SELECT json_extract(data, '$.gate') AS gate FROM feed"
    " WHERE run = ?1 AND kind = 'gate-opened' AND json_valid(data)"
    " UNION ALL SELECT json_extract(j.value, '$[#-1].gate') FROM feed, json_each(feed.data) j"
    " WHERE feed.run = ?1 AND feed.kind = 'lines' AND instr(feed.data, '\"gate-opened\"') > 0"
    " AND json_valid(feed.data) AND json_extract(j.value, '$[#-3]') = 'gate-opened')"
    " WHERE typeof(gate) = 'text' AND (?2 = '' OR gate = ?2)";

}  // namespace

std::vector<std::string> SqliteStore::gatesOpened(const std::string& id) {
  Stmt s(*db_, kGatesOpened);
  s.bind(1, id).bind(2, std::string());
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.text(0));
  return out;
}

bool SqliteStore::gateOpened(const std::string& id, const std::string& gate) {
  if (gate.empty()) return false;  // '' would ask for every Gate
  Stmt s(*db_, kGatesOpened);
  s.bind(1, id).bind(2, gate);
  return s.step();  // SQLite reads no further line than the first that says so
}

std::vector<Json> SqliteStore::journal(const std::string& id) {
  Stmt j(*db_, "SELECT entry FROM journal WHERE run = ? ORDER BY seq");
  j.bind(1, id);
  std::vector<Json> out;
  while (j.step()) {
    try {
      AppendEntries(out, Json::parse(j.text(0)));  // one entry, or a save's (rows.h)
    } catch (const Json::exception& e) {
      throw StoreDamaged("run " + id + " in " + Quoted(path_) +
                         " is damaged: a journal entry is not valid JSON (" + ErrorText(e) + ")");
    }
  }
  return out;
}

}  // namespace jr2rt::sqlite
