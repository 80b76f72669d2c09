-- Changing worlds (Iwazaki & Takeno (R-PERP)): window, discount and restart_every forget
-- old rewards exactly as their from-scratch definitions say, recover after
-- an abrupt switch of the best arm, and a new arm is adopted for its cluster.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(22);

CREATE TEMP TABLE feed AS
SELECT round, context, reward[1 + round % 2] AS reward FROM model_select.synthetic_clusters(200, 6, 2, 3, 51);
CREATE TEMP TABLE probes AS SELECT round AS probe, context FROM model_select.synthetic_clusters(15, 6, 2, 3, 52);

-- One reward per INSERT (the incremental path), on one arm.
CREATE FUNCTION pg_temp.feed_one_by_one(sel text, upto int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
    FOR r IN SELECT * FROM feed WHERE round <= upto ORDER BY round LOOP
        INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES (sel, 'a', r.context, r.reward);
    END LOOP;
END $$;
-- Largest relative difference of mean and width between two selectors at the probes.
CREATE FUNCTION pg_temp.diff(a text, b text) RETURNS float8 LANGUAGE sql AS $$
    SELECT max(greatest(abs(x.mean - y.mean) / greatest(1, abs(y.mean)), abs(x.width - y.width) / greatest(1, abs(y.width))))
      FROM probes p CROSS JOIN LATERAL model_select.scores(a, p.context) x
                    CROSS JOIN LATERAL model_select.scores(b, p.context) y
$$;
-- A selector fed the rows (lo, hi] of the feed in one INSERT (learnt from scratch).
CREATE FUNCTION pg_temp.scratch(sel text, pol text, settings jsonb, lo int, hi int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM model_select.create_selector(sel, 6, ARRAY['a'], pol, NULL, settings, 1);
    INSERT INTO model_select.rewards(selector, arm, context, reward)
    SELECT sel, 'a', context, reward FROM feed WHERE round > lo AND round <= hi ORDER BY round;
END $$;

-- window: after 200 rewards one by one, the state is that of the last 50 alone
CREATE FUNCTION pg_temp.window_case(pol text, extra jsonb) RETURNS float8 LANGUAGE plpgsql AS $$
BEGIN
    PERFORM model_select.create_selector('w_' || pol, 6, ARRAY['a'], pol, NULL, '{"window": 50}'::jsonb || extra, 1);
    PERFORM pg_temp.feed_one_by_one('w_' || pol, 200);
    PERFORM pg_temp.scratch('w0_' || pol, pol, extra, 150, 200);
    RETURN pg_temp.diff('w_' || pol, 'w0_' || pol);
END $$;
SELECT cmp_ok(pg_temp.window_case('pak_ucb', '{}'), '<', 1e-9::float8, 'pak_ucb window 50: state after 200 rewards = state of the last 50 (1e-9)');
SELECT cmp_ok(pg_temp.window_case('lin_ucb', '{}'), '<', 1e-9::float8, 'lin_ucb window 50: rank-1 downdates = the last 50 from scratch');
SELECT cmp_ok(pg_temp.window_case('rff_ucb', '{"features": 32}'), '<', 1e-9::float8, 'rff_ucb window 50: = the last 50 from scratch');
SELECT cmp_ok(pg_temp.window_case('greedy', '{}'), '<', 1e-12::float8, 'greedy window 50: the mean of the last 50 rewards');
SELECT is((SELECT n FROM model_select.scores('w_pak_ucb', (SELECT context FROM probes LIMIT 1))), 200::bigint,
          'scores() still counts every reward the arm received');
SELECT cmp_ok(pg_temp.diff('w_pak_ucb', 'w0_pak_ucb'), '<', 1e-9::float8, 'a window survives rebuild_state')
  FROM (SELECT model_select.rebuild_state('w_pak_ucb')) r;

-- discount: incremental equals the weighted from-scratch state (rebuild), and the
-- weights mean the same thing in the kernel (pak_ucb linear) and primal (lin_ucb) forms
CREATE FUNCTION pg_temp.discount_case(pol text, kern text, extra jsonb) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE sel text := 'd_' || pol || coalesce(kern, '');
BEGIN
    PERFORM model_select.create_selector(sel, 6, ARRAY['a'], pol, kern, '{"discount": 0.97}'::jsonb || extra, 1);
    PERFORM pg_temp.feed_one_by_one(sel, 200);
    CREATE TEMP TABLE before_rebuild ON COMMIT DROP AS
        SELECT p.probe, s.mean, s.width FROM probes p CROSS JOIN LATERAL model_select.scores(sel, p.context) s;
    PERFORM model_select.rebuild_state(sel);
    RETURN (SELECT max(greatest(abs(b.mean - s.mean), abs(b.width - s.width)))
              FROM before_rebuild b JOIN probes p USING (probe) CROSS JOIN LATERAL model_select.scores(sel, p.context) s);
END $$;
SELECT cmp_ok(pg_temp.discount_case('lin_ucb', NULL, '{}'), '<', 1e-9::float8, 'lin_ucb discount 0.97: incremental = weighted from scratch');
DROP TABLE before_rebuild;
SELECT cmp_ok(pg_temp.discount_case('rff_ucb', NULL, '{"features": 32}'), '<', 1e-9::float8, 'rff_ucb discount 0.97: incremental = weighted from scratch');
DROP TABLE before_rebuild;
-- with lin_ucb's defaults (alpha 20, intercept 10), so that the two forms describe the same model
SELECT cmp_ok(pg_temp.discount_case('pak_ucb', 'linear', '{"alpha": 20, "intercept": 10}'), '<', 1e-9::float8, 'pak_ucb discount 0.97: incremental = weighted from scratch');
DROP TABLE before_rebuild;
SELECT cmp_ok(pg_temp.diff('d_pak_ucblinear', 'd_lin_ucb'), '<', 1e-9::float8,
              'discounted pak_ucb (linear kernel) equals discounted lin_ucb: weights agree in dual and primal form');
SELECT lives_ok($$SELECT model_select.create_selector('d_greedy', 6, ARRAY['a'], 'greedy', NULL, '{"discount": 0.9}')$$, 'greedy with discount 0.9');
SELECT pg_temp.feed_one_by_one('d_greedy', 200);
SELECT cmp_ok(abs((SELECT mean FROM model_select.scores('d_greedy', (SELECT context FROM probes LIMIT 1)))
                  - (SELECT sum(reward * 0.9 ^ (200 - round)) / sum(0.9 ^ (200 - round)) FROM feed)), '<', 1e-12::float8,
              'greedy discount: mean = Σ γ^age r / Σ γ^age');
SELECT cmp_ok(pg_temp.diff('d_lin_ucb', 'w0_lin_ucb'), '>', 1e-3::float8, 'a discounted state differs from a windowed one');

-- restart_every: after 130 rewards with H = 50, the state is that of rewards 101..130
SELECT lives_ok($$SELECT model_select.create_selector('r_pak', 6, ARRAY['a'], 'pak_ucb', NULL, '{"restart_every": 50}', 1)$$, 'pak_ucb restart_every 50');
SELECT pg_temp.feed_one_by_one('r_pak', 130);
SELECT pg_temp.scratch('r0_pak', 'pak_ucb', '{}', 100, 130);
SELECT cmp_ok(pg_temp.diff('r_pak', 'r0_pak'), '<', 1e-9::float8, 'restart_every 50: after 130 rewards the state is that of the last 30');
SELECT cmp_ok(pg_temp.diff('r_pak', 'r0_pak'), '<', 1e-9::float8, 'and rebuild_state agrees')
  FROM (SELECT model_select.rebuild_state('r_pak')) r;

-- Abrupt switch of the best arm at t = 1,000 (two clusters, 5 seeds, eta 0.3, judged by expected rewards;
-- alpha 1 and intercept 1, the settings table's scale (pak_ucb's defaults before 0.3.0), and for lin_ucb
-- no learnt noise: lin_ucb's
-- own alpha 20 with eta 0.3 locks in, 0.51 with or without the discount; and lin_ucb's own defaults
-- with the discount, whose learnt noise forgets with the rows):
-- optimal-pick ratio over rounds 1,001..1,500.  The window is shown on pak_ucb, the discount on
-- lin_ucb (a discounted pak_ucb refactorises ~1,400 rows per reward: too slow for a test).
CREATE TEMP TABLE switch AS
SELECT v.name, avg(r.opr_window) AS opr
  FROM generate_series(1, 5) s(seed),
       (VALUES ('stationary', 'pak_ucb', '{"alpha": 1, "intercept": 1, "eta": 0.3}'),
               ('window', 'pak_ucb', '{"alpha": 1, "intercept": 1, "eta": 0.3, "window": 100}'),
               ('lin stationary', 'lin_ucb', '{"alpha": 1, "intercept": 1, "eta": 0.3, "noise_prior": 0}'),
               ('discount', 'lin_ucb', '{"alpha": 1, "intercept": 1, "eta": 0.3, "discount": 0.99, "noise_prior": 0}'),
               ('defaults discount', 'lin_ucb', '{"discount": 0.99}')) v(name, pol, settings),
       LATERAL model_select.replay(format('SELECT context, reward, NULL::real[], expected FROM model_select.synthetic_clusters('
                                          '2000, 16, 2, NULL, %s, 0.1, switch_every => 1000) ORDER BY round', s.seed),
                                   v.pol, settings => v.settings::jsonb, seed => s.seed, checkpoint => 500, shuffle => false) r
 WHERE r.round = 1500 GROUP BY v.name;
SELECT diag(format('%s: OPR over rounds 1001-1500 = %s', name, round(opr::numeric, 3))) FROM switch ORDER BY name;
SELECT cmp_ok((SELECT opr FROM switch WHERE name = 'window'), '>=', 0.8::float8, 'pak_ucb window 100 recovers OPR >= 0.8 within 500 rounds of the switch');
SELECT cmp_ok((SELECT opr FROM switch WHERE name = 'stationary'), '<', 0.5::float8, 'stationary pak_ucb stays below 0.5 over the same rounds');
SELECT cmp_ok((SELECT opr FROM switch WHERE name = 'discount'), '>=', 0.8::float8, 'lin_ucb discount 0.99 recovers OPR >= 0.8 within 500 rounds');
SELECT cmp_ok((SELECT opr FROM switch WHERE name = 'defaults discount'), '>=', 0.8::float8,
              'lin_ucb''s defaults (learnt noise) with discount 0.99 recover OPR >= 0.8 too');
SELECT cmp_ok((SELECT opr FROM switch WHERE name = 'lin stationary'), '<', 0.5::float8, 'stationary lin_ucb stays below 0.5 over the same rounds');

-- A new arm, best for cluster 3, arrives at t = 2,500: its share of cluster-3 prompts over rounds 2,501..3,500.
CREATE TEMP TABLE arrival AS SELECT * FROM model_select.synthetic_clusters(3500, 16, 3, 3, 61, 0.1, new_arm_at => 2500);
SELECT cmp_ok((
    WITH ck AS (SELECT round, picks, lag(picks, 1, '{0,0,0}') OVER (ORDER BY round) AS before
                  FROM model_select.replay('SELECT context, reward, NULL::real[], expected FROM arrival ORDER BY round',
                                           'pak_ucb', settings => '{"cap": 4000}', checkpoint => 1, shuffle => false))
    SELECT avg((ck.picks[3] > ck.before[3])::int) FROM ck JOIN arrival a USING (round)
     WHERE a.cluster = 3 AND round > 2500), '>=', 0.8::numeric,
    'a new arm that is best for cluster 3 gets >= 80% of its picks within 1,000 rounds');

SELECT * FROM finish();
ROLLBACK;
