#!/usr/bin/env bash
# A standing Pool over a push Source under load, and killed under load (#12; tests/runtime/
# push_load.jr2, `conformance_push_load`, cap 16, hold 1000): on loopback, 8 clients send
# DELIVERIES signed deliveries POST /hooks/bench (unique item ids and delivery ids), resending the
# same delivery id after a 429 hold-full or a connection error. Every item answered `held` (or
# `existing` after a resend) ends with exactly one run of `conformance_push_item`, done: none
# twice, none lost. Then the same on a new store with serve SIGKILLed at ~40 % and started again
# on the same store and port. Prints deliveries/s, p50/p99/max latencies, 429s, connection errors
# (push_load.py does the work; each of its checks is a PASS or FAIL line).
# Usage: push_load_test.sh DIR_OF_CONFORMANCE_RUNNERS [DELIVERIES] [PHASE…]
#   (DELIVERIES 10000 by default; PHASE `load`, `fault` or both, the default)
# PUSH_LOAD_PHASE_TIMEOUT (s, default 60) bounds the sending of each phase, PUSH_LOAD_SETTLE
# (s, default 20) the wait for the runs to end, PUSH_LOAD_KILL_AT (default 0.4) where the kill is.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir=$(realpath "$1")
deliveries=${2:-10000}
shift $(($# < 2 ? $# : 2))
runner="$dir/conformance_push_load"
tmp=$(mktemp -d)
# push_load.py writes each serve's pid to PHASE/serve.pid: kill whatever is left of it.
trap 'for f in "$tmp"/*/serve.pid; do [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; done; rm -rf "$tmp"' EXIT
. "$here/lib.sh"  # ok, fail
passed=0
failed=0
if [ ! -x "$runner" ] || [ ! -x "$dir/conformance_push_item" ]; then
  fail "no runner $runner (is tests/runtime/push_load.jr2 in the build?)"
  echo "$passed passed, $failed failed"
  exit 1
fi

run_checks 200 "$here/push_load.py" "$dir" "$tmp" "$deliveries" "$@"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
