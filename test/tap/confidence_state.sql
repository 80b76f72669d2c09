-- Confidence bounds (Flynn & Reeb 2024): the state each bound keeps, updated one
-- reward at a time, equals the state computed from scratch.
--
-- For every case a selector with one arm learns 200 rewards, one INSERT
-- statement each (so the per-reward path runs: Cholesky row appends per
-- regulariser for pak_ucb, rank-1 updates per regulariser for lin_ucb and
-- rff_ucb, yᵀy).  scores() at 20 probe contexts is snapshotted, then
-- rebuild_state() recomputes the arm from the reward log (one whole
-- factorisation per regulariser) and every mean, width, ucb, radius and
-- alpha must agree to a relative 1e-9.  The dmm cases with a one-value grid
-- make the bound use that grid regulariser's own factor, so each factor of
-- the default grid is checked on its own as well.  cmm is compared on ucb
-- only: its minimising α is flat-bottomed, the bound at it is not.
-- Also: resolved settings (sorted grid, defaults) and the state's size per
-- number of regularisers.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(99);

CREATE TEMP TABLE feed AS
  SELECT round, context, reward[1] AS reward FROM model_select.synthetic_clusters(200, 8, 3, NULL, 77);
CREATE TEMP TABLE probes AS
  SELECT round AS probe, context FROM model_select.synthetic_clusters(20, 8, 3, NULL, 78);
CREATE TEMP TABLE snap AS
  SELECT ''::text AS sel, 0 AS probe, 0::float8 AS mean, 0::float8 AS width, 0::float8 AS ucb,
         0::float8 AS radius, 0::float8 AS alpha
   WHERE false;

-- One case: create, 200 single-row inserts, snapshot, rebuild, compare the
-- given columns.  Returns 3 + #cols tests.
CREATE FUNCTION pg_temp.state_case(sel text, policy text, kernel text, settings jsonb, cols text[])
RETURNS SETOF text LANGUAGE plpgsql AS $f$
DECLARE
  r record;
  col text;
  maxd float8;
  worst text;
BEGIN
  RETURN NEXT isnt(model_select.create_selector(sel, 8, ARRAY['a'], policy, kernel, settings, 5), NULL,
                   format('%s: create_selector (%s %s %s)', sel, policy, coalesce(kernel, ''), settings));
  FOR r IN SELECT * FROM feed ORDER BY round LOOP
    INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES (sel, 'a', r.context, r.reward);
  END LOOP;
  INSERT INTO snap SELECT sel, p.probe, s.mean, s.width, s.ucb, s.radius, s.alpha
    FROM probes p, LATERAL model_select.scores(sel, p.context) s;
  RETURN NEXT is((SELECT n FROM model_select.arm_stats WHERE selector = sel), 200::bigint,
                 format('%s: 200 rewards learned one by one', sel));
  RETURN NEXT is(model_select.rebuild_state(sel), 200::bigint, format('%s: rebuild_state from the log', sel));
  FOREACH col IN ARRAY cols LOOP
    EXECUTE format($q$
      SELECT max(d), (array_agg(format('probe %%s: incremental %%s, rebuilt %%s', probe, a, b) ORDER BY d DESC))[1]
        FROM (SELECT s.probe, s.%1$I AS a, f.%1$I AS b,
                     CASE WHEN s.%1$I = f.%1$I THEN 0
                          WHEN s.%1$I IS NULL OR f.%1$I IS NULL THEN 'Infinity'::float8
                          ELSE abs(s.%1$I - f.%1$I) / greatest(1, abs(f.%1$I)) END AS d
                FROM snap s JOIN probes p USING (probe), LATERAL model_select.scores(%2$L, p.context) f
               WHERE s.sel = %2$L) t
      HAVING count(*) = 20$q$, col, sel)
      INTO maxd, worst;
    RETURN NEXT ok(coalesce(maxd <= 1e-9, false),
                   format('%s: %s after 200 appends = from scratch (max rel diff %s <= 1e-9)',
                          sel, col, coalesce(to_char(maxd, '9.9EEEE'), 'NULL')))
                || CASE WHEN coalesce(maxd <= 1e-9, false) THEN '' ELSE E'\n' || diag('    worst: ' || worst) END;
  END LOOP;
END
$f$;

-- pak_ucb (kernel rbf): the default grid (5 factors), each grid factor alone, cmm
SELECT * FROM pg_temp.state_case('p_dmm', 'pak_ucb', 'rbf', '{"confidence": "dmm", "alpha": 0.25}',
                                 ARRAY['mean', 'width', 'ucb', 'radius', 'alpha']);
SELECT * FROM pg_temp.state_case('p_g01', 'pak_ucb', 'rbf', '{"confidence": "dmm", "alpha": 0.25, "grid": [0.1]}',
                                 ARRAY['mean', 'width', 'ucb', 'radius', 'alpha']);
SELECT * FROM pg_temp.state_case('p_g03', 'pak_ucb', 'rbf', '{"confidence": "dmm", "alpha": 0.25, "grid": [0.3]}',
                                 ARRAY['mean', 'width', 'ucb', 'radius', 'alpha']);
SELECT * FROM pg_temp.state_case('p_g3', 'pak_ucb', 'rbf', '{"confidence": "dmm", "alpha": 0.25, "grid": [3]}',
                                 ARRAY['mean', 'width', 'ucb', 'radius', 'alpha']);
