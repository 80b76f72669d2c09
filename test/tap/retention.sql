-- The log's horizon: "retain", and without it what a window, discount or
-- restart_every can no longer count, is absorbed into the arms' bases and
-- deleted (maintain()); "decision_ttl" removes decisions without a reward.
-- For every policy, with every forgetting on the arm's and the time clock:
-- after absorption the scores have not moved (to the bit), and equal
-- rebuild_state()'s (base + retained log) at 1e-9.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;

-- Every policy with retain (pak_ucb and bkb with cap 30, so that they compact
-- within the 80 rewards an arm gets), and each policy that forgets with
-- window, discount or restart_every on the arm's and the time clock, with
-- and without retain: what the forgetting can no longer count leaves the
-- log without any setting.  kept: the log's rows after maintain() (240
-- rewards, 3 arms of at least 40; created_at one minute apart up to now()).
CREATE TEMP TABLE cases (name text, policy text, settings jsonb, kept bigint);
INSERT INTO cases
SELECT p.name || '_retain', p.name,
       CASE WHEN p.keeps_rows THEN '{"retain": 20, "cap": 30}' ELSE '{"retain": 20}' END::jsonb, 60
  FROM model_select.policies() p;
INSERT INTO cases
SELECT p.name || '_' || c.label, p.name, c.settings::jsonb, c.kept
  FROM model_select.policies() p,
       (VALUES ('window', '{"window": 15}', 45),                        -- each arm's newest 15
               ('window_retain', '{"window": 30, "retain": 10}', 30),   -- retain below the window
               ('discount', '{"discount": 0.7}', 117),                  -- 0.7^39 < 1e-6: 39 each
               ('restart', '{"restart_every": 25}', 75),
               ('time_window', '{"clock": "time", "window": "1 hour"}', 61),
               ('time_half_life', '{"clock": "time", "half_life": "5 minutes"}', 100), -- 5,980 s
               ('time_restart', '{"clock": "time", "restart_every": "1 hour"}', 61),
               ('time_retain', '{"clock": "time", "window": "1 hour", "retain": 20}', 60),
               -- the selector's clock ticks every arm's rows: its newest rows stay
               ('selector_window', '{"clock": "selector", "window": 15}', 15),
               ('selector_discount', '{"clock": "selector", "discount": 0.9}', 132), -- 0.9^132 < 1e-6
               ('selector_restart', '{"clock": "selector", "restart_every": 50}', 50),
               ('selector_retain', '{"clock": "selector", "window": 30, "retain": 10}', 10),
               ('selector_retain_interval', '{"clock": "selector", "window": 30, "retain": "1 hour"}', 61)) c(label, settings, kept)
 WHERE p.forgetting @> ARRAY['window', 'discount', 'restart_every'];
SELECT plan(19 + 5 * (SELECT count(*)::int FROM cases) + (SELECT count(*)::int FROM cases WHERE name LIKE '%_retain'));
SELECT is((SELECT array_agg(policy ORDER BY policy) FROM cases WHERE name LIKE '%time_half_life'),
          ARRAY['greedy', 'lin_ucb', 'pak_ucb', 'rff_ucb'], 'the policies that forget: pak_ucb, lin_ucb, rff_ucb and greedy');

SET LOCAL model_select.checkpoint_threshold = 16;
SELECT setseed(0.29);
CREATE TEMP TABLE prompts AS
SELECT i, ARRAY[random(), random(), random()]::real[] AS e FROM generate_series(1, 240) i;

-- Per case: 240 rewards over 3 arms (routed and rewarded by decision, or
-- by name with a cost); scores before and after maintain().
CREATE FUNCTION pg_temp.feed(sel text) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
  p record;
  d record;
BEGIN
  FOR p IN SELECT * FROM prompts ORDER BY i LOOP
    IF p.i % 2 = 0 THEN
      SELECT * INTO d FROM model_select.route(sel, p.e);
      INSERT INTO model_select.rewards(decision_id, reward, cost, created_at)
      VALUES (d.decision_id, (p.i % 7) / 7.0, p.i / 100.0, now() - (240 - p.i) * interval '1 minute');
    ELSE
      INSERT INTO model_select.rewards(selector, arm, context, reward, created_at)
      VALUES (sel, 'a' || (p.i % 3), p.e::float8[], (p.i % 5) / 5.0, now() - (240 - p.i) * interval '1 minute');
    END IF;
  END LOOP;
