// The schema of the PostgreSQL store, its version and the open (docs/scaling.md#the-schema): the
// tables made by the program itself in the first schema of the connection's search_path, with
// `jr2_meta` holding `schema_version` (3). A database is ours (a known version: one older is
// migrated by a read-write open, read as it is by a read-only one), empty of our names (made ours,
// under a lock so that two hosts opening it at once make it once), or refused unchanged: a version
// newer than this program knows, or tables of our names without jr2_meta (another
// application's).
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
constexpr int64_t kSchemaVersion = 4;

// Taken (for its transaction) by whoever makes the schema: two hosts opening an empty database
// at once make it once. (FNV-1a of "jr2 schema".)
constexpr const char* kSchemaLock = "SELECT pg_advisory_xact_lock(-7155012351297353123)";

// Every name the schema gives a relation or function: a database that holds one of them without
// jr2_meta is another application's.
const char* const kNames[] = {
    "jr2_meta", "runs", "runs_summary", "runs_by_key", "feed", "journal", "requests", "hooks",
    "hooks_by_seq", "heads", "starts", "jr2_conflict_revision", "jr2_check_journal",
    // version 2
    "hosts", "runs_unowned", "runs_by_owner", "runs_key_live", "heads_by_owner", "jr2_host_live",
    "jr2_fenced", "jr2_check_lease", "jr2_save_refused", "jr2_head_refused", "jr2_take_run",
    // version 3
    "keys"};

// Version 1's tables, as the first jr2 on PostgreSQL made them: a new database is made by these
// and then every step after (kVersion2), so that a new store and a migrated one are the same.
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

