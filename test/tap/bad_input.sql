-- Bad input: every bad call raises its error with the SQLSTATE of the
-- contract (/tmp/ms/api.md, "Error SQLSTATEs" and "Additions") and leaves
-- every table of the extension unchanged.
--
-- All fixtures are created first; then a fingerprint of the five tables
-- (md5 of every row, ordered by primary key) is recorded, and after every
-- throws_ok the fingerprint must be identical (pg_temp.bad() returns both
-- tests).  Sequences are not part of the fingerprint: nextval() is not
-- transactional, a failed INSERT may consume a reward_id.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(342);

-- md5 of each table's rows (as text), ordered by primary key.
CREATE FUNCTION pg_temp.fingerprint() RETURNS TABLE (tbl text, nrows bigint, md5 text)
LANGUAGE sql AS $f$
  SELECT 'selectors', count(*), md5(coalesce(string_agg(t::text, E'\n' ORDER BY t.selector_id), ''))
    FROM model_select.selectors t
  UNION ALL
  SELECT 'arms', count(*), md5(coalesce(string_agg(t::text, E'\n' ORDER BY t.arm_id), ''))
    FROM model_select.arms t
  UNION ALL
  SELECT 'arm_state', count(*), md5(coalesce(string_agg(t::text || ',' || t.xmin::text, E'\n' ORDER BY t.arm_id), ''))
    FROM model_select.arm_state t
  UNION ALL
  SELECT 'decisions', count(*), md5(coalesce(string_agg(t::text, E'\n' ORDER BY t.decision_id), ''))
    FROM model_select.decisions t
  UNION ALL
  SELECT 'rewards', count(*), md5(coalesce(string_agg(t::text, E'\n' ORDER BY t.reward_id), ''))
    FROM model_select.rewards t
$f$;

