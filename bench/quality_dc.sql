-- bench/quality_dc.sql, included by bench/quality_routerdc7.sql,
-- quality_feedback.sql, quality_tags.sql and quality_candidates.sql (psql
-- variables: data, seeds): RouterDC's routerdc7_dev.csv in table dc with its
-- held-out split (quality_split.sql), the queries of a seed's evaluation stream
-- and warm pool, and each seed's best single model on its evaluation stream.
\set tbl dc
\set csvfile routerdc7_dev.csv
\ir quality_split.sql

-- dc_src(seed, tagged, warm, k): the evaluation stream (warm false) or the
-- first k pool prompts (warm true; NULL for k 0), with the category as the
-- prompt's one tag when tagged.
CREATE FUNCTION dc_src(s int, tagged boolean, warm boolean, k int) RETURNS text LANGUAGE sql AS $$
    SELECT split_src('dc', 'd.embedding, d.rewards', 'NULL::real[], ARRAY[d.category] AS tags', s, tagged, warm, k) $$;
CREATE FUNCTION dc_eval(s int) RETURNS text LANGUAGE sql AS $$ SELECT dc_src(s, false, false, 0) $$;
CREATE FUNCTION dc_warm(s int, k int) RETURNS text LANGUAGE sql AS $$ SELECT dc_src(s, false, true, k) $$;
CREATE TABLE dc_best AS
WITH ev AS (SELECT x.seed, d.* FROM dc d JOIN dc_split x USING (id) WHERE x.rk > 2000)
SELECT seed, max(m) AS best_single
  FROM (SELECT seed, a, avg(rewards[a]) AS m FROM ev, generate_series(1, 7) a GROUP BY 1, 2) q GROUP BY seed;
