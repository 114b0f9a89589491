#!/usr/bin/env bash
# The benchmarks side by side with their peers, in one command (docs/performance.md):
#
#   bash bench/run.sh [--quick|--full] [--only NAME[,NAME…]] [--gross] [--build DIR] [--pg-fsync]
#
# --only: those comparisons alone (bench/compare.py names them; e.g. check_warm,check_cold).
# --gross: exit 1 when a ratio, or an arm's own goal (`check_warm`'s lines/s, `check_rss`), is
# more than 2x worse than its goal (the `bench-quick` ctest).
# --build DIR: the arms of that build tree instead of a Release build (the ctest's own tree).
# --pg-fsync: the PostgreSQL comparisons on a durable server (fsync, full_page_writes and
# synchronous_commit turned on in the throwaway server, which has them off by default).
#
# Builds every jr2c arm in Release (in build-bench/, or $JR2_BENCH_BUILD), sets up the peers in
# bench/out/peers (jr2 0.1.4's real pool() from ../shared/peers/jr2-harness, which fetches it and
# xstate 5.32.2 from npm; bench/peers/*.mjs beside them), then runs each comparison interleaved
# (bench/compare.py: A B B A, 5 rounds quick, 7 full, one process at a time, warm-ups discarded),
# prints a table of ratios with their spread and writes bench/out/results.json.
#
# The PostgreSQL comparisons (#32) run when selected and a throwaway PostgreSQL server can be
# started (tests/pg/server.sh, in a temporary folder, stopped at the end however the run ends):
# pg_items (jr2c against DBOS Transact and Graphile Worker), pg_commit (a turn's commit against a
# bare libpq transaction), pg_hosts (two serves against one on work bound by processes) and
# pg_table (the cost of an item with 100,000 runs in the table against 1,000). pg_items's peers
# are installed from bench/peers/pg/package-lock.json with npm ci into bench/out/pg-peers.
# `--only` with PostgreSQL comparisons alone (`pg_hosts,pg_table`, say) needs neither the jr2
# harness nor the other arms' builds.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=--quick
only=()
gross=()
build=
pg_fsync=
while [ $# -gt 0 ]; do
  case $1 in
    --quick | --full) mode=$1 ;;
    --only) only=(--only "$2"); shift ;;
    --gross) gross=(--gross) ;;
    --build) build=$2; shift ;;
    --pg-fsync) pg_fsync=1 ;;
    *) echo "bench/run.sh: unknown option \`$1\`; the options are --quick, --full, --only NAME[,NAME…], --gross, --build DIR and --pg-fsync" >&2; exit 2 ;;
  esac
  shift
done
# As the `bench-quick` ctest, it runs only when asked (JR2_BENCH=1); 77 tells ctest it skipped.
if [ -n "$build" ] && [ "${#gross[@]}" -gt 0 ] && [ "${JR2_BENCH:-}" != 1 ]; then
  echo "bench_quick: skipped; JR2_BENCH=1 ctest -L bench-quick runs it" >&2
  exit 77
fi
# Which parts the selection needs: pg_items alone needs no jr2 harness and no other arm.
want_pg=1
pg_only=
if [ "${#only[@]}" -gt 0 ]; then
  case ",${only[1]}," in *,pg_*) ;; *) want_pg= ;; esac
  # Only PostgreSQL comparisons (every name pg_…): neither the jr2 harness nor the other arms.
  if [ -z "$(echo ",${only[1]}" | sed 's/,pg_[a-z_]*//g')" ]; then pg_only=1; fi
fi
harness=../shared/peers/jr2-harness
command -v node > /dev/null || { echo "bench/run.sh: the peers need Node (apt-get install nodejs npm)" >&2; exit 2; }
if [ -z "$pg_only" ] && [ ! -d "$harness" ]; then
  echo "bench/run.sh: no $harness beside the project: the jr2 peer is not there" >&2
  exit 2
fi

