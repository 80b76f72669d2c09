-- The log's horizon: "retain" absorbs old rewards into their arm's base and
-- deletes them (maintain()), "decision_ttl" removes decisions without a
-- reward.  For every policy retain applies to (policies() whose
-- resolve_settings() take it): after absorption the scores have not moved,
-- and equal rebuild_state()'s (base + retained log) at 1e-9.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;

-- the policies that take retain: those whose state is of fixed size
CREATE TEMP TABLE retaining AS SELECT p.name AS policy FROM model_select.policies() p WHERE NOT p.keeps_rows;
SELECT plan(15 + 6 * (SELECT count(*)::int FROM retaining));
SELECT ok((SELECT array_agg(policy) FROM retaining) @> ARRAY['lin_ucb', 'rff_ucb', 'greedy'],
          'retain applies to lin_ucb, rff_ucb and greedy (at least)');
SELECT is((SELECT count(*) FROM retaining r WHERE model_select.resolve_settings(r.policy, NULL, '{"retain": 5}') ? 'retain'),
          (SELECT count(*) FROM retaining), '... every one of them takes it');

SET LOCAL model_select.checkpoint_threshold = 16;
SELECT setseed(0.29);
CREATE TEMP TABLE prompts AS
SELECT i, ARRAY[random(), random(), random()]::real[] AS e FROM generate_series(1, 240) i;

-- Per policy: 240 rewards over 3 arms (routed and rewarded by decision, or
-- by name with a cost), retain 20; scores before and after maintain().
CREATE FUNCTION pg_temp.feed(sel text) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
  p record;
  d record;
BEGIN
  FOR p IN SELECT * FROM prompts ORDER BY i LOOP
    IF p.i % 2 = 0 THEN
      SELECT * INTO d FROM model_select.route(sel, p.e);
      INSERT INTO model_select.rewards(decision_id, reward, cost) VALUES (d.decision_id, (p.i % 7) / 7.0, p.i / 100.0);
    ELSE
      INSERT INTO model_select.rewards(selector, arm, context, reward)
      VALUES (sel, 'a' || (p.i % 3), p.e::float8[], (p.i % 5) / 5.0);
    END IF;
  END LOOP;
END $f$;
CREATE TEMP TABLE before (policy text, i int, arm text, n bigint, mean float8, width float8);
CREATE TEMP TABLE counts (policy text, rewards bigint, decisions bigint, rewarded bigint);
CREATE FUNCTION pg_temp.scores(pol text) RETURNS TABLE (i int, arm text, n bigint, mean float8, width float8)
LANGUAGE sql AS $f$
  SELECT p.i, s.arm, s.n, s.mean, s.width FROM prompts p, model_select.scores('r_' || pol, p.e) s WHERE p.i % 40 = 0
$f$;
-- rows of `now` that differ from `before` beyond tol (relative), and n's that differ at all
CREATE FUNCTION pg_temp.moved(pol text, tol float8) RETURNS bigint LANGUAGE sql AS $f$
  SELECT count(*) FROM before b JOIN pg_temp.scores(pol) s USING (i, arm)
   WHERE b.policy = pol AND (s.n <> b.n
      OR abs(s.mean - b.mean) > tol * greatest(1, abs(b.mean)) OR abs(s.width - b.width) > tol * greatest(1, abs(b.width)))
$f$;

SELECT model_select.create_selector('r_' || policy, 3, ARRAY['a0', 'a1', 'a2'], policy, NULL, '{"retain": 20}')
  FROM retaining;
SELECT pg_temp.feed('r_' || policy) FROM retaining;
INSERT INTO before SELECT r.policy, s.* FROM retaining r, pg_temp.scores(r.policy) s;
INSERT INTO counts
SELECT r.policy, (SELECT count(*) FROM model_select.rewards w JOIN model_select.selectors s USING (selector_id)
                   WHERE s.name = 'r_' || r.policy),
       (SELECT count(*) FROM model_select.decisions d JOIN model_select.selectors s USING (selector_id)
         WHERE s.name = 'r_' || r.policy), 0
  FROM retaining r;
SELECT ok(model_select.maintain('r_' || policy) >= 0, policy || ': maintain() runs') FROM retaining;
SELECT is((SELECT array_agg(c ORDER BY arm) FROM (
             SELECT w.arm, count(*) AS c FROM model_select.rewards w JOIN model_select.selectors s USING (selector_id)
              WHERE s.name = 'r_' || r.policy GROUP BY w.arm) x), ARRAY[20, 20, 20]::bigint[],
          r.policy || ': each arm keeps its newest 20 rewards in the log')
  FROM retaining r;
SELECT is((SELECT sum(b.n)::bigint FROM model_select.arm_base b JOIN model_select.selectors s USING (selector_id)
            WHERE s.name = 'r_' || r.policy), c.rewards - 60,
          r.policy || ': the bases hold the other rewards')
  FROM retaining r JOIN counts c USING (policy);
SELECT is((SELECT count(*) FROM model_select.decisions d JOIN model_select.selectors s USING (selector_id)
            WHERE s.name = 'r_' || r.policy
              AND NOT EXISTS (SELECT FROM model_select.rewards w WHERE w.decision_id = d.decision_id)), 0::bigint,
          r.policy || ': the decisions of absorbed rewards are deleted with them')
  FROM retaining r;
