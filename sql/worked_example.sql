CREATE EXTENSION model_select;
--
-- The README's worked example, step by step.  Floats are rounded to 6 places
-- so that last-digit libm/BLAS differences cannot change the output.
--
\set SHOW_CONTEXT never

-- 1. A selector: three models, 4-dimensional prompt embeddings (real
--    embeddings have hundreds of dimensions; 4 keeps the arrays readable),
--    at the settings table's scale (alpha 1, intercept 1, eta 0.5), where a
--    kernel learns from this example's few rewards.
SELECT model_select.create_selector('router', 4, ARRAY['gpt-4o', 'llama-3-8b', 'mixtral'], 'pak_ucb', NULL,
                                    '{"alpha": 1, "intercept": 1, "eta": 0.5}');
SELECT name, dim, policy, kernel, settings, seed FROM model_select.selectors;

-- 2. Nothing learned yet: every arm scores Infinity, so each gets tried.
SELECT * FROM model_select.scores('router', ARRAY[1, 0.25, 0, 0.25]::float8[]);

-- 3. Route a prompt: the decision is logged and gets an id ...
SELECT * FROM model_select.route('router', ARRAY[1, 0.25, 0, 0.25]::float8[]);
-- (every value of this context is exactly a real: it is stored as real[])
SELECT decision_id, arm_id, context, context_real, score FROM model_select.decisions;

-- ... and the application reports how well the chosen model did.
INSERT INTO model_select.rewards(decision_id, reward) VALUES (1, 0.9)
RETURNING reward_id, selector, arm, decision_id, context IS NULL AS context_once, reward;

-- 4. Outcomes known without a decision (e.g. from an offline evaluation)
--    name the selector, the arm and the context.  gpt-4o is good at code
--    (first two coordinates), llama-3-8b at chat (last two); mixtral is
--    middling at both.
INSERT INTO model_select.rewards(selector, arm, context, reward, cost) VALUES
  ('router', 'gpt-4o',     ARRAY[0.75, 0.5, 0, 0],      0.85, 0.0050),
  ('router', 'gpt-4o',     ARRAY[0, 0, 1, 0.25],        0.6,  0.0050),
  ('router', 'llama-3-8b', ARRAY[1, 0.5, 0, 0],         0.3,  0.0002),
  ('router', 'llama-3-8b', ARRAY[0, 0.25, 1, 0],        0.8,  0.0002),
  ('router', 'llama-3-8b', ARRAY[0, 0, 0.75, 0.5],      0.85, 0.0002),
  ('router', 'mixtral',    ARRAY[0.75, 0.25, 0, 0.25],  0.6,  0.0007),
  ('router', 'mixtral',    ARRAY[0, 0.25, 0.75, 0.25],  0.5,  0.0007);

-- 5. Route a whole table in one statement.  The embeddings are real[], which
--    is what pgvector's vector gives through its cast (embedding::real[]).
CREATE TABLE prompts (id int PRIMARY KEY, kind text, embedding real[]);
INSERT INTO prompts VALUES
  (1, 'code', '{1, 0.25, 0.25, 0}'),
  (2, 'chat', '{0, 0.25, 1, 0.25}'),
  (3, 'code', '{0.75, 0.5, 0, 0.25}'),
  (4, 'chat', '{0.25, 0, 1, 0.5}');
SELECT decodes AS decodes_before FROM model_select.cache_stats() \gset
SELECT p.id, p.kind, model_select.select_model('router', p.embedding) FROM prompts p ORDER BY p.id;
-- Each arm's state was decoded once for the whole statement, not once per row:
SELECT decodes - :decodes_before AS decodes FROM model_select.cache_stats();
-- and not at all the second time (nothing changed since):
SELECT decodes AS decodes_before FROM model_select.cache_stats() \gset
SELECT count(DISTINCT model_select.select_model('router', p.embedding)) FROM prompts p;
SELECT decodes - :decodes_before AS decodes FROM model_select.cache_stats();

