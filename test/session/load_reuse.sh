#!/usr/bin/env bash
# Issue 12, item 2: select_model(), scores() and route() reuse a backend's
# last load of a selector while the caller's snapshot sees the same rows
# (src/routing/select.c).  This test keeps one reader session R open and
# changes the selector from other sessions; after every change R's next call
# must show exactly what a fresh session (empty caches) shows: n, active,
# mean and width of every arm at a probe, rounded to 6 decimals.
#
#   reuse       two calls with nothing in between: the second reads no table
#               (the model cache's hits + misses + decodes do not move), and
#               a reward by another session makes the next call read again
#   changes     a new reward (pending, not checkpointed), a reward committed
#               while R's previous call saw its transaction in progress,
#               checkpoint(), alter_selector(), add_arm(), retire_arm(),
#               rebuild_state()
#   privilege   R as a role granted route: revoke_selector() by another
#               session -> R's next call fails with 42501; grant again -> works;
#               the same for reward inserts (the trigger's check and the
#               row-level security policy keep answers per snapshot)
#   isolation   R in REPEATABLE READ keeps seeing its snapshot while another
#               session commits a reward, and sees it after COMMIT
#   own writes  R's own reward in its transaction is seen by its next call,
#               and is gone again after ROLLBACK TO SAVEPOINT
#
# Needs PGHOST/PGPORT/PGUSER (a superuser) of a running cluster with
# model_select installed.  Creates the role ms_reuse_role12 and drops it.
set -euo pipefail
DB=ms_session_reuse
ROLE=ms_reuse_role12
MS_ROLES=$ROLE
. "$(dirname "$0")/lib/common.bash"

ms_setup || bail "set-up failed"
q >/dev/null <<SQL || bail "creating the selector failed"
SELECT model_select.create_selector('lr', 4, ARRAY['a','b'], 'lin_ucb');
SELECT setseed(0.12);
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 'lr', (ARRAY['a','b'])[1 + g % 2], ms_rand(4), random() FROM generate_series(1, 40) g;
-- what the checks compare: every arm at one probe, as one line
CREATE FUNCTION digest() RETURNS text LANGUAGE sql AS \$\$
  SELECT string_agg(format('%s %s %s %s %s', arm, active, n, round(mean::numeric, 6),
                           round(width::numeric, 6)), '; ' ORDER BY arm)
    FROM model_select.scores('lr', ms_probe(4, 1)) \$\$;
CREATE FUNCTION cache_moves() RETURNS bigint LANGUAGE sql AS
  \$\$ SELECT hits + misses + decodes FROM model_select.cache_stats() \$\$;
CREATE ROLE $ROLE NOLOGIN;
SELECT count(*) FROM model_select.setup_role('$ROLE', 'application');
SQL

# -- the reader session R (rq, same_as_fresh: lib/common.bash) --------------
coproc R { psql -X -q -A -t -d "$DB" 2>&1; }
MS_BG_PIDS+=("$R_PID")
r_in=${R[1]}
r_out=${R[0]}

# -- reuse ------------------------------------------------------------------
# Any transaction that ends in the cluster meanwhile (autovacuum's ANALYZE
# after the tests before) moves every new snapshot's xmax, and the second
# call rightly reads again: a few tries, so that only a call that never
# reuses fails.
for try in 1 2 3 4 5; do
    rq "SELECT digest();" >/dev/null
    m1=$(rq "SELECT cache_moves();")
    rq "SELECT digest();" >/dev/null
    m2=$(rq "SELECT cache_moves();")
    [ -n "$m1" ] && [ "$m1" = "$m2" ] && break
done
check "a second call with nothing new reuses the load (no model cache lookup: $m1 -> $m2)" \
    eval '[ -n "$m1" ] && [ "$m1" = "$m2" ]'
q -c "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('lr', 'a', ms_probe(4, 2), 0.9)"
rq "SELECT digest();" >/dev/null
m3=$(rq "SELECT cache_moves();")
check "after another session's reward the next call reads again ($m2 -> $m3)" eval '[ "$m3" != "$m2" ]'

