#!/usr/bin/env bash
# Issue 41: a checkpoint newer than every published version does not make
# routers fold.  On a cluster of its own with model_select preloaded and the
# learner serving:
#   - the learner publishes the whole log, then is stopped (SIGSTOP while it
#     waits on its latch, so that it holds no lock);
#   - checkpoint() writes every arm's checkpoint anew: no version is
#     published from them yet;
#   - a new session's route() scores the learner's newest versions: it
#     publishes nothing of its own (before, it folded each arm from its new
#     checkpoint under the arm's load lock, which stalled every other router
#     behind it), records the versions the learner published, and its
#     scores re-derive bit for bit (decision_scores());
#   - the learner resumed, a route() after it still scores the whole log.
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_ckpt_move
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
preloaded_server ckmove "$(free_port $(( ${PGPORT:-55500} + 160 )))" \
    "model_select.learner_databases = '$DB'" "model_select.learner_naptime = '50ms'" \
    "model_select.learner_max_lag = '10min'"

ms_setup || bail "set-up failed"
q -c "SELECT model_select.create_selector('ck', 8, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL, '{}', 31)" >/dev/null ||
    bail "creating the selector failed"
q -f "$(dirname "$0")/lib/learner_load.sql" >/dev/null || bail "creating the load failed"
q -c "SELECT add_rewards('ck', 90)" >/dev/null

LEARNER="SELECT pid FROM model_select.learner WHERE running AND last_pass IS NOT NULL"
check "the learner serves $DB" wait_for "the learner" "SELECT EXISTS ($LEARNER)"
check "the learner's versions hold the whole log" wait_for "versions of the whole log" "$(versions_hold_log ck)"
pid=$(q -c "$LEARNER")
# each arm's checkpoint row (version) and the rewards its newest version holds
CHECKPOINTS="SELECT string_agg(a.name || ':' || st.version, ',' ORDER BY a.name)
               FROM model_select.arms a JOIN model_select.arm_state st ON st.arm_id = a.arm_id
               JOIN model_select.selectors s ON s.selector_id = a.selector_id WHERE s.name = 'ck'"
PUBLISHED="SELECT array_agg(rewards ORDER BY arm) FROM model_select.learner_versions
            WHERE selector = 'ck' AND NOT stale"
check "the learner stops while it waits on its latch" stop_idle "$pid"
before=$(q -c "$CHECKPOINTS")
published=$(q -c "$PUBLISHED")
q -c "SELECT model_select.checkpoint('ck')" >/dev/null
check "checkpoint() wrote every arm's checkpoint anew" \
    is_true "SELECT ($CHECKPOINTS) IS DISTINCT FROM '$before' AND ($CHECKPOINTS) IS NOT NULL"

# one session: route, then this backend's cache counters
out=$(q -c "SELECT decision_id FROM model_select.route('ck', ARRAY[0.3, 0.1, 0.2, 0.5, 0.1, 0.9, 0.4, 0.2]::float8[])" \
        -c "SELECT shared_publishes || ' ' || shared_hits FROM model_select.cache_stats(true)")
read -r decision publishes hits <<<"$(echo $out)"
check "a route() after the new checkpoints folds and publishes nothing of its own (published $publishes, took $hits)" \
    test "$publishes" = 0 -a "$hits" -ge 3
check "it scored the learner's newest versions ($published)" \
    is_true "SELECT versions = '$published'::bigint[] FROM model_select.decisions WHERE decision_id = $decision"
check "its scores re-derive bit for bit" \
    no_rows "SELECT r.arm || ': ' || r.ucb || ' vs ' || d.score FROM model_select.decisions d
               JOIN model_select.arms a USING (arm_id)
               CROSS JOIN LATERAL model_select.decision_scores(d.decision_id) r
              WHERE d.decision_id = $decision AND r.arm = a.name
                AND (r.ucb IS DISTINCT FROM d.score OR r.mean IS DISTINCT FROM d.mean)"

kill -CONT "$pid"
q -c "SELECT add_rewards('ck', 6)" >/dev/null
check "the learner resumed publishes the whole log from the new checkpoints" \
    wait_for "versions of the whole log" "$(versions_hold_log ck)"
finish
