"""serve drains on SIGTERM (#30, docs/operations.md#stopping-serve), with its counts printed
(PASS/FAIL lines for lib.sh).

Usage: drain.py RUNNER_DIR TMP
  RUNNER_DIR holds conformance_secret (a run that waits at two Gates).

What a client of a stopping serve must see: every request it sent is answered whole (201, 200 or
a 503 that says serve is stopping and to send again), never a connection cut without an answer;
an event stream ends cleanly; nothing is stored that was not answered 2xx; serve exits 0 within
its --drain-timeout even when a client never reads; a connection made as serve stops listening
(4 clients connecting as fast as they can across the stop) is answered or refused at its connect,
never reset; a request sent after the drain stopped waiting for it gets its 503 whole; and the
starts answered 503, sent again to
the next serve with their Idempotency-Key, make exactly the runs that are missing.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_lib  # noqa: E402
from serve_lib import check  # noqa: E402

runner_dir, tmp = sys.argv[1], sys.argv[2]
secret = os.path.join(runner_dir, "conformance_secret")
store = os.path.join(tmp, "jr2.db")
env = dict(os.environ, JR2_STORE=store)


def start_serve(name, extra=()):
    return serve_lib.start_serve(secret, env, tmp, name, extra)


def token():
    return serve_lib.token(store)


def read_to_end(s, got):
    """Reads socket `s` until the peer closes it, appending to the bytearray `got` (what came
    before a reset is kept there)."""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return
        got += chunk


def raw(port, method, path, body=None, key=None, timeout=15):
    """One request on its own connection; gives (status, body) or ("cut", why): a connection
    that closed before a whole answer came."""
    begun = time.monotonic()
    s = socket.socket()
    s.settimeout(timeout)
    stage = "connect"
    got = bytearray()
    try:
        s.connect(("127.0.0.1", port))
        data = json.dumps(body).encode() if body is not None else b""
        head = ("%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer %s\r\n"
                % (method, path, token()))
        if key:
            head += "Idempotency-Key: %s\r\n" % key
        head += "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(data)
        stage = "send"
        s.sendall(head.encode() + data)
        stage = "read"
        read_to_end(s, got)
    except OSError as e:
        # Where it was cut says whose it was: at the connect, serve listened no more.
        return "cut", "%s (at the %s, %d bytes read, %.3f s after the start)" % (
            e, stage, len(got), time.monotonic() - begun)
    finally:
        s.close()
    return parse(bytes(got))


def parse(got):
    if b"\r\n\r\n" not in got:
        return "cut", "%d bytes, no whole head" % len(got)
    head, body = got.split(b"\r\n\r\n", 1)
    status = int(head.split(b" ", 2)[1])
    length = None
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    if length is not None and len(body) < length:
        return "cut", "%d of %d bytes of the body" % (len(body), length)
    try:
        return status, json.loads(body or b"null")
    except ValueError:
        return "cut", "not JSON: %r" % body[:80]


def runs():
    out = subprocess.run([secret, "runs", "--all", "--json"], env=env, capture_output=True,
                         text=True)
    return {r["runId"] for r in json.loads(out.stdout)} if out.stdout.strip() else set()


def start_body(i):
    return {"input": {"note": {"deep": {"secret": "d%d" % i}}}}


# ---- 1. SIGTERM while 40 starts come, 4 followers follow and 3 requests are half sent ----------
proc, port, err = start_serve("one", ("--drain-timeout", "3"))
first = raw(port, "POST", "/workflows/conformance_secret/runs", start_body(999), key="first")
check(first[0] == 201, "a run to follow starts (%s)" % (first[0],))
followed = first[1]["runId"]

followers = []
for i in range(4):
    s = socket.socket()
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    s.sendall(("GET /runs/%s/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n"
               % (followed, token())).encode())
    followers.append(s)
# A follower that never reads, with a small buffer: the drain's bound is for it.
stuck = socket.socket()
stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
stuck.connect(("127.0.0.1", port))
stuck.sendall(("GET /runs/%s/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n"
               % (followed, token())).encode())
half = []
for i in range(3):
    s = socket.socket()
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    s.sendall(("POST /workflows/conformance_secret/runs HTTP/1.1\r\nHost: x\r\n"
               "Authorization: Bearer %s\r\nContent-Length: 100\r\n\r\n{\"input\"" % token())
              .encode())
    half.append(s)
# A client that connected and sends its request only after serve gave up waiting for it (its
# drain's read limit, 250 ms): it is owed the 503, read whole, not a reset for what it sent late.
late = socket.socket()
late.settimeout(10)
late.connect(("127.0.0.1", port))
late_answer = []
termed = threading.Event()


def send_late():
    termed.wait()
    time.sleep(0.6)
    try:
        late.sendall(("POST /workflows/conformance_secret/runs HTTP/1.1\r\nHost: x\r\n"
                      "Authorization: Bearer %s\r\nContent-Length: 2\r\n\r\n{}" % token())
                     .encode())
    except OSError as e:
        late_answer.append("cut at the send: %s" % e)
        return
    got = bytearray()
    try:
        read_to_end(late, got)
    except OSError as e:
        late_answer.append("cut at the read, %d bytes read: %s" % (len(got), e))
        return
    late_answer.append(parse(bytes(got))[0])


late_thread = threading.Thread(target=send_late)
late_thread.start()
time.sleep(0.3)

answers = {}
go = threading.Event()


def starter(i):
    go.wait()
    time.sleep(0.005 * i)
    answers[i] = raw(port, "POST", "/workflows/conformance_secret/runs", start_body(i),
                     key="drain-%d" % i)


# And connections made as fast as 4 clients can, across the moment serve stops listening: each
# is answered whole or refused at its connect, never reset (an accept that completed as the drain
# closed the listener once dropped its socket, on 7 December 2026's CI).
hammered = {"answered": 0, "refused": 0, "cut": []}
hammer_lock = threading.Lock()
hammer_stop = threading.Event()


def hammer():
    go.wait()
    while not hammer_stop.is_set():
        a = raw(port, "GET", "/healthz", timeout=10)
        with hammer_lock:
            if a[0] != "cut":
                hammered["answered"] += 1
            elif "refused" in a[1].lower():
                hammered["refused"] += 1
            else:
                hammered["cut"].append(a[1])
        if a[0] == "cut":
            time.sleep(0.005)  # serve listens no more: no need to spin


threads = [threading.Thread(target=starter, args=(i,)) for i in range(40)]
hammers = [threading.Thread(target=hammer) for _ in range(4)]
for t in threads + hammers:
    t.start()
go.set()
time.sleep(0.08)
t0 = time.monotonic()
proc.send_signal(signal.SIGTERM)
termed.set()
try:
    rc = proc.wait(timeout=15)
except subprocess.TimeoutExpired:
    proc.kill()
    rc = "hung"
stopped_ms = (time.monotonic() - t0) * 1000
hammer_stop.set()
for t in threads + hammers:
    t.join(timeout=20)

codes = {}
for i, a in answers.items():
    codes[a[0]] = codes.get(a[0], 0) + 1
cut = [i for i, a in answers.items() if a[0] == "cut"]
print("40 starts around a SIGTERM: answers by status %s; serve exit %s after %.0f ms"
      % (json.dumps({str(k): v for k, v in sorted(codes.items(), key=str)}), rc, stopped_ms))
refused = 0
for i, a in answers.items():
    if a[0] == 503 and "stopping" in a[1].get("error", ""):
        refused += 1
check(rc == 0, "serve exits 0 after SIGTERM (%s)" % rc)
check(stopped_ms < 3000 + 2000,
      "serve exits within its 3 s drain bound and a turn, with a client that never reads "
      "(%.0f ms)" % stopped_ms)
# A start refused before serve listened no more ("connection refused") is not a cut: nothing
# was sent. A cut is a request that was taken and never answered.
never = [i for i in cut if "refused" in answers[i][1].lower()]
taken_cut = [i for i in cut if i not in never]
print("connections refused once serve stopped listening: %d; requests taken and never "
      "answered: %d" % (len(never), len(taken_cut)))
check(not taken_cut, "no request taken is left unanswered (%s)"
      % [answers[i][1] for i in taken_cut][:3])
print("connections made across the stop: %d answered, %d refused at the connect, %d cut"
      % (hammered["answered"], hammered["refused"], len(hammered["cut"])))
check(not hammered["cut"] and hammered["answered"] > 0 and hammered["refused"] > 0,
      "a connection made as serve stops listening is answered or refused, never cut (%s)"
      % hammered["cut"][:3])
check(codes.get(201, 0) + refused + len(never) == 40,
      "each start is answered 201 or a 503 that says serve is stopping (%d + %d + %d refused "
      "connections)" % (codes.get(201, 0), refused, len(never)))

ended = 0
for s in followers:
    try:
        read_to_end(s, bytearray())
        ended += 1
    except OSError:
        pass
print("followers whose stream ended with a clean close: %d of 4" % ended)
check(ended == 4, "the event streams end cleanly (%d of 4)" % ended)
half_answers = []
for s in half:
    try:
        data = bytearray()
        read_to_end(s, data)
        half_answers.append(parse(bytes(data))[0])
    except OSError as e:
        half_answers.append("cut: %s" % e)
print("requests half sent when serve stopped: %s" % half_answers)
check(half_answers == [503, 503, 503], "a request half sent is answered 503 (%s)" % half_answers)
late_thread.join(timeout=20)
check(late_answer == [503], "a request sent after the drain stopped waiting for it is answered "
      "503, whole, then closed without a reset (%s)" % late_answer)
log = open(err).read()
check("draining" in log and "drained" in log, "serve says it drains and what it cut: "
      + " | ".join(l for l in log.splitlines() if "drain" in l))

stored = runs()
made_201 = {a[1]["runId"] for a in answers.values() if a[0] == 201}
print("runs stored: %d (the followed one and %d answered 201)" % (len(stored), len(made_201)))
check(stored == made_201 | {followed},
      "what is stored is what was answered 201 (%d stored, %d answered)"
      % (len(stored), len(made_201) + 1))

# ---- 2. the 503s, sent again to the next serve with their keys: 40 runs, none twice -----------
# (This serve logs JSON: each line is checked below.)
proc, port, err = start_serve("two", ("--log-format", "json"))
again = 0
for i, a in sorted(answers.items()):
    if a[0] != 201:
        b = raw(port, "POST", "/workflows/conformance_secret/runs", start_body(i),
                key="drain-%d" % i)
        again += 1
        answers[i] = b
# And one answered 201 before, sent again: the same run.
resent = raw(port, "POST", "/workflows/conformance_secret/runs", start_body(0), key="drain-0")
proc.send_signal(signal.SIGTERM)
proc.wait(timeout=15)
stored = runs() - {followed}
told = {a[1]["runId"] for a in answers.values() if a[0] in (200, 201)}
print("sent again after the restart: %d; runs of the 40 starts stored: %d, distinct runs told: %d"
      % (again, len(stored), len(told)))
check(len(stored) == 40 and told == stored, "40 starts make 40 runs (%d)" % len(stored))
check(resent[0] == 200 and resent[1]["runId"] == answers[0][1]["runId"],
      "a start sent again is answered with its run (%s)" % (resent[0],))

# ---- 3. --log-format json: one object a line, each with its time, kind and message ------------
lines = [l for l in open(err).read().splitlines() if l.strip()]
parsed, bad, with_run = 0, [], 0
for line in lines:
    try:
        doc = json.loads(line)
    except ValueError:
        bad.append(line)
        continue
    if not all(k in doc for k in ("time", "workflow", "kind", "message")) or \
            not doc["time"].endswith("Z"):
        bad.append(line)
        continue
    parsed += 1
    with_run += "run" in doc
print("--log-format json: %d lines, %d objects with time/workflow/kind/message, %d naming a run"
      % (len(lines), parsed, with_run))
check(lines and not bad and with_run > 0,
      "--log-format json writes one JSON object a line (%s)" % bad[:2])
