#!/usr/bin/env bash
# Moving in (#32, docs/scaling.md#moving-in): `store copy --to` end to end, on the throwaway server
# of the ctest fixture `pg` ($JR2_TEST_PG), each target a database of its own. Runs are made with
# the runners on a SQLite store — two waiting at Gates, the tickets Pool mid-way (one review
# answered, one waiting), a Pool SIGKILLed while its processes ran (recorded as started) — and a
# feed line made not UTF-8; the store is copied while a serve holds it; then on PostgreSQL the
# runner answers a Gate and sees its run end, the tickets Pool goes on to its end, the killed Pool
# resumes (its cut processes `interrupted`, never run again, the rest run once), and a serve
# claims a run and ends it by an answer sent to it. Then the refusals, each one line with nothing
# written: a copy onto the now non-empty target (and with --onto-nonempty, by its run ids), a
# PostgreSQL source, a SQLite target, a missing source, another application's SQLite file, a
# symlink to something that is not a store; a symlink to the store copies it.
# Usage: pg_copy_test.sh DIR_OF_CONFORMANCE_RUNNERS TICKETS_RUNNER
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
runners=$(realpath "$1")
secret="$runners/conformance_secret"
torture="$runners/conformance_torture"
tickets=$(realpath "$2")
passed=0
failed=0
. "$here/lib.sh"
pg_url
db=jr2_copy_$$_$RANDOM
dbs="$db ${db}_link ${db}_empty"
tmp=$(mktemp -d)
serve_pid=
cleanup() {
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null
  for d in $dbs; do psql "$url" -q -c "DROP DATABASE IF EXISTS $d WITH (FORCE)" >/dev/null 2>&1; done
  rm -rf "$tmp"
}
trap cleanup EXIT
for d in $dbs; do
  psql "$url" -q -c "CREATE DATABASE $d" >/dev/null || {
    echo "FAIL: cannot create the test's databases on $url"
    echo "0 passed, 1 failed"
    exit 1
  }
done
pg="${url/dbname=postgres/dbname=$db}"
pg_link="${url/dbname=postgres/dbname=${db}_link}"
pg_empty="${url/dbname=postgres/dbname=${db}_empty}"
q() { psql "$1" -qAt -c "$2"; }
sq() { python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])' "$tmp/jr2.db" "$1"; }
cd "$tmp" || exit 1
export JR2_STORE="$tmp/jr2.db"
# The id of the newest run RUNNER lists (each runner lists its own workflow's runs).
run_of() {
  "$1" runs --all --json | python3 -c '
import json, sys
runs = json.load(sys.stdin)
print(max(runs, key=lambda r: r["updated"])["runId"] if runs else "")'
}
json_of() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1], {}, {"d": d}))' "$1"; }

# ---- Runs on SQLite ----------------------------------------------------------------------------
expect "a run waits at its Gates on SQLite" 3 "approval" -- \
  "$secret" run --input '{"note": {"deep": {"secret": "for-the-runner"}}}'
for_runner=$(run_of "$secret")
expect "a second one waits too" 3 "approval" -- \
  "$secret" run --input '{"note": {"deep": {"secret": "for-serve"}}}'
for_serve=$(run_of "$secret")
[ -n "$for_runner" ] && [ -n "$for_serve" ] && [ "$for_runner" != "$for_serve" ] && ok ||
  fail "two secret_keeper runs: $for_runner $for_serve"

# A serve of the conformance program stands up its standing Pools (runs and heads to copy), and
# is stopped before the Pool below is made (it would take that one up).
"$secret" serve --listen 127.0.0.1:0 > serve_standing.log 2>&1 &
serve_pid=$!
serve_url serve_standing.log > /dev/null || exit 1
for _ in $(seq 1 50); do
  [ "$(sq "SELECT count(*) FROM heads")" -gt 0 ] && break
  sleep 0.1
done
kill "$serve_pid"
wait "$serve_pid" 2>/dev/null
serve_pid=

