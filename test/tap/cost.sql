-- Cost-aware utility: with cost_weight λ every policy learns reward − λ·cost;
-- alter_selector() changes settings and re-derives the state from the log.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(15);

CREATE TEMP TABLE data AS
SELECT round, context, reward[1] AS reward, (round % 7) / 10.0 AS cost
  FROM model_select.synthetic_clusters(120, 6, 2, NULL, 41);
CREATE TEMP TABLE probes AS SELECT round AS probe, context FROM model_select.synthetic_clusters(20, 6, 2, NULL, 42);

-- 'u' learns with λ = 0.4 from (reward, cost); 'ref' learns λ = 0 from reward − 0.4·cost directly.
SELECT lives_ok($$SELECT model_select.create_selector('u', 6, ARRAY['a'], 'pak_ucb', NULL,
                    '{"cost_weight": 0.4, "reward_min": -1}')$$, 'pak_ucb selector with cost_weight 0.4');
SELECT lives_ok($$SELECT model_select.create_selector('ref', 6, ARRAY['a'], 'pak_ucb', NULL, '{"reward_min": -1}')$$,
                'reference selector without cost');
INSERT INTO model_select.rewards(selector, arm, context, reward, cost) SELECT 'u', 'a', context, reward, cost FROM data ORDER BY round;
INSERT INTO model_select.rewards(selector, arm, context, reward) SELECT 'ref', 'a', context, reward - 0.4 * cost FROM data ORDER BY round;

CREATE FUNCTION pg_temp.max_diff(a text, b text) RETURNS float8 LANGUAGE sql AS $$
    SELECT max(greatest(abs(x.mean - y.mean), abs(x.width - y.width)))
      FROM probes p CROSS JOIN LATERAL model_select.scores(a, p.context) x
                    CROSS JOIN LATERAL model_select.scores(b, p.context) y
$$;
SELECT cmp_ok(pg_temp.max_diff('u', 'ref'), '<', 1e-9::float8,
              'pak_ucb with cost_weight learns reward - λ·cost (equal to learning the utility directly)');
SELECT is((SELECT round(mean_reward::numeric, 12) FROM model_select.arm_stats WHERE selector = 'u'),
          (SELECT round(avg(reward)::numeric, 12) FROM data), 'arm_stats still reports the mean reward');
SELECT is((SELECT round(mean_cost::numeric, 12) FROM model_select.arm_stats WHERE selector = 'u'),
          (SELECT round(avg(cost)::numeric, 12) FROM data), 'and the mean cost');

-- alter_selector: λ -> 0 re-derives the state from the log
SELECT is(model_select.alter_selector('u', '{"cost_weight": 0}'), 120::bigint, 'alter_selector re-applies the 120 rewards');
SELECT is((SELECT settings->>'cost_weight' FROM model_select.selectors WHERE name = 'u'), '0', 'the new setting is stored');
SELECT lives_ok($$SELECT model_select.create_selector('plain', 6, ARRAY['a'], 'pak_ucb', NULL, '{"reward_min": -1}')$$, 'plain selector');
INSERT INTO model_select.rewards(selector, arm, context, reward) SELECT 'plain', 'a', context, reward FROM data ORDER BY round;
SELECT cmp_ok(pg_temp.max_diff('u', 'plain'), '<', 1e-9::float8, 'after alter_selector the state is that of λ = 0');

CREATE TEMP TABLE u_settings AS SELECT settings, settings_version FROM model_select.selectors WHERE name = 'u';
SELECT throws_ok($$SELECT model_select.alter_selector('u', '{"alpha": -1}')$$, '22023', NULL, 'an invalid setting is refused');
SELECT is((SELECT (settings, settings_version)::text FROM model_select.selectors WHERE name = 'u'),
          (SELECT (settings, settings_version)::text FROM u_settings), '... and changes nothing');
SELECT throws_ok($$SELECT model_select.alter_selector('nope', '{}')$$, '42704', NULL, 'unknown selector');

-- Routing by utility (replay): arm 2 is better on its cluster but costs 20× more.
CREATE TEMP TABLE two AS
SELECT context, reward, ARRAY[0.05, 1.0]::float8[] AS costs, expected FROM model_select.synthetic_clusters(2000, 16, 2, NULL, 11, 0.1);
CREATE TEMP TABLE runs AS
SELECT lambda, r.* FROM unnest(ARRAY[0, 0.5]::float8[]) lambda,
       LATERAL model_select.replay('SELECT context, reward, costs, expected FROM two', 'pak_ucb',
                                   settings => '{"reward_min": -1}', seed => 3, cost_weight => lambda) r
 WHERE r.round = 2000;
SELECT cmp_ok((SELECT picks[2]::float8 / 2000 FROM runs WHERE lambda = 0), '>', 0.4::float8,
              'λ = 0: the dear arm gets its cluster (more than 40% of picks)');
SELECT cmp_ok((SELECT picks[1]::float8 / 2000 FROM runs WHERE lambda = 0.5), '>', 0.9::float8,
              'λ = 0.5: the cheap arm gets more than 90% of picks');
SELECT is((SELECT cum_utility FROM model_select.replay('SELECT context, reward, costs, expected FROM two', 'pak_ucb',
                                  settings => '{"reward_min": -1, "cost_weight": 0.5}', seed => 3) WHERE round = 2000),
          (SELECT cum_utility FROM runs WHERE lambda = 0.5),
          'replay takes the cost weight from the settings as from its argument');

SELECT * FROM finish();
ROLLBACK;
