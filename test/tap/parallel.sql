-- PARALLEL labels: every function carries the intended label, and the
-- PARALLEL SAFE ones give the same results inside parallel workers as in a
-- plain backend.  Parallel plans are forced (zero parallel costs, no leader
-- participation), and EXPLAIN shows that the functions are evaluated below
-- the Gather, i.e. in the workers, and that workers were launched.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(16);

-- the extension's two schemas
CREATE FUNCTION ms_schemas() RETURNS regnamespace[] LANGUAGE sql AS
$$ SELECT ARRAY['model_select'::regnamespace, 'model_select_internal'::regnamespace] $$;

-- 1. the labels -----------------------------------------------------------------
-- a new function fails this count until its label is decided below
SELECT is((SELECT count(*) FROM pg_proc WHERE pronamespace = ANY (ms_schemas())), 98::bigint,
          '98 functions (58 in model_select, 40 internal), each labelled on purpose');
SELECT set_eq($$SELECT oid::regprocedure::text FROM pg_proc
                 WHERE pronamespace = ANY (ms_schemas()) AND proparallel = 's'$$,
              ARRAY['model_select.select_model(text,anycompatiblearray,text[])',
                    'model_select.scores(text,anycompatiblearray,text[])',
                    'model_select.decision_scores(bigint)',
                    'model_select.cascade(text,anycompatiblearray,double precision)',
                    'model_select.cascade_scores(text,anycompatiblearray,double precision)',
                    'model_select.cascade_next(text,anycompatiblearray,double precision,text[],double precision)',
                    'model_select.cascade_select(text,double precision[],text[])',
                    'model_select.reservation_index(text,double precision[],double precision)',
                    'model_select.resolve_settings(text,text,jsonb)', 'model_select.resolve_settings(text,text,jsonb,integer)',
                    'model_select.policies()', 'model_select.kernels()',
                    'model_select_internal._resolve_settings_over(text,text,jsonb,integer,jsonb)',
                    'model_select.synthetic_clusters(integer,integer,integer,integer,bigint,double precision,integer,integer,integer)',
                    'model_select.synthetic_rkhs(integer,integer,integer,bigint,text,double precision,double precision,double precision,double precision,integer)',
                    'model_select.drift(text,integer)', 'model_select.probe_status(text)',
                    'model_select.has_selector_privilege(text,text)',
                    'model_select.has_selector_privilege(integer,text)',
                    'model_select_internal._grant_privilege(text,regrole,text)',
                    'model_select.quality_hull(double precision[],double precision[],double precision)',
                    'model_select.server_id()', 'model_select_internal._require_extension_admin(text)'],
              'PARALLEL SAFE: the pure functions and those that only read the extension''s tables');
SELECT set_eq($$SELECT oid::regprocedure::text FROM pg_proc
                 WHERE pronamespace = ANY (ms_schemas()) AND proparallel = 'r'$$,
              ARRAY['model_select.cache_stats(boolean)', 'model_select.learner_status()',
                    'model_select.shared_versions()'],
              'PARALLEL RESTRICTED: cache_stats() (the calling backend''s cache), learner_status() and shared_versions() (shared memory)');
SELECT is_empty($$SELECT oid::regprocedure FROM pg_proc
                   WHERE pronamespace = ANY (ms_schemas()) AND proparallel <> 'u'
                     AND (provolatile = 'v' AND proname NOT IN ('cache_stats', 'learner_status', 'shared_versions'))$$,
                'no VOLATILE function (they write, lock or run the caller''s query) is parallel safe or restricted, but the three status readers');

-- 2. data -------------------------------------------------------------------------
SELECT is(count(*), 5::bigint, 'five selectors, one per kind of policy') FROM (
    SELECT model_select.create_selector('pak', 6, ARRAY['a1', 'a2', 'a3'], 'pak_ucb', 'rbf', '{}', 1)
    UNION ALL SELECT model_select.create_selector('lin', 6, ARRAY['a1', 'a2', 'a3'], 'lin_ucb', NULL, '{"confidence": "ay"}', 2)
    UNION ALL SELECT model_select.create_selector('rff', 6, ARRAY['a1', 'a2', 'a3'], 'rff_ucb', 'rbf', '{"features": 64}', 3)
    UNION ALL SELECT model_select.create_selector('bkb', 6, ARRAY['a1', 'a2', 'a3'], 'bkb', 'rbf', '{}', 4)
    UNION ALL SELECT model_select.create_selector('greedy', 6, ARRAY['a1', 'a2', 'a3'], 'greedy', NULL, '{}', 5)) s;
CREATE TABLE stream AS SELECT * FROM model_select.synthetic_clusters(150, 6, 3, NULL, 7, 0.1);
-- decisions (for drift) and rewards for every selector
CREATE TABLE routed AS
SELECT s.name AS selector, st.round, st.reward, (model_select.route(s.name, st.context)).*
  FROM stream st CROSS JOIN (VALUES ('pak'), ('lin'), ('rff'), ('bkb'), ('greedy')) s(name);