cp "$here/../../samples/tickets/backlog.json" backlog.json
expect "the tickets Pool waits at two reviews" 3 "T-2.review" -- \
  "$tickets" run --input "{\"backlog_file\": \"$tmp/backlog.json\"}"
pool=$(run_of "$tickets")
expect "one review answered on SQLite: the Pool is mid-way" 3 "T-2.review" -- \
  "$tickets" send "$pool" T-1.review approve

# A Pool killed while two processes ran (`sleep 3.317`, recorded as started).
python3 -c 'import json; print(json.dumps([{"id": t} for t in ["A", "B", "C", "D"]]))' > tasks.json
: > ran.log
"$torture" run --input "{\"tasks\": \"$tmp/tasks.json\", \"log\": \"$tmp/ran.log\", \"jobs\": 2, \"nap\": \"3.317\"}" \
  > torture.out 2>&1 &
tpid=$!
for _ in $(seq 1 100); do
  [ "$(wc -l < ran.log)" -ge 2 ] && break
  sleep 0.05
done
kill -9 "$tpid" 2>/dev/null
wait "$tpid" 2>/dev/null
cut=$(run_of "$torture")
[ "$(wc -l < ran.log)" -eq 2 ] && [ -n "$cut" ] && ok ||
  fail "the Pool was killed with two processes out: $(cat ran.log) ($cut)"
expect "the killed Pool is stored waiting, two processes out" 3 "2 effects were out" -- "$torture" status "$cut"

# A feed line that is not UTF-8 (a process's Latin-1 output, a NUL), written into the file.
python3 - "$tmp/jr2.db" "$pool" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("INSERT INTO feed (run, seq, time, line, kind) SELECT run, max(seq) + 1, 1, CAST(? AS TEXT), 'log'"
           " FROM feed WHERE run = ?", (b"caf\xe9 \x00 latin-1", sys.argv[2]))
db.commit()
EOF

# ---- The copy, while a serve holds the SQLite store ---------------------------------------------
# (The tickets program's serve: it hosts the tickets Pool, waiting at a Gate, and leaves the
# conformance program's runs alone.)
"$tickets" serve --listen 127.0.0.1:0 > serve_sqlite.log 2>&1 &
serve_pid=$!
serve_url serve_sqlite.log > /dev/null || exit 1
"$secret" store copy --to "$pg" > copy.out 2>&1
rc=$?
cat copy.out
[ "$rc" -eq 0 ] && ok || fail "store copy: exit $rc"
[ "$(wc -l < copy.out)" -eq 1 ] && ok || fail "one line of counts"
kill "$serve_pid"
wait "$serve_pid" 2>/dev/null
serve_pid=
# What was copied is what the file held at the copy's instant (serve wrote nothing after it: its
# runs wait for hooks and answers); each count on the line is the table's. The file keeps a save's
# feed lines and journal entries in one row (a JSON array, store/rows.h), PostgreSQL a row each.
lines_in() {
  case $1 in
    feed) sq "SELECT coalesce(sum(CASE WHEN kind = 'lines' THEN json_array_length(data) ELSE 1 END), 0) FROM feed" ;;
    # A Pool's settle written short, [id, output], is one entry (its first member text).
    journal) sq "SELECT coalesce(sum(CASE WHEN entry LIKE '[%' AND json_type(entry, '\$[0]') <> 'text' THEN json_array_length(entry) ELSE 1 END), 0) FROM journal" ;;
    *) sq "SELECT count(*) FROM $1" ;;
  esac
}
for t in runs feed journal heads starts hooks; do
  n=$(lines_in "$t")
  [ "$(q "$pg" "SELECT count(*) FROM $t")" = "$n" ] && ok || fail "table $t: $n rows in the file, $(q "$pg" "SELECT count(*) FROM $t") copied"
