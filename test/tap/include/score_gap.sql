-- test/tap/include/score_gap.sql (\ir'd by clock.sql and drift_detect.sql):
-- how far two selectors' scores, or a selector's scores before and after
-- rebuild_state(), are apart at the probes of the caller's temp table
-- probes (probe, context): the largest relative gap of a mean or width
-- (two Infinity means, untried arms, agree; Infinity against a number is 1).
CREATE FUNCTION pg_temp.snapshot(sel text) RETURNS TABLE(probe int, arm text, mean float8, width float8) LANGUAGE sql AS $$
    SELECT p.probe, s.arm, s.mean, s.width FROM probes p CROSS JOIN LATERAL model_select.scores(sel, p.context) s
$$;
CREATE FUNCTION pg_temp.score_gap(lmean float8, lwidth float8, rmean float8, rwidth float8) RETURNS float8
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN lmean = 'Infinity' OR rmean = 'Infinity' THEN (lmean <> rmean)::int
                ELSE greatest(abs(lmean - rmean) / greatest(1, abs(rmean)),
                              abs(lwidth - rwidth) / greatest(1, abs(rwidth))) END
$$;
-- selectors a and b, arm by arm
CREATE FUNCTION pg_temp.gap(a text, b text) RETURNS float8 LANGUAGE sql AS $$
    SELECT max(pg_temp.score_gap(l.mean, l.width, r.mean, r.width))
      FROM pg_temp.snapshot(a) l JOIN pg_temp.snapshot(b) r USING (probe, arm)
$$;
-- the selector as it is, against rebuild_state() of it
CREATE FUNCTION pg_temp.rebuild_gap(sel text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE gap float8;
BEGIN
    CREATE TEMP TABLE live ON COMMIT DROP AS SELECT * FROM pg_temp.snapshot(sel);
    PERFORM model_select.rebuild_state(sel);
    SELECT max(pg_temp.score_gap(l.mean, l.width, r.mean, r.width))
      INTO gap FROM live l JOIN pg_temp.snapshot(sel) r USING (probe, arm);
    DROP TABLE live;
    RETURN gap;
END $$;
