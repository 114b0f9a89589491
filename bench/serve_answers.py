#!/usr/bin/env python3
"""#33's second goal, measured (bench/compare.py's `serve_answers` and `serve_hooks`): Gate answers
a second through `serve` at C clients, or signed hook deliveries a second.

    serve_answers.py --runner RUNNER --items N --clients C [--mode answers|hooks] [--hooks H]

RUNNER is bench/runtime/stored_pool.jr2's `stored_gated`: a Pool over N items at cap 64, each
item waiting at its Gate `<id>.review` for `approve`. serve runs on a fresh SQLite store in a
temporary folder (synchronous FULL, as always), on 127.0.0.1; one run of the Pool is started over
HTTP, then C clients, each on one kept-alive connection, answer the items dealt to them (item i to
client i mod C), in order, each answer sent again when its Gate is not open yet (404). Timed from
the first answer to the last 2xx. Prints one JSON line: answers/s, the latency of the 2xx answers
(p50, p99, max, in ms), the largest answer body, serve's CPU seconds per wall second (both cores
would be up to 2) in all and by thread (`engine`, `jr2-net` that runs the
connections, `jr2-commit` the commits), the clients' own CPU seconds per wall second (this
process's: on two cores, what they take serve cannot have), and the 404s met.

With `--mode hooks`, nobody answers: C clients send H deliveries of the forge hook `ping`
(`POST /hooks/forge`, each signed with HMAC-SHA256 as a forge signs, each its own delivery id),
which the Pool's Source takes as a reread, while its 64 Gates stay open. Prints deliveries/s and
their latency instead, every delivery answered 200 `reread` or the script fails.

The clients speak HTTP/1.1 over plain sockets (`Client`: a request's bytes made once, the answer
read by its Content-Length), not through http.client: the clients run in this one Python process
on the same two cores as serve, and http.client's own work per request (about 100 µs under the
GIL) made them, not serve, what the count measured — on 6 December 2026 the same serve gave 5,100
answers/s through http.client and 7,900 through these sockets, and a change to serve that shortened
its cycle by a fifth moved the first not at all (docs/performance.md).
"""
import argparse
import hashlib
import hmac
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from procstat import process_cpu, spent, threads_cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True)
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--mode", choices=["answers", "hooks"], default="answers")
    ap.add_argument("--hooks", type=int, default=5000)
    ap.add_argument("--cap", type=int, default=0,
                    help="the Pool's cap (its input `jobs`); 0 leaves the workflow's, 64")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="jr2-serve-answers-")
    store = os.path.join(tmp, "store.db")
    err = open(os.path.join(tmp, "serve.err"), "w")
    secret = "bench-forge-secret"
    callers = os.path.join(tmp, "callers.json")
    with open(callers, "w") as f:
        json.dump({"callers": [], "hooks": {"forge": {"secret_env": "BENCH_FORGE_SECRET"}}}, f)
    proc = subprocess.Popen([args.runner, "serve", "--store", store, "--listen", "127.0.0.1:0",
                             "--callers", callers],
                            env=dict(os.environ, BENCH_FORGE_SECRET=secret),
                            stdout=subprocess.DEVNULL, stderr=err)
    try:
        port = None
        for _ in range(400):
            text = open(err.name).read()
            if "http://127.0.0.1:" in text:
                port = int(text.split("http://127.0.0.1:")[1].split()[0].rstrip("/"))
                break
            time.sleep(0.025)
        if port is None:
            raise SystemExit("serve did not start: " + open(err.name).read()[-2000:])
        token = open(store + ".token").read().strip()
        auth = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}

        def call(conn, method, path, body=None):
            conn.request(method, path, body=None if body is None else json.dumps(body),
                         headers=auth)
            r = conn.getresponse()
            return r.status, r.read()

        main_conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        items = [{"id": "J-%06d" % i} for i in range(args.items)]
        given = {"items": items}
        if args.cap > 0:
            given["jobs"] = args.cap
        st, body = call(main_conn, "POST", "/workflows/stored_gated/runs", {"input": given})
        if st != 201:
            raise SystemExit("start: %d %s" % (st, body[:500]))
        run = json.loads(body)["runId"]
        if args.mode == "hooks":
            return hooks(proc, port, secret, args)
        lat, sizes, missing = [], [], [0]
        lock = threading.Lock()
        failures = []

        def client(k):
            conn = Client(port)
            mine_lat, mine_sizes, mine_missing = [], [], 0
            body = json.dumps({"event": "approve"}).encode()
            for i in range(k, args.items, args.clients):
                path = "/runs/%s/gates/J-%06d.review/events" % (run, i)
                req = conn.request_bytes("POST", path, auth, body)
                while True:
                    t0 = time.perf_counter()
                    st, answer = conn.send(req)
                    t1 = time.perf_counter()
                    if 200 <= st < 300:
                        mine_lat.append(t1 - t0)
                        mine_sizes.append(len(answer))
                        break
                    if st == 404:  # its Gate is not open yet: the Pool has not reached it
                        mine_missing += 1
                        time.sleep(0.001)
                        continue
                    with lock:
                        failures.append("%s: %d %s" % (path, st, answer[:200]))
                    return
            with lock:
                lat.extend(mine_lat)
                sizes.extend(mine_sizes)
                missing[0] += mine_missing

        commits0 = commits(main_conn, call)
        wall, cpu, by_thread, clients = clients_at_once(proc, client, args.clients)
        commits1 = commits(main_conn, call)
        if failures:
            raise SystemExit("answers refused: " + "; ".join(failures[:3]))
        if len(lat) != args.items:
            raise SystemExit("%d of %d answers got 2xx" % (len(lat), args.items))
        print(json.dumps(dict(latencies(lat), answersPerSec=args.items / wall,
                              largestBody=max(sizes), cpuPerWall=cpu / wall,
                              cpuByThread=by_thread,
                              clientCpuPerWall=clients,
                              notOpenYet=missing[0],
                              answersPerCommit=args.items / max(1, commits1[0] - commits0[0]),
                              # The store's part of each batch: how long one group commit took
                              # (its transaction and fsync), against the wall time per commit.
                              commitMs=1000 * (commits1[1] - commits0[1])
                              / max(1, commits1[0] - commits0[0]),
                              wallPerCommitMs=1000 * wall / max(1, commits1[0] - commits0[0]))))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def hooks(proc, port, secret, args):
    """--mode hooks: C clients send H signed `ping` deliveries; prints deliveries/s."""
    lat, failures = [], []
    lock = threading.Lock()

    def client(k):
        conn = Client(port)
        mine = []
        for i in range(k, args.hooks, args.clients):
            body = json.dumps({"zen": "bench", "n": i}).encode()
            sig = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
            headers = {"X-Jr2-Event": "ping", "X-Jr2-Delivery": "d-%07d" % i,
                       "X-Hub-Signature-256": sig, "Content-Type": "application/json"}
            req = conn.request_bytes("POST", "/hooks/forge", headers, body)
            t0 = time.perf_counter()
            st, data = conn.send(req)
            t1 = time.perf_counter()
            if st != 200 or json.loads(data).get("verdict") != "reread":
                with lock:
                    failures.append("d-%07d: %d %s" % (i, st, data[:200]))
                return
            mine.append(t1 - t0)
        with lock:
            lat.extend(mine)

    wall, cpu, by_thread, clients = clients_at_once(proc, client, args.clients)
    if failures:
        raise SystemExit("deliveries refused: " + "; ".join(failures[:3]))
    print(json.dumps(dict(latencies(lat), hooksPerSec=args.hooks / wall, cpuPerWall=cpu / wall,
                          cpuByThread=by_thread,
                          clientCpuPerWall=clients)))
    return 0


