-- model_select.stats and stats_reset(): after a mixed workload (route(),
-- route_batch(log => true), select_model() which logs nothing, rewards by
-- decision and by context, with and without costs, a warm start) every
-- arm's counts and sums equal those of the logs; a reset zeroes one
-- selector's and no other's, and later rows count again.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(10);

SELECT model_select.create_selector('s1', 4, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL, '{}', 1);
SELECT model_select.create_selector('s2', 4, ARRAY['x', 'y'], 'greedy', NULL, '{}', 2);
CREATE TEMP TABLE stream AS SELECT * FROM model_select.synthetic_clusters(120, 4, 3, NULL, 9, 0.1);

-- the workload, twice: before and after the reset
CREATE FUNCTION pg_temp.workload(k int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    CREATE TEMP TABLE routed ON COMMIT DROP AS
    SELECT st.round, st.reward, (model_select.route(s.name, st.context)).*
      FROM stream st CROSS JOIN (VALUES ('s1'), ('s2')) s(name) WHERE st.round % 3 = k;
    PERFORM model_select.select_model('s1', context) FROM stream;
    -- rewards by decision: every other one with a cost
    INSERT INTO model_select.rewards(decision_id, reward, cost)
    SELECT decision_id, reward[1], CASE WHEN round % 2 = 0 THEN 0.01 * round END
      FROM pg_temp.routed WHERE round % 4 <> 0;
    -- rewards by (selector, arm, context), without a decision
    INSERT INTO model_select.rewards(selector, arm, context, reward, cost)
    SELECT 's1', 'b', context, reward[2], 0.5 FROM stream WHERE round % 7 = k;
    PERFORM * FROM model_select.route_batch('s2', format(
        'SELECT round, context FROM stream WHERE round %% 5 = %s', k), log => true);
    DROP TABLE pg_temp.routed;
END $$;

-- what the logs say, since the marks in stats_resets
CREATE VIEW pg_temp.from_logs AS
SELECT s.name AS selector, a.name AS arm,
       (SELECT count(*) FROM model_select.decisions d
         WHERE d.arm_id = a.arm_id AND d.decision_id > coalesce(rs.decision_id, 0)) AS decisions,
       (SELECT count(*) FROM model_select.rewards r
         WHERE r.arm_id = a.arm_id AND r.reward_id > coalesce(rs.reward_id, 0)) AS rewards,
       (SELECT coalesce(sum(r.reward), 0) FROM model_select.rewards r
         WHERE r.arm_id = a.arm_id AND r.reward_id > coalesce(rs.reward_id, 0)) AS reward_sum,
       (SELECT coalesce(sum(r.cost), 0) FROM model_select.rewards r
         WHERE r.arm_id = a.arm_id AND r.reward_id > coalesce(rs.reward_id, 0)) AS cost_sum
  FROM model_select.selectors s JOIN model_select.arms a USING (selector_id)
  LEFT JOIN model_select.stats_resets rs USING (selector_id);

SELECT pg_temp.workload(0);
SELECT model_select.warm_start('s1', 'SELECT context, reward FROM stream WHERE round <= 10');

SELECT cmp_ok((SELECT min(decisions) FROM model_select.stats), '>', 0::bigint,
              'the workload gave every arm decisions');
SELECT set_eq($$SELECT selector, arm, decisions, rewards, reward_sum, cost_sum FROM model_select.stats$$,
              $$SELECT * FROM pg_temp.from_logs$$,
              'stats: decisions, rewards and sums of every arm equal the logs''');
SELECT is((SELECT sum(decisions)::bigint FROM model_select.stats),
          (SELECT count(*) FROM model_select.decisions), 'every decision counted once');
SELECT is((SELECT sum(rewards)::bigint FROM model_select.stats),
          (SELECT count(*) FROM model_select.rewards), 'every reward counted once');
SELECT ok((SELECT bool_and(last_reward IS NOT NULL AND last_decision IS NOT NULL AND stats_reset IS NULL)
             FROM model_select.stats), 'last decision and reward times; never reset');

SELECT isnt(model_select.stats_reset('s1'), NULL, 'stats_reset(''s1'') returns its time');
SELECT is((SELECT array_agg(decisions + rewards + reward_sum + cost_sum) FROM model_select.stats WHERE selector = 's1'),
          ARRAY[0, 0, 0]::float8[], 'the reset zeroes s1''s counts and sums');
SELECT set_eq($$SELECT selector, arm, decisions, rewards, reward_sum, cost_sum FROM model_select.stats
                 WHERE selector = 's2'$$,
              $$SELECT * FROM pg_temp.from_logs WHERE selector = 's2' AND decisions > 0$$,
              '... and leaves s2''s as they were');

SELECT pg_temp.workload(1);
SELECT set_eq($$SELECT selector, arm, decisions, rewards, reward_sum, cost_sum FROM model_select.stats$$,
              $$SELECT * FROM pg_temp.from_logs$$,
              'after more work, stats count the rows since the reset, as the logs say');
SELECT throws_ok($$SELECT model_select.stats_reset('nope')$$, '42704', NULL, 'an unknown selector: 42704');

SELECT * FROM finish();
ROLLBACK;
