-- model_select 0.2.0 -> 0.3.0: the DDL written by hand.  make turns this file
-- into sql/model_select--0.2.0--0.3.0.sql (scripts/upgrade-script.pl): the
-- line "-- cache_stats(): server-wide counters with preloading, this_backend and
-- scope (issue 43)
DROP FUNCTION model_select.cache_stats();

-- @functions and views@" becomes every function of sql/install/, created or
-- replaced with its comment and rights.  State here what the functions do
-- not carry (docs/hacking.md#upgrades): new and changed tables, columns,
-- constraints and views, the DROP of a function whose arguments or result
-- changed (before the marker), and the migration of data.  After the whole
-- script an updated 0.2.0 install has the catalog of a fresh install
-- (test/session/upgrade.sh compares them).

-- == Tables

-- reward_id is drawn by the BEFORE trigger, after it locked the selector: a
-- default's nextval() would give the transaction its id before that lock.
ALTER TABLE model_select.rewards ALTER COLUMN reward_id DROP DEFAULT;

-- lean reward insert (issue 41): a reward's decision is kept by triggers
-- (src/learning/decision_ref.c), not by a foreign key whose check queried
-- the decision a second time on every reward insert
ALTER TABLE model_select.rewards DROP CONSTRAINT rewards_decision_id_fkey;
COMMENT ON COLUMN model_select.rewards.decision_id IS 'The decision rewarded, if any; at most one reward per decision, which stays while its reward does (triggers, not a foreign key).';

-- probe scores keep the range probe_report() checks, also against direct
-- writes by the administrators who own runs
ALTER TABLE model_select.probe_plan ADD CHECK (score >= -1e15 AND score <= 1e15);

-- the spend the budget's pacer counts (the costs of decisions' rewards);
-- filled in by the rebuild at the end
ALTER TABLE model_select.arm_state
    ADD COLUMN spend_sum float8 NOT NULL DEFAULT 0,
    ADD COLUMN spend_n bigint NOT NULL DEFAULT 0;
COMMENT ON COLUMN model_select.arm_state.spend_sum IS 'Sum of the costs of the rewards of decisions that had one: the spend the budget''s pacer counts (rewards without a decision, such as warm_start()''s, are not spend).';
COMMENT ON COLUMN model_select.arm_state.spend_n IS 'Number of rewards of decisions that had a cost.';
COMMENT ON COLUMN model_select.arm_state.state IS
'The policy''s state in binary form (layout in src/model/state.h); NULL until the first reward. For pak_ucb only the header: the rows are in arm_state_rows.';
COMMENT ON COLUMN model_select.arm_state_rows.rows IS
'Per row array of the state (contexts, values, each packed factor), the values of these rows, concatenated (float8, layout in src/model/state.h).';
COMMENT ON COLUMN model_select.selectors.policy IS 'One of the policies that policies() lists.';
COMMENT ON COLUMN model_select.selectors.kernel IS 'Kernel of a kernelised policy (one of its kernels in policies()); NULL for the others.';
COMMENT ON COLUMN model_select.selector_grants.privilege IS
'route (select_model, route, scores, drift, cascades), reward (INSERT into rewards and cascade_observations) or admin (alter_selector, fit_codebook, add_arm, retire_arm, rebuild_state, checkpoint, resample, cascade_refit, stats_reset, drop_selector).';

-- statistics: where stats_reset() last reset a selector's
CREATE TABLE model_select.stats_resets (
    selector_id int PRIMARY KEY REFERENCES model_select.selectors ON DELETE CASCADE,
    decision_id bigint NOT NULL,
    reward_id   bigint NOT NULL,
    reset_at    timestamptz NOT NULL
);
SELECT pg_catalog.pg_extension_config_dump('model_select.stats_resets', '');
COMMENT ON TABLE model_select.stats_resets IS
'Per selector, where stats_reset() last reset its statistics: the highest decision_id and reward_id then; model_select.stats counts later rows.';
ALTER TABLE model_select.stats_resets ENABLE ROW LEVEL SECURITY;
CREATE POLICY selector_rights ON model_select.stats_resets FOR SELECT
    USING (model_select.has_selector_privilege(selector_id, 'route, reward, admin'));

