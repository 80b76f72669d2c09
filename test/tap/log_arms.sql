-- The logs name their arm without a foreign key (sql/install/20_routing.sql,
-- 30_learning.sql; under concurrency the key's key-share lock on a handful
-- of arm rows made a MultiXact per transaction: test/session/log_arms.sh
-- checks that no arm row is locked), so drop_selector() deletes the
-- selector's decisions and rewards itself, leaving other selectors' logs.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(6);

SELECT model_select.create_selector('la_one', 2, ARRAY['a', 'b'], 'lin_ucb', NULL, '{}', 1);
SELECT model_select.create_selector('la_two', 2, ARRAY['a', 'b'], 'lin_ucb', NULL, '{}', 2);
CREATE TEMP TABLE routed AS
SELECT r.* FROM generate_series(1, 6) i, model_select.route('la_one', ARRAY[i, 1.0 / i]) r;
INSERT INTO model_select.rewards(decision_id, reward) SELECT decision_id, 0.5 FROM routed;
INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('la_two', 'b', '{1,2}', 1);
CREATE TEMP TABLE routed_two AS SELECT * FROM model_select.route('la_two', '{2,1}');
INSERT INTO model_select.rewards(decision_id, reward) SELECT decision_id, 0.25 FROM routed_two;

SELECT is((SELECT count(*) FROM pg_constraint
            WHERE contype = 'f' AND confrelid = 'model_select.arms'::regclass
              AND conrelid IN ('model_select.decisions'::regclass, 'model_select.rewards'::regclass)),
          0::bigint, 'no foreign key from the decision or reward log to the arms');

SELECT model_select.drop_selector('la_one');
SELECT is((SELECT count(*) FROM model_select.decisions d WHERE d.selector_id NOT IN
            (SELECT selector_id FROM model_select.selectors)), 0::bigint,
          'drop_selector() deletes the selector''s decisions');
SELECT is((SELECT count(*) FROM model_select.rewards r WHERE r.selector_id NOT IN
            (SELECT selector_id FROM model_select.selectors)), 0::bigint,
          '... and its rewards');
SELECT is((SELECT count(*) FROM model_select.rewards WHERE selector = 'la_two'), 2::bigint,
          'another selector''s rewards stay');
SELECT is((SELECT count(*) FROM model_select.decisions d JOIN model_select.selectors s USING (selector_id)
            WHERE s.name = 'la_two'), 1::bigint, '... and its decision');
SELECT is((SELECT sum(n)::bigint FROM model_select.scores('la_two', '{1,1}')), 2::bigint,
          'and it still scores both of its rewards');

SELECT * FROM finish();
ROLLBACK;
