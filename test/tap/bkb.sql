-- bkb (budgeted kernelized bandit, Calandriello et al. 2019 (BKB)): exactness against pak_ucb
-- when every point is in the dictionary, incremental state = rebuilt state,
-- dictionary size and width accuracy at n = 4000, learning against pak_ucb in
-- replay, and model_select.resample().
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(49);

-- Dictionary size m of an arm, solved from the documented state layout
-- (src/policy_bkb.c): octet_length = 20 + 8·(1 + n·(dim + 1) + m² + 3m).
-- The stored state is a checkpoint: take one first, so it holds every reward.
CREATE FUNCTION pg_temp.dict_size(sel text, a text) RETURNS float8
LANGUAGE plpgsql AS $f$
BEGIN
  PERFORM model_select.checkpoint(sel);
  RETURN (SELECT ((sqrt(9 + 4 * ((st.state_bytes - 20) / 8.0 - 1 - st.n * (s.dim + 1))) - 3) / 2)::float8
            FROM model_select.arm_stats st JOIN model_select.selectors s ON s.name = st.selector
           WHERE st.selector = sel AND st.arm = a);
END $f$;

CREATE FUNCTION pg_temp.ok_diag(cond boolean, descr text, info text) RETURNS text
LANGUAGE sql AS $f$ SELECT ok(cond, descr) || E'\n' || diag(info) $f$;

-- ---------------------------------------------------------------------------
-- (1) Every point in the dictionary (qbar huge): bkb = pak_ucb exactly.
-- ---------------------------------------------------------------------------
SELECT setseed(0.25);
CREATE TEMP TABLE pts AS
SELECT g, ARRAY(SELECT random() * 2 - 1 FROM generate_series(1, 5) j WHERE g > 0)::float8[] AS x,
       random()::float8 AS r
  FROM generate_series(1, 100) g;
CREATE TEMP TABLE probes AS
SELECT g, ARRAY(SELECT random() * 2 - 1 FROM generate_series(1, 5) j WHERE g > 0)::float8[] AS x
  FROM generate_series(1, 50) g;

-- Largest relative difference of mean, width and ucb of arm a between two
-- selectors over the probe contexts of table probes.
CREATE FUNCTION pg_temp.max_rel_diff(sel1 text, sel2 text) RETURNS float8
LANGUAGE sql AS $f$
  SELECT max(greatest(abs(s1.mean - s2.mean) / greatest(abs(s2.mean), 1e-6),
                      abs(s1.width - s2.width) / greatest(abs(s2.width), 1e-6),
                      abs(s1.ucb - s2.ucb) / greatest(abs(s2.ucb), 1e-6)))
    FROM probes p,
         LATERAL model_select.scores(sel1, p.x) s1,
         LATERAL model_select.scores(sel2, p.x) s2
   WHERE s1.arm = s2.arm AND s1.n > 0
$f$;


SELECT isnt(model_select.create_selector('ex_pak', 5, ARRAY['a', 'b'], 'pak_ucb', 'rbf',
            '{"alpha": 0.5, "intercept": 0.3, "bandwidth": 0.7, "eta": 1.5}'), NULL, 'ex_pak created');
SELECT isnt(model_select.create_selector('ex_bkb', 5, ARRAY['a', 'b'], 'bkb', 'rbf',
            '{"alpha": 0.5, "intercept": 0.3, "bandwidth": 0.7, "eta": 1.5, "qbar": 1e6}'), NULL, 'ex_bkb created');
SELECT lives_ok($$
  INSERT INTO model_select.rewards(selector, arm, context, reward)
  SELECT s, 'a', x, r FROM pts, (VALUES ('ex_pak'), ('ex_bkb')) v(s) WHERE g <= 64 ORDER BY g
$$, 'exact: 64 rewards on arm a of both selectors');
SELECT is(pg_temp.dict_size('ex_bkb', 'a'), 64::float8,
          'exact: the scheduled resample at n = 64 keeps every point (m = 64)');
SELECT cmp_ok(pg_temp.max_rel_diff('ex_bkb', 'ex_pak'), '<=', 1e-6::float8,
              'exact: n = 64, mean/width/ucb at 50 probes = pak_ucb within 1e-6 relative');
SELECT lives_ok($$
  INSERT INTO model_select.rewards(selector, arm, context, reward)
  SELECT s, 'a', x, r FROM pts, (VALUES ('ex_pak'), ('ex_bkb')) v(s) WHERE g > 64 ORDER BY g
$$, 'exact: 36 more rewards');
SELECT is(pg_temp.dict_size('ex_bkb', 'a'), 64::float8,
          'exact: the dictionary is fixed between scheduled resamples (n = 100, m = 64)');
SELECT is(model_select.resample('ex_bkb'), 1::bigint,
          'exact: resample() resamples the one arm with rewards (arm b has none)');