-- ok() when the fingerprint equals the one recorded in fp0.
CREATE FUNCTION pg_temp.unchanged(descr text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
  changed text;
BEGIN
  SELECT string_agg(format('%s: %s rows (was %s)', coalesce(n.tbl, o.tbl), n.nrows, o.nrows), ', ' ORDER BY coalesce(n.tbl, o.tbl))
    INTO changed
    FROM pg_temp.fingerprint() n FULL JOIN fp0 o USING (tbl)
   WHERE n.md5 IS DISTINCT FROM o.md5;
  IF changed IS NULL AND (SELECT count(*) FROM fp0) = 5 THEN
    RETURN ok(true, descr || ': tables unchanged');
  END IF;
  RETURN ok(false, descr || ': tables unchanged') || E'\n'
         || diag('    changed: ' || coalesce(changed, 'fingerprint not recorded'));
END
$f$;

-- throws_ok(sql, sqlstate, NULL, descr) followed by the fingerprint check.
CREATE FUNCTION pg_temp.bad(sql text, state text, descr text) RETURNS SETOF text LANGUAGE plpgsql AS $f$
BEGIN
  RETURN NEXT throws_ok(sql, state, NULL, descr || ' -> ' || state);
  RETURN NEXT pg_temp.unchanged(descr);
END
$f$;

-- The primary message and detail of the error raised by `sql` (NULL if none).
CREATE FUNCTION pg_temp.error_text(sql text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
  msg text;
  det text;
BEGIN
  EXECUTE sql;
  RETURN NULL;
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL;
  RETURN msg || E'\n' || coalesce(det, '');
END
$f$;

-- ---------------------------------------------------------------- fixtures
-- b_pak: pak_ucb rbf, dim 3, arms a, b, c (c is retired below), d.
SELECT isnt(model_select.create_selector('b_pak', 3, ARRAY['a', 'b', 'c', 'd'], 'pak_ucb'), NULL, 'fixture: b_pak');
SELECT isnt(model_select.create_selector('b_lin', 3, ARRAY['a', 'b'], 'lin_ucb'), NULL, 'fixture: b_lin');
SELECT isnt(model_select.create_selector('b_greedy', 3, ARRAY['a', 'b'], 'greedy', NULL,
                                         '{"reward_min": -1, "reward_max": 2}'), NULL, 'fixture: b_greedy (rewards in [-1, 2])');
-- b_gone: every arm retired
SELECT isnt(model_select.create_selector('b_gone', 3, ARRAY['a', 'b'], 'lin_ucb'), NULL, 'fixture: b_gone');
SELECT lives_ok($$SELECT model_select.retire_arm('b_gone', 'a'), model_select.retire_arm('b_gone', 'b')$$,
                'fixture: retire both arms of b_gone');
-- b_cap: pak_ucb with cap 3, one arm holding 3 rewards
SELECT isnt(model_select.create_selector('b_cap', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"cap": 3}'), NULL, 'fixture: b_cap');
SELECT lives_ok($$
  INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES
    ('b_cap', 'a', ARRAY[1, 0, 0]::float8[], 0.1),
    ('b_cap', 'a', ARRAY[0, 1, 0]::float8[], 0.2),
    ('b_cap', 'a', ARRAY[0, 0, 1]::float8[], 0.3)
$$, 'fixture: 3 rewards for b_cap up to its cap of 3');
SELECT is((SELECT n FROM model_select.arm_stats WHERE selector = 'b_cap'), 3::bigint, 'fixture: b_cap arm a has n = 3');
SELECT lives_ok($$
  INSERT INTO model_select.rewards(selector, arm, context, reward, cost) VALUES
    ('b_pak', 'a', ARRAY[0.1, 0.2, 0.3]::float8[], 0.5, 1),
    ('b_pak', 'b', ARRAY[0.3, 0.2, 0.1]::float8[], 1, 0),
    ('b_pak', 'c', ARRAY[-0.3, 0.2, 0.1]::float8[], 0, NULL),
    ('b_lin', 'a', ARRAY[0.1, 0.2, 0.3]::float8[], 0.5, NULL),
    ('b_greedy', 'a', ARRAY[0, 0, 0]::float8[], -1, NULL),
    ('b_greedy', 'b', ARRAY[0, 0, 0]::float8[], 2, NULL)
$$, 'fixture: some rewards (boundary values of the reward range are accepted)');
-- decisions: #1 rewarded, #2 open, #3 open but its arm gets retired
CREATE TEMP TABLE dec (k text PRIMARY KEY, decision_id bigint, arm text);
INSERT INTO dec SELECT 'rewarded', decision_id, arm FROM model_select.route('b_pak', ARRAY[0.5, 0.5, 0.1]::float8[]);
INSERT INTO dec SELECT 'open', decision_id, arm FROM model_select.route('b_pak', ARRAY[0.1, 0.5, 0.5]::float8[]);
INSERT INTO dec SELECT 'lin', decision_id, arm FROM model_select.route('b_lin', ARRAY[0.1, 0.5, 0.5]::float8[]);
SELECT lives_ok(format('INSERT INTO model_select.rewards(decision_id, reward) VALUES (%s, 0.7)',
                       (SELECT decision_id FROM dec WHERE k = 'rewarded')),
                'fixture: reward for decision "rewarded"');
SELECT lives_ok($$SELECT model_select.retire_arm('b_pak', 'c')$$, 'fixture: retire arm c of b_pak');
-- a decision of b_lin whose arm is then retired
SELECT lives_ok(format($$SELECT model_select.retire_arm('b_lin', %L)$$, (SELECT arm FROM dec WHERE k = 'lin')),
                'fixture: retire the arm decision "lin" chose');

CREATE TEMP TABLE fp0 AS SELECT * FROM pg_temp.fingerprint();
SELECT is((SELECT string_agg(tbl || ' ' || nrows, ', ' ORDER BY tbl) FROM fp0),
          'arm_state 11, arms 11, decisions 3, rewards 10, selectors 5',
          'fingerprint recorded (rows per table)');

-- ------------------------------------------------------- contexts: dimension
SELECT * FROM pg_temp.bad($$SELECT model_select.select_model('b_pak', ARRAY[1, 2]::float8[])$$, '22000', 'select_model: context of dim 2 for dim 3');
SELECT * FROM pg_temp.bad($$SELECT model_select.select_model('b_pak', ARRAY[1, 2, 3, 4]::real[])$$, '22000', 'select_model: real[] context of dim 4 for dim 3');
SELECT * FROM pg_temp.bad($$SELECT model_select.select_model('b_pak', ARRAY[]::float8[])$$, '22000', 'select_model: empty context');
SELECT * FROM pg_temp.bad($$SELECT * FROM model_select.route('b_pak', ARRAY[1, 2]::float8[])$$, '22000', 'route: context of dim 2');
SELECT * FROM pg_temp.bad($$SELECT * FROM model_select.scores('b_pak', ARRAY[1, 2, 3, 4]::float8[])$$, '22000', 'scores: context of dim 4');
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('b_pak', 'a', ARRAY[1, 2]::float8[], 0.5)$$,
                          '22000', 'reward insert: context of dim 2');
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('b_greedy', 'a', ARRAY[1, 2, 3, 4]::float8[], 0.5)$$,
                          '22000', 'reward insert (greedy): context of dim 4');

-- ------------------------------------------------- contexts: non-finite, NULL
SELECT * FROM pg_temp.bad($$SELECT model_select.select_model('b_pak', ARRAY[1, 'NaN', 2]::float8[])$$, '22000', 'select_model: NaN element');
SELECT * FROM pg_temp.bad($$SELECT model_select.select_model('b_pak', ARRAY[1, 'NaN', 2]::real[])$$, '22000', 'select_model: NaN element (real[])');
SELECT * FROM pg_temp.bad($$SELECT * FROM model_select.route('b_pak', ARRAY['NaN', 1, 2]::float8[])$$, '22000', 'route: NaN element');
SELECT * FROM pg_temp.bad($$SELECT * FROM model_select.scores('b_lin', ARRAY[1, 2, 'NaN']::float8[])$$, '22000', 'scores: NaN element');
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('b_pak', 'a', ARRAY[1, 'NaN', 2]::float8[], 0.5)$$,
                          '22000', 'reward insert: NaN element');
