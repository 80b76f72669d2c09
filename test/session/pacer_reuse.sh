#!/usr/bin/env bash
# The budget pacer's kept window (src/routing/pacer_window.c), on a cluster of
# its own with model_select preloaded and the learner serving (where decisions
# score versions and the pacer may reuse a window): a session with
# model_select.pacer_window_reuse = 8 routes a greedy selector with a budget
# ('free' 0.4 at cost 0, 'dear' 0.9 at cost 1, budget 0.5, pace 10), and each
# λ it logs is compared with the pacer's function of the whole log, computed
# in SQL by another backend just before (exact_lambda()):
#   - its full read, and the reads between that take only the newer decisions
#     and each arm's newer rewards: its own and another session's new
#     decisions, and rewards logged since, count at once (exact);
#   - a decision committed with an older created_at than the newest the
#     window holds waits for its next read anew (the λ differs from the exact
#     one: the window is reused), which comes after 8 decisions and looks up
#     its reward (exact); 70 such decisions, more than are looked up one by
#     one, with rewards for 35 of them: the read anew marks them all (exact);
#   - a session's own decisions count at once, also in a transaction that
#     began before a decision its window holds (route() puts them in it;
#     route_batch() drops the window);
#   - a rolled-back transaction, or savepoint, whose second route() counted
#     the first's decision, leaves the window (exact after it);
#   - with pacer_window_reuse 1 every decision reads in full (such a late
#     decision counts at once), and so does a window longer than 16,384
#     decisions (pending_horizon 20,000; exact_lambda()'s 1,000 hold every
#     decision here);
#   - a reward whose transaction began before another's that committed and
#     was read first counts at once too (rewards are read from the snapshot
#     xmin of the last read on);
#   - an open transaction holding the xmin back with more rewards since than
#     the window holds makes the read a full one (exact);
#   - a long transaction of the session's own, routing and rewarding, does not:
#     after more of its own rewards than the window holds its reads stay
#     incremental (a decision committed late waits), and each decision before
#     is exact;
#   - a reward deleted from the log (then rebuild_state()) stays marked in a
#     window until its next full read, every 16th read anew;
#   - with 17 arms (more than are read arm by arm) the rewards of decisions a
#     window holds wait for its next full read, 8 decisions later (exact);
#   - a window on the selector's clock (arms folded exactly) keeps its window
#     too: a late decision waits for the next full read.
#   - rewards the learner has not folded (an older transaction holds them
#     back) count from the window at their costs, and a reward folded after a
#     REPEATABLE READ snapshot counts once (the pacer reads the newest
#     snapshot): each decision counts once, as spend or as pending (exact).
#   - what still waits for the learner: the reward of a decision older than
#     the window, while an older transaction holds it back (not exact), until
#     folded (exact).
#   - select_model() of a budget selector in a parallel worker, which cannot
#     take the newest snapshot, succeeds.
# learner_max_lag is 10 minutes, so that the count, not the clock, ends a reuse.
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_pacer_reuse
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
preloaded_server reuse "$(free_port $(( ${PGPORT:-55500} + 150 )))" \
    "model_select.learner_databases = '$DB'" "model_select.learner_naptime = '50ms'" \
    "model_select.learner_max_lag = '10min'"

ms_setup || bail "set-up failed"
budget_selector pr '{"budget": 0.5, "pace": 10}' || bail "creating the selector failed"
q -f "$(dirname "$0")/lib/exact_lambda.sql" >/dev/null || bail "creating exact_lambda() failed"
check "the learner serves $DB" wait_for "the learner's first pass" \
    "SELECT running AND last_pass IS NOT NULL FROM model_select.learner WHERE database = '$DB'"
learner_holds_log pr

SEL=pr    # the selector routed by $ROUTE, a_routes and reward_dear
route_sql() {
    echo "DO \$\$ BEGIN PERFORM model_select.route('$SEL', ARRAY[1, 0]::float8[]); END \$\$;
SELECT cost_weight FROM model_select.decisions ORDER BY decision_id DESC LIMIT 1;"
}
ROUTE=$(route_sql)
# a_routes SAME: session a routes once; the λ it logged is (SAME = same) or is not
# (SAME = other) the exact one, taken just before by another backend (for $SEL's
# pending_horizon, HORIZON, default 1,000)
a_routes() {
    local want
    want=$(q -c "SELECT exact_lambda('$SEL', ${HORIZON:-1000})")
    say a "$ROUTE" && lambda_is "$1" "$(last_answer a)" "$want"
}
# reward the dear decisions that have none (cost 1), and wait for the learner to fold $SEL's
reward_dear() {
    q -c "INSERT INTO model_select.rewards(decision_id, reward, cost)
          SELECT d.decision_id, 0.9, 1 FROM model_select.decisions d JOIN model_select.arms a USING (arm_id)
           WHERE a.name = 'dear' AND NOT EXISTS (SELECT FROM model_select.rewards r WHERE r.decision_id = d.decision_id)" \
        >/dev/null
    learner_holds_log "$SEL"
}

