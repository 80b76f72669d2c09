#!/usr/bin/env bash
# Issue 28, the learner process, on a cluster of its own with model_select
# preloaded and model_select.learner_databases set (every arm model on the
# arm's clock is published and taken from the learner's versions, however
# small: model_select.shared_min_size applies only where no learner serves):
#   - the learner runs and serves the database; a reward INSERT no longer
#     checkpoints in the application's transaction, the learner does;
#   - every score then equals rebuild_state's (1e-9), for lin_ucb (with a
#     fitted codebook), rff_ucb
#     and pak_ucb;
#   - killed with SIGKILL while it checkpoints under a stream of rewards (the
#     postmaster then restarts the server), nothing is lost: every reward a
#     writer saw committed is in the log, every arm's n equals its log and
#     every score equals rebuild_state's; the learner is back with a new pid;
#   - the learner absorbs what a window no longer holds, 4,096 rows or more
#     at once, and maintain() whatever is due;
#   - the concurrency suite (concurrent_writers.sh: writers, readers and a
#     checkpointer at once) passes with the learner running;
#   - learner_databases refuses a template database, and a WARNING names the
#     databases that max_worker_processes leaves without a learner.
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
# the learners serve two databases: the one concurrent_writers.sh uses too,
# and DB2 (section 4; it does not exist when the server starts); DB3 is not
# in the list
DB=ms_session_writers
DB2=ms_session_learner_two
DB3=ms_session_learner_off
MAIN_DB=$DB
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
PORT=$(free_port $(( ${PGPORT:-55500} + 90 )))
preloaded_server learn "$PORT" \
    "model_select.learner_databases = '$DB, $DB2'" "model_select.learner_naptime = '50ms'" \
    "model_select.checkpoint_threshold = 16"

ms_setup || bail "set-up failed"
learner() { q -c "SELECT $1 FROM model_select.learner WHERE database = '$DB'"; }
wait_for_learner() {  # until it runs in $DB with a finished pass (and, given, another pid than $1)
    for _ in $(seq 1 300); do
        [ "$(learner "running AND database = '$DB' AND last_pass IS NOT NULL AND pid IS DISTINCT FROM ${1:-0}" 2>/dev/null)" = t ] &&
            return 0
        sleep 0.1
    done
    return 1
}
check "the learner runs in $DB and has finished a pass" wait_for_learner

# add_rewards(selector, n): n rewards with random contexts over arms a, b, c
ADD_REWARDS="CREATE FUNCTION add_rewards(sel text, n int) RETURNS void LANGUAGE sql AS \$\$
    INSERT INTO model_select.rewards(selector, arm, context, reward)
    SELECT sel, (ARRAY['a', 'b', 'c'])[1 + i % 3], ms_rand(4), random() FROM generate_series(1, n) i \$\$"
q -c "$ADD_REWARDS" >/dev/null || bail "creating add_rewards failed"
q >/dev/null <<'SQL' || bail "creating the selectors failed"
SELECT model_select.create_selector('l_lin', 4, ARRAY['a', 'b', 'c'], 'lin_ucb');
SELECT model_select.create_selector('l_rff', 4, ARRAY['a', 'b', 'c'], 'rff_ucb', NULL, '{"features": 64}');
SELECT model_select.create_selector('l_pak', 4, ARRAY['a', 'b', 'c'], 'pak_ucb');
-- l_lin with its default codebook fitted: the learner folds with the centroids
SELECT model_select.fit_codebook('l_lin', 'SELECT ms_rand(4) FROM generate_series(1, 100)');
SQL

inline_checkpoints() {  # checkpoints written by one transaction that logs 90 rewards on each selector in $1
    q -c "BEGIN" -c "SELECT add_rewards(s, 90) FROM unnest(ARRAY[$1]) s" \
      -c "SELECT set_config('ms.xid', pg_current_xact_id()::text, false)" -c "COMMIT" \
      -c "SELECT count(*) FROM model_select.arm_state WHERE xmin = current_setting('ms.xid')::xid8::xid" | tail -n 1
}

