#!/usr/bin/env bash
# A host function that segfaults under `serve --supervise` (#30, supervise.py): serve is
# started again within 5 s, nothing lost, the call `interrupted`; SIGTERM passed on; a crash
# loop gives up (exit 70); SIGKILL of the supervisor takes its serve (~15 s).
# Usage: supervise_test.sh DIR_OF_CONFORMANCE_RUNNERS
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir=$(realpath "$1")
tmp=$(mktemp -d)
# The script kills the serves it started (never another test's, which may run beside it).
trap 'rm -rf "$tmp"' EXIT
. "$here/lib.sh"  # run_checks
passed=0
failed=0
run_checks 150 "$here/supervise.py" "$dir" "$tmp"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
