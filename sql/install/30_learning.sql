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
    decision_id bigint UNIQUE,              -- a decision's, kept by triggers (below), not a foreign key
    context     float8[],
    reward      float8 NOT NULL,
    cost        float8,
    created_at  timestamptz NOT NULL DEFAULT now(),
    selector_id int NOT NULL,
    arm_id      int NOT NULL,               -- an arm of selector_id; no foreign key (_drop_selector())
    tx          xid8 NOT NULL,
    seq         bigint NOT NULL,
    tags        text[]
);
-- reward_id is drawn by the BEFORE trigger, after it locked the selector: a
-- default's nextval() would give the transaction its id before that lock
-- (src/model/catalog.c, late writers).
ALTER TABLE model_select.rewards ALTER COLUMN reward_id DROP DEFAULT;
CREATE INDEX ON model_select.rewards (arm_id, tx, seq);
-- (selector_id, decision_id): the pacer reads a selector's rewards of its newest decisions only
CREATE INDEX ON model_select.rewards (selector_id, decision_id);
-- Contexts (embeddings) are compressed with lz4 where the server has it:
-- pglz's attempt on one cost each decision and reward ~20 us of CPU at
-- d = 384 (bench-pgbench), mostly for nothing; lz4 gives up on float8
-- noise at once and packs float4-born embeddings about as well.
DO $$
BEGIN
    IF 'lz4' = ANY ((SELECT enumvals FROM pg_catalog.pg_settings
                     WHERE name = 'default_toast_compression')::text[]) THEN
        ALTER TABLE model_select.decisions ALTER COLUMN context SET COMPRESSION lz4;
        ALTER TABLE model_select.decisions ALTER COLUMN context_real SET COMPRESSION lz4;
        ALTER TABLE model_select.rewards ALTER COLUMN context SET COMPRESSION lz4;
    END IF;
END $$;
-- and kept in the row (MAIN: compressed if that helps, out of line only past
-- a page): at d = 384 a context is 3 kB, over the 2 kB at which EXTENDED
-- moves it to the TOAST table, costing every decision and reward a TOAST
-- insert and every fold a TOAST fetch (5% of route + reward throughput at
-- 4 clients, bench-pgbench).
ALTER TABLE model_select.decisions ALTER COLUMN context SET STORAGE MAIN;
ALTER TABLE model_select.decisions ALTER COLUMN context_real SET STORAGE MAIN;
ALTER TABLE model_select.rewards ALTER COLUMN context SET STORAGE MAIN;
-- Nor is compression tried below a page (toast_tuple_target): past 2 kB a
-- row's MAIN contexts were compressed before it was stored, and a float8
-- context (one a real cannot hold, so noise to lz4) cost each decision
-- about 50 k instructions for nothing (bench-instructions); real[] ones
-- are half the bytes already.
ALTER TABLE model_select.decisions SET (toast_tuple_target = 8160);
ALTER TABLE model_select.rewards SET (toast_tuple_target = 8160);

CREATE FUNCTION model_select_internal._rewards_resolve() RETURNS trigger
    AS 'MODULE_PATHNAME', 'model_select_rewards_resolve' LANGUAGE C PARALLEL UNSAFE;
CREATE FUNCTION model_select_internal._rewards_apply() RETURNS trigger
    AS 'MODULE_PATHNAME', 'model_select_rewards_apply' LANGUAGE C PARALLEL UNSAFE;

CREATE TRIGGER rewards_resolve BEFORE INSERT ON model_select.rewards
    FOR EACH ROW EXECUTE FUNCTION model_select_internal._rewards_resolve();
CREATE TRIGGER rewards_apply AFTER INSERT ON model_select.rewards
    REFERENCING NEW TABLE AS new_rewards
    FOR EACH STATEMENT EXECUTE FUNCTION model_select_internal._rewards_apply();

-- A reward's decision stays while the reward does, as a foreign key would
-- keep it, without the key's query on every reward insert
-- (src/learning/decision_ref.c): rewards_resolve locks the decision's row
-- FOR KEY SHARE, and decisions_rewarded refuses deleting a decision that a
-- reward references (23503).
CREATE FUNCTION model_select_internal._decisions_rewarded() RETURNS trigger
    AS 'MODULE_PATHNAME', 'model_select_decisions_rewarded' LANGUAGE C PARALLEL UNSAFE;
CREATE TRIGGER decisions_rewarded AFTER DELETE ON model_select.decisions
    FOR EACH ROW EXECUTE FUNCTION model_select_internal._decisions_rewarded();

-- A reward by decision learns its decision's context and tags
-- (src/learning/fold.c), and decision_scores() re-derives a decision from its
-- record, so a decision is never rewritten: an UPDATE would silently
-- desynchronise the learned state from rebuild_state(), a TRUNCATE would
-- orphan the rewards that decisions_rewarded protects.  Only created_at may
-- move (to age decisions for decision_ttl): it is read afresh by every use.
CREATE FUNCTION model_select_internal._decisions_fixed() RETURNS trigger
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    moved model_select.decisions;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        moved := NEW;
        moved.created_at := OLD.created_at;
        IF moved IS NOT DISTINCT FROM OLD THEN
            RETURN NEW;
        END IF;
    END IF;
    RAISE EXCEPTION 'model_select.decisions is a log: % of a decision is not allowed', TG_OP
        USING ERRCODE = '55000',
              DETAIL = 'Its rewards learn its context and tags; only created_at may change.',
              HINT = 'Route a new decision instead; DELETE removes a decision that no reward references.';