session a
session c
say a "SET model_select.pacer_window_reuse = 8;"
check "a's first decision reads the window in full: the exact λ" a_routes same
check "... its second counts its own new decision at once (a read of the newer decisions only)" a_routes same
check "... and its third" a_routes same
q -c "$ROUTE" >/dev/null
q -c "$ROUTE" >/dev/null
check "another session's two new decisions count at once for a's fourth" a_routes same
reward_dear
check "rewards logged since (each arm's log after the last reward read) count at once for its fifth" a_routes same
say c "BEGIN;"
check "... and its sixth" a_routes same
check "... and its seventh" a_routes same
say c "$ROUTE"
say c "SELECT decision_id FROM model_select.decisions ORDER BY decision_id DESC LIMIT 1;"
LATE=$(last_answer c)
say c "COMMIT;"
check "a decision that commits with an older created_at than the newest a's window holds waits for its next read anew: its eighth is not the exact λ" \
    a_routes other
q -c "INSERT INTO model_select.rewards(decision_id, reward, cost) VALUES (${LATE:-0}, 0.5, 0.25)" >/dev/null
learner_holds_log pr
check "... which its ninth makes (8 decisions per read anew), the late decision's reward looked up: the exact λ" \
    a_routes same
say c "BEGIN;"
check "... its tenth (exact)" a_routes same
say c "DO \$\$ BEGIN FOR i IN 1..70 LOOP PERFORM model_select.route('pr', ARRAY[1, 0]::float8[]); END LOOP; END \$\$;"
say c "SELECT min(decision_id) FROM (SELECT decision_id FROM model_select.decisions ORDER BY decision_id DESC LIMIT 70) c;"
FIRST_LATE=$(last_answer c)
say c "COMMIT;"
check "70 decisions committed late: a's eleventh is not the exact λ" a_routes other
for _ in 1 2 3 4 5; do say a "$ROUTE"; done
q >/dev/null <<SQL
INSERT INTO model_select.rewards(decision_id, reward, cost)
SELECT decision_id, 0.5, 0.25 FROM model_select.decisions WHERE decision_id >= ${FIRST_LATE:-0} ORDER BY decision_id LIMIT 35;
SQL
learner_holds_log pr
check "... its seventeenth reads them anew, more than are looked up one by one, with the rewards of 35: the exact λ" \
    a_routes same

# c_routes SAME: as a_routes, for session c, the exact λ taken in c's own transaction
c_routes() {
    local want
    say c "SELECT exact_lambda('$SEL');" && want=$(last_answer c)
    say c "$ROUTE" && lambda_is "$1" "$(last_answer c)" "$want"
}
SEL=prc
ROUTE=$(route_sql)
budget_selector prc '{"budget": 0.5, "pace": 10}'
learner_holds_log prc
say c "SET model_select.pacer_window_reuse = 100;"
check "c's first decision (exact)" c_routes same
say c "BEGIN;"
check "... a's, after c's transaction began (exact)" a_routes same
check "... c's first in that transaction counts a's at once (exact)" c_routes same
check "... its second counts its first at once, though its transaction began before a's decision its window holds (exact)" \
    c_routes same
check "... and its third" c_routes same
say c "COMMIT;"
say c "BEGIN;"
q -c "$ROUTE" >/dev/null
check "... c's first in its next transaction, after another session's decision (exact)" c_routes same
say c "SELECT count(*) FROM model_select.route_batch('prc', 'SELECT i, ARRAY[1, 0]::float8[] FROM generate_series(1, 3) i', true);"
check "... after c's route_batch() logged 3 decisions, its next decision counts them (exact)" c_routes same
say c "COMMIT;"
SEL=pr
ROUTE=$(route_sql)

say a "BEGIN;"
say a "$ROUTE"
say a "$ROUTE"
say a "ROLLBACK;"
check "a transaction whose second route() counted its first decision rolls back: the window is dropped (exact)" \
    a_routes same
