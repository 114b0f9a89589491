#!/usr/bin/env bash
# The `--server` contract (#30 item 7): every verb prints the same text, `--json` and exit code
# against the store and through `serve`. server_contract.py runs each step of a set of scenarios
# (tests/runtime/contract.jr2's tickets-like Pool: a run that drains at a `send`, one that
# deadlocks, one that fails, cancels; a process that ends done or cannot start; a read that fails
# with a poll, with and without a Gate open; a standing Pool paused and resumed; refusals) once
# against a store and once with `--server` against a serve on a second store, normalises what must
# differ (run ids, times, the store's path and the serve's URL), and compares stdout, stderr and
# the exit code. It prints a table of verb × scenario and fails on any difference (~15 s).
# Usage: server_contract_test.sh DIR_OF_CONFORMANCE_RUNNERS
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir=$(realpath "$1")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$here/lib.sh"  # run_checks, fail
passed=0
failed=0
for w in conformance_tickets conformance_command conformance_polled conformance_polled_quiet conformance_alerts; do
  [ -x "$dir/$w" ] || fail "no runner $dir/$w (is tests/runtime/contract.jr2 built?)"
done
[ "$failed" -eq 0 ] && run_checks 240 "$here/server_contract.py" "$dir" "$tmp"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
