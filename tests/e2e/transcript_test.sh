#!/usr/bin/env bash
# Transcript goldens: what a person sees from a runner, step by step. A transcript holds
# commands (`$ …`), comments (`# …`) and blank lines; after each command, its stderr then its
# stdout (each line behind `| `) and its exit code (`[exit N]`). The test runs the commands in a
# fresh store, from SOURCE_DIR, and compares. Run ids read `$RUN`, `$RUN2`, … in the order the
# runs appear; the store's folder reads `$TMP`, a local time `$TIME`, a wait `due in $WAIT`.
# Usage: transcript_test.sh TRANSCRIPT SOURCE_DIR RUNNER…   (JR2_AUTOUPDATE=1 rewrites it)
set -u
transcript=$(realpath "$1")
src=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export JR2_STORE=$tmp/jr2.db
# Each runner is called by its file name, as a person would call it.
runners=()
for runner in "$@"; do
  path=$(realpath "$runner")
  runners+=("$path")
  eval "$(basename "$runner")() { \"$path\" \"\$@\"; }"
done
first=$(basename "$1")
cd "$src" || exit 1

# Runs are named in the order they appear: $RUN, then $RUN2, $RUN3, …
ids=()
name_runs() {
  local id known n
  for id in $("$first" runs --all 2>/dev/null | cut -d' ' -f1); do
    known=0
    for n in "${ids[@]}"; do [ "$n" = "$id" ] && known=1; done
    [ "$known" = 1 ] && continue
    ids+=("$id")
    if [ "${#ids[@]}" = 1 ]; then RUN=$id; else printf -v "RUN${#ids[@]}" '%s' "$id"; fi
  done
}
RUN=""
: > "$tmp/new"
while IFS= read -r line || [ -n "$line" ]; do
  case "$line" in
    '| '* | '|' | '[exit '*) continue ;;  # the recorded output: made again below
  esac
  printf '%s\n' "$line" >> "$tmp/new"
  [ "${line:0:2}" = '$ ' ] || continue
  eval "${line:2}" > "$tmp/out" 2> "$tmp/err"
  code=$?
  name_runs
  for f in err out; do
    for i in "${!ids[@]}"; do
      if [ "$i" = 0 ]; then label='$RUN'; else label="\$RUN$((i + 1))"; fi
      sed -i "s/${ids[$i]}/$label/g" "$tmp/$f"
    done
    # A runner run by its path prints commands that call it by that path (InvokedAs, in
    # front/cli/runner.cpp): read as its name, as a person with it on PATH sees them.
    for runner in "${runners[@]}"; do sed -i "s|$runner|$(basename "$runner")|g" "$tmp/$f"; done
    # Who answered a Gate from the CLI is the account the test runs as: read as `$USER`.
    sed -i -E "s/ answered ([^ ]*) by user $(id -un)([^A-Za-z0-9_.-]|\$)/ answered \1 by user \$USER\2/g" "$tmp/$f"
    # A trace (`export`): its times in milliseconds, its answers' `by`, the build's hash.
    sed -i -E "s/\"time\":[0-9]+/\"time\":\$MS/g; s/\"by\":\"user $(id -un)\"/\"by\":\"user \$USER\"/g; s/\"assembly\":\"[0-9a-f]+\"/\"assembly\":\"\$ASSEMBLY\"/g" "$tmp/$f"
    # A trace's header says the run's home, the folder it was started in: this one.
    sed -i "s|\"home\":\"$(pwd)\"|\"home\":\"\$SRC\"|g" "$tmp/$f"
    sed -i -E "s|$tmp|\$TMP|g; s/[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}/\$TIME/g; s/due in [0-9]+ [a-z]+( [0-9]+ [a-z]+)?/due in \$WAIT/g" "$tmp/$f"
    sed 's/^/| /; s/^| $/|/' "$tmp/$f" >> "$tmp/new"
  done
  echo "[exit $code]" >> "$tmp/new"
done < "$transcript"

# Every run the transcript made replays (docs/runtime.md#replay): exported, then driven again by
# its workflow's runner, none of its effects run — each turn the same, the same end.
replayed=0
diverged=0
mkdir -p "$tmp/traces"
for id in "${ids[@]}"; do
  wf=$("$first" runs --all --json 2>/dev/null | python3 -c 'import json,sys; print(next((r["workflow"] for r in json.load(sys.stdin) if r["runId"] == sys.argv[1]), ""))' "$id")
  path=""
  for runner in "${runners[@]}"; do [ "$(basename "$runner")" = "$wf" ] && path=$runner; done
  [ -n "$path" ] || continue
  "$path" export "$id" > "$tmp/traces/$id.jsonl" 2> /dev/null
  if "$path" replay "$tmp/traces/$id.jsonl" > "$tmp/replay.out" 2> /dev/null; then
    replayed=$((replayed + 1))
  else
    diverged=$((diverged + 1))
    echo "FAIL: run $id of $wf does not replay: $(head -c 600 "$tmp/replay.out")"
  fi
done
echo "replays: $replayed identical, $diverged not, of ${#ids[@]} runs"
[ "$diverged" -eq 0 ] || exit 1

if [ "${JR2_AUTOUPDATE:-}" = 1 ]; then
  cp "$tmp/new" "$transcript"
  echo "rewrote $transcript"
  exit 0
fi
if diff -u "$transcript" "$tmp/new"; then
  echo "transcript $(basename "$transcript") matches"
else
  echo "FAIL: the transcript differs (JR2_AUTOUPDATE=1 rewrites it; review the diff)"
  exit 1
fi
