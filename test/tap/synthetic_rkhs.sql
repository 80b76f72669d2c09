-- synthetic_rkhs(): the environment of Flynn & Reeb 2024 per arm — reward
-- functions f_a = Σ w_i k(·, z_i) of RKHS norm exactly rkhs_norm, uniform
-- contexts, Gaussian noise.  The norm is checked through consequences that do
-- not share the generator's code: |f(x)| ≤ B·√k(x,x) = B, |f(x) − f(y)| ≤
-- B·√(2 − 2k(x, y)) (reproducing property + Cauchy–Schwarz), and with one
-- inducing point f = ±B·k(·, z), whose maximum is B.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(60);

CREATE TEMP TABLE s AS SELECT * FROM model_select.synthetic_rkhs(2000, 3, 10, 42);

-- Determinism and the order of the draws
SELECT is((SELECT md5(string_agg(format('%s %s %s %s %s', round, context, expected, reward, best_arm), ';' ORDER BY round)) FROM s),
          (SELECT md5(string_agg(format('%s %s %s %s %s', round, context, expected, reward, best_arm), ';' ORDER BY round))
             FROM model_select.synthetic_rkhs(2000, 3, 10, 42)),
          'the same seed gives the same stream');
SELECT isnt((SELECT md5(string_agg(format('%s %s', context, expected), ';' ORDER BY round)) FROM s),
            (SELECT md5(string_agg(format('%s %s', context, expected), ';' ORDER BY round))
               FROM model_select.synthetic_rkhs(2000, 3, 10, 43)),
            'another seed gives another stream');
SELECT is((SELECT md5(string_agg(format('%s %s %s', context, expected, reward), ';' ORDER BY round))
             FROM model_select.synthetic_rkhs(100, 3, 10, 42)),
          (SELECT md5(string_agg(format('%s %s %s', context, expected, reward), ';' ORDER BY round)) FROM s WHERE round <= 100),
          'the functions are drawn before the rounds: a shorter stream is a prefix of a longer one');
SELECT is((SELECT md5(string_agg(format('%s %s', context, expected), ';' ORDER BY round))
             FROM model_select.synthetic_rkhs(300, 3, 10, 42, noise => 0.7)),
          (SELECT md5(string_agg(format('%s %s', context, expected), ';' ORDER BY round)) FROM s WHERE round <= 300),
          'the noise level changes only the observed rewards');
SELECT isnt((SELECT md5(string_agg(expected::text, ';' ORDER BY round)) FROM model_select.synthetic_rkhs(50, 3, 2, 1, 'matern', nu => 0.5)),
            (SELECT md5(string_agg(expected::text, ';' ORDER BY round)) FROM model_select.synthetic_rkhs(50, 3, 2, 1, 'matern', nu => 2.5)),
            'nu changes the functions');

-- Shape
SELECT is((SELECT array_agg(round ORDER BY round) FROM s), (SELECT array_agg(g) FROM generate_series(1, 2000) g),
          'rounds are numbered 1..rounds');
SELECT ok((SELECT bool_and(array_lower(context, 1) = 1 AND cardinality(context) = 3
                           AND array_lower(expected, 1) = 1 AND cardinality(expected) = 10
                           AND array_lower(reward, 1) = 1 AND cardinality(reward) = 10) FROM s),
          'context has dim elements; expected and reward one per arm, from 1');
SELECT is((SELECT count(*) FROM model_select.synthetic_rkhs(0, 3, 2)), 0::bigint, 'zero rounds: no rows');
SELECT ok((SELECT bool_and(v >= 0 AND v < 1) FROM s, unnest(context) v), 'contexts lie in [0,1)^dim');
SELECT cmp_ok((SELECT abs(avg(v) - 0.5) FROM s, unnest(context) v), '<', 0.015::float8,
              'contexts are uniform: mean 0.5 over 6,000 coordinates (4 standard errors: 0.015)');
SELECT ok((SELECT bool_and(best_arm = (SELECT i FROM unnest(expected) WITH ORDINALITY u(v, i) ORDER BY v DESC, i LIMIT 1)) FROM s),
          'best_arm is the first arm of highest expected reward');
