#!/usr/bin/env bash
# Retention under load (issue 29): rewards absorbed into their arms' bases and
# deleted by maintain() are never lost or counted twice, with retain and with
# what forgetting can no longer count.
#  1. Writer loops log rewards (by name, and routed then rewarded by
#     decision_id), appending the ids to their acknowledgement file only
#     after psql reports the COMMIT, into three selectors: lin_ucb with
#     "retain": 40 (three writers), lin_ucb on the selector's clock with
#     "window": 30 and no retain (two), pak_ucb with "discount": 0.5 and no
#     retain (one; 0.5^20 < 1e-6), while maintain() runs on each every 0.2 s.
#     Then, for each: every acknowledged reward is counted once (log + bases =
#     acknowledged = arm_stats.n), no log row was not acknowledged, the live
#     scores equal rebuild_state()'s (1e-9), and the log keeps what it should.
#  2. pg_ctl -m immediate while maintain() absorbs a large backlog (30,000
#     rewards of an rff_ucb selector with retain, then 60,000 of a lin_ucb
#     selector on the selector's clock with "window": 2000): after each restart nothing
#     is lost or doubled (log + bases = logged), the scores equal
#     rebuild_state()'s, and the next maintain() absorbs the backlog.
# Runs its own cluster (it crashes it).  Uses the PostgreSQL binaries of
# PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_retention
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"

own_server "$(free_port "${MS_RETENTION_PORT:-$(( ${PGPORT:-55500} + 60 ))}")"

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selectors failed"
SELECT model_select.create_selector('ret', 4, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL, '{"retain": 40}');
SELECT model_select.create_selector('win', 4, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL, '{"clock": "selector", "window": 30}');
SET client_min_messages = warning;  -- the arm's clock's NOTICE
SELECT model_select.create_selector('dis', 4, ARRAY['a', 'b', 'c'], 'pak_ucb', NULL, '{"discount": 0.5}');
RESET client_min_messages;
SELECT model_select.create_selector('big', 16, ARRAY['a', 'b'], 'rff_ucb', NULL, '{"retain": 100}');
SELECT model_select.create_selector('bigw', 16, ARRAY['a', 'b'], 'lin_ucb', NULL, '{"clock": "selector", "window": 2000}');
CREATE TABLE ms_ack (selector text, reward_id bigint);
-- route() and the reward by its decision_id (two statements: a statement
-- does not see the decision it logged itself)
CREATE FUNCTION ms_route_reward(sel text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    d bigint;
    r bigint;
BEGIN
    SELECT decision_id INTO d FROM model_select.route(sel, ms_rand(4));
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
writer() {  # writer N SELECTOR: one selector per transaction
    local w=$1 sel=$2 out
    while [ ! -e "$stop" ]; do
        if out=$(psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" -c "BEGIN" \
                   -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
                       SELECT '$sel', (ARRAY['a', 'b', 'c'])[1 + g % 3], ms_rand(4), random()
                         FROM generate_series(1, 3) g RETURNING reward_id" \
                   -c "SELECT ms_route_reward('$sel')" \
                   -c "COMMIT" 2>>"$MS_WORK/writer_$w.err")
        then printf '%s\n' "$out" | sed "s/^/$sel\t/" >>"$MS_WORK/ack_$w"
        else sleep 0.05; fi
    done
}
maintainer() {
    while [ ! -e "$stop" ]; do
        for sel in ret win dis; do
            q -c "SELECT model_select.maintain('$sel')" >/dev/null 2>>"$MS_WORK/maintain.err" || true
        done
        sleep 0.2
    done
}
for w in 1 2 3; do writer "$w" ret & MS_BG_PIDS+=($!); done
for w in 4 5; do writer "$w" win & MS_BG_PIDS+=($!); done
writer 6 dis & MS_BG_PIDS+=($!)
maintainer & MS_BG_PIDS+=($!)
sleep "${MS_RETENTION_SECONDS:-8}"
# then until every arm has logged past what its log keeps (a loaded machine writes slowly)
enough="SELECT bool_and(n > CASE selector WHEN 'ret' THEN 45 WHEN 'dis' THEN 25 ELSE 0 END)
          AND (SELECT sum(n) > 40 FROM model_select.arm_stats WHERE selector = 'win')
          FROM model_select.arm_stats WHERE selector IN ('ret', 'dis')"
for _ in $(seq 1 120); do is_true "$enough" >/dev/null && break; sleep 1; done
touch "$stop"
for p in "${MS_BG_PIDS[@]}"; do wait "$p" || true; done
MS_BG_PIDS=()
for sel in ret win dis; do q -c "SELECT model_select.maintain('$sel')" >/dev/null; done
cat "$MS_WORK"/ack_* >"$MS_WORK/acks" 2>/dev/null || true
q -c "\\copy ms_ack FROM '$MS_WORK/acks'"
check "maintain() never failed while writers logged" eval '! grep -q ERROR "$MS_WORK/maintain.err"'
check "no reward_id acknowledged twice" is_true "SELECT count(*) = count(DISTINCT reward_id) FROM ms_ack"
held() {  # held SELECTOR: the log keeps what it should
    case $1 in
        ret) no_rows "SELECT arm, count(*) FROM model_select.rewards WHERE selector = 'ret' GROUP BY arm HAVING count(*) <> 40" ;;
        win) is_true "SELECT count(*) = 30 FROM model_select.rewards WHERE selector = 'win'" ;;
        dis) no_rows "SELECT arm, count(*) FROM model_select.rewards WHERE selector = 'dis' GROUP BY arm HAVING count(*) <> 20" ;;
    esac
}
declare -A keeps=([ret]="each arm's newest 40" [win]="the selector's newest 30" [dis]="each arm's newest 20")
for sel in ret win dis; do
    acked=$(q -c "SELECT count(*) FROM ms_ack WHERE selector = '$sel'")
    echo "# $sel: $acked rewards acknowledged, $(q -c "SELECT count(*) FROM model_select.rewards WHERE selector = '$sel'") in the log"
    check "$sel: maintain() absorbed rewards during the ingest" \
        is_true "SELECT sum(n) > 0 FROM model_select.arm_base b JOIN model_select.selectors s USING (selector_id) WHERE s.name = '$sel'"
    check "$sel: the log keeps ${keeps[$sel]} rewards" held "$sel"
    check "$sel: log + bases = acknowledged = arm_stats.n ($acked): nothing lost, nothing counted twice" \
        test "$(counted "$sel")" = "$acked $acked"
    check "$sel: every reward in the log was acknowledged" \
        no_rows "SELECT reward_id FROM model_select.rewards WHERE selector = '$sel' EXCEPT SELECT reward_id FROM ms_ack"
    check "$sel: the live scores equal rebuild_state()'s (base + retained log, 1e-9)" same_as_rebuild "$sel"
