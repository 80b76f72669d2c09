-- The cost model (setting cost_model, on by default with a budget): the arms
-- of every contextual policy (lin_ucb, rff_ucb, pak_ucb, bkb) learn their cost
-- from the context beside their reward, and the pacer prices each arm at the
-- cost predicted for the context (src/policy/lin_fold.c, pak_fold.c, pak_ucb.c, bkb.c,
-- src/routing/pacer.c).  A price is read from scores():
-- ucb = mean + radius·width − λ·cost, with λ the cost weight route() logs
-- next in the same transaction; scores() also shows it as its cost column.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(30);

-- settings: listed only when off; only with a budget and a policy that learns costs
SELECT is((SELECT model_select.resolve_settings('lin_ucb', NULL, '{"budget": 1}') ? 'cost_model'), false,
          'cost_model is on by default and not listed');
SELECT is((SELECT model_select.resolve_settings('rff_ucb', 'rbf', '{"budget": 1, "cost_model": false}')->'cost_model'),
          'false'::jsonb, 'and listed when off');
SELECT throws_ok($$SELECT model_select.resolve_settings('lin_ucb', NULL, '{"cost_model": true}')$$,
                 '22023', NULL, 'cost_model needs a budget');
SELECT throws_ok($$SELECT model_select.resolve_settings('greedy', NULL, '{"budget": 1, "cost_model": true}')$$,
                 '22023', NULL, 'and a policy that learns it (not greedy)');
SELECT is((SELECT array_agg(model_select.resolve_settings(policy, 'rbf', '{"budget": 1, "cost_model": false}')->>'cost_model')
             FROM unnest(ARRAY['pak_ucb', 'bkb']) policy), ARRAY['false', 'false'], 'pak_ucb and bkb learn it');

