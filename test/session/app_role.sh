#!/usr/bin/env bash
# Issue 14, Must show (g), and issue 11: an application role set up by
# model_select.setup_role(role, 'application') -- USAGE on the schema,
# SELECT on the tables and views (row-level security), INSERT on the two
# logs (+ USAGE on their id sequences) -- and granted route and reward on
# the selector by its owner, routes and rewards (by decision_id, by name,
# and a 60-row INSERT that crosses a checkpoint_threshold of 10, so that a
# checkpoint happens in its statement), and the state equals its rebuild; it
# cannot INSERT, UPDATE, DELETE or TRUNCATE any other table of the schema,
# nor UPDATE, DELETE or TRUNCATE the logs (rewards, cascade_observations),
# nor give their ids (reward_id, obs_id) in an INSERT:
# each attempt fails with 42501 (each in a transaction rolled back,
# UPDATE/DELETE with WHERE false, so nothing changes even when a privilege
# is wrongly there).
#
# Needs PGHOST/PGPORT/PGUSER (a superuser) of a running cluster with
# model_select installed.  Creates the role ms_app_role14 and drops it.
set -euo pipefail
DB=ms_session_app
APP=ms_app_role14
MS_ROLES=$APP
. "$(dirname "$0")/lib/common.bash"

ms_setup || bail "set-up failed"
q >/dev/null <<SQL || bail "creating the selector or the role failed"
SELECT model_select.create_selector('app', 4, ARRAY['a','b'], 'lin_ucb');
CREATE ROLE $APP NOLOGIN;
SELECT count(*) FROM model_select.setup_role('$APP', 'application');
SELECT model_select.grant_selector('app', '$APP', 'route');
SELECT model_select.grant_selector('app', '$APP', 'reward');
SQL

# qa SQL...: psql as the application role (error text on stdout, verbose)
qa() {
    local args=(-c "SET ROLE $APP" -c "SET model_select.checkpoint_threshold = 10") a
    for a in "$@"; do args+=(-c "$a"); done
    psql -X -q -A -t -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -d "$DB" "${args[@]}" 2>&1
}
show_fail() { echo "$1" | head -n 3 | sed 's/^/#   /'; return 1; }

out=$(qa "SELECT decision_id FROM model_select.route('app', ARRAY[0.1, 0.2, 0.3, 0.4]::float8[])") &&
    [[ "$out" =~ ^[0-9]+$ ]] && did=$out || { did=; }
check "the role routes: route() returns a decision" eval '[ -n "$did" ] || show_fail "$out"'
out=$(qa "SELECT model_select.select_model('app', ARRAY[0.1, 0.2, 0.3, 0.4]::float8[])") || true
check "the role calls select_model()" eval '[[ "$out" =~ ^(a|b)$ ]] || show_fail "$out"'
out=$(qa "SELECT count(*) FROM model_select.scores('app', ARRAY[0.1, 0.2, 0.3, 0.4]::real[])") || true
check "the role calls scores()" eval '[ "$out" = 2 ] || show_fail "$out"'
if [ -n "$did" ]; then
    out=$(qa "INSERT INTO model_select.rewards(decision_id, reward) VALUES ($did, 0.7)") && rc=0 || rc=$?
    check "the role rewards its decision by decision_id" eval '[ "$rc" = 0 ] || show_fail "$out"'
else
    skip "the role rewards its decision by decision_id" "route() failed"
