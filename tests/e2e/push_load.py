#!/usr/bin/env python3
"""The load and fault test of a standing Pool over a push Source under serve (#12; push_load_test.sh).

tests/runtime/push_load.jr2: `conformance_push_load` is the standing Pool `push_pool` (cap 16,
push Source `bench_items` with hold 1000; hook `bench` "item.new" carries {id}) dispatching runs
of `conformance_push_item`, keyed by item id, each `done` at once with the id as its output.

Phases (each on its own store and port):
  load    DELIVERIES signed deliveries (unique item ids, unique delivery ids) from CLIENTS threads;
          a 429 `hold-full` is sent again with the SAME delivery id after ~Retry-After/10.
  fault   the same, and serve is SIGKILLed once ~40 % of the items were answered 200, then started
          again on the same store and port, and SIGKILLed again right after the next hand-over
          (the store shows a new standing run) and started again; clients resend the same delivery id after a
          connection error (and after a 429 / 503).
  full    min(DELIVERIES, 1000) deliveries to `conformance_slow_load` (hook `slow`, cap 16, hold
          40), whose item runs wait at their Gate `hold_open` until a releaser thread answers
          `finish` (at most 4 every 40 ms): the hold stays full, most deliveries are first
          answered 429 `hold-full` and resent, and each item still runs exactly once.
What must hold, per phase: every delivery is eventually answered 200 (held, or existing after a
resend whose first answer was cut off by the kill); every item so answered ends with exactly one
callee run, `done` (runs counted per key `dkey` in the store, read read-only): none lost, none
twice, no strays; a delivery id sent again gets its first answer; one standing run, the same.
Each check prints `PASS: …` or `FAIL: …`; figures are printed as `load: …` / `fault: …` lines.

Usage: push_load.py RUNNER_DIR WORKDIR [DELIVERIES] [PHASE…]
  (DELIVERIES 10000; phases load fault full, all by default; PUSH_LOAD_PHASE_TIMEOUT (60 s) bounds
  the sending of a phase, PUSH_LOAD_SETTLE (20 s) the wait for the runs to end after it)
"""
import hashlib
import hmac
import http.client
import json
import os
import random
import socket
import sqlite3
import subprocess
import sys
import threading
import time

import store_text

SECRET = "bench-" + hashlib.sha256(os.urandom(16)).hexdigest()[:24]
POOL_WF = "conformance_push_load"
CALLEE_WF = "conformance_push_item"
CLIENTS = 8
CAP = 16
REQ_TIMEOUT = 15.0
PHASE_TIMEOUT = float(os.environ.get("PUSH_LOAD_PHASE_TIMEOUT", "60"))
SETTLE = float(os.environ.get("PUSH_LOAD_SETTLE", "20"))
KILL_AT = float(os.environ.get("PUSH_LOAD_KILL_AT", "0.4"))

checks = {"passed": 0, "failed": 0}


def check(cond, what, detail=""):
    if cond:
        checks["passed"] += 1
        print("PASS: " + what, flush=True)
    else:
        checks["failed"] += 1
        print("FAIL: " + what + (": " + str(detail)[:600] if detail != "" else ""), flush=True)
    return cond


def pct(values, q):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def lat_line(values):
    if not values:
        return "no samples"
    return "p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d samples)" % (
        pct(values, 0.5) * 1000, pct(values, 0.99) * 1000, max(values) * 1000, len(values))


class ConnError(Exception):
    pass


