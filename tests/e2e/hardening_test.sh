#!/usr/bin/env bash
# The runner and the store under abuse (issue 8): paths that move with the shell, a cancel that
# keeps what was done, runs that no longer fit the build, damaged rows, foreign files, planted
# symlinks, readers beside writers, text that would run or repaint when pasted, and a deadline
# that fired during a send. Each refusal is checked for its exit code and its message, and the
# store for what it kept.
# Usage: hardening_test.sh TICKETS_RUNNER DEADLINE_RUNNER JOBS_RUNNER SOURCE_DIR
set -u
tickets=$(realpath "$1")
deadline=$(realpath "$2")
jobs=$(realpath "$3")
src=$(realpath "$4")
passed=0
failed=0
source "$(dirname "$0")/lib.sh"
in_tmp_store
mkdir home
cp -r "$src/samples" home/
cd home || exit 1

first_waiting() { "$tickets" runs 2>/dev/null | grep waiting | tail -n 1 | cut -d' ' -f1; }
sql() { sqlite3 -batch "$JR2_STORE" "$@"; }

# Input and payloads are strict: unknown fields (with did-you-mean), numbers that are not whole or
# not in range, JSON that is too deep or too big. Each refused with 65, nothing stored.
expect "an unknown input field" 65 'has no field `backlog_fil`; did you mean `backlog_file`' -- \
  "$tickets" run --input '{"backlog_fil":"samples/backlog.json"}'
expect "a fractional int" 65 'jobs` must be a whole number.*not 1.5' -- "$jobs" run --input '{"jobs":1.5}'
expect "an int past 2^63" 65 'must be a whole number' -- "$jobs" run --input '{"jobs":9223372036854775808}'
expect "1e308" 65 'must be a whole number' -- "$jobs" run --input '{"jobs":1e308}'
deep=$(printf '%*s' 60000 '' | tr ' ' '[')
expect "60,000 levels of nesting" 65 'nests deeper than 512 levels' -- "$tickets" run --input "$deep"
expect "input from /dev/zero" 65 'larger than 16 MiB' -- "$tickets" run --input @/dev/zero
expect "input from a directory" 65 'is a directory' -- "$tickets" run --input @/tmp
expect "input that is not UTF-8" 65 'is not UTF-8' -- "$tickets" run --input $'{"backlog_file":"\xff"}'
if [ ! -e "$JR2_STORE" ]; then ok; else fail "a refused input created the store"; fi

# A run's paths resolve against its home, not the shell's directory.
expect "run from its home" 3 'waiting at 3 Gates' -- "$tickets" run
run=$(first_waiting)
cd / || exit 1
expect "a send from another directory reads the same backlog" 3 'T-1 settled' -- \
  "$tickets" send "$run" T-1.review approve
expect "a payload with a field its event lacks" 65 'has no field `reasn`; did you mean `reason`' -- \
  "$tickets" send "$run" T-2.review reject '{"reasn":"typo"}'
expect "a wake payload is checked too" 65 'has no field `x`' -- "$tickets" send "$run" source tickets_changed '{"x":1}'
expect "status of a waiting Pool shows what it has done" 3 \
  'so far: 1 settled, 0 failed, 1 live \(T-2\)' -- "$tickets" status "$run"
expect "status --json carries it" 3 '"live": \[' -- "$tickets" status "$run" --json
cd "$tmp/home" || exit 1

# Every verb that prints takes --json.
expect "runs --json" 0 '"status": "waiting"' -- "$tickets" runs --json
expect "gates --json" 0 '"gate": "T-2.review"' -- "$tickets" gates --json
expect "gates RUN --json names the run" 0 "\"runId\": \"$run\"" -- "$tickets" gates "$run" --json
expect "log shows the feed" 0 'T-1 settled' -- "$tickets" log "$run"
expect "log --json" 0 '"line": "T-1 started"' -- "$tickets" log "$run" --json
expect "--all goes with runs only" 64 '`--all` goes with `runs`' -- "$tickets" gates --all

