#!/usr/bin/env python3
"""One round of bench/compare.py's pg_hosts or pg_table (docs/performance.md, "Several hosts"):
serves of bench/pg/pg_items.jr2's `bench_pg_work` on one PostgreSQL database, made fresh, and
ITEMS runs started over HTTP, spread over the serves as a load balancer would (round robin, from
four client threads on kept-alive connections). Each run is one `std.command` (`sleep SECONDS`);
each serve drives at most --capacity runs at once, and a start it has no room for is queued in
the store for the first serve with room. Timed from the first start sent to the last run ended
(the runs still waiting counted every 20 ms on one connection); every run must end `done`, or
the round errors.

  hosts_bench.py --runner BUILD/bench/pg/bench_pg_work --pg "host=… dbname=…" --db NAME
                 [--hosts 1|2] [--items N] [--capacity C] [--seconds S] [--history K]

--history K: K ended runs of the same workflow (with their feed lines) put in the table before
the round, and the table analysed, as a store that was never pruned holds them: pg_table's
"cost per item from 1,000 to 100,000 runs in the table".

Prints one JSON line: {"itemsPerSec", "seconds", "hosts", "items", "commits", "notifies",
"notifiesPerCommit", "claimed", "queued", "connectionsPerHost"} (connections: the most each serve
process held at once, by pg_stat_activity sampled with the polls)."""
import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time


def with_db(pg, db):
    return re.sub(r"dbname=\S+", "dbname=" + db, pg) if "dbname=" in pg else pg + " dbname=" + db


