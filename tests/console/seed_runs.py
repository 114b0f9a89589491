#!/usr/bin/env python3
"""Fills a jr2 SQLite store with N ended runs for the console's scale check (#34).

    seed_runs.py STORE N
    seed_runs.py STORE --feed RUN N


Each new run is a copy of the store's newest ended run (its snapshot, view and input, so the rows
are as large as real ones), with its own id, an `updated` one second older than the one before,
a status among done, failed and cancelled, and every tenth a dispatch key `ITEM-<n>`. The store
must already hold an ended run (the test cancels one). With --feed, N `log` lines are added to
run RUN's feed instead, before its `ended` line (the console's 100,000-line feed). Prints how many rows it wrote and the
time.
"""
import json
import sqlite3
import sys
import time


def feed(db, run, count):
    """The lines go before the run's `ended` line, which is moved to the end: a run that logged
    that much and then ended, as a real one would have."""
    started = time.time()
    # The run's `ended` line: a row of its own, or one of a save's lines (kind `lines`,
    # `[[time, kind, line, data], …]`, numbered by the last; a line at the time of the one before
    # it is `[kind, line, data]`, the row's `time` for its first), looked for from the newest row.
    def lines_of(t, data):
        out = []
        for l in json.loads(data):
            t = l[0] if len(l) == 4 else t
            out.append(l if len(l) == 4 else [t] + l)
        return out
    end = None
    newest = 0
    with db:
        rows = db.execute("SELECT seq, time, line, kind, data FROM feed WHERE run = ?"
                          " ORDER BY seq DESC", (run,)).fetchall()
        for seq, t, line, kind, data in rows:
            lines = lines_of(t, data) if kind == "lines" else [[t, kind, line, None]]
            newest = max([newest] + [l[0] for l in lines])
        for seq, t, line, kind, data in rows:
            if kind == "ended":
                end = (seq, t, line, kind, data)
                db.execute("DELETE FROM feed WHERE run = ? AND seq = ?", (run, seq))
                break
            if kind != "lines":
                continue
            lines = lines_of(t, data)
            at = [i for i, l in enumerate(lines) if l[1] == "ended"]
            if not at:
                continue
            # (A cancel's `cancelled` line comes after it: the lines after it move up one.)
            t, kind, line, data = lines.pop(at[-1])
            end = (seq, t, line, kind, json.dumps(data))
            db.execute("DELETE FROM feed WHERE run = ? AND seq = ?", (run, seq))
            if lines:
                db.execute("INSERT INTO feed (run, seq, time, line, kind, data)"
                           " VALUES (?, ?, ?, '', 'lines', ?)",
                           (run, seq - 1, lines[0][0], json.dumps(lines)))
            break
        last = (db.execute("SELECT coalesce(max(seq), 0) FROM feed WHERE run = ?",
                           (run,)).fetchone()[0], newest)
        db.executemany(
            "INSERT INTO feed (run, seq, time, line, kind, data) VALUES (?, ?, ?, ?, 'log', ?)",
            ((run, last[0] + n + 1, last[1] + n, "log line %d of the seeded feed" % (n + 1),
              '{"message":"log line %d"}' % (n + 1)) for n in range(count)))
        if end is not None:
            db.execute("INSERT INTO feed (run, seq, time, line, kind, data) VALUES (?, ?, ?, ?, ?, ?)",
                       (run, last[0] + count + 1) + tuple(end[1:]))
    print("seed_runs: %d feed lines written in %.1f s" % (count, time.time() - started))


def main():
    if sys.argv[2] == "--feed":
        return feed(sqlite3.connect(sys.argv[1], timeout=30), sys.argv[3], int(sys.argv[4]))
    path, count = sys.argv[1], int(sys.argv[2])
    db = sqlite3.connect(path, timeout=30)
    columns = [row[1] for row in db.execute("PRAGMA table_info(runs)")]
    model = db.execute(
        "SELECT id FROM runs WHERE status <> 'waiting' ORDER BY updated DESC LIMIT 1"
    ).fetchone()
    if model is None:
        sys.exit("seed_runs: the store has no ended run to copy")
    copied = [c for c in columns if c not in ("id", "updated", "status", "dkey")]
    now = int(time.time() * 1000) - 10_000
    started = time.time()
    sql = (
        "INSERT INTO runs (id, updated, status, dkey, " + ", ".join(copied) + ") SELECT ?, ?, ?, ?, "
        + ", ".join(copied) + " FROM runs WHERE id = ?"
    )
    statuses = ("done", "failed", "cancelled")
    with db:
        db.executemany(
            sql,
            (
                (
                    "5eed%08x" % n,
                    now - n * 1000,
                    statuses[n % 3],
                    "ITEM-%d" % n if n % 10 == 0 else None,
                    model[0],
                )
                for n in range(count)
            ),
        )
    print("seed_runs: %d runs written in %.1f s" % (count, time.time() - started))


if __name__ == "__main__":
    main()
