# Shared by the end-to-end scripts: `expect` runs a command and checks its exit code and output.
# The sourcing script sets `passed=0 failed=0` and prints "$passed passed, $failed failed".

# expect NAME CODE PATTERN -- COMMAND…: runs the command, checks its exit code and that its
# combined output matches the extended regex PATTERN (an empty pattern checks only the code).
# ANTLR's own messages must never reach a user, so any output that carries one fails.
expect() {
  local name=$1 want=$2 pattern=$3
  shift 4
  local out rc
  out=$(timeout 60 "$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL $name: exit $rc, wanted $want"; echo "$out" | head -20; failed=$((failed + 1)); return
  fi
  if [ -n "$pattern" ] && ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL $name: output does not match /$pattern/"; echo "$out" | head -20
    failed=$((failed + 1)); return
  fi
  if grep -qE 'line [0-9]+:[0-9]+ (mismatched|extraneous|no viable|missing)|token recognition' <<<"$out"; then
    echo "FAIL $name: ANTLR's own message leaked"; echo "$out" | head -5; failed=$((failed + 1)); return
  fi
  passed=$((passed + 1))
}

# in_tmp_store: work in a new temporary folder ($tmp, removed on exit) that holds the run store
# ($JR2_STORE).
in_tmp_store() {
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cd "$tmp" || exit 1
  export JR2_STORE=$tmp/jr2.db
}

# ok / fail MESSAGE: count a check that passed, or print why one failed and count it.
ok() { passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

# run_checks SECONDS SCRIPT ARG…: runs a Python check script under a timeout (its output shown
# and kept in $tmp/out.txt), counts its `PASS: ` and `FAIL: ` lines into $passed and $failed (a
# non-zero exit with no FAIL line is a failure too), and on any failure prints the last lines of
# each serve's stderr under $tmp (serve_load.py, standing.py, push_load.py).
run_checks() {
  local seconds=$1 script=$2 rc p f e
  shift 2
  timeout "$seconds" python3 "$script" "$@" 2>&1 | tee "$tmp/out.txt"
  rc=${PIPESTATUS[0]}
  p=$(grep -c '^PASS: ' "$tmp/out.txt")
  f=$(grep -c '^FAIL: ' "$tmp/out.txt")
  passed=$((passed + p))
  failed=$((failed + f))
  [ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || fail "$(basename "$script") exited $rc"
  if [ "$failed" -gt 0 ]; then
    for e in "$tmp"/*/serve.*.err; do
      [ -s "$e" ] || continue
      echo "--- ${e#"$tmp"/} (last lines)"
      tail -5 "$e"
    done
  fi
}

# serve_url LOG: the http://127.0.0.1:PORT a `serve` started with `--listen 127.0.0.1:0` prints
# to LOG, waited for up to 10 s. On none it says why on stderr and fails: write
# `url=$(serve_url serve.log) || exit 1`.
serve_url() {
  local url=
  for _ in $(seq 100); do
    url=$(grep -oE 'http://127\.0\.0\.1:[0-9]+' "$1" | head -1)
    [ -n "$url" ] && break
    sleep 0.1
  done
  if [ -z "$url" ]; then
    echo "FAIL: serve did not start: $(cat "$1")" >&2
    echo "$passed passed, $((failed + 1)) failed" >&2
    return 1
  fi
  echo "$url"
}

# sleeps NAP: how many `sleep NAP` processes run (each test's naps are values no other test
# uses, so its processes can be counted).
sleeps() { pgrep -c -f "^sleep $1\$" || true; }

# wait_exit PID: waits up to 10 s for process PID (a child of this shell) to end; sets rc to its
# exit code, or "hung".
wait_exit() {
  rc=hung
  for _ in $(seq 1 200); do
    if ! kill -0 "$1" 2>/dev/null; then
      wait "$1"
      rc=$?
      return
    fi
    sleep 0.05
  done
}

# pg_url: the connection string of the ctest fixture `pg`'s throwaway PostgreSQL server (the file
# $JR2_TEST_PG names), in $url; without one, a FAIL and exit 1.
pg_url() {
  if [ -z "${JR2_TEST_PG:-}" ] || [ ! -f "$JR2_TEST_PG" ]; then
    echo "FAIL: no PostgreSQL server (JR2_TEST_PG; ctest's fixture \`pg\` starts one: tests/pg/server.sh)"
    echo "0 passed, 1 failed"
    exit 1
  fi
  url=$(cat "$JR2_TEST_PG")
}
