-- model_select demo: watch a router learn which model to use for which prompt.
--
-- Run by `make demo` in a throwaway cluster, right after
-- CREATE EXTENSION model_select:
--     psql -X -v ON_ERROR_STOP=1 -f demo/demo.sql
-- Takes about 10 seconds.  Everything is seeded: the numbers are the same on
-- every run (the timings are not).

\set QUIET on
\pset footer off
\pset null '-'
SET client_min_messages = warning;

\echo
\echo '=== model_select demo ============================================================'
\echo
\echo 'Three "models" answer prompts: gpt-4o, llama-3-8b and mixtral.  The prompts'
\echo 'are 32-dimensional embeddings from three topic clusters, and the best model'
\echo 'depends on the topic.  The expected reward (say, a judge score in [0, 1]) is:'
\echo

-- A seeded synthetic stream: 2,000 prompts to learn from, and a few more
-- (rounds 2001..2100) kept aside as fresh prompts.  Same seed = same cluster
-- centres, so the extra rounds come from the same three clusters.
CREATE TEMP TABLE stream AS
SELECT * FROM model_select.synthetic_clusters(2100, 32, 3, NULL, 2024);

CREATE TEMP TABLE models(k int PRIMARY KEY, name text NOT NULL);
INSERT INTO models VALUES (1, 'gpt-4o'), (2, 'llama-3-8b'), (3, 'mixtral');

SELECT s.cluster AS "prompt cluster",
       round(s.expected[1]::numeric, 2) AS "gpt-4o",
       round(s.expected[2]::numeric, 2) AS "llama-3-8b",
       round(s.expected[3]::numeric, 2) AS "mixtral",
       m.name AS "best model",
       count(*) AS "prompts (of 2000)"
  FROM stream s JOIN models m ON m.k = s.best_arm
 WHERE s.round <= 2000
 GROUP BY s.cluster, s.expected, m.name
 ORDER BY s.cluster;

\echo 'Observed rewards add Gaussian noise (sd 0.1).  No single model is best for'
\echo 'everything: always using gpt-4o earns about 0.58 per prompt, routing each'
\echo 'prompt to its best model earns about 0.73.  The router does not know any of'
\echo 'this; it only sees each prompt and the reward of the model it picked.'
\echo
\echo '--- 1. Create a selector ---------------------------------------------------------'
\echo
\echo '  SELECT model_select.create_selector(''router'', 32,'
\echo '           ARRAY[''gpt-4o'', ''llama-3-8b'', ''mixtral''], policy => ''pak_ucb'');'
\echo

SELECT model_select.create_selector('router', 32, ARRAY['gpt-4o', 'llama-3-8b', 'mixtral'],
                                    policy => 'pak_ucb') AS selector_id \gset
SELECT name, dim, policy, kernel, settings FROM model_select.selectors WHERE name = 'router';

\echo 'pak_ucb keeps, per model, a kernel ridge regression of reward on the prompt'
\echo 'embedding (mean) and its uncertainty (width), and routes each prompt to the'
\echo 'model with the highest upper confidence bound, ucb = mean + eta * width.'
\echo
\echo '--- 2. Route 2,000 prompts one by one, feeding back each reward -----------------'
\echo
\echo '  for each prompt:'
\echo '    SELECT * FROM model_select.route(''router'', prompt.embedding);'
\echo '        -> (decision_id, arm, score), logged in model_select.decisions'
\echo '    ... call the chosen model, score its answer ...'
\echo '    INSERT INTO model_select.rewards(decision_id, reward) VALUES (decision_id, r);'
\echo '        -> logged; readers fold it into that model''s state, checkpoints store the fold'
\echo