# 1. a reward INSERT leaves the checkpoint to the learner
inline=$(inline_checkpoints "'l_lin', 'l_rff', 'l_pak'")
check "90 rewards per selector in one transaction: it wrote no checkpoint (got $inline)" test "$inline" = 0
caught_up() {
    for _ in $(seq 1 200); do
        # due for the learner (checkpoint.c): 16 pending, and for a fixed-size state also
        # eight times its bytes in log rows (CHECKPOINT_LOG_RATIO_LEARNER)
        [ "$(q -c "SELECT bool_and(a.pending < greatest(16, CASE WHEN s.policy = 'pak_ucb' THEN 0
                                     ELSE 8 * a.state_bytes / (8 * s.dim + 96) + 1 END))
                     FROM model_select.arm_stats a JOIN model_select.selectors s ON s.name = a.selector
                    WHERE a.selector IN ('l_lin', 'l_rff', 'l_pak')")" = t ] && return 0
        sleep 0.1
    done
    q -c "SELECT selector, arm, pending FROM model_select.arm_stats" | sed 's/^/#   /'
    q -c "SELECT * FROM model_select.learner" | sed 's/^/#   /'
    grep -E 'ERROR|FATAL' "$CL/learn.log" | tail -n 5 | sed 's/^/#   /'
    return 1
}
check "the learner checkpoints the due arms: no arm is left due" caught_up
check "... and counts them (learner.arms_checkpointed, rewards_folded)" \
    is_true "SELECT arms_checkpointed >= 9 AND rewards_folded >= 200 AND errors = 0 FROM model_select.learner
              WHERE database = '$DB'"
check "learner_lag lists every selector" \
    is_true "SELECT count(*) = 3 AND bool_and(pending_rewards < 48) FROM model_select.learner_lag
              WHERE selector IN ('l_lin', 'l_rff', 'l_pak')"
for s in l_lin l_rff l_pak; do rebuild_checks "$s"; done

# 2. SIGKILL while it checkpoints, under a stream of committed rewards
q -c "CREATE TABLE acked (selector text, n int)" >/dev/null
writer() {  # commits one reward at a time, recording each acknowledged one
    psql -X -q -d "$DB" -v ON_ERROR_STOP=1 -c "
        DO \$\$ BEGIN
          FOR i IN 1..3000 LOOP
            PERFORM add_rewards(s, 1) FROM unnest(ARRAY['l_lin', 'l_rff', 'l_pak']) s;
            INSERT INTO acked VALUES ('all', 1);
            COMMIT;
          END LOOP;
        END \$\$" >/dev/null 2>&1 || true
}
writer &
MS_BG_PIDS+=($!)
old_pid=$(learner pid)
killed=0
for _ in $(seq 1 400); do
    if [ "$(q -c "SELECT state = 'active' FROM pg_stat_activity WHERE pid = $old_pid" 2>/dev/null)" = t ] &&
       [ "$(q -c "SELECT count(*) > 30 FROM acked" 2>/dev/null)" = t ]; then
        kill -KILL "$old_pid" && killed=1
        break
    fi
    sleep 0.02
done
check "the learner was killed with SIGKILL while checkpointing (pid $old_pid)" test "$killed" = 1
server_back() {
    for _ in $(seq 1 300); do
        as_server "$BINDIR/pg_isready" -q -h "$CL" -p "$PORT" && q -c "SELECT 1" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}
check "the server is back after the crash restart" server_back
wait
MS_BG_PIDS=()
check "... and the learner with it, under a new pid" wait_for_learner "$old_pid"
check "every acknowledged reward is in the log (3 per acknowledged round)" \
    is_true "SELECT (SELECT count(*) FROM model_select.rewards) >= 270 + 3 * (SELECT count(*) FROM acked)"
q -c "SELECT add_rewards(s, 90) FROM unnest(ARRAY['l_lin', 'l_rff', 'l_pak']) s" >/dev/null
check "after the restart the learner checkpoints new rewards again: no arm is left due" caught_up
for s in l_lin l_rff l_pak; do rebuild_checks "$s" " (after the kill)"; done

check "the learner logged no error" is_true "SELECT errors = 0 AND running FROM model_select.learner WHERE database = '$DB'"

