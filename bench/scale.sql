-- model_select scale benchmark (make bench-scale): per policy, the cost of
-- one reward update, of one scores() call and the state size of an arm at
-- n = 500, 1,000, 2,000 and 4,000 rewards (d = 384), with the ratio between
-- successive n.  Each arm is first loaded with n - 10 rewards in one INSERT
-- (learnt from scratch), then 10 single-reward INSERTs are timed, then 20
-- scores() calls.
\set ON_ERROR_STOP 1
\pset footer off
CREATE EXTENSION IF NOT EXISTS model_select;

CREATE TEMP TABLE stream AS
SELECT round AS id, context, reward[1] AS reward
  FROM model_select.synthetic_clusters(4100, 384, 2, 4, 5, 0.1);
CREATE TEMP TABLE scale (policy text, n int, update_ms float8, scores_ms float8, state_bytes bigint);

CREATE FUNCTION pg_temp.measure(pol text, settings jsonb, target int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    sel text := format('s_%s_%s', pol, target);
    t0 timestamptz;
    upd float8;
    sc float8;
    r record;
    s record;
BEGIN
    PERFORM model_select.create_selector(sel, 384, ARRAY['a'], pol, NULL, settings, 1);
    INSERT INTO model_select.rewards(selector, arm, context, reward)
    SELECT sel, 'a', context, reward FROM stream WHERE id <= target - 10 ORDER BY id;
    t0 := clock_timestamp();
    FOR r IN SELECT * FROM stream WHERE id > target - 10 AND id <= target ORDER BY id LOOP
        INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES (sel, 'a', r.context, r.reward);
    END LOOP;
    upd := extract(epoch FROM clock_timestamp() - t0) * 1000 / 10;
    -- the first call decodes the new state; time the 20 after it
    PERFORM * FROM model_select.scores(sel, (SELECT context FROM stream WHERE id = 4001));
    t0 := clock_timestamp();
    FOR r IN SELECT * FROM stream WHERE id > 4001 AND id <= 4021 LOOP
        SELECT * INTO s FROM model_select.scores(sel, r.context);
    END LOOP;
    sc := extract(epoch FROM clock_timestamp() - t0) * 1000 / 20;
    INSERT INTO scale SELECT pol, target, upd, sc, state_bytes FROM model_select.arm_stats WHERE selector = sel;
    PERFORM model_select.drop_selector(sel);
END $$;

SELECT pg_temp.measure(p.policy, p.settings::jsonb, n)
  FROM (VALUES ('pak_ucb', '{"cap": 4000}'), ('rff_ucb', '{"features": 200}'),
               ('bkb', '{"cap": 4000}'), ('lin_ucb', '{}')) p(policy, settings),
       unnest(ARRAY[500, 1000, 2000, 4000]) n;

SELECT policy, n,
       round(update_ms::numeric, 2) AS update_ms,
       round((update_ms / lag(update_ms) OVER w)::numeric, 2) AS update_ratio,
       round(scores_ms::numeric, 3) AS scores_ms,
       round((scores_ms / lag(scores_ms) OVER w)::numeric, 2) AS scores_ratio,
       pg_size_pretty(state_bytes) AS state,
       round((state_bytes::numeric / lag(state_bytes) OVER w), 2) AS state_ratio
  FROM scale WINDOW w AS (PARTITION BY policy ORDER BY n)
 ORDER BY array_position(ARRAY['pak_ucb', 'rff_ucb', 'bkb', 'lin_ucb'], policy), n;
