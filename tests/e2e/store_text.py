"""A SQLite run store's snapshots and views read as the runtime reads them: the tests that look
into a store with SQL (push_load.py, standing.py) read a run's texts through here.

A run whose snapshot or view is larger than a page keeps each Pool worker's part and each open
Gate's in table `parts` (runtime/src/store/sqlite/parts.cpp; the marks: runtime/src/core/pieces.h):
the row names each part as the byte 0x1E, its id in digits and the byte 0x1D. `rows` reads the
rows and their parts in one read transaction, so that a commit between them cannot tear them.
"""
import re
import sqlite3

_MARK = re.compile("\x1e([0-9]+)\x1d")


def whole(conn, run_id, text):
    """`text` of run `run_id` with its parts put back; KeyError for a part that is missing."""
    if text is None or "\x1e" not in text:
        return text
    parts = {str(i): t for i, t in conn.execute("select id, text from parts where run=?", (run_id,))}
    return _MARK.sub(lambda m: parts[m.group(1)], text)


def rows(store, sql, args=(), texts=()):
    """The rows of `sql` on the store at `store` (read only), each column whose index is in `texts`
    whole; the run's id must be the first column."""
    c = sqlite3.connect("file:%s?mode=ro" % store, uri=True, timeout=10, isolation_level=None)
    try:
        c.execute("begin")
        out = []
        for row in c.execute(sql, args).fetchall():
            row = list(row)
            for i in texts:
                row[i] = whole(c, row[0], row[i])
            out.append(tuple(row))
        c.execute("commit")
        return out
    finally:
        c.close()
