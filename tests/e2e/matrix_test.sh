#!/usr/bin/env bash
# The build_matrix runner end to end, with stand-ins for `cmake` and `ctest` on PATH: a package
# that does not build is a Failure of its item only, what needs it never starts, and with
# `failures: report` the run ends done (exit 0) with the failures and `status: "deadlocked"`
# in its output. Without `report` semantics the same story would exit 1.
# Usage: matrix_test.sh BUILD_MATRIX_RUNNER
set -u
matrix=$(realpath "$1")
passed=0
failed=0
source "$(dirname "$0")/lib.sh"
in_tmp_store

mkdir -p bin packages/core packages/json packages/http packages/cli packages/plugins docs
cat > bin/cmake <<'TOOL'
#!/bin/sh
# `cmake --build`: a package with a file BROKEN does not build (configure and install pass).
if [ "$1" = --build ] && [ -e BROKEN ]; then echo "error: $(cat BROKEN)" >&2; exit 2; fi
echo "cmake $1 in $(basename "$PWD")"
TOOL
cat > bin/ctest <<'TOOL'
#!/bin/sh
echo "100% tests passed, 0 tests failed out of 3"
TOOL
chmod +x bin/cmake bin/ctest
export PATH=$tmp/bin:$PATH
cat > packages.json <<'JSON'
[
  { "id": "core", "path": "packages/core", "needs": [] },
  { "id": "json", "path": "packages/json", "needs": ["core"] },
  { "id": "http", "path": "packages/http", "needs": ["core"] },
  { "id": "cli", "path": "packages/cli", "needs": ["json", "http"] },
  { "id": "plugins", "path": "packages/plugins", "needs": ["core"] },
  { "id": "docs", "path": "docs", "needs": ["cli", "plugins"] }
]
JSON

expect "every package builds" 0 '"docs"' -- "$matrix" run --input '{"file":"packages.json"}'
expect "its output is drained" 0 '"status": "drained"' -- "$matrix" run --input '{"file":"packages.json"}'

echo "json.cpp:3: expected ';'" > packages/json/BROKEN
out=$("$matrix" run --input '{"file":"packages.json","retries":0,"jobs":2}' 2> "$tmp/err")
code=$?
check() {  # check NAME CONDITION…
  local name=$1
  shift
  if "$@"; then passed=$((passed + 1)); else echo "FAIL $name"; echo "$out" | head -30; cat "$tmp/err"; failed=$((failed + 1)); fi
}
check "report ends done (exit 0)" test "$code" -eq 0
check "the output says deadlocked" grep -q '"status": "deadlocked"' <<<"$out"
check "the failure names the package and the tool" grep -q '`json` does not build: `cmake` exited 2' <<<"$out"
check "the failure keeps stderr" grep -q "json.cpp:3: expected ';'" <<<"$out"
check "the others settled" test "$(grep -c '"attempts": 1' <<<"$out")" -eq 3
check "what needs json never started" bash -c '! grep -qE "^build_matrix: (cli|docs) started" "$0"' "$tmp/err"
check "the progress lines say json failed" grep -q '^build_matrix: json failed: `json` does not build' "$tmp/err"
check "the run is stored done" grep -q "  done" <<<"$("$matrix" runs --all)"

expect "a missing backlog is the run's error" 4 'std.backlog: `nope.json` does not exist' -- "$matrix" run --input '{"file":"nope.json"}'
echo '[{"id":"core",' > broken.json
expect "a broken backlog is the run's error" 4 'std.backlog: `broken.json` is not valid JSON' -- "$matrix" run --input '{"file":"broken.json"}'
expect "a jobs below 1 is refused as bad input" 65 'has `cap` 0 for this input, and a Pool needs at least 1' -- "$matrix" run --input '{"file":"packages.json","jobs":0}'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
