#!/usr/bin/env bash
# Cascades under seeded random transactions of three sessions: observations
# by selector and context (1-6 rows of one selector in a statement) and of
# logged cascades (cascade_route(), then 1-2 of its arms named by its id, an
# arm twice: 23505), cascade_refit() (from scratch or warm), arms retired and
# added back, reads (cascade_next()), an unrelated write first; BEGIN (READ
# COMMITTED or REPEATABLE READ), COMMIT, ROLLBACK, savepoints and ROLLBACK TO
# them, PREPARE TRANSACTION resolved later by any session; immediate
# shutdowns (pg_ctl -m immediate) whatever is open or prepared, then a
# restart; and, with no transaction open, alter_selector() of the rff_ucb
# selector's features and bandwidth (it refits the cascade states).  Inserts of the same arm wait for
# each other (each writes the arm's state): sessions run with a lock_timeout
# so that one waiting for another, or for a prepared transaction, gets 55P03
# and the driver goes on.
# Selectors (dimension 3): cl lin_ucb (a, b, c; c retired and added back),
# cg greedy (a, b; b retired and added back), cr rff_ucb (a, b; 4 features).
# Each observation statement writes a ledger row per observation in the same
# statement, so the ledger holds exactly the observations that committed.
# At the end:
#  - per arm, cascade_arm_stats.n, the log's count and the log's sum of
#    values equal the ledger's count and sum;
#  - every arm's state equals a from-scratch cascade_refit()'s: n, and at 3
#    probes the width to 1e-9 and (where rho was fit at n) the estimate to
#    1e-6 (lib/cascade_scores.sql);
#  - the only errors are 55P03 (lock timeout), 40001 under REPEATABLE READ
#    (another insert of the arm committed after the snapshot), 55000 (a
#    retired arm), 23505 (an arm twice in a cascade), 42710 (an arm added
#    back by another session meanwhile), and a ROLLBACK TO a savepoint that
#    an aborted transaction never made.
# Ops are drawn from bash's RANDOM seeded by MS_CASCADE_RANDOM_SEED (default
# MS_RUN, or 1), MS_CASCADE_RANDOM_STEPS steps (default 300); a failure prints the seed
# and the last statements (MS_TRACE_LINES, default 24).
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_cascade_random
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
. "$(dirname "$0")/lib/random_sessions.bash"
SEED=${MS_CASCADE_RANDOM_SEED:-${MS_RUN:-1}}
STEPS=${MS_CASCADE_RANDOM_STEPS:-300}
preloaded_server crandom "$(free_port $(( ${PGPORT:-55500} + 200 )))" "max_prepared_transactions = 8"

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selectors failed"
SELECT model_select.create_selector('cl', 3, ARRAY['a', 'b', 'c'], 'lin_ucb');
SELECT model_select.create_selector('cg', 3, ARRAY['a', 'b'], 'greedy');
SELECT model_select.create_selector('cr', 3, ARRAY['a', 'b'], 'rff_ucb', NULL, '{"features": 4}');
-- each session's logged cascades, the observations that committed, an unrelated table
CREATE TABLE ms_casc (session text, cascade_id bigint, arms text[]);
CREATE TABLE ms_ledger (selector text, arm text, value float8);
CREATE TABLE ms_scratch (session text);
SQL
q -f "$(dirname "$0")/lib/cascade_scores.sql" >/dev/null || bail "creating the cascade helpers failed"

