-- reservation_index(): Weitzman reservation indices for Pandora's box
-- (Belloni, Chen & Wei 2026 §1, §2.1, §6.1-6.2).  The oracle of Prop. 3.1 (open boxes
-- in decreasing σ, stop once the best value seen is >= the next σ, select
-- the best opened box) is checked against an exhaustive optimum over all
-- adaptive inspection policies on seeded random discrete instances.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(78);

CREATE FUNCTION pg_temp.ri(d text, p float8[], c float8) RETURNS float8
    LANGUAGE sql IMMUTABLE AS $$ SELECT model_select.reservation_index(d, p, c) $$;

SELECT has_function('model_select', 'reservation_index', ARRAY['text', 'double precision[]', 'double precision'],
                    'reservation_index(text, float8[], float8) exists');
SELECT volatility_is('model_select', 'reservation_index', ARRAY['text', 'double precision[]', 'double precision'],
                     'immutable', 'reservation_index is IMMUTABLE');
SELECT isnt_strict('model_select', 'reservation_index', ARRAY['text', 'double precision[]', 'double precision'],
                   'reservation_index is not STRICT (NULL is an error, not NULL)');

-- ---------------------------------------------------------------------
-- Closed forms (spec §6.1)
-- ---------------------------------------------------------------------

-- the paper's two boxes
SELECT ok(abs(pg_temp.ri('empirical', '{1}', 0.5) - 0.5) < 1e-9, 'V = 1 surely, c = 0.5: sigma = 0.5');
SELECT ok(abs(pg_temp.ri('bernoulli', '{0.1}', 0.01) - 0.9) < 1e-9, 'V ~ Bernoulli(0.1), c = 0.01: sigma = 0.9');

-- Uniform[0,1]: sigma = 1 - sqrt(2c) if c <= 1/2, else 1/2 - c
SELECT ok(abs(pg_temp.ri('uniform', '{0,1}', 0.005) - 0.9) < 1e-9, 'U[0,1], c = 0.005: sigma = 0.9');
SELECT ok(abs(pg_temp.ri('uniform', '{0,1}', 0.02) - 0.8) < 1e-9, 'U[0,1], c = 0.02: sigma = 0.8');
SELECT ok(abs(pg_temp.ri('uniform', '{0,1}', 0.1) - 0.552786) < 1e-6
          AND abs(pg_temp.ri('uniform', '{0,1}', 0.1) - (1 - sqrt(0.2))) < 1e-9,
          'U[0,1], c = 0.1: sigma = 1 - sqrt(0.2) = 0.552786');
SELECT ok(abs(pg_temp.ri('uniform', '{0,1}', 0.3) - 0.225403) < 1e-6
          AND abs(pg_temp.ri('uniform', '{0,1}', 0.3) - (1 - sqrt(0.6))) < 1e-9,
          'U[0,1], c = 0.3: sigma = 1 - sqrt(0.6) = 0.225403');
SELECT ok(abs(pg_temp.ri('uniform', '{0,1}', 0.5)) < 1e-9, 'U[0,1], c = 0.5: sigma = 0 (the edge of the support)');
SELECT ok(abs(pg_temp.ri('uniform', '{0,1}', 0.7) + 0.2) < 1e-9, 'U[0,1], c = 0.7: sigma = -0.2 (below the support)');
SELECT is((SELECT count(*) FROM (VALUES (0.0, 1.0), (2.0, 5.0), (-1.0, 1.0), (-3.0, -2.5), (0.25, 0.75)) AS r(a, b),
                                unnest('{0.0001,0.003,0.05,0.2,0.49,0.5,0.8,1.7,10}'::float8[]) AS c
            WHERE abs(pg_temp.ri('uniform', ARRAY[a, b], c)
                      - CASE WHEN c <= (b - a) / 2 THEN b - sqrt(2 * c * (b - a)) ELSE (a + b) / 2 - c END) <= 1e-9 IS NOT TRUE),
          0::bigint, 'U[a,b]: sigma = b - sqrt(2c(b-a)) if c <= (b-a)/2, else (a+b)/2 - c (45 cases)');