-- 6. Why: the scores of a code prompt and of a chat prompt.
SELECT arm, active, n, round(mean::numeric, 6) AS mean, round(width::numeric, 6) AS width,
       round(ucb::numeric, 6) AS ucb
  FROM model_select.scores('router', ARRAY[1, 0.25, 0.25, 0]::float8[]);
SELECT arm, active, n, round(mean::numeric, 6) AS mean, round(width::numeric, 6) AS width,
       round(ucb::numeric, 6) AS ucb
  FROM model_select.scores('router', ARRAY[0, 0.25, 1, 0.25]::float8[]);

-- 7. Per-arm statistics.  Rewards are pending until a checkpoint folds
-- them into arm_state (automatic every model_select.checkpoint_threshold
-- rewards of an arm, or on demand); scores are the same either way.
SELECT selector, arm, ordinal, active, n, round(mean_reward::numeric, 6) AS mean_reward,
       round(mean_cost::numeric, 6) AS mean_cost, pending, version, state_bytes
  FROM model_select.arm_stats ORDER BY ordinal;
SELECT model_select.checkpoint('router');
SELECT arm, n, pending, version, state_bytes FROM model_select.arm_stats ORDER BY ordinal;

-- 8. real[] and float8[] contexts are the same thing to the extension.
SELECT r.arm, round(r.ucb::numeric, 6) AS ucb_real, round(d.ucb::numeric, 6) AS ucb_float8,
       r.ucb = d.ucb AS identical
  FROM model_select.scores('router', '{0.25, 0, 1, 0.5}'::real[]) r
  JOIN model_select.scores('router', '{0.25, 0, 1, 0.5}'::float8[]) d USING (arm);
-- Any array of numbers is a context: an untyped literal, numeric[] (what
-- psycopg2 sends for a list of floats), integer[] (4 times the same direction).
SELECT model_select.select_model('router', '{0.25, 0, 1, 0.5}') AS untyped,
       model_select.select_model('router', ARRAY[0.25, 0, 1, 0.5]) AS "numeric",
       model_select.select_model('router', ARRAY[1, 0, 4, 2]) AS "integer";

-- 9. Retire an arm: it keeps its state but is no longer routed to ...
SELECT model_select.retire_arm('router', 'llama-3-8b');
SELECT p.id, p.kind, model_select.select_model('router', p.embedding) FROM prompts p ORDER BY p.id;
SELECT arm, active, n FROM model_select.scores('router', ARRAY[0, 0.25, 1, 0.25]::float8[]);
-- ... and takes no rewards.
INSERT INTO model_select.rewards(selector, arm, context, reward)
VALUES ('router', 'llama-3-8b', ARRAY[0, 0.25, 1, 0], 0.8);
-- add_arm re-activates it with everything it had learned;
SELECT model_select.add_arm('router', 'llama-3-8b');
SELECT arm, active, n FROM model_select.scores('router', ARRAY[0, 0.25, 1, 0.25]::float8[]);
-- a new arm starts unexplored, so it is tried next.
SELECT model_select.add_arm('router', 'claude-3-haiku');
SELECT arm, n, round(ucb::numeric, 6) AS ucb
  FROM model_select.scores('router', ARRAY[0, 0.25, 1, 0.25]::float8[]);
SELECT decision_id, arm, round(score::numeric, 6) AS score
  FROM model_select.route('router', ARRAY[0, 0.25, 1, 0.25]::float8[]);
INSERT INTO model_select.rewards(decision_id, reward) VALUES (2, 0.7);