// Version 2 (#32, docs/scaling.md#hosts-leases-and-fencing): the hosts and their leases, the
// owner of each run and head (a host's name and the epoch it had), and one waiting run per
// dispatch key. Run on a version 1 store in the transaction of its migration.
const char* const kVersion2 =
    "ALTER TABLE runs ADD COLUMN owner text COLLATE \"C\", ADD COLUMN owner_epoch bigint;"
    "ALTER TABLE heads ADD COLUMN owner text COLLATE \"C\", ADD COLUMN owner_epoch bigint;"
    // A host's row: its epoch only grows (each join adds one), and it is alive until
    // `alive_until` by the database's clock, unless it is gone (it left, or was reaped).
    "CREATE TABLE hosts ("
    " name text COLLATE \"C\" PRIMARY KEY, epoch bigint NOT NULL,"
    " alive_until timestamptz NOT NULL, gone boolean NOT NULL DEFAULT false,"
    " ttl_ms bigint NOT NULL, joined timestamptz NOT NULL DEFAULT clock_timestamp());"
    // What a claim reads, oldest change first; what a reap, a leave or a join clears.
    "CREATE INDEX runs_unowned ON runs (updated, id) WHERE status = 'waiting' AND owner IS NULL;"
    "CREATE INDEX runs_by_owner ON runs (owner) WHERE owner IS NOT NULL;"
    "CREATE INDEX heads_by_owner ON heads (owner) WHERE owner IS NOT NULL;"
    // A dispatch key is unique per workflow among its waiting runs (runs_by_key stays, for
    // byKey's reads of ended runs too).
    "CREATE UNIQUE INDEX runs_key_live ON runs (workflow, dkey)"
    " WHERE dkey IS NOT NULL AND status = 'waiting';"
    // Whether the host that owns something with epoch `p_epoch` holds a current lease.
    "CREATE FUNCTION jr2_host_live(p_host text, p_epoch bigint) RETURNS boolean"
    " LANGUAGE sql VOLATILE SET search_path FROM CURRENT AS $$"
    " SELECT EXISTS (SELECT 1 FROM hosts WHERE name = p_host AND epoch = p_epoch AND NOT gone"
    " AND alive_until > clock_timestamp()) $$;"
    // Raises the fence (SQLSTATE JR003: conn.cpp's StoreFenced), saying why.
    "CREATE FUNCTION jr2_fenced(p_host text, p_epoch bigint) RETURNS bigint"
    " LANGUAGE plpgsql SET search_path FROM CURRENT AS $$ DECLARE h hosts%ROWTYPE; why text;"
    " BEGIN SELECT * INTO h FROM hosts WHERE name = p_host;"
    " IF NOT FOUND THEN why := 'it is not registered';"
    " ELSIF h.epoch <> p_epoch THEN"
    "  why := format('another incarnation of it registered (epoch %s)', h.epoch);"
    " ELSIF h.gone THEN why := 'it left, or was reaped after its lease ran out';"
    " ELSE why := format('its lease ran out at %s by the database''s clock', h.alive_until);"
    " END IF;"
    " RAISE EXCEPTION USING ERRCODE = 'JR003', MESSAGE ="
    "  format('host `%s` (epoch %s) is fenced: %s', p_host, p_epoch, why);"
    " END $$;"
    // The first statement of every transaction a lease writes in: its host's row share-locked
    // until the commit (as Temporal locks a shard's range_id), so that a join or a reap that would
    // fence it waits for the commit, and one that came first fences it here.
    "CREATE FUNCTION jr2_check_lease(p_host text, p_epoch bigint) RETURNS bigint"
    " LANGUAGE plpgsql SET search_path FROM CURRENT AS $$ BEGIN"
    " PERFORM 1 FROM hosts WHERE name = p_host AND epoch = p_epoch AND NOT gone"
    " AND alive_until > clock_timestamp() FOR SHARE;"
    " IF NOT FOUND THEN RETURN jr2_fenced(p_host, p_epoch); END IF;"
    " RETURN p_epoch; END $$;"
    // A save with a lease that wrote no row: the revision moved (JR001), or a live host owns the
    // run (JR004).
    "CREATE FUNCTION jr2_save_refused(p_run text, p_had bigint, p_host text, p_epoch bigint)"
    " RETURNS bigint LANGUAGE plpgsql SET search_path FROM CURRENT AS $$ DECLARE r record; BEGIN"
    " SELECT rev, owner, owner_epoch INTO r FROM runs WHERE id = p_run;"
    " IF p_had <> 0 AND (NOT FOUND OR r.rev <> p_had) THEN"
    "  RETURN jr2_conflict_revision(p_run, p_had); END IF;"
    " RAISE EXCEPTION USING ERRCODE = 'JR004', MESSAGE = format("
    "'run %s is owned by host `%s`, whose lease is current: only its owner saves it, and this host"
    " is `%s`', p_run, r.owner, p_host);"
    " END $$;"
    "CREATE FUNCTION jr2_head_refused(p_workflow text, p_host text) RETURNS bigint"
    " LANGUAGE plpgsql SET search_path FROM CURRENT AS $$ DECLARE o text; BEGIN"
    " SELECT owner INTO o FROM heads WHERE workflow = p_workflow;"
    " RAISE EXCEPTION USING ERRCODE = 'JR005', MESSAGE = format("
    "'the head of standing workflow %s is owned by host `%s`, whose lease is current: only the"
    " head''s owner stands it up, hands it over and backs it off, and this host is `%s`',"
    " p_workflow, o, p_host);"
    " END $$;"
    // A drive lock taken with a lease: the run owned by it, unless a live host owns it or a runner
    // command holds its advisory lock (`p_key`, locks.cpp) now. A run not stored yet is taken.
    "CREATE FUNCTION jr2_take_run(p_run text, p_host text, p_epoch bigint, p_key bigint)"
    " RETURNS boolean LANGUAGE plpgsql SET search_path FROM CURRENT AS $$ BEGIN"
    " IF NOT pg_try_advisory_xact_lock(p_key) THEN RETURN false; END IF;"
    " UPDATE runs SET owner = p_host, owner_epoch = p_epoch WHERE id = p_run"
    " AND (owner IS NULL OR NOT jr2_host_live(owner, owner_epoch));"
    " IF FOUND THEN RETURN true; END IF;"
    " RETURN NOT EXISTS (SELECT 1 FROM runs WHERE id = p_run AND owner IS NOT NULL"
    " AND NOT (owner = p_host AND owner_epoch = p_epoch));"
    " END $$;";

// What the database is, with reads only.
// Version 3 (#32, docs/scaling.md#dispatch-keys-and-standing-heads): a dispatch key's
// reservation, made when a host dispatches (before the run is stored), so that two hosts that
// dispatch one key at once start one run: the second follows the first's. Deleted by the commit
// that ends the run; one whose host is no longer live and whose run never came, or ended, is taken
// over by the next dispatch of the key.
const char* const kVersion3 =
    "CREATE TABLE keys ("
    " workflow text COLLATE \"C\" NOT NULL, key text COLLATE \"C\" NOT NULL,"
    " run text COLLATE \"C\" NOT NULL, host text COLLATE \"C\" NOT NULL, epoch bigint NOT NULL,"
    " PRIMARY KEY (workflow, key));";

