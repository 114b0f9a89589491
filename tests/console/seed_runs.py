#!/usr/bin/env python3
"""Fills a jr2 SQLite store with N ended runs for the console's scale check (#34).

    seed_runs.py STORE N

Each new run is a copy of the store's newest ended run (its snapshot, view and input, so the rows
are as large as real ones), with its own id, an `updated` one second older than the one before,
a status among done, failed and cancelled, and every tenth a dispatch key `ITEM-<n>`. The store
must already hold an ended run (the test cancels one). Prints how many rows it wrote and the time.
"""
import sqlite3
import sys
import time


def main():
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
