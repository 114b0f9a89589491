#!/usr/bin/env python3
"""The web console's HTTP side (#34, docs/console.md), against a real `serve`:

- /ui/ and its assets come from the binary with their types, the page's Content-Security-Policy
  (no inline script or style, no frame, requests to serve only) and nosniff; the page holds no
  inline script, style or handler, and names only assets serve has; the assets' size compressed;
- anything else under /ui/ is a JSON 404, any method but GET a 405, and nothing is changed;
- the API's answers carry a policy too (JSON that can never run as a page);
- the console has no authority of its own: every route it calls refuses no token (401) and a
  token without the scope (403) as before, a token for one workflow sees nothing of another;
- who answered: a Gate answered over HTTP puts `answered` on the run's feed with the Caller's
  name, the event and its payload, and a refused answer puts nothing there;
- GET /caller tells each token its own scopes (and nothing of another workflow); GET /runs pages
  by a cursor with filters, refuses a bad parameter with a 400 that names it, and a filter on a
  workflow the token does not read with a 403; the feed's stream carries the guard headers;
- GET /workflows/:name/picture is the workflow's SVG for a token that reads or answers there, and
  `?of=worker` a Pool's worker machine's; GET /caller names the pictures each workflow has;
- GET /runs?follow=true streams a `changed` event for each run that changes, from now or from
  the cursor in Last-Event-ID, within the token's workflows and the filters.

    console_http.py RUNNER_DIR TMP
"""
import gzip
import hashlib
import http.client
import json
import os
import re
import secrets
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_lib import check, start_serve  # noqa: E402

POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
          "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


