#!/usr/bin/env bash
# `serve` (#11, first cut): one process hosts the waiting runs, fires their timers with nobody
# typing, takes up runs started after it, takes `send` from the CLI through the store's inbox,
# answers GET /healthz (and 404 with a JSON error elsewhere, a client that never finishes its
# request cut off without holding the others), and stops on SIGTERM with exit 0.
# Usage: serve_test.sh DIR_OF_CONFORMANCE_RUNNERS
set -u
lib="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
dir=$(realpath "$1")
deadline="$dir/conformance_deadline"
napper="$dir/conformance_napper"
tmp=$(mktemp -d)
spid=""
trap '[ -n "$spid" ] && kill -KILL "$spid" 2>/dev/null; rm -rf "$tmp"' EXIT
. "$lib"  # ok, fail
cd "$tmp" || exit 1
passed=0
failed=0
export JR2_STORE="$tmp/store.db"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
get() {  # get PATH: prints "STATUS BODY"
  python3 - "$port" "$1" <<'PY'
import sys, urllib.request, urllib.error
try:
    r = urllib.request.urlopen("http://127.0.0.1:%s%s" % (sys.argv[1], sys.argv[2]), timeout=5)
    print(r.status, r.read().decode().strip())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode().strip())
PY
}
status_of() { "$deadline" status "$1" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])'; }

# A run waiting at a Gate with a 1 s deadline; nobody will type anything more about it.
"$deadline" run > /dev/null 2>&1
[ $? -eq 3 ] && ok || fail "the deadline run should wait (3)"
id=$("$deadline" runs --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["runId"])')

"$deadline" serve --listen "127.0.0.1:$port" > serve.out 2> serve.err &
spid=$!
for _ in $(seq 1 100); do get /healthz 2>/dev/null | grep -q '^200' && break; sleep 0.05; done

# 1. The deadline fires with nobody typing.
for _ in $(seq 1 60); do [ "$(status_of "$id")" = done ] && break; sleep 0.1; done
st=$(status_of "$id")
timer=$("$deadline" log "$id" --json 2>/dev/null | python3 -c 'import json,sys; print(sum(1 for e in json.load(sys.stdin) if e["kind"] == "timer"))')
echo "deadline: status $st, timer events $timer"
[ "$st" = done ] && [ "$timer" -ge 1 ] && ok || fail "the deadline did not fire by itself ($st, $timer timers)"

# 2. HTTP: healthz, a route that does not exist, and a client that never finishes its request.
python3 - "$port" <<'PY' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # and never the blank line
time.sleep(3)
PY
slow=$!
h=$(get /healthz)
n=$(get /no/such/route)
echo "healthz: $h; unknown route: $n"
[ "$h" = '200 {"ok":true}' ] && ok || fail "healthz answered $h"
case "$n" in '404 {"error":'*) ok ;; *) fail "an unknown route answered $n" ;; esac
wait "$slow" 2>/dev/null

# 3. A run started while serve runs is taken up, and a `send` is handed to serve.
"$napper" run > /dev/null 2>&1  # naps 2 s, then waits at its Gate (deadline 1 h)
id2=$("$napper" runs --json | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r[-1]["runId"] if r else "")')
sleep 1.5
"$napper" send "$id2" asking finish > send.out 2> send.err
src=$?
st2=$("$napper" status "$id2" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')
echo "send to a run serve hosts: exit $src, status $st2"
grep -q "took up" serve.err && ok || fail "serve did not take up the new run: $(cat serve.err)"
grep -q "handing it the send" send.err && [ "$st2" = done ] && ok \
  || fail "the send was not handed to serve: exit $src, $st2, $(cat send.err)"

# 4. SIGTERM: exit 0, at once.
t0=$(date +%s%N)
kill -TERM "$spid"
wait "$spid"
rc=$?
spid=""
ms=$((($(date +%s%N) - t0) / 1000000))
echo "SIGTERM: exit $rc after $ms ms"
[ "$rc" -eq 0 ] && [ "$ms" -lt 3000 ] && ok || fail "serve stopped with $rc after $ms ms"
grep -q "stopped: every step under way is stored" serve.err && ok || fail "no stop line"

# 5. A --listen it cannot use is refused.
"$deadline" serve --listen nowhere:99999 > /dev/null 2> bad.err
brc=$?
[ "$brc" -eq 65 ] && grep -q "takes HOST:PORT" bad.err && ok || fail "a bad --listen: $brc $(cat bad.err)"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
