-- Learned cost-aware cascades (COSMOS, Belloni, Chen & Wei 2026 §3, known reward):
-- cascade_observations, cascade_state, cascade(), cascade_scores(),
-- cascade_next(), cascade_select(), cascade_route(), cascade_refit().
--
--  (a) the two-box example of spec §1.5 as a context-free (psi = [1]) learned
--      cascade over 5,000 periods: mean utility of the last 1,000 >= 0.53
--      (oracle 0.54); the best single box earns 0.50;
--  (b) two prompt clusters, a cheap arm good on cluster 1 only and a dear arm
--      good on both: the learned contextual cascade beats the best single arm
--      and the best fixed-order cascade (any order, any threshold, chosen ex
--      post on the same periods);
--  (c) incremental fits equal refits from scratch; invariants of spec §6.7;
--      bad input with its SQLSTATE, nothing written.
--
-- Both simulations use common random numbers: every period's potential
-- values are drawn first (setseed/random), then the policy and the
-- baselines are evaluated on the same draws.  Observations of a period are
-- inserted at its end (one INSERT), so the indices used within a period only
-- depend on earlier periods (spec §3.6).
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(126);

SELECT has_function('model_select', 'cascade', ARRAY['text', 'anycompatiblearray', 'double precision'],
                    'cascade(text, anycompatiblearray, float8)');
SELECT has_function('model_select', 'cascade_next',
                    ARRAY['text', 'anycompatiblearray', 'double precision', 'text[]', 'double precision'],
                    'cascade_next(text, anycompatiblearray, float8, text[], float8)');
SELECT has_function('model_select', 'cascade_select', ARRAY['text', 'double precision[]', 'text[]'],
                    'cascade_select(text, float8[], text[])');
SELECT has_function('model_select', 'cascade_route', ARRAY['text', 'anycompatiblearray', 'double precision'],
                    'cascade_route(text, anycompatiblearray, float8)');
SELECT has_function('model_select', 'cascade_refit', ARRAY['text', 'boolean'], 'cascade_refit(text, boolean)');
SELECT isnt_strict('model_select', 'cascade_next',
                   ARRAY['text', 'anycompatiblearray', 'double precision', 'text[]', 'double precision'],
                   'cascade_next is not STRICT (best_value is NULL before the first query)');

-- One online run: each period, query arms in cascade_next order, pay their
-- costs, keep the best value; insert the period's observations at its end.
-- periods has columns (t, context, v, c): v[k], c[k] are arm k's value and
-- cost in that period (arms[k] names arm k).
CREATE FUNCTION pg_temp.simulate(sel text, periods regclass, arms text[], beta float8)
RETURNS TABLE (t int, utility float8, queried int, first text, deployed text, once boolean)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    a text;
    k int;
    bestv float8;
    q text[];
    vals float8[];
    costs float8[];
BEGIN
    FOR r IN EXECUTE format('SELECT t, context, v, c FROM %s ORDER BY t', periods) LOOP
        bestv := NULL; q := '{}'; vals := '{}'; costs := '{}';
        LOOP
            a := model_select.cascade_next(sel, r.context, bestv, q, beta);
            EXIT WHEN a IS NULL;
            k := array_position(arms, a);
            q := q || a; vals := vals || r.v[k]; costs := costs || r.c[k];
            bestv := greatest(bestv, r.v[k]);
        END LOOP;
        INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost)
        SELECT sel, o.a, r.context, o.v, o.c FROM unnest(q, vals, costs) o(a, v, c);
        t := r.t;
        deployed := model_select.cascade_select(sel, vals, q);
        utility := vals[array_position(q, deployed)] - (SELECT sum(x) FROM unnest(costs) x);
        queried := cardinality(q);
        first := q[1];
        once := queried = (SELECT count(DISTINCT x) FROM unnest(q) x) AND vals[array_position(q, deployed)] = bestv;
        RETURN NEXT;
    END LOOP;
END $$;

-- =====================================================================
-- (a) The two boxes of spec §1.5, learned without context (greedy
-- selector: psi = [1]).  Box 1: cost 0.5, value 1.  Box 2: cost 0.01, value 1
-- w.p. 0.1, else 0.  Oracle: open box 2, stop iff it gives 1, else open
-- box 1: 0.1·0.99 + 0.9·0.49 = 0.54; best single box: box 1, 0.50.
--
-- beta = 5: box 2 pays off rarely, so after a few zeros its point index is
-- −0.01 against box 1's 0.5 (0.55 apart on the tanh scale) and both bonuses
-- shrink together (box 1 is opened whenever box 2 gives 0).  With beta·|psi|
-- below that gap box 2 is never opened again: in a model of this loop over
-- 200 seeds the lock-out rate was 0.88 at beta 0.5, 0.21 at 2, 0.075 at 3,
-- 0.01 at 4 and 0 at 5.  Once box 2's index is learned, optimism costs
-- nothing here (the order and the stops are those of the oracle).
-- =====================================================================
SELECT lives_ok($$SELECT model_select.create_selector('two', 1, ARRAY['box1', 'box2'], 'greedy')$$,
                'two-box selector (greedy: context-free, psi = [1])');
