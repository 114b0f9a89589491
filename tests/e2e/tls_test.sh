#!/usr/bin/env bash
# serve over TLS (#30, docs/serve.md#tls): a certificate made here (openssl), /healthz and a start
# over https, the runner's `--server https://…` verified against that certificate (and refused
# without it), plain HTTP to the TLS port let go while serve goes on, a key that is not the
# certificate's, a missing file, and the refusal to listen on a non-loopback address in plain
# HTTP unless told `--insecure-http` (~5 s).
# Usage: tls_test.sh DIR_OF_CONFORMANCE_RUNNERS
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir=$(realpath "$1")
secret=$dir/conformance_secret
. "$here/lib.sh"
passed=0
failed=0
in_tmp_store
pid=
# Its own serve only: another test's may run beside it.
trap '[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT

cert() {  # cert NAME: NAME.pem and NAME.key, for localhost and 127.0.0.1, self-signed
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=localhost" -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout "$1.key" -out "$1.pem" 2>/dev/null
}
cert serve || { echo "FAIL: openssl cannot make a certificate"; exit 1; }
cert other
chmod 600 serve.key other.key

"$secret" serve --listen 127.0.0.1:0 --tls-cert serve.pem --tls-key serve.key 2> serve.err &
pid=$!
url=
for _ in $(seq 100); do
  url=$(grep -oE 'https://127\.0\.0\.1:[0-9]+' serve.err | head -1)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "FAIL: serve over TLS did not start: $(cat serve.err)"; exit 1; }
ok
port=${url##*:}

# /healthz and a start over https, the certificate verified (Python's ssl, the system's way).
out=$(python3 - "$port" "$tmp/serve.pem" "$(cat jr2.db.token)" <<'PY'
import json, ssl, sys, urllib.request
port, ca, token = sys.argv[1], sys.argv[2], sys.argv[3]
ctx = ssl.create_default_context(cafile=ca)
with urllib.request.urlopen("https://127.0.0.1:%s/healthz" % port, context=ctx, timeout=10) as r:
    print("healthz", r.status)
req = urllib.request.Request("https://localhost:%s/workflows/conformance_secret/runs" % port,
                             method="POST",
                             data=json.dumps({"input": {"note": {"deep": {"secret": "t"}}}}).encode(),
                             headers={"Authorization": "Bearer " + token,
                                      "Content-Type": "application/json"})
with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
    print("start", r.status, json.loads(r.read())["runId"])
PY
)
echo "$out"
grep -q "healthz 200" <<<"$out" && ok || fail "GET /healthz over https: $out"
run=$(awk '/^start 201/ {print $3}' <<<"$out")
[ -n "$run" ] && ok || fail "a start over https: $out"

# The runner through --server https://…, verifying serve against the certificate given.
expect "gates over https" 0 "approval" -- env SSL_CERT_FILE="$tmp/serve.pem" \
  "$secret" gates --server "$url"
expect "status over https" 3 "waiting" -- env SSL_CERT_FILE="$tmp/serve.pem" \
  "$secret" status "$run" --server "https://localhost:$port"
# Without that certificate (the system's CA store does not know it): refused, and said why.
expect "an unknown certificate is refused" 65 "certificate" -- env SSL_CERT_FILE="$tmp/other.pem" \
  "$secret" runs --server "$url"

# Plain HTTP to the TLS port: let go, and serve goes on.
plain=$(python3 - "$port" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=12)
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
try:
    data = s.recv(100)
    print("closed" if not data or not data.startswith(b"HTTP/1.1 200") else "answered in plain HTTP")
except OSError as e:
    print("closed", e)
PY
)
grep -q "^closed" <<<"$plain" && ok || fail "plain HTTP to the TLS port: $plain"
expect "serve goes on after plain HTTP" 0 "approval" -- env SSL_CERT_FILE="$tmp/serve.pem" \
  "$secret" gates --server "$url"
kill -TERM "$pid"
wait_exit "$pid"
[ "$rc" = 0 ] && ok || fail "serve over TLS exits 0 on SIGTERM ($rc)"

# What serve refuses before it listens, each in one line.
expect "a key that is not the certificate's" 65 "is not the private key of the certificate" -- \
  "$secret" serve --listen 127.0.0.1:0 --tls-cert serve.pem --tls-key other.key
expect "a certificate file that is missing" 65 "cannot use --tls-cert .nowhere.pem." -- \
  "$secret" serve --listen 127.0.0.1:0 --tls-cert nowhere.pem --tls-key serve.key
expect "--tls-cert without --tls-key" 65 "go together" -- \
  "$secret" serve --listen 127.0.0.1:0 --tls-cert serve.pem
expect "plain HTTP on a non-loopback address" 65 "--insecure-http" -- \
  "$secret" serve --listen 0.0.0.0:0
expect "--insecure-http with --tls-cert" 64 "contradict" -- \
  "$secret" serve --listen 0.0.0.0:0 --insecure-http --tls-cert serve.pem --tls-key serve.key
expect "--tls-cert with another verb" 64 "go with .serve." -- "$secret" runs --tls-cert serve.pem
# --insecure-http: it listens (a proxy in front speaks TLS), and says so.
"$secret" serve --listen 0.0.0.0:0 --insecure-http 2> insecure.err &
pid=$!
for _ in $(seq 100); do grep -q "serving" insecure.err && break; sleep 0.1; done
grep -q "http://0.0.0.0:" insecure.err && ok || fail "--insecure-http listens: $(cat insecure.err)"
kill -TERM "$pid"
wait_exit "$pid"
[ "$rc" = 0 ] && ok || fail "serve --insecure-http exits 0 on SIGTERM ($rc)"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
