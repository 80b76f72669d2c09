-- pg_temp.ms(sql): the time of one statement in milliseconds, run through
-- EXECUTE (included by the benchmark scripts with \ir).
CREATE FUNCTION pg_temp.ms(sql text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz;
BEGIN
    t0 := clock_timestamp();
    EXECUTE sql;
    RETURN extract(epoch FROM clock_timestamp() - t0) * 1000;
END $$;
