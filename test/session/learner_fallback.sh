#!/usr/bin/env bash
# Issue 41, the fallback after a failed publish, on a cluster of its own with
# model_select preloaded, the learner serving and model_select.learner_max_lag
# at 1 hour (so that the bound alone never makes backends fold: what they do
# here, the learner's last pass made them do):
#   - a pak_ucb selector (d 8, 3 arms) whose versions fit the shared cache at
#     its smallest size (1 MB) while the arms are small: the learner
#     publishes them;
#   - the arms grow past 1 MB each (600 rewards per arm): the learner's
#     publishes fail for want of room, so its versions trail the log; under
#     load (2 writers, 2 routers) decisions go on, record the prefixes they
#     scored, and decision_scores() re-derives each (1e-9);
#   - with the learner stopped (SIGSTOP) after such a pass, rewards committed
#     meanwhile are scored at once (n = the whole log, not the version that
#     could not move on): backends fold the final rewards themselves;
#   - nothing is lost: every committed reward is in the log and in every
#     arm's n, and every score equals rebuild_state's;
#   - restarted with a shared cache that has room, the learner publishes
#     versions that hold the whole log, and decisions go back to scoring
#     them: with the learner stopped again, rewards committed meanwhile are
#     not seen (n = the version's), the decisions record that version, and
#     decision_scores() re-derives them; continued, the learner
#     publishes them and decisions see the whole log.
# The fallback half fails where backends keep scoring versions that could not
# be published, the other where they never return to the learner's versions
# (docs/caches.md, docs/operations.md#what-a-decision-sees).
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_fallback
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
export OPENBLAS_NUM_THREADS=1
DIM=8
PORT=$(free_port $(( ${PGPORT:-55500} + 120 )))
cluster_initdb fb || bail "initdb failed: $(tail -n 5 "$CL/initdb.log")"
as_server sh -c "printf '%s\n' \"shared_preload_libraries = 'model_select'\" \
    \"model_select.learner_databases = '$DB'\" \"model_select.learner_naptime = '50ms'\" \
    \"model_select.learner_max_lag = '1h'\" \"model_select.shared_min_size = 0\" \
    \"max_connections = 30\" >> '$CL/fb/postgresql.conf'"
start() {  # start SHARED_CACHE_SIZE
    cluster_start fb "$PORT" "-c model_select.shared_cache_size=$1" ||
        bail "the server failed to start: $(tail -n 5 "$CL/fb.log")"
}
start 1MB
export PGHOST=$CL PGPORT=$PORT PGUSER=postgres

ms_setup || bail "set-up failed"
q >/dev/null <<SQL || bail "creating the selector failed"
SELECT model_select.create_selector('fb', $DIM, ARRAY['a', 'b', 'c'], 'pak_ucb', 'rbf', '{}', 41);
CREATE TABLE load_done (done bool);
CREATE TABLE probe AS SELECT ms_rand($DIM) AS x;
CREATE FUNCTION add_rewards(n int) RETURNS void LANGUAGE sql AS \$\$
    INSERT INTO model_select.rewards(selector, arm, context, reward)
    SELECT 'fb', (ARRAY['a', 'b', 'c'])[1 + i % 3], ms_rand($DIM), random()
      FROM generate_series(1, n) i
\$\$;
CREATE PROCEDURE writer() LANGUAGE plpgsql AS \$\$
BEGIN
    LOOP
        PERFORM add_rewards(3);
        COMMIT;
        PERFORM pg_sleep(0.02);
        EXIT WHEN EXISTS (SELECT FROM load_done);
    END LOOP;
END \$\$;
CREATE PROCEDURE router() LANGUAGE plpgsql AS \$\$
DECLARE
    d bigint;
BEGIN
    LOOP
        SELECT decision_id INTO d FROM model_select.route('fb', ms_rand($DIM));
        IF random() < 0.5 THEN
            INSERT INTO model_select.rewards(decision_id, reward) VALUES (d, random());
        END IF;
        COMMIT;
        EXIT WHEN EXISTS (SELECT FROM load_done);
    END LOOP;
END \$\$;
-- n of arm 'a' in what route() scores now, and the decision it logged, in
-- a transaction of its own (a fresh snapshot, no rewards of its own)
CREATE FUNCTION scored_n() RETURNS TABLE (n bigint, decision_id bigint) LANGUAGE sql AS \$\$
    SELECT sc.n, (SELECT r.decision_id FROM model_select.route('fb', p.x) r)
      FROM probe p, model_select.scores('fb', p.x) sc WHERE sc.arm = 'a'
\$\$;
SELECT add_rewards(150);
SQL

learner() { q -c "SELECT $1 FROM model_select.learner WHERE running AND database = current_database()" 2>/dev/null; }
wait_learner() {  # until a learner serves (with another pid than $1)
    for _ in $(seq 1 600); do
        [ "$(learner "last_pass IS NOT NULL AND pid IS DISTINCT FROM ${1:-0}")" = t ] && return 0
        sleep 0.1
    done
    echo "#   no learner: $(q -c 'TABLE model_select.learner' 2>&1)"; return 1
}
# until the learner has made N more passes than now (each starts after this call)
passes_after() {
    local p0
    p0=$(learner passes)
    wait_for "the learner's passes to pass $p0 + ${1:-2}" \
        "SELECT passes >= $p0 + ${1:-2} FROM model_select.learner WHERE database = current_database()"
}
arm_a_log="(SELECT count(*) FROM model_select.rewards r JOIN model_select.arms a USING (arm_id)
             WHERE r.selector = 'fb' AND a.name = 'a')"
