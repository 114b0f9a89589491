// The inbox in the SQLite store (docs/runtime.md#the-store): table `requests`, what a command
// asks of the host that drives a run (a `cancel` while `run` waits for a process), and that
// host's answer.
#include <optional>
#include <string>
#include <vector>

#include "store/sqlite/sqlite_store.h"

namespace jr2rt::sqlite {

int64_t SqliteStore::ask(const std::string& id, const std::string& verb, const Json& body) {
  Stmt s(*db_, "INSERT INTO requests (run, verb, body) VALUES (?, ?, ?)");
  s.bind(1, id).bind(2, verb).bind(3, body.dump(-1, ' ', false, Json::error_handler_t::replace));
  s.step();
  return sqlite3_last_insert_rowid(db_->handle());
}

std::vector<SqliteStore::Request> SqliteStore::asked() {
  std::vector<Request> out;
  Stmt s(*db_, "SELECT seq, run, verb, body FROM requests WHERE taken = 0 ORDER BY seq");
  while (s.step()) {
    Request r;
    r.seq = s.integer(0);
    r.run = s.text(1);
    r.verb = s.text(2);
    r.body = Json::parse(s.text(3), nullptr, false);
    out.push_back(std::move(r));
  }
  return out;
}

bool SqliteStore::takeRequest(int64_t seq) {
  Stmt s(*db_, "UPDATE requests SET taken = 1 WHERE seq = ? AND taken = 0");
  s.bind(1, seq);
  s.step();
  return sqlite3_changes(db_->handle()) == 1;
}

void SqliteStore::answer(int64_t seq, const Json& answer) {
  Stmt s(*db_, "UPDATE requests SET answer = ? WHERE seq = ?");
  s.bind(1, answer.dump(-1, ' ', false, Json::error_handler_t::replace)).bind(2, seq);
  s.step();
}

std::optional<Json> SqliteStore::answerOf(int64_t seq) {
  // One write transaction, taken at once (it waits for another writer within the busy
  // timeout): a read turned into a write inside it would fail at once under WAL instead.
  Txn txn(*db_, "BEGIN IMMEDIATE");
  std::optional<Json> out;
  {
    Stmt s(*db_, "SELECT answer FROM requests WHERE seq = ? AND answer IS NOT NULL");
    s.bind(1, seq);
    if (!s.step()) return std::nullopt;
    out = Json::parse(s.text(0), nullptr, false);
  }
  Stmt d(*db_, "DELETE FROM requests WHERE seq = ?");
  d.bind(1, seq);
  d.step();
  txn.commit();
  return out;
}

bool SqliteStore::withdraw(int64_t seq) {
  Stmt s(*db_, "DELETE FROM requests WHERE seq = ? AND taken = 0");
  s.bind(1, seq);
  s.step();
  return sqlite3_changes(db_->handle()) == 1;
}

bool SqliteStore::taken(int64_t seq) {
  Stmt s(*db_, "SELECT taken FROM requests WHERE seq = ?");
  s.bind(1, seq);
  return s.step() && s.integer(0) != 0;
}

}  // namespace jr2rt::sqlite
