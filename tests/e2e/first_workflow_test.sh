#!/usr/bin/env bash
# The walk-throughs of docs/first-workflow.md and docs/host-functions.md, step by step, as a user
# takes them: install this build into a prefix, check the `.jr2` (and the deliberate mistake),
# build the project of docs/first-workflow/ against the installed package, run it, see it wait at
# its Gate, answer it, see it end; then build and run docs/host-functions/. Each output line the
# pages show is checked twice: the command prints it, and the page still says it.
# Usage: first_workflow_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
doc=$src/docs/first-workflow.md
hostdoc=$src/docs/host-functions.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

# step CODE COMMAND…: runs the command in the current folder; checks its exit code. Its combined
# output is left in $out.
step() {
  local want=$1
  shift
  out=$(timeout 120 "$@" 2>&1)
  local rc=$?
  if [ "$rc" -ne "$want" ]; then
    fail "$*: exit $rc, wanted $want"
    echo "$out" | head -20
  else
    passed=$((passed + 1))
  fi
}

# shown PAGE LINE: the last step printed LINE, and PAGE shows it.
shown() {
  if ! grep -qF -- "$2" <<<"$out"; then
    fail "the output does not have the line: $2"
    echo "$out" | head -20
  elif ! grep -qF -- "$2" "$1"; then
    fail "$(basename "$1") does not show the line: $2"
  else
    passed=$((passed + 1))
  fi
}

# The package, as the README installs it.
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }
jr2c=$tmp/prefix/bin/jr2c
# The project files the page shows are the installed ones.
for f in hello.jr2 CMakeLists.txt; do
  cmp -s "$src/docs/first-workflow/$f" "$tmp/prefix/share/doc/jr2c/docs/first-workflow/$f" ||
    fail "docs/first-workflow/$f is not installed as it is"
done
cp -r "$tmp/prefix/share/doc/jr2c/docs/first-workflow" "$tmp/hello"
cd "$tmp/hello" || exit 1

# Check: clean, then the deliberate mistake and its message.
step 0 "$jr2c" check hello.jr2
[ -z "$out" ] || fail "a clean check printed: $out"
grep -q 'event\.name' hello.jr2 || fail "hello.jr2 no longer reads event.name"
sed 's/event\.name/event.nme/' hello.jr2 > mistake.jr2
step 1 "$jr2c" check mistake.jr2
out=${out//mistake.jr2/hello.jr2}
shown "$doc" 'hello.jr2:12:38: error[E0201]: `event greet` has no field `nme`; did you mean `name`?'
shown "$doc" '   12 |       text = greeting + ", " + event.nme + "!"'
shown "$doc" '1 error, 0 warnings'
rm mistake.jr2

# Build against the installed package. Flags as this build's: a sanitized runtime (the debug
# preset) links only into sanitized code.
flags=$(sed -n 's/^CMAKE_CXX_FLAGS:STRING=//p' "$build/CMakeCache.txt")
step 0 cmake -S . -B build -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_CXX_FLAGS="$flags"
step 0 cmake --build build -j2
shown "$doc" 'Linking CXX executable hello'
[ -x build/hello ] || { fail "no runner build/hello"; echo "$passed passed, $failed failed"; exit 1; }

# Run: it waits at the Gate `ask` (exit 3) and says how to answer.
step 3 ./build/hello run
shown "$doc" 'hello: Gate ask opened'
shown "$doc" '  ask  {"title":"Whom shall I greet?"}'
shown "$doc" '    greet { name: string }  — Say whom to greet.'
run=$(./build/hello runs | head -n 1 | cut -d' ' -f1)
shown "$doc" "ask greet '{\"name\":\"…\"}'"
[ "${#run}" -eq 12 ] || fail "no run id from \`runs\`: $run"
step 0 ./build/hello gates
shown "$doc" "  ask  greet { name: string }"
# A payload that does not fit is refused (65), and the run still waits.
step 65 ./build/hello send "${run:0:4}" ask greet '{"nam":"Ada"}'
shown "$doc" 'hello: error: the payload of `greet` does not fit: `event greet` has no field `nam`; did you mean `name`? Its fields are name'
step 3 ./build/hello status "${run:0:4}"
# The answer ends the run done (exit 0) with its output.
step 0 ./build/hello send "${run:0:4}" ask greet '{"name":"Ada"}'
shown "$doc" "ended done"
shown "$doc" '"Hello, Ada!"'
step 0 ./build/hello status "${run:0:4}" --json
shown "$doc" '"status": "done"'
step 0 ./build/hello runs --all
shown "$doc" "  done  "
# With an input: the machine's parameter `greeting`.
step 3 ./build/hello run --input '{"greeting":"Hi"}'
run=$(./build/hello runs | tail -n 1 | cut -d' ' -f1)
step 0 ./build/hello send "$run" ask greet '{"name":"Grace"}'
shown "$doc" '"Hi, Grace!"'

# The host function page: its project builds, and its runner's three ends are as shown.
cd "$tmp" || exit 1
cp -r "$tmp/prefix/share/doc/jr2c/docs/host-functions" "$tmp/shout"
cd "$tmp/shout" || exit 1
step 0 "$jr2c" check shout.jr2
step 0 cmake -S . -B build -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_CXX_FLAGS="$flags"
step 0 cmake --build build -j2
grep -qF '::jr2rt::Json shout(const ::jr2rt::Json& args);' build/jr2gen/shout_flows/shout.jr2.h ||
  fail "the generated header no longer declares shout as host-functions.md says"
grep -qF '::jr2rt::Json shout(const ::jr2rt::Json& args);' "$hostdoc" ||
  fail "host-functions.md does not show the declaration"
step 0 ./build/shout_once run --input '{"words":{"text":"ada","times":2}}'
shown "$hostdoc" '"ADAADA!"'
step 1 ./build/shout_once run --input '{"words":{"text":""}}'
shown "$hostdoc" 'ended failed: could not shout: nothing to shout'
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
