#!/usr/bin/env bash
# A runner waits for work under way (a timer with no open Gate inside its state) before it
# exits, never for a deadline on a person's answer; a run whose process died during such a wait
# is taken up again with `run --resume`; a command that changes the run during another's wait
# is not undone: the waiting process goes on from what that command stored. The programs are
# the conformance suite's `napper` (a 2 s nap, then a Gate with a 1 h deadline) and
# `nap_and_ask` (a Gate, while a child naps 5 s).
# Usage: resume_test.sh NAPPER_RUNNER NAP_AND_ASK_RUNNER
set -u
napper=$(realpath "$1")
nap_and_ask=$(realpath "$2")
passed=0
failed=0
source "$(dirname "$0")/lib.sh"
in_tmp_store

# start_napping LOG [RUNNER]: a run in the background, once it is stored and asleep in its nap;
# sets $pid and $napping (the run's id).
start_napping() {
  "${2:-$napper}" run > /dev/null 2> "$1" &
  pid=$!
  for _ in $(seq 100); do grep -q 'has a timer due' "$1" && break; sleep 0.05; done
  napping=$(sed -n 's/.*run \([0-9a-f]*\) has a timer due.*/\1/p' "$1" | head -n 1)
}

start=$(date +%s%N)
expect "run waits out the nap, then waits at the Gate" 3 'timer due in [0-9]+ m?s for work under way' -- "$napper" run
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
if [ "$elapsed_ms" -ge 1900 ]; then ok; else fail "run exited after $elapsed_ms ms, before the nap was over"; fi
run=$("$napper" runs | head -n 1 | cut -d' ' -f1)
expect "the deadline is named, not waited for" 3 'and a timer, due in (1 h|59 min)' -- "$napper" status "$run"
expect "the Gate is open" 0 "$run  asking  finish" -- "$napper" gates "$run"
expect "answering ends it" 0 'ended done' -- "$napper" send "$run" asking finish
expect "an ended run is not resumed" 65 'nothing to resume' -- "$napper" run --resume "$run"

# The process dies during the nap: the run is stored, waiting at no Gate; --resume goes on.
start_napping "$tmp/killed.log"
kill -9 "$pid" 2> /dev/null
wait "$pid" 2> /dev/null
killed=$napping
if [ -n "$killed" ] && [ -z "$("$napper" gates "$killed")" ]; then ok; else fail "the killed run is not stored waiting at no Gate"; cat "$tmp/killed.log"; fi
expect "status says how it goes on" 3 "of work under way, due (in .*|now): .*if none is, .*run --resume $killed\` does" -- "$napper" status "$killed"
expect "resume waits out the rest of the nap" 3 'waiting at 1 Gate' -- "$napper" run --resume "$killed"
expect "resumed to the Gate" 0 "$killed  asking  finish" -- "$napper" gates "$killed"

# A cancel during another process's wait: the cancel is kept; the waiting process, on waking,
# goes on from what was stored (a cancelled run) instead of saving its older copy over it.
start_napping "$tmp/sleeper.log"
expect "cancel during the wait" 0 'was cancelled' -- "$napper" cancel "$napping"
wait "$pid"
code=$?
if [ "$code" -eq 5 ]; then ok; else fail "the waiting process exited $code, not the cancelled run's 5"; cat "$tmp/sleeper.log"; fi
if grep -q 'was changed by another command during the wait; going on from what it stored' "$tmp/sleeper.log"; then ok; else fail "the waiting process did not say it reloaded"; cat "$tmp/sleeper.log"; fi
expect "the cancel was not overwritten" 5 'was cancelled' -- "$napper" status "$napping"

# A Gate answered while a child naps: `send` delivers and exits at once (it does not wait for
# the nap); the `run` process, on waking, goes on from the answered run and ends it done.
start_napping "$tmp/both.log" "$nap_and_ask"
start_s=$(date +%s%N)
expect "send does not wait for work under way" 3 'and a timer of work under way, due in' -- "$nap_and_ask" send "$napping" both.right.asking finish
send_ms=$(( ($(date +%s%N) - start_s) / 1000000 ))
# The child naps 5 s: a send that waited for it would take seconds, one that did not takes ms.
if [ "$send_ms" -lt 3000 ]; then ok; else fail "send took $send_ms ms: it waited for the nap"; fi
wait "$pid"
code=$?
if [ "$code" -eq 0 ]; then ok; else fail "the waiting run process exited $code, not done's 0"; cat "$tmp/both.log"; fi
if grep -q 'going on from what it stored' "$tmp/both.log"; then ok; else fail "the run process did not reload"; cat "$tmp/both.log"; fi
expect "the answer and the nap both count" 0 'ended done' -- "$nap_and_ask" status "$napping"

# One command drives a run at a time: a send is handed to the command that holds the run's lock;
# a holder that does not answer within 3 s (here a bare flock, not a runner: it reads no inbox)
# is waited for.
lockfile="$JR2_STORE.locks/$killed"
flock "$lockfile" sleep 5 &
holder=$!
for _ in $(seq 100); do flock -n "$lockfile" true || break; sleep 0.05; done
start=$(date +%s%N)
expect "a send waits for a holder that does not answer" 0 'did not answer in 3 s; waiting for it' -- "$napper" send "$killed" asking finish
waited_ms=$(( ($(date +%s%N) - start) / 1000000 ))
wait "$holder"
if [ "$waited_ms" -ge 1000 ]; then ok; else fail "the send did not wait for the lock ($waited_ms ms)"; fi

expect "resume of an unknown run" 65 'no run `zzzz`' -- "$napper" run --resume zzzz
expect "resume takes no input" 64 'remove --input' -- "$napper" run --resume "$killed" --input '{}'
expect "resume needs a run" 64 '`--resume` needs a value' -- "$napper" run --resume
expect "resume needs a non-empty run" 64 '`--resume` needs a run id' -- "$napper" run --resume ''
expect "resume goes with run only" 64 '`--resume` goes with `run`' -- "$napper" status "$killed" --resume "$killed"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
