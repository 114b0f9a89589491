"""`jr2c lsp` measured as an editor uses it (#35, docs/performance.md#the-language-server).

One session is a real `jr2c lsp` process on a file (the 10,000-line generated program): the
client opens it, waits for its first diagnostics, then

- edits it (a character into a comment and out again, a new version each time) and times each
  edit's diagnostics: from the `didChange` written to the `publishDiagnostics` of that version;
- asks hover, definition and completion at names spread over the whole file, and times each
  answer (their 95th percentile is what the issue's goal reads);
- renames a type used all over the file (answer time, the edit not applied);
- reads the server's peak RSS (VmHWM) at the end.

Run alone it prints the figures of one session as JSON:

    python3 bench/lsp_bench.py JR2C FILE
"""

import json
import os
import re
import statistics
import subprocess
import sys
import time

KEYWORDS = set("""import type event agent source machine pool workflow state initial final parallel
on after always entry exit invoke gate as if fail output var extern dispatch of done error true
false null string int float bool duration json list map""".split())


class Server:
    def __init__(self, jr2c, root):
        self.proc = subprocess.Popen([jr2c, "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.next_id = 0
        self.request("initialize", {"rootUri": "file://" + root, "capabilities": {}})
        self.notify("initialized", {})

    def send(self, msg):
        body = json.dumps(msg).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def read(self):
        length = None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("jr2c lsp ended")
            line = line.strip()
            if not line:
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(self.proc.stdout.read(length))

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method, params):
        """The answer and its seconds (notifications before it are skipped)."""
        self.next_id += 1
        t0 = time.perf_counter()
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            msg = self.read()
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result"), time.perf_counter() - t0

    def diagnostics(self, version):
        """Waits for the diagnostics of `version`; returns them."""
        while True:
            msg = self.read()
            if msg.get("method") == "textDocument/publishDiagnostics" and \
                    msg["params"].get("version") == version:
                return msg["params"]["diagnostics"]

    def peak_rss(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        return 0

    def close(self):
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.proc.wait(timeout=10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


def positions(text, pattern, count):
    """`count` (line, character) positions spread evenly over the matches of `pattern` (group 1,
    or the match, at its second character). ASCII text: characters are UTF-16 units."""
    starts = [0]
    for i, c in enumerate(text):
        if c == "\n":
            starts.append(i + 1)
    found = [m.start(1) if m.groups() else m.start() for m in re.finditer(pattern, text)]
    found = [f for f in found]
    if not found:
        raise RuntimeError(f"no match of {pattern}")
    step = max(1, len(found) // count)
    out = []
    import bisect
    for f in found[::step][:count]:
        line = bisect.bisect_right(starts, f) - 1
        out.append({"line": line, "character": f - starts[line] + 1})
    return out


def p95(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]


def session(jr2c, path, queries=60, edits=5):
    """One session's figures: seconds (medians and 95th percentiles) and bytes."""
    path = os.path.abspath(path)
    with open(path) as f:
        text = f.read()
    uri = "file://" + path
    doc = {"uri": uri}
    server = Server(jr2c, os.path.dirname(path))
    try:
        t0 = time.perf_counter()
        server.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "jr2", "version": 1, "text": text}})
        first = server.diagnostics(1)
        opened = time.perf_counter() - t0
        if first:
            raise RuntimeError(f"{path} is not clean: {first[:3]}")
        # Edits: a character into the first comment and out again.
        edit_times = []
        version = 1
        for i in range(edits * 2):
            version += 1
            insert = i % 2 == 0
            change = {"range": {"start": {"line": 0, "character": 3},
                                "end": {"line": 0, "character": 3 if insert else 4}},
                      "text": "x" if insert else ""}
            t0 = time.perf_counter()
            server.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": version}, "contentChanges": [change]})
            server.diagnostics(version)
            edit_times.append(time.perf_counter() - t0)
        names = positions(text, r"(?<![A-Za-z0-9_.])([A-Za-z_][A-Za-z0-9_]*)", queries * 4)
        names = [p for p in names
                 if re.match(r"[A-Za-z_]\w*", text.split("\n")[p["line"]][p["character"] - 1:])
                 and re.match(r"[A-Za-z_]\w*",
                              text.split("\n")[p["line"]][p["character"] - 1:]).group(0)
                 not in KEYWORDS][:queries]
        hover, definition, completion = [], [], []
        answered = {"hover": 0, "definition": 0, "completion": 0}
        for p in names:
            r, s = server.request("textDocument/hover", {"textDocument": doc, "position": p})
            hover.append(s)
            answered["hover"] += r is not None
            r, s = server.request("textDocument/definition", {"textDocument": doc, "position": p})
            definition.append(s)
            answered["definition"] += r is not None
        # Completion after a `.` and after `-> `, where an editor asks it.
        spots = positions(text, r"[a-z_]\.([a-z_])", queries // 2) + \
            positions(text, r"-> ([a-z_])", queries // 2)
        for p in spots:
            p = {"line": p["line"], "character": p["character"] - 1}
            r, s = server.request("textDocument/completion", {"textDocument": doc, "position": p})
            completion.append(s)
            answered["completion"] += bool(r)
        # Rename the most used type.
        counts = {}
        for m in re.finditer(r"\b(Item_\d+)\b", text):
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
        most = max(counts, key=counts.get)
        at = positions(text, r"type (" + most + r")\b", 1)[0]
        renames, edited = [], 0
        for _ in range(3):
            r, s = server.request("textDocument/rename",
                                  {"textDocument": doc, "position": at, "newName": most + "_x"})
            renames.append(s)
            edited = sum(len(v) for v in r["changes"].values())
        rss = server.peak_rss()
    finally:
        server.close()
    return {
        "open_s": opened,
        "diagnostics_s": statistics.median(edit_times),
        "diagnostics_max_s": max(edit_times),
        "hover_p95_s": p95(hover),
        "definition_p95_s": p95(definition),
        "completion_p95_s": p95(completion),
        "rename_s": statistics.median(renames),
        "rename_edits": edited,
        "answered": answered,
        "asked": {"hover": len(hover), "definition": len(definition),
                  "completion": len(completion)},
        "rss_bytes": rss,
    }


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: lsp_bench.py JR2C FILE")
    print(json.dumps(session(sys.argv[1], sys.argv[2]), indent=2))
