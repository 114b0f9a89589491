"""A host function that segfaults under `serve --supervise` (#30 item 4, docs/operations.md
#crashes), with its counts printed (PASS/FAIL lines for lib.sh).

Usage: supervise.py RUNNER_DIR TMP
  RUNNER_DIR holds conformance_secret (runs that wait at Gates) and conformance_crasher (a run
  whose host function raises SIGSEGV when its input says `segv`); one serve hosts both.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_lib  # noqa: E402
from serve_lib import check  # noqa: E402

runner_dir, tmp = sys.argv[1], sys.argv[2]
secret = os.path.join(runner_dir, "conformance_secret")
crasher = os.path.join(runner_dir, "conformance_crasher")
store = os.path.join(tmp, "jr2.db")
env = dict(os.environ, JR2_STORE=store)


def start_serve(name, extra=()):
    return serve_lib.start_serve(secret, env, tmp, name, ("--supervise", *extra))


def token():
    return serve_lib.token(store)


def request(port, method, path, body=None, key=None, timeout=10):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method)
    req.add_header("Authorization", "Bearer " + token())
    if key:
        req.add_header("Idempotency-Key", key)
    data = json.dumps(body).encode() if body is not None else None
    if data:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, data=data, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")
    except OSError as e:
        return "cut", str(e)


def children(pid):
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def serve_child(pid, other_than=None, seconds=15):
    """The serve the supervisor `pid` runs (a new one when `other_than` is given)."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        for c in children(pid):
            cmd = open("/proc/%d/cmdline" % c, "rb").read() if os.path.exists("/proc/%d" % c) else b""
            if b"serve" in cmd and c != other_than:
                return c
        time.sleep(0.02)
    return None


def healthy(port):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=1) as r:
            return r.status == 200
    except OSError:
        return False


# ---- 1. a segfault in a host function: serve back, nothing lost, the call `interrupted` ---------
sup, port, err = start_serve("one")
first = serve_child(sup.pid)
check(first is not None and first != sup.pid, "serve runs under its supervisor (pid %s)" % first)
waiting = []
for i in range(5):
    code, body = request(port, "POST", "/workflows/conformance_secret/runs",
                         {"input": {"note": {"deep": {"secret": "s%d" % i}}}})
    if code == 201:
        waiting.append(body["runId"])
check(len(waiting) == 5, "5 runs wait at their Gates (%d)" % len(waiting))

t0 = time.monotonic()
code, body = request(port, "POST", "/workflows/conformance_crasher/runs",
                     {"input": {"value": "segv"}}, key="crash-1")
print("the start whose host function segfaults: %s %s" % (code, body))
second = serve_child(sup.pid, other_than=first)
while not healthy(port) and time.monotonic() - t0 < 20:
    time.sleep(0.01)
back_ms = (time.monotonic() - t0) * 1000
print("serve %s crashed; serve %s answers /healthz %.0f ms after the start was sent"
      % (first, second, back_ms))
check(second is not None and second != first, "the supervisor starts serve again (pid %s)" % second)
check(back_ms < 5000, "serve answers again within 5 s of the crash (%.0f ms)" % back_ms)
check(sup.poll() is None, "the supervisor lives on")

# The start, sent again with its key: its run, which went on without calling the function again.
code, body = request(port, "POST", "/workflows/conformance_crasher/runs",
                     {"input": {"value": "segv"}}, key="crash-1")
crashed_run = body.get("runId") if isinstance(body, dict) else None
print("the start sent again: %s %s" % (code, body))
check(code in (200, 201) and crashed_run, "the start sent again is answered with its run")
status = None
for _ in range(100):
    code, view = request(port, "GET", "/runs/%s" % crashed_run)
    status = view.get("status") if isinstance(view, dict) else None
    if status not in (None, "waiting", "running"):
        break
    time.sleep(0.05)
print("the crashed run: %s, output %s" % (status, json.dumps(view.get("output"))))
check(status == "done" and "interrupted" in json.dumps(view.get("output")),
      "the run whose host function crashed goes on, its call `interrupted` (%s)" % status)
crashes = open(err).read().count("ended by signal")
check(crashes == 1, "the function is not called again: serve crashed %d time(s)" % crashes)
answered = 0
for rid in waiting:
    code, _ = request(port, "POST", "/runs/%s/gates/approval/events" % rid,
                      {"event": "rate", "payload": {"score": 5}})
    answered += code == 200
print("runs that waited through the crash, answered after it: %d of 5" % answered)
check(answered == 5, "nothing of the waiting runs is lost (%d of 5 answered)" % answered)

# ---- 2. SIGTERM goes to the serve, which drains; the supervisor exits 0 with it ---------------
child = serve_child(sup.pid)
sup.send_signal(signal.SIGTERM)
try:
    rc = sup.wait(timeout=15)
except subprocess.TimeoutExpired:
    sup.kill()
    rc = "hung"
gone = child is not None and not os.path.exists("/proc/%d" % child)
check(rc == 0 and gone, "SIGTERM stops serve and its supervisor (exit %s, serve gone %s)"
      % (rc, gone))

# ---- 3. a crash loop: five crashes within 60 s, and the supervisor gives up (exit 70) ---------
sup, port, err = start_serve("loop")
last = None
for n in range(5):
    child = serve_child(sup.pid, other_than=last)
    if child is None:
        break
    os.kill(child, signal.SIGSEGV)
    last = child
try:
    rc = sup.wait(timeout=30)
except subprocess.TimeoutExpired:
    sup.kill()
    rc = "hung"
log = open(err).read()
print("crash loop: exit %s; %s" % (rc, [l for l in log.splitlines() if "giving up" in l]))
check(rc == 70 and "giving up" in log, "five crashes in 60 s: the supervisor gives up, exit 70")

# ---- 4. SIGKILL of the supervisor takes its serve with it ------------------------------------
sup, port, err = start_serve("kill")
child = serve_child(sup.pid)
sup.kill()
sup.wait()
for _ in range(100):
    if not os.path.exists("/proc/%d" % child) or \
            open("/proc/%d/stat" % child).read().split(")")[1].split()[0] == "Z":
        break
    time.sleep(0.02)
alive = os.path.exists("/proc/%d" % child) and \
    open("/proc/%d/stat" % child).read().split(")")[1].split()[0] != "Z"
check(not alive, "a serve outlives no supervisor (SIGKILL of the supervisor)")