done

# -- 2. an immediate stop while maintain() absorbs ---------------------------------------
crash_absorbing() {  # crash_absorbing SELECTOR ROWS_LOGGED ROWS_KEPT
    local sel=$1 logged=$2 kept=$3 crashed
    q -c "SET model_select.checkpoint_threshold = 0" \
      -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
          SELECT '$sel', (ARRAY['a', 'b'])[1 + g % 2], ms_rand(16), random() FROM generate_series(1, $logged) g" >/dev/null
    q -c "SELECT model_select.maintain('$sel')" >/dev/null 2>"$MS_WORK/crashed_maintain.err" &
    crashed=$!
    running() { is_true "SELECT count(*) = 1 FROM pg_stat_activity WHERE query LIKE '%maintain(''$sel'')%' AND pid <> pg_backend_pid()"; }
    for _ in $(seq 1 50); do running && break; sleep 0.1; done
    sleep 0.5
    check "$sel: maintain() is running when the server stops" running
    check "$sel: pg_ctl -m immediate stop during maintain()" \
        as_server "$BINDIR/pg_ctl" -D "$CL/data" -m immediate -w -t 60 stop -s
    wait "$crashed" || true
    check "$sel: the server restarts (crash recovery)" start_server
    check "$sel: after the crash log + bases = the $logged logged, arm_stats.n too" test "$(counted "$sel")" = "$logged $logged"
    check "$sel: after the crash the live scores equal rebuild_state()'s" same_as_rebuild "$sel"
    q -c "SELECT model_select.maintain('$sel')" >/dev/null
    check "$sel: a maintain() after the restart absorbs the backlog ($kept rewards stay)" \
        is_true "SELECT count(*) = $kept FROM model_select.rewards WHERE selector = '$sel'"
    check "$sel: then log + bases are still the $logged" test "$(counted "$sel")" = "$logged $logged"
    check "$sel: and the live scores equal rebuild_state()'s" same_as_rebuild "$sel"
}
crash_absorbing big 30000 200     # retain 100, two arms
crash_absorbing bigw 60000 2000   # the selector's newest 2,000 (its window)
finish