END $$;
CREATE TRIGGER decisions_fixed BEFORE UPDATE ON model_select.decisions
    FOR EACH ROW EXECUTE FUNCTION model_select_internal._decisions_fixed();
CREATE TRIGGER decisions_fixed_truncate BEFORE TRUNCATE ON model_select.decisions
    FOR EACH STATEMENT EXECUTE FUNCTION model_select_internal._decisions_fixed();

-- A reward by function call, for routers that forward function calls
-- (PL/Proxy, an RPC layer): the same INSERT, with the caller's rights and
-- the same triggers; returns the reward_id.
CREATE FUNCTION model_select.reward(decision_id bigint, reward float8, cost float8 DEFAULT NULL)
RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO model_select.rewards (decision_id, reward, cost) VALUES ($1, $2, $3) RETURNING reward_id
$$;
CREATE FUNCTION model_select.reward(selector text, arm text, context float8[], reward float8,
                                    cost float8 DEFAULT NULL)
RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO model_select.rewards (selector, arm, context, reward, cost) VALUES ($1, $2, $3, $4, $5)
        RETURNING reward_id
$$;

-- The log is append-only: an UPDATE or TRUNCATE would silently desynchronise
-- the learned state.  (DELETE stays possible, e.g. for drop_selector's
-- cascade; after deleting rewards by hand, run rebuild_state().)
CREATE FUNCTION model_select_internal._rewards_append_only() RETURNS trigger
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION 'model_select.rewards is an append-only log: % is not allowed', TG_OP
        USING ERRCODE = '55000',
              HINT = 'Insert a new reward instead; after deleting rewards, run model_select.rebuild_state().';
END $$;
CREATE TRIGGER rewards_append_only BEFORE UPDATE OR TRUNCATE ON model_select.rewards
    FOR EACH STATEMENT EXECUTE FUNCTION model_select_internal._rewards_append_only();

-- The log's horizon (src/learning/retention.c): rewards past a selector's
-- "retain" are absorbed into their arm's base, the fold of exactly the
-- rewards deleted from the log (a prefix of it in canonical order), and
-- rebuild_state() folds the retained log onto the base.  Dumped (a base is
-- the only copy of what it absorbed); written only by the extension's code.
CREATE TABLE model_select.arm_base (
    arm_id      int PRIMARY KEY,
    selector_id int NOT NULL,
    n           bigint NOT NULL,
    reward_sum  float8 NOT NULL,
    cost_sum    float8 NOT NULL,
    cost_n      bigint NOT NULL,
    spend_sum   float8 NOT NULL,
    spend_n     bigint NOT NULL,
    state       bytea,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (arm_id, selector_id) REFERENCES model_select.arms (arm_id, selector_id)
        ON DELETE CASCADE
);
CREATE INDEX ON model_select.arm_base (selector_id);
ALTER TABLE model_select.arm_base ALTER COLUMN state SET STORAGE EXTERNAL;
SELECT pg_catalog.pg_extension_config_dump('model_select.arm_base', '');