SELECT * FROM pg_temp.bad($$SELECT model_select.select_model('b_pak', ARRAY[1, 'Infinity', 2]::float8[])$$, '22000', 'select_model: Infinity element');
SELECT * FROM pg_temp.bad($$SELECT model_select.select_model('b_pak', ARRAY[1, 'Infinity', 2]::real[])$$, '22000', 'select_model: Infinity element (real[])');
SELECT * FROM pg_temp.bad($$SELECT * FROM model_select.route('b_lin', ARRAY[1, 2, 'Infinity']::float8[])$$, '22000', 'route: Infinity element');
SELECT * FROM pg_temp.bad($$SELECT * FROM model_select.scores('b_pak', ARRAY['Infinity', 2, 3]::float8[])$$, '22000', 'scores: Infinity element');
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('b_lin', 'a', ARRAY[1, 'Infinity', 2]::float8[], 0.5)$$,
                          '22000', 'reward insert: Infinity element');
SELECT * FROM pg_temp.bad($$SELECT model_select.select_model('b_pak', ARRAY[1, '-Infinity', 2]::float8[])$$, '22000', 'select_model: -Infinity element');
SELECT * FROM pg_temp.bad($$SELECT * FROM model_select.route('b_pak', ARRAY['-Infinity', 2, 3]::float8[])$$, '22000', 'route: -Infinity element');
SELECT * FROM pg_temp.bad($$SELECT * FROM model_select.scores('b_pak', ARRAY[1, 2, '-Infinity']::real[])$$, '22000', 'scores: -Infinity element (real[])');
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('b_pak', 'a', ARRAY['-Infinity', 1, 2]::float8[], 0.5)$$,
                          '22000', 'reward insert: -Infinity element');
-- greedy does not use the context, but it is still validated
SELECT * FROM pg_temp.bad($$SELECT model_select.select_model('b_greedy', ARRAY[1, 'NaN', 2]::float8[])$$, '22000', 'select_model (greedy): NaN element');
SELECT * FROM pg_temp.bad($$SELECT model_select.select_model('b_pak', ARRAY[1, NULL, 2]::float8[])$$, '22004', 'select_model: NULL element');
SELECT * FROM pg_temp.bad($$SELECT model_select.select_model('b_pak', ARRAY[NULL, 1, 2]::real[])$$, '22004', 'select_model: NULL element (real[])');
SELECT * FROM pg_temp.bad($$SELECT * FROM model_select.route('b_pak', ARRAY[1, 2, NULL]::float8[])$$, '22004', 'route: NULL element');
SELECT * FROM pg_temp.bad($$SELECT * FROM model_select.scores('b_lin', ARRAY[NULL, 1, 2]::float8[])$$, '22004', 'scores: NULL element');
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('b_pak', 'a', ARRAY[1, NULL, 2]::float8[], 0.5)$$,
                          '22004', 'reward insert: NULL element');

-- ------------------------------------------------------ contexts: shape, zero
-- 3 x 1: the right number of elements, but not one-dimensional
SELECT * FROM pg_temp.bad($$SELECT model_select.select_model('b_pak', ARRAY[[1], [2], [3]]::float8[])$$, '22000', 'select_model: 2-D context (3 x 1)');
SELECT * FROM pg_temp.bad($$SELECT * FROM model_select.route('b_pak', ARRAY[[1, 2, 3]]::float8[])$$, '22000', 'route: 2-D context (1 x 3)');
SELECT * FROM pg_temp.bad($$SELECT * FROM model_select.scores('b_pak', ARRAY[[1, 2, 3], [4, 5, 6]]::real[])$$, '22000', 'scores: 2-D context (2 x 3)');
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('b_pak', 'a', ARRAY[[1], [2], [3]]::float8[], 0.5)$$,
                          '22000', 'reward insert: 2-D context (3 x 1)');
SELECT * FROM pg_temp.bad($$SELECT model_select.select_model('b_pak', ARRAY[0, 0, 0]::float8[])$$, '22000', 'select_model: zero vector with normalize on');
SELECT * FROM pg_temp.bad($$SELECT * FROM model_select.route('b_lin', ARRAY[0, 0, 0]::real[])$$, '22000', 'route (lin_ucb): zero vector with normalize on');
SELECT * FROM pg_temp.bad($$SELECT * FROM model_select.scores('b_pak', ARRAY[0, -0.0, 0]::float8[])$$, '22000', 'scores: zero vector (with -0) with normalize on');
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('b_pak', 'a', ARRAY[0, 0, 0]::float8[], 0.5)$$,
                          '22000', 'reward insert: zero vector with normalize on');