-- 10. Bad input is rejected with an error and nothing is written.
SELECT model_select.select_model('router', ARRAY[1, 0, 0]::float8[]);
INSERT INTO model_select.rewards(decision_id, reward) VALUES (2, 1.5);
SELECT model_select.create_selector('bad', 4, ARRAY['a'], 'pak_ucb', settings => '{"bandwith": 0.5}');
-- Every kind of bad input has its own SQLSTATE:
CREATE FUNCTION pg_temp.sqlstate_of(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE stmt;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;
SELECT what, pg_temp.sqlstate_of(stmt) AS sqlstate FROM (VALUES
  ('wrong dimension',      $$SELECT model_select.select_model('router', ARRAY[1, 0, 0]::float8[])$$),
  ('NULL element',         $$SELECT model_select.select_model('router', ARRAY[1, NULL, 0, 0]::float8[])$$),
  ('NaN element',          $$SELECT model_select.select_model('router', ARRAY[1, 'NaN', 0, 0]::float8[])$$),
  ('zero vector',          $$SELECT model_select.select_model('router', ARRAY[0, 0, 0, 0]::float8[])$$),
  ('unknown selector',     $$SELECT model_select.select_model('nope', ARRAY[1, 0, 0, 0]::float8[])$$),
  ('unknown arm',          $$SELECT model_select.retire_arm('router', 'nope')$$),
  ('reward out of range',  $$INSERT INTO model_select.rewards(decision_id, reward) VALUES (2, 1.5)$$),
  ('NULL reward',          $$INSERT INTO model_select.rewards(decision_id, reward) VALUES (2, NULL)$$),
  ('unknown decision',     $$INSERT INTO model_select.rewards(decision_id, reward) VALUES (999, 0.5)$$),
  ('second reward',        $$INSERT INTO model_select.rewards(decision_id, reward) VALUES (1, 0.5)$$),
  ('changing the log',     $$UPDATE model_select.rewards SET reward = 0.5$$),
  ('bad setting',          $$SELECT model_select.create_selector('bad', 4, ARRAY['a'], settings => '{"alpha": 0}')$$),
  ('duplicate selector',   $$SELECT model_select.create_selector('router', 4, ARRAY['a'])$$),
  ('duplicate arm',        $$SELECT model_select.add_arm('router', 'mixtral')$$)
) AS t(what, stmt);
SELECT count(*) AS rewards FROM model_select.rewards;

-- 11. A rolled back reward leaves no trace in the learned state.
BEGIN;
INSERT INTO model_select.rewards(selector, arm, context, reward)
VALUES ('router', 'mixtral', ARRAY[1, 0, 0, 0], 0.1);
SELECT arm, n FROM model_select.arm_stats WHERE arm = 'mixtral';
ROLLBACK;
SELECT arm, n FROM model_select.arm_stats WHERE arm = 'mixtral';

-- 12. The reward log is the source of truth: rebuild_state() recomputes
--     every arm from it (here after deleting a reward) and returns the number
--     of rewards applied.
CREATE TEMP TABLE before AS
SELECT * FROM model_select.scores('router', ARRAY[0.25, 0, 1, 0.5]::float8[]);
SELECT model_select.rebuild_state('router');
SELECT b.arm, round(b.ucb::numeric, 6) AS ucb_before, round(a.ucb::numeric, 6) AS ucb_after
  FROM before b JOIN model_select.scores('router', ARRAY[0.25, 0, 1, 0.5]::float8[]) a USING (arm);
DELETE FROM model_select.rewards WHERE arm = 'gpt-4o' AND reward = 0.6;
SELECT arm, n FROM model_select.arm_stats WHERE arm = 'gpt-4o';
SELECT model_select.rebuild_state('router');
SELECT arm, n, round(mean_reward::numeric, 6) AS mean_reward FROM model_select.arm_stats ORDER BY ordinal;

-- 13. Dropping a selector removes its arms, states, decisions and rewards.
SELECT model_select.drop_selector('router');
SELECT (SELECT count(*) FROM model_select.selectors) AS selectors,
       (SELECT count(*) FROM model_select.arms) AS arms,
       (SELECT count(*) FROM model_select.decisions) AS decisions,
       (SELECT count(*) FROM model_select.rewards) AS rewards;
