#!/usr/bin/env bash
# The learner's rule under a seeded random workload: model_select preloaded,
# the learner serving, three sessions route and reward (their own decisions
# in the same transaction, and rewards by arm and context), commit, roll back
# and roll back to savepoints, prepare transactions that any session commits
# or rolls back later, and now and then checkpoint a selector, while
# the test stops the learner (SIGSTOP, idle) and lets it go on, and switches
# model_select.learner_max_lag between 1 s and 0 (decisions then score the
# final rows their backends fold themselves, LOAD_FINAL, instead of the
# learner's versions), and now and then shuts the server down at once
# (pg_ctl -m immediate) and restarts it, the sessions reconnecting.  Selectors: lin_ucb, rff_ucb (16 features) and
# lin_ucb with count_pending.  At the end every decision that recorded
# versions re-derives its chosen arm's ucb and mean bit for bit
# (decision_scores()), and every selector's scores equal rebuild_state()'s
# (rebuild_checks).  The one error a session may see is the documented 40001
# for a transaction older than a checkpoint of a selector it then rewards.
# Ops are drawn from bash's RANDOM seeded by MS_LEARNER_RANDOM_SEED (default
# MS_RUN, or 1), MS_LEARNER_RANDOM_STEPS steps (default 200).
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_learner_random
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all; [ -z "${STOPPED:-}" ] || kill -CONT "$STOPPED" 2>/dev/null || true'
. "$(dirname "$0")/lib/common.bash"
. "$(dirname "$0")/lib/random_sessions.bash"
SEED=${MS_LEARNER_RANDOM_SEED:-${MS_RUN:-1}}
STEPS=${MS_LEARNER_RANDOM_STEPS:-200}
preloaded_server lrandom "$(free_port $(( ${PGPORT:-55500} + 180 )))" \
    "model_select.learner_databases = '$DB'" "model_select.learner_naptime = '50ms'" \
    "model_select.learner_max_lag = '1s'" "max_prepared_transactions = 8"

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selectors failed"
SELECT model_select.create_selector('lr_lin', 3, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL, '{}');
SELECT model_select.create_selector('lr_rff', 3, ARRAY['a', 'b', 'c'], 'rff_ucb', NULL, '{"features": 16}');
SELECT model_select.create_selector('lr_cnt', 3, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL,
                                    '{"count_pending": true, "pending_horizon": 20}');
SQL
learner_pid() { q -c "SELECT pid FROM model_select.learner WHERE running AND last_pass IS NOT NULL"; }
learner_serves() {
    wait_for "the learner's first pass" \
        "SELECT running AND last_pass IS NOT NULL FROM model_select.learner WHERE database = '$DB'"
}
check "the learner serves $DB" learner_serves
after_restart() { learner_serves; }

