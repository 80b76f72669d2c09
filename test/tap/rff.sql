-- rff_ucb: random Fourier features (Hu et al. (PAK-UCB)–2.7).  Its estimates
-- converge to exact pak_ucb as the number of frequencies D grows, its
-- rank-1-updated state equals the state rebuilt from the log, and it routes
-- as well as pak_ucb on the two-cluster stream.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(16);

-- A fixed 500-reward data set on one arm, and 100 probe contexts.
CREATE TEMP TABLE data AS
SELECT round, context, reward[1 + cluster % 2] AS reward FROM model_select.synthetic_clusters(500, 8, 2, 4, 31);
CREATE TEMP TABLE probes AS
SELECT round AS probe, context FROM model_select.synthetic_clusters(100, 8, 2, 4, 32);

-- Load the data into a one-arm selector in one INSERT; return its scores at the probes.
CREATE FUNCTION pg_temp.fit(sel text, pol text, kern text, settings jsonb, seed bigint DEFAULT 7)
RETURNS TABLE (probe int, mean float8, width float8) LANGUAGE plpgsql AS $$
BEGIN
    PERFORM model_select.create_selector(sel, 8, ARRAY['a'], pol, kern, settings, seed);
    INSERT INTO model_select.rewards(selector, arm, context, reward)
    SELECT sel, 'a', d.context, d.reward FROM data d ORDER BY d.round;
    RETURN QUERY SELECT p.probe, s.mean, s.width
                   FROM probes p CROSS JOIN LATERAL model_select.scores(sel, p.context) s;
END $$;

-- exact pak_ucb at rff_ucb's alpha and intercept (the settings table's; pak_ucb's own are 20 and 10)
CREATE TEMP TABLE fits AS
SELECT 'exact' AS fit, 0 AS d, * FROM pg_temp.fit('exact', 'pak_ucb', 'rbf', '{"cap": 1000, "alpha": 1, "intercept": 1}');
ALTER TABLE fits ADD COLUMN seed int DEFAULT 0;
-- three frequency draws (seeds) per D: one draw alone is too noisy to rank
INSERT INTO fits(fit, d, probe, mean, width, seed)
SELECT 'rff', d, f.*, seed
  FROM unnest(ARRAY[128, 512, 2048]) d, generate_series(1, 3) seed,
       LATERAL pg_temp.fit(format('rff%s_%s', d, seed), 'rff_ucb', 'rbf',
                           jsonb_build_object('features', d), seed) f;

-- per D, the largest error over the probes, averaged over the draws
CREATE TEMP VIEW errors AS
SELECT d, avg(mean_err) AS mean_err, avg(width_err) AS width_err FROM (
    SELECT r.d, r.seed, max(abs(r.mean - e.mean)) AS mean_err, max(abs(r.width - e.width)) AS width_err
      FROM fits r JOIN fits e ON e.fit = 'exact' AND e.probe = r.probe
     WHERE r.fit = 'rff' GROUP BY r.d, r.seed) per_draw
 GROUP BY d;

SELECT diag(format('D = %s: max |mean - exact| %s, max |width - exact| %s', d,
                   round(mean_err::numeric, 4), round(width_err::numeric, 4)))
  FROM errors ORDER BY d;
SELECT ok((SELECT mean_err FROM errors WHERE d = 128) > (SELECT mean_err FROM errors WHERE d = 512)
          AND (SELECT mean_err FROM errors WHERE d = 512) > (SELECT mean_err FROM errors WHERE d = 2048),
          'the largest mean error decreases as D goes 128 -> 512 -> 2048');
SELECT ok((SELECT width_err FROM errors WHERE d = 128) > (SELECT width_err FROM errors WHERE d = 512)
          AND (SELECT width_err FROM errors WHERE d = 512) > (SELECT width_err FROM errors WHERE d = 2048),
          'the largest width error decreases as D goes 128 -> 512 -> 2048');
SELECT cmp_ok((SELECT mean_err FROM errors WHERE d = 2048), '<', 0.05::float8, 'D = 2048: max mean error < 0.05');
SELECT cmp_ok((SELECT width_err FROM errors WHERE d = 2048), '<', 0.05::float8, 'D = 2048: max width error < 0.05');

-- The other shift-invariant kernels: their spectral sampling must match the exact kernel.
CREATE TEMP TABLE other AS
SELECT 'lap_exact' AS fit, * FROM pg_temp.fit('lap_exact', 'pak_ucb', 'laplacian', '{"cap": 1000, "alpha": 1, "intercept": 1, "bandwidth": 4}');
INSERT INTO other SELECT 'lap_rff', * FROM pg_temp.fit('lap_rff', 'rff_ucb', 'laplacian', '{"features": 2048, "bandwidth": 4}');
INSERT INTO other SELECT 'mat_exact', * FROM pg_temp.fit('mat_exact', 'pak_ucb', 'matern', '{"cap": 1000, "alpha": 1, "intercept": 1, "nu": 1.5}');
INSERT INTO other SELECT 'mat_rff', * FROM pg_temp.fit('mat_rff', 'rff_ucb', 'matern', '{"features": 2048, "nu": 1.5}');
SELECT cmp_ok((SELECT max(abs(r.mean - e.mean)) FROM other r JOIN other e USING (probe)
                WHERE r.fit = 'lap_rff' AND e.fit = 'lap_exact'), '<', 0.05::float8,
              'laplacian (Cauchy frequencies), D = 2048: max mean error < 0.05');
