#!/usr/bin/env bash
# Issue 41, decisions score published versions, on a cluster of its own with
# model_select preloaded, the learner serving and model_select.learner_max_lag
# at 1 s:
#   - every decision records the versions it scored (decisions.versions), and
#     decision_scores() re-derives its scores from those prefixes of the log
#     (and its own transaction's rewards) bit for bit: the chosen arm's ucb
#     and mean equal decisions.score and .mean exactly, under 3 writers and 3
#     routers, lin_ucb and rff_ucb;
#   - route_batch(log => true) records them too, re-derived bit for bit;
#   - with share, decision_scores() re-derives older decisions bit for bit in
#     a session that has kept the priors of newer versions;
#   - decisions with tags (route() rewarded in the same transaction, a logged
#     route_batch() with a tags column) re-derive bit for bit with the tags
#     they logged;
#   - a transaction that routes and rewards in a loop learns from its own
#     rewards: each route() sees one more reward of its own (n), and records
#     them (own_tx, own_seq);
#   - the learner stopped (SIGSTOP) under load: decisions go on, and within
#     the bound they score prefixes the backends fold themselves (versions
#     grow past every version before the stop), each equal to its rebuild;
#   - the learner killed (SIGKILL, the server restarts): no committed reward
#     is lost, the new learner publishes the whole log (every arm's n equals
#     the log), and every score equals rebuild_state's;
#   - the learner view shows its lag (p50 <= p99);
#   - decision_scores() refuses a decision that does not exist (42704) and a
#     role without the route right on its selector (42501).
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_versions
MS_ROLES=ms_versions_app
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
preloaded_server vers "$(free_port $(( ${PGPORT:-55500} + 110 )))" \
    "model_select.learner_databases = '$DB'" "model_select.learner_naptime = '50ms'" \
    "model_select.learner_max_lag = '1s'" "max_connections = 30"

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selectors failed"
SELECT model_select.create_selector('v_lin', 8, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL, '{}', 21);
SELECT model_select.create_selector('v_rff', 8, ARRAY['a', 'b', 'c'], 'rff_ucb', NULL, '{"features": 32}', 22);
SQL
q -f "$(dirname "$0")/lib/learner_load.sql" >/dev/null || bail "creating the load failed"
q -c "SELECT add_rewards('v_lin', 60), add_rewards('v_rff', 60)" >/dev/null

learner_pid() { q -c "SELECT pid FROM model_select.learner WHERE running AND last_pass IS NOT NULL AND pid IS DISTINCT FROM ${1:-0}" 2>/dev/null; }
wait_learner() {  # until a learner (with another pid than $1) serves
    for _ in $(seq 1 600); do [ -n "$(learner_pid "${1:-0}")" ] && return 0; sleep 0.1; done
    return 1
}
check "the learner serves $DB" wait_learner
pid=$(learner_pid)


wait_rows() { wait_for "$1" "$1"; }  # wait_rows SQL: until it returns t (lib/common.bash)
WHOLE_LOG="SELECT bool_and(sc.n = (SELECT count(*) FROM model_select.rewards r JOIN model_select.arms a USING (arm_id)
                                    WHERE r.selector = s.sel AND a.name = sc.arm))
             FROM (VALUES ('v_lin'), ('v_rff')) s(sel), model_select.scores(s.sel, ms_rand(8)) sc"
check "the learner publishes the first rewards: every arm scores n = its count in the log" wait_rows "$WHOLE_LOG"

# 1. a transaction that routes and rewards in a loop learns from its own rewards
q >/dev/null <<'SQL'
CREATE TABLE own_loop (i int, decision_id bigint, arm text, n bigint, own_seq bigint);
DO $$
DECLARE
    x float8[] := ms_rand(8);
    r record;
BEGIN
    FOR i IN 1..12 LOOP
        SELECT * INTO r FROM model_select.route('v_lin', x);
        INSERT INTO own_loop
        SELECT i, r.decision_id, r.arm, sc.n, (SELECT own_seq FROM model_select.decisions WHERE decision_id = r.decision_id)
          FROM model_select.scores('v_lin', x) sc WHERE sc.arm = 'a';
        INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('v_lin', 'a', x, 1);
    END LOOP;