def request(port, method, path, token=None, body=None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    h = dict(headers or {})
    if token:
        h["Authorization"] = "Bearer " + token
    data = None
    if body is not None:
        data = body if isinstance(body, (bytes, str)) else json.dumps(body)
        h["Content-Type"] = "application/json"
    conn.request(method, path, body=data, headers=h)
    res = conn.getresponse()
    raw = res.read()
    conn.close()
    return res.status, {k.lower(): v for k, v in res.getheaders()}, raw


def follow(port, path, token, want, headers=None, timeout=15, during=None):
    """Reads the event stream at `path` until `want(events)` holds or `timeout` passes; calls
    `during()` once the stream's head came. Gives (status, events), each event a dict with its
    `id`, `event` and parsed `data`."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = dict(headers or {})
    h["Authorization"] = "Bearer " + token
    conn.request("GET", path, headers=h)
    res = conn.getresponse()
    events = []
    if res.status != 200:
        res.read()
        conn.close()
        return res.status, events
    if during:
        during()
    deadline = time.time() + timeout
    cur = {}
    try:
        while time.time() < deadline and not want(events):
            line = res.fp.readline()
            if not line:
                break
            line = line.decode().rstrip("\n")
            if line == "":
                if "data" in cur:
                    cur["data"] = json.loads(cur["data"])
                    events.append(cur)
                cur = {}
            elif not line.startswith(":") and ": " in line:
                k, v = line.split(": ", 1)
                cur[k] = v
    except OSError:
        pass
    conn.close()
    return 200, events


def js(raw):
    try:
        return json.loads(raw)
    except ValueError:
        return None


def main():
    runner_dir, tmp = sys.argv[1], sys.argv[2]
    runner = os.path.join(runner_dir, "conformance_tickets")
    os.chdir(tmp)
    store = os.path.join(tmp, "store.db")
    with open("one.json", "w") as f:
        json.dump([{"id": "A"}, {"id": "B"}], f)
    tokens = {n: secrets.token_hex(16) for n in ("reviewer", "reader", "stranger", "looker")}
    sha = {n: hashlib.sha256(t.encode()).hexdigest() for n, t in tokens.items()}
    callers = {"callers": [
        {"name": "reviewer", "token_sha256": sha["reviewer"],
         "scopes": {"conformance_tickets": ["start", "read", "answer", "cancel"]}},
        {"name": "looker", "token_sha256": sha["looker"],
         "scopes": {"conformance_tickets": ["read"]}},
        {"name": "reader", "token_sha256": sha["reader"],
         "scopes": {"conformance_tickets": ["answer"]}, "gates": ["A.*"]},
        {"name": "stranger", "token_sha256": sha["stranger"],
         "scopes": {"conformance_secret": ["start", "read", "answer", "cancel"]}}]}
    with open("callers.json", "w") as f:
        json.dump(callers, f)
    env = dict(os.environ, JR2_STORE=store)
    _, port, _ = start_serve(runner, env, tmp, "console", ["--callers", "callers.json"])

    # The page and its assets.
    status, h, page = request(port, "GET", "/ui/")
    check(status == 200 and h.get("content-type", "").startswith("text/html"),
          "GET /ui/ is the page (%d, %s)" % (status, h.get("content-type")))
    check(h.get("content-security-policy") == POLICY,
          "the page's policy: %s" % h.get("content-security-policy"))
    check("unsafe-inline" not in h.get("content-security-policy", "") and
          "unsafe-eval" not in h.get("content-security-policy", ""),
          "the policy allows no inline script and no eval")
    check(h.get("x-content-type-options") == "nosniff" and h.get("x-frame-options") == "DENY" and
          h.get("referrer-policy") == "no-referrer", "nosniff, no frame, no referrer")
    text = page.decode()
    scripts = re.findall(r"<script\b[^>]*>(.*?)</script>", text, flags=re.S)
    check(scripts and all(s.strip() == "" for s in scripts) and
          all("src=" in tag for tag in re.findall(r"<script\b[^>]*>", text)),
          "every script of the page is a file, none inline (%d)" % len(scripts))
    check(not re.search(r"\son[a-z]+\s*=", text) and "style=" not in text and
          "<style" not in text, "no inline handler or style in the page")
    assets = re.findall(r'(?:src|href)="(/ui/[^"]+)"', text)
    sizes = {}
    for a in ["/ui/"] + assets:
        status, h, raw = request(port, "GET", a)
        sizes[a] = len(gzip.compress(raw, 9))
        check(status == 200 and h.get("content-security-policy") == POLICY,
              "GET %s: %d, %s" % (a, status, h.get("content-type")))
        if a.endswith(".js"):
            check(h.get("content-type", "").startswith("text/javascript"), a + " is JavaScript")
            src = raw.decode()
            check("innerHTML" not in src and "outerHTML" not in src and "eval(" not in src and
                  "document.write" not in src and "insertAdjacentHTML" not in src,
                  a + " puts nothing into the page as markup")
            check("localStorage" not in src, a + " keeps nothing in localStorage")
    status, _, same = request(port, "GET", "/ui/index.html")
    check(status == 200 and same == page, "/ui/index.html is the page")
    total = sum(sizes.values())
    print("console: %d assets, %d bytes compressed (goal <= 300 KB)" % (len(sizes), total))
    check(total <= 300 * 1024, "the assets are at most 300 KB compressed (%d bytes)" % total)

    for path in ("/ui/nope.js", "/ui/../store.db", "/ui/a/b", "/ui/%2e%2e%2fstore.db",
                 "/ui/console.js%00.html", "/ui/\x1b[31mred"):
        status, h, raw = request(port, "GET", path.replace("\x1b", "%1b"))
        body = js(raw) or {}
        check(status == 404 and "error" in body and "\x1b" not in raw.decode(errors="replace"),
              "GET %r: 404 with one line (%d)" % (path, status))
    for method in ("POST", "PUT", "DELETE"):
        status, _, raw = request(port, method, "/ui/", body={"x": 1})
        check(status == 405 and "error" in (js(raw) or {}), "%s /ui/: 405 (%d)" % (method, status))

    # The API carries a policy too.
    status, h, _ = request(port, "GET", "/healthz")
    check(status == 200 and h.get("content-security-policy") == "default-src 'none'; "
          "frame-ancestors 'none'" and h.get("x-content-type-options") == "nosniff",
          "an API answer carries its policy and nosniff")

    # Start a run as the console does, and answer a Gate.
    status, _, raw = request(port, "POST", "/workflows/conformance_tickets/runs",
                             tokens["reviewer"], {"input": {"backlog": "one.json"}})
    run = (js(raw) or {}).get("runId", "")
    check(status == 201 and run, "a run started (%d)" % status)
    for _ in range(100):
        status, _, raw = request(port, "GET", "/runs/" + run, tokens["reviewer"])
        gates = [g["gate"] for g in (js(raw) or {}).get("gates", [])]
        if "A.review" in gates and "B.review" in gates:
            break
        time.sleep(0.05)
    check("A.review" in gates, "its Gates are open: %s" % gates)

    # The routes the console calls, refused as the API refuses them.
    for path in ("/runs", "/runs/" + run, "/runs/" + run + "/events?follow=false", "/gates"):
        status, _, _ = request(port, "GET", path)
        check(status == 401, "GET %s without a token: 401 (%d)" % (path, status))
    status, _, raw = request(port, "GET", "/runs", tokens["stranger"])
    listed = [r.get("runId") for r in (js(raw) or [])] if status == 200 else []
    check(run not in listed, "a token for another workflow lists none of this one's runs (%d)" %
          status)
    status, _, _ = request(port, "GET", "/runs/" + run, tokens["stranger"])
    check(status == 403, "nor reads it (%d)" % status)
    status, _, _ = request(port, "POST", "/runs/%s/gates/A.review/events" % run, tokens["looker"],
                           {"event": "approve", "payload": {}})
    check(status == 403, "a token without `answer` cannot answer, whatever page sent it (%d)" %
          status)
    status, _, raw = request(port, "GET", "/runs/" + run, tokens["reader"])
    seen = [g["gate"] for g in (js(raw) or {}).get("gates", [])]
    check(status == 200 and seen == ["A.review"], "an answer-only token sees its Gates alone: %s"
          % seen)
    status, _, _ = request(port, "POST", "/runs/%s/gates/B.review/events" % run, tokens["reader"],
                           {"event": "approve", "payload": {}})
    check(status == 403, "and cannot answer another Gate (%d)" % status)

    # A refused payload changes nothing; a good one is on the feed with who sent it.
    status, _, raw = request(port, "POST", "/runs/%s/gates/A.review/events" % run,
                             tokens["reader"], {"event": "reject", "payload": {}})
    check(status == 400 and "`reason`" in (js(raw) or {}).get("error", ""),
          "a payload refused names its field: %s" % (js(raw) or {}).get("error"))
    status, _, raw = request(port, "POST", "/runs/%s/gates/A.review/events" % run,
                             tokens["reader"], {"event": "aprove", "payload": {}})
    check(status == 400 and "did you mean `approve`?" in (js(raw) or {}).get("error", ""),
          "a misspelled event: 400 with the event meant (%s)" % (js(raw) or {}).get("error"))
    hostile = "<img src=x onerror=alert(1)>\x1b[2J"
    status, _, raw = request(port, "POST", "/runs/%s/gates/A.review/events" % run,
                             tokens["reader"], {"event": "reject", "payload": {"reason": hostile}})
    check(status == 200, "the answer is taken (%d %s)" % (status, raw[:120]))
    status, _, raw = request(port, "GET", "/runs/%s/events?follow=false" % run, tokens["reviewer"])
    events = [json.loads(line[6:]) for line in raw.decode().splitlines()
              if line.startswith("data: ")]
    answered = [e for e in events if e.get("kind") == "answered"]
    check(len(answered) == 1, "one `answered` on the feed (%d)" % len(answered))
    if answered:
        data = answered[0].get("data", {})
        check(data == {"gate": "A.review", "event": "reject", "payload": {"reason": hostile},
                       "by": "reader"}, "who, what and with what: %s" % json.dumps(data))
        check(answered[0].get("line") == "A.review answered reject by reader",
              "its line: %r" % answered[0].get("line"))
        kinds = [e["kind"] for e in events]
        check(kinds.index("answered") < len(kinds) - 1 and
              kinds.index("answered") < max(i for i, k in enumerate(kinds) if k == "failed"),
              "it comes before what the answer did: %s" % kinds)


    # Who the token is: its scopes per workflow, nothing of another's.
    status, _, _ = request(port, "GET", "/caller")
    check(status == 401, "GET /caller without a token: 401 (%d)" % status)
    for name, want in (("reviewer", ["start", "read", "answer", "cancel"]), ("looker", ["read"]),
                       ("reader", ["answer"])):
        status, _, raw = request(port, "GET", "/caller", tokens[name])
        me = js(raw) or {}
        wfs = me.get("workflows", {})
        check(status == 200 and me.get("name") == name and list(wfs) == ["conformance_tickets"]
              and wfs["conformance_tickets"]["scopes"] == want,
              "GET /caller as %s: its scopes alone (%d %s)" % (name, status, raw[:200]))
    status, _, raw = request(port, "GET", "/caller", tokens["reader"])
    check((js(raw) or {}).get("gates") == ["A.*"], "and the Gates it may answer")
    status, _, raw = request(port, "GET", "/caller", tokens["reviewer"])
    schema = (js(raw) or {}).get("workflows", {}).get("conformance_tickets", {}).get("input", {})
    check(schema.get("properties", {}).get("backlog", {}).get("type") == "string" and
          schema.get("required") == ["backlog"], "a Caller that may start it gets the input's "
          "JSON Schema: %s" % json.dumps(schema)[:200])
    status, _, raw = request(port, "GET", "/caller", tokens["looker"])
    check("input" not in (js(raw) or {}).get("workflows", {}).get("conformance_tickets", {}),
          "one that may not start it does not")

    # A page of runs: newest first, a cursor, filters; every bad parameter a 400 naming it.
    for _ in range(3):
        request(port, "POST", "/workflows/conformance_tickets/runs", tokens["reviewer"],
                {"input": {"backlog": "one.json"}})
    ids, after, pages = [], "", 0
    while pages < 10:
        status, _, raw = request(port, "GET", "/runs?limit=2" + ("&after=" + after if after else ""),
                                 tokens["reviewer"])
        doc = js(raw) or {}
        pages += 1
        ids += [r["runId"] for r in doc.get("runs", [])]
        after = doc.get("next") or ""
        if not after:
            break
    status, _, raw = request(port, "GET", "/runs", tokens["reviewer"])
    whole = [r["runId"] for r in (js(raw) or [])]
    check(sorted(ids) == sorted(whole) and len(ids) == len(set(ids)) == 4 and pages == 2,
          "pages of 2 give the 4 runs once each (%s in %d pages)" % (ids, pages))
    status, _, raw = request(port, "GET", "/runs?limit=50", tokens["reviewer"])
    doc = js(raw) or {}
    check(doc.get("counts", {}).get("conformance_tickets", {}).get("waiting") == 4 and
          doc.get("next") is None and list(doc.get("counts", {})) == ["conformance_tickets"],
          "the counts are the token's workflows' (%s)" % doc.get("counts"))
    status, _, raw = request(port, "GET", "/runs?limit=50&q=" + run[:6], tokens["reviewer"])
    check([r["runId"] for r in (js(raw) or {}).get("runs", [])] == [run],
          "q finds a run by the start of its id")
    status, _, raw = request(port, "GET", "/runs?limit=50&status=done", tokens["reviewer"])
    check(status == 200 and (js(raw) or {}).get("runs") == [], "a status filter (%d)" % status)
    for query, part in (("limit=0", "`limit`"), ("limit=501", "`limit`"), ("limit=x", "`limit`"),
                        ("limit=5&after=nope", "`after`"), ("status=sleeping", "sleeping"),
                        ("limit=5&sort=id", "`sort`"), ("q=" + "x" * 300, "`q`")):
        status, _, raw = request(port, "GET", "/runs?" + query, tokens["reviewer"])
        err = (js(raw) or {}).get("error", "")
        check(status == 400 and part in err and "\n" not in err,
              "GET /runs?%s: 400 naming %s (%d %s)" % (query[:30], part, status, err[:80]))
    status, _, raw = request(port, "GET", "/runs?workflow=conformance_tickets", tokens["stranger"])
    check(status == 403, "a filter on a workflow the token does not read: 403 (%d)" % status)
    status, _, raw = request(port, "GET", "/runs?limit=5", tokens["stranger"])
    check(status == 200 and (js(raw) or {}).get("runs") == [] and
          (js(raw) or {}).get("counts") == {}, "and its own page shows none of them")
    status, _, raw = request(port, "GET", "/runs?limit=5", tokens["reader"])
    check(status == 403, "an answer-only token reads no page (%d)" % status)

    # The instance token reads every workflow: the standing ones' heads come with the page.
    with open(store + ".token") as f:
        instance = f.read().strip()
    status, _, raw = request(port, "GET", "/runs?limit=1", instance)
    heads = (js(raw) or {}).get("heads", {})
    check(status == 200 and heads and all(h.get("state") in ("new", "live", "waiting", "paused")
                                          for h in heads.values()),
          "each standing workflow's head comes with the page: %s" %
          {w: h.get("state") for w, h in heads.items()})
    status, _, raw = request(port, "GET", "/caller", instance)
    standing = [w for w, v in (js(raw) or {}).get("workflows", {}).items() if v.get("standing")]
    check(sorted(standing) == sorted(heads), "and GET /caller names the same workflows standing")

    # The machine's picture: SVG laid out when the runner was built, for a token that reads or
    # answers there, under the API's policy (nothing in it could run if opened by itself).
    pic = "/workflows/conformance_tickets/picture"
    status, h, raw = request(port, "GET", pic, tokens["reviewer"])
    check(status == 200 and h.get("content-type") == "image/svg+xml" and b"<svg" in raw and
          h.get("content-security-policy") == "default-src 'none'; frame-ancestors 'none'",
          "GET %s: the SVG, under the API's policy (%d, %d bytes)" % (pic, status, len(raw)))
    status, _, _ = request(port, "GET", pic, tokens["reader"])
    check(status == 200, "an answer-only token sees the picture too (%d)" % status)
    status, _, _ = request(port, "GET", pic)
    check(status == 401, "without a token: 401 (%d)" % status)
    status, _, _ = request(port, "GET", pic, tokens["stranger"])
    check(status == 403, "a token for another workflow: 403 (%d)" % status)
    status, _, raw = request(port, "GET", "/workflows/nope/picture", tokens["reviewer"])
    check(status == 404 and "nope" in (js(raw) or {}).get("error", ""), "no such workflow: 404")
    status, _, _ = request(port, "POST", pic, tokens["reviewer"], {})
    check(status == 405, "POST: 405 (%d)" % status)
    status, _, raw = request(port, "GET", "/runs/" + run, tokens["reviewer"])
    check(isinstance((js(raw) or {}).get("value"), list), "GET /runs/:id gives the active states")

    # A Pool's worker machine has a picture of its own; GET /caller names what each workflow has.
    status, h, raw = request(port, "GET", pic + "?of=worker", tokens["reviewer"])
    check(status == 200 and h.get("content-type") == "image/svg+xml" and b"<svg" in raw and
          raw != request(port, "GET", pic, tokens["reviewer"])[2],
          "GET %s?of=worker: the worker's own SVG (%d, %d bytes)" % (pic, status, len(raw)))
    for query, part in (("?of=pool", "`of`"), ("?size=2", "`size`"), ("?of=%1b[31m", "`of`")):
        status, _, raw = request(port, "GET", pic + query, tokens["reviewer"])
        err = (js(raw) or {}).get("error", "")
        check(status == 400 and part in err and "\x1b" not in err,
              "GET picture%s: 400 naming %s (%d %s)" % (query, part, status, err[:80]))
    status, _, raw = request(port, "GET", pic + "?of=worker", tokens["stranger"])
    check(status == 403, "another workflow's token gets no worker picture (%d)" % status)
    status, _, raw = request(port, "GET", "/caller", instance)
    every = (js(raw) or {}).get("workflows", {})
    check(every.get("conformance_tickets", {}).get("pictures") == ["workflow", "worker"],
          "GET /caller: conformance_tickets has both pictures (%s)" %
          every.get("conformance_tickets", {}).get("pictures"))
    machines = [w for w, v in every.items() if v.get("pictures") == ["workflow"]]
    check(machines, "and some workflows have only their own (%s)" % machines[:5])
    if machines:
        status, _, raw = request(port, "GET", "/workflows/%s/picture?of=worker" % machines[0],
                                 instance)
        check(status == 404 and "worker" in (js(raw) or {}).get("error", ""),
              "?of=worker of %s, which has no worker machine: 404 saying so (%d)" %
              (machines[0], status))
    status, _, raw = request(port, "GET", "/runs/" + run, tokens["reviewer"])
    kids = (js(raw) or {}).get("children", [])
    check(kids and all(k.get("kind") == "machine" and isinstance(k.get("value"), list) and
                       k.get("id") for k in kids),
          "GET /runs/:id: the Pool's live workers, each a machine with its active states (%s)" %
          json.dumps(kids)[:200])

    # The runs list follows the changes: a `changed` event for each run that changes.
    started = []

    def start_one():
        status, _, raw = request(port, "POST", "/workflows/conformance_tickets/runs",
                                 tokens["reviewer"], {"input": {"backlog": "one.json"}})
        started.append((js(raw) or {}).get("runId"))

    t0 = time.time()
    status, events = follow(
        port, "/runs?follow=true&workflow=conformance_tickets", tokens["reviewer"],
        lambda evs: any(e["data"].get("runId") in started for e in evs), during=start_one)
    took = time.time() - t0
    mine = [e for e in events if e["data"].get("runId") in started]
    check(status == 200 and mine and mine[0]["event"] == "changed" and
          mine[0]["data"].get("workflow") == "conformance_tickets" and
          mine[0]["id"] == "%d.%s" % (mine[0]["data"].get("updated", 0), started[0]),
          "GET /runs?follow=true: the run started after it opened comes as `changed` with its "
          "summary and a cursor, in %.1f s (%s)" % (took, [e.get("data") for e in events][:3]))
    check(all(e["data"].get("runId") in started for e in events),
          "and nothing from before it opened (%d events)" % len(events))
    if mine:
        # From a cursor: what changed after it, oldest first.
        status, _, raw = request(port, "GET", "/runs?limit=3", tokens["reviewer"])
        page = (js(raw) or {}).get("runs", [])
        oldest = page[-1]
        cursor = "%d.%s" % (oldest["updated"], oldest["runId"])
        status, events = follow(port, "/runs?follow=true", tokens["reviewer"],
                                lambda evs: len(evs) >= 2, headers={"Last-Event-ID": cursor})
        got = [e["data"]["runId"] for e in events]
        check(got == [r["runId"] for r in reversed(page[:-1])],
              "Last-Event-ID: the changes after that cursor, oldest first (%s)" % got)
    for query, headers, code, part in (
            ("follow=maybe", None, 400, "`follow`"),
            ("follow=true", {"Last-Event-ID": "not-a-cursor"}, 400, "Last-Event-ID"),
            ("follow=true&workflow=conformance_tickets", None, 403, "")):
        who = tokens["stranger"] if code == 403 else tokens["reviewer"]
        status, _, raw = request(port, "GET", "/runs?" + query, who, headers=headers)
        check(status == code and part in (js(raw) or {}).get("error", ""),
              "GET /runs?%s: %d (%d)" % (query, code, status))
    status, _, raw = request(port, "GET", "/runs?status=error", tokens["reviewer"])
    check(status == 200, "status=error is a status a run can have (%d %s)" % (status, raw[:120]))
    status, events = follow(port, "/runs?follow=true", tokens["stranger"],
                            lambda evs: False, timeout=3, during=start_one)
    check(status == 200 and events == [],
          "a token for another workflow follows none of its changes (%d events)" % len(events))

    # The feed's stream carries the guard headers every other answer carries.
    status, h, _ = request(port, "GET", "/runs/%s/events?follow=false" % run, tokens["reviewer"])
    check(status == 200 and h.get("content-type", "").startswith("text/event-stream") and
          h.get("content-security-policy") == "default-src 'none'; frame-ancestors 'none'" and
          h.get("x-content-type-options") == "nosniff" and h.get("x-frame-options") == "DENY",
          "the event stream carries its policy, nosniff and no frame (%s)" % h)


if __name__ == "__main__":
    main()
