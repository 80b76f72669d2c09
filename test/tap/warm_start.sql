-- Warm starts from full-information outcome tables: warm_start() inserts
-- every arm's outcome on every row of a source into the reward log;
-- replay(..., warm => source) learns the same rows before going online.  A
-- warmed replay makes exactly the choices of a live selector warmed with
-- warm_start(), the warm-up helps where a cold start must explore, and bad
-- sources fail with clear errors.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(19);

-- 400 rows of a seeded three-cluster stream: the first 200 are the outcome
-- table (every arm scored), the last 200 the online stream.
CREATE TEMP TABLE stream AS
SELECT * FROM model_select.synthetic_clusters(400, 8, 3, NULL, 31, 0.1);
CREATE TEMP TABLE warm AS SELECT * FROM stream WHERE round <= 200;
CREATE TEMP TABLE online AS SELECT * FROM stream WHERE round > 200;

-- 1. warm_start() writes the log ------------------------------------------------
SELECT model_select.create_selector('w', 8, ARRAY['arm1', 'arm2', 'arm3'], 'lin_ucb', NULL, '{"eta": 0.7}', 5);
SELECT is(model_select.warm_start('w', 'SELECT context, reward FROM warm ORDER BY round'), 600::bigint,
          'warm_start inserts one reward per row and arm (200 x 3)');
SELECT is((SELECT array_agg(n ORDER BY arm) FROM (SELECT arm, count(*) AS n FROM model_select.rewards
                                                   WHERE selector = 'w' GROUP BY arm) c),
          ARRAY[200, 200, 200]::bigint[], 'every arm got the 200 rows');
SELECT is((SELECT count(*) FROM model_select.rewards r JOIN warm s ON s.context = r.context
            WHERE r.selector = 'w' AND r.reward = s.reward[substr(r.arm, 4)::int] AND r.cost IS NULL
              AND r.decision_id IS NULL),
          600::bigint, 'each reward is its arm''s element of the row, with no cost and no decision');
SELECT is((SELECT array_agg(n ORDER BY arm) FROM model_select.arm_stats WHERE selector = 'w'),
          ARRAY[200, 200, 200]::bigint[], 'the arms'' states learned them (arm_stats)');

-- NULL elements skip an arm; costs are logged when the source gives them
SELECT model_select.create_selector('c', 8, ARRAY['arm1', 'arm2', 'arm3'], 'lin_ucb', NULL, '{}', 5);
SELECT is(model_select.warm_start('c', $$SELECT context, ARRAY[reward[1], NULL, reward[3]],
                                          ARRAY[0.1, 0.5, 1.0]::float8[] FROM warm WHERE round <= 10$$), 20::bigint,
          'a NULL reward skips that arm on that row');
SELECT is((SELECT array_agg(s ORDER BY arm) FROM (SELECT arm, round(sum(cost)::numeric, 9) AS s FROM model_select.rewards
                                                   WHERE selector = 'c' GROUP BY arm) q),
          ARRAY[1.0, 10.0]::numeric[], 'costs of the source are logged with the rewards');

SELECT model_select.retire_arm('c', 'arm2');
SELECT is(model_select.warm_start('c', 'SELECT context, reward FROM warm WHERE round <= 5'), 10::bigint,
          'a retired arm is skipped (5 rows x 2 active arms)');

-- 2. replay(warm => ...) decides as the warmed live selector ----------------------
\ir include/picks.sql
CREATE FUNCTION pg_temp.live_online(sel text DEFAULT 'w') RETURNS int[] LANGUAGE sql AS $$
    SELECT pg_temp.live_picks(sel, ARRAY['arm1', 'arm2', 'arm3'], 'SELECT * FROM online ORDER BY round')
$$;
CREATE FUNCTION pg_temp.replay_warm(warm text, settings jsonb DEFAULT '{"eta": 0.7}') RETURNS int[] LANGUAGE sql AS $$
    SELECT pg_temp.replay_picks(format(
        'SELECT * FROM model_select.replay(%L, %L, NULL, %L, seed => 5, checkpoint => 1, shuffle => false, warm => %L)',
        'SELECT context, reward FROM online ORDER BY round', 'lin_ucb', settings, warm))
