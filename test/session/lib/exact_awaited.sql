-- test/session/lib/exact_awaited.sql (pacer_random.sh): for a selector with count_pending and
-- pending_horizon h, the rewards each arm awaits at its next decision from the whole log
-- (awaited.c), per arm in ordinal order: of the newest D <= 2h decisions (by created_at, then
-- decision_id) the newest w = min(h, ceil(D/2)), m_a of arm a's without a reward and R with one;
-- of the D - w before them a share q rewarded; e_a = m_a * clamp((q*w - R - s) / sum(m), 0, 1),
-- s = sqrt(q(1 - q)(w + w^2/(D - w))); all 0 when no decision is older than the w or none of
-- the w lacks a reward
CREATE FUNCTION exact_awaited(sel text, h int) RETURNS float8[] LANGUAGE sql AS $$
    WITH dec AS (SELECT d.decision_id, d.arm_id,
                        row_number() OVER (ORDER BY d.created_at DESC, d.decision_id DESC) AS k,
                        EXISTS (SELECT FROM model_select.rewards r WHERE r.decision_id = d.decision_id) AS rewarded
                   FROM model_select.decisions d JOIN model_select.selectors s USING (selector_id)
                  WHERE s.name = sel),
         win AS (SELECT * FROM dec WHERE k <= 2 * h),
         size AS (SELECT count(*) AS d, least(h, (count(*) + 1) / 2) AS w FROM win),
         counts AS (SELECT count(*) FILTER (WHERE k <= w AND rewarded) AS r_new,
                           count(*) FILTER (WHERE k <= w AND NOT rewarded) AS pending,
                           count(*) FILTER (WHERE k > w) AS d_old,
                           count(*) FILTER (WHERE k > w AND rewarded) AS r_old, max(w) AS w
                      FROM win, size),
         share AS (SELECT CASE WHEN d_old = 0 OR pending = 0 THEN 0
                          ELSE least(greatest((q * w - r_new - sqrt(q * (1 - q) * (w + w::float8 * w / d_old)))
                                              / pending, 0), 1) END AS share
                     FROM (SELECT *, r_old::float8 / nullif(d_old, 0) AS q FROM counts) c)
    SELECT array_agg(share.share * (SELECT count(*) FROM win, size
                                     WHERE win.arm_id = a.arm_id AND win.k <= size.w AND NOT win.rewarded)
                     ORDER BY a.ordinal)
      FROM model_select.arms a JOIN model_select.selectors s USING (selector_id), share
     WHERE s.name = sel $$;
