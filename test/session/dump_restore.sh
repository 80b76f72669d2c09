#!/usr/bin/env bash
# Backup and restore: pg_dump keeps the reward log and the id sequences;
# arm_state is dumped empty and restoring the log re-learns it, so after
# pg_restore every score (and cascade score) is the same as before and
# routing goes on -- also for an arm retired after it learned, whose log rows
# (arm_id and created_at given, before retired_at) the triggers take, and for
# arms whose rewards committed out of reward_id order under a window or a
# discount (pg_dump writes the log in canonical order, the restore keeps it),
# and for a selector whose oldest rewards retain absorbed into their arms'
# bases (dumped; the restored log folds onto them), also on the selector's
# clock (the bases count the selector's rows absorbed, from which the
# restored log, with new transaction ids, ticks on), and for a selector
# with a codebook that warm_start() fitted (a restored codebook voids what
# was learnt before it, whatever the order of the tables' data).  The same
# dump restored in parallel (pg_restore -j 4, which loads the tables biggest
# first, each in a transaction of its own) and section by section (pre-data,
# data, post-data in separate runs) and in an order of its own (every table
# before those it references, the bases in a run of their own after the log
# was checkpointed) restores every row and every score.
#
# Needs PGHOST/PGPORT/PGUSER (see scripts/with-cluster.sh); uses five
# databases of its own, dropped at the end.
set -euo pipefail

SRC=model_select_dump_src
DST=model_select_dump_dst
PAR=model_select_dump_par
SEC=model_select_dump_sec
REV=model_select_dump_rev
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ms_dump.XXXXXX")
cleanup() {
    dropdb --if-exists "$SRC" >/dev/null 2>&1 || true
    dropdb --if-exists "$DST" >/dev/null 2>&1 || true
    dropdb --if-exists "$PAR" >/dev/null 2>&1 || true
    dropdb --if-exists "$SEC" >/dev/null 2>&1 || true
    dropdb --if-exists "$REV" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

q() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }
passed=0
failed=0
n=0
check() {  # check DESCRIPTION CMD...
    local desc=$1; shift
    n=$((n + 1))
    if "$@"; then echo "ok $n - $desc"; passed=$((passed + 1))
    else echo "not ok $n - $desc"; failed=$((failed + 1)); fi
}

createdb "$SRC"
q -d "$SRC" <<'SQL'
CREATE EXTENSION model_select;
SELECT model_select.create_selector('d', 3, ARRAY['a', 'b', 'c'], 'pak_ucb');
-- rewards by decision and by name
SELECT count(*) FROM (
    SELECT (model_select.route('d', ARRAY[i, 1, -i]::float8[])).decision_id FROM generate_series(1, 6) i) s;
