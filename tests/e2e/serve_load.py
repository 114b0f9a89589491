#!/usr/bin/env python3
"""The load and fault test of `serve` over HTTP (driven by serve_load_test.sh).

Phase `load`: a run of `conformance_load` (tests/runtime/load.jr2: a Pool of ITEMS items, cap 64,
over a backlog file, each worker waiting at a Gate `<id>.review` for `approve {n}`) is started over
HTTP. CLIENTS threads list `GET /gates` and answer the Gates (each thread its own share of the ids,
now and then one of another's, so collisions happen and must be a 409), while HOOK_THREADS threads
send HOOKS signed deliveries `POST /hooks/forge` (`ping` => reread). An extra item `hold` waits at
a Gate `hold.hold` that nobody answers until every delivery is answered, so every delivery meets a
waiting run; then the driver releases it and the run ends `done`.

Phase `fault`: the same load on a new store; serve is SIGKILLed once 30-60 % of the answers got
their 200, and started again on the same store and port; the clients retry what got no answer.

What must hold, and is checked:
  - every Gate answer that got a 2xx is applied: the item's output is the `n` of that answer;
  - no Gate got two 2xx answers; an item without a 2xx answer (its answer was cut off by the
    kill) holds one of the `n`s sent to it, never anything else;
  - no item started twice (the run's feed has one `started` per item), every item settled once,
    the run ends `done`;
  - every delivery got 200 with verdict `reread` (retried with its id after a kill: its first
    answer), one `reread` feed line per delivery id, and a delivery id sent again gets its first
    answer, changing nothing;
  - GET /hooks/forge holds the newest min(HOOKS, 1000) deliveries, all ours.
Each check prints `PASS: …` or `FAIL: …`; figures (p50/p99/max latencies, throughput, counts)
are printed as `load: …` and `fault: …` lines.

Usage: serve_load.py RUNNER WORKDIR ITEMS HOOKS [PHASE…]   (phases: load fault; default both)
"""
import hashlib
import hmac
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from procstat import spent, threads_cpu  # noqa: E402

CLIENTS = 8
HOOK_THREADS = 2
CAP = 64
SECRET = "load-test-secret-" + hashlib.sha256(os.urandom(16)).hexdigest()[:16]
PHASE_TIMEOUT = float(os.environ.get("SERVE_LOAD_PHASE_TIMEOUT", "40"))
REQ_TIMEOUT = 15.0
REVIEWER_TOKEN = "reviewer-" + hashlib.sha256(os.urandom(16)).hexdigest()[:24]

checks = {"passed": 0, "failed": 0}


def check(cond, what, detail=""):
    if cond:
        checks["passed"] += 1
        print("PASS: " + what, flush=True)
    else:
        checks["failed"] += 1
        print("FAIL: " + what + (": " + detail if detail else ""), flush=True)


def pct(values, q):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def ms(v):
    return "%.1f ms" % (v * 1000.0)


def lat_line(values):
    if not values:
        return "no samples"
    return "p50 %s, p99 %s, max %s (%d samples)" % (ms(pct(values, 0.5)), ms(pct(values, 0.99)),
                                                    ms(max(values)), len(values))


class ConnError(Exception):
    pass


# Each client thread keeps its connection alive, as a real HTTP client does (serve keeps it open
# for 1,000 requests; a serve that closes it after each answer makes the client open another).
# SERVE_LOAD_KEEPALIVE=0: a connection per request.
KEEPALIVE = os.environ.get("SERVE_LOAD_KEEPALIVE", "1") != "0"
_local = threading.local()


def request(port, method, path, body=None, headers=None, timeout=REQ_TIMEOUT):
    """One request: (status, headers dict, body bytes, seconds), on the thread's kept-alive
    connection (or its own). Raises ConnError when no HTTP answer came (refused, reset, timed
    out); a GET that finds its kept-alive connection closed by serve is sent once more on a new
    one, and so is a POST whose connection serve had closed while it idled (serve closes a
    connection only before it reads a request or after it answers one, so the request was not
    taken; the caller decides what any other answer that never came means)."""
    t0 = time.monotonic()
    if body is not None and not isinstance(body, bytes):
        body = json.dumps(body).encode()
    h = dict(headers or {})
    if body is not None:
        h.setdefault("Content-Type", "application/json")
    conns = _local.__dict__.setdefault("conns", {})
    for attempt in (0, 1):
        reused = KEEPALIVE and port in conns and conns[port].sock is not None
        conn = conns.get(port) if KEEPALIVE else None
        if conn is None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
            if KEEPALIVE:
                conns[port] = conn
        try:
            conn.request(method, path, body=body, headers=h)
            r = conn.getresponse()
            data = r.read()
            if not KEEPALIVE:
                conn.close()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, data, time.monotonic() - t0
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            conns.pop(port, None)
            stale = isinstance(e, (http.client.RemoteDisconnected, BrokenPipeError,
                                   ConnectionResetError))
            if attempt == 0 and reused and stale:
                continue
            raise ConnError("%s %s: %s" % (method, path, e or type(e).__name__))


def jbody(data):
    try:
        return json.loads(data.decode("utf-8"))
    except Exception:
        return None


