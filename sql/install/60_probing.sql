-- Probing: R-PERP runs over a fixed pool of (prompt, model) pairs.

-- R-PERP probing runs (Iwazaki & Takeno (R-PERP), §5.5; src/probe/rperp.c): restarting
-- phased elimination with random permutation over a fixed pool of (prompt,
-- model) pairs.  Only for evaluation/probing loops where the system chooses
-- which pair to query next (Iwazaki & Takeno (R-PERP)), not for live traffic, whose
-- prompts are given (use route() there).  The horizon T and the restart
-- interval H must be chosen up front.  The kernel between items is
-- k(p, p') [a = a'] (one GP per model over the prompt embeddings).
--
-- State machine (one row of probe_runs): interval i has T_i = min(H, T -
-- (i-1)H) queries in batches j of N_j = min(ceil(sqrt(T_i N_{j-1})), T_i -
-- used) queries (N_0 = 1).  A batch is planned as soon as it is determined
-- (greedy max-variance design over the active items, randomly permuted) and
-- stored in probe_plan; probe_next hands its queries out in plan order,
-- probe_report records their scores in any order.  When every query of the
-- batch is reported: after the interval's last batch the next interval
-- starts with every item active again (or the run finishes); otherwise a GP
-- fitted on this batch alone eliminates the active items whose ucb is below
-- the largest lcb, and the next batch is planned.  While a batch is handed
-- out but not fully reported, probe_next returns no rows.
CREATE TABLE model_select.probe_runs (
    run_id          serial PRIMARY KEY,
    name            text NOT NULL UNIQUE CHECK (name <> ''),
    horizon         int NOT NULL CHECK (horizon >= 1),              -- T
    reset_every     int NOT NULL CHECK (reset_every >= 2),          -- H
    beta            float8 NOT NULL CHECK (beta > 0 AND beta < 'Infinity'),  -- beta_T^{1/2}
    kernel          text NOT NULL,
    settings        jsonb NOT NULL,         -- alpha (lambda), intercept, normalize, kernel's
    seed            bigint NOT NULL,
    pool_size       int NOT NULL DEFAULT 0,
    dim             int,
    interval        int NOT NULL DEFAULT 0, -- i, from 1
    interval_len    int NOT NULL DEFAULT 0, -- T_i
    used            int NOT NULL DEFAULT 0, -- queries of interval i before batch j
    batch           int NOT NULL DEFAULT 0, -- j, from 1 in each interval
    prev_batch_size int NOT NULL DEFAULT 1, -- N_{j-1}
    batch_size      int NOT NULL DEFAULT 0, -- N_j
    issued          int NOT NULL DEFAULT 0, -- queries of batch j handed out (m = 1..issued)
    observed        int NOT NULL DEFAULT 0, -- queries of batch j reported
    finished        boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now(),
    owner           regrole NOT NULL        -- the creator: only its members see the run
);

-- The pool X, items numbered from 1 in the order the pool query yields them.
-- mean, sd, lcb and ucb are the item's last fit in the current interval.
CREATE TABLE model_select.probe_pool (
    run_id           int NOT NULL REFERENCES model_select.probe_runs ON DELETE CASCADE,
    item_id          int NOT NULL,
    prompt           float8[] NOT NULL,
    model            text NOT NULL,
    active           boolean NOT NULL DEFAULT true,
    eliminated_after int,                   -- the batch of this interval that eliminated it
    mean             float8,
    sd               float8,
    lcb              float8,
    ucb              float8,
    PRIMARY KEY (run_id, item_id),
    CHECK (active = (eliminated_after IS NULL))
);

-- Every planned query x_{j,m}^(i), at global time t = (i-1)H + used + m
-- (Iwazaki & Takeno (R-PERP)), with its score once reported.
CREATE TABLE model_select.probe_plan (
    run_id      int NOT NULL REFERENCES model_select.probe_runs ON DELETE CASCADE,
    interval    int NOT NULL,
    batch       int NOT NULL,
    m           int NOT NULL,
    t           bigint NOT NULL,
    item_id     int NOT NULL,
    issued_at   timestamptz,
    -- the range probe_report() checks, also for direct writes of the
    -- administrators who own runs (NaN fails it: NaN <= 1e15 is false)
    score       float8 CHECK (score >= -1e15 AND score <= 1e15),
    reported_at timestamptz,
    PRIMARY KEY (run_id, interval, batch, m),
    FOREIGN KEY (run_id, item_id) REFERENCES model_select.probe_pool
);

