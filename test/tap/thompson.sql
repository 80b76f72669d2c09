-- exploration thompson: each learned arm's ucb is a draw mean + eta·width·ξ
-- from its posterior at the context, ξ a hash of (seed, context, arm, n)
-- (src/routing/decide.c); it learns, and every entry point draws the same.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(8);

SELECT is(model_select.resolve_settings('lin_ucb', NULL, '{"exploration": "thompson"}')->>'exploration', 'thompson',
          'lin_ucb takes exploration thompson');
SELECT is(model_select.resolve_settings('rff_ucb', NULL, '{}')->>'exploration', 'ucb', 'the default is ucb');
SELECT throws_ok($$SELECT model_select.resolve_settings('greedy', NULL, '{"exploration": "thompson"}')$$,
                 '22023', NULL, 'greedy has no width to sample');
SELECT throws_ok($$SELECT model_select.resolve_settings('pak_ucb', NULL, '{"exploration": "thompson", "confidence": "ay"}')$$,
                 '22023', NULL, 'a confidence radius is an upper bound, not a posterior scale');

-- learning: the optimal-pick ratio in rounds 2,001-3,000 of a seeded
-- three-cluster stream (ucb reaches 0.999 there)
CREATE TEMP TABLE ts AS
SELECT * FROM model_select.replay(
    'SELECT context, reward, NULL::float8[], expected FROM model_select.synthetic_clusters(3000, 8, 3, NULL, 7) ORDER BY round',
    'lin_ucb', NULL, '{"exploration": "thompson"}', 1, 0, NULL, 1, 1000);
SELECT cmp_ok((SELECT opr_window FROM ts WHERE round = 3000), '>=', 0.9::float8,
              'thompson learns the clusters: optimal picks >= 0.9 in rounds 2,001-3,000');
SELECT cmp_ok((SELECT opr_window FROM ts WHERE round = 1000), '<', 0.95::float8,
              'and explores more than ucb early on (below 0.95 in the first 1,000 rounds)');

-- live: select_model, scores and route_batch draw the same
SELECT model_select.create_selector('t', 8, ARRAY['a', 'b', 'c'], 'rff_ucb', NULL,
                                    '{"exploration": "thompson", "features": 32}');
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 't', (ARRAY['a', 'b', 'c'])[1 + round % 3], context, reward[1 + round % 3]
  FROM model_select.synthetic_clusters(90, 8, 3, NULL, 3);
CREATE TEMP TABLE probes AS SELECT round AS key, context FROM model_select.synthetic_clusters(200, 8, 3, NULL, 4);
SELECT is_empty($$SELECT p.key FROM probes p
                   JOIN model_select.route_batch('t', 'SELECT key, context FROM probes') b USING (key)
                  WHERE b.arm <> model_select.select_model('t', p.context)$$,
                'route_batch draws what select_model draws');
SELECT is_empty($$SELECT p.key FROM probes p
                  WHERE model_select.select_model('t', p.context) <>
                        (SELECT arm FROM model_select.scores('t', p.context) ORDER BY ucb DESC LIMIT 1)$$,
                'select_model picks the largest draw that scores() shows');

SELECT * FROM finish();
ROLLBACK;
