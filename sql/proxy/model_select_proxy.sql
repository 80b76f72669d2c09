-- model_select on PL/Proxy: run with psql on a proxy database (one without
-- the extension) to give it schema model_select with the functions
-- applications call, each forwarded to the shard that holds the selector
-- (docs/deployment.md#shards-on-plproxy).  Beforehand, as a superuser:
--
--   CREATE EXTENSION plproxy;
--   CREATE SERVER model_select_shards FOREIGN DATA WRAPPER plproxy
--       OPTIONS (p0 'dbname=... host=... port=...', p1 '...');   -- 2^k shards
--   CREATE USER MAPPING FOR PUBLIC SERVER model_select_shards;
--
-- then \i this file and SELECT model_select_proxy.number_shards(), which
-- gives shard p the server number p + 1 (set_server_id(): decision ids tell
-- their shard).  Each shard is a database with the extension; roles have the
-- same names on the proxy and the shards (PL/Proxy connects as the caller).
--
-- A selector lives on partition hashtext(name) & (shards - 1) unless
-- model_select_proxy.placement says otherwise (a selector moved by
-- scripts/ms-move-selector.sh).  A reward by decision_id goes to the shard
-- whose number the id carries (id >> 48), or to where its selector moved.
-- Errors of a shard keep their SQLSTATE; a shard that cannot be reached is
-- 08006, naming it (a WARNING in the listings over all shards, which return
-- the other shards' rows).
\set ON_ERROR_STOP on
BEGIN;
CREATE SCHEMA model_select_proxy;
CREATE SCHEMA IF NOT EXISTS model_select;
GRANT USAGE ON SCHEMA model_select_proxy, model_select TO PUBLIC;
-- PL/Proxy connects as the caller, who needs USAGE on the server; what the
-- caller may do is checked by the shard
GRANT USAGE ON FOREIGN SERVER model_select_shards TO PUBLIC;

-- a selector's partition when it is not its hash's; NULL while it moves
CREATE TABLE model_select_proxy.placement (
    selector  text PRIMARY KEY,
    partition int CHECK (partition >= 0)
);
-- the decisions of moved selectors, which their id no longer places
CREATE TABLE model_select_proxy.moved_decisions (
    decision_id bigint PRIMARY KEY,
    partition   int NOT NULL,
    moved_at    timestamptz NOT NULL DEFAULT now()
);
GRANT SELECT ON model_select_proxy.placement, model_select_proxy.moved_decisions TO PUBLIC;

-- the cluster's partitions: their number and connection strings
CREATE FUNCTION model_select_proxy.partitions() RETURNS TABLE (partition int, dsn text)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT substr(split_part(o, '=', 1), 2)::int, substr(o, strpos(o, '=') + 1)
      FROM pg_foreign_server s, unnest(s.srvoptions) o
     WHERE s.srvname = 'model_select_shards' AND o ~ '^p[0-9]+='
     ORDER BY 1
$$;

CREATE FUNCTION model_select_proxy.shard_of(selector text) RETURNS int
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    placed boolean := false;
    p int;
BEGIN
    SELECT true, pl.partition INTO placed, p FROM model_select_proxy.placement pl WHERE pl.selector = shard_of.selector;
    IF placed AND p IS NULL THEN
        RAISE EXCEPTION 'selector "%" is being moved between shards', selector USING ERRCODE = '55006',
            HINT = 'Retry once the move has finished.';
    END IF;
    RETURN coalesce(p, hashtext(selector) & ((SELECT count(*)::int FROM model_select_proxy.partitions()) - 1));
END $$;

CREATE FUNCTION model_select_proxy.shard_of_decision(decision_id bigint) RETURNS int
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    p int;
    n int := (SELECT count(*) FROM model_select_proxy.partitions());
BEGIN
    SELECT m.partition INTO p FROM model_select_proxy.moved_decisions m WHERE m.decision_id = shard_of_decision.decision_id;
    IF p IS NULL THEN
        p := (decision_id >> 48)::int - 1;
        IF p < 0 OR p >= n THEN
            RAISE EXCEPTION 'decision % was not drawn by a shard of this cluster', decision_id USING ERRCODE = '42704',
                DETAIL = format('Its id carries server number %s; the shards are numbered 1 to %s.', decision_id >> 48, n);
        END IF;
    END IF;
    RETURN p;
END $$;

-- RUN ON takes a function: a partition given by number
CREATE FUNCTION model_select_proxy.partition_id(partition int) RETURNS int
LANGUAGE sql IMMUTABLE AS 'SELECT partition';

-- Each forwarded function twice: model_select_proxy._NAME, the PL/Proxy
-- function, and model_select.NAME, which calls it and turns PL/Proxy's XX000
-- "connection ... failed" into 08006 naming the shard.  A function over all
-- shards (run_on ALL) calls each shard in turn: an unreachable one is a
-- WARNING (08006, naming it) and the others' rows are returned.
CREATE FUNCTION model_select_proxy._forward(name text, args text, result text, run_on text, query text,
                                            grant_to_public boolean)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    nargs int := CASE WHEN args = '' THEN 0 ELSE array_length(regexp_split_to_array(args, ',\s*(?![^(]*\))'), 1) END;
    call text := (SELECT coalesce(string_agg('$' || i, ', '), '') FROM generate_series(1, nargs) i);
    setof boolean := result ~ '^(SETOF|TABLE)';
    unreachable text := $u$SQLERRM ~ 'PQconnect|connection to server|could not connect|server closed the connection|connection not open'$u$;
BEGIN
    IF run_on = 'ALL' THEN
        EXECUTE format('CREATE FUNCTION model_select_proxy.%I(partition int) RETURNS %s LANGUAGE plproxy AS %L',
                       '_' || name, result,
                       format('CLUSTER ''model_select_shards''; RUN ON model_select_proxy.partition_id(partition); %s;', query));
        EXECUTE format($w$CREATE FUNCTION model_select.%I() RETURNS %s LANGUAGE plpgsql
            SET search_path = pg_catalog, pg_temp AS %L$w$, name, result, format($b$
DECLARE
    shard int;
BEGIN
    FOR shard IN SELECT q.partition FROM model_select_proxy.partitions() q LOOP
        BEGIN
            RETURN QUERY SELECT * FROM model_select_proxy.%I(shard);
        EXCEPTION WHEN internal_error THEN
            IF NOT (%s) THEN
                RAISE;
            END IF;
            PERFORM model_select_proxy._unreachable(shard, SQLERRM, true);
        END;
    END LOOP;
END $b$, '_' || name, unreachable));
    ELSE
        EXECUTE format('CREATE FUNCTION model_select_proxy.%I(%s) RETURNS %s LANGUAGE plproxy AS %L',
                       '_' || name, args, result,
                       format('CLUSTER ''model_select_shards''; RUN ON %s; %s;', run_on, query));
        EXECUTE format($w$CREATE FUNCTION model_select.%I(%s) RETURNS %s LANGUAGE plpgsql
            SET search_path = pg_catalog, pg_temp AS %L$w$, name, args, result, format($b$
BEGIN
    %s
EXCEPTION WHEN internal_error THEN
    IF %s THEN
        PERFORM model_select_proxy._unreachable(%s, SQLERRM, false);
    END IF;
    RAISE;
END $b$,
            CASE WHEN setof THEN format('RETURN QUERY SELECT * FROM model_select_proxy.%I(%s);', '_' || name, call)
                 WHEN result = 'void' THEN format('PERFORM model_select_proxy.%I(%s);', '_' || name, call)
                 ELSE format('RETURN model_select_proxy.%I(%s);', '_' || name, call) END,
            unreachable, run_on));
    END IF;
    IF NOT grant_to_public THEN
        EXECUTE format('REVOKE EXECUTE ON FUNCTION model_select.%I(%s) FROM PUBLIC', name, args);
    END IF;
END $f$;

-- 08006 naming the shard: an error, or a warning (a listing over all shards)
CREATE FUNCTION model_select_proxy._unreachable(partition int, message text, warning boolean) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    detail text := format('its connection string is %s; PL/Proxy: %s',
                          (SELECT p.dsn FROM model_select_proxy.partitions() p
                            WHERE p.partition = _unreachable.partition), message);
BEGIN
    IF warning THEN
        RAISE WARNING 'shard % of model_select_shards is unreachable: its rows are missing', partition
            USING ERRCODE = '08006', DETAIL = detail;
    ELSE
        RAISE EXCEPTION 'shard % of model_select_shards is unreachable', partition
            USING ERRCODE = '08006', DETAIL = detail, HINT = 'The other shards'' selectors keep working.';
    END IF;
END $$;

DO $$
DECLARE
    f record;
BEGIN
    FOR f IN SELECT * FROM (VALUES
        -- administration (the shard checks every right)
        ('create_selector', 'name text, dim int, arms text[], policy text DEFAULT ''lin_ucb'', kernel text DEFAULT NULL, '
             'settings jsonb DEFAULT ''{}'', seed bigint DEFAULT 0', 'int', 'model_select_proxy.shard_of(name)',
         'SELECT model_select.create_selector(name, dim, arms, policy, kernel, settings, seed)', true),
        ('alter_selector', 'name text, settings jsonb', 'bigint', 'model_select_proxy.shard_of(name)',
         'SELECT model_select.alter_selector(name, settings)', true),
        ('drop_selector', 'name text', 'void', 'model_select_proxy.shard_of(name)',
         'SELECT model_select.drop_selector(name)', true),
        ('add_arm', 'selector text, arm text', 'void', 'model_select_proxy.shard_of(selector)',
         'SELECT model_select.add_arm(selector, arm)', true),
        ('retire_arm', 'selector text, arm text', 'void', 'model_select_proxy.shard_of(selector)',
         'SELECT model_select.retire_arm(selector, arm)', true),
        ('grant_selector', 'selector text, role text, privilege text', 'void', 'model_select_proxy.shard_of(selector)',
         'SELECT model_select.grant_selector(selector, role::regrole, privilege)', true),
        ('revoke_selector', 'selector text, role text, privilege text', 'void', 'model_select_proxy.shard_of(selector)',
         'SELECT model_select.revoke_selector(selector, role::regrole, privilege)', true),
        ('rebuild_state', 'selector text', 'bigint', 'model_select_proxy.shard_of(selector)',
         'SELECT model_select.rebuild_state(selector)', true),
        ('checkpoint', 'selector text', 'bigint', 'model_select_proxy.shard_of(selector)',
         'SELECT model_select.checkpoint(selector)', true),
        -- routing and learning
        ('select_model', 'selector text, context float8[], tags text[] DEFAULT NULL', 'text',
         'model_select_proxy.shard_of(selector)', 'SELECT model_select.select_model(selector, context, tags)', true),
        ('route', 'selector text, context float8[], tags text[] DEFAULT NULL', 'TABLE (decision_id bigint, arm text, score float8)',
         'model_select_proxy.shard_of(selector)', 'SELECT * FROM model_select.route(selector, context, tags)', true),
        ('scores', 'selector text, context float8[], tags text[] DEFAULT NULL',
         'TABLE (arm text, active boolean, n bigint, mean float8, width float8, ucb float8, radius float8, alpha float8, cost float8)',
         'model_select_proxy.shard_of(selector)', 'SELECT * FROM model_select.scores(selector, context, tags)', true),
        ('reward', 'decision_id bigint, reward float8, cost float8 DEFAULT NULL', 'bigint',
         'model_select_proxy.shard_of_decision(decision_id)', 'SELECT model_select.reward(decision_id, reward, cost)', true),
        ('reward', 'selector text, arm text, context float8[], reward float8, cost float8 DEFAULT NULL', 'bigint',
         'model_select_proxy.shard_of(selector)', 'SELECT model_select.reward(selector, arm, context, reward, cost)', true),
        ('decision_scores', 'decision_id bigint',
         'TABLE (arm text, active boolean, n bigint, mean float8, width float8, ucb float8, radius float8, alpha float8, cost float8)',
         'model_select_proxy.shard_of_decision(decision_id)', 'SELECT * FROM model_select.decision_scores(decision_id)', true),
        ('drift', 'selector text, recent int DEFAULT 100',
         'TABLE (arm text, n bigint, observed float8, predicted float8, gap float8, z float8)',
         'model_select_proxy.shard_of(selector)', 'SELECT * FROM model_select.drift(selector, recent)', true),
        ('stats_reset', 'selector text', 'timestamptz', 'model_select_proxy.shard_of(selector)',
         'SELECT model_select.stats_reset(selector)', true),
        ('maintain', 'selector text', 'bigint', 'model_select_proxy.shard_of(selector)',
         'SELECT model_select.maintain(selector)', true),
        ('cascade', 'selector text, context float8[], beta float8 DEFAULT 5', 'TABLE ("position" int, arm text, index float8)',
         'model_select_proxy.shard_of(selector)', 'SELECT * FROM model_select.cascade(selector, context, beta)', true),
        ('cascade_scores', 'selector text, context float8[], beta float8 DEFAULT 5',
         'TABLE (arm text, active boolean, n bigint, estimate float8, width float8, index float8)',
         'model_select_proxy.shard_of(selector)', 'SELECT * FROM model_select.cascade_scores(selector, context, beta)', true),
        ('cascade_next', 'selector text, context float8[], best_value float8, queried text[], beta float8 DEFAULT 5', 'text',
         'model_select_proxy.shard_of(selector)',
         'SELECT model_select.cascade_next(selector, context, best_value, queried, beta)', true),
        ('cascade_route', 'selector text, context float8[], beta float8 DEFAULT 5',
         'TABLE (cascade_id bigint, arms text[], indices float8[])', 'model_select_proxy.shard_of(selector)',
         'SELECT * FROM model_select.cascade_route(selector, context, beta)', true),
        -- a query text as source: it runs on the shard that holds the
        -- selector, so the tables it reads must be there
        ('route_batch', 'selector text, source text, log boolean DEFAULT false',
         'TABLE (key bigint, arm text, score float8, mean float8, width float8, decision_id bigint)',
         'model_select_proxy.shard_of(selector)', 'SELECT * FROM model_select.route_batch(selector, source, log)', true),
        ('warm_start', 'selector text, source text', 'bigint', 'model_select_proxy.shard_of(selector)',
         'SELECT model_select.warm_start(selector, source)', true),
        ('fit_codebook', 'selector text, source text, refit boolean DEFAULT true', 'bigint',
         'model_select_proxy.shard_of(selector)', 'SELECT model_select.fit_codebook(selector, source, refit)', true),
        -- replay() names no selector: replay_on() runs it on the shard that
        -- holds (or would hold) the selector named, where its source is
        ('replay_on', 'selector text, source text, policy text DEFAULT ''lin_ucb'', kernel text DEFAULT NULL, '
             'settings jsonb DEFAULT ''{}'', seed bigint DEFAULT 0, cost_weight float8 DEFAULT 0, rounds int DEFAULT NULL, '
             'passes int DEFAULT 1, checkpoint int DEFAULT NULL, shuffle boolean DEFAULT true, warm text DEFAULT NULL, '
             'delay int DEFAULT 0, feedback float8 DEFAULT 1',
         'TABLE (round int, cum_reward float8, cum_cost float8, cum_utility float8, regret_best_arm float8, '
             'regret_oracle float8, opr float8, opr_window float8, otb float8, picks bigint[], learned bigint)',
         'model_select_proxy.shard_of(selector)',
         'SELECT * FROM model_select.replay(source, policy, kernel, settings, seed, cost_weight, rounds, passes, '
             'checkpoint, shuffle, warm, delay, feedback)', true),
        -- over every shard: the selectors the caller may see, and their statistics
        ('selectors', '', 'TABLE (name text, server_id int, policy text, dim int)', 'ALL',
         'SELECT s.name, model_select.server_id(), s.policy, s.dim FROM model_select.selectors s', true),
        ('stats', '', 'TABLE (selector text, arm text, ordinal int, decisions bigint, rewards bigint, reward_sum float8, '
             'cost_sum float8, last_decision timestamptz, last_reward timestamptz, server_id int)', 'ALL',
         'SELECT st.selector, st.arm, st.ordinal, st.decisions::bigint, st.rewards::bigint, st.reward_sum::float8, '
             'st.cost_sum::float8, st.last_decision, st.last_reward, model_select.server_id() FROM model_select.stats st', true),
        -- the shards' numbers (number_shards() sets them)
        ('server_id_of', 'partition int', 'int', 'model_select_proxy.partition_id(partition)',
         'SELECT model_select.server_id()', true),
        ('set_server_id_of', 'partition int, server int', 'int', 'model_select_proxy.partition_id(partition)',
         'SELECT model_select.set_server_id(server)', false)
    ) v(name, args, result, run_on, query, grant_to_public) LOOP
        PERFORM model_select_proxy._forward(f.name, f.args, f.result, f.run_on, f.query, f.grant_to_public);
    END LOOP;
END $$;

-- Gives shard p the server number p + 1 (superusers): run once, after the
-- shards are created and before they take traffic; returns the numbers.
CREATE FUNCTION model_select_proxy.number_shards() RETURNS TABLE (partition int, server_id int)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    p record;
BEGIN
    FOR p IN SELECT * FROM model_select_proxy.partitions() LOOP
        partition := p.partition;
        server_id := model_select.set_server_id_of(p.partition, p.partition + 1);
        RETURN NEXT;
    END LOOP;
END $$;
REVOKE EXECUTE ON FUNCTION model_select_proxy.number_shards(), model_select_proxy._forward(text, text, text, text, text, boolean)
    FROM PUBLIC;
COMMIT;