# -- changes by other sessions ------------------------------------------------
q -c "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('lr', 'b', ms_probe(4, 3), 0.2)"
same_as_fresh "a new pending reward is seen"
coproc W { psql -X -q -A -t -d "$DB" 2>&1; }
MS_BG_PIDS+=("$W_PID")
printf "BEGIN;\nINSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('lr', 'a', ms_probe(4, 4), 0.6);\nSELECT 'W_IN';\n" >&"${W[1]}"
IFS= read -r -t 60 line <&"${W[0]}" || true
same_as_fresh "a reward in progress elsewhere is not seen"
printf "COMMIT;\nSELECT 'W_DONE';\n" >&"${W[1]}"
IFS= read -r -t 60 line <&"${W[0]}" || true
same_as_fresh "that reward is seen once committed"
q -c "SELECT model_select.checkpoint('lr')" >/dev/null
same_as_fresh "checkpoint() by another session"
q -c "SELECT model_select.alter_selector('lr', '{\"alpha\": 3.5}')" >/dev/null
same_as_fresh "alter_selector() by another session"
q -c "SELECT model_select.add_arm('lr', 'c')" >/dev/null
same_as_fresh "add_arm() by another session"
q -c "SELECT model_select.retire_arm('lr', 'b')" >/dev/null
same_as_fresh "retire_arm() by another session"
q -c "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('lr', 'a', ms_probe(4, 5), 0.4)"
q -c "SELECT model_select.rebuild_state('lr')" >/dev/null
same_as_fresh "rebuild_state() by another session"

# -- privilege ----------------------------------------------------------------
q -c "SELECT model_select.grant_selector('lr', '$ROLE', 'route')" >/dev/null
out=$(rq "SET ROLE $ROLE; SELECT model_select.select_model('lr', ms_probe(4, 1)) IS NOT NULL;")
check "R as a role granted route calls select_model()" eval '[ "$out" = t ] || { echo "#   $out"; false; }'
q -c "SELECT model_select.revoke_selector('lr', '$ROLE', 'route')" >/dev/null
out=$(rq "\\set VERBOSITY verbose
SELECT model_select.select_model('lr', ms_probe(4, 1)) IS NOT NULL;")
check "after revoke_selector() by another session R's next call fails with 42501" \
    eval '[[ "$out" == *42501* ]] || { echo "#   $out"; false; }'
q -c "SELECT model_select.grant_selector('lr', '$ROLE', 'route')" >/dev/null
out=$(rq "SELECT model_select.select_model('lr', ms_probe(4, 1)) IS NOT NULL; RESET ROLE;")
check "granted again, R's next call works" eval '[ "$out" = t ] || { echo "#   $out"; false; }'
q -c "SELECT model_select.grant_selector('lr', '$ROLE', 'reward')" >/dev/null
ins="INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('lr', 'a', ms_probe(4, 8), 0.5);"
out=$(rq "SET ROLE $ROLE; $ins $ins SELECT 'inserted';")
check "R as a role granted reward inserts rewards" eval '[ "$out" = inserted ] || { echo "#   $out"; false; }'
q -c "SELECT model_select.revoke_selector('lr', '$ROLE', 'reward')" >/dev/null
out=$(rq "$ins")
check "after revoke_selector() by another session R's next reward fails with 42501" \
    eval '[[ "$out" == *42501* ]] || { echo "#   $out"; false; }'
rq "RESET ROLE;" >/dev/null

# -- isolation: a REPEATABLE READ transaction keeps its snapshot ---------------
before=$(rq "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT digest();")
q -c "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('lr', 'a', ms_probe(4, 6), 0.8)"
during=$(rq "SELECT digest();")
check "REPEATABLE READ: a reward committed meanwhile is not seen" \
    eval '[ -n "$before" ] && [ "$before" = "$during" ] || { echo "#   $before"; echo "#   $during"; false; }'
rq "COMMIT;" >/dev/null
same_as_fresh "after COMMIT it is seen"

# -- own writes ------------------------------------------------------------------
before=$(rq "BEGIN; SELECT digest(); SAVEPOINT s;")
own=$(rq "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('lr', 'a', ms_probe(4, 7), 0.1);
SELECT digest();")
check "R's own reward is seen by its next call" eval '[ -n "$own" ] && [ "$own" != "$before" ]'
after=$(rq "ROLLBACK TO SAVEPOINT s; SELECT digest();")
check "and is gone after ROLLBACK TO SAVEPOINT" \
    eval '[ "$after" = "$before" ] || { echo "#   $before"; echo "#   $after"; false; }'
rq "ROLLBACK;" >/dev/null
same_as_fresh "after ROLLBACK R agrees with a fresh session"

finish
