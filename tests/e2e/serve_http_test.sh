#!/usr/bin/env bash
# `serve` over HTTP (#11, docs/serve.md): every route against every kind of Caller (a table of
# statuses), a secret planted at depth in a run's input never shown to the open band nor to a
# Caller that may only answer, the answers and errors of each route (nothing changed by a refused
# request), the feeds as server-sent events (Last-Event-ID resumes with no gap and no repeat, the
# open feed without a line's text or data), the forge hook (signature, verdicts, a delivery id
# answered once, its log for the instance token only), a Gate's deadline firing with nobody
# typing, and serve refusing to start on a hook secret unset or a malformed callers file.
# Usage: serve_http_test.sh DIR_OF_CONFORMANCE_RUNNERS
set -u
lib="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
dir=$(realpath "$1")
runner="$dir/conformance_secret"  # any runner of the program serves all of its workflows
tmp=$(mktemp -d)
spid=""
trap '[ -n "$spid" ] && kill -KILL "$spid" 2>/dev/null; rm -rf "$tmp"' EXIT
. "$lib"  # ok, fail
cd "$tmp" || exit 1
passed=0
failed=0
for w in conformance_secret conformance_hooked conformance_deadline2 conformance_two_step conformance_command; do
  [ -x "$dir/$w" ] || { echo "FAIL: no runner $dir/$w (is tests/runtime/serve.jr2 built?)"; exit 1; }
done
export JR2_STORE="$tmp/store.db"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# Tokens (random, never the same twice), the planted secret and the hook's secret.
rnd() { python3 -c 'import secrets; print(secrets.token_hex(16))'; }
SECRET="planted-$(rnd)"
HOOK_SECRET="hook-$(rnd)"
declare -A tok
for c in start read answer cancel other reviewer all; do tok[$c]="tok-$c-$(rnd)"; done
sha() { printf %s "$1" | sha256sum | cut -d' ' -f1; }
cat > callers.json <<EOF
{ "callers": [
    { "name": "starter", "token_sha256": "$(sha "${tok[start]}")", "scopes": { "conformance_secret": ["start"] } },
    { "name": "reader", "token_sha256": "$(sha "${tok[read]}")", "scopes": { "conformance_secret": ["read"] } },
    { "name": "answerer", "token_sha256": "$(sha "${tok[answer]}")", "scopes": { "conformance_secret": ["answer"] } },
    { "name": "canceller", "token_sha256": "$(sha "${tok[cancel]}")", "scopes": { "conformance_secret": ["cancel"] } },
    { "name": "other", "token_sha256": "$(sha "${tok[other]}")", "scopes": { "conformance_two_step": ["start", "read", "answer", "cancel"] } },
    { "name": "reviewer", "token_sha256": "$(sha "${tok[reviewer]}")", "scopes": { "conformance_secret": ["answer"] }, "gates": ["*.review"] },
    { "name": "all", "token_sha256": "$(sha "${tok[all]}")", "scopes": { "*": ["start", "read", "answer", "cancel"] } } ],
  "hooks": { "forge": { "secret_env": "FORGE_HOOK_SECRET" } } }
EOF
export FORGE_HOOK_SECRET="$HOOK_SECRET"

# 1. serve refuses to start (65, one line) on a hook secret unset or empty, and on a callers file
# it cannot take. Each on a store of its own, so none makes the instance token of the real one.
refuse() {  # refuse NAME [env…] -- serve args…: expects exit 65 and exactly one line on stderr
  local name=$1; shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" JR2_STORE="$tmp/refused.db" timeout 3 "$runner" serve --listen "127.0.0.1:$port" "$@" \
    > refuse.out 2> refuse.err
  local rc=$? lines
  lines=$(grep -c '' refuse.err)
  echo "refused to start, $name: exit $rc, stderr: $(head -c 300 refuse.err | tr '\n' '|')"
  [ "$rc" -eq 65 ] && [ "$lines" -eq 1 ] && ok || fail "serve with $name: exit $rc (wanted 65), $lines stderr lines (wanted 1)"
}
refuse "the hook's secret unset" -u FORGE_HOOK_SECRET -- --callers callers.json
refuse "the hook's secret empty" FORGE_HOOK_SECRET= -- --callers callers.json
printf '{"callers": [' > bad1.json
refuse "a callers file that is not JSON" -- --callers bad1.json
printf '{"callers": [{"name": "x", "token_sha256": "abc", "scopes": {"conformance_secret": ["read"]}}]}' > bad2.json
refuse "a token_sha256 that is not a hash" -- --callers bad2.json
printf '{"callers": [{"name": "x", "token_sha256": "%s", "scopes": {"conformance_secret": ["read"]}, "gate": ["*"]}]}' "$(sha x)" > bad3.json
refuse "a caller with an unknown field" -- --callers bad3.json
refuse "a callers file that does not exist" -- --callers "$tmp/no-such-callers.json"

# The HTTP checks, in Python: each prints "ok NAME" or "FAIL NAME: why" (counted here) or text.
cat > h.py <<'PY'
import hashlib, hmac, json, os, socket, subprocess, sys, threading, time, urllib.parse

E = os.environ
PORT = int(E["PORT"])
DIR = E["DIR"]
SECRET = E["SECRET"]
HOOK_SECRET = E["HOOK_SECRET"]
STATE = "state.json"
COLS = ["none", "unknown", "start", "read", "answer", "cancel", "other", "reviewer", "all", "instance"]


def out(s):
    print(s, flush=True)


def check(cond, name, why=""):
    out(("ok " + name) if cond else ("FAIL %s: %s" % (name, why)))
    return cond