SELECT is(pg_temp.dict_size('ex_bkb', 'a'), 100::float8, 'exact: after resample() m = n = 100');
SELECT cmp_ok(pg_temp.max_rel_diff('ex_bkb', 'ex_pak'), '<=', 1e-6::float8,
              'exact: n = 100, mean/width/ucb at 50 probes = pak_ucb within 1e-6 relative');

-- The same for the other kernels at n = 32 (a scheduled resample).  The
-- linear kernel has rank dim + 1 = 6: the dictionary keeps 6 points, the
-- rest lie in their span, and the model is still exact.
SELECT is(count(model_select.create_selector(format('k_%s_%s', k, p), 5, ARRAY['a'], p, k,
                                             CASE p WHEN 'bkb' THEN '{"qbar": 1e6}' ELSE '{}' END::jsonb)),
          8::bigint, 'bkb and pak_ucb selectors for 4 more kernels created')
  FROM unnest(ARRAY['linear', 'poly', 'laplacian', 'matern']) k, unnest(ARRAY['bkb', 'pak_ucb']) p;
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT s.name, 'a', x, r FROM pts, model_select.selectors s WHERE s.name LIKE 'k\_%' AND g <= 32 ORDER BY g;
SELECT cmp_ok(pg_temp.max_rel_diff('k_' || k || '_bkb', 'k_' || k || '_pak_ucb'), '<=', 1e-6::float8,
              k || ' kernel: bkb = pak_ucb within 1e-6 relative at 50 probes (n = 32)')
  FROM unnest(ARRAY['linear', 'poly', 'laplacian', 'matern']) k;
SELECT is(pg_temp.dict_size('k_linear_bkb', 'a'), 6::float8,
          'linear kernel: the dictionary keeps dim + 1 = 6 independent points');

-- Duplicate contexts: the dictionary keeps one of them (the others are in its
-- span), and the model is still exact.
SELECT isnt(model_select.create_selector('dup_pak', 3, ARRAY['a'], 'pak_ucb', 'rbf', '{}'), NULL, 'dup_pak created');
SELECT isnt(model_select.create_selector('dup_bkb', 3, ARRAY['a'], 'bkb', 'rbf', '{"qbar": 1e6}'), NULL, 'dup_bkb created');
SELECT lives_ok($$
  INSERT INTO model_select.rewards(selector, arm, context, reward)
  SELECT s, 'a', ARRAY[0.3, -0.2, 0.9]::float8[], 0.5 + 0.01 * (g % 7)
    FROM generate_series(1, 40) g, (VALUES ('dup_pak'), ('dup_bkb')) v(s) ORDER BY g
$$, 'duplicates: 40 rewards on one context');
SELECT is(pg_temp.dict_size('dup_bkb', 'a'), 1::float8, 'duplicates: the dictionary holds one point');
DELETE FROM probes WHERE g > 10;
UPDATE probes SET x = x[1:3];
SELECT cmp_ok(pg_temp.max_rel_diff('dup_bkb', 'dup_pak'), '<=', 1e-6::float8,
              'duplicates: bkb = pak_ucb within 1e-6 relative at 10 probes');

-- ---------------------------------------------------------------------------
-- (2) Incremental state = rebuild_state(), with the adaptive beta.
-- ---------------------------------------------------------------------------
SELECT isnt(model_select.create_selector('inc', 16, ARRAY['a', 'b', 'c'], 'bkb', NULL,
            '{"adaptive_beta": true}', 42), NULL, 'inc created');
CREATE TEMP TABLE stream AS SELECT * FROM model_select.synthetic_clusters(300, 16, 3, NULL, 21);
SELECT lives_ok($$
  INSERT INTO model_select.rewards(selector, arm, context, reward)
  SELECT 'inc', (ARRAY['a', 'b', 'c'])[1 + round % 3], context, reward[1 + round % 3]
    FROM stream WHERE round <= 120 ORDER BY round
$$, 'inc: 120 rewards in one statement');
SELECT lives_ok($$
  DO $d$ BEGIN
    FOR i IN 121..150 LOOP
      INSERT INTO model_select.rewards(selector, arm, context, reward)
      SELECT 'inc', (ARRAY['a', 'b', 'c'])[1 + round % 3], context, reward[1 + round % 3]
        FROM stream WHERE round = i;
    END LOOP;
  END $d$
$$, 'inc: 30 rewards one statement each');
SELECT lives_ok($$
  INSERT INTO model_select.rewards(selector, arm, context, reward)
  SELECT 'inc', (ARRAY['a', 'b', 'c'])[1 + round % 3], context, reward[1 + round % 3]
    FROM stream WHERE round > 150 ORDER BY round
$$, 'inc: 150 more rewards in one statement');
DROP TABLE probes;
CREATE TEMP TABLE probes AS SELECT round AS g, context AS x FROM model_select.synthetic_clusters(20, 16, 3, NULL, 77);
CREATE TEMP TABLE inc_before AS
SELECT p.g, s.* FROM probes p, LATERAL model_select.scores('inc', p.x) s;
SELECT model_select.checkpoint('inc');
CREATE TEMP TABLE before_state AS
SELECT a.name AS arm, md5(st.state) AS h FROM model_select.arm_state st JOIN model_select.arms a USING (arm_id)
 WHERE st.selector_id = (SELECT selector_id FROM model_select.selectors WHERE name = 'inc');
