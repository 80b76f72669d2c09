-- bench/quality_drift.sql (run by bench/quality.sh; psql variables: seeds =
-- '{1,2,3,4,5}'): recovery after the best arms swap (issue 42).  16 dimensions,
-- two Gaussian clusters drawn 50/50 with centres ±(0.35, 0.1, 0.35, 0.1, …) and
-- noise σ 0.15 per coordinate; arm a pays Bernoulli(0.8) on cluster 0 and
-- Bernoulli(0.2) on cluster 1, b the reverse, c Bernoulli(0.5) everywhere; a and
-- b swap roles at round 1,000.  Each policy with its default settings plus a
-- window of 300 on the selector's clock; the optimal-pick ratio (by the arms'
-- expected rewards) over rounds 1,001-1,500 and per 100 rounds, and the share of
-- those rounds given to the constant arm c.  Also on clusters that overlap:
-- the centres on the first two coordinates only, ±(0.35, 0.1, 0, …, 0).  Besides
-- the defaults (since 0.3.0 pak_ucb's are lin_ucb's scale: alpha 20, intercept
-- 10, eta 2), pak_ucb with its learnt noise and at the settings table's scale
-- (alpha 1, intercept 1, eta 0.5: its defaults before 0.3.0).  And, as the
-- ceiling of forgetting, each policy restarted exactly at the swap
-- (restart_every 1,000 on the selector's clock instead of the window): what a
-- perfect change detector would do.  And each policy with the change
-- detector ("detect": true, docs/changing-worlds.md#a-change-detector).
\set ON_ERROR_STOP 1
\echo '   drift:' `date +%T` :seeds 'seeds x 8 policies x 2 streams x 1,500 rounds'

\ir ../test/tap/include/drift_stream.sql
CREATE TABLE drift AS SELECT s AS seed, c AS centred, d.* FROM unnest(:'seeds'::int[]) s, unnest(ARRAY[16, 2]) c,
                                                            pg_temp.drift_stream(s, c) d;

-- each policy's defaults; pak_ucb also with its learnt noise (noise_prior 5, off by
-- default) and at the table's scale (its defaults before 0.3.0); all with the
-- window, but the restarts at the swap
CREATE TABLE drift_policy (ord int, label text, policy text, settings jsonb);
INSERT INTO drift_policy VALUES
    (1, 'lin_ucb', 'lin_ucb', '{}'), (2, 'pak_ucb', 'pak_ucb', '{}'),
    (3, 'pak_ucb, noise_prior 5', 'pak_ucb', '{"noise_prior": 5}'),
    (4, 'pak_ucb, alpha 1, intercept 1, eta 0.5 (its defaults before 0.3.0)', 'pak_ucb',
        '{"alpha": 1, "intercept": 1, "eta": 0.5}');
INSERT INTO drift_policy VALUES
    (7, 'lin_ucb, detect (the change detector)', 'lin_ucb', '{"detect": true}'),
    (8, 'pak_ucb, detect (the change detector)', 'pak_ucb', '{"detect": true}');
UPDATE drift_policy SET settings = settings || '{"window": 300, "clock": "selector"}';
INSERT INTO drift_policy VALUES
    (5, 'lin_ucb, no window: restarted at the swap (restart_every 1,000)', 'lin_ucb',
        '{"restart_every": 1000, "clock": "selector"}'),
    (6, 'pak_ucb, no window: restarted at the swap (restart_every 1,000)', 'pak_ucb',
        '{"restart_every": 1000, "clock": "selector"}');

CREATE TABLE drift_run AS
SELECT p.label || CASE c WHEN 2 THEN ', centres on 2 coordinates' ELSE '' END AS policy, p.ord, c AS centred, s AS seed,
       r.round, r.opr_window, r.picks
  FROM unnest(:'seeds'::int[]) s, drift_policy p, unnest(ARRAY[16, 2]) c,
       model_select.replay(format('SELECT context, reward, NULL::real[], expected FROM drift WHERE seed = %s AND centred = %s ORDER BY round', s, c),
                           p.policy, settings => p.settings, seed => s,
                           checkpoint => 100, shuffle => false) r;

\pset format unaligned
\pset tuples_only on
\o :out
SELECT format('The best arms swap at round 1,000; default settings plus a window of 300 on the selector''s clock (the rows "restarted at the swap": no window, every arm restarted at round 1,000, the ceiling of forgetting); %s seeds (%s); the rows "centres on 2 coordinates" draw the clusters around ±(0.35, 0.1, 0, …, 0), which overlap after normalisation. Optimal-pick ratio over rounds 1,001-1,500 (mean, worst seed), per 100 rounds (mean over seeds), the share of rounds 1,001-1,500 given to the constant arm c, and the optimal-pick ratio over rounds 501-1,000, before the swap (what the forgetting costs in a steady world).',
              cardinality(:'seeds'::int[]), array_to_string(:'seeds'::int[], ', '));
SELECT '';
SELECT '| policy | 1,001-1,500 | worst seed | 1,001-1,100 | -1,200 | -1,300 | -1,400 | -1,500 | c | 501-1,000 |';
SELECT '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|';
WITH per_seed AS (
    SELECT policy, ord, centred, seed, avg(opr_window) FILTER (WHERE round > 1000) AS opr,
           avg(opr_window) FILTER (WHERE round > 500 AND round <= 1000) AS opr_before,
           ((max(picks[3]) FILTER (WHERE round = 1500)) - (max(picks[3]) FILTER (WHERE round = 1000))) / 500.0 AS c
      FROM drift_run GROUP BY 1, 2, 3, 4)
SELECT format('| %s | %s | %s | %s | %s | %s |', p.policy, to_char(avg(p.opr), 'FM0.000'), to_char(min(p.opr), 'FM0.000'),
              (SELECT string_agg(to_char(avg_w, 'FM0.00'), ' | ' ORDER BY round)
                 FROM (SELECT round, avg(opr_window) AS avg_w FROM drift_run d
                        WHERE d.policy = p.policy AND round > 1000 GROUP BY round) w),
              to_char(avg(p.c), 'FM0.00'), to_char(avg(p.opr_before), 'FM0.000'))
  FROM per_seed p GROUP BY p.policy, p.ord, p.centred ORDER BY p.centred DESC, p.ord;
\o
