#!/usr/bin/env bash
# The learner judges whether an arm is due by the rows its own cache folded
# after the arm's checkpoint, not by counting the log at every pass (issue
# 41): on a cluster of its own with model_select preloaded and the learner
# serving (naptime 50ms, model_select.checkpoint_threshold 1000, so that no
# arm becomes due), 300 pending rewards on each of 3 arms, then a quiet log:
#   - its statistics reach pg_stat_user_indexes (it reports them after each
#     pass, as a backend does between queries): its loads read the 900 rows;
#   - over 40 more passes, the learner reads (almost) no row of the reward
#     log's indexes (pg_stat_user_indexes.idx_tup_read: each pass used to count
#     the 900 pending rows again, 36,000 and more over 40 passes);
#   - with model_select.checkpoint_threshold 100 (reloaded) every arm is
#     checkpointed by it (nothing left pending), and the scores equal
#     rebuild_state's.
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_learner_due
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
export OPENBLAS_NUM_THREADS=1
PORT=$(free_port $(( ${PGPORT:-55500} + 140 )))
cluster_initdb due || bail "initdb failed: $(tail -n 5 "$CL/initdb.log")"
as_server sh -c "printf '%s\n' \"shared_preload_libraries = 'model_select'\" \
    \"model_select.learner_databases = '$DB'\" \"model_select.learner_naptime = '50ms'\" \
    \"model_select.checkpoint_threshold = 1000\" \"model_select.shared_min_size = 0\" >> '$CL/due/postgresql.conf'"
cluster_start due "$PORT" || bail "the server failed to start: $(tail -n 5 "$CL/due.log")"
export PGHOST=$CL PGPORT=$PORT PGUSER=postgres
ms_setup || bail "set-up failed"

passes() { q -c "SELECT passes FROM model_select.learner WHERE database = '$DB'"; }
read_tuples() {  # rows read through the reward log's indexes, as the statistics have them
    q -c "SELECT pg_stat_clear_snapshot()" -c "SELECT coalesce(sum(idx_tup_read), 0) FROM pg_stat_user_indexes
          WHERE schemaname = 'model_select' AND relname = 'rewards'" | tail -n 1
}
q -c "SELECT model_select.create_selector('d_lin', 4, ARRAY['a', 'b', 'c'], 'lin_ucb')" >/dev/null
check "the learner serves $DB" \
    wait_for "the learner's first pass" "SELECT running AND last_pass IS NOT NULL FROM model_select.learner WHERE database = '$DB'"
q -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
      SELECT 'd_lin', (ARRAY['a','b','c'])[1 + i % 3], ms_rand(4), random() FROM generate_series(1, 900) i" >/dev/null
check "the learner publishes versions holding the 900 rewards" \
    wait_for "versions of the 900 rewards" "SELECT sum(rewards) = 900 FROM model_select.learner_versions
        WHERE selector = 'd_lin' AND NOT stale"
p0=$(passes)
wait_for "5 more passes" "SELECT passes >= $p0 + 5 FROM model_select.learner WHERE database = '$DB'"
sleep 1.5                       # its statistics are flushed once a second
r0=$(read_tuples)
check "the learner's statistics reach the views: its loads read the 900 rows ($r0 index rows read)" \
    test "$r0" -ge 900
p0=$(passes)
wait_for "40 more passes" "SELECT passes >= $p0 + 40 FROM model_select.learner WHERE database = '$DB'"
sleep 1.5
r1=$(read_tuples)
echo "# over $(( $(passes) - p0 )) passes of a quiet log with 900 pending rewards: $((r1 - r0)) index rows read"
check "the quiet learner's passes read under 300 rows of the log's indexes (they used to count the pending rows)" \
    test $((r1 - r0)) -lt 300
check "nothing was checkpointed (no arm due at 1000)" \
    is_true "SELECT arms_checkpointed = 0 FROM model_select.learner WHERE database = '$DB'"

as_server sh -c "echo \"model_select.checkpoint_threshold = 100\" >> '$CL/due/postgresql.conf'"
q -c "SELECT pg_reload_conf()" >/dev/null
check "at checkpoint_threshold 100 the learner checkpoints every arm: nothing pending" \
    wait_for "no pending rewards" "SELECT sum(pending) = 0 FROM model_select.arm_stats WHERE selector = 'd_lin'"
rebuild_checks d_lin
finish
