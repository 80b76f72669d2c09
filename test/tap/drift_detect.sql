-- The change detector ("detect": true, docs/changing-worlds.md): the swap
-- stream of issue 42 (include/drift_stream.sql) and its overlapping variant
-- (centres on 2 coordinates), lin_ucb and pak_ucb at their defaults with a
-- window of 300 on the selector's clock, with and without the detector,
-- seeds 1-10, every round's pick from replay().  With it both policies
-- recover faster on both streams (optimal picks over rounds 1,001-1,100 and
-- 1,001-1,500), lose at most 0.01 over rounds 401-1,000 (before the swap),
-- and in the steady world of rounds 1-1,000 change few picks (it fires
-- rarely there).  Then the detector's model is a function of the rows that
-- count: a live selector fed past the swap scores as rebuild_state() does,
-- and differently from the same selector without the detector (it fired).
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(32);

\ir include/drift_stream.sql
CREATE TEMP TABLE drift AS SELECT s AS seed, c AS centred, d.* FROM generate_series(1, 10) s, unnest(ARRAY[16, 2]) c,
                                                                     pg_temp.drift_stream(s, c) d;
CREATE INDEX ON drift (seed, centred, round);
ANALYZE drift;

-- each round's pick (from the cumulative picks of checkpoint 1) and whether it was optimal
CREATE TEMP TABLE run AS
SELECT policy, detect, centred, seed, round, pick, expected[pick] = (SELECT max(e) FROM unnest(expected) e) AS optimal
  FROM (SELECT policy, detect, centred, seed, round, expected,
               (SELECT a FROM generate_subscripts(picks, 1) a WHERE picks[a] <> before[a]) AS pick
          FROM (SELECT p.policy, dt.detect, c AS centred, s AS seed, r.round, d.expected, r.picks,
                       lag(r.picks, 1, '{0,0,0}') OVER (PARTITION BY p.policy, dt.detect, c, s ORDER BY r.round) AS before
                  FROM unnest(ARRAY['lin_ucb', 'pak_ucb']) p(policy), unnest(ARRAY[false, true]) dt(detect),
                       unnest(ARRAY[16, 2]) c, generate_series(1, 10) s,
                       model_select.replay(format('SELECT context, reward FROM drift WHERE seed = %s AND centred = %s ORDER BY round', s, c),
                                           p.policy, settings => jsonb_build_object('window', 300, 'clock', 'selector', 'detect', dt.detect),
                                           seed => s, checkpoint => 1, shuffle => false) r, drift d
                 WHERE d.seed = s AND d.centred = c AND d.round = r.round) y) x;
CREATE TEMP TABLE stretch AS
SELECT policy, detect, centred,
       avg(optimal::int) FILTER (WHERE round BETWEEN 401 AND 1000)::float8 AS before,
       avg(optimal::int) FILTER (WHERE round BETWEEN 1001 AND 1100)::float8 AS first100,
       avg(optimal::int) FILTER (WHERE round BETWEEN 1001 AND 1500)::float8 AS after
  FROM run GROUP BY 1, 2, 3;
SELECT diag(format('%s, %s, detect %s: optimal picks 401-1,000 %s, 1,001-1,100 %s, 1,001-1,500 %s', policy,
                   CASE centred WHEN 16 THEN 'issue stream' ELSE 'overlapping' END, detect,
                   round(before::numeric, 3), round(first100::numeric, 3), round(after::numeric, 3)))
  FROM stretch ORDER BY policy, centred DESC, detect;

