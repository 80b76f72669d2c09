#!/usr/bin/env bash
# Issue 41, several learner processes per database (model_select.learner_workers
# at its default, 2), on a cluster of its own with model_select preloaded:
#   - two learners serve the database, workers 0 and 1, with their own pids;
#   - under load (3 routers that route and reward three selectors, a lin_ucb
#     and a pak_ucb one of 5 arms, and a pak_ucb one with a budget, whose
#     rewards cost and whose arms learn their cost, each decision in a
#     transaction of its own) both publish versions and checkpoint arms (each
#     its share), and every version of every arm comes to hold the whole log;
#   - every decision made meanwhile is re-derived by decision_scores() from
#     the prefixes it recorded, whichever worker published them, bit for
#     bit;
#   - with worker 1 stopped (SIGSTOP), a reward committed to one of its arms
#     is scored once it has waited model_select.learner_max_lag: backends
#     fold for themselves while any worker falls behind, though worker 0
#     keeps passing; continued, worker 1 publishes it;
#   - nothing is lost: every arm's n equals its log and every score equals
#     rebuild_state's.
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_workers
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
MS_DEFAULT_WORKERS=1 preloaded_server lw "$(free_port $(( ${PGPORT:-55500} + 130 )))" \
    "model_select.learner_databases = '$DB'" \
    "model_select.learner_naptime = '50ms'" "model_select.learner_max_lag = '500ms'" \
    "model_select.checkpoint_threshold = 16"

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selectors failed"
SELECT model_select.create_selector('lw', 8, ARRAY['a', 'b', 'c', 'd', 'e'], 'lin_ucb', NULL, '{}', 41);
SELECT model_select.create_selector('pw', 8, ARRAY['a', 'b', 'c', 'd', 'e'], 'pak_ucb', NULL, '{}', 42);
SELECT model_select.create_selector('pb', 8, ARRAY['a', 'b', 'c', 'd', 'e'], 'pak_ucb', NULL, '{"budget": 0.5}', 43);
CREATE TABLE load_done (done bool);
CREATE TABLE probe AS SELECT ms_rand(8) AS x;
CREATE PROCEDURE router() LANGUAGE plpgsql AS $$
DECLARE
    d bigint;
    s text;
BEGIN
    LOOP
        FOREACH s IN ARRAY ARRAY['lw', 'pw', 'pb'] LOOP
            SELECT decision_id INTO d FROM model_select.route(s, ms_rand(8));
            INSERT INTO model_select.rewards(decision_id, reward, cost)
            VALUES (d, random(), CASE s WHEN 'pb' THEN random() END);
            COMMIT;
        END LOOP;
        EXIT WHEN EXISTS (SELECT FROM load_done);
    END LOOP;
END $$;
SQL

workers="SELECT count(*) = 2 AND count(DISTINCT pid) = 2 AND array_agg(worker ORDER BY worker) = '{0,1}'
                AND bool_and(last_pass IS NOT NULL)
           FROM model_select.learner WHERE running AND database = current_database()"
check "two learners serve $DB, workers 0 and 1, each with a finished pass" \
    wait_for "two learners" "$workers"

load=()
for i in 1 2 3; do q -c "CALL router()" >"$MS_WORK/router.$i" 2>&1 & load+=($!); done
MS_BG_PIDS+=("${load[@]}")
check "under load, the routers log 450 decisions" \
    wait_for "450 decisions" "SELECT count(*) >= 450 FROM model_select.decisions"
q -c "INSERT INTO load_done VALUES (true)" >/dev/null
wait "${load[@]}"
MS_BG_PIDS=()
check "the load ended without errors" test -z "$(cat "$MS_WORK"/router.* | head -n 5)"
for s in lw pw pb; do
    check "the versions of every arm of '$s' come to hold its whole log" wait_for "versions of $s" "$(versions_hold_log $s)"
done
check "each worker published versions and checkpointed arms, without errors" \
    is_true "SELECT bool_and(versions_published > 0 AND arms_checkpointed > 0 AND errors = 0)
               FROM model_select.learner WHERE database = current_database()"
# rederive SELECTOR CMP: its decisions whose chosen arm's scores decision_scores() does not re-derive (CMP)
rederive() {
    no_rows "SELECT d.decision_id || ' ' || a.name || ': ucb ' || d.score || ' vs ' || r.ucb
               FROM model_select.decisions d JOIN model_select.arms a USING (arm_id)
               CROSS JOIN LATERAL model_select.decision_scores(d.decision_id) r
              WHERE r.arm = a.name AND a.selector_id = (SELECT selector_id FROM model_select.selectors WHERE name = '$1')
                AND NOT ($2)"
}
check "decision_scores() re-derives every decision of 'lw' (lin_ucb) bit for bit" \
    rederive lw "r.ucb IS NOT DISTINCT FROM d.score AND r.mean IS NOT DISTINCT FROM d.mean"
check "... and every decision of 'pw' (pak_ucb) bit for bit" \
    rederive pw "r.ucb IS NOT DISTINCT FROM d.score AND r.mean IS NOT DISTINCT FROM d.mean"
check "... and of 'pb' (pak_ucb with a budget), its price too" \
    rederive pb "r.ucb IS NOT DISTINCT FROM d.score AND r.cost IS NOT DISTINCT FROM d.expected_cost"
for s in lw pw pb; do rebuild_checks "$s" " (two workers)"; done

# worker 1 stopped: one of its arms gets rewards
pid1=$(q -c "SELECT pid FROM model_select.learner WHERE running AND database = current_database() AND worker = 1")
arm1=$(q -c "SELECT a.name FROM model_select.arms a JOIN model_select.selectors s USING (selector_id)
              WHERE s.name = 'lw' AND a.arm_id % 2 = 1 ORDER BY a.arm_id LIMIT 1")
arm_log="(SELECT count(*) FROM model_select.rewards WHERE selector = 'lw' AND arm = '$arm1')"
stop_idle "$pid1" || bail "learner worker 1 could not be stopped idle"
q -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
      SELECT 'lw', '$arm1', ms_rand(8), random() FROM generate_series(1, 12)" >/dev/null
check "worker 1 stopped: a reward of its arm $arm1 is scored once it waited learner_max_lag (n = the log's)" \
    wait_for "scores of lw to hold arm $arm1's log" \
    "SELECT sc.n = $arm_log FROM probe p, model_select.scores('lw', p.x) sc WHERE sc.arm = '$arm1'"
check "... while worker 0 kept passing" \
    is_true "SELECT running AND last_pass > now() - interval '30 s' FROM model_select.learner
              WHERE database = current_database() AND worker = 0"
kill -CONT "$pid1"
check "continued, worker 1 publishes versions of 'lw' that hold its whole log" wait_for "versions of lw" "$(versions_hold_log lw)"
for s in lw pw pb; do rebuild_checks "$s" " (after the stop)"; done
finish