# A cancel keeps what was done, exits 0; the cancelled run reports 5.
expect "cancel exits 0" 0 'was cancelled; what it had done is kept: 1 settled' -- "$tickets" cancel "$run"
expect "a cancelled run is 5" 5 'was cancelled' -- "$tickets" status "$run"
expect "its output keeps T-1" 5 '"T-1": \{' -- "$tickets" status "$run" --json
expect "log records the cancel" 0 'cancelled' -- "$tickets" log "$run"

# A run whose snapshot no longer fits the build ends `drifted`; the others keep working. What a
# new build finds: a snapshot its machine does not have, under a view another build saved (reads
# trust a view only from the build that saved it, and restore the run once otherwise).
"$tickets" run > /dev/null 2>&1
drift=$(first_waiting)
"$tickets" run > /dev/null 2>&1
other=$(first_waiting)
sql "UPDATE runs SET snapshot = replace(snapshot, '\"active\":[\"review\"]', '\"active\":[\"working\"]'), view = json_set(view, '$.build', 'another build') WHERE id = '$drift'"
expect "a drifted run is an error that says why" 4 'no longer fits this build.*working' -- \
  "$tickets" status "$drift"
expect "runs lists it drifted" 0 "$drift  drifted" -- "$tickets" runs --all
expect "send to it says the same" 4 'marked `drifted`' -- "$tickets" send "$drift" T-1.review approve
expect "another run still works" 3 'T-1 settled' -- "$tickets" send "$other" T-1.review approve
expect "gates lists the others" 0 "$other  T-2.review" -- "$tickets" gates

# A damaged row names its run and breaks nothing else.
sql "INSERT INTO runs (id, workflow, status, updated, snapshot, rev) VALUES ('dead00000001', 'tickets', 'waiting', 1, 'not json', 1)"
expect "status of a damaged run" 65 'dead00000001.*damaged' -- "$tickets" status dead0000
expect "runs still lists every run" 0 'dead00000001' -- "$tickets" runs
expect "gates names the damaged run and lists the others" 4 "dead00000001.*damaged" -- "$tickets" gates
out=$("$tickets" gates 2>/dev/null)
if grep -q "$other  T-2.review" <<<"$out"; then ok; else fail "gates lost the other runs beside a damaged one"; fi

# An ambiguous prefix lists what it could mean.
sql "INSERT INTO runs (id, workflow, status, updated, snapshot, rev) VALUES ('abcd00000001', 'tickets', 'done', 1, '{}', 1), ('abcd00000002', 'tickets', 'done', 2, '{}', 1)"
expect "an ambiguous prefix lists the runs" 65 'abcd00000001.*abcd00000002' -- "$tickets" status abcd

# The store file is ours or refused, byte for byte unchanged; read-only verbs create nothing.
sqlite3 -batch "$tmp/foreign.db" "CREATE TABLE notes (x TEXT); INSERT INTO notes VALUES ('mine');"
before=$(md5sum < "$tmp/foreign.db")
for verb in "runs" "gates" "run" "status abcd"; do
  # shellcheck disable=SC2086
  expect "$verb on a foreign SQLite file" 65 'not a jr2 run store' -- "$tickets" $verb --store "$tmp/foreign.db"
done
if [ "$(md5sum < "$tmp/foreign.db")" = "$before" ] && [ ! -e "$tmp/foreign.db-wal" ] &&
  [ ! -e "$tmp/foreign.db.locks" ]; then ok; else fail "the foreign file was changed"; fi
expect "runs on a mistyped path" 0 'no waiting runs' -- "$tickets" runs --store "$tmp/typo.db"
expect "status on a mistyped path" 65 'no run store' -- "$tickets" status abcd --store "$tmp/typo.db"
expect "gates on a mistyped path" 0 'nothing needs a person' -- "$tickets" gates --store "$tmp/typo.db"
if [ ! -e "$tmp/typo.db" ] && [ ! -e "$tmp/typo.db.locks" ]; then ok; else fail "a read-only verb created a store"; fi

# A writer never fails beside a reader: a read transaction held open for 3 s.
(printf 'BEGIN;\nSELECT count(*) FROM runs;\n'; sleep 3; printf 'COMMIT;\n') | sqlite3 -batch "$JR2_STORE" > /dev/null &
reader=$!
sleep 0.3
expect "a send while another process reads" 3 'T-2 settled' -- "$tickets" send "$other" T-2.review reject '{"reason":"No."}'
wait "$reader"

