-- Confidence bounds (Flynn & Reeb 2024): the same five rewards under each bound.
CREATE EXTENSION model_select;
SET extra_float_digits = 0;

-- One selector per bound; rewards can be negative here, so widen the range.
SELECT model_select.create_selector('b_' || c, 2, ARRAY['a'], 'pak_ucb', 'rbf',
         jsonb_build_object('confidence', c, 'noise', 0.1, 'rkhs_bound', 3, 'delta', 0.01,
                            'bandwidth', 0.5, 'intercept', 0, 'normalize', false,
                            'reward_min', -1, 'reward_max', 1)
         || CASE WHEN c = 'igp' THEN '{}'::jsonb ELSE '{"alpha": 0.01}' END) > 0 AS created
  FROM unnest(ARRAY['fixed', 'ay', 'igp', 'amm', 'dmm', 'cmm']) c
 WHERE c <> 'fixed';
SELECT settings FROM model_select.selectors WHERE name = 'b_dmm';

INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT s.name, 'a', d.x, d.y
  FROM model_select.selectors s,
       (VALUES ('{0.1,0.2}'::float8[], 0.3), ('{0.4,0.8}', -0.2), ('{0.7,0.3}', 0.8),
               ('{0.9,0.9}', 0.1), ('{0.5,0.5}', 0.5)) d(x, y);

-- ucb = mean + radius * width; dmm and cmm choose alpha per context.
SELECT sel, round(s.ucb::numeric, 6) AS ucb, round(s.mean::numeric, 6) AS mean,
       round(s.width::numeric, 6) AS width, round(s.radius::numeric, 6) AS radius,
       round(s.alpha::numeric, 6) AS alpha
  FROM unnest(ARRAY['b_ay', 'b_igp', 'b_amm', 'b_dmm', 'b_cmm']) sel,
       LATERAL model_select.scores(sel, '{1.0,0.0}'::float8[]) s;

-- Rewards that contradict the declared bounds (|f|_H <= 0.01 and noise
-- 0.01 cannot reach 0.8): for some regularisers the radius² is negative.
-- They are skipped with a WARNING; the bound stays finite.
SELECT model_select.create_selector('tight', 2, ARRAY['a'], 'pak_ucb', 'rbf',
         '{"confidence": "dmm", "alpha": 0.01, "noise": 0.01, "rkhs_bound": 0.01, "bandwidth": 0.5,
           "intercept": 0, "normalize": false}') > 0 AS created;
INSERT INTO model_select.rewards(selector, arm, context, reward)
VALUES ('tight', 'a', '{0.1,0.2}', 0.8), ('tight', 'a', '{0.12,0.2}', 0.9), ('tight', 'a', '{0.4,0.8}', 0.7);
SELECT round(ucb::numeric, 6) AS ucb, round(alpha::numeric, 6) AS alpha, ucb < 'Infinity' AS finite
  FROM model_select.scores('tight', '{0.1,0.21}'::float8[]);
-- cmm searches all regularisers: the same data, the same WARNING.
SELECT model_select.alter_selector('tight', '{"confidence": "cmm", "alpha": 0.01, "noise": 0.01,
         "rkhs_bound": 0.01, "bandwidth": 0.5, "intercept": 0, "normalize": false}') IS NOT NULL AS altered;
SELECT round(ucb::numeric, 6) AS ucb, ucb < 'Infinity' AS finite
  FROM model_select.scores('tight', '{0.1,0.21}'::float8[]);

DROP EXTENSION model_select;
