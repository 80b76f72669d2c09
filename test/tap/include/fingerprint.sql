-- pg_temp.fingerprint(): per table of the extension, the md5 of every row (with its xmin),
-- so that a test can show that a refused call changed nothing (hostile_input.sql,
-- hostile_edges.sql).
CREATE FUNCTION pg_temp.fingerprint() RETURNS TABLE (tbl text, md5 text) LANGUAGE plpgsql AS $f$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['selectors', 'arms', 'arm_state', 'decisions', 'rewards', 'cascade_decisions',
                           'cascade_observations', 'cascade_state', 'probe_runs', 'probe_pool', 'probe_plan'] LOOP
    tbl := t;
    EXECUTE format('SELECT md5(coalesce(string_agg(x.r, E''\n'' ORDER BY x.r), '''')) FROM '
                   '(SELECT t::text || '','' || t.xmin::text AS r FROM model_select.%I t) x', t) INTO md5;
    RETURN NEXT;
  END LOOP;
END
$f$;