CREATE FUNCTION model_select_internal._probe_load_pool(run_id int, pool text) RETURNS int
    AS 'MODULE_PATHNAME', 'model_select_probe_load_pool' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION model_select_internal._probe_plan(run_id int) RETURNS int
    AS 'MODULE_PATHNAME', 'model_select_probe_plan' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
CREATE FUNCTION model_select_internal._probe_eliminate(run_id int) RETURNS int
    AS 'MODULE_PATHNAME', 'model_select_probe_eliminate' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

-- The transition after a fully reported batch (or, for a new run, the start
-- of interval 1).  The caller holds the run's row lock.
CREATE FUNCTION model_select_internal._probe_advance(rid int) RETURNS void
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r model_select.probe_runs;
    n int;
BEGIN
    SELECT * INTO STRICT r FROM model_select.probe_runs pr WHERE pr.run_id = rid FOR UPDATE;
    IF r.interval > 0 THEN
        IF r.finished OR r.observed < r.batch_size THEN
            RAISE EXCEPTION 'batch % of interval % of probe run "%" is not fully reported',
                r.batch, r.interval, r.name USING ERRCODE = '55000';
        END IF;
        IF r.used + r.batch_size < r.interval_len THEN
            -- not the interval's last batch: eliminate, then plan batch j + 1
            PERFORM model_select_internal._probe_eliminate(rid);
            UPDATE model_select.probe_runs pr
               SET used = pr.used + pr.batch_size, prev_batch_size = pr.batch_size, batch = pr.batch + 1
             WHERE pr.run_id = rid;
            n := model_select_internal._probe_plan(rid);
            UPDATE model_select.probe_runs pr SET batch_size = n, issued = 0, observed = 0
             WHERE pr.run_id = rid;
            RETURN;
        END IF;
        IF r.interval::bigint * r.reset_every >= r.horizon THEN
            UPDATE model_select.probe_runs pr SET finished = true WHERE pr.run_id = rid;
            RETURN;
        END IF;
    END IF;
    -- restart: interval i + 1, every item active again, N_0 = 1
    UPDATE model_select.probe_pool p
       SET active = true, eliminated_after = NULL, mean = NULL, sd = NULL, lcb = NULL, ucb = NULL
     WHERE p.run_id = rid;
    UPDATE model_select.probe_runs pr
       SET interval = pr.interval + 1, used = 0, batch = 1, prev_batch_size = 1,
           interval_len = least(pr.reset_every::bigint, pr.horizon - pr.interval::bigint * pr.reset_every)::int
     WHERE pr.run_id = rid;
    n := model_select_internal._probe_plan(rid);
    UPDATE model_select.probe_runs pr SET batch_size = n, issued = 0, observed = 0 WHERE pr.run_id = rid;
END $$;

-- create_probe_run, step 1: validate the parameters and insert the run.
CREATE FUNCTION model_select_internal._probe_create(
    name text, horizon int, reset_every int, beta float8, pool text,
    kernel text, settings jsonb, seed bigint)
RETURNS int
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    allowed text[] := ARRAY['alpha', 'intercept', 'normalize', 'bandwidth', 'nu', 'gamma', 'degree', 'offset'];
    kern text := coalesce(kernel, 'rbf');
    resolved jsonb;
    bad text;
    violated text;
    rid int;
