#!/usr/bin/env python3
"""A standing Pool of runs across serves sharing one PostgreSQL store (#32 item 5,
docs/scaling.md#several-hosts), on the fixture `pg`'s server, each step printing its counts:

- signed hook deliveries sent to a serve that does not drive the standing Pool are handed to the
  one that does (the store's inbox, woken by a NOTIFY) and answered with its verdict: 0 answered
  503, a delivery id answered once, a refused signature 401 at the door;
- a Pool and a run it dispatched driven by two different serves (a claim split them): the run's
  end, stored by one serve, reaches the Pool on the other (read from the store each second), and
  the Pool's item settles.

Usage: pg_standing.py RUNNER_DIR STORE TMP"""
import hashlib
import hmac
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

runners, store, tmp = sys.argv[1:4]
runner = os.path.join(runners, "conformance_alerts")
SECRET = "mon-" + hashlib.sha256(os.urandom(16)).hexdigest()[:20]
callers = os.path.join(tmp, "callers.json")
with open(callers, "w") as f:
    json.dump({"callers": [], "hooks": {"monitor": {"secret_env": "MON_SECRET"},
                                        "pager": {"secret_env": "MON_SECRET"}}}, f)
env = dict(os.environ, JR2_STORE=store, MON_SECRET=SECRET)
TTL = 3


def psql(sql):
    return subprocess.run(["psql", store, "-qAt", "-c", sql], capture_output=True, text=True,
                          check=True).stdout.strip()


def wait_for(cond, seconds):
    t0 = time.time()
    while time.time() - t0 < seconds:
        if cond():
            return time.time() - t0
        time.sleep(0.05)
    return None


def serve(name, *more):
    return start_serve(runner, env, tmp, name, ["--host-name", name, "--lease-ttl", str(TTL),
                                                "--callers", callers, *more])


def request(port, method, path, body=None, headers=None):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=body,
                                 headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def deliver(port, alert, delivery, secret=SECRET):
    body = json.dumps({"alert": {"id": alert, "level": "warn"}}).encode()
    sig = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return request(port, "POST", "/hooks/monitor", body,
                   {"X-Jr2-Event": "alert.raised", "X-Hub-Signature-256": sig,
                    "X-Jr2-Delivery": delivery, "Content-Type": "application/json"})


def token():
    return psql("SELECT value FROM jr2_meta WHERE key = 'instance_token'")


def post(port, path, body):
    return request(port, "POST", path, json.dumps(body).encode(),
                   {"Authorization": "Bearer " + token(), "Content-Type": "application/json"})


def owner(run_id):
    return psql("SELECT coalesce(owner, '-') FROM runs WHERE id = '%s'" % run_id)


def pool_run():
    return psql("SELECT id FROM runs WHERE workflow = 'conformance_alerts' AND status = 'waiting'")


def callee(alert):
    return psql("SELECT id FROM runs WHERE workflow = 'conformance_alert_run' AND dkey = '%s'"
                " AND status = 'waiting'" % alert)


def settled(pool, alert):
    """Whether the Pool's feed says item `alert` settled."""
    out = subprocess.run([runner, "log", pool, "--json"], env=env, capture_output=True,
                         text=True).stdout
    try:
        feed = json.loads(out)
    except ValueError:
        return False
    return any(e.get("kind") == "settled" and (e.get("data") or {}).get("item") == alert
               for e in feed)


# Alpha stands the Pool up (it owns its head); beta drives none of it.
a, port_a, err_a = serve("alpha")
check(wait_for(lambda: pool_run() != "", 5) is not None, "alpha stands the Pool up")
pool = pool_run()
check(owner(pool) == "alpha", "alpha owns the standing run %s (%s)" % (pool, owner(pool)))
b, port_b, err_b = serve("beta")
time.sleep(1.2)
check(owner(pool) == "alpha", "beta takes none of it (%s)" % owner(pool))

# Deliveries to beta are handed to alpha and answered with alpha's verdict.
codes = {}
t0 = time.time()
for i, alert in enumerate(["a1", "a2"]):
    code, body = deliver(port_b if i == 0 else port_a, alert, "d-" + alert)
    codes[code] = codes.get(code, 0) + 1
    check(code == 200 and body.get("verdict") == "held" and body.get("item") == alert,
          "%s through %s: %d %s" % (alert, "beta" if i == 0 else "alpha", code, body))
