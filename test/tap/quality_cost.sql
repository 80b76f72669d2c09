-- Quality vs cost: quality_hull()'s hull and AIQ against hand computations,
-- and quality_cost() over replay() on a seeded two-cluster stream.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(14);

-- Set A: (1, 0.5), (2, 0.9), (3, 0.8), max cost 4.  Hull from the origin:
-- (0,0) (1,0.5) (2,0.9), then flat at 0.9 ((3,0.8) lies below).  Area:
-- 0.25 + 0.7 + 2·0.9 = 2.75, AIQ 2.75/4 = 0.6875.
SELECT is(array_agg(ARRAY[cost, quality] ORDER BY cost), ARRAY[[0, 0], [1, 0.5], [2, 0.9]]::float8[],
          'set A: the hull drops the point below it and starts at the origin')
  FROM model_select.quality_hull(ARRAY[1, 2, 3], ARRAY[0.5, 0.9, 0.8], 4);
SELECT cmp_ok(abs((SELECT aiq FROM model_select.quality_hull(ARRAY[1, 2, 3], ARRAY[0.5, 0.9, 0.8], 4) LIMIT 1) - 0.6875),
              '<', 1e-12::float8, 'set A: AIQ = 2.75 / 4 = 0.6875');
-- Set B: (1, 0.2), (2, 0.8), (4, 1.0).  (1,0.2) lies below the chord
-- (0,0)-(2,0.8): hull (0,0) (2,0.8) (4,1).  Up to 4: 0.8 + 1.8 = 2.6, AIQ
-- 0.65; up to 3 (the last segment cut at 3, where it is at 0.9): 0.8 + 0.85
-- = 1.65, AIQ 0.55.
SELECT is(array_agg(ARRAY[cost, quality] ORDER BY cost), ARRAY[[0, 0], [2, 0.8], [4, 1]]::float8[],
          'set B: a point below a chord is not a vertex')
  FROM model_select.quality_hull(ARRAY[4, 1, 2], ARRAY[1.0, 0.2, 0.8], 4);
SELECT cmp_ok(abs((SELECT aiq FROM model_select.quality_hull(ARRAY[4, 1, 2], ARRAY[1.0, 0.2, 0.8], 4) LIMIT 1) - 0.65),
              '<', 1e-12::float8, 'set B: AIQ = 2.6 / 4 = 0.65');
SELECT cmp_ok(abs((SELECT aiq FROM model_select.quality_hull(ARRAY[4, 1, 2], ARRAY[1.0, 0.2, 0.8], 3) LIMIT 1) - 0.55),
              '<', 1e-12::float8, 'set B up to cost 3: AIQ = 1.65 / 3 = 0.55');
SELECT throws_ok($$SELECT * FROM model_select.quality_hull(ARRAY[1, -1], ARRAY[0.5, 0.6], 2)$$, '22023', NULL,
                 'a negative cost is refused');
SELECT throws_ok($$SELECT * FROM model_select.quality_hull(ARRAY[1], ARRAY[0.5, 0.6], 2)$$, '22023', NULL,
                 'arrays of different lengths are refused');

-- quality_cost(): a seeded stream of 2,000 prompts in two clusters; arm 1
-- costs 0.1 and is good on cluster 0 only, arm 2 costs 1.0 and is good on
-- both.  A router that learns the clusters buys arm 2 only for cluster 1.
SELECT setseed(0.31);
CREATE TEMP TABLE stream AS
SELECT i, ARRAY[(k = 0)::int + (random() - 0.5) * 0.2, (k = 1)::int + (random() - 0.5) * 0.2] AS context,
       ARRAY[(random() < CASE k WHEN 0 THEN 0.9 ELSE 0.2 END)::int, (random() < 0.85)::int]::float8[] AS rewards
  FROM (SELECT i, (random() < 0.5)::int AS k FROM generate_series(1, 2000) i) s;
