#!/usr/bin/env bash
# The main job of the README: install, build, and walk through the tickets sample.
#
# The runtime is not built yet (issue #5), so today the walk shows the checker: the samples check
# clean, and a copy of the tickets sample with a deliberate mistake gets a diagnostic with its fix.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh jr2c
jr2c=build/compiler/jr2c

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

step "$jr2c check samples/tickets.jr2 samples/build_matrix.jr2 samples/alert_triage.jr2"
"$jr2c" check samples/tickets.jr2 samples/build_matrix.jr2 samples/alert_triage.jr2
echo "(no output: all three samples check clean; exit $?)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The mistake: a typo in an event name, and `=>` where a transition wants `->`.
sed -e 's/on approve -> decided/on aprove -> decided/' -e 's/on reject -> decided/on reject => decided/' \
  samples/tickets.jr2 > "$tmp/tickets.jr2"
step "$jr2c check tickets.jr2   # a copy with two mistakes"
(cd "$tmp" && "$OLDPWD/$jr2c" check tickets.jr2) && status=0 || status=$?
echo "(exit $status: the checker refuses the file and says how to fix it)"
[ "$status" -eq 1 ]
