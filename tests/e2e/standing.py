#!/usr/bin/env python3
"""The end-to-end and fault test of a standing Pool over a push Source (#12; standing_test.sh).

tests/runtime/standing.jr2: `conformance_alerts` is the standing Pool `alert_pool` (cap 2, push
Source `monitor_alerts` with hold 3; hook `monitor` "alert.raised" carries {id, level},
"alert.cleared" is skipped) dispatching runs of `conformance_alert_run` keyed by alert id; each
callee waits at Gate `review` for `close`, and an alert of level `broken` ends it `failed`.

Phases (each on its own store and port):
  flow    held / existing / hold-full (429) / skipped verdicts, a delivery id answered again,
          claim order, cap 2, Gates answered, `settled` lines, a broken alert settles `failed`,
          a hold-full delivery sent again with its id once a slot is free is `held`; with a
          SIGTERM and a restart in the middle (one standing run, the same, held items and live
          callee runs intact, answering goes on).
  fault   ALERTS signed deliveries (unique alert ids, a share sent twice under a new delivery id)
          from CLIENTS threads, retrying 429 and connection errors, while a thread answers the
          Gates; serve is SIGKILLed mid-stream and started again. Every alert answered `held` or
          `existing` must end with exactly one callee run, `done`: none lost, none twice.
  cancel  a cancel of the standing run is a pause: deliveries answer 503 `paused`, and a
          restart starts no new run.
Each check prints `PASS: …` or `FAIL: …`; figures are printed as `fault: …` lines.

  backoff after a standing run ended `error` (then `failed`, `error`): 503 `backoff` with
          Retry-After, a new run after 1 s, 4 s, then 16 s; the run after the third takes an item
          that gets a run, so its end starts the count again (1 s). The pause at the fourth
          counted run is tested on the manual clock (tests/runtime/host_test.cpp). The test marks
          the run ended in the store while serve is down (its head then reads the end from the
          run's row): this workflow's run cannot end so by itself.

Usage: standing.py RUNNER_DIR WORKDIR [ALERTS] [PHASE…]
  (ALERTS 400; phases flow fault cancel backoff, all by default; STANDING_KILLS (3) SIGKILLs in
  the fault phase, STANDING_FAULT_TIMEOUT (40 s) bounds it)
"""
import hashlib
import hmac
import http.client
import json
import os
import random
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time

import store_text

SECRET = "mon-" + hashlib.sha256(os.urandom(16)).hexdigest()[:20]
POOL_WF = "conformance_alerts"
PAGER_WF = "conformance_pager"  # a second standing Pool (hook `pager`, cap 4) over the same callee
CALLEE_WF = "conformance_alert_run"
CLIENTS = 4
REQ_TIMEOUT = 15.0
KILLS = int(os.environ.get("STANDING_KILLS", "3"))
FAULT_TIMEOUT = float(os.environ.get("STANDING_FAULT_TIMEOUT", "40"))

STARTED = re.compile(r"standing Pool `%s`: run \w+ started" % POOL_WF)
checks = {"passed": 0, "failed": 0}


def check(cond, what, detail=""):
    if cond:
        checks["passed"] += 1
        print("PASS: " + what, flush=True)
    else:
        checks["failed"] += 1
        print("FAIL: " + what + (": " + str(detail)[:600] if detail != "" else ""), flush=True)
    return cond


class ConnError(Exception):
    pass


def request(port, method, path, body=None, headers=None, timeout=REQ_TIMEOUT):
    """(status, headers, parsed-or-raw body). Raises ConnError when no HTTP answer came."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        h = dict(headers or {})
        if body is not None and not isinstance(body, bytes):
            body = json.dumps(body).encode()
        if body is not None:
            h.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        data = r.read()
        try:
            j = json.loads(data.decode("utf-8"))
        except Exception:
            j = data
        return r.status, {k.lower(): v for k, v in r.getheaders()}, j
    except (OSError, http.client.HTTPException) as e:
        raise ConnError("%s %s: %s" % (method, path, e or type(e).__name__))
    finally:
        conn.close()


def sign(body):
    return "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Serve:
    def __init__(self, runner, work):
        self.runner, self.work = runner, work
        self.store = os.path.join(work, "store.db")
        self.port = free_port()
        self.callers = os.path.join(work, "callers.json")
        with open(self.callers, "w") as f:
            json.dump({"callers": [], "hooks": {"monitor": {"secret_env": "MON_SECRET"},
                                                 "pager": {"secret_env": "PAGER_SECRET"}}}, f)
        self.proc = None
        self.starts = 0
        self.token = None

    def start(self):
        self.starts += 1
        env = dict(os.environ, JR2_STORE=self.store, MON_SECRET=SECRET, PAGER_SECRET=SECRET)
        out = open(os.path.join(self.work, "serve.%d.out" % self.starts), "wb")
        err = open(os.path.join(self.work, "serve.%d.err" % self.starts), "wb")
        self.proc = subprocess.Popen(
            [self.runner, "serve", "--listen", "127.0.0.1:%d" % self.port, "--callers", self.callers],
            cwd=self.work, env=env, stdout=out, stderr=err)
        with open(os.path.join(self.work, "serve.pid"), "w") as f:
            f.write(str(self.proc.pid))
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                st, _, _ = request(self.port, "GET", "/healthz", timeout=2)
                if st == 200:
                    with open(self.store + ".token") as f:
                        self.token = f.read().strip()
                    return True
            except (ConnError, OSError):
                pass
            time.sleep(0.02)
        return False

    def err_text(self, n=None):
        try:
            with open(os.path.join(self.work, "serve.%d.err" % (n or self.starts)), "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def term(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                return None
        return self.proc.returncode if self.proc else None

    # ---- requests ----
    def auth(self):
        return {"Authorization": "Bearer " + self.token}

    def get(self, path):
        return request(self.port, "GET", path, None, self.auth())

    def post(self, path, body):
        return request(self.port, "POST", path, body, self.auth())

    def deliver(self, alert_id, level="warn", delivery=None, event="alert.raised", hook="monitor"):
        body = json.dumps({"alert": {"id": alert_id, "level": level}}).encode()
        h = {"X-Jr2-Event": event, "X-Hub-Signature-256": sign(body)}
        if delivery is not None:
            h["X-Jr2-Delivery"] = delivery
        return request(self.port, "POST", "/hooks/" + hook, body, h)

    def page(self, alert_id, delivery=None):
        return self.deliver(alert_id, delivery=delivery, event="page", hook="pager")

    def runs(self, workflow=None):
        st, _, j = self.get("/runs")
        if st != 200 or not isinstance(j, list):
            raise ConnError("GET /runs %s %s" % (st, str(j)[:200]))
        return [r for r in j if workflow is None or r.get("workflow") == workflow]

    def feed(self, run_id, workflow=POOL_WF):
        """The run's whole feed (the CLI `log --json`, which reads the store)."""
        env = dict(os.environ, JR2_STORE=self.store)
        p = subprocess.run([os.path.join(os.path.dirname(self.runner), workflow), "log", run_id, "--json"],
                           cwd=self.work, env=env, capture_output=True, timeout=30)
        try:
            return json.loads(p.stdout.decode())
        except Exception:
            return []

    def gates(self):
        st, _, j = self.get("/gates")
        return j if st == 200 and isinstance(j, list) else []

    def close_gate(self, run_id):
        return self.post("/runs/%s/gates/review/events" % run_id, {"event": "close"})

    def db(self):
        c = sqlite3.connect("file:%s?mode=ro" % self.store, uri=True, timeout=10)
        return c

    def snapshot(self, run_id):
        rows = store_text.rows(self.store, "select id, snapshot from runs where id=?", (run_id,),
                               texts=(1,))
        return json.loads(rows[0][1]) if rows else None


