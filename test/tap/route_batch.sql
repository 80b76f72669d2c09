-- route_batch(): the same choices as select_model() row by row, and the
-- scores of scores() (to 1e-9), for every policy and the bounds that score
-- differently (fixed, ay, dmm, cmm) with and without forgetting; for
-- lin_ucb, rff_ucb and pak_ucb bit for bit (a block is scored with the row
-- path's arithmetic, not a BLAS kernel chosen by CPU); prompts repeated in order
-- scored as each alone; blocks larger and smaller than one batch of 256
-- rows; the decision log of log => true; bad sources.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(45);

CREATE TABLE pg_temp.kinds (name text, policy text, kernel text, settings jsonb);
INSERT INTO pg_temp.kinds VALUES
    ('b_pak', 'pak_ucb', 'rbf', '{}'),
    ('b_pak_dmm', 'pak_ucb', 'matern', '{"confidence": "dmm"}'),
    ('b_pak_cmm', 'pak_ucb', 'rbf', '{"confidence": "cmm"}'),
    ('b_pak_win', 'pak_ucb', 'laplacian', '{"window": 40}'),
    ('b_rff', 'rff_ucb', 'rbf', '{"features": 32}'),
    ('b_rff_disc', 'rff_ucb', 'rbf', '{"features": 16, "discount": 0.97}'),
    ('b_rff_igp', 'rff_ucb', 'rbf', '{"features": 16, "confidence": "igp"}'),
    ('b_pak_ay', 'pak_ucb', 'poly', '{"confidence": "ay"}'),
    -- alpha 1, intercept 1, eta 0.5 (lin_ucb's defaults before 0.3.0): with its own (alpha 20,
    -- intercept 10, eta 1) two arms win every prompt of this short log and test 15 is vacuous
    ('b_lin', 'lin_ucb', NULL, '{"alpha": 1, "intercept": 1, "eta": 0.5, "noise_prior": 0}'),
    ('b_lin_ay', 'lin_ucb', NULL, '{"confidence": "ay", "cost_weight": 0.5}'),
    ('b_bkb', 'bkb', 'rbf', '{}'),
    ('b_greedy', 'greedy', NULL, '{}'),
    ('b_random', 'random', NULL, '{}');
SELECT model_select.create_selector(name, 4, ARRAY['a', 'b', 'c'], policy, kernel, settings, 5)
  FROM pg_temp.kinds ORDER BY name;

CREATE TABLE pg_temp.prompts AS
SELECT i AS id, ARRAY[sin(i), cos(1.3 * i), sin(0.7 * i), cos(0.2 * i)]::float8[] AS e
  FROM generate_series(1, 600) i;
-- 150 rewards per selector over arms a and b only: c stays untried (+Infinity, ties)
INSERT INTO model_select.rewards(selector, arm, context, reward, cost)
SELECT k.name, CASE WHEN p.id % 2 = 0 THEN 'a' ELSE 'b' END, p.e,
       (1 + sin(p.id * 0.37 + length(k.name))) / 2, 0.1 * (p.id % 3)
  FROM pg_temp.kinds k, pg_temp.prompts p WHERE p.id <= 150 ORDER BY p.id, k.name;
-- a second selector with every arm tried, so that c does not win everything
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT k.name, 'c', p.e, 0.3 FROM pg_temp.kinds k, pg_temp.prompts p
 WHERE p.id BETWEEN 151 AND 160 AND k.name IN ('b_pak', 'b_rff', 'b_lin', 'b_bkb', 'b_greedy');

-- per selector: rows, choices that differ from select_model, scores that differ from scores()
CREATE FUNCTION pg_temp.compare(sel text, source text DEFAULT 'SELECT id, e FROM pg_temp.prompts ORDER BY id')
RETURNS TABLE (nrows bigint, other_arm bigint, other_score bigint)
LANGUAGE sql AS $$
    SELECT count(*),
           count(*) FILTER (WHERE r.arm <> model_select.select_model(sel, p.e)),
           count(*) FILTER (WHERE NOT (s.ucb IS NOT DISTINCT FROM r.score OR abs(s.ucb - r.score) <= 1e-9 * greatest(1, abs(s.ucb)))
                               OR NOT (s.mean IS NOT DISTINCT FROM r.mean OR abs(s.mean - r.mean) <= 1e-9 * greatest(1, abs(s.mean)))
                               OR NOT (s.width IS NOT DISTINCT FROM r.width OR abs(s.width - r.width) <= 1e-9 * greatest(1, abs(s.width))))
      FROM model_select.route_batch(sel, source) r
      JOIN pg_temp.prompts p ON p.id = r.key
      JOIN LATERAL model_select.scores(sel, p.e) s ON s.arm = r.arm
$$;
-- the same, counting any difference in the last bit
CREATE FUNCTION pg_temp.differ_bits(sel text, source text DEFAULT 'SELECT id, e FROM pg_temp.prompts ORDER BY id')
RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FILTER (WHERE r.arm <> model_select.select_model(sel, p.e) OR s.ucb IS DISTINCT FROM r.score
                               OR s.mean IS DISTINCT FROM r.mean OR s.width IS DISTINCT FROM r.width)
      FROM model_select.route_batch(sel, source) r
      JOIN pg_temp.prompts p ON p.id = r.key
      JOIN LATERAL model_select.scores(sel, p.e) s ON s.arm = r.arm
$$;
SELECT is(c.nrows || ' rows, ' || c.other_arm || ' other choices, ' || c.other_score || ' other scores',
          '600 rows, 0 other choices, 0 other scores',
          'route_batch(' || k.name || ') = select_model() and scores() row by row (1e-9)')
  FROM pg_temp.kinds k, LATERAL pg_temp.compare(k.name) c ORDER BY k.name;

SELECT is(pg_temp.differ_bits(name), 0::bigint, 'route_batch(' || name || ') = scores() bit for bit')
  FROM unnest(ARRAY['b_lin', 'b_lin_ay', 'b_rff', 'b_rff_disc',
                    'b_pak', 'b_pak_dmm', 'b_pak_cmm', 'b_pak_win', 'b_pak_ay', 'b_bkb']) name;
-- each prompt three times in a row: scored once, as it is alone
SELECT is(pg_temp.differ_bits(name, 'SELECT id, e FROM pg_temp.prompts, generate_series(1, 3) ORDER BY id'),
          0::bigint, 'route_batch(' || name || ') of prompts repeated in order = scores() bit for bit')
  FROM unnest(ARRAY['b_lin', 'b_rff']) name;
SELECT is(c.nrows || ' rows, ' || c.other_arm || ' other choices, ' || c.other_score || ' other scores',
          '1800 rows, 0 other choices, 0 other scores',
          'route_batch(b_pak) of prompts repeated in order = select_model() and scores() (1e-9)')
  FROM pg_temp.compare('b_pak', 'SELECT id, e FROM pg_temp.prompts, generate_series(1, 3) ORDER BY id') c;

SELECT model_select.retire_arm('b_pak_dmm', 'a');
SELECT is(c.nrows || ' rows, ' || c.other_arm || ' other choices, ' || c.other_score || ' other scores',
          '600 rows, 0 other choices, 0 other scores',
          'a retired arm is never chosen by either')
  FROM pg_temp.compare('b_pak_dmm') c;
SELECT ok((SELECT count(DISTINCT r.arm) = 3 FROM model_select.route_batch('b_lin', 'SELECT id, e FROM pg_temp.prompts') r),
          'b_lin: the batch chooses all three arms somewhere (the comparison is not vacuous)');
SELECT is((SELECT count(*) FROM model_select.route_batch('b_pak', 'SELECT id, e FROM pg_temp.prompts WHERE id <= 3')),
          3::bigint, 'a block smaller than a batch');
SELECT is((SELECT count(*) FROM model_select.route_batch('b_pak', 'SELECT id, e FROM pg_temp.prompts WHERE false')),
          0::bigint, 'an empty source gives no rows');
SELECT is((SELECT array_agg(r.key ORDER BY r.key) FROM model_select.route_batch('b_lin',
              'SELECT id::smallint, e::real[] FROM pg_temp.prompts WHERE id <= 5 UNION ALL SELECT NULL, ARRAY[1, 2, 3, 4]::real[]') r),
          ARRAY[1, 2, 3, 4, 5, NULL]::bigint[], 'smallint keys (and NULL ones) and real[] contexts');

-- log => true
CREATE TABLE pg_temp.logged AS
SELECT * FROM model_select.route_batch('b_rff', 'SELECT id, e FROM pg_temp.prompts ORDER BY id', log => true);
SELECT is((SELECT count(*) FROM model_select.decisions), 600::bigint, 'log => true: 600 decisions logged');
SELECT is((SELECT count(*) FROM pg_temp.logged l JOIN model_select.decisions d USING (decision_id)
             JOIN model_select.arms a ON a.arm_id = d.arm_id JOIN pg_temp.prompts p ON p.id = l.key
            WHERE a.name = l.arm AND d.context = p.e AND d.score = l.score AND d.mean IS NOT DISTINCT FROM l.mean),
          600::bigint, 'each returned decision_id names its row''s decision: arm, context, score and mean');
SELECT is((SELECT count(*) FROM model_select.route_batch('b_rff', 'SELECT id, e FROM pg_temp.prompts') r
            WHERE r.decision_id IS NOT NULL), 0::bigint, 'log => false logs nothing and returns no decision_id');
INSERT INTO model_select.rewards(decision_id, reward) SELECT decision_id, 0.5 FROM pg_temp.logged WHERE key <= 10;
SELECT is((SELECT sum(n)::bigint FROM model_select.arm_stats WHERE selector = 'b_rff'), 170::bigint,
          'the logged decisions take rewards by decision_id');

-- bad sources
SELECT throws_ok($$SELECT * FROM model_select.route_batch('b_lin', 'SELECT e FROM pg_temp.prompts')$$,
                 '42804', NULL, 'a source of one column: 42804');
SELECT throws_ok($$SELECT * FROM model_select.route_batch('b_lin', 'SELECT id::text, e FROM pg_temp.prompts')$$,
                 '42804', NULL, 'a text key: 42804');
SELECT throws_ok($$SELECT * FROM model_select.route_batch('b_lin', 'SELECT id, e::text FROM pg_temp.prompts')$$,
                 '42804', 'route_batch source column 2 (context) must be an array of numbers, not text',
                 'a context column of another type (a pgvector column without its cast): 42804, naming it');
SELECT throws_ok($$SELECT * FROM model_select.route_batch('b_lin', 'SELECT id, e, 1 FROM pg_temp.prompts')$$,
                 '42804', NULL, 'two columns and one more: 42804');
-- what drivers send for lists: numeric[] and integer[] contexts route as float8[] ones
SELECT is((SELECT array_agg(arm ORDER BY key) FROM model_select.route_batch('b_lin',
              'SELECT id, e::numeric[] FROM pg_temp.prompts WHERE id <= 40')),
          (SELECT array_agg(arm ORDER BY key) FROM model_select.route_batch('b_lin',
              'SELECT id, e::numeric[]::float8[] FROM pg_temp.prompts WHERE id <= 40')),
          'a numeric[] context column routes as its values as float8[]');
SELECT throws_ok($$SELECT * FROM model_select.route_batch('b_lin', 'SELECT 1, NULL::float8[]')$$,
                 '22004', NULL, 'a NULL context: 22004');
SELECT throws_ok($$SELECT * FROM model_select.route_batch('b_lin', 'SELECT 1, ARRAY[1, 2]::float8[]')$$,
                 '22000', NULL, 'a context of the wrong dimension: 22000');
SELECT throws_ok($$SELECT * FROM model_select.route_batch('nope', 'SELECT id, e FROM pg_temp.prompts')$$,
                 '42704', NULL, 'an unknown selector: 42704');
SELECT throws_ok($$SELECT * FROM model_select.route_batch('b_lin', 'DELETE FROM pg_temp.prompts RETURNING id, e')$$,
                 NULL, NULL, 'a source that writes is refused');
SELECT is((SELECT count(*) FROM pg_temp.prompts), 600::bigint, '... and wrote nothing');

SELECT * FROM finish();
ROLLBACK;
