#!/usr/bin/env bash
# SIGKILL during one big turn (#33): a Pool of ITEMS items whose workers finish at once settles
# them all in one turn, stored by one commit of ITEMS journal entries and 2 × ITEMS feed lines
# (rows of many, written as the text the Pool made). `run` is SIGKILLed at random instants,
# ROUNDS times, into one store that keeps the runs of the rounds before. What must hold, and is
# counted:
#   - the store opens after every kill, and lists its runs;
#   - a run is stored whole or not at all: each stored run is `done`, its output has every item,
#     and its feed (`log`) has every item's `started` and `settled` line, once each;
#   - nothing of a killed run is half there: no `waiting` run, no damaged one.
# Usage: big_turn_kill_test.sh RUNNER [ITEMS] [ROUNDS]   (conformance_instant)
set -u
lib="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
runner=$(realpath "$1")
items=${2:-20000}
rounds=${3:-30}
. "$lib"
in_tmp_store
passed=0
failed=0

python3 -c "import json; print(json.dumps([{'id': 'b%05d' % i} for i in range($items)]))" \
  > tasks.json
input='{"tasks": "tasks.json", "jobs": 8}'

# How long one run takes here (the quickest of three, the first making the store), so that the
# kills land before, during and after its commit.
took_ms=
for _ in 1 2 3; do
  start=$(date +%s%N)
  "$runner" run --input "$input" > /dev/null 2>&1 || fail "a run that nobody kills fails"
  ms=$((($(date +%s%N) - start) / 1000000))
  if [ -z "$took_ms" ] || [ "$ms" -lt "$took_ms" ]; then took_ms=$ms; fi
done
echo "one run of $items items: $took_ms ms"

killed=0
finished=0
for _ in $(seq "$rounds"); do
  "$runner" run --input "$input" > /dev/null 2>&1 &
  pid=$!
  # Anywhere from the process's start to its usual end. Drawn by the shell: a Python started
  # for it (through pyenv's shim, 300-500 ms on these machines) took longer than a run whose
  # commit got quicker, and every kill landed after the end.
  ms=$((5 + RANDOM % (took_ms > 5 ? took_ms - 5 : 1)))
  sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
  if kill -9 "$pid" 2>/dev/null; then killed=$((killed + 1)); else finished=$((finished + 1)); fi
  wait "$pid" 2>/dev/null
  if ! "$runner" runs --all --json > runs.json 2> runs_err.txt; then
    fail "the store does not open after a kill: $(head -2 runs_err.txt)"
    break
  fi
done

# Every stored run, judged whole.
python3 - "$runner" "$items" "$rounds" "$killed" "$finished" <<'EOF' > judged.txt
import json, subprocess, sys
runner, items, rounds, killed, finished = sys.argv[1], int(sys.argv[2]), *map(int, sys.argv[3:])
runs = json.load(open("runs.json"))
whole = partial = 0
for r in runs:
    rid = r["runId"]
    ok = r.get("status") == "done"
    out = subprocess.run([runner, "status", rid, "--json"], capture_output=True, text=True)
    try:
        status = json.loads(out.stdout)
        output = status.get("output") or {}
        ok = ok and len(output.get("items", {})) == items and not output.get("failures")
    except ValueError:
        ok = False
    log = subprocess.run([runner, "log", rid], capture_output=True, text=True).stdout.splitlines()
    started = sum(1 for l in log if l.endswith(" started"))
    settled = sum(1 for l in log if l.endswith(" settled"))
    ok = ok and started == items and settled == items
    if ok:
        whole += 1
    else:
        partial += 1
        print(f"PARTIAL {rid}: status {r.get('status')}, {started} started, {settled} settled")
# The three first runs (nobody killed them) are among them.
print(f"{rounds} rounds: {killed} killed, {finished} ended before the kill; "
      f"{len(runs)} runs stored ({len(runs) - 3} of the rounds'), {whole} whole, {partial} partial; "
      f"{rounds - (len(runs) - 3)} killed before their commit left nothing")
print(f"COUNTS {len(runs)} {whole} {partial}")
EOF
cat judged.txt
read -r _ stored whole partial < <(grep '^COUNTS' judged.txt)
[ "${partial:-1}" -eq 0 ] && ok || fail "$partial runs stored in part"
[ "${stored:-0}" -ge $((finished + 3)) ] && ok \
  || fail "$stored runs stored, fewer than the $finished that ended and the first three"
[ "${whole:-0}" -eq "${stored:-0}" ] && ok || fail "$whole of $stored runs whole"
[ "$killed" -gt 0 ] && ok || fail "no round was killed: the kills land too late"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
