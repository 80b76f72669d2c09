-- model_select confidence benchmark (make bench-confidence), part 1: the
-- cost of each confidence bound, as ratios to amm measured in this session.
-- Per policy (d = 384, one arm) and bound: the arm learns n - 10 rewards in
-- one INSERT, then 10 single-reward INSERTs are timed (update), the first
-- scores() call after them decodes the new state (decode), and 200 more
-- scores() calls (2,000 for lin_ucb and rff_ucb) are timed (scores).  The issue's target: dmm's scores() at
-- most 6x amm's at n = 1,000.
\set ON_ERROR_STOP 1
\pset footer off
CREATE EXTENSION IF NOT EXISTS model_select;
SET client_min_messages = error;

CREATE TEMP TABLE stream AS
SELECT round AS id, context, reward[1] AS reward
  FROM model_select.synthetic_clusters(2300, 384, 2, 4, 5, 0.1);
CREATE TEMP TABLE probes AS SELECT id, context FROM stream WHERE id > 2100 AND id <= 2300;
CREATE TEMP TABLE cost (policy text, confidence text, n int, update_ms float8, decode_ms float8,
                        scores_ms float8, state_bytes bigint);

CREATE FUNCTION pg_temp.measure(pol text, kernel text, conf text, target int) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    sel text := format('c_%s_%s_%s', pol, conf, target);
    settings jsonb := jsonb_build_object('confidence', conf)
                      || CASE WHEN pol = 'rff_ucb' THEN '{"features": 200}'::jsonb ELSE '{}' END;
    -- the cheap policies' 200 probes are scored 10 times so that timer
    -- noise does not dominate
    reps int := CASE WHEN pol = 'pak_ucb' THEN 1 ELSE 10 END;
    t0 timestamptz;
    upd float8;
    dec float8;
    sc float8;
    r record;
    s record;
BEGIN
    PERFORM model_select.create_selector(sel, 384, ARRAY['a'], pol, kernel, settings, 1);
    INSERT INTO model_select.rewards(selector, arm, context, reward)
    SELECT sel, 'a', context, reward FROM stream WHERE id <= target - 10 ORDER BY id;
    t0 := clock_timestamp();
    FOR r IN SELECT * FROM stream WHERE id > target - 10 AND id <= target ORDER BY id LOOP
        INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES (sel, 'a', r.context, r.reward);
    END LOOP;
    upd := extract(epoch FROM clock_timestamp() - t0) * 1000 / 10;
    t0 := clock_timestamp();
    PERFORM * FROM model_select.scores(sel, (SELECT context FROM stream WHERE id = 2100));
    dec := extract(epoch FROM clock_timestamp() - t0) * 1000;
    t0 := clock_timestamp();
    FOR rep IN 1..reps LOOP
        FOR r IN SELECT * FROM probes ORDER BY id LOOP
            SELECT * INTO s FROM model_select.scores(sel, r.context);
        END LOOP;
    END LOOP;
    sc := extract(epoch FROM clock_timestamp() - t0) * 1000 / (200 * reps);
    INSERT INTO cost SELECT pol, conf, target, upd, dec, sc, state_bytes
      FROM model_select.arm_stats WHERE selector = sel;
    PERFORM model_select.drop_selector(sel);
END
$$;

SELECT pg_temp.measure(p.pol, p.kernel, c, n)
  FROM (VALUES ('pak_ucb', 'rbf'), ('lin_ucb', NULL), ('rff_ucb', 'rbf')) p(pol, kernel),
       unnest(ARRAY['fixed', 'ay', 'igp', 'amm', 'dmm', 'cmm']) c,
       unnest(ARRAY[1000, 2000]) n
 WHERE n = 1000 OR p.pol = 'pak_ucb';

\echo
\echo 'Cost per bound (ms); x amm = ratio to amm of the same policy and n'
SELECT c.policy, c.confidence, c.n,
       round(c.update_ms::numeric, 2) AS update_ms, round(c.decode_ms::numeric, 2) AS decode_ms,
       round(c.scores_ms::numeric, 3) AS scores_ms,
       round((c.scores_ms / a.scores_ms)::numeric, 2) AS "scores x amm",
       round((c.decode_ms / a.decode_ms)::numeric, 1) AS "decode x amm",
       pg_size_pretty(c.state_bytes) AS state
  FROM cost c JOIN cost a ON a.policy = c.policy AND a.n = c.n AND a.confidence = 'amm'
 ORDER BY c.policy, c.n, array_position(ARRAY['fixed', 'ay', 'igp', 'amm', 'dmm', 'cmm'], c.confidence);