-- Bernoulli(p): sigma = 1 - c/p if c <= p, else p - c
SELECT ok(abs(pg_temp.ri('bernoulli', '{0.3}', 0.06) - 0.8) < 1e-9, 'Bernoulli(0.3), c = 0.06: sigma = 0.8');
SELECT ok(abs(pg_temp.ri('bernoulli', '{0.3}', 0.45) + 0.15) < 1e-9, 'Bernoulli(0.3), c = 0.45: sigma = -0.15 (below the support)');
SELECT ok(abs(pg_temp.ri('bernoulli', '{0.8}', 0.2) - 0.75) < 1e-9, 'Bernoulli(0.8), c = 0.2: sigma = 0.75');
SELECT is((SELECT count(*) FROM unnest('{0.01,0.1,0.3,0.5,0.77,1}'::float8[]) AS p,
                                unnest('{0.5,1,2.5}'::float8[]) AS h,
                                unnest('{0.0001,0.005,0.1,0.3,0.6,1,2}'::float8[]) AS c
            WHERE abs(pg_temp.ri('bernoulli', ARRAY[p, h], c)
                      - CASE WHEN c <= p * h THEN h - c / p ELSE p * h - c END) <= 1e-9 IS NOT TRUE),
          0::bigint, 'Bernoulli(p) on {0, high}: sigma = high - c/p if c <= p high, else p high - c (126 cases)');
SELECT ok(pg_temp.ri('bernoulli', '{0.4}', 0.1) = pg_temp.ri('bernoulli', '{0.4, 1}', 0.1),
          'bernoulli: high defaults to 1');
SELECT ok(abs(pg_temp.ri('bernoulli', '{0}', 0.2) + 0.2) < 1e-12 AND abs(pg_temp.ri('bernoulli', '{1}', 0.2) - 0.8) < 1e-12,
          'bernoulli: p = 0 (V = 0 surely) gives -c, p = 1 (V = 1 surely) gives 1 - c');
SELECT ok(abs(pg_temp.ri('bernoulli', '{0.25, -2}', 0.1) - (0 - 0.1 / 0.75)) < 1e-12,
          'bernoulli with a negative high: V in {-2, 0}, the top atom is 0 w.p. 0.75');

-- cost = 0: ess sup V
SELECT is(ARRAY[pg_temp.ri('bernoulli', '{0.3}', 0), pg_temp.ri('bernoulli', '{0.3, 2}', 0), pg_temp.ri('bernoulli', '{0}', 0),
                pg_temp.ri('uniform', '{-1, 4}', 0), pg_temp.ri('empirical', '{0.2, 0.9, 0.4}', 0),
                pg_temp.ri('discrete', '{0.3, 0.5, 0.7, 0.5, 0.9, 0}', 0), pg_temp.ri('gaussian', '{0, 1}', 0)],
          ARRAY[1, 2, 0, 4, 0.9, 0.7, 'Infinity']::float8[],
          'cost 0 gives ess sup V (a zero-probability atom does not count; +Infinity for the gaussian)');

-- Range: c in (0,1), V in [0,1] => sigma in (-1,1)
SELECT setseed(0.17);
SELECT ok((SELECT bool_and(s > -1 AND s < 1) FROM (
             SELECT unnest(ARRAY[
                      pg_temp.ri('bernoulli', ARRAY[random()], c),
                      pg_temp.ri('uniform', ARRAY[a, a + (1 - a) * random()], c),
                      pg_temp.ri('empirical', ARRAY[random(), random(), random()], c)]) AS s
               FROM (SELECT 0.001 + 0.998 * random() AS c, 0.9 * random() AS a FROM generate_series(1, 200)) i) r),
          'c in (0,1) and V in [0,1] give sigma in (-1,1) (600 random boxes)');

-- ---------------------------------------------------------------------
-- Gaussian: E[(V - sigma)^+] = c checked by Simpson's rule on a fine grid
-- ---------------------------------------------------------------------

-- E[(V - s)^+] for V ~ N(m, sd^2): sd * integral_{z*}^{max(z*,0)+12} (z - z*) phi(z) dz, z* = (s - m)/sd
CREATE FUNCTION pg_temp.gauss_gain(m float8, sd float8, s float8, n int DEFAULT 20000) RETURNS float8
    LANGUAGE sql IMMUTABLE AS $$
    WITH g AS (SELECT (s - m) / sd AS lo, greatest((s - m) / sd, 0) + 12 AS hi),
         pts AS (SELECT i, lo + (hi - lo) * i / n AS z, (hi - lo) / n AS h, lo
                   FROM g, generate_series(0, n) i)
    SELECT sd * sum(h / 3 * CASE WHEN i = 0 OR i = n THEN 1 WHEN i % 2 = 1 THEN 4 ELSE 2 END
                    * (z - lo) * exp(-z * z / 2) / sqrt(2 * pi()))
      FROM pts $$;

