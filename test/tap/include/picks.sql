-- test/tap/include/picks.sql (\ir'd by the tests that compare replay() with a
-- live selector round for round: replay.sql, warm_start.sql, drift_swap.sql,
-- replay_feedback.sql, count_pending.sql): the arm picked in every round of a
-- stream, live and by replay(), each as the arm's position (from 1).
CREATE TEMP TABLE late(round int, decision_id bigint, reward float8);

-- Live: route() the selector sel (made by the caller) over the rows (round,
-- context, reward[] by arm position) of the query stream in their order, as
-- an application would.  With delay 0 each reward is inserted right after its
-- decision; with delay k, that of round t just before the decision of round
-- t + k + 1 (rewards still pending at the end are never inserted).
CREATE FUNCTION pg_temp.live_picks(sel text, arms text[], stream text, delay int DEFAULT 0) RETURNS int[]
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    d record;
    k int;
    picks int[] := '{}';
BEGIN
    TRUNCATE late;
    FOR r IN EXECUTE stream LOOP
        INSERT INTO model_select.rewards(decision_id, reward)
        SELECT l.decision_id, l.reward FROM late l WHERE l.round <= r.round - delay - 1 ORDER BY l.round;
        DELETE FROM late l WHERE l.round <= r.round - delay - 1;
        SELECT * INTO d FROM model_select.route(sel, r.context);
        k := array_position(arms, d.arm);
        IF delay = 0 THEN
            INSERT INTO model_select.rewards(decision_id, reward) VALUES (d.decision_id, r.reward[k]);
        ELSE
            INSERT INTO late VALUES (r.round, d.decision_id, r.reward[k]);
        END IF;
        picks := picks || k;
    END LOOP;
    RETURN picks;
END $$;

-- Replayed: the rows of the query replay (a replay() call with checkpoint => 1,
-- shuffle => false); the arm whose pick count grew in each round.
CREATE FUNCTION pg_temp.replay_picks(replay text) RETURNS int[]
LANGUAGE plpgsql AS $$
DECLARE
    picks int[];
BEGIN
    EXECUTE format($q$
        SELECT array_agg((SELECT a FROM generate_subscripts(picks, 1) a WHERE picks[a] <> before[a])
                         ORDER BY round)
          FROM (SELECT round, picks,
                       lag(picks, 1, array_fill(0::bigint, ARRAY[cardinality(picks)])) OVER (ORDER BY round)
                           AS before
                  FROM (%s) r) ck$q$, replay) INTO picks;
    RETURN picks;
END $$;
