// The PostgreSQL store's connection (docs/scaling.md): the connect (its password never printed),
// statements prepared once, a pipeline per transaction, and PostgreSQL's failures said as the
// store's errors in one line: a full disk (SQLSTATE 53100) is StoreFull, a revision or journal
// that moved, a run or head another host owns (raised by the store's own functions, SQLSTATE class
// JR) StoreConflict, a lease no longer current (JR003) StoreFenced, a dispatch key a waiting run
// has already (the unique index runs_key_live) StoreConflict naming the key.
#include "store/postgres/conn.h"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>

namespace jr2rt::pg {
namespace {

// Statements sent in a pipeline before their results are read: the server's answers to a long
// batch are read as it goes, so that neither side fills its socket and waits for the other.
constexpr size_t kPipelineChunk = 256;

// Text in one line: libpq's messages end in a newline and may hold a tab-indented hint.
std::string OneLine(const std::string& text) {
  std::string out;
  bool space = false;
  for (const char c : text) {
    if (c == '\n' || c == '\r' || c == '\t') {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

// The length of the valid UTF-8 sequence (no NUL, no surrogate, no overlong form) at `s[i]`; 0
// when there is none.
size_t SequenceAt(const std::string& s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c == 0) return 0;
  if (c < 0x80) return 1;
  size_t n = 0;
  uint32_t cp = 0;
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (d & 0x3F);
  }
  static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

std::string ArrayItem(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// What the unique index runs_key_live refused, from the server's detail ("Key (workflow,
// dkey)=(callee, K-1) already exists."): "a waiting run of workflow `callee` has dispatch key
// `K-1` already". A workflow's name holds no ", ".
std::string KeyTaken(const std::string& detail) {
  const std::string mark = "=(";
  const size_t open = detail.find(mark);
  const size_t close = detail.rfind(") already exists");
  if (open != std::string::npos && close != std::string::npos && close > open) {
    const std::string pair = detail.substr(open + mark.size(), close - open - mark.size());
    const size_t comma = pair.find(", ");
    if (comma != std::string::npos) {
      return "a waiting run of workflow `" + pair.substr(0, comma) + "` has dispatch key `" +
             pair.substr(comma + 2) + "` already";
    }
  }
  return "a waiting run has that dispatch key already (" + detail + ")";
}

}  // namespace

std::string AsText(std::string s) {
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = SequenceAt(s, i);
    if (n == 0) break;
    i += n;
  }
  if (i == s.size()) return s;  // the usual case: valid, unchanged
  std::string out = s.substr(0, i);
  while (i < s.size()) {
    const size_t n = SequenceAt(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

Params& Params::texts(const std::vector<std::string>& items) {
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + ArrayItem(AsText(items[i]));
  return text(out + "}");
}

Params& Params::integers(const std::vector<int64_t>& items) {
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + std::to_string(items[i]);
  return text(out + "}");
}

std::vector<const char*> Params::pointers() const {
  std::vector<const char*> out;
  out.reserve(values_.size());
  for (const auto& v : values_) out.push_back(v ? v->c_str() : nullptr);
  return out;
}

int64_t Result::integer(int row, int col) const {
  if (null(row, col)) return 0;
  return std::strtoll(Pq().getvalue(r_.get(), row, col), nullptr, 10);
}

int64_t Result::changed() const {
  const char* n = Pq().cmdTuples(r_.get());
  return n && *n ? std::strtoll(n, nullptr, 10) : 0;
}

Conn::Conn(std::string location, std::string name, std::vector<std::string> secrets,
           int connectTimeoutS)
    : location_(std::move(location)), name_(std::move(name)), secrets_(std::move(secrets)) {
  const std::string app = "jr2 (pid " + std::to_string(::getpid()) + ")";
  const std::string timeout = std::to_string(connectTimeoutS);
  // The location is expanded in place of `dbname`: its own keywords override those before it.
  // Over TCP, a server that went silent (a half-open connection, a partition) fails a call within
  // seconds instead of never: keepalives on an idle connection, and unacknowledged data given up
  // after 5 s (a third of the default lease, docs/scaling.md#the-keeper). A location's own
  // keywords win; over a Unix socket these do nothing.
  const char* const keys[] = {"connect_timeout",
                              "client_encoding",
                              "fallback_application_name",
                              "keepalives",
                              "keepalives_idle",
                              "keepalives_interval",
                              "keepalives_count",
                              "tcp_user_timeout",
                              "dbname",
                              nullptr};
  const char* const values[] = {timeout.c_str(),   "UTF8", app.c_str(), "1", "2", "1", "2", "5000",
                                location_.c_str(), nullptr};
  pg_ = Pq().connectdbParams(keys, values, /*expand_dbname=*/1);
  if (pg_ == nullptr)
    throw StoreError("cannot reach the run store " + Quoted(name_) + ": no memory");
  if (Pq().status(pg_) != CONNECTION_OK) {
    const std::string why = clean(Pq().errorMessage(pg_));
    Pq().finish(pg_);
    pg_ = nullptr;
    throw StoreError("cannot reach the run store " + Quoted(name_) + ": " + why);
  }
  pid_ = Pq().backendPID(pg_);
}

Conn::~Conn() {
  if (pg_ != nullptr) Pq().finish(pg_);
}

std::string Conn::clean(std::string text) const {
  for (const std::string& secret : secrets_) {
    if (secret.empty()) continue;
    for (size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at + 3))
      text.replace(at, secret.size(), "***");
  }
  return OneLine(text);
}

void Conn::ready() {
  if (Pq().status(pg_) == CONNECTION_OK) return;
  if (!locks_.empty()) {
    failConnection("lost the connection to the run store, and with it the drive locks it held");
  }
  // Made again (the server restarted): its prepared statements went with the old session.
  Pq().reset(pg_);
  prepared_.clear();
  pid_ = Pq().backendPID(pg_);
  if (Pq().status(pg_) != CONNECTION_OK) failConnection("cannot reach the run store");
}

void Conn::failConnection(const char* what) {
  throw StoreUnreachable(std::string(what) + " " + Quoted(name_) + ": " +
                         clean(Pq().errorMessage(pg_)));
}

void Conn::fail(const PGresult* r, const char* what) {
  if (r == nullptr || Pq().status(pg_) != CONNECTION_OK) {
    failConnection(what ? what : "lost the connection to the run store");
  }
  const char* state = Pq().resultErrorField(r, PG_DIAG_SQLSTATE);
  const std::string code = state ? state : "";
  const char* primary = Pq().resultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
  const std::string message = clean(primary ? primary : Pq().resultErrorMessage(r));
  // A connection lost, or a server shutting down or starting up: it may answer again soon.
  if (code.rfind("08", 0) == 0 || code.rfind("57P", 0) == 0) {
    throw StoreUnreachable("cannot reach the run store " + Quoted(name_) + ": " + message);
  }
  if (code == "53100") {
    throw StoreFull("the disk of the run store " + Quoted(name_) +
                    " is full: nothing more could be stored; make space");
  }
  // Raised by jr2_fenced (schema.cpp) for a lease that is no longer current.
  if (code == "JR003") {
    throw StoreFenced(message + "; nothing was written to the run store " + Quoted(name_) +
                      ": stop driving its runs, then join again");
  }
  // Raised by jr2_conflict_revision, jr2_check_journal, jr2_save_refused and jr2_head_refused
  // (schema.cpp): their message is the conflict's, as the SQLite store words it.
  if (code.rfind("JR", 0) == 0) throw StoreConflict(message);
  if (code == "23505") {
    const char* constraint = Pq().resultErrorField(r, PG_DIAG_CONSTRAINT_NAME);
    if (constraint != nullptr && std::string(constraint) == "runs_key_live") {
      const char* detail = Pq().resultErrorField(r, PG_DIAG_MESSAGE_DETAIL);
      throw StoreConflict(KeyTaken(clean(detail ? detail : "")) + " in the run store " +
                          Quoted(name_) +
                          ": a dispatch key is unique per workflow among its waiting runs; "
                          "find that run by its key rather than start another (nothing was "
                          "written)");
    }
  }
  if (code == "40001" || code == "40P01") {
    throw StoreConflict("the run store " + Quoted(name_) +
                        " refused a write that met another one (" + message + "); try again");
  }
  throw StoreError("the run store " + Quoted(name_) + " cannot be used: " + message);
}

void Conn::exec(const char* sql) {
  ++statements_;
  Result r(Pq().exec(pg_, sql));
  const ExecStatusType s = Pq().resultStatus(r.get());
  if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) fail(r.get());
}

std::string Conn::prepared(const char* sql) {
  auto it = prepared_.find(sql);
  if (it != prepared_.end()) return it->second;
  std::string name = "jr2_" + std::to_string(prepared_.size() + 1);
  Result r(Pq().prepare(pg_, name.c_str(), sql, 0, nullptr));
  if (Pq().resultStatus(r.get()) != PGRES_COMMAND_OK) fail(r.get());
  prepared_.emplace(sql, name);
  return name;
}

Result Conn::run(const char* sql, const Params& params) {
  const std::string name = prepared(sql);
  ++statements_;
  const auto values = params.pointers();
  Result r(Pq().execPrepared(pg_, name.c_str(), params.size(), values.data(), nullptr, nullptr, 0));
  const ExecStatusType s = Pq().resultStatus(r.get());
  if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) fail(r.get());
  return r;
}

Txn::~Txn() {
  if (!done_ && Pq().transactionStatus(conn_.handle()) != PQTRANS_IDLE) {
    Pq().clear(Pq().exec(conn_.handle(), "ROLLBACK"));
  }
}

size_t Pipeline::add(const char* sql, Params params) {
  queued_.emplace_back(sql, std::move(params));
  return queued_.size() - 1;
}

std::vector<Result> Pipeline::finish() {
  std::vector<Result> out;
  if (queued_.empty()) return out;
  // Prepared before the pipeline starts (once per connection): inside it, a statement that is
  // not prepared yet could not be told apart from one whose prepare was skipped by a failure.
  std::vector<std::string> names;
  names.reserve(queued_.size());
  for (const auto& q : queued_) names.push_back(conn_.prepared(q.first));
  PGconn* pg = conn_.handle();
  if (Pq().enterPipelineMode(pg) != 1) conn_.failConnection("cannot use the run store");
  // What went wrong first: a failed statement's result, or none for a lost connection.
  Result failed;
  bool lost = false;
  size_t sent = 0;
  size_t read = 0;  // results read so far, BEGIN's included
  auto readOne = [&](bool keep) {
    PGresult* r = Pq().getResult(pg);
    if (r == nullptr) {
      lost = true;
      return;
    }
    Result result(r);
    const ExecStatusType s = Pq().resultStatus(r);
    if (s == PGRES_FATAL_ERROR && !failed.get()) failed = result;
    if (keep) out.push_back(result);
    // The end of this statement's results.
    while (PGresult* more = Pq().getResult(pg)) Pq().clear(more);
    ++read;
  };
  auto send = [&](const std::string& name, const Params* params) {
    if (params == nullptr)
      return Pq().sendQueryParams(pg, name.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0) == 1;
    const auto values = params->pointers();
    return Pq().sendQueryPrepared(pg, name.c_str(), params->size(), values.data(), nullptr, nullptr,
                                  0) == 1;
  };
  out.reserve(queued_.size());
  bool ok = send("BEGIN", nullptr);
  for (size_t i = 0; ok && i < queued_.size() && !failed.get(); ++i) {
    ok = send(names[i], &queued_[i].second);
    ++sent;
    if (ok && sent % kPipelineChunk == 0) {
      // The answers so far are read before more is sent.
      ok = Pq().sendFlushRequest(pg) == 1 && Pq().flush(pg) == 0;
      while (ok && !lost && read < sent + 1) readOne(read > 0);
    }
  }
  const bool complete = ok && sent == queued_.size() && !failed.get();
  if (complete) ok = send("COMMIT", nullptr);
  ok = ok && Pq().pipelineSync(pg) == 1;
  conn_.counted(static_cast<int>(sent) + (complete ? 2 : 1));
  if (ok) {
    while (!lost && read < sent + 1) readOne(read > 0);
    if (complete && !lost) readOne(false);  // COMMIT
    // The sync's own result ends the pipeline (the NULLs before it end statements not read).
    for (size_t ends = 0; ends < queued_.size() + 4;) {
      PGresult* r = Pq().getResult(pg);
      if (r == nullptr) {
        if (Pq().status(pg) != CONNECTION_OK) break;
        ++ends;
        continue;
      }
      const ExecStatusType s = Pq().resultStatus(r);
      Pq().clear(r);
      if (s == PGRES_PIPELINE_SYNC) break;
    }
  }
  Pq().exitPipelineMode(pg);
  if (!ok || lost || Pq().status(pg) != CONNECTION_OK) {
    conn_.failConnection("lost the connection to the run store");
  }
  if (failed.get()) {
    // The explicit transaction is left aborted by the failure: ended here.
    if (Pq().transactionStatus(pg) != PQTRANS_IDLE) Pq().clear(Pq().exec(pg, "ROLLBACK"));
    conn_.fail(failed.get());
  }
  return out;
}

}  // namespace jr2rt::pg
