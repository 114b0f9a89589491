// Each run's feed and journal in the PostgreSQL store (docs/scaling.md): tables `feed(run, seq,
// time, line, kind, data)` and `journal(run, seq, entry)`, appended by runs.cpp's save, read here
// in order without the run's snapshot (as sqlite/feed.cpp).
#include <optional>
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

namespace {

// The Gate a `gate-opened` line names, read as JSON here: a line another tool wrote that is not
// JSON names none, as in the SQLite store (json_valid), and no cast in the server can fail on it.
std::optional<std::string> GateOfLine(const std::string& text) {
  const Json data = Json::parse(text, nullptr, false);
  if (!data.is_object()) return std::nullopt;
  const auto gate = data.find("gate");
  if (gate == data.end() || !gate->is_string()) return std::nullopt;
  return gate->get<std::string>();
}

}  // namespace

std::vector<std::string> PgStore::gatesOpened(const std::string& id) {
  auto hold = db_->hold();
  const Result s =
      db_->run("SELECT data FROM feed WHERE run = $1 AND kind = 'gate-opened'", Params().text(id));
  std::vector<std::string> out;
  for (int i = 0; i < s.rows(); ++i) {
    if (auto gate = GateOfLine(s.text(i, 0))) out.push_back(std::move(*gate));
  }
  return out;
}

bool PgStore::gateOpened(const std::string& id, const std::string& gate) {
  if (gate.empty()) return false;
  auto hold = db_->hold();
  // Only the lines whose text holds the name as the store writes a JSON string; of those
  // (nearly always the one line), the first whose `gate` is the name.
  const Result s = db_->run(
      "SELECT data FROM feed WHERE run = $1 AND kind = 'gate-opened' AND strpos(data, $2) > 0",
      Params().text(id).text(Dump(Json(gate))));
  for (int i = 0; i < s.rows(); ++i) {
    if (GateOfLine(s.text(i, 0)) == gate) return true;
  }
  return false;
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
