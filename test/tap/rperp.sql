-- R-PERP probing runs (Iwazaki & Takeno (R-PERP), §5.5, §6 A/B): batch schedule,
-- restarts, nested active sets, y-free seeded design and permutation, the
-- per-batch GP fit against a dense reference, learning on a pool with one
-- clearly best (prompt, model) pair, and bad input.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(90);
SELECT setseed(0.42);

-- 6 prompts on an arc × 2 models; 'strong' is 0.5 better everywhere.
CREATE TEMP TABLE pool12 AS
SELECT g, m AS model, ARRAY[cos(g * 0.3), sin(g * 0.3)]::float8[] AS prompt,
       0.8 - 0.5 * (g * 0.3 - 0.9) ^ 2 - CASE WHEN m = 'weak' THEN 0.5 ELSE 0 END AS f
  FROM generate_series(0, 5) g, unnest(ARRAY['strong', 'weak']) m;
-- 10 prompts × 2 models; item (strong, g = 5) is best by 0.125.
CREATE TEMP TABLE pool20 AS
SELECT g, m AS model, ARRAY[cos(g * 0.25), sin(g * 0.25)]::float8[] AS prompt,
       0.9 - 2 * (g * 0.25 - 1.25) ^ 2 - CASE WHEN m = 'weak' THEN 0.4 ELSE 0 END AS f
  FROM generate_series(0, 9) g, unnest(ARRAY['strong', 'weak']) m;

CREATE FUNCTION pg_temp.gauss() RETURNS float8 LANGUAGE sql VOLATILE AS $$
    SELECT sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())
