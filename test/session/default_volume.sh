#!/usr/bin/env bash
# Issue 14, Must show (f): 2,500 rewards onto one arm of a selector created
# with all defaults (create_selector(name, dim, arms) only), then route() goes
# on learning.
#   1. 25 INSERT statements of 100 rewards each (reward 0.2, random contexts)
#      onto arm a: every statement succeeds, the log and arm_stats.n hold 2,500.
#   2. 300 rounds of route() + reward by decision_id, one transaction each:
#      arm a now earns 0.9, arm b 0.  Every round succeeds; arm a is routed to
#      at least 20 times; arm_stats.n of a = 2,500 + its decisions; a's mean
#      at the 3 probe contexts rises (by > 0.005 on average) -- it learned the
#      new level from route()'s own decisions.
#   3. 200 rewards onto arm b with automatic checkpoints off, then one reward
#      from a new session (a connection per reward): arm b checkpoints.
#   4. Checkpoints visit the arms a transaction's rows went to, as it commits:
#      with a threshold of 10, a statement of 15 rows for arm a and 5 for arm
#      b checkpoints a (nothing pending after) and not b (5 pending); a
#      transaction of two statements of 3 rows for b makes b due.
#   5. The state equals rebuild_state's (1e-9), arm_stats.n the log.
#
# Needs PGHOST/PGPORT/PGUSER of a running cluster with model_select installed.
set -euo pipefail
DB=ms_session_volume
. "$(dirname "$0")/lib/common.bash"

ms_setup || bail "set-up failed"
q -c "SELECT model_select.create_selector('vol', 4, ARRAY['a','b'])" >/dev/null ||
    bail "create_selector failed"
q -c "SELECT policy || ' ' || settings FROM model_select.selectors WHERE name = 'vol'" | sed 's/^/# defaults: /'

# -- 1. 2,500 rewards onto arm a ----------------------------------------------
{
    echo '\set VERBOSITY verbose'
    echo 'SELECT setseed(0.25);'
    for _ in $(seq 1 25); do
        echo "INSERT INTO model_select.rewards(selector, arm, context, reward)
              SELECT 'vol', 'a', ms_rand(4), 0.2 FROM generate_series(1, 100);"
    done
} >"$MS_WORK/load.sql"
psql -X -q -d "$DB" -f "$MS_WORK/load.sql" >/dev/null 2>"$MS_WORK/load.err" || true
load_errors() {
    ! grep -q ERROR "$MS_WORK/load.err" || {
        echo "#   $(grep -c ERROR "$MS_WORK/load.err") of 25 statements failed, e.g.:"
        grep -m 2 ERROR "$MS_WORK/load.err" | sed 's/^psql:[^ ]* /#   /'; return 1; }
}
check "all 25 INSERTs of 100 rewards onto arm a succeed" load_errors
check "the log holds 2,500 rewards for arm a" \
    is_true "SELECT count(*) = 2500 FROM model_select.rewards WHERE selector = 'vol' AND arm = 'a'"
check "arm_stats.n of arm a is 2,500" \
    is_true "SELECT n = 2500 FROM model_select.arm_stats WHERE selector = 'vol' AND arm = 'a'"
q -c "SELECT ms_take('phase1', 'vol')" >/dev/null
check "arm a's mean at the probes is about 0.2 (within 0.05)" \
    is_true "SELECT bool_and(abs(mean - 0.2) < 0.05) FROM ms_snap WHERE label = 'phase1' AND arm = 'a'"

# -- 2. route() goes on learning --------------------------------------------------
q >/dev/null <<'SQL' || true
CREATE TABLE ms_rounds (round int, arm text, sqlstate text);
SELECT setseed(0.5);
DO $$
DECLARE
    r record;
BEGIN
    FOR i IN 1..300 LOOP
        BEGIN
            SELECT * INTO r FROM model_select.route('vol', ms_rand(4));
            INSERT INTO model_select.rewards(decision_id, reward)
            VALUES (r.decision_id, CASE r.arm WHEN 'a' THEN 0.9 ELSE 0 END);
            INSERT INTO ms_rounds VALUES (i, r.arm, NULL);
        EXCEPTION WHEN OTHERS THEN
            INSERT INTO ms_rounds VALUES (i, r.arm, SQLSTATE);
        END;
        COMMIT;
    END LOOP;
