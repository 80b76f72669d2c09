# bench/lib/callgrind.bash -- sourced by bench/instructions.sh: a PostgreSQL server run whole
# under valgrind's callgrind, and the instruction counts of its processes.
#
# Every process the postmaster forks (backends, the learner, the checkpointer, ...) stays
# under callgrind (--trace-children=yes also gives it a vgdb connection of its own) and
# writes its own file, $CG/cg.PID, when it exits; vgdb's callgrind commands (those of
# callgrind_control -z and -d) zero a running process's counters and dump them (to
# $CG/cg.PID.N, counting from the last zero or dump).  Needs PGHOST (the server's socket directory, the servers'
# user's), PGPORT, PG_BINDIR and as_server (run a command as the servers' user).
#
#   cg_server_start DATADIR OPTION...   start the postmaster on DATADIR under callgrind
#                                       (server options as postgres's -c ...), wait until
#                                       it accepts connections; sets CG, the files' folder
#   cg_wait_exit PID                    wait until process PID has exited and its file is
#                                       written (callgrind writes it at exit)
#   cg_server_stop DATADIR              stop the server and wait until every process of it
#                                       has written its file (else the cluster's folder could
#                                       not be removed while they still write)
#   cg_total FILE                       the instructions a file counts
#   cg_inclusive FILE FUNCTION          the instructions in FUNCTION and what it called
#   cg_zero PID, cg_dump PID            zero / dump a running process's counters; cg_dump
#                                       prints the new file's name

cg_server_start() {
    local datadir=$1 deadline
    shift
    CG=$PGHOST/callgrind
    as_server mkdir -p "$CG"
    # --vgdb-prefix in a folder of ours: vgdb finds the processes by it.  Without LOGNAME and
    # USER: valgrind names a process's FIFOs after them, and a forked backend, whose
    # environment the postmaster moved to make room for its process titles, no longer finds
    # its own ("vgdb FIFO cannot be opened": the process exits).
    set -- env -u LOGNAME -u USER valgrind --tool=callgrind --callgrind-out-file="$CG/cg.%p" --vgdb-prefix="$CG/vgdb" --trace-children=yes \
        "$PG_BINDIR/postgres" -D "$datadir" -k "$PGHOST" -p "$PGPORT" -c listen_addresses= "$@"
    [ "$(id -u)" -ne 0 ] || set -- runuser -u postgres -- "$@"
    (cd "$PGHOST" && exec "$@") >"$CG/server.log" 2>&1 &
    deadline=$(( $(date +%s) + 600 ))
    until "$PG_BINDIR/pg_isready" -q; do
        if [ "$(date +%s)" -gt "$deadline" ]; then
            echo "the server under callgrind did not accept connections within 600 s:" >&2
            tail -n 20 "$CG/server.log" >&2
            return 1
        fi
        sleep 1
    done
}

cg_wait_exit() {
    local deadline=$(( $(date +%s) + 600 ))
    while kill -0 "$1" 2>/dev/null || ! grep -q '^totals:' "$CG/cg.$1" 2>/dev/null; do
        if [ "$(date +%s)" -gt "$deadline" ]; then
            echo "process $1 did not exit, or wrote no callgrind file, within 600 s" >&2
            ls -l "$CG" >&2
            return 1
        fi
        sleep 0.5
    done
}

cg_server_stop() {
    local deadline=$(( $(date +%s) + 600 ))
    as_server "$PG_BINDIR/pg_ctl" -D "$1" -m fast -w -t 600 stop >/dev/null
    while pgrep -f -- "--callgrind-out-file=$CG/" >/dev/null; do
        if [ "$(date +%s)" -gt "$deadline" ]; then
            echo "processes under callgrind still running 600 s after the server stopped:" >&2
            pgrep -a -f -- "--callgrind-out-file=$CG/" >&2
            return 1
        fi
        sleep 0.5
    done
}

cg_total() {
    sed -n 's/^totals: *\([0-9]*\).*$/\1/p' "$1"
}

cg_inclusive() {
    callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null |
        awk -v f=":$2 " '!found && index($0, f) { gsub(",", "", $1); print $1; found = 1 } END { if (!found) print 0 }'
}

# vgdb, as callgrind_control calls it, but never forcing the process out of a system call
# (--max-invoke-ms=0: ptrace interrupts the learner's wait, which then fails): the command
# waits for the process's next instructions, the learner's within a naptime.
cg_command() {
    as_server env -u LOGNAME -u USER vgdb --vgdb-prefix="$CG/vgdb" --max-invoke-ms=0 --pid="$1" "$2" >>"$CG/vgdb.log" 2>&1
}

cg_zero() {
    cg_command "$1" zero
}

cg_dump() {
    local n
    n=$(( $({ compgen -G "$CG/cg.$1.*" || true; } | wc -l) + 1 ))	# dumps are numbered from 1
    cg_command "$1" dump
    if ! grep -q '^totals:' "$CG/cg.$1.$n" 2>/dev/null; then
        echo "callgrind: the dump of process $1 wrote no file $CG/cg.$1.$n" >&2
        return 1
    fi
    echo "$CG/cg.$1.$n"
}
