#!/usr/bin/env bash
# The budget pacer's kept window (src/routing/pacer_window.c) under a seeded
# random interleaving of three sessions, on a cluster of its own with
# model_select preloaded and the learner serving.  Two selectors with arms
# 'free' (cost 0) and 'dear' (cost 1), budget 0.5, pace 10: prr (greedy,
# pending_horizon 80) and pra (lin_ucb, count_pending, pending_horizon 40:
# a window of 80 decisions, the awaited rewards' older half).  Each session,
# at model_select.pacer_window_reuse 1 (the decisions read anew at every
# decision, reward marks kept), routes either, rewards its own decisions
# (committed or in its open transaction), begins and ends transactions (READ
# COMMITTED and REPEATABLE READ, committed or rolled back), makes, releases
# and rolls back savepoints, and routes in a PL/pgSQL block whose exception
# handler rolls the route back; one session sometimes routes with
# route_batch(log => true); a transaction may end in PREPARE TRANSACTION,
# committed or rolled back later by any session (its decisions then commit
# with an older created_at than others'), and now and then the server is
# shut down at once (pg_ctl -m immediate) and restarted, the sessions
# reconnecting.  Rewards go to decisions among their selector's
# newest 20 (a reward of a decision older than the window counts once the
# learner folds it).  Every route() in READ COMMITTED must log the λ of
# exact_lambda() and (pra) the awaited rewards of exact_awaited(), the
# pacer's functions of the whole log computed in SQL in the same session just
# before: the count under the decision's snapshot, whatever the learner has
# folded.  (Under REPEATABLE READ the pacer reads the newest snapshot, which
# those functions cannot: such routes are taken, not compared;
# pacer_reuse.sh checks one.)  At the end, every decision that recorded the
# versions it scored re-derives bit for bit (decision_scores()).  Ops are
# drawn from bash's RANDOM seeded by MS_PACER_RANDOM_SEED (default MS_RUN, or 1),
# MS_PACER_RANDOM_STEPS steps (default 240); a failure prints the seed and
# the last statements of the sessions (MS_TRACE_LINES, default 24).
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_pacer_random
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
. "$(dirname "$0")/lib/random_sessions.bash"
SEED=${MS_PACER_RANDOM_SEED:-${MS_RUN:-1}}
STEPS=${MS_PACER_RANDOM_STEPS:-240}
preloaded_server random "$(free_port $(( ${PGPORT:-55500} + 160 )))" \
    "model_select.learner_databases = '$DB'" "model_select.learner_naptime = '50ms'" \
    "model_select.learner_max_lag = '10min'" "max_prepared_transactions = 8"

ms_setup || bail "set-up failed"
budget_selector prr '{"budget": 0.5, "pace": 10, "pending_horizon": 80}' || bail "creating prr failed"
q >/dev/null <<'SQL' || bail "creating pra failed"
SELECT model_select.create_selector('pra', 2, ARRAY['free', 'dear'], 'lin_ucb', NULL,
       '{"budget": 0.5, "pace": 10, "pending_horizon": 40, "count_pending": true, "cost_model": false}');
INSERT INTO model_select.rewards(selector, arm, context, reward, cost)
VALUES ('pra', 'free', ARRAY[1, 0]::float8[], 0.4, 0), ('pra', 'dear', ARRAY[1, 0]::float8[], 0.9, 1);
SQL
q -f "$(dirname "$0")/lib/exact_lambda.sql" -f "$(dirname "$0")/lib/exact_awaited.sql" >/dev/null ||
    bail "creating exact_lambda() and exact_awaited() failed"
learner_serves() {
    wait_for "the learner's first pass" \
        "SELECT running AND last_pass IS NOT NULL FROM model_select.learner WHERE database = '$DB'"
}
check "the learner serves $DB" learner_serves
after_restart() { learner_serves; }

declare -A HORIZON=([prr]=80 [pra]=40)
declare -A OWN RR
for s in "${SESSIONS[@]}"; do OWN[$s]=""; done
RANDOM_CLUSTER=random RANDOM_SESSION_INIT="SET model_select.pacer_window_reuse = 1;"
random_sessions_open || bail "opening the sessions failed"

