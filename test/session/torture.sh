#!/usr/bin/env bash
# A seeded random workload over every policy and forgetting setting at once,
# with the administration racing it, checked against rebuild_state() from
# inside the writers' own backends (their caches) while it runs.
#
# 16 selectors (dim 3, arms a, b, c): pak_ucb at cap 20 (compacting, with
# tag buckets), with dmm, restart_every, a window on the selector's clock, a
# discount on the selector's clock; bkb at cap 24 (with tag buckets); lin_ucb
# (tag buckets by default) with a window on the selector's
# clock, restart_every, a budget (the pacer), a half_life on the time clock,
# dmm with restart_every; rff_ucb with a discount on the selector's clock (with
# tag buckets) and with cmm; greedy with a window on the time clock and with a
# discount; random.  Three contexts in four carry tags (one or two of three),
# on routes, direct rewards and the checks' probes; the policies without tag
# buckets log them and must ignore them.
#
# pgbench, 8 clients for MS_TORTURE_T seconds (8), checkpoint_threshold 3;
# each transaction one of: route() + its reward; rewards around a savepoint
# that rolls back rewards, a route() and its reward; a multi-row insert that
# fails halfway (22003) in a subtransaction; a reward for the arm d that the
# administrator adds and retires; route() + reward on a selector that is
# dropped and created again meanwhile; a REPEATABLE READ transaction that
# scores, sleeps, scores, rewards and routes; scores.  1 transaction in 20 is
# a check: with rewards locked (SHARE), after a checkpoint() (whose settings
# lock keeps the settings), the live scores at 4 probes (3 tagged) and
# arm_stats.n, then rebuild_state() in a subtransaction that rolls back, the
# scores again: they must agree (1e-9; ucb only under cmm, whose minimising
# alpha is flat) and n must be the log's.
# Meanwhile an administrator loop: checkpoint(), rebuild_state(),
# alter_selector() (bandwidth, cap, confidence, window, clock, features,
# discount, half_life, restart_every, budget, reward_max, tag_buckets,
# tag_scale), add_arm/retire_arm,
# DELETE of rewards with rebuild_state() in one transaction, drop_selector()
# and create_selector(); and a REPEATABLE READ reader whose scores of every
# selector must not change within its snapshot while all this happens.
#
# Asserts: no check found a difference; pgbench committed everything (retries
# of 40001 allowed: an insert under REPEATABLE READ after a settings change);
# the administrator saw only the expected refusals (42704/42710 for arm d,
# 22003 when lowering reward_max below a logged reward); every REPEATABLE
# READ pair was equal; then every selector equals its rebuild (rebuild_checks).
#
# Needs PGHOST/PGPORT/PGUSER of a running cluster with model_select installed.
set -euo pipefail
DB=ms_session_torture
. "$(dirname "$0")/lib/common.bash"

T=${MS_TORTURE_T:-8}
SEED=${MS_TORTURE_SEED:-1}
ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selectors failed"
CREATE FUNCTION t_ctx(x bigint, d int) RETURNS float8[] LANGUAGE sql IMMUTABLE AS
$$ SELECT array_agg(sin(x * 0.37 + j * 1.3 + (x % 97) * j) ORDER BY j) FROM generate_series(1, d) j $$;
CREATE FUNCTION t_u(x bigint) RETURNS float8 LANGUAGE sql IMMUTABLE AS
$$ SELECT abs(sin(x * 12.9898) * 43758.5453) - floor(abs(sin(x * 12.9898) * 43758.5453)) $$;
-- no tags for one x in four, else one or two of m, c and q
CREATE FUNCTION t_tags(x bigint) RETURNS text[] LANGUAGE sql IMMUTABLE AS
$$ SELECT CASE x % 4 WHEN 1 THEN ARRAY['m'] WHEN 2 THEN ARRAY['m','c'] WHEN 3 THEN ARRAY['q'] END $$;
CREATE TABLE t_sel(i int PRIMARY KEY, name text, policy text, settings jsonb);
INSERT INTO t_sel VALUES
 (1, 'pak_cap', 'pak_ucb', '{"cap": 20, "tag_buckets": 4}'),
 (2, 'pak_dmm', 'pak_ucb', '{"cap": 20, "confidence": "dmm"}'),
 (3, 'pak_rst', 'pak_ucb', '{"cap": 20, "restart_every": 12}'),
 (4, 'pak_win', 'pak_ucb', '{"window": 8, "clock": "selector"}'),
 (5, 'bkb', 'bkb', '{"cap": 24, "tag_buckets": 4}'),
 (6, 'lin_clk', 'lin_ucb', '{"window": 10, "clock": "selector"}'),
 (7, 'rff_dclk', 'rff_ucb', '{"features": 4, "discount": 0.9, "clock": "selector", "tag_buckets": 4}'),
 (8, 'grd_time', 'greedy', '{"clock": "time", "window": "3 seconds"}'),
 (9, 'lin_rst', 'lin_ucb', '{"restart_every": 7}'),
 (10, 'lin_bud', 'lin_ucb', '{"budget": 0.3}'),
 (11, 'grd_disc', 'greedy', '{"discount": 0.8}'),
 (12, 'rff_cmm', 'rff_ucb', '{"features": 4, "confidence": "cmm"}'),
 (13, 'lin_hl', 'lin_ucb', '{"clock": "time", "half_life": "2 seconds"}'),
 (14, 'pak_dclk', 'pak_ucb', '{"cap": 30, "discount": 0.9, "clock": "selector"}'),
 (15, 'rnd', 'random', '{}'),
 (16, 'lin_dmm', 'lin_ucb', '{"confidence": "dmm", "restart_every": 9}');