SELECT is((SELECT string_agg(format('(%s,%s,%s)', m, sd, c), ' ') FROM (VALUES
              (0.0, 1.0, 1e-4), (0.0, 1.0, 0.01), (0.0, 1.0, 0.1), (0.0, 1.0, 0.3), (0.0, 1.0, 1.0), (0.0, 1.0, 3.0),
              (5.0, 2.0, 0.05), (-1.0, 0.5, 0.2), (100.0, 10.0, 1.0), (0.3, 0.05, 0.01), (0.5, 0.2, 0.5)) AS t(m, sd, c)
            WHERE abs(pg_temp.gauss_gain(m, sd, pg_temp.ri('gaussian', ARRAY[m, sd], c)) - c) <= 1e-6 * c IS NOT TRUE),
          NULL, 'gaussian: E[(V - sigma)^+] = c by quadrature at the returned sigma (11 cases, relative 1e-6)');
SELECT ok(abs(pg_temp.ri('gaussian', '{0.7, 2}', 2 / sqrt(2 * pi())) - 0.7) < 1e-12,
          'gaussian: c = sd phi(0) = sd/sqrt(2 pi) gives sigma = mean');
SELECT ok(abs(pg_temp.ri('gaussian', '{0, 1}', 0.0833154705876864) - 1) < 1e-9,
          'gaussian: c = phi(1) - (1 - Phi(1)) = 0.0833154705876864 gives sigma = mean + sd');
SELECT ok((SELECT bool_and(abs(pg_temp.ri('gaussian', ARRAY[m, sd], c) - (m + sd * pg_temp.ri('gaussian', '{0, 1}', c / sd)))
                           <= 1e-12 * greatest(1, abs(m) + sd * abs(pg_temp.ri('gaussian', '{0, 1}', c / sd))))
             FROM (VALUES (3.0, 2.0), (-7.0, 0.1), (0.5, 30.0)) AS t(m, sd),
                  unnest('{1e-9,0.001,0.2,1,4,50}'::float8[]) AS c),
          'gaussian: sigma(m, sd, c) = m + sd sigma(0, 1, c/sd) (location-scale, relative 1e-12)');
SELECT ok(abs(pg_temp.ri('gaussian', '{0, 1}', 5) - (-4.9999999465383293)) < 1e-12
          AND pg_temp.ri('gaussian', '{2, 1}', 100) = 2 - 100,
          'gaussian, large cost: sigma = mean - c + sd E[(Z + z*)^+] -> mean - c');
SELECT ok(abs(pg_temp.ri('gaussian', '{0, 1}', 1e-20) - 9.0219785781562548) < 1e-12
          AND abs(pg_temp.ri('gaussian', '{0, 1}', 1e-300) - 36.949568054037773) < 1e-11,
          'gaussian, tiny cost: far upper tail without underflow (values from 40-digit arithmetic)');
SELECT ok((SELECT bool_and(s < prev) FROM (
             SELECT pg_temp.ri('gaussian', '{0.2, 0.3}', c) AS s,
                    lag(pg_temp.ri('gaussian', '{0.2, 0.3}', c)) OVER (ORDER BY c) AS prev
               FROM (SELECT 1e-6 * power(1.2, k) AS c FROM generate_series(0, 100) k) g) t WHERE prev IS NOT NULL),
          'gaussian: sigma strictly decreases in the cost');

-- ---------------------------------------------------------------------
-- Empirical and discrete: exact piecewise-linear inversion
-- ---------------------------------------------------------------------

SELECT setseed(0.29);
CREATE TEMP TABLE samples AS
SELECT id, array_agg(round((10 * random() - 3)::numeric, 1 + id % 3)::float8) AS v
  FROM generate_series(1, 30) id, LATERAL generate_series(1, 1 + id % 12) j
 GROUP BY id;
CREATE TEMP TABLE sample_costs AS
SELECT id, v, c, pg_temp.ri('empirical', v, c) AS s
  FROM samples, unnest('{0.0001,0.01,0.1,0.3,0.7,1,2,3.5,6,9,20}'::float8[]) c;

SELECT is((SELECT count(*) FROM sample_costs
            WHERE abs((SELECT avg(greatest(x - s, 0)) FROM unnest(v) x) - c) <= 1e-12 IS NOT TRUE),
          0::bigint, 'empirical: mean((v - sigma)^+) = c by brute force (330 cases, 1e-12)');
