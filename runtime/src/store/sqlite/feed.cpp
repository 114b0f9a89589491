// Each run's feed and journal in the SQLite store (docs/runtime.md#the-store): tables `feed(run,
// seq, time, line, kind, data)` and `journal(run, seq, entry)`, appended by runs.cpp's save, read
// here in order without the run's snapshot.
#include <string>
#include <vector>

#include "store/sqlite/sqlite_store.h"

namespace jr2rt::sqlite {

std::vector<FeedLine> SqliteStore::feed(const std::string& id, int64_t afterSeq) {
  return feedPage(id, afterSeq, -1);
}

std::vector<FeedLine> SqliteStore::feedPage(const std::string& id, int64_t afterSeq,
                                            int64_t limit) {
  Stmt s(*db_,
         "SELECT seq, time, line, kind, data FROM feed WHERE run = ? AND seq > ? ORDER BY seq"
         " LIMIT ?");
  s.bind(1, id).bind(2, afterSeq).bind(3, limit > 0 ? limit : int64_t{-1});
  std::vector<FeedLine> out;
  while (s.step()) {
    FeedLine f;
    f.seq = s.integer(0);
    f.timeMs = s.integer(1);
    f.line = s.text(2);
    f.kind = s.text(3);
    // Data another tool wrote that is not JSON is kept as its text, never a throw.
    const std::string data = s.text(4);
    f.data = data.empty() ? Json(nullptr) : Json::parse(data, nullptr, false);
    if (f.data.is_discarded()) f.data = data;
    out.push_back(std::move(f));
  }
  return out;
}

int64_t SqliteStore::lastSeq(const std::string& id) {
  Stmt s(*db_, "SELECT coalesce(max(seq), 0) FROM feed WHERE run = ?");
  s.bind(1, id);
  return s.step() ? s.integer(0) : 0;
}

bool SqliteStore::hadGate(const std::string& id, const std::string& gate) {
  Stmt s(*db_,
         "SELECT 1 FROM feed WHERE run = ? AND kind = 'gate-opened'"
         " AND json_valid(data) AND json_extract(data, '$.gate') = ? LIMIT 1");
  s.bind(1, id).bind(2, gate);
  return s.step();
}

std::vector<Json> SqliteStore::journal(const std::string& id) {
  Stmt j(*db_, "SELECT entry FROM journal WHERE run = ? ORDER BY seq");
  j.bind(1, id);
  std::vector<Json> out;
  while (j.step()) {
    try {
      out.push_back(Json::parse(j.text(0)));
    } catch (const Json::exception& e) {
      throw StoreDamaged("run " + id + " in " + Quoted(path_) +
                         " is damaged: a journal entry is not valid JSON (" + ErrorText(e) + ")");
    }
  }
  return out;
}

}  // namespace jr2rt::sqlite
