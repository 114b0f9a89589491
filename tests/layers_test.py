"""The runtime's layers hold (#31, docs/architecture.md#the-runtime): every include line of
runtime/ reaches only into its own layer or one below it. Prints the table of layers and what each
includes from where; exits 1 with each wrong include named.

Usage: layers_test.py SOURCE_DIR
"""
import os
import re
import sys

src = sys.argv[1] if len(sys.argv) > 1 else "."
runtime = os.path.join(src, "runtime")

# Bottom to top. A layer may include its own and those listed for it.
LAYERS = ["core", "effects", "run", "store", "host", "front"]
MAY = {
    "core": {"core"},
    "effects": {"core", "effects"},
    "run": {"core", "effects", "run"},
    "store": {"core", "store"},
    "host": {"core", "effects", "run", "store", "host"},
    "front": set(LAYERS),
}
# The public headers (include/jr2/, the installed package): each one's layer.
PUBLIC = {
    "value.h": "core", "pool_lines.h": "core", "json_value.h": "core", "meant.h": "core", "statechart.h": "core", "registry.h": "core", "runtime.h": "core",
    "stdlib.h": "effects",
    "run.h": "run", "source.h": "run",
    "store.h": "store", "sqlite_store.h": "store", "postgres_store.h": "store",
    "store_copy.h": "store",
    "host.h": "host", "saver.h": "host", "verbs.h": "host", "views.h": "host", "errors.h": "host", "auth.h": "host", "callers.h": "host",
    "runner.h": "front",
    "runner_main.h": "front",
}


def layer_of_include(name):
    if name.startswith("jr2/"):
        return PUBLIC.get(name[4:])
    head = name.split("/", 1)[0]
    return head if head in MAY else None


files = []
for base, _, names in os.walk(os.path.join(runtime, "src")):
    for n in names:
        if n.endswith((".cpp", ".h")):
            files.append(os.path.join(base, n))
for n in os.listdir(os.path.join(runtime, "include", "jr2")):
    files.append(os.path.join(runtime, "include", "jr2", n))

wrong, unknown = [], []
uses = {l: {} for l in LAYERS}
for path in sorted(files):
    rel = os.path.relpath(path, runtime)
    if rel.startswith("include"):
        layer = PUBLIC.get(os.path.basename(path))
        if layer is None:
            unknown.append("%s: a public header with no layer in layers_test.py's table" % rel)
            continue
    else:
        parts = rel.split(os.sep)
        layer = parts[1] if len(parts) > 2 else None
        if layer not in MAY:
            unknown.append("%s: not in a layer's folder of runtime/src" % rel)
            continue
    for lineno, line in enumerate(open(path, encoding="utf-8"), 1):
        m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
        if not m:
            continue
        target = layer_of_include(m.group(1))
        if target is None:
            unknown.append("%s:%d: includes \"%s\", which is in no layer" % (rel, lineno, m.group(1)))
            continue
        uses[layer][target] = uses[layer].get(target, 0) + 1
        if target not in MAY[layer]:
            wrong.append("%s:%d: %s includes \"%s\" of %s, a layer above it" %
                         (rel, lineno, layer, m.group(1), target))

print("layer    includes (count of include lines, by the layer they reach)")
for l in reversed(LAYERS):
    print("%-8s %s" % (l, ", ".join("%s %d" % (t, n) for t, n in sorted(uses[l].items(),
                                                                      key=lambda x: LAYERS.index(x[0])))))
for line in unknown + wrong:
    print("FAIL: " + line)
print("%d files read; %d includes upward, %d outside every layer" % (len(files), len(wrong), len(unknown)))
sys.exit(1 if wrong or unknown else 0)
