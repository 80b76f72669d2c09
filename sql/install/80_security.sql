-- Security: owners and per-selector grants, row-level security on every
-- table that holds per-selector data, the roles' set-up, and which functions
-- PUBLIC may execute (docs/security.md).
--
-- A selector belongs to the role that created it (selectors.owner).  Its
-- owner grants three separate rights: route (select_model, route, scores,
-- drift and the cascade functions), reward (INSERT into rewards and
-- cascade_observations) and admin (alter_selector, fit_codebook, add_arm,
-- retire_arm, rebuild_state, checkpoint, resample, cascade_refit,
-- drop_selector).  The
-- owner and the members of its role, superusers and the extension owner
-- have all three.  One check in C (src/model/privilege.c) serves every entry
-- point and the policies below.

CREATE TABLE model_select.selector_grants (
    selector_id int NOT NULL REFERENCES model_select.selectors ON DELETE CASCADE,
    grantee     regrole NOT NULL,
    privilege   text NOT NULL CHECK (privilege IN ('route', 'reward', 'admin')),
    PRIMARY KEY (selector_id, grantee, privilege)
);
-- a grant or revoke reaches the rows backends keep for their loads (10_core.sql)
CREATE TRIGGER selector_rows_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON model_select.selector_grants
    FOR EACH STATEMENT EXECUTE FUNCTION model_select_internal._selector_rows_changed();
ALTER TABLE model_select.selector_grants ENABLE ALWAYS TRIGGER selector_rows_changed;