BEGIN
    IF name IS NULL OR horizon IS NULL OR reset_every IS NULL OR beta IS NULL OR pool IS NULL OR seed IS NULL THEN
        RAISE EXCEPTION 'name, horizon, reset_every, beta, pool and seed must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF name = '' THEN
        RAISE EXCEPTION 'probe run name must not be empty' USING ERRCODE = '22023';
    END IF;
    IF horizon < 1 THEN
        RAISE EXCEPTION 'horizon must be at least 1, not %', horizon USING ERRCODE = '22023';
    END IF;
    IF reset_every < 2 THEN
        RAISE EXCEPTION 'reset_every must be at least 2, not %', reset_every USING ERRCODE = '22023';
    END IF;
    IF NOT (beta > 0 AND beta < 'Infinity') THEN
        RAISE EXCEPTION 'beta must be positive and finite, not %', beta USING ERRCODE = '22023';
    END IF;
    IF kern NOT IN ('rbf', 'matern', 'laplacian', 'poly', 'linear') THEN
        RAISE EXCEPTION 'unknown kernel "%"', kern USING ERRCODE = '22023',
            HINT = 'Valid kernels are rbf, matern, laplacian, poly and linear.';
    END IF;
    IF jsonb_typeof(coalesce(settings, '{}')) <> 'object' THEN
        RAISE EXCEPTION 'settings must be a JSON object' USING ERRCODE = '22023';
    END IF;
    SELECT k INTO bad FROM jsonb_object_keys(coalesce(settings, '{}')) k WHERE k <> ALL (allowed) LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'invalid setting "%": does not apply to probe runs', bad USING ERRCODE = '22023',
            DETAIL = 'Valid keys are alpha, intercept, normalize and the kernel''s bandwidth, nu, gamma, degree and offset.';
    END IF;
    -- the GP's alpha and intercept default to the settings table's 1 and 1,
    -- not pak_ucb's own 20 and 10: beta is the caller's, for that scale
    SELECT jsonb_object_agg(e.key, e.value) INTO resolved
      FROM jsonb_each(model_select.resolve_settings('pak_ucb', kern,
                      '{"alpha": 1, "intercept": 1}' || coalesce(settings, '{}'))) e
     WHERE e.key = ANY (allowed);
    -- the probe functions run with the caller's rights: the run is the caller's.
    -- Names are unique over all runs, also those of other roles, which the
    -- caller does not see, and those being created concurrently: only the
    -- unique index knows them all.
    BEGIN
        INSERT INTO model_select.probe_runs(name, horizon, reset_every, beta, kernel, settings, seed, owner)
        VALUES (name, horizon, reset_every, beta, kern, resolved, seed,
                (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = current_user)::regrole)
        RETURNING run_id INTO rid;
    EXCEPTION WHEN unique_violation THEN
        GET STACKED DIAGNOSTICS violated = CONSTRAINT_NAME;
        IF violated IS DISTINCT FROM 'probe_runs_name_key' THEN
            RAISE;
        END IF;
        RAISE EXCEPTION 'probe run "%" already exists', name USING ERRCODE = '42710';
    END;
    RETURN rid;
END $$;

-- Step 3, after _probe_load_pool: check the pool and start interval 1.
CREATE FUNCTION model_select_internal._probe_start(rid int) RETURNS int
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM model_select.probe_pool p WHERE p.run_id = rid
                GROUP BY p.prompt, p.model HAVING count(*) > 1) THEN
        RAISE EXCEPTION 'the pool has duplicate (prompt, model) pairs' USING ERRCODE = '22023';
    END IF;
    PERFORM model_select_internal._probe_advance(rid);
    RETURN rid;
END $$;

-- Create a run: T = horizon, H = reset_every (>= 2), beta = beta_T^{1/2} of
-- Iwazaki & Takeno (R-PERP) Eq. 8 (its constant C is unknown: choose it).  `pool` is a
-- query yielding (prompt: an array of numbers, model text), one row per
-- distinct item, numbered from 1 in the order it yields them.  settings:
-- alpha (lambda of the GP), intercept, normalize and the kernel's
-- (bandwidth, nu, gamma, degree, offset), as for selectors.  Returns run_id.
-- Unlike the other functions this one does not pin search_path: the pool
-- query runs with the caller's (as replay()'s source does).  Its body calls
-- schema-qualified functions only.
CREATE FUNCTION model_select.create_probe_run(
    name text, horizon int, reset_every int, beta float8, pool text,
    kernel text DEFAULT 'rbf', settings jsonb DEFAULT '{}', seed bigint DEFAULT 0)