// Version 4 (#33): the run's input, stored once beside its snapshot (StoredRun::inputText);
// NULL in the rows saved before it, whose snapshots hold their input.
const char* const kVersion4 = "ALTER TABLE runs ADD COLUMN input text;";

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

// The version of the store `seen` is (0: none, the schema is free to make one); throws when it
// is refused.
int64_t Ours(const Conn& conn, const Seen& seen) {
  if (!seen.meta) {
    if (seen.names.empty()) return 0;
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
  return version;
}

// Version 1 to 2 (kVersion2), in the caller's transaction under the schema's lock. A store of
// version 1 could hold two waiting runs of one workflow with one dispatch key (two commands
// racing); version 2 allows one, and which to keep is not the program's to decide: such a store is
// refused, naming them, and left unchanged.
void MigrateTo2(Conn& conn) {
  const Result twice = conn.run(
      "SELECT workflow, dkey, string_agg(id, ', ' ORDER BY updated, id) FROM runs"
      " WHERE status = 'waiting' AND dkey IS NOT NULL GROUP BY workflow, dkey"
      " HAVING count(*) > 1 ORDER BY workflow, dkey LIMIT 1");
  if (twice.rows() > 0) {
    throw StoreError("the run store " + Quoted(conn.name()) +
                     " cannot move to schema version 2: its waiting runs " + twice.text(0, 2) +
                     " of workflow `" + twice.text(0, 0) + "` have one dispatch key `" +
                     twice.text(0, 1) +
                     "`, and version 2 allows one; cancel all but one with the jr2 that wrote "
                     "them (or clear the others' key: UPDATE runs SET dkey = NULL WHERE id = …), "
                     "then open it again");
  }
  conn.exec(kVersion2);
  conn.run("UPDATE jr2_meta SET value = $1 WHERE key = 'schema_version'", Params().integer(2));
}

// Version 2 to 3 (kVersion3), in the caller's transaction under the schema's lock.
void MigrateTo3(Conn& conn) {
  conn.exec(kVersion3);
  conn.run("UPDATE jr2_meta SET value = $1 WHERE key = 'schema_version'", Params().integer(3));
}

// Version 3 to 4 (kVersion4), in the caller's transaction under the schema's lock.
void MigrateTo4(Conn& conn) {
  conn.exec(kVersion4);
  conn.run("UPDATE jr2_meta SET value = $1 WHERE key = 'schema_version'", Params().integer(4));
}

}  // namespace

std::shared_ptr<Conn> OpenConn(const std::string& location, StoreMode mode) {
  auto conn =
      std::make_shared<Conn>(location, PostgresLocationName(location), LocationSecrets(location));
  auto hold = conn->hold();
  {
    // One read transaction: what is seen is one state of the database.
    Txn txn(*conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    const int64_t version = Ours(*conn, Inspect(*conn));
    // A store of an older version opened read-only is read as it is: every read works on it,
    // and nothing is migrated until a read-write open (it has no hosts: hosts() is nullptr).
    if (version == kSchemaVersion || (version > 0 && mode == StoreMode::kReadOnly)) {
      conn->setVersion(version);
      return conn;
    }
    if (mode == StoreMode::kReadOnly) {
      throw StoreMissing("no run store at " + Quoted(conn->name()) +
                         "; `run` makes one, or give the store's location with --store or "
                         "JR2_STORE");
    }
  }
  // Looked at again under the schema's lock: another host may have made or migrated it
  // meanwhile. Made, or migrated, in one transaction: a failure leaves it as it was.
  Txn txn(*conn);
  conn->run(kSchemaLock);
  const int64_t version = Ours(*conn, Inspect(*conn));
  if (version == 0) {
    conn->exec(kSchema);
    conn->exec(kVersion2);
    conn->exec(kVersion3);
    conn->exec(kVersion4);
    conn->run("INSERT INTO jr2_meta (key, value) VALUES ('schema_version', $1)",
              Params().integer(kSchemaVersion));
  } else {
    if (version == 1) MigrateTo2(*conn);
    if (version <= 2) MigrateTo3(*conn);
    if (version <= 3) MigrateTo4(*conn);
  }
  txn.commit();
  conn->setVersion(kSchemaVersion);
  return conn;
}

}  // namespace jr2rt::pg

namespace jr2rt {

std::unique_ptr<Store> OpenPostgresStore(const std::string& location, StoreMode mode) {
  return std::make_unique<pg::PgStore>(pg::OpenConn(location, mode));
}

}  // namespace jr2rt