SELECT model_select.create_selector(name, 3, ARRAY['a','b','c'], policy, NULL, settings, 7) FROM t_sel ORDER BY i;
SELECT model_select.create_selector('scr', 3, ARRAY['a','b'], 'lin_ucb');
CREATE FUNCTION t_name(si int) RETURNS text LANGUAGE sql STABLE AS $$ SELECT name FROM t_sel WHERE i = si $$;
CREATE TABLE t_bad(sel text, what text);
-- scores at 4 probes (tagged as t_tags(probe)) and arm_stats.n, as jsonb
CREATE FUNCTION t_cap(sel text) RETURNS jsonb LANGUAGE sql VOLATILE AS $$
  SELECT jsonb_agg(to_jsonb(c) ORDER BY probe, arm) FROM (
    SELECT k AS probe, c.arm, c.n, c.mean, c.width, c.ucb
      FROM generate_series(1, 4) k, LATERAL model_select.scores(sel, t_ctx(1000 + k, 3), t_tags(k)) c
    UNION ALL
    SELECT 0, a.arm, a.n, NULL, NULL, NULL FROM model_select.arm_stats a WHERE a.selector = sel) c
$$;
-- live state against rebuild_state() (undone), in the caller's transaction,
-- which holds rewards in SHARE mode; a difference goes into t_bad
CREATE FUNCTION t_check(si int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    sel text := t_name(si);
    cmm bool;
    live jsonb;
    reb jsonb;
    d text;
BEGIN
    -- checkpoint() holds the settings lock (share) to the end: no settings change meanwhile
    PERFORM model_select.checkpoint(sel);
    SELECT settings->>'confidence' = 'cmm' INTO cmm FROM model_select.selectors WHERE name = sel;
    live := t_cap(sel);
    BEGIN
        PERFORM model_select.rebuild_state(sel);
        reb := t_cap(sel);
        RAISE EXCEPTION 'undo';
    EXCEPTION WHEN raise_exception THEN NULL;
    END;
    SELECT string_agg(format('p%s %s: %s vs %s', coalesce(a.probe, b.probe), coalesce(a.arm, b.arm),
                             row(a.n, a.mean, a.width, a.ucb), row(b.n, b.mean, b.width, b.ucb)), '; ') INTO d
      FROM jsonb_to_recordset(live) a(probe int, arm text, n bigint, mean float8, width float8, ucb float8)
      FULL JOIN jsonb_to_recordset(reb) b(probe int, arm text, n bigint, mean float8, width float8, ucb float8)
        USING (probe, arm)
     -- an arm on one side only must be new (n 0): add_arm() may commit between the two reads
     -- (it does not wait for the settings lock), and each statement here has its own snapshot
     WHERE CASE WHEN a.arm IS NULL THEN b.n IS DISTINCT FROM 0
                WHEN b.arm IS NULL THEN a.n IS DISTINCT FROM 0
                ELSE a.n IS DISTINCT FROM b.n
                  OR NOT coalesce(ms_close(a.ucb, b.ucb), a.ucb IS NULL AND b.ucb IS NULL)
                  OR (NOT coalesce(cmm, false) AND
                      (NOT coalesce(ms_close(a.mean, b.mean), a.mean IS NULL AND b.mean IS NULL) OR
                       NOT coalesce(ms_close(a.width, b.width), a.width IS NULL AND b.width IS NULL)))
           END;
    IF d IS NULL THEN
        SELECT string_agg(x, '; ') INTO d FROM ms_count_diff(sel) x;
    END IF;
    IF d IS NOT NULL THEN
        INSERT INTO t_bad VALUES (sel, d);
    END IF;
END $$;
SQL

cat >"$MS_WORK/work.sql" <<'SQL'
\set s random(1, 16)
\set x random(1, 1000000000)
\set op random(1, 100)
\if :op <= 35
\set se 2 * ((:s + 1) / 2)
BEGIN;
SELECT decision_id AS d FROM model_select.route(t_name(:se), t_ctx(:x, 3), t_tags(:x)) \gset
INSERT INTO model_select.rewards(decision_id, reward, cost) VALUES (:d, t_u(:x), t_u(:x + 1));
COMMIT;
\elif :op <= 45
BEGIN;
INSERT INTO model_select.rewards(selector, arm, context, tags, reward, cost) VALUES (t_name(:s), 'a', t_ctx(:x, 3), t_tags(:x), t_u(:x), 0.2);
SAVEPOINT sp;
INSERT INTO model_select.rewards(selector, arm, context, tags, reward) VALUES (t_name(:s), 'b', t_ctx(:x + 1, 3), t_tags(:x + 1), t_u(:x + 1));
SELECT decision_id AS d2 FROM model_select.route(t_name(:s), t_ctx(:x + 2, 3), t_tags(:x + 2)) \gset
INSERT INTO model_select.rewards(decision_id, reward) VALUES (:d2, t_u(:x + 2));
SELECT count(*) FROM model_select.scores(t_name(:s), t_ctx(:x, 3));
ROLLBACK TO sp;
INSERT INTO model_select.rewards(selector, arm, context, tags, reward) VALUES (t_name(:s), 'c', t_ctx(:x + 3, 3), t_tags(:x + 3), t_u(:x + 3));
SELECT count(*) FROM model_select.scores(t_name(:s), t_ctx(:x, 3));
COMMIT;
\elif :op <= 52
DO $$ BEGIN
  INSERT INTO model_select.rewards(selector, arm, context, reward)
  SELECT t_name(:s), (ARRAY['a','b','c'])[1 + g % 3], t_ctx(:x + g, 3),
         CASE WHEN g = 4 THEN 1.2 ELSE t_u(:x + g) END FROM generate_series(1, 6) g;
EXCEPTION WHEN numeric_value_out_of_range THEN NULL;
END $$;
\elif :op <= 56
DO $$ BEGIN
  INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES (t_name(:s), 'd', t_ctx(:x, 3), t_u(:x));
EXCEPTION WHEN object_not_in_prerequisite_state OR undefined_object THEN NULL;
END $$;
\elif :op <= 72
INSERT INTO model_select.rewards(selector, arm, context, tags, reward, cost)
SELECT t_name(:s), (ARRAY['a','b','c'])[1 + (g + :x) % 3], t_ctx(:x + g, 3), t_tags(:x + g), t_u(:x + g), t_u(:x - g)
  FROM generate_series(1, 1 + :x % 4) g;
\elif :op <= 76
DO $$ DECLARE r record; BEGIN
  SELECT * INTO r FROM model_select.route('scr', t_ctx(:x, 3));
  INSERT INTO model_select.rewards(decision_id, reward) VALUES (r.decision_id, t_u(:x));
EXCEPTION WHEN undefined_object OR foreign_key_violation THEN NULL;
END $$;
\elif :op <= 82
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM model_select.scores(t_name(:s), t_ctx(:x, 3));
SELECT pg_sleep(0.05);
SELECT count(*) FROM model_select.scores(t_name(:s), t_ctx(:x + 1, 3));
INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES (t_name(:s), 'b', t_ctx(:x, 3), t_u(:x));
SELECT model_select.select_model(t_name(:s), t_ctx(:x, 3));
COMMIT;
\elif :op <= 95
SELECT model_select.select_model(t_name(:s), t_ctx(:x, 3), t_tags(:x)), (SELECT count(*) FROM model_select.scores(t_name(:s), t_ctx(:x, 3), t_tags(:x)));
\else
BEGIN;
LOCK TABLE model_select.rewards IN SHARE MODE;
SELECT t_check(:s);
COMMIT;
\endif
SQL

stop=$MS_WORK/stop
admin() {  # random administration until stopped; expected refusals only
    local s a op alts
    local sels=(pak_cap pak_dmm pak_rst pak_win bkb lin_clk rff_dclk grd_time lin_rst lin_bud grd_disc rff_cmm lin_hl pak_dclk rnd lin_dmm)
    declare -A alt=(
        [pak_cap]='{"bandwidth": 1.3}|{"bandwidth": 1}|{"cap": 16}|{"cap": 20}|{"tag_scale": 0.3}|{"tag_buckets": 8}'
        [pak_dmm]='{"confidence": "fixed"}|{"confidence": "dmm"}|{"bandwidth": 0.8}'
        [pak_rst]='{"restart_every": 5}|{"restart_every": 12}'
        [pak_win]='{"clock": "arm", "window": 8}|{"clock": "selector", "window": 8}|{"window": 5}'
        [bkb]='{"cap": 16}|{"cap": 24}|{"bandwidth": 1.5}'
        [lin_clk]='{"window": 5}|{"clock": "arm", "window": 10}|{"clock": "selector", "window": 10}|{"tag_buckets": 0}|{"tag_buckets": 16}'
        [rff_dclk]='{"features": 6}|{"features": 4}|{"discount": 0.8}|{"tag_scale": 2}'
        [grd_time]='{"window": "2 seconds"}|{"window": "3 seconds"}'
        [lin_rst]='{"restart_every": 4}|{"restart_every": 7}|{"tag_scale": 0.5}|{"tag_scale": 1}'
        [lin_bud]='{"budget": 0.5}|{"budget": 0.3}|{"reward_max": 1.5}|{"reward_max": 1}'
        [grd_disc]='{"discount": 0.5}|{"discount": 0.8}|{"reward_max": 1.5}|{"reward_max": 1}'
        [rff_cmm]='{"confidence": "dmm"}|{"confidence": "cmm"}|{"features": 3}'
        [lin_hl]='{"half_life": "1 second"}|{"half_life": "2 seconds"}'
        [pak_dclk]='{"discount": 0.8}|{"clock": "arm", "discount": 0.9}|{"clock": "selector", "discount": 0.9}'
        [rnd]='{"reward_max": 1.5}|{"reward_max": 1}'
        [lin_dmm]='{"restart_every": 6}|{"confidence": "amm"}|{"confidence": "dmm"}')
    RANDOM=$SEED
    while [ ! -e "$stop" ]; do
        s=${sels[$((RANDOM % 16))]}
        op=$((RANDOM % 10))
        {
            case $op in
                0|1) echo "SELECT model_select.checkpoint('$s');";;
                2) echo "SELECT model_select.rebuild_state('$s');";;
                3|4) IFS='|' read -ra alts <<<"${alt[$s]}"; a=${alts[$((RANDOM % ${#alts[@]}))]}
                     echo "SELECT model_select.alter_selector('$s', '$a');";;
                # route() + reward goes to even selectors only: their arms stay a, b, c
                5) echo "SELECT model_select.add_arm('${sels[$((RANDOM % 8 * 2))]}', 'd');";;
                6) echo "SELECT model_select.retire_arm('${sels[$((RANDOM % 8 * 2))]}', 'd');";;
                7) echo "BEGIN; DELETE FROM model_select.rewards WHERE reward_id IN (SELECT reward_id FROM model_select.rewards
                          WHERE selector = '$s' AND decision_id IS NULL ORDER BY random() LIMIT 2);
                      SELECT model_select.rebuild_state('$s'); COMMIT;";;
                8) echo "SELECT model_select.drop_selector('scr');
                      SELECT model_select.create_selector('scr', 3, ARRAY['a','b'], 'lin_ucb');";;
                9) echo "SELECT model_select.checkpoint(name) FROM model_select.selectors;";;
            esac
        } | psql -X -q -A -t -v VERBOSITY=verbose -d "$DB" >/dev/null 2>>"$MS_WORK/admin.err" || true
        sleep "0.0$((RANDOM % 10))"
    done
}
rr_reader() {  # every selector's scores twice in one REPEATABLE READ snapshot
    local scores="SELECT md5(string_agg(format('%s %s %s %s %s %s', s.name, c.arm, c.n, c.mean, c.width, c.ucb),
                  ';' ORDER BY s.i, c.arm)) FROM t_sel s, LATERAL model_select.scores(s.name, t_ctx(77, 3), t_tags(77)) c"
    while [ ! -e "$stop" ]; do
        q >>"$MS_WORK/rr.out" 2>>"$MS_WORK/rr.err" <<SQL || true
