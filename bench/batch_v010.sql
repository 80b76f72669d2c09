-- The W1 shape on model_select 0.1.0 (built from git by bench/batch.sh and
-- installed into a database of its own): rff_ucb, 128 features, d = 384, 5
-- arms, 500 rewards per arm, select_model() row by row over 100,000 rows —
-- the rate issue 12 set its "2.5x" target against, measured in the same run
-- as route_batch() so that the two rates are comparable.  Prints rows/s.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
\o /dev/null
CREATE TEMP TABLE prompts AS
SELECT round AS id, context::real[] AS embedding, reward
  FROM model_select.synthetic_clusters(100000, 384, 5, NULL, 1, 0.1);
SELECT FROM model_select.create_selector('w_rff', 384, ARRAY['a1','a2','a3','a4','a5'], 'rff_ucb', 'rbf', '{"features": 128}', 1);
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 'w_rff', 'a' || (1 + id % 5), embedding, reward[1 + id % 5] FROM prompts WHERE id <= 2500;
-- warm the caches (states decoded, features drawn) before timing
SELECT count(model_select.select_model('w_rff', embedding)) FROM prompts WHERE id <= 10;
\ir timing.sql
\o
SELECT round(100000 / pg_temp.ms('SELECT count(model_select.select_model(''w_rff'', embedding)) FROM prompts') * 1000);
