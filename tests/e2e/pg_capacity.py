#!/usr/bin/env python3
"""`--capacity` across serves sharing one PostgreSQL store (#32, docs/scaling.md#several-hosts),
on the fixture `pg`'s server, each step printing its counts:

- starts sent to one serve past its --capacity are queued in the store (201, `"queued": true`),
  owned by nobody, and the other serve (and this one, as its runs end) claims and begins them;
- no serve drives more than its capacity at any instant (the store sampled as they work);
- every run ends done, each run's process ran once (0 lost, 0 twice);
- a queued start sent again with its Idempotency-Key is answered with the same run; a refused
  input is 400 and stores nothing, queued or not;
- a waiting run that no serve can restore is claimed once and kept, not claimed again and again;
- a second serve under the first one's --host-name: the older stops (exit 64, saying why), the
  newer serves on, and the two do not fence each other without end.

Usage: pg_capacity.py RUNNER_DIR STORE TMP"""
import json
import os
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_lib import check, start_serve  # noqa: E402

runners, store, tmp = sys.argv[1:4]
runner = os.path.join(runners, "conformance_command")
env = dict(os.environ, JR2_STORE=store)
CAP = 4  # the program's standing Pools (five) take some of it: each is a run a serve drives
N = 12
log = os.path.join(tmp, "ran.log")


def psql(sql):
    import subprocess
    return subprocess.run(["psql", store, "-qAt", "-c", sql], capture_output=True, text=True,
                          check=True).stdout.strip()


def serve(name, label=None):
    """A serve named `name` in the hosts table; its stderr in TMP/serve.LABEL.err."""
    return start_serve(runner, env, tmp, label or name,
                       ["--host-name", name, "--lease-ttl", "5", "--capacity", str(CAP)])


def post(port, path, body, key=None):
    headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
    if key:
        headers["Idempotency-Key"] = key
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path),
                                 data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=15) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def metrics_of(port):
    req = urllib.request.Request("http://127.0.0.1:%d/metrics" % port,
                                 headers={"Authorization": "Bearer " + token})
    return dict(line.split(" ", 1) for line in urllib.request.urlopen(req, timeout=10).read()
                .decode().splitlines() if line and not line.startswith("#"))


def start(port, mark, key=None):
    argv = ["sh", "-c", 'printf "%s\\n" "$1" >> "$2"; sleep 0.4', "sh", mark, log]
    return post(port, "/workflows/conformance_command/runs", {"input": {"argv": argv}}, key)


a, port_a, _ = serve("cap-a")
token = psql("SELECT value FROM jr2_meta WHERE key = 'instance_token'")
b, port_b, _ = serve("cap-b")

# Every start sent to one serve, as a load balancer that sticks to one would.
answers = [start(port_a, "m%02d" % i, key="k%02d" % i if i == N - 1 else None) for i in range(N)]
codes = [c for c, _ in answers]
queued = [body["runId"] for c, body in answers if body.get("queued")]
check(codes == [201] * N and len(queued) >= N - CAP and
      all(body.get("status") == "waiting" and body.get("gates") == [] for _, body in answers),
      "%d starts to one serve of capacity %d: all 201, %d queued for a serve with room" %
      (N, CAP, len(queued)))
code, again = start(port_a, "m%02d" % (N - 1), key="k%02d" % (N - 1))
check(code == 200 and again.get("replayed") and again.get("runId") == answers[-1][1]["runId"],
      "the last (queued) start sent again with its Idempotency-Key: %d, the same run" % code)
OURS = "SELECT count(*) FROM runs WHERE workflow = 'conformance_command'"
before = psql(OURS)
code, body = post(port_a, "/workflows/conformance_command/runs", {"input": {"argv": "sleep"}})
check(code == 400 and psql(OURS) == before,
      "a refused input while the serve is full: %d, nothing stored (%s runs)" % (code, before))

