#!/usr/bin/env bash
# Faults of several serves on one PostgreSQL store (#32, pg_faults.py): a serve SIGKILLed under
# load, PostgreSQL restarted under load (on a server of its own, so that the fixture's, which
# other tests share, is never restarted), and the kill torture across two hosts. The first and
# the last run on the throwaway server of the ctest fixture `pg` ($JR2_TEST_PG), each in a
# database of its own.
# Usage: pg_faults_test.sh DIR_OF_CONFORMANCE_RUNNERS [SCENARIO…]
set -u
passed=0
failed=0
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/lib.sh"
pg_url
db=jr2_faults_$$_$RANDOM
tmp=$(mktemp -d)
# The restart scenario's own server: a folder the `postgres` user reaches (mktemp's is closed).
pg2=$(mktemp -d /tmp/jr2-faults-pg.XXXXXX)
chmod 0755 "$pg2"
cleanup() {
  for d in "${db}_kill" "${db}_torture"; do
    psql "$url" -q -c "DROP DATABASE IF EXISTS $d WITH (FORCE)" >/dev/null 2>&1
  done
  bash "$here/../pg/server.sh" stop "$pg2" >/dev/null 2>&1
  rm -rf "$tmp" "$pg2"
}
trap cleanup EXIT
for d in "${db}_kill" "${db}_torture"; do
  psql "$url" -q -c "CREATE DATABASE $d" >/dev/null || { echo "FAIL: cannot create $d"; exit 1; }
done
runner=$(cd "$1" && pwd)
shift
cd "$tmp" || exit 1
run_checks 170 "$here/pg_faults.py" "$runner/conformance_secret" \
  "${url/dbname=postgres/dbname=${db}_kill}" "${url/dbname=postgres/dbname=${db}_torture}" \
  "$pg2" "$tmp" "$@"
for e in "$tmp"/serve.*.err; do
  [ "$failed" -gt 0 ] && [ -s "$e" ] && { echo "--- $(basename "$e")"; tail -8 "$e"; }
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
