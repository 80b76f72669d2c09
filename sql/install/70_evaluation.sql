-- Offline evaluation: replay() and the seeded synthetic streams.

-- Offline evaluation: the online loop over (context, rewards[, costs]) rows
-- of a query, in memory; no selector or table is touched.
CREATE FUNCTION model_select.replay(
    source text, policy text DEFAULT 'lin_ucb', kernel text DEFAULT NULL,
    settings jsonb DEFAULT '{}', seed bigint DEFAULT 0, cost_weight float8 DEFAULT 0,
    rounds int DEFAULT NULL, passes int DEFAULT 1, checkpoint int DEFAULT NULL,
    shuffle boolean DEFAULT true, warm text DEFAULT NULL, delay int DEFAULT 0,
    feedback float8 DEFAULT 1)
    RETURNS TABLE (round int, cum_reward float8, cum_cost float8, cum_utility float8,
                   regret_best_arm float8, regret_oracle float8, opr float8,
                   opr_window float8, otb float8, picks bigint[], learned bigint)
    AS 'MODULE_PATHNAME', 'model_select_replay' LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Seeded synthetic stream: prompts in clusters whose best arm differs, with
-- optional changing worlds (see src/eval/synthetic.c).
CREATE FUNCTION model_select.synthetic_clusters(
    rounds int, dim int, arms int, clusters int DEFAULT NULL, seed bigint DEFAULT 0,
    noise float8 DEFAULT 0.1, new_arm_at int DEFAULT NULL, switch_every int DEFAULT NULL,
    new_cluster_every int DEFAULT NULL,
    OUT round int, OUT cluster int, OUT context float8[], OUT expected float8[],
    OUT reward float8[], OUT best_arm int)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'model_select_synthetic_clusters' LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- Seeded synthetic stream of Flynn & Reeb 2024: per arm a reward function of
-- RKHS norm exactly rkhs_norm (weights on kernels at random inducing points),
-- contexts uniform in [0,1]^dim, Gaussian noise (see src/eval/synthetic_rkhs.c).
CREATE FUNCTION model_select.synthetic_rkhs(
    rounds int, dim int, arms int, seed bigint DEFAULT 0,
    kernel text DEFAULT 'rbf', bandwidth float8 DEFAULT 0.5, nu float8 DEFAULT 2.5,
    rkhs_norm float8 DEFAULT 10, noise float8 DEFAULT 0.1, inducing int DEFAULT 20,
    OUT round int, OUT context float8[], OUT expected float8[], OUT reward float8[],
    OUT best_arm int)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'model_select_synthetic_rkhs' LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- Comments (psql: \df+, \dd).
COMMENT ON FUNCTION model_select.replay(text, text, text, jsonb, bigint, float8, int, int, int, boolean, text, int, float8) IS
'Offline evaluation: runs a policy''s online loop over the rows (context, rewards[, costs[, expected]]) of the query source, in memory, touching no table, after every arm has learned its outcomes on the rows (context, rewards[, costs]) of the query warm if given; a seeded share feedback of the rounds is rewarded, each reward visible delay rounds later; returns cumulative reward, cost, utility, regret, optimal-pick ratios, picks per arm and rewards learned every checkpoint rounds.';
COMMENT ON FUNCTION model_select.synthetic_clusters(int, int, int, int, bigint, float8, int, int, int) IS
'Seeded synthetic stream: prompts in clusters whose best arm differs, with optional changing worlds (a late arm, rotating experts, new clusters).';
COMMENT ON FUNCTION model_select.synthetic_rkhs(int, int, int, bigint, text, float8, float8, float8, float8, int) IS
'Seeded synthetic stream: per arm a reward function of given RKHS norm, contexts uniform in [0,1]^dim, Gaussian noise.';