SELECT ok((SELECT count(*) FILTER (WHERE s < (SELECT min(x) FROM unnest(v) x)) > 20
                  AND count(*) FILTER (WHERE s > (SELECT min(x) FROM unnest(v) x)) > 100
             FROM sample_costs),
          'empirical: the cases cover both sigma inside and sigma below the support');
SELECT is((SELECT count(*) FROM sample_costs
            WHERE c >= (SELECT avg(x) - min(x) FROM unnest(v) x)
              AND abs(s - ((SELECT avg(x) FROM unnest(v) x) - c)) <= 1e-12 IS NOT TRUE),
          0::bigint, 'empirical: sigma = mean - c when c >= mean - min (below the support)');
SELECT ok((SELECT bool_and(s < prev) FROM (
             SELECT s, lag(s) OVER (PARTITION BY id ORDER BY c) AS prev
               FROM (SELECT id, c, pg_temp.ri('empirical', v, c) AS s
                       FROM samples, unnest(ARRAY[0::float8] || ARRAY(SELECT 0.01 * k FROM generate_series(1, 400) k)) c) a) t
            WHERE prev IS NOT NULL),
          'empirical: sigma strictly decreases in the cost (from max v at c = 0; 30 samples x 401 costs)');
SELECT ok((SELECT bool_and(pg_temp.ri('empirical', v, 0) = (SELECT max(x) FROM unnest(v) x)) FROM samples),
          'empirical: c = 0 gives the largest sample value');
SELECT ok((SELECT bool_and(pg_temp.ri('empirical', v, 0.4)
                           = pg_temp.ri('empirical', ARRAY(SELECT x FROM unnest(v) x ORDER BY x DESC), 0.4)) FROM samples),
          'empirical: the order of the sample values does not matter');
SELECT ok(abs(pg_temp.ri('empirical', '{0.2, 0.9, 0.9, 0.2, 0.2}', 0.07)
              - pg_temp.ri('discrete', '{0.2, 0.6, 0.9, 0.4}', 0.07)) < 1e-12
          AND abs(pg_temp.ri('empirical', '{0, 0, 0, 0, 0, 0, 0, 0, 0, 1}', 0.01) - pg_temp.ri('bernoulli', '{0.1}', 0.01)) < 1e-12,
          'empirical with repeated values = discrete = bernoulli with the same law');
SELECT setseed(0.31);
SELECT is((SELECT count(*) FROM (
             SELECT v, p, c, pg_temp.ri('discrete', (SELECT array_agg(x ORDER BY i, k)
                                                       FROM unnest(v, p) WITH ORDINALITY AS u(a, b, i),
                                                            LATERAL (VALUES (1, a), (2, b)) AS w(k, x)), c) AS s
               FROM (SELECT ARRAY[random(), random(), random(), random()] AS v, w1, w2, w3, w4,
                            ARRAY[w1, w2, w3, w4] AS raw, 0.001 + random() AS c
                       FROM (SELECT random() w1, random() w2, random() w3, random() w4 FROM generate_series(1, 100)) r) q,
                    LATERAL (SELECT ARRAY[w1 / (w1 + w2 + w3 + w4), w2 / (w1 + w2 + w3 + w4), w3 / (w1 + w2 + w3 + w4),
                                          1 - (w1 + w2 + w3) / (w1 + w2 + w3 + w4)] AS p) pp) t
            WHERE abs((SELECT sum(b * greatest(a - s, 0)) FROM unnest(v, p) AS u(a, b)) - c) <= 1e-12 IS NOT TRUE),
          0::bigint, 'discrete: sum p_i (v_i - sigma)^+ = c by brute force (100 random 4-point laws, 1e-12)');

-- ---------------------------------------------------------------------
-- Pandora's box oracle (Prop. 3.1) vs. brute force
-- ---------------------------------------------------------------------
-- An instance: vals[i][j] and probs[i][j] (box i takes value vals[i][j]
-- with probability probs[i][j]; values of different boxes independent),
-- costs[i] paid when box i is opened.  Utility = best opened value - costs
-- paid; at least one box must be opened, each at most once.

-- sigma_i from reservation_index('discrete', {v1, p1, ...}, c_i)
CREATE FUNCTION pg_temp.sigmas(vals float8[], probs float8[], costs float8[]) RETURNS float8[]
    LANGUAGE sql IMMUTABLE AS $$
    SELECT array_agg(model_select.reservation_index('discrete',
                         ARRAY(SELECT x FROM generate_subscripts(vals, 2) j,
                                             LATERAL (VALUES (1, vals[i][j]), (2, probs[i][j])) AS t(k, x)
                                ORDER BY j, k),
                         costs[i]) ORDER BY i)
      FROM generate_subscripts(vals, 1) i $$;

