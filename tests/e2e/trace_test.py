#!/usr/bin/env python3
"""Traces (docs/runtime.md#traces, #36 part 1): `<runner> export RUN` writes what each turn of a
run took in, from the feed where each input was stored in its turn's commit.

Drives the real conformance runners against a fresh store: a command's result and its Failure,
a host function's result, a read Source's answers, hostile bytes in a command's output (not
UTF-8, terminal escapes), a command's output stored once (the stored result leaves out what its
`output` lines hold; export puts it back), and a run that cannot be found. Every line must be one JSON object.
Prints its counts.

Usage: trace_test.py CONFORMANCE_DIR
"""
import json
import os
import sqlite3
import sys
import tempfile

from conformance_lib import check, export, finish
from conformance_lib import runner as run_in

conformance = os.path.realpath(sys.argv[1])


def runner(name, args, cwd):
    return run_in(conformance, name, args, cwd)


def trace_of(name, cwd):
    """The trace of the one run of `name` in the store at cwd: its lines, parsed."""
    _, parsed, run = export(conformance, name, cwd)
    check(parsed[0].get("trace") == 2 and parsed[0].get("run") == run,
          "%s: the header names version 2 and the run" % name)
    check(parsed[1].get("kind") == "turn", "%s: the first turn is marked" % name)
    check(all(set(p) == {"seq", "time", "kind", "data", "line"} for p in parsed[1:-1]),
          "%s: each feed line has seq, time, kind, data and line" % name)
    check("end" in parsed[-1], "%s: the last line says how the run stands" % name)
    return parsed


with tempfile.TemporaryDirectory() as d:
    # A command's result: its exit code and output, as the workflow read them.
    out = runner("conformance_command", ["run", "--input",
                                         '{"argv": ["sh", "-c", "echo hi; echo oops >&2"]}'], d)
    check(out.returncode == 0, "a command run ends done (%d)" % out.returncode)
    t = trace_of("conformance_command", d)
    results = [x for x in t if x.get("kind") == "result"]
    check(len(results) == 1, "one result recorded (%d)" % len(results))
    check(results and results[0]["data"] == {"effect": "process: std.command",
                                             "input": {"spec": {"argv": [
                                                 "sh", "-c", "echo hi; echo oops >&2"]}},
                                             "output": {"exit": 0, "stdout": "hi\n",
                                                        "stderr": "oops\n"}},
          "the result names the effect and holds what it gave: %s" % (results[:1],))
    check(t[-1]["end"]["status"] == "done" and t[-1]["end"]["output"] == 0,
          "the end says done with output 0")
    check(t[0]["input"] == {"argv": ["sh", "-c", "echo hi; echo oops >&2"]},
          "the header holds the run's input")

with tempfile.TemporaryDirectory() as d:
    # A command that cannot start: its Failure is the input.
    runner("conformance_command", ["run", "--input", '{"argv": ["/no/such/program"]}'], d)
    t = trace_of("conformance_command", d)
    results = [x for x in t if x.get("kind") == "result"]
    check(len(results) == 1 and "failure" in results[0]["data"]
          and results[0]["data"]["failure"]["reason"] != "",
          "a Failure is recorded with its reason: %s" % (results[:1],))
    check(t[-1]["end"]["status"] == "failed", "the end says failed")

with tempfile.TemporaryDirectory() as d:
    # Hostile output: bytes that are not UTF-8, a terminal escape, a NUL-free control soup.
    script = r"printf 'bad \377\376 bytes \033[2J\033]0;title\007 end'"
    runner("conformance_command", ["run", "--input", json.dumps({"argv": ["sh", "-c", script]})], d)
    t = trace_of("conformance_command", d)
    raw = runner("conformance_command",
                 ["export", runner("conformance_command", ["runs", "--all"], d).stdout.decode().split()[0]],
                 d).stdout
    check(b"\x1b" not in raw and b"\x07" not in raw, "no raw escape reaches the terminal")
    results = [x for x in t if x.get("kind") == "result"]
    stdout = results[0]["data"]["output"]["stdout"] if results else ""
    check("\x1b[2J" in stdout and "bad " in stdout,
          "the escape is kept as JSON text, the bad bytes replaced: %r" % stdout)

def stored_feed(cwd, kind):
    """The `data` of the feed lines of `kind` in the store at cwd, as stored (not exported): a
    row is one line, or (kind `lines`) a save's lines as `[[time, kind, line, data], …]`, a line
    at the time of the one before it as `[kind, line, data]`."""
    db = sqlite3.connect(os.path.join(cwd, "jr2.db"))
    try:
        out = []
        for k, data in db.execute("SELECT kind, data FROM feed ORDER BY run, seq"):
            rows = json.loads(data) if k == "lines" else [[0, k, "", json.loads(data)]]
            rows = [r if len(r) == 4 else [None] + r for r in rows]
            out += [r[3] for r in rows if r[1] == kind]
        return out
    finally:
        db.close()


