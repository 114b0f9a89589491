#!/usr/bin/env bash
# check_generated.sh JR2C JR2_GEN WORKDIR: the generator's output must check clean (no output,
# exit 0) at several sizes and seeds.
set -euo pipefail
jr2c=$1 gen=$2 dir=$3
mkdir -p "$dir"
status=0
for spec in "1 1" "300 2" "1000 3" "5000 4" "20000 5"; do
  set -- $spec
  file="$dir/gen_$1_$2.jr2"
  "$gen" "$1" "$2" > "$file"
  # Clean: no error and no warning.
  if ! out=$("$jr2c" check "$file" 2>&1) ||
     printf '%s\n' "$out" | grep -v -E '^ *[0-9]* *\||^[^ ]+: note: |^0 errors, [0-9]+ warnings?$' | grep -q .; then
    echo "FAIL: jr2_gen $1 $2 does not check clean:"
    printf '%s\n' "$out" | head -20
    status=1
  else
    echo "ok: jr2_gen $1 $2 ($(wc -l < "$file") lines) checks clean"
  fi
done
exit $status