CREATE FUNCTION pg_temp.gain(pol text, c int, col text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE g float8;
BEGIN
    EXECUTE format('SELECT (SELECT %1$I FROM stretch WHERE policy = $1 AND centred = $2 AND detect)
                         - (SELECT %1$I FROM stretch WHERE policy = $1 AND centred = $2 AND NOT detect)', col)
       INTO g USING pol, c;
    RETURN g;
END $$;
-- measured (seeds 1-10): 1,001-1,100 +0.22 / +0.15 (lin_ucb), +0.03 / +0.07 (pak_ucb);
-- 1,001-1,500 +0.066 / +0.034, +0.013 / +0.020; 401-1,000 -0.003 to +0.006
SELECT cmp_ok(pg_temp.gain('lin_ucb', 16, 'first100'), '>=', 0.15::float8, 'lin_ucb, issue stream: rounds 1,001-1,100 gain >= 0.15');
SELECT cmp_ok(pg_temp.gain('lin_ucb', 2, 'first100'), '>=', 0.10::float8, 'lin_ucb, overlapping: rounds 1,001-1,100 gain >= 0.10');
SELECT cmp_ok(pg_temp.gain('pak_ucb', 16, 'first100'), '>=', 0.02::float8, 'pak_ucb, issue stream: rounds 1,001-1,100 gain >= 0.02');
SELECT cmp_ok(pg_temp.gain('pak_ucb', 2, 'first100'), '>=', 0.05::float8, 'pak_ucb, overlapping: rounds 1,001-1,100 gain >= 0.05');
SELECT cmp_ok(pg_temp.gain('lin_ucb', 16, 'after'), '>=', 0.05::float8, 'lin_ucb, issue stream: rounds 1,001-1,500 gain >= 0.05');
SELECT cmp_ok(pg_temp.gain('lin_ucb', 2, 'after'), '>=', 0.02::float8, 'lin_ucb, overlapping: rounds 1,001-1,500 gain >= 0.02');
SELECT cmp_ok(pg_temp.gain('pak_ucb', 16, 'after'), '>=', 0.01::float8, 'pak_ucb, issue stream: rounds 1,001-1,500 gain >= 0.01');
SELECT cmp_ok(pg_temp.gain('pak_ucb', 2, 'after'), '>=', 0.01::float8, 'pak_ucb, overlapping: rounds 1,001-1,500 gain >= 0.01');
SELECT cmp_ok(pg_temp.gain(p, c, 'before'), '>=', -0.01::float8,
              format('%s, %s: rounds 401-1,000 (before the swap) lose at most 0.01', p, CASE c WHEN 16 THEN 'issue stream' ELSE 'overlapping' END))
  FROM unnest(ARRAY['lin_ucb', 'pak_ucb']) p, unnest(ARRAY[16, 2]) c;
SELECT cmp_ok((SELECT after FROM stretch WHERE policy = 'lin_ucb' AND centred = 16 AND detect), '>=', 0.85::float8,
              'lin_ucb with the detector: >= 0.85 optimal picks over rounds 1,001-1,500 on the issue stream (0.803 without)');

-- The steady world (rounds 1-1,000): the detector fires rarely, so few picks change
-- (measured: 0.7-2.1% of the rounds, on 1-3 of the 10 seeds).
CREATE TEMP TABLE steady AS
SELECT o.policy, o.centred, count(*) FILTER (WHERE o.pick <> f.pick)::float8 / count(*) AS changed,
       count(DISTINCT o.seed) FILTER (WHERE o.pick <> f.pick) AS seeds
  FROM run o JOIN run f USING (policy, centred, seed, round)
 WHERE o.detect AND NOT f.detect AND round <= 1000 GROUP BY 1, 2;
SELECT cmp_ok(changed, '<', 0.05::float8, format('%s, %s: the detector changes < 5%% of the picks of rounds 1-1,000', policy,
                                                  CASE centred WHEN 16 THEN 'issue stream' ELSE 'overlapping' END))
  FROM steady ORDER BY policy, centred DESC;
SELECT cmp_ok((SELECT max(seeds) FROM steady), '<=', 5::bigint, '... on at most 5 of the 10 seeds');

-- Live: rewards of the stale choice (each cluster's pre-swap best arm, c every
-- tenth round) through round 1,080; the scores, pending and after a
-- checkpoint, are rebuild_state()'s, and differ from the same rows without
-- the detector.
CREATE TEMP TABLE probes AS SELECT round AS probe, context FROM drift WHERE seed = 1 AND centred = 16 AND round <= 20;
CREATE FUNCTION pg_temp.feed(sel text, after int, upto int) RETURNS void LANGUAGE sql AS $$
    INSERT INTO model_select.rewards(selector, arm, context, reward)
    SELECT sel, (ARRAY['a', 'b', 'c'])[k], context, reward[k]
      FROM (SELECT round, context, reward,
                   CASE WHEN round % 10 = 0 THEN 3 WHEN (expected[1] > 0.5) = (round <= 1000) THEN 1 ELSE 2 END AS k
              FROM drift WHERE seed = 1 AND centred = 16 AND round > after AND round <= upto) f
     ORDER BY round
$$;
\ir include/score_gap.sql
SELECT model_select.create_selector(p || d, 16, ARRAY['a', 'b', 'c'], p, NULL,
                                    jsonb_build_object('window', 300, 'clock', 'selector', 'detect', d = '_on'), 1)
  FROM unnest(ARRAY['lin_ucb', 'pak_ucb']) p, unnest(ARRAY['_on', '_off']) d;
SELECT pg_temp.feed(p || d, 0, 900) FROM unnest(ARRAY['lin_ucb', 'pak_ucb']) p, unnest(ARRAY['_on', '_off']) d;
SELECT model_select.checkpoint(p || d) FROM unnest(ARRAY['lin_ucb', 'pak_ucb']) p, unnest(ARRAY['_on', '_off']) d;
SELECT pg_temp.feed(p || d, 900, 1080) FROM unnest(ARRAY['lin_ucb', 'pak_ucb']) p, unnest(ARRAY['_on', '_off']) d;
SELECT cmp_ok(pg_temp.gap(p || '_on', p || '_off'), '>', 0.01::float8,
              format('%s: past the swap the detector changes the scores (it fired)', p))
  FROM unnest(ARRAY['lin_ucb', 'pak_ucb']) p;
SELECT cmp_ok(pg_temp.rebuild_gap(p || '_on'), '<', 1e-9::float8,
              format('%s with the detector: live (a checkpoint, then pending rows) = rebuild_state()', p))
  FROM unnest(ARRAY['lin_ucb', 'pak_ucb']) p;

-- The same on the time clock: the rows of rounds 781-1,080 one second apart,
-- the last a second before now, in a window of an hour.
CREATE FUNCTION pg_temp.tfeed(sel text) RETURNS void LANGUAGE sql AS $$
    INSERT INTO model_select.rewards(selector, arm, context, reward, created_at)
    SELECT sel, (ARRAY['a', 'b', 'c'])[k], context, reward[k], now() - (1081 - round) * interval '1 second'
      FROM (SELECT round, context, reward,
                   CASE WHEN round % 10 = 0 THEN 3 WHEN (expected[1] > 0.5) = (round <= 1000) THEN 1 ELSE 2 END AS k
              FROM drift WHERE seed = 1 AND centred = 16 AND round > 780 AND round <= 1080) f
     ORDER BY round
$$;
SELECT model_select.create_selector(p || d, 16, ARRAY['a', 'b', 'c'], p, NULL,
                                    jsonb_build_object('window', 3600, 'clock', 'time', 'detect', d = '_ton'), 1)
  FROM unnest(ARRAY['lin_ucb', 'pak_ucb']) p, unnest(ARRAY['_ton', '_toff']) d;
SELECT pg_temp.tfeed(p || d) FROM unnest(ARRAY['lin_ucb', 'pak_ucb']) p, unnest(ARRAY['_ton', '_toff']) d;
SELECT cmp_ok(pg_temp.gap(p || '_ton', p || '_toff'), '>', 0.01::float8,
              format('%s on the time clock: past the swap the detector changes the scores', p))
  FROM unnest(ARRAY['lin_ucb', 'pak_ucb']) p;
SELECT cmp_ok(pg_temp.rebuild_gap(p || '_ton'), '<', 1e-9::float8,
              format('%s with the detector on the time clock: live = rebuild_state()', p))
  FROM unnest(ARRAY['lin_ucb', 'pak_ucb']) p;

-- lin_ucb's residuals come in two forms (policy/lin_fold.c): the factor of the
-- rows' kernel matrix up to 8·p rows, a fold row by row beyond.  Two selectors
-- that differ only by 16 tag buckets no context fills (zeros: the same model in
-- exact arithmetic) take different forms on the same rows: p = 17 folds arms a
-- and b (more than 136 rows each in a window of 340), p = 33 factorises (at
-- most 264).
CREATE FUNCTION pg_temp.feed20(sel text) RETURNS void LANGUAGE sql AS $$
    INSERT INTO model_select.rewards(selector, arm, context, reward)
    SELECT sel, (ARRAY['a', 'b', 'c'])[k], context, reward[k]
      FROM (SELECT round, context, reward,
                   CASE WHEN round % 20 = 0 THEN 3 WHEN (expected[1] > 0.5) = (round <= 1000) THEN 1 ELSE 2 END AS k
              FROM drift WHERE seed = 1 AND centred = 16 AND round <= 1080) f
     ORDER BY round
$$;
SELECT model_select.create_selector('forms_' || b || d, 16, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL,
                                    jsonb_build_object('window', 340, 'clock', 'selector', 'codebook', 0,
                                                       'tag_buckets', b, 'detect', d = '_on'), 1)
  FROM unnest(ARRAY[0, 16]) b, unnest(ARRAY['_on', '_off']) d;
SELECT pg_temp.feed20('forms_' || b || d) FROM unnest(ARRAY[0, 16]) b, unnest(ARRAY['_on', '_off']) d;
SELECT ok((SELECT min(n) > 136 AND max(n) <= 264
             FROM (SELECT count(*) AS n FROM drift, LATERAL (SELECT (expected[1] > 0.5) = (round <= 1000) AS a) x
                    WHERE seed = 1 AND centred = 16 AND round BETWEEN 741 AND 1080 AND round % 20 <> 0 GROUP BY a) y),
          'arms a and b hold 137-264 rows in the window: the fold at p = 17, the kernel form at p = 33');
SELECT cmp_ok(least(pg_temp.gap('forms_0_on', 'forms_0_off'), pg_temp.gap('forms_16_on', 'forms_16_off')), '>', 0.01::float8,
              'the detector fired on those rows, in both');
SELECT cmp_ok(pg_temp.gap('forms_0_on', 'forms_16_on'), '<', 1e-9::float8,
              'lin_ucb''s residuals by the fold and by the kernel form give the same model (1e-9)');

-- The setting: lin_ucb and pak_ucb with a window or restart_every on a clock that counts (22023 otherwise).
SELECT throws_like($$SELECT model_select.create_selector('x1', 4, ARRAY['a', 'b'], 'lin_ucb', NULL, '{"window": 50, "detect": true}')$$,
                   '%"detect": applies only with window or restart_every on the selector''s or the time clock%',
                   'detect on the arm''s clock is refused');
SELECT throws_like($$SELECT model_select.create_selector('x2', 4, ARRAY['a', 'b'], 'rff_ucb', 'rbf', '{"window": 50, "clock": "selector", "detect": true}')$$,
                   '%"detect": applies only to lin_ucb and pak_ucb%', 'detect with rff_ucb is refused');
SELECT throws_ok($$SELECT model_select.create_selector('x3', 4, ARRAY['a', 'b'], 'lin_ucb', NULL, '{"discount": 0.99, "clock": "selector", "detect": true}')$$,
                 '22023', NULL, 'detect with a discount is refused (22023)');

SELECT * FROM finish();
ROLLBACK;