END $$;
SQL
check "a transaction routing and rewarding in a loop: each call sees one more reward of its own" \
    no_rows "SELECT i || ': n ' || n || ', expected ' || (SELECT n FROM own_loop WHERE i = 1) + i - 1
               FROM own_loop WHERE n <> (SELECT n FROM own_loop WHERE i = 1) + i - 1"
check "... and its decisions after the first reward record their own rows (own_tx, own_seq)" \
    is_true "SELECT bool_and((own_seq IS NOT NULL) = (i > 1)) AND count(*) = 12 FROM own_loop"
check "... whose scores decision_scores() re-derives bit for bit" \
    rederive "d.decision_id IN (SELECT decision_id FROM own_loop)"

# 1b. route_batch(log => true) records them too (its blocks have a single score's bits)
q -c "CREATE TABLE batched AS SELECT decision_id FROM model_select.route_batch('v_rff',
        'SELECT i, ms_rand(8) FROM generate_series(1, 40) i', true)" >/dev/null
check "route_batch(log => true): its decisions record their versions, which re-derive their scores bit for bit" \
    rederive "d.decision_id IN (SELECT decision_id FROM batched)
              UNION ALL SELECT 'no versions' WHERE (SELECT count(versions) FROM model_select.decisions
                                                      WHERE decision_id IN (SELECT decision_id FROM batched)) <> 40"

# 1b'. share: a backend keeps the priors of the models it scores (routing/share_cache.c);
# decision_scores() scores older prefixes of the log, whose priors are others.  In one
# session: scores() of the current versions first, then the decisions routed before
# 30 more rewards, re-derived bit for bit.
q -c "SELECT model_select.create_selector('v_shr', 8, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL, '{\"share\": 0.3}', 23)" >/dev/null
q -c "SELECT add_rewards('v_shr', 60)" >/dev/null
SHR_LOG="SELECT bool_and(sc.n = (SELECT count(*) FROM model_select.rewards r JOIN model_select.arms a USING (arm_id)
                                  WHERE r.selector = 'v_shr' AND a.name = sc.arm)) FROM model_select.scores('v_shr', ms_rand(8)) sc"
check "share: the learner publishes the selector's 60 rewards" wait_rows "$SHR_LOG"
q -c "CREATE TABLE shr_old AS SELECT (model_select.route('v_shr', ms_rand(8))).decision_id FROM generate_series(1, 10)" >/dev/null
q -c "SELECT add_rewards('v_shr', 30)" >/dev/null
check "... and 30 more" wait_rows "$SHR_LOG"
check "... decision_scores() re-derives the decisions routed before them bit for bit, after scores() of the newer versions in the same session" \
    no_rows "DO \$\$ BEGIN PERFORM * FROM model_select.scores('v_shr', ms_rand(8)); END \$\$;
             $(rederive_sql "d.decision_id IN (SELECT decision_id FROM shr_old)")"

# 1c. a budget: the pacer's λ counts the decisions not rewarded yet, which the log no
# longer tells once they are; decision_scores() scores with the λ the decision logged.
# The arms learn their costs from 60 rewards without a decision (no spend), then
# 12 decisions in their own transactions, none rewarded: λ rises with them.  Each arm's
# reward is its price, so the first decision takes the dearest arm and overspends (with
# random rewards a run that kept to the cheapest arm, under the budget, saw λ 0 throughout);
# a call costs the price times 1 + |x₁|, so that the cost model's weights (published with
# each version) move the scores
q >/dev/null <<'SQL'
SELECT model_select.create_selector('v_bud', 8, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL, '{"budget": 0.3, "pace": 5}', 23);
INSERT INTO model_select.rewards(selector, arm, context, reward, cost)
SELECT 'v_bud', (ARRAY['a', 'b', 'c'])[1 + i % 3], r.x, (ARRAY[0.1, 0.5, 1.0])[1 + i % 3],
       (ARRAY[0.1, 0.5, 1.0])[1 + i % 3] * (1 + abs(r.x[1]))
  FROM generate_series(1, 60) i CROSS JOIN LATERAL (SELECT ms_rand(8 + 0 * i) AS x) r;