SELS=(lr_lin lr_rff lr_cnt)
RANDOM_CLUSTER=lrandom
random_sessions_open
STOPPED="" LAG=1s STOPS=0 SWITCHES=0
context() { CTX="ARRAY[$((RANDOM % 19 - 9)) * 0.1, $((RANDOM % 19 - 9)) * 0.1, 0.5]::float8[]"; }
routes() {  # routes SESSION: route one selector; reward the decision in the same statement's transaction, or not
    local sel=${SELS[$((RANDOM % 3))]}
    context
    say_traced "$1" "SELECT decision_id AS did FROM model_select.route('$sel', $CTX) \\gset"
    [ $((RANDOM % 3)) = 0 ] ||
        say_traced "$1" "INSERT INTO model_select.rewards(decision_id, reward) VALUES (:did, $((RANDOM % 11)) * 0.1);"
}
rewards() {  # rewards SESSION: a reward by arm and context
    local arms=(a b c) sel=${SELS[$((RANDOM % 3))]}
    context
    say_traced "$1" "INSERT INTO model_select.rewards(selector, arm, context, reward)
              VALUES ('$sel', '${arms[$((RANDOM % 3))]}', $CTX, $((RANDOM % 11)) * 0.1);"
}
learner_op() {  # the test stops or lets the learner go on, or switches learner_max_lag
    local r=$((RANDOM % 4)) pid
    if [ $r = 0 ] && [ -z "$STOPPED" ]; then
        pid=$(learner_pid)
        if [ -n "$pid" ] && stop_idle "$pid"; then STOPPED=$pid STOPS=$((STOPS + 1)); fi
    elif [ $r = 1 ] && [ -n "$STOPPED" ]; then
        kill -CONT "$STOPPED"; STOPPED=""
    else
        SWITCHES=$((SWITCHES + 1))
        LAG=$([ "$LAG" = 1s ] && echo 0 || echo 1s)
        q -c "ALTER SYSTEM SET model_select.learner_max_lag = '$LAG'" -c "SELECT pg_reload_conf()" >/dev/null
    fi
}
step() {  # step SESSION: one op drawn for it
    local s=$1 r=$((RANDOM % 100))
    if [ $r -lt 6 ]; then learner_op; return; fi
    # (a learner stopped would hold the shutdown up until the postmaster kills it)
    if [ $r = 99 ] && [ -z "$STOPPED" ] && [ $((RANDOM % 2)) = 0 ]; then crash; return; fi
    if [ "${IN_TX[$s]}" = 0 ]; then
        if [ $r -lt 35 ]; then begin "$s" 4
        elif [ $r -lt 40 ] && [ ${#PREPARED[@]} -gt 0 ]; then resolve "$s"
        elif [ $r -lt 70 ]; then routes "$s"
        elif [ $r -lt 95 ]; then rewards "$s"
        else say_traced "$s" "SELECT model_select.checkpoint('${SELS[$((RANDOM % 3))]}');"
        fi
        return
    fi
    if [ $r -lt 40 ]; then routes "$s"
    elif [ $r -lt 55 ]; then rewards "$s"
    elif [ $r -lt 63 ]; then savepoint "$s"
    elif [ $r -lt 70 ] && [ "${SAVEPOINTS[$s]}" -gt 0 ]; then say_traced "$s" "ROLLBACK TO SAVEPOINT sp;"
    elif [ $r -lt 88 ]; then end_tx "$s" COMMIT
    elif [ $r -lt 93 ] && [ ${#PREPARED[@]} -lt 4 ]; then prepare "$s"
    else end_tx "$s" ROLLBACK
    fi
}

run_steps
[ -z "$STOPPED" ] || kill -CONT "$STOPPED"
STOPPED=""
OWN_BEFORE=$(q -c "SELECT count(own_tx) FROM model_select.decisions")
own_scored a lr_lin 'ARRAY[1, 0.5, 0.5]::float8[]' || bail "the last transaction failed"
q -c "ALTER SYSTEM SET model_select.learner_max_lag = '1s'" -c "SELECT pg_reload_conf()" >/dev/null
check "seed $SEED ($STOPS stops of the learner, $SWITCHES switches of learner_max_lag, $RESOLVED prepared transactions resolved, $(crashes)): every decision that recorded versions re-derives its chosen arm's ucb and mean bit for bit" \
    rederive "d.versions IS NOT NULL"
VERSIONED=$(q -c "SELECT count(versions) || ' of ' || count(*) || ', ' || count(own_tx) FROM model_select.decisions")
check "... most decisions recorded versions, some with rewards of their own transaction ($VERSIONED; $OWN_BEFORE of the seed's steps)" \
    is_true "SELECT count(versions) * 2 > count(*) AND count(own_tx) > 0 FROM model_select.decisions"
for sel in "${SELS[@]}"; do rebuild_checks "$sel"; done
close_sessions
ERRORS=$(other_errors "${OUTS[@]}" | grep -v -E "$NO_SAVEPOINT" || true)
check "no session saw another error than the documented 40001 ($(late_writer_refusals "${OUTS[@]}") of those)" \
    test -z "$ERRORS"
[ -z "$ERRORS" ] || printf '%s\n' "$ERRORS" | head -n 5 | sed 's/^/#   /'
finish
