// The schema of the PostgreSQL store, its version and the open (docs/scaling.md#the-schema): the
// tables made by the program itself in the first schema of the connection's search_path, with
// `jr2_meta` holding `schema_version`. A database is ours (a known version), empty of our names
// (made ours, under a lock so that two hosts opening it at once make it once), or refused
// unchanged: a version newer than this program knows, or tables of our names without jr2_meta
// (another application's).
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "jr2/postgres_store.h"
#include "store/postgres/conn.h"
#include "store/postgres/location.h"
#include "store/postgres/pg_store.h"

namespace jr2rt::pg {
namespace {

// The version of the tables below. A program that finds an older one migrates it here; one that
// finds a newer one refuses it.
constexpr int64_t kSchemaVersion = 1;

// Taken (for its transaction) by whoever makes the schema: two hosts opening an empty database
// at once make it once. (FNV-1a of "jr2 schema".)
constexpr const char* kSchemaLock = "SELECT pg_advisory_xact_lock(-7155012351297353123)";

// Every name the schema gives a relation or function: a database that holds one of them without
// jr2_meta is another application's.
const char* const kNames[] = {
    "jr2_meta",         "runs",  "runs_summary", "runs_by_key", "feed",   "journal",
    "requests",         "hooks", "hooks_by_seq", "heads",       "starts", "jr2_conflict_revision",
    "jr2_check_journal"};

// Keys and ids compare byte by byte (COLLATE "C"), as SQLite's do: a prefix is a range of the
// key, and every listing has the SQLite store's order whatever the database's locale.
const char* const kSchema =
    "CREATE TABLE jr2_meta (key text COLLATE \"C\" PRIMARY KEY, value text NOT NULL);"
    "CREATE TABLE runs ("
    " id text COLLATE \"C\" PRIMARY KEY, workflow text COLLATE \"C\" NOT NULL,"
    " status text COLLATE \"C\" NOT NULL, updated bigint NOT NULL, rev bigint NOT NULL DEFAULT 1,"
    " snapshot text NOT NULL, dkey text COLLATE \"C\", view text);"
    // What `runs` shows, so that a listing reads the index (as the SQLite store's).
    "CREATE INDEX runs_summary ON runs (status, updated, id, workflow, rev);"
    "CREATE INDEX runs_by_key ON runs (workflow, dkey) WHERE dkey IS NOT NULL;"
    "CREATE TABLE feed ("
    " run text COLLATE \"C\" NOT NULL, seq bigint NOT NULL, time bigint NOT NULL,"
    " line text NOT NULL, kind text NOT NULL DEFAULT 'line', data text, PRIMARY KEY (run, seq));"
    "CREATE TABLE journal ("
    " run text COLLATE \"C\" NOT NULL, seq bigint NOT NULL, entry text NOT NULL,"
    " PRIMARY KEY (run, seq));"
    "CREATE TABLE requests ("
    " seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, run text COLLATE \"C\" NOT NULL,"
    " verb text NOT NULL, body text NOT NULL, taken boolean NOT NULL DEFAULT false, answer text);"
    "CREATE TABLE hooks ("
    " hook text COLLATE \"C\" NOT NULL, delivery text COLLATE \"C\" NOT NULL, time bigint NOT NULL,"
    " event text NOT NULL, answer text NOT NULL, seq bigint NOT NULL DEFAULT 0,"
    " PRIMARY KEY (hook, delivery));"
    "CREATE INDEX hooks_by_seq ON hooks (hook, seq);"
    "CREATE TABLE heads ("
    " workflow text COLLATE \"C\" PRIMARY KEY, run text COLLATE \"C\" NOT NULL,"
    " started bigint NOT NULL, streak bigint NOT NULL DEFAULT 0, ended text NOT NULL DEFAULT '',"
    " ended_at bigint NOT NULL DEFAULT 0, paused text NOT NULL DEFAULT '',"
    " why text NOT NULL DEFAULT '');"
    "CREATE TABLE starts ("
    " caller text COLLATE \"C\" NOT NULL, workflow text COLLATE \"C\" NOT NULL,"
    " key text COLLATE \"C\" NOT NULL, run text COLLATE \"C\" NOT NULL, digest text NOT NULL,"
    " time bigint NOT NULL, PRIMARY KEY (caller, workflow, key));"
    // A save whose revision or journal moved raises one of these inside the server, so that the
    // statements of a pipelined saveAll after it are not run and its transaction writes nothing
    // (conn.cpp reads SQLSTATE class JR as StoreConflict, with this message).
    "CREATE FUNCTION jr2_conflict_revision(p_run text, p_had bigint) RETURNS bigint"
    " LANGUAGE plpgsql SET search_path FROM CURRENT AS $$ BEGIN"
    " RAISE EXCEPTION USING ERRCODE = 'JR001', MESSAGE = format("
    "'run %s was changed by another command (revision %s, this command had %s)', p_run,"
    " coalesce((SELECT rev FROM runs WHERE id = p_run), 0), p_had);"
    " END $$;"
    "CREATE FUNCTION jr2_check_journal(p_run text, p_before bigint) RETURNS bigint"
    " LANGUAGE plpgsql SET search_path FROM CURRENT AS $$ DECLARE n bigint; BEGIN"
    " SELECT coalesce(max(seq), 0) INTO n FROM journal WHERE run = p_run;"
    " IF n <> p_before THEN RAISE EXCEPTION USING ERRCODE = 'JR002', MESSAGE = format("
    "'run %s''s journal has %s entries, and this command had %s', p_run, n, p_before); END IF;"
    " RETURN n; END $$;";

// What the database is, with reads only.
struct Seen {
  std::string schema;              // where the tables are (or would be made)
  std::vector<std::string> names;  // of ours found there, jr2_meta aside
  bool meta = false;
  std::string version;  // jr2_meta's schema_version, "" when none
};

Seen Inspect(Conn& conn) {
  Seen seen;
  Params names;
  std::vector<std::string> all(std::begin(kNames), std::end(kNames));
  names.texts(all);
  const Result r = conn.run(
      "SELECT current_schema(), coalesce((SELECT string_agg(name, ' ' ORDER BY name) FROM ("
      " SELECT c.relname::text AS name FROM pg_class c"
      "  WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()) "
      "AND c.relname = ANY($1::text[])"
      " UNION SELECT p.proname::text FROM pg_proc p"
      "  WHERE p.pronamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()) "
      "AND p.proname = ANY($1::text[])"
      " ) n), '')",
      names);
  if (r.null(0, 0)) {
    throw StoreError("the run store " + Quoted(conn.name()) +
                     " has no schema to make its tables in: its search_path names none that "
                     "exists; create one, or name another with options=-csearch_path=…");
  }
  seen.schema = r.text(0, 0);
  const std::string found = r.text(0, 1);
  for (size_t start = 0; start < found.size();) {
    size_t end = found.find(' ', start);
    if (end == std::string::npos) end = found.size();
    const std::string name = found.substr(start, end - start);
    if (name == "jr2_meta") {
      seen.meta = true;
    } else {
      seen.names.push_back(name);
    }
    start = end + 1;
  }
  if (seen.meta) {
    // Another application's jr2_meta (other columns) fails here, and is refused below.
    conn.exec("SAVEPOINT jr2_inspect");
    try {
      const Result v = conn.run("SELECT value FROM jr2_meta WHERE key = 'schema_version'");
      if (v.rows() > 0) seen.version = v.text(0, 0);
      conn.exec("RELEASE SAVEPOINT jr2_inspect");
    } catch (const StoreConflict&) {
      throw;
    } catch (const StoreError&) {
      conn.exec("ROLLBACK TO SAVEPOINT jr2_inspect");
    }
  }
  return seen;
}

[[noreturn]] void Refuse(const Conn& conn, const std::string& why) {
  throw StoreError(Quoted(conn.name()) + " is not a jr2 run store (" + why +
                   "); give another database or schema with --store or JR2_STORE");
}

// Whether `seen` is a store this program can use as it is; throws when it is refused.
bool Ours(const Conn& conn, const Seen& seen) {
  if (!seen.meta) {
    if (seen.names.empty()) return false;
    std::string names;
    for (size_t i = 0; i < seen.names.size() && i < 3; ++i)
      names += (i ? ", `" : "`") + seen.names[i] + "`";
    if (seen.names.size() > 3) names += " and " + std::to_string(seen.names.size() - 3) + " more";
    Refuse(conn, "schema `" + seen.schema + "` holds " + names +
                     " of another application, and no jr2_meta");
  }
  char* end = nullptr;
  const long long version = std::strtoll(seen.version.c_str(), &end, 10);
  if (seen.version.empty() || *end != '\0' || version < 1) {
    Refuse(conn, "its jr2_meta in schema `" + seen.schema + "` has no schema_version jr2 wrote");
  }
  if (version > kSchemaVersion) {
    throw StoreError("the run store " + Quoted(conn.name()) + " has schema version " +
                     seen.version + ", newer than this program knows (" +
                     std::to_string(kSchemaVersion) +
                     "): a newer jr2 wrote it; use that one, or give another database");
  }
  return true;
}

}  // namespace

std::shared_ptr<Conn> OpenConn(const std::string& location, StoreMode mode) {
  auto conn =
      std::make_shared<Conn>(location, PostgresLocationName(location), LocationSecrets(location));
  auto hold = conn->hold();
  {
    // One read transaction: what is seen is one state of the database.
    Txn txn(*conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    const Seen seen = Inspect(*conn);
    if (Ours(*conn, seen)) return conn;
    if (mode == StoreMode::kReadOnly) {
      throw StoreMissing("no run store at " + Quoted(conn->name()) +
                         "; `run` makes one, or give the store's location with --store or "
                         "JR2_STORE");
    }
  }
  // Looked at again under the schema's lock: another host may have made it meanwhile.
  Txn txn(*conn);
  conn->run(kSchemaLock);
  if (!Ours(*conn, Inspect(*conn))) {
    conn->exec(kSchema);
    conn->run("INSERT INTO jr2_meta (key, value) VALUES ('schema_version', $1)",
              Params().integer(kSchemaVersion));
  }
  txn.commit();
  return conn;
}

}  // namespace jr2rt::pg

namespace jr2rt {

std::unique_ptr<Store> OpenPostgresStore(const std::string& location, StoreMode mode) {
  return std::make_unique<pg::PgStore>(pg::OpenConn(location, mode));
}

}  // namespace jr2rt