# Lock files: none left behind; a planted symlink is refused and its target never created.
left=$(find "$JR2_STORE.locks" -type f 2>/dev/null | wc -l)
if [ "$left" -eq 0 ]; then ok; else fail "$left lock files left behind"; fi
echo "lock files left: $left"
ln -s "$tmp/target" "$JR2_STORE.locks/$other"
expect "a symlinked lock is refused" 65 'symbolic link' -- "$tickets" send "$other" T-3.review approve
if [ ! -e "$tmp/target" ]; then ok; else fail "the symlink's target was created"; fi
rm "$JR2_STORE.locks/$other"

# Text printed for copying is shell-safe, and control characters never reach the terminal raw.
cat > evil.json <<'EOF'
[
  { "id": "$(touch pwned)", "title": "sub" },
  { "id": "a\nb", "title": "nl" },
  { "id": "x\u001b[31my", "title": "\u001b]0;title\u0007" }
]
EOF
cat > cap3.json <<'EOF'
{ "backlog_file": "evil.json" }
EOF
"$tickets" run --input @cap3.json > "$tmp/evil.out" 2>&1
evil=$(first_waiting)
if grep -q $'\x1b' "$tmp/evil.out"; then fail "an escape character reached the terminal"; else ok; fi
# The printed commands call the runner by the path it was run by (it is not on PATH here).
if grep -qF "$tickets send $evil '\$(touch pwned).review' approve" "$tmp/evil.out"; then ok; else
  fail "the \$(…) id is not single-quoted"; grep 'send' "$tmp/evil.out" | head -3
fi
pasted=0
while IFS= read -r line; do
  bash -c "$line" > /dev/null 2>&1
  pasted=$((pasted + 1))
done < <(grep -F "$tickets send $evil " "$tmp/evil.out" | grep -E " approve$")
if [ ! -e pwned ] && [ ! -e "$tmp/pwned" ]; then ok; else fail "a pasted command ran \$(touch pwned)"; fi
echo "pasted commands: $pasted"
left=$("$tickets" gates "$evil" 2>/dev/null | grep -c 'review')
if [ "$pasted" -eq 2 ] && [ "$left" -eq 1 ]; then ok; else
  fail "pasting the 2 printed approve lines settled $((3 - left)) of the 3 items, wanted 2"
fi

# A backlog is read strictly: a misspelled `needs` fails that item, with did-you-mean, instead of
# starting it before what it needs.
printf '%s\n' '[' '  { "id": "T-1", "title": "first" },' \
  '  { "id": "T-3", "title": "needs T-1", "neds": ["T-1"] }' ']' > typo.json
expect "a misspelled backlog field fails its item" 3 \
  'T-3 failed: the item does not fit the worker: .*has no field `neds`; did you mean `needs`' -- \
  "$tickets" run --input '{"backlog_file":"typo.json"}'

# A Gate whose name starts with `-`: the printed command says `--`, and pasting it works. A C1
# control in a title never reaches the terminal raw.
printf '%s\n' '[ { "id": "-rf --json", "title": "\u009b2J C1 in a title" } ]' > dash.json
"$tickets" run --input '{"backlog_file":"dash.json"}' > "$tmp/dash.out" 2>&1
dash=$(first_waiting)
if grep -q $'\xc2\x9b' "$tmp/dash.out"; then fail "a C1 control reached the terminal raw"; else ok; fi
line=$(grep -F "$tickets send $dash -- '-rf --json.review' approve" "$tmp/dash.out")
if [ -n "$line" ]; then ok; else fail "no -- before a Gate that starts with -"; grep send "$tmp/dash.out" | head -2; fi
bash -c "$line" > /dev/null 2>&1
expect "the pasted command answered it" 0 'ended done' -- "$tickets" status "$dash"

# Called by its name through PATH, the printed commands call it by its name (#30).
PATH="$(dirname "$tickets"):$PATH" tickets status "$evil" > "$tmp/named.out" 2>&1
if grep -qE "^ +tickets send $evil " "$tmp/named.out"; then ok; else
  fail "called by its name, the printed commands do not use it"; grep send "$tmp/named.out" | head -2
