#!/usr/bin/env python3
"""The `--server` contract (#30 item 7): every verb prints the same text, JSON and exit code
against the store and through `serve`.

Each step of each scenario runs twice, at once one after the other: with the runner against a
store of its own ("local", no serve), and with the same runner and `--server` against a serve on a
second store ("server"). The two stores start empty and see the same steps, so the runs tell the
same story. What must differ is normalised away (below); stdout, stderr and the exit code must
then be the same, byte for byte. Prints a table of verb x scenario and, for each difference, the
two outputs side by side; each step is one `PASS: ` or `FAIL: ` line.

What is normalised, and why it must differ:
  - run ids (each side makes its own): `<scenario>`, by the scenario that started the run;
  - times: a local time `2026-11-30 18:04:27` and ms since the epoch (`time`, `updated`, `due`, …),
    and a timer's `due in 59 min 59 s` (each side asks the clock at its own instant);
  - where the runs are: the store's path, the serve's URL, and the ` --server URL` that a printed
    command needs through serve; serve names no path of its store (docs/serve.md), so the store's
    path, and the serve's URL where the local verb names the store, read as serve's `the store`;
    and a run's home (the folder of the `run`, or of serve, that started it);
  - how a timer goes on: the local runner tells you which command fires it, serve fires it itself
    (`: serve fires it then`), and a wait is stopped differently (Ctrl-C, or serve goes on);
  - the local `run` of a standing Pool says that a running serve takes its run up: through serve,
    serve has;
  - whether a turn was the first stored after a restore (`log --json`'s `turn` lines,
    docs/runtime.md#traces): each local command restores the run, a serve keeps it.
Usage: server_contract.py DIR_OF_CONFORMANCE_RUNNERS TMPDIR
"""
import hashlib
import http.server
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

DIR, TMP = sys.argv[1], sys.argv[2]
TICKETS, COMMAND, POLLED, QUIET = ("conformance_tickets", "conformance_command", "conformance_polled",
                                   "conformance_polled_quiet")
STANDING = "conformance_alerts"  # a standing Pool of runs (standing.jr2), started by serve
DEAD_URL = "http://127.0.0.1:9/items"  # nothing listens on the discard port: every read fails


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Side:
    """One front: the runner against its own store, or through `--server` to a serve."""

    def __init__(self, name, url=None):
        self.name = name
        self.home = os.path.join(TMP, name)
        os.makedirs(self.home, exist_ok=True)
        self.store = os.path.join(self.home, "jr2.db")
        self.url = url
        self.ids = {}  # run id -> scenario
        for name, items in BACKLOGS.items():
            with open(os.path.join(self.home, name), "w") as f:
                json.dump(items, f)

    def env(self):
        env = dict(os.environ)
        env["JR2_STORE"] = self.store
        env.pop("JR2_TOKEN", None)
        return env

    def run(self, workflow, args, timeout=60, stop_after=None):
        argv = [os.path.join(DIR, workflow)] + args
        if self.url is not None:
            argv += ["--server", self.url]
        p = subprocess.Popen(argv, cwd=self.home, env=self.env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            out, err = p.communicate(timeout=stop_after or timeout)
        except subprocess.TimeoutExpired:
            if stop_after is None:
                p.kill()
                out, err = p.communicate()
                return 124, out, err + "[timed out after %d s]\n" % timeout
            p.send_signal(signal.SIGINT)  # a person's Ctrl-C
            out, err = p.communicate(timeout=10)
            return p.returncode, out, err
        return p.returncode, out, err

    def known(self, workflow):
        """The runs of `workflow` in this side's store, read with the local runner."""
        p = subprocess.run([os.path.join(DIR, workflow), "runs", "--all", "--json"], cwd=self.home,
                           env=self.env(), capture_output=True, text=True, timeout=30)
        return {r["runId"] for r in json.loads(p.stdout or "[]")}

    def normalise(self, text):
        for run, scenario in self.ids.items():
            text = text.replace(run, "<" + scenario + ">")
        if self.url is not None:
            text = text.replace(" --server " + self.url, "")
            text = text.replace("`%s`" % self.url, "the store").replace(self.url, "the store")
        # serve names no path of its store (docs/serve.md): the local side's reads as serve's.
        text = text.replace("run store `%s`" % self.store, "run store")
        text = text.replace("`%s`" % self.store, "the store").replace(self.store, "the store")
        text = text.replace("`the store`", "the store")
        text = text.replace(self.home, "<home>")
        text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "<time>", text)
        text = re.sub(r"\b1\d{12}\b", "<ms>", text)
        # Who answered a Gate (#34): the local user on one side, the token's Caller on the other.
        text = re.sub(r'( answered \S+ by )(user [^\s"]+|instance)(?=$|")', r"\1<who>", text,
                      flags=re.M)
        text = re.sub(r'("by": ?)"(user [^"]+|instance)"', r'\1"<who>"', text)
        text = re.sub(r'("data": \{)\n\s*"restored": true\n\s*\}', r"\1}", text)
        text = re.sub(r"due in [0-9][0-9a-z ]*?(?=[:;,)\n])", "due in <wait>", text)
        text = re.sub(r": (a `run` process waiting for it goes on with it; if none is, `\S+ run "
                      r"--resume \S+` does|it fires at the next `send`, or wait for it with `\S+ "
                      r"run --resume \S+ --follow`|serve fires it then)\n", ": <how it fires>\n",
                      text)
        text = re.sub(r"\S+: a running `serve` takes run \S+ up within a second; until one runs, "
                      r"it waits\n", "", text)
        text = re.sub(r"waiting for it \((Ctrl-C stops the wait, and `run --resume \S+` takes it "
                      r"up again|Ctrl-C stops the wait; serve goes on with the run)\)",
                      "waiting for it (<how to stop>)", text)
        return text


