-- Confidence bounds (Flynn & Reeb 2024 §4, §5.2): bandit regret in replay().
--
-- The paper's synthetic environment per arm (synthetic_rkhs: d = 3, five
-- arms, each with its own f of RKHS norm B = 10 under rbf with length-scale
-- 0.5, Gaussian noise σ = 0.1, fresh uniform contexts) for 1,000 rounds and
-- 10 seeds.  pak_ucb with the true B and σ, δ = 0.01, α₀ = σ² (c = 1), no
-- intercept, raw contexts.  Cumulative pseudo-regret against the per-round
-- best arm (replay's regret_oracle, judged on the expected rewards),
-- averaged over the seeds, must rank dmm <= amm <= ay, as in the paper's
-- Table 1; and every bound must do far better than random picks.  Observed
-- when written: dmm 127, amm 265, ay 383, random 4,979 (and dmm < amm < ay
-- on each seed).
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(5);
SET LOCAL client_min_messages = error;

CREATE TEMP TABLE regret AS
SELECT c AS confidence, seed,
       (SELECT regret_oracle FROM model_select.replay(
            format('SELECT context, reward, NULL::float8[], expected FROM model_select.synthetic_rkhs(1000, 3, 5, %s)', seed),
            CASE WHEN c = 'random' THEN 'random' ELSE 'pak_ucb' END,
            CASE WHEN c = 'random' THEN NULL ELSE 'rbf' END,
            CASE WHEN c = 'random' THEN '{"reward_min": -100, "reward_max": 100}'::jsonb
                 ELSE jsonb_build_object('confidence', c, 'alpha', 0.01, 'noise', 0.1, 'rkhs_bound', 10,
                                         'delta', 0.01, 'intercept', 0, 'normalize', false, 'bandwidth', 0.5,
                                         'reward_min', -100, 'reward_max', 100) END,
            seed => seed, shuffle => false)
         ORDER BY round DESC LIMIT 1) AS regret
  FROM unnest(ARRAY['ay', 'amm', 'dmm', 'random']) c, generate_series(1, 10) seed;

CREATE TEMP TABLE mean_regret AS
SELECT confidence, avg(regret) AS regret, count(*) AS runs FROM regret GROUP BY confidence;

SELECT is((SELECT sum(runs) FROM mean_regret), 40::numeric, '40 replays of 1,000 rounds ran (4 methods x 10 seeds)');
SELECT ok((SELECT d.regret <= a.regret FROM mean_regret d, mean_regret a WHERE d.confidence = 'dmm' AND a.confidence = 'amm'),
          'mean regret: dmm <= amm') || E'\n' || diag((SELECT string_agg(format('%s %s', confidence, round(regret::numeric, 1)), ', ' ORDER BY regret) FROM mean_regret));
SELECT ok((SELECT a.regret <= y.regret FROM mean_regret a, mean_regret y WHERE a.confidence = 'amm' AND y.confidence = 'ay'),
          'mean regret: amm <= ay');
SELECT ok((SELECT y.regret < 0.5 * r.regret FROM mean_regret y, mean_regret r WHERE y.confidence = 'ay' AND r.confidence = 'random'),
          'mean regret: ay (the loosest bound) < half of random''s');
SELECT ok((SELECT y.regret >= 1.5 * d.regret FROM mean_regret y, mean_regret d WHERE y.confidence = 'ay' AND d.confidence = 'dmm'),
          'mean regret: ay at least 1.5x dmm (the paper: 2.6-4.3x)');

SELECT * FROM finish();
ROLLBACK;
