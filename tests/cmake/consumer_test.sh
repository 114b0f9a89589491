#!/usr/bin/env bash
# The installed package from the outside: `cmake --install` this build, then configure, build and
# run tests/cmake/consumer against it with find_package(jr2c). Then the depfile: touching the
# file hello.jr2 imports must make the build regenerate hello's code, and only that. And the
# docs: README.md and docs/ are installed in share/doc/jr2c, and their links resolve there.
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
# The docs, laid out as in the source tree, each file as it is; a link that works in the tree
# must work where they are installed, so every relative link must name an installed file (and
# heading).
docdir=$tmp/prefix/share/doc/jr2c
check cmp -s "$src/README.md" "$docdir/README.md"
for f in "$src"/docs/*.md "$src"/docs/first-workflow/* "$src"/docs/host-functions/*; do
  check cmp -s "$f" "$docdir/${f#"$src"/}"
done
check "$src/tests/cmake/check_doc_links.sh" "$docdir/README.md" "$docdir"/docs/*.md
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
# An import of a declarations-only file works with and without listing it (#9): the runner of
# the unlisted one runs to its Gate and, answered, ends done.
check test -x "$tmp/build/vocab_review"
store="$tmp/vocab.db"
rc=0
"$tmp/build/vocab_review" run --store "$store" --input '{"ticket":{"id":"T-1"}}' > "$tmp/vocab.out" 2>&1 || rc=$?
check test "$rc" -eq 3
run_id=$("$tmp/build/vocab_review" runs --store "$store" --json | sed -n 's/.*"runId": *"\([^"]*\)".*/\1/p' | head -1)
rc=0
"$tmp/build/vocab_review" send --store "$store" "$run_id" open approve > "$tmp/vocab.send" 2>&1 || rc=$?
check test "$rc" -eq 0
# No source of its own declares a workflow, so jr2_add_workflow says what it built: nothing here
# (each has one); the configure log has no such warning.
check test "$(grep -c 'no source declares a' "$tmp/configure.log")" -eq 0
# The precompiled header (jr2_add_workflow's): made once for a target, loaded by its generated
# sources, never by a HOST file (built as its author wrote it), and not made for a target that
# asks for none (NO_PRECOMPILED_HEADER).
# (GCC names it .gch, clang .pch.)
pch=CMakeFiles/greetings.dir/cmake_pch.hxx
check test -n "$(ls "$tmp/build/$pch.gch" "$tmp/build/$pch.pch" 2>/dev/null)"
generated=$(ninja -C "$tmp/build" -t commands CMakeFiles/greetings.dir/jr2gen/greetings/hello.jr2.cpp.o | tail -1)
check grep -q -- "$pch" <<<"$generated"
host=$(ninja -C "$tmp/build" -t commands CMakeFiles/greetings.dir/host.cpp.o | tail -1)
check grep -q -- "host.cpp" <<<"$host"
check test "$(grep -c -- "cmake_pch" <<<"$host")" -eq 0
check test -z "$(ls "$tmp/build"/CMakeFiles/vocab_listed.dir/cmake_pch.* 2>/dev/null)"
check test -f "$tmp/build/CMakeFiles/vocab_listed.dir/jr2gen/vocab_listed/vocab.jr2.cpp.o"
# The depfile: an imported file that changes rebuilds what imports it.
sleep 1
touch "$tmp/consumer/names.jr2"
cmake --build "$tmp/build" -j2 > "$tmp/rebuild.log" 2>&1
check grep -q "jr2c: compiling hello.jr2" "$tmp/rebuild.log"
# A picture is drawn from its file and what that imports: names.jr2 changed redraws both files'
# pictures (hello imports it); hello.jr2 changed redraws hello's alone.
check grep -q "drawing the workflows of hello.jr2" "$tmp/rebuild.log"
check grep -q "drawing the workflows of names.jr2" "$tmp/rebuild.log"
sleep 1
touch "$tmp/consumer/hello.jr2"
cmake --build "$tmp/build" -j2 > "$tmp/rebuild2.log" 2>&1
check grep -q "drawing the workflows of hello.jr2" "$tmp/rebuild2.log"
check test "$(grep -c 'drawing the workflows of names.jr2' "$tmp/rebuild2.log")" -eq 0
# And a build with nothing changed does nothing.
cmake --build "$tmp/build" -j2 > "$tmp/noop.log" 2>&1
check grep -q "no work to do" "$tmp/noop.log"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
