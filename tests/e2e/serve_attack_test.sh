#!/usr/bin/env bash
# The attacks on `serve` of #30, re-run with their counts printed (serve_attack.py): file modes,
# 404s that name nothing, 1,030 no-token followers against a Caller, 300 followers of a
# 10,003-line feed (half never read) against Gate answers and serve's memory, a slow client's
# 408, and 1,100 idle connections under 1,024 file descriptors (no spin, back within 1 s,
# SIGTERM throughout).
# Usage: serve_attack_test.sh DIR_OF_CONFORMANCE_RUNNERS
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir=$(realpath "$1")
tmp=$(mktemp -d)
trap 'pkill -KILL -f "$dir/conformance_secret serve" 2>/dev/null; rm -rf "$tmp"' EXIT
. "$here/lib.sh"  # run_checks
passed=0
failed=0
run_checks 240 "$here/serve_attack.py" "$dir" "$tmp"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
