#!/usr/bin/env bash
# Processes through a Pool against xargs -P, in the same run (#10): N items, each a process that
# appends its id to a log and sleeps NAP seconds, at cap JOBS, through the runner of
# tests/runtime/pool.jr2's `conformance_torture` workflow (std.command, saved as it moves), and
# the same commands through `xargs -P JOBS`. Prints both times and the ratio (xargs / runner:
# 1.0 is as fast as xargs).
# Usage: bench/processes.sh RUNNER [N] [JOBS] [NAP]
set -euo pipefail
runner=$(realpath "$1")
n=${2:-40}
jobs=${3:-8}
nap=${4:-0.1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
python3 -c "import json; print(json.dumps([{'id': 't%05d' % i} for i in range($n)]))" > tasks.json
now() { date +%s.%N; }
t0=$(now)
"$runner" run --store "$tmp/s.db" \
  --input "{\"tasks\":\"tasks.json\",\"log\":\"$tmp/runner.log\",\"jobs\":$jobs,\"nap\":\"$nap\"}" \
  > /dev/null 2>&1
t1=$(now)
seq -f 't%05g' 0 $((n - 1)) | xargs -P "$jobs" -I{} sh -c 'printf "%s\n" "$1" >> "$2"; sleep "$3"' sh {} "$tmp/xargs.log" "$nap"
t2=$(now)
python3 - "$t0" "$t1" "$t2" "$n" "$jobs" "$nap" "$(wc -l < runner.log)" "$(wc -l < xargs.log)" <<'PY'
import sys
t0, t1, t2 = map(float, sys.argv[1:4])
n, jobs, nap, rl, xl = sys.argv[4:9]
r, x = t1 - t0, t2 - t1
print(f"{n} processes of `sleep {nap}` at {jobs} at a time: runner {r:.3f} s ({int(n)/r:.1f} items/s, "
      f"{rl} ran), xargs -P{jobs} {x:.3f} s ({int(n)/x:.1f} items/s, {xl} ran); runner/xargs speed "
      f"{x/r:.2f}x")
PY
