-- bench/quality_routellm_warm.sql (run by bench/quality.sh; psql variables: data,
-- seeds, out): warm starts on RouteLLM with its assumed prices (Mixtral 0.05,
-- GPT-4 1.0 per call), the held-out protocol of bench/quality_routerdc7.sql: per
-- seed the first 2,000 prompts by md5(id:seed) are the warm pool (both models
-- scored), the other 13,361 the evaluation stream, shuffled by the seed.
\set ON_ERROR_STOP 1
\ir quality_rl.sql
\echo '   routellm warm:' `date +%T` 'data loaded; 3 seeds x 4 cost weights x 3 routers follow'

CREATE TABLE rlw_router(ord int, label text, settings jsonb, warm boolean);
INSERT INTO rlw_router VALUES
    (1, 'lin_ucb defaults, cold', '{}', false),
    (2, 'lin_ucb defaults, warm 2,000', '{}', true),
    (3, 'lin_ucb warm profile (alpha 30, intercept 10, eta 0.5), warm 2,000',
        '{"alpha": 30, "intercept": 10, "eta": 0.5, "noise_prior": 0, "codebook": 0}', true);
CREATE TABLE rlw_run(ord int, lambda float8, seed int, utility float8);
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT ro.*, l, s.seed FROM rlw_router ro, unnest(ARRAY[0, 0.1, 0.2, 0.3]::float8[]) l,
                    (SELECT DISTINCT seed FROM rl_split) s ORDER BY s.seed, l, ro.ord LOOP
        INSERT INTO rlw_run
        SELECT r.ord, r.l, r.seed, x.cum_utility / x.round
          FROM model_select.replay(rl_src(r.seed, false, false, 0), 'lin_ucb', NULL, r.settings, r.seed, r.l, NULL, 1, NULL,
                                   true, CASE WHEN r.warm THEN rl_src(r.seed, false, true, 2000) END) x
         ORDER BY x.round DESC LIMIT 1;
        RAISE NOTICE '% λ=% seed % -> %', r.label, r.l, r.seed,
            (SELECT round(utility::numeric, 4) FROM rlw_run WHERE ord = r.ord AND lambda = r.l AND seed = r.seed);
    END LOOP;
END $$;
-- the best single model on each seed's evaluation prompts
CREATE TABLE rlw_ref AS
SELECT x.seed, l AS lambda, greatest(avg(d.rewards[1]) - 0.05 * l, avg(d.rewards[2]) - 1.0 * l) AS best
  FROM rl d JOIN rl_split x USING (id), unnest(ARRAY[0, 0.1, 0.2, 0.3]::float8[]) l
 WHERE x.rk > 2000 GROUP BY 1, 2;

-- budgets: 25% of GPT-4's mean cost (0.25 per prompt), cold and warm-started
-- from 1,000 pool prompts with their costs (the warm costs teach the arms'
-- mean costs and are no spend); the mean cost of the routed prompts against
-- the budget, and their mean reward against GPT-4's on the same prompts
CREATE TABLE rlb_router(ord int, label text, policy text, k int);
INSERT INTO rlb_router VALUES
    (1, 'lin_ucb defaults, cold', 'lin_ucb', 0), (2, 'lin_ucb defaults, warm 1,000', 'lin_ucb', 1000),
    (3, 'rff_ucb defaults, cold', 'rff_ucb', 0), (4, 'rff_ucb defaults, warm 1,000', 'rff_ucb', 1000);
CREATE TABLE rlb_run(ord int, seed int, cost float8, reward float8);
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT ro.*, s.seed FROM rlb_router ro, (SELECT DISTINCT seed FROM rl_split) s ORDER BY s.seed, ro.ord LOOP
        INSERT INTO rlb_run
        SELECT r.ord, r.seed, x.cum_cost / x.round, x.cum_reward / x.round
          FROM model_select.replay(rl_src(r.seed, false, false, 0), r.policy, NULL, '{"budget": 0.25}', r.seed, 0, NULL, 1,
                                   NULL, true, CASE WHEN r.k > 0 THEN rl_src(r.seed, false, true, r.k) END) x
         ORDER BY x.round DESC LIMIT 1;
        RAISE NOTICE '% budget 0.25 seed % -> %', r.label, r.seed,
            (SELECT format('cost %s, reward %s', round(cost::numeric, 4), round(reward::numeric, 4))
               FROM rlb_run WHERE ord = r.ord AND seed = r.seed);
    END LOOP;