SELECT setseed(0.5);
CREATE TEMP TABLE two_periods AS
SELECT t, ARRAY[1]::float8[] AS context, ARRAY[1, (random() < 0.1)::int]::float8[] AS v,
       ARRAY[0.5, 0.01]::float8[] AS c
  FROM generate_series(1, 5000) t;
CREATE TEMP TABLE two_run AS SELECT * FROM pg_temp.simulate('two', 'two_periods', ARRAY['box1', 'box2'], 5);

CREATE TEMP TABLE two_summary AS
SELECT avg(r.utility) AS learned,
       avg(p.v[1] - p.c[1]) AS box1_only,
       avg(p.v[2] - p.c[2]) AS box2_only,
       avg(CASE WHEN p.v[2] = 1 THEN 0.99 ELSE 0.49 END) AS oracle,
       count(*) FILTER (WHERE r.first = 'box2' AND (r.queried = 1) = (p.v[2] = 1)) AS oracle_moves
  FROM two_run r JOIN two_periods p USING (t) WHERE t > 4000;

SELECT ok(learned >= 0.53, format('two boxes: learned cascade earns %s per period over periods 4001-5000 (>= 0.53; oracle on the same draws %s)',
                                  round(learned::numeric, 4), round(oracle::numeric, 4)))
  FROM two_summary;
SELECT is(greatest(box1_only, box2_only)::numeric, 0.50,
          format('the best single box earns 0.50 (box 1; box 2 alone %s)', round(box2_only::numeric, 4)))
  FROM two_summary;
SELECT ok(oracle_moves >= 990, format('the oracle policy was learned: box 2 first, stop iff it gives 1, in %s of the last 1000 periods', oracle_moves))
  FROM two_summary;
SELECT ok((SELECT bool_and(once) AND max(queried) <= 2 AND min(queried) >= 1 FROM two_run),
          'every period opens 1 or 2 boxes, each at most once, and deploys the best value seen');
SELECT ok((SELECT abs(estimate - 0.5) < 1e-3 FROM model_select.cascade_scores('two', ARRAY[1]::float8[]) WHERE arm = 'box1')
      AND (SELECT abs(estimate - 0.9) < 0.02 FROM model_select.cascade_scores('two', ARRAY[1]::float8[]) WHERE arm = 'box2'),
          'learned point indices: box 1 0.5 (exact reservation index), box 2 0.9 +- 0.02');
SELECT is((SELECT array_agg(arm ORDER BY "position") FROM model_select.cascade('two', ARRAY[1]::float8[], 5)),
          ARRAY['box2', 'box1'], 'cascade(): box 2 first, then box 1');

-- =====================================================================
-- (b) Contextual: prompts from two clusters (synthetic_clusters, dim 8),
-- lin_ucb selector: psi = [normalised embedding; 1].  cheap (cost 0.1):
-- value U[0.7, 1] on cluster 1, U[0, 0.3] on cluster 2; dear (cost 0.4):
-- U[0.6, 1] on both.  Oracle: cluster 1 cheap then stop (0.75), cluster 2
-- dear then stop (0.40), about 0.575; each arm alone about 0.40; cheap
-- first, dear if needed, about 0.525 (it wastes the cheap call on cluster 2).
-- =====================================================================
SELECT lives_ok($$SELECT model_select.create_selector('ctx', 8, ARRAY['cheap', 'dear'], 'lin_ucb')$$,
                'contextual selector (lin_ucb: psi = [x; 1], m = 9)');
SELECT setseed(0.25);
CREATE TEMP TABLE ctx_periods AS
SELECT s.round AS t, s.cluster, s.context,
       ARRAY[CASE WHEN s.cluster = 1 THEN 0.7 + 0.3 * random() ELSE 0.3 * random() END,
             0.6 + 0.4 * random()]::float8[] AS v,
       ARRAY[0.1, 0.4]::float8[] AS c
  FROM model_select.synthetic_clusters(5000, 8, 2, 2, 7) s;
