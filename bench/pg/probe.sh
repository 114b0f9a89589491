#!/usr/bin/env bash
# What each arm of pg_items asks of the server (docs/performance.md): the transactions committed
# in its database and the most connections it held at once (pg_stat_activity sampled every 20 ms),
# over one whole process: the warm-up round and the measured one, 2 x N items.
#   bash bench/pg/probe.sh "$(cat DIR/url)" BUILD PG_PEERS   (after bench/run.sh --only pg_items)
set -euo pipefail
pg=$1
build=$2
peers=$3
n=1000
input=$(mktemp)
python3 -c "import json; print(json.dumps({'items': [{'id': 'I-%06d' % i, 'n': i} for i in range($n)], 'jobs': 8}))" > "$input"
with_db() { echo "$pg" | sed "s/dbname=[^ ]*/dbname=$1/"; }
fresh() { psql "$pg" -qX -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $1 WITH (FORCE)" -c "CREATE DATABASE $1" > /dev/null; }
commits() { psql "$pg" -AtX -c "SELECT xact_commit FROM pg_stat_database WHERE datname = '$1'"; }
probe() {
  local db=$1 name=$2
  shift 2
  fresh "$db"
  local before
  before=$(commits "$db")
  : > /tmp/probe.$$.conns
  "$@" > /dev/null 2>&1 &
  local pid=$!
  while kill -0 "$pid" 2> /dev/null; do
    psql "$pg" -AtX -c "SELECT count(*) FROM pg_stat_activity WHERE datname = '$db'" >> /tmp/probe.$$.conns
    sleep 0.02
  done
  wait "$pid"
  sleep 1
  local after
  after=$(commits "$db")
  printf '%-16s commits %6d (%.2f an item)   connections at most %s\n' "$name" $((after - before)) \
    "$(echo "($after - $before) / (2 * $n)" | bc -l)" "$(sort -n /tmp/probe.$$.conns | tail -1)"
}
runner() { "$1" run --store "$(with_db "$2")" --input "@$input" && "$1" run --store "$(with_db "$2")" --input "@$input"; }
probe probe_jr2c jr2c runner "$build/bench/pg/bench_pg_items" probe_jr2c
probe probe_jr2c_idem jr2c-idempotent runner "$build/bench/pg/bench_pg_items_idempotent" probe_jr2c_idem
probe probe_dbos dbos node "$peers/dbos_items.mjs" --pg "$pg" --db probe_dbos --mode direct
probe probe_dbos_q dbos-queue node "$peers/dbos_items.mjs" --pg "$pg" --db probe_dbos_q --mode queue
probe probe_graphile graphile node "$peers/graphile_items.mjs" --pg "$pg" --db probe_graphile
for db in probe_jr2c probe_jr2c_idem probe_dbos probe_dbos_q probe_graphile; do
  psql "$pg" -qX -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" > /dev/null
done
rm -f "$input" /tmp/probe.$$.conns
