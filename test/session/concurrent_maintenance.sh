#!/usr/bin/env bash
# Issue 40, finding 1: maintenance running concurrently on the same selectors
# while writers commit rewards loses nothing.
#
# On a cluster of its own, fsync on, with model_select preloaded and the
# learner serving the second database only.  In each database (the first
# without a learner, as a server that is not preloaded; the second with the
# learner's passes, every 20 ms), four writers commit rewards (with a cost)
# into nine selectors at once, by name and routed then rewarded by
# decision_id, writing each committed row to their acknowledgement file once
# psql has its result:
#   lin_ucb and pak_ucb with "retain": 20, pak_ucb with "retain": "1 second";
#   a "window": 20 on the arm's clock (pak_ucb) and on the selector's
#   (lin_ucb), a window of 1 second on the time clock (lin_ucb);
#   a "discount": 0.5 on the arm's clock (lin_ucb) and on the selector's
#   (pak_ucb), a "half_life" of 1 second (the time clock's discount) with
#   "retain": "1 second" (lin_ucb);
# while five sessions loop over maintain() (two of them), maintain(selector),
# rebuild_state() and checkpoint() on the same selectors.  Then, for every
# selector:
#   - no maintenance call and no writer failed;
#   - per arm, the acknowledged rewards = the rows in its log + its base's n,
#     and their reward and cost sums equal the log's + the base's (1e-9):
#     nothing lost, nothing counted twice; every row in the log was
#     acknowledged; retention absorbed rewards during the run;
#   - arm_stats.n = log + base, and the live scores equal rebuild_state()'s
#     (in one transaction: the time clock's now() is the transaction's).
# Bounded: MS_MAINT_ROUNDS (60) statements per writer, and the maintenance
# loops stop once the writers are done, each loop has made 3 rounds and
# every selector has absorbed rewards.
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_maint
LEARNED_DB=ms_session_maint_learner
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"

ROUNDS=${MS_MAINT_ROUNDS:-60}
SELECTORS="r_lin r_pak r_time w_arm w_sel w_time d_arm d_sel d_time"
NSEL=$(wc -w <<<"$SELECTORS")
PORT=$(free_port $(( ${PGPORT:-55500} + 100 )))
preloaded_initdb maint "model_select.learner_databases = '$LEARNED_DB'" "model_select.learner_naptime = '20ms'" \
    "model_select.checkpoint_threshold = 8"
cluster_start maint "$PORT" "-c fsync=on -c synchronous_commit=on" ||
    bail "the server failed to start: $(tail -n 5 "$CL/maint.log")"
export PGHOST=$CL PGPORT=$PORT PGUSER=postgres

SETUP=$(cat <<'SQL'
SET client_min_messages = warning;  -- the arm's clock's NOTICEs
SELECT model_select.create_selector('r_lin', 4, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL, '{"retain": 20}');
SELECT model_select.create_selector('r_pak', 4, ARRAY['a', 'b', 'c'], 'pak_ucb', NULL, '{"retain": 20}');
SELECT model_select.create_selector('r_time', 4, ARRAY['a', 'b', 'c'], 'pak_ucb', NULL, '{"retain": "1 second"}');
SELECT model_select.create_selector('w_arm', 4, ARRAY['a', 'b', 'c'], 'pak_ucb', NULL, '{"window": 20}');
SELECT model_select.create_selector('w_sel', 4, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL, '{"window": 20, "clock": "selector"}');
SELECT model_select.create_selector('w_time', 4, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL, '{"window": 1, "clock": "time"}');
SELECT model_select.create_selector('d_arm', 4, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL, '{"discount": 0.5}');
SELECT model_select.create_selector('d_sel', 4, ARRAY['a', 'b', 'c'], 'pak_ucb', NULL, '{"discount": 0.5, "clock": "selector"}');
SELECT model_select.create_selector('d_time', 4, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL, '{"half_life": 1, "clock": "time", "retain": "1 second"}');
CREATE TABLE ms_ack (reward_id bigint, selector text, arm text, reward float8, cost float8);
-- route() and the reward by its decision_id (two statements: a statement
-- does not see the decision it logged itself)
CREATE FUNCTION ms_route_reward(sel text)
RETURNS TABLE (reward_id bigint, selector text, arm text, reward float8, cost float8) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    d bigint;
BEGIN
    SELECT r.decision_id INTO d FROM model_select.route(sel, ms_rand(4)) r;
    RETURN QUERY INSERT INTO model_select.rewards AS w (decision_id, reward, cost) VALUES (d, random(), random())
        RETURNING w.reward_id, w.selector, w.arm, w.reward, w.cost;
END $$;
-- per arm of sel, what the acknowledgements and what the log and base hold
-- differ in: count, reward sum, cost sum (1e-9)
CREATE FUNCTION ms_lost(sel text) RETURNS SETOF text LANGUAGE sql AS $$
    WITH acked AS (SELECT k.arm, count(*) AS n, sum(k.reward) AS r, sum(k.cost) AS c
                     FROM ms_ack k WHERE k.selector = sel GROUP BY k.arm),
    held AS (SELECT a.name AS arm,
                    l.n + coalesce(b.n, 0) AS n, l.r + coalesce(b.reward_sum, 0) AS r,
                    l.c + coalesce(b.cost_sum, 0) AS c, l.n AS logged, coalesce(b.n, 0) AS absorbed
               FROM model_select.arms a JOIN model_select.selectors s USING (selector_id)
               LEFT JOIN model_select.arm_base b ON b.arm_id = a.arm_id,
               LATERAL (SELECT count(*) AS n, coalesce(sum(w.reward), 0) AS r, coalesce(sum(w.cost), 0) AS c
                          FROM model_select.rewards w WHERE w.arm_id = a.arm_id) l
              WHERE s.name = sel)
    SELECT format('arm %s: acknowledged %s (rewards %s, costs %s), log %s + base %s = %s (rewards %s, costs %s)',
                  coalesce(k.arm, h.arm), k.n, k.r, k.c, h.logged, h.absorbed, h.n, h.r, h.c)
      FROM acked k FULL JOIN held h USING (arm)
     WHERE k.n IS DISTINCT FROM h.n OR NOT coalesce(ms_close(k.r, h.r), false)
        OR NOT coalesce(ms_close(k.c, h.c), false)
$$;
SQL
)