END $f$;
CREATE TEMP TABLE before (policy text, i int, arm text, n bigint, mean float8, width float8);
CREATE FUNCTION pg_temp.scores(c text) RETURNS TABLE (i int, arm text, n bigint, mean float8, width float8)
LANGUAGE sql AS $f$
  SELECT p.i, s.arm, s.n, s.mean, s.width FROM prompts p, model_select.scores('r_' || c, p.e) s WHERE p.i % 40 = 0
$f$;
-- rows of `now` that differ from `before` beyond tol (relative), and n's that differ at all;
-- equal values are equal first, as an arm with no row that counts scores Infinity (on the time
-- clock with restart_every, in the first minutes of an hour) and Infinity - Infinity is NaN
CREATE FUNCTION pg_temp.moved(c text, tol float8) RETURNS bigint LANGUAGE sql AS $f$
  SELECT count(*) FROM before b FULL JOIN (SELECT * FROM pg_temp.scores(c)) s USING (i, arm)
   WHERE b.policy = c AND (s.n IS DISTINCT FROM b.n
      OR (s.mean IS DISTINCT FROM b.mean AND NOT abs(s.mean - b.mean) <= tol * greatest(1, abs(b.mean)))
      OR (s.width IS DISTINCT FROM b.width AND NOT abs(s.width - b.width) <= tol * greatest(1, abs(b.width))))
      OR b.policy IS NULL
$f$;
CREATE FUNCTION pg_temp.logged(c text) RETURNS bigint LANGUAGE sql AS $f$
  SELECT count(*) FROM model_select.rewards w JOIN model_select.selectors s USING (selector_id) WHERE s.name = 'r_' || c
$f$;
CREATE FUNCTION pg_temp.absorbed(c text) RETURNS bigint LANGUAGE sql AS $f$
  SELECT coalesce(sum(b.n), 0)::bigint FROM model_select.arm_base b JOIN model_select.selectors s USING (selector_id)
   WHERE s.name = 'r_' || c
$f$;

