#!/usr/bin/env bash
# Issue 41, the fallback after a failed publish, on a cluster of its own with
# model_select preloaded, the learner serving and model_select.learner_max_lag
# at 1 hour (so that the bound alone never makes backends fold: what they do
# here, the learner's last pass made them do).  Two lin_ucb selectors: 'big'
# (d 600: a version of an arm is about 1.5 MB) and 'small' (d 8), the one
# watched.
#   - the shared cache at its smallest size (1 MB) has no room for a version
#     of 'big'; the versions of 'small' the learner published before stay (a
#     session that scored them keeps them pinned);
#   - under load (a writer of 'big', 2 routers of both selectors) decisions
#     go on, record the prefixes they scored, and decision_scores()
#     re-derives them bit for bit (every decision of 'small', the last 50 of
#     'big': each re-derivation of 'big' folds its prefix at d 600);
#   - the load over, 'big' grows once more and the learner makes 3 passes
#     (each publishes no version of it: it has grown past any it could
#     publish); with the learner stopped (SIGSTOP) then, rewards committed to
#     'small' are scored at once (n = the whole log, not its version's):
#     backends fold the final rewards themselves, though the bound has not
#     passed;
#   - nothing is lost: every committed reward is in the log and in every
#     arm's n, and every score equals rebuild_state's;
#   - restarted with a shared cache that has room, the learner publishes
#     versions of both that hold the whole log, and decisions go back to
#     scoring them: with the learner stopped again after a pass, rewards
#     committed to 'small' meanwhile are not seen (n = the version's), the
#     decisions record that version, and decision_scores() re-derives them
#     (1e-9: their bases are part 1's rebuild_state(), built in blocks);
#     continued, the learner publishes them and decisions see the whole log.
# The fallback half fails where backends keep scoring versions after a pass
# that could not publish, the other where they never return to the learner's
# versions (docs/caches.md, docs/operations.md#what-a-decision-sees).
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_fallback
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
PORT=$(free_port $(( ${PGPORT:-55500} + 120 )))
preloaded_initdb fb "model_select.learner_databases = '$DB'" "model_select.learner_naptime = '50ms'" \
    "model_select.learner_max_lag = '1h'" "max_connections = 30"
start() {  # start SHARED_CACHE_SIZE
    cluster_start fb "$PORT" "-c model_select.shared_cache_size=$1" ||
        bail "the server failed to start: $(tail -n 5 "$CL/fb.log")"
}
start 1MB
export PGHOST=$CL PGPORT=$PORT PGUSER=postgres

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selectors failed"
SELECT model_select.create_selector('big', 600, ARRAY['a', 'b'], 'lin_ucb', NULL, '{}', 41);
SELECT model_select.create_selector('small', 8, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL, '{}', 42);
CREATE TABLE load_done (done bool);
CREATE TABLE probe AS SELECT ms_rand(8) AS x;
CREATE FUNCTION dim_of(s text) RETURNS int LANGUAGE sql AS $$ SELECT CASE s WHEN 'big' THEN 600 ELSE 8 END $$;
CREATE FUNCTION add_rewards(s text, n int) RETURNS void LANGUAGE sql AS $$
    INSERT INTO model_select.rewards(selector, arm, context, reward)
    SELECT s, (ARRAY['a', 'b', 'c'])[1 + i % (CASE s WHEN 'big' THEN 2 ELSE 3 END)], ms_rand(dim_of(s)), random()
      FROM generate_series(1, n) i
$$;
CREATE PROCEDURE writer() LANGUAGE plpgsql AS $$
BEGIN
    LOOP
        PERFORM add_rewards('big', 2);
        COMMIT;
        PERFORM pg_sleep(0.02);
        EXIT WHEN EXISTS (SELECT FROM load_done);
    END LOOP;
END $$;
-- routes both selectors, rewards only the decisions of 'big'
CREATE PROCEDURE router() LANGUAGE plpgsql AS $$
DECLARE
    d bigint;
