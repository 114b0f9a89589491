#!/usr/bin/env bash
# The kill torture (#10): a Pool of TASKS items, cap 8, whose workers each run one process
# (`std.command`) that appends its item id to a log. `run`, `run --resume` and `send RUN source
# more` are SIGKILLed at random instants, up to KILLS times, then `run --resume` finishes the run.
# What must hold, and is counted:
#   - every item is in the output exactly once, settled or failed;
#   - no process ran twice for one item (the log has each id at most once);
#   - each failed item is `interrupted` (its process was cut off by a kill), and a settled item's
#     process ran exactly once;
#   - a `run` killed after its first save is listed by `runs`.
# Usage: torture_test.sh RUNNER [TASKS] [KILLS]
set -u
runner=$(realpath "$1")
tasks=${2:-5000}
kills=${3:-100}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() { echo "FAIL $*"; failed=$((failed + 1)); }

python3 -c "import json; print(json.dumps([{'id': 't%05d' % i} for i in range($tasks)]))" > tasks.json
input="{\"tasks\":\"tasks.json\",\"log\":\"$tmp/log.txt\"}"
export JR2_STORE="$tmp/store.db"
touch log.txt

# Runs "$@" in the background and SIGKILLs it after a random 10–110 ms (or lets it end first).
killed=0
kill_after_random() {
  "$@" > /dev/null 2>&1 &
  local pid=$!
  sleep "0.$(printf "%03d" $((10 + RANDOM % 100)))"
  if kill -9 "$pid" 2>/dev/null; then killed=$((killed + 1)); fi
  wait "$pid" 2>/dev/null
}

run_id() { "$runner" runs --all --json 2>/dev/null | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r[0]["runId"] if r else "")'; }

# The first `run`, killed once it has saved: it must be listed.
"$runner" run --input "$input" > /dev/null 2>&1 &
pid=$!
id=""
for _ in $(seq 1 100); do
  id=$(run_id)
  [ -n "$id" ] && break
  sleep 0.02
done
kill -9 "$pid" 2>/dev/null && killed=$((killed + 1))
wait "$pid" 2>/dev/null
if [ -n "$id" ] && "$runner" runs --all | grep -q "$id"; then pass; else fail "a killed run is not listed by runs"; fi

started=$(date +%s)
attempts=0
verbs_run=0
verbs_send=0
while [ "$attempts" -lt "$kills" ] && [ $(($(date +%s) - started)) -lt 120 ]; do
  status=$("$runner" status "$id" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])' 2>/dev/null)
  [ "$status" = "waiting" ] || break
  attempts=$((attempts + 1))
  if [ $((RANDOM % 3)) -eq 0 ]; then
    verbs_send=$((verbs_send + 1))
    kill_after_random "$runner" send "$id" source more
  else
    verbs_run=$((verbs_run + 1))
    kill_after_random "$runner" run --resume "$id"
  fi
done

# Finish: resume until the run ends (a resume that finds it ended is refused, 65).
# Each finishing resume counts what it had live at once (`--peak`): never more than the 8 workers
# and 8 processes `jr2c check` works out for the Pool (cap: min(input.jobs, 8)), however many
# kills came before.
for _ in 1 2 3; do
  "$runner" run --resume "$id" --peak > /dev/null 2> resume.err
  rc=$?
  grep '^peak:' resume.err >> peaks.txt
  [ "$rc" -ne 3 ] && break
done
cat peaks.txt
python3 - <<'EOF' && pass || fail "a finishing resume had more live at once than jr2c's figures"
import re
lines = open("peaks.txt").read().splitlines()
assert lines, "no peak line"
for line in lines:
    for kind, n, of in re.findall(r"(workers|processes|runs) (\d+) of (\d+|unbounded)", line):
        assert of != "unbounded", line
        assert int(n) <= int(of), line
EOF
"$runner" status "$id" --json > final.json 2> status.err
python3 - "$tasks" "$killed" "$attempts" "$verbs_run" "$verbs_send" <<'EOF' > counts.txt
import collections, json, sys
tasks, killed, attempts, verbs_run, verbs_send = map(int, sys.argv[1:])
final = json.load(open("final.json"))
out = final.get("output") or {}
items = out.get("items", {})
failures = out.get("failures", {})
ran = collections.Counter(l.strip() for l in open("log.txt") if l.strip())
ids = ["t%05d" % i for i in range(tasks)]
both = [i for i in ids if i in items and i in failures]
lost = [i for i in ids if i not in items and i not in failures]
twice = [i for i in ids if ran[i] > 1]
not_interrupted = [i for i in failures if not failures[i]["reason"].startswith("interrupted")]
settled_not_once = [i for i in items if ran[i] != 1]
cut_ran = sum(1 for i in failures if ran[i] == 1)
print(f"status={final['status']} kills={killed} attempts={attempts} (run --resume {verbs_run}, send {verbs_send})")
print(f"items={tasks} settled={len(items)} interrupted={len(failures)} (of which the process had run: {cut_ran}, had not: {len(failures) - cut_ran})")
print(f"lost={len(lost)} in-both={len(both)} ran-twice={len(twice)} failed-not-interrupted={len(not_interrupted)} settled-not-run-once={len(settled_not_once)}")
ok = (final["status"] == "done" and not lost and not both and not twice and not not_interrupted
      and not settled_not_once)
print("OK" if ok else "BAD: " + json.dumps({"lost": lost[:5], "twice": twice[:5],
      "not_interrupted": not_interrupted[:5], "settled_not_once": settled_not_once[:5]}))
EOF
cat counts.txt
if grep -q '^OK$' counts.txt; then pass; else fail "the torture's counts"; cat resume.err status.err | head -5; fi

# The tortured run replays (docs/runtime.md#replay): its trace, through the restores the kills
# made, driven again with every process answered from the trace — the same in every turn, the
# same end, and not one process run (the log does not grow). Timed: the figure is <= 2 s for a
# 5,000-item trace (printed, not asserted here; bench/ holds figures).
"$runner" export "$id" > trace.jsonl 2> export.err || fail "export of the tortured run: $(head -c 300 export.err)"
logged=$(wc -l < log.txt)
restores=$(grep -c '"restored":true' trace.jsonl)
t0=$(date +%s%N)
"$runner" replay trace.jsonl --json > replay.json 2> replay.err
rc=$?
t1=$(date +%s%N)
python3 - "$rc" "$logged" "$(wc -l < log.txt)" "$restores" "$(( (t1 - t0) / 1000000 ))" <<'EOF2' && pass || fail "the tortured run's replay"
import json, sys
rc, logged, now, restores, ms = map(int, sys.argv[1:])
r = json.load(open("replay.json"))
print(f"replay: exit={rc} identical={r['identical']} turns={r['turns']} inputs={r['inputs']} "
      f"restores={restores} held={r['held']} processes-run={now - logged} ms={ms}")
if not r["identical"]:
    print("  " + r["divergence"]["message"][:600])
assert rc == 0 and r["identical"] and now == logged and r["effectsRun"] == 0
EOF2
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
