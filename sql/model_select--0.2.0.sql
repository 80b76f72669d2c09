-- model_select 0.2.0 install script, as released (tag v0.2.0): generated then from that
-- release's sql/install/ parts.  Frozen: never edit (the current version's script is
-- generated from sql/install/, upgrades from this one by sql/upgrade/).

\echo Use "CREATE EXTENSION model_select" to load this file. \quit

-- ==== sql/install/10_core.sql ====

-- Core: selectors (one routing policy instance each), their arms, the
-- per-arm learned state, and the functions that manage them.
--
-- All objects of the extension live in schema model_select; every reference
-- is schema-qualified and every function pins its search_path (except
-- create_probe_run, whose pool query runs with the caller's), so nothing
-- depends on the caller's search_path.

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
-- settings_version (binary layout in src/core/state.h), and the totals of
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
    ckpt_seq    bigint NOT NULL DEFAULT 0
);
CREATE INDEX ON model_select.arm_state (selector_id);
-- States are float8 arrays that pglz cannot shrink: skip the compression try.
ALTER TABLE model_select.arm_state ALTER COLUMN state SET STORAGE EXTERNAL;

-- The rows of a checkpoint kept by rows (pak_ucb, see src/core/state_store.c):
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

-- Validates settings for a policy/kernel and returns them with defaults.
CREATE FUNCTION model_select.resolve_settings(policy text, kernel text, settings jsonb)
    RETURNS jsonb
    AS 'MODULE_PATHNAME', 'model_select_resolve_settings' LANGUAGE C IMMUTABLE PARALLEL SAFE;
-- With dim: also refuses settings whose arm states would not fit (22023).
CREATE FUNCTION model_select.resolve_settings(policy text, kernel text, settings jsonb, dim int)
    RETURNS jsonb
    AS 'MODULE_PATHNAME', 'model_select_resolve_settings' LANGUAGE C IMMUTABLE PARALLEL SAFE;
-- Over a selector's current settings: what alter_selector() stores.
CREATE FUNCTION model_select._resolve_settings_over(policy text, kernel text, settings jsonb, dim int,
                                                   current jsonb)
    RETURNS jsonb
    AS 'MODULE_PATHNAME', 'model_select_resolve_settings' LANGUAGE C IMMUTABLE PARALLEL SAFE;
REVOKE ALL ON FUNCTION model_select._resolve_settings_over(text, text, jsonb, int, jsonb) FROM PUBLIC;

-- The functions that change selectors are C entries (src/core/admin.c) that
-- check the caller's right on the selector, then run these bodies,
-- model_select._<name>, as the extension owner: clients hold no write right
-- on selectors, arms or arm_state.  EXECUTE on the bodies is revoked from
-- PUBLIC (80_security.sql).
CREATE FUNCTION model_select._add_arm(selector text, arm text) RETURNS void
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    sid int;
    existing model_select.arms;
BEGIN
    IF arm IS NULL OR arm = '' THEN
        RAISE EXCEPTION 'arm name must not be NULL or empty' USING ERRCODE = '22004';
    END IF;
    SELECT s.selector_id INTO sid FROM model_select.selectors s WHERE s.name = selector FOR NO KEY UPDATE;
    IF NOT FOUND THEN
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

CREATE FUNCTION model_select._create_selector(
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
            CASE WHEN policy IN ('pak_ucb', 'rff_ucb', 'bkb') THEN coalesce(kernel, 'rbf') ELSE kernel END,
            model_select.resolve_settings(policy, kernel, coalesce(settings, '{}'), dim), seed, owner)
    RETURNING selector_id INTO sid;
    FOREACH arm IN ARRAY arms LOOP
        PERFORM model_select._add_arm(name, arm);
    END LOOP;
    RETURN sid;
END $$;

-- alter_selector()'s side of the settings lock (src/core/catalog.c): reward
-- inserts hold it shared until they commit; not for clients.
CREATE FUNCTION model_select._settings_lock(selector_id int) RETURNS void
    AS 'MODULE_PATHNAME', 'model_select_settings_lock' LANGUAGE C STRICT PARALLEL UNSAFE;
REVOKE ALL ON FUNCTION model_select._settings_lock(int) FROM PUBLIC;

-- Change settings after creation: merged into the current ones, validated,
-- and every arm's state re-derived from the reward log (e.g. a new
-- cost_weight, alpha or bandwidth).  Returns the rewards re-applied.
CREATE FUNCTION model_select._alter_selector(name text, settings jsonb) RETURNS bigint
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    sid int;
    s model_select.selectors;
BEGIN
    IF settings IS NULL THEN
        RAISE EXCEPTION 'settings must not be NULL' USING ERRCODE = '22004';
    END IF;
    -- First wait for the reward inserts in flight (later ones wait for us and
    -- read the new settings), then lock the row against other changes of
    -- the selector.  FOR NO KEY UPDATE: logged rows key-share-lock their arm
    -- (foreign keys), and nothing that routes or rewards waits for this.
    SELECT sel.selector_id INTO sid FROM model_select.selectors sel WHERE sel.name = _alter_selector.name;
    IF FOUND THEN
        PERFORM model_select._settings_lock(sid);
        SELECT * INTO s FROM model_select.selectors sel WHERE sel.selector_id = sid FOR NO KEY UPDATE;
    END IF;
    IF s.selector_id IS NULL THEN
        RAISE EXCEPTION 'selector "%" does not exist', name USING ERRCODE = '42704';
    END IF;
    -- The given settings apply over the current ones, which drop what no
    -- longer applies; a new clock wants its forgetting given again
    -- (_resolve_settings_over).
    UPDATE model_select.selectors sel
       SET settings = model_select._resolve_settings_over(s.policy, s.kernel, _alter_selector.settings, s.dim, s.settings),
           settings_version = sel.settings_version + 1
     WHERE sel.selector_id = s.selector_id;
    -- the cascade state depends on the features and the reward range too:
    -- refit it under the settings lock, before any later observation
    IF EXISTS (SELECT 1 FROM model_select.cascade_state st WHERE st.selector_id = s.selector_id) THEN
        PERFORM model_select.cascade_refit(name);
    END IF;
    RETURN model_select.rebuild_state(name);
END $$;

CREATE FUNCTION model_select._drop_selector(name text) RETURNS void
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM model_select.selectors s WHERE s.name = _drop_selector.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'selector "%" does not exist', name USING ERRCODE = '42704';
    END IF;
END $$;

CREATE FUNCTION model_select._retire_arm(selector text, arm text) RETURNS void
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