def request(port, method, path, body=None, headers=None, timeout=REQ_TIMEOUT):
    """(status, headers, parsed-or-raw body, seconds). Raises ConnError when no HTTP answer came."""
    t0 = time.monotonic()
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
        return r.status, {k.lower(): v for k, v in r.getheaders()}, j, time.monotonic() - t0
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
            json.dump({"callers": [], "hooks": {"bench": {"secret_env": "BENCH_SECRET"},
                                                "slow": {"secret_env": "BENCH_SECRET"}}}, f)
        self.proc = None
        self.starts = 0
        self.token = None

    def start(self):
        self.starts += 1
        env = dict(os.environ, JR2_STORE=self.store, BENCH_SECRET=SECRET)
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
                st, _, _, _ = request(self.port, "GET", "/healthz", timeout=2)
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
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def runs(self, workflow):
        st, _, j, _ = request(self.port, "GET", "/runs", None, {"Authorization": "Bearer " + self.token})
        if st != 200 or not isinstance(j, list):
            raise ConnError("GET /runs %s %s" % (st, str(j)[:200]))
        return [r for r in j if r.get("workflow") == workflow]

    def deliver(self, item_id, delivery, hook="bench"):
        body = json.dumps({"id": item_id}).encode()
        h = {"X-Jr2-Event": "item.new", "X-Hub-Signature-256": sign(body), "X-Jr2-Delivery": delivery}
        return request(self.port, "POST", "/hooks/" + hook, body, h)

    def auth(self):
        return {"Authorization": "Bearer " + self.token}

    def db_rows(self, sql, args=()):
        c = sqlite3.connect("file:%s?mode=ro" % self.store, uri=True, timeout=10)
        try:
            return c.execute(sql, args).fetchall()
        finally:
            c.close()

    def held(self, run_id):
        rows = store_text.rows(self.store, "select id, snapshot from runs where id=?", (run_id,),
                               texts=(1,))
        if not rows:
            return None
        return ((json.loads(rows[0][1]) or {}).get("top") or {}).get("held") or []