-- -------------------------------------------------------- unknown selector/arm
SELECT * FROM pg_temp.bad($$SELECT model_select.select_model('nope', ARRAY[1, 2, 3]::float8[])$$, '42704', 'select_model: unknown selector');
SELECT * FROM pg_temp.bad($$SELECT * FROM model_select.route('nope', ARRAY[1, 2, 3]::float8[])$$, '42704', 'route: unknown selector');
SELECT * FROM pg_temp.bad($$SELECT * FROM model_select.scores('nope', ARRAY[1, 2, 3]::float8[])$$, '42704', 'scores: unknown selector');
SELECT * FROM pg_temp.bad($$SELECT model_select.rebuild_state('nope')$$, '42704', 'rebuild_state: unknown selector');
SELECT * FROM pg_temp.bad($$SELECT model_select.drop_selector('nope')$$, '42704', 'drop_selector: unknown selector');
SELECT * FROM pg_temp.bad($$SELECT model_select.add_arm('nope', 'a')$$, '42704', 'add_arm: unknown selector');
SELECT * FROM pg_temp.bad($$SELECT model_select.retire_arm('nope', 'a')$$, '42704', 'retire_arm: unknown selector');
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('nope', 'a', ARRAY[1, 2, 3]::float8[], 0.5)$$,
                          '42704', 'reward insert: unknown selector');
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('b_pak', 'zz', ARRAY[1, 2, 3]::float8[], 0.5)$$,
                          '42704', 'reward insert: unknown arm');
SELECT * FROM pg_temp.bad($$SELECT model_select.retire_arm('b_pak', 'zz')$$, '42704', 'retire_arm: unknown arm');
-- names are case-sensitive
SELECT * FROM pg_temp.bad($$SELECT model_select.select_model('B_PAK', ARRAY[1, 2, 3]::float8[])$$, '42704', 'select_model: selector name in other case');

-- ------------------------------------------------------------- retired arms
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('b_pak', 'c', ARRAY[1, 2, 3]::float8[], 0.5)$$,
                          '55000', 'reward insert: retired arm (by name)');
SELECT * FROM pg_temp.bad(format('INSERT INTO model_select.rewards(decision_id, reward) VALUES (%s, 0.5)',
                                 (SELECT decision_id FROM dec WHERE k = 'lin')),
                          '55000', 'reward insert: decision whose arm was retired since');
SELECT * FROM pg_temp.bad($$SELECT model_select.select_model('b_gone', ARRAY[1, 2, 3]::float8[])$$, '55000', 'select_model: all arms retired');
SELECT * FROM pg_temp.bad($$SELECT * FROM model_select.route('b_gone', ARRAY[1, 2, 3]::float8[])$$, '55000', 'route: all arms retired');