-- One period of Weitzman's rule on realised values: open in decreasing
-- sigma (ties by box number), stop once the best value seen >= the next
-- sigma, select the best opened box.  Deliberately wrong variants, to show
-- that the brute-force comparison can fail: 'reversed' opens in increasing
-- sigma, 'open_all' never stops early, 'first_only' always stops at once.
CREATE FUNCTION pg_temp.weitzman_run(sigma float8[], costs float8[], realised float8[], variant text DEFAULT 'weitzman',
                                     OUT opened int[], OUT selected int, OUT utility float8)
    LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    ord int[] := ARRAY(SELECT i FROM generate_subscripts(sigma, 1) i
                        ORDER BY CASE WHEN variant = 'reversed' THEN sigma[i] ELSE -sigma[i] END, i);
    n int := cardinality(sigma);
    best float8;
    paid float8 := 0;
    b int;
BEGIN
    opened := '{}';
    FOR k IN 1 .. n LOOP
        b := ord[k];
        opened := opened || b;
        paid := paid + costs[b];
        IF best IS NULL OR realised[b] > best THEN
            best := realised[b];
            selected := b;
        END IF;
        EXIT WHEN k = n OR variant = 'first_only' OR (variant <> 'open_all' AND best >= sigma[ord[k + 1]]);
    END LOOP;
    utility := best - paid;
END $$;

-- Exact expected utility of Weitzman's rule, and E[max_i min(V_i, sigma_i)]
-- (eq. 3), by enumerating every joint outcome of the boxes.
CREATE FUNCTION pg_temp.weitzman_value(vals float8[], probs float8[], costs float8[], variant text DEFAULT 'weitzman',
                                       OUT policy float8, OUT formula3 float8)
    LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    n int := array_length(vals, 1);
    m int := array_length(vals, 2);
    sigma float8[] := pg_temp.sigmas(vals, probs, costs);
    realised float8[];
    prob float8;
    capped float8;
    code int;
BEGIN
    policy := 0;
    formula3 := 0;
    FOR outcome IN 0 .. power(m, n)::int - 1 LOOP
        code := outcome;
        realised := '{}';
        prob := 1;
        capped := NULL;
        FOR i IN 1 .. n LOOP
            realised := realised || vals[i][code % m + 1];
            prob := prob * probs[i][code % m + 1];
            capped := greatest(capped, least(vals[i][code % m + 1], sigma[i]));
            code := code / m;
        END LOOP;
        policy := policy + prob * (pg_temp.weitzman_run(sigma, costs, realised, variant)).utility;
        formula3 := formula3 + prob * capped;
    END LOOP;
END $$;

-- Brute force: the optimal expected utility over all adaptive policies, by
-- exhaustive recursion over every decision (stop, or open any unopened box,
-- each choice allowed to depend on everything seen so far).  The history
-- matters for the future only through the set of opened boxes and the best
-- value seen, and selecting the best opened box is optimal, so the state is
-- (opened, best); best IS NULL means nothing is opened yet (no stopping).
CREATE FUNCTION pg_temp.optimum(vals float8[], probs float8[], costs float8[], opened int DEFAULT 0, best float8 DEFAULT NULL)
    RETURNS float8 LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    result float8 := coalesce(best, '-Infinity');
    value float8;
BEGIN
    FOR i IN 1 .. array_length(vals, 1) LOOP
        CONTINUE WHEN opened & (1 << (i - 1)) <> 0;
        value := -costs[i];
        FOR j IN 1 .. array_length(vals, 2) LOOP
            value := value + probs[i][j] * pg_temp.optimum(vals, probs, costs, opened | (1 << (i - 1)),
                                                           greatest(best, vals[i][j]));
        END LOOP;
        result := greatest(result, value);
    END LOOP;
    RETURN result;
END $$;

-- The two-box example (spec §1.5): box 1 c = 0.5, V = 1; box 2 c = 0.01, V ~ Bernoulli(0.1).
SELECT ok(abs(pg_temp.ri('empirical', '{1}', 0.5) - pg_temp.ri('bernoulli', '{1, 1}', 0.5)) < 1e-12
          AND pg_temp.sigmas('{{1,1},{1,0}}', '{{1,0},{0.1,0.9}}', '{0.5,0.01}') = '{0.5,0.9}'::float8[],
          'two-box example: sigma = (0.5, 0.9), so box 2 is opened first');
