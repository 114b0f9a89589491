"""What the Python checks of the conformance runners share (trace_test.py, replay_test.py): `ok` and
`FAIL` lines, counted; a runner called in a store's folder (never the caller's $JR2_STORE); a
run's trace exported; and the exit that says how many checks failed."""
import json
import os
import subprocess
import sys

failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def runner(conformance, name, args, cwd, env=None):
    e = dict(os.environ)
    e.pop("JR2_STORE", None)
    e.update(env or {})
    return subprocess.run([os.path.join(conformance, name)] + args, cwd=cwd, env=e,
                          capture_output=True, timeout=120)


def export(conformance, name, cwd):
    """The trace of the first run of `name` in the store at cwd: (its text, its lines parsed, the
    run's id). Its lines must be valid UTF-8 (or this raises) and each one JSON object."""
    runs = runner(conformance, name, ["runs", "--all"], cwd).stdout.decode().split()
    got = runner(conformance, name, ["export", runs[0]], cwd)
    check(got.returncode == 0, "%s: export exits 0 (%d)" % (name, got.returncode))
    parsed = [json.loads(line) for line in got.stdout.decode("utf-8").splitlines()]
    check(all(isinstance(p, dict) for p in parsed), "%s: each line is one JSON object" % name)
    return got.stdout, parsed, runs[0]


def finish(label):
    print("%s: %d checks failed" % (label, len(failures)))
    sys.exit(1 if failures else 0)
