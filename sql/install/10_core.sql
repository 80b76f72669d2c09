-- Core: selectors (one routing policy instance each), their arms, the
-- per-arm learned state, and the functions that manage them.
--
-- The objects of the extension live in schema model_select, its internal
-- functions (the bodies that run as the extension owner, trigger functions,
-- locks, the probe steps) in schema model_select_internal, on which no
-- application has USAGE.  Every reference is schema-qualified and every
-- function pins its search_path (except create_probe_run, whose pool query
-- runs with the caller's), so nothing depends on the caller's search_path.
CREATE SCHEMA model_select_internal;
COMMENT ON SCHEMA model_select_internal IS
'Internal functions of model_select: the bodies that run as the extension owner, trigger functions, locks and the probe steps. No USAGE for PUBLIC; administrators (setup_role()) get it for the probe steps.';

-- Selectors: one routing policy instance each.  `settings` holds every
-- applicable setting with defaults filled in (validated in C).
CREATE TABLE model_select.selectors (
    selector_id serial PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name <> ''),
    dim         int NOT NULL CHECK (dim BETWEEN 1 AND 16000),
    policy      text NOT NULL,
    kernel      text,
    settings    jsonb NOT NULL,
    seed        bigint NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    -- bumped by every settings change: checkpoints of older settings are void
    settings_version int NOT NULL DEFAULT 1,
    -- the role that created it (set by create_selector; see 80_security.sql)
    owner       regrole NOT NULL
);

CREATE TABLE model_select.arms (
    arm_id      serial PRIMARY KEY,
    selector_id int NOT NULL REFERENCES model_select.selectors ON DELETE CASCADE,
    name        text NOT NULL CHECK (name <> ''),
    ordinal     int NOT NULL,
    active      boolean NOT NULL DEFAULT true,
    created_at  timestamptz NOT NULL DEFAULT now(),
    retired_at  timestamptz,
    UNIQUE (selector_id, name),
    UNIQUE (selector_id, ordinal),
    -- what the logs' foreign keys reference: one check (and one key-share
    -- lock, on the arm) per logged row covers its arm and its selector
    UNIQUE (arm_id, selector_id)
);

-- One row per arm: its checkpoint, the fold of the arm's reward log up to
-- (ckpt_tx, ckpt_seq) in canonical order under the settings of
-- settings_version (binary layout in src/model/state.h), and the totals of
-- the rewards folded.  Rewards after it are pending: readers fold them in
-- memory.  Written only by the extension's own code (checkpoints,
-- rebuild_state), as the extension owner.
CREATE TABLE model_select.arm_state (
    arm_id      int PRIMARY KEY REFERENCES model_select.arms ON DELETE CASCADE,
    selector_id int NOT NULL REFERENCES model_select.selectors ON DELETE CASCADE,
    version     bigint NOT NULL DEFAULT 0,
    n           bigint NOT NULL DEFAULT 0,
    reward_sum  float8 NOT NULL DEFAULT 0,
    cost_sum    float8 NOT NULL DEFAULT 0,
    cost_n      bigint NOT NULL DEFAULT 0,
    state       bytea,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    settings_version int NOT NULL DEFAULT 0,
    ckpt_tx     xid8 NOT NULL DEFAULT '0',
    ckpt_seq    bigint NOT NULL DEFAULT 0,
    spend_sum   float8 NOT NULL DEFAULT 0,
    spend_n     bigint NOT NULL DEFAULT 0
);
CREATE INDEX ON model_select.arm_state (selector_id);
-- States are float8 arrays that pglz cannot shrink: skip the compression try.
ALTER TABLE model_select.arm_state ALTER COLUMN state SET STORAGE EXTERNAL;

-- The rows of a checkpoint kept by rows (pak_ucb, see src/model/state_store.c):
-- arm_state.state holds the header and these chunks rows [0, n), each the
-- values of rows [first_row, first_row + nrows) of every per-row array of
-- the state.  A checkpoint that only appended rows inserts one more chunk,
-- so a reward costs O(n) bytes of WAL, not a rewrite of the O(n²) factor.
CREATE TABLE model_select.arm_state_rows (
    arm_id      int NOT NULL REFERENCES model_select.arm_state ON DELETE CASCADE,
    selector_id int NOT NULL,
    first_row   int NOT NULL CHECK (first_row >= 0),
    nrows       int NOT NULL CHECK (nrows > 0),
    rows        bytea NOT NULL,
    PRIMARY KEY (arm_id, first_row)
);
-- Float8 values that pglz cannot shrink: skip the compression try.
ALTER TABLE model_select.arm_state_rows ALTER COLUMN rows SET STORAGE EXTERNAL;