CREATE TEMP TABLE qc AS
SELECT * FROM model_select.quality_cost('SELECT context, rewards, ARRAY[0.1, 1.0]::float8[] FROM stream ORDER BY i',
                                        'lin_ucb', NULL, '{}', '{0, 0.3}', '{0.3, 0.55}', 1);
SELECT is((SELECT array_agg(kind || ' ' || knob ORDER BY kind, knob) FROM qc),
          ARRAY['arm 1', 'arm 2', 'budget 0.3', 'budget 0.55', 'cost_weight 0', 'cost_weight 0.3'],
          'one point per arm and per grid value');
SELECT is((SELECT array_agg(ARRAY[round(cost::numeric, 9), round(quality::numeric, 9)] ORDER BY knob) FROM qc WHERE kind = 'arm'),
          (SELECT array_agg(ARRAY[round(c::numeric, 9), round(q::numeric, 9)] ORDER BY a)
             FROM (SELECT a, (ARRAY[0.1, 1.0])[a] AS c, avg(rewards[a]) AS q FROM stream, generate_series(1, 2) a GROUP BY a) s),
          'the arms'' points are their mean cost and reward');
SELECT cmp_ok((SELECT abs(cost - 0.3) FROM qc WHERE kind = 'budget' AND knob = 0.3), '<', 0.03::float8,
              'the budget 0.3 run spends within 10% of it');
SELECT cmp_ok((SELECT max(aiq) FROM qc WHERE kind <> 'arm'), '>', (SELECT max(aiq) FROM qc WHERE kind = 'arm') + 0.02,
              'the router''s hull lies above the single-arm hull (AIQ larger by 0.02)');
-- at cost 0.55 the arms' hull is at 0.5455 + (0.8435 - 0.5455)·0.45/0.9 ≈ 0.69 on these rows
SELECT cmp_ok((SELECT quality FROM qc WHERE kind = 'budget' AND knob = 0.55), '>',
              (SELECT a1.quality + (a2.quality - a1.quality) * (0.55 - a1.cost) / (a2.cost - a1.cost) + 0.1
                 FROM qc a1, qc a2 WHERE a1.kind = 'arm' AND a1.knob = 1 AND a2.kind = 'arm' AND a2.knob = 2),
              'at the budget 0.55 the router earns 0.1 more than mixing the two arms at that cost');

-- warm: each run warm-started from 500 more scored prompts with their costs,
-- as replay(..., warm => ...) (the warm costs are no spend)
CREATE TEMP TABLE warm AS
SELECT ARRAY[(k = 0)::int + (random() - 0.5) * 0.2, (k = 1)::int + (random() - 0.5) * 0.2] AS context,
       ARRAY[(random() < CASE k WHEN 0 THEN 0.9 ELSE 0.2 END)::int, (random() < 0.85)::int]::float8[] AS rewards,
       ARRAY[0.1, 1.0]::float8[] AS costs
  FROM (SELECT (random() < 0.5)::int AS k FROM generate_series(1, 500) i) s;
CREATE TEMP TABLE qw AS
SELECT * FROM model_select.quality_cost('SELECT context, rewards, ARRAY[0.1, 1.0]::float8[] FROM stream ORDER BY i',
                                        'lin_ucb', NULL, '{}', NULL, '{0.3}', 1, warm => 'SELECT * FROM warm');
SELECT is((SELECT ARRAY[cost, quality] FROM qw WHERE kind = 'budget'),
          (SELECT ARRAY[cum_cost / round, cum_reward / round] FROM model_select.replay(
              'SELECT context, rewards, ARRAY[0.1, 1.0]::float8[] FROM stream ORDER BY i', 'lin_ucb', NULL,
              '{"budget": 0.3}', 1, 0, NULL, 1, NULL, true, 'SELECT * FROM warm') ORDER BY round DESC LIMIT 1),
          'quality_cost(..., warm) is replay(..., warm => ...) at each grid point');
SELECT cmp_ok((SELECT abs(cost - 0.3) FROM qw WHERE kind = 'budget'), '<', 0.006::float8,
              'warm-started, the budget 0.3 run spends within 2% of it');

SELECT * FROM finish();
ROLLBACK;
