#!/usr/bin/env python3
"""A fake OpenAI-compatible model server on loopback, for the `--agents openai` tests and the
alert-triage sample.

    fake_model.py --port-file F --log L [--script S] [--rules R] [--default D]

It answers `POST /v1/chat/completions` from a script: a JSON list, one answer per request in
order (then `--default`, a JSON answer, for every request after; without one, a 500). With
`--rules`, a JSON list of {"contains": TEXT, "answer": ANSWER}, a request whose first user
message contains TEXT gets that rule's answer (the first rule that matches; requests that come at
once, from runs in parallel, each get their own). An answer is one of:

    {"tool": NAME, "arguments": {...} | "raw text"}   a tool call
    {"pick": "first" | "last", "arguments": {...}}    a tool call of the request's first/last tool
    {"text": "..."}                                   a message with no tool call
    {"status": 500, "body": "...", "retry_after": "1"}  an error status
    {"raw": "..."}                                    a 200 whose body is this text
    {"hang": SECONDS}                                 no answer for that long

Each request is appended to the log as one JSON line: {"authorization", "body"}. It writes its port
to the port file once it listens, and serves until killed.
"""
import argparse
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--script")
    ap.add_argument("--rules")
    ap.add_argument("--default")
    args = ap.parse_args()
    script = []
    if args.script:
        with open(args.script) as f:
            script = json.load(f)
    default = json.loads(args.default) if args.default else None
    rules = []
    if args.rules:
        with open(args.rules) as f:
            rules = json.load(f)
    state = {"n": 0}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):  # quiet
            pass

        def send(self, status, body, headers=()):
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            try:
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up first (a timeout the test asks for)

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length).decode("utf-8", "replace")
            with open(args.log, "a") as log:
                log.write(json.dumps({"path": self.path,
                                      "authorization": self.headers.get("Authorization"),
                                      "body": raw}) + "\n")
            if self.path != "/v1/chat/completions":
                return self.send(404, json.dumps({"error": "no route " + self.path}))
            n = state["n"]
            state["n"] += 1
            answer = script[n] if n < len(script) else default
            try:
                users = [m.get("content") or "" for m in json.loads(raw).get("messages", [])
                         if m.get("role") == "user"]
            except ValueError:
                users = []
            for rule in rules:
                if users and rule["contains"] in users[0]:
                    answer = rule["answer"]
                    break
            if answer is None:
                return self.send(500, json.dumps({"error": "the script has no answer %d" % (n + 1)}))
            if "hang" in answer:
                time.sleep(answer["hang"])
                return self.send(500, "{}")
            if "status" in answer:
                headers = [("Retry-After", answer["retry_after"])] if "retry_after" in answer else []
                return self.send(answer["status"], answer.get("body", "{}"), headers)
            if "raw" in answer:
                return self.send(200, answer["raw"])
            message = {"role": "assistant", "content": None}
            if "text" in answer:
                message["content"] = answer["text"]
            else:
                name = answer.get("tool")
                if "pick" in answer:
                    tools = json.loads(raw).get("tools", [])
                    tool = tools[0] if answer["pick"] == "first" else tools[-1]
                    name = tool["function"]["name"]
                arguments = answer.get("arguments", {})
                if not isinstance(arguments, str):
                    arguments = json.dumps(arguments)
                message["tool_calls"] = [{"id": "call_%d" % (n + 1), "type": "function",
                                          "function": {"name": name, "arguments": arguments}}]
            self.send(200, json.dumps({"id": "chatcmpl-%d" % (n + 1), "object": "chat.completion",
                                       "choices": [{"index": 0, "message": message,
                                                    "finish_reason": "tool_calls"}]}))

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.replace(args.port_file + ".tmp", args.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
