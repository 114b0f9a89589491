#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests (#32, docs/scaling.md#the-throwaway-server-for-tests):
#
#   tests/pg/server.sh start DIR   initdb a new cluster in DIR/data and start it; prints the libpq
#                                  connection string, also written to DIR/url
#   tests/pg/server.sh stop DIR    stop it (no postmaster left) and remove its data
#   tests/pg/server.sh restart DIR [DOWN]
#                                  pg_ctl restart of its server (fast: every session is cut), its
#                                  data and URL kept; with DOWN, it stays stopped DOWN seconds
#                                  first (tests/e2e/pg_faults.py)
#
# Unix socket only (listen_addresses='', the socket in DIR), so nothing listens on the network and
# two servers never share a port; durability off (fsync, full_page_writes, synchronous_commit):
# it holds test data only. PostgreSQL refuses to run as root: under root the cluster belongs to
# the `postgres` OS user (Debian's package makes it) and runs as it, and the tests, as root, reach
# its socket; otherwise it is the current user's. `start` on a DIR whose server still runs stops
# that one first: a DIR never has two. The ctest fixture `pg` (tests/pg/CMakeLists.txt) runs both.
# PG_BINDIR names the folder of initdb and pg_ctl; by default Debian's newest
# /usr/lib/postgresql/N/bin, else whatever PATH has.
set -euo pipefail

usage() {
  echo "usage: $0 start DIR | stop DIR | restart DIR [DOWN]" >&2
  exit 2
}
[ "$#" -eq 2 ] || { [ "$#" -eq 3 ] && [ "$1" = restart ]; } || usage
verb=$1
dir=$2
down=${3:-}
case "$verb" in start | stop | restart) ;; *) usage ;; esac

bindir=${PG_BINDIR:-}
if [ -z "$bindir" ]; then
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
      bindir=$d
      break
    fi
  done
fi
if [ -z "$bindir" ] && command -v initdb >/dev/null; then bindir=$(dirname "$(command -v initdb)"); fi
if [ -z "$bindir" ]; then
  echo "server.sh: no initdb/pg_ctl found: install PostgreSQL (scripts/setup.sh), or set PG_BINDIR" >&2
  exit 1
fi

# Who owns and runs the cluster, and how a command is run as that user.
as_owner=()
owner=$(id -un)
if [ "$(id -u)" -eq 0 ]; then
  owner=postgres
  if ! id -u postgres >/dev/null 2>&1; then
    echo "server.sh: running as root, and there is no \`postgres\` user to run the server as" >&2
    exit 1
  fi
  if command -v runuser >/dev/null; then
    as_owner=(runuser -u postgres --)
  else
    as_owner=(su postgres -s /bin/sh -c '"$0" "$@"')
  fi
fi

mkdir -p "$dir"
dir=$(cd "$dir" && pwd -P)
data=$dir/data

# Whether a postmaster runs on DIR/data (pg_ctl status: 0 running, 3 not, 4 no data folder).
running() {
  [ -f "$data/PG_VERSION" ] || return 1
  "${as_owner[@]}" "$bindir/pg_ctl" status -D "$data" >/dev/null 2>&1
}

stop() {
  if running; then
    "${as_owner[@]}" "$bindir/pg_ctl" stop -D "$data" -m fast -w -t 30 >/dev/null ||
      "${as_owner[@]}" "$bindir/pg_ctl" stop -D "$data" -m immediate -w -t 30 >/dev/null || true
  fi
  if running; then
    # A postmaster that would not stop: killed, so that no server outlives its tests.
    pid=$(head -n 1 "$data/postmaster.pid" 2>/dev/null || true)
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
    sleep 1
  fi
  if running; then
    echo "server.sh: the server in $data is still running" >&2
    exit 1
  fi
  if [ -f "$dir/sockets" ]; then
    rm -rf "$(cat "$dir/sockets")"
    rm -f "$dir/sockets"
  fi
  rm -rf "$data" "$dir/url"
}

if [ "$verb" = restart ]; then
  if ! running; then
    echo "server.sh: no server runs in $data" >&2
    exit 1
  fi
  if [ -z "$down" ]; then
    "${as_owner[@]}" "$bindir/pg_ctl" restart -D "$data" -m fast -w -t 60 -l "$dir/server.log" >/dev/null
  else
    "${as_owner[@]}" "$bindir/pg_ctl" stop -D "$data" -m fast -w -t 60 >/dev/null
    sleep "$down"
    "${as_owner[@]}" "$bindir/pg_ctl" start -D "$data" -w -t 60 -l "$dir/server.log" >/dev/null
  fi
  echo "server.sh: restarted the server in $dir"
  exit 0
fi

if [ "$verb" = stop ]; then
  stop
  echo "server.sh: stopped the server in $dir"
  exit 0
fi

stop  # a DIR never has two servers: one left by an earlier start goes first

# The server writes its socket and lock file into DIR, reached by its full path: a socket's path
# has at most 107 bytes, so a deep build tree gets a short folder in /tmp instead (DIR/sockets
# names it).
socket_dir=$dir
if [ "${#dir}" -gt 80 ]; then
  socket_dir=$(mktemp -d /tmp/jr2-pg.XXXXXX)
  echo "$socket_dir" >"$dir/sockets"
fi
mkdir -p "$data"
if [ "$owner" = postgres ] && [ "$(id -u)" -eq 0 ]; then
  chown postgres: "$dir" "$data" "$socket_dir"
  if ! "${as_owner[@]}" test -w "$dir"; then
    echo "server.sh: the postgres user cannot reach $dir (a folder above it is closed to it)" >&2
    exit 1
  fi
fi
chmod 0700 "$data"
chmod 0755 "$dir" "$socket_dir"  # the tests, run by root or by the owner, reach the socket

# The port names the socket file only (.s.PGSQL.PORT): no TCP port is opened, so any number that
# has no socket in the folder will do; a random one keeps a port in a URL from being a constant.
port=$((20000 + RANDOM % 30000))

"${as_owner[@]}" "$bindir/initdb" -D "$data" -U "$owner" --auth=trust -E UTF8 --no-locale --no-sync \
  >"$dir/initdb.log" 2>&1 || {
  cat "$dir/initdb.log" >&2
  exit 1
}
cat >>"$data/postgresql.conf" <<EOF
# tests/pg/server.sh: a throwaway server for tests, Unix socket only, durability off.
listen_addresses = ''
unix_socket_directories = '$socket_dir'
unix_socket_permissions = 0777
port = $port
fsync = off
full_page_writes = off
synchronous_commit = off
max_connections = 100
EOF
if ! "${as_owner[@]}" "$bindir/pg_ctl" start -D "$data" -l "$dir/server.log" -w -t 60 >/dev/null; then
  cat "$dir/server.log" >&2
  exit 1
fi
url="host=$socket_dir port=$port dbname=postgres user=$owner"
echo "$url" >"$dir/url"
echo "$url"