CREATE TEMP TABLE ctx_run AS SELECT * FROM pg_temp.simulate('ctx', 'ctx_periods', ARRAY['cheap', 'dear'], 5);

-- baselines on periods 4001-5000: single arms, and every fixed order with
-- every stop threshold tau in {0, 0.05, ..., 1.05} (tau 0: the first arm
-- alone, tau 1.05: both arms always)
CREATE TEMP TABLE ctx_fixed AS
SELECT o.first, x.tau,
       avg(CASE WHEN p.v[o.first] >= x.tau THEN p.v[o.first] - p.c[o.first]
                ELSE greatest(p.v[1], p.v[2]) - p.c[1] - p.c[2] END) AS utility
  FROM ctx_periods p, (VALUES (1), (2)) o(first), generate_series(0, 21) k, LATERAL (SELECT k / 20.0 AS tau) x
 WHERE p.t > 4000
 GROUP BY o.first, x.tau;
CREATE TEMP TABLE ctx_summary AS
SELECT (SELECT avg(utility) FROM ctx_run WHERE t > 4000) AS learned,
       (SELECT greatest(avg(v[1] - c[1]), avg(v[2] - c[2])) FROM ctx_periods WHERE t > 4000) AS best_single,
       (SELECT max(utility) FROM ctx_fixed) AS best_fixed,
       (SELECT avg(CASE WHEN cluster = 1 THEN v[1] - c[1] ELSE v[2] - c[2] END) FROM ctx_periods WHERE t > 4000) AS oracle;

SELECT ok(learned > best_single, format('contextual: learned cascade %s > best single arm %s (periods 4001-5000)',
                                        round(learned::numeric, 4), round(best_single::numeric, 4)))
  FROM ctx_summary;
SELECT ok(learned > best_fixed + 0.02, format('contextual: learned cascade %s > best fixed-order cascade %s + 0.02 (oracle %s)',
                                              round(learned::numeric, 4), round(best_fixed::numeric, 4), round(oracle::numeric, 4)))
  FROM ctx_summary;
SELECT ok(learned > oracle - 0.01, format('contextual: within 0.01 of the oracle (%s vs %s)',
                                          round(learned::numeric, 4), round(oracle::numeric, 4)))
  FROM ctx_summary;
SELECT ok((SELECT count(*) FILTER (WHERE (p.cluster = 1) = (r.first = 'cheap')) >= 950
             FROM ctx_run r JOIN ctx_periods p USING (t) WHERE t > 4000),
          'contextual: cheap first on cluster 1, dear first on cluster 2 (>= 95% of the last 1000)');
SELECT ok((SELECT bool_and(once) AND max(queried) <= 2 FROM ctx_run), 'contextual: each arm at most once per period');

-- =====================================================================
-- (c1) Incremental fits equal refits from scratch.  The fit is Newton on a
-- strictly convex loss (ridge 1e-3) stopped at a Newton decrement
-- gᵀH⁻¹g <= 1e-20·(n + 1), so |rho − rho*| <= sqrt(decrement / 1e-3) ~ 3e-8
-- at n = 100 from any start: 1e-6 leaves a wide margin.  The design factor
-- is exact up to rounding (rank-1 updates vs one factorisation): 1e-9.
-- =====================================================================
SELECT lives_ok($$SELECT model_select.create_selector(s, 4, ARRAY['a', 'b'], 'lin_ucb')
                    FROM unnest(ARRAY['inc', 'bulk64', 'bulk200']) s$$, 'selectors inc, bulk64, bulk200');
SELECT setseed(0.75);
CREATE TEMP TABLE inc_rows AS
SELECT g AS i, CASE WHEN g % 2 = 0 THEN 'a' ELSE 'b' END AS arm,
       ARRAY[random() - 0.5, random() - 0.5, random() - 0.5, 1]::float8[] AS context,
       random() AS u, 0.02 + 0.2 * random() AS cost
  FROM generate_series(1, 200) g;
-- value depends on the context (cluster-like), clipped to [0, 1]
ALTER TABLE inc_rows ADD COLUMN value float8;
UPDATE inc_rows SET value = least(1, greatest(0, 0.5 + 0.8 * context[1] + 0.3 * (u - 0.5)));
CREATE TEMP TABLE probes AS
SELECT g AS probe, ARRAY[sin(g), cos(2 * g), sin(3 * g), 1]::float8[] AS context FROM generate_series(1, 10) g;

CREATE FUNCTION pg_temp.insert_one_by_one(sel text, lo int, hi int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
    FOR r IN SELECT * FROM inc_rows WHERE i BETWEEN lo AND hi ORDER BY i LOOP
        INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost)
        VALUES (sel, r.arm, r.context, r.value, r.cost);
    END LOOP;
