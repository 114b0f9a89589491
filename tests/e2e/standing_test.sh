#!/usr/bin/env bash
# A standing Pool of runs over a push Source, served (#12; tests/runtime/standing.jr2):
# `conformance_alerts run` is refused; `serve` keeps one run of it; signed deliveries to
# POST /hooks/monitor are held / existing / hold-full (429) / skipped; held alerts become runs of
# `conformance_alert_run` in arrival order, at most 2 live, each settled once its Gate `review`
# is answered (a `broken` alert settles failed); a restart keeps the one standing run, its held
# items and live callee runs. Fault: a stream of deliveries with serve SIGKILLed mid-stream and
# started again: every alert answered held/existing ends with exactly one callee run, done.
# Cancel of the standing run is a pause: deliveries answer 503 `paused`.
# standing.py does the work; each of its checks is a PASS or FAIL line.
# Usage: standing_test.sh DIR_OF_CONFORMANCE_RUNNERS [ALERTS] [PHASE…]
#   (ALERTS 400 by default; PHASE `flow`, `fault`, `cancel`, all by default)
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir=$(realpath "$1")
alerts=${2:-400}
shift $(($# < 2 ? $# : 2))
runner="$dir/conformance_alerts"
tmp=$(mktemp -d)
trap 'for f in "$tmp"/*/serve.pid; do [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; done; rm -rf "$tmp"' EXIT
. "$here/lib.sh"  # expect, ok, fail
passed=0
failed=0
if [ ! -x "$runner" ] || [ ! -x "$dir/conformance_alert_run" ]; then
  fail "no runner $runner (is tests/runtime/standing.jr2 in the build?)"
  echo "$passed passed, $failed failed"
  exit 1
fi

# `run` of a standing Pool is refused with one line.
out=$(cd "$tmp" && JR2_STORE="$tmp/refused.db" timeout 10 "$runner" run 2>&1)
rc=$?
if [ "$rc" -eq 65 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && grep -q 'standing Pool' <<<"$out"; then
  ok
else
  fail "conformance_alerts run: exit $rc (wanted 65, one line): $out"
fi
# A callers file naming the hook whose secret variable is unset: serve refuses to start (65).
echo '{"callers": [], "hooks": {"monitor": {"secret_env": "MON_SECRET_UNSET_X"}}}' > "$tmp/c.json"
out=$(cd "$tmp" && env -u MON_SECRET_UNSET_X JR2_STORE="$tmp/refused2.db" timeout 10 "$runner" serve \
  --listen 127.0.0.1:0 --callers "$tmp/c.json" 2>&1)
rc=$?
[ "$rc" -eq 65 ] && ok || fail "serve with the hook's secret unset: exit $rc (wanted 65): $out"

run_checks 120 "$here/standing.py" "$dir" "$tmp" "$alerts" "$@"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