def wait_for(fn, timeout=10.0, step=0.05):
    deadline = time.monotonic() + timeout
    v = fn()
    while not v and time.monotonic() < deadline:
        time.sleep(step)
        v = fn()
    return v


def kinds(feed, kind):
    return [e for e in feed if e.get("kind") == kind]


# ------------------------------------------------------------------------------------------------
def phase_flow(runner, work):
    print("--- flow", flush=True)
    s = Serve(runner, work)
    if not check(s.start(), "flow: serve starts", s.err_text()):
        return
    try:
        _flow(s)
    finally:
        s.term()


def _flow(s):
    err = s.err_text()
    check(STARTED.search(err), "flow: serve says the standing Pool started",
          err[:300])
    pools = s.runs(POOL_WF)
    check(len(pools) == 1 and pools[0]["status"] == "waiting", "flow: one waiting run of the standing Pool",
          pools)
    if not pools:
        return
    pool = pools[0]["runId"]

    # POST /workflows/conformance_alerts/runs is refused (a standing Pool is serve's alone).
    st, _, j = s.post("/workflows/%s/runs" % POOL_WF, {"input": {}})
    check(st in (400, 409) and isinstance(j, dict) and "error" in j,
          "flow: POST /workflows/%s/runs is refused" % POOL_WF, "%s %s" % (st, j))

    def verdict(what, r, code, v, **more):
        st, hdr, j = r
        good = st == code and isinstance(j, dict) and j.get("verdict") == v
        for k, want in more.items():
            good = good and isinstance(j, dict) and j.get(k) == want
        check(good, "flow: %s answers %d %s" % (what, code, v), "%s %s" % (st, j))
        return j if isinstance(j, dict) else {}

    # A delivery whose alert has no id (#30): skipped, and the reason names the hook's `carry`,
    # the Pool's `item_id` and the item carried, not a bare "`value` must be a string".
    body = json.dumps({"alert": {"level": "warn"}}).encode()
    noid = verdict("an alert without an id", request(s.port, "POST", "/hooks/monitor", body,
                   {"X-Jr2-Event": "alert.raised", "X-Hub-Signature-256": sign(body),
                    "X-Jr2-Delivery": "d0-noid"}), 200, "skipped")
    why = noid.get("reason", "")
    check("has no id" in why and "carry" in why and "item_id" in why and '"level"' in why,
          "flow: a delivery without an id says which carry and item_id, and the item", why)
    verdict("a1 (d1)", s.deliver("a1", delivery="d1"), 200, "held", item="a1", run=pool)
    # a1 is claimed at once (2 free slots): its callee run.
    def dispatched():
        return {e["data"]["item"]: e["data"]["run"] for e in kinds(s.feed(pool), "dispatched")}
    d = wait_for(lambda: "a1" in dispatched() and dispatched(), 5)
    a1run = (d or {}).get("a1")
    check(bool(a1run), "flow: a1 dispatched a run of %s" % CALLEE_WF, d)
    j = verdict("a1 again under a new delivery id (d2)", s.deliver("a1", delivery="d2"), 200, "existing",
                item="a1")
    check(j.get("run") == a1run, "flow: the `existing` answer names a1's callee run", j)
    verdict("d1 sent again", s.deliver("a1", delivery="d1"), 200, "held", item="a1")
    verdict("a2", s.deliver("a2", delivery="d3"), 200, "held")
    for i, a in enumerate(["a3", "a4", "a5"]):
        verdict(a, s.deliver(a, delivery="d%d" % (4 + i)), 200, "held")
    verdict("a6 over hold 3 with 2 slots busy", s.deliver("a6", delivery="d7"), 429, "hold-full", item="a6")
    verdict("a6 again (same delivery id, not logged)", s.deliver("a6", delivery="d7"), 429, "hold-full")
    j = verdict("a4 again under a new delivery id", s.deliver("a4", delivery="d8"), 200, "existing", item="a4")
    check(j.get("run") == pool, "flow: `existing` of a held item names the Pool's run", j)
    verdict("alert.cleared", s.deliver("a6", delivery="d9", event="alert.cleared"), 200, "skipped")
    st, _, j = s.deliver("a9", delivery=None, event="alert.other")
    check(st == 200 and isinstance(j, dict) and j.get("verdict") == "skipped",
          "flow: an event key without a hook clause is skipped", "%s %s" % (st, j))
    st, _, _ = request(s.port, "POST", "/hooks/monitor", b'{"alert":{"id":"z"}}',
                       {"X-Jr2-Event": "alert.raised", "X-Hub-Signature-256": "sha256=" + "0" * 64,
                        "X-Jr2-Delivery": "bad"})
    check(st == 401, "flow: a wrong signature is 401", st)

    live = [r for r in s.runs(CALLEE_WF) if r["status"] == "waiting"]
    check(len(live) == 2, "flow: 2 live callee runs (cap 2)", live)
    d = dispatched()
    check(sorted(d) == ["a1", "a2"], "flow: a1 and a2 dispatched, nothing else yet", d)
    snap = s.snapshot(d.get("a1", ""))
    check(isinstance(snap, dict) and snap.get("dispatchedBy") == {"run": pool, "pool": "alert_pool", "key": "a1"},
          "flow: the callee's stored snapshot has dispatchedBy {run, pool, key}",
          (snap or {}).get("dispatchedBy"))
    held = [h.get("id") for h in ((s.snapshot(pool) or {}).get("top") or {}).get("held") or []]
    check(held == ["a3", "a4", "a5"], "flow: the Pool holds a3 a4 a5 in arrival order", held)
    g = s.gates()
    gr = sorted(x["runId"] for x in g if x.get("gate") == "review")
    check(gr == sorted(d.values()), "flow: GET /gates lists the 2 callees' Gate `review`", g)

    # Close a1: settled done, a3 claimed.
    st, _, j = s.close_gate(d["a1"])
    check(st == 200 and isinstance(j, dict) and j.get("status") == "done", "flow: close a1's Gate: 200 done",
          "%s %s" % (st, j))
    f = wait_for(lambda: [e for e in kinds(s.feed(pool), "dispatched") if e["data"]["item"] == "a3"] and s.feed(pool), 5)
    st_ = [e["data"] for e in kinds(f or [], "settled")]
    check(any(x.get("item") == "a1" and x.get("status") == "done" for x in st_),
          "flow: the Pool's feed has `settled` a1 done", st_)
    check("a3" in dispatched(), "flow: a3 is claimed once a1 settled", dispatched())
    verdict("a6 sent again with its delivery id (d7) once a slot is free", s.deliver("a6", delivery="d7"),
            200, "held", item="a6")
    j = verdict("a1 again after its run ended (d10)", s.deliver("a1", delivery="d10"), 200, "existing", item="a1")
    check(j.get("run") == d["a1"], "flow: `existing` names a1's ended callee run", j)
    st, _, lg = s.get("/hooks/monitor")
    ids = [x.get("delivery") for x in lg] if isinstance(lg, list) else []
    check(st == 200 and ids.count("d7") == 1 and ids.count("d1") == 1 and "bad" not in ids,
          "flow: GET /hooks/monitor logs d7 once (its 429s unlogged) and d1 once", ids)

    # ---- restart (SIGTERM) in the middle: a2, a3 live; a4 a5 a6 held ----
    rc = s.term()
    check(rc == 0, "flow: serve ends 0 on SIGTERM", rc)
    check(s.start(), "flow: serve starts again", s.err_text())
    err = s.err_text()
    check(not STARTED.search(err), "flow: the restart starts no new standing run", err[:300])
    pools = s.runs(POOL_WF)
    check(len(pools) == 1 and pools[0]["runId"] == pool and pools[0]["status"] == "waiting",
          "flow: still one standing run, the same, waiting", pools)
    held = [h.get("id") for h in ((s.snapshot(pool) or {}).get("top") or {}).get("held") or []]
    check(held == ["a4", "a5", "a6"], "flow: after the restart the Pool holds a4 a5 a6", held)
    live = sorted(r["runId"] for r in s.runs(CALLEE_WF) if r["status"] == "waiting")
    check(live == sorted([d["a2"], dispatched().get("a3", "?")]), "flow: a2's and a3's callee runs live",
          live)
    g = s.gates()
    check(sorted(x["runId"] for x in g) == live, "flow: their Gates are listed after the restart", g)
    verdict("a5 again after the restart", s.deliver("a5", delivery="d11"), 200, "existing", item="a5")

    # Answer everything in turn; never more than 2 live callees.
    most = 0
    closed = ["a1"]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        live = [r for r in s.runs(CALLEE_WF) if r["status"] == "waiting"]
        most = max(most, len(live))
        if not live and not ((s.snapshot(pool) or {}).get("top") or {}).get("held"):
            break
        dd = dispatched()
        back = {v: k for k, v in dd.items()}
        for r in sorted(live, key=lambda r: ["a1", "a2", "a3", "a4", "a5", "a6"].index(back.get(r["runId"], "a6"))):
            st, _, j = s.close_gate(r["runId"])
            if st == 200:
                closed.append(back.get(r["runId"]))
            break  # one at a time, so the claim order shows
        time.sleep(0.05)
    check(most <= 2, "flow: never more than 2 live callee runs", most)
    f = s.feed(pool)
    started = [e["data"]["item"] for e in kinds(f, "started")]
    check(started == ["a1", "a2", "a3", "a4", "a5", "a6"], "flow: items claimed in arrival order, once each",
          started)
    settled = [(e["data"]["item"], e["data"].get("status")) for e in kinds(f, "settled")]
    check(sorted(settled) == [(a, "done") for a in ["a1", "a2", "a3", "a4", "a5", "a6"]],
          "flow: each of a1..a6 settled done once", settled)
    calls = s.runs(CALLEE_WF)
    check(len(calls) == 6 and all(r["status"] == "done" for r in calls), "flow: 6 callee runs, all done",
          calls)
    outs = sorted((s.get("/runs/" + r["runId"])[2] or {}).get("output") for r in calls)
    check(outs == ["a1", "a2", "a3", "a4", "a5", "a6"], "flow: the callees' outputs are their alert ids", outs)

    # ---- a broken alert: its callee ends failed, the Pool goes on ----
    verdict("b1 (broken)", s.deliver("b1", level="broken", delivery="d20"), 200, "held")
    ok = wait_for(lambda: [e for e in kinds(s.feed(pool), "settled") if e["data"]["item"] == "b1"], 5)
    check(bool(ok) and ok[0]["data"].get("status") == "failed", "flow: b1 settles `failed`",
          ok and ok[0]["data"])
    b1run = dispatched().get("b1")
    st, _, j = s.get("/runs/%s" % b1run) if b1run else (None, None, None)
    check(isinstance(j, dict) and j.get("status") == "failed", "flow: b1's callee run ended failed",
          "%s %s" % (st, j))
    pools = s.runs(POOL_WF)
    check(len(pools) == 1 and pools[0]["status"] == "waiting", "flow: the Pool still waits after a failed item",
          pools)
    verdict("x1 after the failure", s.deliver("x1", delivery="d21"), 200, "held")
    xr = wait_for(lambda: dispatched().get("x1"), 5)
    st, _, j = s.close_gate(xr) if xr else (None, None, None)
    check(st == 200, "flow: x1's Gate answered", "%s %s" % (st, j))
    ok = wait_for(lambda: [e for e in kinds(s.feed(pool), "settled") if e["data"]["item"] == "x1"], 5)
    check(bool(ok) and ok[0]["data"].get("status") == "done", "flow: x1 settles done", ok)
    verdict("b1 again (its run failed, row kept)", s.deliver("b1", level="broken", delivery="d22"), 200,
            "existing", item="b1")
    refused = kinds(s.feed(pool), "start-refused") + kinds(s.feed(pool), "dispatch-error")
    check(not refused, "flow: no start-refused / dispatch-error lines", refused)
    st, _, j = s.get("/runs/%s" % pool)
    check(st == 200 and isinstance(j, dict) and j.get("status") == "waiting", "flow: GET /runs/:pool waits",
          "%s %s" % (st, j))
    # What the Pool has done so far: GET /runs/:pool `items`/`failures` as `status --json` `sofar` says.
    env = dict(os.environ, JR2_STORE=s.store)
    p = subprocess.run([s.runner, "status", pool, "--json"], cwd=s.work, env=env, capture_output=True, timeout=30)
    try:
        sofar = json.loads(p.stdout.decode()).get("sofar") or {}
    except Exception:
        sofar = {}
    # A standing Pool keeps no item outputs (run.cpp forgetOutput): whichever is meant, serve's
    # view and the store's (`status --json`, restored from the journal) must agree.
    j = j if isinstance(j, dict) else {}
    check(sorted(j.get("items") or {}) == sorted(sofar.get("items") or {}) and
          sorted(j.get("failures") or {}) == sorted(sofar.get("failures") or {}),
          "flow: GET /runs/:pool items/failures agree with `status --json` sofar",
          "GET: items %s failures %s; status --json: items %s failures %s" %
          (sorted(j.get("items") or {}), sorted(j.get("failures") or {}), sorted(sofar.get("items") or {}),
           sorted(sofar.get("failures") or {})))
    # ... and keeps its counts: `status` says what settled (#30: it said `0 settled` after 2).
    settled_lines = [e for e in kinds(s.feed(pool), "settled")]
    text = subprocess.run([s.runner, "status", pool], cwd=s.work, env=env, capture_output=True,
                          timeout=30).stderr.decode()
    said = [l for l in text.splitlines() if "so far:" in l]
    check(len(settled_lines) > 0 and said and
          ("%d settled" % sofar.get("settledCount", -1)) in said[0] and
          sofar.get("settledCount", 0) + sofar.get("failedCount", 0) ==
          len(settled_lines) + len(kinds(s.feed(pool), "failed")),
          "flow: `status` of the standing Pool counts what settled (%d settled lines on its feed)"
          % len(settled_lines), "%s; sofar %s" % (said, {k: v for k, v in sofar.items()
                                                        if k.endswith("Count")}))

    # ---- two standing Pools, one callee workflow: a key is one run, whichever Pool gives it ----
    pagers = s.runs(PAGER_WF)
    if not os.path.exists(os.path.join(os.path.dirname(s.runner), PAGER_WF)):
        print("flow: no %s in this build: the two-Pool checks are skipped" % PAGER_WF, flush=True)
        return
    check(len(pagers) == 1 and pagers[0]["status"] == "waiting", "flow: one waiting run of %s" % PAGER_WF,
          pagers)
    if not pagers:
        return
    pager = pagers[0]["runId"]

    def pdispatched():
        return {e["data"]["item"]: e["data"] for e in kinds(s.feed(pager, PAGER_WF), "dispatched")}
    j = verdict("page a1 (monitor's a1 run done)", s.page("a1", delivery="p1"), 200, "existing", item="a1")
    check(j.get("run") == d["a1"], "flow: the page of a1 names monitor's a1 run", j)
    verdict("page pg1", s.page("pg1", delivery="p2"), 200, "held", item="pg1", run=pager)
    pd = wait_for(lambda: pdispatched().get("pg1"), 5) or {}
    check(pd.get("run") and pd.get("existing") is False, "flow: the pager Pool dispatched pg1", pd)
    j = verdict("monitor pg1 (the pager's run holds it)", s.deliver("pg1", delivery="d30"), 200, "existing",
                item="pg1")
    check(j.get("run") == pd.get("run"), "flow: monitor's `existing` names the pager's pg1 run", j)
    verdict("monitor pg2", s.deliver("pg2", delivery="d31"), 200, "held", item="pg2")
    m2 = wait_for(lambda: dispatched().get("pg2"), 5)
    j = verdict("page pg2 (monitor's run holds it)", s.page("pg2", delivery="p3"), 200, "existing", item="pg2")
    check(j.get("run") == m2, "flow: the pager's `existing` names monitor's pg2 run", j)
    for r in (pd.get("run"), m2):
        if r:
            st, _, j = s.close_gate(r)
            check(st == 200, "flow: close %s" % r, "%s %s" % (st, j))
    ok = wait_for(lambda: [e for e in kinds(s.feed(pager, PAGER_WF), "settled") if e["data"]["item"] == "pg1"], 5)
    check(bool(ok) and ok[0]["data"].get("status") == "done", "flow: the pager's feed settles pg1 done", ok)
    ok = wait_for(lambda: [e for e in kinds(s.feed(pool), "settled") if e["data"]["item"] == "pg2"], 5)
    check(bool(ok) and ok[0]["data"].get("status") == "done", "flow: monitor's feed settles pg2 done", ok)
    keys = {}
    c = s.db()
    try:
        for (k,) in c.execute("select dkey from runs where workflow=?", (CALLEE_WF,)):
            keys[k] = keys.get(k, 0) + 1
    finally:
        c.close()
    check(all(v == 1 for v in keys.values()), "flow: one callee run per key over both Pools", keys)


