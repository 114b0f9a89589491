#!/usr/bin/env python3
"""Several serves on one PostgreSQL store (#32, docs/scaling.md#several-hosts), on the fixture
`pg`'s server, each step printing its counts:

- runs started by the runner (owned by nobody) are claimed by the first serve; a second serve
  claims none of them (each run has one owner);
- an answer through the owner is acknowledged; the owner is SIGKILLed; the second serve reaps it
  and owns every run within the TTL + 5 s; the acknowledged answer is there (0 lost), and the runs
  answer through the new owner;
- the new owner is SIGSTOPped past its TTL while a third serve reaps it and takes the runs; let go
  on (SIGCONT), it finds its lease lost, lets go of everything and joins again, and nothing it held
  is written by it after it was fenced (every run's revision and owner are the third's);
- a serve stopped by SIGTERM lets go of its runs at once (owner cleared, host gone), and another
  serve claims them within a second or two.

Usage: pg_hosts.py RUNNER STORE TMP"""
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_lib import check, start_serve  # noqa: E402

runner, store, tmp = sys.argv[1:4]
env = dict(os.environ, JR2_STORE=store)
TTL = 3  # seconds: --lease-ttl


def psql(sql):
    return subprocess.run(["psql", store, "-qAt", "-c", sql], capture_output=True, text=True,
                          check=True).stdout.strip()


def owners():
    rows = psql("SELECT coalesce(owner, '-') || '=' || count(*) FROM runs"
                " WHERE status = 'waiting' GROUP BY owner ORDER BY 1")
    return dict(r.split("=") for r in rows.split()) if rows else {}


def waiting():
    return psql("SELECT count(*) FROM runs WHERE status = 'waiting'")


def all_of(name):
    return lambda: owners() == {name: waiting()}


def wait_for(cond, seconds):
    t0 = time.time()
    while time.time() - t0 < seconds:
        if cond():
            return time.time() - t0
        time.sleep(0.1)
    return None


def post(port, path, body):
    """POST `body` (JSON) to serve on `port` with the instance token: (status, JSON answer)."""
    req = urllib.request.Request(
        "http://127.0.0.1:%d%s" % (port, path), data=json.dumps(body).encode(),
        headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"},
        method="POST")
    try:
        with urllib.request.urlopen(req, timeout=15) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def answer(port, rid, gate, event, payload):
    return post(port, "/runs/%s/gates/%s/events" % (rid, gate),
                {"event": event, "payload": payload})


def start(port):
    return post(port, "/workflows/conformance_secret/runs",
                {"input": {"note": {"deep": {"secret": "http"}}}})


def serve(name, *more):
    return start_serve(runner, env, tmp, name,
                       ["--host-name", name, "--lease-ttl", str(TTL), *more])


def metrics_of(port):
    req = urllib.request.Request("http://127.0.0.1:%d/metrics" % port,
                                 headers={"Authorization": "Bearer " + token})
    return dict(line.split(" ", 1) for line in urllib.request.urlopen(req, timeout=10).read()
                .decode().splitlines() if line and not line.startswith("#"))


