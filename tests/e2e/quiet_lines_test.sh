#!/usr/bin/env bash
# Where nobody watches (stderr not a terminal: CI, a log file), a Pool's item lines are bounded
# (#33): the first 20 `started`/`settled` lines as they come, then a line of counts at most once
# a second, and at the end how many were not printed and the `log` that prints them all — which
# does, every one. On a terminal every line is printed (the live line; not tested here).
# Usage: quiet_lines_test.sh RUNNER   (conformance_instant: a backlog file, workers that finish
# at once)
set -u
lib="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
runner=$(realpath "$1")
. "$lib"
in_tmp_store
passed=0
failed=0

python3 -c "import json; print(json.dumps([{'id': 'q%04d' % i} for i in range(600)]))" > tasks.json
"$runner" run --input '{"tasks": "tasks.json", "jobs": 8}' > out.json 2> err.txt
rc=$?
[ "$rc" -eq 0 ] && ok "a run of 600 items ends done" || fail "exit $rc: $(tail -3 err.txt)"
items=$(grep -cE ': q[0-9]{4} (started|settled)$' err.txt)
total=$(wc -l < err.txt)
echo "stderr: $total lines, $items of them item lines, for 600 items (1,200 item lines)"
[ "$items" -eq 20 ] && ok "the first 20 item lines are printed" || fail "$items item lines"
[ "$total" -le 30 ] && ok "stderr stays short ($total lines)" || fail "$total lines on stderr"
grep -q '600 settled, 0 failed; 1180 item lines were counted, not printed' err.txt \
  && ok "the end says how many were not printed" || fail "no count at the end: $(tail -2 err.txt)"
id=$(python3 -c 'import json,sys; print(json.load(open("out.json"))["runId"])' 2>/dev/null \
  || sed -n 's/.* log \([0-9a-f]\{12\}\)` prints them all$/\1/p' err.txt | tail -1)
grep -q "\`$runner log $id\` prints them all\|log $id\` prints them all" err.txt \
  && ok "it names the log that has them" || fail "no \`log $id\` named"
"$runner" log "$id" > log.txt 2>&1
logged=$(grep -cE 'q[0-9]{4} (started|settled)$' log.txt)
[ "$logged" -eq 1200 ] && ok "\`log\` prints all 1,200 item lines" || fail "\`log\` printed $logged"
# A run of fewer items prints every line, as before.
python3 -c "import json; print(json.dumps([{'id': 's%02d' % i} for i in range(5)]))" > small.json
"$runner" run --input '{"tasks": "small.json"}' > /dev/null 2> small.txt
small=$(grep -cE ': s[0-9]{2} (started|settled)$' small.txt)
[ "$small" -eq 10 ] && ! grep -q 'not printed' small.txt && ok "5 items: all 10 lines, no note" \
  || fail "5 items: $small lines"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