BACKLOGS = {
    "drain.json": [{"id": "A"}, {"id": "B", "needs": ["A"]}],
    "deadlock.json": [{"id": "A"}, {"id": "C", "needs": ["Z"]}],
    "one.json": [{"id": "A"}],
    "two.json": [{"id": "A"}, {"id": "B"}],
}

# Each step: (scenario, verb as the table names it, workflow, arguments, options). `{name}` is the
# run that scenario `name` started on that side; `new` names the scenario of the run a step
# starts; `stop` stops the command with SIGINT after that many seconds (and compares what it said
# until then).
T = '{"backlog":"%s"}'
STEPS = [
    # A Pool of reviews whose approved items then run a short process: A, then B (needs A).
    ("drain", "run", TICKETS, ["run", "--input", T % "drain.json"], {"new": "drain"}),
    ("drain", "gates", TICKETS, ["gates", "{drain}"], {}),
    ("drain", "gates --json", TICKETS, ["gates", "--json"], {}),
    ("drain", "status", TICKETS, ["status", "{drain}"], {}),
    ("drain", "status --json", TICKETS, ["status", "{drain}", "--json"], {}),
    ("drain", "runs", TICKETS, ["runs"], {}),
    ("drain", "runs --json", TICKETS, ["runs", "--json"], {}),
    ("drain", "send", TICKETS, ["send", "{drain}", "A.review", "approve"], {}),
    ("drain", "send", TICKETS, ["send", "{drain}", "B.review", "approve"], {}),  # drains: done, 0
    ("drain", "status", TICKETS, ["status", "{drain}"], {}),
    ("drain", "log", TICKETS, ["log", "{drain}"], {}),
    ("drain", "log --json", TICKETS, ["log", "{drain}", "--json"], {}),
    ("drain", "send (refused)", TICKETS, ["send", "{drain}", "B.review", "approve"], {}),
    ("drain", "cancel (refused)", TICKETS, ["cancel", "{drain}"], {}),
    # The same, with --json: A settles, C needs Z, which is not in the backlog.
    ("deadlock", "run --json", TICKETS, ["run", "--input", T % "deadlock.json", "--json"],
     {"new": "deadlock"}),
    ("deadlock", "gates", TICKETS, ["gates"], {}),
    ("deadlock", "send --json", TICKETS, ["send", "{deadlock}", "A.review", "approve", "--json"], {}),
    ("deadlock", "status --json", TICKETS, ["status", "{deadlock}", "--json"], {}),
    ("deadlock", "log", TICKETS, ["log", "{deadlock}"], {}),
    ("deadlock", "log --follow", TICKETS, ["log", "{deadlock}", "--follow"], {}),
    # A refusal fails the item, and the item fails the run (`failures: fail`).
    ("failed", "run", TICKETS, ["run", "--input", T % "one.json"], {"new": "failed"}),
    ("failed", "send (refused)", TICKETS, ["send", "{failed}", "NOPE.review", "approve"], {}),
    ("failed", "send (refused)", TICKETS, ["send", "{failed}", "A.review", "merge"], {}),
    ("failed", "send (refused)", TICKETS, ["send", "{failed}", "A.review", "reject", "{}"], {}),
    ("failed", "send (refused)", TICKETS, ["send", "{failed}", "A.review", "reject", '{"reason":'], {}),
    ("failed", "send (refused)", TICKETS, ["send", "{failed}", "A.review"], {}),
    ("failed", "send", TICKETS, ["send", "{failed}", "A.review", "reject", '{"reason":"Not now."}'], {}),
    ("failed", "status", TICKETS, ["status", "{failed}"], {}),
    ("failed", "log --json", TICKETS, ["log", "{failed}", "--json"], {}),
    # A cancel keeps what was done.
    ("cancel", "run", TICKETS, ["run", "--input", T % "two.json"], {"new": "cancel"}),
    ("cancel", "cancel", TICKETS, ["cancel", "{cancel}"], {}),
    ("cancel", "status", TICKETS, ["status", "{cancel}"], {}),
    ("cancel", "log", TICKETS, ["log", "{cancel}"], {}),
    ("cancel", "run --json", TICKETS, ["run", "--input", T % "two.json", "--json"], {"new": "cancel2"}),
    ("cancel", "send --json", TICKETS, ["send", "{cancel2}", "A.review", "approve", "--json"], {}),
    ("cancel", "cancel --json", TICKETS, ["cancel", "{cancel2}", "--json"], {}),
    ("cancel", "status --json", TICKETS, ["status", "{cancel2}", "--json"], {}),
    ("cancel", "runs", TICKETS, ["runs", "--all"], {}),
    ("cancel", "runs --json", TICKETS, ["runs", "--all", "--json"], {}),
    # A machine whose one state runs a process: the run ends while `run` waits for it.
    ("done", "run", COMMAND, ["run", "--input", '{"argv":["sh","-c","sleep 0.3"]}'], {"new": "done"}),
    ("done", "status --json", COMMAND, ["status", "{done}", "--json"], {}),
    ("done", "log", COMMAND, ["log", "{done}"], {}),
    ("done", "runs", COMMAND, ["runs"], {}),  # none waits: where none are is named
    ("done", "run --json", COMMAND, ["run", "--input", '{"argv":["true"]}', "--json"], {"new": "done2"}),
    ("failed", "run", COMMAND, ["run", "--input", '{"argv":["/nonexistent/jr2-contract"]}'],
     {"new": "failed2"}),
    ("failed", "run --json", COMMAND,
     ["run", "--input", '{"argv":["/nonexistent/jr2-contract"]}', "--json"], {"new": "failed3"}),
    ("failed", "status", COMMAND, ["status", "{failed2}"], {}),
    # A read that fails, with a poll: the Pool waits at its `source` Gate, with the poll's timer.
    ("poll", "run", POLLED, ["run", "--input", '{"url":"%s"}' % DEAD_URL], {"new": "poll"}),
    ("poll", "gates --json", POLLED, ["gates", "{poll}", "--json"], {}),
    ("poll", "status", POLLED, ["status", "{poll}"], {}),
    ("poll", "cancel", POLLED, ["cancel", "{poll}"], {}),
    # The same without a wake: no Gate is open, and `run` waits for the poll, saying so.
    ("poll", "run (no Gate)", QUIET, ["run", "--input", '{"url":"%s"}' % DEAD_URL],
     {"new": "quiet", "stop": 4}),
    # A standing Pool: a cancel pauses it, and `run` resumes it in a new run, which waits with no
    # Gate open for deliveries (`run --server` used to wait in silence for a Gate). The local
    # `run` says that a serve takes the new run up; through serve, serve has.
    ("standing", "runs", STANDING, ["runs"], {}),
    ("standing", "status", STANDING, ["status", "{standing}"], {}),
    ("standing", "cancel", STANDING, ["cancel", "{standing}"], {}),
    ("standing", "status --json", STANDING, ["status", "{standing}", "--json"], {}),
    ("standing", "run", STANDING, ["run"], {"new": "standing2"}),
    ("standing", "status", STANDING, ["status", "{standing2}"], {}),
    ("standing", "gates", STANDING, ["gates"], {}),
    # Refused before anything is done.
    ("refused", "run (refused)", TICKETS, ["run", "--input", '{"backlog":1}'], {}),
    ("refused", "run (refused)", TICKETS, ["run", "--input", '{"backlogg":"one.json"}'], {}),
    ("refused", "run (refused)", TICKETS, ["run", "extra"], {}),
    ("refused", "status (refused)", TICKETS, ["status", "zzzz"], {}),
    ("refused", "status (refused)", TICKETS, ["status", "{done}"], {}),
    ("refused", "gates (refused)", TICKETS, ["gates", "zzzz"], {}),
    ("refused", "log (refused)", TICKETS, ["log", "zzzz"], {}),
    ("refused", "cancel (refused)", TICKETS, ["cancel", "zzzz"], {}),
    ("refused", "runs (refused)", TICKETS, ["runs", "extra"], {}),
]


