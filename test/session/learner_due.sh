#!/usr/bin/env bash
# The learner judges whether an arm is due for a checkpoint by the rows its
# own cache folded after the arm's checkpoint, not by counting the log at
# every naptime (issue 41).  On a cluster of its own with model_select
# preloaded and the learner serving (naptime 50ms, checkpoint_threshold 1000,
# so that no arm becomes due), 300 pending rewards on each of 3 arms, then a
# quiet log:
#   - its statistics reach pg_stat_user_indexes (it reports them after each
#     pass, as a backend does between queries): its loads read the 900 rows;
#   - once the statistics show 40 more scans of the log's indexes (its
#     passes'), they show under 300 more rows read: a due check that counted
#     the pending rows read 900 at every pass;
#   - at checkpoint_threshold 100 (reloaded) every arm is checkpointed by it
#     (nothing left pending), and the scores equal rebuild_state's.
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_learner_due
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
preloaded_server due "$(free_port $(( ${PGPORT:-55500} + 140 )))" \
    "model_select.learner_databases = '$DB'" "model_select.learner_naptime = '50ms'" \
    "model_select.checkpoint_threshold = 1000"
ms_setup || bail "set-up failed"

# the reward log's indexes as the statistics have them: "scans rows-read"
LOG_INDEXES="FROM pg_stat_user_indexes WHERE schemaname = 'model_select' AND relname = 'rewards'"
q -c "SELECT model_select.create_selector('d_lin', 4, ARRAY['a', 'b', 'c'], 'lin_ucb')" >/dev/null
check "the learner serves $DB" \
    wait_for "the learner's first pass" "SELECT running AND last_pass IS NOT NULL FROM model_select.learner WHERE database = '$DB'"
q -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
      SELECT 'd_lin', (ARRAY['a','b','c'])[1 + i % 3], ms_rand(4), random() FROM generate_series(1, 900) i" >/dev/null
check "the learner publishes versions holding the 900 rewards" \
    wait_for "versions of the 900 rewards" "SELECT sum(rewards) = 900 FROM model_select.learner_versions
        WHERE selector = 'd_lin' AND NOT stale"
check "its statistics reach the views: its loads read the 900 rows" \
    wait_for "900 index rows read" "SELECT sum(idx_tup_read) >= 900 $LOG_INDEXES"
read -r s0 r0 <<<"$(q -F ' ' -c "SELECT sum(idx_scan), sum(idx_tup_read) $LOG_INDEXES")"
check "after 40 more scans of the log's indexes (its quiet passes), under 300 more rows read" \
    wait_for "40 scans reading under 300 rows" "SELECT sum(idx_scan) >= $s0 + 40 AND sum(idx_tup_read) < $r0 + 300 $LOG_INDEXES"
echo "# scans / rows read of the log's indexes: $s0 / $r0 then $(q -F ' / ' -c "SELECT sum(idx_scan), sum(idx_tup_read) $LOG_INDEXES")"
check "nothing was checkpointed (no arm due at 1000)" \
    is_true "SELECT arms_checkpointed = 0 FROM model_select.learner WHERE database = '$DB'"

as_server sh -c "echo \"model_select.checkpoint_threshold = 100\" >> '$CL/due/postgresql.conf'"
q -c "SELECT pg_reload_conf()" >/dev/null
check "at checkpoint_threshold 100 the learner checkpoints every arm: nothing pending" \
    wait_for "no pending rewards" "SELECT sum(pending) = 0 FROM model_select.arm_stats WHERE selector = 'd_lin'"
rebuild_checks d_lin
finish
