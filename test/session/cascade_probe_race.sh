#!/usr/bin/env bash
# Cascades and probing runs under concurrent sessions.
#
# Cascades: 8 pgbench clients for MS_RACE_T seconds (4) insert observations
# into three selectors (greedy, lin_ucb, rff_ucb): single rows, a logged
# cascade and two observations naming it, multi-row statements, a savepoint
# rolled back, an arm twice in one cascade (23505, caught); meanwhile an
# administrator loop changes the rff_ucb selector's features and bandwidth
# (alter_selector) and refits (cascade_refit).  Asserts: no client saw an
# error (a write racing a settings change failed with XX001, or stored a
# state of the old feature count, before observation inserts and
# cascade_refit took the settings lock), the administrator neither; every
# arm's n is its count in the log, and its scores equal those of a
# from-scratch cascade_refit: the width to 1e-9, the estimate (where rho was
# fit at n) to 1e-6 (lib/cascade_scores.sql).
#
# Probing: two runs (pool of 24 items, T 300, H 80), one reported by item,
# one by position, each driven by 8 clients in separate transactions
# (probe_next in one, each report in another, in random order), with reports
# twice and of queries never issued mixed in (55000 or 22023 only, nothing
# changed).  Asserts: both runs finish with plans, scores and fits equal to
# a run of the same parameters driven serially (the scores are a function of
# the item, so interleaving must not matter).  And two sessions creating a
# run of the same name: the second gets 42710.
#
# Needs PGHOST/PGPORT/PGUSER of a running cluster with model_select installed.
set -euo pipefail
DB=ms_session_cascade_probe
. "$(dirname "$0")/lib/common.bash"

T=${MS_RACE_T:-4}
ms_setup || bail "set-up failed"
q -f "$(dirname "$0")/lib/cascade_scores.sql" >/dev/null || bail "creating the cascade helpers failed"
q >/dev/null <<'SQL' || bail "set-up of the cascades failed"
SELECT model_select.create_selector('cl', 3, ARRAY['a','b','c'], 'lin_ucb');
SELECT model_select.create_selector('cg', 3, ARRAY['a','b'], 'greedy');
SELECT model_select.create_selector('cr', 3, ARRAY['a','b'], 'rff_ucb', NULL, '{"features": 4}');
CREATE TABLE elog(op int, code text, msg text);
CREATE FUNCTION t_op(op int, sel text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE c bigint; st text; ms text;
BEGIN
  IF op <= 30 THEN
    INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost)
    VALUES (sel, (ARRAY['a','b'])[1 + (random() < 0.5)::int], ms_rand(3), random(), random() * 0.2);
  ELSIF op <= 60 THEN
    SELECT cascade_id INTO c FROM model_select.cascade_route(sel, ms_rand(3));
    INSERT INTO model_select.cascade_observations(cascade_id, arm, value, cost)
    VALUES (c, 'b', random(), 0.1), (c, 'a', random(), 0.05);
  ELSIF op <= 75 THEN
    INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost)
    SELECT sel, (ARRAY['a','b'])[1 + g % 2], ms_rand(3), random(), random() * 0.1 FROM generate_series(1, 4) g;
  ELSIF op <= 85 THEN
    INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost) VALUES (sel, 'a', ms_rand(3), random(), 0.1);
    BEGIN
      INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost) VALUES (sel, 'b', ms_rand(3), random(), 0.1);
      RAISE EXCEPTION 'undo' USING ERRCODE = 'P0001';
    EXCEPTION WHEN raise_exception THEN NULL;
    END;
  ELSIF op <= 90 THEN
    SELECT cascade_id INTO c FROM model_select.cascade_route(sel, ms_rand(3));
    BEGIN
      INSERT INTO model_select.cascade_observations(cascade_id, arm, value, cost) VALUES (c, 'a', random(), 0.1);
      INSERT INTO model_select.cascade_observations(cascade_id, arm, value, cost) VALUES (c, 'a', random(), 0.1);
    EXCEPTION WHEN unique_violation THEN NULL;
    END;
  ELSE
    PERFORM model_select.cascade_next(sel, ms_rand(3), 0.5, ARRAY['a']);
  END IF;
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, ms = MESSAGE_TEXT;
  INSERT INTO elog VALUES (op, st, ms);
END $$;
SQL

cat >"$MS_WORK/cascade.sql" <<'SQL'
\set op random(1, 100)
\set s random(1, 3)
SELECT t_op(:op, (ARRAY['cl', 'cg', 'cr'])[:s]);
SQL
stop=$MS_WORK/stop
admin() {
    RANDOM=7
    while [ ! -e "$stop" ]; do
        case $((RANDOM % 3)) in
            0) echo "SELECT model_select.alter_selector('cr', '{\"features\": $((3 + RANDOM % 3))}');";;
            1) echo "SELECT model_select.alter_selector('cr', '{\"bandwidth\": 0.$((5 + RANDOM % 5))}');";;
            2) echo "SELECT model_select.cascade_refit('cr');";;
        esac | psql -X -q -v VERBOSITY=terse -d "$DB" >/dev/null 2>>"$MS_WORK/admin.err" || true
        sleep "0.0$((RANDOM % 10))"
    done
}
admin & MS_BG_PIDS+=($!); apid=$!
set +e
pgbench -n -c 8 -j 2 -T "$T" -f "$MS_WORK/cascade.sql" "$DB" >"$MS_WORK/pgbench.out" 2>"$MS_WORK/pgbench.err"
pgbench_rc=$?
set -e
touch "$stop"
wait "$apid"
check "cascades: pgbench ran every transaction to the end" \
    eval '[ "$pgbench_rc" -eq 0 ] && ! grep -q ERROR "$MS_WORK/pgbench.err"'
