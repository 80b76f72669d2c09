-- test/session/lib/cascade_scores.sql (cascade_probe_race.sh, cascade_random.sh):
-- ms_cascade_scores(), every arm's cascade state at 3 probes; ms_cascade_refit_diff(),
-- the rows where it differs from a from-scratch cascade_refit()'s (run by it):
-- n, the width to 1e-9, the estimate (where rho was fit at n) to 1e-6, since rho
-- comes from a Newton minimisation that stops at a decrement of 1e-20 (n + 1):
-- warm-started live and cold at the refit, the two stopping points differ by
-- about 1e-9 (seen: 2.4e-9 on an estimate of 0.63).
CREATE FUNCTION ms_cascade_scores() RETURNS TABLE (selector text, arm text, k int, n bigint, fit_n bigint,
                                                   estimate float8, width float8) LANGUAGE sql AS $$
  SELECT s.selector, s.arm, k, s.n, s.fit_n, c.estimate, c.width
    FROM model_select.cascade_arm_stats s, generate_series(1, 3) k,
         LATERAL model_select.cascade_scores(s.selector, ms_probe(3, k)) c
   WHERE c.arm = s.arm
$$;
CREATE FUNCTION ms_cascade_refit_diff() RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
    CREATE TEMP TABLE ms_live AS SELECT * FROM ms_cascade_scores();
    PERFORM model_select.cascade_refit(name, true) FROM model_select.selectors;
    RETURN QUERY
    SELECT format('%s/%s probe %s: n %s/%s, width %s/%s, estimate %s/%s', l.selector, l.arm, l.k,
                  l.n, r.n, l.width, r.width, l.estimate, r.estimate)
      FROM ms_live l FULL JOIN ms_cascade_scores() r USING (selector, arm, k)
     WHERE l.n IS DISTINCT FROM r.n OR NOT ms_close(l.width, r.width)
        OR (l.fit_n = l.n AND l.estimate <> r.estimate  -- (Infinity while n = 0)
            AND NOT abs(l.estimate - r.estimate) <= 1e-6 * greatest(1, abs(r.estimate)));
    DROP TABLE ms_live;
END $$;