SELECT is(model_select.rebuild_state('inc'), 300::bigint, 'inc: rebuild_state applies 300 rewards');
SELECT is((SELECT count(*) FROM inc_before b JOIN probes p USING (g), LATERAL model_select.scores('inc', p.x) s
            WHERE s.arm = b.arm
              AND abs(s.mean - b.mean) <= 1e-9 * greatest(1, abs(b.mean))
              AND abs(s.width - b.width) <= 1e-9 * greatest(1, abs(b.width))
              AND abs(s.ucb - b.ucb) <= 1e-9 * greatest(1, abs(b.ucb))), 60::bigint,
          'inc: incremental and rebuilt scores agree within 1e-9 (20 probes x 3 arms)');
SELECT is((SELECT count(*) FROM before_state b JOIN model_select.arms a ON a.name = b.arm
             JOIN model_select.arm_state st USING (arm_id)
            WHERE a.selector_id = (SELECT selector_id FROM model_select.selectors WHERE name = 'inc')
              AND md5(st.state) = b.h), 3::bigint,
          'inc: rebuilt states are byte-identical to the incremental ones (build = n appends)');

-- Adaptive beta (Calandriello et al. 2019 (BKB), [ref-code] form) with D = sum over the
-- arm's rewarded contexts of width², computed here through scores(); bkb's defaults:
-- alpha 20, rkhs_bound F 1, noise 0.5, delta 0.05.
WITH arm_a AS (
  SELECT count(*) AS n, sum(s.width ^ 2) AS d
    FROM model_select.rewards r, LATERAL model_select.scores('inc', r.context) s
   WHERE r.selector = 'inc' AND r.arm = 'a' AND s.arm = 'a'),
beta AS (
  SELECT sqrt(20) * 1.0 + sqrt(0.5 ^ 2 * (ln(greatest(exp(1.0), n)) * d + ln(1 / 0.05))) AS want FROM arm_a),
got AS (
  SELECT (s.ucb - s.mean) / s.width AS got FROM probes p, LATERAL model_select.scores('inc', p.x) s
   WHERE s.arm = 'a' AND p.g = 1)
SELECT pg_temp.ok_diag(abs(got - want) <= 1e-9 * want,
                       'inc: adaptive beta = sqrt(alpha) F + sqrt(noise² (log(max(e, n)) D + log(1/delta)))',
                       format('beta got %s, from widths %s', got, want))
  FROM got, beta;

-- ---------------------------------------------------------------------------
-- (5) resample()
-- ---------------------------------------------------------------------------
CREATE TEMP TABLE versions AS
SELECT arm, version, n FROM model_select.arm_stats WHERE selector = 'inc';
SELECT is(model_select.resample('inc'), 3::bigint, 'resample: returns the number of arms resampled');
SELECT is((SELECT count(*) FROM model_select.arm_stats s JOIN versions v USING (arm)
            WHERE s.selector = 'inc' AND s.version = v.version + 1 AND s.n = v.n), 3::bigint,
          'resample: every arm''s version is bumped by one, n unchanged');
SELECT is((SELECT count(*) FROM probes p, LATERAL model_select.scores('inc', p.x) s
            WHERE s.mean::text NOT IN ('NaN', 'Infinity', '-Infinity')
              AND s.width::text NOT IN ('NaN', 'Infinity', '-Infinity')
              AND s.ucb::text NOT IN ('NaN', 'Infinity', '-Infinity') AND s.width >= 0), 60::bigint,
          'resample: scores stay finite');
SELECT ok((SELECT bool_and(pg_temp.dict_size('inc', arm) BETWEEN 1 AND n
                           AND pg_temp.dict_size('inc', arm) = floor(pg_temp.dict_size('inc', arm)))
             FROM versions),
          'resample: every arm has a dictionary of 1..n points, consistent with the layout');
SELECT lives_ok($$SELECT model_select.route('inc', ARRAY(SELECT 0.1 * j FROM generate_series(1, 16) j)::float8[])$$,
                'resample: routing works after a resample');
SELECT throws_ok($$SELECT model_select.resample('no_such_selector')$$, '42704', NULL,
                 'resample: unknown selector -> 42704');