INSERT INTO model_select.rewards(decision_id, reward)
SELECT decision_id, reward[substr(arm, 2)::int] FROM routed ORDER BY decision_id;
INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost)
SELECT 'lin', 'a' || k, context, reward[k], 0.1 * k FROM stream, generate_series(1, 3) k WHERE round <= 60;
-- the probe contexts: an ordinary table, so that a parallel scan can split it
CREATE TABLE probes AS
SELECT round AS id, context, context::real[] AS rcontext FROM model_select.synthetic_clusters(400, 6, 3, NULL, 99, 0.1);
ANALYZE probes;

-- Run a query serially and in parallel; returns the rows that differ (both
-- ways), after checking that the parallel plan evaluates `fn` below a Gather
-- in launched workers.
CREATE FUNCTION pg_temp.run(q text, fn text) RETURNS TABLE (differences bigint, in_workers boolean)
LANGUAGE plpgsql AS $$
DECLARE
    plan json;
BEGIN
    SET LOCAL max_parallel_workers_per_gather = 0;
    SET LOCAL force_parallel_mode = off;
    EXECUTE format('CREATE TEMP TABLE serial_rows ON COMMIT DROP AS %s', q);
    SET LOCAL max_parallel_workers_per_gather = 2;
    SET LOCAL parallel_setup_cost = 0;
    SET LOCAL parallel_tuple_cost = 0;
    SET LOCAL min_parallel_table_scan_size = 0;
    SET LOCAL parallel_leader_participation = off;
    SET LOCAL force_parallel_mode = on;
    EXECUTE format('EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT JSON) %s', q) INTO plan;
    in_workers := (plan -> 0 -> 'Plan' ->> 'Node Type') = 'Gather'
              AND (plan -> 0 -> 'Plan' ->> 'Workers Launched')::int > 0
              AND (plan -> 0 -> 'Plan' -> 'Plans')::text LIKE '%' || fn || '%';
    EXECUTE format('CREATE TEMP TABLE parallel_rows ON COMMIT DROP AS %s', q);
    EXECUTE 'SELECT (SELECT count(*) FROM (TABLE serial_rows EXCEPT ALL TABLE parallel_rows) a)
                  + (SELECT count(*) FROM (TABLE parallel_rows EXCEPT ALL TABLE serial_rows) b)'
       INTO differences;
    DROP TABLE serial_rows;
    DROP TABLE parallel_rows;
    RESET max_parallel_workers_per_gather;
    RESET parallel_setup_cost;
    RESET parallel_tuple_cost;
    RESET min_parallel_table_scan_size;
    RESET parallel_leader_participation;
    RESET force_parallel_mode;
    RETURN NEXT;
END $$;

-- 3. the same results in parallel workers ---------------------------------------
SELECT is(r.*, ROW(0::bigint, true), 'select_model(float8[]) in parallel workers: same choices, ' || s)
  FROM (VALUES ('pak'), ('lin'), ('rff'), ('bkb'), ('greedy')) v(s),
       LATERAL pg_temp.run(format('SELECT id, model_select.select_model(%L, context) FROM probes', s),
                           'select_model') r;
SELECT is(r.*, ROW(0::bigint, true), 'select_model(real[]) in parallel workers: same choices')
  FROM pg_temp.run($$SELECT id, s.name, model_select.select_model(s.name, rcontext)
                       FROM probes, (VALUES ('pak'), ('lin'), ('rff'), ('bkb')) s(name)$$, 'select_model') r;
SELECT is(r.*, ROW(0::bigint, true), 'scores() in parallel workers: the same rows, bit for bit')
  FROM pg_temp.run($$SELECT p.id, s.name, sc.* FROM probes p, (VALUES ('pak'), ('lin'), ('rff'), ('bkb'), ('greedy')) s(name),
                            LATERAL model_select.scores(s.name, p.context) sc$$, 'scores') r;
SELECT is(r.*, ROW(0::bigint, true), 'cascade_scores() and cascade_next() in parallel workers: the same')
  FROM pg_temp.run($$SELECT p.id, c.*, model_select.cascade_next('lin', p.context, 0.5, ARRAY['a1'])
                       FROM probes p, LATERAL model_select.cascade_scores('lin', p.context) c$$, 'cascade_scores') r;
SELECT is(r.*, ROW(0::bigint, true), 'drift() in a parallel worker: the same')
  FROM pg_temp.run($$SELECT * FROM model_select.drift('pak', 50)$$, 'drift') r;
SELECT is(r.*, ROW(0::bigint, true), 'resolve_settings() and reservation_index() in parallel workers: the same')
  FROM pg_temp.run($$SELECT id, model_select.resolve_settings('lin_ucb', NULL, jsonb_build_object('alpha', id)),
                            model_select.reservation_index('uniform', ARRAY[0, 1], id / 1000.0) FROM probes$$,
                   'resolve_settings') r;
SELECT is(r.*, ROW(0::bigint, true), 'synthetic_clusters() in a parallel worker: the same stream')
  FROM pg_temp.run($$SELECT * FROM model_select.synthetic_clusters(200, 4, 3, NULL, 5)$$, 'synthetic_clusters') r;

SELECT * FROM finish();
ROLLBACK;
