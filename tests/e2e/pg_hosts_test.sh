#!/usr/bin/env bash
# Several serves on one PostgreSQL store (#32: pg_hosts.py, pg_standing.py, pg_capacity.py), on
# the throwaway server of the ctest fixture `pg` ($JR2_TEST_PG), in a database of its own.
# Usage: pg_hosts_test.sh DIR_OF_CONFORMANCE_RUNNERS
set -u
passed=0
failed=0
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/lib.sh"
pg_url
db=jr2_hosts_$$_$RANDOM
tmp=$(mktemp -d)
trap 'for d in $db ${db}_s ${db}_c; do psql "$url" -q -c "DROP DATABASE IF EXISTS $d WITH (FORCE)" >/dev/null 2>&1; done; rm -rf "$tmp"' EXIT
for d in $db ${db}_s ${db}_c; do
  psql "$url" -q -c "CREATE DATABASE $d" >/dev/null || { echo "FAIL: cannot create $d"; exit 1; }
done
cd "$tmp" || exit 1
run_checks 120 "$here/pg_hosts.py" "$1/conformance_secret" "${url/dbname=postgres/dbname=$db}" "$tmp"
# A standing Pool across serves: hook deliveries forwarded, a run's end heard across hosts.
mkdir -p "$tmp/standing"
run_checks 90 "$here/pg_standing.py" "$1" "${url/dbname=postgres/dbname=${db}_s}" "$tmp/standing"
# --capacity across serves: starts past it queued in the store, claimed by a serve with room.
mkdir -p "$tmp/capacity"
run_checks 90 "$here/pg_capacity.py" "$1" "${url/dbname=postgres/dbname=${db}_c}" "$tmp/capacity"
for e in "$tmp"/serve.*.err "$tmp"/standing/serve.*.err "$tmp"/capacity/serve.*.err; do
  [ "$failed" -gt 0 ] && [ -s "$e" ] && { echo "--- $(basename "$e")"; tail -8 "$e"; }
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
