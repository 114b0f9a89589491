#!/usr/bin/env bash
# No process a run starts outlives its host (#30), through the real runners: each `std.command`
# is its own process group, a guard process kills the groups of a host that is gone (SIGKILL
# included), SIGHUP and SIGPIPE stop a runner as SIGTERM does, and a command is over when its
# process ends (what it left in the background dies then, by its timeout, or by a cancel).
# Every case counts the processes left, with their children's children.
# Usage: orphans_test.sh RUNNER_DIR   (the folder of conformance_torture and conformance_shell)
set -u
lib="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
dir=$(realpath "$1")
torture="$dir/conformance_torture"
shell="$dir/conformance_shell"
tmp=$(mktemp -d)
trap 'pkill -KILL -f "^sleep 30\.14[0-9]$" 2>/dev/null; rm -rf "$tmp"' EXIT
. "$lib"  # ok, fail, sleeps, wait_exit
cd "$tmp" || exit 1
passed=0
failed=0
export JR2_STORE="$tmp/store.db"

python3 -c "import json; print(json.dumps([{'id': 't%02d' % i} for i in range(8)]))" > tasks.json

# Waits up to 5 s for no `sleep NAP` to be left; echoes how many are.
settle() {
  local n
  for _ in $(seq 1 100); do
    n=$(sleeps "$1")
    [ "$n" -eq 0 ] && break
    sleep 0.05
  done
  echo "$n"
}

# A torture run of 8 items, each `sh -c "…; sleep NAP"` (sh and its child sleep), in the
# background; waits until the 8 sleeps run. Sets pid and id.
start_run() {
  local nap=$1 log=$2
  : > "$log"
  "$torture" run --input "{\"tasks\":\"tasks.json\",\"log\":\"$tmp/$log\",\"nap\":\"$nap\"}" \
    > "$log.out" 2> "$log.err" &
  pid=$!
  for _ in $(seq 1 200); do
    [ "$(sleeps "$nap")" -ge 8 ] && break
    sleep 0.05
  done
  id=$("$torture" runs --json 2>/dev/null | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r[-1]["runId"] if r else "")')
}

# 1. SIGKILL: the runner runs no code, and its guard kills the 8 groups.
start_run 30.141 kill.log
before=$(sleeps 30.141)
guard=$(pgrep -P "$pid" -x jr2-guard | head -1)
kill -KILL "$pid"
wait_exit "$pid"
after=$(settle 30.141)
guard_left=0
if [ -n "$guard" ]; then
  for _ in $(seq 1 100); do kill -0 "$guard" 2>/dev/null || break; sleep 0.05; done
  kill -0 "$guard" 2>/dev/null && guard_left=1
fi
echo "SIGKILL of the runner: $before processes before, $after left after (guard ${guard:-none}, $guard_left left)"
[ "$before" -eq 8 ] && ok || fail "SIGKILL: 8 processes should run before the kill ($before)"
[ -n "$guard" ] && ok || fail "SIGKILL: the runner has no guard process"
[ "$after" -eq 0 ] && ok || fail "SIGKILL: $after of 8 processes outlived the runner"
[ "$guard_left" -eq 0 ] && ok || fail "SIGKILL: the guard is left running"
"$torture" run --resume "$id" --json > kill.json 2> kill.resume.err
interrupted=$(python3 -c 'import json,sys; o=json.load(open(sys.argv[1]))["output"]; print(sum(1 for f in o["failures"].values() if f["reason"].startswith("interrupted")))' kill.json 2>/dev/null || echo "?")
echo "SIGKILL: resumed with $interrupted of 8 interrupted"
[ "$interrupted" = 8 ] && ok || fail "SIGKILL: $interrupted of 8 read interrupted on resume: $(tail -2 kill.resume.err)"

