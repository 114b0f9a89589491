#!/usr/bin/env python3
"""Replay (docs/runtime.md#replay, #36 part 2): `<runner> replay FILE` drives a run's trace again
through this build, every effect answered from the trace, and `test --traces DIR` replays a folder.

Drives the real conformance runners against fresh stores:
  - a Pool whose workers each run a process that appends its item id to a log: the replay is
    identical, prints the run's output, and the log does not grow (no effect ran);
  - the same trace through a build with one seeded change (`conformance_replay_b` refuses `r3`):
    it diverges at the turn that settled `r3`, and says what was recorded and what this build did;
  - a trace whose recorded result was changed: it diverges where that result was taken;
  - a command's Failure, a host function's result and its defect (a throw that is not a
    Failure), a timer and a cancel replay identically;
  - `test --traces` over a folder of good, diverging, broken and foreign traces: counts, exit 1;
  - hostile traces: not JSON, not UTF-8, 100,000 arrays deep, cut short, a line after the end,
    version 1, another workflow, a folder: each a one-line error, exit 65, nothing run.
Prints its counts.

Usage: replay_test.py CONFORMANCE_DIR
"""
import json
import os
import sys
import tempfile

from conformance_lib import check, finish
from conformance_lib import export as export_in
from conformance_lib import runner as run_in

conformance = os.path.realpath(sys.argv[1])


def runner(name, args, cwd):
    return run_in(conformance, name, args, cwd)


def export(name, cwd, path):
    """The trace of the run in the store at cwd, written to `path`: its lines, parsed."""
    text, parsed, _ = export_in(conformance, name, cwd)
    with open(path, "wb") as f:
        f.write(text)
    return parsed


def write(path, lines):
    with open(path, "w") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")


def turn_of(trace, pred):
    """The number of the turn (1, 2, …) that holds the first line `pred` takes."""
    turn = 0
    for line in trace[1:-1]:
        if line["kind"] == "turn":
            turn += 1
        elif pred(line):
            return turn
    return None


def lines_of(path):
    with open(path) as f:
        return [line.strip() for line in f if line.strip()]


