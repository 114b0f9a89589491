#!/usr/bin/env bash
# Generated sources do not include nlohmann/json (#33's third goal: jr2/json_value.h): for every
# generated .cpp in the folders given, the compiler's list of what it includes names
# nlohmann/json_fwd.hpp (so the check is not vacuous) and never nlohmann/json.hpp. A generated
# header included from a user's own C++ still brings nlohmann/json in full, and that is checked
# too. Usage: light_sources_test.sh CXX RUNTIME_INCLUDE GENERATED_DIR...
set -u
cxx=$1 runtime=$2
shift 2
failed=0 checked=0
for dir in "$@"; do
  for source in "$dir"/*.jr2.cpp; do
    [ -e "$source" ] || continue
    checked=$((checked + 1))
    deps=$("$cxx" -std=c++17 -M -I"$runtime" -I"$dir" "$source" 2>&1) || {
      echo "FAIL: $source does not preprocess: $deps"
      failed=1
      continue
    }
    if grep -q "nlohmann/json\.hpp" <<<"$deps"; then
      echo "FAIL: $source includes nlohmann/json.hpp: generated sources see JSON only through jr2/json_value.h"
      failed=1
    elif ! grep -q "nlohmann/json_fwd\.hpp" <<<"$deps"; then
      echo "FAIL: $source does not include nlohmann/json_fwd.hpp: this check checks nothing"
      failed=1
    fi
    header=${source%.cpp}.h
    user=$(printf '#include "%s"\n' "$header" | "$cxx" -std=c++17 -M -I"$runtime" -I"$dir" -x c++ - 2>&1)
    if ! grep -q "nlohmann/json\.hpp" <<<"$user"; then
      echo "FAIL: $header included from a user's C++ does not bring nlohmann/json (host functions need it)"
      failed=1
    fi
  done
done
echo "checked $checked generated sources"
[ "$checked" -gt 0 ] || { echo "FAIL: no generated sources found in $*"; exit 1; }
exit $failed