MISMATCHES=0 ROUTES=0
# routes SESSION: route one of the two selectors once; compare the λ and the awaited rewards
# logged with the exact ones taken just before ("decision_id λ awaited")
routes() {
    local s=$1 sel=pra want got same
    [ $((RANDOM % 2)) = 1 ] || sel=prr
    say_traced "$s" "SELECT exact_lambda('$sel', ${HORIZON[$sel]}) || ' ' || coalesce(exact_awaited('$sel', ${HORIZON[$sel]})::text, '-');" &&
        want=$(last_answer "$s")
    say_traced "$s" "DO \$\$ BEGIN PERFORM model_select.route('$sel', ARRAY[1, 0]::float8[]); END \$\$;
SELECT decision_id || ' ' || cost_weight || ' ' || coalesce(awaited::text, '-') FROM model_select.decisions ORDER BY decision_id DESC LIMIT 1;" &&
        got=$(last_answer "$s")
    OWN[$s]="${OWN[$s]} ${got%% *}"
    [ "${IN_TX[$s]}${RR[$s]:-0}" != 11 ] || return 0
    ROUTES=$((ROUTES + 1))
    read -r _ got_l got_a <<<"$got"
    read -r want_l want_a <<<"$want"
    [ "$sel" = pra ] || got_a=- want_a=-
    same=$(q -c "SELECT abs(${got_l:-NaN}::float8 - ${want_l:-NaN}) < 1e-9 AND ('$got_a' = '-' AND '$want_a' = '-'
                    OR '$got_a' <> '-' AND '$want_a' <> '-' AND (SELECT bool_and(abs(x - y) < 1e-9)
                         FROM unnest(nullif('$got_a', '-')::float8[], nullif('$want_a', '-')::float8[]) u(x, y)))")
    if [ "$same" != t ]; then
        MISMATCHES=$((MISMATCHES + 1))
        if [ "$MISMATCHES" -le 3 ]; then
            echo "# seed $SEED, step $STEP, session $s, $sel: λ and awaited '$got_l $got_a', the log's exact '$want'; the last statements:"
            printf '%s\n' "$TRACE" | sed 's/^/#   /'
        fi
    fi
}
# (one a prepared transaction of the session rewarded is locked by it: skipped)
rewards_own() {  # rewards_own SESSION: a reward for one of the session's decisions that has none
    local s=$1 ids id
    read -r -a ids <<<"${OWN[$s]}"
    [ "${#ids[@]}" -gt 0 ] || return 0
    id=${ids[$((RANDOM % ${#ids[@]}))]}
    say_traced "$s" "INSERT INTO model_select.rewards(decision_id, reward, cost)
              SELECT d.decision_id, 0.1 * (d.decision_id % 10), CASE a.name WHEN 'dear' THEN 1 ELSE 0 END
                FROM (SELECT * FROM model_select.decisions WHERE decision_id = $id FOR UPDATE SKIP LOCKED) d
                JOIN model_select.arms a USING (arm_id)
               WHERE true
                 AND d.decision_id IN (SELECT n.decision_id FROM model_select.decisions n WHERE n.selector_id = d.selector_id
                                        ORDER BY n.created_at DESC, n.decision_id DESC LIMIT 20)
                 AND NOT EXISTS (SELECT FROM model_select.rewards r WHERE r.decision_id = d.decision_id);"
}
step() {  # step SESSION: one op drawn for it
    local s=$1 r=$((RANDOM % 100))
    if [ $r = 99 ] && [ $((RANDOM % 2)) = 0 ]; then crash; return; fi
    if [ "${IN_TX[$s]}" = 0 ]; then
        if [ $r -lt 20 ]; then
            say_traced "$s" "BEGIN;"; IN_TX[$s]=1 RR[$s]=0
        elif [ $r -lt 26 ]; then
            say_traced "$s" "BEGIN ISOLATION LEVEL REPEATABLE READ;"; IN_TX[$s]=1 RR[$s]=1
        elif [ $r -lt 30 ] && [ ${#PREPARED[@]} -gt 0 ]; then
            resolve "$s"
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
        savepoint "$s"
    elif [ $r -lt 72 ] && [ "${SAVEPOINTS[$s]}" -gt 0 ]; then
        say_traced "$s" "ROLLBACK TO SAVEPOINT sp;"
    elif [ $r -lt 76 ] && [ "${SAVEPOINTS[$s]}" -gt 0 ]; then
        say_traced "$s" "RELEASE SAVEPOINT sp;"; SAVEPOINTS[$s]=$((SAVEPOINTS[$s] - 1))
    elif [ $r -lt 80 ]; then
        say_traced "$s" "DO \$\$ BEGIN PERFORM model_select.route('pra', ARRAY[1, 0]::float8[]); RAISE EXCEPTION 'undo';
                  EXCEPTION WHEN raise_exception THEN NULL; END \$\$;"
    elif [ $r -lt 83 ] && [ "$s" = c ]; then
        say_traced "$s" "SELECT count(*) FROM model_select.route_batch('prr',
                    'SELECT i, ARRAY[1, 0]::float8[] FROM generate_series(1, 2) i', true);"
    elif [ $r -lt 90 ]; then
        end_tx "$s" COMMIT
    elif [ $r -lt 95 ] && [ ${#PREPARED[@]} -lt 4 ]; then
        prepare "$s"
    else
        end_tx "$s" ROLLBACK
    fi
}

run_steps
OWN_BEFORE=$(q -c "SELECT count(own_tx) FROM model_select.decisions")
own_scored a pra 'ARRAY[1, 0]::float8[]' || bail "the last transaction failed"
check "seed $SEED, $STEPS steps: every route() in READ COMMITTED logged the exact λ and awaited rewards of its snapshot ($ROUTES routes, $MISMATCHES not; $RESOLVED prepared transactions resolved, $(crashes))" \
    test "$MISMATCHES" = 0
check "... routes were compared (more than a fifth of the steps)" test "$ROUTES" -gt $((STEPS / 5))
check "... of which some of pra's awaited rewards (not only zeros compared)" \
    is_true "SELECT count(*) > 0 FROM model_select.decisions d JOIN model_select.selectors s USING (selector_id)
              WHERE s.name = 'pra' AND EXISTS (SELECT FROM unnest(d.awaited) e WHERE e > 0)"
# what each decision recorded (versions, own_tx, own_seq) re-derives its scores bit for bit
check "every decision that recorded versions re-derives its chosen arm's ucb and mean bit for bit (decision_scores())" \
    rederive "d.versions IS NOT NULL"
VERSIONED=$(q -c "SELECT count(versions) || ' of ' || count(*) || ', ' || count(own_tx) FROM model_select.decisions")
check "... and most did (more than half of the decisions, some with rewards of their own transaction: $VERSIONED; $OWN_BEFORE of the seed's steps)" \
    is_true "SELECT count(versions) * 2 > count(*) AND count(own_tx) > 0 FROM model_select.decisions"
close_sessions
check "no session saw an error" eval '[ "$(seen "ERROR")" = 0 ] ||
    { for o in "${OUTS[@]}"; do grep -h ERROR "$MS_WORK/$o.out"; done | head -n 5 | sed "s/^/#   /"; false; }'
finish