SQL
BUDGET_LOG="SELECT bool_and(sc.n = 20) FROM model_select.scores('v_bud', ms_rand(8)) sc"
check "the learner publishes the budget selector's 60 rewards" wait_rows "$BUDGET_LOG"
for _ in $(seq 1 12); do q -c "SELECT model_select.route('v_bud', ms_rand(8))" >/dev/null; done
BUDGET_DECISIONS="d.selector_id = (SELECT selector_id FROM model_select.selectors WHERE name = 'v_bud')"
check "12 budget decisions without a reward: the λ they logged rises with them" \
    is_true "SELECT count(*) = 12 AND count(DISTINCT cost_weight) > 1 FROM model_select.decisions d WHERE $BUDGET_DECISIONS"
check "... and decision_scores() re-derives their scores bit for bit" rederive "$BUDGET_DECISIONS"
check "... and the expected cost each logged, its arm's price there" \
    rederive "$BUDGET_DECISIONS" "r.cost IS NOT DISTINCT FROM d.expected_cost AND r.cost IS NOT NULL"
check "... which varies with the context (the cost model's, not the arm's mean cost)" \
    is_true "SELECT count(DISTINCT expected_cost) > count(DISTINCT arm_id) FROM model_select.decisions d WHERE $BUDGET_DECISIONS"

# 1d. tags: decisions with tags, rewarded in the same transaction, and a logged
# route_batch() with a tags column, re-derived with the tags they logged
q >/dev/null <<'SQL'
CREATE TABLE tagged (decision_id bigint);
DO $$
DECLARE
    r record;
BEGIN
    FOR i IN 1..12 LOOP
        SELECT * INTO r FROM model_select.route('v_lin', ms_rand(8), tags => ARRAY['t' || (i % 3)]);
        INSERT INTO tagged VALUES (r.decision_id);
        INSERT INTO model_select.rewards(decision_id, reward) VALUES (r.decision_id, (i % 3 = 0)::int);
    END LOOP;
END $$;
INSERT INTO tagged SELECT decision_id FROM model_select.route_batch('v_lin',
    'SELECT i, ms_rand(8), ARRAY[''t'' || (i % 3)] FROM generate_series(1, 20) i', true);
SQL
check "decisions with tags (route(), route_batch(log => true)): decision_scores() re-derives them bit for bit with their tags" \
    rederive "d.decision_id IN (SELECT decision_id FROM tagged)
              UNION ALL SELECT 'tags not logged' WHERE (SELECT count(tags) FROM model_select.decisions
                                                          WHERE decision_id IN (SELECT decision_id FROM tagged)) <> 32"

# 1e. count_pending: the rewards awaited from decisions not rewarded yet narrow the widths,
# counted from the decision log, which no longer tells them once the rewards come;
# decision_scores() scores with the awaited rewards the decision logged.  40 decisions
# rewarded in their own transaction, then 12 routes and a logged route_batch() of 10 rows
# that no reward follows: they await rewards
q >/dev/null <<'SQL'
SELECT model_select.create_selector('v_pend', 8, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL, '{"count_pending": true}', 29);
DO $$
DECLARE
    d bigint;
BEGIN
    FOR i IN 1..40 LOOP
        SELECT decision_id INTO d FROM model_select.route('v_pend', ms_rand(8));
        INSERT INTO model_select.rewards(decision_id, reward) VALUES (d, (i % 3 = 0)::int);
    END LOOP;
END $$;
SQL
for _ in $(seq 1 12); do q -c "SELECT model_select.route('v_pend', ms_rand(8))" >/dev/null; done
q -c "SELECT count(*) FROM model_select.route_batch('v_pend', 'SELECT i, ms_rand(8) FROM generate_series(1, 10) i', true)" >/dev/null
PENDING_DECISIONS="d.selector_id = (SELECT selector_id FROM model_select.selectors WHERE name = 'v_pend')"
AWAITED="SELECT count(*) FROM model_select.decisions d
          WHERE $PENDING_DECISIONS AND (SELECT max(x) FROM unnest(d.awaited) x) > 0"
check "count_pending: the decisions without a reward after the first logged the rewards their arms awaited (21 of 22: $(q -c "$AWAITED"))" \
    is_true "SELECT ($AWAITED) = 21"
check "... and decision_scores() re-derives their scores bit for bit" rederive "$PENDING_DECISIONS"

# 2. under load: writers and routers
for i in 1 2 3; do
    [ "$i" = 3 ] || { q -c "CALL writer('v_lin', 'v_rff')" >"$MS_WORK/writer.$i" 2>&1 & MS_BG_PIDS+=($!); }
    q -c "CALL router('v_lin', 'v_rff')" >"$MS_WORK/router.$i" 2>&1 & MS_BG_PIDS+=($!)
