-- "noise_prior" n0 for pak_ucb (issue 42): as lin_ucb's, the fixed radius
-- eta is scaled by the arm's learnt noise scale
--   σ̂ = √((n0 + Σw r² − Σ wᵢ rᵢ·mean(xᵢ)) / (n0 + Σw)),
-- α·vᵀ(K' + α·diag(1/w))⁻¹v = Σ w r² − Σ wᵢ rᵢ·mean(xᵢ) being the penalised
-- residuals of the kernel ridge fit; the mean and width stay the ridge's.
-- Checked against a twin selector without it (the means at the contexts the
-- arm learnt), under a window and a discount on the arm's and on the
-- selector's clock (where the rows' weights are not stored but read off the
-- factor's diagonal), against rebuild_state(), with the change detector
-- (the rows before a change count by their weight), and with the linear
-- kernel against lin_ucb, whose learnt noise it is.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(14);

CREATE TEMP TABLE feed AS
SELECT round, context, reward[1 + round % 2] AS reward, (ARRAY['a', 'b'])[1 + (round * 5) % 2] AS arm
  FROM model_select.synthetic_clusters(80, 3, 2, 3, 41) WHERE round <= 60;
CREATE TEMP TABLE probes AS SELECT round AS probe, context FROM model_select.synthetic_clusters(8, 3, 2, 3, 42);

-- name, settings of the learning selector; its twin has the same without noise_prior
CREATE TEMP TABLE sel (name text, settings jsonb);
INSERT INTO sel VALUES
    ('all', '{}'), ('win', '{"window": 20}'), ('disc', '{"discount": 0.9}'),
    ('swin', '{"window": 25, "clock": "selector"}'), ('sdisc', '{"discount": 0.9, "clock": "selector"}'),
    ('capped', '{"cap": 16}');
SELECT model_select.create_selector(name, 3, ARRAY['a', 'b', 'c'], 'pak_ucb', NULL, settings || '{"noise_prior": 5}'),
       model_select.create_selector(name || '_plain', 3, ARRAY['a', 'b', 'c'], 'pak_ucb', NULL, settings)
  FROM sel;
SELECT is((SELECT settings->>'noise_prior' FROM model_select.selectors WHERE name = 'all_plain'), '0',
          'pak_ucb''s default noise_prior is 0 (off): its defaults do not change');

-- one reward per round, in round order (the selector's ticks 1..60)
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT s, arm, context, reward FROM feed, (SELECT name FROM sel UNION ALL SELECT name || '_plain' FROM sel) x(s)
 ORDER BY s, round;

-- each row's weight as it counts now: the arm's age (newer rows of its arm) on
-- the arm's clock, the selector's (rounds since) on the selector's
CREATE TEMP TABLE aged AS
SELECT round, arm, context, reward, row_number() OVER (PARTITION BY arm ORDER BY round DESC) - 1 AS age,
       60 - round AS sage
  FROM feed;
CREATE TEMP TABLE weights AS
SELECT 'all' AS sel, a.*, 1.0::float8 AS w FROM aged a
UNION ALL SELECT 'win', a.*, 1.0 FROM aged a WHERE age < 20
UNION ALL SELECT 'disc', a.*, 0.9 ^ age FROM aged a
UNION ALL SELECT 'swin', a.*, 1.0 FROM aged a WHERE sage < 25
UNION ALL SELECT 'sdisc', a.*, 0.9 ^ sage FROM aged a;
CREATE TEMP TABLE sigma AS
SELECT w.sel, w.arm, sqrt((5 + sum(w.w * w.reward ^ 2) - sum(w.w * w.reward * p.mean)) / (5 + sum(w.w))) AS sigma
  FROM weights w CROSS JOIN LATERAL model_select.scores(w.sel || '_plain', w.context) p
 WHERE p.arm = w.arm GROUP BY w.sel, w.arm;

CREATE TEMP TABLE cmp AS
SELECT x.name AS sel, pr.probe, n.arm, n.mean, n.width, n.radius, n.ucb, p.mean AS plain_mean,
       p.width AS plain_width, p.radius AS plain_radius, s.sigma
  FROM sel x CROSS JOIN probes pr
 CROSS JOIN LATERAL model_select.scores(x.name, pr.context) n
  JOIN LATERAL model_select.scores(x.name || '_plain', pr.context) p ON p.arm = n.arm
  LEFT JOIN sigma s ON s.sel = x.name AND s.arm = n.arm
 WHERE n.arm <> 'c';

SELECT cmp_ok((SELECT max(abs(mean - plain_mean) + abs(width - plain_width)) FROM cmp), '<', 1e-12::float8,
              'mean and width: the kernel ridge''s, as without noise_prior');
SELECT is((SELECT bool_and(plain_radius = 2) FROM cmp), true, 'without noise_prior the radius is eta (pak_ucb''s default 2)');
SELECT cmp_ok((SELECT max(abs(radius - 2 * sigma)) FROM cmp WHERE sel = 'all'), '<', 1e-9::float8,
              'radius = eta·√((n0 + Σr² − Σ rᵢ·mean(xᵢ))/(n0 + n)), from the twin''s means at the learnt contexts');
SELECT cmp_ok((SELECT max(abs(radius - 2 * sigma)) FROM cmp WHERE sel IN ('win', 'swin')), '<', 1e-9::float8,
              'window, on the arm''s and on the selector''s clock: σ̂ of the rows held');
SELECT cmp_ok((SELECT max(abs(radius - 2 * sigma)) FROM cmp WHERE sel = 'disc'), '<', 1e-9::float8,
              'discount on the arm''s clock: σ̂ of the rows weighted γ^age');
SELECT cmp_ok((SELECT max(abs(radius - 2 * sigma)) FROM cmp WHERE sel = 'sdisc'), '<', 1e-9::float8,
              'discount on the selector''s clock: σ̂ of the rows weighted γ^(now − tick)');
SELECT ok((SELECT count(DISTINCT round(radius::numeric, 6)) FROM cmp WHERE sel = 'all') = 2
          AND (SELECT bool_and(sigma BETWEEN 0.05 AND 0.9) FROM sigma),
          'each arm its own σ̂ (two radii), neither 0 nor the prior''s 1');

-- the folds (appends, a window's drops, a discount's and a cap's refactorisations)
-- equal rebuild_state()'s fold of the log
CREATE TEMP TABLE before AS
SELECT x.name AS sel, pr.probe, s.arm, s.ucb, s.radius
  FROM sel x CROSS JOIN probes pr CROSS JOIN LATERAL model_select.scores(x.name, pr.context) s WHERE s.arm <> 'c';
SELECT ok((SELECT count(DISTINCT radius) FROM before WHERE sel = 'capped') > 1, 'the capped selector learnt (cap 16 < 30 rows per arm)');
SELECT model_select.rebuild_state(name) FROM sel;
SELECT cmp_ok((SELECT max(abs(s.ucb - b.ucb) + abs(s.radius - b.radius))
                 FROM before b JOIN probes pr USING (probe)
                 CROSS JOIN LATERAL model_select.scores(b.sel, pr.context) s WHERE s.arm = b.arm),
              '<', 1e-9::float8, 'every selector: the incremental state scores as rebuild_state()''s (1e-9)');

-- the linear kernel: pak_ucb is lin_ucb, learnt noise included
SELECT model_select.create_selector('lin', 3, ARRAY['a', 'b'], 'lin_ucb', NULL,
         '{"codebook": 0, "tag_buckets": 0, "window": 20}');
SELECT model_select.create_selector('pak_lin', 3, ARRAY['a', 'b'], 'pak_ucb', 'linear',
         '{"alpha": 20, "intercept": 10, "eta": 2, "noise_prior": 5, "window": 20}');
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT s, arm, context, reward FROM feed, unnest(ARRAY['lin', 'pak_lin']) s ORDER BY s, round;
SELECT cmp_ok((SELECT max(abs(l.ucb - p.ucb) + abs(l.radius - p.radius))
                 FROM probes pr CROSS JOIN LATERAL model_select.scores('lin', pr.context) l
                 JOIN LATERAL model_select.scores('pak_lin', pr.context) p ON p.arm = l.arm),
              '<', 1e-9::float8, 'linear kernel, window 20: pak_ucb''s ucb and radius = lin_ucb''s (1e-9)');

-- the change detector weights the rows before a change 0.3 (docs/changing-worlds.md):
-- σ̂ counts them by that weight, Σw = 0.3·j + (k − j) for the arm's k rows that
-- count with the change after its j-th, not as k whole rows.  The split is the
-- detector's, so the check is that one j in 1..k gives the measured σ̂ (each j
-- gives another Σw).  Arms a and b swap at round 1,000 of the drift stream; a
-- is fed where it paid (cluster 0), b on cluster 1, as a policy would have
-- chosen them, so that their rewards drop after the swap.
\ir include/drift_stream.sql
SELECT model_select.create_selector(name, 16, ARRAY['a', 'b', 'c'], 'pak_ucb', NULL,
         '{"window": 300, "clock": "selector", "detect": true}'::jsonb || settings)
  FROM (VALUES ('det', '{"noise_prior": 5}'::jsonb), ('det_plain', '{}')) v(name, settings);
CREATE TEMP TABLE dfeed AS
SELECT round, context, (ARRAY['a', 'b', 'c'])[k] AS arm, reward[k] AS reward
  FROM pg_temp.drift_stream(3), LATERAL (SELECT CASE WHEN round % 3 = 0 THEN 3 WHEN context[1] > 0 THEN 1 ELSE 2 END AS k) x
 WHERE round <= 1100;
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT s, arm, context, reward FROM dfeed, unnest(ARRAY['det', 'det_plain']) s ORDER BY s, round;
-- the rows that count (the newest 300 of the selector), per arm in tick order, with the twin's mean at each
CREATE TEMP TABLE drows AS
SELECT d.arm, row_number() OVER (PARTITION BY d.arm ORDER BY d.round) AS i, d.reward, p.mean
  FROM dfeed d CROSS JOIN LATERAL model_select.scores('det_plain', d.context) p
 WHERE d.round > 800 AND p.arm = d.arm;
CREATE TEMP TABLE dsigma AS
SELECT r.arm, j, sqrt((5 + sum(w * r.reward ^ 2) - sum(w * r.reward * r.mean)) / (5 + sum(w))) AS sigma
  FROM drows r, generate_series(0, 110) j, LATERAL (SELECT CASE WHEN r.i <= j THEN 0.3 ELSE 1 END AS w) x
 WHERE j <= (SELECT count(*) FROM drows q WHERE q.arm = r.arm) GROUP BY r.arm, j;
CREATE TEMP TABLE dmeasured AS
SELECT n.arm, n.radius / 2 AS sigma FROM model_select.scores('det', (SELECT context FROM dfeed WHERE round = 1100)) n;
SELECT ok((SELECT count(*) FROM dmeasured m WHERE abs(m.sigma - (SELECT sigma FROM dsigma s WHERE s.arm = m.arm AND j = 0)) > 1e-6) > 0,
          'the detector fired: some arm''s σ̂ is not that of its rows weighted 1');
SELECT is((SELECT count(*) FROM dmeasured m
            WHERE EXISTS (SELECT FROM dsigma s WHERE s.arm = m.arm AND abs(s.sigma - m.sigma) < 1e-9)), 3::bigint,
          'with the detector, every arm''s σ̂ is that of its rows weighted 0.3 before the change and 1 after (1e-9)');

SELECT throws_ok($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'pak_ucb', NULL, '{"noise_prior": 5, "confidence": "dmm"}')$$,
                 '22023', NULL, 'pak_ucb: noise_prior with a confidence bound: 22023');

SELECT * FROM finish();
ROLLBACK;
