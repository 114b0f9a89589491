#!/usr/bin/env bash
# time_check.sh JR2C JR2_GEN WORKDIR [RUNS]: wall time of `jr2c check` on a generated
# 10,000-line file and on a ~5 MB file. Uses hyperfine when it is installed, else runs each
# check RUNS times (default 10) under /usr/bin/time and prints min / mean / max and peak RSS.
set -euo pipefail
jr2c=$1 gen=$2 dir=$3 runs=${4:-10}
mkdir -p "$dir"
"$gen" 10000 1 > "$dir/lines_10k.jr2"
"$gen" 185000 1 > "$dir/about_5mb.jr2"

for f in "$dir/lines_10k.jr2" "$dir/about_5mb.jr2"; do
  lines=$(wc -l < "$f")
  bytes=$(wc -c < "$f")
  echo "== jr2c check $(basename "$f"): $lines lines, $bytes bytes"
  if ! out=$("$jr2c" check "$f" 2>&1) || [ -n "$out" ]; then
    echo "error: the generated file does not check clean:" >&2
    printf '%s\n' "$out" | head -20 >&2
    exit 1
  fi
  if command -v hyperfine > /dev/null; then
    hyperfine --warmup 1 --runs "$runs" "$jr2c check $f"
  else
    for _ in $(seq "$runs"); do
      /usr/bin/time -f "%e %M" "$jr2c" check "$f" 2>&1 >/dev/null | tail -1
    done | awk -v runs="$runs" '
      { t = $1 + 0; s += t; if (NR == 1 || t < lo) lo = t; if (t > hi) hi = t; if ($2 > rss) rss = $2 }
      END { printf "  %d runs (/usr/bin/time): min %.2f s, mean %.3f s, max %.2f s; peak RSS %.0f MB\n",
                   runs, lo, s / NR, hi, rss / 1024 }'
  fi
done