RETURNS int
LANGUAGE sql VOLATILE PARALLEL UNSAFE AS $$
    SELECT model_select_internal._probe_start(model_select_internal._probe_load_pool(
        model_select_internal._probe_create(name, horizon, reset_every, beta, pool, kernel, settings, seed), pool))
$$;

CREATE FUNCTION model_select.drop_probe_run(name text) RETURNS void
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF name IS NULL THEN
        RAISE EXCEPTION 'name must not be NULL' USING ERRCODE = '22004';
    END IF;
    DELETE FROM model_select.probe_runs pr WHERE pr.name = drop_probe_run.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'probe run "%" does not exist', name USING ERRCODE = '42704';
    END IF;
END $$;

-- The next k queries of the current batch, in plan order; fewer (or none)
-- when the batch is all handed out (report its scores first) or the run is
-- finished.  t is the query's global time step.
CREATE FUNCTION model_select.probe_next(name text, k int DEFAULT 1)
RETURNS TABLE ("interval" int, batch int, m int, item_id int, prompt float8[], model text, t bigint)
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r model_select.probe_runs;
    upto int;
BEGIN
    IF name IS NULL OR k IS NULL THEN
        RAISE EXCEPTION 'name and k must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF k < 1 THEN
        RAISE EXCEPTION 'k must be at least 1' USING ERRCODE = '22023';
    END IF;
    SELECT * INTO r FROM model_select.probe_runs pr WHERE pr.name = probe_next.name FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'probe run "%" does not exist', name USING ERRCODE = '42704';
    END IF;
    IF r.finished OR r.issued >= r.batch_size THEN
        RETURN;
    END IF;
    upto := least(r.batch_size::bigint, r.issued::bigint + k)::int;
    UPDATE model_select.probe_runs pr SET issued = upto WHERE pr.run_id = r.run_id;
    RETURN QUERY
    WITH q AS (
        UPDATE model_select.probe_plan pl SET issued_at = now()
         WHERE pl.run_id = r.run_id AND pl.interval = r.interval AND pl.batch = r.batch
           AND pl.m > r.issued AND pl.m <= upto
        RETURNING pl.interval, pl.batch, pl.m, pl.item_id, pl.t)
    SELECT q.interval, q.batch, q.m, q.item_id, p.prompt, p.model, q.t
      FROM q JOIN model_select.probe_pool p ON p.run_id = r.run_id AND p.item_id = q.item_id
     ORDER BY q.m;
END $$;

