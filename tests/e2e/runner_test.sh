#!/usr/bin/env bash
# The tickets runner through its command line: the story's exit codes, and bad input refused
# with a one-line error and a non-zero exit while the stored run stays byte-for-byte unchanged.
# Usage: runner_test.sh TICKETS_RUNNER SOURCE_DIR
set -u
tickets=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$src" || exit 1
export JR2_STORE=$tmp/jr2.db
passed=0
failed=0

source "$(dirname "$0")/lib.sh"
unchanged() {  # unchanged NAME COMMAND…: the store file is byte-for-byte the same afterwards
  local name=$1
  shift
  cp "$JR2_STORE" "$tmp/before.db"
  "$@" > /dev/null 2>&1
  if cmp -s "$JR2_STORE" "$tmp/before.db"; then passed=$((passed + 1)); else echo "FAIL $name: the store changed"; failed=$((failed + 1)); fi
}

expect "help" 0 'usage: tickets' -- "$tickets" --help
expect "no verb is usage" 64 'usage' -- "$tickets"
expect "--threads 0 is usage" 64 '`--threads` takes a whole number from 1 to 1024, not `0`' -- "$tickets" run --threads 0
expect "--threads x is usage" 64 'not `x`' -- "$tickets" run --threads x
expect "--threads twice" 64 '`--threads` is given twice' -- "$tickets" run --threads 2 --threads 3
expect "--threads +2" 64 'not `\+2`' -- "$tickets" run --threads +2
expect "--follow twice" 64 '`--follow` is given twice' -- "$tickets" run --follow --follow
expect "--threads goes with run and send" 64 '`--threads` goes with `run` and `send`' -- "$tickets" runs --threads 2
expect "unknown verb" 64 'unknown verb `frob`' -- "$tickets" frob
expect "bad input JSON" 65 'the input is not valid JSON' -- "$tickets" run --input '{"backlog_file":'
expect "input of the wrong type" 65 'backlog_file' -- "$tickets" run --input '{"backlog_file": 5}'
expect "missing backlog is the run's error" 4 'std.backlog: `nope.json` does not exist' -- "$tickets" run --input '{"backlog_file":"nope.json"}'

expect "run waits at two reviews" 3 'waiting at 3 Gates' -- "$tickets" run
run=$("$tickets" runs | grep waiting | head -n 1 | cut -d' ' -f1)
expect "gates lists them" 0 'T-1.review  approve  reject \{ reason: string \}' -- "$tickets" gates "$run"
expect "status waits" 3 'T-2.review' -- "$tickets" status "$run"
expect "status --json" 3 '"status": "waiting"' -- "$tickets" status "$run" --json

# Bad input: each refused, the stored run untouched.
expect "unknown run" 65 'no run `zzzz`' -- "$tickets" status zzzz
expect "short run prefix" 65 'at least 4 characters' -- "$tickets" status ab
expect "unknown gate" 65 'no open Gate `T-7.review`' -- "$tickets" send "$run" T-7.review approve
unchanged "unknown gate leaves the store" "$tickets" send "$run" T-7.review approve
expect "unknown event" 65 'takes approve, reject, not `merge`' -- "$tickets" send "$run" T-1.review merge
unchanged "unknown event leaves the store" "$tickets" send "$run" T-1.review merge
expect "payload its schema refuses" 65 'needs the field `reason`' -- "$tickets" send "$run" T-1.review reject '{}'
unchanged "refused payload leaves the store" "$tickets" send "$run" T-1.review reject '{}'
expect "malformed payload" 65 'the payload is not valid JSON' -- "$tickets" send "$run" T-1.review reject '{"reason":'
unchanged "malformed payload leaves the store" "$tickets" send "$run" T-1.review reject '{"reason":'
expect "send needs its arguments" 64 'takes RUN GATE EVENT' -- "$tickets" send "$run" T-1.review

# The story, each step a new process.
expect "approve T-1" 3 'T-1 settled' -- "$tickets" send "$run" T-1.review approve
expect "reject T-2 starts T-3" 3 'T-3 started' -- "$tickets" send "$run" T-2.review reject '{"reason":"Not now."}'
expect "approve T-3 deadlocks" 2 'ended deadlocked' -- "$tickets" send "$run" T-3.review approve
expect "output holds three outcomes" 2 '"T-3"' -- "$tickets" status "$run" --json
expect "an ended run takes no events" 65 'has ended `deadlocked`' -- "$tickets" send "$run" T-4.review approve
expect "cancel of an ended run" 65 'already ended' -- "$tickets" cancel "$run"
expect "runs --all lists it" 0 "$run  deadlocked" -- "$tickets" runs --all

