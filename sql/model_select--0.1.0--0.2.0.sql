-- model_select 0.1.0 -> 0.2.0 upgrade script (hand-written; run by
-- ALTER EXTENSION model_select UPDATE).  After it, an updated 0.1.0 install
-- has the same catalog as a fresh 0.2.0 install (test/session/upgrade.sh
-- compares the two) and the same learned state: the reward log becomes the
-- only truth, arm_state holds checkpoints of its fold, and every arm is
-- re-derived at the end.  0.2.0 also adds COMMENT ON for the public objects
-- and corrects PARALLEL labels.

\echo Use "ALTER EXTENSION model_select UPDATE TO '0.2.0'" to load this file. \quit

-- == Learning from a log: the reward log is the truth, arm_state holds
-- == checkpoints of its fold (see sql/model_select--0.2.0.sql).

ALTER TABLE model_select.selectors ADD COLUMN settings_version int NOT NULL DEFAULT 1;

-- 0.1.0's rewards predate every transaction that can still write: tx 0
-- keeps their reward_id order as the canonical order.
ALTER TABLE model_select.rewards ADD COLUMN tx xid8 NOT NULL DEFAULT '0';
ALTER TABLE model_select.rewards ALTER COLUMN tx DROP DEFAULT;
DROP INDEX model_select.rewards_arm_id_reward_id_idx;
CREATE INDEX ON model_select.rewards (arm_id, tx, reward_id);