SELS=(cl cg cr)
RANDOM_CLUSTER=crandom RANDOM_SESSION_INIT="SET lock_timeout = '200ms';"
random_sessions_open || bail "opening the sessions failed"
context() { CTX="ARRAY[$((RANDOM % 19 - 9)) * 0.1, $((RANDOM % 19 - 9)) * 0.1, 0.1 + $((RANDOM % 10)) * 0.1]::float8[]"; }
# Observations (the SELECT list of the columns COLS from FROM) and their ledger rows, in one statement.
observe_sql() {  # observe_sql COLS SELECT FROM
    echo "WITH o AS (INSERT INTO model_select.cascade_observations($1) SELECT $2 FROM $3
                     RETURNING selector, arm, value)
          INSERT INTO ms_ledger SELECT selector, arm, value FROM o;"
}
arms_of() { case $1 in cl) echo "a b c";; *) echo "a b";; esac; }
observe() {  # observe SESSION: 1-6 observations of one selector by context (a retired arm: 55000)
    local sel=${SELS[$((RANDOM % 3))]} n=$((RANDOM % 6 + 1)) u=$((RANDOM % 97)) v=$((RANDOM % 89))
    local k=$(($(arms_of "$sel" | wc -w)))
    say_traced "$1" "$(observe_sql "selector, arm, context, value, cost" \
        "'$sel', (ARRAY['a', 'b', 'c'])[1 + (g * $u) % $k],
         ARRAY[round(sin(g * $u)::numeric, 1), round(cos(g * $v)::numeric, 1), 0.1 + ((g * $v) % 10) * 0.1]::float8[],
         ((g * $v) % 11) * 0.1, (g % 3) * 0.05" "generate_series(1, $n) g")"
}
route_cascade() {  # route_cascade SESSION: a logged cascade, kept as the session's
    local sel=${SELS[$((RANDOM % 3))]}
    context
    say_traced "$1" "INSERT INTO ms_casc SELECT '$1', cascade_id, arms FROM model_select.cascade_route('$sel', $CTX);"
}
observe_cascade() {  # observe_cascade SESSION: 1-2 arms of one of the session's cascades, named by its id
    local n=$((RANDOM % 2 + 1)) u=$((RANDOM % 7)) v=$((RANDOM % 11))
    say_traced "$1" "$(observe_sql "cascade_id, arm, value, cost" \
        "c.cascade_id, c.arms[1 + (g + $u) % cardinality(c.arms)], ((g * $v) % 11) * 0.1, 0.02 * g" \
        "(SELECT * FROM ms_casc WHERE session = '$1' ORDER BY cascade_id DESC OFFSET $((RANDOM % 3)) LIMIT 1) c,
          generate_series(1, $n) g")"
}
refit() {  # refit SESSION
    say_traced "$1" "SELECT model_select.cascade_refit('${SELS[$((RANDOM % 3))]}', $([ $((RANDOM % 2)) = 0 ] && echo true || echo false));"
}
retire_or_add() {  # retire_or_add SESSION: cl's c or cg's b retired, or added back if retired
    local sel=cl arm=c
    [ $((RANDOM % 2)) = 0 ] || sel=cg arm=b
    if [ $((RANDOM % 2)) = 0 ]; then say_traced "$1" "SELECT model_select.retire_arm('$sel', '$arm');"
    else
        say_traced "$1" "SELECT model_select.add_arm('$sel', '$arm') FROM model_select.arms a
                          JOIN model_select.selectors s USING (selector_id)
                         WHERE s.name = '$sel' AND a.name = '$arm' AND NOT a.active;"
    fi
}
read_next() {  # read_next SESSION: the next arm after one queried
    context
    say_traced "$1" "SELECT model_select.cascade_next('${SELS[$((RANDOM % 3))]}', $CTX, 0.5, ARRAY['a']);"
}
alter_features() {  # with no transaction open (it waits for them): cr's features or bandwidth change
    if [ $((RANDOM % 2)) = 0 ]; then alter "SELECT model_select.alter_selector('cr', '{\"features\": $((RANDOM % 3 + 3))}')"
    else alter "SELECT model_select.alter_selector('cr', '{\"bandwidth\": 0.$((RANDOM % 5 + 5))}')"
    fi
}
step() {  # step SESSION: one op drawn for it
    local s=$1 r=$((RANDOM % 100))
    if [ $r -lt 3 ] && idle; then alter_features; return; fi
    if [ $r = 99 ] && [ $((RANDOM % 2)) = 0 ]; then crash; return; fi
    if [ "${IN_TX[$s]}" = 0 ]; then
        if [ $r -lt 30 ]; then begin "$s" 2
        elif [ $r -lt 45 ]; then observe "$s"
        elif [ $r -lt 55 ]; then route_cascade "$s"
        elif [ $r -lt 70 ]; then observe_cascade "$s"
        elif [ $r -lt 76 ]; then refit "$s"
        elif [ $r -lt 82 ]; then retire_or_add "$s"
        elif [ $r -lt 90 ] && [ ${#PREPARED[@]} -gt 0 ]; then resolve "$s"
        else read_next "$s"
        fi
        return
    fi
    if [ $r -lt 14 ]; then observe "$s"
    elif [ $r -lt 22 ]; then route_cascade "$s"
    elif [ $r -lt 36 ]; then observe_cascade "$s"
    elif [ $r -lt 40 ]; then refit "$s"
    elif [ $r -lt 44 ]; then retire_or_add "$s"
    elif [ $r -lt 47 ]; then read_next "$s"
    elif [ $r -lt 52 ]; then say_traced "$s" "INSERT INTO ms_scratch VALUES ('$s');"
    elif [ $r -lt 58 ]; then savepoint "$s"
    elif [ $r -lt 63 ] && [ "${SAVEPOINTS[$s]}" -gt 0 ]; then say_traced "$s" "ROLLBACK TO SAVEPOINT sp;"
    elif [ $r -lt 82 ]; then end_tx "$s" COMMIT
    elif [ $r -lt 90 ] && [ ${#PREPARED[@]} -lt 4 ]; then prepare "$s"
    else end_tx "$s" ROLLBACK
    fi
}

run_steps
TIMEOUT="canceling statement due to lock timeout"
RR_UPDATE="could not serialize access due to concurrent update"
RETIRED="arm \"[a-z]\" of selector \"[a-z]+\" is retired"
DUPLICATE="duplicate key value violates unique constraint"
ADDED="already has an active arm"
STATS="$(q -c "SELECT (SELECT count(*) FROM ms_ledger) || ' observations ('
                      || (SELECT count(*) FROM model_select.cascade_observations WHERE cascade_id IS NOT NULL)
                      || ' of ' || (SELECT count(*) FROM model_select.cascade_decisions) || ' cascades)'")"
echo "# seed $SEED: $STATS, $ALTERS alter_selector() calls, $RESOLVED prepared transactions resolved by a session, $(crashes);" \
     "refused: $(seen "$TIMEOUT") lock timeouts, $(seen "$RR_UPDATE") serialization failures," \
     "$(seen "$RETIRED") retired arms, $(seen "$DUPLICATE") arms twice, $(seen "$ADDED") arms added twice"
check "seed $SEED: every selector has observations, some of them of logged cascades" \
    is_true "SELECT count(DISTINCT selector) = 3 AND bool_or(cascade_id IS NOT NULL)
               FROM model_select.cascade_observations"
check "seed $SEED: per arm, cascade_arm_stats.n, the log's count and its sum of values equal the ledger's" \
    no_rows "SELECT st.selector || '/' || st.arm || ': n ' || st.n || ', log ' || count(o.obs_id) || ' '
                    || coalesce(sum(o.value), 0) || ', ledger ' || coalesce(min(l.n), 0) || ' ' || coalesce(min(l.s), 0)
               FROM model_select.cascade_arm_stats st
               JOIN model_select.selectors s ON s.name = st.selector
               JOIN model_select.arms a ON a.selector_id = s.selector_id AND a.name = st.arm
               LEFT JOIN model_select.cascade_observations o ON o.arm_id = a.arm_id
               LEFT JOIN (SELECT selector, arm, count(*) AS n, sum(value) AS s FROM ms_ledger GROUP BY 1, 2) l
                      ON l.selector = st.selector AND l.arm = st.arm
              GROUP BY st.selector, st.arm, st.n
             HAVING st.n <> count(o.obs_id) OR count(o.obs_id) <> coalesce(min(l.n), 0)
                 OR NOT ms_close(coalesce(sum(o.value), 0), coalesce(min(l.s), 0))"
check "seed $SEED: every arm's state equals a from-scratch cascade_refit()'s (widths 1e-9, estimates 1e-6)" \
    no_rows "SELECT * FROM ms_cascade_refit_diff()"
close_sessions
ERRORS=$(other_errors "${OUTS[@]}" | grep -v -E "$TIMEOUT|$RR_UPDATE|$RETIRED|$DUPLICATE|$ADDED|$NO_SAVEPOINT" || true)
check "no session saw another error than 55P03, 40001 under REPEATABLE READ, 55000 for a retired arm, 23505 for an arm twice in a cascade and 42710 for an arm added back by two sessions" \
    test -z "$ERRORS"
[ -z "$ERRORS" ] || printf '%s\n' "$ERRORS" | head -n 5 | sed 's/^/#   /'
finish
