-- The learner process (src/learning/learner.c): checkpoints outside the
-- application's transactions, its status, and maintain() for the same work
-- without preloading (e.g. from pg_cron).

CREATE FUNCTION model_select.maintain(selector text DEFAULT NULL) RETURNS bigint
    AS 'MODULE_PATHNAME', 'model_select_maintain' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION model_select.learner_status(
    OUT running boolean, OUT pid int, OUT database text, OUT started timestamptz,
    OUT last_pass timestamptz, OUT passes bigint, OUT arms_checkpointed bigint,
    OUT rewards_folded bigint, OUT selectors_skipped bigint, OUT errors bigint,
    OUT versions_published bigint, OUT lag_ms_p50 float8, OUT lag_ms_p99 float8,
    OUT lag_rewards_p50 float8, OUT lag_rewards_p99 float8, OUT worker int)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'model_select_learner_status' LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE VIEW model_select.learner AS SELECT * FROM model_select.learner_status();

-- Per selector: the rewards no checkpoint holds yet (every reader folds
-- them) and the age of the oldest, with the reader's rights (row-level
-- security shows each role its own selectors).
CREATE VIEW model_select.learner_lag WITH (security_invoker = true) AS
SELECT s.name AS selector, count(r.reward_id) AS pending_rewards,
       extract(epoch FROM pg_catalog.now() - min(r.created_at))::float8 AS lag_seconds
  FROM model_select.selectors s
  JOIN model_select.arms a USING (selector_id)
  LEFT JOIN model_select.arm_state st
         ON st.arm_id = a.arm_id AND st.settings_version = s.settings_version
  LEFT JOIN model_select.rewards r
         ON r.arm_id = a.arm_id
        AND (r.tx, r.seq) > (coalesce(st.ckpt_tx, '0'::xid8), coalesce(st.ckpt_seq, 0))
 GROUP BY s.name;

-- The arm models published in the shared cache (the learner's versions,
-- and bases backends published), for the arms of the selectors the caller
-- may see, with how far the log has moved on since each.
CREATE FUNCTION model_select.shared_versions(
    OUT arm_id int, OUT settings_version int, OUT checkpoint_version bigint,
    OUT position_tx xid8, OUT position_seq bigint, OUT rewards bigint,
    OUT stale boolean, OUT bytes bigint, OUT pins int, OUT published_at timestamptz)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'model_select_shared_versions' LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE VIEW model_select.learner_versions WITH (security_invoker = true) AS
SELECT s.name AS selector, a.name AS arm, v.checkpoint_version, v.rewards, v.stale,
       v.bytes, v.pins, v.published_at, l.lag_rewards, l.lag_seconds
  FROM model_select.shared_versions() v
  JOIN model_select.arms a USING (arm_id)
  JOIN model_select.selectors s USING (selector_id)
  CROSS JOIN LATERAL (
        SELECT count(*) AS lag_rewards,
               extract(epoch FROM pg_catalog.now() - min(r.created_at))::float8 AS lag_seconds
          FROM model_select.rewards r
         WHERE r.arm_id = v.arm_id AND (r.tx, r.seq) > (v.position_tx, v.position_seq)) l;

COMMENT ON FUNCTION model_select.maintain(text) IS
'Checkpoints every due arm of the selector (admin right), or of every selector the caller administers, now; skips what another transaction holds. Returns the rewards folded. The learner process does this in the background when preloaded.';
COMMENT ON FUNCTION model_select.learner_status() IS
'One row per learner process: model_select.learner_workers per database of model_select.learner_databases (preloaded; none without a learner), worker numbering them from 0 (each takes the arms whose arm_id modulo learner_workers is its number): whether it runs, its pid, the database, start, last pass and counters (versions_published: arm models it published in the shared cache for backends to score from), and its lag over its last 256 passes that had rewards to publish: p50 and p99 of the milliseconds from the commit of the oldest reward a pass was woken for to the end of that pass, and of the rewards committed meanwhile.';
COMMENT ON VIEW model_select.learner IS
'The learner processes, model_select.learner_workers per database of model_select.learner_databases, and their counters (learner_status()).';
COMMENT ON VIEW model_select.learner_lag IS
'Per selector: rewards no checkpoint holds yet, and the age in seconds of the oldest of them.';
COMMENT ON FUNCTION model_select.shared_versions() IS
'The arm models in the shared cache (model_select preloaded) for this database''s arms of selectors the caller may see: their checkpoint, position in the log and rewards (every version is a prefix of the arm''s log: each row up to its position was final when it was folded), stale, bytes, pins and when published. No rows without a shared cache.';
COMMENT ON VIEW model_select.learner_versions IS
'Per published arm model (shared_versions()): selector, arm, rewards it holds, stale, bytes, pins, when published, and the rewards logged after its position with the age of the oldest (lag).';
