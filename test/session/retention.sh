#!/usr/bin/env bash
# Retention under load (issue 29): rewards absorbed into their arms' bases and
# deleted by maintain() are never lost or counted twice.
#  1. Three writer loops log rewards (by name, and routed then rewarded by
#     decision_id) into a lin_ucb selector with "retain": 40, appending the
#     ids to their acknowledgement file only after psql reports the COMMIT,
#     while maintain() runs every 0.2 s.  Then: every acknowledged reward is
#     counted once (log + bases = acknowledged = arm_stats.n), no log row was
#     not acknowledged, and the live scores equal rebuild_state()'s (1e-9).
#  2. pg_ctl -m immediate while maintain() absorbs a large backlog (30,000
#     rewards of an rff_ucb selector): after the restart nothing is lost or
#     doubled (log + bases = logged), the scores equal rebuild_state()'s, and
#     the next maintain() absorbs the backlog.
# Runs its own cluster (it crashes it).  Uses the PostgreSQL binaries of
# PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_retention
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"

export OPENBLAS_NUM_THREADS=1
own_server "$(free_port "${MS_RETENTION_PORT:-$(( ${PGPORT:-55500} + 60 ))}")"

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selectors failed"
SELECT model_select.create_selector('ret', 4, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL, '{"retain": 40}');
SELECT model_select.create_selector('big', 16, ARRAY['a', 'b'], 'rff_ucb', NULL, '{"retain": 100}');
CREATE TABLE ms_ack (reward_id bigint);
-- route() and the reward by its decision_id (two statements: a statement
-- does not see the decision it logged itself)
CREATE FUNCTION ms_route_reward() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    d bigint;
    r bigint;
BEGIN
    SELECT decision_id INTO d FROM model_select.route('ret', ms_rand(4));
    INSERT INTO model_select.rewards(decision_id, reward) VALUES (d, random()) RETURNING reward_id INTO r;
    RETURN r;
END $$;
SQL
# log + bases, and what arm_stats counts, of a selector
counted() {
    q -c "SELECT (SELECT count(*) FROM model_select.rewards WHERE selector = '$1')
                 + (SELECT coalesce(sum(b.n), 0) FROM model_select.arm_base b
                      JOIN model_select.selectors s USING (selector_id) WHERE s.name = '$1')
                 || ' ' || (SELECT sum(n) FROM model_select.arm_stats WHERE selector = '$1')"
}
same_as_rebuild() {  # same_as_rebuild SELECTOR: live scores and n equal rebuild_state()'s (1e-9)
    q -c "SELECT ms_take('live', '$1')" -c "SELECT model_select.rebuild_state('$1')" \
      -c "SELECT ms_take('rebuilt', '$1')" >/dev/null &&
        no_rows "SELECT * FROM ms_diff('live', 'rebuilt', '$1')"
}

# -- 1. writers and maintain() together ------------------------------------------------
stop=$MS_WORK/stop
writer() {
    local w=$1 out
    while [ ! -e "$stop" ]; do
        if out=$(psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" -c "BEGIN" \
                   -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
                       SELECT 'ret', (ARRAY['a', 'b', 'c'])[1 + g % 3], ms_rand(4), random()
                         FROM generate_series(1, 3) g RETURNING reward_id" \
                   -c "SELECT ms_route_reward()" \
                   -c "COMMIT" 2>>"$MS_WORK/writer_$w.err")
        then printf '%s\n' "$out" >>"$MS_WORK/ack_$w"
        else sleep 0.05; fi
    done
}
maintainer() {
    while [ ! -e "$stop" ]; do
        q -c "SELECT model_select.maintain('ret')" >/dev/null 2>>"$MS_WORK/maintain.err" || true
        sleep 0.2
    done
}
for w in 1 2 3; do writer "$w" & MS_BG_PIDS+=($!); done
maintainer & MS_BG_PIDS+=($!)
sleep "${MS_RETENTION_SECONDS:-8}"
touch "$stop"
for p in "${MS_BG_PIDS[@]}"; do wait "$p" || true; done
MS_BG_PIDS=()
q -c "SELECT model_select.maintain('ret')" >/dev/null
cat "$MS_WORK"/ack_* >"$MS_WORK/acks" 2>/dev/null || true
q -c "\\copy ms_ack FROM '$MS_WORK/acks'"
acked=$(wc -l <"$MS_WORK/acks")
echo "# $acked rewards acknowledged, $(q -c "SELECT count(*) FROM model_select.rewards WHERE selector = 'ret'") in the log"
check "maintain() never failed while writers logged" eval '! grep -q ERROR "$MS_WORK/maintain.err"'
check "maintain() absorbed rewards during the ingest" \
    is_true "SELECT sum(n) > 0 FROM model_select.arm_base b JOIN model_select.selectors s USING (selector_id) WHERE s.name = 'ret'"
check "each arm keeps its newest 40 rewards in the log" \
    no_rows "SELECT arm, count(*) FROM model_select.rewards WHERE selector = 'ret' GROUP BY arm HAVING count(*) <> 40"
check "log + bases = acknowledged = arm_stats.n ($acked): nothing lost, nothing counted twice" \
    test "$(counted ret)" = "$acked $acked"
check "no reward_id acknowledged twice" is_true "SELECT count(*) = count(DISTINCT reward_id) FROM ms_ack"
check "every reward in the log was acknowledged" \
    no_rows "SELECT reward_id FROM model_select.rewards WHERE selector = 'ret' EXCEPT SELECT reward_id FROM ms_ack"
check "the live scores equal rebuild_state()'s (base + retained log, 1e-9)" same_as_rebuild ret

# -- 2. an immediate stop while maintain() absorbs ---------------------------------------
q -c "SET model_select.checkpoint_threshold = 0" \
  -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
      SELECT 'big', (ARRAY['a', 'b'])[1 + g % 2], ms_rand(16), random() FROM generate_series(1, 30000) g" >/dev/null
q -c "SELECT model_select.maintain('big')" >/dev/null 2>"$MS_WORK/crashed_maintain.err" &
crashed=$!
running() { is_true "SELECT count(*) = 1 FROM pg_stat_activity WHERE query LIKE '%maintain(''big'')%' AND pid <> pg_backend_pid()"; }
for _ in $(seq 1 50); do running && break; sleep 0.1; done
sleep 0.5
check "maintain() is running when the server stops" running
check "pg_ctl -m immediate stop during maintain()" \
    as_server "$BINDIR/pg_ctl" -D "$CL/data" -m immediate -w -t 60 stop -s
wait "$crashed" || true
check "the server restarts (crash recovery)" start_server
check "after the crash log + bases = the 30,000 logged, arm_stats.n too" test "$(counted big)" = "30000 30000"
check "after the crash the live scores equal rebuild_state()'s" same_as_rebuild big
q -c "SELECT model_select.maintain('big')" >/dev/null
check "a maintain() after the restart absorbs the backlog" \
    is_true "SELECT count(*) = 200 FROM model_select.rewards WHERE selector = 'big'"
check "then log + bases are still the 30,000" test "$(counted big)" = "30000 30000"
check "and the live scores equal rebuild_state()'s" same_as_rebuild big
finish