END $$;
CREATE FUNCTION pg_temp.rho(sel text, a text) RETURNS float8[] LANGUAGE sql AS $$
    SELECT rho FROM model_select.cascade_arm_stats WHERE selector = sel AND arm = a
$$;
CREATE FUNCTION pg_temp.rho_diff(s1 text, s2 text) RETURNS float8 LANGUAGE sql AS $$
    SELECT max(abs(x - y)) FROM unnest(ARRAY['a', 'b']) a,
           LATERAL unnest(pg_temp.rho(s1, a), pg_temp.rho(s2, a)) u(x, y)
$$;
CREATE FUNCTION pg_temp.scores(sel text) RETURNS TABLE (probe int, arm text, estimate float8, width float8) LANGUAGE sql AS $$
    SELECT p.probe, s.arm, s.estimate, s.width FROM probes p, LATERAL model_select.cascade_scores(sel, p.context) s
$$;

SELECT pg_temp.insert_one_by_one('inc', 1, 64);
INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost)
SELECT 'bulk64', arm, context, value, cost FROM inc_rows WHERE i <= 64 ORDER BY i;
SELECT is((SELECT array_agg(fit_n ORDER BY arm) FROM model_select.cascade_arm_stats WHERE selector = 'inc'),
          ARRAY[32, 32]::bigint[], 'n <= 32: every statement refits (warm-started from the previous rho)');
SELECT cmp_ok(pg_temp.rho_diff('inc', 'bulk64'), '<', 1e-6::float8,
              '32 warm-started refits give the rho of one fit from rho = 0 on all 64 rows');

SELECT pg_temp.insert_one_by_one('inc', 65, 200);
SELECT is((SELECT array_agg(ROW(n, fit_n)::text ORDER BY arm) FROM model_select.cascade_arm_stats WHERE selector = 'inc'),
          ARRAY['(100,97)', '(100,97)'],
          'schedule: after 32, refit when n grows by 1/8 (36, 40, 45, 50, 56, 63, 70, 78, 87, 97, 109): fit_n = 97 at n = 100');
CREATE TEMP TABLE inc_before AS SELECT * FROM pg_temp.scores('inc');
SELECT is(model_select.cascade_refit('inc'), 200::bigint, 'cascade_refit returns the observations used');
SELECT cmp_ok((SELECT max(abs(b.width - a.width) / a.width) FROM inc_before b JOIN pg_temp.scores('inc') a USING (probe, arm)),
              '<', 1e-9::float8, 'design by 200 rank-1 updates = design factorised from scratch (widths, relative 1e-9)');
CREATE TEMP TABLE rho_warm AS SELECT arm, rho FROM model_select.cascade_arm_stats WHERE selector = 'inc';
SELECT is(model_select.cascade_refit('inc', from_scratch => true), 200::bigint, 'cascade_refit from rho = 0');
SELECT cmp_ok((SELECT max(abs(x - y)) FROM rho_warm w JOIN model_select.cascade_arm_stats s ON s.selector = 'inc' AND s.arm = w.arm,
                      LATERAL unnest(w.rho, s.rho) u(x, y)),
              '<', 1e-6::float8, 'refit warm-started from the incremental rho = refit from rho = 0');
INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost)
SELECT 'bulk200', arm, context, value, cost FROM inc_rows ORDER BY i;
SELECT cmp_ok(pg_temp.rho_diff('inc', 'bulk200'), '<', 1e-6::float8, '... = one fit of all 200 rows in one INSERT');
SELECT cmp_ok((SELECT max(abs(b.estimate - a.estimate)) FROM inc_before b JOIN pg_temp.scores('inc') a USING (probe, arm)),
              '<', 0.05::float8, 'the estimates fit at 97 observations are close to those at 100');

-- =====================================================================
-- (c2) Invariants (spec §6.7) and the decision log
-- =====================================================================
SELECT ok((SELECT bool_and(index >= estimate AND width > 0) FROM probes p, LATERAL model_select.cascade_scores('inc', p.context, 0.5)),
          'the optimistic index is at least the point estimate');
SELECT ok((SELECT bool_and(index = estimate) FROM probes p, LATERAL model_select.cascade_scores('inc', p.context, 0)),
          'with beta = 0 it is the point estimate');
