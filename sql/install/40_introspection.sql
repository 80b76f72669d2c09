-- Introspection: per-arm statistics and the drift detector.

-- Per-arm introspection.
CREATE VIEW model_select.arm_stats AS
SELECT s.name AS selector, a.name AS arm, a.ordinal, a.active, st.n,
       CASE WHEN st.n > 0 THEN st.reward_sum / st.n END AS mean_reward,
       CASE WHEN st.cost_n > 0 THEN st.cost_sum / st.cost_n END AS mean_cost,
       st.version, octet_length(st.state) AS state_bytes, st.updated_at
  FROM model_select.selectors s
  JOIN model_select.arms a USING (selector_id)
  JOIN model_select.arm_state st USING (arm_id);

-- Change detector: per arm, over its last `recent` rewarded decisions, the
-- mean reward observed vs the mean the model predicted when it decided.  A
-- gap many standard errors wide means the arm's world has moved: consider a
-- window, a discount or restart_every (see README).
CREATE FUNCTION model_select.drift(selector text, recent int DEFAULT 100)
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
             ORDER BY rw.reward_id DESC
             LIMIT greatest(recent, 1)) r ON true
     WHERE s.name = drift.selector
     GROUP BY a.name, a.ordinal
     ORDER BY a.ordinal
$$;

-- Comments (psql: \dv+, \d+, \df+, \dd).
COMMENT ON VIEW model_select.arm_stats IS
'Per arm: rewards learned, mean reward, mean cost, state version and size.';
COMMENT ON COLUMN model_select.arm_stats.mean_reward IS 'reward_sum / n; NULL while n = 0.';
COMMENT ON COLUMN model_select.arm_stats.mean_cost IS 'Mean cost over the rewards that had a cost.';
COMMENT ON COLUMN model_select.arm_stats.state_bytes IS 'Size of the stored state in bytes.';

COMMENT ON FUNCTION model_select.drift(text, int) IS
'Change detector: per arm, over its last `recent` rewarded decisions, the mean observed reward vs the mean predicted at decision time, their gap and its z score (|z| >= 3: the arm no longer behaves as it used to).';
