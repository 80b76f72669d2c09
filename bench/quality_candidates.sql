-- bench/quality_candidates.sql (run by bench/quality.sh; psql variables: data,
-- seeds = fresh orders, e.g. '{101,...,130}', candidates = a JSON array of
-- settings objects, out): candidate default settings against the defaults,
-- on orders the defaults were not tuned on.  Every candidate is the default
-- router (lin_ucb) with its settings over the defaults, on the rows the
-- defaults are judged by (issue 42): RouterDC cold and warm 1,000, untagged
-- and with the category as tag (gain over the seed's best single model),
-- RouteLLM cold with cost weight 0.05, untagged and with the category as
-- tag (gain in utility, reward - 0.05 x cost, over GPT-4's: the router
-- trades reward for cost at that weight, so its reward alone would count
-- every saving as a loss; and the mean cost; the tagged row is where tags
-- cost, docs/settings.md#tags), and with a budget of 25% of GPT-4's cost
-- warm 1,000 (share of GPT-4's quality, and spend over the budget).  A
-- candidate is compared with the defaults seed by seed on the same prompts
-- and orders: the mean difference, its standard error and the seeds it wins,
-- which the seeds' spread (larger than most differences between settings)
-- would hide.
\set ON_ERROR_STOP 1
\ir quality_dc.sql
\ir quality_rl.sql
\echo '   candidates:' `date +%T` 'RouterDC and RouteLLM loaded'

-- the rows, in the order printed, and their scores' format (gains signed, shares not)
CREATE TABLE cand_part(ord int, part text, fmt text);
INSERT INTO cand_part VALUES (1, 'RouterDC cold', 'FMS0.0000'), (2, 'RouterDC cold, tagged', 'FMS0.0000'),
    (3, 'RouterDC warm 1000', 'FMS0.0000'), (4, 'RouterDC warm 1000, tagged', 'FMS0.0000'),
    (5, 'RouteLLM cold λ 0.05', 'FMS0.0000'), (6, 'RouteLLM cold λ 0.05, tagged', 'FMS0.0000'),
    (7, 'RouteLLM budget 25%, warm 1000', 'FM0.0000');
CREATE TABLE cand_run(candidate int, settings jsonb, part text, seed int, score float8, cost float8);
CREATE FUNCTION cand_score(part text, s int, settings jsonb, OUT score float8, OUT cost float8)
LANGUAGE plpgsql AS $$
DECLARE
    tagged boolean := part LIKE '%tagged%';
    k int := CASE WHEN part LIKE '%warm%' THEN 1000 ELSE 0 END;
BEGIN
    IF part LIKE 'RouterDC%' THEN
        SELECT x.cum_reward / x.round - b.best_single, NULL INTO score, cost
          FROM model_select.replay(dc_src(s, tagged, false, 0), 'lin_ucb', NULL, settings, s, 0, NULL, 1, NULL,
                                   true, dc_src(s, tagged, true, k)) x, dc_best b
         WHERE b.seed = s ORDER BY x.round DESC LIMIT 1;
    ELSIF part LIKE 'RouteLLM cold%' THEN
        SELECT x.cum_utility / x.round - b.gpt4_utility, x.cum_cost / x.round INTO score, cost
          FROM model_select.replay(rl_src(s, tagged, false, 0), 'lin_ucb', NULL, settings, s, 0.05) x, rl_best b
         WHERE b.seed = s ORDER BY x.round DESC LIMIT 1;
    ELSE
        SELECT x.cum_reward / x.round / b.gpt4, x.cum_cost / x.round / 0.25 INTO score, cost
          FROM model_select.replay(rl_src(s, false, false, 0), 'lin_ucb', NULL, settings || '{"budget": 0.25}',
                                   s, 0, NULL, 1, NULL, true, rl_src(s, false, true, 1000)) x, rl_best b
         WHERE b.seed = s ORDER BY x.round DESC LIMIT 1;
    END IF;
END $$;

SET bench.candidates = :'candidates';
DO $$
DECLARE
    c record;
    p text;
    s int;
    v record;
BEGIN
    FOR c IN SELECT ord - 1 AS candidate, value AS settings
               FROM jsonb_array_elements('[{}]'::jsonb || current_setting('bench.candidates')::jsonb)
                    WITH ORDINALITY q(value, ord) LOOP
        FOR p IN SELECT part FROM cand_part ORDER BY ord LOOP
            FOR s IN SELECT DISTINCT seed FROM dc_split ORDER BY 1 LOOP
                v := cand_score(p, s, c.settings);
                INSERT INTO cand_run VALUES (c.candidate, c.settings, p, s, v.score, v.cost);
            END LOOP;
        END LOOP;
        RAISE NOTICE '% candidate % done: %', to_char(clock_timestamp(), 'HH24:MI:SS'), c.candidate, c.settings;
    END LOOP;
END $$;

\pset format unaligned
\pset tuples_only on
\o :out
SELECT format('Candidate settings of the default router (lin_ucb) against its defaults on %s orders (seeds %s), '
              'each paired with the defaults on the same seed: RouterDC rows are the gain over the seed''s best '
              'single model; RouteLLM cold the gain in utility (reward − 0.05 × cost) over GPT-4''s (mean cost in '
              'brackets); the budget row the share '
              'of GPT-4''s quality (spend over the budget in brackets).',
              count(DISTINCT seed), min(seed) || '–' || max(seed))
  FROM cand_run;
SELECT '';
SELECT '| settings | row | mean ± sd (worst) | difference from the defaults ± se | seeds won |';
SELECT '|---|---|---:|---:|---:|';
SELECT format('| `%s` | %s | %s ± %s (%s)%s | %s | %s |', c.settings, c.part,
              to_char(avg(c.score), o.fmt), to_char(stddev_samp(c.score), 'FM0.0000'),
              to_char(min(c.score), o.fmt),
              coalesce(' [' || to_char(avg(c.cost), 'FM0.000') || ']', ''),
              CASE WHEN c.candidate = 0 THEN '' ELSE
                  to_char(avg(c.score - d.score), 'FMS0.0000') || ' ± ' ||
                  to_char(stddev_samp(c.score - d.score) / sqrt(count(*)), 'FM0.0000') END,
              CASE WHEN c.candidate = 0 THEN '' ELSE
                  count(*) FILTER (WHERE c.score > d.score) || ' of ' || count(*) END)
  FROM cand_run c JOIN cand_run d ON d.candidate = 0 AND d.part = c.part AND d.seed = c.seed
       JOIN cand_part o ON o.part = c.part
 GROUP BY c.candidate, c.settings, c.part, o.ord, o.fmt
 ORDER BY c.candidate, o.ord;
\o