SELECT is(pg_temp.moved(policy, 0), 0::bigint, policy || ': no score or n moved (to the bit)') FROM retaining;
SELECT model_select.rebuild_state('r_' || policy) FROM retaining;
SELECT is(pg_temp.moved(policy, 1e-9), 0::bigint, policy || ': rebuild_state() (base + retained log) gives the same scores (1e-9)')
  FROM retaining;

-- an interval: rewards created before now() - 1 day are absorbed, the rest kept
SELECT model_select.create_selector('r_time', 3, ARRAY['a0'], 'lin_ucb', NULL, '{"retain": "1 day"}');
INSERT INTO model_select.rewards(selector, arm, context, reward, created_at)
SELECT 'r_time', 'a0', p.e::float8[], (p.i % 3) / 3.0, now() - CASE WHEN p.i <= 30 THEN interval '2 days' ELSE interval '1 hour' END
  FROM prompts p WHERE p.i <= 50 ORDER BY p.i;
CREATE TEMP TABLE time_before AS SELECT * FROM model_select.scores('r_time', ARRAY[0.3, 0.2, 0.1]);
SELECT model_select.maintain('r_time');
SELECT is((SELECT count(*) FROM model_select.rewards WHERE selector = 'r_time'), 20::bigint,
          'retain "1 day": the 30 rewards created two days ago are absorbed, the 20 of the last hour kept');
SELECT model_select.rebuild_state('r_time');
SELECT ok((SELECT abs(s.mean - b.mean) <= 1e-9 AND abs(s.width - b.width) <= 1e-9 AND s.n = 50
             FROM model_select.scores('r_time', ARRAY[0.3, 0.2, 0.1]) s, time_before b),
          '... and rebuild_state() gives the same score, of 50 rewards');

-- retain where a base cannot hold the state
SELECT throws_ok($$SELECT model_select.create_selector('r_pak', 3, ARRAY['a'], 'pak_ucb', NULL, '{"retain": 10}')$$,
                 '22023', NULL, 'retain is refused for pak_ucb');
SELECT throws_ok($$SELECT model_select.create_selector('r_win', 3, ARRAY['a'], 'lin_ucb', NULL, '{"retain": 10, "window": 50}')$$,
                 '22023', NULL, 'retain is refused with a window');
SELECT throws_ok($$SELECT model_select.create_selector('r_disc', 3, ARRAY['a'], 'lin_ucb', NULL,
                   '{"retain": 10, "discount": 0.99, "clock": "selector"}')$$,
                 '22023', NULL, 'retain is refused with a discount on the selector''s clock');
SELECT throws_ok($$SELECT model_select.create_selector('r_t', 3, ARRAY['a'], 'lin_ucb', NULL,
                   '{"retain": 10, "clock": "time", "half_life": "1 day"}')$$,
                 '22023', NULL, 'retain is refused on the time clock');

-- settings changes
SELECT lives_ok($$SELECT model_select.alter_selector('r_lin_ucb', '{"retain": 30}')$$,
                'changing retain alone keeps the bases');
SELECT is((SELECT count(*) FROM model_select.arm_base b JOIN model_select.selectors s USING (selector_id)
            WHERE s.name = 'r_lin_ucb'), 3::bigint, '... (three)');
SELECT is(pg_temp.moved('lin_ucb', 1e-9), 0::bigint, '... and the scores');
SELECT model_select.alter_selector('r_lin_ucb', '{"alpha": 2}');
SELECT is((SELECT count(*) FROM model_select.arm_base b JOIN model_select.selectors s USING (selector_id)
            WHERE s.name = 'r_lin_ucb'), 0::bigint,
          'another change re-learns from the retained log only (a NOTICE says so): the bases go');
SELECT is((SELECT sum(n)::bigint FROM model_select.arm_stats WHERE selector = 'r_lin_ucb'), 60::bigint,
          '... and the arms hold the 60 retained rewards');

-- decision_ttl
SELECT model_select.create_selector('r_ttl', 3, ARRAY['a0', 'a1'], 'lin_ucb', NULL, '{"decision_ttl": "1 day"}');
CREATE TEMP TABLE ttl AS SELECT p.i, (model_select.route('r_ttl', p.e)).decision_id FROM prompts p WHERE p.i <= 10;
INSERT INTO model_select.rewards(decision_id, reward) SELECT decision_id, 0.5 FROM ttl WHERE i <= 2;
UPDATE model_select.decisions SET created_at = now() - interval '2 days'
 WHERE decision_id IN (SELECT decision_id FROM ttl WHERE i <= 6);
SELECT model_select.maintain('r_ttl');
SELECT is((SELECT array_agg(t.i ORDER BY t.i) FROM ttl t JOIN model_select.decisions d USING (decision_id)),
          ARRAY[1, 2, 7, 8, 9, 10], 'decision_ttl removes the old decisions without a reward, and only those');
SELECT throws_ok(format('INSERT INTO model_select.rewards(decision_id, reward) VALUES (%s, 0.5)',
                        (SELECT decision_id FROM ttl WHERE i = 3)),
                 '42704', format('decision %s does not exist', (SELECT decision_id FROM ttl WHERE i = 3)),
                 'a reward for a removed decision: 42704, not a foreign-key error');

SELECT * FROM finish();
ROLLBACK;
