#!/usr/bin/env bash
# Throwaway production services on loopback, for the deploy test and for trying the production
# instance on one machine:
#
#   deploy/local_services.sh install         PostgreSQL from the Debian packages, if missing
#   deploy/local_services.sh start STATE_DIR a PostgreSQL cluster and an S3 server (moto) on
#                                            127.0.0.1, free ports; writes STATE_DIR/env
#   deploy/local_services.sh stop STATE_DIR  stops both and deletes the cluster
#
# Idempotent: install does nothing when PostgreSQL is there; start on a started STATE_DIR only
# rewrites the env file; stop on a stopped one does nothing. PostgreSQL refuses to run as root,
# so as root the cluster belongs to the `postgres` user the Debian package creates. The S3
# server is moto's (the `moto[server]` package of the dev extra), run by PYTHON (default: the
# python3 on PATH). Only the processes this script started are stopped, by their pid files.
set -euo pipefail

PYTHON=${PYTHON:-python3}
BUCKET=${RAG_PIPELINE_TEST_BUCKET:-rag-pipeline}

pg_bin() {
  local found
  found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$found" ] && [ -x "$found/pg_ctl" ]; then echo "$found"; return 0; fi
  if command -v pg_ctl >/dev/null 2>&1; then dirname "$(command -v pg_ctl)"; return 0; fi
  return 1
}

install_postgres() {
  if pg_bin >/dev/null; then
    echo "postgresql: already installed ($(pg_bin))"
    return 0
  fi
  if [ "$(id -u)" != 0 ]; then
    echo "postgresql is not installed and this is not root: run 'apt-get install -y postgresql' as root" >&2
    return 1
  fi
  echo "postgresql: installing from the Debian packages"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  pg_bin >/dev/null
}

free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Runs a PostgreSQL program as the cluster's owner.
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start() {
  local state=$1
  mkdir -p "$state"
  state=$(cd "$state" && pwd)
  install_postgres
  local bin; bin=$(pg_bin)

  # PostgreSQL: its own folder, owned by the user it runs as (a root-only temp dir would do).
  local pgdir pgport
  if [ -f "$state/pgdir" ]; then pgdir=$(cat "$state/pgdir"); else
    pgdir=$(mktemp -d /tmp/rag-pipeline-pg.XXXXXX)
    echo "$pgdir" > "$state/pgdir"
  fi
  if [ "$(id -u)" = 0 ]; then chown postgres "$pgdir"; fi
  if [ ! -f "$pgdir/data/PG_VERSION" ]; then
    as_owner "$bin/initdb" -D "$pgdir/data" -U dagster --auth=trust -E UTF8 >"$pgdir/initdb.log"
  fi
  if as_owner "$bin/pg_ctl" -D "$pgdir/data" status >/dev/null 2>&1; then
    pgport=$(cat "$state/pgport")
  else
    pgport=$(free_port)
    as_owner "$bin/pg_ctl" -D "$pgdir/data" -l "$pgdir/postgres.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $pgport -k $pgdir -c fsync=off" start >/dev/null
    echo "$pgport" > "$state/pgport"
  fi
  if ! "$bin/psql" -h 127.0.0.1 -p "$pgport" -U dagster -d postgres -tAc \
      "select 1 from pg_database where datname = 'dagster'" | grep -q 1; then
    "$bin/createdb" -h 127.0.0.1 -p "$pgport" -U dagster dagster
  fi

  # S3: moto in server mode.
  local s3port
  if [ -f "$state/moto.pid" ] && kill -0 "$(cat "$state/moto.pid")" 2>/dev/null; then
    s3port=$(cat "$state/s3port")
  else
    s3port=$(free_port)
    "$PYTHON" -m moto.server -H 127.0.0.1 -p "$s3port" >"$state/moto.log" 2>&1 &
    echo $! > "$state/moto.pid"
    echo "$s3port" > "$state/s3port"
    for _ in $(seq 1 100); do
      if "$PYTHON" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$s3port/')" 2>/dev/null; then break; fi
      sleep 0.2
    done
  fi
  AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_DEFAULT_REGION=us-east-1 \
    "$PYTHON" - "$s3port" "$BUCKET" <<'PY'
import sys
import pyarrow.fs as pafs
port, bucket = sys.argv[1:]
fs = pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{port}", scheme="http", region="us-east-1",
                       allow_bucket_creation=True)
if fs.get_file_info(bucket).type == pafs.FileType.NotFound:
    fs.create_dir(bucket)
PY

  cat > "$state/env" <<ENV
export DAGSTER_PG_HOST=127.0.0.1
export DAGSTER_PG_PORT=$pgport
export DAGSTER_PG_USER=dagster
export DAGSTER_PG_PASSWORD=
export DAGSTER_PG_DB=dagster
export AWS_ACCESS_KEY_ID=testing
export AWS_SECRET_ACCESS_KEY=testing
export AWS_DEFAULT_REGION=us-east-1
export RAG_PIPELINE_S3_ENDPOINT=127.0.0.1:$s3port
export RAG_PIPELINE_WAREHOUSE='s3://$BUCKET/warehouse?endpoint_override=127.0.0.1:$s3port&scheme=http&region=us-east-1'
ENV
  echo "postgresql on 127.0.0.1:$pgport ($pgdir), S3 on 127.0.0.1:$s3port (bucket $BUCKET); env in $state/env"
}

stop() {
  local state=$1
  [ -d "$state" ] || return 0
  if [ -f "$state/moto.pid" ]; then
    kill "$(cat "$state/moto.pid")" 2>/dev/null || true
    rm -f "$state/moto.pid"
  fi
  if [ -f "$state/pgdir" ]; then
    local pgdir; pgdir=$(cat "$state/pgdir")
    if [ -f "$pgdir/data/PG_VERSION" ] && pg_bin >/dev/null; then
      as_owner "$(pg_bin)/pg_ctl" -D "$pgdir/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    case "$pgdir" in /tmp/rag-pipeline-pg.*) rm -rf "$pgdir" ;; esac
    rm -f "$state/pgdir" "$state/pgport"
  fi
}

case "${1:-}" in
  install) install_postgres ;;
  start) start "${2:?usage: $0 start STATE_DIR}" ;;
  stop) stop "${2:?usage: $0 stop STATE_DIR}" ;;
  *) echo "usage: $0 install | start STATE_DIR | stop STATE_DIR" >&2; exit 2 ;;
esac
