#!/usr/bin/env bash
# The alert-triage sample with a model at the Agent slot, as samples/alert-triage/README.md tells
# it: `alerts serve --agents openai` against a fake OpenAI-compatible server on loopback
# (samples/alert-triage/fake_model.py with the sample's model_rules.json: it escalates a fatal alert as a page, an
# error as a ticket, and resolves a warning); samples/alert-triage/sentry.py plays Sentry. The resolved alert's run ends done with
# no person; each escalation waits at `review` with the model's proposal, and the on-call person
# confirms it through serve. The API key appears nowhere it is stored or printed. (~5 s)
#
# Usage: alert_triage_model_test.sh SAMPLES_DIR SOURCE_DIR  (SAMPLES_DIR holds the alerts and triage runners)
set -u
samples=$(realpath "$1")
src=$(realpath "$2")
alerts="$samples/alerts"
triage="$samples/triage"
tmp=$(mktemp -d)
serve_pid=
model_pid=
trap '[ -n "$serve_pid" ] && kill -KILL "$serve_pid" 2>/dev/null; [ -n "$model_pid" ] && kill "$model_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
. "$src/tests/e2e/lib.sh"  # ok, fail
passed=0
failed=0
cd "$tmp" || exit 1
export JR2_STORE="$tmp/jr2.db"
export SENTRY_HOOK_SECRET="sentry-$RANDOM$RANDOM"
key="sk-triage-$RANDOM$RANDOM-SECRET"

python3 "$src/samples/alert-triage/fake_model.py" --port-file model.port --log model.log --rules "$src/samples/alert-triage/model_rules.json" &
model_pid=$!
for _ in $(seq 50); do [ -s model.port ] && break; sleep 0.1; done
export JR2_AGENT_BASE_URL="http://127.0.0.1:$(cat model.port)/v1" JR2_AGENT_MODEL=qwen2.5-7b-instruct
export JR2_AGENT_API_KEY="$key"

"$alerts" serve --listen 127.0.0.1:0 --callers "$src/samples/alert-triage/callers.json" \
  --agents openai > serve.log 2>&1 &
serve_pid=$!
url=$(serve_url serve.log) || exit 1

out=$(timeout 60 python3 "$src/samples/alert-triage/sentry.py" --url "$url" 2>&1)
rc=$?
[ "$rc" -eq 0 ] && ok || fail "sentry.py: exit $rc: $out"

# Two escalations wait at `review` with the model's proposals; the warning is resolved.
gates=
for _ in $(seq 100); do
  gates=$("$triage" gates --server "$url" --json 2>/dev/null)
  [ "$(python3 -c 'import json,sys; print(len(json.loads(sys.stdin.read() or "[]")))' <<<"$gates")" = 2 ] && break
  sleep 0.1
done
runs=$(python3 -c '
import json, sys
gates = json.loads(sys.stdin.read())
seen = {}
for g in gates:
    assert g["gate"] == "review", g
    p = g["meta"]["proposal"]
    seen[g["meta"]["alert"]["level"]] = (p["action"], p["decided_by"])
    print(g["runId"])
assert seen == {"fatal": ("page", "agent"), "error": ("ticket", "agent")}, seen' <<<"$gates")
[ "$(wc -w <<<"$runs")" -eq 2 ] && ok || fail "two escalations wait at review with the model's proposals: $gates"
done_runs=$("$triage" runs --all --server "$url" --json | python3 -c '
import json, sys
print(" ".join(r["runId"] for r in json.load(sys.stdin) if r["workflow"] == "triage" and r["status"] == "done"))')
[ "$(wc -w <<<"$done_runs")" -eq 1 ] && ok || fail "the warning's run ended done by itself: $done_runs"
verdict=$("$triage" status $done_runs --server "$url" --json 2>/dev/null)
python3 -c '
import json, sys
doc = json.loads(sys.stdin.read())
o = doc["output"]
assert o["action"] == "ignore" and o["decided_by"] == "agent" and "deprecation" in o["summary"], o' \
  <<<"$verdict" && ok || fail "the resolved alert's verdict: $verdict"

for r in $runs; do
  "$triage" send "$r" review confirm --server "$url" > /dev/null 2>&1
  rc=$?
  [ "$rc" -eq 0 ] && ok || fail "confirm of $r: exit $rc (wanted 0: done)"
done

# What the model was given: the Agent's instructions, the alert as the prompt, three tools.
python3 - <<'PY' && ok || fail "the requests to the model"
import json
reqs = [json.loads(l) for l in open("model.log")]
assert len(reqs) == 3, len(reqs)
for r in reqs:
    body = json.loads(r["body"])
    assert body["model"] == "qwen2.5-7b-instruct"
    assert body["messages"][0]["role"] == "system" and "triage one production alert" in body["messages"][0]["content"]
    assert body["messages"][1]["content"].startswith("Alert SENTRY-482"), body["messages"][1]
    assert sorted(t["function"]["name"] for t in body["tools"]) == ["ask", "escalate", "resolve"]
PY
grep -q "agent triager answered resolve at investigate (qwen2.5-7b-instruct)" <(
  for r in $done_runs; do "$triage" log "$r" --server "$url" 2>&1; done) && ok ||
  fail "the feed says the model resolved it"

kill -TERM "$serve_pid"
wait "$serve_pid"
serve_pid=
leaks=0
for f in jr2.db* serve.log; do [ -f "$f" ] && grep -qaF "$key" "$f" && leaks=$((leaks + 1)); done
echo "key leaks: $leaks (the store's files and serve's log searched)"
[ "$leaks" -eq 0 ] && ok || fail "the API key leaked"
grep -c "Bearer $key" model.log | grep -qx 3 && ok || fail "the key did not reach the model server"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
