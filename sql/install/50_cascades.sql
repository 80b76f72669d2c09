-- Cascades: Weitzman's reservation index and learned cost-aware cascades.

-- Pandora's box (Belloni, Chen & Wei 2026): Weitzman reservation index, the sigma
-- solving E[(V - sigma)^+] = cost, for V ~ 'bernoulli' {p[, high]},
-- 'uniform' {a, b}, 'gaussian' {mean, sd}, 'empirical' {v1, ..., vn} or
-- 'discrete' {v1, p1, ..., vn, pn} (see src/cascade/reservation.c).  Not STRICT:
-- a NULL argument is an error (22004), bad input 22023.
CREATE FUNCTION model_select.reservation_index(distribution text, params float8[], cost float8)
    RETURNS float8
    AS 'MODULE_PATHNAME', 'model_select_reservation_index' LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- Learned cost-aware cascades (COSMOS, Belloni, Chen & Wei 2026 §3; src/cascade/), the
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

CREATE FUNCTION model_select_internal._cascade_resolve() RETURNS trigger
    AS 'MODULE_PATHNAME', 'model_select_cascade_resolve' LANGUAGE C PARALLEL UNSAFE;
CREATE FUNCTION model_select_internal._cascade_apply() RETURNS trigger
    AS 'MODULE_PATHNAME', 'model_select_cascade_apply' LANGUAGE C PARALLEL UNSAFE;
CREATE TRIGGER cascade_resolve BEFORE INSERT ON model_select.cascade_observations
    FOR EACH ROW EXECUTE FUNCTION model_select_internal._cascade_resolve();
CREATE TRIGGER cascade_apply AFTER INSERT ON model_select.cascade_observations
    REFERENCING NEW TABLE AS new_observations
    FOR EACH STATEMENT EXECUTE FUNCTION model_select_internal._cascade_apply();

CREATE FUNCTION model_select_internal._cascade_append_only() RETURNS trigger
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION 'model_select.cascade_observations is an append-only log: % is not allowed', TG_OP
        USING ERRCODE = '55000',
              HINT = 'Insert a new observation instead; after deleting observations, run model_select.cascade_refit().';
END $$;
CREATE TRIGGER cascade_append_only BEFORE UPDATE OR TRUNCATE ON model_select.cascade_observations
    FOR EACH STATEMENT EXECUTE FUNCTION model_select_internal._cascade_append_only();

-- The active arms in decreasing optimistic index (the stop thresholds).
CREATE FUNCTION model_select.cascade(selector text, context anycompatiblearray, beta float8 DEFAULT 5)
    RETURNS TABLE ("position" int, arm text, index float8)
    AS 'MODULE_PATHNAME', 'model_select_cascade' LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 8;

-- Every arm (retired ones too): observations, point estimate of the index,
-- width |psi|_{V⁻¹} and optimistic index; Infinity while n = 0.
CREATE FUNCTION model_select.cascade_scores(selector text, context anycompatiblearray, beta float8 DEFAULT 5)
    RETURNS TABLE (arm text, active boolean, n bigint, estimate float8, width float8, index float8)
    AS 'MODULE_PATHNAME', 'model_select_cascade_scores' LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 8;

-- Weitzman's rule: the next arm to query, or NULL to stop.  queried NULL or
-- '{}' (then best_value may be NULL) names the first arm.  Not STRICT.
CREATE FUNCTION model_select.cascade_next(selector text, context anycompatiblearray, best_value float8,
                                          queried text[], beta float8 DEFAULT 5) RETURNS text
    AS 'MODULE_PATHNAME', 'model_select_cascade_next' LANGUAGE C STABLE PARALLEL SAFE;

-- Which queried output to deploy: the arm with the best value.
CREATE FUNCTION model_select.cascade_select(selector text, "values" float8[], arms text[]) RETURNS text
    AS 'MODULE_PATHNAME', 'model_select_cascade_select' LANGUAGE C STABLE STRICT PARALLEL SAFE;

-- cascade() logged in cascade_decisions; observations may then name the cascade_id.
CREATE FUNCTION model_select.cascade_route(selector text, context anycompatiblearray, beta float8 DEFAULT 5,
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

COMMENT ON FUNCTION model_select_internal._cascade_resolve() IS
'Trigger function of cascade_resolve (BEFORE INSERT, each row): completes and validates an observation row.';
COMMENT ON FUNCTION model_select_internal._cascade_apply() IS
'Trigger function of cascade_apply (AFTER INSERT, each statement): folds the statement''s observations into cascade_state and refits.';
COMMENT ON FUNCTION model_select_internal._cascade_append_only() IS
'Trigger function of cascade_append_only: refuses UPDATE and TRUNCATE of the observation log (55000).';
COMMENT ON TRIGGER cascade_resolve ON model_select.cascade_observations IS 'Completes and validates each observation row.';
COMMENT ON TRIGGER cascade_apply ON model_select.cascade_observations IS 'Learns from the statement''s observations.';
COMMENT ON TRIGGER cascade_append_only ON model_select.cascade_observations IS 'Keeps the observation log append-only.';

COMMENT ON FUNCTION model_select.cascade(text, anycompatiblearray, float8) IS
'The active arms in the order to query them (decreasing optimistic index), with their indices: stop once the best value seen reaches the next index.';
COMMENT ON FUNCTION model_select.cascade_scores(text, anycompatiblearray, float8) IS
'Every arm (retired ones too): observations, estimated index, width and optimistic index (Infinity while n = 0).';
COMMENT ON FUNCTION model_select.cascade_next(text, anycompatiblearray, float8, text[], float8) IS
'Weitzman''s rule: the next arm to query given the best value so far and the arms queried, or NULL to stop.';
COMMENT ON FUNCTION model_select.cascade_select(text, float8[], text[]) IS
'Which queried output to deploy: the arm with the best value.';
COMMENT ON FUNCTION model_select.cascade_route(text, anycompatiblearray, float8) IS
'cascade(), logged in cascade_decisions: returns the cascade_id (for the observations), the arms in query order and their indices.';
COMMENT ON FUNCTION model_select.cascade_refit(text, boolean) IS
'Rebuilds every arm''s cascade_state from the observation log (rho warm-started unless from_scratch); returns the number of observations used.';

COMMENT ON VIEW model_select.cascade_outcomes IS
'Per logged cascade: arms queried, the best arm and value, the total cost and the utility (best value - total cost).';
COMMENT ON VIEW model_select.cascade_arm_stats IS
'Per arm: cascade observations, the current fit (fit_n, rho), state version and design size.';
