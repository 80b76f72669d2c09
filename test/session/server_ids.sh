#!/usr/bin/env bash
# Issue 43, ids across servers: two databases stand for two shards, numbered
# 1 and 2 with set_server_id(); each has a selector of the same name (the
# same selector_id and arm_ids).  Routes, cascade routes and rewards on both:
# no decision, reward, cascade or observation id is drawn by both.  A
# reward for a decision of one shard sent to the other is refused (42704,
# naming the shard that drew it), by INSERT or reward(), and nothing is
# learned there; sent to its own shard it is learned once; both shards'
# scores equal their rebuild.
set -euo pipefail
DB=ms_session_ids_a
DB_B=ms_session_ids_b
MS_EXTRA_CLEANUP="dropdb --if-exists --force $DB_B >/dev/null 2>&1 || true"
. "$(dirname "$0")/lib/common.bash"

ms_setup || bail "set-up failed"
qb() { psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB_B" "$@"; }
dropdb --if-exists --force "$DB_B" >/dev/null 2>&1 || true
createdb "$DB_B" && qb -c "CREATE EXTENSION model_select" && qb -c "$MS_HELPERS" >/dev/null || bail "creating $DB_B failed"
q -c 'SELECT model_select.set_server_id(1)' >/dev/null || echo "# set_server_id(1) failed"
qb -c 'SELECT model_select.set_server_id(2)' >/dev/null || echo "# set_server_id(2) failed"

LOAD="SELECT model_select.create_selector('tenant', 3, ARRAY['a', 'b', 'c'], 'lin_ucb');
CREATE TABLE routed AS SELECT i, r.*
  FROM generate_series(1, 60) i, LATERAL model_select.route('tenant', ARRAY[sin(i), cos(i), 0.5]) r;
INSERT INTO model_select.rewards (decision_id, reward)
SELECT decision_id, (1 + sin(i)) / 2 FROM routed WHERE i <= 40 ORDER BY i;
CREATE TABLE casc AS SELECT c.cascade_id
  FROM generate_series(1, 5) i, LATERAL model_select.cascade_route('tenant', ARRAY[0.1, 0.2, i]) c;
INSERT INTO model_select.cascade_observations (cascade_id, arm, value, cost)
SELECT cascade_id, 'a', 0.5, 1 FROM casc;"
q -c "$LOAD" >/dev/null || bail "the load on $DB failed"
qb -c "$LOAD" >/dev/null || bail "the load on $DB_B failed"
ids() {
    "$@" -c "SELECT 'd' || decision_id FROM model_select.decisions UNION ALL
             SELECT 'r' || reward_id FROM model_select.rewards UNION ALL
             SELECT 'c' || cascade_id FROM model_select.cascade_decisions UNION ALL
             SELECT 'o' || obs_id FROM model_select.cascade_observations" | sort
}
ids q >"$MS_WORK/a.ids"
ids qb >"$MS_WORK/b.ids"
kinds() { cut -c1 "$1" | uniq -c | awk '{ printf "%s%s ", $2, $1 }'; }
check "each shard drew 60 decisions, 40 rewards, 5 cascades and 5 observations ($(kinds "$MS_WORK/a.ids")/ $(kinds "$MS_WORK/b.ids"))" \
    eval '[ "$(kinds "$MS_WORK/a.ids")" = "c5 d60 o5 r40 " ] && [ "$(kinds "$MS_WORK/b.ids")" = "c5 d60 o5 r40 " ]'
common=$(comm -12 "$MS_WORK/a.ids" "$MS_WORK/b.ids" | wc -l)
check "no id was drawn by both shards (common: $common)" eval '[ "$common" -eq 0 ]'
check "the same selector_id and arm_ids on both (the ids a wrong reward could hit)" \
    test "$(q -c "SELECT string_agg(arm_id::text, ',' ORDER BY arm_id) FROM model_select.arms")" = \
         "$(qb -c "SELECT string_agg(arm_id::text, ',' ORDER BY arm_id) FROM model_select.arms")"

# an unrewarded decision of shard A, sent to shard B
wrong=$(q -c "SELECT decision_id FROM routed WHERE i = 50")
before=$(qb -c "SELECT count(*) || '/' || sum(n) FROM model_select.arm_stats")
err=$(qb -v VERBOSITY=verbose -c "SELECT model_select.reward($wrong, 0.9)" 2>&1) && rc=0 || rc=$?
printf '%s\n' "$err" | head -n 3 | sed 's/^/#   /'
check "reward() on the other shard is refused with 42704" \
    eval '[ "$rc" -ne 0 ] && grep -q "ERROR:  42704: decision $wrong does not exist" <<<"$err"'
check "the error names the shard that drew the decision" \
    eval 'grep -q "drawn by server 1" <<<"$err"'
err=$(qb -c "INSERT INTO model_select.rewards (decision_id, reward) VALUES ($wrong, 0.9)" 2>&1) && rc=0 || rc=$?
check "so is the INSERT" eval '[ "$rc" -ne 0 ] && grep -q "does not exist" <<<"$err"'
check "nothing was logged or learned on the other shard" \
    test "$(qb -c "SELECT count(*) || '/' || sum(n) FROM model_select.arm_stats")" = "$before"
check "on its own shard the reward is taken" q -c "SELECT model_select.reward($wrong, 0.9)" -o /dev/null
check "and logged once there, for the decision's arm" \
    is_true "SELECT count(*) = 1 AND bool_and(r.arm_id = d.arm_id) FROM model_select.rewards r
               JOIN model_select.decisions d USING (decision_id) WHERE r.decision_id = $wrong"
rebuild_checks tenant " (shard 1)"
DB=$DB_B rebuild_checks tenant " (shard 2)"
finish