-- ------------------------------------------------------------- bad settings
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', NULL, '{"foo": 1}')$$, '22023', 'settings: unknown key');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', NULL, '{"Alpha": 1}')$$, '22023', 'settings: key in other case');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', NULL, '{"alpha": "1"}')$$, '22023', 'settings: string for alpha');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', NULL, '{"alpha": null}')$$, '22023', 'settings: null for alpha');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', NULL, '{"normalize": 1}')$$, '22023', 'settings: number for normalize');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'lin_ucb', NULL, '{"normalize": "true"}')$$, '22023', 'settings: string for normalize');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'poly', '{"degree": 2.5}')$$, '22023', 'settings: non-integer degree');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', NULL, '{"cap": 10.5}')$$, '22023', 'settings: non-integer cap');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', NULL, '{"alpha": 0}')$$, '22023', 'settings: alpha 0');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'lin_ucb', NULL, '{"alpha": -1}')$$, '22023', 'settings: alpha -1');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"bandwidth": -0.5}')$$, '22023', 'settings: bandwidth -0.5');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"bandwidth": 0}')$$, '22023', 'settings: bandwidth 0');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', NULL, '{"cap": 0}')$$, '22023', 'settings: cap 0');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', NULL, '{"cap": 1e9}')$$, '22023', 'settings: cap 1e9');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', NULL, '{"cap": 20001}')$$, '22023', 'settings: cap 20001');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', NULL, '{"eta": -1}')$$, '22023', 'settings: eta -1');
-- numbers outside the float8 range are out of range too (not 22003 from the float8 cast)
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', NULL, '{"alpha": 1e400}')$$, '22023', 'settings: alpha 1e400');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', NULL, '{"bandwidth": 1e-400}')$$, '22023', 'settings: bandwidth 1e-400');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'poly', '{"degree": 0}')$$, '22023', 'settings: degree 0');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'poly', '{"degree": 11}')$$, '22023', 'settings: degree 11');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'linear', '{"bandwidth": 1}')$$, '22023', 'settings: bandwidth with kernel linear');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"gamma": 1}')$$, '22023', 'settings: gamma with kernel rbf');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'lin_ucb', NULL, '{"cap": 10}')$$, '22023', 'settings: cap with lin_ucb');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'greedy', NULL, '{"alpha": 1}')$$, '22023', 'settings: alpha with greedy');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', NULL, '{"reward_min": 1, "reward_max": 1}')$$, '22023', 'settings: reward_min = reward_max');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'random', NULL, '{"reward_min": 2, "reward_max": 1}')$$, '22023', 'settings: reward_min > reward_max');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', NULL, '{"reward_min": 5}')$$, '22023', 'settings: reward_min above the default reward_max');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', NULL, '[1, 2]')$$, '22023', 'settings: an array, not an object');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', NULL, '"alpha"')$$, '22023', 'settings: a string, not an object');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', NULL, 'null')$$, '22023', 'settings: JSON null, not an object');
-- confidence bounds (Flynn & Reeb 2024): names, grid arrays, keys that apply only to some bounds
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"confidence": "foo"}')$$, '22023', 'settings: confidence foo');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"confidence": 1}')$$, '22023', 'settings: confidence as a number');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"confidence": "DMM"}')$$, '22023', 'settings: confidence in other case');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'greedy', NULL, '{"confidence": "amm"}')$$, '22023', 'settings: confidence with greedy');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'bkb', 'rbf', '{"confidence": "amm"}')$$, '22023', 'settings: confidence with bkb');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"confidence": "dmm", "grid": []}')$$, '22023', 'settings: empty grid');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"confidence": "dmm", "grid": 1}')$$, '22023', 'settings: grid not an array');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"confidence": "dmm", "grid": [1, "3"]}')$$, '22023', 'settings: grid with a string');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"confidence": "dmm", "grid": [1, -3]}')$$, '22023', 'settings: grid with a negative value');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"confidence": "dmm", "grid": [0, 1]}')$$, '22023', 'settings: grid with 0');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'lin_ucb', NULL, '{"confidence": "dmm", "grid": [1, 1e7]}')$$, '22023', 'settings: grid value 1e7');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"confidence": "dmm", "grid": [1, 3, 1]}')$$, '22023', 'settings: grid with a duplicate');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"confidence": "dmm", "grid": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}')$$, '22023', 'settings: grid of 17 values');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"confidence": "dmm", "grid": [[1]]}')$$, '22023', 'settings: grid with a nested array');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"confidence": "amm", "grid": [1, 3]}')$$, '22023', 'settings: grid with amm');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"grid": [1, 3]}')$$, '22023', 'settings: grid with confidence fixed');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"confidence": "dmm", "horizon": 100}')$$, '22023', 'settings: horizon with dmm');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"confidence": "igp", "horizon": 0}')$$, '22023', 'settings: horizon 0');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"confidence": "igp", "horizon": 2.5}')$$, '22023', 'settings: horizon 2.5');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"confidence": "igp", "alpha": 0.5}')$$, '22023', 'settings: alpha with igp (igp fixes the ridge)');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'rff_ucb', 'rbf', '{"confidence": "amm", "eta": 1}')$$, '22023', 'settings: eta with amm');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"rkhs_bound": 2}')$$, '22023', 'settings: rkhs_bound with confidence fixed');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'lin_ucb', NULL, '{"noise": 0.1}')$$, '22023', 'settings: noise with confidence fixed');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"confidence": "amm", "noise": 0}')$$, '22023', 'settings: noise 0');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"confidence": "amm", "delta": 0}')$$, '22023', 'settings: delta 0');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"confidence": "amm", "delta": 1.5}')$$, '22023', 'settings: delta 1.5');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"confidence": "cmm", "rkhs_bound": -1}')$$, '22023', 'settings: rkhs_bound -1');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"confidence": "dmm", "window": 100}')$$, '22023', 'settings: window with dmm');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'lin_ucb', NULL, '{"confidence": "ay", "discount": 0.99}')$$, '22023', 'settings: discount with ay');
-- the same validation through resolve_settings()
SELECT * FROM pg_temp.bad($$SELECT model_select.resolve_settings('pak_ucb', 'rbf', '{"alpha": 0}')$$, '22023', 'resolve_settings: alpha 0');
SELECT * FROM pg_temp.bad($$SELECT model_select.resolve_settings('lin_ucb', NULL, '{"bandwidth": 1}')$$, '22023', 'resolve_settings: bandwidth with lin_ucb');

-- the error for an unknown key names the key (primary message) and the valid
-- keys of that policy/kernel (message or DETAIL: pgTAP's throws_* only see the
-- primary message, so error_text() returns message and detail)
SELECT throws_matching($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"foo": 1}')$$,
                       '"foo"', 'unknown key: the error message names the unknown key');
SELECT matches(pg_temp.error_text($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"foo": 1}')$$),
               '(?s)foo.*alpha, eta, intercept, normalize, cap, bandwidth, noise_prior, confidence, exploration, window, discount, restart_every, cost_weight, budget, count_pending, reward_min, reward_max',
               'unknown key (pak_ucb rbf): the error names the key and the valid keys');
SELECT matches(pg_temp.error_text($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'poly', '{"bandwidth": 1}')$$),
               '(?s)bandwidth.*alpha, eta, intercept, normalize, cap, noise_prior, confidence, exploration, gamma, degree, offset, window, discount, restart_every, cost_weight, budget, count_pending, reward_min, reward_max',
               'key not applicable (bandwidth with poly): the error names the valid keys');
SELECT matches(pg_temp.error_text($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'greedy', NULL, '{"eta": 1}')$$),
               '(?s)eta.*reward_min, reward_max',
               'key not applicable (eta with greedy): the error names the valid keys');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'ucb9')$$, '22023', 'create_selector: unknown policy');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', 'laplace')$$, '22023', 'create_selector: unknown kernel');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'lin_ucb', 'rbf')$$, '22023', 'create_selector: kernel given for lin_ucb');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'greedy', 'linear')$$, '22023', 'create_selector: kernel given for greedy');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'random', 'poly')$$, '22023', 'create_selector: kernel given for random');