# ------------------------------------------------------------------------------------------------
class Fault:
    def __init__(self, runner, work, alerts):
        self.s = Serve(runner, work)
        self.n = alerts
        self.ids = ["al%05d" % i for i in range(alerts)]
        rnd = random.Random(12)
        self.dupes = set(rnd.sample(self.ids, alerts // 10))  # sent twice under new ids
        # paged too, at once, to the second standing Pool (when the build has it)
        self.paged = set(rnd.sample(self.ids, alerts // 5)) if os.path.exists(
            os.path.join(os.path.dirname(runner), PAGER_WF) + "") else set()
        self.lock = threading.Lock()
        self.answers = {}        # delivery -> (status, verdict, item, run)
        self.verdicts = {}       # verdict -> count
        self.r429 = 0
        self.r503 = 0
        self.conn_err = 0
        self.other = []
        self.sent_done = threading.Event()
        self.stop = threading.Event()
        self.closes = 0
        self.close_404 = 0
        self.close_409 = 0
        self.most_live = 0       # live callee runs alert_pool dispatched, most seen
        self.most_all = 0        # live callee runs of both Pools, most seen (caps 2 + 4)
        self.first_answers = {}  # delivery -> verdict of its first 2xx
        self.mismatch = []       # a delivery id answered twice with two different verdicts
        self.held_ok = 0
        self.crash = []

    def send(self, aid, delivery):
        """A delivery of alert `aid`: `pg-…` ids are pages to hook `pager`, the others hook `monitor`."""
        if delivery.startswith("pg-"):
            return self.s.page(aid, delivery=delivery)
        return self.s.deliver(aid, delivery=delivery)

    def deliver_until(self, aid, delivery):
        """Send until a 2xx (or a final 4xx): retries 429/503 and connection errors."""
        while not self.stop.is_set():
            try:
                st, hdr, j = self.send(aid, delivery)
            except ConnError:
                with self.lock:
                    self.conn_err += 1
                time.sleep(0.1)
                continue
            v = j.get("verdict") if isinstance(j, dict) else None
            if st == 429:
                with self.lock:
                    self.r429 += 1
                time.sleep(0.02 + random.random() * 0.03)
                continue
            if st == 503:
                with self.lock:
                    self.r503 += 1
                time.sleep(min(1.0, float(hdr.get("retry-after", "1") or 1)))
                continue
            with self.lock:
                if st == 200:
                    self.verdicts[v] = self.verdicts.get(v, 0) + 1
                    if delivery in self.first_answers and self.first_answers[delivery] != v:
                        self.mismatch.append((delivery, self.first_answers[delivery], v))
                    self.first_answers.setdefault(delivery, v)
                    self.answers.setdefault(aid, []).append((delivery, v, j.get("item"), j.get("run")))
                else:
                    if len(self.other) < 10:
                        self.other.append((aid, st, j))
            return st, v
        return None, None

    def client(self, k):
        try:
            mine = self.ids[k::CLIENTS]
            for aid in mine:
                if self.stop.is_set():
                    return
                pt = None
                if aid in self.paged:  # paged at the same time, to the other standing Pool
                    pt = threading.Thread(target=self.deliver_until, args=(aid, "pg-" + aid), daemon=True)
                    pt.start()
                self.deliver_until(aid, "del-" + aid)
                if pt is not None:
                    pt.join()
                if aid in self.dupes:
                    self.deliver_until(aid, "dup-" + aid)
        except Exception as e:  # a bug of the test
            import traceback
            self.crash.append(traceback.format_exc())

    def answerer(self):
        try:
            while not self.stop.is_set():
                try:
                    gates = self.s.gates()
                    live = [r for r in self.s.runs(CALLEE_WF) if r["status"] == "waiting"]
                except ConnError:
                    time.sleep(0.05)
                    continue
                # live callee runs per dispatching Pool (from the store): alert_pool's cap is 2
                mine = 0
                try:
                    for (_, snap) in store_text.rows(
                            self.s.store, "select id, snapshot from runs where workflow=? and"
                            " status='waiting'", (CALLEE_WF,), texts=(1,)):
                        by = (json.loads(snap).get("dispatchedBy") or {})
                        mine += by.get("pool") == "alert_pool"
                except sqlite3.Error:
                    pass
                with self.lock:
                    self.most_live = max(self.most_live, mine)
                    self.most_all = max(self.most_all, len(live))
                if not gates:
                    if self.sent_done.is_set() and not live:
                        # nothing left waiting; the driver decides when all is over
                        time.sleep(0.05)
                    time.sleep(0.01)
                    continue
                for g in gates:
                    if g.get("gate") != "review":
                        continue
                    try:
                        st, _, j = self.s.close_gate(g["runId"])
                    except ConnError:
                        continue
                    with self.lock:
                        if st == 200:
                            self.closes += 1
                        elif st == 404:
                            self.close_404 += 1
                        elif st == 409:
                            self.close_409 += 1
                        elif len(self.other) < 10:
                            self.other.append(("close", g["runId"], st, j))
        except Exception:
            import traceback
            self.crash.append(traceback.format_exc())

    def run(self):
        print("--- fault (%d alerts, %d sent twice)" % (self.n, len(self.dupes)), flush=True)
        s = self.s
        if not check(s.start(), "fault: serve starts", s.err_text()):
            return
        try:
            self._run()
        finally:
            s.kill()

    def _run(self):
        s = self.s
        pools = s.runs(POOL_WF)
        pool = pools[0]["runId"] if pools else None
        t0 = time.monotonic()
        threads = [threading.Thread(target=self.client, args=(k,), daemon=True) for k in range(CLIENTS)]
        ans = threading.Thread(target=self.answerer, daemon=True)
        for t in threads + [ans]:
            t.start()
        # SIGKILL KILLS times, spread over the stream (the first after 20-40 % of the alerts were
        # answered), and start again on the same store and port.
        for k in range(KILLS):
            lo = 0.2 + 0.6 * k / KILLS
            kill_at = int(self.n * random.uniform(lo, lo + 0.6 / KILLS))
            while time.monotonic() - t0 < FAULT_TIMEOUT and len(self.answers) < kill_at:
                time.sleep(0.002)
            answered_before = len(self.answers)
            s.kill()
            down = time.monotonic()
            time.sleep(random.uniform(0.05, 0.3))
            started = s.start()
            check(started, "fault: serve starts again after SIGKILL %d" % (k + 1), s.err_text())
            print("fault: SIGKILL %d after %d alerts answered (%.1f s in); down %.2f s" %
                  (k + 1, answered_before, down - t0, time.monotonic() - down), flush=True)
            err = s.err_text()
            check(not STARTED.search(err), "fault: the restart after SIGKILL %d starts no new standing run" % (k + 1),
                  err[:300])
            if not started:
                break
        for t in threads:
            t.join(max(1.0, FAULT_TIMEOUT - (time.monotonic() - t0)))
        self.sent_done.set()
        sending = time.monotonic() - t0
        # Wait until nothing is held and no callee waits.
        def quiet():
            try:
                live = [r for r in s.runs(CALLEE_WF) if r["status"] == "waiting"]
            except ConnError:
                return False
            held = ((s.snapshot(pool) or {}).get("top") or {}).get("held") if pool else None
            for r in (s.runs(PAGER_WF) if self.paged else []):
                held = held or ((s.snapshot(r["runId"]) or {}).get("top") or {}).get("held")
            return not live and not held
        wait_for(quiet, max(5.0, FAULT_TIMEOUT - (time.monotonic() - t0)), 0.1)
        self.stop.set()
        ans.join(5)
        wall = time.monotonic() - t0
        check(not self.crash, "fault: the test's threads ran without error", "\n".join(self.crash)[:800])

        pools = s.runs(POOL_WF)
        check(len(pools) == 1 and pools[0]["runId"] == pool and pools[0]["status"] == "waiting",
              "fault: one standing run, the same, waiting after the kill", pools)
        calls = s.runs(CALLEE_WF)
        per = {}
        bad_status = []
        for r in calls:
            st, _, j = s.get("/runs/" + r["runId"])
            out = j.get("output") if isinstance(j, dict) else None
            if not isinstance(j, dict) or j.get("status") != "done":
                bad_status.append((r["runId"], j.get("status") if isinstance(j, dict) else st))
            key = out
            if key is None:  # not done: its key from the store
                c = s.db()
                try:
                    row = c.execute("select dkey from runs where id=?", (r["runId"],)).fetchone()
                finally:
                    c.close()
                key = row[0] if row else None
            per.setdefault(key, []).append(r["runId"])
        f = s.feed(pool) if pool else []
        pagers = s.runs(PAGER_WF) if self.paged else []
        pf = s.feed(pagers[0]["runId"], PAGER_WF) if pagers else []
        disp = {}      # item -> runs started (existing false), over both Pools
        attach = {}    # item -> runs a Pool took up (existing true)
        for e in kinds(f, "dispatched") + kinds(pf, "dispatched"):
            (attach if e["data"].get("existing") else disp).setdefault(e["data"]["item"], []).append(e["data"]["run"])
        startedc = {}
        settled = {}
        for which, ff in (("monitor", f), ("pager", pf)):
            for e in kinds(ff, "started"):
                k = (which, e["data"]["item"])
                startedc[k] = startedc.get(k, 0) + 1
            for e in kinds(ff, "settled"):
                settled.setdefault(e["data"]["item"], []).append(e["data"].get("status"))
        if self.paged:
            print("fault: paged %d alerts too; the pager Pool started %d runs, took up %d of the other's" %
                  (len(self.paged), sum(len(v) for k, v in disp.items() if any(
                      e["data"]["item"] == k and not e["data"].get("existing") for e in kinds(pf, "dispatched"))),
                   sum(1 for e in kinds(pf, "dispatched") if e["data"].get("existing"))), flush=True)

        held_ids = {a for a, lst in self.answers.items() if any(v == "held" for _, v, _, _ in lst)}
        answered = {a for a, lst in self.answers.items() if any(v in ("held", "existing") for _, v, _, _ in lst)}
        never = [a for a in self.ids if a not in self.answers]
        lost = sorted(a for a in answered if len(per.get(a, [])) == 0)
        twice = sorted(a for a in per if len(per[a]) > 1)
        strays = sorted(a for a in per if a not in answered)
        most = max([len(v) for v in per.values()] or [0])
        nc = self.verdicts
        print("fault: %d alerts in %.1f s (sending %.1f s): held %d, existing %d, other verdicts %s; "
              "429s %d, 503s %d, connection errors %d; Gates closed %d (404 %d, 409 %d); callee runs %d; "
              "runs per alert max %d; lost %d; twice %d; strays %d; max live callees %d" %
              (self.n, wall, sending, nc.get("held", 0), nc.get("existing", 0),
               {k: v for k, v in nc.items() if k not in ("held", "existing")}, self.r429, self.r503,
               self.conn_err, self.closes, self.close_404, self.close_409, len(calls), most, len(lost),
               len(twice), len(strays), self.most_live), flush=True)
        check(not never, "fault: every alert got a 2xx answer", "%d never: %s" % (len(never), never[:10]))
        check(not self.other, "fault: no unexpected answers", self.other)
        check(set(nc) <= {"held", "existing"}, "fault: every 2xx verdict is held or existing", nc)
        check(not lost, "fault: no alert answered held/existing is lost (0 callee runs)",
              "%d lost: %s" % (len(lost), lost[:10]))
        check(not twice, "fault: no alert has two callee runs", {a: per[a] for a in twice[:10]})
        check(not strays, "fault: no callee run for an alert nobody answered held/existing", strays[:10])
        check(len(per) == len(answered) and most == 1, "fault: exactly one callee run per alert",
              "%d alerts with runs, %d answered, max %d" % (len(per), len(answered), most))
        check(not bad_status, "fault: every callee run ended done", bad_status[:10])
        check(self.most_live <= 2, "fault: never more than 2 live callee runs of alert_pool seen", self.most_live)
        check(self.most_all <= 6, "fault: never more than 2 + 4 live callee runs seen", self.most_all)
        check(not self.mismatch, "fault: a delivery id answered again gets its first answer", self.mismatch[:10])
        d2 = [a for a, v in disp.items() if len(v) != 1]
        check(not d2 and set(disp) == answered, "fault: the Pools' feeds started one run per alert",
              "%d twice, %d dispatched vs %d answered; %s" % (len(d2), len(disp), len(answered),
                                                              {a: disp[a] for a in d2[:5]}))
        wrong = [a for a, v in attach.items() if any(r not in disp.get(a, []) for r in v)]
        check(not wrong, "fault: a Pool that took up an alert's run took up the one run", wrong[:10])
        s2 = [a for a, v in startedc.items() if v != 1]
        check(not s2, "fault: each Pool's feed started each of its items once", s2[:10])
        workers = {}
        for (which, a), v in startedc.items():
            workers[a] = workers.get(a, 0) + v
        bad_set = [a for a in answered if settled.get(a) != ["done"] * workers.get(a, 0) or not workers.get(a)]
        check(not bad_set, "fault: each Pool's feed settled each of its items once, done",
              {a: (settled.get(a), workers.get(a)) for a in bad_set[:10]})
        dup_ex = [a for a in self.dupes if a in self.answers and
                  [v for dl, v, _, _ in self.answers[a] if dl.startswith("dup-")] not in (["existing"], [])]
        check(not dup_ex, "fault: an alert sent again under a new delivery id is `existing`",
              {a: self.answers[a] for a in dup_ex[:5]})
        # Each delivery id sent once more: its first answer, nothing new.
        sample = random.Random(3).sample(sorted(self.first_answers), min(30, len(self.first_answers)))
        diff = []
        for dl in sample:
            aid = dl.split("-", 1)[1]
            try:
                st, _, j = self.send(aid, dl)
            except ConnError as e:
                diff.append((dl, str(e)))
                continue
            if st != 200 or not isinstance(j, dict) or j.get("verdict") != self.first_answers[dl]:
                diff.append((dl, self.first_answers[dl], st, j))
        check(not diff, "fault: 30 delivery ids sent again get their first answers", diff[:5])
        time.sleep(0.3)
        check(len(s.runs(CALLEE_WF)) == len(calls), "fault: those resends started no run",
              len(s.runs(CALLEE_WF)))


# ------------------------------------------------------------------------------------------------
def phase_cancel(runner, work):
    print("--- cancel", flush=True)
    s = Serve(runner, work)
    if not check(s.start(), "cancel: serve starts", s.err_text()):
        return
    try:
        pools = s.runs(POOL_WF)
        pool = pools[0]["runId"] if pools else "none"
        st, _, j = s.deliver("c0", delivery="c-d0")
        check(st == 200 and j.get("verdict") == "held", "cancel: c0 held before the cancel", "%s %s" % (st, j))
        st, _, j = s.post("/runs/%s/events" % pool, {"type": "CANCEL"})
        check(st == 200 and isinstance(j, dict) and j.get("status") == "cancelled",
              "cancel: POST /runs/:pool/events CANCEL answers 200 cancelled", "%s %s" % (st, j))
        # At once after the cancel (the same serve).
        st, hdr, j = s.deliver("c1", delivery="c-d1")
        check(st == 503 and isinstance(j, dict) and j.get("verdict") == "paused",
              "cancel: a delivery right after the cancel answers 503 paused", "%s %s" % (st, j))
        # How long after the cancel deliveries are still answered otherwise than `paused`.
        t0 = time.monotonic()
        wrong = []
        while time.monotonic() - t0 < 1.5:
            st, _, j = s.deliver("cw", delivery="c-w%d" % len(wrong))
            if isinstance(j, dict) and j.get("verdict") == "paused":
                break
            wrong.append((round(time.monotonic() - t0, 2), st, j.get("verdict") if isinstance(j, dict) else j))
            time.sleep(0.05)
        print("cancel: %d deliveries after the cancel answered otherwise than paused (for %.2f s): %s" %
              (len(wrong), time.monotonic() - t0, wrong[:3]), flush=True)
        time.sleep(0.2)
        st, hdr, j = s.deliver("c2", delivery="c-d2")
        check(st == 503 and isinstance(j, dict) and j.get("verdict") == "paused",
              "cancel: a delivery ~1.5 s after the cancel answers 503 paused", "%s %s" % (st, j))
        pools = s.runs(POOL_WF)
        check(len(pools) == 1 and pools[0]["status"] == "cancelled", "cancel: no new standing run is started",
              pools)
        st, _, lg = s.get("/hooks/monitor")
        ids = [x.get("delivery") for x in lg] if isinstance(lg, list) else []
        check("c-d2" not in ids, "cancel: a `paused` delivery is not logged", ids)
        check("c-d1" not in ids, "cancel: the delivery right after the cancel is not logged (a resend is heard)", ids)
        s.term()
        check(s.start(), "cancel: serve starts again", s.err_text())
        err = s.err_text()
        check("is paused" in err and not STARTED.search(err), "cancel: serve says the standing Pool is paused",
              err[:300])
        pools = s.runs(POOL_WF)
        check(len(pools) == 1 and pools[0]["status"] == "cancelled", "cancel: the restart starts no new run",
              pools)
        st, hdr, j = s.deliver("c1", delivery="c-d1")
        check(st == 503 and isinstance(j, dict) and j.get("verdict") == "paused",
              "cancel: after the restart c-d1 (first answered right after the cancel) sent again answers 503 paused", "%s %s" % (st, j))
        st, hdr, j = s.deliver("c3", delivery="c-d3")
        check(st == 503 and isinstance(j, dict) and j.get("verdict") == "paused",
              "cancel: after the restart a delivery answers 503 paused", "%s %s" % (st, j))
        held = [h.get("id") for h in ((s.snapshot(pool) or {}).get("top") or {}).get("held") or []]
        calls = s.runs(CALLEE_WF)
        print("cancel: after the cancel the Pool's snapshot holds %s; callee runs %s" %
              (held, [(r["runId"], r["status"]) for r in calls]), flush=True)
    finally:
        s.term()


# ------------------------------------------------------------------------------------------------
def phase_backoff(runner, work):
    """The back-off after a standing run ends `error`/`failed`: no way to make this workflow's run
    end so, so the test marks it ended in the store while serve is down (a test-only edit)."""
    print("--- backoff", flush=True)
    s = Serve(runner, work)
    if not check(s.start(), "backoff: serve starts", s.err_text()):
        return
    try:
        _backoff(s)
    finally:
        s.term()


def _backoff(s):
    def end_in_store(run_id, status):
        c = sqlite3.connect(s.store, timeout=10)
        try:
            c.execute("update runs set status=?, updated=? where id=?", (status, int(time.time() * 1000), run_id))
            c.commit()
        finally:
            c.close()

    # The count (docs/runtime.md#standing-pools-of-runs-over-push-sources-12): 1 s, 4 s, 16 s after
    # the 1st, 2nd, 3rd counted run in a row; a run in which an item got a run (the 3rd new run
    # takes the resent delivery) starts it again.
    seen = []
    steps = [("error", 1.0, False), ("failed", 4.0, False), ("error", 16.0, True), ("failed", 1.0, False)]
    for n, (status, wait, resend) in enumerate(steps, 1):
        pools = [r for r in s.runs(POOL_WF) if r["status"] == "waiting"]
        if not check(len(pools) == 1, "backoff %d: one waiting standing run" % n, pools):
            return
        seen.append(pools[0]["runId"])
        s.term()
        end_in_store(seen[-1], status)
        t0 = time.monotonic()
        check(s.start(), "backoff %d: serve starts again" % n, s.err_text())
        err = s.err_text()
        check("ended %s; the next starts in" % status in err, "backoff %d: serve says the next run starts later" % n,
              err[:300])
        st, hdr, j = s.deliver("bo%d" % n, delivery="bo-d%d" % n)
        ra = hdr.get("retry-after") if st else None
        check(st == 503 and isinstance(j, dict) and j.get("verdict") == "backoff" and ra is not None and
              1 <= int(ra) <= int(wait), "backoff %d: a delivery answers 503 backoff, Retry-After 1..%d" % (n, wait),
              "%s %s %s" % (st, ra, j))
        st, _, lg = s.get("/hooks/monitor")
        check(isinstance(lg, list) and "bo-d%d" % n not in [x.get("delivery") for x in lg],
              "backoff %d: the backoff delivery is not logged" % n, lg)
        new = wait_for(lambda: [r for r in s.runs(POOL_WF) if r["status"] == "waiting"], wait + 3, 0.05)
        took = time.monotonic() - t0
        check(bool(new) and new[0]["runId"] not in seen and wait * 0.7 <= took <= wait + 3,
              "backoff %d: a new standing run starts after ~%g s" % (n, wait), "%s after %.1f s" % (new, took))
        if resend:
            st, hdr, j = s.deliver("bo%d" % n, delivery="bo-d%d" % n)
            check(st == 200 and isinstance(j, dict) and j.get("verdict") == "held",
                  "backoff %d: the same delivery sent again is held by the new run" % n, "%s %s" % (st, j))
        print("backoff %d: new run after %.1f s" % (n, took), flush=True)
    c = sqlite3.connect(s.store, timeout=10)
    try:
        row = c.execute("select streak, paused from heads where workflow=?", (POOL_WF,)).fetchone()
    finally:
        c.close()
    check(row is not None and row[0] == 0 and row[1] == "",
          "backoff: the run in which an item got a run started the count again (head streak 0)", row)


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 64
    rdir, work = sys.argv[1], sys.argv[2]
    alerts = int(sys.argv[3]) if len(sys.argv) > 3 else 400
    phases = sys.argv[4:] or ["flow", "fault", "cancel", "backoff"]
    runner = os.path.join(rdir, POOL_WF)
    for name in phases:
        w = os.path.join(work, name)
        os.makedirs(w, exist_ok=True)
        t = time.monotonic()
        try:
            if name == "flow":
                phase_flow(runner, w)
            elif name == "fault":
                Fault(runner, w, alerts).run()
            elif name == "cancel":
                phase_cancel(runner, w)
            elif name == "backoff":
                phase_backoff(runner, w)
        except Exception:
            import traceback
            check(False, "%s: the phase ran to its end" % name, traceback.format_exc())
        print("%s: %.1f s" % (name, time.monotonic() - t), flush=True)
    print("%d passed, %d failed" % (checks["passed"], checks["failed"]), flush=True)
    return 0 if checks["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