class Client:
    """One kept-alive HTTP/1.1 connection to serve on 127.0.0.1, over a plain socket: each request
    is sent whole and its answer read by its Content-Length (serve always sends one); a
    connection serve closes (`Connection: close`, after its bound of requests) is opened again
    for the next request."""

    def __init__(self, port):
        self.port = port
        self.sock = None
        self.buf = b""

    def request_bytes(self, method, path, headers, body):
        head = "".join("%s: %s\r\n" % kv for kv in headers.items())
        return ("%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Length: %d\r\n\r\n"
                % (method, path, head, len(body))).encode() + body

    def send(self, req):
        """(status, body) of the answer to `req`."""
        if self.sock is None:
            self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=60)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.buf = b""
        self.sock.sendall(req)
        while b"\r\n\r\n" not in self.buf:
            self.buf += self.recv()
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        fields = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            fields[name.strip().lower()] = value.strip()
        if b"content-length" not in fields:
            raise SystemExit("an answer without Content-Length: %r" % head[:300])
        n = int(fields[b"content-length"])
        while len(rest) < n:
            rest += self.recv()
        body, self.buf = rest[:n], rest[n:]
        if fields.get(b"connection", b"").lower() == b"close":
            self.sock.close()
            self.sock = None
        return int(lines[0].split(b" ", 2)[1]), body

    def recv(self):
        data = self.sock.recv(65536)
        if not data:
            raise SystemExit("serve closed a connection in the middle of an answer")
        return data


def clients_at_once(proc, client, count):
    """Runs client(0) … client(count - 1) on threads of their own, all at once. Gives the wall
    seconds until the last ends, the CPU seconds serve (`proc`) spent meanwhile, the same a second
    by its threads' names (procstat.threads_cpu), and the clients' own CPU a second (this
    process's: on a machine of two cores, what serve cannot have)."""
    cpu0 = process_cpu(proc.pid)
    by0 = threads_cpu(proc.pid)
    mine0 = time.process_time()
    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    by_thread = {n: s / wall for n, s in spent(by0, threads_cpu(proc.pid)).items()}
    clients = (time.process_time() - mine0) / wall
    return wall, process_cpu(proc.pid) - cpu0, by_thread, clients


def commits(conn, call):
    """The group commits serve made so far, and the seconds they took in all
    (`jr2_commit_seconds_count` and `_sum` of GET /metrics)."""
    st, body = call(conn, "GET", "/metrics")
    if st != 200:
        raise SystemExit("metrics: %d %s" % (st, body[:300]))
    m = re.search(rb"^jr2_commit_seconds_count (\d+)", body, re.M)
    t = re.search(rb"^jr2_commit_seconds_sum ([0-9.eE+-]+)", body, re.M)
    if m is None or t is None:
        raise SystemExit("metrics has no jr2_commit_seconds_count or _sum")
    return int(m.group(1)), float(t.group(1))


def latencies(seconds):
    """p50, p99 and the largest of `seconds`, in ms."""
    lat = sorted(seconds)
    return {"p50ms": 1000 * lat[len(lat) // 2],
            "p99ms": 1000 * lat[min(len(lat) - 1, int(len(lat) * 0.99))], "maxms": 1000 * lat[-1]}


if __name__ == "__main__":
    sys.exit(main())
