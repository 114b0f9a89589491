#!/usr/bin/env bash
# `serve` under load, and killed under load (#11): on loopback, 8 clients answer ITEMS Gates of a
# Pool with cap 64 (tests/runtime/load.jr2, `conformance_load`) through GET /gates and
# POST /runs/:id/gates/:gate/events, while HOOKS signed deliveries POST /hooks/forge ask its
# Source to read again. Then the same load again on a new store, with serve SIGKILLed after
# 30-60 % of the answers and started again on the same store: every answer that got a 2xx is
# applied, no Gate takes two, no item starts twice, every delivery is answered `reread` once.
# Prints p50/p99/max latencies of the Gate answers and the deliveries, throughput and counts
# (serve_load.py does the work; each of its checks is a PASS or FAIL line).
# Usage: serve_load_test.sh DIR_OF_CONFORMANCE_RUNNERS [ITEMS] [HOOKS] [PHASE…]
#   (ITEMS 2000, HOOKS 10000 by default; PHASE `load`, `fault` or both, the default)
# SERVE_LOAD_TRACE=1 prints answers and deliveries per second, the WAL size and serve's CPU;
# SERVE_LOAD_PHASE_TIMEOUT (s, default 40) bounds each phase.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lib="$here/lib.sh"
dir=$(realpath "$1")
items=${2:-2000}
hooks=${3:-10000}
shift $(($# < 3 ? $# : 3))
runner="$dir/conformance_load"
tmp=$(mktemp -d)
# serve_load.py writes each serve's pid to PHASE/serve.pid: kill whatever is left of it.
trap 'for f in "$tmp"/*/serve.pid; do [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; done; rm -rf "$tmp"' EXIT
. "$lib"  # ok, fail
passed=0
failed=0
if [ ! -x "$runner" ]; then
  fail "no runner $runner (is tests/runtime/load.jr2 in the build?)"
  echo "$passed passed, $failed failed"
  exit 1
fi

run_checks 300 "$here/serve_load.py" "$runner" "$tmp" "$items" "$hooks" "$@"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
