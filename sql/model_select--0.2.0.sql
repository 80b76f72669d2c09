-- model_select 0.2.0: install script.  All objects live in schema
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
    created_at  timestamptz NOT NULL DEFAULT now(),
    -- bumped by every settings change: checkpoints of older settings are void
    settings_version int NOT NULL DEFAULT 1
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

-- One row per arm: its checkpoint, the fold of the arm's reward log up to
-- (ckpt_tx, ckpt_reward_id) in canonical order under the settings of
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
    ckpt_reward_id bigint NOT NULL DEFAULT 0
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
-- the BEFORE trigger fills in the rest, including tx, the inserting
-- transaction: an arm's log is folded in (tx, reward_id) order.  The AFTER
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
    selector_id int NOT NULL REFERENCES model_select.selectors ON DELETE CASCADE,
    arm_id      int NOT NULL REFERENCES model_select.arms ON DELETE CASCADE,
    tx          xid8 NOT NULL
);
CREATE INDEX ON model_select.rewards (arm_id, tx, reward_id);
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
-- With dim: also refuses settings whose arm states would not fit (22023).
CREATE FUNCTION model_select.resolve_settings(policy text, kernel text, settings jsonb, dim int)
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
    INSERT INTO model_select.arm_state(arm_id, selector_id, settings_version)
    SELECT arm_id, sid, s.settings_version FROM a, model_select.selectors s WHERE s.selector_id = sid;
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
    IF array_ndims(arms) > 1 THEN
        RAISE EXCEPTION 'arms must be a one-dimensional array' USING ERRCODE = '22023';
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
            model_select.resolve_settings(policy, kernel, coalesce(settings, '{}'), dim), seed)
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
       SET settings = model_select.resolve_settings(s.policy, s.kernel, s.settings || alter_selector.settings, s.dim),
           settings_version = sel.settings_version + 1
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
    RETURNS TABLE (arm text, active boolean, n bigint, mean float8, width float8, ucb float8,
                   radius float8, alpha float8)
    AS 'MODULE_PATHNAME', 'model_select_scores' LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 8;
CREATE FUNCTION model_select.scores(selector text, context real[])
    RETURNS TABLE (arm text, active boolean, n bigint, mean float8, width float8, ucb float8,
                   radius float8, alpha float8)
    AS 'MODULE_PATHNAME', 'model_select_scores' LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 8;

CREATE FUNCTION model_select.rebuild_state(selector text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'model_select_rebuild_state' LANGUAGE C VOLATILE STRICT;

-- Fold every arm's final pending rewards into its checkpoint now; returns
-- the rewards folded.  Scores do not change: readers fold pending rewards.
CREATE FUNCTION model_select.checkpoint(selector text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'model_select_checkpoint' LANGUAGE C VOLATILE STRICT;

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

-- Learned cost-aware cascades (COSMOS, spec/004.md §3; src/cascade*.c), the
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
    AS 'MODULE_PATHNAME', 'model_select_cascade_resolve' LANGUAGE C;
CREATE FUNCTION model_select._cascade_apply() RETURNS trigger
    AS 'MODULE_PATHNAME', 'model_select_cascade_apply' LANGUAGE C;
CREATE TRIGGER cascade_resolve BEFORE INSERT ON model_select.cascade_observations
    FOR EACH ROW EXECUTE FUNCTION model_select._cascade_resolve();
CREATE TRIGGER cascade_apply AFTER INSERT ON model_select.cascade_observations
    REFERENCING NEW TABLE AS new_observations
    FOR EACH STATEMENT EXECUTE FUNCTION model_select._cascade_apply();

CREATE FUNCTION model_select._cascade_append_only() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
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
    AS 'MODULE_PATHNAME', 'model_select_cascade_route' LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION model_select.cascade_route(selector text, context real[], beta float8 DEFAULT 5,
    OUT cascade_id bigint, OUT arms text[], OUT indices float8[])
    AS 'MODULE_PATHNAME', 'model_select_cascade_route' LANGUAGE C VOLATILE STRICT;

-- Rebuild every arm's cascade_state from the log now (design from scratch,
-- rho warm-started from the stored one unless from_scratch); returns the
-- observations used.  Needed after deleting observations or changing the
-- selector's feature settings.
CREATE FUNCTION model_select.cascade_refit(selector text, from_scratch boolean DEFAULT false) RETURNS bigint
    AS 'MODULE_PATHNAME', 'model_select_cascade_refit' LANGUAGE C VOLATILE STRICT;

-- Per logged cascade: what was queried, the best value and the utility
-- (best value − total cost) of the observations that name it.
CREATE VIEW model_select.cascade_outcomes AS
SELECT d.cascade_id, s.name AS selector, d.created_at, count(o.obs_id) AS queried,
       (array_agg(o.arm ORDER BY o.value DESC, o.obs_id) FILTER (WHERE o.obs_id IS NOT NULL))[1] AS best_arm,
       max(o.value) AS best_value, sum(o.cost) AS total_cost, max(o.value) - sum(o.cost) AS utility
  FROM model_select.cascade_decisions d
  JOIN model_select.selectors s USING (selector_id)
  LEFT JOIN model_select.cascade_observations o ON o.cascade_id = d.cascade_id
 GROUP BY d.cascade_id, s.name, d.created_at;

CREATE VIEW model_select.cascade_arm_stats AS
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

-- End of learned cascades.

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

-- Seeded synthetic stream of spec/001.md §4.1: per arm a reward function of
-- RKHS norm exactly rkhs_norm (weights on kernels at random inducing points),
-- contexts uniform in [0,1]^dim, Gaussian noise (see src/synthetic_rkhs.c).
CREATE FUNCTION model_select.synthetic_rkhs(
    rounds int, dim int, arms int, seed bigint DEFAULT 0,
    kernel text DEFAULT 'rbf', bandwidth float8 DEFAULT 0.5, nu float8 DEFAULT 2.5,
    rkhs_norm float8 DEFAULT 10, noise float8 DEFAULT 0.1, inducing int DEFAULT 20,
    OUT round int, OUT context float8[], OUT expected float8[], OUT reward float8[],
    OUT best_arm int)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'model_select_synthetic_rkhs' LANGUAGE C IMMUTABLE;

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
             ORDER BY rw.tx DESC, rw.reward_id DESC
             LIMIT greatest(recent, 1)) r ON true
     WHERE s.name = drift.selector
     GROUP BY a.name, a.ordinal
     ORDER BY a.ordinal
