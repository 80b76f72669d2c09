#!/usr/bin/env bash
# The budget pacer's kept window (src/routing/pacer_window.c) under a seeded
# random interleaving of three sessions, on a cluster of its own with
# model_select preloaded and the learner serving: each session, at
# model_select.pacer_window_reuse 1 (a read anew of the decisions at every
# decision, reward marks kept), routes, rewards its own decisions (committed
# or in its open transaction), begins and ends transactions (READ COMMITTED
# and REPEATABLE READ, committed or rolled back), makes, releases and rolls
# back savepoints, and routes in a PL/pgSQL block whose exception handler
# rolls the route back; one session sometimes routes with
# route_batch(log => true).  Rewards go to decisions among the newest 30 (the
# window holds 40): a reward of an older decision counts once the learner
# folds it.  Every λ a route() logs in READ COMMITTED must equal
# exact_lambda() (the pacer's function of the whole log) taken in the same
# session just before: the count under the decision's snapshot, whatever the
# learner has folded.  (Under REPEATABLE READ the pacer reads the newest
# snapshot, which exact_lambda() cannot: those routes are taken, not
# compared; pacer_reuse.sh checks one.)  Ops are drawn from bash's
# RANDOM seeded by MS_PACER_RANDOM_SEED (default 1), MS_PACER_RANDOM_STEPS
# steps (default 240); a failure prints the seed and each session's last ops.
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_pacer_random
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
export OPENBLAS_NUM_THREADS=1
SEED=${MS_PACER_RANDOM_SEED:-1}
STEPS=${MS_PACER_RANDOM_STEPS:-240}
preloaded_server random "$(free_port $(( ${PGPORT:-55500} + 160 )))" \
    "model_select.learner_databases = '$DB'" "model_select.learner_naptime = '50ms'" \
    "model_select.learner_max_lag = '10min'"

ms_setup || bail "set-up failed"
budget_selector prr '{"budget": 0.5, "pace": 10, "pending_horizon": 80}' || bail "creating the selector failed"
q -f "$(dirname "$0")/lib/exact_lambda.sql" >/dev/null || bail "creating exact_lambda() failed"
check "the learner serves $DB" wait_for "the learner's first pass" \
    "SELECT running AND last_pass IS NOT NULL FROM model_select.learner WHERE database = '$DB'"

ROUTE="DO \$\$ BEGIN PERFORM model_select.route('prr', ARRAY[1, 0]::float8[]); END \$\$;
SELECT decision_id || ' ' || cost_weight FROM model_select.decisions ORDER BY decision_id DESC LIMIT 1;"
SESSIONS=(a b c)
declare -A IN_TX SAVEPOINTS OWN
TRACE=""
for s in "${SESSIONS[@]}"; do
    session "$s"
    say "$s" "SET model_select.pacer_window_reuse = 1;"
    IN_TX[$s]=0 SAVEPOINTS[$s]=0 OWN[$s]=""
done

