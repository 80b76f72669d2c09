#!/usr/bin/env bash
# Usage: scripts/with-cluster.sh CMD [ARG...]
#
# Create a throwaway PostgreSQL 15 cluster in a temporary directory, start it
# (Unix socket only, in that directory), run CMD with PGHOST, PGPORT, PGUSER
# and PGDATABASE pointing at it, then stop the server and delete the
# directory -- always, also when CMD fails or the script is interrupted.
# Exits with CMD's exit status.  When CMD fails, the server's log is copied
# to MS_SERVER_LOG (default log/server.log, below the current directory).
#
# As root the server runs as user "postgres"; otherwise as the calling user.
set -euo pipefail

if [ $# -lt 1 ]; then
    echo "usage: $0 CMD [ARG...]" >&2
    exit 2
fi

PG_BINDIR=${PG_BINDIR:-/usr/lib/postgresql/15/bin}
for b in initdb pg_ctl psql; do
    if [ ! -x "$PG_BINDIR/$b" ]; then
        echo "with-cluster: $PG_BINDIR/$b not found (run scripts/ensure-deps.sh)" >&2
        exit 1
    fi
done

# Run a server-side command as the server user, from inside the temp dir (the
# postgres user may not be able to read the caller's working directory).
as_server() {
    if [ "$(id -u)" -eq 0 ]; then
        (cd "$CLUSTER_DIR" && runuser -u postgres -- "$@")
    else
        (cd "$CLUSTER_DIR" && "$@")
    fi
}

CLUSTER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/model_select_pg.XXXXXX")
DATA_DIR=$CLUSTER_DIR/data
LOG_FILE=$CLUSTER_DIR/server.log
started=0

# shellcheck disable=SC2317  # invoked via trap
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ "$started" = 1 ] && [ -f "$DATA_DIR/postmaster.pid" ]; then
        if ! as_server "$PG_BINDIR/pg_ctl" -D "$DATA_DIR" -m fast -w -t 60 stop >/dev/null; then
            echo "with-cluster: fast stop failed, trying immediate stop" >&2
            as_server "$PG_BINDIR/pg_ctl" -D "$DATA_DIR" -m immediate -w -t 30 stop >/dev/null || true
        fi
    fi
    rm -rf "$CLUSTER_DIR"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ "$(id -u)" -eq 0 ]; then
    chown postgres: "$CLUSTER_DIR"
fi
chmod 700 "$CLUSTER_DIR"

# A port nothing listens on over TCP.  (The server itself only listens on a
# socket in $CLUSTER_DIR, so a clash could not break anything anyway.)
# Also skip ports used by other clusters of this script running concurrently.
port_in_use() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null ||
        compgen -G "${TMPDIR:-/tmp}/model_select_pg.*/.s.PGSQL.$1" >/dev/null
}
PORT=${MS_TEST_PORT:-54329}
while port_in_use "$PORT"; do
    PORT=$((PORT + 1))
done

as_server "$PG_BINDIR/initdb" -D "$DATA_DIR" -A trust -U postgres \
    --encoding=UTF8 --locale=C.UTF-8 >"$CLUSTER_DIR/initdb.log" 2>&1 || {
    echo "with-cluster: initdb failed:" >&2
    cat "$CLUSTER_DIR/initdb.log" >&2
    exit 1
}

# max_prepared_transactions: codebook_refit.sh prepares a transaction.
# MS_CLUSTER_OPTS: more server options, e.g. benchmarks with
# "-c shared_preload_libraries=model_select".
started=1
as_server "$PG_BINDIR/pg_ctl" -D "$DATA_DIR" -l "$LOG_FILE" -w -t 60 \
    -o "-k '$CLUSTER_DIR' -p $PORT -c listen_addresses='' -c fsync=off -c shared_buffers=128MB -c max_prepared_transactions=4 ${MS_CLUSTER_OPTS:-}" \
    start >/dev/null || {
    echo "with-cluster: server failed to start:" >&2
    cat "$LOG_FILE" >&2 || true
    exit 1
}

unset PGHOSTADDR PGSERVICE PGSERVICEFILE PGCLUSTER PGPASSWORD
export PGHOST=$CLUSTER_DIR PGPORT=$PORT PGUSER=postgres PGDATABASE=postgres
export PATH="$PG_BINDIR:$PATH"

echo "with-cluster: server running (PGHOST=$PGHOST PGPORT=$PGPORT)"

rc=0
"$@" || rc=$?

# The server's log is not printed: it holds the errors that tests cause on
# purpose, and a failing command says what failed itself.  It is kept.
if [ "$rc" -ne 0 ]; then
    kept=${MS_SERVER_LOG:-log/server.log}
    if mkdir -p "$(dirname "$kept")" && cp "$LOG_FILE" "$kept" 2>/dev/null; then
        echo "with-cluster: command failed (exit $rc); the server's log is in $kept" >&2
    else
        echo "with-cluster: command failed (exit $rc)" >&2
    fi
fi
exit "$rc"