-- Lock a run for a report of `score`.
CREATE FUNCTION model_select_internal._probe_lock_for_report(run text, score float8)
RETURNS model_select.probe_runs
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r model_select.probe_runs;
BEGIN
    IF run IS NULL OR score IS NULL THEN
        RAISE EXCEPTION 'name and score must not be NULL' USING ERRCODE = '22004';
    END IF;
    -- beyond ±1e15 (a selector's widest reward range) the fit's sums of
    -- squares overflow to NaN and ±Infinity
    IF NOT (score >= -1e15 AND score <= 1e15) THEN
        RAISE EXCEPTION 'score must be a number from -1e15 to 1e15, not %', score USING ERRCODE = '22023';
    END IF;
    SELECT * INTO r FROM model_select.probe_runs pr WHERE pr.name = run FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'probe run "%" does not exist', run USING ERRCODE = '42704';
    END IF;
    IF r.finished THEN
        RAISE EXCEPTION 'probe run "%" is finished', run USING ERRCODE = '55000';
    END IF;
    RETURN r;
END $$;

-- Record the score of query m of the current batch; advance when complete.
CREATE FUNCTION model_select_internal._probe_record(r model_select.probe_runs, pos int, score float8)
RETURNS void
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE model_select.probe_plan pl SET score = _probe_record.score, reported_at = now()
     WHERE pl.run_id = r.run_id AND pl.interval = r.interval AND pl.batch = r.batch AND pl.m = pos;
    UPDATE model_select.probe_runs pr SET observed = pr.observed + 1 WHERE pr.run_id = r.run_id;
    IF r.observed + 1 = r.batch_size THEN
        PERFORM model_select_internal._probe_advance(r.run_id);
    END IF;
END $$;

-- Report the score of an issued query of the current batch: by item (its
-- earliest unreported query, repeats being interchangeable) ...
CREATE FUNCTION model_select.probe_report(name text, item_id int, score float8) RETURNS void
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r model_select.probe_runs;
    pos int;
BEGIN
    IF item_id IS NULL THEN
        RAISE EXCEPTION 'item_id must not be NULL' USING ERRCODE = '22004';
    END IF;
    r := model_select_internal._probe_lock_for_report(name, score);
    SELECT pl.m INTO pos FROM model_select.probe_plan pl
     WHERE pl.run_id = r.run_id AND pl.interval = r.interval AND pl.batch = r.batch
       AND pl.item_id = probe_report.item_id AND pl.issued_at IS NOT NULL AND pl.score IS NULL
     ORDER BY pl.m LIMIT 1;
    IF NOT FOUND THEN
        IF NOT EXISTS (SELECT 1 FROM model_select.probe_pool p
                        WHERE p.run_id = r.run_id AND p.item_id = probe_report.item_id) THEN
            RAISE EXCEPTION 'probe run "%" has no item %', name, item_id USING ERRCODE = '22023';
        END IF;
        RAISE EXCEPTION 'item % has no issued, unreported query in batch % of interval % of probe run "%"',
            item_id, r.batch, r.interval, name USING ERRCODE = '55000',
            HINT = 'Report only queries returned by probe_next, once each.';
    END IF;
    PERFORM model_select_internal._probe_record(r, pos, score);
END $$;

-- ... or by position (interval, batch, m), as returned by probe_next.
CREATE FUNCTION model_select.probe_report(name text, "interval" int, batch int, m int, score float8)
RETURNS void
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r model_select.probe_runs;
    q model_select.probe_plan;
BEGIN
    IF $2 IS NULL OR batch IS NULL OR m IS NULL THEN
        RAISE EXCEPTION 'interval, batch and m must not be NULL' USING ERRCODE = '22004';
    END IF;
    r := model_select_internal._probe_lock_for_report(name, score);
    SELECT * INTO q FROM model_select.probe_plan pl
     WHERE pl.run_id = r.run_id AND pl.interval = $2 AND pl.batch = probe_report.batch AND pl.m = probe_report.m;
    IF NOT FOUND OR q.issued_at IS NULL THEN
        RAISE EXCEPTION 'query (interval %, batch %, m %) of probe run "%" has not been issued', $2, batch, m, name
            USING ERRCODE = '55000', HINT = 'Report only queries returned by probe_next.';
    END IF;
    IF q.score IS NOT NULL THEN
        RAISE EXCEPTION 'query (interval %, batch %, m %) of probe run "%" is already reported', $2, batch, m, name
            USING ERRCODE = '55000';
    END IF;
    PERFORM model_select_internal._probe_record(r, m, score);
END $$;

-- Where a run stands; best_* is the active item with the largest lcb in the
-- interval's last fit (NULL before the interval's first elimination).
CREATE FUNCTION model_select.probe_status(name text)
RETURNS TABLE (run_id int, "interval" int, intervals int, interval_len int, batch int, batch_size int,
               issued int, observed int, t bigint, active int, pool_size int, finished boolean,
               best_item int, best_model text, best_mean float8, best_lcb float8)
LANGUAGE plpgsql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF name IS NULL THEN
        RAISE EXCEPTION 'name must not be NULL' USING ERRCODE = '22004';
    END IF;
    RETURN QUERY
    SELECT r.run_id, r.interval, ((r.horizon - 1) / r.reset_every + 1)::int, r.interval_len, r.batch,
           r.batch_size, r.issued, r.observed,
           (r.interval - 1)::bigint * r.reset_every + r.used + r.issued,
           (SELECT count(*)::int FROM model_select.probe_pool p WHERE p.run_id = r.run_id AND p.active),
           r.pool_size, r.finished, b.item_id, b.model, b.mean, b.lcb
      FROM model_select.probe_runs r
      LEFT JOIN LATERAL (
            SELECT p.item_id, p.model, p.mean, p.lcb FROM model_select.probe_pool p
             WHERE p.run_id = r.run_id AND p.active AND p.lcb IS NOT NULL
             ORDER BY p.lcb DESC, p.item_id LIMIT 1) b ON true
     WHERE r.name = probe_status.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'probe run "%" does not exist', name USING ERRCODE = '42704';
    END IF;
