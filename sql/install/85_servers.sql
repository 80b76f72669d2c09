-- Servers: ids unique across the servers of a sharded deployment
-- (docs/deployment.md).  Every id that a client may send back to a server
-- (decision_id, cascade_id) or that moves with a selector (reward_id,
-- obs_id) is drawn from a sequence; set_server_id(n) gives this server's
-- four sequences the range [n * 2^48 + 1, (n + 1) * 2^48 - 1], so that two
-- servers with different numbers never draw the same id, and a reward sent
-- to a server that does not hold its decision finds none (42704) instead of
-- crediting another selector's decision of the same number.  Server 0, the
-- default, is the range a fresh install starts in.  The number is read back
-- from the sequences' values (which pg_dump keeps), not their bounds.
CREATE FUNCTION model_select.set_server_id(server int) RETURNS int
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    lo bigint;
    hi bigint;
    t record;
    last bigint;
    used boolean;
BEGIN
    IF server IS NULL OR server < 0 OR server > 32767 THEN
        RAISE EXCEPTION 'server number % is out of range', server USING ERRCODE = '22023',
            HINT = 'A server number is an integer from 0 to 32767, a different one on each server.';
    END IF;
    PERFORM model_select_internal._require_extension_admin('set the server number');
    lo := (server::bigint << 48) + 1;
    hi := lo + ((1::bigint << 48) - 2);
    FOR t IN SELECT * FROM (VALUES ('decisions', 'decision_id'), ('rewards', 'reward_id'),
                                   ('cascade_decisions', 'cascade_id'),
                                   ('cascade_observations', 'obs_id')) v(tab, col) LOOP
        EXECUTE format('SELECT last_value FROM model_select.%I', t.tab || '_' || t.col || '_seq') INTO last;
        IF last BETWEEN lo AND hi THEN
            -- already this server's: keep drawing where it is
            EXECUTE format('ALTER SEQUENCE model_select.%I MINVALUE %s MAXVALUE %s START %s',
                           t.tab || '_' || t.col || '_seq', lo, hi, lo);
        ELSE
            -- rows moved here from that server (move_selector) would be drawn again
            EXECUTE format('SELECT EXISTS (SELECT FROM model_select.%I WHERE %I BETWEEN %s AND %s)',
                           t.tab, t.col, lo, hi) INTO used;
            IF used THEN
                RAISE EXCEPTION 'server number % is in use: model_select.% holds ids of its range', server, t.tab
                    USING ERRCODE = '55000',
                          HINT = 'Rows of another server were moved here; give this server a number of its own.';
            END IF;
            EXECUTE format('ALTER SEQUENCE model_select.%I MINVALUE %s MAXVALUE %s START %s RESTART',
                           t.tab || '_' || t.col || '_seq', lo, hi, lo);
        END IF;
    END LOOP;
    RETURN server;
END $$;

-- as the extension owner: clients have no right on the sequences
CREATE FUNCTION model_select.server_id() RETURNS int
LANGUAGE sql STABLE PARALLEL SAFE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
RETURN ((SELECT last_value FROM model_select.decisions_decision_id_seq) - 1) >> 48;

REVOKE EXECUTE ON FUNCTION model_select.set_server_id(int) FROM PUBLIC;

COMMENT ON FUNCTION model_select.set_server_id(int) IS
'Superusers and the extension owner: gives this server number n (0 to 32767, a different one on each server of a sharded deployment): decision, reward, cascade and observation ids are drawn from n * 2^48 + 1 on, so no two servers draw the same id and a reward sent to the wrong server is refused (42704). Returns n.';
COMMENT ON FUNCTION model_select.server_id() IS
'This server''s number (set_server_id(); 0 by default): the high bits (id >> 48) of the ids it draws.';