ids = ["r%d" % i for i in range(1, 9)]
with tempfile.TemporaryDirectory() as d:
    log = os.path.join(d, "log.txt")
    inp = json.dumps({"tasks": [{"id": i} for i in ids], "log": log})
    got = runner("conformance_replay_a", ["run", "--input", inp, "--json"], d)
    check(got.returncode == 0, "the Pool's run ends done (%d)" % got.returncode)
    output = json.loads(got.stdout)["output"] if got.returncode == 0 else None
    check(sorted(lines_of(log)) == ids, "each worker's process ran once: %s" % lines_of(log))
    trace_path = os.path.join(d, "a.jsonl")
    trace = export("conformance_replay_a", d, trace_path)
    turns = sum(1 for line in trace if line.get("kind") == "turn")
    results = sum(1 for line in trace if line.get("kind") == "result")
    print("      the trace: %d lines, %d turns, %d results" % (len(trace), turns, results))
    check(results == len(ids), "a result per process (%d)" % results)

    # 1. The same build: identical, the output printed, nothing run.
    before = lines_of(log)
    got = runner("conformance_replay_a", ["replay", trace_path], d)
    check(got.returncode == 0, "the replay is identical: exit %d, %s %s" %
          (got.returncode, got.stdout[:200], got.stderr[-300:]))
    check(got.stdout and json.loads(got.stdout) == output,
          "it prints the run's output: %r" % got.stdout[:200])
    check(b"none run" in got.stderr and b"r1 settled" in got.stderr,
          "its lines are the run's, and it says nothing ran: %r" % got.stderr[-200:])
    check(lines_of(log) == before, "no process ran: the log has %d lines, as before (%d)" %
          (len(lines_of(log)), len(before)))
    got = runner("conformance_replay_a", ["replay", trace_path, "--json"], d)
    doc = json.loads(got.stdout) if got.returncode == 0 else {}
    check(doc.get("identical") is True and doc.get("effectsRun") == 0 and
          doc.get("held") == len(ids) and doc.get("turns") == turns and doc.get("status") == "done",
          "--json: identical, %d effects held, none run, %d turns: %s" %
          (len(ids), turns, json.dumps(doc)[:300]))

    # 2. A build with one seeded change: diverges at the turn that took r3's result.
    seeded = [dict(trace[0], workflow="conformance_replay_b")] + trace[1:]
    seeded_path = os.path.join(d, "b.jsonl")
    write(seeded_path, seeded)
    want = turn_of(trace, lambda l: l["kind"] == "settled" and l["data"].get("item") == "r3")
    got = runner("conformance_replay_b", ["replay", seeded_path, "--json"], d)
    doc = json.loads(got.stdout) if got.stdout else {}
    div = doc.get("divergence", {})
    check(got.returncode == 1 and div.get("turn") == want,
          "the seeded change diverges at turn %s, where r3 settled: exit %d, %s" %
          (want, got.returncode, json.dumps(div)[:400]))
    check("recorded r3 settled" in div.get("message", "") and "r3 failed" in div.get("message", ""),
          "it says what was recorded and what this build did: %r" % div.get("message"))
    got = runner("conformance_replay_b", ["replay", seeded_path], d)
    check(got.returncode == 1 and got.stdout.startswith(b"diverged: turn %d: " % want),
          "in text: %r" % got.stdout[:300])
    check(lines_of(log) == before, "the diverging replay ran nothing either")

    # 3. A recorded result changed: r5's process failed. Diverges where it was taken.
    changed = []
    for line in trace:
        if line.get("kind") == "result" and '"r5"' in json.dumps(line["data"]) or (
                line.get("kind") == "result" and line["data"].get("effect", "").startswith("r5.")):
            line = dict(line, data={"effect": line["data"]["effect"],
                                    "input": line["data"]["input"],
                                    "failure": {"reason": "exit 1", "detail": None}})
        changed.append(line)
    changed_path = os.path.join(d, "changed.jsonl")
    write(changed_path, changed)
    want = turn_of(changed, lambda l: l["kind"] == "result" and "failure" in l["data"])
    got = runner("conformance_replay_a", ["replay", changed_path, "--json"], d)
    doc = json.loads(got.stdout) if got.stdout else {}
    div = doc.get("divergence", {})
    check(got.returncode == 1 and div.get("turn") == want and
          "recorded r5 settled; this build: r5 failed: exit 1" in div.get("message", ""),
          "a changed result diverges at its turn %s: %s" % (want, json.dumps(div)[:400]))

    # What a build asks of an effect is compared: a recorded command line changed (as a build
    # that runs another command would ask) diverges at the turn that took its result.
    asked = []
    for line in trace:
        if line.get("kind") == "result" and line["data"].get("effect", "").startswith("r4"):
            data = json.loads(json.dumps(line["data"]))
            data["input"]["spec"]["argv"][2] = "echo deploy"
            line = dict(line, data=data)
        asked.append(line)
    asked_path = os.path.join(d, "asked.jsonl")
    write(asked_path, asked)
    want = turn_of(asked, lambda l: l["kind"] == "result" and "deploy" in json.dumps(l["data"]))
    got = runner("conformance_replay_a", ["replay", asked_path, "--json"], d)
    div = (json.loads(got.stdout) if got.stdout else {}).get("divergence", {})
    check(got.returncode == 1 and div.get("turn") == want and "asks `r4" in div.get("message", "")
          and "the run asked" in div.get("message", "") and "echo deploy" in div.get("message", ""),
          "a changed command line diverges at its turn %s: %s" % (want, div.get("message")))

    # A recorded end changed: said where the output differs.
    end = dict(trace[-1]["end"])
    end["output"] = json.loads(json.dumps(end["output"]))
    end["output"]["items"]["r2"] = 5
    ended_path = os.path.join(d, "ended.jsonl")
    write(ended_path, trace[:-1] + [{"end": end}])
    got = runner("conformance_replay_a", ["replay", ended_path], d)
    check(got.returncode == 1 and got.stdout == b"diverged: end: it ended done, and its output "
          b"differs at items.r2: recorded 5; this build 0\n", "a changed end: %r" % got.stdout)

    # 4. test --traces: a folder of good, diverging, broken and foreign traces.
    folder = os.path.join(d, "traces")
    os.mkdir(folder)
    os.link(trace_path, os.path.join(folder, "1-good.jsonl"))
    os.link(changed_path, os.path.join(folder, "2-changed.jsonl"))
    with open(os.path.join(folder, "3-broken.jsonl"), "w") as f:
        f.write("{not json\n")
    write(os.path.join(folder, "4-other.jsonl"), [dict(trace[0], workflow="conformance_command")]
          + trace[1:])
    with open(os.path.join(folder, "notes.txt"), "w") as f:
        f.write("not a trace, and not read\n")
    got = runner("conformance_replay_a", ["test", "--traces", folder], d)
    out = got.stdout.decode()
    print("      " + out.replace("\n", "\n      ").rstrip())
    check(got.returncode == 1, "a folder with a diverging trace exits 1 (%d)" % got.returncode)
    check("ok        1-good.jsonl" in out and "DIVERGED  2-changed.jsonl: turn " in out and
          "UNREADABLE 3-broken.jsonl" in out and "skipped   4-other.jsonl" in out and
          "1 of 3 traces replay identically under this build; 1 diverged; 1 cannot be read; "
          "1 of other workflows skipped" in out, "each trace has its line, and the counts")
    os.remove(os.path.join(folder, "2-changed.jsonl"))
    got = runner("conformance_replay_a", ["test", "--traces", folder, "--json"], d)
    doc = json.loads(got.stdout) if got.stdout else {}
    check(got.returncode == 65 and doc.get("unreadable") == 1 and doc.get("identical") == 1,
          "without the diverging one, the broken one makes it 65: %d %s" %
          (got.returncode, json.dumps(doc)[:200]))
    os.remove(os.path.join(folder, "3-broken.jsonl"))
    got = runner("conformance_replay_a", ["test", "--traces", folder], d)
    check(got.returncode == 0, "a folder of good traces exits 0 (%d)" % got.returncode)
    empty = os.path.join(d, "empty")
    os.mkdir(empty)
    got = runner("conformance_replay_a", ["test", "--traces", empty], d)
    check(got.returncode == 65 and b"holds no *.jsonl trace" in got.stderr,
          "an empty folder is refused, 65: %r" % got.stderr[:200])

    # 5. Hostile traces: each refused with its line, 65, nothing run.
    header = json.dumps(trace[0])
    hostile = {
        "not JSON": "{\"trace\":2,\n",
        "not UTF-8": header + "\n" + "{\"kind\":\"turn\",\"seq\":1,\"time\":1,\"data\":\"\xff\"}\n",
        "deep": header + "\n" + "[" * 100000 + "]" * 100000 + "\n",
        "cut short": "\n".join(json.dumps(l) for l in trace[:-1]) + "\n",
        "after the end": "\n".join(json.dumps(l) for l in trace) + "\n" + json.dumps(trace[1]) + "\n",
        "version 1": "\n".join([json.dumps(dict(trace[0], trace=1))] +
                               [json.dumps(l) for l in trace[1:]]) + "\n",
        "version 3": "\n".join([json.dumps(dict(trace[0], trace=3))] +
                               [json.dumps(l) for l in trace[1:]]) + "\n",
        "no turns": header + "\n" + json.dumps(trace[-1]) + "\n",
        "another workflow": "\n".join([json.dumps(dict(trace[0], workflow="conformance_command"))]
                                      + [json.dumps(l) for l in trace[1:]]) + "\n",
        "escapes": "\x1b[2J\x1b]0;owned\x07\n",
        "empty": "",
    }
    for what, text in hostile.items():
        path = os.path.join(d, "hostile.jsonl")
        with open(path, "wb") as f:
            f.write(text.encode("utf-8", "surrogateescape") if what != "not UTF-8"
                    else text.encode("latin-1"))
        got = runner("conformance_replay_a", ["replay", path], d)
        err = got.stderr.decode("utf-8", "replace")
        check(got.returncode == 65 and got.stdout == b"" and err.count("\n") == 1 and
              "\x1b" not in err and "hostile.jsonl" in err,
              "%s: one line, exit 65: %d %r" % (what, got.returncode, err[:160]))
    check(lines_of(log) == before, "no hostile trace ran anything")
    got = runner("conformance_replay_a", ["replay", d], d)
    check(got.returncode == 65 and b"is a directory, not a file" in got.stderr,
          "a folder: %r" % got.stderr)
    got = runner("conformance_replay_a", ["replay", os.path.join(d, "nope.jsonl")], d)
    check(got.returncode == 65 and b"nope.jsonl` does not exist" in got.stderr,
          "no file: %r" % got.stderr)
    got = runner("conformance_replay_a", ["replay"], d)
    check(got.returncode == 64, "replay without FILE is a usage error (%d)" % got.returncode)
    got = runner("conformance_replay_a", ["replay", trace_path, "--server", "http://127.0.0.1:1"], d)
    check(got.returncode == 64, "replay with --server is refused (%d)" % got.returncode)
    got = runner("conformance_replay_a", ["test"], d)
    check(got.returncode == 64, "test without --traces is a usage error (%d)" % got.returncode)

