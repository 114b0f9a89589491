#!/usr/bin/env bash
# `run --agents openai` end to end against a fake OpenAI-compatible server on loopback
# (samples/alert-triage/fake_model.py): a well-formed tool call; a 500, a 429 with Retry-After, a timeout and a
# malformed body, each retried; an answer in text and a payload its schema refuses, each refused
# and picked again; the slot's `picks:` spent, then a person answers; a 401; the environment
# checked. The API key must never appear in the store, the feed or the output: the count of leaks
# is printed. Usage: agents_openai_test.sh ASKER_RUNNER (the conformance workflow `asker`, whose
# Agent `helper` has `picks: 4`)
set -u
asker=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
passed=0
failed=0
source "$here/lib.sh"
in_tmp_store
key="sk-e2e-$(date +%s)-SECRET"
export JR2_AGENT_MODEL=qwen JR2_AGENT_API_KEY=$key JR2_AGENT_TIMEOUT=1
server_pid=

# serve SCRIPT_JSON: a fresh fake server with this script, its log in $tmp/log.jsonl.
serve() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -f port log.jsonl
  echo "$1" > script.json
  python3 "$here/../../samples/alert-triage/fake_model.py" --port-file port --log log.jsonl --script script.json &
  server_pid=$!
  for _ in $(seq 50); do [ -s port ] && break; sleep 0.1; done
  export JR2_AGENT_BASE_URL=http://127.0.0.1:$(cat port)/v1
}
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
requests() { [ -f log.jsonl ] && wc -l < log.jsonl || echo 0; }
# The newest run's id.
last_run() {
  "$asker" runs --all --json |
    python3 -c 'import json,sys; print(max(json.load(sys.stdin), key=lambda r: r["updated"])["runId"])'
}

good='{"tool": "answer", "arguments": {"text": "42"}}'

serve "[$good]"
expect "a tool call answers the Gate" 0 'agent helper answered answer at asking \(qwen\)' -- \
  "$asker" run --agents openai
expect "its payload is the run's output" 0 '"output": "42"' -- "$asker" status "$(last_run)" --json
python3 - "$key" <<'PY' && ok || fail "the request is not what the harness promises"
import json, sys
key = sys.argv[1]
line = json.loads(open("log.jsonl").readline())
assert line["path"] == "/v1/chat/completions", line["path"]
assert line["authorization"] == "Bearer " + key, "the key goes as a Bearer token"
body = json.loads(line["body"])
assert body["model"] == "qwen"
assert body["messages"][0] == {"role": "system", "content": "Answer in one word."}, body["messages"]
assert body["messages"][1]["content"] == "What is six times seven?", body["messages"]
names = [t["function"]["name"] for t in body["tools"]]
assert names == ["answer"], names
params = body["tools"][0]["function"]["parameters"]
assert params["properties"]["text"]["type"] == "string", params
assert body["tool_choice"] == "required"
PY

serve '[{"status": 500, "body": "upstream exploded"}, '"$good"']'
expect "a 500 then a tool call: retried, answered" 0 \
  'the server answered 500: upstream exploded; asking again in 1 s \(try 2 of 4\)' -- \
  "$asker" run --agents openai

# Four failures of four kinds: each retried, then the Gate waits for a person (exit 3, waiting).
serve '[{"status": 503, "body": "warming up"}, {"status": 429, "body": "slow", "retry_after": "1"},
        {"hang": 3}, {"raw": "<html>bad gateway</html>"}, '"$good"']'
start=$(date +%s)
expect "a 503, a 429, a timeout and a malformed body are each retried" 3 'is waiting at 1 Gate' -- \
  "$asker" run --agents openai
out=$("$asker" log "$(last_run)" 2>&1)
for line in "the server answered 503: warming up; asking again in 1 s \(try 2 of 4\)" \
            "the server is rate-limiting \(429\), and its Retry-After asks for 1 s; asking again in 1 s \(try 3 of 4\)" \
            "the server gave no answer within 1000 ms; asking again in 4 s \(try 4 of 4\)" \
            "is not a chat completion: its body is not JSON: <html>bad gateway</html> \(4 tries\); the Gate asking waits for a person"; do
  grep -qE "$line" <<<"$out" && ok || { fail "the feed lacks /$line/"; echo "$out" | tail -12; }
