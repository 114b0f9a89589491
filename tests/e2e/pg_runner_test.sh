#!/usr/bin/env bash
# The runner's verbs against a PostgreSQL store (#32, docs/scaling.md), end to end on the
# throwaway server of the ctest fixture `pg` ($JR2_TEST_PG names the file of its connection
# string), each in a database of its own: a run waits at its Gates, is listed, answered (a refused
# payload changes nothing), read back and logged; a second database holds nothing of it; what is
# not built yet is refused in one line naming the store without its password. The runner does not
# link libpq: it loads it when it opens this store (#33: libpq's twenty libraries were 3 ms of
# every runner's start).
# Usage: pg_runner_test.sh DIR_OF_CONFORMANCE_RUNNERS
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
secret="$1/conformance_secret"
passed=0
failed=0
. "$here/lib.sh"
pg_url
db=jr2_e2e_$$_$RANDOM
other=${db}_other
tmp=$(mktemp -d)
trap 'psql "$url" -q -c "DROP DATABASE IF EXISTS $db" -c "DROP DATABASE IF EXISTS $other" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
psql "$url" -q -c "CREATE DATABASE $db" -c "CREATE DATABASE $other" >/dev/null || {
  echo "FAIL: cannot create the test's databases on $url"
  echo "0 passed, 1 failed"
  exit 1
}
cd "$tmp" || exit 1
if readelf -d "$secret" | grep -q 'NEEDED.*libpq'; then
  fail "the runner links libpq; it should load it only when it opens a PostgreSQL store"
else
  ok
fi
export JR2_STORE="${url/dbname=postgres/dbname=$db}"

expect "a run waits at its Gates in PostgreSQL" 3 "approval" -- \
  "$secret" run --input '{"note": {"deep": {"secret": "pg-secret"}}}'
run=$("$secret" runs --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["runId"])')
[ -n "$run" ] && ok || fail "runs --json lists the run"
expect "runs lists it waiting" 0 "waiting" -- "$secret" runs
expect "gates lists both Gates" 0 "both.x.review" -- "$secret" gates "$run"
expect "a refused payload is refused" 65 "score" -- "$secret" send "$run" approval rate '{"score": "x"}'
expect "and changed nothing" 0 "approval" -- "$secret" gates "$run"
expect "an answer is taken" 3 "waiting" -- "$secret" send "$run" approval rate '{"score": 4}'
expect "the last answer ends the run" 0 "done" -- "$secret" send "$run" both.x.review accept '{}'
expect "status reads it done" 0 "done" -- "$secret" status "$run"
expect "its log has its feed" 0 "keeping pg-secret" -- "$secret" log "$run"
expect "another database holds none of it" 0 "^\[\]$" -- \
  env JR2_STORE="${url/dbname=postgres/dbname=$other}" "$secret" runs --all --json
no_files=$(find "$tmp" -mindepth 1 | wc -l)
[ "$no_files" -eq 0 ] && ok || fail "a PostgreSQL store writes no file in the working folder: $(ls -A "$tmp")"

# What cannot be done is refused, naming the store without its password.
with_pw="postgresql://jr2:s3cret-pw@localhost:1/nowhere"
expect "serve on an unreachable PostgreSQL store is one line, exit 65" 65 "cannot reach the run store" -- \
  "$secret" serve --store "$with_pw"
expect "store backup refuses it" 64 "pg_dump" -- "$secret" store backup copy.db --store "$with_pw"
out=$("$secret" serve --store "$with_pw" 2>&1; "$secret" runs --store "$with_pw" 2>&1)
grep -q "s3cret-pw" <<<"$out" && fail "a password was printed: $out" || ok
expect "an unreachable database is one line, exit 65" 65 "cannot reach the run store" -- \
  "$secret" runs --store "$with_pw"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