# 2b. the log's horizon: the learner absorbs what a window no longer holds,
# but only 4,096 rows or more at once (a base is rewritten whole)
q >/dev/null <<'SQL'
SET client_min_messages = warning;
SELECT model_select.create_selector('l_win', 4, ARRAY['a'], 'lin_ucb', NULL, '{"window": 10}');
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 'l_win', 'a', ms_rand(4), random() FROM generate_series(1, 5000);
SQL
horizon() {  # horizon LOGGED ABSORBED: the log and the base hold them (within 120 s)
    for _ in $(seq 1 1200); do
        [ "$(q -c "SELECT logged || ' ' || absorbed FROM ms_arm_counts('l_win')")" = "$1 $2" ] && return 0
        sleep 0.1
    done
    q -c "SELECT '#   log ' || logged || ', base ' || absorbed FROM ms_arm_counts('l_win')"
    return 1
}
check "the learner absorbs the 4,990 rewards a window of 10 no longer holds" horizon 10 4990
q -c "INSERT INTO model_select.rewards(selector, arm, context, reward) SELECT 'l_win', 'a', ms_rand(4), random() FROM generate_series(1, 100)" >/dev/null
# 20 passes of the learner after the insert, however long they take
passes=$(learner passes)
wait_for "20 more passes of the learner" "SELECT passes >= $passes + 20 FROM model_select.learner WHERE database = '$DB'"
check "... but not 100 more (fewer than 4,096): the log keeps 110 over 20 passes" horizon 110 4990
q -c "SELECT model_select.maintain('l_win')" >/dev/null
check "... which maintain() absorbs" horizon 10 5090
rebuild_checks l_win

# 3. the concurrency suite with the learner running throughout: it empties the
# learner's database (extension and schema dropped and made again) instead of
# dropping it, so the learner stays connected and serves the suite's selectors
before_suite=$(learner passes)
before_pid=$(learner pid)
out=$(MS_KEEP_DB=1 MS_A_WRITERS=4 MS_A_PER_WRITER=400 bash "$(dirname "$0")/concurrent_writers.sh" 2>&1) && rc=0 || rc=$?
sed 's/^/#   /' <<<"$out" | grep -v '^#   ok ' || true
writers_pass() { [ "$rc" -eq 0 ] && grep -q ' passed, 0 failed$' <<<"$out"; }
check "concurrent writers, readers and checkpoints with the learner running: every check passes" writers_pass
# (a pass that meets the extension being dropped logs and counts an error, and goes on)
check "the learner passed over the database during the suite ($before_suite -> $(learner passes) passes), under the same pid" \
    is_true "SELECT passes > $before_suite AND pid = $before_pid AND running
               FROM model_select.learner WHERE database = '$DB'"
churn() {  # the extension dropped (held 0.2 s before commit: a pass waits on it) and created again, 20 times
    for i in $(seq 1 20); do
        q -c 'BEGIN' -c 'DROP EXTENSION model_select CASCADE' -c 'SELECT pg_sleep(0.2)' -c 'COMMIT' \
          -c 'CREATE EXTENSION model_select' \
          -c "SELECT model_select.create_selector('l_churn', 4, ARRAY['a', 'b', 'c'], 'lin_ucb')" \
          -c "$ADD_REWARDS" -c "SELECT add_rewards('l_churn', 40)" >/dev/null 2>&1 || return 1
        q -c 'DROP FUNCTION add_rewards' >/dev/null || return 1
        sleep 0.05
    done
}
check "the extension dropped and created again 20 times under the learner: every round succeeds" churn
check "... and the learner survives them all, under the same pid, the passes that met a drop logged and counted ($(learner errors) errors)" \
    is_true "SELECT running AND pid = $before_pid AND errors > 0 FROM model_select.learner WHERE database = '$DB'"
# 4. model_select.learner_databases names two databases, one learner each: the
# second database's learner connects once the database exists and serves it
# as the first one's does; a database not in the list checkpoints in its
# reward inserts, as without a learner
DB=$DB2
ms_setup || bail "set-up of $DB2 failed"
check "$DB2 created after the server started: its own learner connects and finishes a pass" wait_for_learner
DB=$MAIN_DB
dropdb --force "$DB" || bail "dropping $DB failed"
ms_setup || bail "set-up of $MAIN_DB failed"
check "$MAIN_DB, dropped (WITH FORCE, which stops its learner) and created again: its learner connects again" \
    wait_for_learner "$before_pid"
DB=$DB2
check "model_select.learner shows one row per listed database, each with a learner of its own" \
    is_true "SELECT count(*) = 2 AND count(DISTINCT pid) = 2 AND bool_and(running)
                    AND array_agg(database ORDER BY database) =
                        (SELECT array_agg(d ORDER BY d) FROM unnest(ARRAY['$MAIN_DB', '$DB2']) d)
               FROM model_select.learner"
