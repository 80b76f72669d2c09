#!/usr/bin/env bash
# Issue 41, and issue 42's budgeted pak_ucb count: a checkpoint newer than
# every published version does not make routers fold (lin_ucb, pak_ucb and
# bkb selectors, and lin_ucb and pak_ucb under confidence cmm).  On a cluster
# of its own with model_select preloaded and the learner serving:
#   - the learner publishes the whole log, then is stopped (SIGSTOP while it
#     waits on its latch, so that it holds no lock); new rewards arrive, which
#     its versions do not hold;
#   - a checkpoint() rolled back, whole or to a savepoint, leaves no version
#     of its own in the shared cache (it published one before its commit),
#     and the learner's versions stay the arms' newest: a route() scores
#     them and folds nothing (before, the uncommitted versions had made
#     them stale, which frees them once nobody pins them: then each router
#     folded the arms for itself);
#   - checkpoint() writes every arm's checkpoint anew and publishes its
#     versions before it commits (a savepoint rolled back after it in its
#     transaction withdraws none of them): they hold the whole log at once,
#     with the learner still stopped (before, a router that saw the new
#     checkpoint rows found no version named by them and, as the learner's
#     held fewer rewards, folded each arm from its checkpoint under the arm's
#     load lock, which stalled every other router behind it);
#   - a new session's route() scores those versions: it publishes nothing of
#     its own, records them, and its scores re-derive bit for bit
#     (decision_scores());
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
# lin_ucb's state is stored whole, pak_ucb's and bkb's by rows (state_store.c); bkb with
# its adaptive radius and a budget, and lin_ucb and pak_ucb with confidence cmm, so that
# their versions carry those (PolicyOps.prepare: the radius, the cost model, the
# eigendecomposition)
q -c "SELECT model_select.create_selector('ck', 8, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL, '{}', 31)" \
  -c "SELECT model_select.create_selector('pk', 8, ARRAY['a', 'b', 'c'], 'pak_ucb', NULL, '{}', 32)" \
  -c "SELECT model_select.create_selector('bk', 8, ARRAY['a', 'b', 'c'], 'bkb', NULL,
                                          '{\"adaptive_beta\": true, \"budget\": 0.5}', 33)" \
  -c "SELECT model_select.create_selector('lc', 8, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL,
                                          '{\"confidence\": \"cmm\"}', 34)" \
  -c "SELECT model_select.create_selector('pc', 8, ARRAY['a', 'b', 'c'], 'pak_ucb', NULL,
                                          '{\"confidence\": \"cmm\"}', 35)" >/dev/null ||
    bail "creating the selectors failed"
q -f "$(dirname "$0")/lib/learner_load.sql" >/dev/null || bail "creating the load failed"
q -c "SELECT add_rewards(s, 90) FROM unnest(ARRAY['ck', 'pk', 'bk', 'lc', 'pc']) s" >/dev/null

LEARNER="SELECT pid FROM model_select.learner WHERE running AND last_pass IS NOT NULL"
check "the learner serves $DB" wait_for "the learner" "SELECT EXISTS ($LEARNER)"
for sel in ck pk bk lc pc; do
    check "$sel: the learner's versions hold the whole log" \
        wait_for "versions of the whole log" "$(versions_hold_log $sel)"
done
pid=$(q -c "$LEARNER")
check "the learner stops while it waits on its latch" stop_idle "$pid"

