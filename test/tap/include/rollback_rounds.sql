-- Rounds A and B of test/tap/rollback.sql for the selector named by the psql
-- variable :sel (included once per policy with \ir).
SELECT lives_ok(format($q$
  INSERT INTO model_select.rewards(selector, arm, context, reward)
  SELECT %L, 'a' || (round %% 3 + 1), context, reward[round %% 3 + 1]
    FROM model_select.synthetic_clusters(45, 8, 3, NULL, 32) ORDER BY round$q$, :'sel'),
  :'sel' || ': 45 rewards on a1, a2, a3');
-- rewards reach arm_state through checkpoints: take one after each insert
SELECT model_select.checkpoint(:'sel');
SELECT pg_temp.record_state('before', :'sel');
SELECT pg_temp.record_scores('before', :'sel');

-- round A
SAVEPOINT round_a;
SELECT lives_ok(format($q$INSERT INTO model_select.rewards(selector, arm, context, reward)
                          SELECT %L, 'a1', context, reward FROM rwd WHERE k = 'R1'$q$, :'sel'),
                :'sel' || ': round A: reward R1 for a1 inside a savepoint');
SELECT model_select.checkpoint(:'sel');
SELECT pg_temp.record_state('in_a', :'sel');
SELECT pg_temp.record_scores('in_a', :'sel');
SELECT ok((SELECT a.n = b.n + 1 AND a.version = b.version + 1 AND a.md5 <> b.md5
             FROM rec_state a, rec_state b
            WHERE a.tag = 'in_a' AND b.tag = 'before' AND a.selector = :'sel' AND b.selector = :'sel'),
          :'sel' || ': round A: inside the savepoint a1 has n + 1, version + 1 and a new state');
SELECT ok((SELECT count(*) FILTER (WHERE a.n = b.n + 1) = 5 AND count(*) FILTER (WHERE a.mean <> b.mean) > 0
             FROM rec_scores a JOIN rec_scores b USING (selector, probe, arm)
            WHERE a.tag = 'in_a' AND b.tag = 'before' AND a.selector = :'sel' AND a.arm = 'a1'),
          :'sel' || ': round A: inside the savepoint scores() of a1 show n + 1 and a new mean');
ROLLBACK TO SAVEPOINT round_a;
SELECT pg_temp.record_state('after_a', :'sel');
SELECT pg_temp.record_scores('after_a', :'sel');
SELECT is(pg_temp.state_of('after_a', :'sel'), pg_temp.state_of('before', :'sel'),
          :'sel' || ': round A: after ROLLBACK TO SAVEPOINT arm_state (version, n, md5(state)) is as before');
SELECT results_eq(pg_temp.scores_of('after_a', :'sel'), pg_temp.scores_of('before', :'sel'),
                  :'sel' || ': round A: after ROLLBACK TO SAVEPOINT scores() are exactly as before');
RELEASE SAVEPOINT round_a;

-- round B
SAVEPOINT round_b;
SELECT lives_ok(format($q$INSERT INTO model_select.rewards(selector, arm, context, reward)
                          SELECT %L, 'a1', context, reward FROM rwd WHERE k = 'R1'$q$, :'sel'),
                :'sel' || ': round B: reward R1 for a1 inside a savepoint');
SELECT model_select.checkpoint(:'sel');
SELECT pg_temp.record_state('in_b', :'sel');
SELECT pg_temp.record_scores('in_b', :'sel');   -- caches a1 at version v + 1
-- the temp tables roll back too: carry the records over in psql variables
SELECT (SELECT json_agg(r) FROM rec_state r WHERE tag = 'in_b' AND selector = :'sel') AS in_b_state,
       (SELECT json_agg(r) FROM rec_scores r WHERE tag = 'in_b' AND selector = :'sel') AS in_b_scores \gset
ROLLBACK TO SAVEPOINT round_b;
RELEASE SAVEPOINT round_b;
INSERT INTO rec_state SELECT * FROM json_populate_recordset(NULL::rec_state, :'in_b_state');
INSERT INTO rec_scores SELECT * FROM json_populate_recordset(NULL::rec_scores, :'in_b_scores');
-- no scores() here: the cache must still hold the rolled-back model of a1
SELECT pg_temp.record_state('after_b', :'sel');
SELECT is(pg_temp.state_of('after_b', :'sel'), pg_temp.state_of('before', :'sel'),
          :'sel' || ': round B: after ROLLBACK TO SAVEPOINT arm_state is as before');
SELECT lives_ok(format($q$INSERT INTO model_select.rewards(selector, arm, context, reward)
                          SELECT %L, 'a1', context, reward FROM rwd WHERE k = 'R2'$q$, :'sel'),
                :'sel' || ': round B: a different reward R2 for a1 after the rollback');
SELECT model_select.checkpoint(:'sel');
SELECT pg_temp.record_state('new', :'sel');
SELECT is((SELECT version FROM rec_state WHERE tag = 'new' AND selector = :'sel'),
          (SELECT version FROM rec_state WHERE tag = 'in_b' AND selector = :'sel'),
          :'sel' || ': round B: R2 reuses the version number of the rolled-back R1');
SELECT pg_temp.record_cache('new', :'sel');
SELECT pg_temp.record_scores('new', :'sel');
SELECT pg_temp.record_cache('new_scored', :'sel');
SELECT is((SELECT decodes FROM rec_cache WHERE tag = 'new_scored' AND selector = :'sel')
          - (SELECT decodes FROM rec_cache WHERE tag = 'new' AND selector = :'sel'), 1::bigint,
          :'sel' || ': round B: scoring after R2 decodes a1 again (exactly one decode)');
SELECT is(model_select.rebuild_state(:'sel'), 46::bigint, :'sel' || ': rebuild_state applies the 46 rewards in the log');
SELECT pg_temp.record_scores('rebuilt', :'sel');
SELECT pg_temp.scores_close('new', 'rebuilt', :'sel',
                            :'sel' || ': round B: scores() after R2 equal those after rebuild_state (relative 1e-9)');
-- R1 and R2 lead to clearly different models, so a stale model would be caught
SELECT ok((SELECT max(abs(a.mean - b.mean)) > 1e-3
             FROM rec_scores a JOIN rec_scores b USING (selector, probe, arm)
            WHERE a.tag = 'in_b' AND b.tag = 'rebuilt' AND a.selector = :'sel' AND a.arm = 'a1'),
          :'sel' || ': round B: the model with R1 differs from the one with R2 (the check above can fail)');
