# Helpers for session tests that run clusters of their own (they crash them,
# or stream between two); sourced before lib/common.bash, with
#   MS_EXTRA_CLEANUP='cluster_stop_all'
# so that common.bash's exit trap stops them.  As root the servers run as
# user postgres.
#
#   CL                        a fresh private directory for the clusters
#   BINDIR                    the PostgreSQL binaries (PG_BINDIR, or pg_config --bindir)
#   as_server CMD...          run CMD in $CL as the servers' user
#   free_port START [NOT]     the first port from START no server uses (and not NOT)
#   cluster_initdb NAME       initdb $CL/NAME (trust, UTF-8; log in $CL/initdb.log)
#   cluster_start NAME PORT [OPTIONS]
#                             start $CL/NAME on a socket in $CL (log: $CL/NAME.log);
#                             fsync=off (an immediate stop loses no OS cache) unless
#                             OPTIONS (more server options, after it) say otherwise
#   cluster_stop_all          stop every cluster in $CL at once and remove $CL
#   own_server PORT           initdb and start $CL/data on PORT (start_server starts it
#                             again), PGHOST, PGPORT, PGUSER and PGDATABASE pointing at it
#   primary_start PORT        PRIMARY, the first free port from PORT, and STANDBY, the next;
#                             initdb and start $CL/primary on PRIMARY, PGHOST, PGPORT,
#                             PGUSER and PGDATABASE pointing at it
#   standby_start [CONF_LINE...]
#                             a streaming standby of the primary at port $PRIMARY
#                             (pg_basebackup -R into $CL/standby, the lines added to its
#                             postgresql.auto.conf) started on port $STANDBY
#   sq ARGS...                q (lib/common.bash) on the standby at port $STANDBY
#   replayed                  until that standby has replayed the primary's WAL written so
#                             far (120 s); else prints where it stands, and fails

BINDIR=${PG_BINDIR:-$(pg_config --bindir)}
CL=$(mktemp -d "${TMPDIR:-/tmp}/ms_own_pg.XXXXXX")
[ "$(id -u)" -eq 0 ] && chown postgres: "$CL"
chmod 700 "$CL"

as_server() {
    if [ "$(id -u)" -eq 0 ]; then (cd "$CL" && runuser -u postgres -- "$@")
    else (cd "$CL" && "$@"); fi
}

port_in_use() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null ||
        compgen -G "${TMPDIR:-/tmp}/*/.s.PGSQL.$1" >/dev/null
}

free_port() {
    local p=$1
    while port_in_use "$p" || [ "$p" = "${2:-}" ]; do p=$((p + 1)); done
    echo "$p"
}

cluster_initdb() {
    as_server "$BINDIR/initdb" -D "$CL/$1" -A trust -U postgres --encoding=UTF8 --locale=C.UTF-8 \
        >"$CL/initdb.log" 2>&1
}

cluster_start() {
    as_server "$BINDIR/pg_ctl" -D "$CL/$1" -l "$CL/$1.log" -w -t 60 \
        -o "-k '$CL' -p $2 -c listen_addresses='' -c fsync=off ${3:-}" start >/dev/null
}

# preloaded_initdb NAME CONF_LINE...: a new cluster NAME with model_select in
# shared_preload_libraries and the postgresql.conf lines given.  One learner
# worker per database unless MS_DEFAULT_WORKERS=1 or a line sets them: these
# tests read and stop "the" learner of a database; learner_workers.sh runs
# the default (2 workers).
preloaded_initdb() {
    local name=$1 workers=("model_select.learner_workers = 1")
    shift
    [ "${MS_DEFAULT_WORKERS:-0}" = 1 ] && workers=()
    cluster_initdb "$name" || bail "initdb failed: $(tail -n 5 "$CL/initdb.log")"
    printf '%s\n' "shared_preload_libraries = 'model_select'" "${workers[@]}" "$@" >"$CL/$name.conf"
    as_server sh -c "cat '$CL/$name.conf' >> '$CL/$name/postgresql.conf'"
}

# preloaded_server NAME PORT CONF_LINE...: that cluster started on PORT, and
# the test's connection set to it
preloaded_server() {
    local name=$1 port=$2
    shift 2
    preloaded_initdb "$name" "$@"
    cluster_start "$name" "$port" || bail "the server failed to start: $(tail -n 5 "$CL/$name.log")"
    export PGHOST=$CL PGPORT=$port PGUSER=postgres
}

cluster_stop_all() {
    local d p pids=()
    for d in "$CL"/*/; do
        [ -f "$d/PG_VERSION" ] || continue
        as_server "$BINDIR/pg_ctl" -D "$d" -m immediate -w stop >/dev/null 2>&1 &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || true; done
    rm -rf "$CL"
}

own_server() {
    PORT=$1
    cluster_initdb data || bail "initdb failed: $(tail -n 5 "$CL/initdb.log")"
    start_server() { cluster_start data "$PORT"; }
    start_server || bail "server failed to start: $(tail -n 5 "$CL/data.log")"
    export PGHOST=$CL PGPORT=$PORT PGUSER=postgres PGDATABASE=postgres
}

primary_start() {
    PRIMARY=$(free_port "$1")
    STANDBY=$(free_port $((PRIMARY + 1)) "$PRIMARY")
    cluster_initdb primary || bail "initdb failed: $(tail -n 5 "$CL/initdb.log")"
    cluster_start primary "$PRIMARY" || bail "primary failed to start: $(tail -n 5 "$CL/primary.log")"
    export PGHOST=$CL PGPORT=$PRIMARY PGUSER=postgres PGDATABASE=postgres
}

standby_start() {
    as_server "$BINDIR/pg_basebackup" -h "$CL" -p "$PRIMARY" -U postgres -D "$CL/standby" -R -X stream \
        --checkpoint=fast >"$CL/basebackup.log" 2>&1 || bail "pg_basebackup failed: $(tail -n 5 "$CL/basebackup.log")"
    [ $# = 0 ] || printf '%s\n' "$@" >> "$CL/standby/postgresql.auto.conf"
    cluster_start standby "$STANDBY" || bail "standby failed to start: $(tail -n 5 "$CL/standby.log")"
}

sq() { PGPORT=$STANDBY q "$@"; }

replayed() {
    local target
    target=$(q -c 'SELECT pg_current_wal_lsn()')
    for _ in $(seq 1 1200); do
        [ "$(sq -c "SELECT pg_last_wal_replay_lsn() >= '$target'::pg_lsn")" = t ] && return 0
        sleep 0.1
    done
    echo "#   the standby replayed up to $(sq -c 'SELECT pg_last_wal_replay_lsn()'), not $target"
    return 1
}
