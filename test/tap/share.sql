-- "share" (lin_ucb, rff_ucb): the arms share a prior mean.  Arm a's mean is
-- the ridge regression towards s·w0, where w0 is the ridge regression on
-- every arm's rewards: mean_a(x) = s·zᵀw0 + (ridge of arm a on its residuals
-- r − s·zᵀw0)(x), with the width of the arm's own ridge.  Checked here by
-- that identity, from selectors without share: one arm fed every reward (w0),
-- and one fed each arm's residuals.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(11);

CREATE TEMP TABLE feed AS
SELECT round, context, reward[1 + round % 2] AS reward, (ARRAY['a', 'b', 'b', 'c'])[1 + (round * 7) % 4] AS arm
  FROM model_select.synthetic_clusters(60, 3, 2, 3, 91) WHERE round <= 40;
DELETE FROM feed WHERE arm = 'c';
CREATE TEMP TABLE probes AS SELECT round AS probe, context FROM model_select.synthetic_clusters(8, 3, 2, 3, 92);

-- normalize off, so that every selector sees the contexts as given
SELECT model_select.create_selector('shared', 3, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL,
         '{"share": 0.8, "alpha": 2, "intercept": 3, "eta": 0.7, "normalize": false, "noise_prior": 0}');
SELECT model_select.create_selector('own', 3, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL,
         '{"alpha": 2, "intercept": 3, "eta": 0.7, "normalize": false, "noise_prior": 0}');
SELECT model_select.create_selector('pool', 3, ARRAY['all'], 'lin_ucb', NULL,
         '{"alpha": 2, "intercept": 3, "normalize": false}');
SELECT model_select.create_selector('resid', 3, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL,
         '{"alpha": 2, "intercept": 3, "eta": 0.7, "normalize": false, "reward_min": -10, "reward_max": 10}');
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT s, CASE WHEN s = 'pool' THEN 'all' ELSE arm END, context, reward
  FROM feed, unnest(ARRAY['shared', 'own', 'pool']) s ORDER BY s, round;
-- residuals around 0.8·zᵀw0 (w0: pool's mean at the logged context)
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 'resid', f.arm, f.context, f.reward - 0.8 * p.mean
  FROM feed f CROSS JOIN LATERAL model_select.scores('pool', f.context) p ORDER BY f.round;

CREATE TEMP TABLE cmp AS
SELECT pr.probe, sh.arm, sh.mean AS shared_mean, sh.width AS shared_width, sh.ucb AS shared_ucb,
       0.8 * po.mean + re.mean AS defined_mean, re.width AS resid_width, ow.width AS own_width, ow.mean AS own_mean
  FROM probes pr
 CROSS JOIN LATERAL model_select.scores('shared', pr.context) sh
  JOIN LATERAL model_select.scores('resid', pr.context) re ON re.arm = sh.arm
  JOIN LATERAL model_select.scores('own', pr.context) ow ON ow.arm = sh.arm
 CROSS JOIN LATERAL model_select.scores('pool', pr.context) po;

SELECT cmp_ok((SELECT max(abs(shared_mean - defined_mean)) FROM cmp WHERE arm <> 'c'), '<', 1e-9::float8,
              'mean = 0.8·zᵀw0 + the ridge of the arm''s residuals, w0 the ridge of every reward');
SELECT cmp_ok((SELECT max(abs(shared_width - own_width) + abs(shared_width - resid_width)) FROM cmp WHERE arm <> 'c'), '<', 1e-12::float8,
              'width: the arm''s own');
SELECT cmp_ok((SELECT max(abs(shared_ucb - (shared_mean + 0.7 * shared_width))) FROM cmp WHERE arm <> 'c'), '<', 1e-12::float8,
              'ucb = mean + eta·width');
SELECT ok((SELECT bool_and(shared_mean = 'Infinity') FROM cmp WHERE arm = 'c'), 'an arm without rewards is still tried first');
SELECT cmp_ok((SELECT max(abs(shared_mean - own_mean)) FROM cmp WHERE arm <> 'c'), '>', 1e-3::float8,
              'and the shared prior moves the means');

-- arm c learns one reward; route_batch (scored row by row with share) chooses as
-- select_model() and scores as scores()
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 'shared', 'c', context, 0.5 FROM probes WHERE probe = 1;
CREATE TEMP TABLE before AS
SELECT pr.probe, s.arm, s.mean, s.width FROM probes pr CROSS JOIN LATERAL model_select.scores('shared', pr.context) s;
SELECT is((SELECT count(*) FROM model_select.route_batch('shared', 'SELECT probe, context FROM pg_temp.probes') r
             JOIN probes p ON p.probe = r.key
            WHERE r.arm <> model_select.select_model('shared', p.context)
               OR abs(r.mean - (SELECT b.mean FROM before b WHERE b.probe = p.probe AND b.arm = r.arm)) > 1e-9),
          0::bigint, 'route_batch = select_model() and scores() row by row (1e-9)');

-- the state is each arm's own: rebuild_state gives the same scores (1e-9)
SELECT model_select.rebuild_state('shared');
SELECT cmp_ok((SELECT max(abs(s.mean - b.mean) + abs(s.width - b.width))
                 FROM probes pr CROSS JOIN LATERAL model_select.scores('shared', pr.context) s
                 JOIN before b ON b.probe = pr.probe AND b.arm = s.arm),
              '<', 1e-9::float8, 'rebuild_state(): the same scores');

-- the priors are kept per set of decoded models (routing/share_cache.c): one
-- more reward of arm a moves w0, so arm b's mean moves though b's own model
-- did not, and equals that of a twin fed the same rewards in one statement,
-- whose priors were never kept before
SELECT model_select.create_selector('twin', 3, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL,
         (SELECT settings FROM model_select.selectors WHERE name = 'shared'));
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 'twin', arm, context, reward FROM model_select.rewards
 WHERE selector_id = (SELECT selector_id FROM model_select.selectors WHERE name = 'shared')
 ORDER BY reward_id;
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT s, 'a', context, 1 FROM probes, unnest(ARRAY['shared', 'twin']) s WHERE probe = 2 ORDER BY s;
SELECT ok((SELECT bool_and(s.mean <> b.mean) FROM probes pr CROSS JOIN LATERAL model_select.scores('shared', pr.context) s
             JOIN before b ON b.probe = pr.probe AND b.arm = s.arm WHERE s.arm = 'b'),
          'a reward of arm a moves arm b''s mean (its prior): kept priors are not reused for new models');
SELECT cmp_ok((SELECT max(abs(s.mean - t.mean) + abs(s.ucb - t.ucb)) FROM probes pr
                 CROSS JOIN LATERAL model_select.scores('shared', pr.context) s
                 JOIN LATERAL model_select.scores('twin', pr.context) t ON t.arm = s.arm WHERE s.arm <> 'c'),
              '<', 1e-9::float8, 'and every score equals that of a twin scored afresh (1e-9)');

SELECT throws_ok($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'lin_ucb', NULL, '{"share": 1.5}')$$, '22023',
                 NULL, 'share above 1');
SELECT throws_ok($$SELECT model_select.create_selector('x', 3, ARRAY['a'], 'lin_ucb', NULL, '{"share": 1, "confidence": "ay"}')$$, '22023',
                 NULL, 'share needs confidence fixed');

SELECT * FROM finish();
ROLLBACK;
