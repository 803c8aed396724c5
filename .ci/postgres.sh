#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests, from the Debian packages (no system service).
#
#   eval "$(.ci/postgres.sh start DIR)"   # initdb into DIR, start on a free loopback port;
#                                          # prints `export AUDIO_AGENT_TEST_PG_URL=...`
#   .ci/postgres.sh stop DIR              # stop it (DIR may then be removed)
#
# As root the server runs as the `postgres` user (initdb refuses root). The server listens on
# 127.0.0.1 and on a unix socket inside DIR only, trusts local connections, and is started with
# settings for a disposable test database (no fsync).
set -euo pipefail

cmd="${1:-}"
dir="${2:-}"
if [[ -z "$cmd" || -z "$dir" ]]; then
  echo "usage: $0 start|stop DIR" >&2
  exit 2
fi

bindir=""
if command -v pg_config >/dev/null 2>&1 && [[ -x "$(pg_config --bindir)/pg_ctl" ]]; then
  bindir="$(pg_config --bindir)"
fi
if [[ -z "$bindir" ]]; then
  bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
fi
if [[ -z "$bindir" || ! -x "$bindir/pg_ctl" ]]; then
  echo "PostgreSQL server binaries not found (apt-get install -y postgresql)" >&2
  exit 1
fi

as_owner() {
  if [[ "$(id -u)" == 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

case "$cmd" in
  start)
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    if [[ "$(id -u)" == 0 ]]; then
      chown postgres: "$dir"
    fi
    if [[ -s "$dir/data/postmaster.pid" ]]; then
      as_owner "$bindir/pg_ctl" -D "$dir/data" stop -m fast >/dev/null 2>&1 || true
    fi
    rm -rf "$dir/data"
    as_owner "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync \
      >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
      -o "-h 127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
      >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
    as_owner "$bindir/createdb" -h 127.0.0.1 -p "$port" -U postgres audio_agent_test
    echo "export AUDIO_AGENT_TEST_PG_URL=postgresql+psycopg://postgres@127.0.0.1:$port/audio_agent_test"
    ;;
  stop)
    if [[ -d "$dir/data" ]]; then
      as_owner "$bindir/pg_ctl" -D "$dir/data" stop -m fast >/dev/null 2>&1 || true
    fi
    ;;
  *)
    echo "usage: $0 start|stop DIR" >&2
    exit 2
    ;;
esac