# rederive FILTER: decisions whose chosen arm's scores decision_scores() does not re-derive
# (to 1e-9: a pak_ucb state folded one reward at a time and one built from scratch in blocks
# agree to rounding, docs/sql-reference.md#decision_scores), or that recorded no versions
rederive() {
    no_rows "SELECT d.decision_id || ' ' || a.name || ': ucb ' || d.score || ' vs ' || r.ucb
                    || ', mean ' || d.mean || ' vs ' || r.mean
               FROM model_select.decisions d JOIN model_select.arms a USING (arm_id)
               CROSS JOIN LATERAL model_select.decision_scores(d.decision_id) r
              WHERE r.arm = a.name AND NOT (ms_close(r.ucb, d.score) AND ms_close(r.mean, d.mean))
                AND $1
             UNION ALL SELECT 'decision ' || decision_id || ' recorded no versions'
               FROM model_select.decisions WHERE versions IS NULL AND $1"
}

check "the learner serves $DB" wait_learner
pid=$(learner pid)
check "while the arms are small, the learner publishes versions of 'fb' that hold the log" \
    wait_for "versions holding the log" \
    "SELECT count(*) = 3 FROM model_select.learner_versions WHERE selector = 'fb' AND NOT stale AND lag_rewards = 0"

# 1. the publish fails: no room in the shared cache
for _ in $(seq 1 33); do q -c "SELECT add_rewards(50)" >/dev/null; done
check "the arms of 'fb' grew past the shared cache's 1 MB" \
    is_true "SELECT min(state_bytes) > 1048576 FROM model_select.arm_stats WHERE selector = 'fb'"
for i in 1 2; do
    q -c "CALL writer()" >"$MS_WORK/writer.$i" 2>&1 & MS_BG_PIDS+=($!)
    q -c "CALL router()" >"$MS_WORK/router.$i" 2>&1 & MS_BG_PIDS+=($!)
done
check "under load with no room for versions, routers log decisions (100)" \
    wait_for "100 decisions" "SELECT count(*) >= 100 FROM model_select.decisions"
q -c "INSERT INTO load_done VALUES (true)" >/dev/null
wait
MS_BG_PIDS=()
check "the load ended without errors" \
    test -z "$(cat "$MS_WORK"/writer.* "$MS_WORK"/router.* | head -n 5)"
check "decisions made while the learner could not publish: decision_scores() re-derives each (1e-9)" \
    rederive "true"

q -c "SELECT add_rewards(3)" >/dev/null
passes_after 2
check "the learner's publishes failed: no version of 'fb' holds the log" \
    is_true "SELECT count(*) = 0 FROM model_select.learner_versions WHERE selector = 'fb' AND NOT stale AND lag_rewards = 0"
kill -STOP "$pid"
q -c "SELECT add_rewards(12)" >/dev/null
committed=$(q -c "SELECT count(*) FROM model_select.rewards")
read -r seen d1 <<<"$(q -F ' ' -c "SELECT * FROM scored_n()")"
check "learner stopped after a failed publish: a decision scores the rewards committed meanwhile (n $seen = the log's)" \
    is_true "SELECT $seen = $arm_a_log"
check "... it recorded the whole log as its prefix" \
    is_true "SELECT sum(v) = $committed FROM model_select.decisions, unnest(versions) v WHERE decision_id = $d1"
check "... and decision_scores() re-derives it (1e-9)" rederive "decision_id = $d1"
kill -CONT "$pid"
check "nothing lost: the log holds every committed reward ($committed)" \
    is_true "SELECT count(*) = $committed FROM model_select.rewards"
rebuild_checks fb " (no room)"

# 2. room again: the learner publishes, decisions go back to its versions
as_server "$BINDIR/pg_ctl" -D "$CL/fb" -m fast -w stop >/dev/null
start 64MB
check "restarted with a 64 MB shared cache, a new learner serves" wait_learner "$pid"
pid=$(learner pid)
q -c "SELECT add_rewards(6)" >/dev/null
check "the learner publishes versions of 'fb' that hold every arm's whole log" \
    wait_for "versions holding the log" \
    "SELECT count(*) = 3 FROM model_select.learner_versions WHERE selector = 'fb' AND NOT stale AND lag_rewards = 0"
passes_after 2
kill -STOP "$pid"
published=$(q -c "SELECT $arm_a_log")
q -c "SELECT add_rewards(12)" >/dev/null
read -r seen d2 <<<"$(q -F ' ' -c "SELECT * FROM scored_n()")"
check "learner stopped after a good publish (within the bound): a decision scores its versions, not the rewards since (n $seen = $published)" \
    test "$seen" = "$published"
check "... it recorded the versions' prefix" \
    is_true "SELECT sum(v) = (SELECT sum(rewards) FROM model_select.learner_versions WHERE selector = 'fb' AND NOT stale)
               FROM model_select.decisions, unnest(versions) v WHERE decision_id = $d2"
check "... and decision_scores() re-derives it (1e-9)" rederive "decision_id = $d2"
kill -CONT "$pid"
check "continued, the learner publishes the rewards and decisions see the whole log" \
    wait_for "a decision seeing the whole log" \
    "SELECT n = $arm_a_log FROM scored_n()"
check "nothing lost after the restart" \
    is_true "SELECT count(*) = $committed + 18 FROM model_select.rewards"
rebuild_checks fb " (room again)"
finish
