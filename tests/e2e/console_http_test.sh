#!/usr/bin/env bash
# The web console's HTTP side (#34, docs/console.md): the page and its assets from the binary,
# their policy, the console's routes under abuse, the scopes it goes through, and who answered
# a Gate on the run's feed (tests/e2e/console_http.py; ~3 s).
# Usage: console_http_test.sh DIR_OF_CONFORMANCE_RUNNERS
set -u
lib="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
dir=$(realpath "$1")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$lib"
passed=0
failed=0
run_checks 120 "$(dirname "${BASH_SOURCE[0]}")/console_http.py" "$dir" "$tmp"
echo "console_http: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
