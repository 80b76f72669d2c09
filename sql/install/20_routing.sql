-- Routing: choosing an arm for a context (select_model, route), every arm's
-- score (scores), and the decision log that route() writes.

CREATE TABLE model_select.decisions (
    decision_id bigserial PRIMARY KEY,
    selector_id int NOT NULL,
    arm_id      int NOT NULL,               -- an arm of selector_id; no foreign key (_drop_selector())
    context     float8[],                   -- the context, when a real cannot hold every value
    score       float8 NOT NULL,            -- the chosen arm's ucb
    mean        float8,                     -- its predicted reward (mean) at decision time
    created_at  timestamptz NOT NULL DEFAULT now(),
    cost_weight float8,                     -- the cost weight λ in force (the budget's pacer)
    context_real real[],                    -- or else the context as real[] (4 bytes a value)
    versions    bigint[],                   -- the learner's rule: each arm's version scored
    own_tx      xid8,                       -- and its own transaction's rewards on top,
    own_seq     bigint,                     -- up to this seq (decision_scores())
    tags        text[],                     -- the caller's tags (NULL: none)
    awaited     float8[],                   -- count_pending: per arm, the rewards it awaited
    expected_cost float8,                   -- the cost model's: the chosen arm's cost here
    CONSTRAINT decisions_one_context CHECK ((context IS NULL) <> (context_real IS NULL))
);
-- a selector's decisions newest first, in full order (the pacer's window: pacer.c)
CREATE INDEX ON model_select.decisions (selector_id, created_at, decision_id);

-- Scoring.  select_model and scores read only (STABLE); route logs a decision.
-- The context is any one-dimensional array of numbers: real[] (pgvector's
-- vector through its cast), float8[], numeric[] and integer[] (what drivers
-- send for a list of floats or ints) and an untyped '{...}' literal all
-- reach this one function (with two overloads, real[] and float8[], the
-- others were ambiguous); the C code reads real[] and float8[] in place.
-- tags: what the caller knows of the request (NULL or empty: none); not
-- STRICT for them, a NULL selector or context gives NULL (no row) as before.
CREATE FUNCTION model_select.select_model(selector text, context anycompatiblearray, tags text[] DEFAULT NULL)
    RETURNS text
    AS 'MODULE_PATHNAME', 'model_select_select_model_timed' LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION model_select.route(selector text, context anycompatiblearray, tags text[] DEFAULT NULL,
    OUT decision_id bigint, OUT arm text, OUT score float8)
    AS 'MODULE_PATHNAME', 'model_select_route_timed' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION model_select.scores(selector text, context anycompatiblearray, tags text[] DEFAULT NULL)
    RETURNS TABLE (arm text, active boolean, n bigint, mean float8, width float8, ucb float8,
                   radius float8, alpha float8, cost float8)
    AS 'MODULE_PATHNAME', 'model_select_scores' LANGUAGE C STABLE PARALLEL SAFE ROWS 8;

