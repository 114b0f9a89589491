#!/usr/bin/env bash
# A JsonValue is made from a Json, never from a braced list (jr2/json_value.h, #33): with an
# implicit Json constructor, `Failure(msg, {{"url", at}})` silently became the list ["url", at]
# (a level of braces lost). Each shape below must not compile; the same with `Json{…}` must. An
# assignment takes a Json (`v = {{"url", x}}` is that object: no level is lost) and compiles.
# Usage: braced_refusal_test.sh CXX RUNTIME_INCLUDE
set -u
cxx=$1 runtime=$2
failed=0
compiles() {
  printf '#include "jr2/value.h"\nvoid f() {\n%s\n}\n' "$1" |
    "$cxx" -std=c++17 -fsyntax-only -I"$runtime" -x c++ - > /dev/null 2>&1
}
refused=(
  'jr2rt::JsonValue v = {{"url", "x"}}; (void)v;'
  'jr2rt::Failure e("m", {{"url", "x"}}); (void)e;'
)
taken=(
  'jr2rt::JsonValue v = jr2rt::Json{{"url", "x"}}; (void)v;'
  'jr2rt::Failure e("m", jr2rt::Json{{"url", "x"}}); (void)e;'
  'jr2rt::JsonValue v; v = jr2rt::Json{{"url", "x"}, {"n", 1}};'
  'jr2rt::JsonValue v; v = {{"url", "x"}};'
)
for code in "${refused[@]}"; do
  if compiles "$code"; then
    echo "FAIL: compiles, and must not: $code"
    failed=1
  fi
done
for code in "${taken[@]}"; do
  if ! compiles "$code"; then
    echo "FAIL: does not compile, and must: $code"
    failed=1
  fi
done
echo "${#refused[@]} braced lists refused, ${#taken[@]} Json values taken"
exit $failed