-- A backend keeps the rows a selector's load reads (its selectors row, the
-- grantees of its route right, its arms and their arm_state rows) while
-- they are current (src/routing/selector_rows.c).  Every statement that
-- writes selectors, arms, arm_state or selector_grants (80_security.sql)
-- signals it through this relation, which holds nothing: a relcache
-- invalidation of it, sent to every backend at commit, and its ShareLock,
-- held until the transaction ends (after the invalidation is sent).
CREATE TABLE model_select_internal.selector_rows_signal ();
COMMENT ON TABLE model_select_internal.selector_rows_signal IS
'Internal: holds nothing. Its relcache invalidation and its lock signal a change to the rows of selectors, arms, arm_state and selector_grants that backends keep for their loads.';
CREATE FUNCTION model_select_internal._selector_rows_changed() RETURNS trigger
    AS 'MODULE_PATHNAME', 'model_select_selector_rows_changed' LANGUAGE C PARALLEL UNSAFE;
COMMENT ON FUNCTION model_select_internal._selector_rows_changed() IS
'Internal: after a statement that wrote selectors, arms, arm_state or selector_grants, signals that the rows backends keep for their loads are no longer current.';
CREATE FUNCTION model_select_internal._selector_rows_stats(OUT entries int, OUT bytes bigint,
    OUT hits bigint, OUT reads bigint, OUT invalidations bigint)
    AS 'MODULE_PATHNAME', 'model_select_selector_rows_stats' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION model_select_internal._selector_rows_stats() IS
'Internal: this backend''s kept selector rows (selectors, bytes), the loads that took them (hits) or read the tables (reads), and the invalidations that dropped them.';
CREATE TRIGGER selector_rows_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON model_select.selectors
    FOR EACH STATEMENT EXECUTE FUNCTION model_select_internal._selector_rows_changed();
CREATE TRIGGER selector_rows_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON model_select.arms
    FOR EACH STATEMENT EXECUTE FUNCTION model_select_internal._selector_rows_changed();
-- a checkpoint's UPDATE does not signal: loads check the kept arm_state row versions
CREATE TRIGGER selector_rows_changed AFTER INSERT OR UPDATE OF arm_id, selector_id OR DELETE OR TRUNCATE
    ON model_select.arm_state FOR EACH STATEMENT EXECUTE FUNCTION model_select_internal._selector_rows_changed();