MISMATCHES=0 ROUTES=0
run() {  # run SESSION SQL: say it, and keep it in the session's trace
    TRACE="$(printf '%s\n%s: %s' "$TRACE" "$1" "$2" | tail -n ${MS_PACER_RANDOM_TRACE:-24})"
    say "$1" "$2"
}
routes() {  # routes SESSION: route once, compare the λ logged with the exact one taken just before
    local s=$1 want got
    run "$s" "SELECT exact_lambda('prr', 80);" && want=$(last_answer "$s")
    run "$s" "$ROUTE" && got=$(last_answer "$s")
    OWN[$s]="${OWN[$s]} ${got%% *}"
    [ "${IN_TX[$s]}" != rr ] || return 0
    ROUTES=$((ROUTES + 1))
    if [ "$(q -c "SELECT abs(${got#* }::float8 - ${want:-NaN}) < 1e-9")" != t ]; then
        MISMATCHES=$((MISMATCHES + 1))
        if [ "$MISMATCHES" -le 3 ]; then
            echo "# seed $SEED, step $STEP, session $s: λ '${got#* }', the log's exact λ '$want'; the last statements:"
            printf '%s\n' "$TRACE" | sed 's/^/#   /'
            [ -z "${MS_PACER_RANDOM_DEBUG:-}" ] || cp "$CL/random.log" /tmp/pacer_dbg_$STEP.log; [ -z "${MS_PACER_RANDOM_DEBUG:-}" ] || q -c "SELECT * FROM model_select.learner_versions WHERE selector = 'prr'" -c "SELECT r.xmin, r.tx, r.seq, r.decision_id, r.cost, a.name FROM model_select.rewards r JOIN model_select.arms a USING (arm_id) ORDER BY tx, seq" -c "SELECT d.decision_id, d.xmin, d.created_at, a.name, d.cost_weight FROM model_select.decisions d JOIN model_select.arms a USING (arm_id) ORDER BY created_at DESC, decision_id DESC" | sed 's/^/#     /'
        fi
    fi
}
rewards_own() {  # rewards_own SESSION: a reward for one of the session's decisions that has none
    local s=$1 ids id
    read -r -a ids <<<"${OWN[$s]}"
    [ "${#ids[@]}" -gt 0 ] || return 0
    id=${ids[$((RANDOM % ${#ids[@]}))]}
    run "$s" "INSERT INTO model_select.rewards(decision_id, reward, cost)
              SELECT d.decision_id, 0.1 * (d.decision_id % 10), CASE a.name WHEN 'dear' THEN 1 ELSE 0 END
                FROM model_select.decisions d JOIN model_select.arms a USING (arm_id)
               WHERE d.decision_id = $id
                 AND d.decision_id IN (SELECT decision_id FROM model_select.decisions
                                        ORDER BY created_at DESC, decision_id DESC LIMIT 20)
                 AND NOT EXISTS (SELECT FROM model_select.rewards r WHERE r.decision_id = d.decision_id);"
}
step() {  # step SESSION: one op drawn for it
    local s=$1 r=$((RANDOM % 100))
    if [ "${IN_TX[$s]}" = 0 ]; then
        if [ $r -lt 20 ]; then
            run "$s" "BEGIN;"; IN_TX[$s]=1
        elif [ $r -lt 26 ]; then
            run "$s" "BEGIN ISOLATION LEVEL REPEATABLE READ;"; IN_TX[$s]=rr
        elif [ $r -lt 70 ]; then
            routes "$s"
        else
            rewards_own "$s"
        fi
        return
    fi
    if [ $r -lt 36 ]; then
        routes "$s"
    elif [ $r -lt 58 ]; then
        rewards_own "$s"
    elif [ $r -lt 66 ]; then
        run "$s" "SAVEPOINT sp;"; SAVEPOINTS[$s]=$((SAVEPOINTS[$s] + 1))
    elif [ $r -lt 72 ] && [ "${SAVEPOINTS[$s]}" -gt 0 ]; then
        run "$s" "ROLLBACK TO SAVEPOINT sp;"
    elif [ $r -lt 76 ] && [ "${SAVEPOINTS[$s]}" -gt 0 ]; then
        run "$s" "RELEASE SAVEPOINT sp;"; SAVEPOINTS[$s]=$((SAVEPOINTS[$s] - 1))
    elif [ $r -lt 80 ]; then
        run "$s" "DO \$\$ BEGIN PERFORM model_select.route('prr', ARRAY[1, 0]::float8[]); RAISE EXCEPTION 'undo';
                  EXCEPTION WHEN raise_exception THEN NULL; END \$\$;"
    elif [ $r -lt 83 ] && [ "$s" = c ]; then
        run "$s" "SELECT count(*) FROM model_select.route_batch('prr',
                    'SELECT i, ARRAY[1, 0]::float8[] FROM generate_series(1, 2) i', true);"
    elif [ $r -lt 94 ]; then
        run "$s" "COMMIT;"; IN_TX[$s]=0 SAVEPOINTS[$s]=0
    else
        run "$s" "ROLLBACK;"; IN_TX[$s]=0 SAVEPOINTS[$s]=0
    fi
}

RANDOM=$SEED
for STEP in $(seq 1 "$STEPS"); do
    step "${SESSIONS[$((RANDOM % 3))]}" || bail "seed $SEED, step $STEP: a session failed"
done
for s in "${SESSIONS[@]}"; do [ "${IN_TX[$s]}" = 0 ] || say "$s" "COMMIT;"; done
check "seed $SEED, $STEPS steps: every route() in READ COMMITTED logged the exact λ of its snapshot ($ROUTES routes, $MISMATCHES not)" \
    test "$MISMATCHES" = 0
check "... routes were compared (more than a fifth of the steps)" test "$ROUTES" -gt $((STEPS / 5))
close_sessions
if grep -l -E "^(psql:.*)?ERROR" "$MS_WORK"/{a,b,c}.out >/dev/null 2>&1; then
    check "no session saw an error" false
    grep -h -E "ERROR" "$MS_WORK"/{a,b,c}.out | head -n 5 | sed 's/^/#   /'
else
    check "no session saw an error" true
fi
finish