SELECT is(ARRAY[(pg_temp.weitzman_run('{0.5,0.9}', '{0.5,0.01}', '{1,1}')).opened::text,
                (pg_temp.weitzman_run('{0.5,0.9}', '{0.5,0.01}', '{1,0}')).opened::text],
          ARRAY['{2}', '{2,1}'], 'two-box example: w2 = 1 stops after box 2; w2 = 0 goes on to box 1');
SELECT is(ARRAY[(pg_temp.weitzman_run('{0.5,0.9}', '{0.5,0.01}', '{1,1}')).selected,
                (pg_temp.weitzman_run('{0.5,0.9}', '{0.5,0.01}', '{1,0}')).selected],
          ARRAY[2, 1], 'two-box example: selects box 2 if w2 = 1, else box 1');
SELECT ok(abs((pg_temp.weitzman_value('{{1,1},{1,0}}', '{{1,0},{0.1,0.9}}', '{0.5,0.01}')).policy - 0.54) < 1e-9,
          'two-box example: the oracle is worth 0.54 per period (spec §1.5)');
SELECT ok(abs((pg_temp.weitzman_value('{{1,1},{1,0}}', '{{1,0},{0.1,0.9}}', '{0.5,0.01}')).formula3 - 0.54) < 1e-9,
          'two-box example: E[max_a min(V_a, sigma_a)] (eq. 3) = 0.54');
SELECT ok(abs(pg_temp.optimum('{{1,1},{1,0}}', '{{1,0},{0.1,0.9}}', '{0.5,0.01}') - 0.54) < 1e-9,
          'two-box example: brute-force optimum over adaptive policies = 0.54');
SELECT ok(abs(greatest(1 - 0.5, 0.1 - 0.01) - 0.5) < 1e-12
          AND (pg_temp.weitzman_value('{{1,1},{1,0}}', '{{1,0},{0.1,0.9}}', '{0.5,0.01}')).policy > 0.5 + 0.03,
          'two-box example: best one-shot value 0.5 < 0.54');

-- The three-box toy (spec §6.2): A {0, 0.6} c 0.05, B {0.2, 0.9} c 0.10, C 0.7 c 0.30
SELECT is(pg_temp.sigmas('{{0,0.6},{0.2,0.9},{0.7,0.7}}', '{{0.5,0.5},{0.5,0.5},{1,0}}', '{0.05,0.10,0.30}')::numeric(6,4)[],
          '{0.5,0.7,0.4}'::numeric(6,4)[], 'three-box toy: sigma = (0.5, 0.7, 0.4): order B, A, C');
SELECT is(ARRAY[array_to_string((pg_temp.weitzman_run('{0.5,0.7,0.4}', '{0.05,0.10,0.30}', '{0,0.9,0.7}')).opened, ',')
                  || ' -> ' || (pg_temp.weitzman_run('{0.5,0.7,0.4}', '{0.05,0.10,0.30}', '{0,0.9,0.7}')).selected,
                array_to_string((pg_temp.weitzman_run('{0.5,0.7,0.4}', '{0.05,0.10,0.30}', '{0.6,0.2,0.7}')).opened, ',')
                  || ' -> ' || (pg_temp.weitzman_run('{0.5,0.7,0.4}', '{0.05,0.10,0.30}', '{0.6,0.2,0.7}')).selected,
                array_to_string((pg_temp.weitzman_run('{0.5,0.7,0.4}', '{0.05,0.10,0.30}', '{0,0.2,0.7}')).opened, ',')
                  || ' -> ' || (pg_temp.weitzman_run('{0.5,0.7,0.4}', '{0.05,0.10,0.30}', '{0,0.2,0.7}')).selected],
          ARRAY['2 -> 2', '2,1 -> 1', '2,1,3 -> 3'],
          'three-box toy decisions: V_B = 0.9 stop at B; V_B = 0.2, V_A = 0.6 stop at A; else open C and select it');
SELECT ok(abs((pg_temp.weitzman_value('{{0,0.6},{0.2,0.9},{0.7,0.7}}', '{{0.5,0.5},{0.5,0.5},{1,0}}', '{0.05,0.10,0.30}')).policy
              - 0.575) < 1e-9
          AND abs(pg_temp.optimum('{{0,0.6},{0.2,0.9},{0.7,0.7}}', '{{0.5,0.5},{0.5,0.5},{1,0}}', '{0.05,0.10,0.30}') - 0.575) < 1e-9,
          'three-box toy: oracle value = brute-force optimum = 0.575');

