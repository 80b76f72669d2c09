-- Progress of long commands (replay, route_batch, warm_start, rebuild_state,
-- checkpoint, alter_selector and the other administration functions): one
-- row per backend running one, from shared memory, so from any session;
-- empty unless model_select is in shared_preload_libraries.  The setting
-- model_select.progress_interval also sends NOTICEs to the command's client.
-- The reader is in model_select (as stats' _latency): the view's readers
-- run it with their own rights; it shows another role's rows as the pid only.
CREATE FUNCTION model_select._progress(OUT pid int, OUT command text, OUT target text,
    OUT done bigint, OUT total bigint, OUT unit text, OUT started timestamptz, OUT seconds float8)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'model_select_progress' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE VIEW model_select.progress AS
SELECT pid, command, target, done, total, unit,
       CASE WHEN total > 0 THEN done::float8 / total END AS fraction, started, seconds
  FROM model_select._progress();

-- For commands written in PL/pgSQL (warm_start, the only command it takes),
-- run with the caller's rights: the target is a selector on which the
-- caller holds the reward right (42501; an unknown one 42704).
CREATE FUNCTION model_select._progress_begin(command text, target text) RETURNS void
    AS 'MODULE_PATHNAME', 'model_select_progress_begin' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION model_select._progress_end() RETURNS void
    AS 'MODULE_PATHNAME', 'model_select_progress_end' LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON VIEW model_select.progress IS
'Long commands in progress, one row per backend (with shared_preload_libraries, else none): command, its selector, units (rounds, rows, rewards, arms) done of total (NULL: not known in advance), fraction, start and seconds elapsed. Another role''s rows show only the pid, as in pg_stat_activity.';
COMMENT ON FUNCTION model_select._progress() IS
'Internal: the rows of view progress, read from shared memory.';
COMMENT ON FUNCTION model_select._progress_begin(text, text) IS
'Internal: a PL/pgSQL command (warm_start, the only one taken: 22023 for another) begins reporting progress on a selector on which the caller holds the reward right (42501); what it runs reports the units.';
COMMENT ON FUNCTION model_select._progress_end() IS
'Internal: the end of a command begun by _progress_begin().';