stop=$MS_WORK/stop
# A statement that rewards several selectors takes its transaction id at the
# first; maintenance may fold a later selector's newer rewards before the
# statement reaches it, and the late-writer check then refuses it with 40001
# (docs/operations.md): retried, as applications are told to, up to RETRIES
# times (with the learner checkpointing every selector, a statement of nine
# is refused about once in 25).
RETRIES=4
retried() {  # retried STATEMENT: psql lines running it, and again after each 40001
    local k
    printf '%s\n' "$1"
    for k in $(seq 1 $RETRIES); do
        printf '%s\n' '\if :ERROR' "SELECT :'SQLSTATE' = '40001' AS retry \gset" '\if :retry' '\warn RETRY' "$1"
    done
    printf '%s\n' '\if :ERROR' '\warn GAVE-UP' '\endif'
    for k in $(seq 1 $RETRIES); do printf '%s\n' '\endif' '\endif'; done
}
writer() {  # writer N: ROUNDS statements, each a committed transaction
    local w=$1 i sels
    sels="ARRAY['${SELECTORS// /\', \'}']"
    for i in $(seq 1 "$ROUNDS"); do
        if [ $((i % 3)) -eq 0 ]; then
            echo "SELECT * FROM ms_route_reward((${sels})[1 + ($i + $w) % $NSEL]);"
        else
            retried "INSERT INTO model_select.rewards(selector, arm, context, reward, cost)
                  SELECT s, (ARRAY['a', 'b', 'c'])[1 + floor(random() * 3)::int], ms_rand(4), random(), random()
                    FROM unnest($sels) s RETURNING reward_id, selector, arm, reward, cost;"
        fi
    done >"$MS_WORK/writer_$w.sql"
    # psql prints a statement's rows once it has committed (autocommit)
    psql -X -q -A -t -F $'\t' -v ON_ERROR_STOP=0 -d "$DB" -f "$MS_WORK/writer_$w.sql" \
        >"$MS_WORK/ack_$w" 2>"$MS_WORK/writer_$w.err"
}
# The writers' errors other than a late writer's refusal that was retried.
writer_errors() {
    grep -h -v -e 'is older than rewards of selector' -e '^DETAIL:' -e '^HINT:' -e '^CONTEXT:' -e '^[[:space:]]' -e '^RETRY$' \
        "$MS_WORK"/writer_*.err
}
loop() {  # loop NAME SQL...: the statements, each a transaction of its own, until $stop
    local name=$1 s args=()
    shift
    for s in "$@"; do args+=(-c "$s"); done
    : >"$MS_WORK/$name.rounds"
    while [ ! -e "$stop" ]; do
        psql -X -q -A -t -d "$DB" "${args[@]}" >/dev/null 2>>"$MS_WORK/$name.err" || true
        echo >>"$MS_WORK/$name.rounds"
    done
}
each() {  # each FUNCTION: one call per selector
    local s
    for s in $SELECTORS; do printf '%s\n' "SELECT model_select.$1('$s')"; done
}
LOOPS="maintain_all maintain_all2 maintain_named rebuild checkpoint"
rounds_done() {  # every loop made 3 rounds or more
    local l
    for l in $LOOPS; do [ "$(wc -l <"$MS_WORK/$l.rounds")" -ge 3 ] || return 1; done
}
absorbed() {  # every selector has absorbed rewards (those that have not are printed)
    no_rows "SELECT s.name FROM model_select.selectors s WHERE NOT EXISTS
               (SELECT FROM model_select.arm_base b WHERE b.selector_id = s.selector_id AND b.n > 0)"
}
no_errors() {  # no_errors FILE...: no ERROR in them (the first ones are printed)
    ! grep -h ERROR "$@" | head -n 5 | sed 's/^/#   /' | grep -q .
}