# 2. and 3. SIGHUP (a closed terminal) and SIGPIPE (`| head` went away) stop it as SIGTERM does.
for sig in HUP PIPE; do
  nap=30.142
  [ "$sig" = PIPE ] && nap=30.143
  start_run "$nap" "$sig.log"
  before=$(sleeps "$nap")
  kill -"$sig" "$pid"
  wait_exit "$pid"
  after=$(settle "$nap")
  want=129
  [ "$sig" = PIPE ] && want=141
  echo "SIG$sig: $before processes before, $after left after; exit $rc"
  [ "$rc" = "$want" ] && ok || fail "SIG$sig: exit $rc, not $want: $(tail -1 "$sig.log.err")"
  [ "$after" -eq 0 ] && ok || fail "SIG$sig: $after processes left running"
  grep -q "stopped by SIG$sig" "$sig.log.err" && grep -q "run --resume $id" "$sig.log.err" \
    && ok || fail "SIG$sig: the stop is not told: $(tail -1 "$sig.log.err")"
done

# 4. A real `| head`: the runner's lines go to a reader that leaves after the first one.
: > head.log
"$torture" run --input "{\"tasks\":\"tasks.json\",\"log\":\"$tmp/head.log\",\"nap\":\"30.144\"}" 2>&1 \
  | head -1 > head.out &
for _ in $(seq 1 200); do
  [ "$(sleeps 30.144)" -ge 8 ] && break
  sleep 0.05
done
# The next line it writes (a cancel's) meets the closed pipe.
"$torture" cancel "$("$torture" runs --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["runId"])')" \
  > /dev/null 2>&1
wait
after=$(settle 30.144)
echo "| head -1: $after processes left after"
[ "$after" -eq 0 ] && ok || fail "| head: $after processes left running"

# 5. A command that starts a child in the background and ends: it is over when `sh` ends (not
# at its timeout), its output is kept, and the child dies with it.
t0=$(date +%s%N)
"$shell" run --input '{"script":"sleep 30.145 & echo started","timeout":20000}' --json \
  > bg.json 2> bg.err
brc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
after=$(settle 30.145)
said=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["output"].strip())' bg.json 2>/dev/null)
echo "sh -c \"sleep & echo started\": exit $brc after $ms ms, said '$said', $after left"
[ "$brc" -eq 0 ] && [ "$said" = started ] && ok || fail "background child: exit $brc, said '$said': $(cat bg.err)"
[ "$ms" -lt 5000 ] && ok || fail "background child: the command took $ms ms (reported as a timeout?)"
[ "$after" -eq 0 ] && ok || fail "background child: $after left running after the command ended"

# 6. A timeout kills the command's group, the children of its children too.
"$shell" run --input '{"script":"sh -c \"sleep 30.146\" & sleep 30.146; wait","timeout":500}' \
  > to.out 2> to.err
trc=$?
after=$(settle 30.146)
echo "timeout of a command with grandchildren: exit $trc, $after left"
[ "$trc" -eq 1 ] && grep -q "timed out after 500 ms" to.err && ok \
  || fail "timeout: exit $trc: $(tail -2 to.err)"
[ "$after" -eq 0 ] && ok || fail "timeout: $after left running"

# 7. A cancel from another command kills the group, the background children too.
"$shell" run --input '{"script":"sleep 30.147 & sh -c \"sleep 30.147\" & sleep 30.147"}' \
  > cancel.out 2> cancel.err &
pid=$!
for _ in $(seq 1 200); do
  [ "$(sleeps 30.147)" -ge 3 ] && break
  sleep 0.05
done
before=$(sleeps 30.147)
id=$("$shell" runs --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["runId"])')
"$shell" cancel "$id" > /dev/null 2>&1
wait_exit "$pid"
after=$(settle 30.147)
echo "cancel of a command with 3 processes: $before before, $after left; run exit $rc"
[ "$before" -eq 3 ] && ok || fail "cancel: 3 processes should run before the cancel ($before)"
[ "$rc" = 5 ] && ok || fail "cancel: the run exits $rc, not 5 (cancelled)"
[ "$after" -eq 0 ] && ok || fail "cancel: $after left running"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