-- also under session_replication_role = replica (a logical replica's apply)
ALTER TABLE model_select.selectors ENABLE ALWAYS TRIGGER selector_rows_changed;
ALTER TABLE model_select.arms ENABLE ALWAYS TRIGGER selector_rows_changed;
ALTER TABLE model_select.arm_state ENABLE ALWAYS TRIGGER selector_rows_changed;

-- The policies and kernels as the library registers them (src/policy/registry.c):
-- names and capabilities, read by _create_selector() (the default kernel),
-- the tests and the docs check instead of lists of their own.
CREATE FUNCTION model_select.policies(
    OUT name text, OUT uses_context boolean, OUT kernels text[], OUT default_kernel text,
    OUT random_features boolean, OUT bounds text, OUT keeps_rows boolean, OUT dictionary boolean,
    OUT picks_at_random boolean, OUT forgetting text[], OUT settings text[],
    OUT own_settings text[])
    RETURNS SETOF record ROWS 10
    AS 'MODULE_PATHNAME', 'model_select_policies' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION model_select.kernels(OUT name text, OUT shift_invariant boolean, OUT policies text[])
    RETURNS SETOF record ROWS 10
    AS 'MODULE_PATHNAME', 'model_select_kernels' LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- Validates settings for a policy/kernel and returns them with defaults.
CREATE FUNCTION model_select.resolve_settings(policy text, kernel text, settings jsonb)
    RETURNS jsonb
    AS 'MODULE_PATHNAME', 'model_select_resolve_settings' LANGUAGE C IMMUTABLE PARALLEL SAFE;
-- With dim: also refuses settings whose arm states would not fit (22023).
CREATE FUNCTION model_select.resolve_settings(policy text, kernel text, settings jsonb, dim int)
    RETURNS jsonb
    AS 'MODULE_PATHNAME', 'model_select_resolve_settings' LANGUAGE C IMMUTABLE PARALLEL SAFE;
-- Over a selector's current settings: what alter_selector() stores.
CREATE FUNCTION model_select_internal._resolve_settings_over(policy text, kernel text, settings jsonb, dim int,
                                                   current jsonb)
    RETURNS jsonb
    AS 'MODULE_PATHNAME', 'model_select_resolve_settings' LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- The functions that change selectors are C entries (src/model/admin.c) that
-- check the caller's right on the selector, then run these bodies,
-- model_select_internal._<name>, as the extension owner: clients hold no write right
-- on selectors, arms or arm_state.  EXECUTE on the bodies is revoked from
-- PUBLIC (80_security.sql).
CREATE FUNCTION model_select_internal._add_arm(selector text, arm text) RETURNS void
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    sid int;
    existing model_select.arms;
BEGIN
    IF arm IS NULL OR arm = '' THEN
        RAISE EXCEPTION 'arm name must not be NULL or empty' USING ERRCODE = '22004';
    END IF;
    -- One arm addition of a selector at a time (_arms_lock: the next ordinal),
    -- then the selector's row FOR SHARE: a settings change (alter_selector(),
    -- fit_codebook()) waits for it, and it for them, but reward inserts, which
    -- share-lock the row under REPEATABLE READ, do not (FOR NO KEY UPDATE
    -- held them until this transaction ended).
    SELECT s.selector_id INTO sid FROM model_select.selectors s WHERE s.name = selector;
    IF sid IS NOT NULL THEN
        PERFORM model_select_internal._arms_lock(sid);
        SELECT s.selector_id INTO sid FROM model_select.selectors s WHERE s.selector_id = sid FOR SHARE;
    END IF;
    IF sid IS NULL THEN
        RAISE EXCEPTION 'selector "%" does not exist', selector USING ERRCODE = '42704';
    END IF;
    SELECT * INTO existing FROM model_select.arms a WHERE a.selector_id = sid AND a.name = arm;
    IF FOUND THEN
        IF existing.active THEN
            RAISE EXCEPTION 'selector "%" already has an active arm "%"', selector, arm
                USING ERRCODE = '42710';
        END IF;
        UPDATE model_select.arms SET active = true, retired_at = NULL WHERE arm_id = existing.arm_id;
        RETURN;
    END IF;
    WITH a AS (
        INSERT INTO model_select.arms(selector_id, name, ordinal)
        SELECT sid, arm, coalesce(max(ordinal), 0) + 1 FROM model_select.arms WHERE selector_id = sid
        RETURNING arm_id)
    INSERT INTO model_select.arm_state(arm_id, selector_id, settings_version)
    SELECT arm_id, sid, s.settings_version FROM a, model_select.selectors s WHERE s.selector_id = sid;
END $$;

CREATE FUNCTION model_select_internal._create_selector(
    owner regrole, name text, dim int, arms text[], policy text, kernel text, settings jsonb, seed bigint)
RETURNS int
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    sid int;
    arm text;
BEGIN
    IF name IS NULL OR dim IS NULL OR arms IS NULL OR policy IS NULL OR seed IS NULL THEN
        RAISE EXCEPTION 'name, dim, arms, policy and seed must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF name = '' THEN
        RAISE EXCEPTION 'a selector''s name must not be empty' USING ERRCODE = '22023';
    END IF;
    IF dim < 1 OR dim > 16000 THEN
        RAISE EXCEPTION 'dim must be between 1 and 16000, not %', dim USING ERRCODE = '22023';
    END IF;
    IF array_ndims(arms) > 1 THEN
        RAISE EXCEPTION 'arms must be a one-dimensional array' USING ERRCODE = '22023';
    END IF;
    IF cardinality(arms) = 0 THEN
        RAISE EXCEPTION 'a selector needs at least one arm' USING ERRCODE = '22023';
    END IF;
    IF EXISTS (SELECT 1 FROM model_select.selectors s WHERE s.name = _create_selector.name) THEN
        RAISE EXCEPTION 'selector "%" already exists', name USING ERRCODE = '42710';
    END IF;
    INSERT INTO model_select.selectors(name, dim, policy, kernel, settings, seed, owner)
    VALUES (name, dim, policy,
            coalesce(kernel, (SELECT p.default_kernel FROM model_select.policies() p WHERE p.name = policy)),
            model_select.resolve_settings(policy, kernel, coalesce(settings, '{}'), dim), seed, owner)
    RETURNING selector_id INTO sid;
    FOREACH arm IN ARRAY arms LOOP
        PERFORM model_select_internal._add_arm(name, arm);
    END LOOP;
    RETURN sid;
