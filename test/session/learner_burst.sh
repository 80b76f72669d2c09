#!/usr/bin/env bash
# Issue 28, published versions: a burst of rewards while sessions score, on
# a cluster of its own with model_select preloaded and the learner serving.
#   - 4 writers log MS_BURST_REWARDS (50,000) rewards on two selectors whose
#     arm models are large enough to be shared (lin_ucb d = 48, rff_ucb with
#     64 features), in transactions of 50 rewards of one selector, while 8 readers route both in a
#     loop, each call in a transaction of its own, recording its decision;
#   - the learner publishes versions meanwhile, and the readers take them;
#   - the learner is stopped (SIGSTOP) during the burst: the readers
#     go on routing (none waits for it), then it is continued;
#   - for MS_BURST_CHECKS (3) recorded decisions per selector, spread over
#     the burst: a fresh selector with the same settings and seed, given
#     exactly the rewards of the versions the decision recorded (each arm's
#     prefix of the log) in the log's order, scores what the reader scored
#     (the chosen arm's n, mean and ucb; 1e-9), and decision_scores() re-derives
#     its scores bit for bit (under the learner's rule a decision scores the
#     newest published versions, not the exact fold of its snapshot, so the
#     snapshot is no longer what to replay: docs/caches.md);
#   - learner_versions then shows, per arm, a version that holds the whole
#     log (rewards = arm_stats.n, nothing logged after it);
#   - an application role with a right on one selector sees its versions only;
#   - afterwards every score equals rebuild_state's (rebuild_checks).
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_burst
MS_ROLES=ms_burst_app
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
REWARDS=${MS_BURST_REWARDS:-50000}
CHECKS=${MS_BURST_CHECKS:-3}
WRITERS=4
READERS=8
PER_TX=50
PORT=$(free_port $(( ${PGPORT:-55500} + 70 )))
cluster_initdb burst || bail "initdb failed: $(tail -n 5 "$CL/initdb.log")"
as_server sh -c "printf '%s\n' \"shared_preload_libraries = 'model_select'\" \
    \"model_select.learner_databases = '$DB'\" \"model_select.learner_naptime = '50ms'\" \
    \"model_select.learner_workers = 1\" \"max_connections = 40\" ${MS_BURST_CONF:-} >> '$CL/burst/postgresql.conf'"
cluster_start burst "$PORT" || bail "the server failed to start: $(tail -n 5 "$CL/burst.log")"
export PGHOST=$CL PGPORT=$PORT PGUSER=postgres

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selectors failed"
SELECT model_select.create_selector('b_lin', 48, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL, '{}', 11);
SELECT model_select.create_selector('b_rff', 8, ARRAY['a', 'b', 'c'], 'rff_ucb', NULL, '{"features": 64}', 12);
CREATE TABLE probes (selector text PRIMARY KEY, context float8[]);
INSERT INTO probes SELECT 'b_lin', ms_rand(48) UNION ALL SELECT 'b_rff', ms_rand(8);
CREATE TABLE obs (id bigserial PRIMARY KEY, reader int, selector text, decision_id bigint);
CREATE TABLE reader_stats (reader int, shared_hits bigint);
CREATE TABLE burst_done (done bool);
-- one selector per call: a transaction that wrote to one selector before it
-- first locks another is a late writer there, and may get 40001 (to retry)
-- once a checkpoint of the other has passed its id
CREATE FUNCTION add_rewards(s text, n int) RETURNS void LANGUAGE sql AS $$
    INSERT INTO model_select.rewards(selector, arm, context, reward)
    SELECT s, (ARRAY['a', 'b', 'c'])[1 + (i + (random() * 3)::int) % 3],
           ms_rand(CASE s WHEN 'b_lin' THEN 48 ELSE 8 END), random()
      FROM generate_series(1, n) i
$$;
-- one decision per selector and transaction, until the burst is over
CREATE PROCEDURE reader(me int) LANGUAGE plpgsql AS $$
BEGIN
    LOOP
        INSERT INTO obs(reader, selector, decision_id)
        SELECT me, p.selector, (model_select.route(p.selector, p.context)).decision_id FROM probes p;
        COMMIT;
        EXIT WHEN EXISTS (SELECT FROM burst_done);
    END LOOP;
    INSERT INTO reader_stats SELECT me, shared_hits FROM model_select.cache_stats(this_backend => true);
END $$;
SELECT add_rewards('b_lin', 100);
SELECT add_rewards('b_rff', 100);
SQL

