-- Regret of the forgetting settings on the abrupt-change environment
-- (spec/002 §4 shape): two clusters, the best arm of each switches at
-- t = 1,000 and 2,000; 3,000 rounds; 5 seeds; pak_ucb at eta 0.3, alpha 1 and
-- intercept 1 (its defaults before 0.3.0, as docs/changing-worlds.md reports
-- it), lin_ucb at its own defaults (at eta 0.3 its 0.3.0 scale, alpha 20 and
-- intercept 10, explores too little to learn the clusters: 0.503 optimal picks
-- in every row); judged by expected rewards.  Part of `make bench-forgetting`.
\set ON_ERROR_STOP 1
\pset footer off
CREATE EXTENSION IF NOT EXISTS model_select;
SELECT v.policy, v.name AS forgetting,
       round(avg(r.regret_oracle)::numeric, 1) AS regret_vs_oracle,
       round(stddev_samp(r.regret_oracle)::numeric, 1) AS sd,
       round(avg(r.opr)::numeric, 3) AS opr
  FROM generate_series(1, 5) s(seed),
       (VALUES ('pak_ucb', 'stationary', '{"alpha": 1, "intercept": 1, "eta": 0.3, "cap": 4000}'),
               ('pak_ucb', 'window 100', '{"alpha": 1, "intercept": 1, "eta": 0.3, "window": 100}'),
               ('pak_ucb', 'window 300', '{"alpha": 1, "intercept": 1, "eta": 0.3, "window": 300}'),
               ('pak_ucb', 'restart_every 250', '{"alpha": 1, "intercept": 1, "eta": 0.3, "restart_every": 250}'),
               ('pak_ucb', 'discount 0.97', '{"alpha": 1, "intercept": 1, "eta": 0.3, "discount": 0.97}'),
               ('lin_ucb', 'stationary', '{}'), ('lin_ucb', 'window 100', '{"window": 100}'),
               ('lin_ucb', 'discount 0.99', '{"discount": 0.99}'),
               ('lin_ucb', 'discount 0.97', '{"discount": 0.97}'),
               ('lin_ucb', 'restart_every 250', '{"restart_every": 250}'),
               ('lin_ucb', 'window 300', '{"window": 300}'),
               ('lin_ucb', 'window 300, selector clock', '{"window": 300, "clock": "selector"}'),
               ('lin_ucb', 'window 100, selector clock', '{"window": 100, "clock": "selector"}'),
               ('lin_ucb', 'discount 0.99, selector clock', '{"discount": 0.99, "clock": "selector"}')) v(policy, name, settings),
       LATERAL model_select.replay(format('SELECT context, reward, NULL::real[], expected FROM model_select.synthetic_clusters('
                                          '3000, 16, 2, NULL, %s, 0.1, switch_every => 1000) ORDER BY round', s.seed),
                                   v.policy, settings => v.settings::jsonb, seed => s.seed, checkpoint => 3000, shuffle => false) r
 GROUP BY v.policy, v.name ORDER BY 1, 3;