$$;
CREATE TEMP TABLE picks AS
SELECT pg_temp.replay_warm('SELECT context, reward FROM warm ORDER BY round') AS warmed,
       pg_temp.replay_warm(NULL) AS cold;
SELECT is((SELECT warmed FROM picks), pg_temp.live_online(),
          'replay with a warm source makes the same 200 choices as warm_start() then route + reward');
SELECT isnt((SELECT warmed FROM picks), (SELECT cold FROM picks), 'and not those of a cold start');

-- on the selector's clock every warm reward is a tick, in the live log as in replay
SELECT model_select.create_selector('wc', 8, ARRAY['arm1', 'arm2', 'arm3'], 'lin_ucb', NULL,
                                    '{"eta": 0.7, "window": 150, "clock": "selector"}', 5);
SELECT model_select.warm_start('wc', 'SELECT context, reward FROM warm ORDER BY round');
SELECT is(pg_temp.replay_warm('SELECT context, reward FROM warm ORDER BY round',
                              '{"eta": 0.7, "window": 150, "clock": "selector"}'),
          pg_temp.live_online('wc'),
          'on the selector clock too (window 150 of 600 warm ticks), replay with a warm source decides as the live selector');

-- 3. the warm-up pays: fewer suboptimal picks online than a cold start ---------------
SELECT cmp_ok((SELECT count(*) FROM unnest((SELECT warmed FROM picks)) WITH ORDINALITY p(k, i)
                JOIN online o ON o.round = 200 + i WHERE p.k = o.best_arm)::int,
              '>', (SELECT count(*) FROM unnest((SELECT cold FROM picks)) WITH ORDINALITY p(k, i)
                     JOIN online o ON o.round = 200 + i WHERE p.k = o.best_arm)::int + 20,
              'warmed: at least 20 more optimal picks in 200 rounds than cold');
SELECT cmp_ok((SELECT count(*) FROM unnest((SELECT warmed FROM picks)) WITH ORDINALITY p(k, i)
                JOIN online o ON o.round = 200 + i WHERE p.k = o.best_arm)::int,
              '>=', 180, 'warmed: optimal picks >= 0.9 from the first online round');

-- 4. bad input ----------------------------------------------------------------------
SELECT throws_ok($$SELECT model_select.warm_start('w', 'SELECT context, ARRAY[reward[1], reward[2]] FROM warm')$$,
                 '22000', NULL, 'rewards of another width than the arms: 22000');
SELECT is((SELECT count(*) FROM model_select.rewards WHERE selector = 'w'), 800::bigint,
          '... and nothing of it stays in the log (600 warm rewards and 200 decisions before)');
SELECT throws_ok($$SELECT model_select.warm_start('nosuch', 'SELECT context, reward FROM warm')$$,
                 '42704', NULL, 'unknown selector: 42704');
SELECT throws_ok($$SELECT model_select.warm_start('w', 'SELECT reward FROM warm')$$,
                 '42804', NULL, 'a source of one column: 42804');
CREATE FUNCTION pg_temp.hint_of(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    h text;
BEGIN
    EXECUTE sql;
    RETURN NULL;
EXCEPTION WHEN datatype_mismatch THEN
    GET STACKED DIAGNOSTICS h = PG_EXCEPTION_HINT;
    RETURN h;
END $$;
SELECT is(pg_temp.hint_of($$SELECT model_select.warm_start('w',
              'SELECT context, reward, NULL::float8[], ARRAY[''math''] AS labels FROM warm')$$),
          'A column of tags is found by its name, "tags".',
          'a fourth column of tags under another name: 42804, and the hint names the column tags');
SELECT throws_ok($$SELECT * FROM model_select.replay('SELECT context, reward FROM online', 'lin_ucb',
                     warm => 'SELECT context[1:4], reward FROM warm')$$,
                 '22000', 'warm source has 3 arms and contexts of dimension 4, the replay source 3 and 8',
                 'replay: a warm source of another dimension: 22000');
SELECT throws_ok($$SELECT * FROM model_select.replay('SELECT context, reward FROM online', 'lin_ucb',
                     warm => 'SELECT context, ARRAY[reward[1], 7, reward[3]] FROM warm')$$,
                 '22003', NULL, 'replay: a warm reward out of the selector''s range is refused like a live one');

SELECT * FROM finish();
ROLLBACK;