-- 20 seeded random instances: 2-3 boxes, 2-3 support points (values on a
-- 0.01 grid, so ties happen), costs in [0.001, 0.3].
CREATE FUNCTION pg_temp.random_instance(n int, m int, OUT vals float8[], OUT probs float8[], OUT costs float8[])
    LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v float8[];
    w float8[];
    total float8;
BEGIN
    vals := NULL;
    probs := NULL;
    costs := '{}';
    FOR i IN 1 .. n LOOP
        v := ARRAY(SELECT round(random()::numeric, 2)::float8 FROM generate_series(1, m));
        w := ARRAY(SELECT 0.05 + random() FROM generate_series(1, m));
        total := (SELECT sum(x) FROM unnest(w) x);
        w := ARRAY(SELECT x / total FROM unnest(w) x);
        vals := CASE WHEN vals IS NULL THEN ARRAY[v] ELSE vals || ARRAY[v] END;
        probs := CASE WHEN probs IS NULL THEN ARRAY[w] ELSE probs || ARRAY[w] END;
        costs := costs || (0.001 + 0.299 * random());
    END LOOP;
END $$;

SELECT setseed(0.004);
CREATE TEMP TABLE instances AS
SELECT id, (r).vals, (r).probs, (r).costs
  FROM (SELECT id, pg_temp.random_instance(2 + id % 2, 2 + (id / 2) % 2) AS r FROM generate_series(1, 20) id) g;
CREATE TEMP TABLE verdicts AS
SELECT id, (w).policy, (w).formula3, pg_temp.optimum(vals, probs, costs) AS optimum,
       (pg_temp.weitzman_value(vals, probs, costs, 'reversed')).policy AS reversed,
       (pg_temp.weitzman_value(vals, probs, costs, 'open_all')).policy AS open_all,
       (pg_temp.weitzman_value(vals, probs, costs, 'first_only')).policy AS first_only
  FROM (SELECT *, pg_temp.weitzman_value(vals, probs, costs) AS w FROM instances) i;

SELECT is((SELECT count(*) FROM instances), 20::bigint, '20 random instances');
SELECT is((SELECT string_agg(format('#%s: weitzman %s, optimum %s', id, policy, optimum), '; ') FROM verdicts
            WHERE abs(policy - optimum) <= 1e-9 IS NOT TRUE),
          NULL, 'Weitzman order + stopping rule = brute-force optimum over all adaptive policies (20 instances, 1e-9)');
SELECT is((SELECT string_agg(format('#%s: formula %s, optimum %s', id, formula3, optimum), '; ') FROM verdicts
            WHERE abs(formula3 - optimum) <= 1e-9 IS NOT TRUE),
          NULL, 'E[max_a min(V_a, sigma_a)] (eq. 3) = brute-force optimum (20 instances, 1e-9)');
SELECT ok((SELECT count(*) FILTER (WHERE reversed < optimum - 1e-6) >= 5 AND bool_and(reversed <= optimum + 1e-9) FROM verdicts),
          'the comparison has teeth: opening in increasing sigma is strictly worse on several instances');
SELECT ok((SELECT count(*) FILTER (WHERE open_all < optimum - 1e-6) >= 5 AND count(*) FILTER (WHERE first_only < optimum - 1e-6) >= 5
                  AND bool_and(open_all <= optimum + 1e-9 AND first_only <= optimum + 1e-9) FROM verdicts),
          'the comparison has teeth: never stopping early, or always stopping at once, is strictly worse on several instances');
SELECT ok((SELECT count(*) FILTER (WHERE array_length(vals, 1) = 3) >= 8 AND count(*) FILTER (WHERE array_length(vals, 2) = 3) >= 8
             FROM instances),
          'the instances mix 2 and 3 boxes and 2 and 3 support points');

-- ---------------------------------------------------------------------
-- Bad input
-- ---------------------------------------------------------------------

SELECT throws_ok($$SELECT model_select.reservation_index('poisson', '{1}', 0.1)$$, '22023',
                 'reservation_index: unknown distribution "poisson"', 'unknown distribution');
SELECT throws_ok($$SELECT model_select.reservation_index('bernoulli', '{}', 0.1)$$, '22023',
                 'reservation_index: bernoulli takes params {p} or {p, high}, got 0 values', 'bernoulli: no params');