-- ------------------------------------------------------ create_selector args
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('b_pak', 3, ARRAY['a'])$$, '42710', 'create_selector: duplicate selector name');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('', 3, ARRAY['a'])$$, '22023', 'create_selector: an empty name is 22023 (not the table''s CHECK)');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 0, ARRAY['a'])$$, '22023', 'create_selector: dim 0');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', -3, ARRAY['a'])$$, '22023', 'create_selector: dim -3');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 16001, ARRAY['a'])$$, '22023', 'create_selector: dim 16001');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY[]::text[])$$, '22023', 'create_selector: empty arms array');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', 3, ARRAY['a', 'b', 'a'])$$, '42710', 'create_selector: duplicate arm name');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector(NULL, 3, ARRAY['a'])$$, '22004', 'create_selector: NULL name');
SELECT * FROM pg_temp.bad($$SELECT model_select.create_selector('x', NULL, ARRAY['a'])$$, '22004', 'create_selector: NULL dim');
SELECT * FROM pg_temp.bad($$SELECT model_select.add_arm('b_pak', 'a')$$, '42710', 'add_arm: existing active arm');

-- ------------------------------------------------------------------ rewards
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('b_pak', 'a', ARRAY[1, 2, 3]::float8[], 1.0000001)$$,
                          '22003', 'reward insert: reward above reward_max');
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('b_pak', 'a', ARRAY[1, 2, 3]::float8[], -0.0001)$$,
                          '22003', 'reward insert: reward below reward_min');
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('b_greedy', 'a', ARRAY[1, 2, 3]::float8[], 2.5)$$,
                          '22003', 'reward insert: reward above a custom reward_max (2)');
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('b_greedy', 'a', ARRAY[1, 2, 3]::float8[], -1.5)$$,
                          '22003', 'reward insert: reward below a custom reward_min (-1)');
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('b_pak', 'a', ARRAY[1, 2, 3]::float8[], 'NaN')$$,
                          '22003', 'reward insert: NaN reward');
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('b_pak', 'a', ARRAY[1, 2, 3]::float8[], 'Infinity')$$,
                          '22003', 'reward insert: Infinity reward');
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('b_pak', 'a', ARRAY[1, 2, 3]::float8[], '-Infinity')$$,
                          '22003', 'reward insert: -Infinity reward');
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('b_pak', 'a', ARRAY[1, 2, 3]::float8[], NULL)$$,
                          '22004', 'reward insert: NULL reward');
SELECT * FROM pg_temp.bad(format('INSERT INTO model_select.rewards(decision_id, reward) VALUES (%s, 1.5)', (SELECT decision_id FROM dec WHERE k = 'open')),
                          '22003', 'reward insert by decision: reward above reward_max');
SELECT * FROM pg_temp.bad(format('INSERT INTO model_select.rewards(decision_id, reward) VALUES (%s, NULL)', (SELECT decision_id FROM dec WHERE k = 'open')),
                          '22004', 'reward insert by decision: NULL reward');
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, arm, context, reward, cost) VALUES ('b_pak', 'a', ARRAY[1, 2, 3]::float8[], 0.5, -1)$$,
                          '22003', 'reward insert: negative cost');
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, arm, context, reward, cost) VALUES ('b_pak', 'a', ARRAY[1, 2, 3]::float8[], 0.5, 'NaN')$$,
                          '22003', 'reward insert: NaN cost');
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, arm, context, reward, cost) VALUES ('b_pak', 'a', ARRAY[1, 2, 3]::float8[], 0.5, 'Infinity')$$,
                          '22003', 'reward insert: Infinity cost');
SELECT * FROM pg_temp.bad(format('INSERT INTO model_select.rewards(decision_id, context, reward) VALUES (%s, ARRAY[1, 2, 3]::float8[], 0.5)',
                                 (SELECT decision_id FROM dec WHERE k = 'open')),
                          '22023', 'reward insert: both decision_id and context');
SELECT * FROM pg_temp.bad(format($$INSERT INTO model_select.rewards(decision_id, selector, reward) VALUES (%s, 'b_lin', 0.5)$$,
                                 (SELECT decision_id FROM dec WHERE k = 'open')),
                          '22023', 'reward insert: decision of another selector than named');
SELECT * FROM pg_temp.bad(format($$INSERT INTO model_select.rewards(decision_id, arm, reward) VALUES (%s, %L, 0.5)$$,
                                 (SELECT decision_id FROM dec WHERE k = 'open'),
                                 CASE WHEN (SELECT arm FROM dec WHERE k = 'open') = 'a' THEN 'b' ELSE 'a' END),
                          '22023', 'reward insert: decision for another arm than named');
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(decision_id, reward) VALUES (999999999, 0.5)$$,
                          '42704', 'reward insert: nonexistent decision');
SELECT * FROM pg_temp.bad(format('INSERT INTO model_select.rewards(decision_id, reward) VALUES (%s, 0.2)', (SELECT decision_id FROM dec WHERE k = 'rewarded')),
                          '23505', 'reward insert: second reward for the same decision');
