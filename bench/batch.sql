-- route_batch() at the W1 shape (make bench-perf, via bench/batch.sh): 100,000
-- rows of d = 384 routed over 5 arms by rff_ucb (128 features), lin_ucb and
-- pak_ucb (500 rewards per arm), row by row with select_model() and in one
-- route_batch() call, next to the bare BLAS-3 bound that bench/blas_bound.c
-- measured just before on the same shapes and block size (:bound_rff, ...).
\set ON_ERROR_STOP 1
\pset footer off
CREATE EXTENSION IF NOT EXISTS model_select;
SET client_min_messages = warning;

CREATE TEMP TABLE prompts AS
SELECT round AS id, context::real[] AS embedding, reward
  FROM model_select.synthetic_clusters(100000, 384, 5, NULL, 1, 0.1);
CREATE TEMP TABLE bound (policy text, rows_per_s float8);
INSERT INTO bound VALUES ('rff_ucb', :bound_rff), ('lin_ucb', :bound_lin), ('pak_ucb', :bound_pak);

\o /dev/null
SELECT FROM model_select.create_selector('w_rff', 384, ARRAY['a1','a2','a3','a4','a5'], 'rff_ucb', 'rbf', '{"features": 128}', 1);
SELECT FROM model_select.create_selector('w_lin', 384, ARRAY['a1','a2','a3','a4','a5'], 'lin_ucb', NULL, '{}', 1);
SELECT FROM model_select.create_selector('w_pak', 384, ARRAY['a1','a2','a3','a4','a5'], 'pak_ucb', 'rbf', '{}', 1);
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT s, 'a' || (1 + id % 5), embedding, reward[1 + id % 5]
  FROM prompts, unnest(ARRAY['w_rff', 'w_lin', 'w_pak']) s WHERE id <= 2500;
SELECT sum(model_select.checkpoint(s)) AS rewards_checkpointed FROM unnest(ARRAY['w_rff', 'w_lin', 'w_pak']) s;

\o
\ir timing.sql
CREATE TEMP TABLE results (policy text, row_ms float8, batch_ms float8);
-- warm the caches (states decoded, features drawn) before timing
\o /dev/null
SELECT count(*) FROM unnest(ARRAY['w_rff', 'w_lin', 'w_pak']) s,
       LATERAL model_select.route_batch(s, 'SELECT id, embedding FROM prompts WHERE id <= 10') r;
INSERT INTO results
SELECT p, pg_temp.ms(format('SELECT count(model_select.select_model(%L, embedding)) FROM prompts', 'w_' || left(p, 3))),
          pg_temp.ms(format('SELECT count(*) FROM model_select.route_batch(%L, %L)', 'w_' || left(p, 3),
                            'SELECT id, embedding FROM prompts'))
  FROM unnest(ARRAY['rff_ucb', 'lin_ucb', 'pak_ucb']) p;
\o

\echo == routing 100,000 rows (d = 384, 5 arms; pak_ucb 500 rewards per arm), rows/s
SELECT r.policy,
       round(100000 / r.row_ms * 1000) AS select_model_rows_s,
       round(100000 / r.batch_ms * 1000) AS route_batch_rows_s,
       round((r.row_ms / r.batch_ms)::numeric, 2) AS speedup,
       round(b.rows_per_s) AS blas_bound_rows_s,
       round((100000 / r.batch_ms * 1000 / b.rows_per_s)::numeric, 2) AS of_bound
  FROM results r JOIN bound b USING (policy) ORDER BY r.policy DESC;

\echo == rff_ucb at the W1 shape: route_batch() against select_model() row by row of model_select 0.1.0 (measured just before in its own database; 0 = not measured)
SELECT :v010_rff AS v010_select_model_rows_s,
       round(100000 / r.batch_ms * 1000) AS route_batch_rows_s,
       CASE WHEN :v010_rff > 0 THEN round((100000 / r.batch_ms * 1000 / :v010_rff)::numeric, 2) END AS speedup_over_v010,
       CASE WHEN :v010_rff > 0 THEN round((b.rows_per_s / :v010_rff)::numeric, 2) END AS blas_bound_over_v010
  FROM results r JOIN bound b USING (policy) WHERE r.policy = 'rff_ucb';