SET LOCAL client_min_messages = warning;  -- the arm's clock's NOTICE
SELECT model_select.create_selector('r_' || name, 3, ARRAY['a0', 'a1', 'a2'], policy, NULL, settings) FROM cases;
RESET client_min_messages;
SELECT pg_temp.feed('r_' || name) FROM cases;
-- (reward inserts checkpoint only as their transaction commits, which this file's never does)
SELECT model_select.checkpoint('r_' || name) FROM cases;
INSERT INTO before SELECT c.name, s.* FROM cases c, pg_temp.scores(c.name) s;
SELECT ok(model_select.maintain('r_' || name) >= 0, name || ': maintain() runs') FROM cases;
SELECT is(pg_temp.logged(name), kept, name || ': the log keeps ' || kept || ' rewards') FROM cases;
SELECT is(pg_temp.absorbed(name), 240 - kept, name || ': the bases hold the other ' || 240 - kept) FROM cases;
SELECT is((SELECT count(*) FROM model_select.decisions d JOIN model_select.selectors s USING (selector_id)
            WHERE s.name = 'r_' || c.name
              AND NOT EXISTS (SELECT FROM model_select.rewards w WHERE w.decision_id = d.decision_id)), 0::bigint,
          c.name || ': the decisions of absorbed rewards are deleted with them')
  FROM cases c WHERE c.name LIKE '%_retain';
SELECT is(pg_temp.moved(name, 0), 0::bigint, name || ': no score or n moved (to the bit)') FROM cases;
SELECT model_select.rebuild_state('r_' || name) FROM cases;
SELECT is(pg_temp.moved(name, 1e-9), 0::bigint, name || ': rebuild_state() (base + retained log) gives the same scores (1e-9)')
  FROM cases;

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

-- On the selector's clock an arm added after a pass ticks on from the rows
-- absorbed (every base counts them): before its first checkpoint, after it
-- and from scratch.
SELECT model_select.add_arm('r_lin_ucb_selector_window', 'a3');
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 'r_lin_ucb_selector_window', 'a' || (p.i % 4), p.e::float8[], (p.i % 3) / 3.0 FROM prompts p WHERE p.i <= 6 ORDER BY p.i;
DELETE FROM before WHERE policy = 'lin_ucb_selector_window';
INSERT INTO before SELECT 'lin_ucb_selector_window', s.* FROM pg_temp.scores('lin_ucb_selector_window') s;
SELECT is((SELECT count(*) FROM before WHERE policy = 'lin_ucb_selector_window' AND arm = 'a3' AND n = 1), 6::bigint,
          'selector clock: an arm added after absorption scores with its first reward');
SELECT model_select.checkpoint('r_lin_ucb_selector_window');
SELECT is(pg_temp.moved('lin_ucb_selector_window', 0), 0::bigint, '... a checkpoint moves no score (to the bit)');
SELECT model_select.rebuild_state('r_lin_ucb_selector_window');
SELECT is(pg_temp.moved('lin_ucb_selector_window', 1e-9), 0::bigint, '... nor does rebuild_state() (1e-9)');
SELECT model_select.maintain('r_lin_ucb_selector_window');
SELECT is(pg_temp.logged('lin_ucb_selector_window'), 15::bigint, '... and a second pass keeps the selector''s newest 15');
SELECT is(pg_temp.moved('lin_ucb_selector_window', 0), 0::bigint, '... moving no score (to the bit)');
SELECT model_select.rebuild_state('r_lin_ucb_selector_window');
SELECT is(pg_temp.moved('lin_ucb_selector_window', 1e-9), 0::bigint, '... and rebuild_state() gives the same (1e-9)');

-- settings changes
DELETE FROM before WHERE policy = 'lin_ucb_retain';
INSERT INTO before SELECT 'lin_ucb_retain', s.* FROM pg_temp.scores('lin_ucb_retain') s;
CREATE TEMP TABLE horizon_before AS
SELECT s.settings_version, st.arm_id, st.version FROM model_select.selectors s JOIN model_select.arm_state st USING (selector_id)
 WHERE s.name = 'r_lin_ucb_retain';
SELECT is(model_select.alter_selector('r_lin_ucb_retain', '{"retain": 30, "decision_ttl": "1 day"}'), 0::bigint,
          'changing retain and decision_ttl alone re-applies no reward');
SELECT is((SELECT count(*) FROM model_select.arm_base b JOIN model_select.selectors s USING (selector_id)
            WHERE s.name = 'r_lin_ucb_retain'), 3::bigint, '... keeps the bases (three)');
SELECT is((SELECT count(*) FROM horizon_before h JOIN model_select.arm_state st USING (arm_id)
             JOIN model_select.selectors s USING (selector_id)
            WHERE st.version = h.version AND st.settings_version = h.settings_version
              AND s.settings_version = h.settings_version AND s.settings @> '{"retain": 30, "decision_ttl": 86400}'),
          3::bigint, '... stores the new horizon and keeps settings_version and every checkpoint');
SELECT is(pg_temp.moved('lin_ucb_retain', 0), 0::bigint, '... and the scores, to the bit');
SELECT model_select.alter_selector('r_lin_ucb_retain', '{"retain": 10}');
SELECT model_select.maintain('r_lin_ucb_retain');
SELECT is(pg_temp.logged('lin_ucb_retain'), 30::bigint, '... and the next pass applies the new horizon: a retain of 10 keeps 30');
SELECT is(pg_temp.moved('lin_ucb_retain', 0), 0::bigint, '... moving no score (to the bit)');
SELECT model_select.alter_selector('r_lin_ucb_retain', '{"alpha": 2}');
SELECT is((SELECT count(*) FROM model_select.arm_base b JOIN model_select.selectors s USING (selector_id)
            WHERE s.name = 'r_lin_ucb_retain'), 0::bigint,
          'another change re-learns from the retained log only (a NOTICE says so): the bases go');
SELECT is((SELECT sum(n)::bigint FROM model_select.arm_stats WHERE selector = 'r_lin_ucb_retain'), 30::bigint,
          '... and the arms hold the 30 retained rewards');

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
