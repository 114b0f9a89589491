// The inbox in the PostgreSQL store (docs/scaling.md): table `requests`, what a command asks of
// the host that drives a run, and that host's answer (as sqlite/inbox.cpp). Each change is one
// statement, so two hosts never both take a request.
#include <optional>
#include <string>
#include <vector>

#include "store/postgres/pg_store.h"

namespace jr2rt::pg {

int64_t PgStore::ask(const std::string& id, const std::string& verb, const Json& body) {
  auto hold = db_->hold();
  // The run's owner is told (a NOTIFY whose payload is its name; "" for a run nobody owns: a
  // runner command drives it, or nobody yet), in the same statement.
  const Result r = db_->run(
      "WITH q AS (INSERT INTO requests (run, verb, body) VALUES ($1, $2, $3) RETURNING seq)"
      " SELECT q.seq, pg_notify('jr2_inbox', coalesce((SELECT owner FROM runs WHERE id = $1), ''))"
      " FROM q",
      Params().text(id).text(verb).text(Dump(body)));
  db_->notified();
  return r.integer(0, 0);
}

std::vector<PgStore::Request> PgStore::asked() {
  auto hold = db_->hold();
  const Result s =
      db_->run("SELECT seq, run, verb, body FROM requests WHERE NOT taken ORDER BY seq");
  std::vector<Request> out;
  for (int i = 0; i < s.rows(); ++i) {
    Request r;
    r.seq = s.integer(i, 0);
    r.run = s.text(i, 1);
    r.verb = s.text(i, 2);
    r.body = Json::parse(s.text(i, 3), nullptr, false);
    out.push_back(std::move(r));
  }
  return out;
}

bool PgStore::takeRequest(int64_t seq) {
  auto hold = db_->hold();
  return db_->run("UPDATE requests SET taken = true WHERE seq = $1 AND NOT taken",
                  Params().integer(seq))
             .changed() == 1;
}

void PgStore::answer(int64_t seq, const Json& answer) {
  auto hold = db_->hold();
  // The asker is told (every host that forwarded a request looks at its answers).
  db_->notified(db_->run("WITH a AS (UPDATE requests SET answer = $2 WHERE seq = $1 RETURNING 1)"
                         " SELECT pg_notify('jr2_answers', '') WHERE EXISTS (SELECT 1 FROM a)",
                         Params().integer(seq).text(Dump(answer)))
                    .rows());
}

std::optional<Json> PgStore::answerOf(int64_t seq) {
  auto hold = db_->hold();
  // Read and forgotten by one statement.
  const Result s =
      db_->run("DELETE FROM requests WHERE seq = $1 AND answer IS NOT NULL RETURNING answer",
               Params().integer(seq));
  if (s.rows() == 0) return std::nullopt;
  return Json::parse(s.text(0, 0), nullptr, false);
}

bool PgStore::withdraw(int64_t seq) {
  auto hold = db_->hold();
  return db_->run("DELETE FROM requests WHERE seq = $1 AND NOT taken", Params().integer(seq))
             .changed() == 1;
}

bool PgStore::taken(int64_t seq) {
  auto hold = db_->hold();
  const Result s = db_->run("SELECT taken FROM requests WHERE seq = $1", Params().integer(seq));
  return s.rows() > 0 && s.boolean(0, 0);
}

}  // namespace jr2rt::pg
