#!/usr/bin/env bash
# Several serves on one PostgreSQL store (#32, pg_hosts.py), on the throwaway server of the ctest
# fixture `pg` ($JR2_TEST_PG), in a database of its own.
# Usage: pg_hosts_test.sh DIR_OF_CONFORMANCE_RUNNERS
set -u
passed=0
failed=0
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/lib.sh"
if [ -z "${JR2_TEST_PG:-}" ] || [ ! -f "$JR2_TEST_PG" ]; then
  echo "FAIL: no PostgreSQL server (JR2_TEST_PG; ctest's fixture \`pg\` starts one: tests/pg/server.sh)"
  exit 1
fi
url=$(cat "$JR2_TEST_PG")
db=jr2_hosts_$$_$RANDOM
tmp=$(mktemp -d)
trap 'psql "$url" -q -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
psql "$url" -q -c "CREATE DATABASE $db" >/dev/null || { echo "FAIL: cannot create $db"; exit 1; }
cd "$tmp" || exit 1
run_checks 120 "$here/pg_hosts.py" "$1/conformance_secret" "${url/dbname=postgres/dbname=$db}" "$tmp"
for e in "$tmp"/serve.*.err; do
  [ "$failed" -gt 0 ] && [ -s "$e" ] && { echo "--- $(basename "$e")"; tail -8 "$e"; }
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
