#!/usr/bin/env bash
# Issue 43, behind PgBouncer: Debian's pgbouncer in transaction mode, a pool
# of 4 server connections, in front of the test server.  At once through it:
# 4 copies of examples/route_loop.py (one with --warm 40), each with its own
# selector, and pgbench (12 clients, simple and extended protocol) routing
# and rewarding one selector with per-transaction settings and role (SET
# LOCAL) -- 20 clients on 4 backends.  Checks: every program ends without
# error; every acknowledged reward is in the log once, for its decision;
# every selector's scores equal its rebuild; no temporary table is left on
# the pooled backends; the clients did share backends; and no setting or
# role set by one transaction was seen by another.
set -euo pipefail
DB=ms_session_pgbouncer
MS_ROLES="ms_pool_app"
MS_EXTRA_CLEANUP='bouncer_stop'
. "$(dirname "$0")/lib/common.bash"
. "$(dirname "$0")/lib/pgbouncer.bash"
HERE=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3
POOL=4

[ -x "$PGBOUNCER" ] || bail "$PGBOUNCER is not installed (scripts/ensure-deps.sh installs pgbouncer)"
"$PY" -c 'import psycopg' 2>/dev/null || bail "python3-psycopg is not installed (scripts/ensure-deps.sh)"
ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selector and the role failed"
CREATE ROLE ms_pool_app;
SELECT model_select.setup_role('ms_pool_app', 'application');
SELECT model_select.create_selector('pool_a', 3, ARRAY['a', 'b', 'c'], 'lin_ucb');
SELECT model_select.grant_selector('pool_a', 'ms_pool_app', 'route');
SELECT model_select.grant_selector('pool_a', 'ms_pool_app', 'reward');
-- what each transaction saw: its role and setting, and its backend
CREATE TABLE seen (part text, who text, threshold text, pid int);
GRANT INSERT ON seen TO ms_pool_app;
-- the rewards pgbench had acknowledged
CREATE TABLE acked (decision_id bigint, reward_id bigint);
SQL
default_threshold=$(q -c "LOAD 'model_select'" -c "SELECT current_setting('model_select.checkpoint_threshold')")
bouncer_start transaction "$POOL" postgres ms_pool_app || bail "pgbouncer failed to start"

cat >"$MS_WORK/route_reward.sql" <<'SQL'
\set x random(1, 1000000)
BEGIN;
SET LOCAL ROLE ms_pool_app;
SET LOCAL model_select.checkpoint_threshold = 7;
SELECT decision_id FROM model_select.route('pool_a', ARRAY[sin(:x), cos(:x), sin(:x * 0.3)]::float8[]) \gset
INSERT INTO seen VALUES ('in', current_user, current_setting('model_select.checkpoint_threshold'), pg_backend_pid());
COMMIT;
BEGIN;
SET LOCAL ROLE ms_pool_app;
SELECT model_select.reward(:decision_id, (1 + sin(:x * 0.7)) / 2) AS reward_id \gset
COMMIT;
INSERT INTO acked VALUES (:decision_id, :reward_id);
INSERT INTO seen VALUES ('out', current_user, current_setting('model_select.checkpoint_threshold', true), pg_backend_pid());
SQL
through() { PGHOST=$BOUNCER_HOST PGPORT=$BOUNCER_PORT PGDATABASE=$DB "$@"; }
pids=()
for c in 1 2 3 4; do
    warm=(); [ "$c" = 4 ] && warm=(--warm 40)
    through "$PY" "$HERE/examples/route_loop.py" "$HERE/examples/routerdc7_slice.csv" --every 80 \
        --selector "ex$c" --seed "$c" "${warm[@]}" >"$MS_WORK/ex$c.out" 2>&1 &
    pids+=($!)
done
for m in simple extended; do
    through pgbench -n -f "$MS_WORK/route_reward.sql" -c 6 -j 2 -t 30 -M "$m" >"$MS_WORK/pgbench.$m.out" 2>&1 &
    pids+=($!)
done
rcs=()
for p in "${pids[@]}"; do wait "$p" && rcs+=(0) || rcs+=($?); done

for c in 1 2 3 4; do
    check "route_loop.py copy $c runs to the end through the pooler (exit ${rcs[$((c - 1))]})" \
        eval '[ "${rcs[$((c - 1))]}" -eq 0 ] || { tail -n 5 "$MS_WORK/ex$c.out" | sed "s/^/#   /"; false; }'
done
check "copy 4's warm start loaded its 40 prompts, every model scored (280 rewards)" \
    grep -q "40 prompts, every model scored: 280 rewards" "$MS_WORK/ex4.out"
for m in simple extended; do
    i=$([ "$m" = simple ] && echo 4 || echo 5)
    check "pgbench ($m protocol) ends without error (exit ${rcs[$i]})" \
        eval '[ "${rcs[$i]}" -eq 0 ] || { tail -n 5 "$MS_WORK/pgbench.$m.out" | sed "s/^/#   /"; false; }'
    check "pgbench ($m protocol): 180 of 180 transactions processed" \
        grep -q "number of transactions actually processed: 180/180" "$MS_WORK/pgbench.$m.out"
done

check "every acknowledged reward is in the log once, for its decision (360)" \
    is_true "SELECT count(*) = 360 AND count(DISTINCT a.reward_id) = 360
               AND bool_and(r.decision_id = a.decision_id)
               AND (SELECT count(*) FROM model_select.rewards WHERE selector = 'pool_a') = 360
               AND (SELECT count(*) FROM model_select.decisions d JOIN model_select.selectors s USING (selector_id)
                     WHERE s.name = 'pool_a') = 360
               FROM acked a JOIN model_select.rewards r USING (reward_id)"
check "each example selector: one reward per decision (240, or 200 after the warm 40)" \
    is_true "SELECT bool_and(d.n = CASE s.name WHEN 'ex4' THEN 200 ELSE 240 END AND d.rewarded = d.n)
               FROM model_select.selectors s,
                    LATERAL (SELECT count(*) AS n, count(r.reward_id) AS rewarded
                               FROM model_select.decisions dd
                               LEFT JOIN model_select.rewards r USING (decision_id)
                              WHERE dd.selector_id = s.selector_id) d
              WHERE s.name LIKE 'ex_'"
check "outside its transactions no client saw another's role or setting ($default_threshold)" \
    no_rows "SELECT who || ' ' || coalesce(threshold, 'unset') || ': ' || count(*) FROM seen
              WHERE part = 'out' AND (who <> 'postgres' OR threshold IS DISTINCT FROM '$default_threshold')
              GROUP BY who, threshold"
check "inside them each had its own (ms_pool_app, 7)" \
    no_rows "SELECT who || ' ' || threshold FROM seen WHERE part = 'in' AND (who <> 'ms_pool_app' OR threshold <> '7')"
check "360 route and 360 other transactions were seen" \
    is_true "SELECT count(*) FILTER (WHERE part = 'in') = 360 AND count(*) FILTER (WHERE part = 'out') = 360 FROM seen"
backends=$(q -c "SELECT count(DISTINCT pid) FROM seen")
check "the 20 clients shared at most $POOL server backends (pgbench's: $backends)" \
    eval '[ "$backends" -ge 1 ] && [ "$backends" -le "$POOL" ]'
check "no temporary table is left on the pooled backends" \
    no_rows "SELECT relname FROM pg_class WHERE relpersistence = 't'"
for s in pool_a ex1 ex2 ex3 ex4; do rebuild_checks "$s"; done
finish