END $$;
-- the same budget as feedback really arrives (replay()'s delay and feedback):
-- lin_ucb defaults, cold and warm 1,000, delay 0 / 100 / 1,000 rounds x 100% /
-- 20% / 5% of the rounds rewarded; the pacer counts the decisions not
-- rewarded yet at their arm's mean cost (pending_horizon, default 1,000)
CREATE TABLE rlf_run(k int, delay int, feedback float8, seed int, cost float8, reward float8);
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT s.seed, k, d, fb FROM (SELECT DISTINCT seed FROM rl_split) s, unnest(ARRAY[0, 1000]) k,
                    unnest(ARRAY[0, 100, 1000]) d, unnest(ARRAY[1, 0.2, 0.05]::float8[]) fb ORDER BY 1, 2, 3, 4 DESC LOOP
        INSERT INTO rlf_run
        SELECT r.k, r.d, r.fb, r.seed, x.cum_cost / x.round, x.cum_reward / x.round
          FROM model_select.replay(rl_src(r.seed, false, false, 0), 'lin_ucb', NULL, '{"budget": 0.25}', r.seed, 0, NULL, 1,
                                   NULL, true, CASE WHEN r.k > 0 THEN rl_src(r.seed, false, true, r.k) END, r.d, r.fb) x
         ORDER BY x.round DESC LIMIT 1;
    END LOOP;
    RAISE NOTICE 'budget under late and sparse feedback: % passes done', (SELECT count(*) FROM rlf_run);
END $$;

\pset format unaligned
\pset tuples_only on
\o :out
SELECT 'RouteLLM (costs 0.05 / 1.0): utility (reward − λ·cost) per prompt of one shuffled online pass over the 13,361 evaluation prompts of each seed, mean over seeds ' || :'seeds' || '; warm 2,000 = the seed''s warm pool, both models scored, learned before going online.';
SELECT '';
SELECT '| router | λ = 0 | 0.1 | 0.2 | 0.3 |';
SELECT '|---|---:|---:|---:|---:|';
SELECT format('| %s | %s |', ro.label,
              (SELECT string_agg(to_char(u, 'FM0.0000'), ' | ' ORDER BY lambda)
                 FROM (SELECT lambda, avg(utility) AS u FROM rlw_run r WHERE r.ord = ro.ord GROUP BY lambda) q))
  FROM rlw_router ro ORDER BY ro.ord;
SELECT format('| *best single model* | %s |',
              (SELECT string_agg(to_char(b, 'FM0.0000'), ' | ' ORDER BY lambda)
                 FROM (SELECT lambda, avg(best) AS b FROM rlw_ref GROUP BY lambda) q));
SELECT '';
SELECT 'Budget 0.25 per prompt (25% of GPT-4''s mean cost), the same evaluation prompts; warm 1,000 = the first 1,000 prompts of the seed''s warm pool with their costs (no spend). Per seed: mean cost of the routed prompts / budget, and mean reward / GPT-4''s on the same prompts.';
SELECT '';
SELECT '| router | cost / budget, per seed | mean | quality / GPT-4''s, per seed | mean |';
SELECT '|---|---|---:|---|---:|';
SELECT format('| %s | %s | %s | %s | %s |', ro.label,
              (SELECT string_agg(to_char(cost / 0.25, 'FM0.0000'), ', ' ORDER BY seed) FROM rlb_run r WHERE r.ord = ro.ord),
              (SELECT to_char(avg(cost / 0.25), 'FM0.0000') FROM rlb_run r WHERE r.ord = ro.ord),
              (SELECT string_agg(to_char(reward / f.gpt4, 'FM0.000'), ', ' ORDER BY seed)
                 FROM rlb_run r JOIN rl_best f USING (seed) WHERE r.ord = ro.ord),
              (SELECT to_char(avg(reward / f.gpt4), 'FM0.000') FROM rlb_run r JOIN rl_best f USING (seed) WHERE r.ord = ro.ord))
  FROM rlb_router ro ORDER BY ro.ord;
SELECT '';
SELECT 'Budget 0.25 per prompt as feedback arrives: a reward visible `delay` rounds after its decision, a seeded share `feedback` of the rounds rewarded; lin_ucb defaults. Mean cost of the routed prompts / budget (the largest over the seeds in brackets) and quality / GPT-4''s (mean; seed spread max − min in brackets).';
SELECT '';
SELECT '| delay | feedback | cold: cost / budget | cold: quality | warm 1,000: cost / budget | warm 1,000: quality |';
SELECT '|---:|---:|---:|---:|---:|---:|';
SELECT format('| %s | %s%% | %s (%s) | %s (%s) | %s (%s) | %s (%s) |', delay, round(feedback * 100),
              to_char(avg(c) FILTER (WHERE k = 0), 'FM0.0000'), to_char(max(c) FILTER (WHERE k = 0), 'FM0.0000'),
              to_char(avg(q) FILTER (WHERE k = 0), 'FM0.000'),
              to_char(max(q) FILTER (WHERE k = 0) - min(q) FILTER (WHERE k = 0), 'FM0.000'),
              to_char(avg(c) FILTER (WHERE k > 0), 'FM0.0000'), to_char(max(c) FILTER (WHERE k > 0), 'FM0.0000'),
              to_char(avg(q) FILTER (WHERE k > 0), 'FM0.000'),
              to_char(max(q) FILTER (WHERE k > 0) - min(q) FILTER (WHERE k > 0), 'FM0.000'))
  FROM (SELECT r.k, r.delay, r.feedback, r.cost / 0.25 AS c, r.reward / f.gpt4 AS q
          FROM rlf_run r JOIN rl_best f USING (seed)) t
 GROUP BY delay, feedback ORDER BY delay, feedback DESC;
\o