-- the cost weight in force for each decision (the budget's pacer); NULL
-- for decisions logged before.
ALTER TABLE model_select.decisions ADD COLUMN cost_weight float8;

ALTER TABLE model_select.arm_state
    ADD COLUMN settings_version int NOT NULL DEFAULT 0,
    ADD COLUMN ckpt_tx xid8 NOT NULL DEFAULT '0',
    ADD COLUMN ckpt_reward_id bigint NOT NULL DEFAULT 0;

CREATE OR REPLACE FUNCTION model_select.add_arm(selector text, arm text) RETURNS void
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

CREATE OR REPLACE FUNCTION model_select.create_selector(
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

CREATE OR REPLACE FUNCTION model_select.alter_selector(name text, settings jsonb) RETURNS bigint
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
       SET settings = model_select.resolve_settings(s.policy, s.kernel, s.settings || alter_selector.settings),
           settings_version = sel.settings_version + 1
     WHERE sel.selector_id = s.selector_id;
    RETURN model_select.rebuild_state(name);
END $$;

CREATE OR REPLACE FUNCTION model_select.drift(selector text, recent int DEFAULT 100)
RETURNS TABLE (arm text, n bigint, observed float8, predicted float8, gap float8, z float8)
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
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

-- Fold every arm's final pending rewards into its checkpoint now; returns
-- the rewards folded.  Scores do not change: readers fold pending rewards.
CREATE FUNCTION model_select.checkpoint(selector text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'model_select_checkpoint' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

-- Route every row of a query (key integer, context real[] or float8[]) in one
-- call, scoring blocks of rows by BLAS-3; with log, the decisions are logged.
CREATE FUNCTION model_select.route_batch(selector text, source text, log boolean DEFAULT false)
    RETURNS TABLE (key bigint, arm text, score float8, mean float8, width float8, decision_id bigint)
    AS 'MODULE_PATHNAME', 'model_select_route_batch' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

DROP VIEW model_select.arm_stats;
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

-- PARALLEL labels.  0.1.0 labelled 12 functions PARALLEL SAFE and left the
-- others at the default, PARALLEL UNSAFE; 0.2.0 labels all 50 explicitly.
-- Those that stay UNSAFE (everything that writes, locks rows or runs the
-- caller's SQL) need no change here; these change:
-- pure functions
ALTER FUNCTION model_select.resolve_settings(text, text, jsonb) PARALLEL SAFE;
ALTER FUNCTION model_select.synthetic_clusters(int, int, int, int, bigint, float8, int, int, int) PARALLEL SAFE;
ALTER FUNCTION model_select.synthetic_rkhs(int, int, int, bigint, text, float8, float8, float8, float8, int) PARALLEL SAFE;
-- read-only queries of the extension's tables
ALTER FUNCTION model_select.drift(text, int) PARALLEL SAFE;
ALTER FUNCTION model_select.probe_status(text) PARALLEL SAFE;
-- reports the calling backend's own cache: must run in the leader
ALTER FUNCTION model_select.cache_stats() PARALLEL RESTRICTED;

-- Comments on every function, table and view (and the important columns and
-- the triggers), as in sql/install/*.sql.

-- from core
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
COMMENT ON TABLE model_select.arms IS
'The arms (models) of each selector. A retired arm (active = false) is never chosen and refuses rewards; its state and rewards stay, add_arm() re-activates it.';
COMMENT ON COLUMN model_select.arms.name IS 'Arm name, unique within the selector: what select_model() returns.';
COMMENT ON COLUMN model_select.arms.ordinal IS 'Position within the selector (1, 2, ...): the order of scores() rows and of tie-breaking.';
COMMENT ON COLUMN model_select.arms.active IS 'false once retired by retire_arm().';
COMMENT ON COLUMN model_select.arms.retired_at IS 'When the arm was last retired; NULL while active.';
COMMENT ON TABLE model_select.arm_state IS
'Checkpoint of each arm: the fold of its reward log up to (ckpt_tx, ckpt_reward_id) in canonical order, under the settings of settings_version. Written only by the extension (checkpoints, rebuild_state(), resample()) as its owner. pg_dump dumps it empty; restoring the log re-learns it.';
COMMENT ON COLUMN model_select.arm_state.version IS
'Incremented by every checkpoint, rebuild and resample; invalidates cached models.';
COMMENT ON COLUMN model_select.arm_state.settings_version IS 'The selectors.settings_version the checkpoint was folded under.';
COMMENT ON COLUMN model_select.arm_state.ckpt_tx IS 'Position of the checkpoint in the log: tx of the last reward folded.';
COMMENT ON COLUMN model_select.arm_state.ckpt_reward_id IS 'Position of the checkpoint in the log: reward_id of the last reward folded.';
COMMENT ON COLUMN model_select.arm_state.n IS 'Rewards folded into the checkpoint.';
COMMENT ON COLUMN model_select.arm_state.reward_sum IS 'Sum of the rewards folded in.';
COMMENT ON COLUMN model_select.arm_state.cost_sum IS 'Sum of the costs of the rewards that had one.';
COMMENT ON COLUMN model_select.arm_state.cost_n IS 'Number of rewards that had a cost.';
COMMENT ON COLUMN model_select.arm_state.state IS
'The policy''s state in binary form (layout in src/core/state.h); NULL until the first reward.';
COMMENT ON FUNCTION model_select.resolve_settings(text, text, jsonb) IS
'Validates settings for a policy and kernel and returns them with every default filled in: what create_selector() stores.';
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

-- from routing
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
'This backend''s cache of decoded arm models: entries held, states decoded and cache hits so far.';

-- from learning
COMMENT ON TABLE model_select.rewards IS
'The reward log, source of truth of all learned state. Insert (decision_id, reward[, cost]) or (selector, arm, context, reward[, cost]); triggers validate each row; readers fold new rewards in memory and checkpoints store the fold (canonical order: tx, reward_id). Append-only: UPDATE and TRUNCATE are refused; after a DELETE run rebuild_state().';
COMMENT ON COLUMN model_select.rewards.selector IS 'Selector name (or taken from the decision).';
COMMENT ON COLUMN model_select.rewards.arm IS 'Arm name (or taken from the decision); the arm must be active.';
COMMENT ON COLUMN model_select.rewards.decision_id IS 'The decision rewarded, if any; at most one reward per decision.';
COMMENT ON COLUMN model_select.rewards.context IS 'The context (taken from the decision when decision_id is given).';
COMMENT ON COLUMN model_select.rewards.reward IS 'The observed reward, finite and within the selector''s [reward_min, reward_max].';
COMMENT ON COLUMN model_select.rewards.cost IS 'Optional cost (finite, >= 0), weighted by the setting cost_weight.';
COMMENT ON COLUMN model_select.rewards.selector_id IS 'Filled in by the trigger rewards_resolve.';
COMMENT ON COLUMN model_select.rewards.arm_id IS 'Filled in by the trigger rewards_resolve.';
COMMENT ON COLUMN model_select.rewards.tx IS 'The inserting transaction (set by rewards_resolve whatever the client writes): the log is folded in (tx, reward_id) order.';
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
'Recomputes every arm''s checkpoint from scratch from its reward log in (tx, reward_id) order, the definition of the state (after deleting rewards, or to repair a state); returns the number of rewards folded.';
COMMENT ON FUNCTION model_select.checkpoint(text) IS
'Folds every arm''s final pending rewards into its stored checkpoint now (scores do not change); returns the number of rewards folded.';
COMMENT ON FUNCTION model_select.resample(text) IS
'For a bkb selector: resamples every arm''s dictionary now; returns the number of arms resampled.';

-- from introspection
COMMENT ON VIEW model_select.arm_stats IS
'Per arm: rewards in the log, mean reward, mean cost, rewards pending after the checkpoint, checkpoint version and size.';
COMMENT ON COLUMN model_select.arm_stats.pending IS 'Rewards logged after the checkpoint (readers fold them in memory).';
COMMENT ON COLUMN model_select.arm_stats.mean_reward IS 'Mean of the arm''s rewards in the log; NULL while n = 0.';
COMMENT ON COLUMN model_select.arm_stats.mean_cost IS 'Mean cost over the rewards that had a cost.';
COMMENT ON COLUMN model_select.arm_stats.state_bytes IS 'Size of the stored state in bytes.';
COMMENT ON FUNCTION model_select.drift(text, int) IS
'Change detector: per arm, over its last `recent` rewarded decisions, the mean observed reward vs the mean predicted at decision time, their gap and its z score (|z| >= 3: the arm no longer behaves as it used to).';

-- from cascades
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

-- from probing
COMMENT ON TABLE model_select.probe_runs IS
'R-PERP probing runs: one row per run with its parameters (horizon T, reset_every H, beta) and where it stands (interval, batch, queries issued and reported).';
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

-- from evaluation
COMMENT ON FUNCTION model_select.replay(text, text, text, jsonb, bigint, float8, int, int, int, boolean) IS
'Offline evaluation: runs a policy''s online loop over the rows (context, rewards[, costs[, expected]]) of the query source, in memory, touching no table; returns cumulative reward, cost, utility, regret, optimal-pick ratios and picks per arm every checkpoint rounds.';
COMMENT ON FUNCTION model_select.synthetic_clusters(int, int, int, int, bigint, float8, int, int, int) IS
'Seeded synthetic stream: prompts in clusters whose best arm differs, with optional changing worlds (a late arm, rotating experts, new clusters).';
COMMENT ON FUNCTION model_select.synthetic_rkhs(int, int, int, bigint, text, float8, float8, float8, float8, int) IS
'Seeded synthetic stream: per arm a reward function of given RKHS norm, contexts uniform in [0,1]^dim, Gaussian noise.';

-- Re-derive every arm's state from the log under the new layout.
SELECT model_select.rebuild_state(name) FROM model_select.selectors ORDER BY selector_id;

-- == Quality vs cost: hull and AIQ over replay() runs.

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
    IF cardinality(costs) <> cardinality(qualities) OR array_position(costs, NULL) IS NOT NULL
       OR array_position(qualities, NULL) IS NOT NULL OR NOT max_cost > 0 OR max_cost = 'Infinity'
       OR EXISTS (SELECT FROM unnest(costs, qualities) u(c, q)
                   WHERE NOT (c >= 0 AND c < 'Infinity' AND q > '-Infinity' AND q < 'Infinity')) THEN
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
CREATE FUNCTION model_select.quality_cost(
    source text, policy text DEFAULT 'pak_ucb', kernel text DEFAULT NULL, settings jsonb DEFAULT '{}',
    cost_weights float8[] DEFAULT NULL, budgets float8[] DEFAULT NULL, seed bigint DEFAULT 0,
    rounds int DEFAULT NULL)
    RETURNS TABLE (kind text, knob float8, cost float8, quality float8, on_hull boolean, aiq float8)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $$
DECLARE
    max_cost float8;
BEGIN
    IF source IS NULL OR policy IS NULL OR settings IS NULL OR seed IS NULL THEN
        RAISE EXCEPTION 'quality_cost: source, policy, settings and seed must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF coalesce(cardinality(cost_weights), 0) + coalesce(cardinality(budgets), 0) = 0 THEN
        RAISE EXCEPTION 'quality_cost: give cost_weights, budgets or both' USING ERRCODE = '22023';
    END IF;
    CREATE TEMP TABLE IF NOT EXISTS ms_quality_points (kind text, knob float8, cost float8, quality float8)
        ON COMMIT DROP;
    TRUNCATE ms_quality_points;
    -- each arm: its mean reward and cost over the rows where it is available
    EXECUTE format('INSERT INTO ms_quality_points SELECT ''arm'', a, pg_catalog.avg(COALESCE(s.c[a], 0)),'
                   ' pg_catalog.avg(s.r[a]) FROM (%s) s(x, r, c), pg_catalog.generate_series(1, pg_catalog.cardinality(s.r)) a'
                   ' WHERE s.r[a] IS NOT NULL GROUP BY a', source);
    INSERT INTO ms_quality_points
    SELECT g.kind, g.knob, r.cum_cost / r.round, r.cum_reward / r.round
      FROM (SELECT 'cost_weight' AS kind, w AS knob, settings AS st, w AS lambda FROM unnest(cost_weights) w
            UNION ALL
            SELECT 'budget', b, settings || jsonb_build_object('budget', b), 0 FROM unnest(budgets) b) g
      CROSS JOIN LATERAL (SELECT * FROM model_select.replay(source, policy, kernel, g.st, seed, g.lambda, rounds, 1,
                                                            rounds) x ORDER BY x.round DESC LIMIT 1) r;
    SELECT max(p.cost) INTO max_cost FROM ms_quality_points p WHERE p.kind = 'arm';
    IF NOT max_cost > 0 THEN
        RAISE EXCEPTION 'quality_cost: every arm costs 0 on these rows' USING ERRCODE = '22023',
            HINT = 'The source yields (context, rewards, costs); give the costs.';
    END IF;
    RETURN QUERY
    SELECT p.kind, p.knob, p.cost, p.quality,
           EXISTS (SELECT FROM model_select.quality_hull(h.cs, h.qs, max_cost) v WHERE v.cost = p.cost AND v.quality = p.quality),
           (SELECT v.aiq FROM model_select.quality_hull(h.cs, h.qs, max_cost) v LIMIT 1)
      FROM ms_quality_points p
      JOIN (SELECT q.kind = 'arm' AS is_arm, array_agg(q.cost) AS cs, array_agg(q.quality) AS qs
              FROM ms_quality_points q GROUP BY 1) h ON h.is_arm = (p.kind = 'arm')
     ORDER BY p.kind = 'arm', p.kind, p.knob;
END $$;

COMMENT ON FUNCTION model_select.quality_hull(float8[], float8[], float8) IS
'RouterBench''s quality-vs-cost hull: the vertices of the non-decreasing concave hull of the (cost, quality) points and the origin, flat past the best point, with aiq = the area under it over [0, max_cost] divided by max_cost.';
COMMENT ON FUNCTION model_select.quality_cost(text, text, text, jsonb, float8[], float8[], bigint, int) IS
'replay() of a policy over a grid of cost weights and/or budgets on the rows (context, rewards, costs) of source: per run and per arm (always that arm) the mean cost and reward per decision, whether the point is a vertex of its kind''s hull, and the AIQ of the router''s and of the arms'' hulls up to the dearest arm''s mean cost.';
