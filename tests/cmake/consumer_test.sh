#!/usr/bin/env bash
# The installed package from the outside: `cmake --install` this build, then configure, build and
# run tests/cmake/consumer against it with find_package(jr2c). Then the depfile: touching the
# file hello.jr2 imports must make the build regenerate hello's code, and only that.
# Usage: consumer_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
check() { if "$@"; then passed=$((passed + 1)); else echo "FAIL: $*"; failed=$((failed + 1)); fi; }

cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
check test -x "$tmp/prefix/bin/jr2c"
check test -f "$tmp/prefix/lib/cmake/jr2c/jr2cConfig.cmake"
cp -r "$src/tests/cmake/consumer" "$tmp/consumer"
# The consumer builds with the flags this build used: a sanitized runtime (the debug preset)
# links only into sanitized code.
flags=$(sed -n 's/^CMAKE_CXX_FLAGS:STRING=//p' "$build/CMakeCache.txt")
cmake -S "$tmp/consumer" -B "$tmp/build" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DCMAKE_CXX_FLAGS="$flags" > "$tmp/configure.log"
cmake --build "$tmp/build" -j2 > "$tmp/build.log" || { cat "$tmp/build.log"; exit 1; }
check test "$("$tmp/build/check_hello")" = "Hello, Ada"
# One runner per workflow, each answering --help.
check "$tmp/build/greet" --help
check "$tmp/build/listen" --help
# The depfile: an imported file that changes rebuilds what imports it.
sleep 1
touch "$tmp/consumer/names.jr2"
cmake --build "$tmp/build" -j2 > "$tmp/rebuild.log" 2>&1
check grep -q "jr2c: compiling hello.jr2" "$tmp/rebuild.log"
# And a build with nothing changed does nothing.
cmake --build "$tmp/build" -j2 > "$tmp/noop.log" 2>&1
check grep -q "no work to do" "$tmp/noop.log"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