learner_pid() { q -c "SELECT pid FROM model_select.learner WHERE running AND database = '$DB' AND last_pass IS NOT NULL"; }
for _ in $(seq 1 300); do [ -n "$(learner_pid)" ] && break; sleep 0.1; done
pid=$(learner_pid)
check "the learner serves $DB" test -n "$pid"

for r in $(seq 1 $READERS); do
    q -c "CALL reader($r)" >"$MS_WORK/reader.$r" 2>&1 &
    MS_BG_PIDS+=($!)
done
per_writer=$(( REWARDS / 2 / PER_TX / WRITERS ))   # rounds per writer: a transaction per selector
writers=()
for w in $(seq 1 $WRITERS); do
    ( for _ in $(seq 1 $per_writer); do
          echo "SELECT add_rewards('b_lin', $PER_TX);"; echo "SELECT add_rewards('b_rff', $PER_TX);"
      done |
        psql -X -q -v ON_ERROR_STOP=1 -d "$DB" >"$MS_WORK/writer.$w" 2>&1 ) &
    writers+=($!)
done
MS_BG_PIDS+=("${writers[@]}")

# midway: the learner stopped, the readers go on
half=$(( REWARDS / 2 ))
for _ in $(seq 1 1200); do
    [ "$(q -c "SELECT count(*) >= $half FROM model_select.rewards")" = t ] && break
    sleep 0.1
done
published_before=$(q -c "SELECT versions_published FROM model_select.learner")
stop_idle "$pid" || bail "the learner could not be stopped idle"
obs_before=$(q -c "SELECT count(*) FROM obs")
# the readers go on while it is stopped: 8 decisions per reader (a wait for
# that, not for an interval: a reader that waited for the learner would never
# get there)
check "with the learner stopped, the readers route on" \
    wait_for "the readers' decisions while the learner is stopped" \
        "SELECT count(*) >= $obs_before + 8 * $READERS FROM obs"
kill -CONT "$pid"
ok=1
for w in "${writers[@]}"; do wait "$w" || ok=0; done
check "the writers logged their rewards without error" test "$ok" = 1
[ "$ok" = 1 ] || head -n 3 "$MS_WORK"/writer.* | sed 's/^/#   /'
q -c "INSERT INTO burst_done VALUES (true)" >/dev/null
wait
MS_BG_PIDS=()
check "every reader ended without error" sh -c "! grep -q ERROR $MS_WORK/reader.*"
logged=$(( per_writer * WRITERS * PER_TX * 2 ))
check "$logged rewards and 100 per selector before them are in the log" \
    is_true "SELECT count(*) = $logged + 200 FROM model_select.rewards"
check "the learner published versions during the burst (before its stop: $published_before)" \
    is_true "SELECT versions_published > 0 AND errors = 0 FROM model_select.learner"
check "the readers scored from published versions" \
    is_true "SELECT sum(shared_hits) > 0 AND count(*) = $READERS FROM reader_stats"
echo "# $(q -c "SELECT count(*) FROM obs") decisions recorded; learner: $(q -c "SELECT 'passes ' || passes || ', versions ' || versions_published FROM model_select.learner")"
# learner_versions: once the learner has caught up, each arm's newest
# version holds every reward of the log (all are final now), so nothing is
# logged after it.  A wait for that condition (its deadline is generous: on a
# loaded machine the learner's last passes can take seconds); on giving up,
# what the learner had published and what the log holds.
NEWEST="SELECT DISTINCT ON (selector, arm) * FROM model_select.learner_versions
         WHERE NOT stale AND selector IN ('b_lin', 'b_rff')
         ORDER BY selector, arm, rewards DESC"
caught_up_versions() {
    wait_for "a version holding the whole log of every arm" \
        "SELECT count(DISTINCT (selector, arm)) = 6 AND bool_and(lag_rewards = 0) FROM ($NEWEST) v" && return 0
    q -c "SELECT v.selector || '/' || v.arm || ': version of checkpoint ' || v.checkpoint_version || ' holds '
                 || v.rewards || ' (stale ' || v.stale || ', lag ' || v.lag_rewards
                 || '), the arm has ' || st.n || ', pending ' || st.pending
            FROM model_select.learner_versions v
            JOIN model_select.arm_stats st ON st.selector = v.selector AND st.arm = v.arm
           WHERE v.selector IN ('b_lin', 'b_rff') ORDER BY 1" | sed 's/^/#   /'
    q -c "SELECT 'learner: passes ' || passes || ', versions ' || versions_published || ', errors ' || errors
                 || ', last pass ' || (clock_timestamp() - last_pass) || ' ago' FROM model_select.learner" | sed 's/^/#   /'
    return 1
}
check "learner_versions: every arm has a version holding its whole log (lag_rewards 0)" caught_up_versions
check "... whose rewards equal the arm's count in the log" no_rows "
    SELECT v.selector || '/' || v.arm FROM ($NEWEST) v
      JOIN model_select.arm_stats st ON st.selector = v.selector AND st.arm = v.arm
     WHERE st.n <> v.rewards"

