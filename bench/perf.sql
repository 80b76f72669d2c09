-- model_select performance benchmark (make bench-perf).  Every figure is a
-- ratio against a baseline measured in the same session, so it says how
-- much the extension adds, not how fast this machine is.
\set ON_ERROR_STOP 1
\pset footer off
CREATE EXTENSION IF NOT EXISTS model_select;
SET client_min_messages = notice;

CREATE TEMP TABLE prompts AS
SELECT round AS id, context::real[] AS embedding, reward
  FROM model_select.synthetic_clusters(100000, 384, 3, NULL, 1, 0.1);
CREATE TEMP TABLE results (benchmark text, baseline_ms float8, measured_ms float8, n bigint, note text);

\ir timing.sql

-- Selectors with 3 arms, d = 384, trained on 500 rewards per arm.
DO $$
DECLARE pol text;
BEGIN
    FOREACH pol IN ARRAY ARRAY['pak_ucb', 'lin_ucb', 'greedy'] LOOP
        PERFORM model_select.create_selector('b_' || pol, 384, ARRAY['a1','a2','a3'], pol, NULL, '{}', 1);
        INSERT INTO model_select.rewards(selector, arm, context, reward)
        SELECT 'b_' || pol, 'a' || (1 + id % 3), embedding, reward[1 + id % 3] FROM prompts WHERE id <= 1500;
    END LOOP;
END $$;

SELECT clock_timestamp()::time(0) AS at \gset
\echo :at == routing 100,000 rows in one statement vs a trivial function over the same rows
DO $$
DECLARE pol text; base float8; m float8;
BEGIN
    base := pg_temp.ms('SELECT count(array_length(embedding, 1)) FROM prompts');
    FOREACH pol IN ARRAY ARRAY['pak_ucb', 'lin_ucb', 'greedy'] LOOP
        m := pg_temp.ms(format('SELECT count(model_select.select_model(%L, embedding)) FROM prompts', 'b_' || pol));
        INSERT INTO results VALUES ('select_model x 100k, ' || pol || ' (500 rewards/arm)', base, m, 100000, NULL);
    END LOOP;
END $$;

SELECT clock_timestamp()::time(0) AS at \gset
\echo :at == one decision: route() + reward insert, per round, vs the same statements on plain tables
DO $$
DECLARE pol text; t0 timestamptz; base float8; m float8; d record; r record;
BEGIN
    CREATE TEMP TABLE plain_decisions (id bigserial, ctx real[], score float8);
    CREATE TEMP TABLE plain_rewards (id bigserial, decision bigint, reward float8);
    t0 := clock_timestamp();
    FOR r IN SELECT * FROM prompts WHERE id BETWEEN 2001 AND 2500 LOOP
        INSERT INTO plain_decisions(ctx, score) VALUES (r.embedding, 0) RETURNING id INTO d;
        INSERT INTO plain_rewards(decision, reward) VALUES (d.id, r.reward[1]);
    END LOOP;
    base := extract(epoch FROM clock_timestamp() - t0) * 1000;
    FOREACH pol IN ARRAY ARRAY['pak_ucb', 'lin_ucb', 'greedy'] LOOP
        t0 := clock_timestamp();
        FOR r IN SELECT * FROM prompts WHERE id BETWEEN 2001 AND 2500 LOOP
            SELECT * INTO d FROM model_select.route('b_' || pol, r.embedding);
            INSERT INTO model_select.rewards(decision_id, reward) VALUES (d.decision_id, r.reward[substr(d.arm, 2)::int]);
        END LOOP;
        m := extract(epoch FROM clock_timestamp() - t0) * 1000;
        INSERT INTO results VALUES ('route + reward x 500, ' || pol || ' (500-667 rewards/arm)', base, m, 500,
                                    round((m / 500)::numeric, 3) || ' ms per decision');
    END LOOP;
END $$;

SELECT clock_timestamp()::time(0) AS at \gset
\echo :at == reward ingest: INSERT ... SELECT of 3,000 rewards, with vs without the trigger; WAL per reward
CREATE TEMP TABLE wal (pol text, bytes numeric);
DO $$
DECLARE p text; base float8; m float8; lsn pg_lsn;
BEGIN
    CREATE TABLE public.bench_plain_rewards (LIKE model_select.rewards INCLUDING DEFAULTS);
    base := pg_temp.ms($q$INSERT INTO public.bench_plain_rewards(selector, arm, context, reward, selector_id, arm_id, tx)
                          SELECT 'x', 'a1', embedding, reward[1], 1, 1, pg_current_xact_id()
                            FROM prompts WHERE id BETWEEN 3001 AND 6000$q$);
    FOREACH p IN ARRAY ARRAY['lin_ucb', 'greedy'] LOOP
        lsn := pg_current_wal_insert_lsn();
        m := pg_temp.ms(format($q$INSERT INTO model_select.rewards(selector, arm, context, reward)
                                  SELECT %L, 'a' || (1 + id %% 3), embedding, reward[1 + id %% 3]
                                    FROM prompts WHERE id BETWEEN 3001 AND 6000$q$, 'b_' || p));
        INSERT INTO wal VALUES (p, pg_wal_lsn_diff(pg_current_wal_insert_lsn(), lsn) / 3000);
        INSERT INTO results VALUES ('reward ingest x 3000, ' || p, base, m, 3000,
                                    round((SELECT bytes FROM wal w WHERE w.pol = p)) || ' WAL bytes/reward, state ' ||
                                    (SELECT max(state_bytes) FROM model_select.arm_stats WHERE selector = 'b_' || p) || ' bytes/arm');
    END LOOP;
    DROP TABLE public.bench_plain_rewards;
END $$;

SELECT clock_timestamp()::time(0) AS at \gset
\echo :at == exact pak_ucb update cost as an arm grows: per-reward time at n and 2n
DO $$
DECLARE target int; t0 timestamptz; prev float8; m float8;
BEGIN
    PERFORM model_select.create_selector('grow', 384, ARRAY['a'], 'pak_ucb', NULL, '{"cap": 5000}', 1);
    FOREACH target IN ARRAY ARRAY[250, 500, 1000, 2000] LOOP
        INSERT INTO model_select.rewards(selector, arm, context, reward)
        SELECT 'grow', 'a', embedding, reward[1] FROM prompts
         WHERE id > 10000 + (SELECT coalesce(max(n), 0) FROM model_select.arm_stats WHERE selector = 'grow')
           AND id <= 10000 + target - 50;
        t0 := clock_timestamp();
        INSERT INTO model_select.rewards(selector, arm, context, reward)
        SELECT 'grow', 'a', embedding, reward[1] FROM prompts WHERE id > 10000 + target - 50 AND id <= 10000 + target;
        m := extract(epoch FROM clock_timestamp() - t0) * 1000 / 50;
        INSERT INTO results VALUES ('pak_ucb, 50 rewards in one INSERT at n = ' || target, prev, m, 50,
                                    round((SELECT state_bytes FROM model_select.arm_stats WHERE selector = 'grow') / 1048576.0, 1) || ' MiB state');
        prev := m;
    END LOOP;
END $$;

SELECT benchmark, round(baseline_ms::numeric, 1) AS baseline_ms, round(measured_ms::numeric, 1) AS measured_ms,
       round((measured_ms / nullif(baseline_ms, 0))::numeric, 2) AS ratio,
       round((n / measured_ms * 1000)::numeric) AS per_second, note
  FROM results;