two_db_setup() {
    q -c "SELECT model_select.create_selector('l_lin', 4, ARRAY['a', 'b', 'c'], 'lin_ucb')" \
      -c "$ADD_REWARDS" >/dev/null
}
two_db_setup || bail "creating the selector in $DB2 failed"
inline=$(inline_checkpoints "'l_lin'")
check "$DB2: 90 rewards in one transaction wrote no checkpoint (got $inline)" test "$inline" = 0
check "$DB2: its learner checkpoints the due arms" caught_up
counted_in_two() {  # its pass publishes after it checkpoints: wait for both
    for _ in $(seq 1 100); do
        [ "$(q -c "SELECT arms_checkpointed >= 3 AND rewards_folded >= 48 AND versions_published >= 1
                     FROM model_select.learner WHERE database = '$DB2'")" = t ] && return 0
        sleep 0.1
    done
    q -c "SELECT * FROM model_select.learner" | sed 's/^/#   /'
    return 1
}
check "$DB2: its learner's own counters show the checkpoints and the versions it published" counted_in_two
check "$DB2: its learner logged no error" \
    is_true "SELECT errors = 0 FROM model_select.learner WHERE database = '$DB2'"
check "$DB2: learner_versions lists this database's arms only" \
    is_true "SELECT count(*) >= 1 AND bool_and(selector = 'l_lin') FROM model_select.learner_versions"
rebuild_checks l_lin " ($DB2)"
DB=$DB3
ms_setup || bail "set-up of $DB3 failed"
two_db_setup || bail "creating the selector in $DB3 failed"
inline=$(inline_checkpoints "'l_lin'")
check "$DB3, not listed: the reward inserts checkpoint the due arms themselves (got $inline checkpoints)" \
    test "$inline" -gt 0
DB=$MAIN_DB
# preloaded_cluster NAME CONF_LINE...: a cluster of its own with model_select
# preloaded and the postgresql.conf lines given, started on a free port
# (left in LAST_PORT)
LAST_PORT=$PORT
preloaded_cluster() {
    local name=$1; shift
    preloaded_initdb "$name" "$@"
    LAST_PORT=$(free_port $((LAST_PORT + 1)) "$LAST_PORT")
    cluster_start "$name" "$LAST_PORT" || bail "server $name failed to start: $(tail -n 5 "$CL/$name.log")"
}
# 5. a list that names a database twice is invalid: the server logs a WARNING
# and starts no learner (PostgreSQL keeps a bad custom setting at its default)
preloaded_cluster dup "model_select.learner_databases = 'postgres, app, postgres'"
check "learner_databases naming postgres twice: a WARNING that says so" \
    grep -q 'invalid value for parameter "model_select.learner_databases"' "$CL/dup.log"
check "... with the reason in its DETAIL" grep -q 'Database "postgres" is named twice' "$CL/dup.log"
check "... and no learner: model_select.learner has no rows" \
    test "$(psql -X -q -A -t -p "$LAST_PORT" -d postgres -c 'CREATE EXTENSION model_select' \
                 -c 'SELECT count(*) FROM model_select.learner')" = 0
# 6. a template database is refused (issue 40): a learner connected to
# template1 would make every CREATE DATABASE fail ("source database is being
# accessed by other users")
preloaded_cluster tmpl "model_select.learner_databases = 'postgres, template1'"
check "learner_databases naming template1: a WARNING that says why" \
    grep -q 'Database "template1" is a template' "$CL/tmpl.log"
check "... and CREATE DATABASE works" \
    psql -X -q -p "$LAST_PORT" -d postgres -c 'CREATE DATABASE ms_learner_tmpl_copy'
# 7. more databases than max_worker_processes leaves: a WARNING names those
# left without a learner (PostgreSQL's logical replication launcher takes a
# slot too)
preloaded_cluster slots "max_worker_processes = 2" "model_select.learner_databases = 'postgres, ms_a, ms_b, ms_c'"
check "four databases and max_worker_processes 2: a WARNING that says so" \
    grep -q 'WARNING:  model_select.learner_databases names 4 databases and model_select.learner_workers is 1, but the worker slots max_worker_processes leaves serve [01] of them' \
        "$CL/slots.log"
check "... naming the databases left without a learner" grep -q 'No learner serves .*"ms_b", "ms_c"' "$CL/slots.log"
finish
