#!/usr/bin/env bash
# Issue 14, Must show (c): alter_selector racing with 14 writers.
#   race_pak   pak_ucb (window 200)  bandwidth   1.0 -> 1.4
#   race_cost  lin_ucb               cost_weight 0   -> 2
#   race_max   lin_ucb               reward_max  1   -> 0.5
# 14 writer loops insert single-row autocommit rewards (random arm, context,
# reward in [0, 1], cost in [0, 1]) into all three selectors while the three
# alter_selector calls run one after the other; race_max's rewards stay in
# [0, 0.5] until the moment its alter_selector starts, then span [0, 1].
#
# Asserts: the bandwidth and cost_weight alter_selector calls return while
# the writers go on (rewards committed after it returned, judged by a snapshot
# taken right after it: their xmin is not visible in it; the test waits for
# them, it does not time anything).  The
# reward_max call may go either documented way: succeed (then the same, plus:
# no reward above 0.5 committed after it, and the writers saw 22003 refusals)
# or be refused with 22003 because the log now holds a reward above 0.5 (then
# reward_max must still be 1).  The only errors the writers see are 22003; the
# settings stored are the ones that succeeded; each state equals
# rebuild_state's under them (1e-9), arm_stats.n the log.
#
# Needs PGHOST/PGPORT/PGUSER of a running cluster with model_select installed.
set -euo pipefail
DB=ms_session_settings
. "$(dirname "$0")/lib/common.bash"

WRITERS=14
SELS="race_pak race_cost race_max"
ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selectors failed"
SELECT model_select.create_selector('race_pak',  4, ARRAY['a','b'], 'pak_ucb', NULL, '{"window": 200, "bandwidth": 1.0}');
SELECT model_select.create_selector('race_cost', 4, ARRAY['a','b'], 'lin_ucb', NULL, '{"cost_weight": 0}');
SELECT model_select.create_selector('race_max',  4, ARRAY['a','b'], 'lin_ucb', NULL, '{"reward_max": 1}');
SQL

# chunk_low: race_max rewards in [0, 0.5]; chunk_high: in [0, 1]
for kind in low high; do
    {
        echo '\set VERBOSITY verbose'
        for _ in $(seq 1 30); do
            for s in $SELS; do
                r='random()'
                [ "$s" = race_max ] && [ "$kind" = low ] && r='0.5 * random()'
                echo "INSERT INTO model_select.rewards(selector, arm, context, reward, cost) VALUES ('$s', (ARRAY['a','b'])[1 + (random() < 0.5)::int], ms_rand(4), $r, random());"
            done
        done
    } >"$MS_WORK/chunk_$kind.sql"
done
high=$MS_WORK/high

stop=$MS_WORK/stop
writer() {
    while [ ! -e "$stop" ]; do
        local chunk=$MS_WORK/chunk_low.sql
        [ -e "$high" ] && chunk=$MS_WORK/chunk_high.sql
        psql -X -q -d "$DB" -f "$chunk" >/dev/null 2>>"$MS_WORK/writer_$1.err" || true
    done
}
wpids=()
for w in $(seq 1 "$WRITERS"); do
    writer "$w" & wpids+=($!); MS_BG_PIDS+=($!)
done
wait_for "the writers' first 100 rewards" "SELECT count(*) >= 100 FROM model_select.rewards" ||
    bail "the writers did not start"

alter() {  # alter SELECTOR SETTINGS-JSON
    local t0 t1
    t0=$(date +%s%N)
    if q -v VERBOSITY=verbose -c "SELECT model_select.alter_selector('$1', '$2')" \
         -c "INSERT INTO ms_after VALUES ('$1', pg_current_snapshot())" >/dev/null 2>"$MS_WORK/alter_$1.err"
    then t1=$(date +%s%N); echo "$(( (t1 - t0) / 1000000 ))"
    else echo "error: $(head -n 1 "$MS_WORK/alter_$1.err")"
    fi
}
q -c "CREATE TABLE ms_after (selector text, snap pg_snapshot)"
declare -A took alive
for spec in 'race_pak {"bandwidth": 1.4}' 'race_cost {"cost_weight": 2}' 'race_max {"reward_max": 0.5}'; do
    s=${spec%% *}
    [ "$s" = race_max ] && touch "$high"
    took[$s]=$(alter "$s" "${spec#* }")
    a=0; for p in "${wpids[@]}"; do kill -0 "$p" 2>/dev/null && a=$((a + 1)); done
    alive[$s]=$a
    echo "# alter_selector($s, ${spec#* }): ${took[$s]} ms; writer loops alive after it: $a"
    [[ "${took[$s]}" =~ ^[0-9]+$ ]] &&
        wait_for "rewards of $s committed after alter_selector returned" \
            "SELECT count(*) > 0 FROM model_select.rewards r, ms_after m WHERE m.selector = '$s'
                AND r.selector = '$s' AND NOT pg_visible_in_snapshot(r.xmin::text::xid8, m.snap)"
