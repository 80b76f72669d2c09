-- maintain(): the learner's pass on demand (without preloading, e.g. from
-- pg_cron): it checkpoints exactly the due arms, folds what they had
-- pending, changes no score, and needs the admin right.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(12);

SELECT model_select.create_selector(s, 3, ARRAY['a', 'b'], p)
  FROM (VALUES ('m_lin', 'lin_ucb'), ('m_pak', 'pak_ucb')) v(s, p);
-- no checkpoint by the inserts: everything stays pending
SET LOCAL model_select.checkpoint_threshold = 0;
SELECT setseed(0.5);
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT s, CASE WHEN i % 4 = 0 THEN 'b' ELSE 'a' END, ARRAY[random(), random(), random()], random()
  FROM unnest(ARRAY['m_lin', 'm_pak']) s, generate_series(1, 60) i;
SELECT is((SELECT sum(pending)::int FROM model_select.arm_stats WHERE selector = 'm_lin'), 60,
          'with checkpoint_threshold 0 every reward is pending');
CREATE TEMP TABLE before AS
SELECT s, arm, mean, width FROM unnest(ARRAY['m_lin', 'm_pak']) s,
       LATERAL model_select.scores(s, ARRAY[0.3, 0.2, 0.9]::float8[]);
SELECT is(model_select.maintain('m_lin'), 0::bigint, 'with checkpoint_threshold 0 maintain() checkpoints nothing');

SET LOCAL model_select.checkpoint_threshold = 20;
-- arm a has 45 pending, arm b 15: only a is due (20)
SELECT is(model_select.maintain('m_lin'), 45::bigint, 'maintain(m_lin) folds the 45 rewards of the due arm a');
SELECT is((SELECT array_agg(pending ORDER BY arm) FROM model_select.arm_stats WHERE selector = 'm_lin'),
          ARRAY[0, 15]::bigint[], '... and leaves arm b''s 15 pending');
SELECT is(model_select.maintain(), 45::bigint, 'maintain() over every selector folds m_pak''s due arm');
SELECT is(model_select.maintain(), 0::bigint, '... and then nothing is due');
SELECT is((SELECT count(*) FROM before b JOIN LATERAL model_select.scores(b.s, ARRAY[0.3, 0.2, 0.9]::float8[]) c
             ON c.arm = b.arm
            WHERE abs(c.mean - b.mean) > 1e-9 * greatest(1, abs(b.mean))
               OR abs(c.width - b.width) > 1e-9 * greatest(1, abs(b.width))), 0::bigint,
          'no score moved (1e-9)');
SELECT model_select.rebuild_state(s) FROM unnest(ARRAY['m_lin', 'm_pak']) s;
SELECT is((SELECT count(*) FROM before b JOIN LATERAL model_select.scores(b.s, ARRAY[0.3, 0.2, 0.9]::float8[]) c
             ON c.arm = b.arm
            WHERE abs(c.mean - b.mean) > 1e-9 * greatest(1, abs(b.mean))
               OR abs(c.width - b.width) > 1e-9 * greatest(1, abs(b.width))), 0::bigint,
          '... and every score equals rebuild_state''s (1e-9)');

-- rights: a role without the admin right
CREATE ROLE ms_maint_app;
SELECT model_select.setup_role('ms_maint_app', 'application');
SET LOCAL ROLE ms_maint_app;
SELECT throws_ok($$SELECT model_select.maintain('m_lin')$$, '42501', NULL,
                 'maintain(selector) needs the admin right');
SELECT is(model_select.maintain(), 0::bigint, 'maintain() skips the selectors the caller does not administer');
RESET ROLE;

SELECT is_empty('SELECT * FROM model_select.learner',
                'without preloading no learner runs: model_select.learner has no rows');
SELECT is_empty('SELECT * FROM model_select.learner_versions',
                'without preloading there is no shared cache: learner_versions is empty');

SELECT * FROM finish();
ROLLBACK;
