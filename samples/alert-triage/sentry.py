#!/usr/bin/env python3
"""Plays the monitoring service (Sentry) for the alert-triage sample: signs and sends its webhook
deliveries to a running `alerts serve`, and prints the answer to each.

    python3 samples/alert-triage/sentry.py [--url http://127.0.0.1:8470] [--alerts FILE] [--secret-env VAR]

The deliveries, in order, show each answer a push Source gives (samples/README.md):
  1. `issue.created` for each alert (built in, or the JSON list in --alerts): `held`, one
     `triage` run per alert;
  2. the first delivery sent again with the same delivery id: its first answer, nothing new;
  3. the first alert again under a new delivery id (Sentry fires twice): `existing`, naming the
     run that holds its key;
  4. `issue.resolved`: `skipped`, with the hook's reason;
  5. a delivery signed with a wrong secret: 401, nothing logged.

Each delivery is signed as the callers file's hook `sentry` expects: `X-Hub-Signature-256:
sha256=<HMAC-SHA256 of the body>` with the secret in $SENTRY_HOOK_SECRET, its event key in
`X-Jr2-Event` and its id in `X-Jr2-Delivery`. Sentry itself signs with `Sentry-Hook-Signature`
and names the event in `Sentry-Hook-Resource` plus the body's `action`: between Sentry and
`serve`, a relay (or a proxy rule) maps those headers; this script sends what the relay would.

Exit status: 0 when every answer is the one above, 1 otherwise (each surprise is printed).
"""
import argparse
import hashlib
import hmac
import json
import os
import sys
import urllib.error
import urllib.request
import uuid

BUILT_IN = [
    {"id": "SENTRY-4821", "title": "TypeError: cart.total is undefined", "level": "fatal",
     "culprit": "checkout/cart.js in computeTotal", "web_url": "https://sentry.example.com/issues/4821/"},
    {"id": "SENTRY-4822", "title": "Timeout calling payments API", "level": "error",
     "culprit": "payments/client.py in charge", "web_url": "https://sentry.example.com/issues/4822/"},
    {"id": "SENTRY-4823", "title": "Deprecated API used: v1/orders", "level": "warning",
     "culprit": None, "web_url": "https://sentry.example.com/issues/4823/"},
]


def send(url, secret, event, body, delivery):
    raw = json.dumps(body).encode()
    sig = "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
    req = urllib.request.Request(url + "/hooks/sentry", data=raw, method="POST", headers={
        "Content-Type": "application/json", "X-Jr2-Event": event, "X-Jr2-Delivery": delivery,
        "X-Hub-Signature-256": sig})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        text = e.read()
        try:
            return e.code, json.loads(text)
        except ValueError:
            return e.code, text.decode("utf-8", "replace")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:8470", help="where `alerts serve` listens")
    ap.add_argument("--alerts", help="a JSON list of Sentry issues ({id, title, level, culprit, web_url})")
    ap.add_argument("--secret-env", default="SENTRY_HOOK_SECRET",
                    help="the variable that holds the hook's secret (as in the callers file)")
    a = ap.parse_args()
    secret = os.environ.get(a.secret_env, "")
    if not secret:
        sys.exit("sentry.py: $%s is unset: export the hook's secret, as `serve` has it" % a.secret_env)
    issues = BUILT_IN
    if a.alerts:
        with open(a.alerts) as f:
            issues = json.load(f)
    url = a.url.rstrip("/")
    surprises = 0

    def expect(what, got, status, verdict):
        nonlocal surprises
        code, answer = got
        seen = answer.get("verdict") if isinstance(answer, dict) else None
        line = "%-44s -> %d %s" % (what, code, seen or (answer.get("error") if isinstance(answer, dict) else answer))
        if isinstance(answer, dict) and answer.get("run"):
            line += (" (held by the standing run %s)" if seen == "held" else " (run %s holds it)") % answer["run"]
        elif isinstance(answer, dict) and answer.get("reason") and seen in ("skipped", "existing"):
            line += ": " + answer["reason"]
        ok = code == status and (verdict is None or seen == verdict)
        if not ok:
            surprises += 1
            line += "   UNEXPECTED: wanted %d %s" % (status, verdict or "")
        print(line, flush=True)

    first = None
    for issue in issues:
        delivery = "sentry-" + uuid.uuid4().hex
        first = first or (issue, delivery)
        body = {"action": "created", "data": {"issue": issue}}
        expect("issue.created %s" % issue["id"], send(url, secret, "issue.created", body, delivery), 200, "held")
    issue, delivery = first
    body = {"action": "created", "data": {"issue": issue}}
    expect("the same delivery again", send(url, secret, "issue.created", body, delivery), 200, "held")
    expect("issue.created %s, a new delivery" % issue["id"],
           send(url, secret, "issue.created", body, "sentry-" + uuid.uuid4().hex), 200, "existing")
    expect("issue.resolved %s" % issue["id"],
           send(url, secret, "issue.resolved", {"action": "resolved", "data": {"issue": issue}},
                "sentry-" + uuid.uuid4().hex), 200, "skipped")
    expect("a delivery signed with another secret",
           send(url, secret + "-not", "issue.created", body, "sentry-" + uuid.uuid4().hex), 401, None)
    if surprises:
        print("sentry.py: %d answers were not the expected ones" % surprises, file=sys.stderr)
    return 1 if surprises else 0


if __name__ == "__main__":
    sys.exit(main())