-- What every policy in this demo picked, round by round.
CREATE TEMP TABLE picks (
    policy   text NOT NULL,
    round    int NOT NULL,
    cluster  int NOT NULL,
    arm      int NOT NULL,           -- 1-based, as in models.k
    best_arm int NOT NULL,
    score    float8 NOT NULL,        -- the chosen arm's ucb
    reward   float8 NOT NULL,        -- observed reward of the chosen arm
    expected float8 NOT NULL,        -- its expected reward
    PRIMARY KEY (policy, round)
);
CREATE TEMP TABLE runs (policy text PRIMARY KEY, seconds float8);

-- Play the learning part of the stream against one selector: route each
-- prompt, insert the reward of the chosen model, remember the pick.
CREATE FUNCTION pg_temp.play(selector text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    s  record;
    d  record;
    k  int;
    t0 timestamptz := clock_timestamp();
    pol text := (SELECT policy FROM model_select.selectors WHERE name = selector);
BEGIN
    FOR s IN SELECT * FROM stream WHERE round <= 2000 ORDER BY round LOOP
        SELECT * INTO d FROM model_select.route(selector, s.context);
        k := (SELECT m.k FROM models m WHERE m.name = d.arm);
        INSERT INTO model_select.rewards(decision_id, reward) VALUES (d.decision_id, s.reward[k]);
        INSERT INTO picks VALUES (pol, s.round, s.cluster, k, s.best_arm, d.score,
                                  s.reward[k], s.expected[k]);
    END LOOP;
    INSERT INTO runs VALUES (pol, extract(epoch FROM clock_timestamp() - t0));
END $$;

SELECT pg_temp.play('router') \gset
SELECT format('Routed 2,000 prompts and inserted 2,000 rewards in %s s (%s ms per prompt).',
              round(seconds::numeric, 1), round((1000 * seconds / 2000)::numeric, 2)) AS msg
  FROM runs WHERE policy = 'pak_ucb' \gset
\echo :msg
\echo

\echo 'The first rounds: a model without rewards scores Infinity, so each model is'
\echo 'tried once before the scores start to mean anything.'
SELECT p.round, p.cluster AS "prompt cluster", m.name AS "routed to", round(p.score::numeric, 3) AS ucb,
       round(p.reward::numeric, 3) AS reward
  FROM picks p JOIN models m ON m.k = p.arm
 WHERE p.policy = 'pak_ucb' AND p.round <= 6 ORDER BY p.round;

\echo '--- 3. Did it learn?  Every block of 200 rounds -----------------------------------'
\echo
\echo '"right model" = share of prompts sent to the best model for their cluster'
\echo '(optimal-pick ratio).  A router that guesses gets 0.33 and about 0.56 reward.'
SELECT format('%s-%s', min(round), max(round)) AS rounds,
       round(avg((arm = best_arm)::int), 3) AS "right model",
       round(avg(reward)::numeric, 3) AS "mean reward",
       round(avg((arm = 1)::int), 2) AS "gpt-4o",
       round(avg((arm = 2)::int), 2) AS "llama-3-8b",
       round(avg((arm = 3)::int), 2) AS "mixtral"
  FROM picks WHERE policy = 'pak_ucb'
 GROUP BY (round - 1) / 200 ORDER BY min(round);

\echo '--- 4. What each model learned: SELECT * FROM model_select.arm_stats -------------'
SELECT arm, active, n AS rewards, round(mean_reward::numeric, 3) AS mean_reward, version,
       pg_size_pretty(state_bytes::bigint) AS state
  FROM model_select.arm_stats WHERE selector = 'router' ORDER BY ordinal;
\echo 'Each model was used mostly on its own cluster, so its mean reward is close'
\echo 'to its best score.  pak_ucb keeps every (prompt, reward) pair of a model: the'
\echo 'state grows with n² (capped by the "cap" setting, default 2000 per model).'
\echo

\echo '--- 5. Fresh prompts it has never seen: SELECT * FROM model_select.scores(...) ---'
\echo
CREATE TEMP TABLE fresh AS
SELECT DISTINCT ON (cluster) * FROM stream WHERE round > 2000 ORDER BY cluster, round;

SELECT f.cluster AS "prompt cluster", m.name AS "true best",
       model_select.select_model('router', f.context) AS "router picks",
       CASE WHEN model_select.select_model('router', f.context) = m.name
            THEN 'yes' ELSE 'NO' END AS "right?"
  FROM fresh f JOIN models m ON m.k = f.best_arm ORDER BY f.cluster;

\echo 'Why: per-model scores for each fresh prompt (mean = predicted reward, width ='
\echo 'uncertainty, ucb = mean + eta * width with pak_ucb''s default eta 2; the highest ucb wins).'
SELECT f.cluster AS "prompt cluster", s.arm AS model, s.n,
       round(s.mean::numeric, 3) AS mean, round(s.width::numeric, 3) AS width,
       round(s.ucb::numeric, 3) AS ucb,
       round(f.expected[m.k]::numeric, 2) AS "true expected",
       CASE WHEN s.ucb = max(s.ucb) OVER (PARTITION BY f.cluster) THEN '<- picked' ELSE '' END AS " "
  FROM fresh f
 CROSS JOIN LATERAL model_select.scores('router', f.context) s
  JOIN models m ON m.name = s.arm
 ORDER BY f.cluster, m.k;

\echo '--- 6. The same stream with two baseline policies --------------------------------'
\echo
\echo '  random: picks a model by a seeded hash of the prompt, ignores rewards'
\echo '  greedy: picks the model with the best average reward so far, ignores the prompt'
\echo
SELECT model_select.create_selector('router_random', 32, ARRAY['gpt-4o', 'llama-3-8b', 'mixtral'],
                                    policy => 'random') IS NOT NULL AS created \gset
SELECT model_select.create_selector('router_greedy', 32, ARRAY['gpt-4o', 'llama-3-8b', 'mixtral'],
                                    policy => 'greedy') IS NOT NULL AS created \gset
SELECT pg_temp.play('router_random') \gset
SELECT pg_temp.play('router_greedy') \gset

WITH totals AS (
    SELECT p.policy, sum(p.reward) AS total, avg((p.arm = p.best_arm)::int) AS opr,
           sum(s.expected[s.best_arm] - p.expected) AS regret,
           (SELECT format('%s (%s%%)', m.name, round(100.0 * count(*) / 2000))
              FROM picks q JOIN models m ON m.k = q.arm WHERE q.policy = p.policy
             GROUP BY m.name ORDER BY count(*) DESC LIMIT 1) AS most_used
      FROM picks p JOIN stream s USING (round)
     GROUP BY p.policy
)
SELECT policy, round(total::numeric, 1) AS "cumulative reward",
       round(opr, 3) AS "right model (OPR)",
       round(regret::numeric, 1) AS "regret", most_used AS "most used model"
  FROM totals
UNION ALL
SELECT '(always the true best)', round(sum(s.reward[s.best_arm])::numeric, 1), 1.000, 0.0, '-'
  FROM stream s WHERE round <= 2000
UNION ALL
SELECT '(always gpt-4o)', round(sum(s.reward[1])::numeric, 1),
       round(avg((s.best_arm = 1)::int), 3),
       round(sum(s.expected[s.best_arm] - s.expected[1])::numeric, 1), 'gpt-4o (100%)'
  FROM stream s WHERE round <= 2000
ORDER BY 2 DESC;

\echo 'regret = expected reward lost against always picking the best model.'
\echo 'greedy compares overall averages only: after a few unlucky first rewards it'
\echo 'settles on one model and never finds out that each model is best for one kind'
\echo 'of prompt.  random never learns at all.  pak_ucb looks at the prompt and ends'
\echo 'close to the best that is possible.'
\echo
\echo 'The decisions and rewards are ordinary rows (model_select.decisions and'
\echo 'model_select.rewards); the learned state is in model_select.arm_state and can'
\echo 'be rebuilt from the reward log at any time with model_select.rebuild_state().'
\echo