BEGIN ISOLATION LEVEL REPEATABLE READ;
$scores \\gset h1_
SELECT pg_sleep(1);
$scores \\gset h2_
SELECT CASE WHEN :'h1_md5' = :'h2_md5' THEN 'same' ELSE 'differs' END;
COMMIT;
SQL
    done
}
admin & MS_BG_PIDS+=($!); apid=$!
rr_reader & MS_BG_PIDS+=($!); rpid=$!

set +e
PGOPTIONS="-c model_select.checkpoint_threshold=3" \
    pgbench -n -c 8 -j 2 -T "$T" --random-seed="$SEED" --max-tries=10 --verbose-errors -f "$MS_WORK/work.sql" "$DB" \
    >"$MS_WORK/pgbench.out" 2>"$MS_WORK/pgbench.err"
pgbench_rc=$?
set -e
touch "$stop"
wait "$apid" "$rpid"
sed -n 's/^\(number of transactions actually processed\|number of failed\|number of transactions retried\)/#   &/p' "$MS_WORK/pgbench.out"

check "no check in a writer's backend found live state other than rebuild_state's (or n other than the log's)" \
    no_rows "SELECT sel || ': ' || left(what, 300) FROM t_bad"
pgbench_ok() {
    [ "$pgbench_rc" -eq 0 ] && grep -q '^number of failed transactions: 0 ' "$MS_WORK/pgbench.out" &&
    ! grep -v 'could not serialize access due to concurrent update' "$MS_WORK/pgbench.err" | grep -q 'ERROR' || {
        echo "#   pgbench exit $pgbench_rc"
        grep 'ERROR' "$MS_WORK/pgbench.err" | sed 's/client [0-9]*/client N/' | sort | uniq -c | sort -rn | head -n 5 | sed 's/^/#   /'
        return 1; }
}
check "pgbench: every transaction committed, only 40001 retried (no deadlock)" pgbench_ok
admin_ok() {
    local other
    other=$(grep '^ERROR' "$MS_WORK/admin.err" | grep -v -E '^ERROR:  (42704|42710|22003):' || true)
    [ -z "$other" ] || { printf '%s\n' "$other" | sort | uniq -c | head -n 5 | sed 's/^/#   /'; return 1; }
}
check "the administrator saw only the expected refusals (42704, 42710, 22003)" admin_ok
rr_ok() {
    [ "$(grep -c same "$MS_WORK/rr.out")" -gt 0 ] && ! grep -q differs "$MS_WORK/rr.out" &&
    [ ! -s "$MS_WORK/rr.err" ] || {
        echo "#   $(grep -c same "$MS_WORK/rr.out") same, $(grep -c differs "$MS_WORK/rr.out") differ"
        head -n 3 "$MS_WORK/rr.err" | sed 's/^/#   /'; return 1; }
}
check "a REPEATABLE READ reader's scores stay the same within its snapshot" rr_ok
q -c "TRUNCATE t_bad" -c "BEGIN" -c "LOCK TABLE model_select.rewards IN SHARE MODE" \
  -c "SELECT t_check(i) FROM t_sel" -c "COMMIT" -o /dev/null
check "afterwards, in a fresh backend: every selector's live state is rebuild_state's" \
    no_rows "SELECT sel || ': ' || left(what, 300) FROM t_bad"
# the tags were learned, not only logged: a tag moves lin_rst's means
check "lin_rst's means with tag m differ from its untagged means at the same context" \
    no_rows "SELECT 'every mean equal: ' || string_agg(t.arm || ' ' || t.mean, ', ')
               FROM model_select.scores('lin_rst', t_ctx(1001, 3), ARRAY['m']) t
               JOIN model_select.scores('lin_rst', t_ctx(1001, 3)) u USING (arm)
             HAVING NOT bool_or(NOT ms_close(t.mean, u.mean))"
# statement by statement, less those t_check covers alone: cmm (compared on
# ucb only) and the time clock (now() moves between the statements)
for s in $(q -c "SELECT name FROM model_select.selectors WHERE name <> 'scr'
                   AND settings->>'confidence' IS DISTINCT FROM 'cmm'
                   AND settings->>'clock' IS DISTINCT FROM 'time' ORDER BY 1"); do
    rebuild_checks "$s"
done
finish
