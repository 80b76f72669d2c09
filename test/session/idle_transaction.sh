#!/usr/bin/env bash
# Issue 26, item 3: one tenant's open transaction no longer holds every other
# tenant's checkpoints back.  Checkpoints of a selector wait only for the
# transactions that write its log (they hold its settings lock); one that took
# its id elsewhere first and then writes the selector after a checkpoint
# passed it is refused with 40001 (to be retried), so no reward is lost or
# folded out of order.
#   1. tenant B's transaction holds an id, idle; 300 rewards of tenant A's
#      pak_ucb selector are then all checkpointed (0.2.0: all stayed pending,
#      and every new connection folded them), a fresh backend loads A from
#      the checkpoint, and every score equals rebuild_state's;
#   2. B's transaction then rewards A: 40001 naming the selector; retried in a
#      new transaction it succeeds;
#   3. a transaction that routed with A first (it holds A's lock) does hold
#      A's checkpoints back, then rewards its decision and commits: its reward
#      is learned, in canonical order (scores equal rebuild_state's);
#   4. a REPEATABLE READ transaction with an id, whose snapshot predates a
#      checkpoint that passed it, rewards A: 40001 too (the check reads the
#      newest checkpoints), and nothing is lost;
#   5. a READ COMMITTED one rewards A while a checkpoint that passed it is in
#      flight: the reward waits for it, then is refused;
#   6. rewards that make an arm due inside an application's open transaction
#      block checkpoint when it commits, not in their INSERT: meanwhile no
#      arm_state row is held for it, so a late writer of the selector does
#      not wait for the application (before, it waited as long as the
#      application kept its transaction open), and the commit checkpoints
#      every final row, the application's own included;
#   7. such a commit still commits after a savepoint's rollback released the
#      selector's lock, and after the transaction dropped the selector.
#
# Needs PGHOST/PGPORT/PGUSER of a running cluster with model_select installed.
set -euo pipefail
DB=ms_session_idle_transaction
. "$(dirname "$0")/lib/common.bash"

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "fixtures failed"
SELECT model_select.create_selector('tenant_a', 8, ARRAY['a', 'b'], 'pak_ucb');
SELECT model_select.create_selector('tenant_b', 8, ARRAY['a', 'b'], 'lin_ucb');
CREATE TABLE b_orders (id int);
CREATE FUNCTION add_rewards(sel text, n int) RETURNS void LANGUAGE sql AS $$
    INSERT INTO model_select.rewards(selector, arm, context, reward)
    SELECT sel, (ARRAY['a', 'b'])[1 + i % 2], ms_rand(8), random() FROM generate_series(1, n) i
$$;
SQL
pending() { q -c "SELECT sum(pending) FROM model_select.arm_stats WHERE selector = '$1'"; }
refused_late() {  # refused_late SESSION: its output has the late writer's 40001 for A
    grep -q 'ERROR:  40001: this transaction is older than rewards of selector "tenant_a"' "$MS_WORK/$1.out" ||
        { sed 's/^/#   /' "$MS_WORK/$1.out"; false; }
}

# 1. an idle transaction of tenant B, with an id
session idle_b
say idle_b '\set VERBOSITY verbose'
say idle_b "BEGIN; INSERT INTO b_orders VALUES (1); SELECT pg_current_xact_id() IS NOT NULL;"
q -c "SELECT add_rewards('tenant_a', 300)" >/dev/null
q -c "SELECT model_select.checkpoint('tenant_a')" >/dev/null
got=$(pending tenant_a)
check "300 rewards of tenant A behind tenant B's idle transaction: all checkpointed (pending $got)" test "$got" = 0
first_ms=$(q -c "SELECT extract(epoch FROM clock_timestamp()) * 1000" -c "SELECT model_select.select_model('tenant_a', ms_probe(8, 1))" \
             -c "SELECT extract(epoch FROM clock_timestamp()) * 1000" | awk 'NR == 1 { t = $1 } END { printf "%.1f", $1 - t }')
echo "# a fresh backend's first select_model() on tenant A: $first_ms ms"
rebuild_checks tenant_a " (behind the idle transaction)"

# 2. the idle transaction now rewards A: refused, and fine when retried
say idle_b "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('tenant_a', 'a', ms_probe(8, 2), 0.5);"
say idle_b "ROLLBACK;"
say idle_b "BEGIN; INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('tenant_a', 'a', ms_probe(8, 2), 0.5); COMMIT;"
close_sessions
check "the idle transaction's late reward for A: 40001 naming the selector" refused_late idle_b
check "... and retried in a new transaction it is logged" \
    is_true "SELECT count(*) = 301 FROM model_select.rewards r JOIN model_select.selectors s USING (selector_id)
              WHERE s.name = 'tenant_a'"

