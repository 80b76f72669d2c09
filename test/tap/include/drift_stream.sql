-- The swap stream of issue 42, shared by test/tap/drift_swap.sql and
-- bench/quality_drift.sql: 16 dimensions, two Gaussian clusters drawn 50/50
-- with centres ±(0.35, 0.1, 0.35, 0.1, …) and noise σ 0.15 per coordinate;
-- arm a pays Bernoulli(0.8) on cluster 0 and Bernoulli(0.2) on cluster 1, b
-- the reverse, c Bernoulli(0.5) everywhere; a and b swap roles at round 1,000.
-- drift_stream(seed): its 1,500 rows, the same on every run (setseed).
-- drift_stream(seed, centred): the centres on the first `centred` coordinates
-- only, ±(0.35, 0.1, 0, …, 0) for 2 (the issue's "…" read as zeros): clusters
-- that overlap after normalisation (bench/quality_drift.sql).
CREATE FUNCTION pg_temp.drift_stream(seed int, centred int DEFAULT 16)
RETURNS TABLE (round int, context float8[], reward float8[], expected float8[])
LANGUAGE plpgsql AS $$
DECLARE
    cl int;
    x float8[];
    e float8[];
BEGIN
    PERFORM setseed(seed / 100.0);
    FOR t IN 1..1500 LOOP
        cl := CASE WHEN random() < 0.5 THEN 0 ELSE 1 END;
        x := '{}';
        FOR j IN 1..16 LOOP
            x := x || ((1 - 2 * cl) * CASE WHEN j > centred THEN 0 WHEN j % 2 = 1 THEN 0.35 ELSE 0.1 END
                       + 0.15 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()));
        END LOOP;
        e := CASE WHEN (cl = 0) = (t <= 1000) THEN ARRAY[0.8, 0.2, 0.5] ELSE ARRAY[0.2, 0.8, 0.5] END;
        round := t;
        context := x;
        expected := e;
        reward := ARRAY[(random() < e[1])::int, (random() < e[2])::int, (random() < e[3])::int];
        RETURN NEXT;
    END LOOP;
END $$;