END $$;

-- alter_selector()'s side of the settings lock (src/model/catalog.c): reward
-- inserts hold it shared until they commit; not for clients.
CREATE FUNCTION model_select_internal._settings_lock(selector_id int) RETURNS void
    AS 'MODULE_PATHNAME', 'model_select_settings_lock' LANGUAGE C STRICT PARALLEL UNSAFE;
CREATE FUNCTION model_select_internal._arms_lock(selector_id int) RETURNS void
    AS 'MODULE_PATHNAME', 'model_select_arms_lock' LANGUAGE C STRICT PARALLEL UNSAFE;
CREATE FUNCTION model_select_internal._drop_lock(selector_id int) RETURNS void
    AS 'MODULE_PATHNAME', 'model_select_drop_lock' LANGUAGE C STRICT PARALLEL UNSAFE;

-- The row of the selector name, locked for a change of what its arms learn
-- (alter_selector(), fit_codebook()).  First wait for the reward inserts in
-- flight (later ones wait for us and read the new settings), then lock the
-- row against other changes of the selector.  FOR NO KEY UPDATE: nothing
-- that routes or rewards waits for this.
CREATE FUNCTION model_select_internal._lock_for_change(name text) RETURNS model_select.selectors
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    sid int;
    s model_select.selectors;
BEGIN
    SELECT sel.selector_id INTO sid FROM model_select.selectors sel WHERE sel.name = _lock_for_change.name;
    IF FOUND THEN
        PERFORM model_select_internal._settings_lock(sid);
        SELECT * INTO s FROM model_select.selectors sel WHERE sel.selector_id = sid FOR NO KEY UPDATE;
    END IF;
    IF s.selector_id IS NULL THEN
        RAISE EXCEPTION 'selector "%" does not exist', name USING ERRCODE = '42704';
    END IF;
    RETURN s;
END $$;

-- After what the arms learn from a row changed (alter_selector()'s settings,
-- fit_codebook()'s centroids), under the settings lock: forget the rewards
-- absorbed into the arms' bases (retain), which were learned under the old,
-- refit the cascade state, which depends on the features and the reward
-- range too, and re-derive every arm's checkpoint.  Returns the rewards
-- re-applied.
CREATE FUNCTION model_select_internal._relearn(sid int, name text) RETURNS bigint
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    absorbed numeric;
BEGIN
    SELECT sum(b.n) INTO absorbed FROM model_select.arm_base b WHERE b.selector_id = sid;
    IF absorbed IS NOT NULL THEN
        RAISE NOTICE 'selector "%" re-learns from its retained log only: the % rewards its arms absorbed are forgotten', name, absorbed
            USING DETAIL = 'They were absorbed into the arms'' bases under the old settings, and are no longer in the reward log.',
                  HINT = 'Change settings before retain absorbs, or keep the log longer (retain).';
        DELETE FROM model_select.arm_base b WHERE b.selector_id = sid;
    END IF;
    IF EXISTS (SELECT 1 FROM model_select.cascade_state st WHERE st.selector_id = sid) THEN
        PERFORM model_select.cascade_refit(name);
    END IF;
    RETURN model_select.rebuild_state(name);
END $$;

-- Change settings after creation: merged into the current ones, validated,
-- and every arm's state re-derived from the reward log (e.g. a new
-- cost_weight, alpha or bandwidth).  Returns the rewards re-applied.
CREATE FUNCTION model_select_internal._alter_selector(name text, settings jsonb) RETURNS bigint
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    s model_select.selectors;
    new_settings jsonb;
