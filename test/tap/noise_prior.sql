-- "noise_prior" n0 (lin_ucb, rff_ucb; lin_ucb's default 5): the fixed radius
-- eta is scaled by the arm's learnt noise scale
--   σ̂ = √((n0 + yᵀy − bᵀA⁻¹b) / (n0 + n)),
-- the mean and width stay the ridge's.  Checked against a twin selector
-- without it: the same means and widths, and bᵀA⁻¹b = Σ rᵢ·mean(xᵢ), the
-- twin's means at the contexts the arm learnt (mean(x) = zᵀA⁻¹b).
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(17);

CREATE TEMP TABLE feed AS
SELECT round, context, reward[1 + round % 2] AS reward, (ARRAY['a', 'b'])[1 + (round * 5) % 2] AS arm
  FROM model_select.synthetic_clusters(80, 3, 2, 3, 41) WHERE round <= 60;
CREATE TEMP TABLE probes AS SELECT round AS probe, context FROM model_select.synthetic_clusters(8, 3, 2, 3, 42);

SELECT model_select.create_selector('noisy', 3, ARRAY['a', 'b', 'c'], 'lin_ucb');
SELECT model_select.create_selector('plain', 3, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL, '{"noise_prior": 0}');
SELECT model_select.create_selector('scaled', 3, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL,
         '{"noise_prior": 5, "reward_max": 10}');
SELECT is((SELECT settings->>'noise_prior' FROM model_select.selectors WHERE name = 'noisy'), '5',
          'lin_ucb''s default noise_prior is 5, stored with the settings');

INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT s, arm, context, reward * CASE WHEN s = 'scaled' THEN 10 ELSE 1 END
  FROM feed, unnest(ARRAY['noisy', 'plain', 'scaled']) s ORDER BY s, round;

-- σ̂ per arm, computed from the twin
CREATE TEMP TABLE sigma AS
SELECT f.arm, sqrt((5 + sum(f.reward * f.reward) - sum(f.reward * p.mean)) / (5 + count(*))) AS sigma
  FROM feed f CROSS JOIN LATERAL model_select.scores('plain', f.context) p
 WHERE p.arm = f.arm GROUP BY f.arm;

CREATE TEMP TABLE cmp AS
SELECT pr.probe, n.arm, n.mean, n.width, n.radius, n.ucb, p.mean AS plain_mean, p.width AS plain_width,
       p.radius AS plain_radius, s.sigma
  FROM probes pr
 CROSS JOIN LATERAL model_select.scores('noisy', pr.context) n
  JOIN LATERAL model_select.scores('plain', pr.context) p ON p.arm = n.arm
  LEFT JOIN sigma s ON s.arm = n.arm;

SELECT cmp_ok((SELECT max(abs(mean - plain_mean) + abs(width - plain_width)) FROM cmp WHERE arm <> 'c'),
              '<', 1e-12::float8, 'mean and width: the ridge''s, as without noise_prior');
SELECT is((SELECT bool_and(plain_radius = 2) FROM cmp WHERE arm <> 'c'), true,
          'without noise_prior the radius is eta (lin_ucb''s default 2)');
SELECT cmp_ok((SELECT max(abs(radius - 2 * sigma)) FROM cmp WHERE arm <> 'c'), '<', 1e-9::float8,
              'radius = eta·√((n0 + yᵀy − bᵀA⁻¹b)/(n0 + n)), bᵀA⁻¹b from the twin''s means at the learnt contexts');
SELECT cmp_ok((SELECT max(abs(ucb - (mean + radius * width))) FROM cmp WHERE arm <> 'c'), '<', 1e-12::float8,
              'ucb = mean + radius·width');
SELECT ok((SELECT bool_and(sigma < 0.6) FROM sigma),
          'rewards in [0, 1] that the context predicts: every arm''s width narrows (σ̂ < 0.6)');
SELECT ok((SELECT bool_and(mean = 'Infinity') FROM cmp WHERE arm = 'c'), 'an arm without rewards is still tried first');

-- rewards ten times larger: the same mean and width in their units, and a radius that grows with the residuals
SELECT cmp_ok((SELECT max(abs(s.mean - 10 * c.mean) + abs(s.width - c.width))
                 FROM cmp c JOIN probes pr USING (probe)
                 CROSS JOIN LATERAL model_select.scores('scaled', pr.context) s WHERE s.arm = c.arm AND c.arm <> 'c'),
              '<', 1e-9::float8, 'rewards × 10: mean × 10, width unchanged');
SELECT ok((SELECT bool_and(s.radius > 3 * c.radius)
             FROM cmp c JOIN probes pr USING (probe)
             CROSS JOIN LATERAL model_select.scores('scaled', pr.context) s WHERE s.arm = c.arm AND c.arm <> 'c'),
          'rewards × 10: the radius follows the rewards'' scale (more than 3 × the unscaled one), where a fixed eta would not');

-- arm c learns one reward; route_batch and rebuild_state give the same scores
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 'noisy', 'c', context, 0.5 FROM probes WHERE probe = 1;
CREATE TEMP TABLE before AS
SELECT pr.probe, s.arm, s.mean, s.width, s.ucb FROM probes pr CROSS JOIN LATERAL model_select.scores('noisy', pr.context) s;
SELECT is((SELECT count(*) FROM model_select.route_batch('noisy', 'SELECT probe, context FROM pg_temp.probes') r
             JOIN probes p ON p.probe = r.key
            WHERE r.arm <> model_select.select_model('noisy', p.context)
               OR abs(r.score - (SELECT b.ucb FROM before b WHERE b.probe = p.probe AND b.arm = r.arm)) > 1e-9),
          0::bigint, 'route_batch = select_model(), and its score = scores()'' ucb row by row (1e-9)');
SELECT model_select.rebuild_state('noisy');
SELECT cmp_ok((SELECT max(abs(s.ucb - b.ucb))
                 FROM probes pr CROSS JOIN LATERAL model_select.scores('noisy', pr.context) s
                 JOIN before b ON b.probe = pr.probe AND b.arm = s.arm),
              '<', 1e-9::float8, 'rebuild_state(): the same ucb (1e-9)');

-- with forgetting the sums forget as A and b do: under a window σ̂ is the
-- held rows', under a discount each row weighs γ^age (age: newer rows of its
-- arm), Σw r² and Σw; bᵀA⁻¹b = Σ wᵢ rᵢ·mean(xᵢ) again from a twin
SELECT model_select.create_selector('win', 3, ARRAY['a', 'b'], 'lin_ucb', NULL, '{"window": 20}');
SELECT model_select.create_selector('win_plain', 3, ARRAY['a', 'b'], 'lin_ucb', NULL, '{"window": 20, "noise_prior": 0}');
SELECT model_select.create_selector('disc', 3, ARRAY['a', 'b'], 'lin_ucb', NULL, '{"discount": 0.9}');
SELECT model_select.create_selector('disc_plain', 3, ARRAY['a', 'b'], 'lin_ucb', NULL, '{"discount": 0.9, "noise_prior": 0}');
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT s, arm, context, reward FROM feed, unnest(ARRAY['win', 'win_plain', 'disc', 'disc_plain']) s ORDER BY s, round;
CREATE TEMP TABLE aged AS
SELECT round, arm, context, reward, row_number() OVER (PARTITION BY arm ORDER BY round DESC) - 1 AS age FROM feed;
CREATE TEMP TABLE forget_sigma AS
SELECT 'win' AS sel, a.arm, sqrt((5 + sum(a.reward ^ 2) - sum(a.reward * p.mean)) / (5 + count(*))) AS sigma
  FROM aged a CROSS JOIN LATERAL model_select.scores('win_plain', a.context) p
 WHERE p.arm = a.arm AND a.age < 20 GROUP BY a.arm
