-- bench/quality_tags.sql (run by bench/quality.sh; psql variables: data = the
-- data directory, seeds = '{1,2,3,4,5}'): what tags add (issue 42 part 3).
-- RouterDC's routerdc7_dev.csv under the held-out protocol of
-- quality_routerdc7.sql (quality_dc.sql), the default router (lin_ucb, default
-- settings: 16 tag buckets), cold and warm-started from 1,000 pool prompts,
-- with the prompt's category (8 task families) as its one tag and without;
-- then RouteLLM (routellm.csv: its 58 categories, GSM8K and each MMLU subject,
-- as tags) with its prices (quality_routellm_warm.sql's: Mixtral 0.05, GPT-4
-- 1.0), cold with cost weight 0.05 and with a budget of 25% of GPT-4's cost
-- warm-started from 1,000 prompts.  The same seeds, orders and prompts for
-- every row; no setting differs between the rows but the tags.
\set ON_ERROR_STOP 1
\ir quality_dc.sql
\echo '   tags:' `date +%T` 'RouterDC loaded'

CREATE TABLE tag_run(data text, tagged boolean, k int, seed int, reward float8, cost float8);
DO $$
DECLARE
    r record;
    v record;
BEGIN
    FOR r IN SELECT s.seed, t.tagged, k FROM (SELECT DISTINCT seed FROM dc_split) s,
                    (VALUES (false), (true)) t(tagged), unnest(ARRAY[0, 1000]) k ORDER BY 1, 3, 2 LOOP
        SELECT x.cum_reward / x.round AS reward INTO v
          FROM model_select.replay(dc_src(r.seed, r.tagged, false, 0), 'lin_ucb', NULL, '{}', r.seed, 0, NULL, 1,
                                   NULL, true, dc_src(r.seed, r.tagged, true, r.k)) x
         ORDER BY x.round DESC LIMIT 1;
        INSERT INTO tag_run VALUES ('routerdc7', r.tagged, r.k, r.seed, v.reward, NULL);
        RAISE NOTICE 'routerdc7 seed % warm % tags % -> %', r.seed, r.k, r.tagged, round(v.reward::numeric, 4);
    END LOOP;
END $$;

\ir quality_rl.sql
\echo '   tags:' `date +%T` 'RouteLLM loaded'
DO $$
DECLARE
    r record;
    v record;
BEGIN
    FOR r IN SELECT s.seed, t.tagged, c.kind FROM (SELECT DISTINCT seed FROM rl_split) s,
                    (VALUES (false), (true)) t(tagged), (VALUES ('cold λ 0.05'), ('budget 25%, warm 1000')) c(kind)
              ORDER BY 1, 3, 2 LOOP
        IF r.kind = 'cold λ 0.05' THEN
            SELECT x.cum_reward / x.round AS reward, x.cum_cost / x.round AS cost INTO v
              FROM model_select.replay(rl_src(r.seed, r.tagged, false, 0), 'lin_ucb', NULL, '{}', r.seed, 0.05) x
             ORDER BY x.round DESC LIMIT 1;
        ELSE
            SELECT x.cum_reward / x.round AS reward, x.cum_cost / x.round AS cost INTO v
              FROM model_select.replay(rl_src(r.seed, r.tagged, false, 0), 'lin_ucb', NULL, '{"budget": 0.25}',
                                       r.seed, 0, NULL, 1, NULL, true, rl_src(r.seed, r.tagged, true, 1000)) x
             ORDER BY x.round DESC LIMIT 1;
        END IF;
        INSERT INTO tag_run VALUES ('routellm ' || r.kind, r.tagged, 0, r.seed, v.reward, v.cost);
        RAISE NOTICE 'routellm % seed % tags % -> % (cost %)', r.kind, r.seed, r.tagged,
            round(v.reward::numeric, 4), round(v.cost::numeric, 4);
    END LOOP;
END $$;
\pset format unaligned
\pset tuples_only on
\o :out
SELECT format('The default router (lin_ucb, default settings) with and without tags, %s seeds (mean ± standard deviation of the gain over the seed''s best single model on the same evaluation prompts).', (SELECT count(*) FROM dc_best));
SELECT '';
SELECT '| data | no tags | with tags |';
SELECT '|---|---:|---:|';
SELECT format('| RouterDC 7 models, %s, category as tag | %s | %s |',
              CASE WHEN k = 0 THEN 'cold' ELSE 'warm ' || k END,
              (SELECT to_char(avg(r.reward - b.best_single), 'FMS0.0000') || ' ± ' || to_char(stddev_samp(r.reward - b.best_single), 'FM0.0000')
                 FROM tag_run r JOIN dc_best b USING (seed) WHERE r.data = 'routerdc7' AND r.k = w.k AND NOT r.tagged),
              (SELECT to_char(avg(r.reward - b.best_single), 'FMS0.0000') || ' ± ' || to_char(stddev_samp(r.reward - b.best_single), 'FM0.0000')
                 FROM tag_run r JOIN dc_best b USING (seed) WHERE r.data = 'routerdc7' AND r.k = w.k AND r.tagged))
  FROM (VALUES (0), (1000)) w(k);
SELECT format('| RouteLLM, %s (quality: mean reward; and mean cost) | %s (cost %s) | %s (cost %s) |', substr(d, 10),
              (SELECT to_char(avg(reward), 'FM0.0000') FROM tag_run WHERE data = d AND NOT tagged),
              (SELECT to_char(avg(cost), 'FM0.0000') FROM tag_run WHERE data = d AND NOT tagged),
              (SELECT to_char(avg(reward), 'FM0.0000') FROM tag_run WHERE data = d AND tagged),
              (SELECT to_char(avg(cost), 'FM0.0000') FROM tag_run WHERE data = d AND tagged))
  FROM (VALUES ('routellm cold λ 0.05'), ('routellm budget 25%, warm 1000')) q(d);
SELECT format('| *RouteLLM: best single model (GPT-4) / 95%% of it* | *%s / %s* | |',
              to_char(avg(gpt4), 'FM0.0000'), to_char(0.95 * avg(gpt4), 'FM0.0000')) FROM rl_best;
\o
