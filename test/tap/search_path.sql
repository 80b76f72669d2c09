-- A hostile search_path: a role puts `=`, `<`, `>` operators for int, bigint,
-- text and xid8, and now(), count(), unnest() and coalesce-like helpers into
-- schema public, all of which RAISE; a superuser then runs every function
-- family with search_path = public, pg_catalog.  None of them may call the
-- role's objects: every call must succeed (or fail with its own SQLSTATE,
-- never 'hostile ... called').  The calls run through pg_temp.hostile(),
-- which sets the path only for the call, since pgTAP itself is not immune.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(52);

-- ------------------------------------------------------- the hostile objects
CREATE ROLE ms_hostile_sp NOLOGIN;
GRANT CREATE ON SCHEMA public TO ms_hostile_sp;
SET ROLE ms_hostile_sp;
DO $$
DECLARE
  t text;
  op text;
BEGIN
  FOREACH t IN ARRAY ARRAY['int4', 'int8', 'text', 'xid8', 'float8', 'bool'] LOOP
    FOREACH op IN ARRAY ARRAY['=', '<', '>', '<>'] LOOP
      EXECUTE format('CREATE FUNCTION public.hostile_%s_%s(%s, %s) RETURNS bool LANGUAGE plpgsql AS '
                     '$b$BEGIN RAISE EXCEPTION ''hostile %s(%s) called''; END$b$',
                     t, md5(op), t, t, op, t);
      EXECUTE format('CREATE OPERATOR public.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = public.hostile_%s_%s)',
                     op, t, t, t, md5(op));
    END LOOP;
  END LOOP;
END $$;
CREATE FUNCTION public.now() RETURNS timestamptz LANGUAGE plpgsql AS
  $b$BEGIN RAISE EXCEPTION 'hostile now() called'; END$b$;
CREATE FUNCTION public.unnest(int[]) RETURNS SETOF int LANGUAGE plpgsql AS
  $b$BEGIN RAISE EXCEPTION 'hostile unnest() called'; END$b$;
CREATE FUNCTION public.count(int) RETURNS bigint LANGUAGE plpgsql AS
  $b$BEGIN RAISE EXCEPTION 'hostile count() called'; END$b$;
CREATE FUNCTION public.array_ndims(text[]) RETURNS int LANGUAGE plpgsql AS
  $b$BEGIN RAISE EXCEPTION 'hostile array_ndims() called'; END$b$;
CREATE FUNCTION public.cardinality(text[]) RETURNS int LANGUAGE plpgsql AS
  $b$BEGIN RAISE EXCEPTION 'hostile cardinality() called'; END$b$;
-- better matches than pg_catalog's for float8 / int, unnest(float8[]) and jsonb || jsonb
CREATE FUNCTION public.hostile_div(float8, int) RETURNS float8 LANGUAGE plpgsql AS
  $b$BEGIN RAISE EXCEPTION 'hostile float8 / int called'; END$b$;
CREATE OPERATOR public./ (LEFTARG = float8, RIGHTARG = int, FUNCTION = public.hostile_div);
CREATE FUNCTION public.unnest(float8[]) RETURNS SETOF float8 LANGUAGE plpgsql AS
  $b$BEGIN RAISE EXCEPTION 'hostile unnest(float8[]) called'; END$b$;
CREATE FUNCTION public.hostile_concat(jsonb, jsonb) RETURNS jsonb LANGUAGE plpgsql AS
  $b$BEGIN RAISE EXCEPTION 'hostile jsonb || called'; END$b$;
CREATE OPERATOR public.|| (LEFTARG = jsonb, RIGHTARG = jsonb, FUNCTION = public.hostile_concat);
RESET ROLE;

