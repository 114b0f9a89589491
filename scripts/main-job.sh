#!/usr/bin/env bash
# The main job of the README: install, build, and walk through the tickets sample end to end
# (the concept page's story) with the real runner, each step printed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh jr2c tickets
tickets=build/samples/tickets
store=$(mktemp -d)/jr2.db
export JR2_STORE=$store

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
# A word as a shell reads it back: plain when safe, else in single quotes (so that a shown
# command can be pasted as it is).
quote() {
  if [[ $1 =~ ^[A-Za-z0-9_./:=@%+-]+$ ]]; then printf '%s' "$1"; else
    printf "'%s'" "${1//\'/\'\\\'\'}"
  fi
}
expect() {  # expect CODE COMMAND…: run it, show it (as it can be pasted), and check its exit code
  local want=$1 shown="" word
  shift
  for word in "$@"; do shown+="${shown:+ }$(quote "$word")"; done
  step "$shown"
  set +e
  "$@"
  local got=$?
  set -e
  echo "(exit $got)"
  if [ "$got" -ne "$want" ]; then
    echo "main job: expected exit $want, got $got" >&2
    exit 1
  fi
}

echo "The tickets sample: a Pool reviews a backlog of four tickets, two at a time (cap 2)."
echo "T-3 needs T-1 and T-2; T-4 needs T-9, which does not exist. A person answers each review."
echo "(samples/tickets/tickets.jr2, samples/tickets/backlog.json; the run is stored in $store)"

step "build/compiler/jr2c check samples/tickets/tickets.jr2"
build/compiler/jr2c check samples/tickets/tickets.jr2 && echo "(clean)"

expect 3 "$tickets" run
run=$("$tickets" runs | head -n 1 | cut -d' ' -f1)
echo "T-1 and T-2 started (cap 2); the run waits at their Gates and at \`source\`."

expect 3 "$tickets" send "$run" T-1.review approve
expect 3 "$tickets" send "$run" T-2.review reject '{"reason":"Not now."}'
echo "Both settled (a rejection is an outcome, not a Failure), so T-3 is ready and started."

expect 2 "$tickets" send "$run" T-3.review approve
echo "Only T-4 is left, and it can never start: it waits for T-9, which no item is. The run"
echo "ended deadlocked (exit 2), with the three outcomes in \`items\`, T-4 in \`blocked\`."

step "$tickets status $run --json"
"$tickets" status "$run" --json || true
