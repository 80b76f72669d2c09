-- Owners and grants (issue 11, items 1 and 2).  Role A owns a selector with
-- decisions, rewards and a logged cascade; role B, an administrator of its
-- own (setup_role), must not see or use it until A grants it a right:
--
--  (a) before any grant, B sees no row of A's selector in any table or view
--      of the schema, and every function on it fails with 42501;
--  (b) the privilege matrix: with exactly one right granted (none, route,
--      reward, admin), every function family is allowed for its right only
--      and fails with 42501 otherwise; grant and revoke stay the owner's;
--  (c) a revoke takes effect at the next statement, also for a backend
--      whose model cache holds the selector's models;
--  (d) members of the owner role, superusers; grant/revoke argument errors;
--      no direct write on the tables; an application role cannot create,
--      nor reach the internal functions (schema model_select_internal).
--
-- Every call of the matrix runs in a subtransaction that is rolled back
-- (success included), so each starts from the same state.  The roles are
-- created inside the test's transaction and vanish with its ROLLBACK.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(182);

CREATE ROLE ms_sec_a;
CREATE ROLE ms_sec_b;
CREATE ROLE ms_sec_c IN ROLE ms_sec_a;   -- a member of the owner role
CREATE ROLE ms_sec_app;
SELECT count(*) FROM model_select.setup_role('ms_sec_a', 'administrator');
SELECT count(*) FROM model_select.setup_role('ms_sec_b', 'administrator');
SELECT count(*) FROM model_select.setup_role('ms_sec_c', 'application');
SELECT count(*) FROM model_select.setup_role('ms_sec_app', 'application');

-- The SQLSTATE of a statement ('00000' on success), its effects undone.
CREATE FUNCTION pg_temp.sqlstate_of(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        EXECUTE stmt;
        RAISE SQLSTATE 'MSOK0';
    EXCEPTION WHEN OTHERS THEN
        RETURN CASE SQLSTATE WHEN 'MSOK0' THEN '00000' ELSE SQLSTATE END;
    END;
END $$;

-- Rows of a relation the current role can see.
CREATE FUNCTION pg_temp.visible(rel text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM %s', rel) INTO n;
    RETURN n;
END $$;

-- One call per function on A's selector: its family (the right it needs;
-- owner: only the owner) and its SQLSTATE when allowed.
CREATE FUNCTION pg_temp.calls() RETURNS TABLE (ord int, family text, allowed text, stmt text)
LANGUAGE sql AS $$
    SELECT row_number() OVER ()::int, * FROM (VALUES
    ('route', '00000', $q$SELECT model_select.select_model('a_sel', ARRAY[1, 0]::float8[])$q$),
    ('route', '00000', $q$SELECT model_select.select_model('a_sel', ARRAY[1, 0]::real[])$q$),
    ('route', '00000', $q$SELECT * FROM model_select.route('a_sel', ARRAY[1, 0]::float8[])$q$),
    ('route', '00000', $q$SELECT * FROM model_select.route_batch('a_sel', 'SELECT 1, ARRAY[1, 0]::float8[]')$q$),
    ('route', '00000', $q$SELECT * FROM model_select.route_batch('a_sel', 'SELECT 1, ARRAY[1, 0]::float8[]', log => true)$q$),
    ('route', '00000', $q$SELECT * FROM model_select.scores('a_sel', ARRAY[1, 0]::float8[])$q$),
    ('route', '00000', $q$SELECT * FROM model_select.drift('a_sel')$q$),
    ('route', '00000', $q$SELECT * FROM model_select.cascade('a_sel', ARRAY[1, 0]::float8[])$q$),
    ('route', '00000', $q$SELECT * FROM model_select.cascade_scores('a_sel', ARRAY[1, 0]::float8[])$q$),
    ('route', '00000', $q$SELECT model_select.cascade_next('a_sel', ARRAY[1, 0]::float8[], NULL, NULL)$q$),
    ('route', '00000', $q$SELECT model_select.cascade_select('a_sel', ARRAY[0.2, 0.7], ARRAY['x', 'y'])$q$),
    ('route', '00000', $q$SELECT * FROM model_select.cascade_route('a_sel', ARRAY[1, 0]::float8[])$q$),
    ('reward', '00000', $q$INSERT INTO model_select.rewards(selector, arm, context, reward)
                           VALUES ('a_sel', 'x', ARRAY[0, 1]::float8[], 0.9)$q$),
    ('reward', '00000', $q$INSERT INTO model_select.rewards(decision_id, reward)
                           VALUES (current_setting('ms_sec.decision')::bigint, 0.9)$q$),
    ('reward', '00000', $q$INSERT INTO model_select.cascade_observations(cascade_id, arm, value, cost)
                           VALUES (current_setting('ms_sec.cascade')::bigint, 'y', 0.5, 0.1)$q$),
    ('admin', '00000', $q$SELECT model_select.alter_selector('a_sel', '{"alpha": 2}')$q$),
    ('admin', '00000', $q$SELECT model_select.add_arm('a_sel', 'z')$q$),
    ('admin', '00000', $q$SELECT model_select.retire_arm('a_sel', 'x')$q$),
    ('admin', '00000', $q$SELECT model_select.stats_reset('a_sel')$q$),
    ('admin', '00000', $q$SELECT model_select.rebuild_state('a_sel')$q$),
    ('admin', '00000', $q$SELECT model_select.fit_codebook('a_sel', 'SELECT ARRAY[1, i]::float8[] FROM generate_series(1, 8) i')$q$),
    ('admin', '00000', $q$SELECT model_select.checkpoint('a_sel')$q$),
    ('admin', '55000', $q$SELECT model_select.resample('a_sel')$q$),   -- lin_ucb has no dictionary
    ('admin', '00000', $q$SELECT model_select.cascade_refit('a_sel')$q$),
    ('admin', '00000', $q$SELECT model_select.drop_selector('a_sel')$q$),
    ('owner', '00000', $q$SELECT model_select.grant_selector('a_sel', 'ms_sec_b', 'route')$q$),
    ('owner', '00000', $q$SELECT model_select.revoke_selector('a_sel', 'ms_sec_b', 'route')$q$)
    ) c(family, allowed, stmt)
$$;

-- The relations of the schema (tables and views), for (a); not the views
-- progress (the backends' commands in progress), learner (the server's
-- learner process), which hold no selector's rows, and learner_versions (the
-- shared cache's versions: none without preloading; shared_versions() shows
-- only the arms of selectors the caller has a right on).
CREATE FUNCTION pg_temp.relations() RETURNS SETOF text LANGUAGE sql AS $$
    SELECT c.oid::regclass::text FROM pg_class c
     WHERE c.relnamespace = 'model_select'::regnamespace AND c.relkind IN ('r', 'v')
       AND c.relname NOT IN ('progress', 'learner', 'learner_versions') ORDER BY 1