$$;

-- R-PERP probing runs (spec/002.md §2.1, §5.5; src/rperp.c): restarting
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
    created_at      timestamptz NOT NULL DEFAULT now()
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
    AS 'MODULE_PATHNAME', 'model_select_probe_load_pool' LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION model_select._probe_plan(run_id int) RETURNS int
    AS 'MODULE_PATHNAME', 'model_select_probe_plan' LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION model_select._probe_eliminate(run_id int) RETURNS int
    AS 'MODULE_PATHNAME', 'model_select_probe_eliminate' LANGUAGE C VOLATILE STRICT;

-- The transition after a fully reported batch (or, for a new run, the start
-- of interval 1).  The caller holds the run's row lock.
CREATE FUNCTION model_select._probe_advance(rid int) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
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
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    allowed text[] := ARRAY['alpha', 'intercept', 'normalize', 'bandwidth', 'nu', 'gamma', 'degree', 'offset'];
    kern text := coalesce(kernel, 'rbf');
    resolved jsonb;
    bad text;
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
    IF EXISTS (SELECT 1 FROM model_select.probe_runs pr WHERE pr.name = _probe_create.name) THEN
        RAISE EXCEPTION 'probe run "%" already exists', name USING ERRCODE = '42710';
    END IF;
    INSERT INTO model_select.probe_runs(name, horizon, reset_every, beta, kernel, settings, seed)
    VALUES (name, horizon, reset_every, beta, kern, resolved, seed)
    RETURNING run_id INTO rid;
    RETURN rid;
END $$;

-- Step 3, after _probe_load_pool: check the pool and start interval 1.
CREATE FUNCTION model_select._probe_start(rid int) RETURNS int
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
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
LANGUAGE sql VOLATILE AS $$
    SELECT model_select._probe_start(model_select._probe_load_pool(
        model_select._probe_create(name, horizon, reset_every, beta, pool, kernel, settings, seed), pool))
$$;

CREATE FUNCTION model_select.drop_probe_run(name text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
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
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
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
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r model_select.probe_runs;
BEGIN
    IF score IS NULL THEN
        RAISE EXCEPTION 'score must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF NOT (score > '-Infinity' AND score < 'Infinity') THEN
        RAISE EXCEPTION 'score must be a finite number, not %', score USING ERRCODE = '22023';
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
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
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
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
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
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
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
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
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

-- Per-arm introspection.
-- Per arm: rewards in the log (n), their means, how many are pending after
-- the checkpoint, and the checkpoint's version, size and time.
CREATE VIEW model_select.arm_stats AS
SELECT s.name AS selector, a.name AS arm, a.ordinal, a.active, c.n + p.n AS n,
       CASE WHEN c.n + p.n > 0 THEN (c.reward_sum + p.reward_sum) / (c.n + p.n) END AS mean_reward,
       CASE WHEN c.cost_n + p.cost_n > 0
            THEN (c.cost_sum + p.cost_sum) / (c.cost_n + p.cost_n) END AS mean_cost,
       p.n AS pending, st.version, octet_length(st.state) AS state_bytes, st.updated_at
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
           AND (r.tx, r.reward_id) > (coalesce(st.ckpt_tx, '0'::xid8), coalesce(st.ckpt_reward_id, 0))) p;

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