-- Exact costs: arm 'a' costs 1 + 2·x1 + 3·x2, arm 'b' 0.5 everywhere.  With a
-- ridge of 1e-6, no normalisation and no codebook, the ridge regression of
-- the costs on z = (x1, x2, 1) recovers a's line; a constant cost is its own
-- prediction.
-- (new_cost: the price after a change, for the forgetting checks at the end)
CREATE FUNCTION true_cost(arm text, x float8[]) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE arm WHEN 'a' THEN 1 + 2 * x[1] + 3 * x[2] ELSE 0.5 END $$;
CREATE FUNCTION new_cost(arm text, x float8[]) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE arm WHEN 'a' THEN 4 - x[1] ELSE 0.5 END $$;
CREATE TEMP TABLE pts AS
SELECT i, ARRAY[i / 10.0, (i * i % 7) / 7.0]::float8[] AS x FROM generate_series(1, 10) i;
-- a selector of the policy (pak_ucb, bkb: the linear kernel) with every point's reward at true_cost
CREATE FUNCTION priced_selector(sel text, policy text, settings jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM model_select.create_selector(sel, 2, ARRAY['a', 'b'], policy, CASE WHEN policy <> 'lin_ucb' THEN 'linear' END,
        '{"budget": 0.2, "pace": 1, "alpha": 1e-6, "intercept": 1, "normalize": false}'::jsonb
        || CASE policy WHEN 'lin_ucb' THEN '{"codebook": 0}'::jsonb ELSE '{}' END || settings);
    INSERT INTO model_select.rewards(selector, arm, context, reward, cost)
    SELECT sel, arm, x, 0.5, true_cost(arm, x) FROM pts, unnest(ARRAY['a', 'b']) arm;
END $$;
-- three decisions whose rewards spend above the budget, so that λ > 0 (at new_cost if changed)
CREATE FUNCTION three_decisions(sel text, changed boolean) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    d record;
    x float8[];
BEGIN
    FOR i IN 1..3 LOOP
        x := ARRAY[0.2 * i, 0.1];
        SELECT * INTO d FROM model_select.route(sel, x);
        INSERT INTO model_select.rewards(decision_id, reward, cost)
        VALUES (d.decision_id, 0.5, CASE WHEN changed THEN new_cost(d.arm, x) ELSE true_cost(d.arm, x) END);
    END LOOP;
END $$;
SELECT priced_selector('cm', 'lin_ucb', '{}'), three_decisions('cm', false);

-- The price of each arm at x = (0.3, 0.9) (λ: what the next route() logs).
CREATE FUNCTION prices(sel text, x float8[]) RETURNS TABLE (arm text, price float8, ucb float8, shown float8)
LANGUAGE plpgsql AS $$
DECLARE
    d record;
BEGIN
    CREATE TEMP TABLE s ON COMMIT DROP AS SELECT * FROM model_select.scores(sel, x);
    SELECT * INTO d FROM model_select.route(sel, x);
    RETURN QUERY SELECT s.arm, (s.mean + s.radius * s.width - s.ucb) / dc.cost_weight, s.ucb, s.cost
                   FROM s, model_select.decisions dc WHERE dc.decision_id = d.decision_id;
    DROP TABLE s;
END $$;
CREATE TEMP TABLE p1 AS SELECT * FROM prices('cm', ARRAY[0.3, 0.9]::float8[]);
SELECT cmp_ok((SELECT cost_weight FROM model_select.decisions ORDER BY decision_id DESC LIMIT 1), '>', 0::float8,
              'spend above the budget: λ > 0');
SELECT cmp_ok((SELECT abs(price - 4.3) FROM p1 WHERE arm = 'a'), '<', 1e-5::float8,
              'arm a is priced at its cost line at the context: 1 + 2·0.3 + 3·0.9 = 4.3');
SELECT cmp_ok((SELECT abs(price - 0.5) FROM p1 WHERE arm = 'b'), '<', 1e-9::float8,
              'arm b at its constant cost 0.5');
SELECT cmp_ok((SELECT abs(d.expected_cost - p.price) FROM model_select.decisions d JOIN model_select.arms a USING (arm_id)
                 JOIN p1 p ON p.arm = a.name ORDER BY d.decision_id DESC LIMIT 1), '<', 1e-9::float8,
              'the decision logs its arm''s price as its expected cost, what the pacer counts while it awaits a reward');

-- pak_ucb learns it by the same regression, in its kernel: with the linear
-- kernel (x·y + intercept) it is the same ridge regression on (x1, x2, 1);
-- bkb in its embedding, exact here (the dictionary spans the kernel's 3 dimensions)
SELECT priced_selector(sel, policy, '{}'), three_decisions(sel, false)
  FROM (VALUES ('cm_pak', 'pak_ucb'), ('cm_bkb', 'bkb')) v(sel, policy);
CREATE TEMP TABLE p_pak AS
SELECT sel, p.* FROM unnest(ARRAY['cm_pak', 'cm_bkb']) sel CROSS JOIN LATERAL prices(sel, ARRAY[0.3, 0.9]::float8[]) p;
SELECT cmp_ok((SELECT max(abs(price - CASE arm WHEN 'a' THEN 4.3 ELSE 0.5 END)) FROM p_pak),
              '<', 1e-4::float8, 'pak_ucb and bkb: arm a at its cost line (4.3), arm b at its constant cost');
SELECT cmp_ok((SELECT max(abs(shown - price)) FROM p_pak), '<', 1e-9::float8, 'and scores() shows the prices');

-- rewards without a cost count as rows at the arm's mean cost: a's price at
-- the context moves from its line towards the mean of its logged costs
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT sel, 'a', ARRAY[0.3, 0.9 - 0.01 * i]::float8[], 0.5 FROM unnest(ARRAY['cm', 'cm_pak', 'cm_bkb']) sel, generate_series(1, 5) i;
CREATE TEMP TABLE p2 AS
SELECT sel, p.* FROM unnest(ARRAY['cm', 'cm_pak', 'cm_bkb']) sel CROSS JOIN LATERAL prices(sel, ARRAY[0.3, 0.9]::float8[]) p;
SELECT is((SELECT count(*) FROM p2 WHERE arm = 'a' AND price < 4.3 - 0.1 AND
                  price > (SELECT avg(cost) FROM model_select.rewards r JOIN model_select.arms a USING (arm_id)
                             JOIN model_select.selectors s ON s.selector_id = a.selector_id
                            WHERE a.name = 'a' AND s.name = p2.sel)), 3::bigint,
          'rewards without a cost pull the price towards the arm''s mean cost (lin_ucb, pak_ucb, bkb)');
CREATE TEMP TABLE before AS
SELECT sel, s.* FROM unnest(ARRAY['cm', 'cm_pak', 'cm_bkb']) sel, model_select.scores(sel, ARRAY[0.7, 0.2]::float8[]) s;
SELECT model_select.rebuild_state(sel) FROM unnest(ARRAY['cm', 'cm_pak', 'cm_bkb']) sel;
SELECT cmp_ok((SELECT max(abs(a.ucb - b.ucb) + abs(a.cost - b.cost))
                 FROM unnest(ARRAY['cm', 'cm_pak', 'cm_bkb']) u(name), model_select.scores(u.name, ARRAY[0.7, 0.2]::float8[]) a
                 JOIN before b USING (arm) WHERE b.sel = u.name), '<', 1e-9::float8,
              'rebuild_state reproduces the priced scores, lin_ucb, pak_ucb and bkb');

-- cost_model false: each arm at its mean logged cost, as before the model
SELECT model_select.alter_selector('cm', '{"cost_model": false}');
CREATE TEMP TABLE p3 AS SELECT * FROM prices('cm', ARRAY[0.3, 0.9]::float8[]);
SELECT cmp_ok((SELECT abs(p.price - m.mean) FROM p3 p JOIN (SELECT name AS arm, avg(cost) AS mean
                 FROM model_select.rewards JOIN model_select.arms USING (arm_id)
                 WHERE arms.selector_id = (SELECT selector_id FROM model_select.selectors WHERE name = 'cm')
                 GROUP BY name) m USING (arm)
                WHERE arm = 'a'), '<', 1e-9::float8, 'cost_model false: arm a at its mean cost');
SELECT is((SELECT expected_cost FROM model_select.decisions ORDER BY decision_id DESC LIMIT 1), NULL,
          'and its decisions log no expected cost');
SELECT cmp_ok((SELECT max(abs(shown - price)) FROM (SELECT * FROM p1 UNION ALL SELECT * FROM p3) q), '<', 1e-9::float8,
              'scores() shows the price in its cost column, by the model and at the mean cost');
SELECT model_select.create_selector('no_budget', 2, ARRAY['a', 'b'], 'lin_ucb');
INSERT INTO model_select.rewards(selector, arm, context, reward, cost) VALUES ('no_budget', 'a', ARRAY[1, 0], 0.5, 3);
SELECT is((SELECT array_agg(cost) FROM model_select.scores('no_budget', ARRAY[1, 0]::float8[])), ARRAY[NULL, NULL]::float8[],
          'without a budget no arm is priced: cost NULL');

-- route_batch(log => true) logs each row's expected cost too: its arm's price there
SELECT model_select.alter_selector('cm', '{"cost_model": true}');
CREATE TEMP TABLE bq AS SELECT i AS key, ARRAY[i / 7.0, 1 - i / 7.0]::float8[] AS context FROM generate_series(1, 5) i;
CREATE TEMP TABLE bp AS
SELECT sel, bq.key, p.* FROM unnest(ARRAY['cm', 'cm_pak', 'cm_bkb']) sel, bq CROSS JOIN LATERAL prices(sel, bq.context) p;
CREATE TEMP TABLE bd AS
SELECT 'cm' AS sel, * FROM model_select.route_batch('cm', 'SELECT key, context FROM bq', true)
UNION ALL SELECT 'cm_pak', * FROM model_select.route_batch('cm_pak', 'SELECT key, context FROM bq', true)
UNION ALL SELECT 'cm_bkb', * FROM model_select.route_batch('cm_bkb', 'SELECT key, context FROM bq', true);
SELECT cmp_ok((SELECT max(abs(d.expected_cost - bp.price)) FROM bd JOIN model_select.decisions d USING (decision_id)
                 JOIN bp ON bp.sel = bd.sel AND bp.key = bd.key AND bp.arm = bd.arm), '<', 1e-9::float8,
              'route_batch() logs each decision''s expected cost: its arm''s price at the row''s context (lin_ucb, pak_ucb, bkb)');

-- Learning (replay, seeded): two clusters; arm 1 costs 0.1 and earns 0.5,
-- arm 2 earns 0.9 and costs 0.2 on one cluster but 1.8 on the other (mean
-- 1.0), each way round.  With a budget of 0.3, priced by context the router
-- sends the cheap cluster to arm 2 and spends the rest on the other (0.735 at
-- best); priced at arm 2's mean cost it spreads arm 2 over both as its reward
-- estimates happen to lean (0.59 for an even spread): 0.735 / 0.732 against
-- 0.702 / 0.564 (seed 1).
SELECT setseed(0.29);
CREATE TEMP TABLE stream AS
SELECT i, k, ARRAY[(k = 0)::int + (random() - 0.5) * 0.2, (k = 1)::int + (random() - 0.5) * 0.2] AS context,
       ARRAY[(random() < 0.5)::int, (random() < 0.9)::int]::float8[] AS rewards,
       ARRAY[0.1, CASE k WHEN 0 THEN 0.2 ELSE 1.8 END]::float8[] AS costs
  FROM (SELECT i, (random() < 0.5)::int AS k FROM generate_series(1, 4000) i) s;
CREATE TEMP TABLE learned AS
SELECT v.costs, cm, x.cum_reward / x.round AS reward, x.cum_cost / x.round / 0.3 AS spend
  FROM (VALUES ('costs'), ('ARRAY[costs[1], 2 - costs[2]]')) v(costs), unnest(ARRAY[true, false]) cm
 CROSS JOIN LATERAL model_select.replay('SELECT context, rewards, ' || v.costs || ' FROM stream ORDER BY i',
           'lin_ucb', NULL, jsonb_build_object('budget', 0.3, 'cost_model', cm), 1, 0, NULL, 1, 4000) x;
SELECT cmp_ok((SELECT max(abs(spend - 1)) FROM learned), '<', 0.03::float8,
              'with and without the model, each way round: spend within 3% of the budget');
SELECT cmp_ok((SELECT min(reward) FROM learned WHERE cm), '>', 0.7::float8,
              'priced by context, the router sends the cheap cluster to arm 2 either way round (0.735 at best)');
SELECT cmp_ok((SELECT avg(reward) FROM learned WHERE cm) - (SELECT avg(reward) FROM learned WHERE NOT cm),
              '>', 0.05::float8, 'and earns more than priced at the mean cost, within the same budget');

-- costs constant per arm: the model predicts each arm's mean cost, the same picks
CREATE TEMP TABLE constant AS
SELECT cm, x.picks, x.cum_reward FROM unnest(ARRAY[true, false]) cm
 CROSS JOIN LATERAL model_select.replay('SELECT context, rewards, ARRAY[0.1, 1.0]::float8[] FROM stream ORDER BY i',
           'lin_ucb', NULL, jsonb_build_object('budget', 0.3, 'cost_model', cm), 1, 0, NULL, 1, 4000) x;
SELECT is((SELECT picks FROM constant WHERE cm), (SELECT picks FROM constant WHERE NOT cm),
          'costs constant per arm: the same picks with and without the model');

-- rff_ucb learns it too
SELECT cmp_ok((SELECT x.cum_reward / x.round FROM model_select.replay(
                  'SELECT context, rewards, ARRAY[costs[1], 2 - costs[2]] FROM stream ORDER BY i',
                  'rff_ucb', 'rbf', '{"budget": 0.3}', 1, 0, NULL, 1, 4000) x)
              - (SELECT x.cum_reward / x.round FROM model_select.replay(
                  'SELECT context, rewards, ARRAY[costs[1], 2 - costs[2]] FROM stream ORDER BY i',
                  'rff_ucb', 'rbf', '{"budget": 0.3, "cost_model": false}', 1, 0, NULL, 1, 4000) x),
              '>', 0.1::float8, 'rff_ucb learns it too (0.732 against 0.564)');

-- and pak_ucb and bkb, on the stream's first 1,500 rounds (their decisions grow with their rows)
CREATE TEMP TABLE learned_pak AS
SELECT policy, v.costs, cm, x.cum_reward / x.round AS reward, x.cum_cost / x.round / 0.3 AS spend, x.picks
  FROM (VALUES ('costs'), ('ARRAY[costs[1], 2 - costs[2]]'), ('ARRAY[0.1, 1.0]::float8[]')) v(costs),
       unnest(ARRAY[true, false]) cm, unnest(ARRAY['pak_ucb', 'bkb']) policy
 CROSS JOIN LATERAL model_select.replay('SELECT context, rewards, ' || v.costs || ' FROM stream WHERE i <= 1500 ORDER BY i',
           policy, 'rbf', jsonb_build_object('budget', 0.3, 'cost_model', cm), 1, 0, NULL, 1, 1500) x;
SELECT is((SELECT count(*) FROM (SELECT policy FROM learned_pak WHERE costs <> 'ARRAY[0.1, 1.0]::float8[]'
                                  GROUP BY policy
                                 HAVING avg(reward) FILTER (WHERE cm) - avg(reward) FILTER (WHERE NOT cm) > 0.05) q),
          2::bigint, 'pak_ucb and bkb learn it too: more reward priced by context, each way round');
SELECT is((SELECT count(*) FROM learned_pak a JOIN learned_pak b USING (policy, costs)
            WHERE a.cm AND NOT b.cm AND costs = 'ARRAY[0.1, 1.0]::float8[]' AND a.picks = b.picks),
          2::bigint, 'pak_ucb and bkb, costs constant per arm: the same picks with and without the model');

-- Forgetting: the cost model's sums forget with the rows.  Arm a's costs
-- follow 1 + 2·x1 + 3·x2 for 10 rewards, then its price changes to 4 − x1 for
-- 10 more (and the 3 rewarded decisions); a window of 8 of the arm's rewards,
-- or of the selector's last 23 on its clock, holds only rows at the new price,
-- as does a pak_ucb or bkb arm that compacted at a cap of 8 (it keeps its
-- newest 5 and grows again), so the price at (0.3, 0.9) is 4 − 0.3 = 3.7; a
-- discount of 0.5 prices near it.  rebuild_state() reproduces each.
CREATE FUNCTION forgetting(sel text, policy text, settings jsonb) RETURNS TABLE (price float8, rebuilt_gap float8)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM priced_selector(sel, policy, settings);
    INSERT INTO model_select.rewards(selector, arm, context, reward, cost)
    SELECT sel, arm, ARRAY[x[2], x[1]], 0.5, new_cost(arm, ARRAY[x[2], x[1]]) FROM pts, unnest(ARRAY['a', 'b']) arm;
    PERFORM three_decisions(sel, true);
    CREATE TEMP TABLE f_before ON COMMIT DROP AS SELECT * FROM model_select.scores(sel, ARRAY[0.7, 0.2]::float8[]);
    PERFORM model_select.rebuild_state(sel);
    RETURN QUERY SELECT (SELECT p.price FROM prices(sel, ARRAY[0.3, 0.9]::float8[]) p WHERE p.arm = 'a'),
                        (SELECT max(abs(a.ucb - b.ucb) / greatest(1, abs(b.ucb)))
                           FROM model_select.scores(sel, ARRAY[0.7, 0.2]::float8[]) a JOIN f_before b USING (arm));
    DROP TABLE f_before;
END $$;
CREATE TEMP TABLE forgot AS
SELECT policy, v.sel, f.* FROM (VALUES ('c_window', '{"window": 8}'::jsonb, ARRAY['lin_ucb', 'pak_ucb']),
                                      ('c_sel', '{"window": 23, "clock": "selector"}', ARRAY['lin_ucb', 'pak_ucb']),
                                      ('c_disc', '{"discount": 0.5}', ARRAY['lin_ucb', 'pak_ucb']),
                                      ('c_cap', '{"cap": 8}', ARRAY['pak_ucb', 'bkb'])) v(sel, settings, policies),
       unnest(v.policies) policy
 CROSS JOIN LATERAL forgetting(v.sel || '_' || policy, policy, v.settings) f;
SELECT cmp_ok((SELECT max(abs(price - 3.7)) FROM forgot WHERE sel <> 'c_disc' AND policy = 'lin_ucb'), '<', 1e-5::float8,
              'a window of the arm''s rewards or of the selector''s prices at the new cost line only');
SELECT cmp_ok((SELECT max(abs(price - 3.7)) FROM forgot WHERE sel <> 'c_disc' AND policy = 'pak_ucb'), '<', 1e-4::float8,
              'pak_ucb: its window and its cap too (its rows with their costs slide out, compact, or are built from the rows that count)');
SELECT cmp_ok((SELECT max(abs(price - 3.7)) FROM forgot WHERE policy = 'bkb'), '<', 1e-4::float8,
              'bkb: its rows'' costs compact with its rows at the cap');
SELECT cmp_ok((SELECT max(abs(price - 3.7)) FROM forgot WHERE sel = 'c_disc'), '<', 0.1::float8,
              'a discount of 0.5 prices near it, lin_ucb and pak_ucb');
SELECT cmp_ok((SELECT max(rebuilt_gap) FROM forgot), '<', 1e-9::float8,
              'rebuild_state reproduces the priced scores of each forgetting state (relative to |ucb|: λ is large here)');

SELECT * FROM finish();
ROLLBACK;