N = 6
ids = []
for i in range(N):
    subprocess.run([runner, "run", "--input", '{"note": {"deep": {"secret": "s%d"}}}' % i], env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
# Each run of the program waits at its Gates, and a Pool's may wait with runs it dispatched.
ids = psql("SELECT id FROM runs WHERE status = 'waiting' AND dkey IS NULL ORDER BY id").split()
check(len(ids) == N and owners() == {"-": waiting()},
      "%d runs (%s with theirs) wait, owned by nobody: %s" % (len(ids), waiting(), owners()))

a, port_a, err_a = serve("alpha")
token = psql("SELECT value FROM jr2_meta WHERE key = 'instance_token'")
check(len(token) == 64, "the instance token is kept in the store (64 hex digits)")
took = wait_for(all_of("alpha"), 5)
check(took is not None, "alpha claims all %s runs (%s s): %s" %
      (waiting(), took and round(took, 1), owners()))
b, port_b, err_b = serve("beta")
time.sleep(1.5)
check(all_of("alpha")(), "beta claims none of alpha's: %s" % owners())

code, body = answer(port_a, ids[0], "approval", "rate", {"score": 4})
check(code == 200 and body.get("status") == "waiting", "an answer through alpha: %d" % code)
own = body
# A change sent to a serve that does not drive the run is handed to the one that does (the
# store's inbox), and answered with what that one did.
t0 = time.time()
code, body = answer(port_b, ids[1], "approval", "rate", {"score": 4})
took = time.time() - t0
gate_names = [g.get("gate") for g in body.get("gates", [])]
check(code == 200 and body.get("status") == "waiting" and "approval" not in gate_names,
      "an answer through beta to alpha's run is forwarded to alpha (%d in %.2f s): %s" %
      (code, took, body))
check(set(body) == {"status", "gates", "open"} and body.get("gates") == own.get("gates")
      and body.get("open") == own.get("open"),
      "it is answered as alpha answers its own: %s, alpha's %s" % (body, own))
code, body = answer(port_b, ids[1], "approval", "rate", {"score": 4})
check(code == 409, "the same answer again, through beta, is 409 (%d): %s" % (code, body))
code, body = answer(port_b, ids[3], "approval", "rate", {"score": "x"})
check(code == 400, "a payload alpha refuses, through beta, is 400 (%d): %s" % (code, body))
code, body = post(port_b, "/runs/%s/events" % ids[5], {"type": "CANCEL"})
status5 = psql("SELECT status FROM runs WHERE id = '%s'" % ids[5])
check(code == 200 and body.get("status") == "cancelled" and status5 == "cancelled",
      "a cancel through beta of alpha's run is done by alpha (%d, stored %s): %s" %
      (code, status5, body))

# Wake-ups (docs/scaling.md#wake-ups): a forwarded answer is carried by NOTIFYs both ways, not
# by the 200 ms polls: alpha is woken for the request, beta for the answer.
lat = []
for i in range(5):
    code, body = start(port_a)
    rid = body.get("runId", "")
    t0 = time.time()
    code, body = answer(port_b, rid, "approval", "rate", {"score": 3})
    lat.append(time.time() - t0)
    check(code == 200 and body.get("status") == "waiting", "a forwarded answer (%d): %s" % (code, body))
lat.sort()
print("forwarded answers: median %.0f ms, slowest %.0f ms" % (lat[2] * 1000, lat[-1] * 1000),
      flush=True)
ma, mb = metrics_of(port_a), metrics_of(port_b)
check(ma.get("jr2_listening") == "1" and mb.get("jr2_listening") == "1", "both serves listen")
check(int(ma.get('jr2_wakeups_total{kind="inbox"}', "0")) >= 5 and
      int(mb.get('jr2_wakeups_total{kind="answers"}', "0")) >= 5,
      "alpha was woken for each request and beta for each answer (inbox %s, answers %s)" %
      (ma.get('jr2_wakeups_total{kind="inbox"}'), mb.get('jr2_wakeups_total{kind="answers"}')))
check(lat[2] < 0.5, "the median forwarded answer takes under 0.5 s (%.0f ms)" % (lat[2] * 1000))
check(int(ma.get("jr2_heartbeats_total", "0")) >= 1, "alpha's keeper beats (%s)" %
      ma.get("jr2_heartbeats_total"))

alphas = int(owners().get("alpha", "0"))
a.send_signal(signal.SIGKILL)
a.wait()
took = wait_for(all_of("beta"), TTL + 5)
print("alpha SIGKILLed: beta owns every run after %s s (TTL %d s)" %
      (took and round(took, 1), TTL), flush=True)
check(took is not None, "beta takes alpha's runs within the TTL + 5 s: %s" % owners())
metrics = metrics_of(port_b)
check(int(metrics.get("jr2_hosts_reaped_total", "0")) == 1 and
      int(metrics.get("jr2_runs_claimed_total", "0")) >= alphas,
      "beta's /metrics: reaped %s, claimed %s (alpha owned %d)" % (
          metrics.get("jr2_hosts_reaped_total"), metrics.get("jr2_runs_claimed_total"), alphas))
gates0 = subprocess.run([runner, "gates", ids[0]], env=env, capture_output=True, text=True).stdout
lost = 0 if "approval" not in gates0 else 1
print("acknowledged answers lost: %d of 1" % lost, flush=True)
check(lost == 0, "the answer alpha acknowledged is kept")
code, body = answer(port_b, ids[0], "both.x.review", "accept", {})
check(code == 200 and body.get("status") == "done", "run 1 ends through beta: %d %s" % (code, body))

# beta stopped past its TTL: gamma reaps it and takes its runs; beta, let go on, is fenced.
revs_before = psql("SELECT string_agg(id || ':' || rev, ' ' ORDER BY id) FROM runs")
b.send_signal(signal.SIGSTOP)
g, port_g, err_g = serve("gamma", "--poll-only")  # as behind a pooler: no LISTEN
took = wait_for(all_of("gamma"), TTL + 5)
check(took is not None, "gamma takes the runs of a stopped beta within the TTL + 5 s (%s s): %s" %
      (took and round(took, 1), owners()))
revs_gamma = psql("SELECT string_agg(id || ':' || rev || ':' || coalesce(owner, '-'), ' ' ORDER BY id)"
                  " FROM runs")
b.send_signal(signal.SIGCONT)
fenced = wait_for(lambda: "lost its lease" in open(err_b).read(), 8)
check(fenced is not None, "beta, let go on, finds its lease lost and lets go: %s" %
      open(err_b).read().strip().splitlines()[-3:])
rejoined = wait_for(lambda: "joined again" in open(err_b).read(), 5)
check(rejoined is not None, "and joins again")
time.sleep(1.5)
after = psql("SELECT string_agg(id || ':' || rev || ':' || coalesce(owner, '-'), ' ' ORDER BY id)"
             " FROM runs")
written = sum(1 for x, y in zip(revs_gamma.split(), after.split()) if x != y)
print("runs written by beta after it was fenced: %d" % written, flush=True)
check(written == 0, "nothing of beta's is written after it was fenced (%s -> %s)" % (revs_gamma, after))
code, body = answer(port_g, ids[2], "approval", "rate", {"score": 5})
check(code == 200, "an answer through gamma: %d" % code)
mg = metrics_of(port_g)
check(mg.get("jr2_listening") == "0" and mg.get("jr2_notifies_received_total") == "0",
      "gamma, polling only, listens to nothing and works by polling (listening %s, heard %s)" %
      (mg.get("jr2_listening"), mg.get("jr2_notifies_received_total")))
code, body = start(port_g)
new_owner = psql("SELECT coalesce(owner, '-') FROM runs WHERE id = '%s'" % body.get("runId", ""))
check(code == 201 and new_owner == "gamma",
      "a run started through gamma is stored owned by gamma (%d, %s): %s" % (code, new_owner, body))

# gamma stops (SIGTERM): its runs are let go at once, and beta claims them.
g.send_signal(signal.SIGTERM)
check(g.wait(timeout=20) == 0, "gamma stops on SIGTERM")
gone = psql("SELECT gone FROM hosts WHERE name = 'gamma'")
check(gone == "t", "gamma is marked gone")
took = wait_for(all_of("beta"), 4)
check(took is not None, "beta claims gamma's runs after its SIGTERM (%s s): %s" %
      (took and round(took, 1), owners()))
gates2 = subprocess.run([runner, "gates", ids[2]], env=env, capture_output=True, text=True).stdout
check("approval" not in gates2, "the answer gamma acknowledged is kept")
b.send_signal(signal.SIGTERM)
check(b.wait(timeout=20) == 0, "beta stops on SIGTERM")
check(owners() == {"-": waiting()}, "no run is owned once every host stopped: %s" % owners())

# A serve whose store hangs (its host's row locked by another transaction: every heartbeat and
# any commit that checks the lease waits) while a process of its runs works: its keeper judges
# the lease lost at two thirds of the TTL, on its own thread, and kills the process then, before
# the lease runs out and any other host could take the run; the process ran once.
commander = os.path.join(os.path.dirname(runner), "conformance_command")
e, port_e, err_e = start_serve(commander, env, tmp, "epsilon",
                               ["--host-name", "epsilon", "--lease-ttl", str(TTL)])
pidfile = os.path.join(tmp, "command.pids")
code, body = post(port_e, "/workflows/conformance_command/runs",
                  {"input": {"argv": ["sh", "-c", "echo $$ >> %s; exec sleep 30" % pidfile]}})
check(code == 201, "a command's run started on epsilon (%d): %s" % (code, body))
check(wait_for(lambda: os.path.exists(pidfile) and open(pidfile).read().strip(), 5) is not None,
      "its command runs")
pid = int(open(pidfile).read().split()[0])
hold = subprocess.Popen(["psql", store, "-qAt", "-c",
                         "BEGIN; SELECT 1 FROM hosts WHERE name = 'epsilon' FOR UPDATE;"
                         " SELECT pg_sleep(%d); ROLLBACK" % (TTL + 2)],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
t0 = time.time()


def dead():
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


killed = wait_for(dead, TTL + 3)
expired = psql("SELECT alive_until <= clock_timestamp() FROM hosts WHERE name = 'epsilon'")
print("epsilon's store hung: its process killed after %s s (lease %d s, judged lost at %.1f s)"
      % (killed and round(killed, 2), TTL, TTL * 2 / 3), flush=True)
check(killed is not None and killed < TTL, "the process is killed before the lease runs out")
hold.wait(timeout=TTL + 10)
rejoined = wait_for(lambda: "joined again" in open(err_e).read(), 10)
check(rejoined is not None, "epsilon joins again once its store answers: %s" %
      open(err_e).read().strip().splitlines()[-3:])
ran = len(open(pidfile).read().split())
print("the command ran %d time(s)" % ran, flush=True)
ended = wait_for(lambda: psql("SELECT status FROM runs WHERE id = '%s'" % body.get("runId", ""))
                 != "waiting", 10)
time.sleep(0.5)
ran = len(open(pidfile).read().split())
check(ran == 1, "the command ran once (%d), never again after the fence" % ran)
me = metrics_of(port_e)
check(int(me.get("jr2_fence_kills_total", "0")) >= 1 and int(me.get("jr2_lease_lost_total", "0")) >= 1,
      "epsilon's /metrics count the fence (kills %s, leases lost %s)" %
      (me.get("jr2_fence_kills_total"), me.get("jr2_lease_lost_total")))
e.send_signal(signal.SIGTERM)
check(e.wait(timeout=20) == 0, "epsilon stops on SIGTERM")
