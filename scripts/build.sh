#!/usr/bin/env bash
# Configures and builds jr2c in ./build (Ninja, -j2: these machines have 2 cores).
# Usage: scripts/build.sh [TARGET…]   (no target: everything, tests and benchmarks included)
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DJR2_BUILD_TESTS=ON -DJR2_BUILD_BENCH=ON >/dev/null
if [ "$#" -gt 0 ]; then
  targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  cmake --build build -j2 "${targets[@]}"
else
  cmake --build build -j2
fi