say a "BEGIN;"
say a "SAVEPOINT s;"
say a "$ROUTE"
say a "$ROUTE"
say a "ROLLBACK TO SAVEPOINT s;"
check "... and the same in a savepoint rolled back (exact)" a_routes same
say a "COMMIT;"

say a "SET model_select.pacer_window_reuse = 1;"
say c "BEGIN;"
say a "$ROUTE"
say a "$ROUTE"
say c "$ROUTE"
say c "COMMIT;"
check "with pacer_window_reuse 1 every decision reads in full: such a decision counts at once" a_routes same
say a "SET model_select.pacer_window_reuse = 8;"
q -c "SELECT model_select.alter_selector('pr', '{\"pending_horizon\": 20000}')" >/dev/null
learner_holds_log pr
say c "BEGIN;"
say a "$ROUTE"
say a "$ROUTE"
say c "$ROUTE"
say c "COMMIT;"
check "a window longer than 16,384 decisions (pending_horizon 20,000) is not kept: such a decision counts at once" \
    a_routes same

# rewards committed out of the order of their transactions: c's reward of a's first decision
# begins first, another session's of its second commits first, a routes in between, then c
# commits: a's next decision counts both (rewards are read from the last read's snapshot xmin)
SEL=pro
ROUTE=$(route_sql)
budget_selector pro '{"budget": 0.5, "pace": 10}'
learner_holds_log pro
say a "SET model_select.pacer_window_reuse = 8;"
check "out-of-order rewards: a's first decision (exact)" a_routes same
check "... its second (exact)" a_routes same
PRO_DECISION="(SELECT d.decision_id FROM model_select.decisions d JOIN model_select.selectors s USING (selector_id)
                WHERE s.name = 'pro' ORDER BY d.decision_id LIMIT 1 OFFSET"
say c "BEGIN;"
say c "INSERT INTO model_select.rewards(decision_id, reward, cost) VALUES ($PRO_DECISION 0), 0.9, 1);"
q -c "INSERT INTO model_select.rewards(decision_id, reward, cost) VALUES ($PRO_DECISION 1), 0.9, 1)" >/dev/null
say a "$ROUTE"
say c "COMMIT;"
learner_holds_log pro
check "... a reward committed after a later one was read counts at once for its fourth (exact)" a_routes same

# an open transaction with an xid holds every snapshot's xmin back: more rewards from it on
# than the window holds (pending_horizon 5) make a's next read a full one, which counts them all
SEL=prx
ROUTE=$(route_sql)
budget_selector prx '{"budget": 0.5, "pace": 10, "pending_horizon": 5}'
learner_holds_log prx
check "xmin held back: a's first decision (exact)" a_routes same
say c "BEGIN;"
say c "SELECT pg_current_xact_id() IS NOT NULL;"
check "... its second, with another transaction open since (exact)" a_routes same
q >/dev/null <<'SQL'
INSERT INTO model_select.rewards(selector, arm, context, reward, cost)
SELECT 'prx', 'dear', ARRAY[1, 0]::float8[], 0.9, 1 FROM generate_series(1, 6);
SQL
say c "COMMIT;"
# (the learner folds them once that transaction has ended)
reward_dear
check "... 8 rewards since the xmin of a's last read (more than the window's 5): read in full (exact)" a_routes same

# a long transaction of a's own, routing and rewarding each decision: its xid is the oldest
# running, which no longer holds the read back (others' rewards are read from the oldest other
# transaction the last read could not see, its own after the last of them read), so its reads
# stay incremental past the window's length of its own rewards: a decision of another
# transaction committed late then waits for a's next read anew, as it would not after a full read
SEL=prt
ROUTE=$(route_sql)
budget_selector prt '{"budget": 0.5, "pace": 10, "pending_horizon": 5}'
check "a long transaction: the learner's versions of prt hold its log" wait_for "versions of prt" "$(versions_hold_log prt)"
# a_routes_own SAME: as a_routes, the exact λ taken in a's own transaction; then a rewards that decision
a_routes_own() {
    local want
    say a "SELECT exact_lambda('$SEL', 5);" && want=$(last_answer a)
    say a "$ROUTE" && lambda_is "$1" "$(last_answer a)" "$want" &&
        say a "INSERT INTO model_select.rewards(decision_id, reward, cost)
               SELECT decision_id, 0.5, 1 FROM model_select.decisions ORDER BY decision_id DESC LIMIT 1;"
}
say a "SET model_select.pacer_window_reuse = 100;"
say a "BEGIN;"
say a "SELECT pg_current_xact_id() IS NOT NULL;"
for i in 1 2 3 4 5 6 7 8; do
    check "a long transaction: a's decision $i, its own rewards counted (exact)" a_routes_own same
