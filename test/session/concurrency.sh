#!/usr/bin/env bash
# Concurrency: several sessions inserting rewards for the same arm at the same
# time lose none -- the reward log, the arm's folded state and a from-scratch
# rebuild must all agree.
#
# Needs PGHOST/PGPORT/PGUSER (see scripts/with-cluster.sh); uses its own
# database, dropped at the end.
set -euo pipefail

DB=model_select_conc
CLIENTS=4
PER_CLIENT=150
TOTAL=$((CLIENTS * PER_CLIENT))
PROBE='ARRAY[0.3, -1.2, 2.5, 0.7]::float8[]'

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ms_conc.XXXXXX")
cleanup() {
    dropdb --if-exists "$DB" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# psql against the test database: unaligned, tuples only, stop on error.
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" "$@"; }

passed=0
failed=0
n=0
check() {  # check DESCRIPTION CMD... -- CMD must succeed for "ok"
    local desc=$1; shift
    n=$((n + 1))
    if "$@"; then
        echo "ok $n - $desc"
        passed=$((passed + 1))
    else
        echo "not ok $n - $desc"
        failed=$((failed + 1))
    fi
}
# is_true SQL -- the query returns exactly "t"
is_true() {
    local out
    out=$(q -c "$1" 2>&1) || { echo "#   query failed: $out"; return 1; }
    [ "$out" = t ] || { echo "#   got: $out"; return 1; }
}
finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}

# -- set-up ------------------------------------------------------------------
dropdb --if-exists "$DB" >/dev/null 2>&1 || true
if ! createdb "$DB" ||
   ! q -c 'CREATE EXTENSION model_select' ||
   ! q -c "SELECT model_select.create_selector('conc', 4, ARRAY['a','b'],
                'pak_ucb', NULL, '{\"cap\": 5000}'::jsonb)" >/dev/null
then
    echo "Bail out! set-up failed"
    failed=$((failed + 1))
    finish || exit 1
fi

# -- concurrent inserts ------------------------------------------------------
for c in $(seq 1 "$CLIENTS"); do
    f=$WORK/client_$c.sql
    for i in $(seq 1 "$PER_CLIENT"); do
        printf "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('conc', 'a', ARRAY[1, %d, %d, 0.5]::float8[], (%d %% 10) / 10.0);\n" \
            "$i" "$c" "$i"
    done >"$f"
done

pids=()
for c in $(seq 1 "$CLIENTS"); do
    psql -X -q -v ON_ERROR_STOP=1 -d "$DB" -f "$WORK/client_$c.sql" \
        >"$WORK/client_$c.log" 2>&1 &
    pids+=($!)
done
client_failures=0
for c in $(seq 1 "$CLIENTS"); do
    if ! wait "${pids[$((c - 1))]}"; then
        client_failures=$((client_failures + 1))
        echo "# client $c failed:"
        sed 's/^/#   /' "$WORK/client_$c.log" | tail -n 20
    fi
done

# -- checks ------------------------------------------------------------------
check "all $CLIENTS clients completed without error" [ "$client_failures" -eq 0 ]

check "reward log has $TOTAL rows" \
    is_true "SELECT count(*) = $TOTAL FROM model_select.rewards"

check "arm_stats: n = $TOTAL for arm a" \
    is_true "SELECT n = $TOTAL FROM model_select.arm_stats WHERE selector = 'conc' AND arm = 'a'"

q -c "SELECT model_select.checkpoint('conc')" >/dev/null
check "checkpoint() leaves no reward pending" \
    is_true "SELECT sum(pending) = 0 FROM model_select.arm_stats WHERE selector = 'conc'"

check "the checkpoint of arm a holds all $TOTAL rewards" \
    is_true "SELECT st.n = $TOTAL FROM model_select.arm_state st
               JOIN model_select.arms a ON a.arm_id = st.arm_id
               JOIN model_select.selectors s ON s.selector_id = a.selector_id
              WHERE s.name = 'conc' AND a.name = 'a'"

check "arm_state.reward_sum equals sum(reward) of the log (1e-9)" \
    is_true "SELECT abs(st.reward_sum - (SELECT sum(reward) FROM model_select.rewards)) <= 1e-9
               FROM model_select.arm_state st
               JOIN model_select.arms a ON a.arm_id = st.arm_id
               JOIN model_select.selectors s ON s.selector_id = a.selector_id
              WHERE s.name = 'conc' AND a.name = 'a'"

stats_before=$(q -c "SELECT * FROM model_select.arm_stats ORDER BY 1, 2" 2>&1 || true)

# Scores before and after rebuild_state agree (relative 1e-9; equal values,
# including 'Infinity' for the unplayed arm, compare as equal).
rebuild_sql="
CREATE TEMP TABLE before AS
    SELECT arm, n, mean, width, ucb FROM model_select.scores('conc', $PROBE);
CREATE TEMP TABLE rebuilt AS
    SELECT model_select.rebuild_state('conc') AS applied;
CREATE TEMP TABLE after AS
    SELECT arm, n, mean, width, ucb FROM model_select.scores('conc', $PROBE);
CREATE FUNCTION pg_temp.close(x float8, y float8) RETURNS bool LANGUAGE sql AS
    \$\$ SELECT x = y OR abs(x - y) <= 1e-9 * greatest(abs(x), abs(y)) \$\$;
SELECT (SELECT applied FROM rebuilt) = $TOTAL
   AND (SELECT count(*) FROM before) = 2
   AND (SELECT count(*) FROM after) = 2
   AND NOT EXISTS (
        SELECT 1 FROM before b FULL JOIN after a USING (arm)
         WHERE b.arm IS NULL OR a.arm IS NULL
            OR b.n IS DISTINCT FROM a.n
            OR NOT coalesce(pg_temp.close(b.mean,  a.mean),  false)
            OR NOT coalesce(pg_temp.close(b.width, a.width), false)
            OR NOT coalesce(pg_temp.close(b.ucb,   a.ucb),   false));
"
check "rebuild_state applies $TOTAL rewards and scores are unchanged (rel 1e-9)" \
    is_true "$rebuild_sql"

if [ "$failed" -ne 0 ]; then
    echo "# arm_stats before rebuild_state:"
    printf '%s\n' "$stats_before" | sed 's/^/#   /'
    echo "# arm_stats now:"
    q -c "SELECT * FROM model_select.arm_stats ORDER BY 1, 2" 2>&1 | sed 's/^/#   /' || true
    echo "# scores now:"
    q -c "SELECT * FROM model_select.scores('conc', $PROBE)" 2>&1 | sed 's/^/#   /' || true
fi

finish
