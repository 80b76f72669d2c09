-- bench/quality_cost_context.sql (run by bench/quality.sh; psql variables:
-- data = the data directory, seeds = '{101,...}'): what the budget's cost model
-- gains when costs vary by prompt (docs/settings.md#a-cost-model-per-arm-and-context).
-- RouteLLM's routellm.csv has no per-call costs, so each prompt gets a
-- synthetic one: each model's price (Mixtral 0.05, GPT-4 1.0) times
-- exp(g - 1/2), g ~ N(0, 1) drawn once per category (58: GSM8K and each MMLU
-- subject), as token prices times prompt lengths that differ by task.  The
-- default router (lin_ucb) with a budget of 25% of GPT-4's mean cost on the
-- seed's evaluation prompts, warm-started from 1,000 pool prompts, priced by
-- the cost model (the default) and at each arm's mean cost (cost_model
-- false), without tags and with the category as a tag.  Share of GPT-4's
-- quality on the same prompts, and spend over the budget.
\set ON_ERROR_STOP 1
\set tbl rlc
\set csvfile routellm.csv
\ir quality_split.sql
\echo '   cost-context:' `date +%T` 'RouteLLM loaded'

SELECT setseed(0.42);
CREATE TABLE rlc_g AS
SELECT category, sqrt(-2 * ln(random())) * cos(2 * pi() * random()) AS g
  FROM (SELECT DISTINCT category FROM rlc ORDER BY 1) c;
ALTER TABLE rlc ALTER costs TYPE float8[];
UPDATE rlc d SET costs = ARRAY[0.05 * exp(g.g - 0.5), exp(g.g - 0.5)] FROM rlc_g g WHERE g.category = d.category;
CREATE FUNCTION rlc_src(s int, tagged boolean, warm boolean) RETURNS text LANGUAGE sql AS $$
    SELECT split_src('rlc', 'd.embedding, d.rewards, d.costs', 'ARRAY[d.category] AS tags', s, tagged, warm, 1000) $$;
CREATE TABLE rlc_best AS
SELECT x.seed, avg(d.rewards[2]) AS gpt4, avg(d.costs[2]) AS gpt4_cost
  FROM rlc d JOIN rlc_split x USING (id) WHERE x.rk > 2000 GROUP BY x.seed;

CREATE TABLE cc_run(tagged boolean, cost_model boolean, seed int, share float8, spend float8);
DO $$
DECLARE
    r record;
    v record;
BEGIN
    FOR r IN SELECT b.*, t.tagged, c.cost_model FROM rlc_best b, (VALUES (false), (true)) t(tagged),
                    (VALUES (false), (true)) c(cost_model) ORDER BY 1, 4, 5 LOOP
        SELECT x.cum_reward / x.round / r.gpt4 AS share, x.cum_cost / x.round / (0.25 * r.gpt4_cost) AS spend INTO v
          FROM model_select.replay(rlc_src(r.seed, r.tagged, false), 'lin_ucb', NULL,
                                   jsonb_build_object('budget', 0.25 * r.gpt4_cost, 'cost_model', r.cost_model),
                                   r.seed, 0, NULL, 1, NULL, true, rlc_src(r.seed, r.tagged, true)) x
         ORDER BY x.round DESC LIMIT 1;
        INSERT INTO cc_run VALUES (r.tagged, r.cost_model, r.seed, v.share, v.spend);
        RAISE NOTICE 'seed % tags % cost_model % -> % of GPT-4 (spend %)', r.seed, r.tagged, r.cost_model,
            round(v.share::numeric, 4), round(v.spend::numeric, 4);
    END LOOP;
END $$;
\pset format unaligned
\pset tuples_only on
\o :out
SELECT format('RouteLLM with a synthetic cost per category (price x exp(g - 1/2), g ~ N(0, 1) per category), the default router (lin_ucb) with a budget of 25%% of GPT-4''s mean cost, warm-started from 1,000 pool prompts, %s seeds: share of GPT-4''s quality on the same prompts (mean ± standard deviation), spend over the budget (range).', (SELECT count(*) FROM rlc_best));
SELECT '';
SELECT '| prompts | priced at each arm''s mean cost (cost_model false) | priced by the cost model (default) | paired gain |';
SELECT '|---|---:|---:|---:|';
SELECT format('| %s | %s ± %s (spend %s–%s) | %s ± %s (spend %s–%s) | %s ± %s |',
              CASE WHEN t.tagged THEN 'the category as a tag' ELSE 'untagged' END,
              to_char(avg(a.share), 'FM0.0000'), to_char(stddev_samp(a.share), 'FM0.0000'),
              to_char(min(a.spend), 'FM0.0000'), to_char(max(a.spend), 'FM0.0000'),
              to_char(avg(b.share), 'FM0.0000'), to_char(stddev_samp(b.share), 'FM0.0000'),
              to_char(min(b.spend), 'FM0.0000'), to_char(max(b.spend), 'FM0.0000'),
              to_char(avg(b.share - a.share), 'FMS0.0000'), to_char(stddev_samp(b.share - a.share), 'FM0.0000'))
  FROM (VALUES (false), (true)) t(tagged)
  JOIN cc_run a ON a.tagged = t.tagged AND NOT a.cost_model
  JOIN cc_run b ON b.tagged = t.tagged AND b.cost_model AND b.seed = a.seed
 GROUP BY t.tagged ORDER BY t.tagged;
\o