SELECT throws_ok($$SELECT model_select.reservation_index('bernoulli', '{0.5, 1, 2}', 0.1)$$, '22023', NULL,
                 'bernoulli: three params');
SELECT throws_ok($$SELECT model_select.reservation_index('uniform', '{0}', 0.1)$$, '22023', NULL, 'uniform: one param');
SELECT throws_ok($$SELECT model_select.reservation_index('gaussian', '{0, 1, 2}', 0.1)$$, '22023', NULL, 'gaussian: three params');
SELECT throws_ok($$SELECT model_select.reservation_index('empirical', '{}', 0.1)$$, '22023', NULL, 'empirical: no sample values');
SELECT throws_ok($$SELECT model_select.reservation_index('discrete', '{1, 0.5, 0}', 0.1)$$, '22023', NULL,
                 'discrete: an odd number of params');
SELECT throws_ok($$SELECT model_select.reservation_index('uniform', '{NaN, 1}', 0.1)$$, '22023',
                 'reservation_index: params must be finite (element 1 is NaN)', 'a NaN param');
SELECT throws_ok($$SELECT model_select.reservation_index('gaussian', '{Infinity, 1}', 0.1)$$, '22023', NULL, 'an infinite param');
SELECT throws_ok($$SELECT model_select.reservation_index('empirical', '{1, -Infinity}', 0.1)$$, '22023', NULL,
                 'an infinite sample value');
SELECT throws_ok($$SELECT model_select.reservation_index('uniform', '{0, 1}', 'NaN')$$, '22023', NULL, 'a NaN cost');
SELECT throws_ok($$SELECT model_select.reservation_index('uniform', '{0, 1}', 'Infinity')$$, '22023', NULL, 'an infinite cost');
SELECT throws_ok($$SELECT model_select.reservation_index('uniform', '{0, 1}', -0.1)$$, '22023',
                 'reservation_index: cost must be finite and not negative, got -0.1', 'a negative cost');
SELECT throws_ok($$SELECT model_select.reservation_index('bernoulli', '{1.5}', 0.1)$$, '22023',
                 'reservation_index: bernoulli: p must be in [0, 1]', 'bernoulli: p > 1');
SELECT throws_ok($$SELECT model_select.reservation_index('bernoulli', '{-0.1, 1}', 0.1)$$, '22023', NULL, 'bernoulli: p < 0');
SELECT throws_ok($$SELECT model_select.reservation_index('gaussian', '{0, 0}', 0.1)$$, '22023',
                 'reservation_index: gaussian: sd must be positive', 'gaussian: sd = 0');
SELECT throws_ok($$SELECT model_select.reservation_index('gaussian', '{0, -1}', 0.1)$$, '22023', NULL, 'gaussian: sd < 0');
SELECT throws_ok($$SELECT model_select.reservation_index('uniform', '{1, 1}', 0.1)$$, '22023',
                 'reservation_index: uniform: a must be less than b', 'uniform: a = b');
SELECT throws_ok($$SELECT model_select.reservation_index('uniform', '{2, 1}', 0.1)$$, '22023', NULL, 'uniform: a > b');
SELECT throws_ok($$SELECT model_select.reservation_index('discrete', '{0, -0.5, 1, 1.5}', 0.1)$$, '22023', NULL,
                 'discrete: a negative probability');
SELECT throws_ok($$SELECT model_select.reservation_index('discrete', '{0, 0.5, 1, 0.4}', 0.1)$$, '22023', NULL,
                 'discrete: probabilities not summing to 1');
SELECT throws_ok($$SELECT model_select.reservation_index('empirical', '{{1, 2}, {3, 4}}', 0.1)$$, '22023', NULL,
                 'a two-dimensional params array');
SELECT throws_ok($$SELECT model_select.reservation_index(NULL, '{0, 1}', 0.1)$$, '22004',
                 'reservation_index: distribution must not be NULL', 'NULL distribution');
SELECT throws_ok($$SELECT model_select.reservation_index('uniform', NULL, 0.1)$$, '22004', NULL, 'NULL params');
SELECT throws_ok($$SELECT model_select.reservation_index('uniform', '{0, 1}', NULL)$$, '22004', NULL, 'NULL cost');
SELECT throws_ok($$SELECT model_select.reservation_index('empirical', '{0.5, NULL}', 0.1)$$, '22004', NULL,
                 'a NULL element in params');

SELECT * FROM finish();
ROLLBACK;