done
runs=$(sq "SELECT count(*) FROM runs")
grep -qE "copied $runs runs \($(sq "SELECT count(*) FROM runs WHERE status = 'waiting'") waiting\), $(lines_in feed) feed lines, $(lines_in journal) journal entries, $(sq "SELECT count(*) FROM heads") heads" copy.out &&
  ok || fail "the line's counts are the tables': $(cat copy.out)"
[ "$(sq "SELECT count(*) FROM heads")" -gt 0 ] && [ "$(sq "SELECT count(*) FROM journal")" -gt 0 ] && ok ||
  fail "the source has heads and a journal to copy"
[ "$(q "$pg" "SELECT count(*) FROM runs WHERE owner IS NULL")" = "$runs" ] && ok || fail "copied runs are owned by nobody"
[ "$(q "$pg" "SELECT count(*) FROM heads WHERE owner IS NULL")" = "$(sq "SELECT count(*) FROM heads")" ] && ok ||
  fail "copied heads are owned by nobody"

# ---- Driven on PostgreSQL ---------------------------------------------------------------------
export JR2_STORE="$pg"
expect "the runner lists the copied runs" 0 "waiting" -- "$secret" runs
expect "a Gate answer on PostgreSQL" 3 "waiting" -- "$secret" send "$for_runner" approval rate '{"score": 4}'
expect "the last answer ends it" 0 "done" -- "$secret" send "$for_runner" both.x.review accept '{}'
expect "its log has what it did on SQLite" 0 "keeping for-the-runner" -- "$secret" log "$for_runner"
expect "the feed line that was not UTF-8 reads with U+FFFD" 0 "caf� � latin-1" -- "$tickets" log "$pool"
expect "the mid-way Pool goes on: T-3 starts" 3 "T-3.review" -- "$tickets" send "$pool" T-2.review reject '{"reason": "Not now."}'
expect "and ends deadlocked on T-4" 2 "deadlocked" -- "$tickets" send "$pool" T-3.review approve
out=$("$tickets" status "$pool" --json)
[ "$(json_of 'sorted(d["output"]["items"])' <<<"$out")" = "['T-1', 'T-2', 'T-3']" ] && ok ||
  fail "the Pool's outcomes, T-1 from SQLite and T-2, T-3 from PostgreSQL: $out"
"$torture" run --resume "$cut" > resume.out 2>&1
rc=$?
[ "$rc" -eq 0 ] && ok || fail "the killed Pool resumes on PostgreSQL and ends: exit $rc: $(tail -3 resume.out)"
out=$("$torture" status "$cut" --json)
counts=$(python3 - "$out" <<'EOF'
import collections, json, sys
final = json.loads(sys.argv[1])
out = final.get("output") or {}
items, failures = out.get("items", {}), out.get("failures", {})
ran = collections.Counter(l.strip() for l in open("ran.log") if l.strip())
cut = sorted(i for i in failures if failures[i]["reason"].startswith("interrupted"))
print("status=%s settled=%s interrupted=%s ran-twice=%d" % (
    final["status"], sorted(items), cut, sum(1 for n in ran.values() if n > 1)))
EOF
)
echo "killed Pool on PostgreSQL: $counts"
[ "$counts" = "status=done settled=['C', 'D'] interrupted=['A', 'B'] ran-twice=0" ] && ok ||
  fail "the cut processes are interrupted, the others run once: $counts"

# A serve on PostgreSQL claims the other waiting run and ends it on an answer sent to it.
"$secret" serve --listen 127.0.0.1:0 --host-name copy-1 > serve_pg.log 2>&1 &
serve_pid=$!
surl=$(serve_url serve_pg.log) || exit 1
for _ in $(seq 1 50); do
  [ "$(q "$pg" "SELECT owner FROM runs WHERE id = '$for_serve'")" = copy-1 ] && break
  sleep 0.1
done
[ "$(q "$pg" "SELECT owner FROM runs WHERE id = '$for_serve'")" = copy-1 ] && ok ||
  fail "serve claims the copied run: owner $(q "$pg" "SELECT owner FROM runs WHERE id = '$for_serve'")"