class Sql:
    """One psql process on stdin/stdout: a query per line, its one-line answer read back."""

    def __init__(self, url):
        self.proc = subprocess.Popen(["psql", url, "-qAtX", "-v", "ON_ERROR_STOP=1"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def one(self, sql):
        self.proc.stdin.write(sql.rstrip(";") + ";\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("psql stopped at: " + sql)
        return line.strip()

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def psql(url, sql):
    subprocess.run(["psql", url, "-qX", "-v", "ON_ERROR_STOP=1", "-c",
                    "SET client_min_messages = warning", "-c", sql],
                   check=True, stdout=subprocess.DEVNULL)


def serve(runner, store, name, capacity, tmp):
    err = open(os.path.join(tmp, "serve.%s.err" % name), "w")
    proc = subprocess.Popen([runner, "serve", "--listen", "127.0.0.1:0", "--store", store,
                             "--host-name", name, "--capacity", str(capacity)],
                            stdout=subprocess.DEVNULL, stderr=err)
    for _ in range(400):
        text = open(err.name).read()
        if "http://127.0.0.1:" in text:
            return proc, int(text.split("http://127.0.0.1:")[1].split()[0]), err.name
        if proc.poll() is not None:
            break
        time.sleep(0.025)
    proc.kill()
    raise RuntimeError("serve did not start: " + open(err.name).read()[-2000:])


def metrics(port, token):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/metrics", headers={"Authorization": "Bearer " + token})
    text = c.getresponse().read().decode()
    c.close()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def history(url, k, seconds):
    """K ended runs of bench_pg_work, as if started and finished earlier: copies of a template
    row (and of its feed lines) with ids of their own, made by the database in one statement
    each, then the tables analysed."""
    now = int(time.time() * 1000)
    view = json.dumps({"build": "", "menus": {}, "observe": None,
                       "report": {"gates": [], "output": seconds, "reason": "", "runId": "",
                                  "status": "done", "workflow": "bench_pg_work"},
                       "working": None})
    snapshot = json.dumps({"status": "done", "workflow": "bench_pg_work"})
    psql(url, "INSERT INTO runs (id, workflow, status, updated, rev, snapshot, view)"
              " SELECT 'hist-' || lpad(g::text, 7, '0'), 'bench_pg_work', 'done',"
              " %d - g * 1000, 3, '%s', '%s' FROM generate_series(1, %d) g"
              % (now - 86400000, snapshot.replace("'", "''"), view.replace("'", "''"), k))
    psql(url, "INSERT INTO feed (run, seq, time, line, kind, data)"
              " SELECT r.id, s, r.updated + s, 'a line of the run''s feed', 'note', '{}'"
              " FROM runs r, generate_series(1, 4) s WHERE r.id LIKE 'hist-%'")
    psql(url, "ANALYZE")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True)
    ap.add_argument("--pg", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--hosts", type=int, default=1)
    ap.add_argument("--items", type=int, default=300)
    ap.add_argument("--capacity", type=int, default=8)
    ap.add_argument("--seconds", default="0.2")
    ap.add_argument("--history", type=int, default=0)
    args = ap.parse_args()

    psql(args.pg, "DROP DATABASE IF EXISTS %s WITH (FORCE)" % args.db)
    psql(args.pg, "CREATE DATABASE %s" % args.db)
    store = with_db(args.pg, args.db)
    tmp = tempfile.mkdtemp(prefix="jr2-hosts-bench.")
    serves = []
    try:
        for i in range(args.hosts):
            serves.append(serve(args.runner, store, "h%d" % (i + 1), args.capacity, tmp))
        sql = Sql(store)
        token = sql.one("SELECT value FROM jr2_meta WHERE key = 'instance_token'")
        if args.history:
            history(store, args.history, args.seconds)
        ports = [p for _, p, _ in serves]
        pids = {str(proc.pid): "h%d" % (i + 1) for i, (proc, _, _) in enumerate(serves)}
        before = [metrics(p, token) for p in ports]
        errors = []
        body = json.dumps({"input": {"seconds": args.seconds}})

        def client(k):
            conns = {}
            for i in range(k, args.items, 4):
                port = ports[i % len(ports)]
                c = conns.get(port) or http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                conns[port] = c
                c.request("POST", "/workflows/bench_pg_work/runs", body=body,
                          headers={"Authorization": "Bearer " + token,
                                   "Content-Type": "application/json"})
                r = c.getresponse()
                answer = r.read()
                if r.status != 201:
                    errors.append("start %d: %d %s" % (i, r.status, answer[:300]))
                    return
                sent[k] += 1

        sent = [0] * 4  # the starts each client had answered 201
        t0 = time.perf_counter()
        threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        most = {}
        ended = 0
        while True:
            # The runs still waiting, by the index on status (a count of the ended ones would
            # read the whole table, which pg_table fills: the bench's cost, not jr2c's).
            posted = sum(sent)
            waiting = int(sql.one("SELECT count(*) FROM runs WHERE status = 'waiting'"
                                  " AND workflow = 'bench_pg_work'"))
            ended = posted - waiting
            if ended >= args.items or errors:
                break
            if time.perf_counter() - t0 > 600:
                raise RuntimeError("%d of %d runs ended in 600 s" % (ended, args.items))
            counts = sql.one("SELECT string_agg(p || '=' || n, ',') FROM (SELECT"
                             " substring(application_name from 'pid ([0-9]+)') p, count(*) n"
                             " FROM pg_stat_activity WHERE datname = '%s' GROUP BY 1) x"
                             % args.db)
            for pair in filter(None, counts.split(",")):
                pid, n = pair.split("=")
                if pid in pids:
                    most[pids[pid]] = max(most.get(pids[pid], 0), int(n))
            time.sleep(0.02)
        seconds = time.perf_counter() - t0
        for t in threads:
            t.join()
        if errors:
            raise RuntimeError("; ".join(errors[:3]))
        done = int(sql.one("SELECT count(*) FROM runs WHERE workflow = 'bench_pg_work'"
                           " AND status = 'done' AND id NOT LIKE 'hist-%'"))
        if done != args.items:
            raise RuntimeError("%d of %d runs ended done" % (done, args.items))
        after = [metrics(p, token) for p in ports]

        def total(name):
            return sum(a.get(name, 0) - b.get(name, 0) for a, b in zip(after, before))

        commits = total("jr2_commit_seconds_count")
        notifies = total("jr2_notifies_sent_total")
        sql.close()
        print(json.dumps({
            "itemsPerSec": args.items / seconds, "seconds": seconds, "hosts": args.hosts,
            "items": args.items, "commits": commits, "notifies": notifies,
            "notifiesPerCommit": notifies / commits if commits else None,
            "claimed": total("jr2_runs_claimed_total"), "queued": total("jr2_starts_queued_total"),
            "connectionsPerHost": most}))
    finally:
        for proc, _, _ in serves:
            proc.terminate()
        for proc, _, _ in serves:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        psql(args.pg, "DROP DATABASE IF EXISTS %s WITH (FORCE)" % args.db)
        subprocess.run(["rm", "-rf", tmp])
    return 0


if __name__ == "__main__":
    sys.exit(main())
