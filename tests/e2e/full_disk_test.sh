#!/usr/bin/env bash
# A full disk under `serve` (#30): the store lives on a 4 MB tmpfs, a Pool of 30 processes runs,
# and the disk is filled while it works. serve must stay up, answer reads, refuse changes with
# 503 and the reason, hold what its runs do (no process started by a turn that was not stored),
# and, once the filler is removed, store it all and finish: every item once, none interrupted.
# Needs root to mount the tmpfs; without it the test is skipped (exit 77).
# Usage: full_disk_test.sh RUNNER_DIR   (conformance_torture)
set -u
lib="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
runner="$(realpath "$1")/conformance_torture"
tmp=$(mktemp -d)
disk="$tmp/disk"
mkdir -p "$disk"
if [ "$(id -u)" -ne 0 ] || ! mount -t tmpfs -o size=4m tmpfs "$disk" 2>/dev/null; then
  echo "SKIP: a tmpfs cannot be mounted here (needs root); the full-disk test did not run"
  rm -rf "$tmp"
  exit 77
fi
trap '[ -n "${spid:-}" ] && kill -KILL "$spid" 2>/dev/null; umount "$disk" 2>/dev/null; rm -rf "$tmp"' EXIT
. "$lib"  # ok, fail, serve_url
cd "$tmp" || exit 1
passed=0
failed=0
export JR2_STORE="$disk/jr2.db"

python3 -c "import json; print(json.dumps([{'id': 't%02d' % i} for i in range(30)]))" > tasks.json
"$runner" serve --listen 127.0.0.1:0 > serve.out 2> serve.err &
spid=$!
url=$(serve_url serve.err) || exit 1
token=$(cat "$JR2_STORE.token")
http() {  # METHOD PATH [BODY]: prints the status and the body
  python3 - "$url" "$token" "$@" <<'PY'
import json, sys, urllib.request, urllib.error
url, token, method, path = sys.argv[1:5]
body = sys.argv[5].encode() if len(sys.argv) > 5 else None
req = urllib.request.Request(url + path, data=body, method=method,
                             headers={"Authorization": "Bearer " + token})
try:
    with urllib.request.urlopen(req, timeout=10) as r:
        print(r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
PY
}
input="{\"input\":{\"tasks\":\"$tmp/tasks.json\",\"log\":\"$tmp/ran.log\",\"jobs\":3,\"nap\":\"0.3\"}}"
read -r code body <<< "$(http POST /workflows/conformance_torture/runs "$input")"
id=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["runId"])' "$body" 2>/dev/null)
[ "$code" = 201 ] && ok || fail "the run did not start: $code $body"
sleep 0.8
# Fill the disk while the Pool works.
dd if=/dev/zero of="$disk/filler" bs=64k > /dev/null 2>&1
sleep 2.5
alive=0; kill -0 "$spid" 2>/dev/null && alive=1
read -r rcode _ <<< "$(http GET "/runs/$id")"
read -r wcode wbody <<< "$(http POST "/runs/$id/events" '{"type":"CANCEL"}')"
ran_full=$(wc -l < ran.log)
sleep 1
ran_later=$(wc -l < ran.log)
echo "disk full: serve alive $alive, a read answered $rcode, a cancel answered $wcode ($wbody); $ran_full processes had started, $ran_later a second later"
[ "$alive" = 1 ] && ok || fail "serve died on the full disk: $(tail -3 serve.err)"
[ "$rcode" = 200 ] && ok || fail "a read was not served while the disk was full ($rcode)"
[ "$wcode" = 503 ] && grep -q "full" <<< "$wbody" && ok || fail "a change was not refused 503 with the reason: $wcode $wbody"
[ "$ran_later" -eq "$ran_full" ] && ok || fail "processes started while nothing could be stored ($ran_full, then $ran_later)"
grep -q "is full" serve.err && ok || fail "serve does not say the disk is full: $(tail -3 serve.err)"
grep -q "$disk" <<< "$wbody" && fail "the 503 names the store's path: $wbody" || ok
# Space again: everything is stored, and the run finishes.
rm -f "$disk/filler"
status=
for _ in $(seq 1 100); do
  read -r _ sbody <<< "$(http GET "/runs/$id")"
  status=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["status"])' "$sbody" 2>/dev/null)
  [ "$status" = waiting ] || break
  sleep 0.2
done
counts=$(python3 - "$sbody" ran.log <<'PY'
import collections, json, sys
out = json.loads(sys.argv[1])
ran = collections.Counter(l.strip() for l in open(sys.argv[2]) if l.strip())
items = out.get("items") or {}
failures = out.get("failures") or {}
print(len(items), len(failures), len(ran), max(ran.values()) if ran else 0)
PY
)
read -r items failures distinct most <<< "$counts"
echo "space again: the run ended $status with $items settled, $failures failed; $distinct items ran, the most runs of one $most"
[ "$status" = done ] && [ "$items" = 30 ] && [ "$failures" = 0 ] && ok \
  || fail "the run should end done with 30 settled: $status, $items settled, $failures failed"
[ "$distinct" = 30 ] && [ "$most" = 1 ] && ok || fail "each item should run once: $distinct items, one ran $most times"
grep -q "has space again" serve.err && ok || fail "serve does not say it stores again: $(tail -3 serve.err)"
kill -TERM "$spid"
wait "$spid"
src=$?
spid=
[ "$src" = 0 ] && ok || fail "serve exited $src on SIGTERM"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
