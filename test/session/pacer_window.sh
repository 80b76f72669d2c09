#!/usr/bin/env bash
# The budget pacer's window (src/routing/pacer.c): a routing call of a
# selector with a budget reads the selector's newest pending_horizon
# decisions and their rewards, not its whole log.  With a log of 20,000
# decisions, 10,000 of them rewarded (400 times the window of 50), the heap
# blocks of decisions and rewards that one route() reads after the first
# (which folds the log into the arms' models) stay a few.  The query it
# replaced hashed every reward of the log at each call (about 70 blocks
# here; 14 ms a call with 50,000 rewards).  Its counts are checked by
# test/tap/budget.sql, count_pending.sql and replay_feedback.sql (live
# selectors against replay()), and here against the same count in SQL.
set -euo pipefail
DB=ms_session_pacer_window
. "$(dirname "$0")/lib/common.bash"

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selectors and their log failed"
SELECT model_select.create_selector('paced', 4, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL,
                                    '{"budget": 0.5, "pending_horizon": 50}', 1);
SELECT model_select.create_selector('other', 4, ARRAY['a', 'b'], 'lin_ucb', NULL, '{}', 2);
-- 20,000 decisions of each selector, one a second, logged in their order as route() logs them
INSERT INTO model_select.decisions(selector_id, arm_id, context, score, created_at)
SELECT s.selector_id, a.arm_id, ARRAY[random(), random(), random(), random()], 0,
       now() - make_interval(secs => 20000 - g)
  FROM generate_series(1, 20000) g
  JOIN model_select.selectors s ON true
  JOIN model_select.arms a ON a.selector_id = s.selector_id AND a.ordinal = 1 + g % 2
 ORDER BY g, s.selector_id;
-- a reward with a cost for every other one of paced's, and the newest 30 left waiting
INSERT INTO model_select.rewards(decision_id, reward, cost)
SELECT decision_id, random(), 0.2 + arm_id % 3 * 0.3
  FROM model_select.decisions
 WHERE selector_id = (SELECT selector_id FROM model_select.selectors WHERE name = 'paced')
   AND decision_id % 4 = 1
   AND decision_id < (SELECT max(decision_id) - 60 FROM model_select.decisions);
VACUUM ANALYZE model_select.decisions, model_select.rewards;
SQL

# blocks fetched by the second of two route() calls in one transaction
read -r dblocks rblocks <<<"$(q -F ' ' <<'SQL'
BEGIN;
SELECT FROM model_select.route('paced', ARRAY[0.1, 0.2, 0.3, 0.4]);
CREATE TEMP TABLE before AS
SELECT pg_stat_get_xact_blocks_fetched('model_select.decisions'::regclass) AS d,
       pg_stat_get_xact_blocks_fetched('model_select.rewards'::regclass) AS r;
SELECT FROM model_select.route('paced', ARRAY[0.4, 0.3, 0.2, 0.1]);
SELECT pg_stat_get_xact_blocks_fetched('model_select.decisions'::regclass) - d,
       pg_stat_get_xact_blocks_fetched('model_select.rewards'::regclass) - r FROM before;
COMMIT;
SQL
)"
check "a paced route() reads at most 10 blocks of rewards ($rblocks)" eval '[ -n "$rblocks" ] && [ "$rblocks" -le 10 ]'
check "and at most 10 blocks of decisions ($dblocks)" eval '[ -n "$dblocks" ] && [ "$dblocks" -le 10 ]'

# what the pacer counted: the decision's logged cost weight, recomputed from
# an independent count of the window in SQL (pacer.c's formula: λ = max(0,
# λ̄ + scale · (C − B·N) / (pace · B)), C and N the rewarded spend plus each
# waiting decision of the window at its arm's mean cost, λ̄ the mean λ the
# window's decisions logged, each at most the scale; the default pace 1,000)
q >/dev/null <<'SQL' || bail "routing once more failed"
CREATE TABLE last AS SELECT * FROM model_select.route('paced', ARRAY[0.2, 0.2, 0.2, 0.2]);
SQL
got=$(q -c "SELECT d.cost_weight FROM model_select.decisions d JOIN last USING (decision_id)")
want=$(q <<'SQL'
WITH s AS (SELECT selector_id FROM model_select.selectors WHERE name = 'paced'),
w AS (SELECT d.decision_id, d.arm_id, d.cost_weight FROM model_select.decisions d, s
       WHERE d.selector_id = s.selector_id AND d.decision_id < (SELECT decision_id FROM last)
       ORDER BY d.created_at DESC, d.decision_id DESC LIMIT 50),
waiting AS (SELECT arm_id, count(*) AS n FROM w
             WHERE NOT EXISTS (SELECT FROM model_select.rewards r WHERE r.decision_id = w.decision_id)
             GROUP BY arm_id),
spent AS (SELECT r.arm_id, sum(r.cost) AS c, count(*) AS n, avg(r.cost) AS mean
            FROM model_select.rewards r, s WHERE r.selector_id = s.selector_id AND r.decision_id IS NOT NULL
           GROUP BY r.arm_id)
SELECT greatest(0, (SELECT coalesce(avg(least(cost_weight, 1 / 0.5)), 0) FROM w)
       + (sum(sp.c + coalesce(wt.n, 0) * sp.mean) - 0.5 * sum(sp.n + coalesce(wt.n, 0))) * 1 / 0.5 / (1000 * 0.5))
  FROM spent sp LEFT JOIN waiting wt USING (arm_id)
SQL
)
check "the logged cost weight ($got) is that of an independent count of the window ($want)" \
    eval '[ -n "$got" ] && awk -v a="$got" -v b="$want" "BEGIN { exit !(a - b < 1e-9 && b - a < 1e-9 && a > 0) }"'
finish