-- Run sql under search_path = public, pg_catalog; the error message, or NULL.
CREATE FUNCTION pg_temp.hostile(sql text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
  saved text := current_setting('search_path');
  msg text;
BEGIN
  PERFORM set_config('search_path', 'public, pg_catalog', true);
  EXECUTE sql;
  PERFORM set_config('search_path', saved, true);
  RETURN NULL;
EXCEPTION WHEN OTHERS THEN
  -- the subtransaction's rollback has restored search_path
  GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT;
  RETURN msg;
END
$f$;

CREATE FUNCTION pg_temp.safe(sql text, descr text) RETURNS text LANGUAGE sql AS $f$
  SELECT is(pg_temp.hostile(sql), NULL, descr || ' under a hostile search_path')
$f$;

-- The hostile objects are live: a plain query under that path does call them.
SELECT isnt(pg_temp.hostile($$SELECT 1 = 1$$), NULL, 'the role''s int = is called by plain SQL');
SELECT isnt(pg_temp.hostile($$SELECT now()$$), NULL, 'the role''s now() is called by plain SQL');
SELECT isnt(pg_temp.hostile($$SELECT 'a'::text = 'b'::text$$), NULL, 'the role''s text = is called by plain SQL');
SELECT isnt(pg_temp.hostile($$SELECT 1::float8 / 2$$), NULL, 'the role''s float8 / int is called by plain SQL');

-- ------------------------------------------------------------ every family
SELECT pg_temp.safe($$SELECT model_select.create_selector('sp_pak', 2, ARRAY['a', 'b'], 'pak_ucb')$$, 'create_selector pak_ucb');
SELECT pg_temp.safe($$SELECT model_select.create_selector('sp_bkb', 2, ARRAY['a', 'b'], 'bkb')$$, 'create_selector bkb');
SELECT pg_temp.safe($$SELECT model_select.create_selector('sp_lin', 2, ARRAY['a', 'b'], 'lin_ucb', NULL, '{"cost_weight": 0.5}')$$, 'create_selector lin_ucb');
SELECT pg_temp.safe($$SELECT model_select.resolve_settings('rff_ucb', 'rbf', '{"features": 8}', 2)$$, 'resolve_settings');
SELECT pg_temp.safe($$SELECT model_select.add_arm('sp_pak', 'c')$$, 'add_arm');
SELECT pg_temp.safe($$SELECT model_select.retire_arm('sp_pak', 'c')$$, 'retire_arm');
SELECT pg_temp.safe($$SELECT model_select.add_arm('sp_pak', 'c')$$, 'add_arm (re-activate)');
SELECT pg_temp.safe($$SELECT model_select.select_model('sp_pak', ARRAY[1, 0]::float8[])$$, 'select_model');
SELECT pg_temp.safe($$SELECT * FROM model_select.scores('sp_pak', ARRAY[1, 0]::real[])$$, 'scores');
SELECT pg_temp.safe($$SELECT * FROM model_select.route('sp_pak', ARRAY[1, 0]::float8[])$$, 'route');
SELECT pg_temp.safe($$INSERT INTO model_select.rewards(decision_id, reward)
                      SELECT max(decision_id), 0.5 FROM model_select.decisions$$, 'reward for a decision');
SELECT pg_temp.safe($$INSERT INTO model_select.rewards(selector, arm, context, reward, cost)
                      SELECT s, a, ARRAY[i, 1]::float8[], 0.25 * (i % 3), 0.1
                        FROM unnest(ARRAY['sp_pak', 'sp_bkb', 'sp_lin']) s, unnest(ARRAY['a', 'b']) a,
                             generate_series(1, 5) i$$, 'rewards by name (three policies)');
SELECT pg_temp.safe($$SET LOCAL model_select.checkpoint_threshold = 1$$, 'a low checkpoint threshold');
SELECT pg_temp.safe($$INSERT INTO model_select.rewards(selector, arm, context, reward)
                      VALUES ('sp_pak', 'a', ARRAY[0, 1]::float8[], 1)$$, 'reward that checkpoints');
SELECT pg_temp.safe($$SELECT model_select.checkpoint('sp_pak')$$, 'checkpoint');
SELECT pg_temp.safe($$SELECT model_select.rebuild_state('sp_pak')$$, 'rebuild_state');
SELECT pg_temp.safe($$SELECT model_select.resample('sp_bkb')$$, 'resample');
SELECT pg_temp.safe($$SELECT model_select.alter_selector('sp_lin', '{"alpha": 2}')$$, 'alter_selector');
SELECT pg_temp.safe($$SELECT * FROM model_select.drift('sp_pak')$$, 'drift');
SELECT pg_temp.safe($$SELECT * FROM model_select.arm_stats$$, 'arm_stats');
SELECT pg_temp.safe($$SELECT * FROM model_select.cache_stats()$$, 'cache_stats');
SELECT pg_temp.safe($$SELECT count(*) FROM model_select.replay(
                        $s$SELECT context, reward FROM model_select.synthetic_clusters(50, 2, 3, seed => 1)$s$,
                        'rff_ucb', settings => '{"features": 16}')$$, 'replay');
SELECT pg_temp.safe($$SELECT count(*) FROM model_select.replay(
                        $s$SELECT context, reward FROM model_select.synthetic_clusters(50, 2, 3, seed => 1)$s$,
                        'lin_ucb', warm => $s$SELECT context, reward FROM model_select.synthetic_clusters(9, 2, 3, seed => 2)$s$)$$,
                    'replay with a warm source');
SELECT pg_temp.safe($$SELECT model_select.warm_start('sp_lin',
                        $s$SELECT context, reward FROM model_select.synthetic_clusters(5, 2, 2, seed => 1)$s$)$$, 'warm_start');
SELECT pg_temp.safe($$SELECT count(*) FROM model_select.quality_cost(
                        $s$SELECT context, reward, ARRAY[0.1, 1, 0.5]::float8[] FROM model_select.synthetic_clusters(20, 2, 3, seed => 1)$s$,
                        'lin_ucb', cost_weights => ARRAY[0, 0.5], budgets => ARRAY[0.3])$$, 'quality_cost');
SELECT pg_temp.safe($$SELECT count(*) FROM model_select.synthetic_rkhs(5, 2, 2)$$, 'synthetic_rkhs');
SELECT pg_temp.safe($$SELECT model_select.reservation_index('uniform', ARRAY[0, 1]::float8[], 0.1)$$, 'reservation_index');
-- cascades
SELECT pg_temp.safe($$SELECT * FROM model_select.cascade('sp_pak', ARRAY[1, 0]::float8[])$$, 'cascade');
SELECT pg_temp.safe($$SELECT * FROM model_select.cascade_scores('sp_pak', ARRAY[1, 0]::float8[])$$, 'cascade_scores');
SELECT pg_temp.safe($$SELECT model_select.cascade_next('sp_pak', ARRAY[1, 0]::float8[], 0.2, ARRAY['a'])$$, 'cascade_next');
SELECT pg_temp.safe($$SELECT model_select.cascade_select('sp_pak', ARRAY[0.2, 0.4]::float8[], ARRAY['a', 'b'])$$, 'cascade_select');
SELECT pg_temp.safe($$SELECT * FROM model_select.cascade_route('sp_pak', ARRAY[1, 0]::float8[])$$, 'cascade_route');
SELECT pg_temp.safe($$INSERT INTO model_select.cascade_observations(cascade_id, arm, value, cost)
                      SELECT max(cascade_id), 'a', 0.5, 0.1 FROM model_select.cascade_decisions$$,
                    'cascade observation for a cascade');
SELECT pg_temp.safe($$INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost)
                      SELECT 'sp_pak', a, ARRAY[i, 1]::float8[], 0.1 * i, 0.2
                        FROM unnest(ARRAY['a', 'b']) a, generate_series(1, 6) i$$, 'cascade observations by name');