# 3. a transaction that routed with A first holds A's checkpoints back
session router
say router '\set VERBOSITY verbose'
say router "BEGIN; SELECT decision_id AS d FROM model_select.route('tenant_a', ms_probe(8, 3)) \\gset"
q -c "SELECT add_rewards('tenant_a', 40)" >/dev/null
q -c "SELECT model_select.checkpoint('tenant_a')" >/dev/null
got=$(pending tenant_a)
check "rewards after a transaction that routed with A stay pending while it runs (pending $got)" test "$got" -ge 40
say router "INSERT INTO model_select.rewards(decision_id, reward) VALUES (:d, 0.9); COMMIT;"
close_sessions
check "... which then rewards its decision and commits" \
    no_error router
q -c "SELECT model_select.checkpoint('tenant_a')" >/dev/null
check "... and everything is checkpointed once it ended" test "$(pending tenant_a)" = 0
rebuild_checks tenant_a " (after the routing transaction)"

# 4. under REPEATABLE READ the check reads the newest checkpoints, not its snapshot's
late_refused() {  # late_refused SESSION DESC: its reward for A was refused, and nothing of it is logged
    check "$2: 40001 naming the selector" refused_late "$1"
    check "... and every reward of A logged is learned: arm_stats.n equals the log and base" \
        no_rows "SELECT * FROM ms_count_diff('tenant_a')"
    rebuild_checks tenant_a " (after $1's late reward)"
}
session rr
say rr '\set VERBOSITY verbose'
say rr "BEGIN ISOLATION LEVEL REPEATABLE READ; INSERT INTO b_orders VALUES (2); SELECT count(*) FROM model_select.arm_state;"
q -c "SELECT add_rewards('tenant_a', 10)" -c "SELECT model_select.checkpoint('tenant_a')" >/dev/null
say rr "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('tenant_a', 'a', ms_probe(8, 4), 0.25);"
say rr "COMMIT;"
close_sessions
late_refused rr "a REPEATABLE READ transaction whose snapshot predates the checkpoint that passed it rewards A (0.3.0 before the fix logged it behind the checkpoint, never learned)"

# 5. a checkpoint in flight that passed the transaction: the reward waits for it, then is refused
session ck
session rc
say rc '\set VERBOSITY verbose'
say rc "BEGIN; INSERT INTO b_orders VALUES (3);"
q -c "SELECT add_rewards('tenant_a', 10)" >/dev/null
say ck "BEGIN; SELECT model_select.checkpoint('tenant_a');"
say_async rc "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('tenant_a', 'b', ms_probe(8, 5), 0.75);"
check "a reward of A by a transaction that a checkpoint in flight has passed waits for that checkpoint" \
    backend_waits Lock "INSERT INTO model_select.rewards%"
say ck "COMMIT;"
said rc
say rc "COMMIT;"
close_sessions
late_refused rc "... which commits: the reward is refused (before the fix it did not wait and was logged behind it)"
# 6. an application's open transaction makes arms due: the checkpoint waits for its commit
q -c "SELECT model_select.create_selector('tenant_c', 8, ARRAY['a', 'b'], 'lin_ucb')" >/dev/null
session late
session app
say late '\set VERBOSITY verbose'
say late "BEGIN; INSERT INTO b_orders VALUES (6); SET LOCAL lock_timeout = '30s';"
say app "BEGIN; SELECT add_rewards('tenant_c', 300);"
held=$(q -c "SELECT count(*) FROM model_select.arm_state st JOIN model_select.selectors s USING (selector_id)
              WHERE s.name = 'tenant_c' AND st.xmax <> '0'")
say late "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('tenant_c', 'a', ms_probe(8, 6), 0.5); COMMIT;"
check "300 rewards in an open transaction block hold no arm_state row of their selector ($held held)" test "$held" = 0
check "... and a late writer of the selector rewards it without waiting for that transaction (lock_timeout)" \
    no_error late
say app "COMMIT;"
close_sessions
check "... the application's COMMIT succeeds" \
    no_error app
got=$(pending tenant_c)
check "... and checkpoints every reward, its own 300 and the late writer's (pending $got)" test "$got" = 0
rebuild_checks tenant_c " (checkpointed at commit)"

# 7. the commit's checkpoint after a savepoint's rollback, and after a drop
q -c "SELECT model_select.create_selector('tenant_d', 8, ARRAY['a', 'b'], 'lin_ucb')" >/dev/null
check "a transaction that rewards, rolls back to a savepoint from before its first reward and rewards again commits" \
    q -c "BEGIN" -c "SAVEPOINT s" -c "SELECT add_rewards('tenant_c', 300)" -c "ROLLBACK TO SAVEPOINT s" \
      -c "SELECT add_rewards('tenant_c', 20)" -c "COMMIT" -o /dev/null
rebuild_checks tenant_c " (after the savepoint's rollback)"
check "a transaction that rewards a selector until it is due, then drops it, commits" \
    q -c "BEGIN" -c "SELECT add_rewards('tenant_d', 300)" -c "SELECT model_select.drop_selector('tenant_d')" \
      -c "COMMIT" -o /dev/null
check "... and the selector and its rewards are gone" \
    is_true "SELECT NOT EXISTS (SELECT FROM model_select.selectors WHERE name = 'tenant_d')
                AND NOT EXISTS (SELECT FROM model_select.rewards WHERE selector = 'tenant_d')"
finish