# A recorded decision replayed: a fresh selector given exactly the rewards
# of the versions it recorded (each arm's first versions[i] rewards, in the
# log's order) must score what the reader scored.
replay_decision() {  # replay_decision SEL DECISION_ID COPY
    local sel=$1 id=$2 copy=$3
    q >/dev/null <<SQL
SELECT model_select.create_selector('$copy', s.dim, ARRAY['a', 'b', 'c'], s.policy, s.kernel, s.settings, s.seed)
  FROM model_select.selectors s WHERE s.name = '$sel';
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT '$copy', r.name, r.context, r.reward
  FROM (SELECT r.*, a.name, a.ordinal,
               row_number() OVER (PARTITION BY r.arm_id ORDER BY r.tx, r.seq) AS k
          FROM model_select.rewards r JOIN model_select.arms a USING (arm_id)
         WHERE r.selector = '$sel') r
 WHERE r.k <= (SELECT d.versions[r.ordinal] FROM model_select.decisions d WHERE d.decision_id = $id)
 ORDER BY r.tx, r.seq;
SQL
    no_rows "SELECT a.name || ': n ' || d.versions[a.ordinal] || ' vs ' || c.n || ', ucb ' || d.score || ' vs ' || c.ucb
               FROM model_select.decisions d JOIN model_select.arms a USING (arm_id),
                    model_select.scores('$copy', COALESCE(d.context, d.context_real::float8[])) c
              WHERE d.decision_id = $id AND c.arm = a.name
                AND NOT (c.n = d.versions[a.ordinal] AND ms_close(c.mean, d.mean) AND ms_close(c.ucb, d.score))
             UNION ALL
             SELECT 'decision_scores: ' || r.ucb || ' vs ' || d.score
               FROM model_select.decisions d JOIN model_select.arms a USING (arm_id),
                    model_select.decision_scores(d.decision_id) r
              WHERE d.decision_id = $id AND r.arm = a.name
                AND (r.ucb IS DISTINCT FROM d.score OR r.mean IS DISTINCT FROM d.mean)
             UNION ALL
             SELECT 'no versions' FROM model_select.decisions d
              WHERE d.decision_id = $id AND cardinality(d.versions) IS DISTINCT FROM 3"
}
for sel in b_lin b_rff; do
    for k in $(seq 1 "$CHECKS"); do
        id=$(q -c "SELECT decision_id FROM obs WHERE selector = '$sel' ORDER BY id
                   OFFSET (SELECT count(*) * $k / ($CHECKS + 1) FROM obs WHERE selector = '$sel') LIMIT 1")
        check "$sel: recorded decision $k/$CHECKS ($id): a fresh fold of exactly its versions' rewards scores it (1e-9), decision_scores() bit for bit" \
            replay_decision "$sel" "$id" "${sel}_chk$k"
    done
done
# an application role sees the versions of the selectors it has a right on, and only those
q >/dev/null <<'SQL'
CREATE ROLE ms_burst_app;
SELECT count(*) FROM model_select.setup_role('ms_burst_app', 'application');
SELECT model_select.grant_selector('b_lin', 'ms_burst_app', 'route');
SQL
check "learner_versions shows an application role the arms of b_lin, its only selector" \
    is_true "SET ROLE ms_burst_app; SELECT count(*) > 0 AND bool_and(selector = 'b_lin')
             FROM model_select.learner_versions"
check "... and shared_versions() no arm of another selector" \
    is_true "SET ROLE ms_burst_app; SELECT count(*) = 0 FROM model_select.shared_versions() v
             WHERE v.arm_id NOT IN (SELECT a.arm_id FROM model_select.arms a
                                     JOIN model_select.selectors s USING (selector_id) WHERE s.name = 'b_lin')"
for s in b_lin b_rff; do rebuild_checks "$s"; done
finish
