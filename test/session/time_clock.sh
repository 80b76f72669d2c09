#!/usr/bin/env bash
# The time clock ("clock": "time") across transactions, where now() moves:
# an arm ages with no new reward (a window of 4 seconds empties after 5 s of
# sleep), a transaction sees one model throughout (now() is its timestamp),
# and a backend's cached model is reused while no row expires (the decode
# counter of cache_stats() stays) but rebuilt once one does.
#
# Needs PGHOST/PGPORT/PGUSER of a running cluster with model_select installed.
set -euo pipefail
DB=ms_session_time
. "$(dirname "$0")/lib/common.bash"

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selectors failed"
SELECT model_select.create_selector('short', 2, ARRAY['a','b'], 'greedy', NULL, '{"clock": "time", "window": "4 seconds"}');
SELECT model_select.create_selector('day', 2, ARRAY['a','b'], 'lin_ucb', NULL, '{"clock": "time", "window": "1 day"}');
INSERT INTO model_select.rewards(selector, arm, context, reward, created_at)
SELECT 'day', (ARRAY['a','b'])[1 + g % 2], ARRAY[sin(g), cos(g)], (1 + sin(3 * g)) / 2, now() - make_interval(mins => g)
  FROM generate_series(1, 60) g ORDER BY g DESC;
SQL

# One session, one transaction per statement: now() moves between them.
out=$(q <<'SQL'
INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('short', 'a', '{1,0}', 1);
SELECT 'fresh=' || mean FROM model_select.scores('short', '{1,0}'::float8[]) WHERE arm = 'a';
SELECT 'd0=' || decodes FROM model_select.cache_stats();
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT 'tx1=' || mean FROM model_select.scores('short', '{1,0}'::float8[]) WHERE arm = 'a';
SELECT pg_sleep(5);
SELECT 'tx2=' || mean FROM model_select.scores('short', '{1,0}'::float8[]) WHERE arm = 'a';
COMMIT;
SELECT 'aged=' || mean FROM model_select.scores('short', '{1,0}'::float8[]) WHERE arm = 'a';
SELECT 'd1=' || decodes FROM model_select.cache_stats();
SELECT 'day1=' || string_agg(arm || ':' || mean || ':' || width, ' ' ORDER BY arm) FROM model_select.scores('day', '{0.6,0.8}'::float8[]);
SELECT 'd2=' || decodes FROM model_select.cache_stats();
SELECT pg_sleep(1.1);
SELECT 'day2=' || string_agg(arm || ':' || mean || ':' || width, ' ' ORDER BY arm) FROM model_select.scores('day', '{0.6,0.8}'::float8[]);
SELECT 'd3=' || decodes FROM model_select.cache_stats();
SQL
) || bail "the session failed"
val() { printf '%s\n' "$out" | sed -n "s/^$1=//p"; }
echo "#   $(printf '%s' "$out" | tr '\n' ' ')"

check "a reward 0 s old is in a window of 4 seconds" [ "$(val fresh)" = 1 ]
check "a transaction sees one model: still learned after sleeping 5 s inside it" \
    [ "$(val tx1)" = 1 -a "$(val tx2)" = 1 ]
check "after 5 s with no new reward the arm is unlearned again (it aged)" [ "$(val aged)" = Infinity ]
check "its model was rebuilt for that (the decode counter moved)" [ "$(val d1)" -gt "$(val d0)" ]
check "a 1-day window 1 s later: the same scores" [ -n "$(val day1)" -a "$(val day1)" = "$(val day2)" ]
check "and no arm was decoded again (no row expired)" [ "$(val d3)" -eq "$(val d2)" ]
check "rebuild_state agrees that a has aged" \
    is_true "SELECT model_select.rebuild_state('short') = 1 AND (SELECT mean = 'Infinity' FROM model_select.scores('short', '{1,0}'::float8[]) WHERE arm = 'a')"
finish