-- The entries (src/core/admin.c): same arguments as the bodies, less the
-- new selector's owner, which create_selector takes from the caller.
CREATE FUNCTION model_select.add_arm(selector text, arm text) RETURNS void
    AS 'MODULE_PATHNAME', 'model_select_admin_call' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION model_select.create_selector(
    name text, dim int, arms text[], policy text DEFAULT 'pak_ucb',
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
COMMENT ON COLUMN model_select.selectors.policy IS 'pak_ucb, rff_ucb, bkb, lin_ucb, greedy or random.';
COMMENT ON COLUMN model_select.selectors.kernel IS 'Kernel of a kernelised policy (pak_ucb, rff_ucb, bkb); NULL for the others.';
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
COMMENT ON COLUMN model_select.arm_state.state IS
'The policy''s state in binary form (layout in src/core/state.h); NULL until the first reward. For pak_ucb only the header: the rows are in arm_state_rows.';

COMMENT ON TABLE model_select.arm_state_rows IS
'The rows of checkpoints stored by rows (pak_ucb): arm_state.state holds the header, these chunks the values of rows [first_row, first_row + nrows), tiling [0, n). A checkpoint that only appended rows adds a chunk; any other rewrites them. Written only by the extension as its owner; not dumped (derived from the log).';
COMMENT ON COLUMN model_select.arm_state_rows.first_row IS 'First row of the state the chunk holds.';
COMMENT ON COLUMN model_select.arm_state_rows.nrows IS 'Rows the chunk holds.';
COMMENT ON COLUMN model_select.arm_state_rows.rows IS
'Per row array of the state (contexts, values, each packed factor), the values of these rows, concatenated (float8, layout in src/core/state.h).';

COMMENT ON FUNCTION model_select.resolve_settings(text, text, jsonb) IS
'Validates settings for a policy and kernel and returns them with every default filled in: what create_selector() stores.';
COMMENT ON FUNCTION model_select.resolve_settings(text, text, jsonb, int) IS
'resolve_settings() for a selector of dimension dim: also refuses (22023) settings whose arm states or working matrices would exceed the allocation limit. What create_selector() and alter_selector() use.';
COMMENT ON FUNCTION model_select._resolve_settings_over(text, text, jsonb, int, jsonb) IS
'Internal: resolve_settings() of settings given over a selector''s current ones, which keep what still applies (a grid is dropped once confidence is fixed, pace once the budget is off); the given keys must apply. What alter_selector() stores.';
COMMENT ON FUNCTION model_select._settings_lock(int) IS
'Internal: takes the selector''s settings lock exclusively for alter_selector(); reward inserts hold it shared until they commit.';
COMMENT ON FUNCTION model_select.add_arm(text, text) IS
'Adds an arm to a selector (next ordinal; it scores Infinity until its first reward), or re-activates a retired arm of that name with its state and rewards.';
COMMENT ON FUNCTION model_select.create_selector(text, int, text[], text, text, jsonb, bigint) IS
'Creates a selector with its arms and returns its selector_id. policy: pak_ucb (default), rff_ucb, bkb, lin_ucb, greedy or random; kernel for pak_ucb, rff_ucb and bkb (default rbf); settings are validated and stored complete; seed drives tie-breaking and randomness.';
COMMENT ON FUNCTION model_select.alter_selector(text, jsonb) IS
'Merges settings into the selector''s, validates them and re-derives every arm''s state from the reward log under the new settings; returns the number of rewards re-applied. Policy, kernel and dimension cannot change.';
COMMENT ON FUNCTION model_select.drop_selector(text) IS
'Deletes a selector with its arms, states, decisions, rewards and cascade data.';
COMMENT ON FUNCTION model_select.retire_arm(text, text) IS
'Retires an arm: it is never chosen again and refuses rewards; its state and rewards stay and scores() still shows it.';
COMMENT ON FUNCTION model_select._add_arm(text, text) IS
'Internal: the body of add_arm(), run as the extension owner once the caller''s admin right is checked.';
COMMENT ON FUNCTION model_select._create_selector(regrole, text, int, text[], text, text, jsonb, bigint) IS
'Internal: the body of create_selector(), run as the extension owner; the first argument is the caller, the new owner.';
COMMENT ON FUNCTION model_select._alter_selector(text, jsonb) IS
'Internal: the body of alter_selector(), run as the extension owner once the caller''s admin right is checked.';
COMMENT ON FUNCTION model_select._drop_selector(text) IS
'Internal: the body of drop_selector(), run as the extension owner once the caller''s admin right is checked.';
COMMENT ON FUNCTION model_select._retire_arm(text, text) IS
'Internal: the body of retire_arm(), run as the extension owner once the caller''s admin right is checked.';

-- ==== sql/install/20_routing.sql ====

-- Routing: choosing an arm for a context (select_model, route), every arm's
-- score (scores), and the decision log that route() writes.

CREATE TABLE model_select.decisions (
    decision_id bigserial PRIMARY KEY,
    selector_id int NOT NULL,
    arm_id      int NOT NULL,
    context     float8[] NOT NULL,
    score       float8 NOT NULL,            -- the chosen arm's ucb
    mean        float8,                     -- its predicted reward (mean) at decision time
    created_at  timestamptz NOT NULL DEFAULT now(),
    cost_weight float8,                     -- the cost weight λ in force (the budget's pacer)
    FOREIGN KEY (arm_id, selector_id) REFERENCES model_select.arms (arm_id, selector_id)
        ON DELETE CASCADE
);
CREATE INDEX ON model_select.decisions (selector_id, created_at);

-- Scoring.  select_model and scores read only (STABLE); route logs a decision.
CREATE FUNCTION model_select.select_model(selector text, context float8[]) RETURNS text
    AS 'MODULE_PATHNAME', 'model_select_select_model' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION model_select.select_model(selector text, context real[]) RETURNS text
    AS 'MODULE_PATHNAME', 'model_select_select_model' LANGUAGE C STABLE STRICT PARALLEL SAFE;

CREATE FUNCTION model_select.route(selector text, context float8[],
    OUT decision_id bigint, OUT arm text, OUT score float8)
    AS 'MODULE_PATHNAME', 'model_select_route' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
CREATE FUNCTION model_select.route(selector text, context real[],
    OUT decision_id bigint, OUT arm text, OUT score float8)
    AS 'MODULE_PATHNAME', 'model_select_route' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

CREATE FUNCTION model_select.scores(selector text, context float8[])
    RETURNS TABLE (arm text, active boolean, n bigint, mean float8, width float8, ucb float8,
                   radius float8, alpha float8)
    AS 'MODULE_PATHNAME', 'model_select_scores' LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 8;
CREATE FUNCTION model_select.scores(selector text, context real[])
    RETURNS TABLE (arm text, active boolean, n bigint, mean float8, width float8, ucb float8,
                   radius float8, alpha float8)
    AS 'MODULE_PATHNAME', 'model_select_scores' LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 8;

-- Route every row of a query (key integer, context real[] or float8[]) in one
-- call, scoring blocks of rows by BLAS-3; with log, the decisions are logged.
CREATE FUNCTION model_select.route_batch(selector text, source text, log boolean DEFAULT false)
    RETURNS TABLE (key bigint, arm text, score float8, mean float8, width float8, decision_id bigint)
    AS 'MODULE_PATHNAME', 'model_select_route_batch' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

-- This backend's cache of arm folds and decoded models (bounded by the
-- setting model_select.cache_size): entries, bytes, hits, misses, decodes,
-- evictions, and the bytes of the random feature matrices kept; then the
-- server's shared cache (with shared_preload_libraries, else NULL): bases
-- held, their bytes, pins on them, this backend's hits and publishes, and
-- evictions.
CREATE FUNCTION model_select.cache_stats(OUT entries int, OUT bytes bigint, OUT hits bigint,
    OUT misses bigint, OUT decodes bigint, OUT evictions bigint, OUT feature_bytes bigint,
    OUT shared_entries int, OUT shared_bytes bigint, OUT shared_pins int,
    OUT shared_hits bigint, OUT shared_publishes bigint, OUT shared_evictions bigint)
    AS 'MODULE_PATHNAME', 'model_select_cache_stats' LANGUAGE C VOLATILE PARALLEL RESTRICTED;

SELECT pg_catalog.pg_extension_config_dump('model_select.decisions', '');
SELECT pg_catalog.pg_extension_config_dump('model_select.decisions_decision_id_seq', '');

-- Comments (psql: \dt+, \d+, \df+, \dd).
COMMENT ON TABLE model_select.decisions IS
'Decision log written by route(): the chosen arm for a context, with its ucb and predicted mean at decision time. A reward may name the decision_id.';
COMMENT ON COLUMN model_select.decisions.context IS 'The context as given (stored as float8[], not normalised).';
COMMENT ON COLUMN model_select.decisions.score IS 'The chosen arm''s ucb at decision time (Infinity for an untried arm).';
COMMENT ON COLUMN model_select.decisions.mean IS 'The chosen arm''s predicted reward at decision time (drift() compares it with the rewards).';
COMMENT ON COLUMN model_select.decisions.cost_weight IS 'The cost weight in force at decision time: with a budget the pacer''s, a function of the costs in the reward log; else the cost_weight setting.';

COMMENT ON FUNCTION model_select.select_model(text, float8[]) IS
'The arm to use for this context: the active arm with the highest ucb, ties broken by a hash of seed, context and ordinal. Reads only (STABLE, PARALLEL SAFE).';
COMMENT ON FUNCTION model_select.select_model(text, real[]) IS
'The arm to use for this context: the active arm with the highest ucb, ties broken by a hash of seed, context and ordinal. Reads only (STABLE, PARALLEL SAFE).';
COMMENT ON FUNCTION model_select.route(text, float8[]) IS
'The choice of select_model(), logged in decisions: returns the decision_id (to reward), the arm and its ucb.';
COMMENT ON FUNCTION model_select.route(text, real[]) IS
'The choice of select_model(), logged in decisions: returns the decision_id (to reward), the arm and its ucb.';
COMMENT ON FUNCTION model_select.route_batch(text, text, boolean) IS
'Routes every row of the query source, which yields (key integer, context real[] or float8[]): per row the key, the arm select_model() would choose, its ucb (score), mean and width, and with log => true the decision_id of the decision logged for it. Blocks of rows are scored by BLAS-3. source runs with the caller''s rights, read only.';
COMMENT ON FUNCTION model_select.scores(text, float8[]) IS
'Every arm of the selector (retired ones too) in ordinal order: rewards n, mean, width, ucb = mean + radius * width, and the radius and ridge alpha of the bound for this context. Reads only.';
COMMENT ON FUNCTION model_select.scores(text, real[]) IS
'Every arm of the selector (retired ones too) in ordinal order: rewards n, mean, width, ucb = mean + radius * width, and the radius and ridge alpha of the bound for this context. Reads only.';
COMMENT ON FUNCTION model_select.cache_stats() IS
'This backend''s cache of arm folds and decoded models: entries and bytes held, hits (a cached model reused), misses (an arm folded anew from its checkpoint), states decoded, evictions (least recently used selectors dropped to stay within model_select.cache_size), and bytes of random feature matrices; then the server''s shared cache (model_select in shared_preload_libraries, else NULL): bases held, their bytes, pins on them, bases this backend took from it and published to it, and evictions.';

-- ==== sql/install/30_learning.sql ====

-- Learning: the reward log, the triggers that fold it into arm_state, and
-- the functions that re-derive the state from the log.

-- The reward log: the source of truth for all learned state.  Insert either
-- (decision_id, reward [, cost]) or (selector, arm, context, reward [, cost]);
-- the BEFORE trigger fills in the rest, including tx, the inserting
-- transaction, and seq, the row's place in it: an arm's log is folded in
-- (tx, seq) order.  pg_dump writes the log in that order (the ORDER BY
-- given to pg_extension_config_dump below), so that a restore, whose rows
-- all get the restoring transaction's tx, gives them seqs in the same order
-- and every state is derived from the same sequence of rewards.  The AFTER
-- trigger (once per statement) checkpoints arms with many pending rewards.
CREATE TABLE model_select.rewards (
    reward_id   bigserial PRIMARY KEY,
    selector    text,
    arm         text,
    decision_id bigint UNIQUE REFERENCES model_select.decisions,
    context     float8[],
    reward      float8 NOT NULL,
    cost        float8,
    created_at  timestamptz NOT NULL DEFAULT now(),
    selector_id int NOT NULL,
    arm_id      int NOT NULL,
    tx          xid8 NOT NULL,
    seq         bigint NOT NULL,
    FOREIGN KEY (arm_id, selector_id) REFERENCES model_select.arms (arm_id, selector_id)
        ON DELETE CASCADE
);
CREATE INDEX ON model_select.rewards (arm_id, tx, seq);
CREATE INDEX ON model_select.rewards (selector_id);
-- Contexts (embeddings) are compressed with lz4 where the server has it:
-- pglz's attempt on one cost each decision and reward ~20 us of CPU at
-- d = 384 (bench-pgbench), mostly for nothing; lz4 gives up on float8
-- noise at once and packs float4-born embeddings about as well.
DO $$
BEGIN
    IF 'lz4' = ANY ((SELECT enumvals FROM pg_catalog.pg_settings
                     WHERE name = 'default_toast_compression')::text[]) THEN
        ALTER TABLE model_select.decisions ALTER COLUMN context SET COMPRESSION lz4;
        ALTER TABLE model_select.rewards ALTER COLUMN context SET COMPRESSION lz4;
    END IF;
END $$;
-- and kept in the row (MAIN: compressed if that helps, out of line only past
-- a page): at d = 384 a context is 3 kB, over the 2 kB at which EXTENDED
-- moves it to the TOAST table, costing every decision and reward a TOAST
-- insert and every fold a TOAST fetch (5% of route + reward throughput at
-- 4 clients, bench-pgbench).
ALTER TABLE model_select.decisions ALTER COLUMN context SET STORAGE MAIN;
ALTER TABLE model_select.rewards ALTER COLUMN context SET STORAGE MAIN;

CREATE FUNCTION model_select._rewards_resolve() RETURNS trigger
    AS 'MODULE_PATHNAME', 'model_select_rewards_resolve' LANGUAGE C PARALLEL UNSAFE;
CREATE FUNCTION model_select._rewards_apply() RETURNS trigger
    AS 'MODULE_PATHNAME', 'model_select_rewards_apply' LANGUAGE C PARALLEL UNSAFE;

CREATE TRIGGER rewards_resolve BEFORE INSERT ON model_select.rewards
    FOR EACH ROW EXECUTE FUNCTION model_select._rewards_resolve();
CREATE TRIGGER rewards_apply AFTER INSERT ON model_select.rewards
    REFERENCING NEW TABLE AS new_rewards
    FOR EACH STATEMENT EXECUTE FUNCTION model_select._rewards_apply();

-- The log is append-only: an UPDATE or TRUNCATE would silently desynchronise
-- the learned state.  (DELETE stays possible, e.g. for drop_selector's
-- cascade; after deleting rewards by hand, run rebuild_state().)
CREATE FUNCTION model_select._rewards_append_only() RETURNS trigger
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION 'model_select.rewards is an append-only log: % is not allowed', TG_OP
        USING ERRCODE = '55000',
              HINT = 'Insert a new reward instead; after deleting rewards, run model_select.rebuild_state().';
END $$;
CREATE TRIGGER rewards_append_only BEFORE UPDATE OR TRUNCATE ON model_select.rewards
    FOR EACH STATEMENT EXECUTE FUNCTION model_select._rewards_append_only();

CREATE FUNCTION model_select.rebuild_state(selector text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'model_select_rebuild_state' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

-- Fold every arm's final pending rewards into its checkpoint now; returns
-- the rewards folded.  Scores do not change: readers fold pending rewards.
CREATE FUNCTION model_select.checkpoint(selector text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'model_select_checkpoint' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

-- bkb: resample every arm's dictionary now (spec/003.md §2.3); returns the
-- number of arms resampled.  55000 unless the selector's policy is bkb.
CREATE FUNCTION model_select.resample(selector text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'model_select_resample' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

SELECT pg_catalog.pg_extension_config_dump('model_select.rewards', 'ORDER BY tx, seq');
SELECT pg_catalog.pg_extension_config_dump('model_select.rewards_reward_id_seq', '');

-- Comments (psql: \dt+, \d+, \df+, \dd).
COMMENT ON TABLE model_select.rewards IS
'The reward log, source of truth of all learned state. Insert (decision_id, reward[, cost]) or (selector, arm, context, reward[, cost]); triggers validate each row; readers fold new rewards in memory and checkpoints store the fold (canonical order: tx, seq). Append-only: UPDATE and TRUNCATE are refused; after a DELETE run rebuild_state().';
COMMENT ON COLUMN model_select.rewards.selector IS 'Selector name (or taken from the decision).';
COMMENT ON COLUMN model_select.rewards.arm IS 'Arm name (or taken from the decision); the arm must be active.';
COMMENT ON COLUMN model_select.rewards.decision_id IS 'The decision rewarded, if any; at most one reward per decision.';
COMMENT ON COLUMN model_select.rewards.context IS 'The context (taken from the decision when decision_id is given).';
COMMENT ON COLUMN model_select.rewards.reward IS 'The observed reward, finite and within the selector''s [reward_min, reward_max].';
COMMENT ON COLUMN model_select.rewards.cost IS 'Optional cost (finite, >= 0), weighted by the setting cost_weight.';
COMMENT ON COLUMN model_select.rewards.selector_id IS 'Filled in by the trigger rewards_resolve.';
COMMENT ON COLUMN model_select.rewards.arm_id IS 'Filled in by the trigger rewards_resolve.';
COMMENT ON COLUMN model_select.rewards.tx IS 'The inserting transaction (set by rewards_resolve whatever the client writes): the log is folded in (tx, seq) order.';
COMMENT ON COLUMN model_select.rewards.seq IS 'The row''s place among its transaction''s rows, in insertion order (set by rewards_resolve whatever the client writes): the log is folded in (tx, seq) order.';

COMMENT ON FUNCTION model_select._rewards_resolve() IS
'Trigger function of rewards_resolve (BEFORE INSERT, each row): completes and validates a reward row.';
COMMENT ON FUNCTION model_select._rewards_apply() IS
'Trigger function of rewards_apply (AFTER INSERT, each statement): checkpoints the arms that reach model_select.checkpoint_threshold final pending rewards, without waiting for a busy arm.';
COMMENT ON FUNCTION model_select._rewards_append_only() IS
'Trigger function of rewards_append_only: refuses UPDATE and TRUNCATE of the reward log (55000).';
COMMENT ON TRIGGER rewards_resolve ON model_select.rewards IS 'Completes and validates each reward row.';
COMMENT ON TRIGGER rewards_apply ON model_select.rewards IS 'Checkpoints arms with many pending rewards.';
COMMENT ON TRIGGER rewards_append_only ON model_select.rewards IS 'Keeps the reward log append-only.';

COMMENT ON FUNCTION model_select.rebuild_state(text) IS
'Recomputes every arm''s checkpoint from scratch from its reward log in (tx, seq) order, the definition of the state (after deleting rewards, or to repair a state); returns the number of rewards folded.';
COMMENT ON FUNCTION model_select.checkpoint(text) IS
'Folds every arm''s final pending rewards into its stored checkpoint now (scores do not change); returns the number of rewards folded.';
COMMENT ON FUNCTION model_select.resample(text) IS
'For a bkb selector: resamples every arm''s dictionary now; returns the number of arms resampled.';

-- ==== sql/install/40_introspection.sql ====

-- Introspection: per-arm statistics and the drift detector.

-- Per arm: rewards in the log (n), their means, how many are pending after
-- the checkpoint, and the checkpoint's version, size and time.  With the
-- reader's rights (security_invoker), so that row-level security shows each
-- role only the selectors it may use.
CREATE VIEW model_select.arm_stats WITH (security_invoker = true) AS
SELECT s.name AS selector, a.name AS arm, a.ordinal, a.active, c.n + p.n AS n,
       CASE WHEN c.n + p.n > 0 THEN (c.reward_sum + p.reward_sum) / (c.n + p.n) END AS mean_reward,
       CASE WHEN c.cost_n + p.cost_n > 0
            THEN (c.cost_sum + p.cost_sum) / (c.cost_n + p.cost_n) END AS mean_cost,
       p.n AS pending, st.version,
       (octet_length(st.state) + (SELECT coalesce(sum(octet_length(sr.rows)), 0)
                                    FROM model_select.arm_state_rows sr
                                   WHERE sr.arm_id = st.arm_id))::int AS state_bytes,
       st.updated_at
  FROM model_select.selectors s
  JOIN model_select.arms a USING (selector_id)
  LEFT JOIN model_select.arm_state st
         ON st.arm_id = a.arm_id AND st.settings_version = s.settings_version
  CROSS JOIN LATERAL (SELECT coalesce(st.n, 0) AS n, coalesce(st.reward_sum, 0) AS reward_sum,
                             coalesce(st.cost_sum, 0) AS cost_sum, coalesce(st.cost_n, 0) AS cost_n) c
  CROSS JOIN LATERAL (
        SELECT count(*) AS n, coalesce(sum(r.reward), 0) AS reward_sum,
               coalesce(sum(r.cost), 0) AS cost_sum, count(r.cost) AS cost_n
          FROM model_select.rewards r
         WHERE r.arm_id = a.arm_id
           AND (r.tx, r.seq) > (coalesce(st.ckpt_tx, '0'::xid8), coalesce(st.ckpt_seq, 0))) p;

-- Change detector: per arm, over its last `recent` rewarded decisions, the
-- mean reward observed vs the mean the model predicted when it decided.  A
-- gap many standard errors wide means the arm's world has moved: consider a
-- window, a discount or restart_every (see README).  Needs the route
-- right; reads with the caller's rights (row-level security).
CREATE FUNCTION model_select.drift(selector text, recent int DEFAULT 100)
RETURNS TABLE (arm text, n bigint, observed float8, predicted float8, gap float8, z float8)
LANGUAGE plpgsql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT model_select.has_selector_privilege(drift.selector, 'route') THEN
        RAISE EXCEPTION 'permission denied for selector "%"', drift.selector USING ERRCODE = '42501',
            DETAIL = 'This needs the route privilege on the selector.',
            HINT = 'The selector''s owner can grant it with model_select.grant_selector().';
    END IF;
    IF recent IS NULL THEN
        RAISE EXCEPTION 'drift: recent must not be NULL' USING ERRCODE = '22004';
    ELSIF recent < 1 THEN
        RAISE EXCEPTION 'drift: recent must be at least 1 decision, not %', recent USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
    SELECT a.name, count(r.reward), avg(r.reward), avg(r.mean), avg(r.reward - r.mean),
           avg(r.reward - r.mean) / nullif(stddev_samp(r.reward - r.mean) / sqrt(count(r.reward)), 0)
      FROM model_select.selectors s
      JOIN model_select.arms a ON a.selector_id = s.selector_id
      LEFT JOIN LATERAL (
            SELECT rw.reward, d.mean
              FROM model_select.rewards rw
              JOIN model_select.decisions d ON d.decision_id = rw.decision_id
             WHERE rw.arm_id = a.arm_id AND d.mean > '-Infinity' AND d.mean < 'Infinity'
             ORDER BY rw.tx DESC, rw.seq DESC
             LIMIT recent) r ON true
     WHERE s.name = drift.selector
     GROUP BY a.name, a.ordinal
     ORDER BY a.ordinal;
END $$;

-- Comments (psql: \dv+, \d+, \df+, \dd).
COMMENT ON VIEW model_select.arm_stats IS
'Per arm: rewards in the log, mean reward, mean cost, rewards pending after the checkpoint, checkpoint version and size.';
COMMENT ON COLUMN model_select.arm_stats.pending IS 'Rewards logged after the checkpoint (readers fold them in memory).';
COMMENT ON COLUMN model_select.arm_stats.mean_reward IS 'Mean of the arm''s rewards in the log; NULL while n = 0.';
COMMENT ON COLUMN model_select.arm_stats.mean_cost IS 'Mean cost over the rewards that had a cost.';
COMMENT ON COLUMN model_select.arm_stats.state_bytes IS 'Size of the stored state in bytes (with its rows in arm_state_rows).';

COMMENT ON FUNCTION model_select.drift(text, int) IS
'Change detector: per arm, over its last `recent` rewarded decisions, the mean observed reward vs the mean predicted at decision time, their gap and its z score (|z| >= 3: the arm no longer behaves as it used to).';

-- ==== sql/install/50_cascades.sql ====

-- Cascades: Weitzman's reservation index and learned cost-aware cascades.

-- Pandora's box (spec/004.md §2.1): Weitzman reservation index, the sigma
-- solving E[(V - sigma)^+] = cost, for V ~ 'bernoulli' {p[, high]},
-- 'uniform' {a, b}, 'gaussian' {mean, sd}, 'empirical' {v1, ..., vn} or
-- 'discrete' {v1, p1, ..., vn, pn} (see src/cascade/reservation.c).  Not STRICT:
-- a NULL argument is an error (22004), bad input 22023.
CREATE FUNCTION model_select.reservation_index(distribution text, params float8[], cost float8)
    RETURNS float8
    AS 'MODULE_PATHNAME', 'model_select_reservation_index' LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- Learned cost-aware cascades (COSMOS, spec/004.md §3; src/cascade/), the
-- known-reward variant: the application's evaluator gives each queried
-- arm's value directly.  Per arm, the Weitzman reservation index is learned
-- as sigma_a(x) = reward_min + R·tanh(rho_aᵀpsi(x)) (R = reward_max −
-- reward_min) from the arm's observations (value, cost); arms are queried in
-- decreasing optimistic index reward_min + R·tanh(rho_aᵀpsi + beta·|psi|_{V_a⁻¹})
-- and the cascade stops once the best value seen is >= the next index.
-- psi(x): [1] for greedy/random selectors (context-free), the selector's
-- random Fourier features plus a bias 1 for rff_ucb, the (normalised)
-- embedding plus a bias 1 otherwise.  beta defaults to 5: with 0.5 a box
-- that starts with a few zeros was never tried again in 88% of 200 seeded
-- two-box runs (0% at 5), and the two-cluster instance fell below the best
-- single arm on one seed in three.

-- One row per cascade_route() call: the order and indices it used.
CREATE TABLE model_select.cascade_decisions (
    cascade_id  bigserial PRIMARY KEY,
    selector_id int NOT NULL REFERENCES model_select.selectors ON DELETE CASCADE,
    context     float8[] NOT NULL,
    beta        float8 NOT NULL,
    arms        text[] NOT NULL,            -- active arms in cascade order
    indices     float8[] NOT NULL,          -- their optimistic indices (stop thresholds)
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ON model_select.cascade_decisions (selector_id, created_at);

-- The observation log, the source of truth for cascade_state: one row per
-- queried arm.  Insert (selector, arm, context, value, cost) or
-- (cascade_id, arm, value, cost); the BEFORE trigger fills in the rest, the
-- AFTER trigger (once per statement) learns from it.
CREATE TABLE model_select.cascade_observations (
    obs_id      bigserial PRIMARY KEY,
    selector    text,
    arm         text,
    cascade_id  bigint REFERENCES model_select.cascade_decisions,
    context     float8[],
    value       float8 NOT NULL,
    cost        float8 NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    selector_id int NOT NULL REFERENCES model_select.selectors ON DELETE CASCADE,
    arm_id      int NOT NULL REFERENCES model_select.arms ON DELETE CASCADE,
    UNIQUE (cascade_id, arm_id)             -- each arm is queried at most once per cascade
);
CREATE INDEX ON model_select.cascade_observations (arm_id, obs_id);
CREATE INDEX ON model_select.cascade_observations (selector_id);

-- Per arm: n observations in the design, rho as of the fit at fit_n
-- observations, design = packed lower Cholesky factor (by rows, float8) of
-- V = I + Σ psi psiᵀ.  Derived from the log: cascade_refit() rebuilds it.
CREATE TABLE model_select.cascade_state (
    arm_id      int PRIMARY KEY REFERENCES model_select.arms ON DELETE CASCADE,
    selector_id int NOT NULL REFERENCES model_select.selectors ON DELETE CASCADE,
    version     bigint NOT NULL DEFAULT 0,
    n           bigint NOT NULL DEFAULT 0,
    fit_n       bigint NOT NULL DEFAULT 0,
    rho         float8[],
    design      bytea,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ON model_select.cascade_state (selector_id);
ALTER TABLE model_select.cascade_state ALTER COLUMN design SET STORAGE EXTERNAL;

CREATE FUNCTION model_select._cascade_resolve() RETURNS trigger
    AS 'MODULE_PATHNAME', 'model_select_cascade_resolve' LANGUAGE C PARALLEL UNSAFE;
CREATE FUNCTION model_select._cascade_apply() RETURNS trigger
    AS 'MODULE_PATHNAME', 'model_select_cascade_apply' LANGUAGE C PARALLEL UNSAFE;
CREATE TRIGGER cascade_resolve BEFORE INSERT ON model_select.cascade_observations
    FOR EACH ROW EXECUTE FUNCTION model_select._cascade_resolve();
CREATE TRIGGER cascade_apply AFTER INSERT ON model_select.cascade_observations
    REFERENCING NEW TABLE AS new_observations
    FOR EACH STATEMENT EXECUTE FUNCTION model_select._cascade_apply();

CREATE FUNCTION model_select._cascade_append_only() RETURNS trigger
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION 'model_select.cascade_observations is an append-only log: % is not allowed', TG_OP
        USING ERRCODE = '55000',
              HINT = 'Insert a new observation instead; after deleting observations, run model_select.cascade_refit().';
END $$;
CREATE TRIGGER cascade_append_only BEFORE UPDATE OR TRUNCATE ON model_select.cascade_observations
    FOR EACH STATEMENT EXECUTE FUNCTION model_select._cascade_append_only();

-- The active arms in decreasing optimistic index (the stop thresholds).
CREATE FUNCTION model_select.cascade(selector text, context float8[], beta float8 DEFAULT 5)
    RETURNS TABLE ("position" int, arm text, index float8)
    AS 'MODULE_PATHNAME', 'model_select_cascade' LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 8;
CREATE FUNCTION model_select.cascade(selector text, context real[], beta float8 DEFAULT 5)
    RETURNS TABLE ("position" int, arm text, index float8)
    AS 'MODULE_PATHNAME', 'model_select_cascade' LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 8;

-- Every arm (retired ones too): observations, point estimate of the index,
-- width |psi|_{V⁻¹} and optimistic index; Infinity while n = 0.
CREATE FUNCTION model_select.cascade_scores(selector text, context float8[], beta float8 DEFAULT 5)
    RETURNS TABLE (arm text, active boolean, n bigint, estimate float8, width float8, index float8)
    AS 'MODULE_PATHNAME', 'model_select_cascade_scores' LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 8;
CREATE FUNCTION model_select.cascade_scores(selector text, context real[], beta float8 DEFAULT 5)
    RETURNS TABLE (arm text, active boolean, n bigint, estimate float8, width float8, index float8)
    AS 'MODULE_PATHNAME', 'model_select_cascade_scores' LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 8;

-- Weitzman's rule: the next arm to query, or NULL to stop.  queried NULL or
-- '{}' (then best_value may be NULL) names the first arm.  Not STRICT.
CREATE FUNCTION model_select.cascade_next(selector text, context float8[], best_value float8,
                                          queried text[], beta float8 DEFAULT 5) RETURNS text
    AS 'MODULE_PATHNAME', 'model_select_cascade_next' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION model_select.cascade_next(selector text, context real[], best_value float8,
                                          queried text[], beta float8 DEFAULT 5) RETURNS text
    AS 'MODULE_PATHNAME', 'model_select_cascade_next' LANGUAGE C STABLE PARALLEL SAFE;

-- Which queried output to deploy: the arm with the best value.
CREATE FUNCTION model_select.cascade_select(selector text, "values" float8[], arms text[]) RETURNS text
    AS 'MODULE_PATHNAME', 'model_select_cascade_select' LANGUAGE C STABLE STRICT PARALLEL SAFE;

-- cascade() logged in cascade_decisions; observations may then name the cascade_id.
CREATE FUNCTION model_select.cascade_route(selector text, context float8[], beta float8 DEFAULT 5,
    OUT cascade_id bigint, OUT arms text[], OUT indices float8[])
    AS 'MODULE_PATHNAME', 'model_select_cascade_route' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
CREATE FUNCTION model_select.cascade_route(selector text, context real[], beta float8 DEFAULT 5,
    OUT cascade_id bigint, OUT arms text[], OUT indices float8[])
    AS 'MODULE_PATHNAME', 'model_select_cascade_route' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

-- Rebuild every arm's cascade_state from the log now (design from scratch,
-- rho warm-started from the stored one unless from_scratch); returns the
-- observations used.  Needed after deleting observations (alter_selector()
-- refits by itself).
CREATE FUNCTION model_select.cascade_refit(selector text, from_scratch boolean DEFAULT false) RETURNS bigint
    AS 'MODULE_PATHNAME', 'model_select_cascade_refit' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

-- Per logged cascade: what was queried, the best value and the utility
-- (best value − total cost) of the observations that name it.
-- Both views with the reader's rights, as arm_stats (row-level security).
CREATE VIEW model_select.cascade_outcomes WITH (security_invoker = true) AS
SELECT d.cascade_id, s.name AS selector, d.created_at, count(o.obs_id) AS queried,
       (array_agg(o.arm ORDER BY o.value DESC, o.obs_id) FILTER (WHERE o.obs_id IS NOT NULL))[1] AS best_arm,
       max(o.value) AS best_value, sum(o.cost) AS total_cost, max(o.value) - sum(o.cost) AS utility
  FROM model_select.cascade_decisions d
  JOIN model_select.selectors s USING (selector_id)
  LEFT JOIN model_select.cascade_observations o ON o.cascade_id = d.cascade_id
 GROUP BY d.cascade_id, s.name, d.created_at;

CREATE VIEW model_select.cascade_arm_stats WITH (security_invoker = true) AS
SELECT s.name AS selector, a.name AS arm, a.ordinal, a.active, coalesce(st.n, 0) AS n,
       st.fit_n, st.rho, st.version, octet_length(st.design) AS design_bytes, st.updated_at
  FROM model_select.selectors s
  JOIN model_select.arms a USING (selector_id)
  LEFT JOIN model_select.cascade_state st USING (arm_id);

SELECT pg_catalog.pg_extension_config_dump('model_select.cascade_decisions', '');
SELECT pg_catalog.pg_extension_config_dump('model_select.cascade_observations', '');
SELECT pg_catalog.pg_extension_config_dump('model_select.cascade_state', 'WHERE false');
SELECT pg_catalog.pg_extension_config_dump('model_select.cascade_decisions_cascade_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('model_select.cascade_observations_obs_id_seq', '');

-- Comments (psql: \dt+, \dv+, \d+, \df+, \dd).
COMMENT ON FUNCTION model_select.reservation_index(text, float8[], float8) IS
'Weitzman''s reservation index: the sigma solving E[(V - sigma)^+] = cost for V distributed as bernoulli {p[, high]}, uniform {a, b}, gaussian {mean, sd}, empirical {v1, ..., vn} or discrete {v1, p1, ..., vn, pn}.';

COMMENT ON TABLE model_select.cascade_decisions IS
'One row per cascade_route() call: the active arms in query order and their optimistic indices (the stop thresholds).';
COMMENT ON COLUMN model_select.cascade_decisions.arms IS 'Active arms in cascade order.';
COMMENT ON COLUMN model_select.cascade_decisions.indices IS 'Their optimistic indices (stop thresholds).';
COMMENT ON TABLE model_select.cascade_observations IS
'The cascade observation log, source of truth of cascade_state: one row per queried arm, inserted as (selector, arm, context, value, cost) or (cascade_id, arm, value, cost). Append-only; after a DELETE run cascade_refit().';
COMMENT ON COLUMN model_select.cascade_observations.value IS 'The value of the queried arm''s output, as the application''s evaluator gave it.';
COMMENT ON COLUMN model_select.cascade_observations.cost IS 'The cost of querying the arm.';
COMMENT ON TABLE model_select.cascade_state IS
'Per arm: the learned reservation-index model, derived from the observation log (cascade_refit() rebuilds it; pg_dump dumps it empty).';
COMMENT ON COLUMN model_select.cascade_state.fit_n IS 'Observations at the last fit of rho.';
COMMENT ON COLUMN model_select.cascade_state.rho IS 'Weights of the index sigma(x) = reward_min + R tanh(rho . psi(x)).';
COMMENT ON COLUMN model_select.cascade_state.design IS 'Packed lower Cholesky factor of V = I + sum psi psi^T (float8, by rows).';

COMMENT ON FUNCTION model_select._cascade_resolve() IS
'Trigger function of cascade_resolve (BEFORE INSERT, each row): completes and validates an observation row.';
COMMENT ON FUNCTION model_select._cascade_apply() IS
'Trigger function of cascade_apply (AFTER INSERT, each statement): folds the statement''s observations into cascade_state and refits.';
COMMENT ON FUNCTION model_select._cascade_append_only() IS
'Trigger function of cascade_append_only: refuses UPDATE and TRUNCATE of the observation log (55000).';
COMMENT ON TRIGGER cascade_resolve ON model_select.cascade_observations IS 'Completes and validates each observation row.';
COMMENT ON TRIGGER cascade_apply ON model_select.cascade_observations IS 'Learns from the statement''s observations.';
COMMENT ON TRIGGER cascade_append_only ON model_select.cascade_observations IS 'Keeps the observation log append-only.';

COMMENT ON FUNCTION model_select.cascade(text, float8[], float8) IS
'The active arms in the order to query them (decreasing optimistic index), with their indices: stop once the best value seen reaches the next index.';
COMMENT ON FUNCTION model_select.cascade(text, real[], float8) IS
'The active arms in the order to query them (decreasing optimistic index), with their indices: stop once the best value seen reaches the next index.';
COMMENT ON FUNCTION model_select.cascade_scores(text, float8[], float8) IS
'Every arm (retired ones too): observations, estimated index, width and optimistic index (Infinity while n = 0).';
COMMENT ON FUNCTION model_select.cascade_scores(text, real[], float8) IS
'Every arm (retired ones too): observations, estimated index, width and optimistic index (Infinity while n = 0).';
COMMENT ON FUNCTION model_select.cascade_next(text, float8[], float8, text[], float8) IS
'Weitzman''s rule: the next arm to query given the best value so far and the arms queried, or NULL to stop.';
COMMENT ON FUNCTION model_select.cascade_next(text, real[], float8, text[], float8) IS
'Weitzman''s rule: the next arm to query given the best value so far and the arms queried, or NULL to stop.';
COMMENT ON FUNCTION model_select.cascade_select(text, float8[], text[]) IS
'Which queried output to deploy: the arm with the best value.';
COMMENT ON FUNCTION model_select.cascade_route(text, float8[], float8) IS
'cascade(), logged in cascade_decisions: returns the cascade_id (for the observations), the arms in query order and their indices.';
COMMENT ON FUNCTION model_select.cascade_route(text, real[], float8) IS
'cascade(), logged in cascade_decisions: returns the cascade_id (for the observations), the arms in query order and their indices.';
COMMENT ON FUNCTION model_select.cascade_refit(text, boolean) IS
'Rebuilds every arm''s cascade_state from the observation log (rho warm-started unless from_scratch); returns the number of observations used.';

COMMENT ON VIEW model_select.cascade_outcomes IS
'Per logged cascade: arms queried, the best arm and value, the total cost and the utility (best value - total cost).';
COMMENT ON VIEW model_select.cascade_arm_stats IS
'Per arm: cascade observations, the current fit (fit_n, rho), state version and design size.';

-- ==== sql/install/60_probing.sql ====

-- Probing: R-PERP runs over a fixed pool of (prompt, model) pairs.

-- R-PERP probing runs (spec/002.md §2.1, §5.5; src/probe/rperp.c): restarting
-- phased elimination with random permutation over a fixed pool of (prompt,
-- model) pairs.  Only for evaluation/probing loops where the system chooses
-- which pair to query next (spec/002.md §5.6), not for live traffic, whose
-- prompts are given (use route() there).  The horizon T and the restart
-- interval H must be chosen up front.  The kernel between items is
-- k(p, p') [a = a'] (one GP per model over the prompt embeddings).
--
-- State machine (one row of probe_runs): interval i has T_i = min(H, T -
-- (i-1)H) queries in batches j of N_j = min(ceil(sqrt(T_i N_{j-1})), T_i -
-- used) queries (N_0 = 1).  A batch is planned as soon as it is determined
-- (greedy max-variance design over the active items, randomly permuted) and
-- stored in probe_plan; probe_next hands its queries out in plan order,
-- probe_report records their scores in any order.  When every query of the
-- batch is reported: after the interval's last batch the next interval
-- starts with every item active again (or the run finishes); otherwise a GP
-- fitted on this batch alone eliminates the active items whose ucb is below
-- the largest lcb, and the next batch is planned.  While a batch is handed
-- out but not fully reported, probe_next returns no rows.
CREATE TABLE model_select.probe_runs (
    run_id          serial PRIMARY KEY,
    name            text NOT NULL UNIQUE CHECK (name <> ''),
    horizon         int NOT NULL CHECK (horizon >= 1),              -- T
    reset_every     int NOT NULL CHECK (reset_every >= 2),          -- H
    beta            float8 NOT NULL CHECK (beta > 0 AND beta < 'Infinity'),  -- beta_T^{1/2}
    kernel          text NOT NULL,
    settings        jsonb NOT NULL,         -- alpha (lambda), intercept, normalize, kernel's
    seed            bigint NOT NULL,
    pool_size       int NOT NULL DEFAULT 0,
    dim             int,
    interval        int NOT NULL DEFAULT 0, -- i, from 1
    interval_len    int NOT NULL DEFAULT 0, -- T_i
    used            int NOT NULL DEFAULT 0, -- queries of interval i before batch j
    batch           int NOT NULL DEFAULT 0, -- j, from 1 in each interval
    prev_batch_size int NOT NULL DEFAULT 1, -- N_{j-1}
    batch_size      int NOT NULL DEFAULT 0, -- N_j
    issued          int NOT NULL DEFAULT 0, -- queries of batch j handed out (m = 1..issued)
    observed        int NOT NULL DEFAULT 0, -- queries of batch j reported
    finished        boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now(),
    owner           regrole NOT NULL        -- the creator: only its members see the run
);

-- The pool X, items numbered from 1 in the order the pool query yields them.
-- mean, sd, lcb and ucb are the item's last fit in the current interval.
CREATE TABLE model_select.probe_pool (
    run_id           int NOT NULL REFERENCES model_select.probe_runs ON DELETE CASCADE,
    item_id          int NOT NULL,
    prompt           float8[] NOT NULL,
    model            text NOT NULL,
    active           boolean NOT NULL DEFAULT true,
    eliminated_after int,                   -- the batch of this interval that eliminated it
    mean             float8,
    sd               float8,
    lcb              float8,
    ucb              float8,
    PRIMARY KEY (run_id, item_id),
    CHECK (active = (eliminated_after IS NULL))
);

-- Every planned query x_{j,m}^(i), at global time t = (i-1)H + used + m
-- (spec/002.md §1.8), with its score once reported.
CREATE TABLE model_select.probe_plan (
    run_id      int NOT NULL REFERENCES model_select.probe_runs ON DELETE CASCADE,
    interval    int NOT NULL,
    batch       int NOT NULL,
    m           int NOT NULL,
    t           bigint NOT NULL,
    item_id     int NOT NULL,
    issued_at   timestamptz,
    score       float8,
    reported_at timestamptz,
    PRIMARY KEY (run_id, interval, batch, m),
    FOREIGN KEY (run_id, item_id) REFERENCES model_select.probe_pool
);

CREATE FUNCTION model_select._probe_load_pool(run_id int, pool text) RETURNS int
    AS 'MODULE_PATHNAME', 'model_select_probe_load_pool' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
CREATE FUNCTION model_select._probe_plan(run_id int) RETURNS int
    AS 'MODULE_PATHNAME', 'model_select_probe_plan' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
CREATE FUNCTION model_select._probe_eliminate(run_id int) RETURNS int
    AS 'MODULE_PATHNAME', 'model_select_probe_eliminate' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

-- The transition after a fully reported batch (or, for a new run, the start
-- of interval 1).  The caller holds the run's row lock.
CREATE FUNCTION model_select._probe_advance(rid int) RETURNS void
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r model_select.probe_runs;
    n int;
BEGIN
    SELECT * INTO STRICT r FROM model_select.probe_runs pr WHERE pr.run_id = rid FOR UPDATE;
    IF r.interval > 0 THEN
        IF r.finished OR r.observed < r.batch_size THEN
            RAISE EXCEPTION 'batch % of interval % of probe run "%" is not fully reported',
                r.batch, r.interval, r.name USING ERRCODE = '55000';
        END IF;
        IF r.used + r.batch_size < r.interval_len THEN
            -- not the interval's last batch: eliminate, then plan batch j + 1
            PERFORM model_select._probe_eliminate(rid);
            UPDATE model_select.probe_runs pr
               SET used = pr.used + pr.batch_size, prev_batch_size = pr.batch_size, batch = pr.batch + 1
             WHERE pr.run_id = rid;
            n := model_select._probe_plan(rid);
            UPDATE model_select.probe_runs pr SET batch_size = n, issued = 0, observed = 0
             WHERE pr.run_id = rid;
            RETURN;
        END IF;
        IF r.interval::bigint * r.reset_every >= r.horizon THEN
            UPDATE model_select.probe_runs pr SET finished = true WHERE pr.run_id = rid;
            RETURN;
        END IF;
    END IF;
    -- restart: interval i + 1, every item active again, N_0 = 1
    UPDATE model_select.probe_pool p
       SET active = true, eliminated_after = NULL, mean = NULL, sd = NULL, lcb = NULL, ucb = NULL
     WHERE p.run_id = rid;
    UPDATE model_select.probe_runs pr
       SET interval = pr.interval + 1, used = 0, batch = 1, prev_batch_size = 1,
           interval_len = least(pr.reset_every::bigint, pr.horizon - pr.interval::bigint * pr.reset_every)::int
     WHERE pr.run_id = rid;
    n := model_select._probe_plan(rid);
    UPDATE model_select.probe_runs pr SET batch_size = n, issued = 0, observed = 0 WHERE pr.run_id = rid;
END $$;

-- create_probe_run, step 1: validate the parameters and insert the run.
CREATE FUNCTION model_select._probe_create(
    name text, horizon int, reset_every int, beta float8, pool text,
    kernel text, settings jsonb, seed bigint)
RETURNS int
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    allowed text[] := ARRAY['alpha', 'intercept', 'normalize', 'bandwidth', 'nu', 'gamma', 'degree', 'offset'];
    kern text := coalesce(kernel, 'rbf');
    resolved jsonb;
    bad text;
    violated text;
    rid int;
BEGIN
    IF name IS NULL OR horizon IS NULL OR reset_every IS NULL OR beta IS NULL OR pool IS NULL OR seed IS NULL THEN
        RAISE EXCEPTION 'name, horizon, reset_every, beta, pool and seed must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF name = '' THEN
        RAISE EXCEPTION 'probe run name must not be empty' USING ERRCODE = '22023';
    END IF;
    IF horizon < 1 THEN
        RAISE EXCEPTION 'horizon must be at least 1, not %', horizon USING ERRCODE = '22023';
    END IF;
    IF reset_every < 2 THEN
        RAISE EXCEPTION 'reset_every must be at least 2, not %', reset_every USING ERRCODE = '22023';
    END IF;
    IF NOT (beta > 0 AND beta < 'Infinity') THEN
        RAISE EXCEPTION 'beta must be positive and finite, not %', beta USING ERRCODE = '22023';
    END IF;
    IF kern NOT IN ('rbf', 'matern', 'laplacian', 'poly', 'linear') THEN
        RAISE EXCEPTION 'unknown kernel "%"', kern USING ERRCODE = '22023',
            HINT = 'Valid kernels are rbf, matern, laplacian, poly and linear.';
    END IF;
    IF jsonb_typeof(coalesce(settings, '{}')) <> 'object' THEN
        RAISE EXCEPTION 'settings must be a JSON object' USING ERRCODE = '22023';
    END IF;
    SELECT k INTO bad FROM jsonb_object_keys(coalesce(settings, '{}')) k WHERE k <> ALL (allowed) LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'invalid setting "%": does not apply to probe runs', bad USING ERRCODE = '22023',
            DETAIL = 'Valid keys are alpha, intercept, normalize and the kernel''s bandwidth, nu, gamma, degree and offset.';
    END IF;
    SELECT jsonb_object_agg(e.key, e.value) INTO resolved
      FROM jsonb_each(model_select.resolve_settings('pak_ucb', kern, coalesce(settings, '{}'))) e
     WHERE e.key = ANY (allowed);
    -- the probe functions run with the caller's rights: the run is the caller's.
    -- Names are unique over all runs, also those of other roles, which the
    -- caller does not see, and those being created concurrently: only the
    -- unique index knows them all.
    BEGIN
        INSERT INTO model_select.probe_runs(name, horizon, reset_every, beta, kernel, settings, seed, owner)
        VALUES (name, horizon, reset_every, beta, kern, resolved, seed,
                (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = current_user)::regrole)
        RETURNING run_id INTO rid;
    EXCEPTION WHEN unique_violation THEN
        GET STACKED DIAGNOSTICS violated = CONSTRAINT_NAME;
        IF violated IS DISTINCT FROM 'probe_runs_name_key' THEN
            RAISE;
        END IF;
        RAISE EXCEPTION 'probe run "%" already exists', name USING ERRCODE = '42710';
    END;
    RETURN rid;
END $$;

-- Step 3, after _probe_load_pool: check the pool and start interval 1.
CREATE FUNCTION model_select._probe_start(rid int) RETURNS int
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM model_select.probe_pool p WHERE p.run_id = rid
                GROUP BY p.prompt, p.model HAVING count(*) > 1) THEN
        RAISE EXCEPTION 'the pool has duplicate (prompt, model) pairs' USING ERRCODE = '22023';
    END IF;
    PERFORM model_select._probe_advance(rid);
    RETURN rid;
END $$;

-- Create a run: T = horizon, H = reset_every (>= 2), beta = beta_T^{1/2} of
-- spec/002.md Eq. 8 (its constant C is unknown: choose it).  `pool` is a
-- query yielding (prompt float8[] or real[], model text), one row per
-- distinct item, numbered from 1 in the order it yields them.  settings:
-- alpha (lambda of the GP), intercept, normalize and the kernel's
-- (bandwidth, nu, gamma, degree, offset), as for selectors.  Returns run_id.
-- Unlike the other functions this one does not pin search_path: the pool
-- query runs with the caller's (as replay()'s source does).  Its body calls
-- schema-qualified functions only.
CREATE FUNCTION model_select.create_probe_run(
    name text, horizon int, reset_every int, beta float8, pool text,
    kernel text DEFAULT 'rbf', settings jsonb DEFAULT '{}', seed bigint DEFAULT 0)
RETURNS int
LANGUAGE sql VOLATILE PARALLEL UNSAFE AS $$
    SELECT model_select._probe_start(model_select._probe_load_pool(
        model_select._probe_create(name, horizon, reset_every, beta, pool, kernel, settings, seed), pool))
$$;

CREATE FUNCTION model_select.drop_probe_run(name text) RETURNS void
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM model_select.probe_runs pr WHERE pr.name = drop_probe_run.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'probe run "%" does not exist', name USING ERRCODE = '42704';
    END IF;
END $$;

-- The next k queries of the current batch, in plan order; fewer (or none)
-- when the batch is all handed out (report its scores first) or the run is
-- finished.  t is the query's global time step.
CREATE FUNCTION model_select.probe_next(name text, k int DEFAULT 1)
RETURNS TABLE ("interval" int, batch int, m int, item_id int, prompt float8[], model text, t bigint)
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r model_select.probe_runs;
    upto int;
BEGIN
    IF k IS NULL OR k < 1 THEN
        RAISE EXCEPTION 'k must be at least 1' USING ERRCODE = '22023';
    END IF;
    SELECT * INTO r FROM model_select.probe_runs pr WHERE pr.name = probe_next.name FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'probe run "%" does not exist', name USING ERRCODE = '42704';
    END IF;
    IF r.finished OR r.issued >= r.batch_size THEN
        RETURN;
    END IF;
    upto := least(r.batch_size::bigint, r.issued::bigint + k)::int;
    UPDATE model_select.probe_runs pr SET issued = upto WHERE pr.run_id = r.run_id;
    RETURN QUERY
    WITH q AS (
        UPDATE model_select.probe_plan pl SET issued_at = now()
         WHERE pl.run_id = r.run_id AND pl.interval = r.interval AND pl.batch = r.batch
           AND pl.m > r.issued AND pl.m <= upto
        RETURNING pl.interval, pl.batch, pl.m, pl.item_id, pl.t)
    SELECT q.interval, q.batch, q.m, q.item_id, p.prompt, p.model, q.t
      FROM q JOIN model_select.probe_pool p ON p.run_id = r.run_id AND p.item_id = q.item_id
     ORDER BY q.m;
END $$;

-- Lock a run for a report of `score`.
CREATE FUNCTION model_select._probe_lock_for_report(run text, score float8)
RETURNS model_select.probe_runs
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r model_select.probe_runs;
BEGIN
    IF score IS NULL THEN
        RAISE EXCEPTION 'score must not be NULL' USING ERRCODE = '22004';
    END IF;
    -- beyond ±1e15 (a selector's widest reward range) the fit's sums of
    -- squares overflow to NaN and ±Infinity
    IF NOT (score >= -1e15 AND score <= 1e15) THEN
        RAISE EXCEPTION 'score must be a number from -1e15 to 1e15, not %', score USING ERRCODE = '22023';
    END IF;
    SELECT * INTO r FROM model_select.probe_runs pr WHERE pr.name = run FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'probe run "%" does not exist', run USING ERRCODE = '42704';
    END IF;
    IF r.finished THEN
        RAISE EXCEPTION 'probe run "%" is finished', run USING ERRCODE = '55000';
    END IF;
    RETURN r;
END $$;

-- Record the score of query m of the current batch; advance when complete.
CREATE FUNCTION model_select._probe_record(r model_select.probe_runs, pos int, score float8)
RETURNS void
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE model_select.probe_plan pl SET score = _probe_record.score, reported_at = now()
     WHERE pl.run_id = r.run_id AND pl.interval = r.interval AND pl.batch = r.batch AND pl.m = pos;
    UPDATE model_select.probe_runs pr SET observed = pr.observed + 1 WHERE pr.run_id = r.run_id;
    IF r.observed + 1 = r.batch_size THEN
        PERFORM model_select._probe_advance(r.run_id);
    END IF;
END $$;

-- Report the score of an issued query of the current batch: by item (its
-- earliest unreported query, repeats being interchangeable) ...
CREATE FUNCTION model_select.probe_report(name text, item_id int, score float8) RETURNS void
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r model_select.probe_runs;
    pos int;
BEGIN
    IF item_id IS NULL THEN
        RAISE EXCEPTION 'item_id must not be NULL' USING ERRCODE = '22004';
    END IF;
    r := model_select._probe_lock_for_report(name, score);
    SELECT pl.m INTO pos FROM model_select.probe_plan pl
     WHERE pl.run_id = r.run_id AND pl.interval = r.interval AND pl.batch = r.batch
       AND pl.item_id = probe_report.item_id AND pl.issued_at IS NOT NULL AND pl.score IS NULL
     ORDER BY pl.m LIMIT 1;
    IF NOT FOUND THEN
        IF NOT EXISTS (SELECT 1 FROM model_select.probe_pool p
                        WHERE p.run_id = r.run_id AND p.item_id = probe_report.item_id) THEN
            RAISE EXCEPTION 'probe run "%" has no item %', name, item_id USING ERRCODE = '22023';
        END IF;
        RAISE EXCEPTION 'item % has no issued, unreported query in batch % of interval % of probe run "%"',
            item_id, r.batch, r.interval, name USING ERRCODE = '55000',
            HINT = 'Report only queries returned by probe_next, once each.';
    END IF;
    PERFORM model_select._probe_record(r, pos, score);
END $$;

-- ... or by position (interval, batch, m), as returned by probe_next.
CREATE FUNCTION model_select.probe_report(name text, "interval" int, batch int, m int, score float8)
RETURNS void
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r model_select.probe_runs;
    q model_select.probe_plan;
BEGIN
    IF $2 IS NULL OR batch IS NULL OR m IS NULL THEN
        RAISE EXCEPTION 'interval, batch and m must not be NULL' USING ERRCODE = '22004';
    END IF;
    r := model_select._probe_lock_for_report(name, score);
    SELECT * INTO q FROM model_select.probe_plan pl
     WHERE pl.run_id = r.run_id AND pl.interval = $2 AND pl.batch = probe_report.batch AND pl.m = probe_report.m;
    IF NOT FOUND OR q.issued_at IS NULL THEN
        RAISE EXCEPTION 'query (interval %, batch %, m %) of probe run "%" has not been issued', $2, batch, m, name
            USING ERRCODE = '55000', HINT = 'Report only queries returned by probe_next.';
    END IF;
    IF q.score IS NOT NULL THEN
        RAISE EXCEPTION 'query (interval %, batch %, m %) of probe run "%" is already reported', $2, batch, m, name
            USING ERRCODE = '55000';
    END IF;
    PERFORM model_select._probe_record(r, m, score);
END $$;

-- Where a run stands; best_* is the active item with the largest lcb in the
-- interval's last fit (NULL before the interval's first elimination).
CREATE FUNCTION model_select.probe_status(name text)
RETURNS TABLE (run_id int, "interval" int, intervals int, interval_len int, batch int, batch_size int,
               issued int, observed int, t bigint, active int, pool_size int, finished boolean,
               best_item int, best_model text, best_mean float8, best_lcb float8)
LANGUAGE plpgsql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT r.run_id, r.interval, ((r.horizon - 1) / r.reset_every + 1)::int, r.interval_len, r.batch,
           r.batch_size, r.issued, r.observed,
           (r.interval - 1)::bigint * r.reset_every + r.used + r.issued,
           (SELECT count(*)::int FROM model_select.probe_pool p WHERE p.run_id = r.run_id AND p.active),
           r.pool_size, r.finished, b.item_id, b.model, b.mean, b.lcb
      FROM model_select.probe_runs r
      LEFT JOIN LATERAL (
            SELECT p.item_id, p.model, p.mean, p.lcb FROM model_select.probe_pool p
             WHERE p.run_id = r.run_id AND p.active AND p.lcb IS NOT NULL
             ORDER BY p.lcb DESC, p.item_id LIMIT 1) b ON true
     WHERE r.name = probe_status.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'probe run "%" does not exist', name USING ERRCODE = '42704';
    END IF;
END $$;

SELECT pg_catalog.pg_extension_config_dump('model_select.probe_runs', '');
SELECT pg_catalog.pg_extension_config_dump('model_select.probe_pool', '');
SELECT pg_catalog.pg_extension_config_dump('model_select.probe_plan', '');
SELECT pg_catalog.pg_extension_config_dump('model_select.probe_runs_run_id_seq', '');

-- Comments (psql: \dt+, \d+, \df+, \dd).
COMMENT ON TABLE model_select.probe_runs IS
'R-PERP probing runs: one row per run with its parameters (horizon T, reset_every H, beta) and where it stands (interval, batch, queries issued and reported).';
COMMENT ON COLUMN model_select.probe_runs.owner IS
'The role that created the run: row-level security shows a run, its pool and its plan only to members of this role (and to superusers and the extension owner).';
COMMENT ON TABLE model_select.probe_pool IS
'The fixed pool of (prompt, model) items of each run, numbered from 1, with whether each is still active and its last fit in the current interval.';
COMMENT ON TABLE model_select.probe_plan IS
'Every planned query (interval, batch, m) of each run, at global time t, with its score once reported.';

COMMENT ON FUNCTION model_select._probe_load_pool(int, text) IS
'Internal, create_probe_run() step 2: loads the pool query''s rows into probe_pool; returns the pool size.';
COMMENT ON FUNCTION model_select._probe_plan(int) IS
'Internal: plans the current batch (greedy maximum-variance design over the active items, shuffled); returns its size.';
COMMENT ON FUNCTION model_select._probe_eliminate(int) IS
'Internal: fits a GP on the batch just reported and eliminates the items whose ucb is below the best lcb.';
COMMENT ON FUNCTION model_select._probe_advance(int) IS
'Internal: moves a run on after a fully reported batch (next batch, next interval, or finished).';
COMMENT ON FUNCTION model_select._probe_create(text, int, int, float8, text, text, jsonb, bigint) IS
'Internal, create_probe_run() step 1: validates the parameters and inserts the run.';
COMMENT ON FUNCTION model_select._probe_start(int) IS
'Internal, create_probe_run() step 3: checks the pool and starts interval 1.';
COMMENT ON FUNCTION model_select._probe_lock_for_report(text, float8) IS
'Internal: validates a score and locks the run for its report.';
COMMENT ON FUNCTION model_select._probe_record(model_select.probe_runs, int, float8) IS
'Internal: records the score of a query of the current batch and advances the run when the batch is complete.';

COMMENT ON FUNCTION model_select.create_probe_run(text, int, int, float8, text, text, jsonb, bigint) IS
'Creates an R-PERP probing run over the (prompt, model) rows of the pool query: horizon T, restart interval reset_every H, confidence width beta, GP kernel and settings; returns the run_id.';
COMMENT ON FUNCTION model_select.drop_probe_run(text) IS
'Deletes a probing run with its pool and plan.';
COMMENT ON FUNCTION model_select.probe_next(text, int) IS
'The next k queries of the run''s current batch, in plan order; none while the batch waits for its reports or when the run is finished.';
COMMENT ON FUNCTION model_select.probe_report(text, int, float8) IS
'Reports the score of an issued query of the current batch, by item (its earliest unreported query).';
COMMENT ON FUNCTION model_select.probe_report(text, int, int, int, float8) IS
'Reports the score of an issued query of the current batch, by position (interval, batch, m) as returned by probe_next().';
COMMENT ON FUNCTION model_select.probe_status(text) IS
'Where a run stands: interval, batch, queries issued and reported, active items, and the best item so far (largest lcb).';

-- ==== sql/install/70_evaluation.sql ====

-- Offline evaluation: replay() and the seeded synthetic streams.

-- Offline evaluation: the online loop over (context, rewards[, costs]) rows
-- of a query, in memory; no selector or table is touched.
CREATE FUNCTION model_select.replay(
    source text, policy text DEFAULT 'pak_ucb', kernel text DEFAULT NULL,
    settings jsonb DEFAULT '{}', seed bigint DEFAULT 0, cost_weight float8 DEFAULT 0,
    rounds int DEFAULT NULL, passes int DEFAULT 1, checkpoint int DEFAULT NULL,
    shuffle boolean DEFAULT true, warm text DEFAULT NULL)
    RETURNS TABLE (round int, cum_reward float8, cum_cost float8, cum_utility float8,
                   regret_best_arm float8, regret_oracle float8, opr float8,
                   opr_window float8, otb float8, picks bigint[])
    AS 'MODULE_PATHNAME', 'model_select_replay' LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Seeded synthetic stream: prompts in clusters whose best arm differs, with
-- optional changing worlds (see src/eval/synthetic.c).
CREATE FUNCTION model_select.synthetic_clusters(
    rounds int, dim int, arms int, clusters int DEFAULT NULL, seed bigint DEFAULT 0,
    noise float8 DEFAULT 0.1, new_arm_at int DEFAULT NULL, switch_every int DEFAULT NULL,
    new_cluster_every int DEFAULT NULL,
    OUT round int, OUT cluster int, OUT context float8[], OUT expected float8[],
    OUT reward float8[], OUT best_arm int)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'model_select_synthetic_clusters' LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- Seeded synthetic stream of spec/001.md §4.1: per arm a reward function of
-- RKHS norm exactly rkhs_norm (weights on kernels at random inducing points),
-- contexts uniform in [0,1]^dim, Gaussian noise (see src/eval/synthetic_rkhs.c).
CREATE FUNCTION model_select.synthetic_rkhs(
    rounds int, dim int, arms int, seed bigint DEFAULT 0,
    kernel text DEFAULT 'rbf', bandwidth float8 DEFAULT 0.5, nu float8 DEFAULT 2.5,
    rkhs_norm float8 DEFAULT 10, noise float8 DEFAULT 0.1, inducing int DEFAULT 20,
    OUT round int, OUT context float8[], OUT expected float8[], OUT reward float8[],
    OUT best_arm int)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'model_select_synthetic_rkhs' LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- Comments (psql: \df+, \dd).
COMMENT ON FUNCTION model_select.replay(text, text, text, jsonb, bigint, float8, int, int, int, boolean, text) IS
'Offline evaluation: runs a policy''s online loop over the rows (context, rewards[, costs[, expected]]) of the query source, in memory, touching no table, after every arm has learned its outcomes on the rows (context, rewards[, costs]) of the query warm if given; returns cumulative reward, cost, utility, regret, optimal-pick ratios and picks per arm every checkpoint rounds.';
COMMENT ON FUNCTION model_select.synthetic_clusters(int, int, int, int, bigint, float8, int, int, int) IS
'Seeded synthetic stream: prompts in clusters whose best arm differs, with optional changing worlds (a late arm, rotating experts, new clusters).';
COMMENT ON FUNCTION model_select.synthetic_rkhs(int, int, int, bigint, text, float8, float8, float8, float8, int) IS
'Seeded synthetic stream: per arm a reward function of given RKHS norm, contexts uniform in [0,1]^dim, Gaussian noise.';

-- Quality vs cost (RouterBench's AIQ): the non-decreasing concave hull of
-- (cost, quality) points and the origin (answering nothing costs and earns
-- 0; mixing two routers at random reaches every point between them), flat
-- past its best point; aiq = its area over [0, max_cost] / max_cost.
CREATE FUNCTION model_select.quality_hull(costs float8[], qualities float8[], max_cost float8)
    RETURNS TABLE (cost float8, quality float8, aiq float8)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    hx float8[] := ARRAY[0];
    hy float8[] := ARRAY[0];
    p record;
    n int := 1;
    best int := 1;
    area float8 := 0;
    x1 float8;
BEGIN
    IF costs IS NULL OR qualities IS NULL OR max_cost IS NULL THEN
        RAISE EXCEPTION 'quality_hull: costs, qualities and max_cost must not be NULL' USING ERRCODE = '22004';
    END IF;
    -- (NaN sorts above Infinity in PostgreSQL: "< 'Infinity'" refuses both)
    IF array_ndims(costs) > 1 OR array_ndims(qualities) > 1 OR cardinality(costs) <> cardinality(qualities)
       OR NOT (max_cost > 0 AND max_cost < 'Infinity')
       OR EXISTS (SELECT FROM unnest(costs, qualities) u(c, q)
                   WHERE NOT coalesce(c >= 0 AND c < 'Infinity' AND q > '-Infinity' AND q < 'Infinity', false)) THEN
        RAISE EXCEPTION 'quality_hull: costs and qualities must be arrays of equal length of finite numbers, costs not negative, and max_cost above 0'
            USING ERRCODE = '22023';
    END IF;
    -- the upper hull by the monotone chain: a vertex stays while it lies strictly above the chord
    FOR p IN SELECT u.c, u.q FROM unnest(costs, qualities) u(c, q) ORDER BY u.c, u.q DESC LOOP
        WHILE n >= 2 AND (hx[n] - hx[n - 1]) * (p.q - hy[n - 1]) - (hy[n] - hy[n - 1]) * (p.c - hx[n - 1]) >= 0 LOOP
            n := n - 1;
        END LOOP;
        hx := hx[1:n] || p.c;
        hy := hy[1:n] || p.q;
        n := n + 1;
    END LOOP;
    -- non-decreasing: stop at the best vertex, flat after it
    FOR i IN 1..n LOOP
        IF hy[i] > hy[best] THEN
            best := i;
        END IF;
    END LOOP;
    FOR i IN 2..best LOOP
        x1 := least(hx[i], max_cost);
        IF x1 > hx[i - 1] THEN
            area := area + (x1 - hx[i - 1])
                    * (hy[i - 1] + (hy[i - 1] + (hy[i] - hy[i - 1]) * (x1 - hx[i - 1]) / (hx[i] - hx[i - 1]))) / 2;
        END IF;
    END LOOP;
    area := area + greatest(max_cost - hx[best], 0) * hy[best];
    RETURN QUERY SELECT hx[i], hy[i], area / max_cost FROM generate_series(1, best) i;
END $$;

-- replay() over a grid of cost weights and/or budgets: each run's mean cost
-- and reward per decision, next to each arm's own (always that arm); which
-- points are vertices of their kind's hull, and the AIQ of the router's
-- points and of the arms' up to the dearest arm's mean cost.
-- No SET search_path: the source is the caller's SQL and runs with the
-- caller's path, so the body qualifies every operator, function, type and
-- table, as warm_start()'s does.
CREATE FUNCTION model_select.quality_cost(
    source text, policy text DEFAULT 'pak_ucb', kernel text DEFAULT NULL, settings jsonb DEFAULT '{}',
    cost_weights float8[] DEFAULT NULL, budgets float8[] DEFAULT NULL, seed bigint DEFAULT 0,
    rounds int DEFAULT NULL)
    RETURNS TABLE (kind text, knob float8, cost float8, quality float8, on_hull boolean, aiq float8)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $$
DECLARE
    max_cost pg_catalog.float8;
BEGIN
    IF source IS NULL OR policy IS NULL OR settings IS NULL OR seed IS NULL THEN
        RAISE EXCEPTION 'quality_cost: source, policy, settings and seed must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF COALESCE(pg_catalog.cardinality(cost_weights), 0)
       OPERATOR(pg_catalog.+) COALESCE(pg_catalog.cardinality(budgets), 0) OPERATOR(pg_catalog.=) 0 THEN
        RAISE EXCEPTION 'quality_cost: give cost_weights, budgets or both' USING ERRCODE = '22023';
    END IF;
    CREATE TEMP TABLE IF NOT EXISTS ms_quality_points (kind pg_catalog.text, knob pg_catalog.float8,
                                                      cost pg_catalog.float8, quality pg_catalog.float8)
        ON COMMIT DROP;
    TRUNCATE pg_temp.ms_quality_points;
    -- each arm: its mean reward and cost over the rows where it is available
    -- (the rows read and checked as replay() reads them: read only, 42804 for
    -- columns of other types, 22000/22004 for bad arrays)
    INSERT INTO pg_temp.ms_quality_points
    SELECT 'arm', a, pg_catalog.avg(COALESCE(s.costs[a], 0)), pg_catalog.avg(s.rewards[a])
      FROM model_select._source_rows(source) s, pg_catalog.generate_series(1, pg_catalog.cardinality(s.rewards)) a
     WHERE s.rewards[a] IS NOT NULL GROUP BY a;
    INSERT INTO pg_temp.ms_quality_points
    SELECT g.kind, g.knob, r.cum_cost OPERATOR(pg_catalog./) r.round, r.cum_reward OPERATOR(pg_catalog./) r.round
      FROM (SELECT 'cost_weight' AS kind, w AS knob, settings AS st, w AS lambda FROM pg_catalog.unnest(cost_weights) w
            UNION ALL
            SELECT 'budget', b, settings OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('budget', b), 0
              FROM pg_catalog.unnest(budgets) b) g
      CROSS JOIN LATERAL (SELECT * FROM model_select.replay(source, policy, kernel, g.st, seed, g.lambda, rounds, 1,
                                                            rounds) x ORDER BY x.round DESC LIMIT 1) r;
    SELECT pg_catalog.max(p.cost) INTO max_cost FROM pg_temp.ms_quality_points p
     WHERE p.kind OPERATOR(pg_catalog.=) 'arm';
    IF NOT max_cost OPERATOR(pg_catalog.>) 0 THEN
        RAISE EXCEPTION 'quality_cost: every arm costs 0 on these rows' USING ERRCODE = '22023',
            HINT = 'The source yields (context, rewards, costs); give the costs.';
    END IF;
    RETURN QUERY
    SELECT p.kind, p.knob, p.cost, p.quality,
           EXISTS (SELECT FROM model_select.quality_hull(h.cs, h.qs, max_cost) v
                    WHERE v.cost OPERATOR(pg_catalog.=) p.cost AND v.quality OPERATOR(pg_catalog.=) p.quality),
           (SELECT v.aiq FROM model_select.quality_hull(h.cs, h.qs, max_cost) v LIMIT 1)
      FROM pg_temp.ms_quality_points p
      JOIN (SELECT q.kind OPERATOR(pg_catalog.=) 'arm' AS is_arm, pg_catalog.array_agg(q.cost) AS cs,
                   pg_catalog.array_agg(q.quality) AS qs
              FROM pg_temp.ms_quality_points q GROUP BY 1) h
        ON h.is_arm OPERATOR(pg_catalog.=) (p.kind OPERATOR(pg_catalog.=) 'arm')
     ORDER BY p.kind OPERATOR(pg_catalog.=) 'arm', p.kind, p.knob;
END $$;

COMMENT ON FUNCTION model_select.quality_hull(float8[], float8[], float8) IS
'RouterBench''s quality-vs-cost hull: the vertices of the non-decreasing concave hull of the (cost, quality) points and the origin, flat past the best point, with aiq = the area under it over [0, max_cost] divided by max_cost.';
COMMENT ON FUNCTION model_select.quality_cost(text, text, text, jsonb, float8[], float8[], bigint, int) IS
'replay() of a policy over a grid of cost weights and/or budgets on the rows (context, rewards, costs) of source: per run and per arm (always that arm) the mean cost and reward per decision, whether the point is a vertex of its kind''s hull, and the AIQ of the router''s and of the arms'' hulls up to the dearest arm''s mean cost.';

-- Warm starts from full-information outcome tables (every model scored on
-- every prompt): the rows of a query in fixed columns, and their insertion
-- into the reward log, so that the log stays the one truth of the state.
CREATE FUNCTION model_select._source_rows(source text)
    RETURNS TABLE (row_number int, context float8[], rewards float8[], costs float8[])
    AS 'MODULE_PATHNAME', 'model_select_source_rows' LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- No SET search_path: the source is the caller's SQL and runs with the
-- caller's path, so the body qualifies every operator and function.
CREATE FUNCTION model_select.warm_start(selector text, source text) RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $$
DECLARE
    sel_id int;
    narms int;
    width int;
    inserted bigint;
BEGIN
    IF selector IS NULL OR source IS NULL THEN
        RAISE EXCEPTION 'warm_start: selector and source must not be NULL' USING ERRCODE = '22004';
    END IF;
    SELECT s.selector_id INTO sel_id FROM model_select.selectors s WHERE s.name OPERATOR(pg_catalog.=) selector;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'selector "%" does not exist', selector USING ERRCODE = '42704';
    END IF;
    SELECT pg_catalog.max(a.ordinal) INTO narms FROM model_select.arms a
     WHERE a.selector_id OPERATOR(pg_catalog.=) sel_id;
    -- row by row, arms in ordinal order: each arm's log follows the source's order.
    -- (_source_rows gives every row the same width; a wrong one is refused below,
    -- which undoes the insert with the statement.)
    WITH w AS MATERIALIZED (SELECT * FROM model_select._source_rows(source)),
         ins AS (INSERT INTO model_select.rewards(selector, arm, context, reward, cost)
                 SELECT selector, a.name, w.context, w.rewards[a.ordinal], w.costs[a.ordinal]
                   FROM w JOIN model_select.arms a ON a.selector_id OPERATOR(pg_catalog.=) sel_id AND a.active
                  WHERE w.rewards[a.ordinal] IS NOT NULL
                  ORDER BY w.row_number, a.ordinal
                 RETURNING 1)
    SELECT (SELECT pg_catalog.count(*) FROM ins), (SELECT pg_catalog.cardinality(w.rewards) FROM w LIMIT 1)
      INTO inserted, width;
    IF width OPERATOR(pg_catalog.<>) narms THEN
        RAISE EXCEPTION 'warm_start: the source''s rewards have % elements, selector "%" has % arms', width, selector, narms
            USING ERRCODE = '22000', HINT = 'Element i is the outcome of the arm of ordinal i (see model_select.arms); NULL skips an arm.';
    END IF;
    RETURN inserted;
END $$;

COMMENT ON FUNCTION model_select._source_rows(text) IS
'The rows (context, rewards[, costs]) of the query source in fixed columns, checked as replay() checks its source (used by warm_start()).';
COMMENT ON FUNCTION model_select.warm_start(text, text) IS
'Warm start from a full-information outcome table: inserts into the reward log, for every row (context, rewards[, costs]) of the query source and every active arm whose element is not NULL (element i: the arm of ordinal i), that arm''s reward and cost on the row; returns the rewards inserted.';

-- ==== sql/install/80_security.sql ====

-- Security: owners and per-selector grants, row-level security on every
-- table that holds per-selector data, the roles' set-up, and which functions
-- PUBLIC may execute (docs/security.md).
--
-- A selector belongs to the role that created it (selectors.owner).  Its
-- owner grants three separate rights: route (select_model, route, scores,
-- drift and the cascade functions), reward (INSERT into rewards and
-- cascade_observations) and admin (alter_selector, add_arm, retire_arm,
-- rebuild_state, checkpoint, resample, cascade_refit, drop_selector).  The
-- owner and the members of its role, superusers and the extension owner
-- have all three.  One check in C (src/core/privilege.c) serves every entry
-- point and the policies below.

CREATE TABLE model_select.selector_grants (
    selector_id int NOT NULL REFERENCES model_select.selectors ON DELETE CASCADE,
    grantee     regrole NOT NULL,
    privilege   text NOT NULL CHECK (privilege IN ('route', 'reward', 'admin')),
    PRIMARY KEY (selector_id, grantee, privilege)
);

-- Does the current user hold one of the privileges ('route', 'reward',
-- 'admin' or a comma-separated list of them: any one) on the selector?  The
-- by-name form raises 42704 for an unknown selector; the by-id form, which
-- the policies below call once per row, returns NULL (as
-- has_table_privilege(oid, ...) does).
CREATE FUNCTION model_select.has_selector_privilege(selector text, privilege text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'model_select_has_selector_privilege' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION model_select.has_selector_privilege(selector_id int, privilege text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'model_select_has_selector_privilege_id' LANGUAGE C STABLE STRICT PARALLEL SAFE;

-- grant_selector / revoke_selector: the C entry (src/core/admin.c) lets only
-- the owner (or a member of its role), a superuser or the extension owner
-- through, then runs these bodies as the extension owner.
-- The arguments of grant_selector and revoke_selector, checked; returns the
-- privilege in lower case, as stored.
CREATE FUNCTION model_select._grant_privilege(selector text, role regrole, privilege text) RETURNS text
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

CREATE FUNCTION model_select._grant_selector(selector text, role regrole, privilege text) RETURNS void
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    p text := model_select._grant_privilege(selector, role, privilege);
BEGIN
    -- a regrole of no role (an OID, or a dropped role's) would leave a grant to nobody
    IF NOT EXISTS (SELECT FROM pg_roles r WHERE r.oid = role) THEN
        RAISE EXCEPTION 'role with OID % does not exist', role::oid USING ERRCODE = '42704';
    END IF;
    INSERT INTO model_select.selector_grants(selector_id, grantee, privilege)
    SELECT s.selector_id, role, p FROM model_select.selectors s WHERE s.name = selector
    ON CONFLICT DO NOTHING;
END $$;

CREATE FUNCTION model_select._revoke_selector(selector text, role regrole, privilege text) RETURNS void
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    p text := model_select._grant_privilege(selector, role, privilege);
BEGIN
    DELETE FROM model_select.selector_grants g USING model_select.selectors s
     WHERE s.name = selector AND g.selector_id = s.selector_id AND g.grantee = role AND g.privilege = p;
END $$;

CREATE FUNCTION model_select.grant_selector(selector text, role regrole, privilege text) RETURNS void
    AS 'MODULE_PATHNAME', 'model_select_admin_call' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION model_select.revoke_selector(selector text, role regrole, privilege text) RETURNS void
    AS 'MODULE_PATHNAME', 'model_select_admin_call' LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- The rights of the two kinds of role, granted by setup_role(); an
-- administrator gets the application's and these.  Probe runs use the
-- caller's rights on the probe tables (create_probe_run runs the caller's
-- pool query), with row-level security by owner.
CREATE FUNCTION model_select.setup_role(role regrole, kind text) RETURNS SETOF text
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    application text[] := ARRAY[
        'USAGE ON SCHEMA model_select',
        'SELECT ON model_select.selectors, model_select.arms, model_select.arm_state, model_select.arm_state_rows, '
            'model_select.decisions, '
            'model_select.rewards, model_select.selector_grants, model_select.cascade_decisions, '
            'model_select.cascade_observations, model_select.cascade_state, model_select.arm_stats, '
            'model_select.cascade_outcomes, model_select.cascade_arm_stats',
        -- the columns a client writes: not the ids, which come from the sequences
        -- (an id given ahead of its sequence would fail another role's insert)
        'INSERT (selector, arm, decision_id, context, reward, cost, created_at) ON model_select.rewards',
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
        'EXECUTE ON FUNCTION model_select._probe_create(text, int, int, float8, text, text, jsonb, bigint), '
            'model_select._probe_load_pool(int, text), model_select._probe_start(int), '
            'model_select._probe_advance(int), model_select._probe_plan(int), model_select._probe_eliminate(int), '
            'model_select._probe_lock_for_report(text, float8), '
            'model_select._probe_record(model_select.probe_runs, int, float8)'];
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
    IF NOT (SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = current_user)
       AND NOT pg_has_role((SELECT e.extowner FROM pg_extension e WHERE e.extname = 'model_select'), 'USAGE') THEN
        RAISE EXCEPTION 'permission denied to set up roles for model_select' USING ERRCODE = '42501',
            HINT = 'Only superusers and the extension owner set up roles.';
    END IF;
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
    FOREACH t IN ARRAY ARRAY['selectors', 'arms', 'arm_state', 'arm_state_rows', 'decisions', 'rewards',
                             'cascade_decisions', 'cascade_observations', 'cascade_state'] LOOP
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

-- EXECUTE: the schema has no USAGE for PUBLIC, and every function that
-- touches a selector checks the caller's right on it, so PUBLIC keeps
-- EXECUTE on the public functions.  Revoked: the internal functions (trigger
-- functions fire without EXECUTE; the bodies run as the extension owner;
-- the probe steps are granted to administrators), creating selectors (an
-- administrator's right) and setting up roles.
REVOKE EXECUTE ON FUNCTION
    model_select._add_arm(text, text),
    model_select._create_selector(regrole, text, int, text[], text, text, jsonb, bigint),
    model_select._alter_selector(text, jsonb),
    model_select._drop_selector(text),
    model_select._retire_arm(text, text),
    model_select._grant_selector(text, regrole, text),
    model_select._grant_privilege(text, regrole, text),
    model_select._revoke_selector(text, regrole, text),
    model_select._rewards_resolve(),
    model_select._rewards_apply(),
    model_select._rewards_append_only(),
    model_select._cascade_resolve(),
    model_select._cascade_apply(),
    model_select._cascade_append_only(),
    model_select._probe_create(text, int, int, float8, text, text, jsonb, bigint),
    model_select._probe_load_pool(int, text),
    model_select._probe_start(int),
    model_select._probe_advance(int),
    model_select._probe_plan(int),
    model_select._probe_eliminate(int),
    model_select._probe_lock_for_report(text, float8),
    model_select._probe_record(model_select.probe_runs, int, float8),
    model_select.create_selector(text, int, text[], text, text, jsonb, bigint),
    model_select.setup_role(regrole, text)
FROM PUBLIC;

SELECT pg_catalog.pg_extension_config_dump('model_select.selector_grants', '');

-- Comments (psql: \dt+, \d+, \df+, \dd).
COMMENT ON TABLE model_select.selector_grants IS
'Rights on selectors granted by their owners with grant_selector(): route, reward or admin, each separately.';
COMMENT ON COLUMN model_select.selector_grants.grantee IS 'The role granted the right (and, through membership, the roles that inherit from it).';
COMMENT ON COLUMN model_select.selector_grants.privilege IS
'route (select_model, route, scores, drift, cascades), reward (INSERT into rewards and cascade_observations) or admin (alter_selector, add_arm, retire_arm, rebuild_state, checkpoint, resample, cascade_refit, drop_selector).';
COMMENT ON FUNCTION model_select.has_selector_privilege(text, text) IS
'Whether the current user holds the privilege (route, reward, admin, or a comma-separated list: any of them) on the selector.';
COMMENT ON FUNCTION model_select.has_selector_privilege(int, text) IS
'has_selector_privilege() by selector_id, NULL for an unknown selector: what the row-level security policies call.';
COMMENT ON FUNCTION model_select._grant_privilege(text, regrole, text) IS
'Internal: checks the arguments of grant_selector() and revoke_selector(); returns the privilege as stored.';
COMMENT ON FUNCTION model_select._grant_selector(text, regrole, text) IS
'Internal: the body of grant_selector(), run as the extension owner once the caller is known to own the selector.';
COMMENT ON FUNCTION model_select._revoke_selector(text, regrole, text) IS
'Internal: the body of revoke_selector(), run as the extension owner once the caller is known to own the selector.';
COMMENT ON FUNCTION model_select.grant_selector(text, regrole, text) IS
'Grants a right on a selector (route, reward or admin) to a role; only its owner (or a member of the owner role), a superuser or the extension owner may.';
COMMENT ON FUNCTION model_select.revoke_selector(text, regrole, text) IS
'Revokes a right granted with grant_selector(); it takes effect at the next statement of every session.';
COMMENT ON FUNCTION model_select.setup_role(regrole, text) IS
'Superusers and the extension owner: gives a role exactly the rights of an application (route and reward), of an administrator (also create selectors and probe runs), or none; returns the GRANT statements run.';