-- Does the current user hold one of the privileges ('route', 'reward',
-- 'admin' or a comma-separated list of them: any one) on the selector?  The
-- by-name form raises 42704 for an unknown selector; the by-id form, which
-- the policies below call once per row, returns NULL (as
-- has_table_privilege(oid, ...) does).
CREATE FUNCTION model_select.has_selector_privilege(selector text, privilege text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'model_select_has_selector_privilege' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION model_select.has_selector_privilege(selector_id int, privilege text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'model_select_has_selector_privilege_id' LANGUAGE C STABLE STRICT PARALLEL SAFE;

-- grant_selector / revoke_selector: the C entry (src/model/admin.c) lets only
-- the owner (or a member of its role), a superuser or the extension owner
-- through, then runs these bodies as the extension owner.
-- The arguments of grant_selector and revoke_selector, checked; returns the
-- privilege in lower case, as stored.
CREATE FUNCTION model_select_internal._grant_privilege(selector text, role regrole, privilege text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF selector IS NULL OR role IS NULL OR privilege IS NULL THEN
        RAISE EXCEPTION 'selector, role and privilege must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF lower(privilege) NOT IN ('route', 'reward', 'admin') THEN
        RAISE EXCEPTION 'unrecognized selector privilege "%"', privilege USING ERRCODE = '22023',
            HINT = 'Selector privileges are route, reward and admin.';
    END IF;
    RETURN lower(privilege);
END $$;

CREATE FUNCTION model_select_internal._grant_selector(selector text, role regrole, privilege text) RETURNS void
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    p text := model_select_internal._grant_privilege(selector, role, privilege);
BEGIN
    -- a regrole of no role (an OID, or a dropped role's) would leave a grant to nobody
    IF NOT EXISTS (SELECT FROM pg_roles r WHERE r.oid = role) THEN
        RAISE EXCEPTION 'role with OID % does not exist', role::oid USING ERRCODE = '42704';
    END IF;
    INSERT INTO model_select.selector_grants(selector_id, grantee, privilege)
    SELECT s.selector_id, role, p FROM model_select.selectors s WHERE s.name = selector
    ON CONFLICT DO NOTHING;
END $$;

CREATE FUNCTION model_select_internal._revoke_selector(selector text, role regrole, privilege text) RETURNS void
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    p text := model_select_internal._grant_privilege(selector, role, privilege);
BEGIN
    DELETE FROM model_select.selector_grants g USING model_select.selectors s
     WHERE s.name = selector AND g.selector_id = s.selector_id AND g.grantee = role AND g.privilege = p;
END $$;

CREATE FUNCTION model_select.grant_selector(selector text, role regrole, privilege text) RETURNS void
    AS 'MODULE_PATHNAME', 'model_select_admin_call' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION model_select.revoke_selector(selector text, role regrole, privilege text) RETURNS void
    AS 'MODULE_PATHNAME', 'model_select_admin_call' LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- What only superusers and the extension owner may do (setup_role,
-- set_server_id): 42501 for anyone else.
CREATE FUNCTION model_select_internal._require_extension_admin(action text) RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT (SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = current_user)
       AND NOT pg_has_role((SELECT e.extowner FROM pg_extension e WHERE e.extname = 'model_select'), 'USAGE') THEN
        RAISE EXCEPTION 'permission denied to % for model_select', action USING ERRCODE = '42501',
            HINT = format('Only superusers and the extension owner %s.', action);
    END IF;
END $$;

-- The rights of the two kinds of role, granted by setup_role(); an
-- administrator gets the application's and these.  Probe runs use the
-- caller's rights on the probe tables (create_probe_run runs the caller's
-- pool query), with row-level security by owner.
CREATE FUNCTION model_select.setup_role(role regrole, kind text) RETURNS SETOF text
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    application text[] := ARRAY[
        'USAGE ON SCHEMA model_select',
        'SELECT ON model_select.selectors, model_select.codebooks, model_select.arms, model_select.arm_state, model_select.arm_state_rows, '
            'model_select.arm_base, model_select.decisions, '
            'model_select.rewards, model_select.selector_grants, model_select.cascade_decisions, '
            'model_select.cascade_observations, model_select.cascade_state, model_select.arm_stats, '
            'model_select.cascade_outcomes, model_select.cascade_arm_stats, model_select.learner, '
            'model_select.learner_lag, model_select.learner_versions, model_select.stats, '
            'model_select.stats_resets, model_select.progress',
        -- the columns a client writes: not the ids, which come from the sequences
        -- (an id given ahead of its sequence would fail another role's insert)
        'INSERT (selector, arm, decision_id, context, reward, cost, created_at, tags) ON model_select.rewards',
        'INSERT (selector, arm, cascade_id, context, value, cost, created_at) ON model_select.cascade_observations',
        'USAGE ON SEQUENCE model_select.rewards_reward_id_seq, model_select.cascade_observations_obs_id_seq'];
    administrator text[] := ARRAY[
        'EXECUTE ON FUNCTION model_select.create_selector(text, int, text[], text, text, jsonb, bigint)',
        'SELECT, DELETE ON model_select.probe_runs, model_select.probe_pool, model_select.probe_plan',
        'INSERT, UPDATE ON model_select.probe_pool, model_select.probe_plan',
        -- not run_id, which comes from its sequence (as the logs' ids)
        'INSERT (name, horizon, reset_every, beta, kernel, settings, seed, owner), '
            'UPDATE (pool_size, dim, interval, interval_len, used, batch, prev_batch_size, batch_size, issued, '
            'observed, finished) ON model_select.probe_runs',
        'USAGE ON SEQUENCE model_select.probe_runs_run_id_seq',
        'USAGE ON SCHEMA model_select_internal',
        'EXECUTE ON FUNCTION model_select_internal._probe_create(text, int, int, float8, text, text, jsonb, bigint), '
            'model_select_internal._probe_load_pool(int, text), model_select_internal._probe_start(int), '
            'model_select_internal._probe_advance(int), model_select_internal._probe_plan(int), model_select_internal._probe_eliminate(int), '
            'model_select_internal._probe_lock_for_report(text, float8), '
            'model_select_internal._probe_record(model_select.probe_runs, int, float8)'];
    p text;
BEGIN
    IF role IS NULL OR kind IS NULL THEN
        RAISE EXCEPTION 'role and kind must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles r WHERE r.oid = role) THEN
        RAISE EXCEPTION 'role with OID % does not exist', role::oid USING ERRCODE = '42704';
    END IF;
    IF kind NOT IN ('application', 'administrator', 'none') THEN
        RAISE EXCEPTION 'unknown kind of role "%"', kind USING ERRCODE = '22023',
            HINT = 'Kinds are application (route and reward), administrator (also create selectors and probe runs) and none (revoke them all).';
    END IF;
    PERFORM model_select_internal._require_extension_admin('set up roles');
    -- start from nothing: changing a role's kind leaves no right of the old one
    -- (revoking a right on a table revokes it on its columns too)
    FOREACH p IN ARRAY application || administrator
                       || ARRAY['INSERT ON model_select.rewards, model_select.cascade_observations',
                                'INSERT, UPDATE ON model_select.probe_runs'] LOOP
        EXECUTE format('REVOKE %s FROM %s', p, role);
    END LOOP;
    FOREACH p IN ARRAY CASE kind WHEN 'application' THEN application
                                 WHEN 'administrator' THEN application || administrator
                                 ELSE '{}'::text[] END LOOP
        EXECUTE format('GRANT %s TO %s', p, role);
        RETURN NEXT format('GRANT %s TO %s', p, role);
    END LOOP;
END $$;

-- Row-level security: a role sees the rows of the selectors on which it
-- holds any right; it inserts log rows only with the reward right (checked
-- after the BEFORE trigger has filled in selector_id).  The extension's C
-- code reads and writes as the extension owner, which owns the tables and
-- so bypasses these policies, as superusers do.
DO $$
DECLARE
    t text;
BEGIN
    -- every table with per-selector data (a selector_id column)
    FOREACH t IN ARRAY ARRAY['selectors', 'codebooks', 'arms', 'arm_state', 'arm_state_rows', 'arm_base', 'decisions', 'rewards',
                             'cascade_decisions', 'cascade_observations', 'cascade_state', 'stats_resets'] LOOP
        EXECUTE format('ALTER TABLE model_select.%I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY selector_rights ON model_select.%I FOR SELECT'
                       ' USING (model_select.has_selector_privilege(selector_id, %L))',
                       t, 'route, reward, admin');
    END LOOP;
    -- the two logs that clients write
    FOREACH t IN ARRAY ARRAY['rewards', 'cascade_observations'] LOOP
        EXECUTE format('CREATE POLICY reward_right ON model_select.%I FOR INSERT'
                       ' WITH CHECK (model_select.has_selector_privilege(selector_id, %L))', t, 'reward');
    END LOOP;
END $$;
ALTER TABLE model_select.selector_grants ENABLE ROW LEVEL SECURITY;
ALTER TABLE model_select.probe_runs ENABLE ROW LEVEL SECURITY;
ALTER TABLE model_select.probe_pool ENABLE ROW LEVEL SECURITY;
ALTER TABLE model_select.probe_plan ENABLE ROW LEVEL SECURITY;

-- a grantee sees its own grants, an administrator of the selector all of them
CREATE POLICY grantee_or_admin ON model_select.selector_grants FOR SELECT
    USING (pg_catalog.pg_has_role(grantee, 'USAGE')
           OR model_select.has_selector_privilege(selector_id, 'admin'));
-- probe runs are private to their owner's role, with their pool and plan
CREATE POLICY run_owner ON model_select.probe_runs
    USING (pg_catalog.pg_has_role(owner, 'USAGE'));
CREATE POLICY run_owner ON model_select.probe_pool
    USING (EXISTS (SELECT 1 FROM model_select.probe_runs r WHERE r.run_id = probe_pool.run_id));
CREATE POLICY run_owner ON model_select.probe_plan
    USING (EXISTS (SELECT 1 FROM model_select.probe_runs r WHERE r.run_id = probe_plan.run_id));

-- EXECUTE: the schemas have no USAGE for PUBLIC, and every function that
-- touches a selector checks the caller's right on it, so PUBLIC keeps
-- EXECUTE on the public functions.  Revoked: every internal function
-- (trigger functions fire without EXECUTE; the bodies run as the extension
-- owner; the probe steps are granted to administrators), creating selectors
-- (an administrator's right) and setting up roles.
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA model_select_internal FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION
    model_select.create_selector(text, int, text[], text, text, jsonb, bigint),
    model_select.setup_role(regrole, text)
FROM PUBLIC;

SELECT pg_catalog.pg_extension_config_dump('model_select.selector_grants', '');

-- Comments (psql: \dt+, \d+, \df+, \dd).
COMMENT ON TABLE model_select.selector_grants IS
'Rights on selectors granted by their owners with grant_selector(): route, reward or admin, each separately.';
COMMENT ON COLUMN model_select.selector_grants.grantee IS 'The role granted the right (and, through membership, the roles that inherit from it).';
COMMENT ON COLUMN model_select.selector_grants.privilege IS
'route (select_model, route, scores, drift, cascades), reward (INSERT into rewards and cascade_observations) or admin (alter_selector, fit_codebook, add_arm, retire_arm, rebuild_state, checkpoint, resample, cascade_refit, stats_reset, drop_selector).';
COMMENT ON FUNCTION model_select.has_selector_privilege(text, text) IS
'Whether the current user holds the privilege (route, reward, admin, or a comma-separated list: any of them) on the selector.';
COMMENT ON FUNCTION model_select.has_selector_privilege(int, text) IS
'has_selector_privilege() by selector_id, NULL for an unknown selector: what the row-level security policies call.';
COMMENT ON FUNCTION model_select_internal._grant_privilege(text, regrole, text) IS
'Internal: checks the arguments of grant_selector() and revoke_selector(); returns the privilege as stored.';
COMMENT ON FUNCTION model_select_internal._grant_selector(text, regrole, text) IS
'Internal: the body of grant_selector(), run as the extension owner once the caller is known to own the selector.';
COMMENT ON FUNCTION model_select_internal._revoke_selector(text, regrole, text) IS
'Internal: the body of revoke_selector(), run as the extension owner once the caller is known to own the selector.';
COMMENT ON FUNCTION model_select.grant_selector(text, regrole, text) IS
'Grants a right on a selector (route, reward or admin) to a role; only its owner (or a member of the owner role), a superuser or the extension owner may.';
COMMENT ON FUNCTION model_select.revoke_selector(text, regrole, text) IS
'Revokes a right granted with grant_selector(); it takes effect at the next statement of every session.';
COMMENT ON FUNCTION model_select_internal._require_extension_admin(text) IS
'Internal: 42501 unless the current user is a superuser or a member of the extension owner role; action names what was refused.';
COMMENT ON FUNCTION model_select.setup_role(regrole, text) IS
'Superusers and the extension owner: gives a role exactly the rights of an application (route and reward), of an administrator (also create selectors and probe runs), or none; returns the GRANT statements run.';