took = time.time() - t0
code, again = deliver(port_b, "a1", "d-a1")
check(code == 200 and again.get("verdict") == "held",
      "d-a1 sent again through beta: answered once, the same (%d %s)" % (code, again))
code, body = deliver(port_b, "a9", "d-bad", secret="wrong")
check(code == 401, "a bad signature at beta is 401 at its door (%d)" % code)
check(wait_for(lambda: callee("a1") != "" and callee("a2") != "", 5) is not None,
      "a1 and a2 each dispatched a run")
r1, r2 = callee("a1"), callee("a2")
print("deliveries through a serve that does not drive the Pool: %s (answered 503: %d) in %.2f s"
      % (codes, codes.get(503, 0), took), flush=True)
check(owner(r1) == "alpha" and owner(r2) == "alpha", "both runs driven by alpha (%s, %s)" %
      (owner(r1), owner(r2)))
b.send_signal(signal.SIGTERM)
check(b.wait(timeout=20) == 0, "beta stops")

# A split, as claims and a death make one: alpha lets everything go; the heads are held by a host
# `zeta` (a row only: a serve that took them and hangs), so delta, with room for two runs, stands
# nothing up and claims the two oldest waiting runs (a1's and a2's, made oldest here); then zeta's
# lease runs out, and gamma takes the heads with their standing runs, whose dispatched runs it
# cannot take from a live delta. The Pool and its runs are then driven by two serves.
a.send_signal(signal.SIGTERM)
check(a.wait(timeout=20) == 0, "alpha stops, letting everything go")
psql("INSERT INTO hosts (name, epoch, alive_until, gone, ttl_ms) VALUES ('zeta', 1,"
     " clock_timestamp() + interval '1 hour', false, 3000);"
     " UPDATE heads SET owner = 'zeta', owner_epoch = 1;"
     " UPDATE runs SET updated = 0 WHERE id IN ('%s', '%s')" % (r1, r2))
d, port_d, err_d = serve("delta", "--capacity", "2")
check(wait_for(lambda: owner(r1) == "delta" and owner(r2) == "delta", 5) is not None,
      "delta claims a1's and a2's runs (%s, %s)" % (owner(r1), owner(r2)))
time.sleep(1.2)
check(owner(pool) == "-", "and not the Pool, whose head zeta holds (%s)" % owner(pool))
psql("UPDATE hosts SET alive_until = clock_timestamp() WHERE name = 'zeta'")
g, port_g, err_g = serve("gamma")
check(wait_for(lambda: owner(pool) == "gamma", 5) is not None,
      "zeta reaped, gamma takes the head and drives the standing Pool (%s)" % owner(pool))
time.sleep(1.2)
check(owner(r1) == "delta" and owner(r2) == "delta",
      "and a1's and a2's runs stay delta's (%s, %s)" % (owner(r1), owner(r2)))
# a1's run ends on delta (its Gate answered there); gamma's Pool hears it.
code, body = post(port_d, "/runs/%s/gates/review/events" % r1, {"event": "close"})
check(code == 200 and body.get("status") == "done", "a1's run ends on delta (%d %s)" % (code, body))
heard = wait_for(lambda: settled(pool, "a1"), 6)
print("a run's end on delta heard by its Pool on gamma after %s s" % (heard and round(heard, 2)),
      flush=True)
check(heard is not None, "gamma's Pool settles a1 after its run ended on delta")
check(not settled(pool, "a2"), "a2 (its run still waiting) is not settled")
# Through gamma, to delta's run: forwarded; the Pool hears that end too.
code, body = post(port_g, "/runs/%s/gates/review/events" % r2, {"event": "close"})
check(code == 200 and body.get("status") == "done", "a2's run ends (answered through gamma: %d)" % code)
check(wait_for(lambda: settled(pool, "a2"), 6) is not None, "and the Pool settles a2")
for p in (g, d):
    p.send_signal(signal.SIGTERM)
    check(p.wait(timeout=20) == 0, "a serve stops on SIGTERM")
