-- synthetic_clusters(): seeded, documented environments for tests, demos and
-- benchmarks, including the changing worlds of Hu et al. (PAK-UCB) Setup 3 and
-- Iwazaki & Takeno (R-PERP) §4.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(11);

SELECT is((SELECT md5(string_agg(format('%s %s %s %s', round, cluster, context, reward), ';' ORDER BY round))
             FROM model_select.synthetic_clusters(200, 8, 3, NULL, 42)),
          (SELECT md5(string_agg(format('%s %s %s %s', round, cluster, context, reward), ';' ORDER BY round))
             FROM model_select.synthetic_clusters(200, 8, 3, NULL, 42)),
          'the same seed gives the same stream');
SELECT isnt((SELECT md5(string_agg(context::text, ';' ORDER BY round)) FROM model_select.synthetic_clusters(200, 8, 3, NULL, 42)),
            (SELECT md5(string_agg(context::text, ';' ORDER BY round)) FROM model_select.synthetic_clusters(200, 8, 3, NULL, 43)),
            'another seed gives another stream');
SELECT ok((SELECT bool_and(abs(sqrt((SELECT sum(v * v) FROM unnest(context) v)) - 1) < 1e-12)
             FROM model_select.synthetic_clusters(100, 16, 2)),
          'contexts are unit vectors');
SELECT ok((SELECT bool_and(expected[cluster] = 0.75 - 0.02 * (cluster - 1)
                           AND best_arm = cluster AND reward[1] BETWEEN 0 AND 1)
             FROM model_select.synthetic_clusters(300, 8, 3)),
          'arm c is the expert of cluster c: expected 0.5 + 0.25 - 0.02(c-1), and the best arm');
SELECT cmp_ok((SELECT abs(avg(reward[1] - expected[1])) FROM model_select.synthetic_clusters(4000, 8, 2, NULL, 1, 0.1)),
              '<', 0.01::float8, 'observed rewards are centred on the expected ones');
SELECT cmp_ok((SELECT avg(s) FROM (
                 SELECT (SELECT sum(a * b) FROM unnest(p.context, q.context) AS u(a, b)) AS s
                   FROM model_select.synthetic_clusters(200, 16, 2) p
                   JOIN model_select.synthetic_clusters(200, 16, 2) q
                     ON p.round < q.round AND p.cluster = q.cluster) same),
              '>', (SELECT avg(s) + 0.2 FROM (
                 SELECT (SELECT sum(a * b) FROM unnest(p.context, q.context) AS u(a, b)) AS s
                   FROM model_select.synthetic_clusters(200, 16, 2) p
                   JOIN model_select.synthetic_clusters(200, 16, 2) q
                     ON p.round < q.round AND p.cluster <> q.cluster) other),
              'prompts of one cluster are more alike than prompts of different clusters');

-- changing worlds
SELECT ok((SELECT bool_and((reward[3] IS NULL) = (round < 2500) AND (expected[3] IS NULL) = (round < 2500))
             FROM model_select.synthetic_clusters(3000, 8, 3, NULL, 1, new_arm_at => 2500)),
          'new_arm_at: the last arm has no reward before round 2,500 and one from then on');
SELECT ok((SELECT bool_and(best_arm <> 3) FROM model_select.synthetic_clusters(2499, 8, 3, NULL, 1, new_arm_at => 2500)),
          'new_arm_at: a missing arm is never the best arm');
SELECT ok((SELECT bool_and(best_arm = CASE WHEN (round - 1) / 1000 % 2 = 0 THEN cluster ELSE 3 - cluster END)
             FROM model_select.synthetic_clusters(3000, 8, 2, 2, 1, switch_every => 1000)),
          'switch_every: the expert of each cluster changes at rounds 1,001 and 2,001');
SELECT is((SELECT array_agg(n ORDER BY block) FROM (
              SELECT (round - 1) / 1000 AS block, count(DISTINCT cluster) AS n
                FROM model_select.synthetic_clusters(4000, 8, 2, 4, 1, new_cluster_every => 1000) GROUP BY 1) b),
          ARRAY[1, 2, 3, 4]::bigint[], 'new_cluster_every: one more prompt category every 1,000 rounds');
SELECT throws_ok($$SELECT * FROM model_select.synthetic_clusters(10, 8, 2, switch_every => 0)$$, '22023', NULL,
                 'a non-positive schedule is rejected');

SELECT * FROM finish();
ROLLBACK;
