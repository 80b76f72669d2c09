#!/usr/bin/env bash
# Issue 41: a backend keeps the rows a selector's load reads (selectors,
# route grantees, arms, arm_state: src/routing/selector_rows.c) and takes
# them again while they are current.  A router session R routes again and
# again while another session changes the selector; after every change R's
# next call must show what a fresh session shows (arms, active, n, radius
# and alpha of every arm at a probe), and R's kept rows must have served
# calls in between (the test would pass without any cache otherwise).
#
#   kept        route() calls on an unchanged selector take the kept rows
#   privilege   revoke_selector() of R's route right -> R's next route()
#               fails with 42501; granted again -> it works
#   changes     add_arm(), retire_arm(), alter_selector(), checkpoint(), a
#               dropped and re-created selector of the same name, the
#               extension dropped and created again
#   checkpoints another session's checkpoint drops nothing kept; R's next
#               load finds the kept arm_state row version gone and reads the
#               rows again; with a log horizon, maintain() moves rewards into
#               the checkpoint and R still counts them all
#   rollback    a change rolled back (by another session, by R itself) is
#               not seen; one in progress is not seen until it commits, and
#               while its transaction is open R takes no kept rows (the
#               signal's lock, which covers a commit's gap between becoming
#               visible and sending its invalidation)
#   own writes  add_arm() then route() in one transaction scores the new arm
#   snapshots   a REPEATABLE READ snapshot taken before a change keeps not
#               seeing it, and the rows it read are not kept for later
#               transactions; a cursor's older snapshot does not take rows
#               kept under a newer one
#
# Needs PGHOST/PGPORT/PGUSER (a superuser) of a running cluster with
# model_select installed.  Creates the role ms_rowcache_role and drops it.
set -euo pipefail
DB=ms_session_rowcache
ROLE=ms_rowcache_role
MS_ROLES=$ROLE
. "$(dirname "$0")/lib/common.bash"

