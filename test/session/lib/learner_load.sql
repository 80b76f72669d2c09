-- The load of the learner's session tests (versions.sh, learner_standby.sh),
-- on two selectors of dimension 8 with arms a, b and c, run with
--   q -f test/session/lib/learner_load.sql
-- after ms_setup (it uses ms_rand), then CALL writer(s1, s2) and
-- CALL router(s1, s2) from sessions of their own until a row is inserted
-- into load_done.
CREATE TABLE load_done (done bool);
-- n rewards of selector s, on random arms and contexts, in one statement
CREATE FUNCTION add_rewards(s text, n int) RETURNS void LANGUAGE sql AS $$
    INSERT INTO model_select.rewards(selector, arm, context, reward)
    SELECT s, (ARRAY['a', 'b', 'c'])[1 + (i + (random() * 3)::int) % 3], ms_rand(8), random()
      FROM generate_series(1, n) i
$$;
-- writers: a few rewards per transaction on one selector, until told to stop
CREATE PROCEDURE writer(s1 text, s2 text) LANGUAGE plpgsql AS $$
BEGIN
    LOOP
        PERFORM add_rewards(CASE WHEN random() < 0.5 THEN s1 ELSE s2 END, 5);
        COMMIT;
        PERFORM pg_sleep(0.02);
        EXIT WHEN EXISTS (SELECT FROM load_done);
    END LOOP;
END $$;
-- routers: route, reward that decision, route again, in one transaction
CREATE PROCEDURE router(s1 text, s2 text) LANGUAGE plpgsql AS $$
DECLARE
    s text;
    d bigint;
BEGIN
    LOOP
        s := CASE WHEN random() < 0.5 THEN s1 ELSE s2 END;
        SELECT decision_id INTO d FROM model_select.route(s, ms_rand(8));
        INSERT INTO model_select.rewards(decision_id, reward) VALUES (d, random());
        PERFORM model_select.route(s, ms_rand(8));
        COMMIT;
        EXIT WHEN EXISTS (SELECT FROM load_done);
    END LOOP;
END $$;