SELECT cmp_ok((SELECT max(abs(r.mean - e.mean)) FROM other r JOIN other e USING (probe)
                WHERE r.fit = 'mat_rff' AND e.fit = 'mat_exact'), '<', 0.05::float8,
              'matern 3/2 (Student-t frequencies), D = 2048: max mean error < 0.05');
SELECT cmp_ok((SELECT max(abs(r.mean - e.mean)) FROM other r JOIN other e USING (probe)
                WHERE r.fit = 'lap_rff' AND e.fit = 'lap_exact'), '<',
              (SELECT max(abs(r.mean - e.mean)) FROM other r JOIN fits e USING (probe)
                WHERE r.fit = 'lap_rff' AND e.fit = 'exact'),
              'the laplacian features approximate the laplacian kernel, not the rbf one');

-- Rank-1 updates vs the log: one reward per INSERT (each a rank-1 update), then rebuild.
SELECT lives_ok($$SELECT model_select.create_selector('inc', 8, ARRAY['a', 'b'], 'rff_ucb', NULL, '{"features": 64}', 3)$$,
                'rff_ucb selector with D = 64');
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT * FROM data WHERE round <= 300 ORDER BY round LOOP
        INSERT INTO model_select.rewards(selector, arm, context, reward)
        VALUES ('inc', CASE WHEN r.round % 3 = 0 THEN 'b' ELSE 'a' END, r.context, r.reward);
    END LOOP;
END $$;
CREATE TEMP TABLE inc_before AS
SELECT p.probe, s.* FROM probes p CROSS JOIN LATERAL model_select.scores('inc', p.context) s;
SELECT is(model_select.rebuild_state('inc'), 300::bigint, 'rebuild_state applies the 300 rewards');
SELECT is((SELECT count(*) FROM inc_before b
             JOIN probes p USING (probe) CROSS JOIN LATERAL model_select.scores('inc', p.context) s
            WHERE s.arm = b.arm AND abs(s.mean - b.mean) <= 1e-9 * greatest(1, abs(b.mean))
              AND abs(s.width - b.width) <= 1e-9 * greatest(1, abs(b.width))), 200::bigint,
          'rank-1 updated state equals the state rebuilt from the log (relative 1e-9)');
SELECT is((SELECT DISTINCT state_bytes FROM model_select.arm_stats WHERE selector = 'inc'),
          20 + 8 * ((129 * 130 / 2) + 129),
          'state size is (2D+1)(2D+2)/2 + 2D+1 doubles plus the header, for any n');
-- a batch into an empty arm (learnt from scratch) equals one-by-one updates
SELECT lives_ok($$SELECT model_select.create_selector('batch', 8, ARRAY['a', 'b'], 'rff_ucb', NULL, '{"features": 64}', 3)$$,
                'a second selector with the same seed');
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 'batch', CASE WHEN round % 3 = 0 THEN 'b' ELSE 'a' END, context, reward FROM data WHERE round <= 300 ORDER BY round;
SELECT is((SELECT count(*) FROM inc_before b
             JOIN probes p USING (probe) CROSS JOIN LATERAL model_select.scores('batch', p.context) s
            WHERE s.arm = b.arm AND abs(s.mean - b.mean) <= 1e-9 * greatest(1, abs(b.mean))
              AND abs(s.width - b.width) <= 1e-9 * greatest(1, abs(b.width))), 200::bigint,
          'one multi-row INSERT gives the same state as one INSERT per reward');
SELECT isnt((SELECT s.mean FROM probes p CROSS JOIN LATERAL model_select.scores('inc', p.context) s WHERE p.probe = 1 AND s.arm = 'a'),
            (SELECT s.mean FROM probes p CROSS JOIN LATERAL model_select.scores('rff128_1', p.context) s WHERE p.probe = 1),
            'another seed or D gives other features');

-- Routing quality on the two-cluster stream (replay, judged by expected rewards).
CREATE TEMP TABLE two AS SELECT * FROM model_select.synthetic_clusters(2000, 16, 2, NULL, 11, 0.1);
SELECT cmp_ok((SELECT opr_window FROM model_select.replay('SELECT context, reward, NULL::real[], expected FROM two',
                                                          'rff_ucb', seed => 3, checkpoint => 500) WHERE round = 2000),
              '>=', (SELECT opr_window FROM model_select.replay('SELECT context, reward, NULL::real[], expected FROM two',
                                                                'pak_ucb', seed => 3, checkpoint => 500) WHERE round = 2000) - 0.03,
              'rff_ucb optimal-pick ratio over the last 500 of 2,000 rounds is within 0.03 of pak_ucb');

-- φ(x) is computed once per context and kept for the other arms (rff_features.c):
-- selectors with the same dim and features but other seeds (other frequencies)
-- scoring the same context one after the other must each get their own.
SELECT is((SELECT count(*) FROM probes p CROSS JOIN LATERAL (
               SELECT seed, s.mean, s.width
                 FROM unnest(ARRAY[1, 2, 3, 1]) seed,
                      LATERAL model_select.scores(format('rff128_%s', seed), p.context) s) s
             JOIN fits f ON f.fit = 'rff' AND f.d = 128 AND f.seed = s.seed AND f.probe = p.probe
            WHERE abs(s.mean - f.mean) > 1e-12 OR abs(s.width - f.width) > 1e-12),
          0::bigint, 'rff selectors that differ only in seed, scored on the same context in turn, keep their own features');

SELECT * FROM finish();
ROLLBACK;
