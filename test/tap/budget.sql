-- Budgets: with a target mean cost per decision (setting budget) the pacer
-- sets the cost weight λ from the costs in the reward log (src/routing/pacer.c);
-- replay() and live selectors decide the same way, and route() logs the λ in force.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(37);

-- A seeded stream of 5,000 prompts in two clusters.  Arm 1 is cheap (cost
-- 0.1) and good on cluster 0 only (0.9 vs 0.2), arm 2 costs 0.5 and earns 0.6
-- everywhere, arm 3 costs 1.0 and earns 0.85 everywhere.  With a budget of
-- 0.55 the best router sends cluster 0 to arm 1 and cluster 1 to arm 3
-- (cost 0.55, reward 0.875); the best single arm within the budget is arm 2
-- (0.6).
SELECT setseed(0.13);
CREATE TEMP TABLE stream AS
SELECT i, k, ARRAY[(k = 0)::int + (random() - 0.5) * 0.2, (k = 1)::int + (random() - 0.5) * 0.2] AS context,
       ARRAY[(random() < CASE k WHEN 0 THEN 0.9 ELSE 0.2 END)::int, (random() < 0.6)::int,
             (random() < 0.85)::int]::float8[] AS rewards
  FROM (SELECT i, (random() < 0.5)::int AS k FROM generate_series(1, 5000) i) s;
CREATE TEMP TABLE costs AS SELECT ARRAY[0.1, 0.5, 1.0]::float8[] AS c;

-- replay with the pacer, checkpoints at 2,500 and 5,000 rounds
CREATE TEMP TABLE paced AS
SELECT * FROM model_select.replay('SELECT context, rewards, (SELECT c FROM costs) FROM stream ORDER BY i',
                                  'lin_ucb', NULL, '{"budget": 0.55}', 1, 0, NULL, 1, 2500);
SELECT is((SELECT count(*) FROM paced), 2::bigint, 'two checkpoints');
SELECT cmp_ok((SELECT abs((max(cum_cost) - min(cum_cost)) / 2500 - 0.55) FROM paced), '<=', 0.055::float8,
              'mean cost per decision over the last 2,500 rounds within 10% of the budget 0.55');
SELECT cmp_ok((SELECT max(cum_reward) / 5000 FROM paced), '>',
              (SELECT max(m) FROM (SELECT avg(rewards[a]) AS m FROM stream, costs, generate_series(1, 3) a
                                    WHERE c[a] <= 0.55 GROUP BY a) q) + 0.1,
              'earns more than the best single arm within the budget (by 0.1)');
SELECT cmp_ok((SELECT (max(picks[1]) - min(picks[1]))::float8 / 2500 FROM paced), '>', 0.3::float8,
              'and sends a good part of the traffic to the cheap arm');

-- a budget every arm fits: the pacer stays at λ = 0 and the router learns rewards.
-- alpha 1, intercept 1, eta 0.5 (pak_ucb's defaults): with lin_ucb's own (alpha 20,
-- intercept 10, eta 1) arm 1's edge of 0.05 on cluster 0 stays unexplored (13 picks,
-- 0.842 with or without the budget)
SELECT cmp_ok((SELECT max(cum_reward) / 5000 FROM model_select.replay(
                  'SELECT context, rewards, (SELECT c FROM costs) FROM stream ORDER BY i',
                  'lin_ucb', NULL, '{"budget": 2, "alpha": 1, "intercept": 1, "eta": 0.5}', 1, 0, NULL, 1, 5000)),
              '>', 0.85::float8, 'a loose budget costs no reward');

