-- Hostile input found by fuzzing every entry point (scripts/fuzz-entry-points.py):
-- each case failed before its fix (a crashed backend, a misleading
-- SQLSTATE), and every table of the extension is unchanged after each
-- refused call (the fingerprint of hostile_input.sql: md5 of every row of
-- the eleven tables, with arm_state's xmin).
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(43);

\ir include/fingerprint.sql

-- throws_ok(sql, state), then: no table changed.
CREATE FUNCTION pg_temp.refused(sql text, state text, descr text) RETURNS SETOF text LANGUAGE plpgsql AS $f$
DECLARE
  changed text;
BEGIN
  RETURN NEXT throws_ok(sql, state, NULL, descr || ' -> ' || state);
  SELECT string_agg(n.tbl, ', ') INTO changed
    FROM pg_temp.fingerprint() n JOIN fp0 o USING (tbl) WHERE n.md5 IS DISTINCT FROM o.md5;
  RETURN NEXT ok(changed IS NULL, descr || ': tables unchanged' || coalesce(' (changed: ' || changed || ')', ''));
END
$f$;

-- ---------------------------------------------------------------- fixtures
SELECT model_select.create_selector('e_' || p, 3, ARRAY['a', 'b'], p)
  FROM unnest(ARRAY['pak_ucb', 'lin_ucb', 'bkb', 'greedy']) p;
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT s.name, a.name, ARRAY[i, 1, -i]::float8[], (i % 3) / 2.0
  FROM model_select.selectors s JOIN model_select.arms a USING (selector_id), generate_series(1, 3) i;
SELECT model_select.create_probe_run('e_probe', 12, 2, 1.0,
  $p$SELECT ARRAY[x, 1, 0]::float8[], m FROM generate_series(1, 3) x, (VALUES ('m1'), ('m2')) v(m)$p$);
CREATE TEMP TABLE fp0 AS SELECT * FROM pg_temp.fingerprint();

-- ------------------------------------ scores() with a NULL selector or context
-- It returned from its set-returning function without a result set: the
-- backend crashed (signal 11).  Documented: no rows.
SELECT is((SELECT count(*) FROM model_select.scores(s, NULL::float8[])), 0::bigint,
          format('scores(%s, NULL::float8[]): no rows', s))
  FROM unnest(ARRAY['e_pak_ucb', 'e_lin_ucb', 'e_bkb', 'e_greedy']) s;
SELECT is((SELECT count(*) FROM model_select.scores(NULL, ARRAY[1, 0, 0]::float8[])), 0::bigint,
          'scores(NULL, context): no rows');
SELECT is((SELECT count(*) FROM model_select.scores(NULL, NULL::real[], ARRAY['t'])), 0::bigint,
          'scores(NULL, NULL, tags): no rows');
SELECT is((SELECT count(*) FROM model_select.selectors s, LATERAL model_select.scores(s.name, NULL::float8[])),
          0::bigint, 'scores() with a NULL context, lateral over every selector: no rows');
SELECT is((SELECT count(*) FROM (VALUES (ARRAY[1, 0, 0]::float8[]), (NULL), (ARRAY[0, 1, 0])) v(c),
                  LATERAL model_select.scores('e_lin_ucb', v.c)),
          4::bigint, 'scores() over contexts of which one is NULL: the rows of the others');
SELECT ok(NOT EXISTS (SELECT FROM pg_temp.fingerprint() n JOIN fp0 o USING (tbl) WHERE n.md5 IS DISTINCT FROM o.md5),
          'scores() with NULLs: tables unchanged');

-- ------------------------------------------ probing runs: NULL arguments
-- create_probe_run() with a NULL pool was inlined and folded to a NULL run
-- before _probe_create() could refuse it: P0002 "query returned no rows".
SELECT pg_temp.refused($$SELECT model_select.create_probe_run('e_p2', 12, 2, 1.0, NULL)$$, '22004',
                       'create_probe_run: NULL pool');
SELECT pg_temp.refused($$SELECT model_select.create_probe_run('e_p2', 12, 2, 1.0, NULL::text, 'rbf', '{}', 0)$$, '22004',
                       'create_probe_run: NULL pool, every argument given');
SELECT pg_temp.refused($$SELECT model_select.create_probe_run(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)$$, '22004',
                       'create_probe_run: every argument NULL');
SELECT pg_temp.refused($$SELECT model_select.create_probe_run(p.n, 12, 2, 1.0, p.q) FROM (VALUES ('e_p2', NULL::text)) p(n, q)$$, '22004',
                       'create_probe_run: NULL pool from a row');
-- a NULL run name was looked up (42704 'probe run "<NULL>" does not exist'),
-- a NULL k was 22023 "k must be at least 1"
SELECT pg_temp.refused($$SELECT * FROM model_select.probe_next(NULL)$$, '22004', 'probe_next: NULL name');
SELECT pg_temp.refused($$SELECT * FROM model_select.probe_next('e_probe', NULL)$$, '22004', 'probe_next: NULL k');
SELECT pg_temp.refused($$SELECT * FROM model_select.probe_status(NULL)$$, '22004', 'probe_status: NULL name');
SELECT pg_temp.refused($$SELECT model_select.drop_probe_run(NULL)$$, '22004', 'drop_probe_run: NULL name');
SELECT pg_temp.refused($$SELECT model_select.probe_report(NULL, 1, 0.5)$$, '22004', 'probe_report(item): NULL name');
SELECT pg_temp.refused($$SELECT model_select.probe_report(NULL, 1, 1, 1, 0.5)$$, '22004', 'probe_report(position): NULL name');
SELECT pg_temp.refused($$SELECT model_select_internal._probe_load_pool(NULL, NULL)$$, '22004',
                       '_probe_load_pool (no longer STRICT): NULL arguments');
-- the valid calls still work
SELECT lives_ok($$SELECT model_select.create_probe_run('e_p3', 12, 2, 1.0, 'SELECT ARRAY[1, 0]::float8[], ''m''::text')$$,
                'create_probe_run: a valid pool still works');
SELECT is((SELECT count(*) FROM model_select.probe_next('e_probe', 1)), 1::bigint, 'probe_next: k 1 still works');
SELECT is((SELECT pool_size FROM model_select.probe_status('e_probe')), 6, 'probe_status still works');

-- --------------- a decision deleted by the same statement as its reward
-- drop_selector() (an owner's right) or a data-modifying CTE deleting or
-- updating the decision beside the INSERT: the decision, visible to the
-- statement's snapshot, could not be locked (TM_Invisible, TM_SelfModified),
-- XX000 "locking decision ... failed".  It is gone: 42704.
CREATE TEMP TABLE dec AS SELECT * FROM model_select.route('e_lin_ucb', ARRAY[1, 0, 0]::float8[]);
CREATE TEMP TABLE fp1 AS SELECT * FROM pg_temp.fingerprint();
TRUNCATE fp0;
INSERT INTO fp0 SELECT * FROM fp1;
SELECT pg_temp.refused($$WITH x AS (SELECT model_select.drop_selector('e_lin_ucb'))
                         INSERT INTO model_select.rewards(decision_id, reward) SELECT d.decision_id, 0.5 FROM dec d, x$$,
                       '42704', 'reward for a decision its selector''s drop_selector() deleted in the same statement');
SELECT pg_temp.refused($$WITH x AS (SELECT model_select.drop_selector('e_lin_ucb'))
                         SELECT model_select.reward(d.decision_id, 0.5) FROM dec d, x$$,
                       '42704', 'reward() for a decision drop_selector() deleted in the same statement');
SELECT pg_temp.refused($$WITH x AS (DELETE FROM model_select.decisions WHERE decision_id = (SELECT decision_id FROM dec) RETURNING decision_id)
                         INSERT INTO model_select.rewards(decision_id, reward) SELECT decision_id, 0.5 FROM x$$,
                       '42704', 'reward for a decision a CTE of the same statement deleted');
SELECT pg_temp.refused($$WITH x AS (UPDATE model_select.decisions SET score = score WHERE decision_id = (SELECT decision_id FROM dec) RETURNING decision_id)
                         INSERT INTO model_select.rewards(decision_id, reward) SELECT decision_id, 0.5 FROM x$$,
                       '42704', 'reward for a decision a CTE of the same statement updated');
SELECT lives_ok($$SELECT model_select.reward(decision_id, 0.5) FROM dec$$, 'the decision can still be rewarded');

SELECT * FROM finish();
ROLLBACK;
