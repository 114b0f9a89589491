#!/usr/bin/env bash
# serve drains on SIGTERM (#30, drain.py): 40 starts, 5 followers (one never reads), 3 half-sent
# requests, one sent late and 4 clients connecting as fast as they can around a SIGTERM; every
# request answered whole (or its connect refused, never reset), the streams ended, exit 0 within the
# bound, what is stored is what was answered, the 503s sent again make the missing runs (~10 s).
# Usage: drain_test.sh DIR_OF_CONFORMANCE_RUNNERS
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir=$(realpath "$1")
tmp=$(mktemp -d)
# The script kills the serves it started (never another test's, which may run beside it).
trap 'rm -rf "$tmp"' EXIT
. "$here/lib.sh"  # run_checks
passed=0
failed=0
run_checks 120 "$here/drain.py" "$dir" "$tmp"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