$$;
-- True score of each item of a run, by matching its (prompt, model) in a pool table.
CREATE TEMP TABLE truth (run text, item_id int, f float8, PRIMARY KEY (run, item_id));
CREATE FUNCTION pg_temp.create(run text, pool text, horizon int, h int, beta float8,
                               settings jsonb, seed bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM model_select.create_probe_run(run, horizon, h, beta,
        format('SELECT prompt, model FROM %I ORDER BY g, model', pool), 'rbf', settings, seed);
    EXECUTE format('INSERT INTO truth SELECT %L, p.item_id, q.f FROM model_select.probe_pool p
                      JOIN model_select.probe_runs r USING (run_id) JOIN %I q USING (prompt, model)
                     WHERE r.name = %L', run, pool, run);
END $$;
-- Status after every report.
CREATE TEMP TABLE log (run text, step int, "interval" int, batch int, active int, pool_size int);
-- Play a run: fetch k queries at a time, report truth + N(0, noise²); stop
-- after `steps` reports or when nothing can be issued.  Returns the reports.
CREATE FUNCTION pg_temp.drive(run text, steps int, k int, noise float8) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    q record;
    done int := 0;
BEGIN
    WHILE done < steps LOOP
        FOR q IN SELECT * FROM model_select.probe_next(run, least(k, steps - done)) LOOP
            PERFORM model_select.probe_report(run, q.item_id,
                (SELECT t.f FROM truth t WHERE t.run = drive.run AND t.item_id = q.item_id) + noise * pg_temp.gauss());
            done := done + 1;
            INSERT INTO log SELECT run, done, s.interval, s.batch, s.active, s.pool_size
              FROM model_select.probe_status(run) s;
        END LOOP;
        EXIT WHEN NOT FOUND;
    END LOOP;
    RETURN done;
END $$;
CREATE FUNCTION pg_temp.sizes(run text, iv int) RETURNS int[] LANGUAGE sql AS $$
    SELECT array_agg(n ORDER BY batch) FROM (
        SELECT pl.batch, count(*)::int AS n FROM model_select.probe_plan pl
          JOIN model_select.probe_runs r USING (run_id)
         WHERE r.name = run AND pl.interval = iv GROUP BY pl.batch) s
$$;
CREATE FUNCTION pg_temp.plan_items(run text, iv int, bt int) RETURNS int[] LANGUAGE sql AS $$
    SELECT array_agg(pl.item_id ORDER BY pl.m) FROM model_select.probe_plan pl
      JOIN model_select.probe_runs r USING (run_id) WHERE r.name = run AND pl.interval = iv AND pl.batch = bt
$$;
CREATE FUNCTION pg_temp.sorted(a int[]) RETURNS int[] LANGUAGE sql AS $$
    SELECT array_agg(x ORDER BY x) FROM unnest(a) x
$$;

-- (1) batch schedule N_j = min(ceil(sqrt(T_i N_{j-1})), T_i - used), N_0 = 1;
-- intervals T_i = min(H, T - (i-1)H); restarts
SELECT pg_temp.create('sched', 'pool12', 250, 100, 2.0, '{"alpha": 0.0025, "bandwidth": 0.5}', 1);
SELECT is(pg_temp.drive('sched', 1000, 7, 0.05), 250, 'a run of horizon 250 takes exactly 250 reports');
SELECT ok((SELECT finished FROM model_select.probe_status('sched')), 'and is then finished');
SELECT is(pg_temp.sizes('sched', 1), ARRAY[10, 32, 57, 1], 'T_i = 100: batches [10, 32, 57, 1] (Iwazaki & Takeno (R-PERP))');
SELECT is(pg_temp.sizes('sched', 2), ARRAY[10, 32, 57, 1], 'second interval restarts the schedule at N_0 = 1');
SELECT is(pg_temp.sizes('sched', 3), ARRAY[8, 20, 22], 'last interval T_3 = 50: [8, 20, 22]');
SELECT is((SELECT max(interval) FROM model_select.probe_plan), 3, 'ceil(T / H) = 3 intervals');
CREATE FUNCTION pg_temp.schedule(t_i int) RETURNS int[] LANGUAGE plpgsql AS $$
DECLARE
    n int := 1;
    used int := 0;
    out int[] := '{}';
BEGIN
    WHILE used < t_i LOOP
        n := least(ceil(sqrt(t_i::numeric * n))::int, t_i - used);
        out := out || n;
        used := used + n;
    END LOOP;
    RETURN out;
END $$;
SELECT is(pg_temp.schedule(1000), ARRAY[32, 179, 424, 365], 'reference schedule T_i = 1000 (Iwazaki & Takeno (R-PERP))');
SELECT is(pg_temp.schedule(5000), ARRAY[71, 596, 1727, 2606], 'reference schedule T_i = 5000');
SELECT is((SELECT array_agg(t ORDER BY interval, batch, m) FROM model_select.probe_plan),
          (SELECT array_agg(g::bigint) FROM generate_series(1, 250) g),
          'query times t = (i-1)H + Σ_{j''<j} N_j'' + m tile 1..T in plan order (A3)');
SELECT is((SELECT count(*) FROM model_select.probe_plan WHERE score IS NULL OR issued_at IS NULL), 0::bigint,
          'every planned query was issued and reported');
SELECT ok((SELECT bool_and(active = pool_size) FROM log WHERE run = 'sched' AND batch = 1),
          'the active set is the whole pool during the first batch of every interval');
SELECT ok((SELECT min(active) < 12 FROM log WHERE run = 'sched' AND interval = 1),
          'items were eliminated in interval 1 (so the reset is not vacuous)');
SELECT is((SELECT count(DISTINCT interval) FROM log WHERE run = 'sched' AND batch = 1 AND active = 12), 3::bigint,
          'every item is active again at the start of intervals 1, 2 and 3');

-- (2) nested active sets; (6) never empty
SELECT is((SELECT count(*) FROM (
              SELECT active, lag(active) OVER (PARTITION BY interval ORDER BY step) AS prev
                FROM log WHERE run = 'sched') s WHERE active > prev), 0::bigint,
          'within an interval the active set only shrinks');
SELECT ok((SELECT min(active) >= 1 FROM log WHERE run = 'sched'), 'the active set is never empty');
SELECT is((SELECT count(*) FROM model_select.probe_pool p JOIN model_select.probe_runs r USING (run_id)
            WHERE r.name = 'sched' AND p.eliminated_after = 3), 0::bigint,
          'no elimination after the last batch of an interval (A8)');
SELECT ok((SELECT bool_and(p.active) FROM model_select.probe_pool p JOIN model_select.probe_runs r USING (run_id)
            JOIN truth t ON t.run = r.name AND t.item_id = p.item_id
           WHERE r.name = 'sched' AND t.f = (SELECT max(f) FROM pool12)),
          'the best item survives every elimination of the last interval');
SELECT ok((SELECT bool_and(p.lcb <= p.ucb AND p.lcb <= (SELECT max(q.lcb) FROM model_select.probe_pool q
                                                           WHERE q.run_id = p.run_id AND q.active))
             FROM model_select.probe_pool p JOIN model_select.probe_runs r USING (run_id)
            WHERE r.name = 'sched' AND p.active AND p.lcb IS NOT NULL)
          AND (SELECT bool_and(p.ucb >= (SELECT max(q.lcb) FROM model_select.probe_pool q
                                          WHERE q.run_id = p.run_id AND q.active))
                 FROM model_select.probe_pool p JOIN model_select.probe_runs r USING (run_id)
                WHERE r.name = 'sched' AND p.active AND p.lcb IS NOT NULL),
          'active items have ucb >= max lcb over the active set');

-- (3) the design is y-free and seeded: same seed, same plan; another seed
-- permutes the same multiset
SELECT pg_temp.create('det1', 'pool12', 120, 120, 1e6, '{"alpha": 0.0025, "bandwidth": 0.5}', 7);
SELECT pg_temp.create('det2', 'pool12', 120, 120, 1e6, '{"alpha": 0.0025, "bandwidth": 0.5}', 7);
SELECT pg_temp.create('det3', 'pool12', 120, 120, 1e6, '{"alpha": 0.0025, "bandwidth": 0.5}', 8);
SELECT is(pg_temp.plan_items('det1', 1, 1), pg_temp.plan_items('det2', 1, 1), 'same seed: same first batch, same order');
SELECT isnt(pg_temp.plan_items('det1', 1, 1), pg_temp.plan_items('det3', 1, 1), 'another seed: another order');
SELECT is(pg_temp.sorted(pg_temp.plan_items('det1', 1, 1)), pg_temp.sorted(pg_temp.plan_items('det3', 1, 1)),
          '... of the same multiset of items (the design does not depend on the seed)');
SELECT is(pg_temp.drive('det1', 1000, 1, 0.0), 120, 'det1 played without noise');
SELECT is(pg_temp.drive('det2', 1000, 5, 1.0), 120, 'det2 played with other scores (noise sd 1)');
SELECT is(pg_temp.drive('det3', 1000, 3, 0.3), 120, 'det3 played');
SELECT is((SELECT array_agg(item_id ORDER BY interval, batch, m) FROM model_select.probe_plan
            WHERE run_id = (SELECT run_id FROM model_select.probe_runs WHERE name = 'det1')),
          (SELECT array_agg(item_id ORDER BY interval, batch, m) FROM model_select.probe_plan
            WHERE run_id = (SELECT run_id FROM model_select.probe_runs WHERE name = 'det2')),
          'with nothing eliminated, different scores give the same plan in every batch (A4: y-free)');
SELECT is((SELECT array_agg(pg_temp.sorted(pg_temp.plan_items('det1', 1, b))::text ORDER BY b) FROM generate_series(1, 4) b),
          (SELECT array_agg(pg_temp.sorted(pg_temp.plan_items('det3', 1, b))::text ORDER BY b) FROM generate_series(1, 4) b),
          'and a different seed the same multiset in every batch');
-- independent items (one model each): the greedy design cycles through the
-- items, ties to the lowest item_id, then repeats
CREATE TEMP TABLE pool5 AS SELECT g, 'm' || g AS model, ARRAY[1.0, g]::float8[] AS prompt, 0.0 AS f
  FROM generate_series(1, 5) g;
SELECT pg_temp.create('indep', 'pool5', 36, 36, 1.0, '{}', 0);
SELECT is(pg_temp.sorted(pg_temp.plan_items('indep', 1, 1)), ARRAY[1, 1, 2, 3, 4, 5],
          'N_1 = 6 over 5 independent items: each once, then the lowest item_id again (repeats allowed)');
-- A5: the order is a uniform permutation: position of item 1 over 200 seeds
CREATE TEMP TABLE pool4 AS SELECT g, 'm' || g AS model, ARRAY[1.0, g]::float8[] AS prompt, 0.0 AS f
  FROM generate_series(1, 4) g;
CREATE TEMP TABLE positions AS
SELECT s, array_position(pg_temp.plan_items('perm' || s, 1, 1), 1) AS pos
  FROM generate_series(1, 200) s, LATERAL pg_temp.create('perm' || s, 'pool4', 16, 16, 1.0, '{}', s) c;
SELECT cmp_ok((SELECT sum((n - 50.0) ^ 2 / 50.0) FROM (SELECT count(*) AS n FROM positions GROUP BY pos) c)::float8,
              '<', 16.27::float8, 'position of an item in the batch is uniform over seeds (chi-square, 3 df, p = 0.001)');
SELECT is((SELECT count(DISTINCT pos) FROM positions), 4::bigint, '... and takes all 4 positions');

-- A6 + dense reference: the elimination GP uses this batch only and equals
-- Eq. 4-5 over the batch (with its repeats)
SELECT pg_temp.create('fitx', 'pool12', 100, 100, 1e6, '{"alpha": 0.05, "bandwidth": 0.8, "normalize": false}', 3);
SELECT pg_temp.create('fity', 'pool12', 100, 100, 1e6, '{"alpha": 0.05, "bandwidth": 0.8, "normalize": false}', 3);
SELECT model_select.probe_report('fitx', q.item_id, random()) FROM model_select.probe_next('fitx', 100) q;
SELECT model_select.probe_report('fity', q.item_id, 5 * random()) FROM model_select.probe_next('fity', 100) q;
CREATE FUNCTION pg_temp.fit(run text) RETURNS TABLE (item_id int, mean float8, sd float8) LANGUAGE sql AS $$
    SELECT p.item_id, p.mean, p.sd FROM model_select.probe_pool p JOIN model_select.probe_runs r USING (run_id)
     WHERE r.name = run ORDER BY p.item_id
$$;
SELECT ok((SELECT max(abs(x.mean - y.mean)) FROM pg_temp.fit('fitx') x JOIN pg_temp.fit('fity') y USING (item_id)) > 0.1,
          'after batch 1 the two runs'' fits differ (different scores)');
SELECT model_select.probe_report('fitx', q.item_id, q.item_id * 0.1) FROM model_select.probe_next('fitx', 100) q;
SELECT model_select.probe_report('fity', q.item_id, q.item_id * 0.1) FROM model_select.probe_next('fity', 100) q;
SELECT is((SELECT batch FROM model_select.probe_status('fitx')), 3, 'fitx is in batch 3');
SELECT cmp_ok((SELECT max(greatest(abs(x.mean - y.mean), abs(x.sd - y.sd)))
                 FROM pg_temp.fit('fitx') x JOIN pg_temp.fit('fity') y USING (item_id)), '<', 1e-12::float8,
              'same batch-2 scores, different batch-1 scores: the same fit (A6: this batch only)');
-- dense reference: k = (exp(-|p - q|² / 2 bw²) + intercept) [same model], (K + λI)⁻¹ by Cholesky
CREATE FUNCTION pg_temp.k(p float8[], a text, q float8[], b text) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN a = b THEN exp(-(SELECT sum((x - y) ^ 2) FROM unnest(p, q) u(x, y)) / (2 * 0.8 * 0.8)) + 1.0
                ELSE 0 END
$$;
CREATE FUNCTION pg_temp.dense(run text, iv int, bt int, lambda float8)
RETURNS TABLE (item_id int, mean float8, sd float8) LANGUAGE plpgsql AS $$
DECLARE
    xs float8[];                -- n × dim, flattened
    ms text[];
    ys float8[];
    n int;
    dim int;
    chol float8[];
    alpha float8[];
    v float8[];
    s float8;
    it record;
BEGIN
    SELECT array_agg(pl.score ORDER BY pl.m), array_agg(p.model ORDER BY pl.m), count(*), max(cardinality(p.prompt))
      INTO ys, ms, n, dim
      FROM model_select.probe_plan pl JOIN model_select.probe_runs r USING (run_id)
      JOIN model_select.probe_pool p ON p.run_id = pl.run_id AND p.item_id = pl.item_id
     WHERE r.name = run AND pl.interval = iv AND pl.batch = bt;
    SELECT array_agg(e ORDER BY pl.m, o) INTO xs
      FROM model_select.probe_plan pl JOIN model_select.probe_runs r USING (run_id)
      JOIN model_select.probe_pool p ON p.run_id = pl.run_id AND p.item_id = pl.item_id
      CROSS JOIN LATERAL unnest(p.prompt) WITH ORDINALITY u(e, o)
     WHERE r.name = run AND pl.interval = iv AND pl.batch = bt;
    chol := array_fill(0.0::float8, ARRAY[n * n]);
    FOR i IN 1 .. n LOOP            -- Cholesky, L by rows
        FOR j IN 1 .. i LOOP
            s := pg_temp.k(xs[(i - 1) * dim + 1 : i * dim], ms[i], xs[(j - 1) * dim + 1 : j * dim], ms[j])
                 + CASE WHEN i = j THEN lambda ELSE 0 END;
            FOR q IN 1 .. j - 1 LOOP
                s := s - chol[(i - 1) * n + q] * chol[(j - 1) * n + q];
            END LOOP;
            chol[(i - 1) * n + j] := CASE WHEN i = j THEN sqrt(s) ELSE s / chol[(j - 1) * n + j] END;
        END LOOP;
    END LOOP;
    alpha := ys;                    -- alpha = L⁻ᵀ L⁻¹ y
    FOR i IN 1 .. n LOOP
        FOR q IN 1 .. i - 1 LOOP alpha[i] := alpha[i] - chol[(i - 1) * n + q] * alpha[q]; END LOOP;
        alpha[i] := alpha[i] / chol[(i - 1) * n + i];
    END LOOP;
    FOR i IN REVERSE n .. 1 LOOP
        FOR q IN i + 1 .. n LOOP alpha[i] := alpha[i] - chol[(q - 1) * n + i] * alpha[q]; END LOOP;
        alpha[i] := alpha[i] / chol[(i - 1) * n + i];
    END LOOP;
    FOR it IN SELECT p.item_id AS id, p.prompt, p.model FROM model_select.probe_pool p
                JOIN model_select.probe_runs r USING (run_id) WHERE r.name = run ORDER BY p.item_id LOOP
        v := '{}';
        mean := 0;
        FOR i IN 1 .. n LOOP
            v[i] := pg_temp.k(it.prompt, it.model, xs[(i - 1) * dim + 1 : i * dim], ms[i]);
            mean := mean + v[i] * alpha[i];
        END LOOP;
        s := pg_temp.k(it.prompt, it.model, it.prompt, it.model);
        FOR i IN 1 .. n LOOP        -- v = L⁻¹ k(X, x)
            FOR q IN 1 .. i - 1 LOOP v[i] := v[i] - chol[(i - 1) * n + q] * v[q]; END LOOP;
            v[i] := v[i] / chol[(i - 1) * n + i];
            s := s - v[i] * v[i];
        END LOOP;
        item_id := it.id;
        sd := sqrt(greatest(s, 0));
        RETURN NEXT;
    END LOOP;
END $$;
SELECT is((SELECT count(*) FROM model_select.probe_plan pl JOIN model_select.probe_runs r USING (run_id)
            WHERE r.name = 'fitx' AND pl.batch = 2), 32::bigint, 'batch 2 has 32 queries over 12 items (repeats)');
SELECT cmp_ok((SELECT max(greatest(abs(x.mean - d.mean), abs(x.sd - d.sd)))
                 FROM pg_temp.fit('fitx') x JOIN pg_temp.dense('fitx', 1, 2, 0.05) d USING (item_id)), '<', 1e-9::float8,
              'the stored fit equals the dense GP posterior (Eq. 4-5) over batch 2 to 1e-9 (A11)');
SELECT cmp_ok((SELECT max(abs(p.lcb - (p.mean - 1e6 * p.sd))) FROM model_select.probe_pool p
                 JOIN model_select.probe_runs r USING (run_id) WHERE r.name = 'fitx'), '<', 1e-6::float8,
              'lcb = mean − beta sd');

-- (4) learning: 20 items, one clearly best pair, noise sd 0.05, T = H = 400
SELECT pg_temp.create('learn', 'pool20', 400, 400, 2.0, '{"alpha": 0.0025, "bandwidth": 0.5}', 11);
SELECT is(pg_temp.drive('learn', 400, 10, 0.05), 400, 'learn: 400 probes');
SELECT ok((SELECT p.active FROM model_select.probe_pool p JOIN truth t ON t.run = 'learn' AND t.item_id = p.item_id
            WHERE p.run_id = (SELECT run_id FROM model_select.probe_runs WHERE name = 'learn')
            ORDER BY t.f DESC LIMIT 1), 'learn: the best (prompt, model) pair is still active');
SELECT cmp_ok((SELECT active FROM model_select.probe_status('learn')), '<=', 10,
              'learn: at least half of the pool was eliminated');
SELECT is((SELECT best_item FROM model_select.probe_status('learn')),
          (SELECT item_id FROM truth WHERE run = 'learn' ORDER BY f DESC LIMIT 1), 'learn: best by lcb is the true best');
SELECT cmp_ok((SELECT count(*) FILTER (WHERE t.f < (SELECT max(f) FROM pool20) - 0.5)
                 FROM model_select.probe_plan pl JOIN truth t ON t.run = 'learn' AND t.item_id = pl.item_id
                WHERE pl.run_id = (SELECT run_id FROM model_select.probe_runs WHERE name = 'learn') AND pl.batch > 1),
              '=', 0::bigint, 'learn: after batch 1 no probe goes to an item 0.5 below the best');

-- drift: at t = 300 the models swap (the weak one becomes 0.4 better).
-- Restarting every H = 400 recovers the new best in interval 2; without a
-- restart (H = T) the items eliminated before the switch never come back.
CREATE FUNCTION pg_temp.swap(run text) RETURNS bigint LANGUAGE sql AS $$
    WITH u AS (
        UPDATE truth t SET f = t.f + CASE p.model WHEN 'weak' THEN 0.4 ELSE -0.4 END
          FROM model_select.probe_pool p JOIN model_select.probe_runs r USING (run_id)
         WHERE r.name = $1 AND t.run = $1 AND t.item_id = p.item_id RETURNING 1)
    SELECT count(*) FROM u
$$;
SELECT pg_temp.create('drift', 'pool20', 800, 400, 2.0, '{"alpha": 0.0025, "bandwidth": 0.5}', 5);
SELECT pg_temp.create('still', 'pool20', 800, 800, 2.0, '{"alpha": 0.0025, "bandwidth": 0.5}', 5);
SELECT is(pg_temp.drive('drift', 300, 10, 0.05) + pg_temp.drive('still', 300, 10, 0.05), 600, 'drift, still: 300 probes each');
SELECT is(pg_temp.swap('drift') + pg_temp.swap('still'), 40::bigint, 'the models swap in both runs');
SELECT is(pg_temp.drive('drift', 500, 10, 0.05) + pg_temp.drive('still', 500, 10, 0.05), 1000, 'then 500 more after the switch');
SELECT is((SELECT best_model FROM model_select.probe_status('drift')), 'weak',
          'drift (H = 400): after the restart the new best model is found');
SELECT is((SELECT best_item FROM model_select.probe_status('drift')),
          (SELECT item_id FROM truth WHERE run = 'drift' ORDER BY f DESC LIMIT 1), '... and the new best item');
SELECT is((SELECT best_model FROM model_select.probe_status('still')), 'strong',
          'still (H = T): the weak model was eliminated before the switch and never returns');

-- async feedback: a batch can be handed out at once; nothing more until it is reported
SELECT pg_temp.create('async', 'pool12', 100, 100, 2.0, '{}', 0);
SELECT is((SELECT count(*) FROM model_select.probe_next('async', 1000)), 10::bigint, 'probe_next(k) stops at the batch end (N_1 = 10)');
SELECT is((SELECT count(*) FROM model_select.probe_next('async', 5)), 0::bigint, 'nothing to issue until the batch is reported');
SELECT model_select.probe_report('async', pl.interval, pl.batch, pl.m, 0.5)
  FROM model_select.probe_plan pl JOIN model_select.probe_runs r USING (run_id)
 WHERE r.name = 'async' ORDER BY pl.m DESC;
SELECT is((SELECT (batch, batch_size, issued, observed)::text FROM model_select.probe_status('async')), '(2,32,0,0)',
          'reported in reverse order: batch 2 (N_2 = 32) is planned');

-- the pool query runs with the caller's search_path; real[] / varchar are accepted
CREATE SCHEMA probe_src;
CREATE TABLE probe_src.items AS SELECT g, prompt, model FROM pool12;
SET search_path = probe_src, public;
SELECT lives_ok($$SELECT model_select.create_probe_run('sp', 10, 5, 1, 'SELECT prompt, model FROM items ORDER BY g, model')$$,
                'an unqualified table of the caller''s search_path');
SELECT lives_ok($$SELECT model_select.create_probe_run('sp2', 10, 5, 1, 'SELECT prompt::real[], model::varchar FROM items')$$,
                'real[] prompts and varchar models');
RESET search_path;

-- (5) bad input
SELECT throws_ok($$SELECT * FROM model_select.probe_next('nope')$$, '42704', NULL, 'probe_next: unknown run');
SELECT throws_ok($$SELECT model_select.probe_report('nope', 1, 0.5)$$, '42704', NULL, 'probe_report: unknown run');
SELECT throws_ok($$SELECT * FROM model_select.probe_status('nope')$$, '42704', NULL, 'probe_status: unknown run');
SELECT throws_ok($$SELECT model_select.drop_probe_run('nope')$$, '42704', NULL, 'drop_probe_run: unknown run');
SELECT throws_ok($$SELECT model_select.create_probe_run('async', 10, 5, 1, 'SELECT prompt, model FROM pool12')$$,
                 '42710', NULL, 'duplicate run name');
SELECT throws_ok($$SELECT model_select.create_probe_run('x', 0, 5, 1, 'SELECT prompt, model FROM pool12')$$,
                 '22023', 'horizon must be at least 1, not 0', 'horizon < 1');
SELECT throws_ok($$SELECT model_select.create_probe_run('x', 10, 1, 1, 'SELECT prompt, model FROM pool12')$$,
                 '22023', 'reset_every must be at least 2, not 1', 'reset_every < 2');
SELECT throws_ok($$SELECT model_select.create_probe_run('x', 10, 5, 'NaN', 'SELECT prompt, model FROM pool12')$$,
                 '22023', NULL, 'beta NaN');
SELECT throws_ok($$SELECT model_select.create_probe_run('x', 10, 5, 0, 'SELECT prompt, model FROM pool12')$$,
                 '22023', NULL, 'beta 0');
SELECT throws_ok($$SELECT model_select.create_probe_run('x', 10, 5, 1, 'SELECT prompt, model FROM pool12 WHERE false')$$,
                 '22023', NULL, 'empty pool');
SELECT throws_ok($$SELECT model_select.create_probe_run('x', 10, 5, 1, 'SELECT prompt, model FROM pool12 UNION ALL SELECT prompt, model FROM pool12')$$,
                 '22023', 'the pool has duplicate (prompt, model) pairs', 'duplicate pool items');
SELECT throws_ok($$SELECT model_select.create_probe_run('x', 10, 5, 1, 'SELECT NULL::float8[], ''a''')$$,
                 '22004', NULL, 'NULL prompt');
SELECT throws_ok($$SELECT model_select.create_probe_run('x', 10, 5, 1, 'VALUES (ARRAY[1.0, 2.0]::float8[], ''a''), (ARRAY[1.0]::float8[], ''b'')')$$,
                 '22000', NULL, 'prompts of different dimensions');
SELECT throws_ok($$SELECT model_select.create_probe_run('x', 10, 5, 1, 'VALUES (ARRAY[1.0, ''NaN'']::float8[], ''a'')')$$,
                 '22000', NULL, 'NaN in a prompt');
SELECT throws_ok($$SELECT model_select.create_probe_run('x', 10, 5, 1, 'SELECT 1, 2')$$,
                 '42804', NULL, 'pool query of the wrong shape');
SELECT throws_ok($$SELECT model_select.create_probe_run('x', 10, 5, 1, 'SELECT prompt, model FROM pool12', 'rbf', '{"eta": 1}')$$,
                 '22023', 'invalid setting "eta": does not apply to probe runs', 'a selector setting that does not apply');
SELECT throws_ok($$SELECT model_select.create_probe_run('x', 10, 5, 1, 'SELECT prompt, model FROM pool12', 'rbf', '{"alpha": -1}')$$,
                 '22023', NULL, 'alpha out of range');
SELECT throws_ok($$SELECT model_select.create_probe_run('x', 10, 5, 1, 'SELECT prompt, model FROM pool12', 'cosine')$$,
                 '22023', NULL, 'unknown kernel');
SELECT throws_ok($$SELECT * FROM model_select.probe_next('learn', 0)$$, '22023', NULL, 'k < 1');
SELECT throws_ok($$SELECT model_select.probe_report('learn', 1, 0.5)$$, '55000', NULL, 'report to a finished run');
-- 'async' batch 2: issue 2 queries
CREATE TEMP TABLE issued AS SELECT * FROM model_select.probe_next('async', 2);
SELECT throws_ok($$SELECT model_select.probe_report('async', (SELECT item_id FROM issued ORDER BY m LIMIT 1), 'NaN')$$,
                 '22023', NULL, 'NaN score');
SELECT throws_ok($$SELECT model_select.probe_report('async', (SELECT item_id FROM issued ORDER BY m LIMIT 1), '-Infinity')$$,
                 '22023', NULL, 'infinite score');
SELECT throws_ok($$SELECT model_select.probe_report('async', (SELECT item_id FROM issued ORDER BY m LIMIT 1), NULL)$$,
                 '22004', NULL, 'NULL score');
SELECT throws_ok($$SELECT model_select.probe_report('async', 99, 0.5)$$, '22023', NULL, 'item not in the pool');
SELECT throws_ok($$SELECT model_select.probe_report('async', 1, 3, 1, 0.5)$$, '55000', NULL,
                 'a query of a batch not planned yet');
SELECT throws_ok($$SELECT model_select.probe_report('async', 1, 2, 3, 0.5)$$, '55000', NULL,
                 'a planned query not issued yet (out of order)');
SELECT lives_ok($$SELECT model_select.probe_report('async', 1, 2, 1, 0.5)$$, 'report query 1 of batch 2');
SELECT throws_ok($$SELECT model_select.probe_report('async', 1, 2, 1, 0.5)$$, '55000', NULL, 'reporting it twice');
SELECT throws_ok($$SELECT model_select.probe_report('async', 1, 1, 1, 0.5)$$, '55000', NULL,
                 'reporting a query of a past batch');
SELECT throws_ok(format($$SELECT model_select.probe_report('async', %s, 0.5)$$,
                        (SELECT item_id FROM model_select.probe_pool p JOIN model_select.probe_runs r USING (run_id)
                          WHERE r.name = 'async' AND p.item_id NOT IN (SELECT item_id FROM issued) LIMIT 1)),
                 '55000', NULL, 'reporting an item that was not issued');

-- a score made NaN by hand (the owner may write probe_plan) is refused by
-- the table's check, so the fit never sees one
SELECT lives_ok($$SELECT model_select.create_probe_run('hand', 10, 10, 1, 'SELECT prompt, model FROM pool12')$$,
                'a run to damage');
SELECT model_select.probe_report('hand', q.interval, q.batch, q.m, 0.5)
  FROM model_select.probe_next('hand', 100) q WHERE q.m > 1;
SELECT throws_ok($$UPDATE model_select.probe_plan pl SET score = 'NaN' FROM model_select.probe_runs r
                    WHERE r.run_id = pl.run_id AND r.name = 'hand' AND pl.m = 2$$, '23514', NULL,
                 'a NaN score written by hand: 23514 (probe_plan_score_check)');
SELECT lives_ok($$SELECT model_select.probe_report('hand', 1, 1, 1, 0.5)$$,
                'the report that completes the batch');
SELECT isnt((SELECT row(batch, observed)::text FROM model_select.probe_status('hand')),
          '(1,3)', '... and the run moves on to its next batch');

-- a pool item numbered outside 1..pool_size by hand (the owner may insert into
-- probe_pool): XX001, not a write past the fit's arrays (it crashed the server)
SELECT lives_ok($$SELECT model_select.create_probe_run('hand2', 10, 10, 1, 'SELECT prompt, model FROM pool12')$$,
                'another run to damage');
INSERT INTO model_select.probe_pool(run_id, item_id, prompt, model)
SELECT run_id, id, '{1, 0}', 'strong' FROM model_select.probe_runs, unnest(ARRAY[100000000, -7]) id WHERE name = 'hand2';
SELECT throws_ok($$SELECT count(*) FROM (SELECT model_select.probe_report('hand2', q.interval, q.batch, q.m, 0.5)
                                          FROM model_select.probe_next('hand2', 100) q) x$$,
                 'XX001', NULL, 'the batch''s elimination with items 100000000 and -7 in a pool of 12: XX001');
UPDATE model_select.probe_runs SET interval_len = 2147483647, prev_batch_size = 2147483647 WHERE name = 'hand2';
SELECT throws_ok($$SELECT model_select_internal._probe_plan(run_id) FROM model_select.probe_runs WHERE name = 'hand2'$$,
                 '54000', NULL, 'planning a batch of 2^31 - 1 queries: 54000, not an allocation failure (XX000)');

SELECT lives_ok($$SELECT model_select.drop_probe_run('sched')$$, 'drop_probe_run');
SELECT is((SELECT count(*) FROM model_select.probe_plan pl LEFT JOIN model_select.probe_runs r USING (run_id)
            WHERE r.run_id IS NULL), 0::bigint, '... removes its pool and plan');

SELECT * FROM finish();
ROLLBACK;
