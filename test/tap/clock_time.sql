-- The time clock ("clock": "time", src/learning/clock.c): window, half_life and
-- restart_every in seconds of the rewards' created_at, so an arm that is not
-- chosen still ages.  The whole file runs in one transaction, so now() (the
-- clock's now) is fixed: rewards are back-dated with created_at, and greedy
-- means are checked against their definition computed here in SQL; live
-- scores of the contextual policies equal rebuild_state()'s, with rows pending
-- and after checkpoints; out-of-order created_at, cap, settings and replay().
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(46);

-- rewards stay pending unless a test checkpoints
SET LOCAL model_select.checkpoint_threshold = 0;

-- 240 rewards over four days, 24 minutes apart; every 5th is back-dated by
-- 2 hours (older than rows logged before it: its tick is its arm's latest).
-- restart_at: the same rows, the last 40 in today's UTC day so far (periods
-- of restart_every start at the epoch) and the others before it.
CREATE TEMP TABLE tfeed AS
SELECT round, context, reward[1 + round % 2] AS reward,
       (ARRAY['a', 'b', 'c'])[1 + (round * 7 + round / 5) % 3] AS arm,
       now() - make_interval(secs => (240 - round) * 1440 + 37.3 + CASE WHEN round % 5 = 0 THEN 7200 ELSE 0 END)
           AS created_at,
       CASE WHEN round > 200 THEN today + (now() - today) * ((round - 200) / 41.0)
            ELSE today - make_interval(secs => (200 - round) * 1440 + 0.7) END AS restart_at
  FROM model_select.synthetic_clusters(240, 4, 2, 2, 81),
       LATERAL (SELECT date_trunc('day', now(), 'UTC') AS today) d;
CREATE TEMP TABLE tprobes AS SELECT round AS probe, context FROM model_select.synthetic_clusters(10, 4, 2, 2, 82);

-- Feed rows (lo, hi] one INSERT each, at the times of column `at`.
CREATE FUNCTION pg_temp.tfeed(sel text, lo int, hi int, at text DEFAULT 'created_at') RETURNS void LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
    FOR r IN SELECT * FROM tfeed WHERE round > lo AND round <= hi ORDER BY round LOOP
        INSERT INTO model_select.rewards(selector, arm, context, reward, created_at)
        VALUES (sel, r.arm, r.context, r.reward, (to_jsonb(r) ->> at)::timestamptz);
    END LOOP;
END $$;

-- The definition of a greedy arm's mean on the time clock, w, h, r in seconds
-- (NULL: off): ticks are the arm's running latest created_at in canonical
-- order (epoch seconds); the arm is evaluated at e = max(now, its latest tick),
-- under a half-life with now rounded down to a multiple of h/256.
CREATE FUNCTION pg_temp.time_mean(sel text, arm_name text, w float8, h float8, r float8) RETURNS float8
LANGUAGE sql AS $$
    WITH log AS (
        SELECT rw.reward, max(extract(epoch FROM rw.created_at)::float8)
                   OVER (ORDER BY rw.tx, rw.seq) AS tick
          FROM model_select.rewards rw JOIN model_select.arms a USING (arm_id)
          JOIN model_select.selectors s ON s.selector_id = a.selector_id
         WHERE s.name = sel AND a.name = arm_name),
    clock AS (
        SELECT greatest(CASE WHEN h IS NULL THEN extract(epoch FROM now())::float8
                             ELSE floor(extract(epoch FROM now())::float8 / (h / 256)) * (h / 256) END,
                        (SELECT max(tick) FROM log)) AS e),
    counting AS (
        SELECT reward, CASE WHEN h IS NULL THEN 1 ELSE 2 ^ (-(e - tick) / h) END AS weight
          FROM log, clock
         WHERE (w IS NULL OR tick > e - w)
           AND (r IS NULL OR floor(tick / r) = floor(e / r))
           AND (h IS NULL OR e - tick < ceil(h * ln(1e6) / ln(2))))
    SELECT sum(weight * reward) / nullif(sum(weight), 0) FROM counting
$$;

-- Largest difference between each arm's greedy mean and its definition (unlearned: both NULL/Infinity).
CREATE FUNCTION pg_temp.time_gap(sel text, w float8, h float8, r float8) RETURNS float8 LANGUAGE sql AS $$
    SELECT max(CASE WHEN d IS NULL THEN (s.mean <> 'Infinity')::int ELSE abs(s.mean - d) END)
      FROM model_select.scores(sel, (SELECT context FROM tprobes LIMIT 1)) s,
           LATERAL pg_temp.time_mean(sel, s.arm, w, h, r) d
$$;

SELECT model_select.create_selector('tw', 4, ARRAY['a', 'b', 'c'], 'greedy', NULL, '{"window": "1 day", "clock": "time"}');
SELECT model_select.create_selector('th', 4, ARRAY['a', 'b', 'c'], 'greedy', NULL, '{"half_life": "12 hours", "clock": "time"}');
SELECT model_select.create_selector('tr', 4, ARRAY['a', 'b', 'c'], 'greedy', NULL, '{"restart_every": "1 day", "clock": "time"}');
SELECT pg_temp.tfeed(s, 0, 200) FROM unnest(ARRAY['tw', 'th']) s;
SELECT pg_temp.tfeed('tr', 0, 220, 'restart_at');
SELECT cmp_ok(pg_temp.time_gap('tw', 86400, NULL, NULL), '<', 1e-12::float8,
              'greedy window 1 day: mean of the arm''s rows with tick > now - 86400 (pending)');
SELECT cmp_ok(pg_temp.time_gap('th', NULL, 43200, NULL), '<', 1e-12::float8,
              'greedy half_life 12 hours: weights 2^(-(now - tick)/43200) (pending)');
SELECT cmp_ok(pg_temp.time_gap('tr', NULL, NULL, 86400), '<', 1e-12::float8,
              'greedy restart_every 1 day: the rows of the current UTC day (pending)');
SELECT ok((SELECT count(*) FILTER (WHERE mean < 'Infinity') FROM model_select.scores('tr', (SELECT context FROM tprobes LIMIT 1))) >= 2,
          'today''s 20 rows teach the restarted arms');
SELECT ok((SELECT count(*) FILTER (WHERE mean < 'Infinity') FROM model_select.scores('tw', (SELECT context FROM tprobes LIMIT 1))) >= 2
          AND (SELECT count(*) FROM model_select.rewards r JOIN model_select.arms a USING (arm_id)
                 JOIN model_select.selectors s ON s.selector_id = a.selector_id
                WHERE s.name = 'tw' AND r.created_at < now() - interval '1 day') > 100,
          'the rows fed span 3.3 days, the last 16 hours old: the window holds some, most have expired');
SELECT model_select.checkpoint(s) FROM unnest(ARRAY['tw', 'th', 'tr']) s;
SELECT pg_temp.tfeed(s, 200, 240) FROM unnest(ARRAY['tw', 'th']) s;
SELECT pg_temp.tfeed('tr', 220, 240, 'restart_at');
SELECT cmp_ok(pg_temp.time_gap('tw', 86400, NULL, NULL), '<', 1e-12::float8, 'window: the same after a checkpoint, rows pending after it');
SELECT cmp_ok(pg_temp.time_gap('th', NULL, 43200, NULL), '<', 1e-12::float8, 'half_life: the same after a checkpoint');
SELECT cmp_ok(pg_temp.time_gap('tr', NULL, NULL, 86400), '<', 1e-12::float8, 'restart_every: the same after a checkpoint');
SELECT model_select.rebuild_state(s) FROM unnest(ARRAY['tw', 'th', 'tr']) s;
SELECT cmp_ok(pg_temp.time_gap('tw', 86400, NULL, NULL) + pg_temp.time_gap('th', NULL, 43200, NULL)
              + pg_temp.time_gap('tr', NULL, NULL, 86400), '<', 1e-12::float8, 'and after rebuild_state');
SELECT ok((SELECT count(DISTINCT mean) FROM model_select.scores('tw', (SELECT context FROM tprobes LIMIT 1))) = 3
          AND (SELECT bool_and(mean < 'Infinity') FROM model_select.scores('tw', (SELECT context FROM tprobes LIMIT 1))),
          'with the last day''s rows every arm has a window mean of its own');

-- An arm that is not chosen ages: a's rewards are 25 hours old, b's 1 hour.
SELECT model_select.create_selector('tage', 4, ARRAY['a', 'b'], 'greedy', NULL, '{"window": "1 day", "clock": "time"}');
SELECT model_select.create_selector('tage_arm', 4, ARRAY['a', 'b'], 'greedy', NULL, '{"window": 5}');
INSERT INTO model_select.rewards(selector, arm, context, reward, created_at)
SELECT s, v.arm, (SELECT context FROM tprobes LIMIT 1), v.reward, now() - v.age
  FROM unnest(ARRAY['tage', 'tage_arm']) s,
       (VALUES (1, 'a', 1, interval '25 hours'), (2, 'a', 1, interval '24 hours 1 minute'),
               (3, 'b', 0, interval '1 hour'), (4, 'a', 0.5, interval '23 hours')) v(k, arm, reward, age)
 ORDER BY s, v.k;
SELECT is((SELECT mean FROM model_select.scores('tage', (SELECT context FROM tprobes LIMIT 1)) WHERE arm = 'a'), 0.5::float8,
          'of a''s rows only the one 23 hours old is in the window of 1 day');
DELETE FROM model_select.rewards r USING model_select.selectors s
 WHERE s.selector_id = r.selector_id AND s.name IN ('tage', 'tage_arm') AND r.reward = 0.5;
SELECT model_select.rebuild_state(s) FROM unnest(ARRAY['tage', 'tage_arm']) s;
SELECT is((SELECT mean FROM model_select.scores('tage', (SELECT context FROM tprobes LIMIT 1)) WHERE arm = 'a'), 'Infinity'::float8,
          'without it a is unlearned again: it aged without being chosen');
SELECT is((SELECT mean FROM model_select.scores('tage', (SELECT context FROM tprobes LIMIT 1)) WHERE arm = 'b'), 0::float8,
          'while b keeps its recent reward');
SELECT is((SELECT mean FROM model_select.scores('tage_arm', (SELECT context FROM tprobes LIMIT 1)) WHERE arm = 'a'), 1::float8,
          'on the arm''s clock the same arm never forgets');

-- Out of order: a row with an earlier created_at than one logged before it
-- counts as of that one's time; it never makes an expired row count again.
SELECT model_select.create_selector('tooo', 4, ARRAY['a'], 'greedy', NULL, '{"window": "1 day", "clock": "time"}');
INSERT INTO model_select.rewards(selector, arm, context, reward, created_at)
SELECT 'tooo', 'a', (SELECT context FROM tprobes LIMIT 1), v.reward, now() - v.age
  FROM (VALUES (1, 0, interval '30 hours'), (2, 1, interval '2 hours'), (3, 0.5, interval '40 hours')) v(k, reward, age) ORDER BY k;
SELECT is((SELECT mean FROM model_select.scores('tooo', (SELECT context FROM tprobes LIMIT 1))), 0.75::float8,
          'a row back-dated 40 hours after one of 2 hours counts as 2 hours old; the row of 30 hours stays out');
SELECT model_select.checkpoint('tooo');
SELECT is((SELECT mean FROM model_select.scores('tooo', (SELECT context FROM tprobes LIMIT 1))), 0.75::float8,
          'the same from a checkpoint');

-- Cap: on the time clock an arm keeps at most its newest cap rows.
SELECT model_select.create_selector('tcap', 4, ARRAY['a'], 'greedy', NULL, '{"window": "30 days", "clock": "time", "cap": 10}');
INSERT INTO model_select.rewards(selector, arm, context, reward, created_at)
SELECT 'tcap', 'a', (SELECT context FROM tprobes LIMIT 1), (g > 40)::int, now() - make_interval(hours => 50 - g)
  FROM generate_series(1, 50) g ORDER BY g;
SELECT is((SELECT mean FROM model_select.scores('tcap', (SELECT context FROM tprobes LIMIT 1))), 1::float8,
          'cap 10: the mean of the newest 10 of 50 rows in the window');

-- Contextual policies: live (pending, then after a checkpoint) = rebuild_state at 1e-9.
CREATE FUNCTION pg_temp.tsnap(sel text) RETURNS TABLE(probe int, arm text, mean float8, width float8) LANGUAGE sql AS $$
    SELECT p.probe, s.arm, s.mean, s.width FROM tprobes p CROSS JOIN LATERAL model_select.scores(sel, p.context) s
$$;
CREATE FUNCTION pg_temp.time_case(pol text, settings jsonb) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
    sel text := pol || md5(settings::text);
    at text := CASE WHEN settings ? 'restart_every' THEN 'restart_at' ELSE 'created_at' END;
    gap float8;
BEGIN
    PERFORM model_select.create_selector(sel, 4, ARRAY['a', 'b', 'c'], pol, NULL, settings || '{"clock": "time"}', 1);
    PERFORM pg_temp.tfeed(sel, 0, 210, at);
    PERFORM model_select.checkpoint(sel);
    PERFORM pg_temp.tfeed(sel, 210, 240, at);
    CREATE TEMP TABLE tlive ON COMMIT DROP AS SELECT * FROM pg_temp.tsnap(sel);
    PERFORM model_select.rebuild_state(sel);
    SELECT max(CASE WHEN l.mean = 'Infinity' OR r.mean = 'Infinity' THEN (l.mean <> r.mean)::int
                    ELSE greatest(abs(l.mean - r.mean) / greatest(1, abs(r.mean)),
                                  abs(l.width - r.width) / greatest(1, abs(r.width))) END)
      INTO gap FROM tlive l JOIN pg_temp.tsnap(sel) r USING (probe, arm);
    IF (SELECT count(*) FROM tlive WHERE mean < 'Infinity') = 0 THEN
        gap := 1;  -- nothing learned: the comparison would prove nothing
    END IF;
    DROP TABLE tlive;
    RETURN gap;
END $$;
SELECT cmp_ok(pg_temp.time_case('lin_ucb', '{"window": "1 day"}'), '<', 1e-9::float8, 'lin_ucb window 1 day: live = rebuild_state');
SELECT cmp_ok(pg_temp.time_case('lin_ucb', '{"half_life": "12 hours"}'), '<', 1e-9::float8, 'lin_ucb half_life 12 hours: live = rebuild_state');
SELECT cmp_ok(pg_temp.time_case('lin_ucb', '{"restart_every": "1 day"}'), '<', 1e-9::float8, 'lin_ucb restart_every 1 day: live = rebuild_state');
SELECT cmp_ok(pg_temp.time_case('rff_ucb', '{"window": "1 day", "features": 16}'), '<', 1e-9::float8, 'rff_ucb window 1 day: live = rebuild_state');
SELECT cmp_ok(pg_temp.time_case('pak_ucb', '{"window": "1 day"}'), '<', 1e-9::float8, 'pak_ucb window 1 day: live = rebuild_state');
SELECT cmp_ok(pg_temp.time_case('pak_ucb', '{"half_life": "12 hours"}'), '<', 1e-9::float8, 'pak_ucb half_life 12 hours: live = rebuild_state');

-- Settings: durations normalised to seconds, bad ones refused.
SELECT is(model_select.resolve_settings('lin_ucb', NULL, '{"clock": "time", "window": "7 days"}') -> 'window', '604800'::jsonb,
          'window "7 days" is 604800 seconds');
SELECT is(model_select.resolve_settings('greedy', NULL, '{"clock": "time", "restart_every": "1 mon"}') -> 'restart_every', '2592000'::jsonb,
          'a month is 30 days, as extract(epoch from interval) counts it');
SELECT is(model_select.resolve_settings('greedy', NULL, '{"clock": "time", "half_life": "PT90M"}') -> 'half_life', '5400'::jsonb,
          'half_life in ISO 8601: 90 minutes');
SELECT is(model_select.resolve_settings('greedy', NULL, '{"clock": "time", "window": 3600}') - 'reward_min' - 'reward_max' - 'cost_weight' - 'budget',
          '{"cap": 2000, "clock": "time", "window": 3600, "half_life": 0, "restart_every": 0}'::jsonb,
          'a number is seconds; cap applies on the time clock');
CREATE FUNCTION pg_temp.refused(settings text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM model_select.resolve_settings('lin_ucb', NULL, settings::jsonb);
    RETURN 'accepted';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;
SELECT is(array_agg(pg_temp.refused(s) ORDER BY s), array_fill('22023'::text, ARRAY[count(*)::int]),
          'bad durations and keys are refused with 22023: ' || string_agg(s, ' ' ORDER BY s))
  FROM unnest(ARRAY['{"clock": "time", "window": "-1 day"}', '{"clock": "time", "window": "0 seconds"}',
                    '{"clock": "time", "window": "1.5 seconds"}', '{"clock": "time", "window": "soon"}',
                    '{"clock": "time", "window": true}', '{"clock": "time", "window": -5}',
                    '{"clock": "time", "window": "100 years"}', '{"clock": "time", "discount": 0.9}',
                    '{"clock": "time", "window": "1 day", "half_life": "1 day"}', '{"half_life": "1 day"}',
                    '{"half_life": 3600}', '{"window": "1 day"}', '{"clock": "time"}']) s;
SELECT throws_ok($$INSERT INTO model_select.rewards(selector, arm, context, reward, created_at)
                   VALUES ('tooo', 'a', (SELECT context FROM tprobes LIMIT 1), 1, 'infinity')$$,
                 '22008', 'a reward''s created_at must be finite on the time clock', 'a reward at infinity is refused');
SELECT lives_ok($$INSERT INTO model_select.rewards(selector, arm, context, reward, created_at)
                  VALUES ('tage_arm', 'a', (SELECT context FROM tprobes LIMIT 1), 1, '-infinity')$$,
                'on the arm''s clock created_at is not read');
SELECT throws_ok($$SELECT * FROM model_select.replay('SELECT context, reward, NULL::real[], expected FROM model_select.synthetic_clusters(10, 4, 2, 2, 1)',
                                                      'greedy', settings => '{"clock": "time", "window": "1 day"}')$$,
                 '22023', NULL, 'replay() refuses the time clock: its rows have no time');

-- alter_selector() to another clock: the other clock's forgetting keys that
-- are off are not carried over; one that is on must be given again.
SELECT model_select.create_selector('switch', 2, ARRAY['a', 'b'], 'lin_ucb', NULL, '{}', 1);
SELECT model_select.create_selector('switch_window', 2, ARRAY['a', 'b'], 'lin_ucb', NULL, '{"window": 300}', 1);
SELECT lives_ok($$SELECT model_select.alter_selector('switch', '{"clock": "time", "half_life": "1 hour"}')$$,
                'a selector with default settings moves to the time clock with a half_life');
SELECT is((SELECT (settings->>'clock', settings->>'half_life', settings ? 'discount')::text
             FROM model_select.selectors WHERE name = 'switch'),
          '(time,3600,f)', '... which it then has, without the arm clock''s discount');
SELECT lives_ok($$SELECT model_select.alter_selector('switch', '{"eta": 0.6}')$$,
                'another key changed on the time clock with only a half_life');
SELECT is((SELECT (settings->>'clock', settings->>'half_life', settings->>'eta')::text
             FROM model_select.selectors WHERE name = 'switch'),
          '(time,3600,0.6)', '... keeps the clock and the half_life');
SELECT lives_ok($$SELECT model_select.alter_selector('switch', '{"half_life": "2 hours"}')$$,
                'a new half_life without the clock given again');
SELECT is((SELECT (settings->>'clock', settings->>'half_life')::text
             FROM model_select.selectors WHERE name = 'switch'),
          '(time,7200)', '... is taken, on the time clock');
SELECT throws_ok($$SELECT model_select.alter_selector('switch', '{"clock": "arm"}')$$, '22023',
                 'invalid setting "clock": changing it from "time" to "arm" changes what "half_life" counts',
                 'back to the arm clock with half_life on: refused, half_life must be given again');
SELECT lives_ok($$SELECT model_select.alter_selector('switch', '{"clock": "arm", "half_life": 0}')$$,
                '... and with half_life 0 it moves back');
SELECT is((SELECT settings FROM model_select.selectors WHERE name = 'switch'),
          model_select.resolve_settings('lin_ucb', NULL, '{"eta": 0.6}', 2), '... to the settings of a fresh selector (with its eta)');
SELECT throws_ok($$SELECT model_select.alter_selector('switch_window', '{"clock": "time"}')$$, '22023',
                 'invalid setting "clock": changing it from "arm" to "time" changes what "window" counts',
                 'a window of 300 rewards does not silently become 300 seconds');

-- alter_selector() keeps the current settings that still apply and drops the
-- rest: a window turned off, confidence back to fixed, a budget turned off.
SELECT model_select.create_selector('alter_off', 2, ARRAY['a', 'b'], 'lin_ucb', NULL, '{"window": 300}', 1);
SELECT model_select.create_selector('alter_conf', 2, ARRAY['a', 'b'], 'lin_ucb', NULL, '{"confidence": "dmm", "alpha": 2}', 1);
SELECT model_select.create_selector('alter_budget', 2, ARRAY['a', 'b'], 'lin_ucb', NULL, '{"budget": 0.5, "pace": 20}', 1);
SELECT is(model_select_internal._resolve_settings_over('lin_ucb', NULL, '{"window": 0}', 2,
                                              (SELECT settings FROM model_select.selectors WHERE name = 'alter_off')),
          model_select.resolve_settings('lin_ucb', NULL, '{}', 2), 'a window turned off: the settings of a fresh selector');
SELECT is(model_select_internal._resolve_settings_over('lin_ucb', NULL, '{"confidence": "fixed"}', 2,
                                              (SELECT settings FROM model_select.selectors WHERE name = 'alter_conf')),
          model_select.resolve_settings('lin_ucb', NULL, '{"alpha": 2}', 2),
          'confidence back to fixed: alpha kept, the bounds'' keys (grid, noise, ...) dropped');
SELECT is(model_select_internal._resolve_settings_over('lin_ucb', NULL, '{"window": 0}', 2,
                                              model_select.resolve_settings('lin_ucb', NULL, '{"clock": "selector", "window": 300}', 2)),
          model_select.resolve_settings('lin_ucb', NULL, '{}', 2),
          'a window on the selector''s clock turned off: the clock goes with it');
SELECT lives_ok($$SELECT model_select.alter_selector('alter_budget', '{"budget": 0, "cost_weight": 0.1}')$$,
                'a budget turned off for a cost weight (pace no longer applies)');
SELECT throws_ok($$SELECT model_select.alter_selector('alter_budget', '{"pace": 10}')$$, '22023',
                 'invalid setting "pace": does not apply to this policy, kernel and confidence',
                 'a given key must still apply');

SELECT * FROM finish();
ROLLBACK;
