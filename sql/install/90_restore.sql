-- Restore in any order (src/model/restore_order.c): pg_restore -j loads the
-- dumped tables in parallel, biggest first, each COPY in a transaction of its
-- own with the constraints and triggers in force.  A restoring COPY (by a
-- role with the owner's rights) into a table whose rows reference another
-- dumped table parks its rows here; at the end of every restoring COPY the
-- parked rows of each table whose references are all there are inserted,
-- under one lock, so that the last COPY to commit leaves nothing parked.
CREATE TABLE model_select_internal.restore_pending (
    relid   regclass NOT NULL,
    id      bigserial,
    row_text text NOT NULL,
    PRIMARY KEY (relid, id)
);

CREATE FUNCTION model_select_internal._restore_park() RETURNS trigger
    AS 'MODULE_PATHNAME', 'model_select_restore_park' LANGUAGE C PARALLEL UNSAFE;
CREATE FUNCTION model_select_internal._restore_settle() RETURNS trigger
    AS 'MODULE_PATHNAME', 'model_select_restore_settle' LANGUAGE C PARALLEL UNSAFE;

-- The parked rows of each table, in the order of the references (a table
-- after those it references) and each table's rows in the order they came,
-- all or none: a table whose rows miss a reference (23503, or a log
-- trigger's 42704) waits for a later COPY.  Bases void their selectors'
-- checkpoints, which may have learnt the log without them.
CREATE FUNCTION model_select_internal._restore_insert_parked() RETURNS bigint
LANGUAGE plpgsql PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    t regclass;
    moved bigint;
    missing boolean;
    total bigint := 0;
BEGIN
    FOREACH t IN ARRAY ARRAY['model_select.arms', 'model_select.codebooks', 'model_select.selector_grants',
                             'model_select.stats_resets', 'model_select.decisions', 'model_select.arm_base',
                             'model_select.rewards', 'model_select.cascade_decisions',
                             'model_select.cascade_observations', 'model_select.probe_pool',
                             'model_select.probe_plan']::regclass[] LOOP
        CONTINUE WHEN NOT EXISTS (SELECT 1 FROM model_select_internal.restore_pending p WHERE p.relid = t);
        -- the logs name their arm without a foreign key: their rows wait
        -- for every arm they name, as a key would have made them
        IF t IN ('model_select.decisions'::regclass, 'model_select.rewards'::regclass) THEN
            EXECUTE format('SELECT EXISTS (SELECT 1 FROM (SELECT p.row_text::%s AS x'
                           '  FROM model_select_internal.restore_pending p WHERE p.relid = $1 OFFSET 0) r'
                           ' WHERE NOT EXISTS (SELECT 1 FROM model_select.arms a'
                           '                    WHERE a.arm_id = (r.x).arm_id AND a.selector_id = (r.x).selector_id))',
                           t) USING t INTO missing;
            CONTINUE WHEN missing;
        END IF;
        BEGIN
            EXECUTE format('INSERT INTO %s SELECT (r.x).* FROM (SELECT p.row_text::%s AS x, p.id'
                           '  FROM model_select_internal.restore_pending p WHERE p.relid = $1 OFFSET 0) r'
                           ' ORDER BY r.id', t, t) USING t;
            GET DIAGNOSTICS moved = ROW_COUNT;
            IF t = 'model_select.arm_base'::regclass THEN
                -- a base may come after its arm's log was learnt: void the
                -- selector's checkpoints (as a written codebook does), so
                -- that the arm is learnt again from its base and log
                UPDATE model_select.selectors s SET settings_version = s.settings_version + 1
                 WHERE s.selector_id IN (SELECT (p.row_text::model_select.arm_base).selector_id
                                           FROM model_select_internal.restore_pending p WHERE p.relid = t);
            END IF;
            DELETE FROM model_select_internal.restore_pending p WHERE p.relid = t;
            total := total + moved;
        EXCEPTION WHEN foreign_key_violation OR undefined_object THEN
            NULL;
        END;
    END LOOP;
    RETURN total;
END $$;

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

COMMENT ON TABLE model_select_internal.restore_pending IS
'Rows of a restore (pg_restore''s COPY) waiting for the rows they reference: inserted into their table (relid) once those are there, in the order they came (id). Empty after the restore of a complete dump.';
COMMENT ON FUNCTION model_select_internal._restore_park() IS
'Trigger function of _restore_park (BEFORE INSERT, each row) on the dumped tables that reference others: parks the rows of a restoring COPY in restore_pending.';
COMMENT ON FUNCTION model_select_internal._restore_settle() IS
'Trigger function of _restore_settle (AFTER INSERT, each statement) on the dumped tables: after a restoring COPY, under the restore lock until commit, inserts the parked rows whose references are there (_restore_insert_parked()).';
COMMENT ON FUNCTION model_select_internal._restore_insert_parked() IS
'Internal: inserts the parked rows of each table whose references are all there, table by table in the order of their references, each table''s rows in the order they came; returns the rows inserted.';
REVOKE EXECUTE ON FUNCTION model_select_internal._restore_park(), model_select_internal._restore_settle(),
    model_select_internal._restore_insert_parked() FROM PUBLIC;
