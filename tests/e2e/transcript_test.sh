#!/usr/bin/env bash
# Transcript goldens: what a person sees from a runner, step by step. A transcript holds
# commands (`$ …`), comments (`# …`) and blank lines; after each command, its stderr then its
# stdout (each line behind `| `) and its exit code (`[exit N]`). The test runs the commands in a
# fresh store, from SOURCE_DIR, and compares. The first run's id reads `$RUN`, the store's
# folder `$TMP`, a local time `$TIME`.
# Usage: transcript_test.sh TRANSCRIPT SOURCE_DIR RUNNER…   (JR2_AUTOUPDATE=1 rewrites it)
set -u
transcript=$(realpath "$1")
src=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export JR2_STORE=$tmp/jr2.db
# Each runner is called by its file name, as a person would call it.
for runner in "$@"; do
  path=$(realpath "$runner")
  eval "$(basename "$runner")() { \"$path\" \"\$@\"; }"
done
first=$(basename "$1")
cd "$src" || exit 1

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
  [ -n "$RUN" ] || RUN=$("$first" runs --all 2>/dev/null | head -n 1 | cut -d' ' -f1)
  for f in err out; do
    if [ -n "$RUN" ]; then sed -i "s/$RUN/\$RUN/g" "$tmp/$f"; fi
    sed -i "s|$tmp|\$TMP|g; s/[0-9]\{4\}-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9]/\$TIME/g" "$tmp/$f"
    sed 's/^/| /; s/^| $/|/' "$tmp/$f" >> "$tmp/new"
  done
  echo "[exit $code]" >> "$tmp/new"
done < "$transcript"

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