done
# c's decision is logged with a created_at between a's and another session's two newer ones
say c "BEGIN;"
q -c "$ROUTE" -c "$ROUTE" >/dev/null
check "... its 9th counts another session's two new decisions (exact)" a_routes_own same
say c "$ROUTE"
say c "COMMIT;"
check "... after 9 rewards of its own (more than the window's 5), a decision committed late waits (not exact)" \
    a_routes_own other
say a "COMMIT;"
say a "SET model_select.pacer_window_reuse = 8;"

# a reward deleted from the log (then rebuild_state()): the mark a window keeps still says
# rewarded, at the reward's cost (0.5, where its arm's mean is 1), until its next full read,
# every 16th read anew (reuse 1: each decision reads anew)
SEL=prd
ROUTE=$(route_sql)
budget_selector prd '{"budget": 0.5, "pace": 10}'
check "a deleted reward: the learner's versions of prd hold its log" wait_for "versions of prd" "$(versions_hold_log prd)"
say a "SET model_select.pacer_window_reuse = 1;"
check "a deleted reward: a's first decision (exact)" a_routes same
PRD_FIRST=$(q -c "SELECT max(decision_id) FROM model_select.decisions")
q -c "INSERT INTO model_select.rewards(decision_id, reward, cost) VALUES ($PRD_FIRST, 0.5, 0.5)" >/dev/null
check "... its second, after a reward of its first (exact)" a_routes same
q -c "DELETE FROM model_select.rewards WHERE decision_id = $PRD_FIRST" -c "SELECT model_select.rebuild_state('prd')" >/dev/null
check "... that reward deleted and the state rebuilt: the learner's versions hold the log again" \
    wait_for "versions of prd" "$(versions_hold_log prd)"
check "... its third still counts the first decision as rewarded (not exact): the window keeps the mark" \
    a_routes other
for _ in $(seq 4 16); do say a "$ROUTE"; done
check "... its 17th reads the window in full (after 15 reads anew): exact" a_routes same
say a "SET model_select.pacer_window_reuse = 8;"

# 17 arms (more than PACER_WINDOW_MAX_ARMS, 16): between full reads a's window reads no rewards,
# so those of decisions it holds wait for its next full read; 15 arms 'x…' never win
SEL=pr17
ROUTE=$(route_sql)
q >/dev/null <<'SQL'
SELECT model_select.create_selector('pr17', 2, ARRAY['free', 'dear'] || array_agg('x' || i ORDER BY i), 'greedy', NULL,
                                    '{"budget": 0.5, "pace": 10}')
  FROM generate_series(1, 15) i;
INSERT INTO model_select.rewards(selector, arm, context, reward, cost)
SELECT 'pr17', arm, ARRAY[1, 0]::float8[], r, c
  FROM (VALUES ('free', 0.4, 0), ('dear', 0.9, 1)) v(arm, r, c)
UNION ALL SELECT 'pr17', 'x' || i, ARRAY[1, 0]::float8[], 0.1, 0.5 FROM generate_series(1, 15) i;
SQL
learner_holds_log pr17
check "17 arms: a's first decision reads the window in full (exact)" a_routes same
check "... its second counts its first at once" a_routes same
reward_dear
check "... the reward of a decision its window holds waits for its next full read (not exact)" a_routes other
for _ in 1 2 3 4 5; do say a "$ROUTE"; done
check "... which its ninth makes (exact)" a_routes same

# a window on the selector's clock: the arms are folded exactly (a clock that ticks across
# the arms), but the learner serves the database, so the pacer's window is kept as well
SEL=prw
ROUTE=$(route_sql)
budget_selector prw '{"budget": 0.5, "pace": 10, "window": 50, "clock": "selector"}'
say c "BEGIN;"
check "a selector-clock window: a's first decision reads the window in full (exact)" a_routes same
check "... its second counts its first at once" a_routes same
say c "$ROUTE"
say c "COMMIT;"
check "... a decision committed with an older created_at waits for a's next full read (not exact): the window is kept" \
    a_routes other