SELECT cmp_ok((SELECT count(DISTINCT best_arm) FROM s), '>=', 5::bigint, 'each arm has its own function: many arms are best somewhere');

-- Norm: |f(x)| ≤ B and a sizeable fraction of B is reached
SELECT ok((SELECT bool_and(abs(v) <= 10 * (1 + 1e-12)) FROM s, unnest(expected) v), 'rbf: |expected| <= rkhs_norm on every row');
SELECT ok((SELECT bool_and(abs(v) <= 3 * (1 + 1e-12))
             FROM (VALUES ('rbf', 0.2, 2.5), ('matern', 0.5, 0.5), ('matern', 0.5, 1.5), ('matern', 0.2, 2.5), ('rbf', 1e6, 2.5)) c(k, bw, nu),
                  LATERAL model_select.synthetic_rkhs(500, 2, 5, 9, k, bw, nu, rkhs_norm => 3, inducing => 40) r,
                  unnest(r.expected) v),
          'rbf and matern, several bandwidths: |expected| <= rkhs_norm everywhere');
SELECT cmp_ok((SELECT max(abs(v)) FROM s, unnest(expected) v), '>', 1::float8, 'max |expected| > 0.1 rkhs_norm');
SELECT cmp_ok((SELECT max(abs(v)) FROM model_select.synthetic_rkhs(2000, 3, 10, 5, 'matern', 0.2, 1.5, rkhs_norm => 4) r, unnest(r.expected) v),
              '>', 0.4::float8, 'matern: max |expected| > 0.1 rkhs_norm');
SELECT ok((SELECT bool_and(r.expected = array_fill(0::float8, ARRAY[3]) AND r.best_arm = 1)
             FROM model_select.synthetic_rkhs(200, 3, 3, 1, rkhs_norm => 0) r),
          'rkhs_norm 0: the zero function, and the tie goes to arm 1');
SELECT cmp_ok((SELECT max(abs(expected[1])) FROM model_select.synthetic_rkhs(5000, 1, 1, 3, inducing => 1)), '>', 9.5::float8,
              'one inducing point: f = ±B k(., z), max over 5,000 contexts > 0.95 B');
SELECT cmp_ok((SELECT max(abs(expected[1])) FROM model_select.synthetic_rkhs(5000, 1, 1, 4, 'matern', 0.2, 0.5, rkhs_norm => 2, inducing => 1)),
              '>', 1.9::float8, 'one inducing point, matern 1/2: max over 5,000 contexts > 0.95 B');
