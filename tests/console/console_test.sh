#!/usr/bin/env bash
# The web console in a real browser (#34, docs/console.md): tests/console/console.mjs with
# Playwright over Debian's Chromium against a real `serve` (~20 s). Screenshots of each page go
# to the build tree's tests/console-shots/.
# Usage: console_test.sh DIR_OF_CONFORMANCE_RUNNERS SHOTS_DIR
set -eu
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ ! -d "$here/node_modules/playwright-core" ] || [ ! -x "${JR2_CHROMIUM:-/usr/bin/chromium}" ]; then
  echo "FAIL: the console's test tools are missing: run scripts/setup.sh (it installs chromium and npm ci's tests/console)"
  exit 1
fi
cd "$here"
exec timeout 240 node console.mjs "$1" "$2"