fi
# Text in an error is never raw either: a field name with ESC and a newline in a payload.
out=$("$tickets" send "$evil" "$(printf 'x\033[31my.review')" reject \
  '{"reason":"r","\u001b]0;pwned\u0007\nforged":1}' 2>&1)
if grep -q $'\x1b' <<<"$out" || [ "$(wc -l <<<"$out")" -ne 1 ]; then
  fail "an error printed a raw escape or an extra line"; cat -v <<<"$out" | head -3
else ok; fi

# A snapshot that is JSON but not a run's is damaged by name, and gates goes on past it.
sql "INSERT INTO runs (id, workflow, status, updated, snapshot, rev) VALUES ('f42f42f42f42', 'tickets', 'waiting', 2, '42', 1)"
expect "a snapshot that is a number" 65 'f42f42f42f42.*is damaged: its stored snapshot is not a run' -- \
  "$tickets" status f42f
out=$("$tickets" gates --json 2>/dev/null)
if grep -q "\"runId\": \"$evil\"" <<<"$out"; then ok; else fail "gates --json stopped at a damaged row"; fi

# Flags on the wrong verb, --help anywhere.
expect "--input on cancel" 64 '`--input` goes with `run`' -- "$tickets" cancel "$evil" --input '{}'
expect "--input twice" 64 'given twice' -- "$tickets" run --input '{}' --input '{}'
expect "runs --help" 0 'usage: tickets' -- "$tickets" runs --help

# Verbs that need a run never create a store; a store reached through a symlink locks the same
# files as its real path.
expect "send on a missing store" 65 'no run store' -- "$tickets" send abcd x y --store "$tmp/none.db"
expect "cancel on a missing store" 65 'no run store' -- "$tickets" cancel abcd --store "$tmp/none.db"
if [ ! -e "$tmp/none.db" ]; then ok; else fail "a refused send created a store"; fi
ln -s "$JR2_STORE" "$tmp/link.db"
expect "a send through a symlinked store path" 3 'waiting' -- \
  "$tickets" send "$evil" source tickets_changed --store "$tmp/link.db"
if [ ! -e "$tmp/link.db.locks" ]; then ok; else fail "a symlinked store path got a lock folder of its own"; fi

# A deadline that fired during this very send is named.
expect "deadline run waits" 3 'waiting at 1 Gate' -- "$deadline" run
drun=$("$deadline" runs | cut -d' ' -f1 | head -n 1)
sleep 1.2
expect "a send after the deadline says it fired" 65 \
  'the deadline `after 1 s` in `approval` fired before this answer; the run ended `done`' -- \
  "$deadline" send "$drun" approval finish
expect "and the run is stored done" 0 'ended done' -- "$deadline" status "$drun"
expect "log of another workflow's run" 65 'is a run of `conformance_deadline`' -- "$tickets" log "$drun"

# prune deletes ended runs and their feeds; waiting runs stay.
expect "prune needs a duration" 64 'needs --ended-before' -- "$tickets" prune
expect "prune refuses a bad duration" 64 'takes a duration' -- "$tickets" prune --ended-before soon
# A duration as a `.jr2` file writes one, and nothing else: `90min` says what to write.
expect "prune refuses 90min with the literal to write" 64 'write `90m`' -- "$tickets" prune --ended-before 90min
expect "and 2w" 64 'write `14d`' -- "$tickets" prune --ended-before 2w
expect "a misspelled verb" 64 'unknown verb `sned`; did you mean `send`?' -- "$tickets" sned
expect "a misspelled option" 64 'unknown option `--inptu`; did you mean `--input`?' -- "$tickets" run --inptu '{}'
expect "prune ended runs" 0 'pruned [1-9][0-9]* runs' -- "$tickets" prune --ended-before 0s
expect "runs --all keeps the waiting ones" 0 "$evil" -- "$tickets" runs --all
if "$tickets" runs --all 2>/dev/null | grep -q "$run"; then fail "the cancelled run was not pruned"; else ok; fi
if [ "$(sql "SELECT count(*) FROM feed WHERE run = '$run'")" = 0 ]; then ok; else fail "its feed was kept"; fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
