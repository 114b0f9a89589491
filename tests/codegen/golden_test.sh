#!/usr/bin/env bash
# Generated C++ goldens: the code jr2c writes for each sample is checked in under golden/codegen,
# so every generator change is reviewed as C++. This regenerates it, fails on any difference,
# and checks that two runs are byte-identical. JR2_AUTOUPDATE=1 rewrites the goldens.
# (The build compiles this same code with -Wall -Wextra -Werror: tests/codegen/CMakeLists.txt.)
# Usage: golden_test.sh JR2C SOURCE_DIR
set -u
jr2c=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
mkdir -p "$tmp/a" "$tmp/b"
for f in "$src"/samples/*/*.jr2; do
  name=$(basename "$f")
  if ! "$jr2c" compile "$f" -o "$tmp/a" || ! "$jr2c" compile "$f" -o "$tmp/b"; then
    echo "FAIL $name: jr2c compile failed"; failed=$((failed + 1)); continue
  fi
  for ext in h cpp; do
    out="$name.$ext"
    if ! cmp -s "$tmp/a/$out" "$tmp/b/$out"; then
      echo "FAIL $out: two runs differ"; failed=$((failed + 1)); continue
    fi
    if [ "${JR2_AUTOUPDATE:-}" = 1 ]; then
      mkdir -p "$src/golden/codegen"
      cp "$tmp/a/$out" "$src/golden/codegen/$out"
    fi
    # Generated lines stay within 100 columns (codegen/wrap.h), so the code reads in a review.
    long=$(awk 'length($0) > 100 { n++ } END { print n + 0 }' "$tmp/a/$out")
    if [ "$long" -ne 0 ]; then
      echo "FAIL $out: $long lines longer than 100 columns"; failed=$((failed + 1)); continue
    fi
    if diff -u "$src/golden/codegen/$out" "$tmp/a/$out" > "$tmp/diff"; then
      passed=$((passed + 1))
    else
      echo "FAIL $out differs from golden/codegen/$out (JR2_AUTOUPDATE=1 accepts it):"
      head -40 "$tmp/diff"
      failed=$((failed + 1))
    fi
  done
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
