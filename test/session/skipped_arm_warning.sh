#!/usr/bin/env bash
# An arm whose score is not a number (here: the superuser wrote a NaN into
# its stored sum) is skipped, with one WARNING per statement -- not one per
# routed row: a route_batch() of 1,000 rows and a select_model() over 300
# rows each log exactly one, and the next statement warns again.
#
# Needs PGHOST/PGPORT/PGUSER (a superuser) of a running cluster with
# model_select installed.
set -euo pipefail
DB=ms_session_skipped_arm
. "$(dirname "$0")/lib/common.bash"

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "fixtures failed"
SELECT model_select.create_selector('w', 2, ARRAY['a','b'], 'greedy');
INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('w','a','{1,0}',0.5), ('w','b','{1,0}',0.7);
SELECT model_select.checkpoint('w');
-- arm b's reward sum (the first float8 after the 20-byte header) becomes NaN
UPDATE model_select.arm_state st SET state = overlay(state placing '\x000000000000f87f'::bytea from 21)
  FROM model_select.arms a WHERE a.arm_id = st.arm_id AND a.name = 'b';
SQL

warnings() {  # warnings SQL: the number of WARNING lines the statement(s) log
    q -c "$1" 2>&1 >/dev/null | grep -c '^WARNING:' || true
}
check "arm b's score is NaN (the damage took)" \
    is_true "SELECT mean::text = 'NaN' FROM model_select.scores('w', '{1,0}'::float8[]) WHERE arm = 'b'"
got=$(warnings "SELECT count(*) FROM model_select.route_batch('w', 'SELECT i, ARRAY[1,0]::float8[] FROM generate_series(1, 1000) i')")
check "route_batch() of 1,000 rows: one WARNING (got $got)" test "$got" = 1
got=$(warnings "SELECT count(*) FROM generate_series(1, 300) i WHERE model_select.select_model('w', ARRAY[1, 0]::float8[]) = 'a'")
check "select_model() over 300 rows: one WARNING (got $got)" test "$got" = 1
got=$(q -c "SELECT count(*) FROM generate_series(1, 300) i WHERE model_select.select_model('w', ARRAY[1, 0]::float8[]) = 'a'" 2>/dev/null)
check "... and every row is routed to the usable arm a" test "$got" = 300
got=$(q -c "SELECT model_select.select_model('w', ARRAY[1, 0]::float8[])" \
        -c "SELECT model_select.select_model('w', ARRAY[0, 1]::float8[])" 2>&1 >/dev/null | grep -c '^WARNING:' || true)
check "two statements: one WARNING each (got $got)" test "$got" = 2
finish
