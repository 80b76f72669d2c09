#!/usr/bin/env bash
# Issue 43, behind PgBouncer: Debian's pgbouncer in transaction mode, a pool
# of 4 server connections, in front of a server.  At once through it:
# copies of examples/route_loop.py (the last with --warm 40), each with its
# own selector, and pgbench (6 clients a run) routing and rewarding one
# selector with per-transaction settings and role (SET LOCAL) -- more
# clients than the pool.  Checks: every program ends without error; every
# acknowledged reward is in the log once, for its decision; every
# selector's scores equal its rebuild; no temporary table is left on the
# pooled backends; the clients did share backends; and no setting or role
# set by one transaction was seen by another.  Two passes: the test server
# (4 copies, pgbench in simple and extended protocol), then a server of the
# test's own with model_select preloaded and the learner running in the
# database (2 copies, extended protocol).
set -euo pipefail
DB=ms_session_pgbouncer
MS_ROLES="ms_pool_app"
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='bouncer_stop; cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
. "$(dirname "$0")/lib/pgbouncer.bash"
HERE=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3
POOL=4

[ -x "$PGBOUNCER" ] || bail "$PGBOUNCER is not installed (scripts/ensure-deps.sh installs pgbouncer)"
"$PY" -c 'import psycopg' 2>/dev/null || bail "python3-psycopg is not installed (scripts/ensure-deps.sh)"

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

# the learner of the preloaded server runs in $DB, with a finished pass and no error
learner_running() {
    for _ in $(seq 1 1200); do
        [ "$(q -c "SELECT running AND last_pass IS NOT NULL AND errors = 0 FROM model_select.learner
                    WHERE database = '$DB'" 2>/dev/null)" = t ] && return 0
        sleep 0.1
    done
    q -c "SELECT * FROM model_select.learner" | sed 's/^/#   /'
    return 1
}

# cache_stats() read through the pooler by two sessions, each inside a
# transaction (so on two backends), in turns A B A B: preloaded, the server's
# counters, which only grow from one read to the next whichever backend
# answers; else each backend's own, and it says so (scope)
cache_stats_through() {
    local tag=$1 want=server s
    [ -n "$tag" ] || want=backend
    for s in ca cb; do PGHOST=$BOUNCER_HOST PGPORT=$BOUNCER_PORT session $s; say $s "BEGIN;"; done
    for s in ca cb ca cb; do
        say $s "SELECT concat_ws(' ', 'cs', pg_backend_pid(), scope, hits, misses, decodes)
                  FROM model_select.cache_stats();" || break
    done
    for s in ca cb; do say $s "COMMIT;"; done
    close_sessions
    check "cache_stats() through the pooler, two backends in turns: scope $want$tag" cache_reads "$want"
}
# cache_reads WANT: four reads (A B A B) from two backends, of scope WANT; of
# the server's, none smaller than the one before
cache_reads() {
    local a b
    mapfile -t a < <(grep '^cs ' "$MS_WORK/ca.out")
    mapfile -t b < <(grep '^cs ' "$MS_WORK/cb.out")
    printf '%s\n' "${a[0]:-}" "${b[0]:-}" "${a[1]:-}" "${b[1]:-}" |
        awk -v want="$1" '{ pid[$2] = 1; if ($3 != want) bad = "scope"
                            if (want == "server" && NR > 1 && ($4 < h || $5 < m || $6 < d)) bad = "a decrease"
                            h = $4; m = $5; d = $6 }
                          END { for (p in pid) np++
                                if (NR != 4 || np != 2) bad = "not 4 reads from 2 backends"
                                if (want == "server" && h + m == 0) bad = "nothing counted"
                                if (bad == "") exit 0
                                print "#   " bad "; reads (cs pid scope hits misses decodes), in order:"
                                exit 1 }' ||
        { printf '#   %s\n' "${a[0]:-}" "${b[0]:-}" "${a[1]:-}" "${b[1]:-}"; return 1; }
}