$$;

-- A's selector with two decisions, rewards by decision and by name, and a
-- logged cascade with an observation: rows in every per-selector table.
SET ROLE ms_sec_a;
SELECT set_config('ms_sec.selector', model_select.create_selector('a_sel', 2, ARRAY['x', 'y'], 'lin_ucb')::text, false);
SELECT set_config('ms_sec.decision', (SELECT decision_id FROM model_select.route('a_sel', ARRAY[1, 0]::float8[]))::text, false);
SELECT set_config('ms_sec.decision2', (SELECT decision_id FROM model_select.route('a_sel', ARRAY[0.5, 0.5]::float8[]))::text, false);
INSERT INTO model_select.rewards(decision_id, reward) VALUES (current_setting('ms_sec.decision2')::bigint, 0.8);
INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('a_sel', 'y', ARRAY[0.3, 0.1]::float8[], 0.4);
SELECT set_config('ms_sec.cascade', (SELECT cascade_id FROM model_select.cascade_route('a_sel', ARRAY[1, 1]::float8[]))::text, false);
INSERT INTO model_select.cascade_observations(cascade_id, arm, value, cost)
VALUES (current_setting('ms_sec.cascade')::bigint, 'x', 0.6, 0.2);
SELECT model_select.checkpoint('a_sel');
SELECT model_select.stats_reset('a_sel');
-- its codebook (lin_ucb's default 8): a row in codebooks
SELECT model_select.fit_codebook('a_sel', 'SELECT ARRAY[i, 1]::float8[] FROM generate_series(1, 8) i');
-- a pak_ucb selector of A's, checkpointed: rows in arm_state_rows
SELECT model_select.create_selector('a_pak', 2, ARRAY['x'], 'pak_ucb');
INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('a_pak', 'x', ARRAY[0.2, 0.1]::float8[], 0.5);
SELECT model_select.checkpoint('a_pak');
-- a selector of A's whose oldest reward was absorbed: a row in arm_base
SELECT model_select.create_selector('a_ret', 2, ARRAY['x'], 'lin_ucb', NULL, '{"retain": 1}');
INSERT INTO model_select.rewards(selector, arm, context, reward)
VALUES ('a_ret', 'x', ARRAY[0.2, 0.1]::float8[], 0.5), ('a_ret', 'x', ARRAY[0.1, 0.2]::float8[], 0.7);
SELECT model_select.maintain('a_ret');
SELECT model_select.create_probe_run('a_run', 4, 2, 1.0,
    $$SELECT ARRAY[1, 0]::float8[], 'x' UNION ALL SELECT ARRAY[0, 1]::float8[], 'y'$$);
RESET ROLE;

SELECT is(owner::text, 'ms_sec_a', 'create_selector makes the caller the owner')
  FROM model_select.selectors WHERE name = 'a_sel';
SELECT ok((SELECT bool_and(pg_temp.visible(r) > 0) FROM pg_temp.relations() r
            WHERE r <> 'model_select.selector_grants'),
          'the superuser sees A''s rows in every per-selector table and view, and its probe run''s');

-- (a) nothing visible to B before a grant ------------------------------------------
SET ROLE ms_sec_b;
SELECT is(pg_temp.visible(r), 0::bigint, 'before any grant B sees no row of ' || r)
  FROM pg_temp.relations() r;
SELECT is(model_select.has_selector_privilege('a_sel', 'route, reward, admin'), false,
          'has_selector_privilege(): B holds no right on a_sel');
SELECT is(model_select.has_selector_privilege(current_setting('ms_sec.selector')::int, 'route'), false,
          'has_selector_privilege(selector_id): false for B');
SELECT is(model_select.has_selector_privilege(-1, 'route'), NULL, 'has_selector_privilege(selector_id): NULL for no selector');
SELECT throws_ok($$SELECT * FROM model_select.probe_status('a_run')$$, '42704', NULL,
                 'A''s probe run does not exist for B');
SELECT throws_ok($$SELECT model_select.create_probe_run('a_run', 4, 2, 1.0, $p$SELECT ARRAY[1, 0]::float8[], 'x'$p$)$$,
                 '42710', 'probe run "a_run" already exists',
                 'B naming a run as A''s invisible one: 42710 (names are unique over all roles), not 23505');
-- an id of A's tells that it exists, not which selector it belongs to
SELECT throws_ok($$INSERT INTO model_select.rewards(decision_id, reward)
                   VALUES (current_setting('ms_sec.decision')::bigint, 0.5)$$,
                 '42501', 'permission denied for decision ' || current_setting('ms_sec.decision'),
                 'a reward for A''s decision: 42501 without a_sel''s name');
SELECT throws_ok($$INSERT INTO model_select.cascade_observations(cascade_id, arm, value, cost)
                   VALUES (current_setting('ms_sec.cascade')::bigint, 'y', 0.5, 0.1)$$,
                 '42501', 'permission denied for cascade ' || current_setting('ms_sec.cascade'),
                 'an observation of A''s cascade: 42501 without a_sel''s name');
SELECT model_select.create_selector('b_sel', 2, ARRAY['p', 'q'], 'greedy');
SELECT is(array_agg(name)::text, '{b_sel}', 'B sees its own selector and only it')
  FROM model_select.selectors;
RESET ROLE;

-- (b) the matrix: exactly one right at a time, granted by A before the round
-- and revoked after it.
CREATE FUNCTION pg_temp.matrix() RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    granted text;
    c record;
    want text;
BEGIN
    FOREACH granted IN ARRAY ARRAY['none', 'route', 'reward', 'admin'] LOOP
        SET ROLE ms_sec_a;
        IF granted <> 'none' THEN
            PERFORM model_select.grant_selector('a_sel', 'ms_sec_b', granted);
        END IF;
        SET ROLE ms_sec_b;
        FOR c IN SELECT * FROM pg_temp.calls() ORDER BY ord LOOP
            want := CASE WHEN c.family = granted THEN c.allowed ELSE '42501' END;
            RETURN NEXT is(pg_temp.sqlstate_of(c.stmt), want,
                           format('with %s granted, B: %s (%s) gives %s', granted,
                                  left(regexp_replace(c.stmt, '\s+', ' ', 'g'), 90), c.family, want));
        END LOOP;
        SET ROLE ms_sec_a;
        IF granted <> 'none' THEN
            PERFORM model_select.revoke_selector('a_sel', 'ms_sec_b', granted);
        END IF;
        RESET ROLE;
    END LOOP;
END $$;
SELECT pg_temp.matrix();

SET ROLE ms_sec_b;
SELECT is(pg_temp.visible(r), 0::bigint, 'after the revokes B again sees no row of ' || r)
  FROM pg_temp.relations() r
 WHERE r IN ('model_select.decisions', 'model_select.rewards', 'model_select.cascade_decisions',
             'model_select.cascade_observations', 'model_select.cascade_outcomes');
SELECT is(count(*), 0::bigint, 'after the revokes B sees no a_sel row in arm_stats (only its own b_sel)')
  FROM model_select.arm_stats WHERE selector = 'a_sel';
RESET ROLE;

-- (c) a revoke takes effect at the next statement ----------------------------------
SET ROLE ms_sec_a;
SELECT model_select.grant_selector('a_sel', 'ms_sec_b', 'route');
SET ROLE ms_sec_b;
SELECT isnt(model_select.select_model('a_sel', ARRAY[1, 0]::float8[]), NULL,
            'B routes with the route right (and its backend caches a_sel''s models)');
SELECT cmp_ok((SELECT entries FROM model_select.cache_stats()), '>', 0, 'the model cache holds a_sel''s models');
SELECT ok(pg_temp.visible('model_select.decisions') > 0 AND pg_temp.visible('model_select.rewards') > 0,
          'with route granted, B sees a_sel''s decisions and rewards');
SET ROLE ms_sec_a;
SELECT model_select.revoke_selector('a_sel', 'ms_sec_b', 'route');
SET ROLE ms_sec_b;
SELECT throws_ok($$SELECT model_select.select_model('a_sel', ARRAY[1, 0]::float8[])$$, '42501',
                 'permission denied for selector "a_sel"', 'the next statement after the revoke: 42501');
SELECT throws_ok($$SELECT * FROM model_select.scores('a_sel', ARRAY[1, 0]::float8[])$$, '42501', NULL,
                 '... scores() too');
RESET ROLE;

-- (d) members, superusers, argument errors, direct writes --------------------------
SET ROLE ms_sec_c;
SELECT is(pg_temp.sqlstate_of($$SELECT model_select.rebuild_state('a_sel')$$), '00000',
          'a member of the owner role administers the selector');
SELECT is(pg_temp.sqlstate_of($$SELECT model_select.grant_selector('a_sel', 'ms_sec_b', 'route')$$), '00000',
          '... and grants its rights');
SELECT ok(pg_temp.visible('model_select.decisions') > 0, '... and sees its decisions');
RESET ROLE;
SELECT is(pg_temp.sqlstate_of($$SELECT model_select.grant_selector('a_sel', 'ms_sec_b', 'admin')$$), '00000',
          'a superuser grants on any selector');

SET ROLE ms_sec_a;
SELECT throws_ok($$SELECT model_select.grant_selector('a_sel', 'ms_sec_b', 'select')$$, '22023', NULL,
                 'grant_selector(): an unknown privilege is 22023');
SELECT throws_ok($$SELECT model_select.revoke_selector('a_sel', 'ms_sec_b', NULL)$$, '22004', NULL,
                 'revoke_selector(): a NULL privilege is 22004');
SELECT throws_ok($$SELECT model_select.grant_selector('a_sel', 'ms_sec_nobody', 'route')$$, '42704', NULL,
                 'grant_selector(): an unknown role is 42704');
SELECT throws_ok($$SELECT model_select.grant_selector('no_sel', 'ms_sec_b', 'route')$$, '42704', NULL,
                 'grant_selector(): an unknown selector is 42704');
SELECT throws_ok($$SELECT model_select.has_selector_privilege('a_sel', 'read')$$, '22023', NULL,
                 'has_selector_privilege(): an unknown privilege is 22023');
SELECT is(model_select.has_selector_privilege('a_sel', 'admin'), true, 'the owner holds every right');
SELECT throws_ok($$UPDATE model_select.selectors SET settings = '{}' WHERE name = 'a_sel'$$, '42501', NULL,
                 'not even the owner may UPDATE selectors directly (settings stay in step with the state)');
SELECT throws_ok($$UPDATE model_select.arm_state SET n = 0$$, '42501', NULL,
                 'nor write arm_state');
SELECT throws_ok($$INSERT INTO model_select.selector_grants VALUES (1, 'ms_sec_a', 'route')$$, '42501', NULL,
                 'nor insert grants by hand');
-- run_id comes from its sequence: one given ahead of it would fail another role's next run (23505)
SELECT throws_ok($$INSERT INTO model_select.probe_runs(run_id, name, horizon, reset_every, beta, kernel, settings, seed, owner)
                   VALUES (nextval('model_select.probe_runs_run_id_seq') + 1, 'a_run2', 4, 2, 1, 'rbf', '{}', 0, 'ms_sec_a')$$,
                 '42501', NULL, 'an administrator cannot give a probe run''s run_id');
SELECT throws_ok($$UPDATE model_select.probe_runs SET run_id = run_id + 1000 WHERE name = 'a_run'$$, '42501', NULL,
                 '... nor change it');
SELECT is(pg_temp.sqlstate_of($$SELECT * FROM model_select.probe_next('a_run', 1)$$), '00000',
          'the owner of a probe run still steps it');
RESET ROLE;

SET ROLE ms_sec_app;
SELECT throws_ok($$SELECT model_select.create_selector('app_sel', 2, ARRAY['x'])$$, '42501', NULL,
                 'an application role cannot create selectors');
SELECT throws_ok($$SELECT * FROM model_select.setup_role('ms_sec_app', 'administrator')$$, '42501', NULL,
                 'nor set up roles');
SELECT throws_ok($$SELECT model_select_internal._settings_lock(current_setting('ms_sec.selector')::int)$$,
                 '42501', 'permission denied for schema model_select_internal',
                 'nor call an internal function: no USAGE on model_select_internal');
SELECT throws_ok($$SELECT model_select_internal._probe_plan(1)$$, '42501', NULL,
                 '... not even a probe step');
RESET ROLE;
SELECT is_empty($$SELECT oid::regprocedure FROM pg_proc
                   WHERE pronamespace = 'model_select_internal'::regnamespace
                     AND has_function_privilege('ms_sec_app', oid, 'EXECUTE')$$,
                'an application holds EXECUTE on no internal function either');
SELECT is(has_schema_privilege('ms_sec_a', 'model_select_internal', 'USAGE'), true,
          'an administrator has USAGE on model_select_internal (for the probe steps, granted to it alone)');
-- the internal functions that stay in model_select run with an application's
-- own rights: views stats (security_invoker) and progress read _latency() and
-- _progress(), warm_start() calls the other four
SELECT set_eq($$SELECT oid::regprocedure::text FROM pg_proc
                 WHERE pronamespace = 'model_select'::regnamespace AND proname LIKE '\_%'$$,
              ARRAY['model_select._latency()', 'model_select._progress()', 'model_select._source_rows(text)', 'model_select._codebook_fitted(text)',
                    'model_select._progress_begin(text,text)', 'model_select._progress_end()'],
              'every other internal function is in model_select_internal');

-- View progress reads with the reader's rights (issue 40): an application,
-- an administrator and a role of pg_read_all_stats set up as an application
-- read it; _progress_begin() takes warm_start alone, on a selector the caller
-- may reward; warm_start() on another role's selector is 42501.
CREATE ROLE ms_sec_stats IN ROLE pg_read_all_stats;
SELECT count(*) FROM model_select.setup_role('ms_sec_stats', 'application');
SET ROLE ms_sec_app;
SELECT lives_ok($$SELECT count(*) FROM model_select.progress$$, 'an application reads view progress');
SET ROLE ms_sec_b;
SELECT lives_ok($$SELECT count(*) FROM model_select.progress$$, 'an administrator reads view progress');
SELECT throws_ok($$SELECT model_select._progress_begin('warm_start', 'a_sel')$$, '42501', NULL,
                 '_progress_begin() on another role''s selector is 42501 (no made-up row in progress)');
SELECT throws_ok($$SELECT model_select._progress_begin('warm_start', 'no_sel')$$, '42704', NULL,
                 '... on an unknown selector 42704');
SELECT throws_ok($$SELECT model_select.warm_start('a_sel', 'SELECT ARRAY[1, 0]::float8[], ARRAY[0.5, 0.5]::float8[]')$$,
                 '42501', NULL, 'warm_start() on another role''s selector is 42501, as on every function');
SELECT throws_ok($$SELECT model_select.warm_start('no_sel', 'SELECT ARRAY[1, 0]::float8[], ARRAY[0.5, 0.5]::float8[]')$$,
                 '42704', NULL, '... on an unknown selector 42704');
SET ROLE ms_sec_a;
SELECT throws_ok($$SELECT model_select._progress_begin('rebuild_state', 'a_sel')$$, '22023', NULL,
                 '_progress_begin() takes no command but warm_start, even on the caller''s selector');
SELECT lives_ok($$SELECT model_select._progress_begin('warm_start', 'a_sel'), model_select._progress_end()$$,
                '... which it begins on a selector the caller may reward');
SET ROLE ms_sec_stats;
SELECT lives_ok($$SELECT count(*) FROM model_select.progress$$, 'a pg_read_all_stats role set up as an application reads view progress');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
