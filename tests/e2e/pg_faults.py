#!/usr/bin/env python3
"""Faults of several serves on one PostgreSQL store (#32, docs/scaling.md#several-hosts), each
scenario printing its counts. Two serves, alpha and beta, `--lease-ttl 3`, share a store while
clients send them, as a load balancer would (a connection refused or a 5xx is sent again to the
other serve, and counted):

- Gate answers: runs of `conformance_secret` are started (with an `Idempotency-Key`) and their two
  Gates answered, each through either serve (a run the other serve owns is answered through the
  store's inbox); an answer acknowledged 200 must be kept (its Gate closed, `done` after both);
- hook deliveries: signed deliveries of `bench` "item.new" for 300 distinct keys (a tenth sent
  again under a new delivery id) to the standing Pool `conformance_push_load`, whose every item is
  a run of `conformance_push_item` keyed by it; the serve that does not own the Pool's head answers
  503 `busy`, and the client sends it to the other; a key acknowledged `held`/`existing` must end
  with exactly one run, `done`, and the Pool's feeds must start each item once;
- effects: runs of `conformance_torture` (a Pool whose every item runs one `std.command` that
  appends its id to a log file of the run), counted as torture_test.sh does: every item settled
  or failed once, no process run twice, every failure `interrupted`, every settled item run once;
- sampled every 0.25 s from the database: live (waiting) runs per dispatch key, live runs per
  standing workflow (both at most 1).

Scenarios:
  kill     alpha and beta under that load; the serve that owns the standing Pool's head is
           SIGKILLed at a random instant; the other owns all its runs within the TTL + 5 s.
  restart  on a PostgreSQL server of its own (tests/pg/server.sh: the fixture's is shared with
           other tests), `pg_ctl restart` mid-load, then a second outage of 3 s (past two thirds
           of the TTL, so the hosts fence themselves); both serves join again and answer starts.
  torture  one of the two serves SIGKILLed and started again (under its name) at random instants,
           KILLS times, while the load goes on; then the load ends and every run is counted.

Usage: pg_faults.py RUNNER STORE_KILL STORE_TORTURE PG2_DIR TMP [SCENARIO…]
  (every scenario by default; PG_FAULTS_SEED replays the random instants of a run, which prints
  its seed; PG_FAULTS_KILLS (8) SIGKILLs in the torture)"""
import collections
import hashlib
import hmac
import http.client
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_lib import start_serve  # noqa: E402

runner, store_kill, store_torture, pg2_dir, tmp = sys.argv[1:6]
scenarios = sys.argv[6:] or ["kill", "restart", "torture"]
SERVER_SH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pg", "server.sh")
TTL = 3  # seconds: --lease-ttl
KEYS = 300  # distinct hook keys a scenario delivers
SECRET = "faults-" + hashlib.sha256(os.urandom(16)).hexdigest()[:24]
CALLERS = os.path.join(tmp, "callers.json")
with open(CALLERS, "w") as f:
    json.dump({"callers": [], "hooks": {"bench": {"secret_env": "BENCH_SECRET"}}}, f)
POOL_WF = "conformance_push_load"
ITEM_WF = "conformance_push_item"
GATES_WF = "conformance_secret"
TORTURE_WF = "conformance_torture"
SEED = int(os.environ.get("PG_FAULTS_SEED", "0")) or random.SystemRandom().randrange(1, 1 << 30)
rnd = random.Random(SEED)
print("seed %d (PG_FAULTS_SEED)" % SEED, flush=True)


def check(ok, what, detail=""):
    """A PASS/FAIL line for lib.sh's run_checks; a FAIL says what was found."""
    print(("PASS: " if ok else "FAIL: ") + what +
          ("" if ok or detail == "" else ": " + str(detail)[:800]), flush=True)
    return ok