END $$;

SELECT pg_catalog.pg_extension_config_dump('model_select.probe_runs', '');
SELECT pg_catalog.pg_extension_config_dump('model_select.probe_pool', '');
SELECT pg_catalog.pg_extension_config_dump('model_select.probe_plan', '');
SELECT pg_catalog.pg_extension_config_dump('model_select.probe_runs_run_id_seq', '');

-- Comments (psql: \dt+, \d+, \df+, \dd).
COMMENT ON TABLE model_select.probe_runs IS
'R-PERP probing runs: one row per run with its parameters (horizon T, reset_every H, beta) and where it stands (interval, batch, queries issued and reported).';
COMMENT ON COLUMN model_select.probe_runs.owner IS
'The role that created the run: row-level security shows a run, its pool and its plan only to members of this role (and to superusers and the extension owner).';
COMMENT ON TABLE model_select.probe_pool IS
'The fixed pool of (prompt, model) items of each run, numbered from 1, with whether each is still active and its last fit in the current interval.';
COMMENT ON TABLE model_select.probe_plan IS
'Every planned query (interval, batch, m) of each run, at global time t, with its score once reported.';

COMMENT ON FUNCTION model_select_internal._probe_load_pool(int, text) IS
'Internal, create_probe_run() step 2: loads the pool query''s rows into probe_pool; returns the pool size.';
COMMENT ON FUNCTION model_select_internal._probe_plan(int) IS
'Internal: plans the current batch (greedy maximum-variance design over the active items, shuffled); returns its size.';
COMMENT ON FUNCTION model_select_internal._probe_eliminate(int) IS
'Internal: fits a GP on the batch just reported and eliminates the items whose ucb is below the best lcb.';
COMMENT ON FUNCTION model_select_internal._probe_advance(int) IS
'Internal: moves a run on after a fully reported batch (next batch, next interval, or finished).';
COMMENT ON FUNCTION model_select_internal._probe_create(text, int, int, float8, text, text, jsonb, bigint) IS
'Internal, create_probe_run() step 1: validates the parameters and inserts the run.';
COMMENT ON FUNCTION model_select_internal._probe_start(int) IS
'Internal, create_probe_run() step 3: checks the pool and starts interval 1.';
COMMENT ON FUNCTION model_select_internal._probe_lock_for_report(text, float8) IS
'Internal: validates a score and locks the run for its report.';
COMMENT ON FUNCTION model_select_internal._probe_record(model_select.probe_runs, int, float8) IS
'Internal: records the score of a query of the current batch and advances the run when the batch is complete.';

COMMENT ON FUNCTION model_select.create_probe_run(text, int, int, float8, text, text, jsonb, bigint) IS
'Creates an R-PERP probing run over the (prompt, model) rows of the pool query: horizon T, restart interval reset_every H, confidence width beta, GP kernel and settings; returns the run_id.';
COMMENT ON FUNCTION model_select.drop_probe_run(text) IS
'Deletes a probing run with its pool and plan.';
COMMENT ON FUNCTION model_select.probe_next(text, int) IS
'The next k queries of the run''s current batch, in plan order; none while the batch waits for its reports or when the run is finished.';
COMMENT ON FUNCTION model_select.probe_report(text, int, float8) IS
'Reports the score of an issued query of the current batch, by item (its earliest unreported query).';
COMMENT ON FUNCTION model_select.probe_report(text, int, int, int, float8) IS
'Reports the score of an issued query of the current batch, by position (interval, batch, m) as returned by probe_next().';
COMMENT ON FUNCTION model_select.probe_status(text) IS
'Where a run stands: interval, batch, queries issued and reported, active items, and the best item so far (largest lcb).';