CREATE TEMP TABLE w0 AS SELECT width FROM model_select.cascade_scores('inc', ARRAY[0.3, -0.2, 0.1, 1]::float8[]) WHERE arm = 'a';
INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost) VALUES ('inc', 'a', '{0.3, -0.2, 0.1, 1}', 0.7, 0.1);
SELECT ok((SELECT s.width < w0.width FROM w0, model_select.cascade_scores('inc', ARRAY[0.3, -0.2, 0.1, 1]::float8[]) s WHERE s.arm = 'a'),
          'querying an arm at psi shrinks its width at psi');
SELECT lives_ok($$SELECT model_select.add_arm('inc', 'c')$$, 'a new arm');
SELECT is((SELECT arm || ' ' || index FROM model_select.cascade('inc', ARRAY[0.3, -0.2, 0.1, 1]::float8[]) WHERE "position" = 1),
          'c Infinity', 'an arm without observations has index Infinity and is opened first');
SELECT is(model_select.cascade_next('inc', ARRAY[0.3, -0.2, 0.1, 1]::float8[], -1, '{c}'),
          (SELECT arm FROM model_select.cascade('inc', ARRAY[0.3, -0.2, 0.1, 1]::float8[]) WHERE "position" = 2),
          'after the first arm, a best value below the next index (-1 < any index) continues with the next arm');
SELECT is(model_select.cascade_next('inc', ARRAY[0.3, -0.2, 0.1, 1]::float8[], x.index, '{c}'), NULL,
          'a best value equal to the next index stops (ties stop)')
  FROM model_select.cascade('inc', ARRAY[0.3, -0.2, 0.1, 1]::float8[]) x WHERE x."position" = 2;
SELECT is(model_select.cascade_next('inc', ARRAY[0.3, -0.2, 0.1, 1]::float8[], x.index - 1e-12, '{c}'), x.arm,
          '... just below it does not')
  FROM model_select.cascade('inc', ARRAY[0.3, -0.2, 0.1, 1]::float8[]) x WHERE x."position" = 2;
SELECT is(model_select.cascade_next('inc', ARRAY[0.3, -0.2, 0.1, 1]::float8[], -1, '{a,b,c}'), NULL,
          'every arm queried: stop');
SELECT is(model_select.cascade_next('inc', ARRAY[0.3, -0.2, 0.1, 1]::real[], NULL, '{}'), 'c',
          'nothing queried: the first arm, best_value ignored (real[] context)');
SELECT is(model_select.cascade_select('inc', '{0.2, 0.9, 0.9}', '{a, c, b}'), 'c',
          'cascade_select: the best value, the first of equal ones');
SELECT lives_ok($$SELECT model_select.retire_arm('inc', 'c')$$, 'retire the new arm');
SELECT is((SELECT count(*) FROM model_select.cascade('inc', ARRAY[0.3, -0.2, 0.1, 1]::float8[])), 2::bigint,
          'retired arms are not in the cascade');

CREATE TEMP TABLE routed AS SELECT * FROM model_select.cascade_route('two', ARRAY[1]::float8[], 5);
SELECT is((SELECT arms FROM routed), ARRAY['box2', 'box1'], 'cascade_route returns the order ...');
SELECT is((SELECT d.indices FROM model_select.cascade_decisions d JOIN routed r USING (cascade_id)),
          (SELECT array_agg(index ORDER BY "position") FROM model_select.cascade('two', ARRAY[1]::float8[], 5)),
          '... and logs it with the indices of cascade()');
INSERT INTO model_select.cascade_observations(cascade_id, arm, value, cost)
SELECT cascade_id, x.arm, x.value, x.cost FROM routed, (VALUES ('box2', 0.0, 0.01), ('box1', 1.0, 0.5)) x(arm, value, cost);
SELECT is((SELECT ROW(o.selector, o.context)::text FROM model_select.cascade_observations o JOIN routed USING (cascade_id) LIMIT 1),
          '(two,{1})', 'an observation by cascade_id takes selector and context from the cascade');
SELECT is((SELECT ROW(queried, best_arm, best_value, total_cost, utility)::text FROM model_select.cascade_outcomes JOIN routed USING (cascade_id)),
          '(2,box1,1,0.51,0.49)', 'cascade_outcomes: queried, best arm and value, cost, utility');