BEGIN
    LOOP
        PERFORM model_select.route('small', ms_rand(8));
        SELECT decision_id INTO d FROM model_select.route('big', ms_rand(600));
        INSERT INTO model_select.rewards(decision_id, reward) VALUES (d, random());
        COMMIT;
        EXIT WHEN EXISTS (SELECT FROM load_done);
    END LOOP;
END $$;
-- n of arm 'a' of 'small' in what route() scores now, and the decision it
-- logged, in a transaction of its own (a fresh snapshot, no rewards of its own)
CREATE FUNCTION scored_n() RETURNS TABLE (n bigint, decision_id bigint) LANGUAGE sql AS $$
    SELECT sc.n, (SELECT r.decision_id FROM model_select.route('small', p.x) r)
      FROM probe p, model_select.scores('small', p.x) sc WHERE sc.arm = 'a'
$$;
SELECT add_rewards('big', 40), add_rewards('small', 30);
SELECT model_select.checkpoint('big');
SQL

learner() { q -c "SELECT $1 FROM model_select.learner WHERE running AND database = current_database()" 2>/dev/null; }
wait_learner() {  # until a learner serves (with another pid than $1)
    wait_for "a learner (pid other than ${1:-0})" \
        "SELECT last_pass IS NOT NULL AND pid IS DISTINCT FROM ${1:-0} FROM model_select.learner
          WHERE running AND database = current_database()" ||
        { echo "#   learner: $(q -c 'TABLE model_select.learner' 2>&1)"; return 1; }
}
# until the learner has made N more passes than now (each starts after this call)
passes_after() {
    local p0
    p0=$(learner passes)
    wait_for "the learner's passes to pass $p0 + ${1:-2}" \
        "SELECT passes >= $p0 + ${1:-2} FROM model_select.learner WHERE database = current_database()"
}
arm_a_log="(SELECT count(*) FROM model_select.rewards r JOIN model_select.arms a USING (arm_id)
             WHERE r.selector = 'small' AND a.name = 'a')"
small_log="(SELECT count(*) FROM model_select.rewards WHERE selector = 'small')"
# rederive FILTER [CMP]: decisions whose chosen arm's scores decision_scores() does not
# re-derive (CMP; default the same bits), or that recorded no versions
rederive() {
    local cmp=${2:-"r.ucb IS NOT DISTINCT FROM d.score AND r.mean IS NOT DISTINCT FROM d.mean"}
    no_rows "SELECT d.decision_id || ' ' || a.name || ': ucb ' || d.score || ' vs ' || r.ucb
                    || ', mean ' || d.mean || ' vs ' || r.mean
               FROM model_select.decisions d JOIN model_select.arms a USING (arm_id)
               CROSS JOIN LATERAL model_select.decision_scores(d.decision_id) r
              WHERE r.arm = a.name AND NOT ($cmp)
                AND $1
             UNION ALL SELECT 'decision ' || decision_id || ' recorded no versions'
               FROM model_select.decisions d WHERE d.versions IS NULL AND $1"
}

check "the learner serves $DB" wait_learner
pid=$(learner pid)
check "the learner publishes versions of 'small' that hold its log" wait_for "versions of small" "$(versions_hold_log small)"
session holder
say holder "SELECT count(*) FROM model_select.scores('small', ms_rand(8));"
check "a session that scored them pins them" \
    is_true "SELECT bool_and(pins > 0) FROM model_select.learner_versions WHERE selector = 'small' AND NOT stale"

# 1. the publish fails: no room in the shared cache
load=()
q -c "CALL writer()" >"$MS_WORK/writer" 2>&1 & load+=($!)
for i in 1 2; do q -c "CALL router()" >"$MS_WORK/router.$i" 2>&1 & load+=($!); done
MS_BG_PIDS+=("${load[@]}")
check "under load with no room for versions of 'big', routers log decisions (100)" \
    wait_for "100 decisions" "SELECT count(*) >= 100 FROM model_select.decisions"
q -c "INSERT INTO load_done VALUES (true)" >/dev/null
wait "${load[@]}"
check "the load ended without errors" \
    test -z "$(cat "$MS_WORK"/writer "$MS_WORK"/router.* | head -n 5)"