def cli(workflow, *args):
    p = subprocess.run([os.path.join(DIR, workflow)] + list(args), capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr


def cli_json(workflow, *args):
    rc, so, se = cli(workflow, *args, "--json")
    try:
        return json.loads(so)
    except ValueError:
        return {"unparsable": so, "stderr": se, "rc": rc}


class Resp:
    pass


def dechunk(b):
    res = b""
    while True:
        i = b.find(b"\r\n")
        if i < 0:
            return res
        try:
            n = int(b[:i].split(b";")[0], 16)
        except ValueError:
            return res
        if n == 0:
            return res
        res += b[i + 2:i + 2 + n]
        b = b[i + 2 + n + 2:]


def http(method, path, token=None, body=None, headers=None, stream=0.8, timeout=6, raw=None):
    """One request; for an event stream, reads for `stream` seconds (or to its end)."""
    r = Resp()
    r.status, r.headers, r.body, r.eof, r.json, r.events = 0, {}, b"", False, None, []
    if body is not None and not isinstance(body, (bytes, str)):
        body = json.dumps(body)
    if isinstance(body, str):
        body = body.encode()
    h = {"Host": "127.0.0.1:%d" % PORT, "Connection": "close"}
    if token:
        h["Authorization"] = "Bearer " + token
    if body is not None:
        h["Content-Type"] = "application/json"
        h["Content-Length"] = str(len(body))
    h.update(headers or {})
    req = raw if raw is not None else (
        ("%s %s HTTP/1.1\r\n" % (method, path)).encode()
        + "".join("%s: %s\r\n" % kv for kv in h.items()).encode() + b"\r\n" + (body or b""))
    s = socket.create_connection(("127.0.0.1", PORT), timeout=timeout)
    try:
        s.sendall(req)
    except OSError:
        pass
    data = b""
    t_end = time.time() + timeout
    head_len = None
    while time.time() < t_end:
        s.settimeout(max(0.01, t_end - time.time()))
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        except OSError:
            break
        if not chunk:
            r.eof = True
            break
        data += chunk
        if head_len is None and b"\r\n\r\n" in data:
            head_len = data.index(b"\r\n\r\n") + 4
            for line in data[:head_len].decode("latin-1").split("\r\n")[1:]:
                if ":" in line:
                    k, v = line.split(":", 1)
                    r.headers[k.strip().lower()] = v.strip()
            if "text/event-stream" in r.headers.get("content-type", ""):
                t_end = min(t_end, time.time() + stream)
        if head_len is not None and "content-length" in r.headers:
            if len(data) - head_len >= int(r.headers["content-length"]):
                break
    s.close()
    try:
        r.status = int(data.split(b" ", 2)[1])
    except (IndexError, ValueError):
        r.status = 0
    r.body = data[head_len:] if head_len is not None else b""
    if "chunked" in r.headers.get("transfer-encoding", ""):
        r.body = dechunk(r.body)
    r.text = r.body.decode("utf-8", "replace")
    try:
        r.json = json.loads(r.text)
    except ValueError:
        r.json = None
    if "text/event-stream" in r.headers.get("content-type", ""):
        r.events = parse_sse(r.text)
    return r


def parse_sse(text):
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        ev = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            k, _, v = line.partition(":")
            v = v[1:] if v.startswith(" ") else v
            ev[k] = ev.get(k, "") + ("\n" if k in ev else "") + v
        if ev:
            try:
                ev["json"] = json.loads(ev.get("data", ""))
            except ValueError:
                ev["json"] = None
            events.append(ev)
    return events


def err_ok(r):
    """An error answer: JSON, `{"error": "<one line>"}`."""
    j = r.json
    return ("application/json" in r.headers.get("content-type", "") and isinstance(j, dict)
            and isinstance(j.get("error"), str) and j["error"] != "" and "\n" not in j["error"])


def expect(name, r, status):
    if r.status != status:
        return check(False, name, "answered %d, wanted %d: %s" % (r.status, status, r.text[:300]))
    if status >= 400 and not err_ok(r):
        return check(False, name, "%d but the body is not {\"error\": \"<one line>\"}: %r (%s)"
                     % (status, r.text[:300], r.headers.get("content-type")))
    return check(True, name)


def sign(body, secret=None):
    return "sha256=" + hmac.new((secret or HOOK_SECRET).encode(), body, hashlib.sha256).hexdigest()


def load():
    with open(STATE) as f:
        return json.load(f)


def save(st):
    with open(STATE, "w") as f:
        json.dump(st, f)


def start_secret_run():
    rc, so, se = cli("conformance_secret", "run", "--json", "--input",
                     json.dumps({"note": {"deep": {"secret": SECRET}}}))
    try:
        j = json.loads(so)
    except ValueError:
        j = {}
    if rc != 3 or j.get("status") != "waiting":
        out("FAIL prepare: conformance_secret run: exit %d %s %s" % (rc, so[:200], se[:200]))
        return None
    return j["runId"]


def snapshot(workflow, run):
    """What the store holds of a run: its status and its whole feed."""
    wf = "conformance_" + workflow
    return cli(wf, "status", run, "--json")[1], cli(wf, "log", run, "--json")[1]


# ---------------------------------------------------------------------------------------------
def prepare():
    """Runs made with the CLI before serve starts (serve takes them up)."""
    st = {"runs": {}}
    names = ["main", "err", "live", "cancel", "pct", "ended",
             "appr_answer", "appr_all", "appr_instance",
             "rev_answer", "rev_reviewer", "rev_all", "rev_instance",
             "can_cancel", "can_all", "can_instance"]
    for n in names:
        st["runs"][n] = start_secret_run()
    ended = st["runs"]["ended"]
    cli("conformance_secret", "send", ended, "approval", "rate", '{"score":1}')
    rc, so, se = cli("conformance_secret", "send", ended, "both.x.review", "accept")
    check(rc == 0, "prepare: a secret run answered by the CLI ends done", "exit %d %s" % (rc, se[:200]))
    j = cli_json("conformance_two_step", "run")
    st["two_step"] = j.get("runId")
    with open("tasks.json", "w") as f:
        json.dump([{"id": "T-1"}], f)
    j = cli_json("conformance_hooked", "run", "--input", json.dumps({"tasks": os.path.abspath("tasks.json")}))
    st["hooked"] = j.get("runId")
    check(j.get("status") == "waiting", "prepare: the hooked Pool waits at T-1.review", str(j)[:300])
    save(st)


# ---------------------------------------------------------------------------------------------
OBS_KEYS = {"runId", "workflow", "status", "value", "children"}
# GET /runs/:id adds `working` (both shapes), and for `read` the `seq` and `report` that the
# `--server` verbs print from (server_contract_test.sh).
ANSWER_KEYS = OBS_KEYS | {"gates", "working"}
READ_KEYS = {"runId", "workflow", "status", "output", "reason", "items", "failures", "gates", "value", "children", "working",
             "seq", "report"}


def gate_names(gates):
    try:
        return sorted(g["gate"] for g in gates)
    except (TypeError, KeyError):
        return ["<not a list of {gate, meta, accepts}: %r>" % (gates,)]


def table(st, tok):
    R = st["runs"]
    main = R["main"]
    secret_input = {"input": {"note": {"deep": {"secret": SECRET}}}}

    def run_for(prefix, col, allowed):
        return R["%s_%s" % (prefix, col)] if col in allowed else main

    A = {c: 200 for c in COLS}

    def row(none, unknown, start, read, answer, cancel, other, reviewer, all_, instance):
        return dict(zip(COLS, [none, unknown, start, read, answer, cancel, other, reviewer, all_, instance]))

    routes = [
        ("GET /healthz", "GET", lambda c: "/healthz", None, A),
        ("GET /workflows/W/runs", "GET", lambda c: "/workflows/conformance_secret/runs", None, A),
        ("GET /workflows/W/runs/R/events", "GET", lambda c: "/workflows/conformance_secret/runs/%s/events" % main, None, A),
        ("POST /workflows/W/runs", "POST", lambda c: "/workflows/conformance_secret/runs", secret_input,
         row(401, 401, 201, 403, 403, 403, 403, 403, 201, 201)),
        ("GET /runs", "GET", lambda c: "/runs", None, row(401, 401, 403, 200, 403, 403, 200, 403, 200, 200)),
        ("GET /runs/R", "GET", lambda c: "/runs/" + main, None, row(401, 401, 403, 200, 200, 403, 403, 200, 200, 200)),
        ("GET /runs/R/events", "GET", lambda c: "/runs/%s/events" % main, None,
         row(401, 401, 403, 200, 403, 403, 403, 403, 200, 200)),
        ("GET /gates", "GET", lambda c: "/gates", None, row(401, 401, 403, 403, 200, 403, 200, 200, 200, 200)),
        ("POST /runs/R/gates/approval/events", "POST",
         lambda c: "/runs/%s/gates/approval/events" % run_for("appr", c, ["answer", "all", "instance"]),
         {"event": "rate", "payload": {"score": 3}}, row(401, 401, 403, 403, 200, 403, 403, 403, 200, 200)),
        ("POST /runs/R/gates/both.x.review/events", "POST",
         lambda c: "/runs/%s/gates/both.x.review/events" % run_for("rev", c, ["answer", "reviewer", "all", "instance"]),
         {"event": "accept", "payload": {}}, row(401, 401, 403, 403, 200, 403, 403, 200, 200, 200)),
        ("POST /runs/R/events CANCEL", "POST",
         lambda c: "/runs/%s/events" % run_for("can", c, ["cancel", "all", "instance"]),
         {"type": "CANCEL"}, row(401, 401, 403, 403, 403, 200, 403, 403, 200, 200)),
        ("GET /runs/UNKNOWN", "GET", lambda c: "/runs/ffffffffffff", None, row(401, 401, 404, 404, 404, 404, 404, 404, 404, 404)),
        ("POST /hooks/forge unsigned", "POST", lambda c: "/hooks/forge", {}, {c: 401 for c in COLS}),
        ("GET /hooks/forge", "GET", lambda c: "/hooks/forge", None, row(401, 401, 403, 403, 403, 403, 403, 403, 403, 200)),
        ("GET /no/such/route", "GET", lambda c: "/no/such/route", None, {c: 404 for c in COLS}),
    ]
    before = snapshot("secret", main), snapshot("two_step", st["two_step"]), snapshot("hooked", st["hooked"])
    got = {}
    answers = {}
    bad = []
    for label, method, path, body, want in routes:
        for c in COLS:
            hdr = {"X-Jr2-Event": "issues.labeled"} if "hooks" in label and method == "POST" else None
            r = http(method, path(c), tok.get(c), body, headers=hdr, stream=0)
            got[(label, c)] = r.status
            answers[(label, c)] = r
            if r.status != want[c]:
                bad.append("%s as %s: %d, wanted %d: %s" % (label, c, r.status, want[c], r.text[:160]))
            elif r.status >= 400 and not err_ok(r):
                bad.append("%s as %s: %d with a body that is not {\"error\": …}: %r" % (label, c, r.status, r.text[:160]))
            elif r.status < 300 and "events" not in label and "application/json" not in r.headers.get("content-type", ""):
                bad.append("%s as %s: Content-Type %r" % (label, c, r.headers.get("content-type")))
            elif r.status < 300 and "events" in label and method == "GET" and "text/event-stream" not in r.headers.get("content-type", ""):
                bad.append("%s as %s: Content-Type %r" % (label, c, r.headers.get("content-type")))
    # The table: each cell the status got; `got!wanted` where they differ.
    w = max(len(x[0]) for x in routes)
    out("%-*s  %s" % (w, "route \\ caller", " ".join("%-8s" % c for c in COLS)))
    for label, _, _, _, want in routes:
        cells = []
        for c in COLS:
            g = got[(label, c)]
            cells.append("%-8s" % (str(g) if g == want[c] else "%d!%d" % (g, want[c])))
        out("%-*s  %s" % (w, label, " ".join(cells)))
    out("(a cell `got!wanted` differs from docs/serve.md)")
    n = len(routes) * len(COLS)
    check(not bad, "table: %d cells (%d routes x %d callers) answer as docs/serve.md says" % (n, len(routes), len(COLS)),
          "%d cells differ:\n    " % len(bad) + "\n    ".join(bad))
    after = snapshot("secret", main), snapshot("two_step", st["two_step"]), snapshot("hooked", st["hooked"])
    check(before == after, "table: the runs no request was allowed to change are unchanged in the store",
          "before %r\n after %r" % (before, after))

    # What the allowed cells answered. `gates` in an answer lists the Gates the Caller may answer
    # (none for a Caller without `answer`, only `*.review` for the reviewer), as GET /runs/:id does.
    for c, gates in [("start", []), ("all", ["approval", "both.x.review"]), ("instance", ["approval", "both.x.review"])]:
        j = answers[("POST /workflows/W/runs", c)].json or {}
        check(isinstance(j, dict) and set(j) == {"runId", "status", "gates"} and j.get("status") == "waiting"
              and gate_names(j.get("gates")) == gates,
              "POST /workflows/W/runs as %s: 201 {runId, status: waiting, gates: %s}" % (c, gates), repr(j)[:300])
    for c in ["answer", "all", "instance"]:
        j = answers[("POST /runs/R/gates/approval/events", c)].json or {}
        check(isinstance(j, dict) and j.get("status") == "waiting" and gate_names(j.get("gates")) == ["both.x.review"]
              and j.get("open") == 1,
              "answer at approval as %s: 200 {status: waiting, gates: [both.x.review], open: 1}" % c, repr(j)[:300])
        s = cli_json("conformance_secret", "status", R["appr_" + c])
        check([g["gate"] for g in s.get("gates", [])] == ["both.x.review"],
              "answer at approval as %s: the store has it" % c, repr(s)[:300])
    for c in ["answer", "reviewer", "all", "instance"]:
        j = answers[("POST /runs/R/gates/both.x.review/events", c)].json or {}
        gates = [] if c == "reviewer" else ["approval"]
        check(isinstance(j, dict) and j.get("status") == "waiting" and gate_names(j.get("gates")) == gates
              and j.get("open") == len(gates),
              "answer at both.x.review as %s: 200 {status: waiting, gates: %s, open: %d}" % (c, gates, len(gates)),
              repr(j)[:300])
        s = cli_json("conformance_secret", "status", R["rev_" + c])
        check([g["gate"] for g in s.get("gates", [])] == ["approval"],
              "answer at both.x.review as %s: the store has it" % c, repr(s)[:300])
    for c in ["cancel", "all", "instance"]:
        j = answers[("POST /runs/R/events CANCEL", c)].json or {}
        s = cli_json("conformance_secret", "status", R["can_" + c])
        check(j == {"status": "cancelled"} and s.get("status") == "cancelled",
              "cancel as %s: 200 {status: cancelled}, stored" % c, "%r; stored %r" % (j, s.get("status")))
    # GET /runs: the runs of the workflows the Caller may read, and only those.
    for c, wf in [("read", {"conformance_secret"}), ("other", {"conformance_two_step"})]:
        j = answers[("GET /runs", c)].json
        ok = isinstance(j, list) and j and {x.get("workflow") for x in j} == wf and all(
            set(x) == {"runId", "workflow", "status", "updated"} for x in j)
        check(ok, "GET /runs as %s: only %s runs, each {runId, workflow, status, updated}" % (c, sorted(wf)), repr(j)[:300])
    j = answers[("GET /runs", "read")].json or []
    check(isinstance(j, list) and {R["ended"], main} <= {x.get("runId") for x in j},
          "GET /runs as read: waiting and ended runs", repr(j)[:300])
    j = answers[("GET /runs", "instance")].json or []
    ids = {x.get("runId") for x in j} if isinstance(j, list) else set()
    check({R["ended"], main, st["two_step"], st["hooked"]} <= ids,
          "GET /runs as instance: waiting and ended runs of every workflow", repr(j)[:300])
    j = answers[("GET /gates", "other")].json
    check(isinstance(j, list) and all(x.get("workflow") == "conformance_two_step" for x in j) and j,
          "GET /gates as other: only the Gates of conformance_two_step", repr(j)[:300])
    j = answers[("GET /gates", "reviewer")].json
    check(isinstance(j, list) and j and all(x.get("gate", "").endswith(".review") for x in j)
          and all(set(x) == {"runId", "workflow", "gate", "meta", "accepts", "menu", "fields"} for x in j),
          "GET /gates as reviewer: only *.review Gates, each {runId, workflow, gate, meta, accepts, menu, fields}",
          repr(j)[:300])
    check(all([m.get("event") for m in x["menu"]] == x["accepts"]
              and all(set(m) == {"event", "audience", "description", "schema"}
                      and m["schema"].get("type") == "object" for m in x["menu"]) for x in j),
          "GET /gates: each Gate's menu lists its accepted events, each with its payload's schema",
          repr(j)[:300])
    j = answers[("GET /runs/R", "reviewer")].json or {}
    check(isinstance(j, dict) and set(j) == ANSWER_KEYS and gate_names(j.get("gates")) == ["both.x.review"],
          "GET /runs/R as reviewer: the observation and only the Gate it may answer", repr(j)[:300])
    j = answers[("GET /runs/R", "read")].json or {}
    check(isinstance(j, dict) and set(j) == READ_KEYS and j.get("items") is None and j.get("failures") is None
          and j.get("status") == "waiting",
          "GET /runs/R as read: {runId, workflow, status, output, reason, items, failures, gates, value, children, working, seq, "
          "report}", repr(j)[:300])
    j = answers[("GET /healthz", "none")]
    check(j.json == {"ok": True}, "GET /healthz: {\"ok\": true}", j.text[:100])
    j = answers[("GET /runs/R/events", "read")]
    check("text/event-stream" in j.headers.get("content-type", ""), "GET /runs/R/events: text/event-stream",
          repr(j.headers))
    return answers


# ---------------------------------------------------------------------------------------------
def secret_checks(st, tok):
    R = st["runs"]
    main, ended = R["main"], R["ended"]
    leaks = []

    def no_secret(what, r):
        if SECRET in r.text:
            leaks.append(what)
        return r

    r = no_secret("GET /workflows/conformance_secret/runs", http("GET", "/workflows/conformance_secret/runs"))
    j = r.json if isinstance(r.json, list) else []
    check(r.status == 200 and j and all(set(x) == OBS_KEYS for x in j),
          "open runs: each is {runId, workflow, status, value, children} and nothing else",
          r.text[:300])
    by = {x.get("runId"): x for x in j}
    check(main in by and ended in by and by.get(ended, {}).get("status") == "done"
          and by.get(main, {}).get("status") == "waiting",
          "open runs: waiting and ended runs of the workflow", r.text[:300])
    m = by.get(main, {})
    check(isinstance(m.get("value"), list) and "both" in m.get("value", [])
          and any(v.startswith("both.x.review") for v in m.get("value", [])),
          "open runs: `value` lists the active state paths", repr(m)[:300])
    check(isinstance(m.get("children"), list) and all(set(ch) >= {"id", "kind", "value", "children"} for ch in m.get("children", [])),
          "open runs: `children` are {id, kind, value, children}", repr(m)[:300])
    r = no_secret("the open feed of a waiting run", http("GET", "/workflows/conformance_secret/runs/%s/events" % main, stream=0.7))
    check(r.status == 200 and r.events and all(set(e["json"] or {}) == {"seq", "kind", "time", "observation"} for e in r.events),
          "open feed: each event is {seq, kind, time, observation} (no line, no data)", r.text[:400])
    check(not r.eof, "open feed of a waiting run: the stream stays open", "")
    r = no_secret("the open feed of an ended run", http("GET", "/workflows/conformance_secret/runs/%s/events" % ended, stream=3))
    check(r.status == 200 and r.eof and r.events and r.events[-1].get("event") == "ended",
          "open feed of an ended run: ends after its `ended` line", r.text[-300:])
    for c in ["answer", "reviewer"]:
        for what, path in [("GET /runs/:id (waiting)", "/runs/" + main), ("GET /runs/:id (ended)", "/runs/" + ended),
                           ("GET /gates", "/gates")]:
            r = no_secret("%s as %s" % (what, c), http("GET", path, tok[c]))
            check(r.status == 200, "%s as %s: 200" % (what, c), "%d %s" % (r.status, r.text[:200]))
    r = http("GET", "/runs/" + ended, tok["answer"])
    check(isinstance(r.json, dict) and set(r.json) == ANSWER_KEYS and r.json.get("gates") == [],
          "GET /runs/:id (ended) as answer: the observation, no Gates, no output", r.text[:300])
    check(not leaks, "the planted secret appears in no open-band answer and no answer to an answer-only Caller",
          "it leaked in: " + "; ".join(leaks))
    # ... and the test can see it where it may be seen: the read band.
    r = http("GET", "/runs/%s/events" % main, tok["read"], stream=0.7)
    check(SECRET in r.text, "the secret is in the read feed (GET /runs/:id/events as read): the test can see it",
          r.text[:300])
    r = http("GET", "/runs/" + ended, tok["read"])
    check(isinstance(r.json, dict) and r.json.get("output") == SECRET and r.json.get("status") == "done",
          "GET /runs/:id (ended) as read: its output, the secret", r.text[:300])


# ---------------------------------------------------------------------------------------------
def errors(st, tok):
    R = st["runs"]
    I = tok["instance"]
    rid = R["err"]
    g = "/runs/%s/gates/%%s/events" % rid
    before = snapshot("secret", rid)
    expect("answer at a Gate that is not open: 404", http("POST", g % "nope", I, {"event": "rate", "payload": {"score": 1}}), 404)
    expect("answer with a payload refused (score a string): 400",
           http("POST", g % "approval", I, {"event": "rate", "payload": {"score": "x"}}), 400)
    expect("answer with a payload missing its field: 400", http("POST", g % "approval", I, {"event": "rate", "payload": {}}), 400)
    expect("answer with a payload's unknown field: 400",
           http("POST", g % "approval", I, {"event": "rate", "payload": {"score": 1, "bogus": 2}}), 400)
    expect("answer with an unknown event: 400", http("POST", g % "approval", I, {"event": "nope", "payload": {}}), 400)
    expect("answer with an event the Gate does not take: 400", http("POST", g % "approval", I, {"event": "accept", "payload": {}}), 400)
    r = http("POST", g % "approval", I, {"event": "rate", "payload": {"score": 1}, "extra": 1})
    expect("answer with an unknown body field: 400", r, 400)
    check("extra" in (r.json or {}).get("error", ""), "the unknown body field is named", r.text[:200])
    expect("answer with malformed JSON: 400", http("POST", g % "approval", I, '{"event": "rate", "payload": {'), 400)
    expect("answer with a body that is not an object: 400", http("POST", g % "approval", I, '["rate"]'), 400)
    expect("answer with JSON nested 200,000 deep: 400",
           http("POST", g % "approval", I, "[" * 200000 + "]" * 200000), 400)
    expect("... and serve still answers", http("GET", "/healthz"), 200)
    expect("a bearer that is not Bearer: 401",
           http("POST", g % "approval", None, {"event": "rate", "payload": {"score": 1}}, headers={"Authorization": "Basic " + I}), 401)
    check(snapshot("secret", rid) == before, "refused answers changed nothing in the store", "")
    # Order of the checks: the scope on the Gate (403) before the Gate's own answer (404).
    expect("reviewer at a Gate `nope` (not *.review, not open): 403",
           http("POST", g % "nope", tok["reviewer"], {"event": "accept", "payload": {}}), 403)
    expect("reviewer at a Gate `nope.review` (not open): 404",
           http("POST", g % "nope.review", tok["reviewer"], {"event": "accept", "payload": {}}), 404)
    expect("answerer at a Gate `nope`: 404", http("POST", g % "nope", tok["answer"], {"event": "accept", "payload": {}}), 404)
    expect("reader (no answer) at a Gate of an unknown run: 404",
           http("POST", "/runs/ffffffffffff/gates/approval/events", tok["read"], {"event": "accept", "payload": {}}), 404)
    check(snapshot("secret", rid) == before, "refused answers changed nothing in the store (2)", "")
    # The run's prefix of 4+ characters (not 3), and a Gate written percent-encoded.
    r = http("GET", "/runs/" + rid[:6], I)
    check(r.status == 200 and (r.json or {}).get("runId") == rid, "GET /runs/<6-char prefix>: the run", r.text[:200])
    r = http("GET", "/runs/" + rid[:4], I)
    check(r.status == 200 and (r.json or {}).get("runId") == rid, "GET /runs/<4-char prefix>: the run", r.text[:200])
    expect("GET /runs/<3-char prefix>: 404", http("GET", "/runs/" + rid[:3], I), 404)
    r = http("POST", "/runs/%s/gates/both%%2Ex%%2Ereview/events" % R["pct"], I, {"event": "accept", "payload": {}})
    expect("a Gate written percent-encoded (both%2Ex%2Ereview): 200", r, 200)
    # Applied: 200 {status, gates}; then the run ends, and an answer is 409.
    r = http("POST", g % "approval", I, {"event": "rate", "payload": {"score": 2}})
    expect("answer at approval: 200", r, 200)
    check(isinstance(r.json, dict) and set(r.json) == {"status", "gates", "open"} and r.json.get("status") == "waiting",
          "answer at approval: {status: waiting, gates, open}", r.text[:200])
    r = http("POST", g % "both.x.review", I, {"event": "accept", "payload": {}})
    check(r.status == 200 and r.json == {"status": "done", "gates": [], "open": 0},
          "the last answer: 200 {status: done, gates: [], open: 0}",
          "%d %s" % (r.status, r.text[:200]))
    check(cli_json("conformance_secret", "status", rid).get("status") == "done", "the run is stored done", "")
    before = snapshot("secret", rid)
    expect("answer after the run ended: 409", http("POST", g % "approval", I, {"event": "rate", "payload": {"score": 2}}), 409)
    expect("cancel after the run ended: 409", http("POST", "/runs/%s/events" % rid, I, {"type": "CANCEL"}), 409)
    check(snapshot("secret", rid) == before, "409s changed nothing in the store", "")
    # Cancel: another type 400, CANCEL 200, again 409.
    cid = R["cancel"]
    before = snapshot("secret", cid)
    expect("POST /runs/:id/events with another type: 400", http("POST", "/runs/%s/events" % cid, I, {"type": "STOP"}), 400)
    expect("POST /runs/:id/events with an unknown field: 400",
           http("POST", "/runs/%s/events" % cid, I, {"type": "CANCEL", "why": "x"}), 400)
    check(snapshot("secret", cid) == before, "refused cancels changed nothing", "")
    r = http("POST", "/runs/%s/events" % cid, I, {"type": "CANCEL"})
    check(r.status == 200 and r.json == {"status": "cancelled"}, "CANCEL: 200 {status: cancelled}", "%d %s" % (r.status, r.text[:200]))
    expect("CANCEL again: 409", http("POST", "/runs/%s/events" % cid, I, {"type": "CANCEL"}), 409)
    # Start: 201, refused input 400, unknown workflow 404; nothing stored for a refusal.
    n0 = len(cli_json("conformance_secret", "runs", "--all"))
    expect("start with a string that is not UTF-8: 400", http("POST", "/workflows/conformance_secret/runs", I,
           b'{"input": {"note": {"deep": {"secret": "a\xff\xfeb"}}}}'), 400)
    for what, body in [("a string field given a number", {"input": {"note": {"deep": {"secret": 5}}}}),
                       ("a missing field", {"input": {"note": {"deep": {}}}}),
                       ("an unknown input field", {"input": {"note": {"deep": {"secret": "s"}}, "extra": 1}}),
                       ("an unknown body field", {"input": {"note": {"deep": {"secret": "s"}}}, "inputs": {}}),
                       ("input that is not an object", {"input": [1]}),
                       ("malformed JSON", '{"input": ')]:
        expect("start with %s: 400" % what, http("POST", "/workflows/conformance_secret/runs", I, body), 400)
    check(len(cli_json("conformance_secret", "runs", "--all")) == n0, "refused starts stored no run", "")
    expect("start an unknown workflow: 404", http("POST", "/workflows/no_such/runs", I, {"input": {}}), 404)
    r = http("POST", "/workflows/conformance_secret/runs", I, {"input": {"note": {"deep": {"secret": "s"}}}})
    expect("start: 201", r, 201)
    nid = (r.json or {}).get("runId", "")
    check(cli_json("conformance_secret", "status", nid).get("status") == "waiting", "the started run is stored, waiting", r.text[:200])
    # Unknown things.
    expect("GET /runs/<unknown>: 404", http("GET", "/runs/ffffffffffff", I), 404)
    expect("GET /workflows/<unknown>/runs: 404", http("GET", "/workflows/no_such/runs"), 404)
    expect("the open feed of an unknown run: 404", http("GET", "/workflows/conformance_secret/runs/ffffffffffff/events"), 404)
    expect("the open feed of a run of another workflow: 404",
           http("GET", "/workflows/conformance_two_step/runs/%s/events" % R["main"]), 404)
    expect("answer at a Gate of an unknown run: 404",
           http("POST", "/runs/ffffffffffff/gates/approval/events", I, {"event": "rate", "payload": {"score": 1}}), 404)
    expect("an unknown route: 404", http("GET", "/nothing/here", I), 404)
    r = http("DELETE", "/runs/" + R["main"], I)
    check(r.status in (404, 405) and err_ok(r), "DELETE /runs/:id: 404 or 405 with a JSON error", "%d %s" % (r.status, r.text[:200]))
    # A body over 1 MiB: 413, and nothing stored.
    big = json.dumps({"input": {"note": {"deep": {"secret": "x" * (1 << 20)}}}})
    r = http("POST", "/workflows/conformance_secret/runs", I, big, timeout=10)
    expect("a body over 1 MiB: 413", r, 413)
    check(len(cli_json("conformance_secret", "runs", "--all")) == n0 + 1, "the 413 stored no run", "")
    # Headers over 16 KiB are cut off: no 2xx.
    r = http("GET", "/healthz", headers={"X-Big": "y" * (20 << 10)})
    check(r.status == 0 or r.status >= 400, "headers over 16 KiB are cut off", "%d %s" % (r.status, r.text[:100]))
    save_extra = load()
    save_extra["err_ended"] = rid
    save(save_extra)


# ---------------------------------------------------------------------------------------------
def feeds(st, tok):
    R = st["runs"]
    I = tok["instance"]
    rid = st["err_ended"]
    log = cli_json("conformance_secret", "log", rid)
    seqs = [e["seq"] for e in log]
    check(len(seqs) >= 5 and log[-1]["kind"] == "ended", "the ended run's stored feed ends with `ended`", repr(log)[:300])

    def well_formed(r, whole):
        bad = []
        for e in r.events:
            j = e.get("json") or {}
            if str(j.get("seq")) != e.get("id") or j.get("kind") != e.get("event"):
                bad.append("id/event do not match data: %r" % e)
            keys = {"seq", "kind", "time", "data", "line"} if whole else {"seq", "kind", "time", "observation"}
            if set(j) != keys:
                bad.append("data keys %s, wanted %s" % (sorted(j), sorted(keys)))
        return bad

    r = http("GET", "/runs/%s/events" % rid, I, stream=3)
    got = [e["json"]["seq"] for e in r.events if e.get("json")]
    check(r.status == 200 and "text/event-stream" in r.headers.get("content-type", ""), "whole feed: 200 text/event-stream",
          "%d %r" % (r.status, r.headers))
    check(got == seqs, "whole feed: every stored line, in order", "got %s, stored %s" % (got, seqs))
    b = well_formed(r, True)
    check(not b, "whole feed: id:/event:/data: with {seq, kind, time, data, line}", "; ".join(b[:3]))
    check([e.get("json") for e in r.events] == log, "whole feed: each line is the stored one (`log --json`)",
          "%r vs %r" % ([e.get("json") for e in r.events][:3], log[:3]))
    check(r.eof, "whole feed of an ended run: the stream ends after `ended`", "")
    n = seqs[2]
    for how, path, hdr in [("Last-Event-ID", "/runs/%s/events" % rid, {"Last-Event-ID": str(n)}),
                           ("?after=", "/runs/%s/events?after=%d" % (rid, n), None)]:
        r = http("GET", path, I, headers=hdr, stream=3)
        got = [e["json"]["seq"] for e in r.events if e.get("json")]
        check(got == [s for s in seqs if s > n], "whole feed with %s %d: resumes after it, no gap, no repeat" % (how, n),
              "got %s, stored %s" % (got, seqs))
    r = http("GET", "/workflows/conformance_secret/runs/%s/events" % rid, headers={"Last-Event-ID": str(n)}, stream=3)
    got = [e["json"]["seq"] for e in r.events if e.get("json")]
    check(got == [s for s in seqs if s > n], "open feed with Last-Event-ID %d: resumes after it" % n, "got %s, stored %s" % (got, seqs))
    r = http("GET", "/workflows/conformance_secret/runs/%s/events" % rid, stream=3)
    got = [e["json"]["seq"] for e in r.events if e.get("json")]
    check(got == seqs, "open feed: one event per stored line", "got %s, stored %s" % (got, seqs))
    b = well_formed(r, False)
    check(not b and "\"line\"" not in r.text and "\"data\"" not in r.text,
          "open feed: {seq, kind, time, observation}, no `line`, no `data`", "; ".join(b[:3]) or r.text[:300])
    check([e["json"]["kind"] for e in r.events if e.get("json")] == [e["kind"] for e in log],
          "open feed: the kinds of the stored lines", "")
    # Live: a stream on a waiting run gets the lines an answer adds, while it waits.
    live = R["live"]
    res = {}

    def reader(key, path, token):
        res[key] = http("GET", path, token, stream=2.5, timeout=8)

    ts = [threading.Thread(target=reader, args=("whole", "/runs/%s/events" % live, I)),
          threading.Thread(target=reader, args=("open", "/workflows/conformance_secret/runs/%s/events" % live, None))]
    for t in ts:
        t.start()
    time.sleep(0.8)
    a = http("POST", "/runs/%s/gates/approval/events" % live, I, {"event": "rate", "payload": {"score": 4}})
    time.sleep(0.4)
    b = http("POST", "/runs/%s/gates/both.x.review/events" % live, I, {"event": "accept", "payload": {}})
    for t in ts:
        t.join()
    log = cli_json("conformance_secret", "log", live)
    seqs = [e["seq"] for e in log]
    for k in ["whole", "open"]:
        r = res[k]
        got = [e["json"]["seq"] for e in r.events if e.get("json")]
        check(a.status == 200 and b.status == 200 and got == seqs and len(seqs) > 5 and r.eof and log[-1]["kind"] == "ended",
              "%s feed of a waiting run: sends the lines two answers add as they come, and ends after `ended`" % k,
              "answers %d %d; got %s, stored %s, stream ended %s" % (a.status, b.status, got, seqs, r.eof))


# ---------------------------------------------------------------------------------------------
def hooks(st, tok):
    I = tok["instance"]
    H = st["hooked"]

    def post(body, event=None, gh=None, delivery=None, gh_delivery=None, sig=True, secret=None, hook="forge"):
        b = json.dumps(body).encode()
        h = {}
        if event:
            h["X-Jr2-Event"] = event
        if gh:
            h["X-GitHub-Event"] = gh
        if delivery:
            h["X-Jr2-Delivery"] = delivery
        if gh_delivery:
            h["X-GitHub-Delivery"] = gh_delivery
        if sig is True:
            h["X-Hub-Signature-256"] = sign(b, secret)
        elif sig:
            h["X-Hub-Signature-256"] = sig
        return http("POST", "/hooks/" + hook, None, b, headers=h)

    def live_items():
        r = http("GET", "/workflows/conformance_hooked/runs")
        for x in (r.json or []):
            if x.get("runId") == H:
                return sorted(c.get("id") for c in x.get("children", []))
        return None

    def open_gates():
        return sorted(g["gate"] for g in cli_json("conformance_hooked", "status", H).get("gates", []))

    def tasks(*ids):
        with open("tasks.json", "w") as f:
            json.dump([{"id": i} for i in ids], f)

    check(open_gates() == ["T-1.review"] and live_items() == ["T-1"], "hooked run waits at T-1.review",
          "%r %r" % (open_gates(), live_items()))
    tasks("T-1", "T-2")
    body = {"action": "labeled", "issue": {"number": 1}}
    for what, kw in [("no signature", {"sig": False}), ("a wrong signature", {"secret": "not-the-secret"}),
                     ("a signature that is not sha256=", {"sig": "sha1=" + "0" * 40}),
                     ("a garbled signature", {"sig": "sha256=zz"})]:
        expect("hook with %s: 401" % what, post(body, event="issues.labeled", delivery="bad-" + what.replace(" ", "-"), **kw), 401)
    # A signature over other bytes (the body changed after signing).
    b = json.dumps(body).encode()
    r = http("POST", "/hooks/forge", None, b + b" ", headers={"X-Jr2-Event": "issues.labeled", "X-Hub-Signature-256": sign(b)})
    expect("hook whose body is not the signed one: 401", r, 401)
    check(open_gates() == ["T-1.review"], "refused deliveries changed nothing (no reread)", repr(open_gates()))
    r = http("GET", "/hooks/forge", I)
    check(r.status == 200 and r.json == [], "refused deliveries are not logged", r.text[:300])
    expect("a hook the callers file does not name: 404", post(body, event="issues.labeled", hook="nope"), 404)
    expect("GET /hooks/<unknown> with the instance token: 404", http("GET", "/hooks/nope", I), 404)
    # issues.labeled => reread: T-2 starts, and is stored before the answer.
    r1 = post(body, event="issues.labeled", delivery="d-1")
    j = r1.json or {}
    check(r1.status == 200 and j.get("verdict") == "reread" and j.get("reason") == ""
          and [x.get("run") for x in j.get("runs", [])] == [H] and j["runs"][0].get("verdict") == "reread",
          "X-Jr2-Event issues.labeled: 200 {verdict: reread, reason: \"\", runs: [{run, verdict: reread}]}",
          "%d %s" % (r1.status, r1.text[:300]))
    check(open_gates() == ["T-1.review", "T-2.review"], "the reread is stored when answered: T-2 started",
          repr(open_gates()))
    check(live_items() == ["T-1", "T-2"], "the open observation shows T-2 live", repr(live_items()))
    # The same delivery id again: its first answer, and nothing changes (T-3 would start on a reread).
    tasks("T-1", "T-2", "T-3")
    r2 = post(body, event="issues.labeled", delivery="d-1")
    check(r2.status == 200 and r2.json == r1.json, "the same X-Jr2-Delivery again: the same answer",
          "%d %s vs %s" % (r2.status, r2.text[:200], r1.text[:200]))
    check(open_gates() == ["T-1.review", "T-2.review"], "the same delivery again changes nothing (T-3 not started)",
          repr(open_gates()))
    # issues.closed => skip "closed".
    r = post({"action": "closed"}, event="issues.closed", delivery="d-2")
    j = r.json or {}
    check(r.status == 200 and j.get("verdict") == "skipped" and j.get("reason") == "closed",
          "X-Jr2-Event issues.closed: 200 {verdict: skipped, reason: closed}", "%d %s" % (r.status, r.text[:300]))
    check([x.get("run") for x in j.get("runs", [])] == [H],
          "the delivery went only to the runs that are a Pool over a Source with a `hook forge` clause",
          "runs: %r" % j.get("runs"))
    check(open_gates() == ["T-1.review", "T-2.review"], "a skip changes nothing", repr(open_gates()))
    # X-GitHub-Event + the body's action.
    r = post({"action": "labeled"}, gh="issues", gh_delivery="d-3")
    check(r.status == 200 and (r.json or {}).get("verdict") == "reread", "X-GitHub-Event issues + action labeled: reread",
          "%d %s" % (r.status, r.text[:300]))
    check(open_gates() == ["T-1.review", "T-2.review", "T-3.review"], "... and T-3 started", repr(open_gates()))
    r = post({"action": "closed"}, gh="issues")
    check(r.status == 200 and (r.json or {}).get("verdict") == "skipped" and (r.json or {}).get("reason") == "closed",
          "X-GitHub-Event issues + action closed, no delivery id: skipped, closed", "%d %s" % (r.status, r.text[:300]))
    b = json.dumps({"zen": "hi"}).encode()
    r = http("POST", "/hooks/forge", None, b, headers={"X-GitHub-Event": "ping", "X-GitHub-Delivery": "d-4",
                                                       "X-Hub-Signature-256": "sha256=" + sign(b)[7:].upper()})
    check(r.status == 200 and (r.json or {}).get("verdict") == "skipped" and (r.json or {}).get("reason"),
          "X-GitHub-Event ping, no action: skipped with a reason (no hook clause)", "%d %s" % (r.status, r.text[:300]))
    r = post({"action": "opened"}, event="issues.opened", delivery="d-5")
    check(r.status == 200 and (r.json or {}).get("verdict") == "skipped" and (r.json or {}).get("reason"),
          "an event key with no hook clause: skipped with a reason", "%d %s" % (r.status, r.text[:300]))
    expect("a delivery with no event header: 400", post({"action": "labeled"}, delivery="d-6"), 400)
    # The hook log: instance token only, newest first, the deliveries with an id, each once.
    r = http("GET", "/hooks/forge", I)
    j = r.json if isinstance(r.json, list) else []
    summary = "%d %r" % (r.status, [(x.get("delivery"), x.get("event"), x.get("time")) for x in j if isinstance(x, dict)])
    check(r.status == 200 and [x.get("delivery") for x in j] == ["d-5", "d-4", "d-3", "d-2", "d-1"],
          "GET /hooks/forge: the deliveries with an id, newest first, each once", summary)
    check(all(set(x) == {"delivery", "time", "event", "answer"} for x in j)
          and [x.get("event") for x in j] == ["issues.opened", "ping", "issues.labeled", "issues.closed", "issues.labeled"],
          "GET /hooks/forge: {delivery, time, event, answer} with each event key", summary)
    check(bool(j) and j[-1].get("answer") == r1.json, "the log keeps d-1's answer", r.text[:300])
    for c, want in [("all", 403), ("read", 403), ("none", 401), ("unknown", 401)]:
        expect("GET /hooks/forge as %s: %d" % (c, want), http("GET", "/hooks/forge", tok.get(c)), want)


# ---------------------------------------------------------------------------------------------
def driven(st, tok):
    """A run that another command drives (a `run` waiting for its process): a change is 503 with
    Retry-After: 1 and changes nothing; a read answers from the store."""
    I = tok["instance"]
    p = subprocess.Popen([os.path.join(DIR, "conformance_command"), "run", "--input", '{"argv": ["sleep", "2.5"]}'],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rid = None
    for _ in range(40):
        time.sleep(0.05)
        runs = cli_json("conformance_command", "runs")
        if isinstance(runs, list) and runs:
            rid = runs[0]["runId"]
            break
    if not check(rid is not None, "a run driven by `run` is in the store", ""):
        p.kill()
        return
    time.sleep(0.3)
    r = http("POST", "/runs/%s/events" % rid, I, {"type": "CANCEL"})
    expect("cancel a run another command drives: 503", r, 503)
    check(r.headers.get("retry-after") == "1" and "driven by another command" in r.text,
          "... with Retry-After: 1 and `driven by another command`", "%r %s" % (r.headers, r.text[:200]))
    r = http("GET", "/runs/" + rid, I)
    check(r.status == 200 and (r.json or {}).get("status") == "waiting", "a read of it answers from the store", r.text[:200])
    rc = p.wait(timeout=15)
    s = cli_json("conformance_command", "status", rid)
    check(rc == 0 and s.get("status") == "done", "the refused cancel changed nothing: the run ended done",
          "exit %s, %r" % (rc, s.get("status")))


# ---------------------------------------------------------------------------------------------
def slow_clients(n, res):
    """`n` clients that never finish their request: each is cut off (the server closes it)."""
    def one(i):
        s = socket.create_connection(("127.0.0.1", PORT))
        s.sendall(b"POST /workflows/conformance_secret/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        t0 = time.time()
        s.settimeout(16)
        try:
            while s.recv(4096):
                pass
        except OSError:
            pass
        res[i] = time.time() - t0
    ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    return ts


def main():
    st = load()
    tok = json.loads(E["TOKENS"])
    tok["unknown"] = "tok-unknown-" + hashlib.sha256(os.urandom(8)).hexdigest()
    tok["none"] = None
    slow = {}
    slow_threads = slow_clients(5, slow)
    # An open feed held 16 s on a waiting run: it gets a keep-alive comment (every 15 s).
    held = {}

    def hold():
        held["r"] = http("GET", "/workflows/conformance_secret/runs/%s/events" % st["runs"]["main"], stream=16.5, timeout=20)
    holder = threading.Thread(target=hold)
    holder.start()
    time.sleep(0.2)
    t0 = time.time()
    r = http("GET", "/healthz")
    check(r.status == 200 and time.time() - t0 < 1, "healthz answered at once while 5 clients never finish",
          "%d after %.1f s" % (r.status, time.time() - t0))
    # A run with a 2 s deadline, started over HTTP; checked at the end.
    t_dl = time.time()
    r = http("POST", "/workflows/conformance_deadline2/runs", tok["instance"], {"input": {}})
    dl = (r.json or {}).get("runId")
    check(r.status == 201 and (r.json or {}).get("status") == "waiting", "start conformance_deadline2 over HTTP: 201 waiting",
          "%d %s" % (r.status, r.text[:200]))
    if not dl:
        rc, so, se = cli("conformance_deadline2", "run", "--json")
        dl = json.loads(so or "{}").get("runId")
        t_dl = time.time()
    moved = {}

    def poll():  # polls the open band until the run's status changes
        while time.time() - t_dl < 8:
            r = http("GET", "/workflows/conformance_deadline2/runs")
            status = next((x.get("status") for x in (r.json or []) if x.get("runId") == dl), "missing")
            moved["seen"] = moved.get("seen", []) + [status]
            if status != "waiting":
                moved["status"], moved["after"] = status, time.time() - t_dl
                return
            time.sleep(0.1)
    poller = threading.Thread(target=poll)
    poller.start()
    for name, fn in [("table", table), ("secrets", secret_checks), ("errors", errors), ("feeds", feeds), ("hooks", hooks),
                     ("driven by another command", driven)]:
        out("--- %s" % name)
        try:
            fn(load(), tok)
        except Exception as e:  # a crash of one part is one failure, and the others go on
            import traceback
            traceback.print_exc(file=sys.stdout)
            check(False, "%s: no crash" % name, repr(e))
    # The deadline fired by itself: poll the open band until its status changes.
    out("--- deadline")
    poller.join()
    status, t_moved = moved.get("status", "waiting"), moved.get("after")
    out("deadline run %s: %s after %s s (polled: %d waiting)" % (dl, status, "%.1f" % t_moved if t_moved else "-",
                                                               moved.get("seen", []).count("waiting")))
    check(status == "done" and 1.8 <= t_moved <= 4 and moved["seen"][0] == "waiting",
          "a Gate's 2 s deadline fires under serve with nobody typing, on time", "status %s after %s" % (status, t_moved))
    r = http("GET", "/workflows/conformance_deadline2/runs/%s/events" % dl, stream=3)
    kinds = [e["json"]["kind"] for e in r.events if e.get("json")]
    check("timer" in kinds and kinds[-1:] == ["ended"], "the open feed says so (a `timer` line, then `ended`)", repr(kinds))
    # The slow clients: each cut off (about 10 s), while everything above was answered.
    out("--- slow clients")
    for t in slow_threads:
        t.join()
    cut = sorted(slow.values())
    out("slow clients cut off after %s s" % ", ".join("%.1f" % x for x in cut))
    check(len(cut) == 5 and all(8 <= x <= 14 for x in cut), "clients that never finish are cut off after about 10 s",
          repr(cut))
    holder.join()
    r = held["r"]
    comments = [l for l in r.text.replace("\r\n", "\n").split("\n") if l.startswith(":")]
    check(r.status == 200 and not r.eof and comments, "a feed held 16 s on a waiting run stays open, with a `:` keep-alive line",
          "status %d, ended %s, comment lines %d" % (r.status, r.eof, len(comments)))


if __name__ == "__main__":
    {"prepare": prepare, "main": main}[sys.argv[1]]()
PY

tally() {  # counts the "ok …" and "FAIL …" lines of a Python part; prints the rest
  while IFS= read -r line; do
    case "$line" in
      "ok "*) ok ;;
      "FAIL "*) fail "${line#FAIL }" ;;
      *) echo "$line" ;;
    esac
  done < "$1"
}
export PORT="$port" DIR="$dir" SECRET HOOK_SECRET
TOKENS=$(for c in "${!tok[@]}"; do printf '%s\n%s\n' "$c" "${tok[$c]}"; done |
  python3 -c 'import json,sys; l=sys.stdin.read().split("\n"); print(json.dumps(dict(zip(l[0::2], l[1::2]))))')

