-- bench/quality_routerdc7.sql (run by bench/quality.sh; psql variables: data = the
-- data directory, seeds = '{1,2,3}'): one online replay() pass over RouterDC's
-- routerdc7_dev.csv, cold and warm-started from a full-information outcome table.
--
-- Held-out protocol, per seed s: the 9,271 prompts are ranked by md5(id:s); the
-- first 2,000 form the warm pool (every model's score is known: an offline
-- benchmark table), the other 7,271 are the evaluation stream.  A warm start
-- with k prompts learns the first k of the pool for every arm, then routes the
-- evaluation stream online, shuffled by seed s (bandit feedback: only the chosen
-- model's score is learned).  Every router of a seed sees the same evaluation
-- prompts in the same order, and the references (best single model, best model
-- per task family, per-prompt oracle) are computed on exactly those prompts.
\set ON_ERROR_STOP 1
\ir quality_dc.sql
\echo '   routerdc7:' `date +%T` 'data loaded;' :seeds 'seeds x 37 replay() passes of 7,271 rounds follow (pak_ucb: 0.5-3 minutes each)'

-- the routers: label, policy, settings, warm sizes
CREATE TABLE dc_router(ord int, label text, policy text, settings jsonb, ks int[]);
INSERT INTO dc_router VALUES
    (1, 'rff_ucb, default settings', 'rff_ucb', '{}', '{0,100,500,1000,2000}'),
    (2, 'lin_ucb, default settings (the default router: alpha 20, intercept 10, eta 2, noise_prior 5, codebook 8)', 'lin_ucb', '{}',
        '{0,100,500,1000,2000}'),
    (3, 'lin_ucb, tuned: alpha 10, intercept 10, eta 1', 'lin_ucb',
        '{"alpha": 10, "intercept": 10, "eta": 1, "noise_prior": 0, "codebook": 0}', '{0,100,500,1000,2000}'),
    (4, 'rff_ucb, tuned: alpha 10, intercept 10, eta 1', 'rff_ucb',
        '{"alpha": 10, "intercept": 10, "eta": 1}', '{0}'),
    (5, 'lin_ucb, warm profile: alpha 30, intercept 10, eta 0.5', 'lin_ucb',
        '{"alpha": 30, "intercept": 10, "eta": 0.5, "noise_prior": 0, "codebook": 0}', '{0,100,500,1000,2000}'),
    (6, 'pak_ucb, alpha 1, intercept 1, eta 0.5 (its defaults, and the default policy, before 0.3.0)', 'pak_ucb',
        '{"alpha": 1, "intercept": 1, "eta": 0.5}', '{0,1000}'),
    (7, 'lin_ucb, alpha 20, intercept 10, eta 1.5 (one profile, measured)', 'lin_ucb',
        '{"alpha": 20, "intercept": 10, "eta": 1.5, "noise_prior": 0, "codebook": 0}', '{0,1000}'),
    (8, 'lin_ucb, alpha 40, intercept 10, eta 1', 'lin_ucb',
        '{"alpha": 40, "intercept": 10, "eta": 1, "noise_prior": 0, "codebook": 0}', '{0,1000}'),
    (9, 'lin_ucb, the same with share 1 (a prior mean shared across arms)', 'lin_ucb',
        '{"alpha": 40, "intercept": 10, "eta": 1, "share": 1, "noise_prior": 0, "codebook": 0}', '{0,1000}'),
    (10, 'lin_ucb, 0.2.0''s defaults: alpha 1, intercept 1, eta 0.5', 'lin_ucb',
        '{"alpha": 1, "intercept": 1, "eta": 0.5, "noise_prior": 0, "codebook": 0}', '{0,1000}'),
    (11, 'lin_ucb, the defaults before noise_prior: alpha 20, intercept 10, eta 1', 'lin_ucb',
        '{"eta": 1, "noise_prior": 0, "codebook": 0}', '{0,1000}'),
    (12, 'lin_ucb, the defaults without the codebook (codebook 0)', 'lin_ucb',
        '{"codebook": 0}', '{1000,2000}'),
    (13, 'pak_ucb, default settings (lin_ucb''s scale: alpha 20, intercept 10, eta 2)', 'pak_ucb', '{}', '{0,1000}');

CREATE TABLE dc_run(ord int, seed int, k int, reward float8, secs float8);
DO $$
DECLARE
    r record;
    t0 timestamptz;
    v float8;
BEGIN
    FOR r IN SELECT ro.*, s.seed, k FROM dc_router ro, unnest(ro.ks) k,
                    (SELECT DISTINCT seed FROM dc_split) s ORDER BY s.seed, ro.ord, k LOOP
        t0 := clock_timestamp();
        SELECT x.cum_reward / x.round INTO v
          FROM model_select.replay(dc_eval(r.seed), r.policy, NULL, r.settings, r.seed, 0, NULL, 1, NULL, true,
                                   dc_warm(r.seed, r.k)) x
         ORDER BY x.round DESC LIMIT 1;
        INSERT INTO dc_run VALUES (r.ord, r.seed, r.k, v, extract(epoch FROM clock_timestamp() - t0));
        RAISE NOTICE '% seed % warm % -> % (% s)', r.label, r.seed, r.k, round(v::numeric, 4),
            round(extract(epoch FROM clock_timestamp() - t0)::numeric, 1);
    END LOOP;
END $$;

-- references on the evaluation prompts of each seed
CREATE TABLE dc_ref AS
WITH ev AS (SELECT x.seed, d.* FROM dc d JOIN dc_split x USING (id) WHERE x.rk > 2000),
     per_family AS (SELECT seed, category, a, avg(rewards[a]) AS m, count(*) AS n
                      FROM ev, generate_series(1, 7) a GROUP BY 1, 2, 3),
     family_best AS (SELECT seed, category, max(m) AS m, max(n) AS n FROM per_family GROUP BY 1, 2)
SELECT s.seed,
       (SELECT best_single FROM dc_best b WHERE b.seed = s.seed) AS best_single,
       (SELECT sum(m * n) / sum(n) FROM family_best f WHERE f.seed = s.seed) AS family_best,
       (SELECT avg((SELECT max(r) FROM unnest(rewards) r)) FROM ev WHERE ev.seed = s.seed) AS oracle
  FROM (SELECT DISTINCT seed FROM dc_split) s;

\pset format unaligned
\pset tuples_only on
\o :out
SELECT format('Mean score per prompt of one shuffled online pass over the 7,271 evaluation prompts (%s seeds: mean ± standard deviation; each seed is its own split and order). Columns: size of the warm start (prompts of the seed''s warm pool, disjoint from the evaluation prompts, learned for every model before going online; 0 = cold start).', (SELECT count(*) FROM dc_ref));
SELECT '';
SELECT '| router | cold | warm 100 | warm 500 | warm 1000 | warm 2000 |';
SELECT '|---|---:|---:|---:|---:|---:|';
SELECT format('| %s | %s |', ro.label,
              (SELECT string_agg(coalesce((SELECT to_char(avg(reward), 'FM0.0000') || ' ± ' || to_char(stddev_samp(reward), 'FM0.0000')
                                             FROM dc_run r WHERE r.ord = ro.ord AND r.k = w.size), '–'), ' | ' ORDER BY w.size)
                 FROM unnest(ARRAY[0, 100, 500, 1000, 2000]) w(size)))
  FROM dc_router ro ORDER BY ro.ord;
SELECT format('| *best single model (dolphin-2.9-llama3-8b)* | *%s* | | | | |', to_char(avg(best_single), 'FM0.0000')) FROM dc_ref;
SELECT format('| *best single model + 0.005 / + 0.025 (the bars of issue 30: cold / warm 1000)* | *%s* | | | *%s* | |',
              to_char(avg(best_single) + 0.005, 'FM0.0000'), to_char(avg(best_single) + 0.025, 'FM0.0000')) FROM dc_ref;
SELECT format('| *best model per task family (reference)* | *%s* | | | | |', to_char(avg(family_best), 'FM0.0000')) FROM dc_ref;
SELECT format('| *per-prompt oracle* | *%s* | | | | |', to_char(avg(oracle), 'FM0.0000')) FROM dc_ref;
SELECT '';
SELECT format('Per seed, warm profile with 1000 / 2000 warm prompts: %s; best single model: %s.',
              (SELECT string_agg(format('seed %s: %s / %s', seed, to_char(a, 'FM0.0000'), to_char(b, 'FM0.0000')),
                                 ', ' ORDER BY seed)
                 FROM (SELECT seed, max(reward) FILTER (WHERE k = 1000) AS a, max(reward) FILTER (WHERE k = 2000) AS b
                         FROM dc_run WHERE ord = 5 GROUP BY seed) q),
              (SELECT string_agg(to_char(best_single, 'FM0.0000'), ', ' ORDER BY seed) FROM dc_ref));
SELECT '';
SELECT 'Per seed, score minus the seed''s best single model, cold / warm 1000:';
SELECT '';
SELECT format('- %s: %s', ro.label,
              (SELECT string_agg(format('seed %s %s / %s', seed, to_char(c, 'FMS0.0000'), coalesce(to_char(w, 'FMS0.0000'), '–')),
                                 ', ' ORDER BY seed)
                 FROM (SELECT f.seed, max(r.reward) FILTER (WHERE r.k = 0) - f.best_single AS c,
                              max(r.reward) FILTER (WHERE r.k = 1000) - f.best_single AS w
                         FROM dc_ref f JOIN dc_run r ON r.seed = f.seed AND r.ord = ro.ord GROUP BY f.seed, f.best_single) q))
  FROM dc_router ro ORDER BY ro.ord;
SELECT format('replay() time per pass: %s–%s s.', to_char(min(secs), 'FM990.0'), to_char(max(secs), 'FM990.0')) FROM dc_run;
\o
