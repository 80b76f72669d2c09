-- Learning: the reward log, the triggers that fold it into arm_state, and
-- the functions that re-derive the state from the log.

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

CREATE FUNCTION model_select.rebuild_state(selector text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'model_select_rebuild_state' LANGUAGE C VOLATILE STRICT;

-- bkb: resample every arm's dictionary now (spec/003.md §2.3); returns the
-- number of arms resampled.  55000 unless the selector's policy is bkb.
CREATE FUNCTION model_select.resample(selector text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'model_select_resample' LANGUAGE C VOLATILE STRICT;

SELECT pg_catalog.pg_extension_config_dump('model_select.rewards', '');
SELECT pg_catalog.pg_extension_config_dump('model_select.rewards_reward_id_seq', '');
