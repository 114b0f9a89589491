#!/usr/bin/env bash
# The repository's own `.jr2` files are laid out as `jr2c fmt` lays them out (#35,
# docs/editors.md#jr2c-fmt): the samples, the standard library, the runtime's and codegen's test
# programs, the docs' examples and the benchmarks. (The goldens and the fuzz corpus are written
# as they are on purpose: fmt_test.cpp holds the formatter to them as a property instead.)
# Usage: fmt_check_test.sh JR2C SOURCE_DIR
set -u
jr2c=$1
cd "$2"
files=$(find samples stdlib tests/runtime tests/codegen tests/cmake docs bench -path bench/out -prune -o -name '*.jr2' -print | sort)
if out=$("$jr2c" fmt --check $files 2>&1); then
  echo "PASS: $(echo "$files" | wc -l) files are formatted"
else
  echo "$out"
  echo "FAIL: the files above are not formatted; run: jr2c fmt -w FILE"
  exit 1
fi