UNION ALL
SELECT 'disc', a.arm, sqrt((5 + sum(0.9 ^ a.age * a.reward ^ 2) - sum(0.9 ^ a.age * a.reward * p.mean))
                           / (5 + sum(0.9 ^ a.age)))
  FROM aged a CROSS JOIN LATERAL model_select.scores('disc_plain', a.context) p
 WHERE p.arm = a.arm GROUP BY a.arm;
CREATE TEMP TABLE forget_cmp AS
SELECT f.sel, s.arm, pr.probe, s.radius, s.ucb, f.sigma
  FROM forget_sigma f, probes pr CROSS JOIN LATERAL model_select.scores(f.sel, pr.context) s WHERE s.arm = f.arm;
SELECT cmp_ok((SELECT max(abs(radius - 2 * sigma)) FROM forget_cmp WHERE sel = 'win'), '<', 1e-9::float8,
              'window: radius = eta·σ̂ of the held rows');
SELECT cmp_ok((SELECT max(abs(radius - 2 * sigma)) FROM forget_cmp WHERE sel = 'disc'), '<', 1e-9::float8,
              'discount: radius = eta·σ̂ of the rows weighted γ^age');
SELECT model_select.rebuild_state('win'), model_select.rebuild_state('disc');
SELECT cmp_ok((SELECT max(abs(s.ucb - c.ucb)) FROM forget_cmp c JOIN probes pr USING (probe)
                 CROSS JOIN LATERAL model_select.scores(c.sel, pr.context) s WHERE s.arm = c.arm),
              '<', 1e-9::float8, 'window and discount: the incremental sums equal rebuild_state()''s (1e-9)');

-- where it applies: confidence fixed
SELECT ok(NOT model_select.resolve_settings('lin_ucb', NULL, '{"confidence": "ay"}') ? 'noise_prior',
          'with a confidence bound lin_ucb''s default noise_prior is off (not among the settings)');
SELECT throws_ok($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'lin_ucb', NULL, '{"noise_prior": 5, "confidence": "ay"}')$$,
                 '22023', NULL, 'noise_prior with a confidence bound: 22023');
SELECT throws_ok($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'lin_ucb', NULL, '{"noise_prior": -1}')$$,
                 '22023', NULL, 'a negative noise_prior: 22023');

SELECT * FROM finish();
ROLLBACK;
