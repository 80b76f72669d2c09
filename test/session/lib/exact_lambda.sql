-- test/session/lib/exact_lambda.sql (pacer_reuse.sh, standby.sh): for selectors with a
-- budget of 0.5, pace 10, reward range [0, 1] and pending_horizon h (default 1,000), the
-- pacer's λ for the next decision of selector sel from the whole log (pacer.c):
-- max(0, λ̄ + (1/0.5)·(C + P − 0.5·(N + Np)) / (10·0.5)), C and N the costs and
-- number of the rewards of sel's decisions, P and Np the mean costs of the arms of
-- the newest h decisions without a reward and their number, λ̄ the mean λ
-- those h logged (each at most 1/0.5)
CREATE FUNCTION exact_lambda(sel text, h int DEFAULT 1000) RETURNS float8 LANGUAGE sql AS $$
    WITH dec AS (SELECT d.* FROM model_select.decisions d JOIN model_select.selectors s USING (selector_id)
                  WHERE s.name = sel),
         mean AS (SELECT r.arm_id, avg(r.cost) AS mean FROM model_select.rewards r
                   WHERE r.arm_id IN (SELECT arm_id FROM model_select.arms a JOIN model_select.selectors s
                                        USING (selector_id) WHERE s.name = sel) AND r.cost IS NOT NULL GROUP BY 1),
         win AS (SELECT * FROM dec ORDER BY created_at DESC, decision_id DESC LIMIT h),
         spend AS (SELECT coalesce(sum(r.cost), 0) AS c, count(r.cost) AS n
                     FROM dec JOIN model_select.rewards r USING (decision_id)),
         pend AS (SELECT coalesce(sum(m.mean), 0) AS c, count(m.mean) AS n FROM win w JOIN mean m USING (arm_id)
                   WHERE NOT EXISTS (SELECT FROM model_select.rewards r WHERE r.decision_id = w.decision_id)),
         lam AS (SELECT coalesce(avg(least(cost_weight, 2)), 0) AS l FROM win)
    SELECT greatest(0, lam.l + 2 * (spend.c + pend.c - 0.5 * (spend.n + pend.n)) / (10 * 0.5))
      FROM spend, pend, lam $$;