expect "an answer through serve" 3 "waiting" -- \
  "$secret" send "$for_serve" approval rate '{"score": 5}' --server "$surl"
expect "the last one ends the run serve drives" 0 "done" -- \
  "$secret" send "$for_serve" both.x.review accept '{}' --server "$surl"
kill "$serve_pid"
wait "$serve_pid" 2>/dev/null
serve_pid=
expect "status on the store reads it done" 0 "done" -- "$secret" status "$for_serve"

# ---- Refusals: one line each, nothing written -------------------------------------------------
export JR2_STORE="$tmp/jr2.db"
one_line() { [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && ok || fail "one line: $out"; }
expect "a copy onto the now non-empty target is refused" 65 "holds [0-9]+ runs already.*--onto-nonempty" -- \
  "$secret" store copy --to "$pg"
out=$("$secret" store copy --to "$pg" 2>&1); one_line
expect "and with --onto-nonempty, by the run both hold" 65 "is in both" -- \
  "$secret" store copy --to "$pg" --onto-nonempty
[ "$(q "$pg" "SELECT count(*) FROM runs")" = "$runs" ] && ok || fail "the refused copies wrote nothing"
expect "--json gives the counts" 0 "\"runs\": $runs" -- "$secret" store copy --to "$pg_empty" --json
q "$pg_empty" "DROP SCHEMA public CASCADE; CREATE SCHEMA public" >/dev/null
expect "a PostgreSQL source is refused" 64 "is a PostgreSQL database already.*pg_dump" -- \
  "$secret" store copy --store "$pg" --to "$pg_empty"
expect "a SQLite target is refused" 64 "is a path.*store backup" -- "$secret" store copy --to "$tmp/other.db"
[ ! -e "$tmp/other.db" ] && ok || fail "a refused SQLite target is not made"
expect "a missing source is refused" 65 "no run store at .*none.db. to copy" -- \
  "$secret" store copy --store "$tmp/none.db" --to "$pg_empty"
[ ! -e "$tmp/none.db" ] && ok || fail "a missing source is not made"
expect "--to without copy is refused" 64 "go with .store copy." -- "$secret" runs --to "$pg_empty"
expect "copy without --to is refused" 64 "needs .--to LOCATION" -- "$secret" store copy
python3 -c "import sqlite3; db = sqlite3.connect('$tmp/foreign.db'); db.execute('CREATE TABLE accounts (id, owner)'); db.commit()"
sum_before=$(md5sum < foreign.db)
expect "another application's SQLite file is refused" 65 "is not a jr2 run store" -- \
  "$secret" store copy --store "$tmp/foreign.db" --to "$pg_empty"
[ "$(md5sum < foreign.db)" = "$sum_before" ] && ok || fail "the foreign file is unchanged"
ln -s /dev/null "$tmp/null.db"
expect "a symlink to a device is refused" 65 "not a plain file" -- \
  "$secret" store copy --store "$tmp/null.db" --to "$pg_empty"
ln -s "$tmp/gone.db" "$tmp/dangling.db"
expect "a dangling symlink is a missing source" 65 "no run store at" -- \
  "$secret" store copy --store "$tmp/dangling.db" --to "$pg_empty"
[ ! -e "$tmp/gone.db" ] && ok || fail "a dangling symlink's target is not made"
[ "$(q "$pg_empty" "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'")" = 0 ] &&
  ok || fail "the refusals made nothing in the target"
ln -s "$tmp/jr2.db" "$tmp/link.db"
expect "a symlink to the store copies the store" 0 "copied $runs runs" -- \
  "$secret" store copy --store "$tmp/link.db" --to "$pg_link"
out=$("$secret" store copy --to "postgresql://jr2:s3cret-pw@localhost:1/nowhere" 2>&1)
grep -q "s3cret-pw" <<<"$out" && fail "a password was printed: $out" || ok
grep -q "cannot reach the run store" <<<"$out" && ok || fail "an unreachable target: $out"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
