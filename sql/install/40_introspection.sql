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
  -- without a checkpoint (a restore) the arm's base, if any, then the whole log
  LEFT JOIN model_select.arm_base b ON b.arm_id = a.arm_id AND st.arm_id IS NULL
  CROSS JOIN LATERAL (SELECT coalesce(st.n, b.n, 0) AS n, coalesce(st.reward_sum, b.reward_sum, 0) AS reward_sum,
                             coalesce(st.cost_sum, b.cost_sum, 0) AS cost_sum,
                             coalesce(st.cost_n, b.cost_n, 0) AS cost_n) c
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