END $$;
SQL
echo "# phase 2: $(q -c "SELECT string_agg(arm || ' ' || coalesce(sqlstate, 'ok') || ' x' || c, ', ')
                        FROM (SELECT arm, sqlstate, count(*) c FROM ms_rounds GROUP BY 1, 2 ORDER BY 1, 2) s")"
check "all 300 route() + reward rounds succeed" \
    no_rows "SELECT sqlstate || ' x' || count(*) FROM ms_rounds WHERE sqlstate IS NOT NULL GROUP BY sqlstate"
check "route() chose arm a at least 20 times" \
    is_true "SELECT count(*) >= 20 FROM ms_rounds WHERE arm = 'a' AND sqlstate IS NULL"
check "arm_stats.n of arm a is 2,500 + its rewarded decisions" \
    is_true "SELECT n = 2500 + (SELECT count(*) FROM ms_rounds WHERE arm = 'a' AND sqlstate IS NULL)
               FROM model_select.arm_stats WHERE selector = 'vol' AND arm = 'a'"
q -c "SELECT ms_take('phase2', 'vol')" >/dev/null
echo "# arm a's mean at the probes: $(q -c "SELECT string_agg(round(p1.mean::numeric, 4) || ' -> ' || round(p2.mean::numeric, 4), ', ' ORDER BY probe)
        FROM ms_snap p1 JOIN ms_snap p2 USING (probe, arm, selector)
       WHERE p1.label = 'phase1' AND p2.label = 'phase2' AND arm = 'a'")"
check "arm a's mean rose after its new rewards (by > 0.005 on average over the probes)" \
    is_true "SELECT avg(p2.mean - p1.mean) > 0.005
               FROM ms_snap p1 JOIN ms_snap p2 USING (probe, arm, selector)
              WHERE p1.label = 'phase1' AND p2.label = 'phase2' AND arm = 'a'"

# -- 3. a connection per reward still checkpoints ----------------------------------
q -c "SET model_select.checkpoint_threshold = 0" \
  -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
      SELECT 'vol', 'b', ms_rand(4), 0.1 FROM generate_series(1, 200)" >/dev/null
check "with automatic checkpoints off, arm b has at least 200 pending rewards" \
    is_true "SELECT pending >= 200 FROM model_select.arm_stats WHERE selector = 'vol' AND arm = 'b'"
q -c "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('vol', 'b', ms_rand(4), 0.1)" >/dev/null
check "one reward inserted by a new session checkpoints arm b: nothing pending" \
    is_true "SELECT pending = 0 FROM model_select.arm_stats WHERE selector = 'vol' AND arm = 'b'"

# -- 4. the arms a transaction's rows went to, checkpointed as it commits ------------
q -c "SELECT model_select.create_selector('ck_due', 2, ARRAY['a', 'b'], 'greedy')" \
  -c "SET model_select.checkpoint_threshold = 10" \
  -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
      SELECT 'ck_due', CASE WHEN g <= 15 THEN 'a' ELSE 'b' END, ARRAY[g, 1]::float8[], g / 20.0
        FROM generate_series(1, 20) g" >/dev/null
check "a statement of 15 rows for a and 5 for b checkpoints a only (threshold 10)" \
    is_true "SELECT string_agg(arm || ' ' || n || ' ' || pending, ', ' ORDER BY arm) = 'a 15 0, b 5 5'
               FROM model_select.arm_stats WHERE selector = 'ck_due'"
q -c "SET model_select.checkpoint_threshold = 10" -c "BEGIN" \
  -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
      SELECT 'ck_due', 'b', ARRAY[g, 1]::float8[], 0.5 FROM generate_series(1, 3) g" \
  -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
      SELECT 'ck_due', 'b', ARRAY[g, 2]::float8[], 0.5 FROM generate_series(1, 3) g" -c "COMMIT" >/dev/null
check "a transaction of 2 statements of 3 rows for b: 11 pending, due, checkpointed as it commits" \
    is_true "SELECT pending = 0 FROM model_select.arm_stats WHERE selector = 'ck_due' AND arm = 'b'"
check "... each checkpoint holds every reward of its arm" \
    is_true "SELECT count(*) = 2 FROM model_select.arm_state st JOIN model_select.selectors s USING (selector_id)
              WHERE s.name = 'ck_due' AND st.n = (SELECT count(*) FROM model_select.rewards r WHERE r.arm_id = st.arm_id)"

# -- 5. rebuild --------------------------------------------------------------------
rebuild_checks vol
rebuild_checks ck_due
finish
