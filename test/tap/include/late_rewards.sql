-- test/tap/include/late_rewards.sql (\ir'd by replay_feedback.sql and
-- count_pending.sql): a live selector rewarded late and replay() with the
-- same delay, over the caller's temp table stream (round, context, reward[]
-- of 3 arms), each returning the arm picked in every round.
CREATE TEMP TABLE late(round int, decision_id bigint, reward float8);

-- Live: route every row in order; before the decision of round t (from 1)
-- insert the rewards of the rounds up to t - delay - 1.  Returns the picks.
CREATE FUNCTION pg_temp.live_picks(sel text, pol text, settings jsonb, delay int) RETURNS int[]
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    d record;
    k int;
    picks int[] := '{}';
BEGIN
    TRUNCATE late;
    PERFORM model_select.create_selector(sel, 8, ARRAY['arm1','arm2','arm3'], pol, NULL, settings, 5);
    FOR r IN SELECT * FROM stream ORDER BY round LOOP
        INSERT INTO model_select.rewards(decision_id, reward)
        SELECT l.decision_id, l.reward FROM late l WHERE l.round <= r.round - delay - 1 ORDER BY l.round;
        DELETE FROM late l WHERE l.round <= r.round - delay - 1;
        SELECT * INTO d FROM model_select.route(sel, r.context);
        k := substr(d.arm, 4)::int;
        INSERT INTO late VALUES (r.round, d.decision_id, r.reward[k]);
        picks := picks || k;
    END LOOP;
    RETURN picks;
END $$;

-- Replay with checkpoint => 1: the arm whose pick count grew in each round.
CREATE FUNCTION pg_temp.replay_picks(pol text, settings jsonb, delay int, feedback float8 DEFAULT 1,
                                     seed bigint DEFAULT 5) RETURNS int[]
LANGUAGE sql AS $$
    WITH ck AS (
        SELECT round, picks, lag(picks, 1, '{0,0,0}') OVER (ORDER BY round) AS before
          FROM model_select.replay('SELECT context, reward FROM stream ORDER BY round', pol, NULL, settings,
                                   seed => seed, checkpoint => 1, shuffle => false, delay => delay,
                                   feedback => feedback))
    SELECT array_agg((SELECT a FROM generate_subscripts(picks, 1) a WHERE picks[a] <> before[a])
                     ORDER BY round)
      FROM ck
$$;
