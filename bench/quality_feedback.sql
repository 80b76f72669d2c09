-- bench/quality_feedback.sql (run by bench/quality.sh; psql variables: data = the
-- data directory, seeds = '{1,2,3,4,5}'): RouterDC's routerdc7_dev.csv as feedback
-- really arrives.  The default router (lin_ucb, default settings) routes the
-- held-out evaluation stream of bench/quality_routerdc7.sql, cold and
-- warm-started from 1,000 pool prompts, with replay()'s delay (a reward becomes
-- visible 0, 100 or 1,000 rounds after its decision) and feedback (100%, 20% or
-- 5% of the rounds rewarded, seeded): mean score per prompt minus the seed's
-- best single model on the same prompts; each also with count_pending (the
-- awaited rewards narrow the widths, docs/settings.md#awaited-rewards-count_pending).
\set ON_ERROR_STOP 1
\ir quality_dc.sql
\echo '   feedback:' `date +%T` 'data loaded;' :seeds 'seeds x 36 replay() passes of 7,271 rounds follow (a few seconds each)'

CREATE TABLE fb_run(seed int, k int, delay int, feedback float8, cp boolean, reward float8, learned bigint);
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT f.seed, k, d, fb, cp FROM dc_best f, unnest(ARRAY[0, 1000]) k, unnest(ARRAY[0, 100, 1000]) d,
                    unnest(ARRAY[1, 0.2, 0.05]::float8[]) fb, unnest(ARRAY[false, true]) cp ORDER BY 1, 2, 3, 4 DESC, 5 LOOP
        INSERT INTO fb_run
        SELECT r.seed, r.k, r.d, r.fb, r.cp, x.cum_reward / x.round, x.learned
          FROM model_select.replay(dc_eval(r.seed), 'lin_ucb', NULL, jsonb_build_object('count_pending', r.cp),
                                   r.seed, 0, NULL, 1, NULL, true,
                                   dc_warm(r.seed, r.k), r.d, r.fb) x
         ORDER BY x.round DESC LIMIT 1;
    END LOOP;
    RAISE NOTICE 'feedback: % passes done', (SELECT count(*) FROM fb_run);
END $$;

\pset format unaligned
\pset tuples_only on
\o :out
SELECT format('The default router (lin_ucb, default settings) on RouterDC''s 7,271 evaluation prompts of each seed, as feedback arrives: a reward visible `delay` rounds after its decision, only a seeded share `feedback` of the rounds rewarded. Mean score per prompt minus the seed''s best single model on the same prompts (%s seeds: mean, and the worst seed in brackets), at the defaults and with `count_pending` (the rewards still awaited narrow the widths; docs/settings.md); rewards learned per pass in the last column.', (SELECT count(*) FROM dc_best));
SELECT '';
SELECT '| delay | feedback | cold | cold, count_pending | warm 1000 | warm 1000, count_pending | rewards learned (cold) |';
SELECT '|---:|---:|---:|---:|---:|---:|---:|';
SELECT format('| %s | %s%% | %s (%s) | %s (%s) | %s (%s) | %s (%s) | %s |', delay, round(feedback * 100),
              to_char(avg(g) FILTER (WHERE k = 0 AND NOT cp), 'FMS0.0000'), to_char(min(g) FILTER (WHERE k = 0 AND NOT cp), 'FMS0.0000'),
              to_char(avg(g) FILTER (WHERE k = 0 AND cp), 'FMS0.0000'), to_char(min(g) FILTER (WHERE k = 0 AND cp), 'FMS0.0000'),
              to_char(avg(g) FILTER (WHERE k = 1000 AND NOT cp), 'FMS0.0000'), to_char(min(g) FILTER (WHERE k = 1000 AND NOT cp), 'FMS0.0000'),
              to_char(avg(g) FILTER (WHERE k = 1000 AND cp), 'FMS0.0000'), to_char(min(g) FILTER (WHERE k = 1000 AND cp), 'FMS0.0000'),
              round(avg(learned) FILTER (WHERE k = 0 AND NOT cp)))
  FROM (SELECT r.*, r.reward - f.best_single AS g FROM fb_run r JOIN dc_best f USING (seed)) q
 GROUP BY delay, feedback ORDER BY delay, feedback DESC;
\o
