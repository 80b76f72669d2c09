-- The edges a tenant could still reach in 0.2.0 (issue 26), each once a bug:
-- costs that disabled a budget selector for good, arm_stats sums that
-- overflowed, a polynomial kernel whose factorisation could not stay finite,
-- models no cache could hold, rounded values and block-relative row numbers
-- in messages, and NaN probe scores written around probe_report().
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(20);

-- costs are bounded like utilities: [0, 1e15]
SELECT model_select.create_selector('bud', 2, ARRAY['cheap', 'dear'], 'greedy', NULL, '{"budget": 1}');
SELECT throws_ok($$INSERT INTO model_select.rewards(selector, arm, context, reward, cost)
                   VALUES ('bud', 'dear', '{1,0}', 0.9, 1e300)$$,
                 '22003', 'cost 1e+300 is outside the range [0, 1e+15]', 'a cost of 1e300 is refused');
SELECT throws_ok($$INSERT INTO model_select.rewards(selector, arm, context, reward, cost)
                   VALUES ('bud', 'dear', '{1,0}', 0.9, 1.0000001e15)$$,
                 '22003', NULL, 'a cost just above 1e15 is refused');
SELECT throws_ok($$INSERT INTO model_select.rewards(selector, arm, context, reward, cost)
                   VALUES ('bud', 'dear', '{1,0}', 0.9, 'NaN')$$,
                 '22003', NULL, 'a NaN cost is refused');
SELECT lives_ok($$INSERT INTO model_select.rewards(selector, arm, context, reward, cost)
                  VALUES ('bud', 'cheap', '{1,0}', 0.4, 1e15), ('bud', 'dear', '{1,0}', 0.9, 1e15),
                         ('bud', 'dear', '{1,0}', 0.9, 1e15)$$,
                'costs of 1e15, the bound, are taken');
-- pending rewards at the largest cost: arm_stats sums them without overflow
SELECT is((SELECT (pending, mean_cost) FROM model_select.arm_stats WHERE selector = 'bud' AND arm = 'dear'),
          (2::bigint, 1e15::float8), 'arm_stats: two pending rewards of cost 1e15, mean_cost 1e15');
-- what one reward per arm at the largest cost leaves: every score finite
SET LOCAL client_min_messages = error;
SELECT lives_ok($$SELECT model_select.route('bud', '{1,0}'::float8[])$$,
                'a budget selector whose arms all cost 1e15 still routes');
SELECT ok((SELECT bool_and(ucb > '-Infinity' AND ucb < 'Infinity')
             FROM model_select.scores('bud', '{1,0}'::float8[])),
          '... and every arm''s score is finite');
SELECT model_select.rebuild_state('bud');
SELECT lives_ok($$SELECT model_select.route('bud', '{1,0}'::float8[])$$, '... also after rebuild_state()');
RESET client_min_messages;

-- exact values in messages: 1.0000000000000002 is not "1"
SELECT throws_ok($$INSERT INTO model_select.rewards(selector, arm, context, reward)
                   VALUES ('bud', 'dear', '{1,0}', 1.0000000000000002)$$,
                 '22003', 'reward 1.0000000000000002 is outside the selector''s range [0, 1]',
                 'a reward just above the range is printed exactly');

-- a polynomial kernel whose values dwarf the ridge is refused, at create and alter
SELECT throws_ok($$SELECT model_select.create_selector('poly10', 4, ARRAY['a','b'], 'pak_ucb', 'poly',
                                                        '{"degree": 10, "gamma": 1e6}')$$,
                 '22023', NULL, 'pak_ucb, poly, degree 10, gamma 1e6: refused at create');
SELECT lives_ok($$SELECT model_select.create_selector('poly3', 4, ARRAY['a','b'], 'pak_ucb', 'poly')$$,
                'the default polynomial kernel is taken');
SELECT throws_ok($$SELECT model_select.alter_selector('poly3', '{"degree": 10, "gamma": 1e6}')$$,
                 '22023', NULL, '... and altering it to degree 10, gamma 1e6 is refused');
SELECT throws_ok($$SELECT model_select.alter_selector('poly3', '{"degree": 10, "gamma": 100, "offset": 0}')$$,
                 '22023', NULL, '... and so is degree 10, gamma 100 with alpha 1 (kernel values 1e20)');
SELECT lives_ok($$SELECT model_select.alter_selector('poly3', '{"degree": 10, "gamma": 100, "offset": 0, "alpha": 1e9}')$$,
                '... which alpha 1e9 makes a ratio of 1e11, within 1e12');

-- a model no cache can hold is refused at create (a setting, with a hint)
SELECT throws_ok($$SELECT model_select.create_selector('huge', 16000, ARRAY['a','b'], 'rff_ucb', NULL,
                                                        '{"features": 5790}')$$,
                 '54000', NULL, 'rff_ucb at dim 16,000 with 5,790 features: refused (max_model_size)');
SET LOCAL model_select.max_model_size = '2GB';
SELECT lives_ok($$SELECT model_select.create_selector('huge', 16000, ARRAY['a','b'], 'rff_ucb', NULL,
                                                       '{"features": 5790}')$$,
                '... and taken once a superuser raises model_select.max_model_size');
RESET model_select.max_model_size;
SELECT throws_ok($$SELECT model_select.alter_selector('poly3', '{"cap": 10000}')$$,
                 '54000', NULL, 'alter_selector() checks the bound too');

-- route_batch names the source row, not its place in a block of 256
SELECT throws_ok($$SELECT count(*) FROM model_select.route_batch('bud',
                     'SELECT i, CASE WHEN i <> 600 THEN ARRAY[1, 0]::float8[] END FROM generate_series(1, 700) i')$$,
                 '22004', 'route_batch source row 600 has a NULL context', 'a NULL context at source row 600 is row 600');

-- probe scores keep their range also when written around probe_report()
CREATE TEMP TABLE items AS
SELECT ARRAY[g::float8, 1] AS prompt, m AS model FROM generate_series(1, 3) g, unnest(ARRAY['x', 'y']) m;
SELECT model_select.create_probe_run('pr', 10, 5, 1, 'SELECT prompt, model FROM items');
SELECT count(*) FROM model_select.probe_next('pr', 1);
SELECT throws_ok($$SELECT model_select_internal._probe_record(r, (SELECT min(m) FROM model_select.probe_plan WHERE run_id = r.run_id
                                                          AND issued_at IS NOT NULL), 'NaN')
                     FROM model_select.probe_runs r WHERE r.name = 'pr'$$,
                 '23514', NULL, '_probe_record() called directly cannot store a NaN score');
SELECT throws_ok($$UPDATE model_select.probe_plan SET score = 'Infinity'
                    WHERE run_id = (SELECT run_id FROM model_select.probe_runs WHERE name = 'pr')$$,
                 '23514', NULL, 'nor can an UPDATE of probe_plan');

SELECT * FROM finish();
ROLLBACK;
