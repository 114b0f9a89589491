#!/usr/bin/env bash
# The run host's stops (#10), through the real runner: a `cancel` from another command reaches a
# `run` that waits for its processes (through the store's inbox), and SIGTERM or SIGINT stop a
# `run` at the end of its turn — exit 128 + the signal, every process it started killed (with the
# processes they started: each command is its own process group), the run stored, and a
# `run --resume` that finds each cut process `interrupted`, never run again.
# Usage: host_test.sh RUNNER   (conformance_torture)
set -u
lib="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
runner=$(realpath "$1")
tmp=$(mktemp -d)
trap 'pkill -KILL -f "^sleep (30\.12[0-9]|3\.127)$" 2>/dev/null; rm -rf "$tmp"' EXIT
. "$lib"  # ok, fail, sleeps, wait_exit
cd "$tmp" || exit 1
passed=0
failed=0
export JR2_STORE="$tmp/store.db"

python3 -c "import json; print(json.dumps([{'id': 't%02d' % i} for i in range(8)]))" > tasks.json

# Starts a run of 8 items whose processes each sleep NAP (a value no other test uses, so that
# its sleeps can be counted), in the background; waits until all 8 have started.
start_run() {
  local nap=$1 log=$2
  : > "$log"
  "$runner" run --input "{\"tasks\":\"tasks.json\",\"log\":\"$tmp/$log\",\"nap\":\"$nap\"}" \
    > "$log.out" 2> "$log.err" &
  pid=$!
  for _ in $(seq 1 200); do
    [ "$(wc -l < "$log")" -ge 8 ] && break
    sleep 0.05
  done
  id=$("$runner" runs --json 2>/dev/null | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r[-1]["runId"] if r else "")')
}

# 1. cancel while `run` waits for 8 processes of 30 s.
start_run 30.121 cancel.log
before=$(sleeps 30.121)
t0=$(date +%s%N)
"$runner" cancel "$id" > cancel.out 2> cancel.err
crc=$?
wait_exit "$pid"
rrc=$rc
ms=$((($(date +%s%N) - t0) / 1000000))
after=$(sleeps 30.121)
echo "cancel: $before processes before, $after after; cancel exit $crc, run exit $rrc, ${ms} ms"
[ "$before" -eq 8 ] && ok || fail "8 processes should run before the cancel ($before)"
[ "$crc" -eq 0 ] && ok || fail "cancel exits $crc: $(cat cancel.err)"
[ "$rrc" = 5 ] && ok || fail "the cancelled run should exit 5 (cancelled), not $rrc"
[ "$after" -eq 0 ] && ok || fail "$after processes of the cancelled run are left running"
[ "$ms" -lt 5000 ] && ok || fail "the cancel took $ms ms"
grep -q "handing it the cancel" cancel.err && ok || fail "the cancel does not say it asked: $(cat cancel.err)"
[ "$("$runner" status "$id" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')" = cancelled ] \
  && ok || fail "the run is not stored cancelled"

# 2. send while `run` waits for its processes: the answer is handed to it, delivered at its next
# turn, and answered once stored; a refused answer is refused (65) and changes nothing.
start_run 2.5 send.log
# Written beside and renamed over, as an editor saves: the live run reads the file whenever an
# item settles, and a `>` truncates it first (a run that read it empty in that instant ended
# `error`, under load).
python3 -c "import json; print(json.dumps([{'id': 't%02d' % i} for i in range(10)]))" > tasks.json.new
mv tasks.json.new tasks.json
"$runner" send "$id" source nope > /dev/null 2> bad.err
bad=$?
"$runner" send "$id" source more > /dev/null 2> send.err
src=$?
wait_exit "$pid"
settled=$("$runner" status "$id" --json 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["output"]["items"]))')
echo "send: refused answer exit $bad, answer exit $src, run exit $rc, $settled settled"
[ "$bad" -eq 65 ] && grep -q "takes more, not \`nope\`" bad.err && ok || fail "a refused answer: exit $bad, $(cat bad.err)"
[ "$src" -eq 3 ] && grep -q "took the answer" send.err && ok || fail "the answer handed over: exit $src, $(cat send.err)"
[ "$rc" = 0 ] && [ "$settled" = 10 ] && ok || fail "the run should end done with 10 settled: exit $rc, $settled"
python3 -c "import json; print(json.dumps([{'id': 't%02d' % i} for i in range(8)]))" > tasks.json.new
mv tasks.json.new tasks.json