SELECT * FROM pg_temp.bad(format('INSERT INTO model_select.rewards(decision_id, reward) VALUES (%1$s, 0.2), (%1$s, 0.3)', (SELECT decision_id FROM dec WHERE k = 'open')),
                          '23505', 'reward insert: two rewards for one decision in one statement');
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, arm, reward) VALUES ('b_pak', 'a', 0.5)$$,
                          '22004', 'reward insert: no decision and no context');
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, context, reward) VALUES ('b_pak', ARRAY[1, 2, 3]::float8[], 0.5)$$,
                          '22004', 'reward insert: no decision and no arm');
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(reward) VALUES (0.5)$$,
                          '22004', 'reward insert: reward only');
-- one bad row fails the whole multi-row statement: the good row before it is not kept
SELECT * FROM pg_temp.bad($$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES
                              ('b_pak', 'a', ARRAY[1, 2, 3]::float8[], 0.5),
                              ('b_pak', 'a', ARRAY[1, 2, 3]::float8[], 7)$$,
                          '22003', 'reward insert: good row then out-of-range row');

-- ------------------------------------------------------- append-only log
SELECT * FROM pg_temp.bad($$UPDATE model_select.rewards SET reward = 'NaN'$$,
                          '55000', 'rewards: UPDATE of the log is rejected');
SELECT * FROM pg_temp.bad($$TRUNCATE model_select.rewards$$,
                          '55000', 'rewards: TRUNCATE of the log is rejected');
