-- drift(): the change detector.  Before an abrupt switch of the best arm the
-- observed rewards agree with the predictions logged at decision time; soon
-- after it, some arm's gap is many standard errors wide.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(5);

SELECT lives_ok($$SELECT model_select.create_selector('d', 8, ARRAY['a1', 'a2'], 'lin_ucb', NULL, '{}', 1)$$, 'lin_ucb selector');
CREATE TEMP TABLE stream AS SELECT * FROM model_select.synthetic_clusters(1300, 8, 2, NULL, 3, 0.1, switch_every => 1200);
CREATE TEMP TABLE seen (at int, arm text, n bigint, gap float8, z float8);
DO $$
DECLARE r record; d record;
BEGIN
    FOR r IN SELECT * FROM stream ORDER BY round LOOP
        SELECT * INTO d FROM model_select.route('d', r.context);
        INSERT INTO model_select.rewards(decision_id, reward) VALUES (d.decision_id, r.reward[substr(d.arm, 2)::int]);
        IF r.round IN (1200, 1300) THEN
            INSERT INTO seen SELECT r.round, arm, n, gap, z FROM model_select.drift('d', 100);
        END IF;
    END LOOP;
END $$;
SELECT diag(format('round %s, %s: n %s, gap %s, z %s', at, arm, n, round(gap::numeric, 3), round(z::numeric, 1)))
  FROM seen ORDER BY at, arm;

SELECT is((SELECT count(*) FROM seen WHERE at = 1200 AND n = 100), 2::bigint, 'drift() reports the last 100 rewarded decisions of each arm');
SELECT cmp_ok((SELECT max(abs(z)) FROM seen WHERE at = 1200), '<', 3::float8, 'before the switch no arm drifts (|z| < 3)');
SELECT cmp_ok((SELECT max(abs(z)) FROM seen WHERE at = 1300), '>', 5::float8, '100 rounds after the switch an arm drifts (|z| > 5)');
SELECT is((SELECT round(avg(r.reward - d.mean)::numeric, 12) FROM model_select.rewards r JOIN model_select.decisions d USING (decision_id)
            WHERE r.arm = 'a1' AND r.reward_id > (SELECT max(reward_id) - 400 FROM model_select.rewards)
              AND r.reward_id IN (SELECT reward_id FROM model_select.rewards WHERE arm = 'a1' ORDER BY reward_id DESC LIMIT 100)),
          (SELECT round(gap::numeric, 12) FROM model_select.drift('d', 100) WHERE arm = 'a1'),
          'the gap is the mean of reward minus the logged prediction');

SELECT * FROM finish();
ROLLBACK;
