-- replay(): offline evaluation in C.  It must make exactly the choices a
-- live selector makes on the same stream, learn on the two-cluster stream,
-- and reject malformed sources.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(20);

CREATE TEMP TABLE stream AS
SELECT * FROM model_select.synthetic_clusters(300, 8, 3, NULL, 21, 0.1);

\ir include/picks.sql
-- A live selector (route + reward insert per round) and replay() on the same
-- stream and settings (NULL: eta 0.7 where it applies), their picks by round.
CREATE FUNCTION pg_temp.settings_for(pol text, settings jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT coalesce(settings, '{"eta": 0.7}'::jsonb - CASE WHEN pol IN ('greedy', 'random') THEN 'eta' ELSE '' END)
$$;
CREATE FUNCTION pg_temp.live(pol text, kern text, settings jsonb DEFAULT NULL) RETURNS int[]
LANGUAGE plpgsql AS $$
DECLARE
    sel text := 'live_' || pol || coalesce(settings->>'confidence', '');
BEGIN
    PERFORM model_select.create_selector(sel, 8, ARRAY['arm1','arm2','arm3'], pol, kern,
                                         pg_temp.settings_for(pol, settings), 5);
    RETURN pg_temp.live_picks(sel, ARRAY['arm1','arm2','arm3'], 'SELECT * FROM stream ORDER BY round');
END $$;
CREATE FUNCTION pg_temp.replayed(pol text, kern text, settings jsonb DEFAULT NULL) RETURNS int[]
LANGUAGE sql AS $$
    SELECT pg_temp.replay_picks(format(
        'SELECT * FROM model_select.replay(%L, %L, %L, %L, seed => 5, checkpoint => 1, shuffle => false)',
        'SELECT context, reward FROM stream ORDER BY round', pol, kern, pg_temp.settings_for(pol, settings)))
$$;

SELECT is(pg_temp.replayed('pak_ucb', 'rbf'), pg_temp.live('pak_ucb', 'rbf'),
          'pak_ucb (rbf): replay makes the same 300 choices as route + reward inserts');
SELECT is(pg_temp.replayed('lin_ucb', NULL), pg_temp.live('lin_ucb', NULL),
          'lin_ucb: replay makes the same choices as the live selector');
SELECT is(pg_temp.replayed('greedy', NULL), pg_temp.live('greedy', NULL),
          'greedy: replay makes the same choices as the live selector');
SELECT is(pg_temp.replayed('random', NULL), pg_temp.live('random', NULL),
          'random: replay makes the same choices as the live selector');
SELECT isnt(pg_temp.replayed('pak_ucb', 'rbf'), pg_temp.replayed('random', NULL),
            'the comparison can tell policies apart');
-- replay takes the confidence setting like a live selector
SELECT is(pg_temp.replayed('pak_ucb', 'rbf', '{"confidence": "dmm", "rkhs_bound": 0.5, "alpha": 0.25}'),
          pg_temp.live('pak_ucb', 'rbf', '{"confidence": "dmm", "rkhs_bound": 0.5, "alpha": 0.25}'),
          'pak_ucb with confidence dmm: replay makes the same choices as the live selector');
SELECT is(pg_temp.replayed('lin_ucb', NULL, '{"confidence": "cmm", "rkhs_bound": 0.5, "alpha": 0.25}'),
          pg_temp.live('lin_ucb', NULL, '{"confidence": "cmm", "rkhs_bound": 0.5, "alpha": 0.25}'),
          'lin_ucb with confidence cmm: replay makes the same choices as the live selector');
SELECT isnt(pg_temp.replayed('pak_ucb', 'rbf', '{"confidence": "dmm", "rkhs_bound": 0.5, "alpha": 0.25}'),
            pg_temp.replayed('pak_ucb', 'rbf'),
            'the confidence setting changes the choices (dmm vs fixed eta 0.7)');

-- Learning on the two-cluster stream, judged by the arms' expected rewards
-- (pak_ucb at the settings table's scale, its defaults before 0.3.0: the
-- bounds below were set for its regret there).
CREATE TEMP TABLE two AS
SELECT * FROM model_select.synthetic_clusters(2000, 16, 2, NULL, 11, 0.1);
CREATE TEMP TABLE ck AS
SELECT * FROM model_select.replay('SELECT context, reward, NULL::real[], expected FROM two',
                                  'pak_ucb', settings => '{"alpha": 1, "intercept": 1, "eta": 0.5}',
                                  seed => 3, checkpoint => 500);

SELECT is((SELECT array_agg(round ORDER BY round) FROM ck), ARRAY[500, 1000, 1500, 2000],
          'checkpoints every 500 rounds');
SELECT cmp_ok((SELECT opr_window FROM ck WHERE round = 2000), '>=', 0.9::float8,
              'pak_ucb: optimal-pick ratio >= 0.9 over the last 500 of 2,000 rounds');
SELECT cmp_ok((SELECT regret_oracle FROM ck WHERE round = 2000) - (SELECT regret_oracle FROM ck WHERE round = 1000),
              '<', 0.5 * (SELECT regret_oracle FROM ck WHERE round = 1000),
              'regret vs the oracle grows sublinearly: the second half adds less than half the first');
SELECT cmp_ok((SELECT regret_oracle FROM ck WHERE round = 1000), '>', 0::float8,
              'exploration costs some regret at first');
SELECT ok((SELECT sum(p) FROM ck, unnest(picks) p WHERE round = 2000) = 2000,
          'picks per arm add up to the rounds played');
SELECT cmp_ok((SELECT regret_oracle FROM model_select.replay('SELECT context, reward, NULL::real[], expected FROM two',
                                                             'random', seed => 3) WHERE round = 2000),
              '>', 10 * (SELECT regret_oracle FROM ck WHERE round = 2000),
              'random earns at least ten times the regret of pak_ucb');
-- The metrics recomputed by hand from the per-round picks (greedy, rows in order).
CREATE TEMP TABLE per_round AS
WITH ck AS (
    SELECT round, picks, regret_best_arm, regret_oracle, otb, opr,
           lag(picks, 1, '{0,0}') OVER (ORDER BY round) AS before
      FROM model_select.replay('SELECT context, reward, NULL::real[], expected FROM two ORDER BY round',
                               'greedy', checkpoint => 1, shuffle => false))
SELECT ck.*, t.expected,
       (SELECT a FROM generate_subscripts(ck.picks, 1) a WHERE ck.picks[a] <> ck.before[a]) AS chosen
  FROM ck JOIN two t USING (round);
CREATE TEMP VIEW by_hand AS
SELECT greatest(sum(expected[1]), sum(expected[2])) - sum(expected[chosen]) AS regret_best_arm,
       sum(greatest(expected[1], expected[2])) - sum(expected[chosen]) AS regret_oracle,
       avg((expected[chosen] >= greatest(expected[1], expected[2]))::int) AS opr
  FROM per_round;
SELECT ok(abs((SELECT regret_best_arm FROM per_round WHERE round = 2000) - (SELECT regret_best_arm FROM by_hand)) < 1e-9
          AND abs((SELECT otb FROM per_round WHERE round = 2000) + (SELECT regret_best_arm FROM by_hand) / 2000) < 1e-12
          AND abs((SELECT regret_oracle FROM per_round WHERE round = 2000) - (SELECT regret_oracle FROM by_hand)) < 1e-9
          AND abs((SELECT opr FROM per_round WHERE round = 2000) - (SELECT opr FROM by_hand)) < 1e-12,
          'regret vs best arm, regret vs oracle, OtB and OPR equal a recomputation from the picks');

-- Malformed sources.
SELECT throws_ok($$SELECT * FROM model_select.replay('SELECT context FROM two')$$, '42804', NULL,
                 'a source with one column is rejected');
SELECT throws_ok($$SELECT * FROM model_select.replay('SELECT context, cluster FROM two')$$, '42804', NULL,
                 'a rewards column that is not an array is rejected');
SELECT throws_ok($$SELECT * FROM model_select.replay(
                     'SELECT context, CASE WHEN round = 7 THEN reward[1:1] ELSE reward END FROM two')$$,
                 '22000', 'replay source row 7: rewards has 1 elements, expected 2',
                 'a row whose rewards length differs from the number of arms is rejected');
SELECT throws_ok($$SELECT * FROM model_select.replay(
                     'SELECT CASE WHEN round = 3 THEN NULL ELSE context END, reward FROM two')$$,
                 '22004', NULL, 'a NULL context is rejected');
SELECT throws_ok($$SELECT * FROM model_select.replay('SELECT context, reward FROM two', cost_weight => -1)$$,
                 '22023', NULL, 'a negative cost weight is rejected');

SELECT * FROM finish();
ROLLBACK;
