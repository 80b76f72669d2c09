#!/usr/bin/env bash
# The learner's checkpoint hands its fold to the arm cache (issue 41): on a
# cluster of its own with model_select preloaded and the learner serving
# (naptime 50ms, model_select.shared_min_size 0, checkpoint_threshold 1000 at
# first, so that nothing is checkpointed), for lin_ucb and rff_ucb, whose
# states are stored out of line (TOAST):
#   - 150 rewards per selector, published by the learner; a session A scores;
#   - at checkpoint_threshold 16 (reloaded) the learner checkpoints every arm,
#     and each arm's first version of its new checkpoint was published before
#     that checkpoint committed (track_commit_timestamp): by the checkpoint
#     itself, with the fold it stored.  The learner used to publish it at its
#     next pass, after reading the checkpoint back and folding the rows after
#     it, as every backend did that loaded the arm meanwhile;
#   - B takes every arm's base from the shared cache (6 hits) and publishes
#     none; its scores equal A's, bit for bit, and after a restart (the
#     shared cache empty) those of a backend that reads the checkpoints; and
#     rebuild_state's within 1e-9.
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_checkpoint_handoff
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
export OPENBLAS_NUM_THREADS=1
PORT=$(free_port $(( ${PGPORT:-55500} + 130 )))
cluster_initdb handoff || bail "initdb failed: $(tail -n 5 "$CL/initdb.log")"
as_server sh -c "printf '%s\n' \"shared_preload_libraries = 'model_select'\" \
    \"model_select.learner_databases = '$DB'\" \"model_select.learner_naptime = '50ms'\" \
    \"model_select.shared_min_size = 0\" \"model_select.checkpoint_threshold = 1000\" \
    \"track_commit_timestamp = on\" >> '$CL/handoff/postgresql.conf'"
cluster_start handoff "$PORT" || bail "the server failed to start: $(tail -n 5 "$CL/handoff.log")"
export PGHOST=$CL PGPORT=$PORT PGUSER=postgres
ms_setup || bail "set-up failed"

q -c "SELECT model_select.create_selector('h_lin', 16, ARRAY['a', 'b', 'c'], 'lin_ucb')" \
  -c "SELECT model_select.create_selector('h_rff', 16, ARRAY['a', 'b', 'c'], 'rff_ucb', 'rbf', '{\"features\": 64}', 5)" >/dev/null
check "the learner serves $DB" \
    wait_for "the learner's first pass" "SELECT running AND last_pass IS NOT NULL FROM model_select.learner WHERE database = '$DB'"
q -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
      SELECT s, (ARRAY['a','b','c'])[1 + i % 3], ms_rand(16), random()
        FROM generate_series(1, 150) i, unnest(ARRAY['h_lin', 'h_rff']) s ORDER BY i, s" >/dev/null
check "the learner publishes versions of the 300 rewards" \
    wait_for "versions of the 300 rewards" "SELECT sum(rewards) = 300 FROM model_select.learner_versions WHERE NOT stale"

passes() { q -c "SELECT passes FROM model_select.learner WHERE database = '$DB'"; }
SCORES="SELECT string_agg(arm || ':' || ucb::text || ':' || mean::text || ':' || n, ' ' ORDER BY arm)
          FROM model_select.scores('%s', array_fill(0.25::float8, ARRAY[16]))"
declare -A A_SCORES
for sel in h_lin h_rff; do
    A_SCORES[$sel]=$(q -c "SET extra_float_digits = 3" -c "$(printf "$SCORES" "$sel")")
done
as_server sh -c "echo \"model_select.checkpoint_threshold = 16\" >> '$CL/handoff/postgresql.conf'"
q -c "SELECT pg_reload_conf()" >/dev/null
check "at checkpoint_threshold 16 the learner checkpoints every arm" \
    wait_for "no pending rewards" "SELECT sum(pending) = 0 FROM model_select.arm_stats"
p0=$(passes)
wait_for "20 more passes" "SELECT passes >= $p0 + 20 FROM model_select.learner WHERE database = '$DB'" >/dev/null
declare -A B_SCORES
b_stats=$(q -c "SELECT count(*) FROM model_select.scores('h_lin', ms_rand(16))" \
            -c "SELECT count(*) FROM model_select.scores('h_rff', ms_rand(16))" \
            -c "SELECT shared_hits || ' ' || shared_publishes FROM model_select.cache_stats(this_backend => true)" | tail -n 1)
echo "# B took and published: $b_stats; per arm, its new checkpoint's first version published before the commit (ms):"
q -c "SELECT st.arm_id || ': ' || round(extract(epoch FROM pg_xact_commit_timestamp(st.xmin) - min(v.published_at)) * 1000, 3)
        FROM model_select.arm_state st JOIN model_select.arms a USING (arm_id)
        JOIN model_select.learner_versions v ON v.arm = a.name AND v.checkpoint_version = st.version
        JOIN model_select.selectors s ON s.name = v.selector AND s.selector_id = st.selector_id
       GROUP BY st.arm_id, st.xmin ORDER BY st.arm_id" | sed 's/^/#   /'
check "every arm's first version of its new checkpoint was published by the checkpoint, before it committed" \
    is_true "SELECT count(*) = 6 AND bool_and(first < pg_xact_commit_timestamp(xmin))
               FROM (SELECT st.arm_id, st.xmin, min(v.published_at) AS first
                       FROM model_select.arm_state st JOIN model_select.arms a USING (arm_id)
                       JOIN model_select.selectors s ON s.selector_id = st.selector_id
                       JOIN model_select.learner_versions v
                         ON v.selector = s.name AND v.arm = a.name AND v.checkpoint_version = st.version
                      GROUP BY st.arm_id, st.xmin) f"
check "a new backend takes every arm's base from the shared cache (6 hits) and publishes none" \
    test "$b_stats" = "6 0"
for sel in h_lin h_rff; do
    B_SCORES[$sel]=$(q -c "SET extra_float_digits = 3" -c "$(printf "$SCORES" "$sel")")
    check "$sel: the scores after the checkpoints equal those before, bit for bit" \
        test "${B_SCORES[$sel]}" = "${A_SCORES[$sel]}"
done
# restarted, the shared cache is empty: a backend reads the checkpoints back
as_server "$BINDIR/pg_ctl" -D "$CL/handoff" -m fast -w stop >/dev/null
cluster_start handoff "$PORT" || bail "the server failed to restart: $(tail -n 5 "$CL/handoff.log")"
for sel in h_lin h_rff; do
    check "$sel: they equal those of a backend that reads the checkpoints, bit for bit" \
        test "$(q -c "SET extra_float_digits = 3" -c "$(printf "$SCORES" "$sel")")" = "${B_SCORES[$sel]}"
done
rebuild_checks h_lin
rebuild_checks h_rff
finish