BEGIN
    IF settings IS NULL THEN
        RAISE EXCEPTION 'settings must not be NULL' USING ERRCODE = '22004';
    END IF;
    s := model_select_internal._lock_for_change(name);
    -- The given settings apply over the current ones, which drop what no
    -- longer applies; a new clock wants its forgetting given again
    -- (_resolve_settings_over).
    new_settings := model_select_internal._resolve_settings_over(s.policy, s.kernel, _alter_selector.settings, s.dim, s.settings);
    -- The log's horizon (retain, decision_ttl) is not in what the arms learn:
    -- changing only it keeps every checkpoint, base and published version,
    -- so decisions still re-derive bit for bit (decision_scores()).
    IF (new_settings - 'retain' - 'decision_ttl') = (s.settings - 'retain' - 'decision_ttl') THEN
        UPDATE model_select.selectors sel SET settings = new_settings WHERE sel.selector_id = s.selector_id;
        RETURN 0;
    END IF;
    UPDATE model_select.selectors sel SET settings = new_settings, settings_version = sel.settings_version + 1
     WHERE sel.selector_id = s.selector_id;
    -- Anything else re-learns from the retained log only.
    RETURN model_select_internal._relearn(s.selector_id, name);
END $$;

CREATE FUNCTION model_select_internal._drop_selector(name text) RETURNS void
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    sid int;
BEGIN
    -- First wait for the writers in flight: routes and reward inserts hold
    -- the settings lock from their first row on, so none is left when the
    -- log goes.  Later writers wait for us, then find no selector.  The logs
    -- name their arm without a foreign key (a key-share lock on a handful of
    -- arm rows from every transaction made a MultiXact per decision under
    -- concurrency), so they go here, rewards first (decisions_rewarded).
    SELECT sel.selector_id INTO sid FROM model_select.selectors sel WHERE sel.name = _drop_selector.name;
    IF FOUND THEN
        PERFORM model_select_internal._drop_lock(sid);
        DELETE FROM model_select.rewards r WHERE r.selector_id = sid;
        DELETE FROM model_select.decisions d WHERE d.selector_id = sid;
    END IF;
    DELETE FROM model_select.selectors s WHERE s.name = _drop_selector.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'selector "%" does not exist', name USING ERRCODE = '42704';
    END IF;
END $$;

CREATE FUNCTION model_select_internal._retire_arm(selector text, arm text) RETURNS void
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM model_select.selectors s WHERE s.name = selector) THEN
        RAISE EXCEPTION 'selector "%" does not exist', selector USING ERRCODE = '42704';
    END IF;
    UPDATE model_select.arms a SET active = false, retired_at = now()
      FROM model_select.selectors s
     WHERE s.name = selector AND a.selector_id = s.selector_id AND a.name = arm;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'selector "%" has no arm "%"', selector, arm USING ERRCODE = '42704';
    END IF;
END $$;

-- The entries (src/model/admin.c): same arguments as the bodies, less the
-- new selector's owner, which create_selector takes from the caller.
CREATE FUNCTION model_select.add_arm(selector text, arm text) RETURNS void
    AS 'MODULE_PATHNAME', 'model_select_admin_call' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION model_select.create_selector(
    name text, dim int, arms text[], policy text DEFAULT 'lin_ucb',
    kernel text DEFAULT NULL, settings jsonb DEFAULT '{}', seed bigint DEFAULT 0) RETURNS int
    AS 'MODULE_PATHNAME', 'model_select_admin_call' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION model_select.alter_selector(name text, settings jsonb) RETURNS bigint
    AS 'MODULE_PATHNAME', 'model_select_admin_call' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION model_select.drop_selector(name text) RETURNS void
    AS 'MODULE_PATHNAME', 'model_select_admin_call' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION model_select.retire_arm(selector text, arm text) RETURNS void
    AS 'MODULE_PATHNAME', 'model_select_admin_call' LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- pg_dump keeps the user data and the sequences.  arm_state is derived: it is