check "decisions made while the learner could not publish: decision_scores() re-derives each bit for bit (those of 'small', 50 of 'big')" \
    rederive "(d.selector_id = (SELECT selector_id FROM model_select.selectors WHERE name = 'small')
               OR d.decision_id IN (SELECT decision_id FROM model_select.decisions
                                     WHERE selector_id = (SELECT selector_id FROM model_select.selectors WHERE name = 'big')
                                     ORDER BY decision_id DESC LIMIT 50))"
# the last passes: 'big' grew, and its version could not be published
q -c "SELECT add_rewards('big', 2)" >/dev/null
passes_after 3
check "the shared cache has no room: no version of 'big', and those of 'small' stay (pinned)" \
    is_true "SELECT count(*) FILTER (WHERE selector = 'big') = 0 AND count(*) FILTER (WHERE selector = 'small') = 3
               FROM model_select.learner_versions WHERE NOT stale"
stop_idle "$pid" || bail "the learner could not be stopped idle"
q -c "SELECT add_rewards('small', 12)" >/dev/null
read -r seen d1 <<<"$(q -F ' ' -c "SELECT * FROM scored_n()")"
check "learner stopped after a pass that could not publish: a decision scores the rewards committed meanwhile (n $seen = the log's)" \
    is_true "SELECT $seen = $arm_a_log"
check "... it recorded the whole log of 'small' as its prefix" \
    is_true "SELECT sum(v) = $small_log FROM model_select.decisions, unnest(versions) v WHERE decision_id = $d1"
check "... and decision_scores() re-derives it bit for bit" rederive "decision_id = $d1"
kill -CONT "$pid"
committed=$(q -c "SELECT count(*) FROM model_select.rewards")
check "nothing lost: the log holds every committed reward ($committed)" \
    is_true "SELECT count(*) = $committed FROM model_select.rewards"
close_sessions
for s in big small; do rebuild_checks "$s" " (no room)"; done

# 2. room again: the learner publishes, decisions go back to its versions
as_server "$BINDIR/pg_ctl" -D "$CL/fb" -m fast -w stop >/dev/null
start 64MB
check "restarted with a 64 MB shared cache, a new learner serves" wait_learner "$pid"
pid=$(learner pid)
q -c "SELECT add_rewards('big', 6), add_rewards('small', 6)" >/dev/null
for s in big small; do
    check "the learner publishes versions of '$s' that hold its whole log" wait_for "versions of $s" "$(versions_hold_log $s)"
done
passes_after 2
stop_idle "$pid" || bail "the learner could not be stopped idle"
published=$(q -c "SELECT $arm_a_log")
q -c "SELECT add_rewards('small', 12)" >/dev/null
read -r seen d2 <<<"$(q -F ' ' -c "SELECT * FROM scored_n()")"
check "learner stopped after a good pass (within the bound): a decision scores its versions, not the rewards since (n $seen = $published)" \
    test "$seen" = "$published"
check "... it recorded the versions' prefix" \
    is_true "SELECT sum(v) = (SELECT sum(rewards) FROM model_select.learner_versions WHERE selector = 'small' AND NOT stale)
               FROM model_select.decisions, unnest(versions) v WHERE decision_id = $d2"
# (1e-9: the bases are rebuild_state()'s of part 1, built in blocks, docs/sql-reference.md#decision_scores)
check "... and decision_scores() re-derives it (1e-9)" \
    rederive "decision_id = $d2" "ms_close(r.ucb, d.score) AND ms_close(r.mean, d.mean)"
kill -CONT "$pid"
check "continued, the learner publishes the rewards and decisions see the whole log" \
    wait_for "a decision seeing the whole log" \
    "SELECT n = $arm_a_log FROM scored_n()"
check "nothing lost after the restart" \
    is_true "SELECT count(*) = $committed + 24 FROM model_select.rewards"
for s in big small; do rebuild_checks "$s" " (room again)"; done
finish