-- A decision's context is stored once: as real[] (4 bytes a value) when
-- every value is exactly a real, else as float8[]; a reward by decision_id
-- stores none (the fold reads the decision's).  Rows logged before keep
-- theirs: a reward that repeats its decision's context is read as it is.
ALTER TABLE model_select.decisions
    ALTER COLUMN context DROP NOT NULL,
    ADD COLUMN context_real real[],
    ADD CONSTRAINT decisions_one_context CHECK ((context IS NULL) <> (context_real IS NULL));
DO $$
BEGIN
    IF 'lz4' = ANY ((SELECT enumvals FROM pg_catalog.pg_settings
                     WHERE name = 'default_toast_compression')::text[]) THEN
        ALTER TABLE model_select.decisions ALTER COLUMN context_real SET COMPRESSION lz4;
    END IF;
END $$;
ALTER TABLE model_select.decisions ALTER COLUMN context_real SET STORAGE MAIN;
-- no compression tried below a page (sql/install/30_learning.sql says why)
ALTER TABLE model_select.decisions SET (toast_tuple_target = 8160);
ALTER TABLE model_select.rewards SET (toast_tuple_target = 8160);
COMMENT ON COLUMN model_select.decisions.context IS 'The context as given (not normalised) when some value is not exactly a real; else NULL and context_real holds it.';
COMMENT ON COLUMN model_select.decisions.context_real IS 'The context as given (not normalised) when every value is exactly a real (a real[] or pgvector embedding): 4 bytes a value; else NULL. Read back as float8 it is the same values.';
COMMENT ON COLUMN model_select.rewards.context IS 'The context of a reward without a decision; NULL for a reward by decision_id, whose context is the decision''s (stored once; older rows may repeat it).';

-- The log's horizon (src/learning/retention.c): rewards past a selector's
-- "retain" are absorbed into their arm's base, the fold of exactly the
-- rewards deleted from the log (a prefix of it in canonical order), and
-- rebuild_state() folds the retained log onto the base.  Dumped (a base is
-- the only copy of what it absorbed); written only by the extension's code.
CREATE TABLE model_select.arm_base (
    arm_id      int PRIMARY KEY,
    selector_id int NOT NULL,
    n           bigint NOT NULL,
    reward_sum  float8 NOT NULL,
    cost_sum    float8 NOT NULL,
    cost_n      bigint NOT NULL,
    spend_sum   float8 NOT NULL,
    spend_n     bigint NOT NULL,
    state       bytea,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (arm_id, selector_id) REFERENCES model_select.arms (arm_id, selector_id)
        ON DELETE CASCADE
);
CREATE INDEX ON model_select.arm_base (selector_id);
ALTER TABLE model_select.arm_base ALTER COLUMN state SET STORAGE EXTERNAL;
SELECT pg_catalog.pg_extension_config_dump('model_select.arm_base', '');
COMMENT ON TABLE model_select.arm_base IS
'Per arm, the base of its log: the fold of the rewards that retention absorbed and deleted (a prefix of the log in canonical order), under the selector''s current settings, with their totals. rebuild_state() folds the retained log onto it. Dumped; written only by the extension as its owner.';
COMMENT ON COLUMN model_select.arm_base.n IS 'Rewards absorbed; reward_sum, cost_sum, cost_n, spend_sum and spend_n are their totals, as arm_state''s are of the rewards it folded.';
COMMENT ON COLUMN model_select.arm_base.state IS 'The fold of the absorbed rewards in binary form (layout in src/model/state.h).';
COMMENT ON COLUMN model_select.arm_base.updated_at IS 'When the base last absorbed rewards.';
ALTER TABLE model_select.arm_base ENABLE ROW LEVEL SECURITY;
CREATE POLICY selector_rights ON model_select.arm_base FOR SELECT
    USING (model_select.has_selector_privilege(selector_id, 'route, reward, admin'));

-- Codebooks (src/model/codebook.c): the centroids fit_codebook() fitted,
-- whose one-hot lin_ucb appends to the features.
CREATE TABLE model_select.codebooks (
    selector_id int PRIMARY KEY REFERENCES model_select.selectors ON DELETE CASCADE,
    -- k × dim: row j is centroid j of the prepared contexts
    centroids   float8[] NOT NULL CHECK (array_ndims(centroids) = 2),
    normalized  boolean NOT NULL,
    rows        bigint NOT NULL CHECK (rows > 0),
    fitted_at   timestamptz NOT NULL DEFAULT now()
);
SELECT pg_catalog.pg_extension_config_dump('model_select.codebooks', '');
COMMENT ON TABLE model_select.codebooks IS
'The fitted codebook of each selector with the setting codebook: k centroids of its prepared contexts (k-means), whose one-hot lin_ucb appends to the features. Written by fit_codebook() only (and by warm_start(), which calls it); a write re-learns every arm from the log.';
COMMENT ON COLUMN model_select.codebooks.centroids IS 'k × dim array: row j is centroid j, in the space of the prepared (by default L2-normalised) contexts.';
COMMENT ON COLUMN model_select.codebooks.normalized IS 'The selector''s normalize setting when they were fitted: the centroids serve only while it is the same (else the one-hot is zeros until a refit).';
COMMENT ON COLUMN model_select.codebooks.rows IS 'Contexts the centroids were fitted on.';
ALTER TABLE model_select.codebooks ENABLE ROW LEVEL SECURITY;
CREATE POLICY selector_rights ON model_select.codebooks FOR SELECT
    USING (model_select.has_selector_privilege(selector_id, 'route, reward, admin'));

-- == Internal functions in a schema of their own, on which no application has
-- == USAGE (those new in 0.3.0 are created there below)

CREATE SCHEMA model_select_internal;
COMMENT ON SCHEMA model_select_internal IS
'Internal functions of model_select: the bodies that run as the extension owner, trigger functions, locks and the probe steps. No USAGE for PUBLIC; administrators (setup_role()) get it for the probe steps.';

-- the rows a selector's load reads, kept per backend (issue 41): the
-- relation whose invalidation and lock signal their change
CREATE TABLE model_select_internal.selector_rows_signal ();
COMMENT ON TABLE model_select_internal.selector_rows_signal IS
'Internal: holds nothing. Its relcache invalidation and its lock signal a change to the rows of selectors, arms, arm_state and selector_grants that backends keep for their loads.';

ALTER FUNCTION model_select._add_arm(text, text) SET SCHEMA model_select_internal;
ALTER FUNCTION model_select._create_selector(regrole, text, int, text[], text, text, jsonb, bigint)
    SET SCHEMA model_select_internal;
ALTER FUNCTION model_select._alter_selector(text, jsonb) SET SCHEMA model_select_internal;
ALTER FUNCTION model_select._drop_selector(text) SET SCHEMA model_select_internal;
ALTER FUNCTION model_select._retire_arm(text, text) SET SCHEMA model_select_internal;
ALTER FUNCTION model_select._grant_selector(text, regrole, text) SET SCHEMA model_select_internal;
ALTER FUNCTION model_select._revoke_selector(text, regrole, text) SET SCHEMA model_select_internal;
ALTER FUNCTION model_select._grant_privilege(text, regrole, text) SET SCHEMA model_select_internal;
ALTER FUNCTION model_select._settings_lock(int) SET SCHEMA model_select_internal;
ALTER FUNCTION model_select._resolve_settings_over(text, text, jsonb, int, jsonb) SET SCHEMA model_select_internal;
ALTER FUNCTION model_select._rewards_resolve() SET SCHEMA model_select_internal;
ALTER FUNCTION model_select._rewards_apply() SET SCHEMA model_select_internal;
ALTER FUNCTION model_select._rewards_append_only() SET SCHEMA model_select_internal;
ALTER FUNCTION model_select._cascade_resolve() SET SCHEMA model_select_internal;
ALTER FUNCTION model_select._cascade_apply() SET SCHEMA model_select_internal;
ALTER FUNCTION model_select._cascade_append_only() SET SCHEMA model_select_internal;
ALTER FUNCTION model_select._probe_create(text, int, int, float8, text, text, jsonb, bigint)
    SET SCHEMA model_select_internal;
ALTER FUNCTION model_select._probe_load_pool(int, text) SET SCHEMA model_select_internal;
ALTER FUNCTION model_select._probe_start(int) SET SCHEMA model_select_internal;
ALTER FUNCTION model_select._probe_advance(int) SET SCHEMA model_select_internal;
ALTER FUNCTION model_select._probe_plan(int) SET SCHEMA model_select_internal;
ALTER FUNCTION model_select._probe_eliminate(int) SET SCHEMA model_select_internal;
ALTER FUNCTION model_select._probe_lock_for_report(text, float8) SET SCHEMA model_select_internal;
ALTER FUNCTION model_select._probe_record(model_select.probe_runs, int, float8) SET SCHEMA model_select_internal;

-- == Restore in any order (pg_restore -j): restored rows wait for those they
-- == reference (sql/install/90_restore.sql; its triggers below, after the functions)

CREATE TABLE model_select_internal.restore_pending (
    relid   regclass NOT NULL,
    id      bigserial,
    row_text text NOT NULL,
    PRIMARY KEY (relid, id)
);
COMMENT ON TABLE model_select_internal.restore_pending IS
'Rows of a restore (pg_restore''s COPY) waiting for the rows they reference: inserted into their table (relid) once those are there, in the order they came (id). Empty after the restore of a complete dump.';

-- == Functions whose arguments or result changed

-- contexts: one function per entry point taking anycompatiblearray, instead
-- of real[] and float8[] overloads, between which numeric[], integer[] and
-- untyped literals were ambiguous
DROP FUNCTION model_select.select_model(text, float8[]), model_select.select_model(text, real[]),
    model_select.route(text, float8[]), model_select.route(text, real[]),
    model_select.scores(text, float8[]), model_select.scores(text, real[]),
    model_select.cascade(text, float8[], float8), model_select.cascade(text, real[], float8),
    model_select.cascade_scores(text, float8[], float8), model_select.cascade_scores(text, real[], float8),
    model_select.cascade_next(text, float8[], float8, text[], float8),
    model_select.cascade_next(text, real[], float8, text[], float8),
    model_select.cascade_route(text, float8[], float8), model_select.cascade_route(text, real[], float8);
-- quality_cost() takes a warm start
DROP FUNCTION model_select.quality_cost(text, text, text, jsonb, float8[], float8[], bigint, int);

-- == Late and sparse feedback in replay() (issue 42): arguments delay and
-- == feedback, result column learned
DROP FUNCTION model_select.replay(text, text, text, jsonb, bigint, float8, int, int, int, boolean, text);

-- decisions score published versions (issue 41): what each decision scored
ALTER TABLE model_select.decisions
    ADD COLUMN versions bigint[],
    ADD COLUMN own_tx xid8,
    ADD COLUMN own_seq bigint;
COMMENT ON COLUMN model_select.decisions.versions IS 'Where a learner publishes versions (the learner''s rule): per arm, in arm order, the rewards of the prefix of its log (in canonical order) that the decision scored; NULL: it scored the exact fold of its snapshot.';
COMMENT ON COLUMN model_select.decisions.own_tx IS 'With versions: the decision''s transaction, when it scored rewards of its own on top of them (else NULL).';
COMMENT ON COLUMN model_select.decisions.own_seq IS 'With own_tx: the seq of the last of its own rewards scored.';

-- == Tags (issue 42 part 3): select_model(), route() and scores() take tags
-- == (their 0.2.0 overloads are dropped above), logged once on the decision
-- == (or on a reward without one); _source_rows() returns them
DROP FUNCTION model_select._source_rows(text);
ALTER TABLE model_select.decisions ADD COLUMN tags text[];
ALTER TABLE model_select.rewards ADD COLUMN tags text[];
COMMENT ON COLUMN model_select.decisions.tags IS 'The tags the caller passed (as given, checked), NULL for none: with the context, what the decision scored and what its reward teaches.';
COMMENT ON COLUMN model_select.rewards.tags IS 'The tags of a reward without a decision (NULL: none); NULL for a reward by decision_id, whose tags are the decision''s.';

-- count_pending (issue 42, late feedback): the rewards each arm awaited
ALTER TABLE model_select.decisions ADD COLUMN awaited float8[];
COMMENT ON COLUMN model_select.decisions.awaited IS 'With the setting count_pending: per arm, in arm order, the rewards it awaited from decisions not rewarded yet, which narrowed its width (decision_scores() re-derives the widths from them); NULL without it.';

-- the budget's cost model (issue 42): what the chosen arm was expected to cost
ALTER TABLE model_select.decisions ADD COLUMN expected_cost float8;
COMMENT ON COLUMN model_select.decisions.expected_cost IS 'With a budget and the setting cost_model: the cost the chosen arm''s cost model predicted for the context, at which the pacer counts the decision while its reward has not come; NULL otherwise (such a decision counts at its arm''s mean cost).';

-- the pacer reads a selector's newest decisions and their rewards through
-- these, in full order, and no more of the log (src/routing/pacer.c)
DROP INDEX model_select.decisions_selector_id_created_at_idx;
CREATE INDEX ON model_select.decisions (selector_id, created_at, decision_id);
DROP INDEX model_select.rewards_selector_id_idx;
CREATE INDEX ON model_select.rewards (selector_id, decision_id);

-- @functions and views@

-- the rows a selector's load reads, kept per backend (issue 41): every
-- statement that writes them signals it (after the functions: its function
-- is new)
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['selectors', 'arms', 'arm_state', 'selector_grants'] LOOP
        -- a checkpoint's UPDATE does not signal: loads check the kept arm_state row versions
        EXECUTE format('CREATE TRIGGER selector_rows_changed AFTER INSERT OR %s OR DELETE OR TRUNCATE'
                       ' ON model_select.%I FOR EACH STATEMENT'
                       ' EXECUTE FUNCTION model_select_internal._selector_rows_changed()',
                       CASE t WHEN 'arm_state' THEN 'UPDATE OF arm_id, selector_id' ELSE 'UPDATE' END, t);
        EXECUTE format('ALTER TABLE model_select.%I ENABLE ALWAYS TRIGGER selector_rows_changed', t);
    END LOOP;
END $$;

-- written codebooks void the checkpoints (after the functions: its function is new)
CREATE TRIGGER codebook_changed AFTER INSERT OR UPDATE ON model_select.codebooks
    FOR EACH ROW EXECUTE FUNCTION model_select_internal._codebook_changed();

-- lean reward insert (issue 41): the trigger that keeps a reward's decision
-- (after the functions: its function is new)
CREATE TRIGGER decisions_rewarded AFTER DELETE ON model_select.decisions
    FOR EACH ROW EXECUTE FUNCTION model_select_internal._decisions_rewarded();
COMMENT ON TRIGGER decisions_rewarded ON model_select.decisions IS 'Keeps the decision of every reward by decision (in place of a foreign key).';
-- and keeps every decision as it was logged (its rewards read its context and tags)
CREATE TRIGGER decisions_fixed BEFORE UPDATE ON model_select.decisions
    FOR EACH ROW EXECUTE FUNCTION model_select_internal._decisions_fixed();
CREATE TRIGGER decisions_fixed_truncate BEFORE TRUNCATE ON model_select.decisions
    FOR EACH STATEMENT EXECUTE FUNCTION model_select_internal._decisions_fixed();
COMMENT ON TRIGGER decisions_fixed ON model_select.decisions IS 'Keeps every decision as it was logged (but its created_at).';
COMMENT ON TRIGGER decisions_fixed_truncate ON model_select.decisions IS 'Keeps the decision log from being truncated.';

-- restore in any order: the triggers of the dumped tables (after the
-- functions: theirs are new)
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['arms', 'codebooks', 'selector_grants', 'stats_resets', 'decisions', 'arm_base',
                             'rewards', 'cascade_decisions', 'cascade_observations', 'probe_pool', 'probe_plan'] LOOP
        EXECUTE format('CREATE TRIGGER _restore_park BEFORE INSERT ON model_select.%I'
                       ' FOR EACH ROW EXECUTE FUNCTION model_select_internal._restore_park()', t);
    END LOOP;
    FOREACH t IN ARRAY ARRAY['selectors', 'arms', 'codebooks', 'selector_grants', 'stats_resets', 'decisions',
                             'arm_base', 'rewards', 'cascade_decisions', 'cascade_observations', 'probe_runs',
                             'probe_pool', 'probe_plan'] LOOP
        EXECUTE format('CREATE TRIGGER _restore_settle AFTER INSERT ON model_select.%I'
                       ' FOR EACH STATEMENT EXECUTE FUNCTION model_select_internal._restore_settle()', t);
    END LOOP;
END $$;

-- == Data

-- Roles that setup_role() set up before get what it now grants them too: the
-- new views and table (applications and administrators: SELECT on
-- arm_stats), the internal schema (administrators: EXECUTE on the probe
-- steps, which keep their grants in the schema they moved to).
DO $$
DECLARE
    r regrole;
BEGIN
    FOR r IN SELECT DISTINCT a.grantee::regrole
               FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
              WHERE c.oid = 'model_select.arm_stats'::regclass AND a.privilege_type = 'SELECT'
                AND a.grantee <> c.relowner AND a.grantee <> 0 LOOP
        EXECUTE format('GRANT SELECT ON model_select.learner, model_select.learner_lag, '
                       'model_select.learner_versions, model_select.stats, model_select.stats_resets, '
                       'model_select.progress, model_select.arm_base, model_select.codebooks TO %s', r);
    END LOOP;
    FOR r IN SELECT DISTINCT a.grantee::regrole
               FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
              WHERE p.oid = 'model_select_internal._probe_create(text, int, int, float8, text, text, jsonb, bigint)'::regprocedure
                AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner AND a.grantee <> 0 LOOP
        EXECUTE format('GRANT USAGE ON SCHEMA model_select_internal TO %s', r);
    END LOOP;
END $$;

-- (tags) Roles that may insert rewards' contexts may give their tags too.
DO $$
DECLARE
    r regrole;
BEGIN
    FOR r IN SELECT DISTINCT a.grantee::regrole
               FROM pg_catalog.pg_attribute t, pg_catalog.aclexplode(t.attacl) a
              WHERE t.attrelid = 'model_select.rewards'::regclass AND t.attname = 'context'
                AND a.privilege_type = 'INSERT' AND a.grantee <> 0 LOOP
        EXECUTE format('GRANT INSERT (tags) ON model_select.rewards TO %s', r);
    END LOOP;
END $$;

-- Selectors of 0.2.0 keep their widths and features: noise_prior and
-- codebook (lin_ucb's defaults 5 and 8 since 0.3.0) are stored off wherever
-- they apply.  (An update from 0.1.0 has already stored the new defaults:
-- 0.1.0--0.2.0.sql resolves settings with this library.)
UPDATE model_select.selectors
   SET settings = settings || '{"noise_prior": 0}'
 WHERE model_select.resolve_settings(policy, kernel, settings) ? 'noise_prior';
UPDATE model_select.selectors
   SET settings = settings || '{"codebook": 0}'
 WHERE model_select.resolve_settings(policy, kernel, settings) ? 'codebook';
-- (tags) and their dimension: no tag buckets (alter_selector() can add them;
-- the logged tags are then learnt)
UPDATE model_select.selectors
   SET settings = settings || '{"tag_buckets": 0}'
 WHERE model_select.resolve_settings(policy, kernel, settings) ? 'tag_buckets';

-- Every arm's checkpoint re-derived from its log, with its spend.
SELECT model_select.rebuild_state(name) FROM model_select.selectors ORDER BY selector_id;

-- Issue 41, the lean decision: the logs name their arm without a foreign key
-- (two checks, some 80 k instructions per decision), and the key-share lock every
-- decision and reward took on one of a handful of arm rows made a MultiXact
-- per transaction under concurrency.  drop_selector() deletes the logs itself
-- (sql/install/10_core.sql; the functions follow, generated).
ALTER TABLE model_select.decisions DROP CONSTRAINT decisions_arm_id_selector_id_fkey;
ALTER TABLE model_select.rewards DROP CONSTRAINT rewards_arm_id_selector_id_fkey;