done
check "under load, routers log decisions (300 more)" \
    wait_rows "SELECT count(*) >= 300 FROM model_select.decisions"
check "every decision recorded the versions it scored, one per arm" \
    is_true "SELECT bool_and(cardinality(versions) = 3) FROM model_select.decisions"
check "some decisions scored versions that trail the log (the learner's lag is visible)" \
    is_true "SELECT bool_or(v < n) FROM (SELECT (SELECT sum(x) FROM unnest(d.versions) x) AS v,
                                               (SELECT count(*) FROM model_select.rewards r WHERE r.selector_id = d.selector_id) AS n
                                          FROM model_select.decisions d ORDER BY decision_id DESC LIMIT 200) t"

# 3. the learner stopped: backends fold for themselves within the bound
before=$(q -c "SELECT coalesce(max(decision_id), 0) FROM model_select.decisions")
stop_idle "$pid" || bail "the learner could not be stopped idle"
stopped_max=$(q -c "SELECT max((SELECT sum(x) FROM unnest(versions) x)) FROM model_select.decisions
                     WHERE selector_id = (SELECT selector_id FROM model_select.selectors WHERE name = 'v_lin')")
check "the learner stopped: decisions go on and score prefixes past every version before the stop" \
    wait_rows "SELECT count(*) > 0 FROM model_select.decisions d
                WHERE d.decision_id > $before AND (SELECT sum(x) FROM unnest(d.versions) x) > $stopped_max + 30
                  AND d.selector_id = (SELECT selector_id FROM model_select.selectors WHERE name = 'v_lin')"
kill -CONT "$pid"
check "decisions made under load and with the learner stopped: decision_scores() equals each (200 of them)" \
    rederive "d.decision_id IN (SELECT decision_id FROM model_select.decisions
                                 WHERE decision_id > $before - 200 ORDER BY decision_id LIMIT 200)"

check "the learner view shows its lag (p50 <= p99, in ms and rewards)" \
    wait_rows "SELECT lag_ms_p50 <= lag_ms_p99 AND lag_rewards_p50 <= lag_rewards_p99 FROM model_select.learner"

# 4. the learner killed: the server restarts
q -c "INSERT INTO load_done VALUES (true)" >/dev/null
wait
MS_BG_PIDS=()
committed=$(q -c "SELECT count(*) FROM model_select.rewards")
kill -KILL "$pid"
ready() { for _ in $(seq 1 600); do q -c 'SELECT 1' >/dev/null 2>&1 && return 0; sleep 0.1; done; return 1; }
check "the server is back after the learner's SIGKILL" ready
check "a new learner serves" wait_learner "$pid"
check "no committed reward is lost ($committed)" is_true "SELECT count(*) = $committed FROM model_select.rewards"
check "the learner publishes the whole log: every arm scores n = its count in the log" \
    wait_rows "$WHOLE_LOG"
check "after the restart, earlier decisions still re-derive their scores (the last 100)" \
    rederive "d.decision_id IN (SELECT decision_id FROM model_select.decisions ORDER BY decision_id DESC LIMIT 100)"
sqlstate_of() {  # sqlstate_of SQL: the error's "SQLSTATE: message" (the query must fail)
    local out
    out=$(q -v VERBOSITY=verbose -c "$1" 2>&1) && { echo "#   it succeeded"; return 1; }
    printf '%s\n' "$out" | sed -n 's/^ERROR:  //p' | head -n 1
}
check "decision_scores() of a decision that does not exist: 42704" \
    test "$(sqlstate_of 'SELECT * FROM model_select.decision_scores(-1)')" = "42704: decision -1 does not exist"
q >/dev/null <<'SQL'
CREATE ROLE ms_versions_app;
SELECT count(*) FROM model_select.setup_role('ms_versions_app', 'application');
SQL
refused() { [[ "$(sqlstate_of "SET ROLE ms_versions_app; SELECT * FROM model_select.decision_scores(1)")" == 42501:* ]]; }
check "decision_scores() for a role without the route right on the decision's selector: 42501" refused
for s in v_lin v_rff; do rebuild_checks "$s"; done
finish
