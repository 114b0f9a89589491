#!/usr/bin/env bash
# `<runner> store backup FILE` (#30) while serve hosts a Pool at work: each backup is whole
# (integrity_check ok), opens as a store (`runs`, `status`), is the user's alone (0600), and is a
# copy of one instant; a backup never overwrites a file, and a store that is not there is said.
# And `callers add`, the Caller serve is then started with: its token printed once, its scopes.
# Usage: backup_test.sh RUNNER_DIR   (conformance_torture)
set -u
lib="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
runner="$(realpath "$1")/conformance_torture"
tmp=$(mktemp -d)
trap '[ -n "${spid:-}" ] && kill -KILL "$spid" 2>/dev/null; rm -rf "$tmp"' EXIT
. "$lib"  # expect, ok, fail, serve_url
cd "$tmp" || exit 1
passed=0
failed=0
export JR2_STORE="$tmp/jr2.db"

python3 -c "import json; print(json.dumps([{'id': 't%02d' % i} for i in range(30)]))" > tasks.json
expect "no store to back up" 65 "no run store at" -- "$runner" store backup none.db
expect "backup needs its word" 64 "takes \`backup FILE\`" -- "$runner" store copy x.db

# `callers add`: a Caller with its token printed once, only its hash in the file (0600); a name
# already there or a misspelled scope changes nothing.
"$runner" callers add ci --scope conformance_torture=start,read --callers callers.json \
  > ci.token 2> ci.err || fail "callers add: $(cat ci.err)"
citoken=$(cat ci.token)
[ "${#citoken}" = 64 ] && ok || fail "callers add printed no token: $citoken"
grep -q "$citoken" callers.json && fail "the callers file holds the token itself" || ok
grep -q "$(printf %s "$citoken" | sha256sum | cut -c1-64)" callers.json && ok || fail "the file lacks the token's hash"
[ "$(stat -c %a callers.json)" = 600 ] && ok || fail "the callers file has mode $(stat -c %a callers.json)"
before=$(sha256sum callers.json)
expect "a Caller's name is taken once" 65 "which an earlier caller has" -- \
  "$runner" callers add ci --scope conformance_torture=read --callers callers.json
expect "a misspelled scope" 65 "did you mean \`read\`" -- \
  "$runner" callers add ops --scope conformance_torture=raed --callers callers.json
expect "callers add needs a scope" 64 "needs at least one --scope" -- \
  "$runner" callers add ops --callers callers.json
[ "$(sha256sum callers.json)" = "$before" ] && ok || fail "a refused Caller changed the file"

"$runner" serve --listen 127.0.0.1:0 --callers callers.json > serve.out 2> serve.err &
spid=$!
url=$(serve_url serve.err) || exit 1
token=$(cat "$JR2_STORE.token")
python3 - "$url" "$token" "$tmp" <<'PY' > start.json
import json, sys, urllib.request
url, token, tmp = sys.argv[1:]
body = {"input": {"tasks": tmp + "/tasks.json", "log": tmp + "/ran.log", "jobs": 3, "nap": "0.1"}}
req = urllib.request.Request(url + "/workflows/conformance_torture/runs", method="POST",
                             data=json.dumps(body).encode(),
                             headers={"Authorization": "Bearer " + token})
print(urllib.request.urlopen(req, timeout=10).read().decode())
PY
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["runId"])' start.json)
# Three backups while the Pool works, one after it ends.
for n in 1 2 3; do
  sleep 0.3
  "$runner" store backup "b$n.db" --json > "b$n.json" 2> "b$n.err" || fail "backup $n: $(cat "b$n.err")"
done
for _ in $(seq 1 100); do
  st=$("$runner" status "$id" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')
  [ "$st" = waiting ] || break
  sleep 0.2
done
"$runner" store backup b4.db > b4.out 2> b4.err || fail "backup 4: $(cat b4.err)"
for n in 1 2 3 4; do
  check=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("pragma integrity_check").fetchone()[0])' "b$n.db" 2>&1)
  mode=$(stat -c %a "b$n.db")
  settled=$(JR2_STORE="$tmp/b$n.db" "$runner" status "$id" --json 2>/dev/null \
    | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["status"], len((d.get("output") or d.get("sofar") or {}).get("items") or {}))' 2>/dev/null)
  echo "backup $n: integrity $check, mode $mode, the run in it: ${settled:-unreadable}"
  [ "$check" = ok ] && ok || fail "backup $n is not whole: $check"
  [ "$mode" = 600 ] && ok || fail "backup $n has mode $mode"
  [ -n "$settled" ] && ok || fail "backup $n does not open as a store"
done
last=$(JR2_STORE="$tmp/b4.db" "$runner" status "$id" --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["status"], len(d["output"]["items"]))')
[ "$last" = "done 30" ] && ok || fail "the backup after the end should hold the run done with 30 items: $last"
# serve's standing Pools have runs of their own: the count is the store's, every workflow's.
all=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from runs").fetchone()[0])' b4.db)
grep -qE "backed up $all runs \([0-9]+ KB\)" b4.err && ok || fail "the backup does not say what it holds ($all runs): $(cat b4.err)"
[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["runs"])' b1.json)" -ge 1 ] && ok \
  || fail "backup --json: $(cat b1.json)"
before=$(sha256sum b1.db)
expect "a backup never overwrites" 65 "exists; a backup is written to a new file" -- "$runner" store backup b1.db
[ "$(sha256sum b1.db)" = "$before" ] && ok || fail "the existing file was changed"
ls ./*.part-* > /dev/null 2>&1 && fail "a partial backup was left behind" || ok
# The added Caller's token works with its scopes, and only with them.
codes=$(python3 - "$url" "$citoken" "$id" <<'PY'
import sys, urllib.request, urllib.error
url, token, rid = sys.argv[1:]
def status(method, path, body=None):
    req = urllib.request.Request(url + path, method=method, data=body,
                                 headers={"Authorization": "Bearer " + token})
    try:
        return urllib.request.urlopen(req, timeout=10).status
    except urllib.error.HTTPError as e:
        return e.code
print(status("GET", "/runs/" + rid), status("POST", "/runs/%s/events" % rid, b'{"type":"CANCEL"}'))
PY
)
echo "the added Caller: read $(cut -d' ' -f1 <<< "$codes"), cancel $(cut -d' ' -f2 <<< "$codes")"
[ "$codes" = "200 403" ] && ok || fail "the added Caller should read (200) and not cancel (403): $codes"
kill -TERM "$spid"
wait "$spid"
spid=
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
