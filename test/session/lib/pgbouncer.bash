# PgBouncer in front of the test server (sourced after lib/common.bash):
#
#   bouncer_start POOL_MODE POOL_SIZE USERS...
#        start /usr/sbin/pgbouncer (Debian's package) on a Unix socket in a
#        directory of its own, forwarding every database to the server of
#        PGHOST/PGPORT, trust authentication for USERS, at most POOL_SIZE
#        server connections per database and user; sets BOUNCER_HOST and
#        BOUNCER_PORT.  As root it runs as user postgres.  Stopped on exit
#        (add bouncer_stop to MS_EXTRA_CLEANUP).
#   bouncer_admin SQL    a command on its admin console (SHOW POOLS, ...)

PGBOUNCER=${PGBOUNCER:-/usr/sbin/pgbouncer}
BOUNCER_DIR=

bouncer_start() {
    local mode=$1 size=$2 u
    shift 2
    BOUNCER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/ms_bouncer.XXXXXX")
    BOUNCER_HOST=$BOUNCER_DIR
    BOUNCER_PORT=$(( ${PGPORT:-5432} + 1000 ))
    : >"$BOUNCER_DIR/users.txt"
    for u in "$@"; do printf '"%s" ""\n' "$u" >>"$BOUNCER_DIR/users.txt"; done
    cat >"$BOUNCER_DIR/pgbouncer.ini" <<INI
[databases]
* = host=$PGHOST port=$PGPORT
[pgbouncer]
listen_addr =
listen_port = $BOUNCER_PORT
unix_socket_dir = $BOUNCER_DIR
auth_type = trust
auth_file = $BOUNCER_DIR/users.txt
admin_users = postgres
pool_mode = $mode
default_pool_size = $size
max_client_conn = 400
max_db_connections = $size
reserve_pool_size = 0
ignore_startup_parameters = extra_float_digits
logfile = $BOUNCER_DIR/pgbouncer.log
pidfile = $BOUNCER_DIR/pgbouncer.pid
INI
    if [ "$(id -u)" -eq 0 ]; then
        chown -R postgres: "$BOUNCER_DIR"
        (cd "$BOUNCER_DIR" && "$PGBOUNCER" -d -q -u postgres "$BOUNCER_DIR/pgbouncer.ini")
    else
        "$PGBOUNCER" -d -q "$BOUNCER_DIR/pgbouncer.ini"
    fi || return 1
    local i
    for i in $(seq 1 100); do
        [ -S "$BOUNCER_DIR/.s.PGSQL.$BOUNCER_PORT" ] && return 0
        sleep 0.1
    done
    echo "# pgbouncer did not open its socket; its log:"; sed 's/^/#   /' "$BOUNCER_DIR/pgbouncer.log"
    return 1
}

bouncer_stop() {
    [ -n "$BOUNCER_DIR" ] || return 0
    if [ -f "$BOUNCER_DIR/pgbouncer.pid" ]; then
        kill "$(cat "$BOUNCER_DIR/pgbouncer.pid")" 2>/dev/null || true
        local i
        for i in $(seq 1 50); do [ -f "$BOUNCER_DIR/pgbouncer.pid" ] || break; sleep 0.1; done
    fi
    rm -rf "$BOUNCER_DIR"
}

bouncer_admin() {
    psql -X -q -A -t -h "$BOUNCER_HOST" -p "$BOUNCER_PORT" -U postgres -d pgbouncer -c "$1"
}
