# Seeded random sessions (horizon_random.sh, cascade_random.sh,
# pacer_random.sh, learner_random.sh, standby_random.sh), sourced
# after common.bash and own_cluster.bash: three sessions stepped one
# statement at a time, with ops drawn from bash's RANDOM (drawn in this shell
# only, never in a subshell, so that a seed replays); the transactions open
# in them (IN_TX, SAVEPOINTS), the prepared ones left for any session to
# resolve (PREPARED), and immediate shutdowns of the test's own cluster after
# which the sessions reconnect (OUTS: every session output to check at the
# end).  The test sets SEED, STEPS, RANDOM_CLUSTER (its cluster's name),
# RANDOM_SESSION_INIT (SQL each session runs first, or empty) and defines
# step SESSION (and may define after_restart, run once the sessions are back
# after a crash); run_steps runs them.
SESSIONS=(a b c)
declare -A IN_TX SAVEPOINTS
PREPARED=() RESOLVED=0 OUTS=() CRASHES=0 OPEN_AT_CRASH=0

random_sessions_open() {
    local s
    for s in "${SESSIONS[@]}"; do
        session "$s"
        IN_TX[$s]=0 SAVEPOINTS[$s]=0
        [ -z "${RANDOM_SESSION_INIT:-}" ] || say "$s" "$RANDOM_SESSION_INIT" || return 1
    done
}
# no transaction open or prepared
idle() { [ "${IN_TX[a]}${IN_TX[b]}${IN_TX[c]}" = 000 ] && [ ${#PREPARED[@]} = 0 ]; }
begin() {  # begin SESSION [ODDS]: BEGIN, REPEATABLE READ 1 in ODDS times (never without ODDS), else READ COMMITTED
    local level="READ COMMITTED"
    [ -z "${2:-}" ] || [ $((RANDOM % $2)) != 0 ] || level="REPEATABLE READ"
    say_traced "$1" "BEGIN ISOLATION LEVEL $level;"
    IN_TX[$1]=1
}
savepoint() { say_traced "$1" "SAVEPOINT sp;"; SAVEPOINTS[$1]=$((SAVEPOINTS[$1] + 1)); }
# (a SAVEPOINT after an error had aborted the transaction was not made: a ROLLBACK TO it finds none)
NO_SAVEPOINT="savepoint \"sp\" does not exist"
end_tx() { say_traced "$1" "$2;"; IN_TX[$1]=0 SAVEPOINTS[$1]=0; }  # end_tx SESSION COMMIT|ROLLBACK
prepare() {  # prepare SESSION: PREPARE TRANSACTION, kept to be resolved later by any session
    local gid=${RANDOM_CLUSTER}_$STEP
    say_traced "$1" "PREPARE TRANSACTION '$gid';"
    IN_TX[$1]=0 SAVEPOINTS[$1]=0
    # (a transaction an error aborted is rolled back instead)
    [ "$(q -c "SELECT count(*) FROM pg_prepared_xacts WHERE gid = '$gid'")" = 0 ] || PREPARED+=("$gid")
}
resolve() {  # resolve SESSION: commit (3 in 4) or roll back a prepared transaction
    local k=$((RANDOM % ${#PREPARED[@]})) how
    how=$([ $((RANDOM % 4)) = 0 ] && echo ROLLBACK || echo COMMIT)
    say_traced "$1" "$how PREPARED '${PREPARED[$k]}';"
    RESOLVED=$((RESOLVED + 1))
    PREPARED=("${PREPARED[@]:0:$k}" "${PREPARED[@]:$((k + 1))}")
}
crash() {  # an immediate shutdown, transactions open or prepared, then a restart: the sessions reconnect
    local s
    as_server "$BINDIR/pg_ctl" -D "$CL/$RANDOM_CLUSTER" -m immediate -w -t 60 stop -s || return 1
    for s in "${SESSIONS[@]}"; do session_close "$s"; done
    CRASHES=$((CRASHES + 1))
    OPEN_AT_CRASH=$((OPEN_AT_CRASH + ${#PREPARED[@]} + IN_TX[a] + IN_TX[b] + IN_TX[c]))
    # (each session's output so far kept for the final checks)
    for s in "${SESSIONS[@]}"; do mv "$MS_WORK/$s.out" "$MS_WORK/$s$CRASHES.out"; OUTS+=("$s$CRASHES"); done
    ( close_session_fds; cluster_start "$RANDOM_CLUSTER" "$PGPORT" ) || return 1
    random_sessions_open || return 1
    # (a test may wait for what it needs of the new server: the learner's first pass)
    ! declare -F after_restart >/dev/null || after_restart || return 1
    TRACE="$(printf '%s\n%s' "$TRACE" "(immediate shutdown and restart)")"
}
ALTERS=0
alter() {  # alter SQL: a settings change run when no transaction is open (it would wait for them)
    q -c "$1" >/dev/null || return 1
    TRACE="$(printf '%s\n%s' "$TRACE" "(alter_selector)")"
    ALTERS=$((ALTERS + 1))
}
crashes() { echo "$CRASHES immediate shutdowns (with $OPEN_AT_CRASH transactions open or prepared)"; }
# The steps, drawn from RANDOM seeded by SEED; then what is open is committed.
run_steps() {
    local s gid
    RANDOM=$SEED
    for STEP in $(seq 1 "$STEPS"); do
        if ! step "${SESSIONS[$((RANDOM % 3))]}"; then
            echo "# seed $SEED, step $STEP: a session did not answer; the last statements:"
            printf '%s\n' "$TRACE" | sed 's/^/#   /'
            bail "seed $SEED, step $STEP"
        fi
    done
    for s in "${SESSIONS[@]}"; do [ "${IN_TX[$s]}" = 0 ] || say "$s" "COMMIT;"; done
    for gid in "${PREPARED[@]}"; do q -c "COMMIT PREPARED '$gid'" >/dev/null; done
    OUTS+=("${SESSIONS[@]}")
}
# own_scored SESSION SELECTOR CONTEXT: a transaction that routes, rewards the decision and routes again,
# so that a decision surely scores a reward of its own transaction (own_tx), whatever the
# seed's crashes and prepared transactions left of those
own_scored() {
    say "$1" "BEGIN;
SELECT decision_id AS did FROM model_select.route('$2', $3) \\gset
INSERT INTO model_select.rewards(decision_id, reward, cost) VALUES (:did, 0.5, 0);
SELECT count(*) FROM model_select.route('$2', $3);
COMMIT;"
}
# seen PATTERN: the lines of every session's output that match
seen() { local o; for o in "${OUTS[@]}"; do cat "$MS_WORK/$o.out"; done | grep -c -E "$1" || true; }