-- A past decision's scores, re-derived from the versions and own rewards it
-- recorded (the learner's rule: docs/caches.md).
CREATE FUNCTION model_select.decision_scores(decision_id bigint)
    RETURNS TABLE (arm text, active boolean, n bigint, mean float8, width float8, ucb float8,
                   radius float8, alpha float8, cost float8)
    AS 'MODULE_PATHNAME', 'model_select_decision_scores' LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 8;

-- Route every row of a query (key integer, context: an array of numbers) in one
-- call, scoring blocks of rows at once; with log, the decisions are logged.
CREATE FUNCTION model_select.route_batch(selector text, source text, log boolean DEFAULT false)
    RETURNS TABLE (key bigint, arm text, score float8, mean float8, width float8, decision_id bigint)
    AS 'MODULE_PATHNAME', 'model_select_route_batch' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

-- The caches of arm folds and decoded models (each backend's bounded by the
-- setting model_select.cache_size): entries, bytes, hits, misses, decodes,
-- evictions, and the bytes of the random feature matrices kept; then the
-- server's shared cache (with shared_preload_libraries, else NULL): bases
-- held, their bytes, pins on them, hits and publishes, and evictions.  scope
-- says whose: 'server' (preloaded: every backend's events since the server
-- started, the sizes summed over the live backends; the same answer from
-- every backend, as behind a pooler) or 'backend' (the one that answered:
-- without preloading, or asked with this_backend).  rows_folded: log rows
-- folded onto cached models (by backends and the learner).
CREATE FUNCTION model_select.cache_stats(this_backend boolean DEFAULT false,
    OUT entries int, OUT bytes bigint, OUT hits bigint,
    OUT misses bigint, OUT decodes bigint, OUT evictions bigint, OUT feature_bytes bigint,
    OUT shared_entries int, OUT shared_bytes bigint, OUT shared_pins int,
    OUT shared_hits bigint, OUT shared_publishes bigint, OUT shared_evictions bigint, OUT scope text,
    OUT rows_folded bigint)
    AS 'MODULE_PATHNAME', 'model_select_cache_stats' LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

SELECT pg_catalog.pg_extension_config_dump('model_select.decisions', '');
SELECT pg_catalog.pg_extension_config_dump('model_select.decisions_decision_id_seq', '');

-- Comments (psql: \dt+, \d+, \df+, \dd).
COMMENT ON TABLE model_select.decisions IS
'Decision log written by route(): the chosen arm for a context, with its ucb and predicted mean at decision time. A reward may name the decision_id.';
COMMENT ON COLUMN model_select.decisions.context IS 'The context as given (not normalised) when some value is not exactly a real; else NULL and context_real holds it.';
COMMENT ON COLUMN model_select.decisions.context_real IS 'The context as given (not normalised) when every value is exactly a real (a real[] or pgvector embedding): 4 bytes a value; else NULL. Read back as float8 it is the same values.';
COMMENT ON COLUMN model_select.decisions.score IS 'The chosen arm''s ucb at decision time (Infinity for an untried arm).';
COMMENT ON COLUMN model_select.decisions.mean IS 'The chosen arm''s predicted reward at decision time (drift() compares it with the rewards).';
COMMENT ON COLUMN model_select.decisions.versions IS 'Where a learner publishes versions (the learner''s rule): per arm, in arm order, the rewards of the prefix of its log (in canonical order) that the decision scored; NULL: it scored the exact fold of its snapshot.';
COMMENT ON COLUMN model_select.decisions.own_tx IS 'With versions: the decision''s transaction, when it scored rewards of its own on top of them (else NULL).';
COMMENT ON COLUMN model_select.decisions.own_seq IS 'With own_tx: the seq of the last of its own rewards scored.';
COMMENT ON COLUMN model_select.decisions.cost_weight IS 'The cost weight in force at decision time: with a budget the pacer''s, a function of the costs in the reward log; else the cost_weight setting.';

COMMENT ON COLUMN model_select.decisions.tags IS 'The tags the caller passed (as given, checked), NULL for none: with the context, what the decision scored and what its reward teaches.';
COMMENT ON COLUMN model_select.decisions.expected_cost IS 'With a budget and the setting cost_model: the cost the chosen arm''s cost model predicted for the context, at which the pacer counts the decision while its reward has not come; NULL otherwise (such a decision counts at its arm''s mean cost).';
COMMENT ON COLUMN model_select.decisions.awaited IS 'With the setting count_pending: per arm, in arm order, the rewards it awaited from decisions not rewarded yet, which narrowed its width (decision_scores() re-derives the widths from them); NULL without it.';
COMMENT ON FUNCTION model_select.select_model(text, anycompatiblearray, text[]) IS
'The arm to use for this context and tags: the active arm with the highest ucb, ties broken by a hash of seed, context, tags and ordinal. Reads only (STABLE, PARALLEL SAFE).';
COMMENT ON FUNCTION model_select.route(text, anycompatiblearray, text[]) IS
'The choice of select_model(), logged in decisions with its tags: returns the decision_id (to reward), the arm and its ucb.';
COMMENT ON FUNCTION model_select.route_batch(text, text, boolean) IS
'Routes every row of the query source, which yields (key integer, context real[], float8[], numeric[] or integer[][, tags text[]]): per row the key, the arm select_model() would choose, its ucb (score), mean and width, and with log => true the decision_id of the decision logged for it. Blocks of rows are scored at once, with the bits of select_model() for lin_ucb, rff_ucb and pak_ucb. source runs with the caller''s rights, read only.';
COMMENT ON FUNCTION model_select.decision_scores(bigint) IS
'A logged decision''s scores (the columns of scores()), re-derived bit for bit from the versions and own rewards it recorded, while retention keeps them: needs the route right on its selector; an error for a decision that recorded no version.';
COMMENT ON FUNCTION model_select.scores(text, anycompatiblearray, text[]) IS
'Every arm of the selector (retired ones too) in ordinal order: rewards n, mean, width, ucb = mean + radius * width (with a budget less the pacer''s cost weight times cost), the radius and ridge alpha of the bound for this context, and with a budget the cost the arm is priced at (its cost model''s for this context, else its mean cost; NULL for an arm without a logged cost or without rewards). Reads only.';
COMMENT ON FUNCTION model_select.cache_stats(boolean) IS
'The caches of arm folds and decoded models: entries and bytes held, hits (a cached model reused), misses (an arm folded anew from its checkpoint), states decoded, evictions (least recently used selectors dropped to stay within model_select.cache_size), and bytes of random feature matrices; then the server''s shared cache (model_select in shared_preload_libraries, else NULL): bases held, their bytes, pins on them, bases taken from it and published to it, and evictions. scope: server (with shared_preload_libraries: every backend''s counts since the server started, sizes summed over the live backends, the same from any backend, as behind a pooler) or backend (the backend that answered: without preloading, or with this_backend => true); rows_folded: log rows folded onto cached models, by backends and the learner (where a learner serves the database, about one per reward while it keeps up; more shows backends folding the same rows).';