INSERT INTO model_select.rewards(decision_id, reward)
SELECT decision_id, 0.1 * decision_id FROM model_select.decisions;
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 'd', 'b', ARRAY[1, i, 2]::float8[], 0.9 FROM generate_series(1, 4) i;
-- an arm retired after it learned: its rewards are restored all the same
SELECT model_select.create_selector('r', 3, ARRAY['a', 'b'], 'lin_ucb');
SELECT model_select.retire_arm('r', 'b');   -- route() picks a; rewards by decision
SELECT count(*) FROM (SELECT model_select.route('r', ARRAY[i, 0, 1]::float8[]) FROM generate_series(1, 3) i) x;
INSERT INTO model_select.rewards(decision_id, reward)
SELECT d.decision_id, 0.6 FROM model_select.decisions d JOIN model_select.selectors s USING (selector_id) WHERE s.name = 'r';
SELECT model_select.add_arm('r', 'b');
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 'r', 'a', ARRAY[1, i, 2]::float8[], 0.5 FROM generate_series(1, 3) i;
INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost)
SELECT 'r', (ARRAY['a', 'b'])[1 + i % 2], ARRAY[i, 1, -1]::float8[], 0.1 * i, 0.01 FROM generate_series(1, 6) i;
SELECT model_select.retire_arm('r', 'a');
-- retain: 40 rewards (by decision, real[] contexts, and by name), each arm keeps its newest 5
SELECT model_select.create_selector('k', 3, ARRAY['a', 'b'], 'rff_ucb', NULL, '{"retain": 5}');
CREATE TEMP TABLE k_routed AS
SELECT i, (model_select.route('k', ARRAY[sin(i), cos(i), 1]::real[])).decision_id FROM generate_series(1, 20) i;
INSERT INTO model_select.rewards(decision_id, reward) SELECT decision_id, (i % 4) / 4.0 FROM k_routed ORDER BY i;
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 'k', (ARRAY['a', 'b'])[1 + i % 2], ARRAY[1, sin(i), cos(i)]::float8[], (i % 3) / 3.0 FROM generate_series(1, 20) i;
SELECT model_select.maintain('k');
-- the selector's clock, restart_every 8 and no retain: the selector's newest 8 stay (its
-- periods count from the selector's first reward: the bases must count the 12 absorbed)
SELECT model_select.create_selector('c', 3, ARRAY['a', 'b'], 'lin_ucb', NULL, '{"restart_every": 8, "clock": "selector"}');
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 'c', (ARRAY['a', 'b'])[1 + (i % 5) / 3], ARRAY[sin(i), 1, cos(i)]::float8[], (i % 4) / 4.0 FROM generate_series(1, 20) i;
SELECT model_select.maintain('c');
-- a codebook (lin_ucb's default 8) that warm_start fitted on its 30 rows: 60 rewards
SELECT model_select.create_selector('cb', 3, ARRAY['a', 'b']);
SELECT model_select.warm_start('cb', 'SELECT ARRAY[sin(i), cos(i), 1]::float8[], ARRAY[(i % 3) / 3.0, 0.5]::float8[]
                                        FROM generate_series(1, 30) i');
SQL
check "retain absorbed all but each arm's newest 5 rewards of k" \
    test "$(q -d "$SRC" -c "SELECT count(*) || ' ' || (SELECT sum(n) FROM model_select.arm_base b JOIN model_select.selectors s USING (selector_id) WHERE s.name = 'k') FROM model_select.rewards WHERE selector = 'k'")" = "10 30"
check "restart_every absorbed all but the selector's newest 8 rewards of c" \
    test "$(q -d "$SRC" -c "SELECT count(*) || ' ' || (SELECT sum(n) FROM model_select.arm_base b JOIN model_select.selectors s USING (selector_id) WHERE s.name = 'c') FROM model_select.rewards WHERE selector = 'c'")" = "8 12"

# Rewards committed out of reward_id order, for selectors that weigh rewards
# by their place in the log (window 1: only the last counts; a discount):
# session A takes its transaction id first, then B logs and commits, then A
# logs and commits, so A's reward is before B's in canonical order (tx, seq)
# but after it in reward_id order.  A restore must keep the canonical order.
q -d "$SRC" <<'SQL'
SELECT model_select.create_selector('w', 3, ARRAY['a', 'b'], 'lin_ucb', NULL, '{"window": 1}');
SELECT model_select.create_selector('g', 3, ARRAY['a', 'b'], 'lin_ucb', NULL, '{"discount": 0.5}');
SQL
out_of_order() {  # out_of_order SELECTOR: two rewards onto its arm a, A before B in canonical order
    local sel=$1
    PGAPPNAME=ms_dump_a q -d "$SRC" >/dev/null <<SQL &
BEGIN;
SELECT pg_current_xact_id();
DO \$\$ BEGIN
    FOR i IN 1..1500 LOOP
        EXIT WHEN EXISTS (SELECT 1 FROM model_select.rewards WHERE selector = '$sel' AND reward = 0.9);
        PERFORM pg_sleep(0.02);
    END LOOP;
END \$\$;
INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('$sel', 'a', ARRAY[-1, 2, 0.5], 0.1);
COMMIT;
SQL
    local a=$!
    q -d "$SRC" -c "DO \$\$ BEGIN
        FOR i IN 1..1500 LOOP
            EXIT WHEN EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = 'ms_dump_a' AND backend_xid IS NOT NULL);
            PERFORM pg_sleep(0.02);
            PERFORM pg_stat_clear_snapshot();   -- or the loop sees the first read's activity forever
        END LOOP; END \$\$" \
        -c "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('$sel', 'a', ARRAY[1, 0.5, 2], 0.9)"
    wait "$a"
}
out_of_order w
out_of_order g
OUT_OF_ORDER="SELECT count(*) FROM (
    SELECT reward_id, lag(reward_id) OVER (PARTITION BY arm_id ORDER BY tx, seq) AS prev
      FROM model_select.rewards) r WHERE prev > reward_id"
check "the source's log holds rewards committed out of reward_id order (2 arms)" \
    test "$(q -d "$SRC" -c "$OUT_OF_ORDER")" = 2
SCORES="SELECT s, arm, n, mean, width, ucb FROM unnest(ARRAY['d', 'r', 'w', 'g', 'k', 'c', 'cb']) s,
          LATERAL model_select.scores(s, ARRAY[0.5, -1, 2]::float8[]) ORDER BY s, arm"
CASCADE_SCORES="SELECT * FROM model_select.cascade_scores('r', ARRAY[0.5, -1, 2]::float8[]) ORDER BY arm"
q -d "$SRC" -c "$SCORES" > "$WORK/before"
q -d "$SRC" -c "$CASCADE_SCORES" > "$WORK/cascade_before"
pg_dump -Fc -f "$WORK/dump" "$SRC"
createdb "$DST"
check "pg_restore succeeds" pg_restore -d "$DST" "$WORK/dump"
q -d "$DST" -c "$SCORES" > "$WORK/after"
check "every score after the restore equals the score before" diff "$WORK/before" "$WORK/after"
check "every cascade score after the restore equals the score before (a retired arm's observations too)" \
    diff "$WORK/cascade_before" <(q -d "$DST" -c "$CASCADE_SCORES")
check "the reward log is complete (20 rewards, 6 of a retired arm, k's 10 and c's 8 retained, cb's 60)" \
    test "$(q -d "$DST" -c 'SELECT count(*) FROM model_select.rewards')" = 98
CODEBOOK="SELECT centroids, rows FROM model_select.codebooks"
check "the codebook is restored (and scores as before: above)" \
    diff <(q -d "$SRC" -c "$CODEBOOK") <(q -d "$DST" -c "$CODEBOOK")
check "the bases are restored (k's 30 and c's 12 absorbed rewards)" \
    test "$(q -d "$DST" -c 'SELECT sum(n) FROM model_select.arm_base')" = 42
check "the restored log keeps the canonical order: the same rewards out of reward_id order" \
    test "$(q -d "$DST" -c "$OUT_OF_ORDER")" = 2
check "arm_stats counts equal the log and the bases" \
    test "$(q -d "$DST" -c 'SELECT sum(n) FROM model_select.arm_stats')" = 140
q -d "$DST" -c "SELECT model_select.checkpoint(s) FROM unnest(ARRAY['d', 'r', 'w', 'g', 'k', 'c', 'cb']) s" >/dev/null
check "after checkpoint() the restored arm_state holds the whole log and the bases" \
    test "$(q -d "$DST" -c 'SELECT sum(n) FROM model_select.arm_state')" = 140
check "after checkpoint() every score still equals the score before the restore" \
    diff "$WORK/before" <(q -d "$DST" -c "$SCORES")
check "the retired arm still refuses new rewards, arm_id given or not (55000)" \
    test "$(for id in NULL "(SELECT a.arm_id FROM model_select.arms a JOIN model_select.selectors s USING (selector_id) WHERE s.name = 'r' AND a.name = 'a')"; do
              q -d "$DST" -v VERBOSITY=verbose -c "INSERT INTO model_select.rewards(selector, arm, context, reward, arm_id)
                VALUES ('r', 'a', ARRAY[1, 2, 3]::float8[], 0.5, $id)" 2>&1 | grep -c 'ERROR:  55000'; done | tr -d '\n')" = 11
check "after rebuild_state() (base + retained log) k and c score as before the restore" \
    diff <(grep '^[kc]|' "$WORK/before") \
         <(q -d "$DST" -c "SELECT model_select.rebuild_state(s) FROM unnest(ARRAY['k', 'c']) s" -c "$SCORES" | grep '^[kc]|')
check "routing goes on after the restore (sequences restored)" \
    q -d "$DST" -c "SELECT * FROM model_select.route('d', ARRAY[1, 2, 3]::float8[])"
check "a reward for a restored decision is accepted once more decisions exist" \
    q -d "$DST" -c "INSERT INTO model_select.rewards(decision_id, reward) SELECT max(decision_id), 0.4 FROM model_select.decisions"

# In parallel and section by section: pg_restore exits 0 (it says "errors
# ignored on restore" and exits 1 on any), and the restored database holds
# every row and scores as the source.
createdb "$PAR"
check "pg_restore -j 4 succeeds" pg_restore -j 4 -d "$PAR" "$WORK/dump"
createdb "$SEC"
check "pg_restore --section pre-data, data, post-data in separate runs succeeds" \
    bash -c "for s in pre-data data post-data; do pg_restore --section=\$s -d '$SEC' '$WORK/dump' || exit 1; done"
# Serially in an order of our own (pg_restore -L restores a listed order):
# the tables' data in reverse, every arm then checkpointed (as a learner or
# a checkpoint() during a restore would), then the bases in a second run.
createdb "$REV"
pg_restore -l "$WORK/dump" | grep -v -e 'TABLE DATA' -e 'SEQUENCE SET' > "$WORK/list"
pg_restore -l "$WORK/dump" | grep 'TABLE DATA' | grep -v ' arm_base ' | tac >> "$WORK/list"
pg_restore -l "$WORK/dump" | grep 'SEQUENCE SET' >> "$WORK/list"
pg_restore -l "$WORK/dump" | grep ' arm_base ' > "$WORK/list_bases"
check "pg_restore -L of the tables' data in reverse, a checkpoint, then the bases, succeeds" \
    eval 'pg_restore -L "$WORK/list" -d "$REV" "$WORK/dump" &&
          q -d "$REV" -c "SELECT model_select.checkpoint(name) FROM model_select.selectors" >/dev/null &&
          pg_restore -L "$WORK/list_bases" -d "$REV" "$WORK/dump"'
ROWS="SELECT (SELECT count(*) FROM model_select.rewards) || ' ' || (SELECT sum(n) FROM model_select.arm_base)
          || ' ' || (SELECT count(*) FROM model_select.decisions) || ' ' || (SELECT count(*) FROM model_select.arms)
          || ' ' || (SELECT count(*) FROM model_select.cascade_observations)
          || ' ' || (SELECT count(*) FROM model_select.codebooks)"
SRC_ROWS=$(q -d "$SRC" -c "$ROWS")
for db in "$PAR" "$SEC" "$REV"; do
    check "$db: every row is restored (98 rewards, 42 absorbed, decisions, arms, observations, codebook: $SRC_ROWS)" \
        test "$(q -d "$db" -c "$ROWS")" = "$SRC_ROWS"
    check "$db: no restored row is left waiting for the rows it references" \
        test "$(q -d "$db" -c "SELECT count(*) FROM model_select_internal.restore_pending")" = 0
    check "$db: every score equals the score before" diff "$WORK/before" <(q -d "$db" -c "$SCORES")
    check "$db: every cascade score equals the score before" \
        diff "$WORK/cascade_before" <(q -d "$db" -c "$CASCADE_SCORES")
    check "$db: the restored log keeps the canonical order" test "$(q -d "$db" -c "$OUT_OF_ORDER")" = 2
    check "$db: after rebuild_state() (base + retained log) k and c score as before" \
        diff <(grep '^[kc]|' "$WORK/before") \
             <(q -d "$db" -c "SELECT model_select.rebuild_state(s) FROM unnest(ARRAY['k', 'c']) s" -c "$SCORES" | grep '^[kc]|')
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