check "cascades: no writer or reader saw an error (no XX001 from a settings change)" \
    no_rows "SELECT m || ' x' || count(*) FROM (SELECT code || ' ' || regexp_replace(msg, '[0-9]+', 'N', 'g') AS m FROM elog) e GROUP BY m"
check "cascades: the administrator saw no error" eval '[ ! -s "$MS_WORK/admin.err" ] || { head -n 3 "$MS_WORK/admin.err" | sed "s/^/#   /"; false; }'
check "cascades: every arm's n is its count in the log" \
    no_rows "SELECT s.selector || '/' || s.arm || ': ' || s.n || ' vs ' || count(o.obs_id)
               FROM model_select.cascade_arm_stats s
               LEFT JOIN model_select.arms a ON a.name = s.arm
                AND a.selector_id = (SELECT selector_id FROM model_select.selectors WHERE name = s.selector)
               LEFT JOIN model_select.cascade_observations o ON o.arm_id = a.arm_id
              GROUP BY s.selector, s.arm, s.n HAVING s.n <> count(o.obs_id)"
check "cascades: the scores equal a from-scratch cascade_refit's (widths 1e-9, estimates 1e-6)" \
    no_rows "SELECT * FROM ms_cascade_refit_diff()"

q >/dev/null <<'SQL' || bail "set-up of the probe runs failed"
CREATE TABLE pool AS SELECT ARRAY[sin(g), cos(g), sin(3 * g)]::float8[] AS prompt, (ARRAY['m1','m2','m3'])[1 + g % 3] AS model
  FROM generate_series(1, 24) g;
CREATE FUNCTION f(item int) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$ SELECT 0.5 + 0.4 * sin(item * 1.3) $$;
CREATE TABLE queue (run text, i int, b int, m int, item int);
CREATE TABLE done (run text, i int, b int, m int, item int);
CREATE TABLE perr (what text, code text, msg text);
CREATE FUNCTION t_take(rn text, k int) RETURNS void LANGUAGE sql AS $$
  INSERT INTO queue SELECT rn, q.interval, q.batch, q.m, q.item_id FROM model_select.probe_next(rn, k) q