for _ in 1 2 3 4 5; do say a "$ROUTE"; done
check "... which its ninth makes (exact)" a_routes same
# rewards the versions do not hold yet, or hold though the snapshot cannot see them: each
# decision still counts once, as spend or as pending.  c's open transaction rewards prv (no
# decision), so no later reward of prv is final and the learner folds none: the rewards of a's
# two decisions count from the window, at their costs.  Then, in a REPEATABLE READ transaction
# whose snapshot is older than a reward the learner folded, a's decision counts it (the pacer
# reads under the newest snapshot, as the versions are)
SEL=prv
ROUTE=$(route_sql)
budget_selector prv '{"budget": 0.5, "pace": 10}'
check "rewards not folded: the learner's versions of prv hold its log" wait_for "versions of prv" "$(versions_hold_log prv)"
check "rewards not folded: a's first decision (exact)" a_routes same
check "... its second (exact)" a_routes same
say c "BEGIN;"
say c "INSERT INTO model_select.rewards(selector, arm, context, reward, cost) VALUES ('prv', 'free', ARRAY[1, 0]::float8[], 0.4, 0);"
PRV_REWARD="INSERT INTO model_select.rewards(decision_id, reward, cost)
            SELECT d.decision_id, 0.5, CASE a.name WHEN 'dear' THEN 1 ELSE 0 END
              FROM model_select.decisions d JOIN model_select.arms a USING (arm_id) JOIN model_select.selectors s
                ON s.selector_id = d.selector_id
             WHERE s.name = 'prv' AND NOT EXISTS (SELECT FROM model_select.rewards r WHERE r.decision_id = d.decision_id)"
q -c "$PRV_REWARD" >/dev/null
check "... their rewards logged after c's open one: the learner has not folded them" \
    is_true "SELECT bool_or(lag_rewards > 0) FROM model_select.learner_versions WHERE selector = 'prv' AND NOT stale"
check "... a's third counts them at their costs, once (exact)" a_routes same
say c "COMMIT;"
check "... c's transaction ended: the versions of prv hold its log" wait_for "versions of prv" "$(versions_hold_log prv)"
check "... a's fourth (exact)" a_routes same
say a "BEGIN ISOLATION LEVEL REPEATABLE READ;"
say a "SELECT count(*) >= 0 FROM model_select.decisions;"
q -c "$PRV_REWARD" >/dev/null
check "... a reward after a REPEATABLE READ snapshot of a's: the versions of prv hold it" \
    wait_for "versions of prv" "$(versions_hold_log prv)"
check "... a's decision in that transaction counts it once (exact under the newest snapshot)" a_routes same
say a "COMMIT;"
# what still waits for the learner: the reward of a decision older than the window (prh: a
# window of 3), while an older transaction holds it back from being folded
SEL=prh HORIZON=3
ROUTE=$(route_sql)
budget_selector prh '{"budget": 0.5, "pace": 10, "pending_horizon": 3}'
check "a reward older than the window: the learner's versions of prh hold its log" \
    wait_for "versions of prh" "$(versions_hold_log prh)"
for i in 1 2 3 4; do check "... a's decision $i (exact)" a_routes same; done
say c "BEGIN;"
say c "INSERT INTO model_select.rewards(selector, arm, context, reward, cost) VALUES ('prh', 'free', ARRAY[1, 0]::float8[], 0.4, 0);"
q >/dev/null <<'SQL'
INSERT INTO model_select.rewards(decision_id, reward, cost)
SELECT d.decision_id, 0.5, CASE a.name WHEN 'dear' THEN 1 ELSE 0 END
  FROM model_select.decisions d JOIN model_select.arms a USING (arm_id) JOIN model_select.selectors s
    ON s.selector_id = d.selector_id
 WHERE s.name = 'prh' ORDER BY d.decision_id LIMIT 1;
SQL
check "... the reward of a's first decision (4 decisions back), held back by c's open transaction, waits (not exact)" \
    a_routes other
say c "COMMIT;"
check "... c's transaction ended: the versions of prh hold its log" wait_for "versions of prh" "$(versions_hold_log prh)"
check "... then it counts (exact)" a_routes same
HORIZON=1000
# select_model() is PARALLEL SAFE: in a parallel worker (force_parallel_mode) the pacer
# reads under the statement's snapshot (a worker cannot take a newer one)
check "select_model() of a budget selector in a parallel worker succeeds" \
    q -c "SET force_parallel_mode = on" -c "SET parallel_setup_cost = 0" \
      -c "SELECT model_select.select_model('prv', ARRAY[1, 0]::float8[]) IS NOT NULL"
check "no decision logged a NaN or negative λ" \
    is_true "SELECT bool_and(cost_weight >= 0 AND cost_weight <> 'NaN') AND count(*) = 22 + 78 + 11 + 4 + 13 + 17 + 3 + 9 + 10 + 5 + 6 FROM model_select.decisions"
close_sessions
finish
