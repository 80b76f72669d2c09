-- model_select 0.1.0: install script.  All objects live in schema
-- model_select; every reference is schema-qualified and every function pins
-- its search_path, so nothing depends on the caller's search_path.

\echo Use "CREATE EXTENSION model_select" to load this file. \quit

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
    created_at  timestamptz NOT NULL DEFAULT now()
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
    UNIQUE (selector_id, ordinal)
);

-- One row per arm: the learned state (binary layout documented in
-- src/state.h) and running totals.  The row lock serialises reward updates.
CREATE TABLE model_select.arm_state (
    arm_id      int PRIMARY KEY REFERENCES model_select.arms ON DELETE CASCADE,
    selector_id int NOT NULL REFERENCES model_select.selectors ON DELETE CASCADE,
    version     bigint NOT NULL DEFAULT 0,
    n           bigint NOT NULL DEFAULT 0,
    reward_sum  float8 NOT NULL DEFAULT 0,
    cost_sum    float8 NOT NULL DEFAULT 0,
    cost_n      bigint NOT NULL DEFAULT 0,
    state       bytea,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ON model_select.arm_state (selector_id);
-- States are float8 arrays that pglz cannot shrink: skip the compression try.
ALTER TABLE model_select.arm_state ALTER COLUMN state SET STORAGE EXTERNAL;

CREATE TABLE model_select.decisions (
    decision_id bigserial PRIMARY KEY,
    selector_id int NOT NULL REFERENCES model_select.selectors ON DELETE CASCADE,
    arm_id      int NOT NULL REFERENCES model_select.arms ON DELETE CASCADE,
    context     float8[] NOT NULL,
    score       float8 NOT NULL,            -- the chosen arm's ucb
    mean        float8,                     -- its predicted reward (mean) at decision time
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ON model_select.decisions (selector_id, created_at);

-- The reward log: the source of truth for all learned state.  Insert either
-- (decision_id, reward [, cost]) or (selector, arm, context, reward [, cost]);
-- the BEFORE trigger fills in the rest, the AFTER trigger (once per
-- statement, over all its rows) learns from it.
CREATE TABLE model_select.rewards (
    reward_id   bigserial PRIMARY KEY,
    selector    text,
    arm         text,
    decision_id bigint UNIQUE REFERENCES model_select.decisions,
    context     float8[],
    reward      float8 NOT NULL,
    cost        float8,
    created_at  timestamptz NOT NULL DEFAULT now(),
    selector_id int NOT NULL REFERENCES model_select.selectors ON DELETE CASCADE,
    arm_id      int NOT NULL REFERENCES model_select.arms ON DELETE CASCADE
);
CREATE INDEX ON model_select.rewards (arm_id, reward_id);
CREATE INDEX ON model_select.rewards (selector_id);

CREATE FUNCTION model_select._rewards_resolve() RETURNS trigger
    AS 'MODULE_PATHNAME', 'model_select_rewards_resolve' LANGUAGE C;
CREATE FUNCTION model_select._rewards_apply() RETURNS trigger
    AS 'MODULE_PATHNAME', 'model_select_rewards_apply' LANGUAGE C;

CREATE TRIGGER rewards_resolve BEFORE INSERT ON model_select.rewards
    FOR EACH ROW EXECUTE FUNCTION model_select._rewards_resolve();
CREATE TRIGGER rewards_apply AFTER INSERT ON model_select.rewards
    REFERENCING NEW TABLE AS new_rewards
    FOR EACH STATEMENT EXECUTE FUNCTION model_select._rewards_apply();

-- The log is append-only: an UPDATE or TRUNCATE would silently desynchronise
-- the learned state.  (DELETE stays possible, e.g. for drop_selector's
-- cascade; after deleting rewards by hand, run rebuild_state().)
CREATE FUNCTION model_select._rewards_append_only() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION 'model_select.rewards is an append-only log: % is not allowed', TG_OP
        USING ERRCODE = '55000',
              HINT = 'Insert a new reward instead; after deleting rewards, run model_select.rebuild_state().';
END $$;
CREATE TRIGGER rewards_append_only BEFORE UPDATE OR TRUNCATE ON model_select.rewards
    FOR EACH STATEMENT EXECUTE FUNCTION model_select._rewards_append_only();

-- Validates settings for a policy/kernel and returns them with defaults.
CREATE FUNCTION model_select.resolve_settings(policy text, kernel text, settings jsonb)
    RETURNS jsonb
    AS 'MODULE_PATHNAME', 'model_select_resolve_settings' LANGUAGE C IMMUTABLE;

CREATE FUNCTION model_select.add_arm(selector text, arm text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
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
    INSERT INTO model_select.arm_state(arm_id, selector_id) SELECT arm_id, sid FROM a;
END $$;

CREATE FUNCTION model_select.create_selector(
    name text, dim int, arms text[], policy text DEFAULT 'pak_ucb',
    kernel text DEFAULT NULL, settings jsonb DEFAULT '{}', seed bigint DEFAULT 0)
RETURNS int
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
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
    IF cardinality(arms) = 0 THEN
        RAISE EXCEPTION 'a selector needs at least one arm' USING ERRCODE = '22023';
    END IF;
    IF EXISTS (SELECT 1 FROM model_select.selectors s WHERE s.name = create_selector.name) THEN
        RAISE EXCEPTION 'selector "%" already exists', name USING ERRCODE = '42710';
    END IF;
    INSERT INTO model_select.selectors(name, dim, policy, kernel, settings, seed)
    VALUES (name, dim, policy,
            CASE WHEN policy IN ('pak_ucb', 'rff_ucb', 'bkb') THEN coalesce(kernel, 'rbf') ELSE kernel END,
            model_select.resolve_settings(policy, kernel, coalesce(settings, '{}')), seed)
    RETURNING selector_id INTO sid;
    FOREACH arm IN ARRAY arms LOOP
        PERFORM model_select.add_arm(name, arm);
    END LOOP;
    RETURN sid;
END $$;

-- Change settings after creation: merged into the current ones, validated,
-- and every arm's state re-derived from the reward log (e.g. a new
-- cost_weight, alpha or bandwidth).  Returns the rewards re-applied.
CREATE FUNCTION model_select.alter_selector(name text, settings jsonb) RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    s model_select.selectors;
BEGIN
    IF settings IS NULL THEN
        RAISE EXCEPTION 'settings must not be NULL' USING ERRCODE = '22004';
    END IF;
    SELECT * INTO s FROM model_select.selectors sel WHERE sel.name = alter_selector.name FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'selector "%" does not exist', name USING ERRCODE = '42704';
    END IF;
    UPDATE model_select.selectors sel
       SET settings = model_select.resolve_settings(s.policy, s.kernel, s.settings || alter_selector.settings)
     WHERE sel.selector_id = s.selector_id;
    RETURN model_select.rebuild_state(name);
END $$;

CREATE FUNCTION model_select.drop_selector(name text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM model_select.selectors s WHERE s.name = drop_selector.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'selector "%" does not exist', name USING ERRCODE = '42704';
    END IF;
END $$;

CREATE FUNCTION model_select.retire_arm(selector text, arm text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
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

-- Scoring.  select_model and scores read only (STABLE); route logs a decision.
CREATE FUNCTION model_select.select_model(selector text, context float8[]) RETURNS text
    AS 'MODULE_PATHNAME', 'model_select_select_model' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION model_select.select_model(selector text, context real[]) RETURNS text
    AS 'MODULE_PATHNAME', 'model_select_select_model' LANGUAGE C STABLE STRICT PARALLEL SAFE;

CREATE FUNCTION model_select.route(selector text, context float8[],
    OUT decision_id bigint, OUT arm text, OUT score float8)
    AS 'MODULE_PATHNAME', 'model_select_route' LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION model_select.route(selector text, context real[],
    OUT decision_id bigint, OUT arm text, OUT score float8)
    AS 'MODULE_PATHNAME', 'model_select_route' LANGUAGE C VOLATILE STRICT;

CREATE FUNCTION model_select.scores(selector text, context float8[])
    RETURNS TABLE (arm text, active boolean, n bigint, mean float8, width float8, ucb float8)
    AS 'MODULE_PATHNAME', 'model_select_scores' LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 8;
CREATE FUNCTION model_select.scores(selector text, context real[])
    RETURNS TABLE (arm text, active boolean, n bigint, mean float8, width float8, ucb float8)
    AS 'MODULE_PATHNAME', 'model_select_scores' LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 8;

CREATE FUNCTION model_select.rebuild_state(selector text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'model_select_rebuild_state' LANGUAGE C VOLATILE STRICT;

-- bkb: resample every arm's dictionary now (spec/003.md §2.3); returns the
-- number of arms resampled.  55000 unless the selector's policy is bkb.
CREATE FUNCTION model_select.resample(selector text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'model_select_resample' LANGUAGE C VOLATILE STRICT;

-- Offline evaluation: the online loop over (context, rewards[, costs]) rows
-- of a query, in memory; no selector or table is touched.
CREATE FUNCTION model_select.replay(
    source text, policy text DEFAULT 'pak_ucb', kernel text DEFAULT NULL,
    settings jsonb DEFAULT '{}', seed bigint DEFAULT 0, cost_weight float8 DEFAULT 0,
    rounds int DEFAULT NULL, passes int DEFAULT 1, checkpoint int DEFAULT NULL,
    shuffle boolean DEFAULT true)
    RETURNS TABLE (round int, cum_reward float8, cum_cost float8, cum_utility float8,
                   regret_best_arm float8, regret_oracle float8, opr float8,
                   opr_window float8, otb float8, picks bigint[])
    AS 'MODULE_PATHNAME', 'model_select_replay' LANGUAGE C VOLATILE;

-- Pandora's box (spec/004.md §2.1): Weitzman reservation index, the sigma
-- solving E[(V - sigma)^+] = cost, for V ~ 'bernoulli' {p[, high]},
-- 'uniform' {a, b}, 'gaussian' {mean, sd}, 'empirical' {v1, ..., vn} or
-- 'discrete' {v1, p1, ..., vn, pn} (see src/reservation.c).  Not STRICT:
-- a NULL argument is an error (22004), bad input 22023.
CREATE FUNCTION model_select.reservation_index(distribution text, params float8[], cost float8)
    RETURNS float8
    AS 'MODULE_PATHNAME', 'model_select_reservation_index' LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- This backend's cache of decoded arm models: entries, decodes, hits.
CREATE FUNCTION model_select.cache_stats(OUT entries int, OUT decodes bigint, OUT hits bigint)
    AS 'MODULE_PATHNAME', 'model_select_cache_stats' LANGUAGE C VOLATILE;

-- Seeded synthetic stream: prompts in clusters whose best arm differs, with
-- optional changing worlds (see src/synthetic.c).
CREATE FUNCTION model_select.synthetic_clusters(
    rounds int, dim int, arms int, clusters int DEFAULT NULL, seed bigint DEFAULT 0,
    noise float8 DEFAULT 0.1, new_arm_at int DEFAULT NULL, switch_every int DEFAULT NULL,
    new_cluster_every int DEFAULT NULL,
    OUT round int, OUT cluster int, OUT context float8[], OUT expected float8[],
    OUT reward float8[], OUT best_arm int)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'model_select_synthetic_clusters' LANGUAGE C IMMUTABLE;

-- Change detector: per arm, over its last `recent` rewarded decisions, the
-- mean reward observed vs the mean the model predicted when it decided.  A
-- gap many standard errors wide means the arm's world has moved: consider a
-- window, a discount or restart_every (see README).
CREATE FUNCTION model_select.drift(selector text, recent int DEFAULT 100)
RETURNS TABLE (arm text, n bigint, observed float8, predicted float8, gap float8, z float8)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT a.name, count(r.reward), avg(r.reward), avg(r.mean), avg(r.reward - r.mean),
           avg(r.reward - r.mean) / nullif(stddev_samp(r.reward - r.mean) / sqrt(count(r.reward)), 0)
      FROM model_select.selectors s
      JOIN model_select.arms a ON a.selector_id = s.selector_id
      LEFT JOIN LATERAL (
            SELECT rw.reward, d.mean
              FROM model_select.rewards rw
              JOIN model_select.decisions d ON d.decision_id = rw.decision_id
             WHERE rw.arm_id = a.arm_id AND d.mean > '-Infinity' AND d.mean < 'Infinity'
             ORDER BY rw.reward_id DESC
             LIMIT greatest(recent, 1)) r ON true
     WHERE s.name = drift.selector
     GROUP BY a.name, a.ordinal
     ORDER BY a.ordinal
$$;

-- Per-arm introspection.
CREATE VIEW model_select.arm_stats AS
SELECT s.name AS selector, a.name AS arm, a.ordinal, a.active, st.n,
       CASE WHEN st.n > 0 THEN st.reward_sum / st.n END AS mean_reward,
       CASE WHEN st.cost_n > 0 THEN st.cost_sum / st.cost_n END AS mean_cost,
       st.version, octet_length(st.state) AS state_bytes, st.updated_at
  FROM model_select.selectors s
  JOIN model_select.arms a USING (selector_id)
  JOIN model_select.arm_state st USING (arm_id);

-- pg_dump keeps the user data and the sequences.  arm_state is derived: it is
-- dumped empty, and restoring the reward log re-learns it through the
-- triggers (which create missing arm_state rows), so a restore can never
-- apply a reward twice.
SELECT pg_catalog.pg_extension_config_dump('model_select.selectors', '');
SELECT pg_catalog.pg_extension_config_dump('model_select.arms', '');
SELECT pg_catalog.pg_extension_config_dump('model_select.arm_state', 'WHERE false');
SELECT pg_catalog.pg_extension_config_dump('model_select.decisions', '');
SELECT pg_catalog.pg_extension_config_dump('model_select.rewards', '');
SELECT pg_catalog.pg_extension_config_dump('model_select.selectors_selector_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('model_select.arms_arm_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('model_select.decisions_decision_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('model_select.rewards_reward_id_seq', '');