ms_setup || bail "set-up failed"
q >/dev/null <<SQL || bail "creating the selector failed"
SELECT model_select.create_selector('rc', 4, ARRAY['a','b'], 'lin_ucb');
SELECT setseed(0.41);
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 'rc', (ARRAY['a','b'])[1 + g % 2], ms_rand(4), random() FROM generate_series(1, 40) g;
-- what the checks compare: every arm at one probe, as one line (STABLE: a
-- cursor's snapshot is the one its scores() reads under)
CREATE FUNCTION digest() RETURNS text LANGUAGE sql STABLE AS \$\$
  SELECT string_agg(format('%s %s %s %s %s', arm, active, n, round(radius::numeric, 6),
                           round(alpha::numeric, 6)), '; ' ORDER BY arm)
    FROM model_select.scores('rc', ms_probe(4, 1)) \$\$;
CREATE FUNCTION kept_hits() RETURNS bigint LANGUAGE sql AS
  \$\$ SELECT hits FROM model_select_internal._selector_rows_stats() \$\$;
CREATE ROLE $ROLE NOLOGIN;
SELECT count(*) FROM model_select.setup_role('$ROLE', 'application');
SELECT model_select.grant_selector('rc', '$ROLE', 'route');
SQL

# -- the router session R (rq, same_as_fresh: lib/common.bash) --------------
coproc R { psql -X -q -A -t -v VERBOSITY=verbose -d "$DB" 2>&1; }
MS_BG_PIDS+=("$R_PID")
r_in=${R[1]}
r_out=${R[0]}
route_as_role() {  # route_as_role: one route() as $ROLE in R; prints its arm or the error
    rq "SET ROLE $ROLE; SELECT arm FROM model_select.route('rc', ms_probe(4, 2)); RESET ROLE;"
}
# routes_keep DESC: three route()s in R, at least one of which took kept rows
routes_keep() {
    local h0 h1
    h0=$(rq "SELECT kept_hits();")
    route_as_role >/dev/null
    route_as_role >/dev/null
    route_as_role >/dev/null
    h1=$(rq "SELECT kept_hits();")
    check "$1 (kept rows taken: $h0 -> $h1)" eval '[ -n "$h0" ] && [ -n "$h1" ] && [ "$h1" -gt "$h0" ]'
}

# -- kept --------------------------------------------------------------------
routes_keep "repeated route() calls take the kept rows"
same_as_fresh "R agrees with a fresh session"

# -- privilege ------------------------------------------------------------------
q -c "SELECT model_select.revoke_selector('rc', '$ROLE', 'route')" >/dev/null
out=$(route_as_role)
check "after revoke_selector() by another session R's next route() fails with 42501" \
    eval '[[ "$out" == *42501* ]] || { echo "#   $out"; false; }'
rq "RESET ROLE;" >/dev/null
q -c "SELECT model_select.grant_selector('rc', '$ROLE', 'route')" >/dev/null
out=$(route_as_role)
check "granted again, R's next route() works" eval '[[ "$out" =~ ^[ab]$ ]] || { echo "#   $out"; false; }'
routes_keep "and takes kept rows again"

# -- changes by another session -------------------------------------------------
q -c "SELECT model_select.add_arm('rc', 'c')" >/dev/null
out=$(route_as_role)
check "after add_arm() by another session R's next route() takes the new, untried arm" \
    eval '[ "$out" = c ] || { echo "#   $out"; false; }'
same_as_fresh "and R's scores() lists it"
routes_keep "then R takes kept rows again"
q -c "SELECT model_select.retire_arm('rc', 'c')" >/dev/null
out=$(route_as_role)
check "after retire_arm() by another session R's next route() no longer takes it" \
    eval '[[ "$out" =~ ^[ab]$ ]] || { echo "#   $out"; false; }'
same_as_fresh "and R's scores() shows it inactive"
routes_keep "then R takes kept rows again"
q -c "SELECT model_select.alter_selector('rc', '{\"alpha\": 3.5}')" >/dev/null
same_as_fresh "alter_selector() by another session: R scores with the new alpha"
routes_keep "then R takes kept rows again"
q -c "SELECT model_select.checkpoint('rc')" >/dev/null
same_as_fresh "checkpoint() by another session"

# -- checkpoints: they do not signal; a take looks up each kept arm_state row version --
routes_keep "then R takes kept rows again"
kept=$(rq "SELECT reads, invalidations FROM model_select_internal._selector_rows_stats();")
IFS='|' read -r r0 i0 <<<"$kept"
q -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
      SELECT 'rc', 'a', ms_rand(4), random() FROM generate_series(1, 5)" \
  -c "SELECT model_select.checkpoint('rc')" >/dev/null
route_as_role >/dev/null
kept=$(rq "SELECT reads, invalidations FROM model_select_internal._selector_rows_stats();")
IFS='|' read -r r1 i1 <<<"$kept"
check "a checkpoint by another session drops nothing kept (invalidations $i0 -> $i1), and R's next route() reads the rows again ($r0 -> $r1)" \
    eval '[ -n "$i0" ] && [ "$i0" = "$i1" ] && [ "$r1" -eq $((r0 + 1)) ]'
routes_keep "then R takes kept rows again"
q -c "SELECT model_select.alter_selector('rc', '{\"retain\": 5}')" >/dev/null
routes_keep "with a horizon of 5 rewards, R takes kept rows again"
q -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
      SELECT 'rc', (ARRAY['a','b'])[1 + g % 2], ms_rand(4), random() FROM generate_series(1, 30) g" \
  -c "SELECT model_select.maintain('rc')" >/dev/null
same_as_fresh "maintain() by another session moved all but 5 rewards of each arm into its checkpoint: R counts them all"
q -c "SELECT model_select.alter_selector('rc', '{\"retain\": 0}')" >/dev/null

# -- rollback, and changes in progress ---------------------------------------------
q -c "BEGIN" -c "SELECT model_select.add_arm('rc', 'd')" -c "ROLLBACK" >/dev/null
routes_keep "an add_arm() rolled back by another session leaves the kept rows current"
same_as_fresh "and R does not see its arm"
session W
say W "BEGIN; SELECT model_select.add_arm('rc', 'e');"
out=$(route_as_role)
check "an add_arm() in progress elsewhere is not taken by R's route()" \
    eval '[[ "$out" =~ ^[ab]$ ]] || { echo "#   $out"; false; }'
same_as_fresh "nor listed by its scores()"
h0=$(rq "SELECT kept_hits();")
route_as_role >/dev/null
route_as_role >/dev/null
h1=$(rq "SELECT kept_hits();")
check "while that writer's transaction is open (it holds the signal's lock) R takes no kept rows ($h0 -> $h1)" \
    eval '[ -n "$h0" ] && [ "$h0" = "$h1" ]'
say W "COMMIT;"
out=$(route_as_role)
check "once it commits, R's next route() takes its untried arm" eval '[ "$out" = e ] || { echo "#   $out"; false; }'
same_as_fresh "and R agrees with a fresh session"

# -- R's own writes ----------------------------------------------------------------
out=$(rq "BEGIN; SELECT model_select.add_arm('rc', 'f'); SELECT arm FROM model_select.route('rc', ms_probe(4, 2));")
out=${out##*$'\n'}  # the route's arm (add_arm()'s void is an empty line before it)
check "add_arm() then route() in one transaction: the route takes the new arm" \
    eval '[ "$out" = f ] || { echo "#   $out"; false; }'
rq "ROLLBACK;" >/dev/null
same_as_fresh "after ROLLBACK R does not see that arm"
out=$(route_as_role)
check "nor does its next route() take it" eval '[[ "$out" =~ ^[abe]$ ]] || { echo "#   $out"; false; }'
out=$(rq "BEGIN; SAVEPOINT s; SELECT model_select.retire_arm('rc', 'e'); SELECT digest() LIKE '%; e f %';
ROLLBACK TO SAVEPOINT s; SELECT digest() LIKE '%; e t %'; COMMIT;")
out=${out#$'\n'}  # retire_arm()'s void
check "a retire_arm() of R's rolled back to a savepoint is seen, then not" \
    eval '[ "$out" = "$(printf "t\nt")" ] || { echo "#   $out"; false; }'

# -- snapshots -------------------------------------------------------------------------
before=$(rq "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT digest();")
q -c "SELECT model_select.add_arm('rc', 'g')" >/dev/null
during=$(rq "SELECT digest();")
check "REPEATABLE READ: an arm added meanwhile is not seen" \
    eval '[ -n "$before" ] && [ "$before" = "$during" ] || { echo "#   $before"; echo "#   $during"; false; }'
rq "COMMIT;" >/dev/null
same_as_fresh "after COMMIT it is seen (the rows read under the old snapshot were not kept)"
# (a transaction ending first: R's snapshot is not the one of its last load,
# which select.c would reuse without a load)
q -c "SELECT txid_current()" >/dev/null
rq "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT 1;" >/dev/null
q -c "SELECT model_select.retire_arm('rc', 'g')" >/dev/null
rq "SELECT digest();" >/dev/null
rq "COMMIT;" >/dev/null
same_as_fresh "a snapshot taken before a retire_arm() whose invalidation its first call processed keeps nothing"
rq "BEGIN; DECLARE c CURSOR FOR SELECT digest() FROM generate_series(1, 2);" >/dev/null
q -c "SELECT model_select.add_arm('rc', 'h')" >/dev/null
now=$(rq "SELECT digest();")
old=$(rq "FETCH 1 FROM c;")
rq "COMMIT;" >/dev/null
check "a cursor's older snapshot does not take the rows kept under a newer one" \
    eval '[[ "$now" == *"; h t "* ]] && [[ "$old" != *"; h "* ]] || { echo "#   now: $now"; echo "#   cursor: $old"; false; }'

# -- a selector dropped and created again with the same name ---------------------------
routes_keep "R keeps rows of the selector"
q -c "SELECT model_select.drop_selector('rc')" \
  -c "SELECT model_select.create_selector('rc', 4, ARRAY['x','y'], 'lin_ucb')" \
  -c "SELECT model_select.grant_selector('rc', '$ROLE', 'route')" >/dev/null
out=$(route_as_role)
check "dropped and created again: R's next route() takes an arm of the new selector" \
    eval '[[ "$out" =~ ^[xy]$ ]] || { echo "#   $out"; false; }'
same_as_fresh "and R agrees with a fresh session"

# -- the extension dropped and created again -------------------------------------------
routes_keep "R keeps rows of the new selector"
q >/dev/null <<SQL || bail "dropping and creating the extension again failed"
DROP EXTENSION model_select CASCADE;
CREATE EXTENSION model_select;
SELECT model_select.create_selector('rc', 4, ARRAY['p','q'], 'lin_ucb');
SELECT count(*) FROM model_select.setup_role('$ROLE', 'application');
SELECT model_select.grant_selector('rc', '$ROLE', 'route');
SQL
out=$(route_as_role)
check "the extension dropped and created again: R's next route() takes an arm of its selector" \
    eval '[[ "$out" =~ ^[pq]$ ]] || { echo "#   $out"; false; }'
same_as_fresh "and R agrees with a fresh session"
routes_keep "and R keeps the rows of the new extension's tables"

exec {r_in}>&-  # R's psql ends with its input
close_sessions
finish