-- The norm itself, without the generator's quadratic form: for the Matérn-1/2
-- (exponential) kernel on the line, ‖f‖² = (1/2ℓ)∫f² + (ℓ/2)∫f'², and outside
-- [0,1] f decays as e^(−|x|/ℓ), which adds (f(0)² + f(1)²)/2.  The integrals
-- over [0,1] from 20,000 sorted contexts (trapezoid; Σ Δf²/Δx for ∫f'²).
SELECT ok((SELECT bool_and(abs(norm2 / 100 - 1) < 0.002) FROM (
             SELECT a, sum((f * f + f2 * f2) / 2 * (x2 - x)) FILTER (WHERE x2 IS NOT NULL) / (2 * 0.3)
                       + 0.3 / 2 * sum((f2 - f) ^ 2 / (x2 - x)) FILTER (WHERE x2 IS NOT NULL)
                       + sum(f * f * (x / (2 * 0.3) + 0.5)) FILTER (WHERE rn = 1)
                       + sum(f * f * ((1 - x) / (2 * 0.3) + 0.5)) FILTER (WHERE x2 IS NULL) AS norm2
               FROM (SELECT a, x, f, lead(x) OVER w AS x2, lead(f) OVER w AS f2, row_number() OVER w AS rn
                       FROM (SELECT context[1] AS x, expected[a] AS f, a
                               FROM model_select.synthetic_rkhs(20000, 1, 3, 10, 'matern', 0.3, 0.5, inducing => 5),
                                    generate_series(1, 3) a) pts
                     WINDOW w AS (PARTITION BY a ORDER BY x)) d
              GROUP BY a) per_arm),
          'matern 1/2, dim 1: the Sobolev form of the RKHS norm gives rkhs_norm² within 0.2% for every arm');
SELECT ok((SELECT bool_and(sign(expected[1]) = (SELECT sign(expected[1]) FROM model_select.synthetic_rkhs(1, 1, 1, 3, inducing => 1)))
             FROM model_select.synthetic_rkhs(5000, 1, 1, 3, inducing => 1)),
          'one inducing point: f keeps one sign');

-- Smoothness: |f(x) − f(y)| ≤ B √(2 − 2 k(x, y)).  1 − e^(−u) by its series
-- for tiny u, where 1 − exp(−u) would lose its digits.
CREATE FUNCTION pg_temp.one_minus_exp(u float8) RETURNS float8 LANGUAGE sql IMMUTABLE AS
$$ SELECT CASE WHEN u < 1e-4 THEN u - u * u / 2 + u * u * u / 6 ELSE 1 - exp(-u) END $$;
SELECT ok((SELECT bool_and(abs(p.expected[a] - q.expected[a])
                           <= 10 * sqrt(2 * pg_temp.one_minus_exp((p.context[1] - q.context[1]) ^ 2 / (2 * 0.5 ^ 2))) + 1e-12)
             FROM (SELECT *, lead(round) OVER (ORDER BY context[1]) AS nxt FROM model_select.synthetic_rkhs(5000, 1, 3, 8)) p
             JOIN model_select.synthetic_rkhs(5000, 1, 3, 8) q ON q.round = p.nxt, generate_series(1, 3) a),
          'rbf, dim 1: neighbouring contexts (5,000 sorted) have expected rewards within B √(2 − 2k)');
SELECT cmp_ok((SELECT max(abs(p.expected[a] - q.expected[a]))
                 FROM (SELECT *, lead(round) OVER (ORDER BY context[1]) AS nxt FROM model_select.synthetic_rkhs(5000, 1, 3, 8)) p
                 JOIN model_select.synthetic_rkhs(5000, 1, 3, 8) q ON q.round = p.nxt, generate_series(1, 3) a),
              '<', 0.1::float8, 'rbf, bandwidth 0.5: neighbouring contexts differ by less than 1% of B');
CREATE TEMP TABLE m AS SELECT * FROM model_select.synthetic_rkhs(150, 3, 2, 6, 'matern', 0.3, 1.5, rkhs_norm => 5);
SELECT ok((SELECT bool_and(abs(p.expected[a] - q.expected[a]) <= 5 * sqrt(greatest(2 - 2 * (1 + sqrt(3) * d / 0.3) * exp(-sqrt(3) * d / 0.3), 0)) + 1e-9)
             FROM m p JOIN m q ON p.round < q.round
             CROSS JOIN LATERAL (SELECT sqrt(sum((x - y) ^ 2)) AS d FROM unnest(p.context, q.context) u(x, y)) dist,
             generate_series(1, 2) a),
          'matern 3/2, dim 3: every pair of rows within B √(2 − 2k)');

-- Noise
SELECT ok((SELECT bool_and(reward = expected) FROM model_select.synthetic_rkhs(300, 3, 4, 2, noise => 0)), 'noise 0: reward = expected');
CREATE TEMP TABLE eps AS
SELECT reward[a] - expected[a] AS e FROM model_select.synthetic_rkhs(2000, 2, 10, 7, noise => 0.25) r, generate_series(1, 10) a;
SELECT is((SELECT count(*) FROM eps), 20000::bigint, '20,000 noise draws');
SELECT cmp_ok((SELECT abs(avg(e)) FROM eps), '<', 0.007::float8, 'noise has mean 0 (4 standard errors: 0.007)');
SELECT cmp_ok((SELECT abs(stddev_samp(e) - 0.25) FROM eps), '<', 0.006::float8, 'noise has sd = noise (sd of the sd 0.00125)');
SELECT cmp_ok((SELECT abs(avg((abs(e) > 0.5)::int)::float8 - 0.0455) FROM eps), '<', 0.005::float8,
              'noise is Gaussian and not clipped: 4.55% of draws beyond 2 sd (tolerance 3.4 standard errors)');

-- replay() can run on the stream and tells the functions apart (its rewards
-- are not in [0, 1]: the settings give replay() their range)
CREATE TEMP TABLE env AS SELECT * FROM model_select.synthetic_rkhs(600, 2, 3, 12);
SELECT cmp_ok((SELECT regret_oracle FROM model_select.replay('SELECT context, reward, NULL::float8[], expected FROM env ORDER BY round',
                 'pak_ucb', 'rbf', '{"normalize": false, "bandwidth": 0.5, "intercept": 0, "alpha": 0.01, "eta": 1,
                              "reward_min": -100, "reward_max": 100}', seed => 1, shuffle => false)
                ORDER BY round DESC LIMIT 1),
              '<', (SELECT 0.5 * regret_oracle FROM model_select.replay('SELECT context, reward, NULL::float8[], expected FROM env ORDER BY round',
                 'random', NULL, '{"reward_min": -100, "reward_max": 100}', seed => 1, shuffle => false)
                ORDER BY round DESC LIMIT 1),
              'replay: pak_ucb with the true kernel has less than half the regret of random');

-- Bad input
SELECT lives_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 1, 1, nu => 1.0)$$, 'nu is not checked for rbf, which ignores it');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(NULL, 3, 2)$$, '22004', NULL, 'NULL rounds');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, NULL, 2)$$, '22004', NULL, 'NULL dim');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 3, NULL)$$, '22004', NULL, 'NULL arms');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 3, 2, NULL)$$, '22004', NULL, 'NULL seed');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 3, 2, kernel => NULL)$$, '22004', NULL, 'NULL kernel');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 3, 2, bandwidth => NULL)$$, '22004', NULL, 'NULL bandwidth');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 3, 2, nu => NULL)$$, '22004', NULL, 'NULL nu');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 3, 2, rkhs_norm => NULL)$$, '22004', NULL, 'NULL rkhs_norm');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 3, 2, noise => NULL)$$, '22004', NULL, 'NULL noise');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 3, 2, inducing => NULL)$$, '22004', NULL, 'NULL inducing');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(-1, 3, 2)$$, '22023', NULL, 'negative rounds');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(10000001, 3, 2)$$, '22023', NULL, 'more than 10 million rounds');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 0, 2)$$, '22023', NULL, 'dim 0');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 1001, 2)$$, '22023', NULL, 'dim above 1000');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 3, 0)$$, '22023', NULL, 'no arms');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 3, 1001)$$, '22023', NULL, 'more than 1000 arms');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 3, 2, kernel => 'laplacian')$$, '22023', NULL, 'kernel other than rbf or matern');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 3, 2, kernel => 'RBF')$$, '22023', NULL, 'kernel names are case-sensitive, as in settings');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 3, 2, kernel => 'matern', nu => 2)$$, '22023', NULL, 'matern with nu not 0.5, 1.5 or 2.5');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 3, 2, bandwidth => 0)$$, '22023', NULL, 'bandwidth 0');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 3, 2, bandwidth => 'Infinity')$$, '22023', NULL, 'infinite bandwidth');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 3, 2, bandwidth => 'NaN')$$, '22023', NULL, 'NaN bandwidth');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 3, 2, rkhs_norm => -1)$$, '22023', NULL, 'negative rkhs_norm');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 3, 2, rkhs_norm => 'Infinity')$$, '22023', NULL, 'infinite rkhs_norm');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 3, 2, noise => -0.1)$$, '22023', NULL, 'negative noise');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 3, 2, noise => 'NaN')$$, '22023', NULL, 'NaN noise');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 3, 2, inducing => 0)$$, '22023', NULL, 'inducing 0');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 3, 2, inducing => 10001)$$, '22023', NULL, 'inducing above 10000');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_rkhs(1, 1000, 1000, inducing => 10000)$$, '54000', NULL,
                 'arms × inducing × dim beyond one allocation (1 GB of coordinates)');

SELECT * FROM finish();
ROLLBACK;
