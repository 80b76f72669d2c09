-- Statistics: per selector and arm, decisions and rewards since the last
-- stats_reset(), counted from the logs (they are the truth: every backend
-- and a restored dump count the same).  A reset keeps the logs: it records
-- the highest decision_id and reward_id of the selector, and only later rows
-- count.
CREATE TABLE model_select.stats_resets (
    selector_id int PRIMARY KEY REFERENCES model_select.selectors ON DELETE CASCADE,
    decision_id bigint NOT NULL,
    reward_id   bigint NOT NULL,
    reset_at    timestamptz NOT NULL
);
SELECT pg_catalog.pg_extension_config_dump('model_select.stats_resets', '');

-- Server-wide calls and latency of select_model() and route() per selector
-- and arm, from shared memory (src/routing/latency.c); no rows unless preloaded.
CREATE FUNCTION model_select._latency(OUT selector text, OUT arm text,
    OUT selections bigint, OUT select_ms float8, OUT select_ms_max float8,
    OUT routes bigint, OUT route_ms float8, OUT route_ms_max float8) RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'model_select_latency' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION model_select_internal._latency_reset(selector text) RETURNS void
    AS 'MODULE_PATHNAME', 'model_select_latency_reset' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

-- With the reader's rights, as arm_stats (row-level security).
CREATE VIEW model_select.stats WITH (security_invoker = true) AS
SELECT s.name AS selector, a.name AS arm, a.ordinal,
       d.decisions, r.rewards, r.reward_sum, r.cost_sum,
       d.last_decision, r.last_reward,
       l.selections, l.select_ms / nullif(l.selections, 0) AS select_ms_mean, l.select_ms_max,
       l.routes, l.route_ms / nullif(l.routes, 0) AS route_ms_mean, l.route_ms_max,
       rs.reset_at AS stats_reset
  FROM model_select.selectors s
  JOIN model_select.arms a USING (selector_id)
  LEFT JOIN model_select.stats_resets rs USING (selector_id)
  LEFT JOIN model_select._latency() l ON l.selector = s.name AND l.arm = a.name
  CROSS JOIN LATERAL (
        SELECT count(*) AS decisions, max(dl.created_at) AS last_decision
          FROM model_select.decisions dl
         WHERE dl.selector_id = a.selector_id AND dl.arm_id = a.arm_id
           AND dl.decision_id > coalesce(rs.decision_id, 0)) d
  CROSS JOIN LATERAL (
        SELECT count(*) AS rewards, coalesce(sum(rw.reward), 0) AS reward_sum,
               coalesce(sum(rw.cost), 0) AS cost_sum, max(rw.created_at) AS last_reward
          FROM model_select.rewards rw
         WHERE rw.arm_id = a.arm_id AND rw.reward_id > coalesce(rs.reward_id, 0)) r;

-- stats_reset: the C entry (src/model/admin.c) checks the admin right, then
-- runs this body as the extension owner.
CREATE FUNCTION model_select_internal._stats_reset(selector text) RETURNS timestamptz
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    sid int;
BEGIN
    SELECT s.selector_id INTO sid FROM model_select.selectors s WHERE s.name = selector;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'selector "%" does not exist', selector USING ERRCODE = '42704';
    END IF;
    INSERT INTO model_select.stats_resets AS t (selector_id, decision_id, reward_id, reset_at)
    VALUES (sid,
            (SELECT coalesce(max(d.decision_id), 0) FROM model_select.decisions d WHERE d.selector_id = sid),
            (SELECT coalesce(max(r.reward_id), 0) FROM model_select.rewards r WHERE r.selector_id = sid),
            now())
    ON CONFLICT (selector_id) DO UPDATE
       SET decision_id = excluded.decision_id, reward_id = excluded.reward_id, reset_at = excluded.reset_at;
    PERFORM model_select_internal._latency_reset(selector);
    RETURN now();
END $$;
CREATE FUNCTION model_select.stats_reset(selector text) RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'model_select_admin_call' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON TABLE model_select.stats_resets IS
'Per selector, where stats_reset() last reset its statistics: the highest decision_id and reward_id then; model_select.stats counts later rows.';
COMMENT ON VIEW model_select.stats IS
'Per selector and arm, since the last stats_reset(): decisions (route(), route_batch(log => true)), rewards, their sum and the sum of costs, the last decision''s and reward''s time, counted from the logs (the same in every session); with shared_preload_libraries also the server''s select_model() and route() calls and their mean and largest latency in milliseconds (else NULL).';
COMMENT ON FUNCTION model_select.stats_reset(text) IS
'Resets the selector''s statistics in model_select.stats (the logs stay); returns the time of the reset. Needs the admin right.';
COMMENT ON FUNCTION model_select._latency() IS
'Internal: calls, total and largest milliseconds of select_model() and route() per selector and chosen arm since the server started or stats_reset(), from shared memory (none unless preloaded).';
COMMENT ON FUNCTION model_select_internal._latency_reset(text) IS
'Internal: forget the selector''s latency figures (stats_reset()).';
COMMENT ON FUNCTION model_select_internal._stats_reset(text) IS
'Internal: the body of stats_reset(), run as the extension owner once the caller''s admin right is checked.';
