#!/usr/bin/env bash
# The test command of the README and of CI: install what is missing, build everything, check the
# style of what the last commit changed (scripts/lint.sh), and run every test (unit, golden
# diagnostics, end to end, fuzz corpus replay).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
bash scripts/lint.sh  # clang-format and clang-tidy on what the last commit changed
cd build
ctest --output-on-failure -j2 --timeout 600