# Other inputs: a command's Failure, a host function's result, a timer, a cancel.
with tempfile.TemporaryDirectory() as d:
    runner("conformance_command", ["run", "--input", '{"argv": ["/no/such/program"]}'], d)
    path = os.path.join(d, "t.jsonl")
    export("conformance_command", d, path)
    got = runner("conformance_command", ["replay", path], d)
    check(got.returncode == 0, "a command's Failure replays: %d %r" % (got.returncode, got.stdout))
with tempfile.TemporaryDirectory() as d:
    runner("conformance_crasher", ["run", "--input", '{"value": "x"}'], d)
    path = os.path.join(d, "t.jsonl")
    export("conformance_crasher", d, path)
    got = runner("conformance_crasher", ["replay", path], d)
    check(got.returncode == 0, "a host function's result replays: %d %r" %
          (got.returncode, got.stdout[:200]))
with tempfile.TemporaryDirectory() as d:
    # A host function that throws what is not a Failure: a defect, the run ends `error` (exit 4),
    # and the throw is its call's recorded result, so the replay ends it `error` there too.
    ran = runner("conformance_crasher", ["run", "--input", '{"value": "throw-42"}'], d)
    path = os.path.join(d, "t.jsonl")
    trace = export("conformance_crasher", d, path)
    got = runner("conformance_crasher", ["replay", path, "--json"], d)
    doc = json.loads(got.stdout or b"{}")
    check(ran.returncode == 4 and got.returncode == 0 and doc.get("identical") is True and
          doc.get("status") == "error" and "not a std::exception" in doc.get("reason", "") and
          any(line.get("kind") == "result" for line in trace[1:-1]),
          "a host function's defect is its recorded result and replays: run exit %d, replay "
          "exit %d, %r" % (ran.returncode, got.returncode, got.stdout[:300]))
    results = [line for line in trace[1:-1] if line.get("kind") == "result"]
    check(results and results[0]["data"]["failure"].get("defect") is True,
          "the defect is marked beside its failure: %r" % (results[:1],))

