-- bench/quality_dc.sql, included by bench/quality_routerdc7.sql and
-- bench/quality_feedback.sql (psql variables: data, seeds): RouterDC's
-- routerdc7_dev.csv in table dc with its held-out split (quality_split.sql), and
-- the queries of a seed's evaluation stream and warm pool.
\set tbl dc
\set csvfile routerdc7_dev.csv
\ir quality_split.sql

CREATE FUNCTION dc_eval(s int) RETURNS text LANGUAGE sql AS $$
    SELECT format('SELECT d.embedding, d.rewards FROM dc d JOIN dc_split x USING (id)'
                  ' WHERE x.seed = %s AND x.rk > 2000 ORDER BY x.rk', s) $$;
CREATE FUNCTION dc_warm(s int, k int) RETURNS text LANGUAGE sql AS $$
    SELECT CASE WHEN k > 0 THEN format('SELECT d.embedding, d.rewards FROM dc d JOIN dc_split x USING (id)'
                                       ' WHERE x.seed = %s AND x.rk <= %s ORDER BY x.rk', s, k) END $$;
