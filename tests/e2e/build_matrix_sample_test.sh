#!/usr/bin/env bash
# The build-matrix sample as samples/build-matrix/README.md tells it, with the real `cmake` and
# `ctest` over the monorepo it ships (samples/build-matrix/repo): every package configured, built,
# tested and installed in dependency order; then `net` broken by a compile error: its item fails
# with the compiler's error on the feed, `cli` (which needs it) never starts, the others settle,
# and `failures: report` ends the run done (exit 0) with `status: "deadlocked"`. (~15 s)
# Usage: build_matrix_sample_test.sh BUILD_MATRIX_RUNNER SOURCE_DIR
set -u
matrix=$(realpath "$1")
src=$(realpath "$2")
passed=0
failed=0
source "$src/tests/e2e/lib.sh"
in_tmp_store
cp -r "$src/samples/build-matrix/repo" repo
cd repo || exit 1

start=$(date +%s)
"$matrix" run --input '{"jobs": 2}' --peak > out.json 2> err.txt
rc=$?
echo "a clean build of the five packages took $(( $(date +%s) - start )) s"
# jobs 2: never more than 2 builds, nor 2 of their commands, at once (jr2c's figures are 8, the
# bound of `cap: min(input.jobs, 8)`).
grep '^peak:' err.txt
grep -qE '^peak: workers [12] of 8, processes [12] of 8, runs 0 of 0 ' err.txt && ok ||
  fail "at most 2 builds at once with jobs 2: $(grep '^peak:' err.txt)"
[ "$rc" -eq 0 ] && ok || { fail "the clean build: exit $rc"; tail -20 err.txt; }
python3 - <<'PY' && ok || { fail "the clean build's output"; head -c 2000 out.json; }
import json
d = json.load(open("out.json"))
assert d["status"] == "drained", d["status"]
assert sorted(d["items"]) == ["cli", "core", "net", "plugins", "text"], sorted(d["items"])
assert d["failures"] == {}, d["failures"]
for k, v in d["items"].items():
    assert "100% tests passed" in v["tests"], (k, v["tests"])
PY
# In dependency order: each package settled before what needs it started.
python3 - <<'PY' && ok || { fail "the order of starts and settles"; grep -E 'started|settled' err.txt; }
import json, re
needs = {p["id"]: p["needs"] for p in json.load(open("packages.json"))}
events = [m.groups() for m in re.finditer(r"^build_matrix: (\w+) (started|settled)$", open("err.txt").read(), re.M)]
settled = set()
for pkg, what in events:
    if what == "started":
        assert set(needs[pkg]) <= settled, (pkg, "started before", set(needs[pkg]) - settled)
    else:
        settled.add(pkg)
assert settled == set(needs), settled
PY
_install/bin/cli "Nightly" "ci.example.com:8443" all five packages built > cli.txt 2>&1 && ok ||
  fail "the installed cli does not run: $(cat cli.txt)"
cat cli.txt
grep -q "core.configure | -- Configuring done" err.txt && ok || fail "cmake's output is not on the feed"

# Break `net`: a compile error. Start over from a clean tree (no build folders, nothing installed).
rm -rf _install packages/*/build
sed -i '0,/return/s//retur n/' packages/net/src/net.cpp
"$matrix" run --input '{"jobs": 2, "retries": 0}' > out.json 2> err.txt
rc=$?
[ "$rc" -eq 0 ] && ok || { fail "failures: report ends done: exit $rc"; tail -20 err.txt; }
python3 - <<'PY' && ok || { fail "the broken build's output"; head -c 3000 out.json; }
import json
d = json.load(open("out.json"))
assert d["status"] == "deadlocked", d["status"]
assert sorted(d["items"]) == ["core", "plugins", "text"], sorted(d["items"])
assert list(d["failures"]) == ["net"], d["failures"]
f = d["failures"]["net"]
assert f["reason"] == "`net` does not build: `cmake` exited 2", f["reason"]
assert "error:" in f["detail"]["stderr"] and "net.cpp" in f["detail"]["stderr"], f["detail"]
PY
grep -q "^build_matrix: net.build ! .*net.cpp:.*error: .*retur" err.txt && ok ||
  fail "the compiler's error is not on the feed"
grep -qE "^build_matrix: cli started" err.txt && fail "cli started though net failed" || ok
grep -q "^build_matrix: net failed: \`net\` does not build: \`cmake\` exited 2" err.txt && ok ||
  fail "the progress lines do not say net failed"

# Both runs replay through this build (docs/runtime.md#replay), each turn the same, and no cmake
# runs: the build folders made by the second run stay as they are, and nothing is installed.
rm -rf _install
for id in $("$matrix" runs --all | cut -d' ' -f1); do
  "$matrix" export "$id" > "trace-$id.jsonl"
  "$matrix" replay "trace-$id.jsonl" --json > replay.json 2> /dev/null
  python3 - "$id" <<'PY' && ok || fail "run $id does not replay: $(head -c 600 replay.json)"
import json, sys
r = json.load(open("replay.json"))
print(f"replay of {sys.argv[1]}: identical={r['identical']} turns={r['turns']} inputs={r['inputs']} held={r['held']} status={r['status']}")
assert r["identical"] and r["effectsRun"] == 0 and r["held"] > 0
PY
done
[ ! -e _install ] && ok || fail "a replay installed something: a cmake ran"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
