#!/usr/bin/env bash
# A primary and a streaming hot standby of its own (as standby.sh), under a
# seeded random workload on the primary: three sessions insert rewards (by
# arm and context, and for decisions they route), in transactions that commit
# out of order, roll back, or roll back to a savepoint, or are prepared and
# committed or rolled back later by any session, and now and then checkpoint
# a selector; now and then the primary is shut down at once (pg_ctl -m
# immediate) and restarted, the sessions reconnecting, the standby's not.  Four selectors: lin_ucb (discount 0.95), rff_ucb
# (16 features), pak_ucb (window 40) and greedy with a budget (the pacer's
# window, kept on a standby).  After every step that commits, once the standby
# has replayed it, the scores of every selector at 4 contexts must be the same
# bits in three places: a standby session that has kept its caches since the
# start (warm: its folds, overlays, shared versions and the pacer's window at
# pacer_window_reuse 1), a new standby backend (cold), and the primary.
# It fails on the standby horizon bug fixed in
# 18fb5cc (warm sessions lost rewards committed out of order).  The one error
# a session may see is the documented 40001 for a transaction older than a
# checkpoint of a selector it then rewards.  Ops
# are drawn from bash's RANDOM seeded by MS_STANDBY_RANDOM_SEED (default MS_RUN, or 1),
# MS_STANDBY_RANDOM_STEPS steps (default 200); a failure prints the seed, the
# step and the last statements.
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_standby_random
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
. "$(dirname "$0")/lib/random_sessions.bash"
SEED=${MS_STANDBY_RANDOM_SEED:-${MS_RUN:-1}}
STEPS=${MS_STANDBY_RANDOM_STEPS:-200}

primary_start $(( ${PGPORT:-55500} + 170 ))

# (prepared transactions: on the standby too, which copies the setting with the base backup)
psql -X -q -d postgres -c "ALTER SYSTEM SET max_prepared_transactions = 8" &&
    as_server "$BINDIR/pg_ctl" -D "$CL/primary" -m fast -w -t 60 stop -s && cluster_start primary "$PRIMARY" ||
    bail "restarting the primary with prepared transactions failed"
ms_setup || bail "set-up failed"
SELECTORS="'sr_lin', 'sr_rff', 'sr_pak', 'sr_bud'"
q >/dev/null <<'SQL' || bail "creating the selectors failed"
SELECT model_select.create_selector('sr_lin', 3, ARRAY['a','b','c'], 'lin_ucb', NULL, '{"discount": 0.95}');
SELECT model_select.create_selector('sr_rff', 3, ARRAY['a','b','c'], 'rff_ucb', 'rbf', '{"features": 16}');
SELECT model_select.create_selector('sr_pak', 3, ARRAY['a','b','c'], 'pak_ucb', 'rbf', '{"window": 40}');
SELECT model_select.create_selector('sr_bud', 3, ARRAY['a','b','c'], 'greedy', NULL,
                                    '{"budget": 0.5, "pace": 10, "pending_horizon": 30}');
INSERT INTO model_select.rewards(selector, arm, context, reward, cost)
SELECT s, (ARRAY['a','b','c'])[1 + i % 3], ARRAY[sin(i), cos(i), sin(0.3 * i)]::float8[], (1 + sin(0.7 * i)) / 2,
       (i % 3) * 0.5
  FROM generate_series(1, 30) i, unnest(ARRAY['sr_lin', 'sr_rff', 'sr_pak', 'sr_bud']) s ORDER BY i, s;
SQL
standby_start "shared_preload_libraries = 'model_select'" "wal_retrieve_retry_interval = '100ms'"
check "the standby is in recovery, with the shared cache" \
    test "$(sq -c 'SELECT pg_is_in_recovery()') $(sq -c 'SHOW shared_preload_libraries')" = "t model_select"

# every selector's scores at 4 contexts, a digest of their text each (the shortest exact floats)
DIGEST="SELECT string_agg(s || ' ' || d, ', ' ORDER BY s) FROM (
          SELECT s, left(md5(string_agg(concat_ws(' ', i, x.arm, x.n, x.mean, x.width, x.ucb), ';'
                                        ORDER BY i, x.arm)), 8) d
            FROM unnest(ARRAY[$SELECTORS]) s, generate_series(1, 4) i,
                 LATERAL model_select.scores(s, ARRAY[sin(2 * i), cos(3 * i), 0.1 * i]::float8[]) x GROUP BY s) g"