fi
out=$(qa "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('app', 'b', ARRAY[1, 0, 0, 1]::float8[], 0.3)") && rc=0 || rc=$?
check "the role rewards by (selector, arm, context)" eval '[ "$rc" = 0 ] || show_fail "$out"'
out=$(qa "INSERT INTO model_select.rewards(selector, arm, context, reward)
          SELECT 'app', (ARRAY['a','b'])[1 + g % 2], ARRAY[sin(g), cos(g), g % 3, 1]::float8[], (g % 10) / 10.0
            FROM generate_series(1, 60) g") && rc=0 || rc=$?
check "the role inserts 60 rewards in one statement (past checkpoint_threshold 10)" \
    eval '[ "$rc" = 0 ] || show_fail "$out"'
echo "# rewards in the log: $(q -c 'SELECT count(*) FROM model_select.rewards')"
rebuild_checks app

# -- no write on any table but the log's INSERT --------------------------------------
denied() {  # denied STATEMENT: fails with 42501, run in a rolled-back transaction
    local o
    o=$(psql -X -q -A -t -v VERBOSITY=verbose -d "$DB" -c "SET ROLE $APP" -c "BEGIN" -c "$1" -c "ROLLBACK" 2>&1)
    grep -q 'ERROR:  42501' <<<"$o" || { echo "#   $1: $(grep -m 1 ERROR <<<"$o" || echo succeeded)"; return 1; }
}
# the ids come from the sequences only: an id given ahead of its sequence
# would make another role's next insert fail with 23505
check "rewards: an INSERT giving reward_id fails with 42501" denied \
    "INSERT INTO model_select.rewards(reward_id, selector, arm, context, reward)
     VALUES (nextval('model_select.rewards_reward_id_seq') + 5, 'app', 'a', ARRAY[1, 0, 0, 1]::float8[], 0.5)"
check "cascade_observations: an INSERT giving obs_id fails with 42501" denied \
    "INSERT INTO model_select.cascade_observations(obs_id, selector, arm, context, value, cost)
     VALUES (nextval('model_select.cascade_observations_obs_id_seq') + 5, 'app', 'a', ARRAY[1, 0, 0, 1]::float8[], 0.5, 0.1)"
out=$(qa "INSERT INTO model_select.rewards(selector, arm, context, reward, cost, created_at)
          VALUES ('app', 'a', ARRAY[0, 1, 0, 1]::float8[], 0.4, 0.2, now() - interval '1 day')") && rc=0 || rc=$?
check "the role rewards with a cost and an explicit created_at (back-filling)" eval '[ "$rc" = 0 ] || show_fail "$out"'

tables=$(q -c "SELECT c.relname FROM pg_class c WHERE c.relnamespace = 'model_select'::regnamespace
                 AND c.relkind IN ('r', 'p') ORDER BY 1")
for t in $tables; do
    col=$(q -c "SELECT quote_ident(attname) FROM pg_attribute WHERE attrelid = 'model_select.$t'::regclass
                 AND attnum > 0 AND NOT attisdropped ORDER BY attnum LIMIT 1")
    ops=()
    log=0; [ "$t" = rewards ] || [ "$t" = cascade_observations ] && log=1
    [ "$log" = 0 ] && ops+=("INSERT INTO model_select.$t DEFAULT VALUES")
    ops+=("UPDATE model_select.$t SET $col = $col WHERE false"
          "DELETE FROM model_select.$t WHERE false"
          "TRUNCATE model_select.$t")
    all_denied() { local o2 ok=0; for o2 in "${ops[@]}"; do denied "$o2" || ok=1; done; return $ok; }
    if [ "$log" = 1 ]; then
        check "$t: UPDATE, DELETE and TRUNCATE by the role fail with 42501" all_denied
    else
        check "$t: INSERT, UPDATE, DELETE and TRUNCATE by the role fail with 42501" all_denied
    fi
done

# Diagnostic only (no test lines): when the role could not route or reward,
# which further privilege the code path needs -- grant read access to the
# schema's tables and INSERT on decisions and retry.
if [ "$failed" -ne 0 ]; then
    q -c "GRANT SELECT ON ALL TABLES IN SCHEMA model_select TO $APP" \
      -c "GRANT INSERT ON model_select.decisions TO $APP" \
      -c "GRANT USAGE ON ALL SEQUENCES IN SCHEMA model_select TO $APP" >/dev/null
    echo "# diagnostic, with SELECT on every table, INSERT on decisions, USAGE on every sequence added:"
    for stmt in "SELECT decision_id FROM model_select.route('app', ARRAY[0.1, 0.2, 0.3, 0.4]::float8[])" \
                "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('app', 'b', ARRAY[1, 0, 0, 1]::float8[], 0.3)"; do
        o=$(qa "$stmt") && echo "#   ${stmt:0:40}...: ok" || echo "#   ${stmt:0:40}...: $(grep -m 1 ERROR <<<"$o")"
    done
fi
finish
