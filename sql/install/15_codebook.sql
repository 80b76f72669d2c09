-- Codebooks (src/model/codebook.c): a selector with the setting codebook k
-- (lin_ucb) appends to the features of every context the one-hot of its
-- nearest of k centroids, fitted by fit_codebook() on contexts the caller
-- gives (warm_start() fits it on its source first).  Until then the one-hot
-- is all zeros, and the selector scores as it would without.
CREATE TABLE model_select.codebooks (
    selector_id int PRIMARY KEY REFERENCES model_select.selectors ON DELETE CASCADE,
    -- k × dim: row j is centroid j of the prepared contexts
    centroids   float8[] NOT NULL CHECK (array_ndims(centroids) = 2),
    normalized  boolean NOT NULL,
    rows        bigint NOT NULL CHECK (rows > 0),
    fitted_at   timestamptz NOT NULL DEFAULT now()
);

-- Learned states depend on the centroids: whatever writes them (a fit, or a
-- restore that loads them after the reward log) voids the checkpoints.
CREATE FUNCTION model_select_internal._codebook_changed() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE model_select.selectors s SET settings_version = s.settings_version + 1
     WHERE s.selector_id = NEW.selector_id;
    RETURN NULL;
END $$;
CREATE TRIGGER codebook_changed AFTER INSERT OR UPDATE ON model_select.codebooks
    FOR EACH ROW EXECUTE FUNCTION model_select_internal._codebook_changed();

-- fit_codebook()'s body, as the extension owner: store the centroids the
-- entry fitted (as the caller, on the caller's query) and re-learn.
CREATE FUNCTION model_select_internal._fit_codebook(name text, centroids float8[], normalized boolean, rows bigint)
RETURNS bigint
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    s model_select.selectors;
BEGIN
    s := model_select_internal._lock_for_change(name);
    -- the settings may have changed since the entry read them
    IF array_length(centroids, 1) IS DISTINCT FROM (s.settings->>'codebook')::int
       OR array_length(centroids, 2) IS DISTINCT FROM s.dim
       OR normalized IS DISTINCT FROM (s.settings->>'normalize')::boolean THEN
        RAISE EXCEPTION 'the settings of selector "%" changed while its codebook was fitted', name
            USING ERRCODE = '40001', HINT = 'Run fit_codebook() again.';
    END IF;
    INSERT INTO model_select.codebooks (selector_id, centroids, normalized, rows)
    VALUES (s.selector_id, _fit_codebook.centroids, _fit_codebook.normalized, _fit_codebook.rows)
    ON CONFLICT (selector_id) DO UPDATE
       SET centroids = excluded.centroids, normalized = excluded.normalized, rows = excluded.rows,
           fitted_at = now();
    RETURN model_select_internal._relearn(s.selector_id, name);
END $$;

CREATE FUNCTION model_select.fit_codebook(selector text, source text, refit boolean DEFAULT true) RETURNS bigint
    AS 'MODULE_PATHNAME', 'model_select_fit_codebook' LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- warm_start() (which runs as the caller) asks whether to fit: codebook.c's rule
CREATE FUNCTION model_select._codebook_fitted(selector text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'model_select_codebook_fitted' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

SELECT pg_catalog.pg_extension_config_dump('model_select.codebooks', '');

COMMENT ON TABLE model_select.codebooks IS
'The fitted codebook of each selector with the setting codebook: k centroids of its prepared contexts (k-means), whose one-hot lin_ucb appends to the features. Written by fit_codebook() only (and by warm_start(), which calls it); a write re-learns every arm from the log.';
COMMENT ON COLUMN model_select.codebooks.centroids IS 'k × dim array: row j is centroid j, in the space of the prepared (by default L2-normalised) contexts.';
COMMENT ON COLUMN model_select.codebooks.normalized IS 'The selector''s normalize setting when they were fitted: the centroids serve only while it is the same (else the one-hot is zeros until a refit).';
COMMENT ON COLUMN model_select.codebooks.rows IS 'Contexts the centroids were fitted on.';
COMMENT ON FUNCTION model_select.fit_codebook(text, text, boolean) IS
'Administrators: fits the selector''s codebook (k-means++ seeded from the selector''s seed, then Lloyd''s iterations) on the contexts in the first column of the query source (its first 20,000 rows, run as the caller), stores it and re-learns every arm from the reward log; returns the contexts it was fitted on. With refit false, a selector that has a codebook of its size keeps it (returns 0).';
COMMENT ON FUNCTION model_select._codebook_fitted(text) IS
'Internal (warm_start()): whether the selector has centroids that serve its configuration (k × dim, fitted under its normalize); needs the admin right.';
COMMENT ON FUNCTION model_select_internal._fit_codebook(text, float8[], boolean, bigint) IS
'Internal: fit_codebook()''s body, run as the extension owner: stores the centroids under the settings lock and re-learns.';
COMMENT ON FUNCTION model_select_internal._codebook_changed() IS
'Internal: a written codebook voids the selector''s checkpoints (bumps settings_version).';
COMMENT ON FUNCTION model_select_internal._lock_for_change(text) IS
'Internal: the selector''s row, locked against concurrent changes after the reward inserts in flight (alter_selector(), fit_codebook()).';
COMMENT ON FUNCTION model_select_internal._relearn(int, text) IS
'Internal: after a change of what the arms learn, forgets absorbed bases, refits the cascade state and rebuilds every arm''s checkpoint.';
