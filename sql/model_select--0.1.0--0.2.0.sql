-- model_select 0.1.0 -> 0.2.0.

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

-- With dim: also refuses settings whose arm states would not fit (22023).
CREATE FUNCTION model_select.resolve_settings(policy text, kernel text, settings jsonb, dim int)
    RETURNS jsonb
    AS 'MODULE_PATHNAME', 'model_select_resolve_settings' LANGUAGE C IMMUTABLE;

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
       SET settings = model_select.resolve_settings(s.policy, s.kernel, s.settings || alter_selector.settings, s.dim),
           settings_version = sel.settings_version + 1
     WHERE sel.selector_id = s.selector_id;
    RETURN model_select.rebuild_state(name);
END $$;

CREATE OR REPLACE FUNCTION model_select.drift(selector text, recent int DEFAULT 100)
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

-- Fold every arm's final pending rewards into its checkpoint now; returns
-- the rewards folded.  Scores do not change: readers fold pending rewards.
CREATE FUNCTION model_select.checkpoint(selector text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'model_select_checkpoint' LANGUAGE C VOLATILE STRICT;

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

-- Re-derive every arm's state from the log under the new layout.
SELECT model_select.rebuild_state(name) FROM model_select.selectors ORDER BY selector_id;
