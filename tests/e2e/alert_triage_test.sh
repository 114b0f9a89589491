#!/usr/bin/env bash
# The alert-triage sample end to end through `serve` (#12), as samples/README.md tells it:
# `alerts serve` with the sample's callers file and the scripted Agent; samples/alert-triage/sentry.py plays
# Sentry (held ×3, the same delivery again, `existing`, `skipped`, 401); the on-call person
# answers each triage run's review Gate with the runner's `--server` verbs (`rethink`, so the
# Agent proposes, then `confirm`); each alert ends with one `triage` run, `done`, its verdict the
# Agent's, and the standing Pool settles each. A cancel of the standing run pauses it (a delivery
# answers 503 `paused`); `alerts run` resumes it; SIGTERM stops serve with 0.
#
# Usage: alert_triage_test.sh SAMPLES_DIR SOURCE_DIR  (SAMPLES_DIR holds the alerts and triage runners)
set -u
samples=$(realpath "$1")
src=$(realpath "$2")
alerts="$samples/alerts"
triage="$samples/triage"
tmp=$(mktemp -d)
serve_pid=
trap '[ -n "$serve_pid" ] && kill -KILL "$serve_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
. "$src/tests/e2e/lib.sh"  # ok, fail
passed=0
failed=0
cd "$tmp" || exit 1
export JR2_STORE="$tmp/jr2.db"
export SENTRY_HOOK_SECRET="sentry-$RANDOM$RANDOM"

"$alerts" serve --listen 127.0.0.1:0 --callers "$src/samples/alert-triage/callers.json" \
  --agents "$src/samples/alert-triage/agents.json" > serve.log 2>&1 &
serve_pid=$!
url=$(serve_url serve.log) || exit 1
grep -q 'standing: sentry → alerts → triage' serve.log && ok ||
  fail "serve names the chain: $(head -3 serve.log)"

# Sentry delivers.
out=$(timeout 60 python3 "$src/samples/alert-triage/sentry.py" --url "$url" 2>&1)
rc=$?
echo "$out"
[ "$rc" -eq 0 ] && ok || fail "sentry.py: exit $rc"
[ "$(grep -c -- '-> 200 held' <<<"$out")" -eq 4 ] && ok || fail "three alerts held, and the resend answered held again"
grep -qE -- '-> 200 existing \(run [0-9a-f]{12} holds it\)' <<<"$out" && ok || fail "a second delivery of one issue: existing, naming its run"
grep -q -- '-> 200 skipped: resolved alerts start nothing' <<<"$out" && ok || fail "issue.resolved: skipped with its reason"
grep -q -- '-> 401 ' <<<"$out" && ok || fail "a wrong signature: 401"

# The on-call person, through serve: each run waits at `review` with the Agent's question.
gates=
for _ in $(seq 100); do
  gates=$("$triage" gates --server "$url" --json 2>/dev/null)
  [ "$(python3 -c 'import json,sys; print(len(json.loads(sys.stdin.read() or "[]")))' <<<"$gates")" = 3 ] && break
  sleep 0.1
done
runs=$(python3 -c '
import json, sys
gates = json.loads(sys.stdin.read())
for g in gates:
    assert g["gate"] == "review" and g["meta"]["question"], g
    print(g["runId"])' <<<"$gates")
[ "$(wc -w <<<"$runs")" -eq 3 ] && ok || fail "three triage runs wait at review with the Agent's question: $gates"
for r in $runs; do
  "$triage" send "$r" review rethink '{"note":"Yes: the deploy renamed cart.total."}' --server "$url" > /dev/null 2>&1
  rc=$?
  [ "$rc" -eq 3 ] && ok || fail "rethink of $r: exit $rc (wanted 3: it waits at review again, with the proposal)"
  "$triage" send "$r" review confirm --server "$url" > /dev/null 2>&1
  rc=$?
  [ "$rc" -eq 0 ] && ok || fail "confirm of $r: exit $rc (wanted 0: done)"
  verdict=$("$triage" status "$r" --server "$url" --json 2>/dev/null)
  python3 -c '
import json, sys
doc = json.loads(sys.stdin.read())
assert doc["status"] == "done" and doc["output"]["decided_by"] == "agent" and doc["output"]["action"] == "page", doc' \
    <<<"$verdict" && ok || fail "$r: done, with the Agent's verdict: $verdict"
done

# The standing Pool settled each alert once; one triage run per alert.
pool=$("$alerts" runs --server "$url" --json | python3 -c 'import json,sys; print([r["runId"] for r in json.load(sys.stdin) if r["status"] == "waiting"][0])')
settled=0
for _ in $(seq 50); do
  settled=$("$alerts" log "$pool" --server "$url" 2>/dev/null | grep -c 'settled')
  [ "$settled" -eq 3 ] && break
  sleep 0.1
done
[ "$settled" -eq 3 ] && ok || fail "the standing run settles each alert once: $settled settled"
n=$("$triage" runs --all --server "$url" --json | python3 -c 'import json,sys; print(len([r for r in json.load(sys.stdin) if r["workflow"] == "triage"]))')
[ "$n" -eq 3 ] && ok || fail "one triage run per alert: $n"

# A cancel pauses the Pool: a delivery answers 503 paused; `alerts run` resumes it.
"$alerts" cancel "$pool" --server "$url" > /dev/null 2>&1
out=$(timeout 60 python3 "$src/samples/alert-triage/sentry.py" --url "$url" 2>&1)
grep -q -- '-> 503 paused' <<<"$out" && ok || fail "a delivery to a paused Pool: 503 paused: $out"
kill -TERM "$serve_pid"
wait "$serve_pid"
rc=$?
serve_pid=
[ "$rc" -eq 0 ] && ok || fail "serve stops with 0 on SIGTERM: $rc"
out=$("$alerts" status "$pool" 2>&1)
echo "$out"
grep -q 'is paused' <<<"$out" && ok || fail "status tells the pause: $out"
out=$("$alerts" run 2>&1)
rc=$?
echo "$out"
grep -q 'resumed\|takes run' <<<"$out" && [ "$rc" -eq 3 ] && ok || fail "alerts run resumes it: exit $rc: $out"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
