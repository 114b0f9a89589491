// Each run's feed and journal in the PostgreSQL store (docs/scaling.md): tables `feed(run, seq,
// time, line, kind, data)` and `journal(run, seq, entry)`, appended by runs.cpp's save, read here
// in order without the run's snapshot (as sqlite/feed.cpp).
#include <string>
#include <vector>

#include "store/postgres/pg_store.h"
#include "store/rows.h"

namespace jr2rt::pg {

std::vector<FeedLine> PgStore::feed(const std::string& id, int64_t afterSeq) {
  return feedPage(id, afterSeq, -1);
}

std::vector<FeedLine> PgStore::feedPage(const std::string& id, int64_t afterSeq, int64_t limit) {
  auto hold = db_->hold();
  Params params;
  params.text(id).integer(afterSeq);
  if (limit > 0) {
    params.integer(limit);
  } else {
    params.null();  // LIMIT NULL: every line
  }
  const Result s = db_->run(
      "SELECT seq, time, line, kind, data FROM feed WHERE run = $1 AND seq > $2 ORDER BY seq"
      " LIMIT $3",
      params);
  std::vector<FeedLine> out;
  out.reserve(static_cast<size_t>(s.rows()));
  for (int i = 0; i < s.rows(); ++i) {
    FeedLine f;
    f.seq = s.integer(i, 0);
    f.timeMs = s.integer(i, 1);
    f.line = s.text(i, 2);
    f.kind = s.text(i, 3);
    // Data another tool wrote that is not JSON is kept as its text, never a throw.
    const std::string data = s.null(i, 4) ? std::string() : s.text(i, 4);
    f.data = data.empty() ? Json(nullptr) : Json::parse(data, nullptr, false);
    if (f.data.is_discarded()) f.data = data;
    out.push_back(std::move(f));
  }
  return out;
}

int64_t PgStore::lastSeq(const std::string& id) {
  auto hold = db_->hold();
  const Result s =
      db_->run("SELECT coalesce(max(seq), 0) FROM feed WHERE run = $1", Params().text(id));
  return s.rows() > 0 ? s.integer(0, 0) : 0;
}

std::vector<std::string> PgStore::gatesOpened(const std::string& id, const std::string& named) {
  auto hold = db_->hold();
  // The lines that opened a Gate (with `named`: those whose text holds its name as a JSON
  // string, as the store writes data), each read as JSON here: a line another tool wrote that
  // is not JSON names none, as in the SQLite store (json_valid), and no cast in the server can
  // fail on it.
  const Result s = db_->run(
      "SELECT data FROM feed WHERE run = $1 AND kind = 'gate-opened'"
      " AND ($2 = '' OR strpos(data, $2) > 0)",
      Params().text(id).text(named.empty() ? std::string() : Dump(Json(named))));
  std::vector<std::string> out;
  for (int i = 0; i < s.rows(); ++i) {
    const Json data = Json::parse(s.text(i, 0), nullptr, false);
    if (!data.is_object() || !data.contains("gate") || !data["gate"].is_string()) continue;
    if (named.empty() || data["gate"] == Json(named)) {
      out.push_back(data["gate"].get<std::string>());
      if (!named.empty()) break;  // once is enough
    }
  }
  return out;
}

std::vector<Json> PgStore::journal(const std::string& id) {
  auto hold = db_->hold();
  const Result j =
      db_->run("SELECT entry FROM journal WHERE run = $1 ORDER BY seq", Params().text(id));
  std::vector<Json> out;
  out.reserve(static_cast<size_t>(j.rows()));
  for (int i = 0; i < j.rows(); ++i) {
    try {
      AppendEntries(out, Json::parse(j.text(i, 0)));  // an entry a row, short or not (rows.h)
    } catch (const Json::exception& e) {
      throw StoreDamaged("run " + id + " in " + Quoted(db_->name()) +
                         " is damaged: a journal entry is not valid JSON (" + ErrorText(e) + ")");
    }
  }
  return out;
}

}  // namespace jr2rt::pg