# Driven by both, never more than CAP each at once.
most = {}
t0 = time.time()
while time.time() - t0 < 60:
    rows = psql("SELECT owner || '=' || count(*) FROM runs WHERE status = 'waiting'"
                " AND owner IS NOT NULL GROUP BY owner")
    for pair in rows.split():
        owner, n = pair.split("=")
        most[owner] = max(most.get(owner, 0), int(n))
    if psql(OURS + " AND status <> 'waiting'") == str(N):
        break
    time.sleep(0.05)
took = time.time() - t0
statuses = psql("SELECT status || '=' || count(*) FROM runs WHERE workflow = 'conformance_command'"
                " GROUP BY status ORDER BY 1")
check(statuses == "done=%d" % N, "all %d runs ended done in %.1f s: %s" % (N, took, statuses))
check(most and max(most.values()) <= CAP,
      "the most runs a serve drove at once, its standing runs with them: %s (capacity %d)" % (most, CAP))
ran = open(log).read().split() if os.path.exists(log) else []
lost = [m for m in ("m%02d" % i for i in range(N)) if m not in ran]
twice = sorted({m for m in ran if ran.count(m) > 1})
check(not lost and not twice, "each run's process ran once: %d lost, %d twice (%d lines)" %
      (len(lost), len(twice), len(ran)))
ma, mb = metrics_of(port_a), metrics_of(port_b)
check(float(ma.get("jr2_starts_queued_total", 0)) == len(queued) and
      float(mb.get("jr2_runs_claimed_total", 0)) > 0,
      "serve a queued %s starts; serve b claimed %s of them, a %s" %
      (ma.get("jr2_starts_queued_total"), mb.get("jr2_runs_claimed_total"),
       ma.get("jr2_runs_claimed_total")))
feed = psql("SELECT kind || ': ' || line FROM feed WHERE run = '%s' ORDER BY seq" % queued[0])
check(feed.startswith("note: queued: the serve it was started on drives its --capacity") and
      "ended" in feed, "a queued run's feed says it was queued, then that it ended: %r" %
      feed.replace("\n", " | ")[:200])
# A waiting run no serve can restore (a row another tool wrote): claimed once and kept by that
# serve, undriven, rather than let go and claimed again, by each serve in turn, without end.
psql("INSERT INTO runs (id, workflow, status, updated, rev, snapshot)"
     " VALUES ('bad0000damaged', 'conformance_command', 'waiting', 0, 1, 'not a run')")
time.sleep(3.5)
rev, owner = psql("SELECT rev || ' ' || coalesce(owner, '-') FROM runs"
                  " WHERE id = 'bad0000damaged'").split()
check(rev == "2" and owner in ("cap-a", "cap-b"),
      "a damaged waiting run is claimed once in 3.5 s and kept by %s (revision %s)" % (owner, rev))
# A second serve under the first one's --host-name: the newer incarnation is the host, and the
# older stops with a clear error (exit 64) instead of joining again, which would fence the newer,
# which would join again, without end.
a2, port_a2, err_a2 = serve("cap-a", "cap-a2")
t0 = time.time()
try:
    code = a.wait(timeout=15)
except Exception:  # noqa: BLE001 (still running: the check below says so)
    code = None
took = time.time() - t0
said = open(os.path.join(tmp, "serve.cap-a.err")).read()
check(code == 64 and "another serve joined the run store as host `cap-a`" in said and
      "--host-name" in said,
      "the older serve named cap-a stops when another joins under its name: exit %s in %.1f s" %
      (code, took))
epoch = psql("SELECT epoch FROM hosts WHERE name = 'cap-a'")
time.sleep(3)
again = psql("SELECT epoch FROM hosts WHERE name = 'cap-a'")
check(a2.poll() is None and epoch == again and metrics_of(port_a2).get("jr2_lease_lost_total",
                                                                         "1").strip() == "0",
      "the newer one serves on, its lease kept: epoch %s, 3 s later %s" % (epoch, again))
for p in (a2, b):
    p.terminate()
    p.wait(timeout=20)