# 2. Runs made with the CLI before serve starts: serve takes them up.
python3 h.py prepare > prepare.out 2>&1 || fail "the prepare part crashed"
tally prepare.out

# 3. serve with the callers file.
"$runner" serve --listen "127.0.0.1:$port" --callers callers.json > serve.out 2> serve.err &
spid=$!
up=""
for _ in $(seq 1 100); do
  python3 -c 'import sys,urllib.request; urllib.request.urlopen("http://127.0.0.1:%s/healthz" % sys.argv[1], timeout=1)' "$port" \
    2>/dev/null && up=1 && break
  kill -0 "$spid" 2>/dev/null || break
  sleep 0.05
done
if [ -z "$up" ]; then
  fail "serve did not come up: $(head -5 serve.err)"
  echo "$passed passed, $failed failed"
  exit 1
fi
token_file="$JR2_STORE.token"
if [ -f "$token_file" ] && [ "$(stat -c %a "$token_file")" = 600 ]; then ok; else fail "no instance token file $token_file with mode 0600"; fi
itok=$(cat "$token_file" 2>/dev/null)
TOKENS=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d["instance"]=sys.argv[2]; print(json.dumps(d))' "$TOKENS" "$itok")
export TOKENS

# 4. The routes, the table, the secret, the errors, the feeds, the hooks, a deadline, slow clients.
python3 h.py main > main.out 2>&1 || fail "the HTTP part crashed"
tally main.out

