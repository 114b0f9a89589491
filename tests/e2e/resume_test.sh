#!/usr/bin/env bash
# A runner waits for work under way (a timer of a machine that holds no Gate) before it exits,
# never for a deadline on a person's answer; a run whose process died during such a wait is
# taken up again with `run --resume`. The program is the conformance suite's `napper`: a 1 s
# nap, then a Gate with a 1 h deadline.
# Usage: resume_test.sh NAPPER_RUNNER
set -u
napper=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
export JR2_STORE=$tmp/jr2.db
passed=0
failed=0
source "$here/lib.sh"

start=$(date +%s%N)
expect "run waits out the nap, then waits at the Gate" 3 'timer due in [0-9]+ m?s for work under way' -- "$napper" run
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
if [ "$elapsed_ms" -ge 900 ]; then passed=$((passed + 1)); else echo "FAIL: run exited after $elapsed_ms ms, before the nap was over"; failed=$((failed + 1)); fi
run=$("$napper" runs | head -n 1 | cut -d' ' -f1)
expect "the deadline is named, not waited for" 3 'and a timer, due in 1 h' -- "$napper" status "$run"
expect "the Gate is open" 0 "$run  asking  finish" -- "$napper" gates "$run"
expect "answering ends it" 0 'ended done' -- "$napper" send "$run" asking finish
expect "an ended run is not resumed" 65 'nothing to resume' -- "$napper" run --resume "$run"

# The process dies during the nap: the run is stored, waiting at no Gate; --resume goes on.
"$napper" run > /dev/null 2>&1 &
pid=$!
# The nap's wait starts after the first save; a slow machine may not get there in 0.4 s, so wait
# until the run is stored (up to 5 s) before the kill.
for _ in $(seq 50); do [ -n "$("$napper" runs 2>/dev/null)" ] && break; sleep 0.1; done
kill -9 "$pid" 2> /dev/null
wait "$pid" 2> /dev/null
killed=$("$napper" runs | head -n 1 | cut -d' ' -f1)
if [ -n "$killed" ] && [ -z "$("$napper" gates "$killed")" ]; then
  passed=$((passed + 1))
else
  echo "FAIL: the killed run is not stored waiting at no Gate"; failed=$((failed + 1))
fi
expect "resume waits out the rest of the nap" 3 'waiting at 1 Gate' -- "$napper" run --resume "$killed"
expect "resumed to the Gate" 0 "$killed  asking  finish" -- "$napper" gates "$killed"

expect "resume of an unknown run" 65 'no run `zzzz`' -- "$napper" run --resume zzzz
expect "resume takes no input" 64 'remove --input' -- "$napper" run --resume "$killed" --input '{}'
expect "resume needs a run" 64 '`--resume` needs a value' -- "$napper" run --resume

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