class Phase:
    def __init__(self, name, runner, work, n, fault, full=False):
        self.name, self.n, self.fault, self.full = name, n, fault, full
        # The `full` phase: items whose runs stay live until released, and a hold of 40.
        self.pool_wf, self.callee_wf, self.hook, self.hold = (
            ("conformance_slow_load", "conformance_slow_item", "slow", 40) if full
            else (POOL_WF, CALLEE_WF, "bench", 1000))
        self.released = 0
        self.releasing = True
        self.s = Serve(runner, work)
        self.ids = ["%s%06d" % (name[0], i) for i in range(n)]
        self.lock = threading.Lock()
        self.answers = {}       # item -> (delivery, verdict, status)
        self.lat = []           # seconds, of each 200 answer (that request alone)
        self.lat_at = []        # (when, seconds) of each 200 answer
        self.most_held = 0      # held items of the live standing run, most seen (sampled)
        self.sampling = True
        self.e2e = []           # seconds, first send to the 200 answer (resends included)
        self.r429 = 0
        self.r503 = 0
        self.conn_err = 0
        self.other = []
        self.verdicts = {}
        self.bad_ra = 0         # 429s without Retry-After: 1
        self.deadline = None
        self.crash = []

    def deliver_until(self, iid, delivery):
        t0 = time.monotonic()
        while time.monotonic() < self.deadline:
            try:
                st, hdr, j, dt = self.s.deliver(iid, delivery, self.hook)
            except ConnError:
                with self.lock:
                    self.conn_err += 1
                time.sleep(0.05)
                continue
            v = j.get("verdict") if isinstance(j, dict) else None
            if st == 429:
                ra = hdr.get("retry-after")
                with self.lock:
                    self.r429 += 1
                    if ra != "1" or v != "hold-full":
                        self.bad_ra += 1
                time.sleep(float(ra or 1) / 10.0)
                continue
            if st == 503:
                with self.lock:
                    self.r503 += 1
                time.sleep(min(1.0, float(hdr.get("retry-after", "1") or 1)) / 10.0)
                continue
            with self.lock:
                if st == 200:
                    self.verdicts[v] = self.verdicts.get(v, 0) + 1
                    self.answers[iid] = (delivery, v, st)
                    self.lat.append(dt)
                    self.lat_at.append((time.monotonic(), dt, time.time()))
                    self.e2e.append(time.monotonic() - t0)
                elif len(self.other) < 10:
                    self.other.append((iid, st, j))
            return
        return

    def client(self, k):
        try:
            for iid in self.ids[k::CLIENTS]:
                if time.monotonic() >= self.deadline:
                    return
                self.deliver_until(iid, "dl-" + iid)
        except Exception:
            import traceback
            self.crash.append(traceback.format_exc())

    def sampler(self):
        """The held items of the live standing run, sampled from the store every 0.2 s."""
        while self.sampling:
            try:
                for (_, snap) in store_text.rows(
                        self.s.store, "select id, snapshot from runs where workflow=? and status='waiting'",
                        (self.pool_wf,), texts=(1,)):
                    h = ((json.loads(snap) or {}).get("top") or {}).get("held") or []
                    self.most_held = max(self.most_held, len(h))
            except (sqlite3.Error, ValueError, KeyError):
                pass
            time.sleep(0.2)

    def releaser(self):
        """The `full` phase: answers `finish` at the open Gates of the item runs, at most 4 every
        40 ms, until told to stop: the slots free slowly, so the hold stays full."""
        while self.releasing:
            try:
                st, _, gates, _ = request(self.s.port, "GET", "/gates", None, self.s.auth())
                todo = [g["runId"] for g in (gates if st == 200 and isinstance(gates, list) else [])
                        if g.get("workflow") == self.callee_wf and g.get("gate") == "hold_open"][:4]
                for rid in todo:
                    body = json.dumps({"event": "finish", "payload": {}}).encode()
                    st, _, _, _ = request(self.s.port, "POST", "/runs/%s/gates/hold_open/events" % rid, body,
                                          dict(self.s.auth(), **{"Content-Type": "application/json"}))
                    if st == 200:
                        with self.lock:
                            self.released += 1
            except (ConnError, OSError, ValueError):
                pass
            time.sleep(0.04)

    def run(self):
        print("--- %s (%d deliveries, %d clients, cap %d, hold %d)" % (self.name, self.n, CLIENTS, CAP, self.hold),
              flush=True)
        if not check(self.s.start(), "%s: serve starts" % self.name, self.s.err_text()):
            return
        try:
            self._run()
        finally:
            self.s.kill()

    def _run(self):
        s, name = self.s, self.name
        pools = s.runs(self.pool_wf)
        check(len(pools) == 1 and pools[0]["status"] == "waiting", "%s: one waiting standing run" % name, pools)
        t0 = time.monotonic()
        self.deadline = t0 + PHASE_TIMEOUT
        threads = [threading.Thread(target=self.client, args=(k,), daemon=True) for k in range(CLIENTS)]
        for t in threads:
            t.start()
        smp = threading.Thread(target=self.sampler, daemon=True)
        smp.start()
        rel = None
        if self.full:
            rel = threading.Thread(target=self.releaser, daemon=True)
            rel.start()
        kill_info = None
        if self.fault:
            kill_at = int(self.n * KILL_AT)
            while time.monotonic() < self.deadline and len(self.answers) < kill_at:
                time.sleep(0.002)
            before = len(self.answers)
            s.kill()
            down = time.monotonic()
            time.sleep(0.2)
            started = s.start()
            kill_info = (before, down - t0, time.monotonic() - down)
            check(started, "fault: serve starts again after the SIGKILL", s.err_text())
            print("fault: SIGKILL after %d of %d items answered (%.1f %%, %.1f s in); down %.2f s" %
                  (before, self.n, 100.0 * before / self.n, down - t0, kill_info[2]), flush=True)
            # Again at a hand-over: as soon as the store shows a new standing run (the commit that
            # ends one run and starts the next), SIGKILL, and start again.
            def pool_runs():
                try:
                    return len(s.db_rows("select id from runs where workflow=?", (self.pool_wf,)))
                except sqlite3.Error:
                    return -1
            base = pool_runs()
            while time.monotonic() < self.deadline and len(self.answers) < self.n and pool_runs() <= base:
                time.sleep(0.001)
            if pool_runs() > base:
                s.kill()
                at = len(self.answers)
                time.sleep(0.2)
                check(s.start(), "fault: serve starts again after the SIGKILL at a hand-over", s.err_text())
                print("fault: SIGKILL right after hand-over %d (%d items answered)" % (base, at), flush=True)
            else:
                check(False, "fault: a hand-over came to kill serve at", "no new standing run")
        for t in threads:
            t.join(max(0.1, self.deadline - time.monotonic() + 1))
        sending = time.monotonic() - t0
        self.sampling = False
        smp.join(2)
        check(not self.crash, "%s: the test's threads ran without error" % name, "\n".join(self.crash)[:800])

        # Wait until nothing is held and every callee run has ended (bounded).
        def quiet():
            try:
                live_pools = s.db_rows("select id from runs where workflow=? and status not in "
                                       "('done','failed','error','cancelled')", (self.pool_wf,))
                if len(live_pools) != 1:
                    return False
                held = s.held(live_pools[0][0])
                live = s.db_rows("select count(*) from runs where workflow=? and status not in "
                                 "('done','failed','error','cancelled')", (self.callee_wf,))[0][0]
            except sqlite3.Error:
                return False
            return not held and live == 0
        t1 = time.monotonic()
        while time.monotonic() - t1 < SETTLE and not quiet():
            time.sleep(0.1)
        settle = time.monotonic() - t1
        wall = time.monotonic() - t0
        self.releasing = False
        if rel:
            rel.join(5)

        # A standing run is handed over to a new one at its bound (500 items it took itself):
        # one waiting at the end, every other ended `done`, handed over.
        pools2 = store_text.rows(s.store, "select id, status, snapshot from runs where workflow=?",
                                 (self.pool_wf,), texts=(2,))
        waiting = [r[0] for r in pools2 if r[1] == "waiting"]
        ended = [(r[0], r[1]) for r in pools2 if r[1] != "waiting"]
        not_handed = [(rid, st) for rid, st, snap in pools2 if st != "waiting" and
                      (st != "done" or "handedOverTo" not in (snap or ""))]
        print("%s: standing runs %d (%d handed over)" % (name, len(pools2), len(ended)), flush=True)
        check(len(waiting) == 1, "%s: one standing run waiting at the end" % name, pools2 and
              [(r[0], r[1]) for r in pools2])
        check(not not_handed, "%s: every other standing run ended done, handed over" % name, not_handed[:5])
        rows = s.db_rows("select id, status, dkey from runs where workflow=?", (self.callee_wf,))
        per = {}
        bad_status = []
        for rid, status, key in rows:
            per.setdefault(key, []).append(rid)
            if status != "done":
                bad_status.append((rid, key, status))
        answered = {a for a, (_, v, _) in self.answers.items() if v in ("held", "existing")}
        never = [a for a in self.ids if a not in self.answers]
        lost = sorted(a for a in answered if not per.get(a))
        twice = sorted(a for a in per if len(per[a]) > 1)
        strays = sorted(a for a in per if a not in answered)
        most = max([len(v) for v in per.values()] or [0])
        nc = self.verdicts
        done = len(self.answers)
        print("%s: %d of %d deliveries answered 200 in %.1f s of sending: %.0f deliveries/s; "
              "held %d, existing %d, other verdicts %s" %
              (name, done, self.n, sending, done / sending if sending > 0 else 0, nc.get("held", 0),
               nc.get("existing", 0), {k: v for k, v in nc.items() if k not in ("held", "existing")}),
              flush=True)
        print("%s: latency of the 200 answer: %s" % (name, lat_line(self.lat)), flush=True)
        print("%s: first send to 200 (resends included): %s" % (name, lat_line(self.e2e)), flush=True)
        if self.lat_at:
            tenth = max(1, len(self.lat_at) // 10)
            ordered = sorted(self.lat_at)
            parts = []
            for i in range(0, len(ordered), tenth):
                chunk = ordered[i:i + tenth]
                span = chunk[-1][0] - chunk[0][0]
                parts.append("%.0f/s p99 %.0f ms" % (len(chunk) / span if span > 0 else 0,
                                                     pct([d for _, d, _ in chunk], 0.99) * 1000))
            if os.environ.get("PUSH_LOAD_DUMP"):  # (wall time of the answer, seconds) for a look later
                with open(os.path.join(self.s.work, "latencies.json"), "w") as f:
                    json.dump([(w, d) for _, d, w in ordered], f)
            print("%s: by tenths of the answers: %s" % (name, "; ".join(parts)), flush=True)
        print("%s: most items held at once (sampled every 0.2 s): %d of hold %d" % (name, self.most_held, self.hold),
              flush=True)
        check(self.most_held <= self.hold, "%s: never more held than `hold`" % name, self.most_held)
        if self.full:
            print("full: %d item runs released by answering `finish`" % self.released, flush=True)
            check(self.most_held == self.hold and self.r429 >= self.n // 4,
                  "full: the hold filled (%d held), and 429 hold-full answered deliveries past it" % self.hold,
                  "most held %d; %d 429s for %d deliveries" % (self.most_held, self.r429, self.n))
        print("%s: 429s %d (without Retry-After 1 / hold-full: %d), 503s %d, connection errors %d; "
              "callee runs %d (not done %d); runs per key max %d; lost %d; twice %d; strays %d; "
              "settled %.1f s after sending; wall %.1f s" %
              (name, self.r429, self.bad_ra, self.r503, self.conn_err, len(rows), len(bad_status), most,
               len(lost), len(twice), len(strays), settle, wall), flush=True)
        if kill_info:
            print("fault: killed at %.1f %% (%d answered, %.1f s in), down %.2f s" %
                  (100.0 * kill_info[0] / self.n, kill_info[0], kill_info[1], kill_info[2]), flush=True)
        check(not never, "%s: every delivery answered 200 (within %g s)" % (name, PHASE_TIMEOUT),
              "%d never: %s" % (len(never), never[:10]))
        check(not self.other, "%s: no unexpected answers" % name, self.other)
        check(set(nc) <= {"held", "existing"}, "%s: every 200 verdict is held or existing" % name, nc)
        if not self.fault:
            check(nc.get("existing", 0) == 0, "%s: no `existing` without a kill" % name, nc)
        check(self.bad_ra == 0, "%s: every 429 is hold-full with Retry-After: 1" % name, self.bad_ra)
        check(not lost, "%s: no item answered held/existing is lost (0 callee runs)" % name,
              "%d lost: %s" % (len(lost), lost[:10]))
        check(not twice, "%s: no item has two callee runs" % name, {a: per[a] for a in twice[:10]})
        check(not strays, "%s: no callee run for an item nobody answered held/existing" % name, strays[:10])
        check(len(per) == len(answered) and most == 1, "%s: exactly one callee run per answered item" % name,
              "%d keys with runs, %d answered, max %d" % (len(per), len(answered), most))
        check(not bad_status, "%s: every callee run ended done" % name,
              "%d not done: %s" % (len(bad_status), bad_status[:10]))
        # Some delivery ids sent once more: their first answers, and no new run.
        sample = random.Random(7).sample(sorted(self.answers), min(30, len(self.answers)))
        diff = []
        for iid in sample:
            dl, v, _ = self.answers[iid]
            try:
                st, _, j, _ = s.deliver(iid, dl, self.hook)
            except ConnError as e:
                diff.append((dl, str(e)))
                continue
            if st != 200 or not isinstance(j, dict) or j.get("verdict") != v:
                diff.append((dl, v, st, j))
        check(not diff, "%s: 30 delivery ids sent again get their first answers" % name, diff[:5])
        time.sleep(0.3)
        n2 = s.db_rows("select count(*) from runs where workflow=?", (self.callee_wf,))[0][0]
        check(n2 == len(rows), "%s: those resends started no run" % name, "%d -> %d" % (len(rows), n2))


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 64
    rdir, work = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
    phases = sys.argv[4:] or ["load", "fault", "full"]
    runner = os.path.join(rdir, POOL_WF)
    for name in phases:
        w = os.path.join(work, name)
        os.makedirs(w, exist_ok=True)
        t = time.monotonic()
        try:
            Phase(name, runner, w, min(n, 1000) if name == "full" else n, name == "fault",
                  full=name == "full").run()
        except Exception:
            import traceback
            check(False, "%s: the phase ran to its end" % name, traceback.format_exc())
        print("%s: %.1f s" % (name, time.monotonic() - t), flush=True)
    print("%d passed, %d failed" % (checks["passed"], checks["failed"]), flush=True)
    return 0 if checks["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