# 5. No token and no hook secret is ever logged; SIGTERM stops serve with 0.
leaked=""
for t in "${tok[@]}" "$itok" "$HOOK_SECRET"; do [ -n "$t" ] && grep -qF -- "$t" serve.out serve.err && leaked=1; done
[ -z "$leaked" ] && ok || fail "a token or the hook secret is in serve's output"
# ... at once, while a client holds a feed open.
python3 -c 'import socket,sys,time; s=socket.create_connection(("127.0.0.1",int(sys.argv[1]))); s.sendall(("GET /workflows/conformance_secret/runs/%s/events HTTP/1.1\r\nHost: x\r\n\r\n" % sys.argv[2]).encode()); time.sleep(8)' \
  "$port" "$(python3 -c 'import json; print(json.load(open("state.json"))["runs"]["main"])')" &
holder=$!
sleep 0.5
t0=$(date +%s%N)
kill -TERM "$spid"
wait "$spid"
rc=$?
spid=""
ms=$((($(date +%s%N) - t0) / 1000000))
kill "$holder" 2>/dev/null
echo "SIGTERM with a feed open: exit $rc after $ms ms"
[ "$rc" -eq 0 ] && [ "$ms" -lt 3000 ] && ok || fail "serve stopped with $rc after $ms ms on SIGTERM: $(tail -3 serve.err)"

[ "$failed" -eq 0 ] || { echo "serve's stderr (last lines):"; tail -8 serve.err | sed 's/^/  /'; }
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