# run_pass TAG COPIES MODES...: set-up, the load through a fresh pgbouncer, the checks
run_pass() {
    local tag=$1 copies=$2 c m i p
    shift 2
    local modes=("$@") rcs=() pids=()
    local routed=$((6 * 30 * ${#modes[@]}))
    ms_setup || bail "set-up failed$tag"
    q >/dev/null <<'SQL' || bail "creating the selector and the role failed$tag"
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
    [ -n "$tag" ] && check "the learner runs in $DB$tag" learner_running
    local default_threshold
    default_threshold=$(q -c "LOAD 'model_select'" -c "SELECT current_setting('model_select.checkpoint_threshold')")
    bouncer_start transaction "$POOL" postgres ms_pool_app || bail "pgbouncer failed to start$tag"
    through() { PGHOST=$BOUNCER_HOST PGPORT=$BOUNCER_PORT PGDATABASE=$DB "$@"; }
    for c in $(seq 1 "$copies"); do
        local warm=(); [ "$c" = "$copies" ] && warm=(--warm 40)
        through "$PY" "$HERE/examples/route_loop.py" "$HERE/examples/routerdc7_slice.csv" --every 80 \
            --selector "ex$c" --seed "$c" "${warm[@]}" >"$MS_WORK/ex$c.out" 2>&1 &
        pids+=($!)
    done
    for m in "${modes[@]}"; do
        through pgbench -n -f "$MS_WORK/route_reward.sql" -c 6 -j 2 -t 30 -M "$m" >"$MS_WORK/pgbench.$m.out" 2>&1 &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" && rcs+=(0) || rcs+=($?); done

    for c in $(seq 1 "$copies"); do
        check "route_loop.py copy $c runs to the end through the pooler (exit ${rcs[$((c - 1))]})$tag" \
            eval '[ "${rcs[$((c - 1))]}" -eq 0 ] || { tail -n 5 "$MS_WORK/ex$c.out" | sed "s/^/#   /"; false; }'
    done
    check "copy $copies's warm start loaded its 40 prompts, every model scored (280 rewards)$tag" \
        grep -q "40 prompts, every model scored: 280 rewards" "$MS_WORK/ex$copies.out"
    i=$copies
    for m in "${modes[@]}"; do
        check "pgbench ($m protocol) ends without error (exit ${rcs[$i]}), 180 of 180 transactions$tag" \
            eval '[ "${rcs[$i]}" -eq 0 ] && grep -q "actually processed: 180/180" "$MS_WORK/pgbench.$m.out" ||
                  { tail -n 5 "$MS_WORK/pgbench.$m.out" | sed "s/^/#   /"; false; }'
        i=$((i + 1))
    done
    check "every acknowledged reward is in the log once, for its decision ($routed)$tag" \
        is_true "SELECT count(*) = $routed AND count(DISTINCT a.reward_id) = $routed
                   AND bool_and(r.decision_id = a.decision_id)
                   AND (SELECT count(*) FROM model_select.rewards WHERE selector = 'pool_a') = $routed
                   AND (SELECT count(*) FROM model_select.decisions d JOIN model_select.selectors s USING (selector_id)
                         WHERE s.name = 'pool_a') = $routed
                   FROM acked a JOIN model_select.rewards r USING (reward_id)"
    check "each example selector: one reward per decision (240, or 200 after the warm 40)$tag" \
        is_true "SELECT count(*) = $copies AND bool_and(d.n = CASE s.name WHEN 'ex$copies' THEN 200 ELSE 240 END
                                                       AND d.rewarded = d.n)
                   FROM model_select.selectors s,
                        LATERAL (SELECT count(*) AS n, count(r.reward_id) AS rewarded
                                   FROM model_select.decisions dd
                                   LEFT JOIN model_select.rewards r USING (decision_id)
                                  WHERE dd.selector_id = s.selector_id) d
                  WHERE s.name LIKE 'ex_'"
    check "outside its transactions no client saw another's role or setting ($default_threshold)$tag" \
        no_rows "SELECT who || ' ' || coalesce(threshold, 'unset') || ': ' || count(*) FROM seen
                  WHERE part = 'out' AND (who <> 'postgres' OR threshold IS DISTINCT FROM '$default_threshold')
                  GROUP BY who, threshold"
    check "inside them each had its own (ms_pool_app, 7)$tag" \
        no_rows "SELECT who || ' ' || threshold FROM seen WHERE part = 'in' AND (who <> 'ms_pool_app' OR threshold <> '7')"
    check "$routed route and $routed other transactions were seen$tag" \
        is_true "SELECT count(*) FILTER (WHERE part = 'in') = $routed AND count(*) FILTER (WHERE part = 'out') = $routed FROM seen"
    local backends
    backends=$(q -c "SELECT count(DISTINCT pid) FROM seen")
    check "$((copies + 6 * ${#modes[@]})) clients shared at most $POOL server backends (pgbench's: $backends)$tag" \
        eval '[ "$backends" -ge 1 ] && [ "$backends" -le "$POOL" ]'
    check "no temporary table is left on the pooled backends$tag" \
        no_rows "SELECT relname FROM pg_class WHERE relpersistence = 't'"
    [ -n "$tag" ] && check "the learner is still running, without error$tag" learner_running
    cache_stats_through "$tag"
    bouncer_stop
    for s in pool_a $(seq -f 'ex%g' 1 "$copies"); do rebuild_checks "$s" "$tag"; done
    # the next pass sets up anew
    dropdb --force "$DB" && ms_drop_roles
}

run_pass "" 4 simple extended

# with model_select preloaded and the learner checkpointing the database
PORT=$(free_port $(( ${PGPORT:-55500} + 80 )))
preloaded_initdb learn "model_select.learner_databases = '$DB'" "model_select.learner_naptime = '50ms'"
cluster_start learn "$PORT" || bail "the preloaded server failed to start: $(tail -n 5 "$CL/learn.log")"
export PGHOST=$CL PGPORT=$PORT
run_pass " (learner)" 2 extended
finish