def psql(url, sql, timeout=20):
    """Rows of `sql` as lists of fields ('|' between them); [] when the server cannot be reached."""
    try:
        p = subprocess.run(["psql", url, "-qAtX", "-F", "|", "-c", sql], capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return []
    if p.returncode != 0:
        return []
    return [line.split("|") for line in p.stdout.splitlines() if line]


class ConnError(Exception):
    pass


def request(port, method, path, body=None, headers=None, timeout=12):
    """(status, parsed body); ConnError when no HTTP answer came."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        h = dict(headers or {})
        if body is not None and not isinstance(body, bytes):
            body = json.dumps(body).encode()
            h.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        data = r.read()
        try:
            return r.status, json.loads(data.decode("utf-8"))
        except ValueError:
            return r.status, {"raw": data.decode("utf-8", "replace")[:200]}
    except (OSError, http.client.HTTPException) as e:
        raise ConnError("%s %s: %s" % (method, path, e or type(e).__name__))
    finally:
        conn.close()


class Host:
    """One serve under its --host-name, started again (a new incarnation) as often as asked."""

    def __init__(self, sc, name):
        self.sc, self.name = sc, name
        self.proc, self.port, self.starts, self.err = None, None, 0, None

    def start(self):
        self.starts += 1
        env = dict(self.sc.env, BENCH_SECRET=SECRET)
        self.proc, self.port, self.err = start_serve(
            runner, env, tmp, "%s.%s.%d" % (self.sc.tag, self.name, self.starts),
            ["--host-name", self.name, "--lease-ttl", str(TTL), "--callers", CALLERS])

    def up(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        if self.up():
            self.proc.send_signal(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait()

    def term(self):
        if self.up():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Scenario:
    """Two serves on one store, the clients that load them, and what they were told."""

    def __init__(self, tag, url):
        self.tag, self.url = tag, url
        self.env = dict(os.environ, JR2_STORE=url)
        self.hosts = [Host(self, "alpha"), Host(self, "beta")]
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.sampling = threading.Event()  # set: the sampler stops
        self.resent = collections.Counter()  # why a request was sent again: "503 busy", "conn", …
        self.starts = {}  # Idempotency-Key -> run id, acknowledged (201, or 200 replayed)
        self.answers = []  # (run, gate) acknowledged 200
        self.gone_gate = collections.Counter()  # a resent answer found its Gate taken (404/409)
        self.hooks = {}  # key -> verdicts acknowledged (held / existing)
        self.trails = {}  # key -> every try of its deliveries (printed for a key lost)
        self.t_load = time.monotonic()
        self.other = []  # answers nobody expected
        self.store_4xx = []  # a 4xx because the store could not be reached
        self.torture = {}  # run id -> (tasks, log file)
        self.most_live_key = 0  # sampled: live runs of one dispatch key
        self.most_standing = 0  # sampled: live runs of one standing workflow
        self.samples = 0
        self.threads = []
        self.token = None

    def q(self, sql):
        return psql(self.url, sql)

    def note_other(self, what):
        """An answer that is neither a 2xx nor one to send again: a client takes it as final."""
        body = what[-1] if isinstance(what[-1], dict) else {}
        with self.lock:
            if what[-2] in (400, 404, 409) and "run store" in body.get("error", ""):
                # The store could not be reached, and the client is told the change is refused
                # for good (a 4xx), where it should be told to send it again (503).
                self.store_4xx.append(what)
            elif len(self.other) < 20:
                self.other.append(what)

    # ---- the load balancer -------------------------------------------------------------------
    def send(self, method, path, body=None, headers=None, seconds=15, retry_codes=(500, 502, 503),
             trail=None):
        """Sends until an answer that is not a 5xx (or 429) nor a refused connection, starting at a
        random serve and going on to the other: (status, body, times sent again), or (None, None,
        …) after `seconds`. `trail`, a list, gets each try: (serve, seconds in, status, what)."""
        h = dict(headers or {})
        if self.token and "Authorization" not in h and not path.startswith("/hooks/"):
            h["Authorization"] = "Bearer " + self.token
        i = rnd.randrange(len(self.hosts))
        deadline = time.monotonic() + seconds
        again = 0
        while time.monotonic() < deadline and not self.stop.is_set():
            host = self.hosts[i % len(self.hosts)]
            i += 1
            try:
                st, j = request(host.port, method, path, body, h)
            except ConnError:
                if trail is not None:
                    trail.append((host.name, round(time.monotonic() - self.t_load, 2), None, ""))
                again += 1
                with self.lock:
                    self.resent["no connection"] += 1
                time.sleep(0.05)
                continue
            if trail is not None:
                jj = j if isinstance(j, dict) else {}
                trail.append((host.name, round(time.monotonic() - self.t_load, 2), st,
                              jj.get("verdict") or jj.get("error", "")[:80]))
            if st in retry_codes or st == 429:
                again += 1
                j = j if isinstance(j, dict) else {}
                why = "%d %s" % (st, j.get("verdict") or j.get("error", "")[:48])
                with self.lock:
                    self.resent[why.strip()] += 1
                time.sleep(0.05 if st != 429 else 0.2)
                continue
            return st, j, again
        with self.lock:
            self.resent["cut off by the load's end" if self.stop.is_set() else
                        "given up after %d s" % seconds] += 1
        return None, None, again

    # ---- the clients -------------------------------------------------------------------------
    def gates_client(self, k):
        """Starts runs of conformance_secret and answers their Gates, each through either serve;
        every third run is left waiting at its second Gate (so that each host owns waiting runs)."""
        n = 0
        while not self.stop.is_set():
            n += 1
            key = "%s-%d-%d-%s" % (self.tag, k, n, uuid.uuid4().hex[:8])
            st, j, _ = self.send("POST", "/workflows/%s/runs" % GATES_WF,
                              {"input": {"note": {"deep": {"secret": key}}}},
                              {"Idempotency-Key": key})
            if st not in (200, 201) or not isinstance(j, dict) or "runId" not in j:
                if st is not None:
                    self.note_other(("start", st, j))
                continue
            rid = j["runId"]
            with self.lock:
                self.starts[key] = rid
            for gate, event, payload in (("approval", "rate", {"score": 4}),
                                         ("both.x.review", "accept", {})):
                if gate == "both.x.review" and n % 3 == 0:
                    break
                st, j, again = self.send("POST", "/runs/%s/gates/%s/events" % (rid, gate),
                                         {"event": event, "payload": payload})
                if st == 200:
                    with self.lock:
                        self.answers.append((rid, gate))
                elif st == 409 and again > 0:
                    # Sent again after a 5xx: the first was done ("whether it was done is not
                    # known"), and the Gate is taken.
                    with self.lock:
                        self.gone_gate[st] += 1
                elif st is not None:
                    self.note_other(("answer", rid, gate, st, j))
            time.sleep(0.1)

    def hook_client(self, k, nclients, seconds):
        """Delivers the keys k, k+nclients, … over about `seconds`, each under one delivery id,
        a tenth of them again under a new one."""
        mine = ["k%03d" % i for i in range(k, KEYS, nclients)]
        pause = seconds / max(1, len(mine))
        start = time.monotonic()
        for n, key in enumerate(mine):
            if self.stop.is_set():
                return
            for delivery in ["d-" + key] + (["again-" + key] if int(key[1:]) % 10 == 3 else []):
                body = json.dumps({"id": key}).encode()
                sig = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
                trail = self.trails.setdefault(key, [])
                trail.append(("send", delivery))
                st, j, _ = self.send("POST", "/hooks/bench", body,
                                     {"X-Jr2-Event": "item.new", "X-Jr2-Delivery": delivery,
                                      "X-Hub-Signature-256": sig,
                                      "Content-Type": "application/json"}, trail=trail)
                v = j.get("verdict") if isinstance(j, dict) else None
                if st == 200 and v in ("held", "existing"):
                    with self.lock:
                        self.hooks.setdefault(key, []).append(v)
                elif st is not None:
                    self.note_other(("hook", key, delivery, st, j))
            # Keeps to its schedule: behind it (sends held by a store outage), it does not pause,
            # so every key is sent within the load however long the outage (a pause after each
            # late key pushed the last ones past the settle on a loaded machine).
            time.sleep(max(0.0, start + (n + 1) * pause - time.monotonic()))

    def sampler(self):
        while not self.sampling.is_set():
            rows = self.q(
                "SELECT coalesce((SELECT max(c) FROM (SELECT count(*) c FROM runs WHERE status ="
                " 'waiting' AND dkey IS NOT NULL GROUP BY workflow, dkey) k), 0),"
                " coalesce((SELECT max(c) FROM (SELECT count(*) c FROM runs WHERE status ="
                " 'waiting' AND workflow IN (SELECT workflow FROM heads) GROUP BY workflow) s), 0)")
            if rows:
                with self.lock:
                    self.samples += 1
                    self.most_live_key = max(self.most_live_key, int(rows[0][0]))
                    self.most_standing = max(self.most_standing, int(rows[0][1]))
            time.sleep(0.25)

    # ---- the course of a scenario ------------------------------------------------------------
    def begin(self, torture_runs, items, nap, hook_seconds):
        for h in self.hosts:
            h.start()
        rows = self.q("SELECT value FROM jr2_meta WHERE key = 'instance_token'")
        self.token = rows[0][0] if rows else None
        check(self.token is not None and len(self.token) == 64,
              "%s: alpha and beta serve one store (the instance token is in it)" % self.tag)
        # The standing Pool is stood up by one serve, its head owned by it.
        wait_for(lambda: self.head_owner() in ("alpha", "beta"), 5)
        for n in range(torture_runs):
            self.start_torture(n, items, nap)
        gates_clients, hook_clients = 2, 3
        self.t_load = time.monotonic()
        self.threads = [threading.Thread(target=self.gates_client, args=(k,), daemon=True)
                        for k in range(gates_clients)]
        self.threads += [threading.Thread(target=self.hook_client,
                                          args=(k, hook_clients, hook_seconds), daemon=True)
                         for k in range(hook_clients)]
        self.threads.append(threading.Thread(target=self.sampler, daemon=True))
        for t in self.threads:
            t.start()

    def start_torture(self, n, items, nap):
        tasks = os.path.join(tmp, "%s.tasks%d.json" % (self.tag, n))
        log = os.path.join(tmp, "%s.log%d.txt" % (self.tag, n))
        with open(tasks, "w") as f:
            json.dump([{"id": "t%04d" % i} for i in range(items)], f)
        open(log, "w").close()
        host = self.hosts[n % len(self.hosts)]  # half of them on each serve
        st, j = request(host.port, "POST", "/workflows/%s/runs" % TORTURE_WF,
                        {"input": {"tasks": tasks, "log": log, "jobs": 4, "nap": nap}},
                        {"Authorization": "Bearer " + self.token})
        ok = st == 201 and isinstance(j, dict) and "runId" in j
        check(ok, "%s: a torture run (%d items) started through %s: %s" %
              (self.tag, items, host.name, st))
        if ok:
            self.torture[j["runId"]] = (items, log)

    def head_owner(self):
        rows = self.q("SELECT coalesce(owner, '-') FROM heads WHERE workflow = '%s'" % POOL_WF)
        return rows[0][0] if rows else None

    def owners(self):
        rows = self.q("SELECT coalesce(owner, '-'), count(*) FROM runs WHERE status = 'waiting'"
                      " GROUP BY 1")
        return {r[0]: int(r[1]) for r in rows}

    def end_load(self, settle):
        """Stops the clients, lets the runs end (at most `settle` s): the hook clients first."""
        t0 = time.monotonic()
        for t in self.threads[2:-1]:
            t.join(max(0.1, settle - (time.monotonic() - t0)))
        self.stop.set()
        for t in self.threads[:-1]:  # the sampler goes on until the count
            t.join(max(0.1, settle - (time.monotonic() - t0)))
        torture_ids = "','".join(self.torture)

        def quiet():
            rows = self.q("SELECT (SELECT count(*) FROM runs WHERE id IN ('%s') AND status ="
                          " 'waiting'), (SELECT count(*) FROM runs WHERE workflow = '%s' AND"
                          " status = 'waiting')" % (torture_ids, ITEM_WF))
            return bool(rows) and rows[0] == ["0", "0"]
        load = time.monotonic() - t0
        took = wait_for(quiet, max(1.0, settle - (time.monotonic() - t0)))
        print("%s: the clients were done %.1f s after the load's end; the runs had ended %s s"
              " later" % (self.tag, load, took and round(took, 1)), flush=True)
        check(took is not None, "%s: every torture run and item run ended within %d s of the"
              " load's end" % (self.tag, settle), self.owners())

    def metrics(self, host):
        try:
            conn = http.client.HTTPConnection("127.0.0.1", host.port, timeout=10)
            conn.request("GET", "/metrics", headers={"Authorization": "Bearer " + self.token})
            text = conn.getresponse().read().decode()
        except (OSError, http.client.HTTPException):
            return {}
        return {k: v for k, v in (line.split(" ", 1) for line in text.splitlines()
                                  if line and not line.startswith("#"))}

    def explain_lost(self, key):
        """What the store and the clients know of a key acknowledged and never run."""
        print("%s: lost %s: tries %s" % (self.tag, key, self.trails.get(key)), flush=True)
        for r in self.q("SELECT delivery, time, answer FROM hooks WHERE delivery IN ('d-%s',"
                        " 'again-%s')" % (key, key)):
            print("%s: lost %s: hook log %s" % (self.tag, key, r), flush=True)
        for r in self.q("SELECT r.id, r.status, f.seq, f.kind, left(f.line, 160) FROM feed f JOIN"
                        " runs r ON r.id = f.run WHERE r.workflow = '%s' AND f.line LIKE '%%%s%%'"
                        % (POOL_WF, key)):
            print("%s: lost %s: feed %s" % (self.tag, key, r), flush=True)
        for r in self.q("SELECT id, status, rev, position('\"%s\"' in snapshot) FROM runs WHERE"
                        " workflow = '%s'" % (key, POOL_WF)):
            print("%s: lost %s: standing run %s (status, rev, where in its snapshot)" %
                  (self.tag, key, r), flush=True)

    # ---- the counts --------------------------------------------------------------------------
    def count(self):
        tag = self.tag
        self.sampling.set()
        self.threads[-1].join(5)
        # Starts and Gate answers acknowledged, against the store.
        ids = sorted(set(self.starts.values()))
        rows = self.q("SELECT id, status, view FROM runs WHERE workflow = '%s'" % GATES_WF)
        stored = {r[0]: r for r in rows}
        starts_lost = [i for i in ids if i not in stored]
        # A start sent again (to either serve) makes no second run: runs per Idempotency-Key
        # (each start's input carries its key).
        rows = self.q("SELECT snapshot::json->'input'->'note'->'deep'->>'secret', count(*)"
                      " FROM runs WHERE workflow = '%s' GROUP BY 1 HAVING count(*) > 1" % GATES_WF)
        starts_twice = [r[0] for r in rows if r[0] in self.starts]
        answers_lost = []
        for rid, gate in self.answers:
            row = stored.get(rid)
            view = {}
            if row is not None:
                try:
                    view = json.loads(row[2] or "{}")
                except ValueError:
                    view = {}
            open_gates = [g.get("gate") for g in view.get("gates", [])] if row else [gate]
            if row is None or (row[1] == "waiting" and gate in open_gates) or \
                    (gate == "both.x.review" and row[1] != "done"):
                answers_lost.append((rid, gate, row and row[1], open_gates))
        # Hook deliveries acknowledged, against the item runs per key.
        rows = self.q("SELECT dkey, status, count(*) FROM runs WHERE workflow = '%s' GROUP BY 1, 2"
                      % ITEM_WF)
        per_key = collections.defaultdict(list)
        for key, status, c in rows:
            per_key[key] += [status] * int(c)
        hooks_lost = sorted(k for k in self.hooks if not per_key.get(k))
        keys_twice = sorted(k for k, v in per_key.items() if len(v) > 1)
        strays = sorted(k for k in per_key if k not in self.hooks)
        not_done = sorted(k for k, v in per_key.items() if v != ["done"])
        # Items started twice: the `started` lines of every Pool's feed, per run and item.
        rows = self.q("SELECT r.workflow, f.data::json->>'item', count(*) FROM feed f JOIN runs r"
                      " ON r.id = f.run WHERE f.kind = 'started' AND r.workflow IN ('%s', '%s')"
                      " GROUP BY f.run, r.workflow, 2 HAVING count(*) > 1" % (POOL_WF, TORTURE_WF))
        started_twice = [tuple(r) for r in rows]
        rows = self.q("SELECT count(*) FROM runs WHERE workflow = '%s'" % POOL_WF)
        standing_runs = int(rows[0][0]) if rows else -1
        # An item of the standing Pool that failed at its dispatch has no run.
        rows = self.q("SELECT f.kind || ': ' || left(f.line, 200) FROM feed f JOIN runs r ON"
                      " r.id = f.run WHERE r.workflow = '%s' AND f.kind IN ('dispatch-error',"
                      " 'start-refused', 'failed')" % POOL_WF)
        item_failed = [r[0] for r in rows]
        rows = self.q("SELECT workflow, count(*) FROM runs WHERE status = 'waiting' AND workflow IN"
                      " (SELECT workflow FROM heads) GROUP BY 1 HAVING count(*) > 1")
        standing_now = [tuple(r) for r in rows]
        # Effects, as torture_test.sh counts them.
        t = collections.Counter()
        bad = []
        for rid, (items, log) in self.torture.items():
            p = subprocess.run([os.path.join(os.path.dirname(runner), TORTURE_WF), "status", rid,
                                "--json"], env=self.env,
                               capture_output=True, text=True, timeout=30)
            try:
                final = json.loads(p.stdout)
            except ValueError:
                final = {}
            out = final.get("output") or {}
            done, failures = out.get("items", {}), out.get("failures", {})
            ran = collections.Counter(line.strip() for line in open(log) if line.strip())
            names = ["t%04d" % i for i in range(items)]
            t["items"] += items
            t["settled"] += len(done)
            t["interrupted"] += len(failures)
            t["lost"] += sum(1 for i in names if i not in done and i not in failures)
            t["in both"] += sum(1 for i in names if i in done and i in failures)
            t["ran twice"] += sum(1 for i in names if ran[i] > 1)
            t["failed not interrupted"] += sum(
                1 for i in failures if not failures[i].get("reason", "").startswith("interrupted"))
            t["settled not run once"] += sum(1 for i in done if ran[i] != 1)
            t["cut after it ran"] += sum(1 for i in failures if ran[i] == 1)
            if final.get("status") != "done":
                bad.append((rid, final.get("status"), p.stderr.strip()[-200:]))
        print("%s: starts acknowledged %d, lost %d, that made two runs %d; Gate answers"
              " acknowledged %d, lost %d; resent answers that found their Gate taken %d" %
              (tag, len(ids), len(starts_lost), len(starts_twice), len(self.answers),
               len(answers_lost), sum(self.gone_gate.values())), flush=True)
        print("%s: hook keys acknowledged %d of %d (%d acknowledgements), lost %d; item runs %d;"
              " keys with two runs %d; runs of keys never acknowledged %d; not done %d; items"
              " started twice %d; items failed %d; standing runs of %s %d" %
              (tag, len(self.hooks), KEYS, sum(len(v) for v in self.hooks.values()),
               len(hooks_lost), sum(len(v) for v in per_key.values()), len(keys_twice),
               len(strays), len(not_done), len(started_twice), len(item_failed), POOL_WF,
               standing_runs),
              flush=True)
        print("%s: torture runs %d: items %d, settled %d, interrupted %d (%d had run), lost %d,"
              " in both %d, effects run twice %d, failed not interrupted %d, settled not run once"
              " %d" % (tag, len(self.torture), t["items"], t["settled"], t["interrupted"],
                       t["cut after it ran"], t["lost"], t["in both"], t["ran twice"],
                       t["failed not interrupted"], t["settled not run once"]), flush=True)
        print("%s: sampled %d times: most live runs of one key %d, of one standing workflow %d;"
              " sent again: %s; unexpected answers %d" %
              (tag, self.samples, self.most_live_key, self.most_standing,
               dict(self.resent) or "none", len(self.other)), flush=True)
        check(not self.store_4xx, "%s: changes refused 4xx (final to a client) because the store"
              " could not be reached: %d" % (tag, len(self.store_4xx)),
              collections.Counter("%s %d: %s" % (w[0], w[-2], w[-1].get("error", "")[:60])
                                  for w in self.store_4xx).most_common(3))
        check(not starts_lost, "%s: acknowledged starts lost: %d" % (tag, len(starts_lost)),
              starts_lost[:5])
        check(not starts_twice, "%s: starts that made two runs: %d" % (tag, len(starts_twice)),
              starts_twice[:5])
        check(not answers_lost, "%s: acknowledged answers lost: %d" % (tag, len(answers_lost)),
              answers_lost[:5])
        check(len(self.answers) > 0, "%s: answers were acknowledged (%d)" %
              (tag, len(self.answers)))
        check(not hooks_lost, "%s: acknowledged hooks lost: %d" % (tag, len(hooks_lost)),
              hooks_lost[:10])
        for key in hooks_lost[:3]:
            self.explain_lost(key)
        check(len(self.hooks) == KEYS, "%s: every key was acknowledged (%d of %d)" %
              (tag, len(self.hooks), KEYS))
        check(not keys_twice and not strays and not not_done,
              "%s: one run per key, done: twice %d, strays %d, not done %d" %
              (tag, len(keys_twice), len(strays), len(not_done)),
              {k: per_key[k] for k in (keys_twice + strays + not_done)[:5]})
        check(not started_twice, "%s: items started twice: %d" % (tag, len(started_twice)),
              started_twice[:5])
        check(not item_failed, "%s: items of the standing Pool failed (no run): %d" %
              (tag, len(item_failed)), item_failed[:3])
        check(t["ran twice"] == 0, "%s: effects run twice: %d" % (tag, t["ran twice"]))
        check(t["lost"] == 0 and t["in both"] == 0 and t["failed not interrupted"] == 0 and
              t["settled not run once"] == 0 and not bad and t["items"] > 0,
              "%s: every torture item settled (run once) or interrupted, once; runs done" % tag,
              bad[:3])
        check(self.most_live_key <= 1 and self.samples > 0,
              "%s: live runs per key at most 1 (sampled %d times: %d)" %
              (tag, self.samples, self.most_live_key))
        check(self.most_standing <= 1 and not standing_now,
              "%s: live standing runs per workflow at most 1 (sampled: %d)" %
              (tag, self.most_standing), standing_now)
        check(not self.other, "%s: no unexpected answers" % tag, self.other[:5])

    def finish(self):
        self.stop.set()
        self.sampling.set()
        for h in self.hosts:
            h.term()


def wait_for(cond, seconds, step=0.1):
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        if cond():
            return time.monotonic() - t0
        time.sleep(step)
    return None


def scenario_kill():
    print("--- kill: two serves under load, the one owning the standing Pool SIGKILLed",
          flush=True)
    sc = Scenario("kill", store_kill)
    try:
        sc.begin(torture_runs=4, items=80, nap="0.2", hook_seconds=6)
        t0 = time.monotonic()
        time.sleep(rnd.uniform(1.0, 3.0))
        owner = sc.head_owner()
        victim = next((h for h in sc.hosts if h.name == owner), sc.hosts[0])
        survivor = next(h for h in sc.hosts if h is not victim)
        had = sc.owners().get(victim.name, 0)
        victim.kill()
        killed = time.monotonic()
        print("kill: %s (owner of %s's head, %d waiting runs) SIGKILLed %.1f s into the load" %
              (victim.name, POOL_WF, had, killed - t0), flush=True)

        def taken():
            o = sc.owners()
            return victim.name not in o and "-" not in o and sc.head_owner() == survivor.name
        took = wait_for(taken, TTL + 5)
        print("kill: %s owns every run and the standing head %s s after the kill (TTL %d s)" %
              (survivor.name, took and round(took, 1), TTL), flush=True)
        check(took is not None, "kill: %s owns the runs of %s within the TTL + 5 s" %
              (survivor.name, victim.name), sc.owners())
        m = sc.metrics(survivor)
        print("kill: %s's metrics: hosts reaped %s, runs claimed %s, leases lost %s" %
              (survivor.name, m.get("jr2_hosts_reaped_total"), m.get("jr2_runs_claimed_total"),
               m.get("jr2_lease_lost_total")), flush=True)
        sc.end_load(settle=25)
        sc.count()
        print("kill: %.1f s" % (time.monotonic() - t0), flush=True)
    finally:
        sc.finish()


def scenario_restart():
    print("--- restart: PostgreSQL restarted under two serves' load", flush=True)
    p = subprocess.run(["bash", SERVER_SH, "start", pg2_dir], capture_output=True, text=True)
    if not check(p.returncode == 0, "restart: a PostgreSQL server of its own starts", p.stderr):
        return
    url = p.stdout.strip().splitlines()[-1]
    sc = Scenario("restart", url)
    try:
        sc.begin(torture_runs=2, items=100, nap="0.2", hook_seconds=9)
        t0 = time.monotonic()
        for n, down in enumerate((None, 3)):
            time.sleep(rnd.uniform(1.0, 2.5))
            before = dict(sc.resent)
            r0 = time.monotonic()
            p = subprocess.run(["bash", SERVER_SH, "restart", pg2_dir] +
                               ([str(down)] if down else []), capture_output=True, text=True)
            what = "pg_ctl restart" if down is None else "stopped %d s, started again" % down
            check(p.returncode == 0, "restart: PostgreSQL %s (%.1f s, %.1f s into the load)" %
                  (what, time.monotonic() - r0, r0 - t0), p.stderr)
            # Both serves are up and store again: a start through each is acknowledged.
            back = {}
            for h in sc.hosts:
                def starts(h=h):
                    if not h.up():
                        return False
                    try:
                        st, _ = request(h.port, "POST", "/workflows/%s/runs" % GATES_WF,
                                        {"input": {"note": {"deep": {"secret": "probe"}}}},
                                        {"Authorization": "Bearer " + sc.token}, timeout=5)
                    except ConnError:
                        return False
                    return st == 201
                back[h.name] = wait_for(starts, TTL + 7, 0.2)
            since = {k: v - before.get(k, 0) for k, v in sc.resent.items() if v != before.get(k, 0)}
            print("restart %d: back in alpha %s s, beta %s s after PostgreSQL came back; sent"
                  " again meanwhile: %s" % (n + 1, back["alpha"] and round(back["alpha"], 1),
                                            back["beta"] and round(back["beta"], 1),
                                            since or "none"), flush=True)
            if not check(all(v is not None for v in back.values()) and
                         all(h.up() for h in sc.hosts),
                         "restart %d: both serves are up and acknowledge a start within %d s" %
                         (n + 1, TTL + 7),
                         {h.name: (h.up(), open(h.err).read().strip().splitlines()[-3:])
                          for h in sc.hosts}):
                print("restart: the load ends now (a serve that does not take changes again"
                      " will not within the settle either)", flush=True)
                sc.stop.set()
                break
        rows = sc.q("SELECT name, epoch, gone, alive_until > clock_timestamp() FROM hosts"
                    " ORDER BY name")
        print("restart: hosts %s" % rows, flush=True)
        check([r[0] for r in rows] == ["alpha", "beta"] and all(r[2] == "f" and r[3] == "t"
                                                                 for r in rows),
              "restart: alpha and beta hold current leases", rows)
        for h in sc.hosts:
            m = sc.metrics(h)
            print("restart: %s's metrics: leases lost %s, runs claimed %s, hosts reaped %s,"
                  " commits failed %s" % (h.name, m.get("jr2_lease_lost_total"),
                                          m.get("jr2_runs_claimed_total"),
                                          m.get("jr2_hosts_reaped_total"),
                                          m.get("jr2_commits_failed_total")), flush=True)
        sc.end_load(settle=12)
        sc.count()
        print("restart: %.1f s" % (time.monotonic() - t0), flush=True)
    finally:
        sc.finish()
        subprocess.run(["bash", SERVER_SH, "stop", pg2_dir], capture_output=True)


def scenario_torture():
    kills = int(os.environ.get("PG_FAULTS_KILLS", "8"))
    print("--- torture: one of two serves SIGKILLed and started again, %d times" % kills,
          flush=True)
    sc = Scenario("torture", store_torture)
    try:
        sc.begin(torture_runs=4, items=200, nap="0.2", hook_seconds=9)
        t0 = time.monotonic()
        done = 0
        for k in range(kills):
            time.sleep(rnd.uniform(0.5, 1.5))
            h = rnd.choice(sc.hosts)
            h.kill()
            down = rnd.uniform(0.0, 1.0)
            time.sleep(down)
            h.start()
            done += 1
            print("torture: SIGKILL %d of %s at %.1f s, started again after %.2f s" %
                  (k + 1, h.name, time.monotonic() - t0 - down, down), flush=True)
        check(done == kills, "torture: %d SIGKILLs, each serve started again" % done)
        sc.end_load(settle=30)
        sc.count()
        print("torture: %.1f s" % (time.monotonic() - t0), flush=True)
    finally:
        sc.finish()


for name in scenarios:
    t = time.monotonic()
    try:
        {"kill": scenario_kill, "restart": scenario_restart, "torture": scenario_torture}[name]()
    except Exception:  # a bug of the test, or a serve that did not start: a FAIL, and go on
        import traceback
        check(False, "%s: the scenario ran to its end: %s" % (name, traceback.format_exc()))
    print("%s: wall %.1f s" % (name, time.monotonic() - t), flush=True)