done
# a lowered reward_max refuses the writers' higher rewards from then on
if [[ "${took[race_max]}" =~ ^[0-9]+$ ]]; then
    for _ in $(seq 1 1200); do grep -qs 'ERROR:  22003:' "$MS_WORK"/writer_*.err && break; sleep 0.1; done
fi
touch "$stop"
wait "${wpids[@]}"

max_ok=1
for s in $SELS; do
    if [ "$s" = race_max ] && [[ ! "${took[$s]}" =~ ^[0-9]+$ ]]; then
        max_ok=0
        check "$s: alter_selector lowering reward_max is refused with 22003 (log holds a higher reward)" \
            eval '[[ "${took[$s]}" == *"ERROR:  22003:"* ]] || { echo "#   ${took[$s]}"; false; }'
        skip "$s: the writers committed rewards after alter_selector returned" "alter_selector was refused"
        continue
    fi
    check "$s: alter_selector succeeds while $WRITERS writers insert (${took[$s]} ms)" \
        eval '[[ "${took[$s]}" =~ ^[0-9]+$ ]] && [ "${alive[$s]}" -eq "$WRITERS" ]'
    after=$(q -c "SELECT count(*) FROM model_select.rewards r, ms_after m
                   WHERE m.selector = '$s' AND r.selector = '$s'
                     AND NOT pg_visible_in_snapshot(r.xmin::text::xid8, m.snap)")
    check "$s: the writers committed rewards after alter_selector returned ($after)" [ "${after:-0}" -gt 0 ]
done

cat "$MS_WORK"/writer_*.err >"$MS_WORK/errors" 2>/dev/null || true
errors=$(grep -c 'ERROR:' "$MS_WORK/errors" || true)
range_errors=$(grep -c 'ERROR:  22003:' "$MS_WORK/errors" || true)
echo "# writer errors: $errors, of which 22003: $range_errors; rewards logged: $(q -c 'SELECT count(*) FROM model_select.rewards')"
check "the writers' only errors are 22003 (reward above the new reward_max)" \
    eval '[ "$errors" -eq "$range_errors" ] || { grep "ERROR:" "$MS_WORK/errors" | grep -v "ERROR:  22003:" | sed "s/^psql:[^ ]* //" | sort | uniq -c | sort -rn | head -n 5 | sed "s/^/#   /"; false; }'
if [ "$max_ok" = 1 ]; then
    check "some rewards were refused with 22003 after reward_max was lowered" [ "$range_errors" -gt 0 ]
    check "race_max: no reward above 0.5 committed after alter_selector lowered reward_max" \
        no_rows "SELECT r.reward_id || ': ' || r.reward FROM model_select.rewards r, ms_after m
                  WHERE m.selector = 'race_max' AND r.selector = 'race_max' AND r.reward > 0.5
                    AND NOT pg_visible_in_snapshot(r.xmin::text::xid8, m.snap)"
    newmax=0.5
else
    newmax=1
fi
check "the new settings are stored (reward_max $newmax)" \
    is_true "SELECT bool_and(CASE name WHEN 'race_pak' THEN (settings->>'bandwidth')::float8 = 1.4
                                      WHEN 'race_cost' THEN (settings->>'cost_weight')::float8 = 2
                                      ELSE (settings->>'reward_max')::float8 = $newmax END)
               FROM model_select.selectors WHERE name LIKE 'race_%'"
for s in $SELS; do
    rebuild_checks "$s"
done
finish
