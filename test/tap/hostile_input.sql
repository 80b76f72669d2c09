-- Hostile input corpus: several hundred calls across every function family,
-- generated from tables of hostile values rather than written one by one.
-- Each call must raise exactly its SQLSTATE (never XX000: a damaged state is
-- XX001, a refused number 22003, a bad setting 22023, ...), or, for the
-- extreme but valid inputs of the last group, succeed; and every table of
-- the extension must be unchanged afterwards (fingerprint: md5 of every row
-- of the eleven tables, with arm_state's xmin).  Damaged state bytes are
-- written by the superuser running this file; test/session/hostile_state.sh
-- checks that the backend survives them.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;

-- ---------------------------------------------------------------- helpers
\ir include/fingerprint.sql

-- A call of the corpus: its SQLSTATE ('00000': it succeeds), then the tables.
CREATE FUNCTION pg_temp.run(sql text, state text, descr text) RETURNS SETOF text LANGUAGE plpgsql AS $f$
DECLARE
  changed text;
BEGIN
  IF state = '00000' THEN
    RETURN NEXT lives_ok(sql, descr || ' -> succeeds');
  ELSE
    RETURN NEXT throws_ok(sql, state, NULL, descr || ' -> ' || state);
  END IF;
  SELECT string_agg(n.tbl, ', ') INTO changed
    FROM pg_temp.fingerprint() n JOIN fp0 o USING (tbl) WHERE n.md5 IS DISTINCT FROM o.md5;
  RETURN NEXT ok(changed IS NULL, descr || ': tables unchanged' || coalesce(' (changed: ' || changed || ')', ''));
END
$f$;

-- ---------------------------------------------------------------- fixtures
-- dim 3 everywhere; two arms a, b with a few rewards and a checkpoint.
SELECT model_select.create_selector('h_pak', 3, ARRAY['a', 'b'], 'pak_ucb');
SELECT model_select.create_selector('h_lin', 3, ARRAY['a', 'b'], 'lin_ucb');
SELECT model_select.create_selector('h_bkb', 3, ARRAY['a', 'b'], 'bkb');
SELECT model_select.create_selector('h_rff', 3, ARRAY['a', 'b'], 'rff_ucb', NULL, '{"features": 8}');
SELECT model_select.create_selector('h_greedy', 3, ARRAY['a', 'b'], 'greedy');
SELECT model_select.create_selector('h_cw', 3, ARRAY['a', 'b'], 'greedy', NULL, '{"cost_weight": 1e12}');
SELECT model_select.create_selector('h_raw', 3, ARRAY['a', 'b'], 'pak_ucb', 'linear', '{"normalize": false}');
SELECT model_select.create_selector('h_rawlin', 3, ARRAY['a', 'b'], 'lin_ucb', NULL, '{"normalize": false}');
-- damaged states: one selector per policy and kind of damage, arm a only
CREATE TEMP TABLE damage (kind text, expr text);
INSERT INTO damage VALUES
  ('20-byte header with n = 1999', $$substring(state from 1 for 12) || '\xcf070000'::bytea || substring(state from 17 for 4)$$),
  ('bad magic', $$overlay(state placing '\x00000000'::bytea from 1)$$),
  ('format 9', $$overlay(state placing '\x0900'::bytea from 5)$$),
  ('another policy tag', $$overlay(state placing '\x0300'::bytea from 7)$$),
  ('unknown policy tag', $$overlay(state placing '\xffff'::bytea from 7)$$),
  ('dimension 259', $$overlay(state placing '\x03010000'::bytea from 9)$$),
  ('n = -1', $$overlay(state placing '\xffffffff'::bytea from 13)$$),
  ('n = 2^31 - 1', $$overlay(state placing '\xffffff7f'::bytea from 13)$$),
  ('n + 1', $$overlay(state placing '\x04000000'::bytea from 13)$$),
  ('forgetting variant 2', $$overlay(state placing '\x02000000'::bytea from 17)$$),
  ('body 8 bytes short', $$substring(state from 1 for octet_length(state) - 8)$$),
  ('body 8 bytes long', $$state || '\x0000000000000000'::bytea$$),
  ('body of a partial float8', $$state || '\x00'::bytea$$),
  ('empty bytea', $$''::bytea$$),
  ('3 bytes', $$'\x4c4553'::bytea$$),
  ('100 bytes of garbage', $$decode(repeat('deadbeef', 25), 'hex')$$);
CREATE TEMP TABLE damaged (sel text, policy text, kind text, expr text);
INSERT INTO damaged
SELECT format('h_dmg_%s_%s', p, row_number() OVER (PARTITION BY p ORDER BY d.kind)), p, d.kind, d.expr
  FROM unnest(ARRAY['pak_ucb', 'lin_ucb', 'bkb', 'greedy']) p, damage d;
INSERT INTO damaged VALUES
  ('h_dmg_bkb_m', 'bkb', 'bkb: dictionary of 1e9 points', $$overlay(state placing '\x0000000065cdcd41'::bytea from 21)$$),
  ('h_dmg_bkb_nan', 'bkb', 'bkb: dictionary size NaN', $$overlay(state placing '\x000000000000f87f'::bytea from 21)$$);
SELECT count(*) FROM damaged, LATERAL model_select.create_selector(damaged.sel, 3, ARRAY['a'], damaged.policy) c;
INSERT INTO model_select.rewards(selector, arm, context, reward, cost)
SELECT s.name, a.name, ARRAY[i, 1, -i]::float8[], (i % 3) / 2.0, 0.1
  FROM model_select.selectors s JOIN model_select.arms a USING (selector_id), generate_series(1, 3) i;
SELECT count(model_select.checkpoint(name)) FROM model_select.selectors;
DO $$
DECLARE
  d record;
BEGIN
  FOR d IN SELECT * FROM damaged LOOP
    EXECUTE format('UPDATE model_select.arm_state st SET state = %s FROM model_select.selectors s '
                   'WHERE s.selector_id = st.selector_id AND s.name = %L', d.expr, d.sel);
  END LOOP;
END $$;
-- a cascade and a probe run, for their families
INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost)
SELECT 'h_pak', a, ARRAY[i, 1, 0]::float8[], 0.1 * i, 0.2 FROM unnest(ARRAY['a', 'b']) a, generate_series(1, 4) i;
SELECT model_select.create_probe_run('h_probe', 12, 2, 1.0,
  $p$SELECT ARRAY[x, 1, 0]::float8[], m FROM generate_series(1, 3) x, (VALUES ('m1'), ('m2')) v(m)$p$);