-- The largest gap between a decision's logged λ and the pacer's function of the
-- log before it, over selector sel's decisions after its first `after`:
-- λ = max(0, λ̄ + (1 / 0.3)·(C + P − 0.3·(N + Np)) / (20·0.3)), capped at 1e12,
-- where C, N are the costs and number of the rewards of earlier decisions, P,
-- Np the expected costs they logged (the cost model's), else the mean costs
-- of their arms, of the earlier decisions among the last `horizon` without a
-- reward, and λ̄ the mean λ those last `horizon` logged,
-- each at most the scale 1 / 0.3.
CREATE FUNCTION pacer_gap(sel text, horizon int, after int) RETURNS float8 LANGUAGE sql AS $$
    WITH dec AS (SELECT d.* FROM model_select.decisions d JOIN model_select.selectors s USING (selector_id)
                  WHERE s.name = sel),
         mean AS (SELECT arm_id, avg(cost) AS mean FROM model_select.rewards WHERE cost IS NOT NULL GROUP BY 1)
    SELECT max(abs(d.cost_weight - least(1e12, greatest(0, coalesce(w.lambda, 0) + (1.0 / 0.3) *
               (coalesce(r.cost, 0) + coalesce(p.cost, 0) - 0.3 * (coalesce(r.n, 0) + coalesce(p.n, 0))) / (20 * 0.3)))))
      FROM dec d
     CROSS JOIN LATERAL (SELECT sum(rw.cost) AS cost, count(rw.cost) AS n FROM dec e
                           JOIN model_select.rewards rw USING (decision_id) WHERE e.decision_id < d.decision_id) r
     CROSS JOIN LATERAL (SELECT sum(coalesce(e.expected_cost, m.mean)) AS cost,
                                count(coalesce(e.expected_cost, m.mean)) AS n
                           FROM (SELECT * FROM dec e WHERE e.decision_id < d.decision_id
                                  ORDER BY e.decision_id DESC LIMIT horizon) e
                           LEFT JOIN mean m USING (arm_id)
                          WHERE NOT EXISTS (SELECT FROM model_select.rewards rw WHERE rw.decision_id = e.decision_id)) p
     CROSS JOIN LATERAL (SELECT avg(least(e.cost_weight, 1.0 / 0.3)) AS lambda
                           FROM (SELECT * FROM dec e WHERE e.decision_id < d.decision_id
                                  ORDER BY e.decision_id DESC LIMIT horizon) e) w
     WHERE d.decision_id > coalesce((SELECT max(f.decision_id)
                                       FROM (SELECT decision_id FROM dec ORDER BY decision_id LIMIT after) f), 0) $$;

-- live: route() and rewards with costs; every decision logs the λ of the pacer,
-- recomputed here from the rewards and the λs logged before it
SELECT lives_ok($$SELECT model_select.create_selector('b', 2, ARRAY['cheap', 'mid', 'dear'], 'lin_ucb', NULL,
                    '{"budget": 0.3, "pace": 20}')$$, 'selector with a budget');
DO $$
DECLARE
    s record;
    d record;
BEGIN
    FOR s IN SELECT * FROM stream, costs WHERE i <= 300 ORDER BY i LOOP
        SELECT * INTO d FROM model_select.route('b', s.context);
        INSERT INTO model_select.rewards(decision_id, reward, cost)
        VALUES (d.decision_id, s.rewards[array_position(ARRAY['cheap', 'mid', 'dear'], d.arm)],
                s.c[array_position(ARRAY['cheap', 'mid', 'dear'], d.arm)]);
    END LOOP;
END $$;
SELECT is((SELECT count(*) FROM model_select.decisions WHERE cost_weight IS NOT NULL), 300::bigint,
          'every decision logs a cost weight');
SELECT cmp_ok(pacer_gap('b', 1000, 0), '<', 1e-9::float8,
              'the logged λ is the pacer''s function of the costs and λs logged before the decision');
SELECT cmp_ok((SELECT max(cost_weight) FROM model_select.decisions), '>', 0::float8,
              'the pacer raised λ above 0 at some point');
SELECT cmp_ok((SELECT abs(sum(cost) / count(*) - 0.3) FROM model_select.rewards
                WHERE decision_id > 150), '<', 0.06::float8,
              'live spend over the last 150 decisions within 20% of the budget 0.3');
CREATE TEMP TABLE before AS SELECT * FROM model_select.scores('b', ARRAY[1, 0]::float8[]);
SELECT model_select.rebuild_state('b');
SELECT cmp_ok((SELECT max(abs(a.ucb - b.ucb) + abs(a.mean - b.mean))
                 FROM model_select.scores('b', ARRAY[1, 0]::float8[]) a JOIN before b USING (arm)), '<', 1e-9::float8,
              'rebuild_state reproduces the scores, the pacer''s λ included');

-- decisions routed but not rewarded yet count at their arm's mean cost: 40
-- more decisions of 'b' without a reward, each λ recomputed from the rewards
-- logged and the earlier decisions still pending (all within the default
-- pending_horizon of 1,000); then with pending_horizon 10 only the last 10
-- decisions count, the older ones aged out
DO $$ DECLARE s record; BEGIN
    FOR s IN SELECT * FROM stream WHERE i BETWEEN 301 AND 340 ORDER BY i LOOP PERFORM model_select.route('b', s.context); END LOOP;
END $$;
SELECT cmp_ok(pacer_gap('b', 1000, 300), '<', 1e-9::float8,
              'the logged λ counts the decisions not rewarded yet at their arm''s mean cost');
SELECT cmp_ok((SELECT max(d.cost_weight) - min(d.cost_weight) FROM model_select.decisions d
                 JOIN model_select.selectors s USING (selector_id) WHERE s.name = 'b'
                  AND NOT EXISTS (SELECT FROM model_select.rewards r WHERE r.decision_id = d.decision_id)),
              '>', 0::float8, 'and moves with them while no reward arrives');
SELECT model_select.alter_selector('b', '{"pending_horizon": 10}');
DO $$ DECLARE s record; BEGIN
    FOR s IN SELECT * FROM stream WHERE i BETWEEN 341 AND 360 ORDER BY i LOOP PERFORM model_select.route('b', s.context); END LOOP;
END $$;
SELECT cmp_ok(pacer_gap('b', 10, 340), '<', 1e-9::float8,
              'pending_horizon 10: only the last 10 decisions without a reward count');

-- warm starts teach costs but are no spend: 500 rows of the stream, every arm
-- scored with its cost (mean cost 0.53 per reward, far over the budget 0.3,
-- all of it on rows without a decision), then 300 decisions
SELECT model_select.create_selector('bw', 2, ARRAY['cheap', 'mid', 'dear'], 'lin_ucb', NULL,
                                    '{"budget": 0.3, "pace": 20}');
SELECT is(model_select.warm_start('bw', 'SELECT context, rewards, (SELECT c FROM costs) FROM stream
                                          WHERE i BETWEEN 1001 AND 1500 ORDER BY i'), 1500::bigint,
          'warm start: 500 rows × 3 arms with their costs');
DO $$
DECLARE
    s record;
    d record;
BEGIN
    FOR s IN SELECT * FROM stream, costs WHERE i <= 300 ORDER BY i LOOP
        SELECT * INTO d FROM model_select.route('bw', s.context);
        INSERT INTO model_select.rewards(decision_id, reward, cost)
        VALUES (d.decision_id, s.rewards[array_position(ARRAY['cheap', 'mid', 'dear'], d.arm)],
                s.c[array_position(ARRAY['cheap', 'mid', 'dear'], d.arm)]);
    END LOOP;
END $$;
CREATE TEMP TABLE bw_decisions AS
SELECT d.* FROM model_select.decisions d JOIN model_select.selectors s USING (selector_id) WHERE s.name = 'bw';
SELECT is((SELECT cost_weight FROM bw_decisions ORDER BY decision_id LIMIT 1), 0::float8,
          'after the warm start, nothing spent: the first decision''s λ is 0');
SELECT cmp_ok(pacer_gap('bw', 1000, 0), '<', 1e-9::float8,
              'the logged λ is the pacer''s function of the costs of earlier decisions only');
SELECT cmp_ok((SELECT abs(sum(r.cost) / count(*) - 0.3) FROM bw_decisions d JOIN model_select.rewards r USING (decision_id)),
              '<', 0.03::float8, 'spend over the 300 decisions within 10% of the budget 0.3');
SELECT cmp_ok((SELECT abs(mean_cost - 0.1) FROM model_select.arm_stats WHERE selector = 'bw' AND arm = 'cheap'),
              '<', 1e-12::float8, 'the warm rows teach the arms their mean cost');
SELECT model_select.checkpoint('bw');
SELECT is((SELECT array_agg(ARRAY[spend_sum, spend_n] ORDER BY a.ordinal)
             FROM model_select.arm_state st JOIN model_select.arms a USING (arm_id)
             JOIN model_select.selectors s ON s.selector_id = a.selector_id WHERE s.name = 'bw'),
          (SELECT array_agg(ARRAY[c.cost, c.n] ORDER BY a.ordinal)
             FROM model_select.arms a JOIN model_select.selectors s USING (selector_id)
             CROSS JOIN LATERAL (SELECT coalesce(sum(r.cost), 0) AS cost, count(r.cost)::float8 AS n
                                   FROM model_select.rewards r
                                  WHERE r.arm_id = a.arm_id AND r.decision_id IS NOT NULL) c
            WHERE s.name = 'bw'),
          'a checkpoint stores each arm''s spend: the costs of its decisions'' rewards');

-- replay() warm-started from the same rows: the routed rows' mean cost meets the budget
SELECT cmp_ok((SELECT abs(cum_cost / round - 0.3) FROM model_select.replay(
                  'SELECT context, rewards, (SELECT c FROM costs) FROM stream WHERE i <= 4000 ORDER BY i',
                  'lin_ucb', NULL, '{"budget": 0.3}', 1, 0, NULL, 1, 4000, true,
                  'SELECT context, rewards, (SELECT c FROM costs) FROM stream WHERE i > 4000 ORDER BY i')),
              '<', 0.006::float8, 'replay warm-started with costs: mean cost of the routed rows within 2% of the budget');

-- late feedback: rewards visible 1,000 rounds after their decision, all of
-- them or a seeded 5%, after a warm start from 200 rows.  Counting only the
-- rewards that arrived, the first 1,000 decisions saw no spend at λ = 0 and
-- the pass spent 1.063 times the budget (0.960 at 5%), earning 0.791 per
-- round; counting the decisions not rewarded yet at their arm's mean cost it
-- spends 1.001 (1.005) and earns 0.854
CREATE TEMP TABLE late AS
SELECT v.horizon, v.fb, x.cum_cost / x.round / 0.55 AS spend, x.cum_reward / x.round AS reward
  FROM (VALUES (1000, 1.0), (1000, 0.05), (0, 1.0)) v(horizon, fb)
 CROSS JOIN LATERAL model_select.replay(
           'SELECT context, rewards, (SELECT c FROM costs) FROM stream WHERE i > 200 ORDER BY i', 'lin_ucb', NULL,
           jsonb_build_object('budget', 0.55, 'pending_horizon', v.horizon), 1, 0, NULL, 1, 4800, false,
           'SELECT context, rewards, (SELECT c FROM costs) FROM stream WHERE i <= 200 ORDER BY i', 1000, v.fb) x;
SELECT cmp_ok((SELECT max(abs(spend - 1)) FROM late WHERE horizon > 0), '<', 0.02::float8,
              'rewards 1,000 rounds late, all or 5%: spend within 2% of the budget');
SELECT cmp_ok((SELECT reward FROM late WHERE horizon > 0 AND fb = 1), '>', 0.83::float8,
              'and the reward of a paced router (0.854; 0.791 blind to the pending spend)');
SELECT cmp_ok((SELECT spend FROM late WHERE horizon = 0), '>', 1.04::float8,
              'pending_horizon 0 counts only the rewards that arrived: overspends');

-- settings
SELECT throws_ok($$SELECT model_select.resolve_settings('lin_ucb', NULL, '{"budget": 1, "cost_weight": 0.5}')$$,
                 '22023', NULL, 'budget and cost_weight exclude each other');
SELECT throws_ok($$SELECT * FROM model_select.replay('SELECT context, rewards, (SELECT c FROM costs) FROM stream',
                     'lin_ucb', NULL, '{"budget": 0.5}', 1, 0.2)$$,
                 '22023', NULL, 'replay() refuses a cost_weight argument with a budget');

-- extreme but valid: a subnormal budget (its scale overflows float8) and
-- the largest costs (1e15): λ is 0 without spend (not 0 · ∞ = NaN), then
-- capped at 1e12, the largest cost_weight; no NaN or ±Infinity is logged.
-- The arms learn their rewards and costs from rewards without a decision
-- (no spend), then greedy picks the dear arm while λ = 0, and the rewards
-- of those decisions are the spend.
-- (pending_horizon 0: the three decisions are routed before any is rewarded)
SELECT model_select.create_selector('b_tiny', 2, ARRAY['free', 'dear'], 'greedy', NULL,
                                    '{"budget": 5e-324, "pace": 1, "pending_horizon": 0}');
SELECT model_select.create_selector('b_huge', 2, ARRAY['free', 'dear'], 'greedy', NULL, '{"budget": 1, "pending_horizon": 0}');
INSERT INTO model_select.rewards(selector, arm, context, reward, cost)
VALUES ('b_tiny', 'free', ARRAY[1, 0]::float8[], 0.4, 0), ('b_tiny', 'dear', ARRAY[1, 0]::float8[], 0.9, 1),
       ('b_huge', 'free', ARRAY[1, 0]::float8[], 0.4, 0), ('b_huge', 'dear', ARRAY[1, 0]::float8[], 0.9, 1e15);
CREATE TEMP TABLE spent AS
SELECT u.s, r.* FROM unnest(ARRAY['b_tiny', 'b_huge', 'b_huge']) WITH ORDINALITY u(s, k)
 CROSS JOIN LATERAL model_select.route(u.s, ARRAY[1, 0]::float8[]) r;
SELECT is((SELECT array_agg(d.cost_weight ORDER BY d.decision_id) FROM model_select.decisions d JOIN spent USING (decision_id)),
          ARRAY[0, 0, 0]::float8[], 'nothing spent yet: λ = 0 (budget 5e-324 included)');
SELECT is((SELECT array_agg(arm ORDER BY decision_id) FROM spent), ARRAY['dear', 'dear', 'dear'],
          'at λ = 0 greedy picks the dear arm');
INSERT INTO model_select.rewards(decision_id, reward, cost)
SELECT decision_id, 0.9, CASE s WHEN 'b_tiny' THEN 1 ELSE 1e15 END FROM spent;
-- (b_huge's dear arm: λ times a mean cost of 1e15 is -1e27, finite)
SET client_min_messages = error;
SELECT is((SELECT array_agg(arm) FROM (SELECT (model_select.route(s, ARRAY[1, 0]::float8[])).arm FROM unnest(ARRAY['b_tiny', 'b_huge']) s) r),
          ARRAY['free', 'free'], 'overspent by far: the free arm is chosen');
RESET client_min_messages;
SELECT is((SELECT array_agg(d.cost_weight ORDER BY d.decision_id) FROM model_select.decisions d
             JOIN model_select.selectors s USING (selector_id) WHERE s.name IN ('b_tiny', 'b_huge')),
          ARRAY[0, 0, 0, 1e12, 1e12]::float8[], 'the logged λ: 0, then capped at 1e12');
SELECT is((SELECT ucb FROM model_select.scores('b_tiny', ARRAY[1, 0]::float8[]) WHERE arm = 'free'), 0.4::float8,
          'a free arm''s ucb is its mean (no ∞ · 0)');
SELECT is((SELECT ucb FROM model_select.scores('b_tiny', ARRAY[1, 0]::float8[]) WHERE arm = 'dear'), 0.9 - 1e12::float8,
          'a dear arm''s ucb is its mean less 1e12 times its mean cost');

-- route_batch(log => true) paces within the call: after each block of 256 rows it
-- reads the pending decisions anew, so each block is priced as a route() after the
-- blocks before it.  Greedy, 'free' 0.4 at cost 0, 'dear' 0.9 at cost 1, budget 0.5,
-- pace 100, 1,024 rows: block 1 at λ 0 (dear); block 2 has 256 dear pending, an
-- overspend of 128, λ = 2·128/(100·0.5) = 5.12 (free); block 3: overspend 0, λ = λ̄ =
-- mean(min(λ, 2)) = (0 + 2)/2 = 1 (free); block 4: λ̄ (0 + 2 + 1)/3 = 1, overspend −128,
-- λ = 0 (dear).  One λ for the call (before) sent all 1,024 to the dear arm.
SELECT model_select.create_selector('b_batch', 2, ARRAY['free', 'dear'], 'greedy', NULL,
                                    '{"budget": 0.5, "pace": 100, "pending_horizon": 2000}');
INSERT INTO model_select.rewards(selector, arm, context, reward, cost)
VALUES ('b_batch', 'free', ARRAY[1, 0]::float8[], 0.4, 0), ('b_batch', 'dear', ARRAY[1, 0]::float8[], 0.9, 1);
CREATE TEMP TABLE batch_out AS
SELECT * FROM model_select.route_batch('b_batch', 'SELECT i, ARRAY[1, 0]::float8[] FROM generate_series(1, 1024) i', true);
-- (a statement of its own: the one that routes does not see the rows route_batch() logs)
CREATE TEMP TABLE batched AS
SELECT b.decision_id, d.cost_weight, b.arm, (row_number() OVER (ORDER BY b.decision_id) - 1) / 256 AS block
  FROM batch_out b JOIN model_select.decisions d USING (decision_id);
SELECT is((SELECT array_agg(l ORDER BY block) FROM (SELECT block, min(cost_weight) AS l FROM batched GROUP BY 1
                                                     HAVING min(cost_weight) = max(cost_weight)) q),
          ARRAY[0, 5.12, 1, 0]::float8[], 'route_batch() logs one λ per block of 256: 0, 5.12, 1, 0');
SELECT is((SELECT array_agg(a ORDER BY block) FROM (SELECT block, min(arm) AS a FROM batched GROUP BY 1
                                                     HAVING min(arm) = max(arm)) q),
          ARRAY['dear', 'free', 'free', 'dear'], '... and its blocks go to dear, free, free, dear');
SELECT is((SELECT avg((arm = 'dear')::int)::float8 FROM batched), 0.5::float8,
          '... so that the batch spends its budget (mean cost 0.5)');
SELECT is((SELECT (model_select.route('b_batch', ARRAY[1, 0]::float8[])).decision_id IS NOT NULL), true, 'a route() after it');
SELECT is((SELECT cost_weight FROM model_select.decisions WHERE decision_id = (SELECT max(decision_id) FROM model_select.decisions)),
          0.75::float8, '... is priced after the whole batch: λ̄ = (0 + 2 + 1 + 0)/4, overspend 0');

SELECT * FROM finish();
ROLLBACK;