-- a reward by decision learns the decision's context and tags: a decision is
-- never rewritten (else the state would no longer be rebuild_state()'s)
SELECT * FROM pg_temp.bad(format($$UPDATE model_select.decisions SET tags = '{other}' WHERE decision_id = %s$$,
                                 (SELECT decision_id FROM dec WHERE k = 'rewarded')),
                          '55000', 'decisions: UPDATE of a rewarded decision''s tags is rejected');
SELECT * FROM pg_temp.bad(format($$UPDATE model_select.decisions SET context_real = '{0.1, 0.5, 0.5}',
                                     created_at = created_at - interval '1 day' WHERE decision_id = %s$$,
                                 (SELECT decision_id FROM dec WHERE k = 'rewarded')),
                          '55000', 'decisions: UPDATE of a context, with created_at, is rejected');
SELECT * FROM pg_temp.bad($$UPDATE model_select.decisions SET arm_id = arm_id + 1$$,
                          '55000', 'decisions: UPDATE of the arms is rejected');
SELECT * FROM pg_temp.bad($$TRUNCATE model_select.decisions$$,
                          '55000', 'decisions: TRUNCATE of the log is rejected');

-- ----------------------------------------------- valid edge cases still work
-- huge and tiny finite contexts normalise without overflow or underflow
SELECT is((SELECT array_agg(round(ucb::numeric, 12) ORDER BY arm) FROM model_select.scores('b_pak', ARRAY[1e200, 2e200, 3e200]::float8[])),
          (SELECT array_agg(round(ucb::numeric, 12) ORDER BY arm) FROM model_select.scores('b_pak', ARRAY[1, 2, 3]::float8[])),
          'a context scaled by 1e200 scores as the unscaled one');
SELECT is((SELECT array_agg(round(ucb::numeric, 12) ORDER BY arm) FROM model_select.scores('b_pak', ARRAY[1e-200, 2e-200, 3e-200]::float8[])),
          (SELECT array_agg(round(ucb::numeric, 12) ORDER BY arm) FROM model_select.scores('b_pak', ARRAY[1, 2, 3]::float8[])),
          'a context scaled by 1e-200 scores as the unscaled one');
-- scores() reports every arm even when none is active (it chooses nothing)
SELECT is((SELECT array_agg(arm || ':' || active ORDER BY arm) FROM model_select.scores('b_gone', ARRAY[1, 2, 3]::float8[])),
          (SELECT array_agg(a.name || ':false' ORDER BY a.name) FROM model_select.arms a
             JOIN model_select.selectors s USING (selector_id) WHERE s.name = 'b_gone'),
          'scores() lists the retired arms of a selector with no active arm');
SELECT pg_temp.unchanged('after the edge cases');


-- ---------------------------------------------------------------------- cap
-- (last: the accepted reward changes the tables)  Past its cap a pak_ucb arm
-- compacts: the reward that would make cap + 1 rows rebuilds it from its
-- newest ⌈cap/2⌉ (itself included).  With cap 3 the 4th reward is accepted,
-- and the arm scores exactly like an arm that only ever saw rewards 3 and 4;
-- not like one that saw 2, 3 and 4 (a sliding cap), nor all four.
SELECT lives_ok($$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('b_cap', 'a', ARRAY[1, 1, 0]::float8[], 0.4)$$,
                'cap: a 4th reward with cap 3 is accepted');
SELECT is((SELECT n FROM model_select.scores('b_cap', ARRAY[1, 1, 1]::float8[])), 4::bigint, 'cap: scores() shows n = 4 rewards in the log');
-- Largest |mean| and |width| difference of the arms of selectors a and b on 5 probes.
CREATE FUNCTION pg_temp.cap_diff(a text, b text) RETURNS float8 LANGUAGE sql AS $f$
  SELECT max(greatest(abs(x.mean - y.mean), abs(x.width - y.width)))
    FROM generate_series(1, 5) i,
         LATERAL (SELECT ARRAY[i, 1, -i]::float8[] AS c) p,
         LATERAL model_select.scores(a, p.c) x,
         LATERAL model_select.scores(b, p.c) y
$f$;
-- b_cap_kept: the rows the rule keeps (3 and 4); b_cap_slide: the newest 3
-- (2, 3, 4); b_cap_all: all four.  Big caps: none of them compacts.
SELECT model_select.create_selector(s, 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"cap": 10}')
  FROM unnest(ARRAY['b_cap_kept', 'b_cap_slide', 'b_cap_all']) s;
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT s, r.arm, r.context, r.reward
  FROM model_select.rewards r,
       (VALUES ('b_cap_kept', 3), ('b_cap_slide', 2), ('b_cap_all', 1)) v(s, oldest)
 WHERE r.selector = 'b_cap' AND r.reward >= oldest / 10.0 - 1e-9 ORDER BY v.s, r.reward_id;
SELECT ok(pg_temp.cap_diff('b_cap', 'b_cap_kept') < 1e-12,
          'cap: mean and width equal those of an arm fed only rewards 3 and 4 (1e-12)');
SELECT ok(pg_temp.cap_diff('b_cap', 'b_cap_slide') > 1e-3,
          'cap: an arm keeping the newest 3 rewards scores differently (the check above can fail)');
SELECT ok(pg_temp.cap_diff('b_cap', 'b_cap_all') > 1e-3,
          'cap: an arm keeping all 4 rewards scores differently');
-- restart_every longer than cap: the arm could not tell when a period ends
SELECT throws_ok($$SELECT model_select.create_selector('b_cap_restart', 3, ARRAY['a'], 'pak_ucb', 'rbf',
                                                       '{"cap": 10, "restart_every": 11}')$$,
                 '22023', 'restart_every 11 exceeds cap 10 of a pak_ucb selector',
                 'cap: pak_ucb refuses restart_every > cap (22023)');

-- an ill-conditioned kernel matrix (alpha 1e-9 under an intercept of 1e6, one
-- direction repeated): pivots below the rounding error are clamped to it, so
-- the factor stays finite (its rows grew to ±Infinity, and the mean was NaN,
-- from about 60 rewards on), and live = rebuilt
SELECT model_select.create_selector('b_illcond', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{"alpha": 1e-9, "intercept": 1e6}');
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 'b_illcond', 'a', ARRAY[i, -i, 1e-3 * i]::float8[], 0.5 FROM generate_series(1, 300) i;
CREATE TEMP TABLE illcond AS SELECT mean, width FROM model_select.scores('b_illcond', ARRAY[1, 2, 3]::float8[]);
SELECT ok((SELECT abs(mean - 0.5) < 1e-3 AND width > 0 AND width < 'Infinity' FROM illcond),
          'ill-conditioned kernel matrix: the mean of 300 rewards of 0.5 is 0.5, the width finite');
SELECT model_select.rebuild_state('b_illcond');
SELECT ok((SELECT abs(s.mean - i.mean) < 1e-9 AND abs(s.width - i.width) < 1e-9 * i.width
             FROM model_select.scores('b_illcond', ARRAY[1, 2, 3]::float8[]) s, illcond i),
          'ill-conditioned kernel matrix: rebuild_state() gives the same mean and width');

-- the log triggers' functions attached elsewhere by a superuser: clear errors
CREATE TABLE pg_temp.fake_log (arm_id text, selector_id int);
CREATE TRIGGER fake_apply AFTER INSERT ON pg_temp.fake_log REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION model_select_internal._rewards_apply();
SELECT throws_ok($$INSERT INTO pg_temp.fake_log VALUES ('1', 1)$$, '39P01', NULL,
                 'rewards_apply on a table whose arm_id is not an integer: 39P01');
CREATE TABLE pg_temp.fake_log2 (selector_id int);
CREATE TRIGGER fake_apply2 AFTER INSERT ON pg_temp.fake_log2 REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION model_select_internal._rewards_apply();
SELECT throws_ok($$INSERT INTO pg_temp.fake_log2 VALUES (1)$$, '55000', NULL,
                 'rewards_apply on a table without arm_id: 55000');
CREATE TABLE pg_temp.fake_log3 (arm_id int, selector_id int);
CREATE TRIGGER fake_apply3 AFTER INSERT ON pg_temp.fake_log3
    FOR EACH ROW EXECUTE FUNCTION model_select_internal._rewards_apply();
SELECT throws_ok($$INSERT INTO pg_temp.fake_log3 VALUES (1, 1)$$, '39P01', NULL,
                 'rewards_apply as a row trigger: 39P01');

SELECT * FROM finish();
ROLLBACK;
