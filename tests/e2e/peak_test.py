#!/usr/bin/env python3
"""What runs have live at once, held to what `jr2c check` works out before they run (#36,
docs/checks.md#e0412): the runner's `--peak` counts the Pool workers, processes and dispatched
runs live at once in its process (serve's /metrics, `jr2_live_peak`), beside the workflow's
figures compiled into it.

- Every conformance workflow is run once (`run --peak`, its input from the table below, a
  timeout of 20 s): no peak is above its figure. A workflow whose figure is unbounded (a `cap`
  read from input with no bound) is counted, not compared.
- Each sample reaches its figures exactly, when its work allows: tickets (cap 2, Gates) 2
  workers; build_matrix with ten independent packages and stand-ins for cmake and ctest that
  take 0.3 s (cap min(input.jobs, 8), jobs 12) 8 workers and 8 processes; alerts under serve
  with six alerts pushed (a standing Pool of runs, cap 4) 4 runs.
- conformance_torture (cap min(input.jobs, 8), one process a worker) with 40 items that take
  0.2 s each: 8 workers and 8 processes, its figures.

Prints a line per workflow and the counts. Usage: peak_test.py CONFORMANCE_DIR SAMPLES_DIR SOURCE_DIR
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

conformance, samples, src = (os.path.realpath(a) for a in sys.argv[1:4])
passed = failed = 0
tmp = tempfile.mkdtemp(prefix="jr2-peak-")


def check(ok, what):
    global passed, failed
    print(("PASS: " if ok else "FAIL: ") + what, flush=True)
    if ok:
        passed += 1
    else:
        failed += 1


PEAK = re.compile(r"(workers|processes|runs) (\d+) of (\d+|unbounded|\?)")


def peaks(stderr):
    """{kind: (peak, figure or None when unbounded)} from a `peak:` line."""
    for line in stderr.splitlines():
        if line.startswith("peak:"):
            return {k: (int(n), None if of == "unbounded" else int(of) if of != "?" else "?")
                    for k, n, of in PEAK.findall(line)}
    return None


def run(runner, args, cwd, timeout=20, env=None):
    e = dict(os.environ, JR2_STORE=os.path.join(cwd, "jr2.db"), **(env or {}))
    try:
        p = subprocess.run([runner] + args + ["--peak"], cwd=cwd, env=e, capture_output=True,
                           text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as t:
        return None, "", (t.stderr or b"").decode() if isinstance(t.stderr, bytes) else (t.stderr or "")


def fresh(name):
    d = os.path.join(tmp, name)
    os.makedirs(d)
    return d


# ---- every conformance workflow ------------------------------------------------------------

tasks = fresh("tasks")
with open(os.path.join(tasks, "tasks.json"), "w") as f:
    json.dump([{"id": "t%02d" % i} for i in range(12)], f)
tasks_file = os.path.join(tasks, "tasks.json")
log = os.path.join(tasks, "log.txt")
tickets_file = os.path.join(src, "samples", "tickets", "backlog.json")
INPUTS = {
    "conformance_torture": {"tasks": tasks_file, "log": log, "nap": "0.01"},
    "conformance_tickets": {"backlog": tickets_file},
    "conformance_load": {"backlog": tasks_file},
    "conformance_hooked": {"tasks": tasks_file},
    "conformance_queued": {"tasks": [{"id": "q1"}, {"id": "q2"}, {"id": "q3"}]},
    "conformance_alert_run": {"alert": {"id": "A-1", "level": "error"}},
    "conformance_push_item": {"item": {"id": "P-1"}},
    "conformance_slow_item": {"item": {"id": "P-2"}},
    "conformance_refused_item": {"id": "R-1"},
    "conformance_instant": {"tasks": tasks_file},
    "conformance_crasher": {"value": "fine"},
    "conformance_command": {"argv": ["true"]},
    "conformance_shell": {"script": "exit 0"},
    "conformance_fetch": {"url": "http://127.0.0.1:9/"},
    "conformance_http_read": {"url": "http://127.0.0.1:9/"},
}
compared = unbounded = ran = 0
ends = {}  # how the runs that ran ended: exit code -> how many
over = []
for name in sorted(os.listdir(conformance)):
    runner = os.path.join(conformance, name)
    if not name.startswith("conformance_") or not os.access(runner, os.X_OK):
        continue
    cwd = fresh(name)
    args = ["run"]
    if name in INPUTS:
        args += ["--input", json.dumps(INPUTS[name])]
    rc, _, err = run(runner, args, cwd)
    got = peaks(err)
    if got is None:
        # A run that did not end within the timeout, or was refused before it ran: nothing counted.
        why = "timed out" if rc is None else "exit %d, no peak line: %s" % (rc, err.strip()[:120])
        print("  %-28s %s" % (name, why))
        continue
    ran += 1
    ends[rc] = ends.get(rc, 0) + 1
    line = ", ".join("%s %d of %s" % (k, n, "unbounded" if of is None else of)
                     for k, (n, of) in got.items())
    print("  %-28s exit %s: %s" % (name, rc, line))
    for kind, (n, of) in got.items():
        if of is None:
            unbounded += 1
        elif of == "?":
            over.append("%s: no figures compiled in" % name)
        else:
            compared += 1
            if n > of:
                over.append("%s: %s %d > %d" % (name, kind, n, of))
# Those whose Source is scripted by the runtime's tests (`scripted_next`) end in error at their
# first item here: counted, with nothing live.
check(ran >= 30, "%d conformance workflows ran with --peak; by exit code: %s" % (
    ran, ", ".join("%s: %d" % (k, v) for k, v in sorted(ends.items()))))
check(not over, "no peak above its figure: %d compared, %d unbounded figures not compared%s"
      % (compared, unbounded, "; over: " + "; ".join(over) if over else ""))

# ---- conformance_torture: its figures reached ----------------------------------------------

d = fresh("torture")
with open(os.path.join(d, "tasks.json"), "w") as f:
    json.dump([{"id": "t%02d" % i} for i in range(40)], f)
rc, _, err = run(os.path.join(conformance, "conformance_torture"),
                 ["run", "--input", json.dumps({"tasks": "tasks.json", "log": "log.txt",
                                                "nap": "0.2"})], d, timeout=60)
got = peaks(err) or {}
check(rc == 0 and got.get("workers") == (8, 8) and got.get("processes") == (8, 8)
      and got.get("runs") == (0, 0),
      "conformance_torture, 40 items of 0.2 s: %s (its figures: 8 workers, 8 processes)" % got)

# ---- the samples -----------------------------------------------------------------------------

d = fresh("tickets")
os.makedirs(os.path.join(d, "samples", "tickets"))  # its default `backlog` is that path
shutil.copy(tickets_file, os.path.join(d, "samples", "tickets"))
rc, _, err = run(os.path.join(samples, "tickets"), ["run"], d)
got = peaks(err) or {}
check(rc == 3 and got == {"workers": (2, 2), "processes": (0, 0), "runs": (0, 0)},
      "tickets waits at its Gates with 2 workers, its figure: exit %s, %s" % (rc, got))

d = fresh("matrix")
os.makedirs(os.path.join(d, "bin"))
for tool in ("cmake", "ctest"):
    with open(os.path.join(d, "bin", tool), "w") as f:
        f.write("#!/bin/sh\nsleep 0.3\necho '100% tests passed, 0 tests failed out of 1'\n")
    os.chmod(os.path.join(d, "bin", tool), 0o755)
packages = []
for i in range(10):
    os.makedirs(os.path.join(d, "packages", "p%d" % i))
    packages.append({"id": "p%d" % i, "path": "packages/p%d" % i, "needs": []})
with open(os.path.join(d, "packages.json"), "w") as f:
    json.dump(packages, f)
rc, _, err = run(os.path.join(samples, "build_matrix"),
                 ["run", "--input", json.dumps({"jobs": 12, "retries": 0})], d, timeout=60,
                 env={"PATH": os.path.join(d, "bin") + ":" + os.environ["PATH"]})
got = peaks(err) or {}
check(rc == 0 and got == {"workers": (8, 8), "processes": (8, 8), "runs": (0, 0)},
      "build_matrix, ten packages, jobs 12 (cap min(input.jobs, 8)): exit %s, %s" % (rc, got))

# alerts under serve: six alerts, a standing Pool of runs with cap 4.
d = fresh("alerts")
env = dict(os.environ, JR2_STORE=os.path.join(d, "jr2.db"),
           SENTRY_HOOK_SECRET="peak-%d" % os.getpid())
with open(os.path.join(d, "serve.log"), "w") as logf:
    serve = subprocess.Popen(
        [os.path.join(samples, "alerts"), "serve", "--listen", "127.0.0.1:0", "--callers",
         os.path.join(src, "samples", "alert-triage", "callers.json"), "--agents",
         os.path.join(src, "samples", "alert-triage", "agents.json")],
        cwd=d, env=env, stdout=logf, stderr=subprocess.STDOUT)
try:
    url = None
    for _ in range(100):
        m = re.search(r"http://127\.0\.0\.1:\d+", open(os.path.join(d, "serve.log")).read())
        if m:
            url = m.group(0)
            break
        time.sleep(0.1)
    check(url is not None, "alerts serve started")
    six = [{"id": "SENTRY-%d" % (5000 + i), "title": "alert %d" % i, "level": "error",
            "culprit": None, "web_url": "https://sentry.example.com/issues/%d/" % i}
           for i in range(6)]
    with open(os.path.join(d, "six.json"), "w") as f:
        json.dump(six, f)
    sent = subprocess.run(
        ["python3", os.path.join(src, "samples", "alert-triage", "sentry.py"), "--url", url,
         "--alerts", os.path.join(d, "six.json")], env=env, capture_output=True, text=True,
        timeout=60)
    check(sent.returncode == 0, "six alerts delivered: exit %d %s" % (sent.returncode,
                                                                       sent.stdout[-300:]))
    token = open(os.path.join(d, "jr2.db.token")).read().strip()
    metrics = ""
    for _ in range(50):  # the Pool starts its runs a turn after the deliveries
        req = urllib.request.Request(url + "/metrics", headers={"Authorization": "Bearer " + token})
        metrics = urllib.request.urlopen(req, timeout=10).read().decode()
        if 'jr2_live_peak{kind="runs"} 4' in metrics:
            break
        time.sleep(0.1)
    wanted = ['jr2_live_peak{kind="runs"} 4', 'jr2_live{kind="runs"} 4',
              'jr2_concurrency_figure{workflow="alerts",kind="runs"} 4',
              'jr2_concurrency_figure{workflow="triage",kind="runs"} 0']
    shown = [l for l in metrics.splitlines() if l.startswith(("jr2_live", "jr2_concurrency"))]
    check(all(w in metrics for w in wanted),
          "alerts with six alerts held: 4 runs live at once, its figure (/metrics: %s)"
          % "; ".join(shown))
finally:
    serve.send_signal(signal.SIGTERM)
    try:
        serve.wait(timeout=15)
    except subprocess.TimeoutExpired:
        serve.kill()

shutil.rmtree(tmp, ignore_errors=True)
print("peak: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