if [ -z "$build" ]; then
  build=${JR2_BENCH_BUILD:-build-bench}
  echo "== the jr2c arms, in Release ($build)" >&2
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DJR2_BUILD_TESTS=OFF > /dev/null
fi
# jr2c and jr2_gen for `check_cold` and `check_rss` (a generated program, checked as a process);
# the samples' runners for `gen_build_*` (their build commands are what those arms time);
# the runners of bench/pg/pg_items.jr2 for `pg_items` (and `bench_pg_work` for `pg_hosts` and
# `pg_table`), jr2_pg_commit_bench for `pg_commit`; for `stored_*`, jr2_stored_bench, the runners
# of bench/runtime/stored_pool.jr2 and jr2_pool_in_memory; for `serve_answers`, stored_gated; for
# `replay_5k`, tests/runtime/pool.jr2's conformance_torture (bench/runtime makes it without tests).
pg_targets=(bench_pg_items bench_pg_items_idempotent bench_pg_work jr2_pg_commit_bench)
if [ -n "$pg_only" ]; then
  cmake --build "$build" -j2 --target "${pg_targets[@]}" >&2
else
  cmake --build "$build" -j2 --target jr2_pool_bench jr2_dispatch_bench jr2_store_bench \
    jr2_check_bench jr2c jr2_gen jr2_maxrss tickets build_matrix triage jr2_stored_bench \
    jr2_pool_in_memory stored_instant stored_napping stored_gated conformance_torture \
    "${pg_targets[@]}" >&2
fi

peers=bench/out/peers
if [ -z "$pg_only" ]; then
  if [ ! -x "$peers/node_modules/.bin/tsx" ] || [ ! -f "$peers/jr2src/pool.ts" ]; then
    echo "== the peers: jr2 0.1.4 and xstate from npm ($peers)" >&2
    rm -rf "$peers"
    mkdir -p bench/out
    cp -r "$harness" "$peers"
    chmod -R u+w "$peers"
    (cd "$peers" && ./get-jr2.sh >&2 && npm ci --no-audit --no-fund >&2)
  fi
  cp bench/peers/*.mjs bench/peers/*.ts "$peers/"
fi

# pg_items: a throwaway PostgreSQL server for this run (stopped by the trap, on any exit) and the
# PostgreSQL peers, installed from their lock file (again when it changed).
pg=()
if [ -n "$want_pg" ]; then
  pg_peers=bench/out/pg-peers
  if ! cmp -s bench/peers/pg/package-lock.json "$pg_peers/package-lock.json" ||
    [ ! -d "$pg_peers/node_modules/@dbos-inc/dbos-sdk" ] || [ ! -d "$pg_peers/node_modules/graphile-worker" ]; then
    echo "== the PostgreSQL peers: DBOS Transact and Graphile Worker from npm ($pg_peers)" >&2
    rm -rf "$pg_peers"
    mkdir -p "$pg_peers"
    cp bench/peers/pg/package.json bench/peers/pg/package-lock.json "$pg_peers/"
    (cd "$pg_peers" && npm ci --no-audit --no-fund >&2)
  fi
  cp bench/peers/pg/*.mjs "$pg_peers/"
  pg_dir=$(mktemp -d /tmp/jr2-bench-pg.XXXXXX)
  trap 'bash tests/pg/server.sh stop "$pg_dir" > /dev/null 2>&1 || true; rm -rf "$pg_dir"' EXIT
  if pg_url=$(bash tests/pg/server.sh start "$pg_dir" 2> "$pg_dir/start.err"); then
    pg=(--pg "$pg_url" --pg-peers "$pg_peers")
    if [ -n "$pg_fsync" ]; then
      # ALTER SYSTEM overrides server.sh's postgresql.conf; all three take a reload.
      psql "$pg_url" -qX -v ON_ERROR_STOP=1 -c "ALTER SYSTEM SET fsync = on" \
        -c "ALTER SYSTEM SET full_page_writes = on" -c "ALTER SYSTEM SET synchronous_commit = on" \
        -c "SELECT pg_reload_conf()" > /dev/null
      sleep 1
      [ "$(psql "$pg_url" -AtX -c "SHOW fsync")" = on ] || { echo "bench/run.sh: fsync did not turn on" >&2; exit 1; }
      pg+=(--pg-fsync)
    fi
    echo "== a throwaway PostgreSQL server for the PostgreSQL comparisons ($pg_dir; fsync $([ -n "$pg_fsync" ] && echo on || echo off))" >&2
  else
    echo "bench/run.sh: no PostgreSQL server could be started; the PostgreSQL comparisons are skipped:" >&2
    cat "$pg_dir/start.err" >&2
  fi
fi

python3 bench/compare.py --build "$build" --peers "$peers" "$mode" "${only[@]}" "${gross[@]}" \
  "${pg[@]}" --out bench/out/results.json