# Cancel a waiting run.
"$tickets" run > /dev/null 2>&1
second=$("$tickets" runs | grep waiting | head -n 1 | cut -d' ' -f1)
expect "cancel a waiting run" 0 'was cancelled' -- "$tickets" cancel "$second"
# A cancelled run's feed ends with `ended` too, as every ended run's does (serve waits for it).
if "$tickets" log "$second" --json 2>/dev/null | grep -q '"kind": "ended"'; then passed=$((passed + 1)); else echo "FAIL a cancelled run's feed has no ended event"; failed=$((failed + 1)); fi

# SIGKILL between and during steps: each command either happened whole or not at all, and the
# story still ends with the three outcomes, no item lost or started twice.
export JR2_STORE=$tmp/killed.db
"$tickets" run > /dev/null 2>&1
killed=$("$tickets" runs | head -n 1 | cut -d' ' -f1)
kills=0
step_until() {  # step_until GATE EVENT PAYLOAD: sends killed at growing delays, then one in full
  # A send takes a few milliseconds here but far longer on a slow disk (each commit is an
  # fsync), so the delay grows with each try; whatever the kills left behind, the last send,
  # which nothing kills, must find a consistent store and settle the Gate.
  local gate=$1 event=$2 payload=$3 tries=0 pid
  while [ "$tries" -lt 8 ] && "$tickets" gates "$killed" | grep -q " $gate "; do
    tries=$((tries + 1))
    kills=$((kills + 1))
    "$tickets" send "$killed" "$gate" "$event" ${payload:+"$payload"} > /dev/null 2>&1 &
    pid=$!
    sleep "$(printf '0.%03d' $((RANDOM % (tries * 4))))"
    kill -9 "$pid" 2> /dev/null
    wait "$pid" 2> /dev/null
  done
  if "$tickets" gates "$killed" | grep -q " $gate "; then
    "$tickets" send "$killed" "$gate" "$event" ${payload:+"$payload"} > "$tmp/send.out" 2>&1
    local code=$?
    if [ "$code" -ne 3 ] && [ "$code" -ne 2 ]; then
      echo "FAIL: after SIGKILLs, sending $event to $gate exited $code"; head -5 "$tmp/send.out"
      failed=$((failed + 1)); return
    fi
  fi
  if "$tickets" gates "$killed" | grep -q " $gate "; then
    echo "FAIL: $gate is still open after a send that was not killed"; failed=$((failed + 1)); return
  fi
  passed=$((passed + 1))
}
step_until T-1.review approve ""
step_until T-2.review reject '{"reason":"Not now."}'
step_until T-3.review approve ""
out=$("$tickets" status "$killed" --json 2>/dev/null)
echo "SIGKILL: $kills sends killed at random instants; outcomes stored: $(grep -c '"outcome"' <<<"$out") of 3; started twice: $("$tickets" log "$killed" 2>/dev/null | grep -c 'T-3 started' | awk '{print ($1 > 1) ? $1 - 1 : 0}')"
if grep -q '"status": "deadlocked"' <<<"$out" && [ "$(grep -c '"outcome"' <<<"$out")" -eq 3 ]; then
  passed=$((passed + 1))
else
  echo "FAIL: after SIGKILLs the story did not end deadlocked with three outcomes"; echo "$out" | head -20
  failed=$((failed + 1))
fi
export JR2_STORE=$tmp/jr2.db

# A store that is not a database.
echo "not a database" > "$tmp/bad.db"
expect "store is not a database" 65 'run store' -- "$tickets" runs --store "$tmp/bad.db"
if [ "$(cat "$tmp/bad.db")" = "not a database" ]; then passed=$((passed + 1)); else echo "FAIL: the bad store was changed"; failed=$((failed + 1)); fi

# The feed is typed (#10): `log --json` gives each event's kind and data, the ones a person is
# not shown (the `source` Gate opening, a Gate closing) included.
logjson=$("$tickets" log "$run" --json 2>/dev/null)
for kind in gate-opened started settled gate-closed; do
  if grep -q "\"kind\": \"$kind\"" <<<"$logjson"; then passed=$((passed + 1)); else echo "FAIL log --json has no $kind event"; failed=$((failed + 1)); fi
done
if grep -q '"data": {' <<<"$logjson"; then passed=$((passed + 1)); else echo "FAIL log --json events have no data"; failed=$((failed + 1)); fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