STARTER = "starter-token-" + os.urandom(8).hex()  # a Caller that may start runs, and no more


def start_serve(side, port):
    """A serve on `side`'s store, once it answers and has started its standing Pool."""
    callers = os.path.join(side.home, "callers.json")
    with open(callers, "w") as f:
        json.dump({"callers": [{"name": "starter",
                                "token_sha256": hashlib.sha256(STARTER.encode()).hexdigest(),
                                "scopes": {TICKETS: ["start"]}}]}, f)
    serve = subprocess.Popen([os.path.join(DIR, TICKETS), "serve", "--listen", "127.0.0.1:%d" % port,
                              "--callers", callers],
                             cwd=side.home, env=side.env(), stdout=subprocess.DEVNULL,
                             stderr=open(os.path.join(side.home, "serve.err"), "a"))
    for _ in range(100):
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=1).read()
            if side.known(STANDING):
                return serve
        except OSError:
            pass
        time.sleep(0.1)
    stop_serve(serve)
    raise SystemExit("FAIL: serve on the %s store did not start within 10 s" % side.name)


def stop_serve(serve):
    serve.send_signal(signal.SIGTERM)
    try:
        serve.wait(timeout=10)
    except subprocess.TimeoutExpired:
        serve.kill()
        serve.wait()