$$;
-- report one handed-out query of run rn, by item for 'pi', by position for 'pp'
CREATE FUNCTION t_report(rn text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE q queue;
BEGIN
  DELETE FROM queue WHERE ctid = (SELECT ctid FROM queue WHERE run = rn ORDER BY random() LIMIT 1 FOR UPDATE SKIP LOCKED)
  RETURNING * INTO q;
  IF FOUND THEN
    IF rn = 'pi' THEN PERFORM model_select.probe_report(rn, q.item, f(q.item));
    ELSE PERFORM model_select.probe_report(rn, q.i, q.b, q.m, f(q.item)); END IF;
    INSERT INTO done VALUES (rn, q.i, q.b, q.m, q.item);
  END IF;
END $$;
-- a report twice or of a query never issued: 55000 or 22023, and nothing
-- changes.  Twice only on 'pp': 'pi' reports by item, which names no
-- position (of an item issued twice, either query may be the one reported),
-- so a done row's position may still be open there.
CREATE FUNCTION t_bad(rn text, kind int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE d done; st text; ms text;
BEGIN
  SELECT * INTO d FROM done WHERE run = rn ORDER BY random() LIMIT 1;
  IF NOT FOUND THEN RETURN; END IF;
  IF kind = 1 AND rn = 'pi' THEN kind := 2; END IF;
  BEGIN
    IF kind = 1 THEN PERFORM model_select.probe_report(rn, d.i, d.b, d.m, 0.5);
    ELSIF kind = 2 THEN PERFORM model_select.probe_report(rn, d.i, d.b, d.m + 1000, 0.5);
    ELSE PERFORM model_select.probe_report(rn, 25 + (random() * 5)::int, 0.5); END IF;
    INSERT INTO perr VALUES ('bad ' || kind || ' accepted', NULL, NULL);
  EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, ms = MESSAGE_TEXT;
    IF st NOT IN ('55000', '22023') THEN
      INSERT INTO perr VALUES ('bad ' || kind, st, ms);
    END IF;
  END;
END $$;
SELECT model_select.create_probe_run(r, 300, 80, 1.0, 'SELECT prompt, model FROM pool', seed => 5)
  FROM unnest(ARRAY['pi', 'pp', 'serial']) r;
DO $$ DECLARE q record; BEGIN
  WHILE NOT (SELECT finished FROM model_select.probe_runs WHERE name = 'serial') LOOP
    FOR q IN SELECT * FROM model_select.probe_next('serial', 1000) LOOP
      PERFORM model_select.probe_report('serial', q.interval, q.batch, q.m, f(q.item_id));
    END LOOP;
  END LOOP;
END $$;
SQL
for rn in pi pp; do
    cat >"$MS_WORK/probe_$rn.sql" <<SQL
\\set op random(1, 100)
\\if :op <= 30
SELECT t_take('$rn', 1 + (random() * 2)::int);
\\elif :op <= 90
SELECT t_report('$rn');
\\else
SELECT t_bad('$rn', 1 + (:op % 3));
\\endif
SQL
done
set +e
pgbench -n -c 8 -j 2 -t 400 -f "$MS_WORK/probe_pi.sql" "$DB" >"$MS_WORK/pi.out" 2>"$MS_WORK/pi.err" &
pipid=$!
pgbench -n -c 8 -j 2 -t 400 -f "$MS_WORK/probe_pp.sql" "$DB" >"$MS_WORK/pp.out" 2>"$MS_WORK/pp.err"
pp_rc=$?
wait "$pipid"
pi_rc=$?
set -e
check "probing: pgbench ran every transaction to the end" \
    eval '[ "$pi_rc" -eq 0 ] && [ "$pp_rc" -eq 0 ] && ! grep -q ERROR "$MS_WORK/pi.err" "$MS_WORK/pp.err"'
check "probing: reports twice or of queries never issued were refused with 55000 or 22023" \
    no_rows "SELECT what || ' ' || coalesce(code, '') || ' ' || coalesce(msg, '') FROM perr"
# finish both runs serially from where the clients left them (by item: which of an
# item's repeats a report by item took is not recorded)
q >/dev/null <<'SQL'
DO $$ DECLARE q record; rn text; BEGIN
  FOREACH rn IN ARRAY ARRAY['pi', 'pp'] LOOP
    WHILE NOT (SELECT finished FROM model_select.probe_runs WHERE name = rn) LOOP
      FOR q IN SELECT * FROM queue WHERE run = rn LOOP
        PERFORM model_select.probe_report(rn, q.item, f(q.item));
      END LOOP;
      DELETE FROM queue WHERE run = rn;
      INSERT INTO queue SELECT rn, p.interval, p.batch, p.m, p.item_id FROM model_select.probe_next(rn, 1000) p;
    END LOOP;
  END LOOP;
END $$;
SQL
for rn in pi pp; do
    check "probing: run $rn, driven by 8 sessions, has the plan and scores of the serial run" \
        no_rows "SELECT format('(%s, %s, %s): %s vs %s', interval, batch, m, row(a.item_id, a.t, a.score), row(b.item_id, b.t, b.score))
                   FROM (SELECT p.* FROM model_select.probe_plan p JOIN model_select.probe_runs r USING (run_id) WHERE r.name = '$rn') a
                   FULL JOIN (SELECT p.* FROM model_select.probe_plan p JOIN model_select.probe_runs r USING (run_id) WHERE r.name = 'serial') b
                  USING (interval, batch, m)
                  WHERE row(a.item_id, a.t, a.score) IS DISTINCT FROM row(b.item_id, b.t, b.score)"
    check "probing: run $rn has the serial run's fits and active set" \
        no_rows "SELECT format('item %s: %s vs %s', item_id, row(a.active, a.mean, a.lcb, a.ucb), row(b.active, b.mean, b.lcb, b.ucb))
                   FROM (SELECT p.* FROM model_select.probe_pool p JOIN model_select.probe_runs r USING (run_id) WHERE r.name = '$rn') a
                   FULL JOIN (SELECT p.* FROM model_select.probe_pool p JOIN model_select.probe_runs r USING (run_id) WHERE r.name = 'serial') b
                  USING (item_id)
                  WHERE row(a.active, a.mean, a.lcb, a.ucb) IS DISTINCT FROM row(b.active, b.mean, b.lcb, b.ucb)"
done

# two sessions create a run of the same name: the second waits, then 42710 (not 23505)
q -c "BEGIN" -c "SELECT model_select.create_probe_run('dup', 4, 2, 1.0, 'SELECT prompt, model FROM pool')" \
  -c "SELECT pg_sleep(1.5)" -c "COMMIT" >/dev/null &
MS_BG_PIDS+=($!); first=$!
sleep 0.5
second=$(psql -X -q -A -t -v VERBOSITY=verbose -d "$DB" \
    -c "SELECT model_select.create_probe_run('dup', 4, 2, 1.0, 'SELECT prompt, model FROM pool')" 2>&1 || true)
wait "$first"
check "probing: a run name created concurrently is 42710" \
    eval '[[ "$second" == *"ERROR:  42710: probe run \"dup\" already exists"* ]] || { echo "#   got: $second" | head -n 3; false; }'
finish