# each arm's checkpoint row (version) and the rewards its newest version holds
checkpoints() {
    echo "SELECT string_agg(a.name || ':' || st.version, ',' ORDER BY a.name)
            FROM model_select.arms a JOIN model_select.arm_state st ON st.arm_id = a.arm_id
            JOIN model_select.selectors s ON s.selector_id = a.selector_id WHERE s.name = '$1'"
}
holding() {
    echo "SELECT arm || ':' || rewards FROM model_select.learner_versions
           WHERE selector = '$1' AND NOT stale AND lag_rewards = 0"
}
# routes_on_versions SELECTOR WHEN VERSIONS: a route() in a new session folds
# and publishes nothing of its own, scores VERSIONS (the rewards each arm's
# version holds), and its scores re-derive bit for bit
routes_on_versions() {
    local sel=$1 when=$2 published=$3 out decision publishes hits
    # one session: route, then this backend's cache counters
    out=$(q -c "SELECT decision_id FROM model_select.route('$sel', ARRAY[0.3, 0.1, 0.2, 0.5, 0.1, 0.9, 0.4, 0.2]::float8[])" \
            -c "SELECT shared_publishes || ' ' || shared_hits FROM model_select.cache_stats(true)")
    read -r decision publishes hits <<<"$(echo $out)"
    check "$sel: a route() $when folds and publishes nothing of its own (published $publishes, took $hits)" \
        test "$publishes" = 0 -a "$hits" -ge 3
    check "$sel: it scored the versions ($published)" \
        is_true "SELECT versions = '$published'::bigint[] FROM model_select.decisions WHERE decision_id = $decision"
    check "$sel: its scores re-derive bit for bit" \
        no_rows "SELECT r.arm || ': ' || r.ucb || ' vs ' || d.score FROM model_select.decisions d
                   JOIN model_select.arms a USING (arm_id)
                   CROSS JOIN LATERAL model_select.decision_scores(d.decision_id) r
                  WHERE d.decision_id = $decision AND r.arm = a.name
                    AND (r.ucb IS DISTINCT FROM d.score OR r.mean IS DISTINCT FROM d.mean)"
}

for sel in ck pk bk lc pc; do
    q -c "SELECT add_rewards('$sel', 30)" >/dev/null
    check "$sel: the stopped learner's versions do not hold the new rewards" no_rows "$(holding $sel)"
    learners=$(q -c "SELECT array_agg(rewards ORDER BY arm) FROM model_select.learner_versions
                      WHERE selector = '$sel' AND NOT stale")
    before=$(q -c "$(checkpoints $sel)")
    q -c "BEGIN" -c "SELECT model_select.checkpoint('$sel')" -c "ROLLBACK" >/dev/null
    check "$sel: a checkpoint() rolled back leaves no version of its own" no_rows "$(holding $sel)"
    q -c "BEGIN" -c "SAVEPOINT s" -c "SELECT model_select.checkpoint('$sel')" -c "ROLLBACK TO s" \
      -c "COMMIT" >/dev/null
    check "$sel: a checkpoint() rolled back to a savepoint leaves no version of its own" \
        no_rows "$(holding $sel)"
    check "$sel: neither changed a checkpoint row" is_true "SELECT ($(checkpoints $sel)) = '$before'"
    check "$sel: the learner's versions ($learners) are still the arms' newest, not stale" \
        is_true "SELECT array_agg(rewards ORDER BY arm) = '$learners'::bigint[]
                   FROM model_select.learner_versions WHERE selector = '$sel' AND NOT stale"
    routes_on_versions "$sel" "after them" "$learners"
    # a savepoint rolled back after it withdraws none of its versions
    q -c "BEGIN" -c "SELECT model_select.checkpoint('$sel')" -c "SAVEPOINT s" -c "SELECT 1" \
      -c "ROLLBACK TO s" -c "COMMIT" >/dev/null
    check "$sel: checkpoint() wrote every arm's checkpoint anew" \
        is_true "SELECT ($(checkpoints $sel)) IS DISTINCT FROM '$before' AND ($(checkpoints $sel)) IS NOT NULL"
    check "$sel: its versions hold the whole log, the learner still stopped" \
        is_true "$(versions_hold_log $sel)"
    published=$(q -c "SELECT array_agg(rewards ORDER BY arm) FROM model_select.learner_versions
                       WHERE selector = '$sel' AND NOT stale")

    routes_on_versions "$sel" "after the new checkpoints" "$published"
done

kill -CONT "$pid"
for sel in ck pk bk lc pc; do
    q -c "SELECT add_rewards('$sel', 6)" >/dev/null
    check "$sel: the learner resumed publishes the whole log from the new checkpoints" \
        wait_for "versions of the whole log" "$(versions_hold_log $sel)"
done

finish