run() {  # run TAG: writers and maintenance loops on $DB, then the checks
    local tag=$1 p sel acked writers=() loops=()
    rm -f "$stop" "$MS_WORK"/ack_* "$MS_WORK"/*.err "$MS_WORK"/*.rounds
    mapfile -t named < <(each maintain)
    mapfile -t rebuilds < <(each rebuild_state)
    mapfile -t checkpoints < <(each checkpoint)
    loop maintain_all "SELECT model_select.maintain()" & loops+=($!)
    loop maintain_all2 "SELECT model_select.maintain()" & loops+=($!)
    loop maintain_named "${named[@]}" & loops+=($!)
    loop rebuild "${rebuilds[@]}" & loops+=($!)
    loop checkpoint "${checkpoints[@]}" & loops+=($!)
    for w in 1 2 3 4; do writer "$w" & writers+=($!); done
    MS_BG_PIDS+=("${loops[@]}" "${writers[@]}")
    for p in "${writers[@]}"; do wait "$p" || true; done
    for _ in $(seq 1 1200); do rounds_done && absorbed >/dev/null && break; sleep 0.1; done
    touch "$stop"
    for p in "${loops[@]}"; do wait "$p" || true; done
    MS_BG_PIDS=()
    echo "# $tag: maintenance rounds: $(for l in $LOOPS; do printf '%s %s, ' "$l" "$(wc -l <"$MS_WORK/$l.rounds")"; done)"
    check "$tag: every maintenance loop made 3 rounds or more (within 120 s of the writers' end)" rounds_done
    check "$tag: ... and every selector absorbed rewards" absorbed
    check "$tag: maintain(), maintain(selector), rebuild_state() and checkpoint() never failed" \
        no_errors "$MS_WORK"/maintain_all.err "$MS_WORK"/maintain_all2.err "$MS_WORK"/maintain_named.err \
        "$MS_WORK"/rebuild.err "$MS_WORK"/checkpoint.err
    echo "# $tag: late writers refused and retried: $(cat "$MS_WORK"/writer_*.err | grep -c '^RETRY$')"
    check "$tag: every writer committed all its $ROUNDS statements (a 40001 retried up to $RETRIES times)" \
        eval '! writer_errors | head -n 5 | sed "s/^/#   /" | grep -q .'
    cat "$MS_WORK"/ack_* >"$MS_WORK/acks"
    q -c "\\copy ms_ack FROM '$MS_WORK/acks'"
    check "$tag: no reward_id acknowledged twice" is_true "SELECT count(*) = count(DISTINCT reward_id) FROM ms_ack"
    for sel in $SELECTORS; do
        acked=$(q -c "SELECT count(*) FROM ms_ack WHERE selector = '$sel'")
        echo "# $tag $sel: $acked rewards acknowledged, $(q -c "SELECT count(*) FROM model_select.rewards
              WHERE selector = '$sel'") in the log, $(q -c "SELECT coalesce(sum(b.n), 0) FROM model_select.arm_base b
              JOIN model_select.selectors s USING (selector_id) WHERE s.name = '$sel'") in the bases"
        check "$tag $sel: retention absorbed rewards during the run" \
            is_true "SELECT sum(b.n) > 0 FROM model_select.arm_base b JOIN model_select.selectors s
                      USING (selector_id) WHERE s.name = '$sel'"
        check "$tag $sel: per arm, acknowledged = log + base in count, reward and cost sums (nothing lost or doubled)" \
            no_rows "SELECT * FROM ms_lost('$sel')"
        check "$tag $sel: every reward in the log was acknowledged" \
            no_rows "SELECT reward_id FROM model_select.rewards WHERE selector = '$sel' EXCEPT SELECT reward_id FROM ms_ack"
        check "$tag $sel: arm_stats.n of every arm = its log + its base" \
            no_rows "SELECT * FROM ms_count_diff('$sel')"
        q -c "BEGIN" -c "SELECT ms_take('live', '$sel')" -c "SELECT model_select.rebuild_state('$sel')" \
          -c "SELECT ms_take('rebuilt', '$sel')" -c "COMMIT" >/dev/null
        check "$tag $sel: the live scores and n equal rebuild_state()'s (1e-9)" \
            no_rows "SELECT * FROM ms_diff('live', 'rebuilt', '$sel')"
    done
}

# -- 1. no learner (as without preloading) -------------------------------------------------
ms_setup || bail "set-up failed"
q -c "$SETUP" >/dev/null || bail "creating the selectors failed"
run "no learner"

# -- 2. with the learner's passes too -------------------------------------------------------
DB=$LEARNED_DB
ms_setup || bail "set-up of $DB failed"
q -c "$SETUP" >/dev/null || bail "creating the selectors in $DB failed"
serving() {
    is_true "SELECT running AND last_pass IS NOT NULL FROM model_select.learner WHERE database = '$DB'" >/dev/null
}
for _ in $(seq 1 600); do serving && break; sleep 0.1; done
check "learner: it serves $DB and has finished a pass" serving
run "learner"

finish
