#!/usr/bin/env bash
# Issue 41, while the learner is behind, on a cluster of its own with
# model_select preloaded, one learner worker and model_select.learner_max_lag
# at 100 ms, the learner stopped (SIGSTOP, while it waits on its latch):
#   - a backlog: 3,000 rewards of a lin_ucb selector of 3 arms (d 64)
#     committed at once; past the bound, 6 sessions that waited on a gate
#     route together.  One backend at a time folds an arm and publishes it,
#     and the others score the newest version meanwhile: the rows folded onto
#     cached models (cache_stats().rows_folded, every backend's) are at most
#     1.5 times the backlog.  With the lock made to always succeed every
#     session folds it again (measured: 1.7 to 5 times the backlog), and at 16
#     clients that stalled every router for up to a second;
#   - then 6 routers route and reward, each decision and its reward in a
#     transaction of their own, 300 rewards or more: they end without
#     errors, backends publish versions the stopped learner did not, and
#     after the load a decision's n is the log's, not the learner's version's;
#   - nothing is lost: continued, the learner publishes versions that hold
#     every reward, and every arm's score equals rebuild_state's.
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_behind
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
ROUTERS=6
BACKLOG=3000
preloaded_server behind "$(free_port $(( ${PGPORT:-55500} + 140 )))" \
    "model_select.learner_databases = '$DB'" "model_select.learner_naptime = '50ms'" \
    "model_select.learner_max_lag = '100ms'"

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selector failed"
SELECT model_select.create_selector('lb', 64, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL, '{}', 43);
CREATE FUNCTION add_rewards(n int) RETURNS void LANGUAGE sql AS $$
    INSERT INTO model_select.rewards(selector, arm, context, reward)
    SELECT 'lb', (ARRAY['a', 'b', 'c'])[1 + i % 3], ms_rand(64), random() FROM generate_series(1, n) i
$$;
SELECT add_rewards(30);
CREATE TABLE load_done (done bool);
CREATE PROCEDURE router() LANGUAGE plpgsql AS $$
DECLARE
    d bigint;
BEGIN
    LOOP
        SELECT decision_id INTO d FROM model_select.route('lb', ms_rand(64));
        INSERT INTO model_select.rewards(decision_id, reward) VALUES (d, random());
        COMMIT;
        EXIT WHEN EXISTS (SELECT FROM load_done);
    END LOOP;
END $$;
SQL
folded="SELECT rows_folded FROM model_select.cache_stats()"
versions_beyond() {  # the learner's versions hold $1 rewards; true once backends published more
    echo "SELECT sum(rewards) > $1 FROM model_select.learner_versions WHERE selector = 'lb' AND NOT stale"
}

check "the learner publishes versions of 'lb' that hold its log" wait_for "versions of lb" "$(versions_hold_log lb)"
pid=$(q -c "SELECT pid FROM model_select.learner WHERE running AND database = current_database()")
stop_idle "$pid" || bail "the learner could not be stopped idle"

# 1. a backlog, and sessions that route together past the bound
session gate
say gate "SELECT pg_advisory_lock(41);"
for i in $(seq 1 $ROUTERS); do
    session "r$i"
    say "r$i" "SELECT count(*) FROM model_select.scores('lb', ms_rand(64));"
    say_async "r$i" "SELECT pg_advisory_lock_shared(41); SELECT count(*) FROM model_select.route('lb', ms_rand(64));"
done
q -c "SELECT add_rewards($BACKLOG)" >/dev/null
committed=$(q -c "SELECT clock_timestamp()")
folded0=$(q -c "$folded")
# the bound is wall-clock time: wait for it to pass (twice over), then open the gate
check "the backlog has waited past the bound" \
    wait_for "200 ms after the backlog" "SELECT clock_timestamp() > '$committed'::timestamptz + interval '200 ms'"
say gate "SELECT pg_advisory_unlock(41);"
for i in $(seq 1 $ROUTERS); do said "r$i" || bail "session r$i did not route"; done
folded1=$(q -c "$folded")
check "the sessions routed without errors" test -z "$(cat "$MS_WORK"/r?.out | grep -iv '^ms_said\|^[0-9]*$\|^$' | head -n 5)"
check "a backend published a version of the backlog" wait_for "a backend's version" "$(versions_beyond 30)"
check "one backend at a time folds an arm: $((folded1 - folded0)) rows folded onto cached models for a backlog of $BACKLOG (at most 1.5 times)" \
    test $((2 * (folded1 - folded0))) -le $((3 * BACKLOG))
close_sessions

# 2. a stream of decisions and rewards with the learner stopped
load=()
for i in $(seq 1 $ROUTERS); do q -c "CALL router()" >"$MS_WORK/router.$i" 2>&1 & load+=($!); done
MS_BG_PIDS+=("${load[@]}")
log0=$(q -c "SELECT count(*) FROM model_select.rewards")
check "the routers commit 300 more rewards" wait_for "300 more rewards" "SELECT count(*) >= $log0 + 300 FROM model_select.rewards"
q -c "INSERT INTO load_done VALUES (true)" >/dev/null
wait "${load[@]}"
MS_BG_PIDS=()
check "the load ended without errors" test -z "$(cat "$MS_WORK"/router.* | head -n 5)"
log1=$(q -c "SELECT count(*) FROM model_select.rewards")
check "backends published versions of the stream" wait_for "a backend's version" "$(versions_beyond $((log0 + 1)))"
check "past the bound, a decision sees every committed reward (n = the log's, $log1)" \
    is_true "SELECT sum(n) = $log1 FROM model_select.scores('lb', ms_rand(64))"
kill -CONT "$pid"
check "continued, the learner publishes versions that hold every reward" \
    wait_for "versions of lb" "$(versions_hold_log lb)"
rebuild_checks lb
finish