-- The fitted index of a context-free arm is the reservation index of its
-- empirical value distribution at its mean cost (the first-order condition
-- of the loss is the empirical Weitzman equation, up to the ridge: a shift
-- of 1e-3·z/n in the cost, ~1e-5 in sigma at n = 400); random costs count
-- only through their mean (spec §6.1).
SELECT lives_ok($$SELECT model_select.create_selector('emp', 1, ARRAY['x', 'y'], 'greedy')$$, 'selector emp');
SELECT setseed(0.9);
CREATE TEMP TABLE emp AS SELECT g, random() AS v, 0.02 + 0.1 * random() AS c FROM generate_series(1, 400) g;
INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost)
SELECT 'emp', 'x', '{1}'::float8[], v, 0.07 FROM emp UNION ALL SELECT 'emp', 'y', '{1}'::float8[], v, c FROM emp;
SELECT cmp_ok(abs((SELECT estimate FROM model_select.cascade_scores('emp', '{1}'::float8[]) WHERE arm = 'x')
                  - (SELECT model_select.reservation_index('empirical', array_agg(v), 0.07) FROM emp)),
              '<', 1e-4::float8, 'constant cost: the learned index = reservation_index(''empirical'', values, cost)');
SELECT cmp_ok(abs((SELECT estimate FROM model_select.cascade_scores('emp', '{1}'::float8[]) WHERE arm = 'y')
                  - (SELECT model_select.reservation_index('empirical', array_agg(v), avg(c)) FROM emp)),
              '<', 1e-4::float8, 'random costs: the same with their mean cost');

-- rff_ucb selectors learn on their random Fourier features (2D + 1 of them)
SELECT lives_ok($$SELECT model_select.create_selector('rff', 4, ARRAY['a', 'b'], 'rff_ucb', settings => '{"features": 8}')$$,
                'rff_ucb selector with D = 8');
INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost)
SELECT 'rff', arm, context, value, cost FROM inc_rows WHERE i <= 40 ORDER BY i;
SELECT is((SELECT array_agg(cardinality(rho) ORDER BY arm) FROM model_select.cascade_arm_stats WHERE selector = 'rff'),
          ARRAY[17, 17], 'rff_ucb: psi = [rff features; 1], m = 17');
-- alter_selector() refits the cascade state under its settings lock: it never
-- holds features of other settings (XX001 before, or silently stale ones)
SELECT lives_ok($$SELECT model_select.alter_selector('rff', '{"features": 4}')$$, 'change D to 4');
SELECT is((SELECT array_agg(cardinality(rho) ORDER BY arm) FROM model_select.cascade_arm_stats WHERE selector = 'rff'),
          ARRAY[9, 9], 'alter_selector() refits the cascade state: m = 9 at once');
SELECT lives_ok($$SELECT model_select.alter_selector('rff', '{"bandwidth": 2.5}')$$,
                'change the bandwidth (other features, the same m)');
CREATE TEMP TABLE rff_live AS
SELECT k, c.arm, c.estimate, c.width
  FROM generate_series(1, 3) k, model_select.cascade_scores('rff', ARRAY[sin(k), cos(k), 0.5, -k]::float8[]) c;
SELECT is(model_select.cascade_refit('rff', true), 40::bigint, 'cascade_refit from scratch uses the 40 observations');
SELECT is((SELECT count(*) FROM rff_live l
             JOIN generate_series(1, 3) k USING (k)
             JOIN LATERAL model_select.cascade_scores('rff', ARRAY[sin(k), cos(k), 0.5, -k]::float8[]) c USING (arm)
            WHERE abs(l.estimate - c.estimate) <= 1e-9 AND abs(l.width - c.width) <= 1e-9),
          6::bigint, 'after alter_selector() the scores are those of a from-scratch refit under the new features (1e-9)');
SELECT throws_ok(format($$SELECT model_select.alter_selector('rff', '{"reward_max": %s}')$$,
                        (SELECT max(value) / 2 FROM model_select.cascade_observations WHERE selector = 'rff')),
                 '22003', NULL, 'a reward range that leaves out an observed value: 22003, as for rewards');

-- Damaged stored states (written by hand): every reader fails with XX001, no
-- NaN reaches an index, and cascade_refit() (which only takes a usable rho
-- as its start) repairs them
SELECT lives_ok($$SELECT model_select.create_selector('dmg', 2, ARRAY['a'], 'lin_ucb')$$, 'a selector to damage');
INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost)
SELECT 'dmg', 'a', ARRAY[sin(g), cos(g)]::float8[], 0.5 + 0.4 * sin(3 * g), 0.05 FROM generate_series(1, 6) g;
CREATE TEMP TABLE dmg_good AS SELECT * FROM model_select.cascade_scores('dmg', '{0.3, 0.7}'::float8[]);
CREATE FUNCTION pg_temp.damage(what text, col text, val text) RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('UPDATE model_select.cascade_state SET %I = %L WHERE arm_id = '
                   '(SELECT arm_id FROM model_select.arms a JOIN model_select.selectors s USING (selector_id)'
                   ' WHERE s.name = %L)', col, val, 'dmg');
    RETURN NEXT throws_ok($q$SELECT * FROM model_select.cascade_scores('dmg', '{0.3, 0.7}'::float8[])$q$,
                          'XX001', NULL, what || ': cascade_scores() fails with XX001');
    RETURN NEXT throws_ok($q$INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost)
                            VALUES ('dmg', 'a', '{1, 0}', 0.5, 0.1)$q$,
                          'XX001', NULL, what || ': an observation insert fails with XX001');
    RETURN NEXT is(model_select.cascade_refit('dmg'), 6::bigint, what || ': cascade_refit() repairs it');
    RETURN NEXT is((SELECT count(*) FROM dmg_good g
                      JOIN model_select.cascade_scores('dmg', '{0.3, 0.7}'::float8[]) c USING (arm)
                     WHERE abs(g.estimate - c.estimate) <= 1e-9 AND abs(g.width - c.width) <= 1e-9),
                   1::bigint, what || ': ... to the scores before the damage (1e-9)');
