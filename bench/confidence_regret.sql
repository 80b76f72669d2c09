-- model_select confidence benchmark (make bench-confidence), part 2: the
-- regret of each bound in replay() on the environment of spec/001 §4
-- expressed per arm (synthetic_rkhs: d = 3, 5 arms, B = 10, σ = 0.1, fresh
-- uniform contexts), 1,000 rounds, 10 seeds, as in the paper's Table 1.
-- pak_ucb with the true B and σ, δ = 0.01, no intercept, raw contexts;
-- α₀ = σ²/c with c = 1 (rbf) or c = T^(−d/(2d+2ν)) (matern 5/2), as the
-- paper.  cmm is run for 200 rounds only (its decode is O(n³) per round),
-- next to dmm and amm over the same 200 rounds.
\set ON_ERROR_STOP 1
\pset footer off
CREATE EXTENSION IF NOT EXISTS model_select;
SET client_min_messages = error;

CREATE TEMP TABLE envs (env text, kernel text, bandwidth float8, nu float8, alpha float8);
INSERT INTO envs VALUES
    ('rbf 0.5', 'rbf', 0.5, NULL, 0.01),
    ('rbf 0.2', 'rbf', 0.2, NULL, 0.01),
    ('matern 5/2 0.5', 'matern', 0.5, 2.5, 0.01 / 1000 ^ (-3.0 / 11));

CREATE FUNCTION pg_temp.regret(e envs, method text, seed int, rounds int) RETURNS float8
LANGUAGE sql AS $$
SELECT regret_oracle FROM model_select.replay(
    format('SELECT context, reward, NULL::float8[], expected FROM model_select.synthetic_rkhs(%s, 3, 5, %s, %L, %s, %s)',
           rounds, seed, e.kernel, e.bandwidth, coalesce(e.nu, 2.5)),
    CASE WHEN method = 'random' THEN 'random' ELSE 'pak_ucb' END,
    CASE WHEN method = 'random' THEN NULL ELSE e.kernel END,
    CASE WHEN method = 'random' THEN '{"reward_min": -100, "reward_max": 100}'::jsonb
         ELSE jsonb_build_object('intercept', 0, 'normalize', false, 'bandwidth', e.bandwidth,
                                 'reward_min', -100, 'reward_max', 100)
              || CASE WHEN e.nu IS NOT NULL THEN jsonb_build_object('nu', e.nu) ELSE '{}' END
              || CASE WHEN method LIKE 'fixed%' THEN jsonb_build_object('alpha', e.alpha, 'eta', split_part(method, ' ', 2)::float8)
                      ELSE jsonb_build_object('confidence', method, 'noise', 0.1, 'rkhs_bound', 10, 'delta', 0.01)
                           || CASE WHEN method = 'igp' THEN '{}'::jsonb ELSE jsonb_build_object('alpha', e.alpha) END END END,
    seed => seed, shuffle => false)
 ORDER BY round DESC LIMIT 1
$$;

CREATE TEMP TABLE runs AS
SELECT e.env, m AS method, 1000 AS rounds, s AS seed, pg_temp.regret(e, m, s, 1000) AS regret
  FROM envs e, unnest(ARRAY['dmm', 'amm', 'ay', 'igp', 'fixed 0.5', 'random']) m, generate_series(1, 10) s;
INSERT INTO runs
SELECT e.env, m, 200, s, pg_temp.regret(e, m, s, 200)
  FROM envs e, unnest(ARRAY['cmm', 'dmm', 'amm']) m, generate_series(1, 10) s
 WHERE e.env = 'rbf 0.5';

\echo
\echo 'Cumulative regret after 1,000 rounds, mean ± sd over 10 seeds (lower is better)'
SELECT method,
       max(CASE WHEN env = 'rbf 0.5' THEN v END) AS "rbf 0.5",
       max(CASE WHEN env = 'rbf 0.2' THEN v END) AS "rbf 0.2",
       max(CASE WHEN env = 'matern 5/2 0.5' THEN v END) AS "matern 5/2 0.5"
  FROM (SELECT env, method, format('%s ± %s', round(avg(regret)::numeric, 1), round(stddev(regret)::numeric, 1)) AS v
          FROM runs WHERE rounds = 1000 GROUP BY env, method) t
 GROUP BY method
 ORDER BY array_position(ARRAY['dmm', 'amm', 'ay', 'igp', 'fixed 0.5', 'random'], method);

\echo 'Ratio ay / dmm of the mean regret (the paper: 2.6-4.3)'
SELECT env, round((avg(regret) FILTER (WHERE method = 'ay') / avg(regret) FILTER (WHERE method = 'dmm'))::numeric, 2) AS "ay / dmm"
  FROM runs WHERE rounds = 1000 GROUP BY env ORDER BY env;

\echo 'Cumulative regret after 200 rounds, rbf 0.5 (cmm is O(n³) per decode)'
SELECT method, round(avg(regret)::numeric, 1) AS mean, round(stddev(regret)::numeric, 1) AS sd
  FROM runs WHERE rounds = 200 GROUP BY method ORDER BY avg(regret);