CREATE FUNCTION public.h_writer() RETURNS float8[] LANGUAGE plpgsql VOLATILE AS $f$
BEGIN
  DELETE FROM model_select.rewards;
  RETURN ARRAY[0.5, 0.5]::float8[];
END $f$;

-- ------------------------------------------------------------ the corpus
CREATE TEMP TABLE corpus (id serial, family text, descr text, sql text, state text);

-- 1. contexts x context-taking functions x contextual selectors
CREATE TEMP TABLE ctx (label text, lit text, state text);
INSERT INTO ctx VALUES
  ('NaN element', $$ARRAY[1, 'NaN', 0]::float8[]$$, '22000'),
  ('+Infinity element', $$ARRAY[1, 'Infinity', 0]::float8[]$$, '22000'),
  ('-Infinity element', $$ARRAY['-Infinity', 1, 0]::float8[]$$, '22000'),
  ('NaN element (real[])', $$ARRAY[1, 'NaN', 0]::real[]$$, '22000'),
  ('NULL element', $$ARRAY[1, NULL, 0]::float8[]$$, '22004'),
  ('all NULL', $$ARRAY[NULL, NULL, NULL]::float8[]$$, '22004'),
  ('empty array', $$'{}'::float8[]$$, '22000'),
  ('2-D 1 x 3', $$ARRAY[[1, 0, 0]]::float8[]$$, '22000'),
  ('2-D 3 x 1 (real[])', $$ARRAY[[1], [0], [0]]::real[]$$, '22000'),
  ('3-D 1 x 1 x 3', $$ARRAY[[[1, 0, 0]]]::float8[]$$, '22000'),
  ('dimension 2', $$ARRAY[1, 0]::float8[]$$, '22000'),
  ('100,000 elements', $$array_fill(1::float8, ARRAY[100000])$$, '22000'),
  ('zero vector of -0', $$ARRAY['-0', '-0', '-0']::float8[]$$, '22000');
CREATE TEMP TABLE ctx_fn (label text, tmpl text);
INSERT INTO ctx_fn VALUES
  ('select_model', $$SELECT model_select.select_model(%L, %s)$$),
  ('scores', $$SELECT * FROM model_select.scores(%L, %s)$$),
  ('route', $$SELECT * FROM model_select.route(%L, %s)$$),
  ('reward insert', $$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES (%L, 'a', %s, 0.5)$$),
  ('cascade_scores', $$SELECT * FROM model_select.cascade_scores(%L, %s)$$),
  ('cascade_route', $$SELECT * FROM model_select.cascade_route(%L, %s)$$);
INSERT INTO corpus(family, descr, sql, state)
SELECT f.label, format('%s(%s): %s', f.label, s, c.label), format(f.tmpl, s, c.lit), c.state
  FROM ctx_fn f, ctx c, unnest(ARRAY['h_pak', 'h_lin', 'h_bkb', 'h_rff']) s
 WHERE s IN ('h_pak', 'h_lin') OR f.label IN ('select_model', 'reward insert');

-- 2. unnormalised contexts whose squared norm or kernel value overflows
INSERT INTO corpus(family, descr, sql, state)
SELECT f.label, format('%s(%s): context %s', f.label, s, v), format(f.tmpl, s, v), '22003'
  FROM ctx_fn f, unnest(ARRAY['h_raw', 'h_rawlin']) s,
       unnest(ARRAY[$$ARRAY[1e60, 1, 0]::float8[]$$, $$ARRAY[1e200, 1e200, 1e200]::float8[]$$,
                    $$ARRAY[1e51, 0, 0]::float8[]$$]) v
 WHERE f.label IN ('select_model', 'scores', 'route', 'reward insert');