def main():
    port = free_port()
    url = "http://127.0.0.1:%d" % port
    local, server = Side("local"), Side("server", url)
    # The standing Pool's run is started by a serve, on either side: on the local one by a serve
    # that then stops, so that the local verbs drive it from the store.
    stop_serve(start_serve(local, free_port()))
    serve = start_serve(server, port)
    try:
        for side in (local, server):
            for run in side.known(STANDING):
                side.ids[run] = "standing"
        code = contract(local, server)
        code |= served_traces(server)
    finally:
        stop_serve(serve)
    return code | replays(local, server)


def all_runs(side):
    workflows = sorted({w for _, _, w, _, _ in STEPS})
    return [(w, r) for w in workflows for r in sorted(side.known(w))]


def export(side, workflow, run, server=False):
    """`export RUN` (through `--server` with `server`): (exit code, trace bytes, stderr)."""
    argv = [os.path.join(DIR, workflow), "export", run] + (["--server", side.url] if server else [])
    p = subprocess.run(argv, cwd=side.home, env=side.env(), capture_output=True, timeout=30)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def served_traces(server):
    """`export RUN --server URL` (GET /runs/:id/trace) writes what `export` writes from the store
    the serve uses, byte for byte, for every run of the scenarios (the standing Pool's included);
    a Caller that may only start runs is refused (403), an unknown run is 404, and `replay`
    with `--server` says it needs none."""
    failures = 0
    same = 0
    runs = all_runs(server)
    for workflow, run in runs:
        got = export(server, workflow, run, server=True)
        want = export(server, workflow, run)
        if got[0] == 0 and got[1] == want[1] and want[1]:
            same += 1
        else:
            failures += 1
            print("FAIL: the trace of run %s of %s through serve differs from the store's: exit %d,"
                  " %s" % (run, workflow, got[0], got[2].strip()[:300]))
    print("%s: traces through serve: %d of %d the store's, byte for byte" %
          ("PASS" if same == len(runs) and runs else "FAIL", same, len(runs)))
    failures += 0 if runs else 1
    workflow, run = runs[0]
    req = urllib.request.Request("%s/runs/%s/trace" % (server.url, run),
                                 headers={"Authorization": "Bearer " + STARTER})
    try:
        urllib.request.urlopen(req, timeout=10).read()
        status = 200
    except urllib.error.HTTPError as e:
        status = e.code
    ok = status == 403
    print("%s: GET /runs/:id/trace for a Caller with `start` alone: %d" %
          ("PASS" if ok else "FAIL", status))
    failures += 0 if ok else 1
    rc, out, err = export(server, workflow, "zzzz", server=True)
    ok = rc != 0 and not out and "zzzz" in err and err.count("\n") == 1
    print("%s: export of an unknown run through serve: exit %d, %s" %
          ("PASS" if ok else "FAIL", rc, err.strip()[:200]))
    failures += 0 if ok else 1
    # A trace cut short (a serve that stopped half-way through it): refused whole, nothing
    # written, from a stand-in serve that sends the header and one line, then closes.
    code, whole, _ = export(server, workflow, run)
    cut = b"\n".join(whole.split(b"\n")[:2]) + b"\n"

    class CutShort(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.endswith("/trace"):
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(cut)
            else:
                body = json.dumps({"runId": run, "workflow": workflow}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        def log_message(self, *args):
            pass

    stand_in = http.server.ThreadingHTTPServer(("127.0.0.1", 0), CutShort)
    threading.Thread(target=stand_in.serve_forever, daemon=True).start()
    try:
        argv = [os.path.join(DIR, workflow), "export", run, "--server",
                "http://127.0.0.1:%d" % stand_in.server_address[1]]
        p = subprocess.run(argv, cwd=server.home, env=server.env(), capture_output=True,
                           timeout=30)
    finally:
        stand_in.shutdown()
    said = p.stderr.decode(errors="replace")
    ok = code == 0 and p.returncode != 0 and not p.stdout and "cut short" in said
    print("%s: a trace cut short by serve is refused whole: exit %d, %d bytes written, %s" %
          ("PASS" if ok else "FAIL", p.returncode, len(p.stdout), said.strip()[:200]))
    failures += 0 if ok else 1
    p = subprocess.run([os.path.join(DIR, workflow), "replay", "x.jsonl", "--server", server.url],
                       cwd=server.home, env=server.env(), capture_output=True, text=True,
                       timeout=30)
    ok = p.returncode == 64 and "drop `--server`" in p.stderr
    print("%s: replay with --server: exit %d, %s" % ("PASS" if ok else "FAIL", p.returncode,
                                                     p.stderr.strip()[:200]))
    failures += 0 if ok else 1
    return 1 if failures else 0


def replays(local, server):
    """Every run of the scenarios, made by the local verbs and by serve, replays from its trace
    (docs/runtime.md#replay): the same in every turn, none of its effects run; the standing
    Pool's runs too (a pause, a resume that took over what the paused run held)."""
    failures = 0
    for side in (local, server):
        identical = 0
        runs = all_runs(side)
        for workflow, run in runs:
            runner = os.path.join(DIR, workflow)
            trace = os.path.join(side.home, "trace-%s.jsonl" % run)
            with open(trace, "wb") as f:
                f.write(export(side, workflow, run)[1])
            p = subprocess.run([runner, "replay", trace], cwd=side.home, env=side.env(),
                               capture_output=True, text=True, timeout=60)
            if p.returncode == 0:
                identical += 1
            else:
                failures += 1
                print("FAIL: run %s of %s (%s side) does not replay: %s" %
                      (run, workflow, side.name, p.stdout.strip()[:600]))
        print("%s: replays: %d of %d runs identical" %
              ("PASS" if identical == len(runs) and runs else "FAIL", identical, len(runs)))
        failures += 0 if runs else 1
    return 1 if failures else 0


def contract(local, server):
    results = []  # (scenario, verb, same, step text)
    failures = 0
    for scenario, verb, workflow, args, opts in STEPS:
        outs = []
        for side in (local, server):
            before = side.known(workflow) if "new" in opts else set()
            argv = [re.sub(r"\{(\w+)\}", lambda m: side_id(side, m.group(1)), a) for a in args]
            rc, out, err = side.run(workflow, argv, stop_after=opts.get("stop"))
            if "new" in opts:
                for run in side.known(workflow) - before:
                    side.ids[run] = opts["new"]
            err = side.normalise(err)
            if "stop" in opts:  # what it said until it was stopped
                err = err[:err.find("\n", err.find("waiting for it (")) + 1]
            outs.append((rc, side.normalise(out), err))
        same = outs[0] == outs[1]
        shown = " ".join(args)
        results.append((scenario, verb, same))
        if same:
            print("PASS: %s: %s %s (exit %s)" % (scenario, workflow, shown, outs[0][0]))
            continue
        failures += 1
        print("FAIL: %s: %s %s" % (scenario, workflow, shown))
        for what, i in (("exit", 0), ("stdout", 1), ("stderr", 2)):
            if outs[0][i] != outs[1][i]:
                print("  %s differs:\n  --- local\n%s\n  --- through --server\n%s" %
                      (what, indent(outs[0][i]), indent(outs[1][i])))
    print_table(results)
    failures += starter(server)
    return 1 if failures else 0


def starter(server):
    """Through serve alone: a Caller that may start runs but not read them gets the run as the
    start answered it, and a line that says why no more (it used to wait for a 403 forever)."""
    env = server.env()
    env["JR2_TOKEN"] = STARTER
    p = subprocess.run([os.path.join(DIR, TICKETS), "run", "--input", T % "one.json", "--server",
                        server.url], cwd=server.home, env=env, capture_output=True, text=True,
                       timeout=60)
    said = re.search(r"is waiting, with no Gate open:\n.*no `answer` scope on workflow "
                     r"`conformance_tickets`: a token with `read` there sees what run \S+ does next",
                     p.stderr, re.S)
    if p.returncode == 3 and said:
        print("PASS: a Caller with `start` alone: the run as started, exit 3, and why no more")
        return 0
    print("FAIL: a Caller with `start` alone: exit %d, stderr:\n%s" % (p.returncode, indent(p.stderr)))
    return 1


def side_id(side, scenario):
    for run, s in side.ids.items():
        if s == scenario:
            return run
    raise SystemExit("FAIL: no run of scenario %s on the %s side" % (scenario, side.name))


def indent(text):
    return "\n".join("    | " + line for line in str(text).split("\n"))


def print_table(results):
    scenarios = []
    verbs = []
    for s, v, _ in results:
        if s not in scenarios:
            scenarios.append(s)
        if v not in verbs:
            verbs.append(v)
    cell = {}
    for s, v, same in results:
        cell.setdefault((v, s), []).append(same)
    width = max(len(v) for v in verbs)
    print()
    print("verb x scenario: local and through --server (same: stdout, stderr and exit code)")
    print(" " * width + "  " + "  ".join("%-9s" % s for s in scenarios))
    for v in verbs:
        row = []
        for s in scenarios:
            got = cell.get((v, s))
            row.append("%-9s" % ("" if got is None else "same" if all(got) else "DIFFERENT"))
        print(("%-*s  %s" % (width, v, "  ".join(row))).rstrip())
    total = len(results)
    same = sum(1 for _, _, x in results if x)
    print("%d of %d steps the same" % (same, total))


if __name__ == "__main__":
    sys.exit(main())
