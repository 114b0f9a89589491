#!/usr/bin/env bash
# The benchmarks side by side with their peers, in one command (docs/performance.md):
#
#   bash bench/run.sh [--quick|--full] [--only NAME[,NAME…]] [--gross] [--build DIR]
#
# --only: those comparisons alone (bench/compare.py names them; e.g. check_warm,check_cold).
# --gross: exit 1 when a ratio, or an arm's own goal (`check_warm`'s lines/s, `check_rss`), is
# more than 2x worse than its goal (the `bench-quick` ctest).
# --build DIR: the arms of that build tree instead of a Release build (the ctest's own tree).
#
# Builds every jr2c arm in Release (in build-bench/, or $JR2_BENCH_BUILD), sets up the peers in
# bench/out/peers (jr2 0.1.4's real pool() from ../shared/peers/jr2-harness, which fetches it and
# xstate 5.32.2 from npm; bench/peers/*.mjs beside them), then runs each comparison interleaved
# (bench/compare.py: A B B A, 5 rounds quick, 7 full, one process at a time, warm-ups discarded),
# prints a table of ratios with their spread and writes bench/out/results.json.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=--quick
only=()
gross=()
build=
while [ $# -gt 0 ]; do
  case $1 in
    --quick | --full) mode=$1 ;;
    --only) only=(--only "$2"); shift ;;
    --gross) gross=(--gross) ;;
    --build) build=$2; shift ;;
    *) echo "bench/run.sh: unknown option \`$1\`; the options are --quick, --full, --only NAME[,NAME…], --gross and --build DIR" >&2; exit 2 ;;
  esac
  shift
done
# As the `bench-quick` ctest, it runs only when asked (JR2_BENCH=1); 77 tells ctest it skipped.
if [ -n "$build" ] && [ "${#gross[@]}" -gt 0 ] && [ "${JR2_BENCH:-}" != 1 ]; then
  echo "bench_quick: skipped; JR2_BENCH=1 ctest -L bench-quick runs it" >&2
  exit 77
fi
harness=../shared/peers/jr2-harness
command -v node > /dev/null || { echo "bench/run.sh: the peers need Node (apt-get install nodejs npm)" >&2; exit 2; }
[ -d "$harness" ] || { echo "bench/run.sh: no $harness beside the project: the jr2 peer is not there" >&2; exit 2; }

if [ -z "$build" ]; then
  build=${JR2_BENCH_BUILD:-build-bench}
  echo "== the jr2c arms, in Release ($build)" >&2
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DJR2_BUILD_TESTS=OFF > /dev/null
fi
# jr2c and jr2_gen for `check_cold` and `check_rss` (a generated program, checked as a process).
cmake --build "$build" -j2 --target jr2_pool_bench jr2_dispatch_bench jr2_store_bench \
  jr2_check_bench jr2c jr2_gen jr2_maxrss >&2

peers=bench/out/peers
if [ ! -x "$peers/node_modules/.bin/tsx" ] || [ ! -f "$peers/jr2src/pool.ts" ]; then
  echo "== the peers: jr2 0.1.4 and xstate from npm ($peers)" >&2
  rm -rf "$peers"
  mkdir -p bench/out
  cp -r "$harness" "$peers"
  chmod -R u+w "$peers"
  (cd "$peers" && ./get-jr2.sh >&2 && npm ci --no-audit --no-fund >&2)
fi
cp bench/peers/*.mjs bench/peers/*.ts "$peers/"

python3 bench/compare.py --build "$build" --peers "$peers" "$mode" "${only[@]}" "${gross[@]}" \
  --out bench/out/results.json