END $$;
SELECT pg_temp.damage(what, col, val) FROM (VALUES
    ('design too short', 'design', '\x00'),
    ('design not finite', 'design', '\xffffffffffffffff' || repeat('00', 40)),
    ('design with a zero diagonal', 'design', '\x' || repeat('00', 48)),
    ('rho with NaN', 'rho', '{NaN, 1, 1}'),
    ('rho with Infinity', 'rho', '{1, Infinity, 1}'),
    ('rho with NULL', 'rho', '{1, NULL, 1}'),
    ('rho two-dimensional', 'rho', '{{1, 1, 1}}')) d(what, col, val);

-- =====================================================================
-- (c3) Bad input: SQLSTATE, and none of the cascade tables changes
-- =====================================================================
CREATE FUNCTION pg_temp.fingerprint() RETURNS text LANGUAGE sql AS $$
    SELECT md5(coalesce((SELECT string_agg(t::text, ';' ORDER BY obs_id) FROM model_select.cascade_observations t), '')
            || coalesce((SELECT string_agg(t::text || t.xmin::text, ';' ORDER BY arm_id) FROM model_select.cascade_state t), '')
            || coalesce((SELECT string_agg(t::text, ';' ORDER BY cascade_id) FROM model_select.cascade_decisions t), ''))
$$;
SELECT lives_ok($$SELECT model_select.create_selector('lonely', 1, ARRAY['x'], 'greedy');
                  SELECT model_select.retire_arm('lonely', 'x')$$, 'a selector without an active arm');