-- Quality vs cost (RouterBench's AIQ): the non-decreasing concave hull of
-- (cost, quality) points and the origin (answering nothing costs and earns
-- 0; mixing two routers at random reaches every point between them), flat
-- past its best point; aiq = its area over [0, max_cost] / max_cost.
CREATE FUNCTION model_select.quality_hull(costs float8[], qualities float8[], max_cost float8)
    RETURNS TABLE (cost float8, quality float8, aiq float8)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    hx float8[] := ARRAY[0];
    hy float8[] := ARRAY[0];
    p record;
    n int := 1;
    best int := 1;
    area float8 := 0;
    x1 float8;
BEGIN
    IF costs IS NULL OR qualities IS NULL OR max_cost IS NULL THEN
        RAISE EXCEPTION 'quality_hull: costs, qualities and max_cost must not be NULL' USING ERRCODE = '22004';
    END IF;
    -- (NaN sorts above Infinity in PostgreSQL: "< 'Infinity'" refuses both)
    IF array_ndims(costs) > 1 OR array_ndims(qualities) > 1 OR cardinality(costs) <> cardinality(qualities)
       OR NOT (max_cost > 0 AND max_cost < 'Infinity')
       OR EXISTS (SELECT FROM unnest(costs, qualities) u(c, q)
                   WHERE NOT coalesce(c >= 0 AND c < 'Infinity' AND q > '-Infinity' AND q < 'Infinity', false)) THEN
        RAISE EXCEPTION 'quality_hull: costs and qualities must be arrays of equal length of finite numbers, costs not negative, and max_cost above 0'
            USING ERRCODE = '22023';
    END IF;
    -- the upper hull by the monotone chain: a vertex stays while it lies strictly above the chord
    FOR p IN SELECT u.c, u.q FROM unnest(costs, qualities) u(c, q) ORDER BY u.c, u.q DESC LOOP
        WHILE n >= 2 AND (hx[n] - hx[n - 1]) * (p.q - hy[n - 1]) - (hy[n] - hy[n - 1]) * (p.c - hx[n - 1]) >= 0 LOOP
            n := n - 1;
        END LOOP;
        hx := hx[1:n] || p.c;
        hy := hy[1:n] || p.q;
        n := n + 1;
    END LOOP;
    -- non-decreasing: stop at the best vertex, flat after it
    FOR i IN 1..n LOOP
        IF hy[i] > hy[best] THEN
            best := i;
        END IF;
    END LOOP;
    FOR i IN 2..best LOOP
        x1 := least(hx[i], max_cost);
        IF x1 > hx[i - 1] THEN
            area := area + (x1 - hx[i - 1])
                    * (hy[i - 1] + (hy[i - 1] + (hy[i] - hy[i - 1]) * (x1 - hx[i - 1]) / (hx[i] - hx[i - 1]))) / 2;
        END IF;
    END LOOP;
    area := area + greatest(max_cost - hx[best], 0) * hy[best];
    RETURN QUERY SELECT hx[i], hy[i], area / max_cost FROM generate_series(1, best) i;
END $$;

-- replay() over a grid of cost weights and/or budgets: each run's mean cost
-- and reward per decision, next to each arm's own (always that arm); which
-- points are vertices of their kind's hull, and the AIQ of the router's
-- points and of the arms' up to the dearest arm's mean cost.
-- No SET search_path: the source is the caller's SQL and runs with the
-- caller's path, so the body qualifies every operator, function, type and
-- table, as warm_start()'s does.
CREATE FUNCTION model_select.quality_cost(
    source text, policy text DEFAULT 'lin_ucb', kernel text DEFAULT NULL, settings jsonb DEFAULT '{}',
    cost_weights float8[] DEFAULT NULL, budgets float8[] DEFAULT NULL, seed bigint DEFAULT 0,
    rounds int DEFAULT NULL, warm text DEFAULT NULL)
    RETURNS TABLE (kind text, knob float8, cost float8, quality float8, on_hull boolean, aiq float8)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $$
DECLARE
    max_cost pg_catalog.float8;
BEGIN
    IF source IS NULL OR policy IS NULL OR settings IS NULL OR seed IS NULL THEN
        RAISE EXCEPTION 'quality_cost: source, policy, settings and seed must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF COALESCE(pg_catalog.cardinality(cost_weights), 0)
       OPERATOR(pg_catalog.+) COALESCE(pg_catalog.cardinality(budgets), 0) OPERATOR(pg_catalog.=) 0 THEN
        RAISE EXCEPTION 'quality_cost: give cost_weights, budgets or both' USING ERRCODE = '22023';
    END IF;
    CREATE TEMP TABLE IF NOT EXISTS ms_quality_points (kind pg_catalog.text, knob pg_catalog.float8,
                                                      cost pg_catalog.float8, quality pg_catalog.float8)
        ON COMMIT DROP;
    TRUNCATE pg_temp.ms_quality_points;
    -- each arm: its mean reward and cost over the rows where it is available
    -- (the rows read and checked as replay() reads them: read only, 42804 for
    -- columns of other types, 22000/22004 for bad arrays)
    INSERT INTO pg_temp.ms_quality_points
    SELECT 'arm', a, pg_catalog.avg(COALESCE(s.costs[a], 0)), pg_catalog.avg(s.rewards[a])
      FROM model_select._source_rows(source) s, pg_catalog.generate_series(1, pg_catalog.cardinality(s.rewards)) a
     WHERE s.rewards[a] IS NOT NULL GROUP BY a;
    INSERT INTO pg_temp.ms_quality_points
    SELECT g.kind, g.knob, r.cum_cost OPERATOR(pg_catalog./) r.round, r.cum_reward OPERATOR(pg_catalog./) r.round
      FROM (SELECT 'cost_weight' AS kind, w AS knob, settings AS st, w AS lambda FROM pg_catalog.unnest(cost_weights) w
            UNION ALL
            SELECT 'budget', b, settings OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('budget', b), 0
              FROM pg_catalog.unnest(budgets) b) g
      CROSS JOIN LATERAL (SELECT * FROM model_select.replay(source, policy, kernel, g.st, seed, g.lambda, rounds, 1,
                                                            rounds, true, warm) x ORDER BY x.round DESC LIMIT 1) r;
    SELECT pg_catalog.max(p.cost) INTO max_cost FROM pg_temp.ms_quality_points p
     WHERE p.kind OPERATOR(pg_catalog.=) 'arm';
    IF NOT max_cost OPERATOR(pg_catalog.>) 0 THEN
        RAISE EXCEPTION 'quality_cost: every arm costs 0 on these rows' USING ERRCODE = '22023',
            HINT = 'The source yields (context, rewards, costs); give the costs.';
    END IF;
    RETURN QUERY
    SELECT p.kind, p.knob, p.cost, p.quality,
           EXISTS (SELECT FROM model_select.quality_hull(h.cs, h.qs, max_cost) v
                    WHERE v.cost OPERATOR(pg_catalog.=) p.cost AND v.quality OPERATOR(pg_catalog.=) p.quality),
           (SELECT v.aiq FROM model_select.quality_hull(h.cs, h.qs, max_cost) v LIMIT 1)
      FROM pg_temp.ms_quality_points p
      JOIN (SELECT q.kind OPERATOR(pg_catalog.=) 'arm' AS is_arm, pg_catalog.array_agg(q.cost) AS cs,
                   pg_catalog.array_agg(q.quality) AS qs
              FROM pg_temp.ms_quality_points q GROUP BY 1) h
        ON h.is_arm OPERATOR(pg_catalog.=) (p.kind OPERATOR(pg_catalog.=) 'arm')
     ORDER BY p.kind OPERATOR(pg_catalog.=) 'arm', p.kind, p.knob;
END $$;

COMMENT ON FUNCTION model_select.quality_hull(float8[], float8[], float8) IS
'RouterBench''s quality-vs-cost hull: the vertices of the non-decreasing concave hull of the (cost, quality) points and the origin, flat past the best point, with aiq = the area under it over [0, max_cost] divided by max_cost.';
COMMENT ON FUNCTION model_select.quality_cost(text, text, text, jsonb, float8[], float8[], bigint, int, text) IS
'replay() of a policy over a grid of cost weights and/or budgets on the rows (context, rewards, costs) of source, each run warm-started from the rows (context, rewards[, costs]) of the query warm if given (its costs teach the arms'' mean costs, never count as spend): per run and per arm (always that arm) the mean cost and reward per decision over source, whether the point is a vertex of its kind''s hull, and the AIQ of the router''s and of the arms'' hulls up to the dearest arm''s mean cost.';

-- Warm starts from full-information outcome tables (every model scored on
-- every prompt): the rows of a query in fixed columns, and their insertion
-- into the reward log, so that the log stays the one truth of the state.
CREATE FUNCTION model_select._source_rows(source text)
    RETURNS TABLE (row_number int, context float8[], rewards float8[], costs float8[], tags text[])
    AS 'MODULE_PATHNAME', 'model_select_source_rows' LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- No SET search_path: the source is the caller's SQL and runs with the
-- caller's path, so the body qualifies every operator and function.
CREATE FUNCTION model_select.warm_start(selector text, source text) RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $$
DECLARE
    sel_id int;
    narms int;
    width int;
    inserted bigint;
    k int;
    source_n bigint;
    -- the query the rows are read from: the source, or its rows kept once
    rows_query text := source;
    kept boolean := false;
    kept_name text := 'ms_warm_rows';
BEGIN
    IF selector IS NULL OR source IS NULL THEN
        RAISE EXCEPTION 'warm_start: selector and source must not be NULL' USING ERRCODE = '22004';
    END IF;
    -- it writes the reward log: refuse before the source runs
    IF pg_catalog.current_setting('transaction_read_only')::pg_catalog.bool THEN
        RAISE EXCEPTION 'warm_start: cannot run in a read-only transaction' USING ERRCODE = '25006',
            HINT = 'Warm-start on the primary, in a read-write transaction.';
    END IF;
    -- another role's selector is 42501 (an unknown name 42704), as everywhere
    IF NOT model_select.has_selector_privilege(selector, 'reward') THEN
        RAISE EXCEPTION 'permission denied for selector "%"', selector USING ERRCODE = '42501',
            DETAIL = 'This needs the reward privilege on the selector.',
            HINT = 'The selector''s owner can grant it with model_select.grant_selector().';
    END IF;
    SELECT s.selector_id INTO sel_id FROM model_select.selectors s WHERE s.name OPERATOR(pg_catalog.=) selector;
    SELECT pg_catalog.max(a.ordinal) INTO narms FROM model_select.arms a
     WHERE a.selector_id OPERATOR(pg_catalog.=) sel_id;
    -- A codebook (lin_ucb) without centroids that serve it (_codebook_fitted)
    -- is fitted on the source's contexts first, so that the rows below are
    -- learned with it; it needs the admin right and at least k rows.  The
    -- source then runs once, into a temporary table that the fit and the
    -- insert read: a volatile source (ORDER BY random() LIMIT n) is fitted on
    -- the very rows it teaches.  Without the right to create temporary tables
    -- the source runs for the count, the fit and the insert.
    SELECT (s.settings->>'codebook')::int INTO k FROM model_select.selectors s
     WHERE s.selector_id OPERATOR(pg_catalog.=) sel_id;
    IF k OPERATOR(pg_catalog.>) 0 AND NOT model_select.has_selector_privilege(selector, 'admin') THEN
        RAISE NOTICE 'warm_start: without the admin right on selector "%" its codebook is not fitted here', selector
            USING HINT = 'An administrator fits it with fit_codebook(); the rows are learnt with the codebook the selector has, if any.';
    ELSIF k OPERATOR(pg_catalog.>) 0 AND NOT model_select._codebook_fitted(selector) THEN
        IF pg_catalog.has_database_privilege(pg_catalog.current_database(), 'TEMPORARY') THEN
            -- a name no temporary table of the session has (the caller's own are left alone)
            WHILE pg_catalog.to_regclass(pg_catalog.format('pg_temp.%I', kept_name)) IS NOT NULL LOOP
                kept_name := 'ms_warm_rows_' || pg_catalog.substr(pg_catalog.md5(pg_catalog.random()::text), 1, 8);
            END LOOP;
            EXECUTE pg_catalog.format('CREATE TEMP TABLE %I ON COMMIT DROP AS SELECT * FROM model_select._source_rows($1)',
                                      kept_name) USING source;
            GET DIAGNOSTICS source_n = ROW_COUNT;
            rows_query := pg_catalog.format('SELECT context, rewards, costs, tags FROM pg_temp.%I ORDER BY row_number',
                                            kept_name);
            kept := true;
        ELSE
            SELECT pg_catalog.count(*) INTO source_n FROM model_select._source_rows(source);
        END IF;
        IF source_n OPERATOR(pg_catalog.>=) k THEN
            PERFORM model_select.fit_codebook(selector, rows_query, refit => false);
        ELSE
            RAISE NOTICE 'warm_start: the source''s % rows are fewer than the % centroids of selector "%": no codebook is fitted',
                source_n, k, selector;
        END IF;
    END IF;
    PERFORM model_select._progress_begin('warm_start', selector);
    -- row by row, arms in ordinal order: each arm's log follows the source's order.
    -- (_source_rows gives every row the same width; a wrong one is refused below,
    -- which undoes the insert with the statement.)
    WITH w AS MATERIALIZED (SELECT * FROM model_select._source_rows(rows_query)),
         ins AS (INSERT INTO model_select.rewards(selector, arm, context, reward, cost, tags)
                 SELECT selector, a.name, w.context, w.rewards[a.ordinal], w.costs[a.ordinal], w.tags
                   FROM w JOIN model_select.arms a ON a.selector_id OPERATOR(pg_catalog.=) sel_id AND a.active
                  WHERE w.rewards[a.ordinal] IS NOT NULL
                  ORDER BY w.row_number, a.ordinal
                 RETURNING 1)
    SELECT (SELECT pg_catalog.count(*) FROM ins), (SELECT pg_catalog.cardinality(w.rewards) FROM w LIMIT 1)
      INTO inserted, width;
    IF width OPERATOR(pg_catalog.<>) narms THEN
        RAISE EXCEPTION 'warm_start: the source''s rewards have % elements, selector "%" has % arms', width, selector, narms
            USING ERRCODE = '22000', HINT = 'Element i is the outcome of the arm of ordinal i (see model_select.arms); NULL skips an arm.';
    END IF;
    IF kept THEN
        EXECUTE pg_catalog.format('DROP TABLE pg_temp.%I', kept_name);
    END IF;
    PERFORM model_select._progress_end();
    RETURN inserted;
END $$;

COMMENT ON FUNCTION model_select._source_rows(text) IS
'The rows (context, rewards[, costs][, tags]) of the query source in fixed columns, checked as replay() checks its source (used by warm_start()); tags is NULL without a last column named tags.';
COMMENT ON FUNCTION model_select.warm_start(text, text) IS
'Warm start from a full-information outcome table: inserts into the reward log, for every row (context, rewards[, costs][, tags]) of the query source and every active arm whose element is not NULL (element i: the arm of ordinal i), that arm''s reward and cost on the row; returns the rewards inserted. A codebook without centroids is fitted first on the same rows (kept once in a temporary table, ms_warm_rows or, if the session has one of that name, ms_warm_rows_ and 8 hex digits, when the caller may create one).';