# 2b. Many clients at once: 12 sends and 2 cancels against one `run` that waits for processes.
# Each gets its own answer (3 for a send taken, 5 or 65 for one that came after the cancel, 0
# for the cancel that cancelled, 65 for the one after it), none fails on the store being busy,
# and the inbox is left empty.
start_run 30.124 many.log
for i in $(seq 1 12); do "$runner" send "$id" source more > /dev/null 2> "many.send.$i.err" & done
sleep 0.5
for i in 1 2; do "$runner" cancel "$id" > /dev/null 2> "many.cancel.$i.err" & done
wait_exit "$pid"
wait
busy=$(cat many.*.err | grep -c "busy" || true)
hung=$(pgrep -c -f "$runner (send|cancel) $id" || true)
left=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from requests').fetchone()[0])" "$JR2_STORE")
after=$(sleeps 30.124)
echo "12 sends and 2 cancels at once: run exit $rc, busy errors $busy, clients left $hung, inbox rows left $left, processes left $after"
[ "$rc" = 5 ] && ok || fail "the run should end cancelled (5), not $rc"
[ "$busy" -eq 0 ] && ok || fail "$busy clients failed on a busy store: $(cat many.*.err | grep busy | head -2)"
[ "$left" -eq 0 ] && ok || fail "$left requests left in the inbox"
[ "$after" -eq 0 ] && ok || fail "$after processes left"

# 3. and 4. SIGTERM and SIGINT while `run` waits for 8 processes.
for sig in TERM INT; do
  nap=30.122
  [ "$sig" = INT ] && nap=30.123
  start_run "$nap" "$sig.log"
  before=$(sleeps "$nap")
  kill -"$sig" "$pid"
  wait_exit "$pid"
  sleep 0.2
  after=$(sleeps "$nap")
  want=143
  [ "$sig" = INT ] && want=130
  # `status` before the resume says the processes were out and how the run goes on (#30: it
  # listed the items as live and said nothing more).
  "$runner" status "$id" > /dev/null 2> "$sig.status.err"
  grep -q "8 effects were out when the run was last stored" "$sig.status.err" \
    && grep -q "run --resume $id\` takes the run up again" "$sig.status.err" && ok \
    || fail "SIG$sig: status does not say the processes were out: $(cat "$sig.status.err")"
  "$runner" run --resume "$id" --json > "$sig.json" 2> "$sig.resume.err"
  counts=$(python3 - "$sig.json" "$sig.log" <<'PY'
import collections, json, sys
out = json.load(open(sys.argv[1]))["output"]
ran = collections.Counter(l.strip() for l in open(sys.argv[2]) if l.strip())
interrupted = [i for i, f in out["failures"].items() if f["reason"].startswith("interrupted")]
print(len(interrupted), len(out["items"]), max(ran.values()) if ran else 0)
PY
)
  read -r interrupted settled most <<< "$counts"
  echo "SIG$sig: $before processes before, $after after; exit $rc; resumed: $interrupted interrupted, $settled settled, most runs of one item $most"
  [ "$rc" = "$want" ] && ok || fail "SIG$sig: exit $rc, not $want"
  [ "$after" -eq 0 ] && ok || fail "SIG$sig: $after processes left running"
  grep -q "stopped by SIG$sig" "$sig.log.err" && grep -q "run --resume $id" "$sig.log.err" \
    && ok || fail "SIG$sig: the stop is not told: $(tail -1 "$sig.log.err")"
  [ "$interrupted" -eq 8 ] && [ "$most" -eq 1 ] && ok \
    || fail "SIG$sig: $interrupted of 8 interrupted, an item ran $most times"
done

# 5. A timer fires on time while a process is out: the 1 s deadline beside a 3 s process ends
# the run at 1 s (not when the process would have ended), and the process is killed.
napper="$(dirname "$runner")/conformance_nap_process"
t0=$(date +%s%N)
"$napper" run > nap.out 2> nap.err
nrc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
left=$(sleeps 3.127)
echo "a 1 s deadline beside a 3 s process: exit $nrc after $ms ms, $left processes left"
[ "$nrc" -eq 0 ] && [ "$ms" -ge 900 ] && [ "$ms" -lt 2500 ] && ok \
  || fail "the deadline did not fire on time: exit $nrc after $ms ms"
[ "$left" -eq 0 ] && ok || fail "the process cut short is left running"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