with tempfile.TemporaryDirectory() as d:
    # Output stored once: 150 lines on stdout, two on stderr. The feed keeps the first 100 as
    # `output` lines (and says the rest is in the result); the stored `result` leaves out what
    # those lines hold, and `export` puts the whole output back, so the trace and its replay are
    # what they were.
    script = "i=1; while [ $i -le 150 ]; do echo \"line $i of the build\"; i=$((i+1)); done; " \
             "echo warn >&2; printf 'last, no newline' >&2"
    out = runner("conformance_command", ["run", "--input", json.dumps({"argv": ["sh", "-c", script]})],
                 d)
    whole = "".join("line %d of the build\n" % i for i in range(1, 151))
    stored = stored_feed(d, "result")
    lines = stored_feed(d, "output")
    t = trace_of("conformance_command", d)
    exported = [x["data"] for x in t if x.get("kind") == "result"]
    kept = stored[0]["output"] if stored else {}
    check(out.returncode == 0 and len(stored) == 1 and "told" in stored[0] and
          kept.get("stdout") == whole[len("".join("line %d of the build\n" % i
                                                     for i in range(1, 101))):] and
          kept.get("stderr") == "",
          "the stored result keeps what the output lines do not: stdout from line 101, no "
          "stderr: %s" % (json.dumps(stored[0].get("told")) if stored else stored))
    check(len(exported) == 1 and "told" not in exported[0] and
          exported[0]["output"] == {"exit": 0, "stdout": whole,
                                    "stderr": "warn\nlast, no newline"},
          "export puts the whole output back: %d bytes of stdout" %
          len(exported[0]["output"]["stdout"]) if exported else "no result exported")
    text_told = sum(len(x.get("line", "")) for x in lines)
    stored_out = len(kept.get("stdout", "")) + len(kept.get("stderr", ""))
    print("trace: output stored once: %d bytes of output, %d in %d output lines and %d in the "
          "result (before: %d in the result)" % (len(whole) + 20, text_told, len(lines),
                                                 stored_out, len(whole) + 20))
    path = os.path.join(d, "t.jsonl")
    with open(path, "wb") as f:
        f.write(export(conformance, "conformance_command", d)[0])
    got = runner("conformance_command", ["replay", path], d)
    check(got.returncode == 0, "its trace replays identically (%d)" % got.returncode)

with tempfile.TemporaryDirectory() as d:
    # What the lines do not hold verbatim stays in the result: a line ending `\r\n` (the
    # line has it taken off), a line over 400 bytes (cut short in the line). A Failure's output
    # (a command that exits 3) is left out of its detail as an output's is.
    script = "printf 'dos line\\r\\n'; printf '%0500d\\n' 7; echo after >&2; exit 3"
    runner("conformance_command", ["run", "--input", json.dumps({"argv": ["sh", "-c", script]})], d)
    stored = stored_feed(d, "result")
    detail = stored[0]["failure"]["detail"] if stored and "failure" in stored[0] else {}
    check(stored and detail.get("stdout", "").startswith("dos line\r\n") and
          detail.get("stderr") == "" and stored[0].get("told", {}).get("stderr", {}).get("used") == 1
          and "stdout" not in stored[0].get("told", {}),
          "a line not told verbatim keeps the stream whole; a Failure's stderr is left out: %s" %
          (json.dumps(stored[0])[:400] if stored else stored))
    t = trace_of("conformance_command", d)
    exported = [x["data"] for x in t if x.get("kind") == "result"]
    check(exported and exported[0]["failure"]["detail"]["stderr"] == "after\n" and
          exported[0]["failure"]["detail"]["stdout"].startswith("dos line\r\n"),
          "export puts the Failure's output back whole")

with tempfile.TemporaryDirectory() as d:
    # A host function's result, per worker of a Pool.
    out = runner("conformance_crasher", ["run", "--input", '{"value": "x"}'], d)
    t = trace_of("conformance_crasher", d)
    results = [x for x in t if x.get("kind") == "result"]
    check(len(results) == 1 and results[0]["data"].get("effect") == "echo: echo_host",
          "a host function's result is recorded: %s" % (results[:1],))

with tempfile.TemporaryDirectory() as d:
    # No run, no store: a clear error and nothing written.
    got = runner("conformance_command", ["export", "zzzz"], d)
    check(got.returncode != 0 and got.stdout == b"" and b"error" in got.stderr,
          "an unknown run: exit %d, nothing on stdout, %r" % (got.returncode, got.stderr[:120]))
    check(not os.path.exists(os.path.join(d, "jr2.db")), "looking made no store")
    got = runner("conformance_command", ["export"], d)
    check(got.returncode == 64, "export without RUN is a usage error (%d)" % got.returncode)

finish("trace")
