#!/usr/bin/env bash
# `jr2c diff OLD NEW --store` with a PostgreSQL store (docs/diff.md), on the throwaway server of
# the ctest fixture `pg`: the tickets runner leaves two runs waiting in a database of the test's
# own; jr2c (static, without libpq) reads their snapshots through `jr2c-store` beside it and
# counts them exactly as it counts the same runs in a SQLite store. A store that cannot be read
# is refused in one line that never prints the location's password, and nothing is written;
# without jr2c-store beside it, jr2c says where it looked.
# Usage: diff_store_pg_test.sh JR2C TICKETS_RUNNER SOURCE_DIR
set -u
jr2c=$(realpath "$1")
tickets=$(realpath "$2")
src=$(realpath "$3")
passed=0
failed=0
. "$src/tests/e2e/lib.sh"
pg_url
db=jr2_diff_$$_$RANDOM
empty=${db}_empty
tmp=$(mktemp -d)
trap 'psql "$url" -q -c "DROP DATABASE IF EXISTS $db" -c "DROP DATABASE IF EXISTS $empty" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
psql "$url" -q -c "CREATE DATABASE $db" -c "CREATE DATABASE $empty" >/dev/null || {
  echo "FAIL: cannot create the test's databases on $url"
  echo "0 passed, 1 failed"
  exit 1
}
cd "$tmp" || exit 1
pg="${url/dbname=postgres/dbname=$db}"
mkdir -p samples/tickets
cp "$src/samples/tickets/backlog.json" samples/tickets/
cp "$src/samples/tickets/tickets.jr2" old.jr2
sed -e 's/initial state review {/initial state pending {/' \
    -e 's|^pool ticket_pool(backlog_file: string = "samples/tickets/backlog.json")|pool ticket_pool(backlog_file: string = "samples/tickets/backlog.json", team: string)|' \
    old.jr2 > new.jr2

# The same two waiting runs in PostgreSQL and in a SQLite file.
for store in "$pg" "$tmp/jr2.db"; do
  JR2_STORE="$store" "$tickets" run > /dev/null 2>&1
  JR2_STORE="$store" "$tickets" run > /dev/null 2>&1
done
rows() { psql "$pg" -At -c "SELECT id, rev, updated FROM runs ORDER BY id"; }
before=$(rows)
[ "$(wc -l <<<"$before")" -eq 2 ] && ok || fail "two runs wait in PostgreSQL"

out=$("$jr2c" diff old.jr2 new.jr2 --store "$pg" 2>&1)
rc=$?
echo "$out" | grep -E 'note: [0-9]'
[ "$rc" -eq 100 ] && ok || fail "diff --store PostgreSQL: exit $rc, wanted 100: $out"
grep -q 'note: 2 of 2 waiting runs in the store are in `review`' <<<"$out" && ok ||
  fail "both waiting runs are counted in \`review\`"
grep -q 'note: 2 of 2 waiting runs in the store have pool `ticket_pool` live' <<<"$out" && ok ||
  fail "both have the Pool live"
sqlite=$("$jr2c" diff old.jr2 new.jr2 --store "$tmp/jr2.db" 2>&1)
[ "$(grep 'note: ' <<<"$out")" = "$(grep 'note: ' <<<"$sqlite")" ] && ok ||
  fail "PostgreSQL and SQLite counts differ: $sqlite"
# A Pool's parameter retyped: its stored input (beside the snapshot, in PostgreSQL as in SQLite)
# is read, and both runs' no longer reads.
sed -e 's|^pool ticket_pool(backlog_file: string = "samples/tickets/backlog.json")|pool ticket_pool(backlog_file: int = 0)|' \
    -e 's|source: backlog(input.backlog_file)|source: backlog(str(input.backlog_file))|' old.jr2 > file_int.jr2
expect "a Pool parameter retyped, counted from the stored inputs" 100 \
  'note: 2 of 2 waiting runs in the store have pool `ticket_pool` live with a stored `backlog_file`' \
  -- "$jr2c" diff old.jr2 file_int.jr2 --store "$pg"
[ "$(rows)" = "$before" ] && ok || fail "diff --store changed the PostgreSQL store"

# Refusals: one line, exit 2, never the password.
expect "a database without a jr2 store" 2 '^jr2c: error: --store .*'"$empty" -- \
  "$jr2c" diff old.jr2 new.jr2 --store "${url/dbname=postgres/dbname=$empty}"
[ "$(psql "${url/dbname=postgres/dbname=$empty}" -At -c "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")" = 0 ] &&
  ok || fail "diff --store made tables in an empty database"
secret_out=$("$jr2c" diff old.jr2 new.jr2 --store "postgresql://jr2:hunter2-secret@127.0.0.1:1/nowhere?connect_timeout=2" 2>&1)
rc=$?
[ "$rc" -eq 2 ] && ok || fail "an unreachable database: exit $rc, wanted 2: $secret_out"
grep -q 'hunter2' <<<"$secret_out" && fail "the password was printed: $secret_out" || ok
[ "$(wc -l <<<"$secret_out")" -eq 1 ] && ok || fail "the refusal is one line: $secret_out"

# A keyword string whose first key the runtime does not take for a database (so it is read as a
# file's path): its password is not printed either.
kw_out=$("$jr2c" diff old.jr2 new.jr2 --store "sslmode=disable password=hunter3-secret dbname=nowhere" 2>&1)
rc=$?
[ "$rc" -eq 2 ] && ok || fail "a keyword string read as a path: exit $rc, wanted 2: $kw_out"
grep -q 'hunter3' <<<"$kw_out" && fail "the password was printed: $kw_out" || ok

# A stand-in jr2c-store beside a copy of jr2c: the location reaches it in its environment, never
# on its command line (which any user can read with ps); an answer cut short, or one whose
# lengths lie, is refused in one line (exit 2), and one it refuses is passed on as it said it.
mkdir fake && cp "$jr2c" fake/
cat > fake/jr2c-store <<'SH'
#!/usr/bin/env bash
printf '%s\n' "$@" > "$(dirname "$0")/argv"
printf '%s\n' "${JR2C_STORE_LOCATION:-}" > "$(dirname "$0")/location"
case "${FAKE_ANSWER:-}" in
  short) printf '7\ntickets\n500\n{"a":' ;;
  lying) printf '7\ntickets\n2\n{}}}\n0\n\n' ;;
  *) echo '`somewhere`: the stand-in refuses' >&2; exit 2 ;;
esac
SH
chmod +x fake/jr2c-store
loc="postgresql://jr2:hunter4-secret@127.0.0.1:1/x"
expect "the stand-in's refusal is passed on" 2 '^jr2c: error: --store `somewhere`: the stand-in refuses$' -- \
  fake/jr2c diff old.jr2 new.jr2 --store "$loc"
grep -q hunter4 fake/argv && fail "the password was on jr2c-store's command line" || ok
[ "$(cat fake/location)" = "$loc" ] && ok || fail "the location did not reach jr2c-store's environment"
expect "an answer cut short" 2 'whose answer was cut short' -- \
  env FAKE_ANSWER=short fake/jr2c diff old.jr2 new.jr2 --store "$loc"
expect "an answer whose lengths lie" 2 'whose answer was cut short' -- \
  env FAKE_ANSWER=lying fake/jr2c diff old.jr2 new.jr2 --store "$loc"

# jr2c alone, without jr2c-store beside it.
mkdir alone && cp "$jr2c" alone/
expect "jr2c without jr2c-store" 2 'jr2c-store.*is not in' -- alone/jr2c diff old.jr2 new.jr2 --store "$pg"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
