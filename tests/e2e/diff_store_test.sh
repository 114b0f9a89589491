#!/usr/bin/env bash
# `jr2c diff OLD NEW --store` (docs/diff.md) against a real store: the tickets runner leaves a run
# waiting at two reviews (T-1 and T-2, cap 2); a new tickets.jr2 renames the review's state, adds
# a parameter without a default, and changes the Pool's cap (compatible). diff counts the waiting
# runs each change strands, from the store's snapshots, and writes nothing to the store; a
# second workflow's runs are not counted against the first; bad stores are refused (exit 2).
# Usage: diff_store_test.sh JR2C TICKETS_RUNNER SOURCE_DIR
set -u
jr2c=$(realpath "$1")
tickets=$(realpath "$2")
src=$(realpath "$3")
passed=0
failed=0
source "$src/tests/e2e/lib.sh"
in_tmp_store
mkdir -p samples/tickets
cp "$src/samples/tickets/backlog.json" samples/tickets/
cp "$src/samples/tickets/tickets.jr2" old.jr2

"$tickets" run > /dev/null 2>&1
[ $? -eq 3 ] && ok || fail "tickets run waits at its Gates"
"$tickets" run > /dev/null 2>&1  # a second run: two waiting runs, four reviews
rows() { python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT id, rev, updated FROM runs ORDER BY id").fetchall())' "$JR2_STORE"; }
before=$(rows)

# NEW: `review`'s state renamed (`pending`), a Pool parameter without a default, cap 3.
sed -e 's/initial state review {/initial state pending {/' \
    -e 's|^pool ticket_pool(backlog_file: string = "samples/tickets/backlog.json")|pool ticket_pool(backlog_file: string = "samples/tickets/backlog.json", team: string)|' \
    -e 's/^  cap: 2$/  cap: 3/' old.jr2 > new.jr2
grep -q 'state pending' new.jr2 && grep -q 'team: string' new.jr2 || fail "the edit of tickets.jr2 did not apply"

out=$("$jr2c" diff old.jr2 new.jr2 --store "$JR2_STORE" 2>&1)
rc=$?
echo "$out" | grep -E 'error|note: [0-9]'
[ "$rc" -eq 100 ] && ok || fail "diff --store: exit $rc, wanted 100"
grep -q 'error\[D0703\]: state `review` of `review` is gone' <<<"$out" && ok || fail "the renamed state is D0703"
grep -q 'note: 2 of 2 waiting runs in the store are in `review`' <<<"$out" && ok ||
  fail "both waiting runs are counted in \`review\`"
grep -q 'error\[D0705\]: parameter `team` of `ticket_pool`' <<<"$out" && ok || fail "the new parameter is D0705"
grep -q 'note: 2 of 2 waiting runs in the store have pool `ticket_pool` live' <<<"$out" && ok ||
  fail "both waiting runs have the Pool live"
after=$(rows)
[ "$before" = "$after" ] && ok || fail "diff --store changed the store"

# The same as JSON and SARIF, as `check` gives them: each change with its code, the counts as
# notes; exit 100 either way.
"$jr2c" diff old.jr2 new.jr2 --store "$JR2_STORE" --diagnostics-format json > diff.json 2>/dev/null
[ $? -eq 100 ] && ok || fail "diff in JSON: exit 100"
python3 - diff.json <<'PY' && ok || fail "diff in JSON: D0703 and D0705 with their counts"
import json, sys
d = json.load(open(sys.argv[1]))
codes = sorted(x["code"] for x in d["diagnostics"])
assert codes == ["D0703", "D0705"], codes
notes = [n["message"] for x in d["diagnostics"] for n in x.get("notes", [])]
assert any("2 of 2 waiting runs in the store are in `review`" in n for n in notes), notes
PY
"$jr2c" diff old.jr2 new.jr2 --diagnostics-format sarif > diff.sarif 2>/dev/null
[ $? -eq 100 ] && ok || fail "diff in SARIF: exit 100"
python3 - diff.sarif <<'PY' && ok || fail "diff in SARIF: a run with the two rules"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["version"] == "2.1.0"
rules = sorted(r["ruleId"] for r in d["runs"][0]["results"])
assert rules == ["D0703", "D0705"], rules
PY

# Without --store: the same changes, no counts.
out=$("$jr2c" diff old.jr2 new.jr2 2>&1)
grep -q 'waiting runs in the store' <<<"$out" && fail "counts without --store" || ok

# A change that strands nothing stored: no run is in the removed state's place.
sed -e 's/^  final state decided$/  final state decided\n  state unused {}/' old.jr2 > grown.jr2
expect "a state added is compatible" 0 'no stored run is stranded' -- "$jr2c" diff old.jr2 grown.jr2 --store "$JR2_STORE"

# A change to a stored value's type counts the runs whose stored value no longer reads, not every
# run with the machine live: `Outcome.reason` made required strands a review that holds a
# rejection without a reason, but every waiting review holds no outcome yet (null fits `Outcome?`).
sed -e 's/^  reason: string?$/  reason: string/' \
    -e 's/outcome = { id: ticket.id, outcome: "approved" }/outcome = { id: ticket.id, outcome: "approved", reason: "" }/' \
    old.jr2 > reason.jr2
grep -q '^  reason: string$' reason.jr2 || fail "the edit of Outcome did not apply"
expect "a narrowed record type strands none of the stored values" 100 \
  'note: 0 of 2 waiting runs in the store have a `review` whose stored `outcome` does not read as `Outcome[?]`' \
  -- "$jr2c" diff old.jr2 reason.jr2 --store "$JR2_STORE"
# … and a `var` made from `Outcome?` to `Outcome` is compatible: a stored null is read as absent,
# and the run takes the initializer.
sed -e 's/^  var outcome: Outcome? = null$/  var outcome: Outcome = { id: "", outcome: "approved" }/' \
    -e 's/^  output outcome!$/  output outcome/' old.jr2 > nonnull.jr2
grep -q '^  var outcome: Outcome = ' nonnull.jr2 || fail "the edit of outcome did not apply"
expect "a var no longer optional strands nothing" 0 'no stored run is stranded' \
  -- "$jr2c" diff old.jr2 nonnull.jr2 --store "$JR2_STORE"

# A Pool's parameter retyped counts the runs whose stored input no longer reads: both runs hold
# the Pool's default `backlog_file` (a string, stored beside the snapshot), which no `int` reads.
sed -e 's|^pool ticket_pool(backlog_file: string = "samples/tickets/backlog.json")|pool ticket_pool(backlog_file: int = 0)|' \
    -e 's|source: backlog(input.backlog_file)|source: backlog(str(input.backlog_file))|' old.jr2 > file_int.jr2
grep -q 'backlog_file: int = 0' file_int.jr2 || fail "the edit of ticket_pool did not apply"
expect "a Pool parameter retyped strands the runs whose stored input no longer reads" 100 \
  'note: 2 of 2 waiting runs in the store have pool `ticket_pool` live with a stored `backlog_file` that does not read as `int`' \
  -- "$jr2c" diff old.jr2 file_int.jr2 --store "$JR2_STORE"

# Bad stores: refused, nothing made.
expect "a store that is not there" 2 '^jr2c: error: --store `nowhere.db`: ' -- "$jr2c" diff old.jr2 new.jr2 --store nowhere.db
[ ! -e nowhere.db ] && ok || fail "diff --store made a store"
echo "not a database" > foreign.db
expect "a foreign file" 2 '^jr2c: error: --store `foreign.db`: ' -- "$jr2c" diff old.jr2 new.jr2 --store foreign.db
expect "--store goes with diff" 2 '`--store` goes with `diff`' -- "$jr2c" check old.jr2 --store "$JR2_STORE"
expect "--store needs a value" 2 '`--store` needs a store' -- "$jr2c" diff old.jr2 new.jr2 --store

# Hostile snapshots in a copy of the store: the scan of each snapshot (diff/stored.cpp)
# must count what a JSON parser would, and refuse what is not JSON, however deep or large.
hostile() {  # hostile.db with one more waiting run, whose snapshot is python expression $1
  rm -f hostile.db*; cp "$JR2_STORE" hostile.db
  python3 - "$1" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect("hostile.db")
snap = eval(sys.argv[1])
db.execute("INSERT INTO runs (id, workflow, status, updated, rev, snapshot) VALUES ('ffffffffffff', 'tickets', 'waiting', 0, 1, ?)", (snap,))
db.commit()
PY
}
worker='{"kind": "machine", "name": "review", "state": {"active": ["review"]}}'
hostile "json.dumps({'top': {'kind': 'pool', 'name': 'ticket_pool', 'workers': [json.loads('$worker')]}})"
expect "a third run, written by hand, is counted" 100 'note: 3 of 3 waiting runs in the store are in `review`' -- "$jr2c" diff old.jr2 new.jr2 --store hostile.db
# Names written with escapes (\u0072 is r), and a 2 MB string beside: read as a parser reads them.
hostile "json.dumps({'pad': 'x' * 2000000, 'top': {'kind': 'pool', 'name': 'ticket_pool', 'workers': [{'kind': 'machine', 'name': 'review', 'state': {'active': ['review']}}]}}).replace('\"review\"', '\"\\\\u0072eview\"')"
expect "escaped names and a 2 MB string" 100 'note: 3 of 3 waiting runs in the store are in `review`' -- "$jr2c" diff old.jr2 new.jr2 --store hostile.db
hostile "'[' * 100000 + ']' * 100000"
expect "a snapshot 100,000 arrays deep" 2 'is not JSON' -- "$jr2c" diff old.jr2 new.jr2 --store hostile.db
hostile "'{\"top\": {\"kind\": \"machine\", \"name\": \"review\"'"
expect "a snapshot cut short" 2 'is not JSON' -- "$jr2c" diff old.jr2 new.jr2 --store hostile.db
hostile "'{\"a\": 1} trailing'"
expect "a snapshot with text after it" 2 'is not JSON' -- "$jr2c" diff old.jr2 new.jr2 --store hostile.db

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
