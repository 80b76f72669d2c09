-- A decision's context is stored once and compactly: as real[] when every
-- value is exactly a real (4 bytes a value), else as float8[]; a reward by
-- decision_id stores none, and every fold (readers' pending rows, checkpoints,
-- rebuild_state) reads the decision's, the same values.  A reward row that
-- repeats its decision's context (a dump of 0.2.0's log) is still taken.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(13);

SELECT model_select.create_selector('once', 4, ARRAY['a', 'b'], 'lin_ucb', NULL, '{"eta": 0.3}');
-- readers fold every reward (nothing is checkpointed by the inserts)
SET LOCAL model_select.checkpoint_threshold = 0;
SELECT setseed(0.25);
CREATE TEMP TABLE prompts AS
SELECT i, ARRAY[random(), random(), random(), random()]::real[] AS e4,
       ARRAY[random(), random(), random(), random()]::float8[] AS e8
  FROM generate_series(1, 40) i;
CREATE TEMP TABLE routed AS
SELECT p.i, (model_select.route('once', CASE WHEN p.i % 2 = 0 THEN p.e4::float8[] ELSE p.e8 END)).*
  FROM prompts p ORDER BY p.i;

SELECT is((SELECT count(*) FROM model_select.decisions d JOIN routed r USING (decision_id)
            WHERE (r.i % 2 = 0) = (d.context_real IS NOT NULL AND d.context IS NULL)), 40::bigint,
          'contexts whose values are all reals are stored as real[], the others as float8[]');
SELECT is((SELECT count(*) FROM model_select.decisions d JOIN routed r USING (decision_id) JOIN prompts p USING (i)
            WHERE COALESCE(d.context, d.context_real::float8[])
                  = CASE WHEN p.i % 2 = 0 THEN p.e4::float8[] ELSE p.e8 END), 40::bigint,
          'either reads back as the values given');
-- stored inline with a 1-byte length: 21 bytes of array header, then the values
SELECT is((SELECT max(pg_column_size(d.context_real)) FROM model_select.decisions d), 21 + 4 * 4,
          'a real[] context takes 4 bytes a value (plus the array header)');
-- route_batch(log => true): row by row, the same rule (a block mixes both)
CREATE TEMP TABLE batch AS
SELECT b.key, b.decision_id FROM model_select.route_batch('once',
  'SELECT i, CASE WHEN i % 3 = 0 THEN e8 ELSE e4::float8[] END FROM prompts', true) b;
SELECT is((SELECT count(*) FROM model_select.decisions d JOIN batch b USING (decision_id) JOIN prompts p ON p.i = b.key
            WHERE CASE WHEN p.i % 3 = 0 THEN d.context = p.e8 AND d.context_real IS NULL
                       ELSE d.context_real = p.e4 AND d.context IS NULL END), 40::bigint,
          'route_batch(log => true) stores each context as route() does, as given');
SELECT throws_ok($$INSERT INTO model_select.decisions(selector_id, arm_id, score)
                   SELECT selector_id, arm_id, 0 FROM model_select.decisions LIMIT 1$$,
                 '23514', NULL, 'a decision has exactly one of context and context_real');

INSERT INTO model_select.rewards(decision_id, reward)
SELECT r.decision_id, (r.i % 5) / 5.0 FROM routed r WHERE r.i <= 30 ORDER BY r.i;
SELECT is((SELECT count(*) FROM model_select.rewards WHERE context IS NULL), 30::bigint,
          'a reward by decision_id stores no context');
-- 0.2.0's log (as pg_dump wrote it) repeats the decision's context
INSERT INTO model_select.rewards(decision_id, context, reward)
SELECT r.decision_id, COALESCE(d.context, d.context_real::float8[]), 0.5
  FROM routed r JOIN model_select.decisions d USING (decision_id) WHERE r.i BETWEEN 31 AND 34 ORDER BY r.i;
SELECT is((SELECT count(*) FROM model_select.rewards WHERE context IS NULL), 34::bigint,
          'a reward row repeating its decision''s context is taken, and stores none');
SELECT throws_ok($$INSERT INTO model_select.rewards(decision_id, context, reward)
                   SELECT decision_id, ARRAY[1, 2, 3, 4]::float8[], 0.5 FROM routed WHERE i = 35$$,
                 '22023', 'a reward for a decision takes its context from the decision',
                 'a reward by decision with another context is refused');
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 'once', 'b', p.e4, 0.25 FROM prompts p WHERE p.i <= 4;
SELECT is((SELECT count(*) FROM model_select.rewards WHERE context IS NOT NULL AND decision_id IS NULL), 4::bigint,
          'a reward without a decision keeps its context');

-- the readers' fold (pending rows), a checkpoint's and rebuild_state's agree
CREATE TEMP TABLE pending AS
SELECT p.i, s.arm, s.mean, s.width FROM prompts p, LATERAL model_select.scores('once', p.e8) s;
SELECT is((SELECT sum(pending)::int FROM model_select.arm_stats WHERE selector = 'once'), 38,
          'every reward is pending: the scores above folded them in the reader');
SELECT model_select.checkpoint('once');
SELECT is((SELECT count(*) FROM pending b, LATERAL model_select.scores('once', (SELECT e8 FROM prompts WHERE i = b.i)) s
            WHERE s.arm = b.arm AND (s.mean <> b.mean OR s.width <> b.width)), 0::bigint,
          'checkpointed, the scores are the readers'' to the bit');
SELECT is(model_select.rebuild_state('once'), 38::bigint, 'rebuild_state() folds the 38 rewards');
SELECT is((SELECT count(*) FROM pending b, LATERAL model_select.scores('once', (SELECT e8 FROM prompts WHERE i = b.i)) s
            WHERE s.arm = b.arm AND (abs(s.mean - b.mean) > 1e-9 * greatest(1, abs(b.mean))
                                  OR abs(s.width - b.width) > 1e-9 * greatest(1, abs(b.width)))), 0::bigint,
          'rebuilt, the scores equal the readers'' (1e-9)');

SELECT * FROM finish();
ROLLBACK;