-- 3. rewards and costs
INSERT INTO corpus(family, descr, sql, state)
SELECT 'reward insert', format('reward insert(%s): reward %s, cost %s', s, r, c),
       format($$INSERT INTO model_select.rewards(selector, arm, context, reward, cost) VALUES (%L, 'b', ARRAY[1, 0, 0]::float8[], %s, %s)$$, s, r, c),
       st
  FROM (VALUES ('''NaN''::float8', 'NULL', '22003'), ('''Infinity''::float8', 'NULL', '22003'),
               ('''-Infinity''::float8', 'NULL', '22003'), ('1e308', 'NULL', '22003'), ('-1e308', 'NULL', '22003'),
               ('1.0000001', 'NULL', '22003'), ('-5e-324', 'NULL', '22003'), ('NULL', 'NULL', '22004'),
               ('0.5', '''NaN''::float8', '22003'), ('0.5', '-1', '22003'), ('0.5', '-5e-324', '22003'),
               ('0.5', '''Infinity''::float8', '22003')) v(r, c, st),
       unnest(ARRAY['h_pak', 'h_greedy', 'h_cw']) s;
INSERT INTO corpus(family, descr, sql, state)
SELECT 'reward insert', format('reward insert(h_cw, cost_weight 1e12): cost %s', c),
       format($$INSERT INTO model_select.rewards(selector, arm, context, reward, cost) VALUES ('h_cw', 'a', ARRAY[1, 0, 0]::float8[], 0.5, %s)$$, c),
       '22003'
  FROM unnest(ARRAY['1e300', '1e4', '1.7e308']) c;
INSERT INTO corpus(family, descr, sql, state) VALUES
  ('reward insert', 'reward insert: unknown decision', $$INSERT INTO model_select.rewards(decision_id, reward) VALUES (-1, 0.5)$$, '42704'),
  ('reward insert', 'reward insert: no selector', $$INSERT INTO model_select.rewards(arm, context, reward) VALUES ('a', ARRAY[1, 0, 0]::float8[], 0.5)$$, '22004'),
  ('reward insert', 'reward insert: NULL context', $$INSERT INTO model_select.rewards(selector, arm, reward) VALUES ('h_pak', 'a', 0.5)$$, '22004'),
  ('reward insert', 'reward insert: text context', $$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('h_pak', 'a', '{a,b,c}', 0.5)$$, '22P02'),
  ('reward insert', 'reward insert: many rows, the last one bad', $$INSERT INTO model_select.rewards(selector, arm, context, reward)
     SELECT 'h_pak', 'a', ARRAY[i, 1, 0]::float8[], CASE WHEN i = 50 THEN 2 ELSE 0.5 END FROM generate_series(1, 50) i$$, '22003'),
  ('cascade observation', 'cascade observation: value NaN', $$INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost) VALUES ('h_pak', 'a', ARRAY[1, 0, 0]::float8[], 'NaN', 0.1)$$, '22003'),
  ('cascade observation', 'cascade observation: cost -Infinity', $$INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost) VALUES ('h_pak', 'a', ARRAY[1, 0, 0]::float8[], 0.5, '-Infinity')$$, '22003'),
  ('cascade observation', 'cascade observation: 2-D context', $$INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost) VALUES ('h_pak', 'a', ARRAY[[1, 0, 0]]::float8[], 0.5, 0.1)$$, '22000');

-- 4. settings: wrong JSON types, deep nesting, extreme and contradictory values
CREATE TEMP TABLE bad_settings (policy text, kernel text, settings text);
INSERT INTO bad_settings VALUES
  ('pak_ucb', NULL, '{"alpha": "1"}'), ('pak_ucb', NULL, '{"alpha": [1]}'), ('pak_ucb', NULL, '{"alpha": {"v": 1}}'),
  ('pak_ucb', NULL, '{"alpha": null}'), ('pak_ucb', NULL, '{"alpha": true}'), ('pak_ucb', NULL, '{"alpha": "NaN"}'),
  ('pak_ucb', NULL, '{"alpha": 0}'), ('pak_ucb', NULL, '{"alpha": -1}'), ('pak_ucb', NULL, '{"alpha": 1e-400}'),
  ('pak_ucb', NULL, '{"alpha": 1e400}'), ('pak_ucb', NULL, '{"alpha": 1e13}'),
  ('pak_ucb', NULL, '{"bandwidth": 1e-300}'), ('pak_ucb', NULL, '{"bandwidth": 0}'), ('pak_ucb', NULL, '{"bandwidth": -0.0}'),
  ('pak_ucb', NULL, '{"bandwidth": 1e7}'), ('pak_ucb', NULL, '{"cap": 0}'), ('pak_ucb', NULL, '{"cap": 1.5}'),
  ('pak_ucb', NULL, '{"cap": 10001}'), ('pak_ucb', NULL, '{"eta": -1}'), ('pak_ucb', NULL, '{"intercept": 1e7}'),
  ('pak_ucb', NULL, '{"window": -1}'), ('pak_ucb', NULL, '{"discount": 0}'), ('pak_ucb', NULL, '{"discount": 1.5}'),
  ('pak_ucb', NULL, '{"window": 5, "discount": 0.9}'), ('pak_ucb', NULL, '{"window": 5, "restart_every": 9}'),
  ('pak_ucb', NULL, '{"confidence": "dmm", "window": 5}'), ('pak_ucb', NULL, '{"confidence": "nope"}'),
  ('pak_ucb', NULL, '{"confidence": "dmm", "grid": []}'), ('pak_ucb', NULL, '{"confidence": "dmm", "grid": [1, 1]}'),
  ('pak_ucb', NULL, '{"confidence": "dmm", "grid": [1, "2"]}'),
  ('pak_ucb', NULL, '{"confidence": "dmm", "grid": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}'),
  ('pak_ucb', NULL, '{"reward_min": 1, "reward_max": 0}'), ('pak_ucb', NULL, '{"reward_min": 1, "reward_max": 1}'),
  ('pak_ucb', NULL, '{"reward_max": 1e16}'), ('pak_ucb', NULL, '{"cost_weight": -1}'), ('pak_ucb', NULL, '{"cost_weight": 1e13}'),
  ('pak_ucb', NULL, '{"features": 8}'), ('pak_ucb', NULL, '{"bandwith": 1}'), ('pak_ucb', NULL, '{"": 1}'),
  ('pak_ucb', NULL, '{"alpha; DROP TABLE model_select.rewards; --": 1}'), ('pak_ucb', NULL, '{"αλφα": 1}'),
  ('pak_ucb', NULL, '[]'), ('pak_ucb', NULL, '1'), ('pak_ucb', NULL, '"alpha"'), ('pak_ucb', NULL, 'null'),
  ('pak_ucb', NULL, '{"alpha": ' || repeat('[', 500) || '1' || repeat(']', 500) || '}'),
  ('pak_ucb', 'matern', '{"nu": 1.0}'), ('pak_ucb', 'poly', '{"degree": 11}'), ('pak_ucb', 'poly', '{"bandwidth": 1}'),
  ('pak_ucb', NULL, '{"cap": 10000, "confidence": "dmm"}'), ('pak_ucb', NULL, '{"cap": 10000, "confidence": "cmm"}'),
  ('rff_ucb', NULL, '{"features": 0}'), ('rff_ucb', NULL, '{"features": 8192}'), ('rff_ucb', NULL, '{"cap": 10}'),
  ('bkb', NULL, '{"qbar": 0}'), ('bkb', NULL, '{"adaptive_beta": 1}'), ('bkb', NULL, '{"window": 5}'),
  ('lin_ucb', NULL, '{"confidence": "igp", "horizon": 0}'), ('lin_ucb', NULL, '{"confidence": "igp", "alpha": 1}'),
  ('lin_ucb', NULL, '{"window": 100000}'), ('greedy', NULL, '{"alpha": 1}'), ('random', NULL, '{"window": 5}'),
  ('lin_ucb', NULL, '{"window": 1e-400}'), ('pak_ucb', NULL, '{"cap": 100.0000000000000000001}'),
  ('greedy', NULL, '{"clock": "time", "window": 1e-400}');
INSERT INTO corpus(family, descr, sql, state)
SELECT 'create_selector', format('create_selector(%s, %s): settings %s', policy, coalesce(kernel, 'default'), left(settings, 80)),
       format($$SELECT model_select.create_selector('h_new', %s, ARRAY['a'], %L, %L, %L)$$,
              CASE WHEN settings LIKE '%100000%' OR settings LIKE '%10000,%' THEN 12000 ELSE 3 END, policy, kernel, settings),
       '22023'
  FROM bad_settings;
INSERT INTO corpus(family, descr, sql, state)
SELECT 'alter_selector', format('alter_selector(h_pak): settings %s', left(settings, 80)),
       format($$SELECT model_select.alter_selector('h_pak', %L)$$, settings), '22023'
  FROM bad_settings WHERE policy = 'pak_ucb' AND kernel IS NULL AND settings NOT LIKE '%cap": 10000%' LIMIT 20;
INSERT INTO corpus(family, descr, sql, state)
SELECT 'resolve_settings', format('resolve_settings(%s, %s)', policy, left(settings, 80)),
       format($$SELECT model_select.resolve_settings(%L, %L, %L)$$, policy, kernel, settings), '22023'
  FROM bad_settings WHERE settings NOT LIKE '%cap": 10000%' AND settings NOT LIKE '%8192%' AND settings NOT LIKE '%100000%';

-- 5. create_selector arguments: dimensions, arms, names, policies
INSERT INTO corpus(family, descr, sql, state)
SELECT 'create_selector', 'create_selector: ' || d, s, st FROM (VALUES
  ('dim 0', $$SELECT model_select.create_selector('h_new', 0, ARRAY['a'])$$, '22023'),
  ('dim -1', $$SELECT model_select.create_selector('h_new', -1, ARRAY['a'])$$, '22023'),
  ('dim 16001', $$SELECT model_select.create_selector('h_new', 16001, ARRAY['a'])$$, '22023'),
  ('dim NULL', $$SELECT model_select.create_selector('h_new', NULL, ARRAY['a'])$$, '22004'),
  ('lin_ucb dim 12000 (no room for its Gram matrix)', $$SELECT model_select.create_selector('h_new', 12000, ARRAY['a'], 'lin_ucb')$$, '22023'),
  ('pak_ucb dim 16000 with cap 10000', $$SELECT model_select.create_selector('h_new', 16000, ARRAY['a'], 'pak_ucb', 'rbf', '{"cap": 10000}')$$, '22023'),
  ('2-D arms', $$SELECT model_select.create_selector('h_new', 3, ARRAY[['a', 'b'], ['c', 'd']])$$, '22023'),
  ('3-D arms', $$SELECT model_select.create_selector('h_new', 3, ARRAY[[['a']]])$$, '22023'),
  ('empty arms', $$SELECT model_select.create_selector('h_new', 3, '{}'::text[])$$, '22023'),
  ('NULL arms', $$SELECT model_select.create_selector('h_new', 3, NULL)$$, '22004'),
  ('a NULL arm', $$SELECT model_select.create_selector('h_new', 3, ARRAY['a', NULL])$$, '22004'),
  ('an empty arm name', $$SELECT model_select.create_selector('h_new', 3, ARRAY['a', ''])$$, '22004'),
  ('the same arm twice', $$SELECT model_select.create_selector('h_new', 3, ARRAY['a', 'a'])$$, '42710'),
  ('NULL name', $$SELECT model_select.create_selector(NULL, 3, ARRAY['a'])$$, '22004'),
  ('empty name', $$SELECT model_select.create_selector('', 3, ARRAY['a'])$$, '22023'),
  ('existing name', $$SELECT model_select.create_selector('h_pak', 3, ARRAY['a'])$$, '42710'),
  ('unknown policy', $$SELECT model_select.create_selector('h_new', 3, ARRAY['a'], 'pak_ucb; DROP TABLE x')$$, '22023'),
  ('NULL policy', $$SELECT model_select.create_selector('h_new', 3, ARRAY['a'], NULL)$$, '22004'),
  ('a kernel for lin_ucb', $$SELECT model_select.create_selector('h_new', 3, ARRAY['a'], 'lin_ucb', 'rbf')$$, '22023'),
  ('unknown kernel', $$SELECT model_select.create_selector('h_new', 3, ARRAY['a'], 'pak_ucb', 'rbf''--')$$, '22023'),
  ('laplacian for a context of 2-D arms', $$SELECT model_select.create_selector('h_new', 3, ARRAY[['a'], ['b']], 'pak_ucb', 'laplacian')$$, '22023'),
  ('add_arm NULL', $$SELECT model_select.add_arm('h_pak', NULL)$$, '22004'),
  ('add_arm to a NULL selector', $$SELECT model_select.add_arm(NULL, 'z')$$, '22004'),
  ('drop_selector NULL', $$SELECT model_select.drop_selector(NULL)$$, '22004'),
  ('retire_arm of a NULL selector', $$SELECT model_select.retire_arm(NULL, 'a')$$, '22004'),
  ('alter_selector NULL', $$SELECT model_select.alter_selector(NULL, '{}')$$, '22004'),
  ('grant_selector on a NULL selector', $$SELECT model_select.grant_selector(NULL, current_user::regrole, 'route')$$, '22004'),
  ('add_arm to a missing selector', $$SELECT model_select.add_arm('h_nope', 'z')$$, '42704'),
  ('add_arm that is active', $$SELECT model_select.add_arm('h_pak', 'a')$$, '42710')
) v(d, s, st);

-- 6. names: injection and unicode, in every function that takes a selector
CREATE TEMP TABLE hostile_name (name text);
INSERT INTO hostile_name VALUES
  ($$h_pak'; DROP TABLE model_select.rewards; --$$), ($$h_pak" OR 1=1 --$$), ('h_pak%'), ('H_PAK'), (' h_pak'),
  ('ℎ_𝓅𝒶𝓀'), ('h_pak' || chr(8203)), ('选择器'), (repeat('x', 10000));
INSERT INTO corpus(family, descr, sql, state)
SELECT f, format('%s: selector name %s', f, left(n.name, 30)), format(t, n.name), '42704'
  FROM hostile_name n, (VALUES
    ('select_model', $$SELECT model_select.select_model(%L, ARRAY[1, 0, 0]::float8[])$$),
    ('scores', $$SELECT * FROM model_select.scores(%L, ARRAY[1, 0, 0]::float8[])$$),
    ('route', $$SELECT * FROM model_select.route(%L, ARRAY[1, 0, 0]::float8[])$$),
    ('reward insert', $$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES (%L, 'a', ARRAY[1, 0, 0]::float8[], 0.5)$$),
    ('rebuild_state', $$SELECT model_select.rebuild_state(%L)$$),
    ('checkpoint', $$SELECT model_select.checkpoint(%L)$$),
    ('alter_selector', $$SELECT model_select.alter_selector(%L, '{}')$$),
    ('drop_selector', $$SELECT model_select.drop_selector(%L)$$),
    ('retire_arm', $$SELECT model_select.retire_arm(%L, 'a')$$),
    ('cascade', $$SELECT * FROM model_select.cascade(%L, ARRAY[1, 0, 0]::float8[])$$),
    ('cascade_refit', $$SELECT model_select.cascade_refit(%L)$$),
    ('probe_status', $$SELECT * FROM model_select.probe_status(%L)$$)) fn(f, t);
INSERT INTO corpus(family, descr, sql, state)
SELECT 'reward insert', format('reward insert: arm name %s', left(n.name, 30)),
       format($$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('h_pak', %L, ARRAY[1, 0, 0]::float8[], 0.5)$$, n.name),
       '42704'
  FROM hostile_name n;

-- 7. replay(): source, values and arguments
INSERT INTO corpus(family, descr, sql, state)
SELECT 'replay', 'replay: ' || d, 'SELECT count(*) FROM model_select.replay(' || s || ')', st FROM (VALUES
  ('negative cost', $$'SELECT ARRAY[1, 0]::float8[], ARRAY[0.5, 0.2]::float8[], ARRAY[-1, 1]::float8[]', 'greedy'$$, '22003'),
  ('cost -0 then NaN', $$'SELECT ARRAY[1, 0]::float8[], ARRAY[0.5, 0.2]::float8[], ARRAY[''-0'', ''NaN'']::float8[]', 'greedy'$$, '22000'),
  ('reward 1e308 in a range of 1e15', $$'SELECT ARRAY[1, 0]::float8[], ARRAY[1e308, -1e308]::float8[]', 'greedy', NULL, '{"reward_min": -1e15, "reward_max": 1e15}'$$, '22003'),
  ('reward outside [0, 1]', $$'SELECT ARRAY[1, 0]::float8[], ARRAY[1.5, 0.2]::float8[]', 'pak_ucb'$$, '22003'),
  ('expected reward outside [0, 1]', $$'SELECT ARRAY[1, 0]::float8[], ARRAY[0.5, 0.2]::float8[], NULL::float8[], ARRAY[7, 0]::float8[]', 'greedy'$$, '22003'),
  ('utility overflow', $$'SELECT ARRAY[1, 0]::float8[], ARRAY[0.5, 0.2]::float8[], ARRAY[1e300, 0]::float8[]', 'greedy', cost_weight => 1e12$$, '22003'),
  ('a source that writes', $$'SELECT ARRAY[1, 0]::float8[], public.h_writer()', 'greedy'$$, '25006'),
  ('a data-modifying CTE', $$'WITH d AS (DELETE FROM model_select.rewards RETURNING 1) SELECT ARRAY[1, 0]::float8[], ARRAY[0.5, 0.2]::float8[] FROM d', 'greedy'$$, '0A000'),
  ('a DELETE', $$'DELETE FROM model_select.rewards', 'greedy'$$, '0A000'),
  ('two statements', $$'SELECT 1; DELETE FROM model_select.rewards', 'greedy'$$, '0A000'),
  ('syntax error', $$'SELEC 1', 'greedy'$$, '42601'),
  ('NULL source', $$NULL, 'greedy'$$, '22004'),
  ('one column', $$'SELECT ARRAY[1, 0]::float8[]', 'greedy'$$, '42804'),
  ('text columns', $$'SELECT ''{1,0}''::text, ''{1,0}''::text', 'greedy'$$, '42804'),
  ('no rows', $$'SELECT ARRAY[1, 0]::float8[], ARRAY[0.5]::float8[] WHERE false', 'greedy'$$, '22023'),
  ('2-D rewards', $$'SELECT ARRAY[1, 0]::float8[], ARRAY[[0.5, 0.2]]::float8[]', 'greedy'$$, '22000'),
  ('empty rewards', $$'SELECT ARRAY[1, 0]::float8[], ''{}''::float8[]', 'greedy'$$, '22000'),
  ('NaN context', $$'SELECT ARRAY[1, ''NaN'']::float8[], ARRAY[0.5, 0.2]::float8[]', 'greedy'$$, '22000'),
  ('NULL context', $$'SELECT NULL::float8[], ARRAY[0.5, 0.2]::float8[]', 'greedy'$$, '22004'),
  ('contexts of two lengths', $$'SELECT ARRAY[1, 0]::float8[], ARRAY[0.5]::float8[] UNION ALL SELECT ARRAY[1]::float8[], ARRAY[0.5]::float8[]', 'greedy'$$, '22000'),
  ('zero context for pak_ucb', $$'SELECT ARRAY[0, 0]::float8[], ARRAY[0.5]::float8[]', 'pak_ucb'$$, '22000'),
  ('unknown policy', $$'SELECT ARRAY[1, 0]::float8[], ARRAY[0.5]::float8[]', 'nope'$$, '22023'),
  ('bad settings', $$'SELECT ARRAY[1, 0]::float8[], ARRAY[0.5]::float8[]', 'pak_ucb', NULL, '{"alpha": -1}'$$, '22023'),
  ('cost_weight NaN', $$'SELECT ARRAY[1, 0]::float8[], ARRAY[0.5]::float8[]', 'greedy', cost_weight => 'NaN'$$, '22023'),
  ('cost_weight -1', $$'SELECT ARRAY[1, 0]::float8[], ARRAY[0.5]::float8[]', 'greedy', cost_weight => -1$$, '22023'),
  ('rounds 0', $$'SELECT ARRAY[1, 0]::float8[], ARRAY[0.5]::float8[]', 'greedy', rounds => 0$$, '22023'),
  ('passes 0', $$'SELECT ARRAY[1, 0]::float8[], ARRAY[0.5]::float8[]', 'greedy', passes => 0$$, '22023'),
  ('checkpoint -1', $$'SELECT ARRAY[1, 0]::float8[], ARRAY[0.5]::float8[]', 'greedy', checkpoint => -1$$, '22023'),
  ('seed NULL', $$'SELECT ARRAY[1, 0]::float8[], ARRAY[0.5]::float8[]', 'greedy', seed => NULL$$, '22004'),
  ('2^31 - 1 rounds, a result row each (2^31 checkpoints kept)', $$'SELECT ARRAY[1, 0]::float8[], ARRAY[0.5, 0.2]::float8[]', 'greedy', rounds => 2147483647, checkpoint => 1$$, '54000'),
  ('a row whose rewards are all NULL (no arm to play)', $$'SELECT ARRAY[1, 0]::float8[], ARRAY[0.5, 0.2]::float8[] UNION ALL SELECT ARRAY[1, 0]::float8[], ARRAY[NULL, NULL]::float8[]', 'greedy'$$, '22000'),
  ('contexts of dimension 16001 (a 2 GB Gram matrix)', $$'SELECT array_fill(1::float8, ARRAY[16001]), ARRAY[0.5]::float8[]', 'lin_ucb'$$, '22023')
) v(d, s, st);

-- 8. reservation_index, cascade_select, cascade_next, synthetic environments, probes
INSERT INTO corpus(family, descr, sql, state)
SELECT split_part(d, ':', 1), d, s, st FROM (VALUES
  ('reservation_index: unknown distribution', $$SELECT model_select.reservation_index('uniform''--', ARRAY[0, 1]::float8[], 0.1)$$, '22023'),
  ('reservation_index: 2-D params', $$SELECT model_select.reservation_index('uniform', ARRAY[[0, 1]]::float8[], 0.1)$$, '22023'),
  ('reservation_index: NULL element', $$SELECT model_select.reservation_index('uniform', ARRAY[0, NULL]::float8[], 0.1)$$, '22004'),
  ('reservation_index: NaN param', $$SELECT model_select.reservation_index('uniform', ARRAY[0, 'NaN']::float8[], 0.1)$$, '22023'),
  ('reservation_index: empty params', $$SELECT model_select.reservation_index('uniform', '{}'::float8[], 0.1)$$, '22023'),
  ('reservation_index: cost NaN', $$SELECT model_select.reservation_index('uniform', ARRAY[0, 1]::float8[], 'NaN')$$, '22023'),
  ('reservation_index: cost -Infinity', $$SELECT model_select.reservation_index('uniform', ARRAY[0, 1]::float8[], '-Infinity')$$, '22023'),
  ('cascade_select: 2-D values', $$SELECT model_select.cascade_select('h_pak', ARRAY[[0.1, 0.2]]::float8[], ARRAY['a', 'b'])$$, '22000'),
  ('cascade_select: 2-D arms', $$SELECT model_select.cascade_select('h_pak', ARRAY[0.1, 0.2]::float8[], ARRAY[['a', 'b']])$$, '22000'),
  ('cascade_select: NULL arm', $$SELECT model_select.cascade_select('h_pak', ARRAY[0.1, 0.2]::float8[], ARRAY['a', NULL])$$, '22004'),
  ('cascade_select: lengths differ', $$SELECT model_select.cascade_select('h_pak', ARRAY[0.1]::float8[], ARRAY['a', 'b'])$$, '22023'),
  ('cascade_select: NaN value', $$SELECT model_select.cascade_select('h_pak', ARRAY[0.1, 'NaN']::float8[], ARRAY['a', 'b'])$$, '22000'),
  ('cascade_select: unknown arm', $$SELECT model_select.cascade_select('h_pak', ARRAY[0.1, 0.2]::float8[], ARRAY['a', 'z''--'])$$, '42704'),
  ('cascade_next: NaN best value', $$SELECT model_select.cascade_next('h_pak', ARRAY[1, 0, 0]::float8[], 'NaN', ARRAY['a'])$$, '22023'),
  ('cascade_next: 2-D queried', $$SELECT model_select.cascade_next('h_pak', ARRAY[1, 0, 0]::float8[], 0.5, ARRAY[['a']])$$, '22000'),
  ('cascade_next: unknown queried arm', $$SELECT model_select.cascade_next('h_pak', ARRAY[1, 0, 0]::float8[], 0.5, ARRAY['zz'])$$, '42704'),
  ('cascade: beta NaN', $$SELECT * FROM model_select.cascade('h_pak', ARRAY[1, 0, 0]::float8[], 'NaN')$$, '22023'),
  ('cascade: beta -Infinity', $$SELECT * FROM model_select.cascade('h_pak', ARRAY[1, 0, 0]::float8[], '-Infinity')$$, '22023'),
  ('synthetic_clusters: dim 0', $$SELECT count(*) FROM model_select.synthetic_clusters(10, 0, 2)$$, '22023'),
  ('synthetic_clusters: rounds -1', $$SELECT count(*) FROM model_select.synthetic_clusters(-1, 2, 2)$$, '22023'),
  ('synthetic_clusters: noise NaN', $$SELECT count(*) FROM model_select.synthetic_clusters(10, 2, 2, noise => 'NaN')$$, '22023'),
  ('synthetic_clusters: NULL arms', $$SELECT count(*) FROM model_select.synthetic_clusters(10, 2, NULL)$$, '22023'),
  ('synthetic_clusters: huge', $$SELECT count(*) FROM model_select.synthetic_clusters(2000000000, 16000, 1000)$$, '22023'),
  ('synthetic_rkhs: unknown kernel', $$SELECT count(*) FROM model_select.synthetic_rkhs(10, 2, 2, kernel => 'poly')$$, '22023'),
  ('synthetic_rkhs: bandwidth 0', $$SELECT count(*) FROM model_select.synthetic_rkhs(10, 2, 2, bandwidth => 0)$$, '22023'),
  ('synthetic_rkhs: rkhs_norm Infinity', $$SELECT count(*) FROM model_select.synthetic_rkhs(10, 2, 2, rkhs_norm => 'Infinity')$$, '22023'),
  ('create_probe_run: a pool that writes', $$SELECT model_select.create_probe_run('h_p2', 12, 2, 1.0, 'SELECT public.h_writer(), ''m''::text')$$, '25006'),
  ('create_probe_run: a DELETE pool', $$SELECT model_select.create_probe_run('h_p2', 12, 2, 1.0, 'DELETE FROM model_select.rewards')$$, '0A000'),
  ('create_probe_run: 2-D prompts', $$SELECT model_select.create_probe_run('h_p2', 12, 2, 1.0, 'SELECT ARRAY[[1, 0]]::float8[], ''m''::text')$$, '22000'),
  ('create_probe_run: NaN prompt', $$SELECT model_select.create_probe_run('h_p2', 12, 2, 1.0, 'SELECT ARRAY[1, ''NaN'']::float8[], ''m''::text')$$, '22000'),
  ('create_probe_run: empty pool', $$SELECT model_select.create_probe_run('h_p2', 12, 2, 1.0, 'SELECT ARRAY[1]::float8[], ''m''::text WHERE false')$$, '22023'),
  ('create_probe_run: beta NaN', $$SELECT model_select.create_probe_run('h_p2', 12, 2, 'NaN', 'SELECT ARRAY[1]::float8[], ''m''::text')$$, '22023'),
  ('create_probe_run: bad settings', $$SELECT model_select.create_probe_run('h_p2', 12, 2, 1.0, 'SELECT ARRAY[1]::float8[], ''m''::text', 'rbf', '{"alpha": [1]}')$$, '22023'),
  ('create_probe_run: existing name', $$SELECT model_select.create_probe_run('h_probe', 12, 2, 1.0, 'SELECT ARRAY[1]::float8[], ''m''::text')$$, '42710'),
  ('probe_report: NaN score', $$SELECT model_select.probe_report('h_probe', 1, 'NaN')$$, '22023'),
  ('probe_report: unknown item', $$SELECT model_select.probe_report('h_probe', 100000, 0.5)$$, '22023'),
  ('probe_next: k = -1', $$SELECT * FROM model_select.probe_next('h_probe', -1)$$, '22023'),
  ('drop_probe_run: unknown run', $$SELECT model_select.drop_probe_run('h_probe''; --')$$, '42704'),
  ('probe_report: score 1e308 (the fit would overflow)', $$SELECT model_select.probe_report('h_probe', 1, 1e308)$$, '22023'),
  ('probe_report: score -1e16', $$SELECT model_select.probe_report('h_probe', 1, -1e16)$$, '22023'),
  ('synthetic_rkhs: noise 1e308 (rewards overflow)', $$SELECT count(*) FROM model_select.synthetic_rkhs(10, 2, 2, noise => 1e308)$$, '22023'),
  ('synthetic_rkhs: rkhs_norm 1e16', $$SELECT count(*) FROM model_select.synthetic_rkhs(10, 2, 2, rkhs_norm => 1e16)$$, '22023'),
  ('quality_hull: max_cost NaN', $$SELECT * FROM model_select.quality_hull('{0.5, 1}', '{0.5, 0.6}', 'NaN')$$, '22023'),
  ('quality_hull: 2-D arrays', $$SELECT * FROM model_select.quality_hull('{{0.5, 1}}', '{{0.5, 0.6}}', 1)$$, '22023'),
  ('quality_hull: a NULL quality', $$SELECT * FROM model_select.quality_hull('{0.5, 1}', '{0.5, NULL}', 1)$$, '22023'),
  ('quality_cost: a source of integers', $$SELECT * FROM model_select.quality_cost('SELECT 1, 2, 3', 'greedy', cost_weights => '{0}')$$, '42804'),
  ('quality_cost: a source of two columns', $$SELECT * FROM model_select.quality_cost('SELECT ARRAY[1, 0]::float8[], ARRAY[0.5, 0.2]::float8[]', 'greedy', cost_weights => '{0}')$$, '22023'),
  ('quality_cost: a 2-D rewards array', $$SELECT * FROM model_select.quality_cost('SELECT ARRAY[1, 0]::float8[], ARRAY[[0.5, 0.2]]::float8[], ARRAY[1, 1]::float8[]', 'greedy', cost_weights => '{0}')$$, '22000'),
  ('quality_cost: a source that writes', $$SELECT * FROM model_select.quality_cost('SELECT ARRAY[1, 0]::float8[], public.h_writer(), ARRAY[1, 1]::float8[]', 'greedy', cost_weights => '{0}')$$, '25006'),
  ('grant_selector: a role OID of no role', $$SELECT model_select.grant_selector('h_pak', 99999::oid::regrole, 'route')$$, '42704'),
  ('grant_selector: role OID 0', $$SELECT model_select.grant_selector('h_pak', 0::oid::regrole, 'route')$$, '42704'),
  ('setup_role: a role OID of no role', $$SELECT * FROM model_select.setup_role(99999::oid::regrole, 'application')$$, '42704')
) v(d, s, st);

-- 9. damaged states (written above by the superuser): every reader refuses
-- them.  (lin_ucb and greedy states without a window do not grow with n:
-- a wrong count there is read as it is, harmless, so it is not in the list.)
INSERT INTO corpus(family, descr, sql, state)
SELECT f, format('%s(%s): %s', f, d.policy, d.kind), format(t, d.sel), 'XX001'
  FROM damaged d, (VALUES
    ('select_model', $$SELECT model_select.select_model(%L, ARRAY[1, 0, 0]::float8[])$$),
    ('scores', $$SELECT * FROM model_select.scores(%L, ARRAY[1, 0, 0]::real[])$$),
    ('route', $$SELECT * FROM model_select.route(%L, ARRAY[1, 0, 0]::float8[])$$),
    ('checkpoint', $$SELECT model_select.checkpoint(%L)$$)) fn(f, t)
 WHERE NOT (d.policy IN ('lin_ucb', 'greedy') AND d.kind IN ('n + 1', 'n = 2^31 - 1'));
INSERT INTO corpus(family, descr, sql, state)
SELECT 'resample', format('resample(bkb): %s', d.kind), format($$SELECT model_select.resample(%L)$$, d.sel), 'XX001'
  FROM damaged d WHERE d.policy = 'bkb';

-- 10. extreme but valid inputs: they work (and scoring writes nothing)
INSERT INTO corpus(family, descr, sql, state)
SELECT f.label, format('%s(%s): context %s', f.label, s, v), format(f.tmpl, s, v), '00000'
  FROM ctx_fn f, unnest(ARRAY['h_pak', 'h_lin', 'h_bkb', 'h_rff', 'h_greedy']) s,
       unnest(ARRAY[$$ARRAY[5e-324, 0, 0]::float8[]$$, $$ARRAY[1.7e308, -1.7e308, 1.7e308]::float8[]$$,
                    $$ARRAY['-0', 1, '-0']::float8[]$$, $$'[0:2]={1,0,0}'::float8[]$$, $$ARRAY[1e-45, 3e38, 0]::real[]$$]) v
 WHERE f.label IN ('select_model', 'scores', 'cascade_scores');

-- ------------------------------------------------------------------ run it
CREATE TEMP TABLE fp0 AS SELECT * FROM pg_temp.fingerprint();
-- route_batch: the contexts above as rows of its source, damaged states,
-- hostile names, and a source that writes
INSERT INTO corpus(family, descr, sql, state)
SELECT 'route_batch', format('route_batch(%s): %s', s, c.label),
       format($$SELECT * FROM model_select.route_batch(%L, %L, log => true)$$, s, 'SELECT 1, ' || c.lit), c.state
  FROM ctx c, unnest(ARRAY['h_pak', 'h_lin']) s;
INSERT INTO corpus(family, descr, sql, state)
SELECT 'route_batch', format('route_batch(%s): %s', d.policy, d.kind),
       format($$SELECT * FROM model_select.route_batch(%L, 'SELECT 1, ARRAY[1, 0, 0]::float8[]')$$, d.sel), 'XX001'
  FROM damaged d WHERE NOT (d.policy IN ('lin_ucb', 'greedy') AND d.kind IN ('n + 1', 'n = 2^31 - 1'));
INSERT INTO corpus(family, descr, sql, state)
SELECT 'route_batch', format('route_batch: selector name %s', left(n.name, 30)),
       format($$SELECT * FROM model_select.route_batch(%L, 'SELECT 1, ARRAY[1, 0, 0]::float8[]')$$, n.name), '42704'
  FROM hostile_name n;
INSERT INTO corpus(family, descr, sql, state) VALUES
  ('route_batch', 'route_batch: a source that calls a writing function',
   $$SELECT * FROM model_select.route_batch('h_lin', 'SELECT 1, public.h_writer()')$$, '25006'),
  ('route_batch', 'route_batch: a source that is not a query',
   $$SELECT * FROM model_select.route_batch('h_lin', 'DELETE FROM model_select.rewards')$$, '22023'),
  ('route_batch', 'route_batch: an empty source',
   $$SELECT * FROM model_select.route_batch('h_lin', '')$$, '22023'),
  ('route_batch', 'route_batch: a source of two queries',
   $$SELECT * FROM model_select.route_batch('h_lin', 'SELECT 1, ARRAY[1, 0, 0]::float8[]; SELECT 2, ARRAY[1, 0, 0]::float8[]')$$, '22023'),
  ('drift', 'drift: recent NULL', $$SELECT * FROM model_select.drift('h_lin', NULL)$$, '22004'),
  ('drift', 'drift: recent 0', $$SELECT * FROM model_select.drift('h_lin', 0)$$, '22023'),
  ('drift', 'drift: recent -1', $$SELECT * FROM model_select.drift('h_lin', -1)$$, '22023'),
  ('drift', 'drift: recent 1 (the least)', $$SELECT * FROM model_select.drift('h_lin', 1)$$, '00000'),
  ('route_batch', 'route_batch: a source of the wrong shape',
   $$SELECT * FROM model_select.route_batch('h_lin', 'SELECT ARRAY[1, 0, 0]::float8[]')$$, '42804');

SELECT plan((SELECT 2 * count(*)::int + 2 FROM corpus));
SELECT cmp_ok((SELECT count(*) FROM corpus WHERE state <> '00000'), '>=', 300::bigint, 'at least 300 hostile calls');
SELECT is((SELECT count(DISTINCT family) FROM corpus) >= 20, true, 'across at least 20 function families');
SELECT pg_temp.run(sql, state, descr) FROM corpus ORDER BY id;

SELECT * FROM finish();
ROLLBACK;
