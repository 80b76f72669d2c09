-- bench/quality_rl.sql, included by bench/quality_tags.sql,
-- quality_candidates.sql (psql variables: data, seeds): RouteLLM's routellm.csv
-- in table rl with its held-out split (quality_split.sql) and the prices of
-- quality_routellm_warm.sql (Mixtral 0.05, GPT-4 1.0), rl_src() for a seed's
-- evaluation stream or warm pool, and each seed's best single model (GPT-4):
-- its mean reward, and its mean utility at the cold rows' cost weight 0.05
-- (reward - 0.05 x cost), which a router routing at that weight maximises.
\set tbl rl
\set csvfile routellm.csv
\ir quality_split.sql
UPDATE rl SET costs = ARRAY[0.05, 1.0]::real[];
CREATE FUNCTION rl_src(s int, tagged boolean, warm boolean, k int) RETURNS text LANGUAGE sql AS $$
    SELECT split_src('rl', 'd.embedding, d.rewards, d.costs', 'ARRAY[d.category] AS tags', s, tagged, warm, k) $$;
CREATE TABLE rl_best AS
WITH ev AS (SELECT x.seed, d.* FROM rl d JOIN rl_split x USING (id) WHERE x.rk > 2000)
SELECT seed, max(m) AS best_single, max(m) FILTER (WHERE a = 2) AS gpt4,
       max(u) FILTER (WHERE a = 2) AS gpt4_utility
  FROM (SELECT seed, a, avg(rewards[a]) AS m, avg(rewards[a] - 0.05 * costs[a]) AS u
          FROM ev, generate_series(1, 2) a GROUP BY 1, 2) q GROUP BY seed;