SELECT pg_temp.safe($$SELECT model_select.cascade_refit('sp_pak')$$, 'cascade_refit');
SELECT pg_temp.safe($$SELECT model_select.cascade_refit('sp_pak', true)$$, 'cascade_refit from scratch');
SELECT pg_temp.safe($$SELECT * FROM model_select.cascade_outcomes$$, 'cascade_outcomes');
SELECT pg_temp.safe($$SELECT * FROM model_select.cascade_arm_stats$$, 'cascade_arm_stats');
-- probing (the pool query itself runs with the caller's path: it calls no operator)
SELECT pg_temp.safe($$SELECT model_select.create_probe_run('sp_probe', 12, 2, 1.0,
                        $p$SELECT ARRAY[x, 1]::float8[], m FROM generate_series(1, 3) x,
                           (VALUES ('m1'), ('m2')) v(m)$p$)$$, 'create_probe_run');
SELECT pg_temp.safe($$SELECT * FROM model_select.probe_next('sp_probe', 2)$$, 'probe_next');
SELECT pg_temp.safe($$SELECT model_select.probe_report('sp_probe', n.item_id, 0.5)
                        FROM model_select.probe_next('sp_probe', 1) n$$, 'probe_report');
SELECT pg_temp.safe($$SELECT * FROM model_select.probe_status('sp_probe')$$, 'probe_status');
SELECT pg_temp.safe($$SELECT model_select.drop_probe_run('sp_probe')$$, 'drop_probe_run');
SELECT pg_temp.safe($$SELECT model_select.drop_selector('sp_bkb')$$, 'drop_selector');

-- ---------------------------------------------- and the work really happened
SELECT is((SELECT count(*) FROM model_select.rewards WHERE selector = 'sp_pak'), 12::bigint,
          'the rewards of sp_pak were logged');
SELECT is((SELECT sum(n)::bigint FROM model_select.scores('sp_pak', ARRAY[1, 0]::float8[])), 12::bigint,
          'sp_pak learned every reward');
SELECT is((SELECT count(*) FROM model_select.selectors WHERE name = 'sp_bkb'), 0::bigint,
          'drop_selector dropped sp_bkb');
SELECT is((SELECT count(*) FROM model_select.cascade_observations), 13::bigint,
          'the cascade observations were logged');

SELECT * FROM finish();
ROLLBACK;
