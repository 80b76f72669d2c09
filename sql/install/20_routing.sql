-- Routing: choosing an arm for a context (select_model, route), every arm's
-- score (scores), and the decision log that route() writes.

CREATE TABLE model_select.decisions (
    decision_id bigserial PRIMARY KEY,
    selector_id int NOT NULL REFERENCES model_select.selectors ON DELETE CASCADE,
    arm_id      int NOT NULL REFERENCES model_select.arms ON DELETE CASCADE,
    context     float8[] NOT NULL,
    score       float8 NOT NULL,            -- the chosen arm's ucb
    mean        float8,                     -- its predicted reward (mean) at decision time
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ON model_select.decisions (selector_id, created_at);

-- Scoring.  select_model and scores read only (STABLE); route logs a decision.
CREATE FUNCTION model_select.select_model(selector text, context float8[]) RETURNS text
    AS 'MODULE_PATHNAME', 'model_select_select_model' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION model_select.select_model(selector text, context real[]) RETURNS text
    AS 'MODULE_PATHNAME', 'model_select_select_model' LANGUAGE C STABLE STRICT PARALLEL SAFE;

CREATE FUNCTION model_select.route(selector text, context float8[],
    OUT decision_id bigint, OUT arm text, OUT score float8)
    AS 'MODULE_PATHNAME', 'model_select_route' LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION model_select.route(selector text, context real[],
    OUT decision_id bigint, OUT arm text, OUT score float8)
    AS 'MODULE_PATHNAME', 'model_select_route' LANGUAGE C VOLATILE STRICT;

CREATE FUNCTION model_select.scores(selector text, context float8[])
    RETURNS TABLE (arm text, active boolean, n bigint, mean float8, width float8, ucb float8,
                   radius float8, alpha float8)
    AS 'MODULE_PATHNAME', 'model_select_scores' LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 8;
CREATE FUNCTION model_select.scores(selector text, context real[])
    RETURNS TABLE (arm text, active boolean, n bigint, mean float8, width float8, ucb float8,
                   radius float8, alpha float8)
    AS 'MODULE_PATHNAME', 'model_select_scores' LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 8;

-- This backend's cache of decoded arm models: entries, decodes, hits.
CREATE FUNCTION model_select.cache_stats(OUT entries int, OUT decodes bigint, OUT hits bigint)
    AS 'MODULE_PATHNAME', 'model_select_cache_stats' LANGUAGE C VOLATILE;

SELECT pg_catalog.pg_extension_config_dump('model_select.decisions', '');
SELECT pg_catalog.pg_extension_config_dump('model_select.decisions_decision_id_seq', '');
