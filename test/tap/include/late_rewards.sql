-- test/tap/include/late_rewards.sql (\ir'd by replay_feedback.sql and
-- count_pending.sql): a live selector rewarded late and replay() with the
-- same delay, over the caller's temp table stream (round, context, reward[]
-- of 3 arms), each returning the arm picked in every round (include/picks.sql).
\ir picks.sql

-- Live: a new selector sel routes every row in order; the reward of round t
-- is inserted before the decision of round t + delay + 1.
CREATE FUNCTION pg_temp.live_late(sel text, pol text, settings jsonb, delay int) RETURNS int[]
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM model_select.create_selector(sel, 8, ARRAY['arm1','arm2','arm3'], pol, NULL, settings, 5);
    RETURN pg_temp.live_picks(sel, ARRAY['arm1','arm2','arm3'], 'SELECT * FROM stream ORDER BY round', delay);
END $$;

-- Replayed with the same delay and a share feedback of the rounds rewarded.
CREATE FUNCTION pg_temp.replay_late(pol text, settings jsonb, delay int, feedback float8 DEFAULT 1,
                                    seed bigint DEFAULT 5) RETURNS int[]
LANGUAGE sql AS $$
    SELECT pg_temp.replay_picks(format(
        'SELECT * FROM model_select.replay(%L, %L, NULL, %L, seed => %s, checkpoint => 1, shuffle => false,'
        ' delay => %s, feedback => %s)',
        'SELECT context, reward FROM stream ORDER BY round', pol, settings, seed, delay, feedback))
$$;