CREATE FUNCTION model_select.rebuild_state(selector text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'model_select_rebuild_state' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

-- Fold every arm's final pending rewards into its checkpoint now; returns
-- the rewards folded.  Scores do not change: readers fold pending rewards.
CREATE FUNCTION model_select.checkpoint(selector text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'model_select_checkpoint' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

-- bkb: resample every arm's dictionary now (Calandriello et al. 2019 (BKB)); returns the
-- number of arms resampled.  55000 unless the selector's policy is bkb.
CREATE FUNCTION model_select.resample(selector text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'model_select_resample' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

SELECT pg_catalog.pg_extension_config_dump('model_select.rewards', 'ORDER BY tx, seq');
SELECT pg_catalog.pg_extension_config_dump('model_select.rewards_reward_id_seq', '');

-- Comments (psql: \dt+, \d+, \df+, \dd).
COMMENT ON TABLE model_select.rewards IS
'The reward log, source of truth of all learned state. Insert (decision_id, reward[, cost]) or (selector, arm, context, reward[, cost]); triggers validate each row; readers fold new rewards in memory and checkpoints store the fold (canonical order: tx, seq). Append-only: UPDATE and TRUNCATE are refused; after a DELETE run rebuild_state().';
COMMENT ON COLUMN model_select.rewards.tags IS 'The tags of a reward without a decision (NULL: none); NULL for a reward by decision_id, whose tags are the decision''s.';
COMMENT ON COLUMN model_select.rewards.selector IS 'Selector name (or taken from the decision).';
COMMENT ON COLUMN model_select.rewards.arm IS 'Arm name (or taken from the decision); the arm must be active.';
COMMENT ON COLUMN model_select.rewards.decision_id IS 'The decision rewarded, if any; at most one reward per decision, which stays while its reward does (triggers, not a foreign key).';
COMMENT ON COLUMN model_select.rewards.context IS 'The context of a reward without a decision; NULL for a reward by decision_id, whose context is the decision''s (stored once; older rows may repeat it).';
COMMENT ON COLUMN model_select.rewards.reward IS 'The observed reward, finite and within the selector''s [reward_min, reward_max].';
COMMENT ON COLUMN model_select.rewards.cost IS 'Optional cost (finite, >= 0), weighted by the setting cost_weight.';
COMMENT ON COLUMN model_select.rewards.selector_id IS 'Filled in by the trigger rewards_resolve.';
COMMENT ON COLUMN model_select.rewards.arm_id IS 'Filled in by the trigger rewards_resolve.';
COMMENT ON COLUMN model_select.rewards.tx IS 'The inserting transaction (set by rewards_resolve whatever the client writes): the log is folded in (tx, seq) order.';
COMMENT ON COLUMN model_select.rewards.seq IS 'The row''s place among its transaction''s rows, in insertion order (set by rewards_resolve whatever the client writes): the log is folded in (tx, seq) order.';

COMMENT ON FUNCTION model_select_internal._rewards_resolve() IS
'Trigger function of rewards_resolve (BEFORE INSERT, each row): completes and validates a reward row.';
COMMENT ON FUNCTION model_select_internal._rewards_apply() IS
'Trigger function of rewards_apply (AFTER INSERT, each statement): checkpoints the arms that reach model_select.checkpoint_threshold final pending rewards, without waiting for a busy arm.';
COMMENT ON FUNCTION model_select_internal._decisions_rewarded() IS
'Trigger function of decisions_rewarded (AFTER DELETE, each row): refuses deleting a decision that a reward references (23503), as the latest snapshot sees the log.';
COMMENT ON FUNCTION model_select_internal._rewards_append_only() IS
'Trigger function of rewards_append_only: refuses UPDATE and TRUNCATE of the reward log (55000).';
COMMENT ON TRIGGER rewards_resolve ON model_select.rewards IS 'Completes and validates each reward row.';
COMMENT ON TRIGGER rewards_apply ON model_select.rewards IS 'Checkpoints arms with many pending rewards.';
COMMENT ON TRIGGER rewards_append_only ON model_select.rewards IS 'Keeps the reward log append-only.';
COMMENT ON TRIGGER decisions_rewarded ON model_select.decisions IS 'Keeps the decision of every reward by decision (in place of a foreign key).';
COMMENT ON FUNCTION model_select_internal._decisions_fixed() IS
'Trigger function of decisions_fixed and decisions_fixed_truncate: refuses TRUNCATE of the decision log and an UPDATE of a decision other than of its created_at (55000).';
COMMENT ON TRIGGER decisions_fixed ON model_select.decisions IS 'Keeps every decision as it was logged (but its created_at).';
COMMENT ON TRIGGER decisions_fixed_truncate ON model_select.decisions IS 'Keeps the decision log from being truncated.';

COMMENT ON TABLE model_select.arm_base IS
'Per arm, the base of its log: the fold of the rewards that retention absorbed and deleted (a prefix of the log in canonical order), under the selector''s current settings, with their totals. rebuild_state() folds the retained log onto it. Dumped; written only by the extension as its owner.';
COMMENT ON COLUMN model_select.arm_base.n IS 'Rewards absorbed; reward_sum, cost_sum, cost_n, spend_sum and spend_n are their totals, as arm_state''s are of the rewards it folded.';
COMMENT ON COLUMN model_select.arm_base.state IS 'The fold of the absorbed rewards in binary form (layout in src/model/state.h).';
COMMENT ON COLUMN model_select.arm_base.updated_at IS 'When the base last absorbed rewards.';

COMMENT ON FUNCTION model_select.reward(bigint, float8, float8) IS
'Rewards a decision: INSERT INTO rewards (decision_id, reward, cost), with the caller''s rights and the same checks; returns the reward_id. 42704 when this server holds no such decision.';
COMMENT ON FUNCTION model_select.reward(text, text, float8[], float8, float8) IS
'A reward without a decision: INSERT INTO rewards (selector, arm, context, reward, cost), with the caller''s rights and the same checks; returns the reward_id.';
COMMENT ON FUNCTION model_select.rebuild_state(text) IS
'Recomputes every arm''s checkpoint from scratch from its reward log in (tx, seq) order, the definition of the state (after deleting rewards, or to repair a state); returns the number of rewards folded.';
COMMENT ON FUNCTION model_select.checkpoint(text) IS
'Folds every arm''s final pending rewards into its stored checkpoint now (scores do not change); returns the number of rewards folded.';
COMMENT ON FUNCTION model_select.resample(text) IS
'For a bkb selector: resamples every arm''s dictionary now; returns the number of arms resampled.';