-- dumped empty, and restoring the reward log re-learns it through the
-- triggers (which create missing arm_state rows), so a restore can never
-- apply a reward twice.  (The logs register themselves in their parts.)
SELECT pg_catalog.pg_extension_config_dump('model_select.selectors', '');
SELECT pg_catalog.pg_extension_config_dump('model_select.arms', '');
SELECT pg_catalog.pg_extension_config_dump('model_select.arm_state', 'WHERE false');
SELECT pg_catalog.pg_extension_config_dump('model_select.selectors_selector_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('model_select.arms_arm_id_seq', '');

-- Comments (psql: \dt+, \d+, \df+, \dd).
COMMENT ON TABLE model_select.selectors IS
'Selectors: one routing policy instance each (a contextual bandit over its arms). Create with create_selector(), change with alter_selector(), delete with drop_selector().';
COMMENT ON COLUMN model_select.selectors.name IS 'Unique name by which every function refers to the selector.';
COMMENT ON COLUMN model_select.selectors.dim IS 'Dimension of the context embeddings (1 to 16000).';
COMMENT ON COLUMN model_select.selectors.policy IS 'One of the policies that policies() lists.';
COMMENT ON COLUMN model_select.selectors.kernel IS 'Kernel of a kernelised policy (one of its kernels in policies()); NULL for the others.';
COMMENT ON COLUMN model_select.selectors.settings IS
'Every applicable setting with its default filled in (see resolve_settings()). Change it with alter_selector() only: a direct UPDATE would disagree with the learned states.';
COMMENT ON COLUMN model_select.selectors.seed IS 'Seed of tie-breaking, of the random policy and of random features.';
COMMENT ON COLUMN model_select.selectors.settings_version IS
'Bumped by alter_selector(): checkpoints taken under older settings are void.';
COMMENT ON COLUMN model_select.selectors.owner IS
'The role that created the selector: it (and its members) has every right on it and grants them with grant_selector().';

COMMENT ON TABLE model_select.arms IS
'The arms (models) of each selector. A retired arm (active = false) is never chosen and refuses rewards; its state and rewards stay, add_arm() re-activates it.';
COMMENT ON COLUMN model_select.arms.name IS 'Arm name, unique within the selector: what select_model() returns.';
COMMENT ON COLUMN model_select.arms.ordinal IS 'Position within the selector (1, 2, ...): the order of scores() rows and of tie-breaking.';
COMMENT ON COLUMN model_select.arms.active IS 'false once retired by retire_arm().';
COMMENT ON COLUMN model_select.arms.retired_at IS 'When the arm was last retired; NULL while active.';

COMMENT ON TABLE model_select.arm_state IS
'Checkpoint of each arm: the fold of its reward log up to (ckpt_tx, ckpt_seq) in canonical order, under the settings of settings_version. Written only by the extension (checkpoints, rebuild_state(), resample()) as its owner. pg_dump dumps it empty; restoring the log re-learns it.';
COMMENT ON COLUMN model_select.arm_state.version IS
'Incremented by every checkpoint, rebuild and resample; invalidates cached models.';
COMMENT ON COLUMN model_select.arm_state.settings_version IS 'The selectors.settings_version the checkpoint was folded under.';
COMMENT ON COLUMN model_select.arm_state.ckpt_tx IS 'Position of the checkpoint in the log: tx of the last reward folded.';
COMMENT ON COLUMN model_select.arm_state.ckpt_seq IS 'Position of the checkpoint in the log: seq of the last reward folded.';
COMMENT ON COLUMN model_select.arm_state.n IS 'Rewards folded into the checkpoint.';
COMMENT ON COLUMN model_select.arm_state.reward_sum IS 'Sum of the rewards folded in.';
COMMENT ON COLUMN model_select.arm_state.cost_sum IS 'Sum of the costs of the rewards that had one.';
COMMENT ON COLUMN model_select.arm_state.cost_n IS 'Number of rewards that had a cost.';
COMMENT ON COLUMN model_select.arm_state.spend_sum IS 'Sum of the costs of the rewards of decisions that had one: the spend the budget''s pacer counts (rewards without a decision, such as warm_start()''s, are not spend).';
COMMENT ON COLUMN model_select.arm_state.spend_n IS 'Number of rewards of decisions that had a cost.';
COMMENT ON COLUMN model_select.arm_state.state IS
'The policy''s state in binary form (layout in src/model/state.h); NULL until the first reward. For pak_ucb only the header: the rows are in arm_state_rows.';

COMMENT ON TABLE model_select.arm_state_rows IS
'The rows of checkpoints stored by rows (pak_ucb): arm_state.state holds the header, these chunks the values of rows [first_row, first_row + nrows), tiling [0, n). A checkpoint that only appended rows adds a chunk; any other rewrites them. Written only by the extension as its owner; not dumped (derived from the log).';
COMMENT ON COLUMN model_select.arm_state_rows.first_row IS 'First row of the state the chunk holds.';
COMMENT ON COLUMN model_select.arm_state_rows.nrows IS 'Rows the chunk holds.';
COMMENT ON COLUMN model_select.arm_state_rows.rows IS
'Per row array of the state (contexts, values, each packed factor), the values of these rows, concatenated (float8, layout in src/model/state.h).';

COMMENT ON FUNCTION model_select.policies() IS
'One row per policy the library registers: its name, whether it uses the context, the kernels it takes and its default one, random features, its bounds (none, the confidence setting''s, or its own), whether it keeps every row, a dictionary, choices at random, the forgetting settings it honours, the setting keys that apply under its defaults, and those it declares as its own (they apply to the policies that declare them alone).';
COMMENT ON FUNCTION model_select.kernels() IS
'One row per kernel: its name, whether it is shift invariant (bandwidth applies; random features can approximate it) and the policies that take it.';
COMMENT ON FUNCTION model_select.resolve_settings(text, text, jsonb) IS
'Validates settings for a policy and kernel and returns them with every default filled in: what create_selector() stores.';
COMMENT ON FUNCTION model_select.resolve_settings(text, text, jsonb, int) IS
'resolve_settings() for a selector of dimension dim: also refuses (22023) settings whose arm states or working matrices would exceed the allocation limit. What create_selector() and alter_selector() use.';
COMMENT ON FUNCTION model_select_internal._resolve_settings_over(text, text, jsonb, int, jsonb) IS
'Internal: resolve_settings() of settings given over a selector''s current ones, which keep what still applies (a grid is dropped once confidence is fixed, pace once the budget is off); the given keys must apply. What alter_selector() stores.';
COMMENT ON FUNCTION model_select_internal._settings_lock(int) IS
'Internal: takes the selector''s settings lock exclusively for alter_selector(); reward inserts hold it shared until they commit.';
COMMENT ON FUNCTION model_select_internal._arms_lock(int) IS
'Internal: takes the selector''s arms lock exclusively for add_arm(), one arm addition of a selector at a time; nothing that routes or rewards takes it.';
COMMENT ON FUNCTION model_select_internal._drop_lock(int) IS
'Internal: takes the selector''s settings lock for drop_selector(), which waits for every route() and reward insert in flight before it deletes an arm.';
COMMENT ON FUNCTION model_select.add_arm(text, text) IS
'Adds an arm to a selector (next ordinal; it scores Infinity until its first reward), or re-activates a retired arm of that name with its state and rewards.';
COMMENT ON FUNCTION model_select.create_selector(text, int, text[], text, text, jsonb, bigint) IS
'Creates a selector with its arms and returns its selector_id. policy: one of policies() (default lin_ucb); kernel: one of the policy''s kernels there (NULL: its default_kernel; none for a policy without kernels); settings are validated and stored complete; seed drives tie-breaking and randomness.';
COMMENT ON FUNCTION model_select.alter_selector(text, jsonb) IS
'Merges settings into the selector''s, validates them and re-derives every arm''s state from the reward log under the new settings; returns the number of rewards re-applied (0 when only retain or decision_ttl changed, which keeps every state). Policy, kernel and dimension cannot change.';
COMMENT ON FUNCTION model_select.drop_selector(text) IS
'Deletes a selector with its arms, states, decisions, rewards and cascade data.';
COMMENT ON FUNCTION model_select.retire_arm(text, text) IS
'Retires an arm: it is never chosen again and refuses rewards; its state and rewards stay and scores() still shows it.';
COMMENT ON FUNCTION model_select_internal._add_arm(text, text) IS
'Internal: the body of add_arm(), run as the extension owner once the caller''s admin right is checked.';
COMMENT ON FUNCTION model_select_internal._create_selector(regrole, text, int, text[], text, text, jsonb, bigint) IS
'Internal: the body of create_selector(), run as the extension owner; the first argument is the caller, the new owner.';
COMMENT ON FUNCTION model_select_internal._alter_selector(text, jsonb) IS
'Internal: the body of alter_selector(), run as the extension owner once the caller''s admin right is checked.';
COMMENT ON FUNCTION model_select_internal._drop_selector(text) IS
'Internal: the body of drop_selector(), run as the extension owner once the caller''s admin right is checked.';
COMMENT ON FUNCTION model_select_internal._retire_arm(text, text) IS
'Internal: the body of retire_arm(), run as the extension owner once the caller''s admin right is checked.';