PGPORT=$STANDBY session w
say w "SET model_select.pacer_window_reuse = 1;"
RANDOM_CLUSTER=primary
random_sessions_open
COMPARED=0 DIFFERENT=0
compare() {  # after a commit: the warm standby session, a cold standby backend and the primary agree
    local warm cold primary
    replayed || { DIFFERENT=$((DIFFERENT + 1)); return 0; }
    say w "$DIGEST;" && warm=$(last_answer w)
    cold=$(sq -c "$DIGEST")
    primary=$(q -c "$DIGEST")
    COMPARED=$((COMPARED + 1))
    if [ "$warm" != "$cold" ] || [ "$cold" != "$primary" ]; then
        DIFFERENT=$((DIFFERENT + 1))
        if [ "$DIFFERENT" -le 3 ]; then
            echo "# seed $SEED, step $STEP: warm $warm, cold $cold, primary $primary; the last statements:"
            printf '%s\n' "$TRACE" | sed 's/^/#   /'
        fi
    fi
}
SELS=(sr_lin sr_rff sr_pak sr_bud)
rewards() {  # rewards SESSION: one to three rewards by arm and context
    local s=$1 rows=() k arms=(a b c)
    for k in $(seq 0 $((RANDOM % 3))); do
        rows+=("('${SELS[$((RANDOM % 4))]}', '${arms[$((RANDOM % 3))]}',
                ARRAY[$((RANDOM % 19 - 9)) * 0.1, $((RANDOM % 19 - 9)) * 0.1, 0.5]::float8[],
                $((RANDOM % 11)) * 0.1, $((RANDOM % 3)) * 0.5)")
    done
    say_traced "$s" "INSERT INTO model_select.rewards(selector, arm, context, reward, cost) VALUES $(IFS=,; echo "${rows[*]}");"
}
routes() {  # routes SESSION: the budget selector routes, and half its decisions get a reward
    say_traced "$1" "SELECT decision_id AS did, arm AS darm
                FROM model_select.route('sr_bud', ARRAY[$((RANDOM % 19 - 9)) * 0.1, 0.3, 0.5]::float8[]) \\gset"
    say_traced "$1" "INSERT INTO model_select.rewards(decision_id, reward, cost)
              SELECT :did, 0.1 * (:did % 10), CASE :'darm' WHEN 'a' THEN 0 WHEN 'b' THEN 0.5 ELSE 1 END
               WHERE $((RANDOM % 2)) = 1;"
}
step() {  # step SESSION: one op drawn for it, then a comparison if something committed
    local s=$1 r=$((RANDOM % 100))
    if [ $r = 99 ] && [ $((RANDOM % 2)) = 0 ]; then crash && compare; return; fi
    if [ "${IN_TX[$s]}" = 0 ]; then
        if [ $r -lt 35 ]; then begin "$s"; return
        elif [ $r -lt 40 ] && [ ${#PREPARED[@]} -gt 0 ]; then resolve "$s"
        elif [ $r -lt 65 ]; then rewards "$s"
        elif [ $r -lt 92 ]; then routes "$s"
        else say_traced "$s" "SELECT model_select.checkpoint('${SELS[$((RANDOM % 4))]}');"
        fi
        compare; return
    fi
    if [ $r -lt 35 ]; then rewards "$s"
    elif [ $r -lt 50 ]; then routes "$s"
    elif [ $r -lt 60 ]; then savepoint "$s"
    elif [ $r -lt 68 ] && [ "${SAVEPOINTS[$s]}" -gt 0 ]; then say_traced "$s" "ROLLBACK TO SAVEPOINT sp;"
    elif [ $r -lt 86 ]; then end_tx "$s" COMMIT; compare
    elif [ $r -lt 92 ] && [ ${#PREPARED[@]} -lt 4 ]; then prepare "$s"
    else end_tx "$s" ROLLBACK
    fi
}

run_steps
compare
check "seed $SEED, $STEPS steps: after every commit the warm standby session, a cold standby backend and the primary score the same bits ($COMPARED comparisons, $DIFFERENT not; $RESOLVED prepared transactions resolved, $(crashes))" \
    test "$DIFFERENT" = 0
check "... compared more than a fifth of the steps" test "$COMPARED" -gt $((STEPS / 5))
check "... the primary's log grew (rewards of every selector, decisions of the budget's)" \
    is_true "SELECT count(DISTINCT selector) = 4 AND count(*) > 120 AND (SELECT count(*) > 10 FROM model_select.decisions)
               FROM model_select.rewards"
close_sessions
# the one error a session may see: 40001 for a transaction that took its xid before rewards of
# another transaction were checkpointed, then rewards that selector (retry: docs/operations.md),
# and its statements after it until it ends
ERRORS=$(other_errors "${OUTS[@]}" w | grep -v -E "$NO_SAVEPOINT" || true)
check "no session saw another error ($(late_writer_refusals "${OUTS[@]}") of those)" \
    test -z "$ERRORS"
[ -z "$ERRORS" ] || printf '%s\n' "$ERRORS" | head -n 5 | sed 's/^/#   /'
finish
