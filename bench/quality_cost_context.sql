-- bench/quality_cost_context.sql (run by bench/quality.sh; psql variables:
-- data = the data directory, seeds = '{101,...}'): what the budget's cost model
-- gains when costs vary by prompt (docs/settings.md#a-cost-model-per-arm-and-context).
-- Neither outcome table has per-call costs, so each prompt gets a synthetic
-- one: its model's price times exp(g - 1/2), g ~ N(0, 1) drawn once per
-- category, as token prices times prompt lengths that differ by task.
--   RouteLLM (routellm.csv, 58 categories: GSM8K and each MMLU subject):
--     Mixtral 0.05, GPT-4 1.0; a budget of 25% of GPT-4's mean cost.
--   RouterDC (routerdc7_dev.csv, 8 task families): the best model on the
--     file priced 1.0, the others log-uniform in (0.03, 1); budgets of 10% and
--     5% of the best model's mean cost.
-- The default router (lin_ucb) on each seed's evaluation prompts, warm-started
-- from 1,000 pool prompts, priced by the cost model (the default) and at each
-- arm's mean cost (cost_model false), without tags and with the category as
-- a tag: quality as a share of the priciest model's on the same prompts, and
-- spend over the budget.
\set ON_ERROR_STOP 1
\set tbl rlc
\set csvfile routellm.csv
\ir quality_split.sql
\set tbl dcc
\set csvfile routerdc7_dev.csv
\ir quality_split.sql
\echo '   cost-context:' `date +%T` 'RouteLLM and RouterDC loaded'

-- the synthetic costs: prices per arm, a length factor per category
SELECT setseed(0.42);
CREATE TABLE cc_length AS
SELECT 'rlc' AS tbl, category, exp(sqrt(-2 * ln(random())) * cos(2 * pi() * random()) - 0.5) AS factor
  FROM (SELECT DISTINCT category FROM rlc ORDER BY 1) c;
SELECT setseed(0.7);
CREATE TABLE cc_price AS
WITH best AS (SELECT a FROM dcc, generate_series(1, 7) a GROUP BY a ORDER BY avg(rewards[a]) DESC LIMIT 1)
SELECT 'dcc' AS tbl, a, CASE WHEN a = (SELECT a FROM best) THEN 1.0 ELSE exp(ln(0.03) * random()) END AS price
  FROM generate_series(1, 7) a ORDER BY a;
INSERT INTO cc_length
SELECT 'dcc', category, exp(sqrt(-2 * ln(random())) * cos(2 * pi() * random()) - 0.5)
  FROM (SELECT DISTINCT category FROM dcc ORDER BY 1) c;
INSERT INTO cc_price VALUES ('rlc', 1, 0.05), ('rlc', 2, 1.0);
ALTER TABLE rlc ALTER costs TYPE float8[];
ALTER TABLE dcc ALTER costs TYPE float8[];
UPDATE rlc d SET costs = (SELECT array_agg(p.price * l.factor ORDER BY p.a) FROM cc_price p WHERE p.tbl = 'rlc')
  FROM cc_length l WHERE l.tbl = 'rlc' AND l.category = d.category;
UPDATE dcc d SET costs = (SELECT array_agg(p.price * l.factor ORDER BY p.a) FROM cc_price p WHERE p.tbl = 'dcc')
  FROM cc_length l WHERE l.tbl = 'dcc' AND l.category = d.category;
CREATE FUNCTION cc_src(tbl text, s int, tagged boolean, warm boolean) RETURNS text LANGUAGE sql AS $$
    SELECT split_src(tbl, 'd.embedding, d.rewards, d.costs', 'ARRAY[d.category] AS tags', s, tagged, warm, 1000) $$;
-- per table and seed: the priciest model's mean reward and cost on the evaluation prompts
CREATE TABLE cc_best AS
SELECT 'rlc' AS tbl, x.seed, avg(d.rewards[2]) AS quality, avg(d.costs[2]) AS cost
  FROM rlc d JOIN rlc_split x USING (id) WHERE x.rk > 2000 GROUP BY x.seed
UNION ALL
SELECT 'dcc', x.seed, avg(d.rewards[p.a]), avg(d.costs[p.a])
  FROM dcc d JOIN dcc_split x USING (id) JOIN cc_price p ON p.tbl = 'dcc' AND p.price = 1.0
 WHERE x.rk > 2000 GROUP BY x.seed;

CREATE TABLE cc_run(tbl text, share float8, tagged boolean, cost_model boolean, seed int, quality float8, spend float8);
DO $$
DECLARE
    r record;
    v record;
BEGIN
    FOR r IN SELECT b.*, s.share, t.tagged, c.cost_model
               FROM cc_best b
               JOIN (VALUES ('rlc', 0.25), ('dcc', 0.1), ('dcc', 0.05)) s(tbl, share) USING (tbl),
                    (VALUES (false), (true)) t(tagged), (VALUES (false), (true)) c(cost_model)
              ORDER BY b.tbl DESC, s.share DESC, b.seed, t.tagged, c.cost_model LOOP
        SELECT x.cum_reward / x.round / r.quality AS quality, x.cum_cost / x.round / (r.share * r.cost) AS spend INTO v
          FROM model_select.replay(cc_src(r.tbl, r.seed, r.tagged, false), 'lin_ucb', NULL,
                                   jsonb_build_object('budget', r.share * r.cost, 'cost_model', r.cost_model),
                                   r.seed, 0, NULL, 1, NULL, true, cc_src(r.tbl, r.seed, r.tagged, true)) x
         ORDER BY x.round DESC LIMIT 1;
        INSERT INTO cc_run VALUES (r.tbl, r.share, r.tagged, r.cost_model, r.seed, v.quality, v.spend);
        RAISE NOTICE '% budget % seed % tags % cost_model % -> % of the priciest model (spend %)', r.tbl, r.share,
            r.seed, r.tagged, r.cost_model, round(v.quality::numeric, 4), round(v.spend::numeric, 4);
    END LOOP;
END $$;
\pset format unaligned
\pset tuples_only on
\o :out
SELECT format('Synthetic costs per category (each model''s price x exp(g - 1/2), g ~ N(0, 1) per category), the default router (lin_ucb) with a budget, warm-started from 1,000 pool prompts, %s seeds: quality as a share of the priciest model''s on the same prompts (mean ± standard deviation), spend over the budget (range). RouteLLM: Mixtral 0.05, GPT-4 1.0. RouterDC: the best model 1.0, the others log-uniform in (0.03, 1): %s.',
              (SELECT count(DISTINCT seed) FROM cc_best),
              (SELECT string_agg(to_char(price, 'FM0.000'), ', ' ORDER BY a) FROM cc_price WHERE tbl = 'dcc'));
SELECT '';
SELECT '| data, budget | prompts | priced at each arm''s mean cost (cost_model false) | priced by the cost model (default) | paired gain |';
SELECT '|---|---|---:|---:|---:|';
SELECT format('| %s, %s%% | %s | %s ± %s (spend %s–%s) | %s ± %s (spend %s–%s) | %s ± %s |',
              CASE a.tbl WHEN 'rlc' THEN 'RouteLLM' ELSE 'RouterDC 7 models' END, round(a.share * 100),
              CASE WHEN a.tagged THEN 'the category as a tag' ELSE 'untagged' END,
              to_char(avg(a.quality), 'FM0.0000'), to_char(stddev_samp(a.quality), 'FM0.0000'),
              to_char(min(a.spend), 'FM0.0000'), to_char(max(a.spend), 'FM0.0000'),
              to_char(avg(b.quality), 'FM0.0000'), to_char(stddev_samp(b.quality), 'FM0.0000'),
              to_char(min(b.spend), 'FM0.0000'), to_char(max(b.spend), 'FM0.0000'),
              to_char(avg(b.quality - a.quality), 'FMS0.0000'), to_char(stddev_samp(b.quality - a.quality), 'FM0.0000'))
  FROM cc_run a JOIN cc_run b USING (tbl, share, tagged, seed)
 WHERE NOT a.cost_model AND b.cost_model
 GROUP BY a.tbl, a.share, a.tagged ORDER BY a.tbl DESC, a.share DESC, a.tagged;
\o
