-- Learning behaviour on a seeded synthetic stream (Hu et al. (PAK-UCB)):
-- three arms, three prompt clusters, each arm the expert of one cluster.
-- pak_ucb must reach an optimal-pick ratio >= 0.9 over the last 500 of 2,000
-- rounds and earn more than the context-free baselines greedy and random.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(7);

CREATE TEMP TABLE stream AS
SELECT * FROM model_select.synthetic_clusters(2000, 16, 3, NULL, 7, 0.1);
CREATE TEMP TABLE picks (selector text, round int, arm int, best int, reward float8);

-- Route every prompt in order and feed the chosen arm's reward back.
CREATE FUNCTION pg_temp.play(sel text, pol text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    r record;
    d record;
    k int;
BEGIN
    PERFORM model_select.create_selector(sel, 16, ARRAY['a1','a2','a3'], pol, NULL, '{}', 1);
    FOR r IN SELECT * FROM stream ORDER BY round LOOP
        SELECT * INTO d FROM model_select.route(sel, r.context);
        k := substr(d.arm, 2)::int;
        INSERT INTO model_select.rewards(decision_id, reward) VALUES (d.decision_id, r.reward[k]);
        INSERT INTO picks VALUES (sel, r.round, k, r.best_arm, r.reward[k]);
    END LOOP;
END $$;

SELECT pg_temp.play('pak', 'pak_ucb');
SELECT pg_temp.play('lin', 'lin_ucb');
SELECT pg_temp.play('greedy', 'greedy');
SELECT pg_temp.play('random', 'random');

CREATE TEMP VIEW summary AS
SELECT selector, sum(reward) AS cum_reward,
       avg((arm = best)::int) FILTER (WHERE round > 1500) AS opr_last500
  FROM picks GROUP BY selector;

SELECT cmp_ok((SELECT opr_last500 FROM summary WHERE selector = 'pak'), '>=', 0.9,
              'pak_ucb: optimal-pick ratio >= 0.9 over the last 500 of 2,000 rounds');
SELECT cmp_ok((SELECT cum_reward FROM summary WHERE selector = 'pak'), '>',
              (SELECT cum_reward FROM summary WHERE selector = 'greedy'),
              'pak_ucb earns more cumulative reward than greedy');
SELECT cmp_ok((SELECT cum_reward FROM summary WHERE selector = 'pak'), '>',
              (SELECT cum_reward FROM summary WHERE selector = 'random'),
              'pak_ucb earns more cumulative reward than random');
SELECT cmp_ok((SELECT opr_last500 FROM summary WHERE selector = 'lin'), '>=', 0.9,
              'lin_ucb: optimal-pick ratio >= 0.9 over the last 500 rounds');
-- the baselines cannot see the context: about one pick in three is optimal
SELECT cmp_ok((SELECT opr_last500 FROM summary WHERE selector = 'random'), '<', 0.5,
              'random stays near chance (< 0.5)');
-- every arm is tried once before any arm is tried twice (+Infinity rule)
SELECT is((SELECT array_agg(DISTINCT arm ORDER BY arm) FROM picks WHERE selector = 'pak' AND round <= 3),
          ARRAY[1, 2, 3], 'the first three rounds try each arm once');
SELECT is((SELECT count(*) FROM model_select.rewards r JOIN model_select.selectors s USING (selector_id)
            WHERE s.name = 'pak'), 2000::bigint, 'every routed prompt left one reward in the log');

SELECT diag(format('%s: cumulative reward %s, OPR(last 500) %s', selector,
                   round(cum_reward::numeric, 1), round(opr_last500, 3)))
  FROM summary ORDER BY selector;

SELECT * FROM finish();
ROLLBACK;