SELECT throws_ok($$SELECT model_select.resample('ex_pak')$$, '55000', NULL,
                 'resample: a pak_ucb selector -> 55000');
SELECT isnt(model_select.create_selector('empty_bkb', 2, ARRAY['a'], 'bkb', NULL, '{}'), NULL, 'empty_bkb created');
SELECT is(model_select.resample('empty_bkb'), 0::bigint, 'resample: no arm with rewards -> 0');

-- ---------------------------------------------------------------------------
-- (3) n = 4000 on one arm: small dictionary, widths close to exact.
-- ---------------------------------------------------------------------------
SELECT isnt(model_select.create_selector('big_bkb', 16, ARRAY['a'], 'bkb', NULL, '{"cap": 4000}', 7),
            NULL, 'big_bkb created');
SELECT isnt(model_select.create_selector('big_pak', 16, ARRAY['a'], 'pak_ucb', NULL, '{"cap": 4000}', 7),
            NULL, 'big_pak created');
CREATE TEMP TABLE big AS SELECT * FROM model_select.synthetic_clusters(4000, 16, 2, NULL, 11);
SELECT lives_ok($$
  INSERT INTO model_select.rewards(selector, arm, context, reward)
  SELECT 'big_bkb', 'a', context, reward[1] FROM big ORDER BY round
$$, 'big: 4000 rewards on one bkb arm');
SELECT lives_ok($$
  INSERT INTO model_select.rewards(selector, arm, context, reward)
  SELECT 'big_pak', 'a', context, reward[1] FROM big ORDER BY round
$$, 'big: the same 4000 rewards on one pak_ucb arm');
SELECT is((SELECT n FROM model_select.arm_stats WHERE selector = 'big_bkb'), 4000::bigint, 'big: n = 4000');
SELECT pg_temp.ok_diag(pg_temp.dict_size('big_bkb', 'a') <= 0.25 * 4000,
                       'big: dictionary size m <= 25% of n',
                       format('m = %s at n = 4000', pg_temp.dict_size('big_bkb', 'a')));
SELECT model_select.checkpoint('big_pak');
SELECT pg_temp.ok_diag(b.state_bytes * 10 < p.state_bytes,
                       'big: bkb state is less than a tenth of pak_ucb''s',
                       format('bkb %s bytes, pak_ucb %s bytes', b.state_bytes, p.state_bytes))
  FROM model_select.arm_stats b, model_select.arm_stats p
 WHERE b.selector = 'big_bkb' AND p.selector = 'big_pak';
WITH r AS (
  SELECT b.width / p.width AS ratio
    FROM model_select.synthetic_clusters(100, 16, 2, NULL, 99) pr,
         LATERAL model_select.scores('big_pak', pr.context) p,
         LATERAL model_select.scores('big_bkb', pr.context) b)
SELECT pg_temp.ok_diag(count(*) = 100 AND min(ratio) >= 1.0 / 3 AND max(ratio) <= 3,
                       'big: bkb widths within [1/3, 3] of exact pak_ucb widths at 100 probes',
                       format('width ratio bkb/pak in [%s, %s]', min(ratio), max(ratio)))
  FROM r;
SELECT lives_ok($$
  INSERT INTO model_select.rewards(selector, arm, context, reward)
  SELECT 'big_bkb', 'a', context, reward[1] FROM big WHERE round = 1
$$, 'big: a reward beyond cap is accepted (the arm compacts to its newest rewards)');

-- ---------------------------------------------------------------------------
-- (4) Learning: optimal-pick ratio over the last 500 of 2000 rounds.
-- ---------------------------------------------------------------------------
CREATE TEMP TABLE t AS SELECT * FROM model_select.synthetic_clusters(2000, 16, 2, NULL, 5);
CREATE TEMP TABLE opr AS
SELECT (SELECT opr_window FROM model_select.replay('SELECT context, reward, NULL::real[], expected FROM t',
                                                   'bkb', NULL, '{}', seed => 3, checkpoint => 500)
         WHERE round = 2000) AS bkb,
       (SELECT opr_window FROM model_select.replay('SELECT context, reward, NULL::real[], expected FROM t',
                                                   'pak_ucb', NULL, '{}', seed => 3, checkpoint => 500)
         WHERE round = 2000) AS pak;
SELECT pg_temp.ok_diag(abs(bkb - pak) <= 0.03, 'replay: bkb OPR over rounds 1501-2000 within 0.03 of pak_ucb''s',
                       format('OPR bkb %s, pak_ucb %s', bkb, pak))
  FROM opr;
SELECT cmp_ok((SELECT bkb FROM opr), '>=', 0.9::float8, 'replay: bkb learns the cluster-dependent best arm');

SELECT * FROM finish();
ROLLBACK;