CREATE TEMP TABLE fp0 AS SELECT pg_temp.fingerprint() AS fp;
CREATE TEMP TABLE bad (ord serial, sql text, state text, descr text);
INSERT INTO bad(sql, state, descr) VALUES
  ($$INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost) VALUES ('nope', 'a', '{1}', 0.5, 0.1)$$, '42704', 'unknown selector'),
  ($$INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost) VALUES ('two', 'box9', '{1}', 0.5, 0.1)$$, '42704', 'unknown arm'),
  ($$INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost) VALUES ('inc', 'c', '{1,0,0,1}', 0.5, 0.1)$$, '55000', 'retired arm'),
  ($$INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost) VALUES ('two', 'box1', '{1,2}', 0.5, 0.1)$$, '22000', 'context of the wrong dimension'),
  ($$INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost) VALUES ('two', 'box1', '{NaN}', 0.5, 0.1)$$, '22000', 'NaN in the context'),
  ($$INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost) VALUES ('two', 'box1', '{NULL}', 0.5, 0.1)$$, '22004', 'NULL element in the context'),
  ($$INSERT INTO model_select.cascade_observations(selector, arm, value, cost) VALUES ('two', 'box1', 0.5, 0.1)$$, '22004', 'no context and no cascade_id'),
  ($$INSERT INTO model_select.cascade_observations(selector, context, value, cost) VALUES ('two', '{1}', 0.5, 0.1)$$, '22004', 'no arm'),
  ($$INSERT INTO model_select.cascade_observations(selector, arm, context, cost) VALUES ('two', 'box1', '{1}', 0.1)$$, '22004', 'NULL value'),
  ($$INSERT INTO model_select.cascade_observations(selector, arm, context, value) VALUES ('two', 'box1', '{1}', 0.5)$$, '22004', 'NULL cost'),
  ($$INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost) VALUES ('two', 'box1', '{1}', 1.5, 0.1)$$, '22003', 'value above reward_max'),
  ($$INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost) VALUES ('two', 'box1', '{1}', 'NaN', 0.1)$$, '22003', 'NaN value'),
  ($$INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost) VALUES ('two', 'box1', '{1}', 0.5, -0.1)$$, '22003', 'negative cost'),
  ($$INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost) VALUES ('two', 'box1', '{1}', 0.5, 'Infinity')$$, '22003', 'infinite cost'),
  ($$INSERT INTO model_select.cascade_observations(cascade_id, arm, value, cost) VALUES (999999, 'box1', 0.5, 0.1)$$, '42704', 'unknown cascade_id'),
  ($$INSERT INTO model_select.cascade_observations(cascade_id, arm, context, value, cost) SELECT cascade_id, 'box1', '{2}', 0.5, 0.1 FROM routed$$, '22023', 'a context other than the cascade''s'),
  ($$INSERT INTO model_select.cascade_observations(cascade_id, selector, arm, value, cost) SELECT cascade_id, 'ctx', 'box1', 0.5, 0.1 FROM routed$$, '22023', 'a selector other than the cascade''s'),
  ($$INSERT INTO model_select.cascade_observations(cascade_id, arm, value, cost) SELECT cascade_id, 'box1', 0.5, 0.1 FROM routed$$, '23505', 'an arm twice in one cascade'),
  ($$UPDATE model_select.cascade_observations SET value = 0$$, '55000', 'UPDATE of the log'),
  ($$TRUNCATE model_select.cascade_observations$$, '55000', 'TRUNCATE of the log'),
  ($$SELECT * FROM model_select.cascade('nope', ARRAY[1]::float8[])$$, '42704', 'cascade(): unknown selector'),
  ($$SELECT * FROM model_select.cascade('ctx', ARRAY[1]::float8[])$$, '22000', 'cascade(): wrong dimension'),
  ($$SELECT * FROM model_select.cascade('two', ARRAY[1]::float8[], -1)$$, '22023', 'cascade(): negative beta'),
  ($$SELECT * FROM model_select.cascade('two', ARRAY[1]::float8[], 'NaN')$$, '22023', 'cascade(): NaN beta'),
  ($$SELECT model_select.cascade_next('two', ARRAY[1]::float8[], NULL, '{box1}')$$, '22004', 'cascade_next(): NULL best_value after a query'),
  ($$SELECT model_select.cascade_next('two', ARRAY[1]::float8[], 'NaN', '{box1}')$$, '22023', 'cascade_next(): NaN best_value'),
  ($$SELECT model_select.cascade_next('two', ARRAY[1]::float8[], 0, '{box9}')$$, '42704', 'cascade_next(): unknown queried arm'),
  ($$SELECT model_select.cascade_next('two', ARRAY[1]::float8[], 0, '{NULL}')$$, '22004', 'cascade_next(): NULL queried arm'),
  ($$SELECT model_select.cascade_next(NULL, ARRAY[1]::float8[], 0, '{}')$$, '22004', 'cascade_next(): NULL selector'),
  ($$SELECT model_select.cascade_select('two', '{1, 0}', '{box1}')$$, '22023', 'cascade_select(): arrays of different lengths'),
  ($$SELECT model_select.cascade_select('two', '{}', '{}')$$, '22023', 'cascade_select(): nothing queried'),
  ($$SELECT model_select.cascade_select('two', '{1, 0}', '{box1, box1}')$$, '22023', 'cascade_select(): an arm twice'),
  ($$SELECT model_select.cascade_select('two', '{1}', '{box9}')$$, '42704', 'cascade_select(): unknown arm'),
  ($$SELECT model_select.cascade_select('two', '{NULL}', '{box1}')$$, '22004', 'cascade_select(): NULL value'),
  ($$SELECT model_select.cascade_refit('nope')$$, '42704', 'cascade_refit(): unknown selector'),
  ($$SELECT * FROM model_select.cascade('lonely', ARRAY[1]::float8[])$$, '55000', 'cascade(): no active arm'),
  ($$SELECT model_select.cascade_next('lonely', ARRAY[1]::float8[], NULL, NULL)$$, '55000', 'cascade_next(): no active arm'),
  ($$SELECT * FROM model_select.cascade_route('lonely', ARRAY[1]::float8[])$$, '55000', 'cascade_route(): no active arm');
CREATE FUNCTION pg_temp.bad(sql text, state text, descr text) RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
    RETURN NEXT throws_ok(sql, state, NULL, descr || ' -> ' || state);
END $$;
SELECT pg_temp.bad(sql, state, descr) FROM bad ORDER BY ord;
SELECT is(pg_temp.fingerprint(), (SELECT fp FROM fp0), 'the bad inputs changed none of the cascade tables');

SELECT * FROM finish();
ROLLBACK;