class Serve:
    """The serve process, started again on the same store and port after a kill."""

    def __init__(self, runner, work, store, port, callers):
        self.runner, self.work, self.store, self.port, self.callers = runner, work, store, port, callers
        self.proc = None
        self.starts = 0

    def start(self):
        self.starts += 1
        env = dict(os.environ, JR2_STORE=self.store, FORGE_HOOK_SECRET=SECRET)
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
                st, _, body, _ = request(self.port, "GET", "/healthz", timeout=2)
                if st == 200:
                    return True
            except ConnError:
                pass
            time.sleep(0.02)
        return False

    def err_tail(self, n=5):
        try:
            with open(os.path.join(self.work, "serve.%d.err" % self.starts), "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()
            return " | ".join(lines[-n:])
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


class Phase:
    def __init__(self, name, runner, work, items, hooks, port, fault):
        self.name, self.runner, self.items, self.hooks, self.fault = name, runner, items, hooks, fault
        self.work = os.path.join(work, name)
        os.makedirs(self.work)
        self.store = os.path.join(self.work, "store.db")
        self.backlog = os.path.join(self.work, "backlog.json")
        self.ids = ["i%05d" % i for i in range(items)]
        with open(self.backlog, "w") as f:
            json.dump([{"id": "hold", "needs": [], "hold": True}] +
                      [{"id": i, "needs": []} for i in self.ids], f)
        callers = os.path.join(self.work, "callers.json")
        with open(callers, "w") as f:
            json.dump({"callers": [{"name": "reviewer",
                                    "token_sha256": hashlib.sha256(REVIEWER_TOKEN.encode()).hexdigest(),
                                    "scopes": {"conformance_load": ["answer"]},
                                    "gates": ["*.review"]}],
                       "hooks": {"forge": {"secret_env": "FORGE_HOOK_SECRET"}}}, f)
        self.serve = Serve(runner, self.work, self.store, port, callers)
        self.port = port
        self.lock = threading.Lock()
        self.stop = threading.Event()       # the clients stop
        self.failed_hard = None             # a reason to stop everything
        self.run_id = None
        self.token = None
        # gate answers
        self.ok = {}                 # item id -> list of (n, when) that got 2xx
        self.sent = {}               # item id -> set of n sent (any outcome)
        self.attempt = {}            # item id -> attempts
        self.answer_lat = []
        self.answer_bytes = []       # the body of each 2xx answer to a Gate answer
        self.answer_shapes = []      # 2xx answers listing another item's Gates, or no `open`
        self.list_lat = []
        self.status_count = {}       # status -> count
        self.conn_errors = 0
        self.uncertain = set()       # items with an answer that got no HTTP answer (cut off)
        self.foreign_gates = 0       # a reviewer saw a Gate outside *.review
        self.other_answers = []      # unexpected answers, a few kept
        self.retry_after = 0
        self.resolved = set()        # items answered: a 2xx, or a 409 (answered by someone)
        self.crashed = []            # a test thread that broke (a bug of the test)
        # hooks
        self.hook_lat = []
        self.hook_status = {}
        self.hook_verdicts = {}
        self.hook_first = {}         # delivery -> first 2xx body (parsed)
        self.hook_conn_errors = 0
        self.hook_other = []
        self.hooks_done = threading.Event()
        self.killed_at = None        # (answers 2xx so far, seconds into the phase)
        self.ok_before_kill = set()
        self.hooks_ok_before_kill = []
        self.down_s = 0.0

    # ---- helpers ----
    def auth(self, reviewer=False):
        return {"Authorization": "Bearer " + (REVIEWER_TOKEN if reviewer else self.token)}

    def ok_count(self):
        with self.lock:
            return sum(1 for v in self.ok.values() if v)

    def note_status(self, st):
        with self.lock:
            self.status_count[st] = self.status_count.get(st, 0) + 1

    # ---- the run ----
    def start_run(self):
        tok = self.store + ".token"
        for _ in range(200):
            if os.path.exists(tok):
                break
            time.sleep(0.02)
        with open(tok) as f:
            self.token = f.read().strip()
        body = {"input": {"backlog": self.backlog, "jobs": CAP}}
        try:
            st, _, data, lat = request(self.port, "POST", "/workflows/conformance_load/runs", body,
                                       self.auth())
        except ConnError as e:
            st, data, lat = None, str(e).encode(), 0
        j = jbody(data) if st else None
        good = st == 201 and isinstance(j, dict) and isinstance(j.get("runId"), str)
        check(good, "%s: POST /workflows/conformance_load/runs answers 201 {runId, status, gates}" % self.name,
              "%s %s" % (st, data[:300]))
        if good:
            self.run_id = j["runId"]
            print("%s: started run %s over HTTP in %s (status %s, %d gates)" %
                  (self.name, self.run_id, ms(lat), j.get("status"), len(j.get("gates") or [])),
                  flush=True)
            return True
        # Fall back on the CLI, so the load is still measured: serve takes the run up.
        env = dict(os.environ, JR2_STORE=self.store)
        p = subprocess.run([self.runner, "run", "--input", json.dumps(body["input"])], cwd=self.work,
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        r = subprocess.run([self.runner, "runs", "--json"], cwd=self.work, env=env,
                           capture_output=True)
        runs = jbody(r.stdout) or []
        if p.returncode != 3 or not runs:
            print("%s: the CLI run could not start either (exit %d): %s" %
                  (self.name, p.returncode, p.stderr.decode()[-300:]), flush=True)
            return False
        self.run_id = runs[0]["runId"]
        print("%s: started run %s with the CLI instead" % (self.name, self.run_id), flush=True)
        return True

    def get_run(self):
        st, _, data, _ = request(self.port, "GET", "/runs/" + self.run_id, None, self.auth())
        return st, jbody(data)

    def settled_reviews(self):
        """The review items settled so far, from GET /runs/:id (None without an answer)."""
        try:
            st, j = self.get_run()
        except ConnError:
            return None
        if st != 200 or not isinstance(j, dict):
            return None
        items = j.get("items") or {}
        if not isinstance(items, dict):
            return None
        return sum(1 for k in items if k != "hold")

    # ---- clients ----
    def client(self, k):
        reviewer = k >= CLIENTS // 2
        rnd = random.Random(k * 7919 + len(self.name))
        deadline = self.t0 + PHASE_TIMEOUT
        while not self.stop.is_set() and time.monotonic() < deadline:
            try:
                st, hdr, data, lat = request(self.port, "GET", "/gates", None, self.auth(reviewer))
            except ConnError:
                with self.lock:
                    self.conn_errors += 1
                time.sleep(0.05)
                continue
            with self.lock:
                self.list_lat.append(lat)
            if st == 503:
                self.note_status("GET /gates 503")
                time.sleep(min(1.0, float(hdr.get("retry-after", "1") or 1)))
                continue
            gates = jbody(data)
            if st != 200 or not isinstance(gates, list):
                self.note_status("GET /gates %s" % st)
                with self.lock:
                    if len(self.other_answers) < 5:
                        self.other_answers.append("GET /gates %s %s" % (st, data[:200]))
                time.sleep(0.1)
                continue
            mine, others = [], []
            for g in gates:
                if not isinstance(g, dict) or g.get("runId") != self.run_id:
                    continue
                name = str(g.get("gate") or "")
                if not name.endswith(".review"):
                    if reviewer:
                        with self.lock:
                            self.foreign_gates += 1
                    continue
                item = name[:-len(".review")]
                if item not in self.ok_index:
                    continue
                (mine if self.ok_index[item] % CLIENTS == k else others).append(item)
            if others and rnd.random() < 0.15:
                mine.append(rnd.choice(others))  # another's: a collision, now and then
            if not mine:
                with self.lock:
                    resolved = len(self.resolved)
                left = self.settled_reviews() if resolved < self.items else self.items
                if left is not None and left >= self.items:
                    self.stop.set()
                    break
                time.sleep(0.02)
                continue
            rnd.shuffle(mine)
            for item in mine:
                if self.stop.is_set():
                    break
                self.answer(item, reviewer)

    def answer(self, item, reviewer):
        path = "/runs/%s/gates/%s.review/events" % (self.run_id, item)
        while not self.stop.is_set():
            with self.lock:
                a = self.attempt.get(item, 0) + 1
                self.attempt[item] = a
                n = self.ok_index[item] * 1000 + a % 1000
                self.sent.setdefault(item, set()).add(n)
            try:
                st, hdr, data, lat = request(self.port, "POST", path,
                                             {"event": "approve", "payload": {"n": n}},
                                             self.auth(reviewer))
            except ConnError:
                # No answer: it may or may not have been applied. Ask again (a 409 then says it was).
                with self.lock:
                    self.conn_errors += 1
                    self.uncertain.add(item)
                time.sleep(0.05)
                continue
            self.note_status("answer %s" % st)
            if 200 <= st < 300:
                with self.lock:
                    self.answer_lat.append(lat)
                    j = jbody(data) or {}
                    listed = [g.get("gate") for g in j.get("gates") or [] if isinstance(g, dict)]
                    self.answer_bytes.append((len(data), len(listed)))
                    # Only the Gates of the machine answered (this item's worker), and how
                    # many are open in all (at most the cap's, and `hold.hold`).
                    if (any(not str(name).startswith(item + ".") for name in listed)
                            or not isinstance(j.get("open"), int) or not 0 <= j["open"] <= CAP + 1):
                        self.answer_shapes.append("%s: %s" % (item, data[:200]))
                    self.ok.setdefault(item, []).append((n, time.monotonic()))
                    self.resolved.add(item)
                j = jbody(data)
                if not (isinstance(j, dict) and "status" in j and "gates" in j):
                    with self.lock:
                        if len(self.other_answers) < 5:
                            self.other_answers.append("answer %s body %s" % (st, data[:200]))
                return
            if st == 409:
                with self.lock:
                    self.resolved.add(item)
                return  # answered already (by another client, or before a kill)
            if st == 503:
                with self.lock:
                    self.retry_after += 1
                time.sleep(min(1.0, float(hdr.get("retry-after", "1") or 1)))
                continue
            with self.lock:
                if len(self.other_answers) < 5:
                    self.other_answers.append("answer %s %s: %s" % (item, st, data[:200]))
            return

    # ---- hooks ----
    def deliver(self, delivery, i):
        body = json.dumps({"zen": "load", "n": i}).encode()
        sig = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        headers = {"X-Jr2-Event": "ping", "X-Jr2-Delivery": delivery, "X-Hub-Signature-256": sig,
                   "Content-Type": "application/json"}
        return request(self.port, "POST", "/hooks/forge", body, headers)

    def hooker(self, k):
        deadline = self.t0 + PHASE_TIMEOUT
        for i in range(k, self.hooks, HOOK_THREADS):
            delivery = "%s-%06d" % (self.name, i)
            while time.monotonic() < deadline:
                try:
                    st, hdr, data, lat = self.deliver(delivery, i)
                except ConnError:
                    with self.lock:
                        self.hook_conn_errors += 1
                    time.sleep(0.05)
                    continue
                break
            else:
                return
            j = jbody(data)
            with self.lock:
                self.hook_status[st] = self.hook_status.get(st, 0) + 1
                if st == 200:
                    self.hook_lat.append(lat)
                    v = j.get("verdict") if isinstance(j, dict) else None
                    self.hook_verdicts[v] = self.hook_verdicts.get(v, 0) + 1
                    self.hook_first.setdefault(delivery, j)
                    if self.killed_at is None and self.fault:
                        self.hooks_ok_before_kill.append(delivery)
                    if v != "reread" and len(self.hook_other) < 5:
                        self.hook_other.append("%s: %s" % (delivery, data[:300]))
                elif len(self.hook_other) < 5:
                    self.hook_other.append("%s: %s %s" % (delivery, st, data[:300]))

    # ---- the phase ----
    def run(self):
        print("---- %s: %d items (+1 held), cap %d, %d clients, %d hook deliveries from %d threads%s"
              % (self.name, self.items, CAP, CLIENTS, self.hooks, HOOK_THREADS,
                 ", serve SIGKILLed mid-load" if self.fault else ""), flush=True)
        if not self.serve.start():
            check(False, "%s: serve starts" % self.name, self.serve.err_tail())
            return
        try:
            self._run()
        finally:
            self.serve.kill()

    def _run(self):
        self.ok_index = {i: n for n, i in enumerate(self.ids)}
        if not self.start_run():
            check(False, "%s: a run to load" % self.name)
            return
        self.t0 = time.monotonic()
        cpu0 = threads_cpu(self.serve.proc.pid)
        threads = [threading.Thread(target=self.guarded, args=(self.client, k), daemon=True)
                   for k in range(CLIENTS)]
        hookers = [threading.Thread(target=self.guarded, args=(self.hooker, k), daemon=True)
                   for k in range(HOOK_THREADS)]
        for t in threads + hookers:
            t.start()
        kill_frac = random.uniform(0.3, 0.6)
        down = random.uniform(0.2, 1.0)
        restart_ok = True
        trace = os.environ.get("SERVE_LOAD_TRACE")
        last_t, last_a, last_h = time.monotonic(), 0, 0
        while any(t.is_alive() for t in threads + hookers):
            if trace and time.monotonic() - last_t >= 1.0:
                with self.lock:
                    a, h = self.ok_count_unlocked(), sum(self.hook_status.values())
                wal = self.store + "-wal"
                wsz = os.path.getsize(wal) if os.path.exists(wal) else 0
                try:
                    with open("/proc/%d/stat" % self.serve.proc.pid) as f:
                        f14 = f.read().rsplit(")", 1)[1].split()
                    cpu = (int(f14[11]) + int(f14[12])) / os.sysconf("SC_CLK_TCK")
                except (OSError, IndexError, ValueError):
                    cpu = -1
                print("%s: t=%.0fs answers %d (+%d) hooks %d (+%d) wal %.1f MB, serve cpu %.1f s" %
                      (self.name, time.monotonic() - self.t0, a, a - last_a, h, h - last_h,
                       wsz / 1e6, cpu), flush=True)
                last_t, last_a, last_h = time.monotonic(), a, h
            if time.monotonic() - self.t0 > PHASE_TIMEOUT + 5:
                break
            if self.fault and self.killed_at is None and self.ok_count() >= kill_frac * self.items:
                with self.lock:
                    self.serve.kill()  # under the lock: no 2xx is counted while it dies
                    self.killed_at = (self.ok_count_unlocked(), time.monotonic() - self.t0)
                    self.ok_before_kill = {i for i, v in self.ok.items() if v}
                    self.hooks_before_kill = len(self.hooks_ok_before_kill)
                print("%s: SIGKILLed serve after %d of %d answers got 2xx (%.0f %%), %d deliveries "
                      "answered, %.1f s into the load; down for %.2f s" %
                      (self.name, self.killed_at[0], self.items, 100.0 * self.killed_at[0] / self.items,
                       self.hooks_before_kill, self.killed_at[1], down), flush=True)
                time.sleep(down)
                t_restart = time.monotonic()
                restart_ok = self.serve.start()
                self.down_s = time.monotonic() - t_restart + down
                print("%s: serve answered /healthz %.0f ms after it was started again" %
                      (self.name, (time.monotonic() - t_restart) * 1000), flush=True)
                check(restart_ok, "%s: serve starts again on the same store and port" % self.name,
                      self.serve.err_tail())
                if not restart_ok:
                    self.stop.set()
                    break
            time.sleep(0.005)
        for t in hookers:
            t.join(timeout=max(0.1, self.t0 + PHASE_TIMEOUT + 5 - time.monotonic()))
        self.hooks_done.set()
        for t in threads:
            t.join(timeout=max(0.1, self.t0 + PHASE_TIMEOUT + 5 - time.monotonic()))
        wall = time.monotonic() - self.t0
        with self.lock:
            hooks_answered = sum(self.hook_status.values())
            resolved = len(self.resolved)
        timed_out = (any(t.is_alive() for t in threads + hookers) or hooks_answered < self.hooks
                     or (resolved < self.items and self.settled_reviews() != self.items))
        self.stop.set()
        check(not self.crashed, "%s: no thread of the test broke" % self.name, " / ".join(self.crashed))
        check(not timed_out, "%s: the load finishes within %.0f s" % (self.name, PHASE_TIMEOUT),
              "after %.1f s: 2xx answers %d of %d, deliveries answered %d of %d" %
              (wall, self.ok_count(), self.items, hooks_answered, self.hooks))
        if not restart_ok:
            return
        if not self.fault:
            # #33 goal 2: the connections are the network thread's, the routes the engine's.
            cpu1 = threads_cpu(self.serve.proc.pid)
            used = spent(cpu0, cpu1)
            total = sum(used.values())
            print("%s: serve's CPU by thread over the load: %s (%.1f s in all, %.2f s a second)" %
                  (self.name, ", ".join("%s %.1f s" % kv for kv in sorted(used.items())), total,
                   total / wall if wall else 0), flush=True)
            check(used.get("jr2-net", 0.0) >= 0.1 * total and used.get("engine", 0.0) > 0,
                  "%s: serve's connections run on its network thread, its routes on the engine's"
                  % self.name, repr(used))
        self.report(wall)
        self.finish()

    def guarded(self, fn, k):
        try:
            fn(k)
        except Exception as e:  # a bug of this test: said, never a silent pass
            import traceback
            with self.lock:
                self.crashed.append("%s %d: %s" % (fn.__name__, k, traceback.format_exc()[-600:]))

    def ok_count_unlocked(self):
        return sum(1 for v in self.ok.values() if v)

    def report(self, wall):
        n = self.name
        ok2 = self.ok_count()
        twice = sorted(i for i, v in self.ok.items() if len(v) > 1)
        sc = ", ".join("%s=%d" % kv for kv in sorted(self.status_count.items()))
        print("%s: wall %.1f s; gate answers with 2xx %d of %d (%.0f/s); %s" %
              (n, wall, ok2, self.items, ok2 / wall if wall else 0, sc), flush=True)
        print("%s: gate answer latency: %s" % (n, lat_line(self.answer_lat)), flush=True)
        if self.answer_bytes:
            sizes = sorted(b for b, _ in self.answer_bytes)
            biggest, gates = max(self.answer_bytes)
            print("%s: gate answer body: median %d bytes, largest %d (with %d open Gates listed)" %
                  (n, sizes[len(sizes) // 2], biggest, gates), flush=True)
            # #33: an answer carries what the client needs: the status, the Gates open now of the
            # machine answered (this item's worker) with the events each takes, never a Menu,
            # and how many are open in the run; at most 2 KB with 64 Gates open.
            over = [(b, g) for b, g in self.answer_bytes if b > 2048]
            check(not over, "%s: every answer to a Gate answer is at most 2 KB (%d Gates open)" % (n, CAP),
                  "%d over, e.g. %r" % (len(over), over[:3]))
            check(not self.answer_shapes,
                  "%s: every answer lists only its item's Gates, and how many are open" % n,
                  "%d not, e.g. %r" % (len(self.answer_shapes), self.answer_shapes[:2]))
        print("%s: GET /gates latency:  %s" % (n, lat_line(self.list_lat)), flush=True)
        hs = ", ".join("%s=%d" % (k, v) for k, v in sorted(self.hook_status.items(), key=str))
        hv = ", ".join("%s=%d" % (k, v) for k, v in sorted(self.hook_verdicts.items(), key=str))
        print("%s: hook deliveries answered %d of %d (%.0f/s): status %s; verdicts %s" %
              (n, sum(self.hook_status.values()), self.hooks,
               sum(self.hook_status.values()) / wall if wall else 0, hs or "-", hv or "-"), flush=True)
        print("%s: hook delivery latency: %s" % (n, lat_line(self.hook_lat)), flush=True)
        print("%s: connection errors: gate clients %d (items whose answer was cut off %d), hooks %d; "
              "503s %d" % (n, self.conn_errors, len(self.uncertain), self.hook_conn_errors,
                           self.retry_after), flush=True)
        for o in self.other_answers:
            print("%s: unexpected answer: %s" % (n, o), flush=True)
        for o in self.hook_other:
            print("%s: unexpected hook answer: %s" % (n, o), flush=True)
        check(not twice, "%s: no Gate took two 2xx answers" % n,
              "%d Gates answered 200 twice or more, e.g. %s" %
              (len(twice), ["%s: n=%s" % (i, [a for a, _ in self.ok[i]]) for i in twice[:4]]))
        unexpected = {k: v for k, v in self.status_count.items()
                      if not (k.startswith("answer 2") or k == "answer 409" or k == "answer 503"
                              or k == "GET /gates 503")}
        check(not unexpected and not self.other_answers,
              "%s: every answer is 200 or a 409 for a Gate already answered" % n,
              "%s %s" % (unexpected, self.other_answers[:2]))
        check(self.foreign_gates == 0,
              "%s: the reviewer (gates *.review) is listed only *.review Gates" % n,
              "%d other Gates listed" % self.foreign_gates)
        check(self.hook_status.get(200, 0) == self.hooks and len(self.hook_status) == 1,
              "%s: every hook delivery answered 200" % n, hs)
        check(self.hook_verdicts.get("reread", 0) == self.hooks,
              "%s: every delivery's verdict is reread" % n, "%s; %s" % (hv, self.hook_other[:2]))

    def finish(self):
        n = self.name
        # Every review answered: release the held item; the run ends done.
        st, data = None, b""
        for body in ({"event": "release"}, {"event": "release", "payload": {}}):
            try:
                st, _, data, _ = request(self.port, "POST",
                                         "/runs/%s/gates/hold.hold/events" % self.run_id, body,
                                         self.auth())
            except ConnError as e:
                st, data = None, str(e).encode()
            if st != 400:
                break
            print("%s: release without a payload answered 400 %s" % (n, data[:200]), flush=True)
        check(st == 200, "%s: the held item is released (200)" % n, "%s %s" % (st, data[:300]))
        status = None
        for _ in range(100):
            try:
                st, j = self.get_run()
            except ConnError:
                st, j = None, None
            if st == 200 and isinstance(j, dict) and j.get("status") != "waiting":
                status = j
                break
            time.sleep(0.05)
        check(status is not None and status.get("status") == "done",
              "%s: the run ends done" % n, json.dumps(status)[:300] if status else "still waiting")
        # A read never told before it is stored: the store (CLI) agrees with what HTTP said.
        env = dict(os.environ, JR2_STORE=self.store)
        r = subprocess.run([self.runner, "status", self.run_id, "--json"], cwd=self.work, env=env,
                           capture_output=True)
        cli = jbody(r.stdout) or {}
        out = cli.get("output") or {}
        items = out.get("items") or {}
        failures = out.get("failures") or {}
        check(cli.get("status") == "done" and len(items) == self.items + 1 and not failures,
              "%s: the store holds the run done with %d items settled, none failed" % (n, self.items + 1),
              "status %s, %d settled, %d failed" % (cli.get("status"), len(items), len(failures)))
        # Every 2xx answer applied: the item's output is the n of that answer.
        lost, strange, unsettled = [], [], []
        for item in self.ids:
            oks = self.ok.get(item) or []
            if item not in items:
                unsettled.append(item)
                if oks:
                    lost.append(item)
            elif oks:
                if any(items[item] != a for a, _ in oks):
                    lost.append(item)  # (two 2xx for one Gate: one of them was not applied)
            elif items[item] not in self.sent.get(item, set()):
                strange.append(item)
        no2xx = [i for i in self.ids if not self.ok.get(i)]
        print("%s: items settled %d; answered with 2xx %d; settled by an answer whose 2xx was cut "
              "off %d; 2xx answers lost %d; items holding an n nobody sent %d" %
              (n, len(items), self.ok_count(), len(no2xx) - len(unsettled), len(lost), len(strange)),
              flush=True)
        check(not lost, "%s: every answer that got a 2xx is applied" % n,
              "%d items with a 2xx answer not applied, e.g. %s" %
              (len(lost), ["%s: 2xx n=%s, applied %s" % (i, [a for a, _ in self.ok.get(i) or []],
                                                         items.get(i)) for i in lost[:3]]))
        check(not strange and not unsettled,
              "%s: every item settled by one of the answers sent to it" % n,
              "unsettled %s, strange %s" % (unsettled[:5], [(i, items.get(i)) for i in strange[:3]]))
        if self.fault:
            # Lost by the kill: no 2xx answer of the item's is what it holds (a Gate answered 200
            # twice is the check above's, whatever the kill does).
            before = [i for i in self.ok_before_kill
                      if items.get(i) not in [a for a, _ in self.ok[i]]]
            print("%s: answers with 2xx before the kill %d, lost by the kill %d" %
                  (n, len(self.ok_before_kill), len(before)), flush=True)
            check(not before, "%s: every answer that got a 2xx before the kill is applied" % n,
                  str(before[:5]))
        # The feed: one `started` per item, one `reread` per delivery id.
        r = subprocess.run([self.runner, "log", self.run_id, "--json"], cwd=self.work, env=env,
                           capture_output=True)
        feed = jbody(r.stdout) or []
        started = {}
        rereads = 0
        kinds = {}
        for e in feed:
            kinds[e.get("kind")] = kinds.get(e.get("kind"), 0) + 1
            if e.get("kind") == "started":
                it = (e.get("data") or {}).get("item")
                started[it] = started.get(it, 0) + 1
            elif e.get("kind") == "reread":
                rereads += 1
        # Who answered (#34): each item settled by an answer has exactly one `answered` line for
        # its Gate, by the Caller that sent it (the reviewer, or the instance token some clients
        # use), with the `n` it settled with; none for an answer that was not
        # applied (the line is stored with the answer's turn, so a kill keeps both or neither).
        audit = {}
        for e in feed:
            if e.get("kind") == "answered":
                d = e.get("data") or {}
                audit.setdefault(d.get("gate", ""), []).append(d)
        unaudited, twice_audited, wrong_audit = [], [], []
        for item in self.ids:
            lines = audit.pop(item + ".review", [])
            if len(lines) > 1:
                twice_audited.append(item)
            if item not in items:
                continue
            if not lines:
                unaudited.append(item)
            elif any(d.get("by") not in ("reviewer", "instance") or d.get("event") != "approve" or
                     (d.get("payload") or {}).get("n") != items[item] for d in lines):
                wrong_audit.append((item, lines[0], items[item]))
        stray = sorted(g for g in audit if g != "hold.hold")
        print("%s: `answered` lines %d: items settled by an answer with none %d, with two or more "
              "%d, not what was applied %d; lines for no item %d" %
              (n, sum(kinds.get(k, 0) for k in ("answered",)), len(unaudited), len(twice_audited),
               len(wrong_audit), len(stray)), flush=True)
        check(not unaudited and not twice_audited and not wrong_audit and not stray,
              "%s: every applied answer has one `answered` line with who, the event and its "
              "payload, and no other answer has one" % n,
              "none %s, twice %s, wrong %s, stray %s" % (unaudited[:5], twice_audited[:5],
                                                         wrong_audit[:2], stray[:5]))
        twice = sorted(i for i, c in started.items() if c > 1)
        never = [i for i in self.ids + ["hold"] if i not in started]
        print("%s: feed %d lines (%s); items started twice %d, never %d; reread lines %d for %d "
              "delivery ids answered reread" %
              (n, len(feed), ", ".join("%s %d" % kv for kv in sorted(kinds.items(), key=str)),
               len(twice), len(never), rereads, self.hook_verdicts.get("reread", 0)), flush=True)
        check(feed and not twice and not never, "%s: every item started exactly once" % n,
              "twice %s, never %s" % (twice[:5], never[:5]))
        answered = self.hook_verdicts.get("reread", 0)
        if self.fault:
            # A delivery whose reread was stored and whose answer the kill cut off is sent again
            # and reads again (at least once: a reread is only "read again"); none is lost.
            print("%s: reread lines beyond the deliveries answered: %d (deliveries cut off by "
                  "the kill and sent again)" % (n, rereads - answered), flush=True)
            check(rereads >= answered,
                  "%s: no reread answered 200 is lost by the kill" % n,
                  "%d lines, %d deliveries" % (rereads, answered))
        else:
            check(rereads == answered,
                  "%s: one reread feed line per delivery answered reread" % n,
                  "%d lines, %d deliveries" % (rereads, answered))
        self.sse(feed)
        self.trace()
        self.hook_log()
        self.redeliver(rereads)
        rc = self.serve.term()
        check(rc == 0, "%s: serve stops on SIGTERM with 0" % n, "exit %s; %s" % (rc, self.serve.err_tail()))

    def sse(self, feed):
        """GET /runs/:id/events of the ended run: the whole feed, then the stream ends."""
        n = self.name
        t0 = time.monotonic()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
            conn.request("GET", "/runs/%s/events" % self.run_id, headers=self.auth())
            r = conn.getresponse()
            ctype = r.getheader("Content-Type", "")
            data = r.read().decode("utf-8", "replace")
            conn.close()
        except (OSError, http.client.HTTPException) as e:
            check(False, "%s: GET /runs/:id/events streams the ended run's feed" % n, str(e))
            return
        seqs, started = [], {}
        for block in data.split("\n\n"):
            for line in block.split("\n"):
                if line.startswith("data:"):
                    ev = jbody(line[5:].strip().encode()) or {}
                    seqs.append(ev.get("seq"))
                    if ev.get("kind") == "started":
                        it = (ev.get("data") or {}).get("item")
                        started[it] = started.get(it, 0) + 1
        want = [e.get("seq") for e in feed]
        print("%s: SSE feed: %d events in %s (%s)" % (n, len(seqs), ms(time.monotonic() - t0), ctype),
              flush=True)
        check(r.status == 200 and ctype.startswith("text/event-stream") and seqs == want and
              all(c == 1 for c in started.values()),
              "%s: GET /runs/:id/events gives the whole feed, in order, and ends" % n,
              "status %s, %d events vs %d stored" % (r.status, len(seqs), len(want)))

    def trace(self):
        """GET /runs/:id/trace of the ended run, a page at a time (#36): what `export` writes
        from the store, byte for byte; and a client that reads none of it holds one page, not the
        engine: the run's own answers meanwhile come as fast as before."""
        n = self.name
        want = subprocess.run([self.runner, "export", self.run_id], cwd=self.work,
                              env=dict(os.environ, JR2_STORE=self.store), capture_output=True,
                              timeout=60)
        # A client that asks for the trace and reads nothing (its receive buffer small).
        idle = socket.socket()
        idle.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        idle.connect(("127.0.0.1", self.port))
        idle.sendall(("GET /runs/%s/trace HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\n\r\n" %
                      (self.run_id, self.auth()["Authorization"])).encode())
        # And three that read it whole, twice each, while the run is asked for 40 times.
        def reader():
            for _ in range(2):
                try:
                    c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                    c.request("GET", "/runs/%s/trace" % self.run_id, headers=self.auth())
                    c.getresponse().read()
                    c.close()
                except (OSError, http.client.HTTPException):
                    pass
        readers = [threading.Thread(target=reader) for _ in range(3)]
        for th in readers:
            th.start()
        lat = []
        for _ in range(40):
            try:
                st, _, _, s = request(self.port, "GET", "/runs/%s" % self.run_id, None, self.auth())
                lat.append(s if st == 200 else 99)
            except ConnError:
                lat.append(99)
        for th in readers:
            th.join()
        t0 = time.monotonic()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            conn.request("GET", "/runs/%s/trace" % self.run_id, headers=self.auth())
            r = conn.getresponse()
            ctype = r.getheader("Content-Type", "")
            got = r.read()
            conn.close()
        except (OSError, http.client.HTTPException) as e:
            got, ctype, r = b"", str(e), None
        took = time.monotonic() - t0
        idle.close()
        lines = got.count(b"\n")
        print("%s: GET /runs/:id/trace: %d lines, %d bytes in %s (%s); export from the store %d "
              "bytes; GET /runs/:id beside one client that reads no trace and three that read it: %s" %
              (n, lines, len(got), ms(took), ctype, len(want.stdout), lat_line(lat)), flush=True)
        check(r is not None and r.status == 200 and ctype.startswith("application/x-ndjson") and
              want.returncode == 0 and got == want.stdout and lines > 1000,
              "%s: GET /runs/:id/trace is what `export` writes, byte for byte, in pages" % n,
              "status %s, %d bytes vs %d, exit %d" % (r and r.status, len(got), len(want.stdout),
                                                      want.returncode))
        # Built whole on the engine thread (before the pages), the three readers held it about
        # 100 ms a trace: the slowest of these answers took 312 ms; in pages, 5 ms.
        check(max(lat) < 0.15, "%s: clients that read traces, or read none, hold nothing up" % n,
              lat_line(lat))

    def hook_log(self):
        n = self.name
        try:
            st, _, data, lat = request(self.port, "GET", "/hooks/forge", None, self.auth())
            st0, _, _, _ = request(self.port, "GET", "/hooks/forge", None, self.auth(reviewer=True))
        except ConnError as e:
            check(False, "%s: GET /hooks/forge" % n, str(e))
            return
        log = jbody(data)
        ours = set(self.hook_first)
        good = (st == 200 and isinstance(log, list) and len(log) == min(1000, len(ours)) and
                all(isinstance(e, dict) and e.get("delivery") in ours and e.get("event") == "ping" and
                    (e.get("answer") or {}).get("verdict") == "reread" for e in log))
        times = [e.get("time") for e in log] if isinstance(log, list) else []
        newest_first = all(a >= b for a, b in zip(times, times[1:])) if times else False
        print("%s: GET /hooks/forge: %s, %d entries in %s" %
              (n, st, len(log) if isinstance(log, list) else -1, ms(lat)), flush=True)
        check(good and newest_first,
              "%s: GET /hooks/forge holds the newest %d deliveries, newest first, all reread" %
              (n, min(1000, len(ours))), "status %s %s" % (st, data[:200]))
        check(st0 in (401, 403), "%s: GET /hooks/forge is refused to a Caller's token" % n,
              "answered %s" % st0)

    def redeliver(self, rereads):
        """Deliveries sent again with their ids after the run ended get their first answer and
        change nothing; a new one is skipped (no run waits for it)."""
        n = self.name
        pool = self.hooks_ok_before_kill if self.fault else list(self.hook_first)
        sample = random.sample(pool, min(50, len(pool)))
        same, diff = 0, []
        for d in sample:
            i = int(d.rsplit("-", 1)[1])
            try:
                st, _, data, _ = self.deliver(d, i)
            except ConnError as e:
                diff.append("%s: %s" % (d, e))
                continue
            j = jbody(data)
            if st == 200 and j == self.hook_first[d]:
                same += 1
            elif len(diff) < 3:
                diff.append("%s: %s %s (first %s)" % (d, st, data[:200], json.dumps(self.hook_first[d])[:200]))
        check(same == len(sample),
              "%s: %d deliveries sent again with their ids get their first answer%s" %
              (n, len(sample), " (answered before the kill)" if self.fault else ""), "; ".join(diff))
        try:
            st, _, data, _ = self.deliver("%s-after-end" % n, -1)
            j = jbody(data)
        except ConnError as e:
            st, j, data = None, None, str(e).encode()
        check(st == 200 and isinstance(j, dict) and j.get("verdict") == "skipped",
              "%s: a new delivery after the run ended is skipped" % n, "%s %s" % (st, data[:200]))
        env = dict(os.environ, JR2_STORE=self.store)
        r = subprocess.run([self.runner, "log", self.run_id, "--json"], cwd=self.work, env=env,
                           capture_output=True)
        after = sum(1 for e in (jbody(r.stdout) or []) if e.get("kind") == "reread")
        check(after == rereads, "%s: deliveries sent again read nothing again" % n,
              "%d reread lines, %d before" % (after, rereads))


def main():
    if len(sys.argv) < 5:
        print(__doc__)
        return 64
    runner, work, items, hooks = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    phases = sys.argv[5:] or ["load", "fault"]
    for name in phases:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        Phase(name, runner, work, items, hooks, port, fault=(name == "fault")).run()
    print("%d passed, %d failed" % (checks["passed"], checks["failed"]), flush=True)
    return 0 if checks["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