done
[ "$(requests)" -eq 4 ] && ok || fail "four tries at most, the server was asked $(requests) times"
echo "four failed tries took $(( $(date +%s) - start )) s"

serve '[{"text": "I think it is 42."}, {"tool": "answer", "arguments": {"text": 7}},
        {"tool": "answer", "arguments": "{text: 42"}, '"$good"']'
expect "text, a refused payload and arguments that are not JSON are each picked again" 0 \
  'answered answer at asking' -- "$asker" run --agents openai
python3 <<'PY' && ok || fail "the model is not told why its picks were refused"
import json
lines = [json.loads(l) for l in open("log.jsonl")]
assert len(lines) == 4, len(lines)
last = json.loads(lines[3]["body"])["messages"]
roles = [m["role"] for m in last]
assert roles == ["system", "user", "assistant", "user", "assistant", "tool", "assistant", "tool"], roles
assert "Answer with exactly one tool call" in last[3]["content"], last[3]
assert last[5]["tool_call_id"] == "call_2" and "must be a string" in last[5]["content"], last[5]
assert "not JSON" in last[7]["content"], last[7]
PY

bad='{"tool": "answer", "arguments": {"text": 7}}'
serve "[$bad, $bad, $bad, $bad, $bad]"
expect "after picks: 4 refused picks the Gate waits for a person" 3 \
  '4 picks refused, the Gate asking waits for a person' -- "$asker" run --agents openai
[ "$(requests)" -eq 4 ] && ok || fail "the slot's bound is 4 picks, the model was asked $(requests) times"
expect "a person answers the Gate the Agent left" 0 'ended done' -- \
  "$asker" send "$(last_run)" asking answer '{"text": "by hand"}'

serve '[{"status": 401, "body": "{\"error\": \"invalid key '"$key"'\"}"}]'
expect "a 401 is not retried, and the Gate waits" 3 \
  'refused the request with 401: .*\[the API key\].*the Gate asking waits for a person' -- \
  "$asker" run --agents openai
[ "$(requests)" -eq 1 ] && ok || fail "a 401 was asked $(requests) times"

# A variable missing or wrong is a usage error (64), as docs/runtime.md says (#30).
expect "no model named: the variable to set" 64 'JR2_AGENT_MODEL' -- \
  env -u JR2_AGENT_MODEL "$asker" run --agents openai
expect "an empty port: refused before any request" 64 'has an empty port' -- \
  env JR2_AGENT_BASE_URL=http://127.0.0.1:/v1 "$asker" run --agents openai
expect "an address that is neither http nor https: how to write it" 64 \
  'not an http:// or https:// address; write it as `https://HOST/v1`' -- \
  env JR2_AGENT_BASE_URL=ftp://api.openai.com/v1 "$asker" run --agents openai
expect "--agents openai goes with run, send and serve" 64 '`--agents` goes with' -- \
  "$asker" status x --agents openai

# The key: in no stored byte, no feed line, no output.
leaks=0
for f in jr2.db*; do [ -f "$f" ] && grep -qaF "$key" "$f" && leaks=$((leaks + 1)); done
runs=0
for r in $("$asker" runs --all --json | python3 -c 'import json,sys; print(" ".join(r["runId"] for r in json.load(sys.stdin)))'); do
  runs=$((runs + 1))
  "$asker" log "$r" 2>&1 | grep -qF "$key" && leaks=$((leaks + 1))
  "$asker" status "$r" --json 2>&1 | grep -qF "$key" && leaks=$((leaks + 1))
done
echo "key leaks: $leaks (the store's files, and the feeds and statuses of $runs runs searched)"
[ "$runs" -ge 6 ] && ok || fail "only $runs runs were searched"
[ "$leaks" -eq 0 ] && ok || fail "the API key leaked $leaks times"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