with tempfile.TemporaryDirectory() as d:
    # A host function's own Failure, whatever its detail says (here `{"jr2.defect": true}`, the
    # mark a defect had before), is a Failure: `on error` hears it, the run ends done, and so does
    # its replay.
    ran = runner("conformance_crasher", ["run", "--input", '{"value": "own-failure"}'], d)
    path = os.path.join(d, "t.jsonl")
    trace = export("conformance_crasher", d, path)
    got = runner("conformance_crasher", ["replay", path, "--json"], d)
    doc = json.loads(got.stdout or b"{}")
    results = [line for line in trace[1:-1] if line.get("kind") == "result"]
    check(ran.returncode == 0 and got.returncode == 0 and doc.get("identical") is True and
          doc.get("status") == "done" and results and
          "defect" not in results[0]["data"]["failure"],
          "a host function's own Failure that names a defect in its detail stays a Failure: run "
          "exit %d, replay exit %d, %r" % (ran.returncode, got.returncode, got.stdout[:300]))

with tempfile.TemporaryDirectory() as d:
    # What a Source was called with is in its first answer's line, and a replay whose build calls
    # it with other arguments says so at that turn (here the recorded ones are changed, as a
    # build whose `source:` reads another file would call it).
    tasks = os.path.join(d, "tasks.json")
    with open(tasks, "w") as f:
        json.dump([{"id": "t1"}, {"id": "t2"}, {"id": "t3"}], f)
    ran = runner("conformance_instant", ["run", "--input", json.dumps({"tasks": tasks})], d)
    path = os.path.join(d, "t.jsonl")
    trace = export("conformance_instant", d, path)
    sources = [line for line in trace[1:-1] if line.get("kind") == "source"]
    check(ran.returncode == 0 and sources and sources[0]["data"].get("args") == {"path": tasks} and
          all("args" not in s["data"] for s in sources[1:]),
          "a Source's arguments are in its first answer's line, once: %r" %
          ([s["data"].get("args") for s in sources],))
    got = runner("conformance_instant", ["replay", path, "--json"], d)
    check(got.returncode == 0 and json.loads(got.stdout or b"{}").get("identical") is True,
          "it replays identical: exit %d, %r" % (got.returncode, got.stdout[:200]))
    moved = []
    for line in trace:
        if line is sources[0]:
            data = dict(line["data"], args={"path": os.path.join(d, "elsewhere.json")})
            line = dict(line, data=data)
        moved.append(line)
    moved_path = os.path.join(d, "moved.jsonl")
    write(moved_path, moved)
    want = turn_of(moved, lambda l: l["kind"] == "source")
    got = runner("conformance_instant", ["replay", moved_path, "--json"], d)
    div = (json.loads(got.stdout) if got.stdout else {}).get("divergence", {})
    check(got.returncode == 1 and div.get("turn") == want and "elsewhere.json" in
          json.dumps(div) and tasks in json.dumps(div),
          "a Source called with other arguments diverges at its turn %s: %s" %
          (want, json.dumps(div)[:400]))

finish("replay")
