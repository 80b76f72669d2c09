-- replay(delay, feedback): late and sparse feedback.  A reward becomes
-- visible delay rounds after its decision, and only a seeded share feedback
-- of the rounds is rewarded.  With a delay the choices must be those of a
-- live selector whose rewards are inserted that many rounds late; the rounds
-- rewarded depend on the seed only; bad arguments are refused.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(19);

CREATE TEMP TABLE stream AS
SELECT * FROM model_select.synthetic_clusters(400, 8, 3, NULL, 21, 0.1);

\ir include/late_rewards.sql

-- The rewards learned before each checkpoint's last decision.
CREATE FUNCTION pg_temp.learned(pol text, delay int, feedback float8, seed bigint, rounds int DEFAULT NULL)
RETURNS bigint[] LANGUAGE sql AS $$
    SELECT array_agg(learned ORDER BY round)
      FROM model_select.replay('SELECT context, reward FROM stream ORDER BY round', pol, rounds => rounds,
                               seed => seed, checkpoint => 100, shuffle => false, delay => delay, feedback => feedback)
$$;

-- Late rewards: the same choices as a live selector rewarded late.
SELECT is(pg_temp.replay_late('lin_ucb', '{}', 25), pg_temp.live_late('live_lin_25', 'lin_ucb', '{}', 25),
          'lin_ucb, rewards 25 rounds late: replay makes the live selector''s 400 choices');
SELECT is(pg_temp.replay_late('pak_ucb', '{"eta": 0.7}', 7), pg_temp.live_late('live_pak_7', 'pak_ucb', '{"eta": 0.7}', 7),
          'pak_ucb, rewards 7 rounds late: the same');
SELECT is(pg_temp.replay_late('greedy', '{"window": 40, "clock": "selector"}', 10),
          pg_temp.live_late('live_greedy_10', 'greedy', '{"window": 40, "clock": "selector"}', 10),
          'greedy with a window on the selector clock, rewards 10 rounds late: the same (late rewards tick the clock)');
SELECT is(pg_temp.replay_late('lin_ucb', '{}', 0), pg_temp.live_late('live_lin_0', 'lin_ucb', '{}', 0),
          'delay 0: rewarded before the next decision, as a route-then-reward loop');
SELECT isnt(pg_temp.replay_late('lin_ucb', '{}', 25), pg_temp.replay_late('lin_ucb', '{}', 0),
            'and a delay changes the choices');

-- What is learned when: with every round rewarded, the rewards of rounds
-- 1 .. R - 1 - delay by the decision of round R.
SELECT is(pg_temp.learned('lin_ucb', 0, 1, 1), ARRAY[99, 199, 299, 399]::bigint[],
          'delay 0: every reward but the last round''s learned by the end');
SELECT is(pg_temp.learned('lin_ucb', 150, 1, 1), ARRAY[0, 49, 149, 249]::bigint[],
          'delay 150: a reward is learned 150 rounds after the next decision');
SELECT is(pg_temp.learned('lin_ucb', 400, 1, 1), ARRAY[0, 0, 0, 0]::bigint[],
          'a delay past the rounds played: nothing is learned');
SELECT is(pg_temp.replay_late('lin_ucb', '{}', 400), pg_temp.replay_late('lin_ucb', '{}', 100000),
          'and the choices are those of arms without rewards, whatever the delay past the end');

-- Sparse feedback: a seeded share of the rounds, the same for every policy.
CREATE TEMP TABLE sparse AS
SELECT s AS seed, (pg_temp.learned('lin_ucb', 0, 0.2, s, 400))[4] AS lin,
       (pg_temp.learned('greedy', 0, 0.2, s, 400))[4] AS greedy
  FROM generate_series(1, 10) s;
SELECT is((SELECT count(*) FROM sparse WHERE lin <> greedy), 0::bigint,
          'the rounds rewarded do not depend on the policy (10 seeds)');
-- 10 seeds x 399 rounds at 0.2: mean 798, standard deviation 25
SELECT ok((SELECT sum(lin) BETWEEN 698 AND 898 FROM sparse),
          'feedback 0.2 rewards about a fifth of the rounds: ' || (SELECT sum(lin) FROM sparse) || ' of 3,990');
SELECT is((SELECT count(DISTINCT lin) > 1 FROM sparse), true, 'and other rounds for another seed');
SELECT is(pg_temp.replay_late('lin_ucb', '{}', 30, 0.3, 9), pg_temp.replay_late('lin_ucb', '{}', 30, 0.3, 9),
          'delay and feedback: the same choices for the same seed');
SELECT isnt(pg_temp.replay_late('lin_ucb', '{}', 30, 0.3, 9), pg_temp.replay_late('lin_ucb', '{}', 30, 1, 9),
            'and sparse feedback changes them');

-- Bad arguments.
SELECT throws_ok($$SELECT * FROM model_select.replay('SELECT context, reward FROM stream', delay => -1)$$,
                 '22023', 'delay must not be negative', 'a negative delay');
SELECT throws_ok($$SELECT * FROM model_select.replay('SELECT context, reward FROM stream', feedback => 0)$$,
                 '22023', 'feedback must be in (0, 1]: the share of rounds rewarded', 'feedback 0 (nothing to learn)');
SELECT throws_ok($$SELECT * FROM model_select.replay('SELECT context, reward FROM stream', feedback => 'NaN')$$,
                 '22023', NULL, 'feedback NaN');
SELECT throws_ok($$SELECT * FROM model_select.replay('SELECT context, reward FROM stream', feedback => 1.5)$$,
                 '22023', NULL, 'feedback above 1');
SELECT throws_ok($$SELECT * FROM model_select.replay('SELECT context, reward FROM stream', delay => NULL)$$,
                 '22004', NULL, 'delay NULL');

SELECT * FROM finish();
ROLLBACK;
