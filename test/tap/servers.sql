-- Ids that survive sharding (issue 43): set_server_id(n) puts this server's
-- decision, reward, cascade and observation ids in [n * 2^48 + 1,
-- (n + 1) * 2^48 - 1]; a reward for a decision of another server's range
-- is refused (42704) and nothing is learned; reward() is the INSERT by
-- function call, with the same checks and rights.  (Two servers drawing
-- disjoint ids: test/session/server_ids.sh.)
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(20);

SELECT model_select.create_selector('srv', 2, ARRAY['a', 'b'], 'lin_ucb');
SELECT is(model_select.server_id(), 0, 'a fresh install is server 0');
-- a decision drawn as server 0, then the server numbered 3
CREATE TEMP TABLE d0 AS SELECT * FROM model_select.route('srv', ARRAY[0.1, 0.2]);
SELECT is(model_select.set_server_id(3), 3, 'set_server_id(3) returns the number');
SELECT is(model_select.server_id(), 3, 'server_id() reads it back');
CREATE TEMP TABLE d3 AS SELECT * FROM model_select.route('srv', ARRAY[0.3, 0.4]);
SELECT is((SELECT decision_id FROM d3), (3::bigint << 48) + 1, 'the next decision_id is 3 * 2^48 + 1');
SELECT is(model_select.reward((SELECT decision_id FROM d3), 0.75) >> 48, 3::bigint,
          'reward() returns a reward_id of the same range');
CREATE TEMP TABLE c3 AS SELECT * FROM model_select.cascade_route('srv', ARRAY[0.3, 0.4]);
SELECT is((SELECT cascade_id FROM c3) >> 48, 3::bigint, 'cascade ids are drawn from it too');
SELECT is(model_select.set_server_id(3), 3, 'setting the same number again is harmless');
CREATE TEMP TABLE d3b AS SELECT * FROM model_select.route('srv', ARRAY[0.5, 0.4]);
SELECT is((SELECT decision_id FROM d3b), (3::bigint << 48) + 2, '... and keeps drawing where it was');

-- another server's decision of the same low bits: refused, nothing learned
SELECT throws_ok(format('SELECT model_select.reward(%s, 0.5)', (5::bigint << 48) + 1), '42704',
                 format('decision %s does not exist', (5::bigint << 48) + 1),
                 'reward() for a decision of server 5 is refused (42704)');
SELECT throws_ok(format('INSERT INTO model_select.rewards (decision_id, reward) VALUES (%s, 0.5)', (5::bigint << 48) + 2),
                 '42704', NULL, 'so is the INSERT');
SELECT is((SELECT count(*) FROM model_select.rewards), 1::bigint, 'only the one reward is logged');
SELECT is((SELECT sum(n) FROM model_select.arm_stats WHERE selector = 'srv'), 1::numeric, 'and learned');

-- reward() takes the INSERT's path: its checks and the decision's arm
SELECT throws_ok(format('SELECT model_select.reward(%s, 0.5)', (SELECT decision_id FROM d3)), '23505', NULL,
                 'a second reward for a decision is refused as the INSERT''s is');
SELECT throws_ok(format('SELECT model_select.reward(%s, ''NaN'')', (SELECT decision_id FROM d0)), '22003', NULL,
                 'a NaN reward too');
SELECT is(model_select.reward('srv', 'b', ARRAY[0.5, 0.5], 0.25, 1.5) >> 48, 3::bigint,
          'reward(selector, arm, context, reward, cost) logs a reward without a decision');
SELECT is((SELECT row(arm, reward, cost)::text FROM model_select.rewards WHERE decision_id IS NULL),
          '(b,0.25,1.5)', 'with its arm, reward and cost');

-- bad input and rights: a role with the route right only
CREATE ROLE srv_router;
SELECT model_select.setup_role('srv_router', 'application');
SELECT model_select.grant_selector('srv', 'srv_router', 'route');
SELECT set_config('srv.decision', (SELECT decision_id FROM d3b)::text, true);
SET LOCAL ROLE srv_router;
SELECT throws_ok(format('SELECT model_select.reward(%s, 0.5)', current_setting('srv.decision')), '42501', NULL,
                 'reward() needs the reward right, as the INSERT does');
RESET ROLE;
SELECT throws_ok('SELECT model_select.set_server_id(32768)', '22023', NULL, 'a number past 32767 is refused');
SELECT throws_ok('SELECT model_select.set_server_id(NULL)', '22023', NULL, 'so is NULL');
-- ids of server 4's range held here (moved from server 4): taking its number is refused
INSERT INTO model_select.rewards (reward_id, selector, arm, context, reward)
VALUES ((4::bigint << 48) + 7, 'srv', 'a', ARRAY[0.1, 0.1], 0.5);
SELECT throws_ok('SELECT model_select.set_server_id(4)', '55000', NULL,
                 'a number whose ids the server already holds is refused');

SELECT * FROM finish();
ROLLBACK;