SELECT * FROM pg_temp.state_case('p_g10', 'pak_ucb', 'rbf', '{"confidence": "dmm", "alpha": 0.25, "grid": [10], "rkhs_bound": 3}',
                                 ARRAY['mean', 'width', 'ucb', 'radius', 'alpha']);
SELECT * FROM pg_temp.state_case('p_igp', 'pak_ucb', 'rbf', '{"confidence": "igp", "horizon": 500}',
                                 ARRAY['mean', 'width', 'ucb', 'radius', 'alpha']);
SELECT * FROM pg_temp.state_case('p_cmm', 'pak_ucb', 'matern', '{"confidence": "cmm", "alpha": 0.25}',
                                 ARRAY['ucb']);
-- lin_ucb and rff_ucb (primal form)
SELECT * FROM pg_temp.state_case('l_dmm', 'lin_ucb', NULL, '{"confidence": "dmm", "alpha": 0.25}',
                                 ARRAY['mean', 'width', 'ucb', 'radius', 'alpha']);
SELECT * FROM pg_temp.state_case('l_g10', 'lin_ucb', NULL, '{"confidence": "dmm", "alpha": 0.25, "grid": [10]}',
                                 ARRAY['mean', 'width', 'ucb', 'radius', 'alpha']);
SELECT * FROM pg_temp.state_case('l_amm', 'lin_ucb', NULL, '{"confidence": "amm"}',
                                 ARRAY['mean', 'width', 'ucb', 'radius', 'alpha']);
SELECT * FROM pg_temp.state_case('l_cmm', 'lin_ucb', NULL, '{"confidence": "cmm", "alpha": 0.25}',
                                 ARRAY['ucb']);
SELECT * FROM pg_temp.state_case('r_dmm', 'rff_ucb', 'rbf', '{"confidence": "dmm", "alpha": 0.25, "features": 32}',
                                 ARRAY['mean', 'width', 'ucb', 'radius', 'alpha']);
SELECT * FROM pg_temp.state_case('r_ay', 'rff_ucb', 'rbf', '{"confidence": "ay", "features": 32}',
                                 ARRAY['mean', 'width', 'ucb', 'radius', 'alpha']);
-- 11·8 + 2·4 = 96 so far

-- dmm's bound is the smallest of its grid bounds: with the default grid it is
-- at most each one-value grid's bound (same data, same probes).
SELECT is((SELECT count(*) FROM snap d JOIN snap g USING (probe)
            WHERE d.sel = 'p_dmm' AND g.sel IN ('p_g01', 'p_g03', 'p_g3')
              AND d.ucb <= g.ucb * (1 + 1e-12)), 60::bigint,
          'p_dmm: the five-value grid''s bound is <= each one-value grid''s bound at every probe');

-- Extreme but valid settings never give a NaN or an infinite score: the
-- smallest alpha, delta and noise, the largest B, a grid spanning 1e-6..1e6,
-- for every bound on pak_ucb (rbf) and lin_ucb, on 30 rewards of one arm.
CREATE TEMP TABLE extreme AS
SELECT p.pol, c, format('x_%s_%s', p.pol, c) AS sel,
       jsonb_build_object('confidence', c, 'delta', 5e-324, 'noise', 1e-300, 'rkhs_bound', 1e6,
                          'intercept', 0, 'normalize', false, 'reward_min', -1e6, 'reward_max', 1e6)
       || CASE WHEN c = 'igp' THEN '{}'::jsonb ELSE '{"alpha": 1e-9}' END
       || CASE WHEN c IN ('dmm', 'cmm') THEN '{"grid": [1e-6, 1, 1e6]}'::jsonb ELSE '{}' END AS settings
  FROM (VALUES ('pak_ucb', 'rbf'), ('lin_ucb', NULL)) p(pol, kern),
       unnest(ARRAY['ay', 'igp', 'amm', 'dmm', 'cmm']) c;
SET LOCAL client_min_messages = error;
SELECT model_select.create_selector(sel, 8, ARRAY['a'], pol, CASE WHEN pol = 'pak_ucb' THEN 'rbf' END, settings)
  FROM extreme;
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT e.sel, 'a', f.context, 1e3 * f.reward FROM extreme e, feed f WHERE f.round <= 30;
SELECT is((SELECT count(*) FROM extreme e, probes p, LATERAL model_select.scores(e.sel, p.context) s
            WHERE s.ucb::text NOT IN ('NaN', 'Infinity', '-Infinity')
              AND s.mean::text NOT IN ('NaN', 'Infinity', '-Infinity')
              AND s.width::text NOT IN ('NaN', 'Infinity') AND s.radius::text NOT IN ('NaN', 'Infinity')
              AND s.alpha > 0), 200::bigint,
          'extreme settings (alpha 1e-9, delta 5e-324, noise 1e-300, B 1e6, grid 1e-6..1e6): 10 selectors x 20 probes, every score finite');
RESET client_min_messages;
SELECT throws_ok($$SELECT model_select.create_selector('y', 3, ARRAY['a'], 'pak_ucb', NULL, '{"alpha": 1e-10}')$$,
                 '22023', NULL, 'alpha below 1e-9 is out of range (22023)');

SELECT * FROM finish();
ROLLBACK;
