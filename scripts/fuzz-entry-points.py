#!/usr/bin/env python3
"""Fuzz every SQL entry point of model_select with hostile values.

Usage: scripts/fuzz-entry-points.py [--jobs N] [--only TEXT] [--all]

Against the server of PGHOST/PGPORT/PGUSER (a superuser; a throwaway cluster:
scripts/with-cluster.sh scripts/fuzz-entry-points.py), it creates a database
ms_fuzz with fixtures (selectors of every policy, rewards, a cascade, a probe
run, two roles: fz_nobody without rights, fz_app with route on f_lin), then
runs about 7,400 cases, each in its own psql, inside BEGIN ... ROLLBACK with a
30 s statement_timeout: NULLs in every position, NULL elements, empty,
multi-dimensional and non-1-based arrays, NaN, infinities, 1e308 and
denormals, 10^5 and 10^6 elements, extreme integers, hostile names, settings
of wrong types and ranges, sources that are not tables or have the wrong
columns, selectors dropped or arms retired mid-transaction, rewards for other
selectors' and for missing decisions, and every selector function called by
the two roles.

It prints each case that crashed the server, raised an XX error (XX001, for
the state a superuser damaged by hand, is expected: "arm state has format"),
was cancelled by the timeout, returned NaN, or returned Infinity outside the
documented unlearned arms (n = 0), and the count of cases per SQLSTATE; it
exits 1 if any case crashed or raised XX000.  It takes several minutes: it
is a tool, not part of make test (test/tap/hostile_edges.sql keeps what it
found).  --all prints every case with its SQLSTATE and message.
"""
import argparse
import collections
import concurrent.futures as cf
import re
import subprocess
import sys

DB = 'ms_fuzz'
FIXTURES = r"""
CREATE EXTENSION model_select;
SELECT model_select.create_selector('f_pak', 3, ARRAY['a','b'], 'pak_ucb');
SELECT model_select.create_selector('f_lin', 3, ARRAY['a','b'], 'lin_ucb');
SELECT model_select.create_selector('f_bkb', 3, ARRAY['a','b'], 'bkb');
SELECT model_select.create_selector('f_rff', 3, ARRAY['a','b'], 'rff_ucb', NULL, '{"features": 8}');
SELECT model_select.create_selector('f_greedy', 3, ARRAY['a','b'], 'greedy');
SELECT model_select.create_selector('f_random', 3, ARRAY['a','b'], 'random');
SELECT model_select.create_selector('f_budget', 3, ARRAY['a','b'], 'lin_ucb', NULL, '{"budget": 0.5}');
SELECT model_select.create_selector('f_pakb', 3, ARRAY['a','b'], 'pak_ucb', NULL, '{"budget": 0.05, "window": 3}');
SELECT model_select.create_selector('f_bkbb', 3, ARRAY['a','b'], 'bkb', NULL, '{"budget": 0.05, "cap": 3}');
SELECT model_select.create_selector('f_time', 3, ARRAY['a','b'], 'greedy', NULL, '{"clock": "time", "window": "1 hour"}');
SELECT model_select.create_selector('f_win', 3, ARRAY['a','b'], 'pak_ucb', NULL, '{"window": 5}');
SELECT model_select.create_selector('f_cw', 3, ARRAY['a','b'], 'lin_ucb', NULL, '{"cost_weight": 1}');
SELECT model_select.create_selector('f_ts', 3, ARRAY['a','b'], 'lin_ucb', NULL, '{"exploration": "thompson"}');
SELECT model_select.create_selector('f_empty', 3, ARRAY['a','b'], 'lin_ucb');
INSERT INTO model_select.rewards(selector, arm, context, reward, cost)
SELECT s.name, a.name, ARRAY[i, 1, -i]::float8[], (i % 3) / 2.0, 0.1
  FROM model_select.selectors s JOIN model_select.arms a USING (selector_id), generate_series(1, 4) i
 WHERE s.name <> 'f_empty';
SELECT count(model_select.checkpoint(name)) FROM model_select.selectors;
SELECT count(*) FROM model_select.selectors s, LATERAL model_select.route(s.name, ARRAY[1,2,3]::float8[]);
INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost)
SELECT 'f_pak', a, ARRAY[i, 1, 0]::float8[], 0.1 * i, 0.2 FROM unnest(ARRAY['a', 'b']) a, generate_series(1, 4) i;
SELECT model_select.create_probe_run('f_probe', 12, 2, 1.0,
  $p$SELECT ARRAY[x, 1, 0]::float8[], m FROM generate_series(1, 3) x, (VALUES ('m1'), ('m2')) v(m)$p$);
CREATE TABLE public.src_ok AS SELECT ARRAY[i, 1, 0]::float8[] AS context, ARRAY[0.5, 0.2]::float8[] AS rewards FROM generate_series(1,5) i;
CREATE TABLE public.src_wrong AS SELECT 'x'::text AS context, 1 AS rewards;
CREATE VIEW public.v_ok AS SELECT * FROM public.src_ok;
DO $$ BEGIN CREATE ROLE fz_nobody LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
DO $$ BEGIN CREATE ROLE fz_app LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
SELECT * FROM model_select.setup_role('fz_app', 'application');
SELECT model_select.grant_selector('f_lin', 'fz_app', 'route');
GRANT USAGE ON SCHEMA model_select TO fz_nobody;
"""

cases = []


def add(sql, role='postgres', tag=''):
    cases.append((role, sql, tag))


ctxs = ["NULL::float8[]", "'{}'::float8[]", "ARRAY[NULL,NULL,NULL]::float8[]", "ARRAY[1,'NaN',0]::float8[]",
        "ARRAY[1,'Infinity',0]::float8[]", "ARRAY[[1,0,0]]::float8[]", "'[0:2]={1,2,3}'::float8[]",
        "'[-5:-3]={1,2,3}'::float8[]", "'[2147483645:2147483647]={1,2,3}'::float8[]",
        "ARRAY[1e308,1e308,1e308]::float8[]", "ARRAY[-1e308,1e308,-1e308]::float8[]", "ARRAY[5e-324,5e-324,5e-324]::float8[]",
        "array_fill(1::float8, ARRAY[1000000])", "ARRAY[1,2,3]::int[]", "ARRAY[1,2,3]::int8[]",
        "ARRAY[9223372036854775807,9223372036854775807,1]::int8[]", "ARRAY[1,2,3]::numeric[]",
        "ARRAY[1e300,1,2]::numeric[]", "ARRAY[1,2,3]::int2[]", "ARRAY['1','2','3']::text[]", "ARRAY[true,false,true]",
        "ARRAY[1,2,3]::real[]", "ARRAY[0,0,0]::float8[]", "ARRAY['-0','-0','-0']::float8[]",
        "array_fill(1::float8, ARRAY[1,3], ARRAY[0,0])", "'{1,2,3}'::float8[]", "ARRAY[1e-310, 1, 0]::float8[]"]
tagss = ["NULL", "'{}'::text[]", "ARRAY[NULL]::text[]", "ARRAY['']", "ARRAY[repeat('x',10000)]",
         "ARRAY[['a','b']]", "(SELECT array_agg(i::text) FROM generate_series(1,100000) i)", "ARRAY['a','a']",
         "'[5:6]={a,b}'::text[]", "ARRAY[E'a\\\\x00', 'b''c']"]
names = ["NULL", "''", "repeat('x', 10000)", "'f_pak'';--'", "E'f\\\\x01'", "'F_PAK'", "'f_pak '"]
sels = ['f_pak', 'f_lin', 'f_bkb', 'f_rff', 'f_greedy', 'f_random', 'f_budget', 'f_pakb', 'f_bkbb', 'f_time', 'f_win', 'f_ts',
        'f_empty']

# costs at the edges of their range and past it, on the selectors whose arms learn their cost
for s in ['f_budget', 'f_pakb', 'f_bkbb']:
    for co in ["0", "1e15", "5e-324", "'NaN'", "'Infinity'", "'-0'", "-1", "1e16", "NULL"]:
        add(f"INSERT INTO model_select.rewards(selector, arm, context, reward, cost) SELECT '{s}', 'a', ARRAY[i, 2, 3]::float8[], 0.5, {co} "
            f"FROM generate_series(1, 5) i; SELECT * FROM model_select.scores('{s}', ARRAY[1,2,3]::float8[]); "
            f"SELECT * FROM model_select.route('{s}', ARRAY[1,2,3]::float8[])", tag='cost')

for s in sels:
    for c in ctxs:
        add(f"SELECT model_select.select_model('{s}', {c})", tag='ctx')
        add(f"SELECT * FROM model_select.route('{s}', {c})", tag='ctx')
        add(f"SELECT * FROM model_select.scores('{s}', {c})", tag='ctx')
        add(f"INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('{s}', 'a', {c}, 0.5)", tag='ctx')
        add(f"SELECT model_select.reward('{s}', 'a', {c}, 0.5)", tag='ctx')
    for t in tagss:
        add(f"SELECT * FROM model_select.route('{s}', ARRAY[1,2,3]::float8[], {t})", tag='tags')
        add(f"SELECT * FROM model_select.scores('{s}', ARRAY[1,2,3]::float8[], {t})", tag='tags')
        add(f"INSERT INTO model_select.rewards(selector, arm, context, reward, tags) VALUES ('{s}', 'a', ARRAY[1,2,3]::float8[], 0.5, {t})", tag='tags')
    for rw, co in [("'NaN'", "NULL"), ("0.5", "'NaN'"), ("0.5", "1e308"), ("0.5", "5e-324"), ("5e-324", "0"), ("1", "'Infinity'"), ("0.5", "-0.0")]:
        add(f"SELECT model_select.reward('{s}', 'a', ARRAY[1,2,3]::float8[], {rw}, {co})", tag='rw')
    for c in ctxs[:8]:
        add(f"SELECT * FROM model_select.cascade('{s}', {c})"); add(f"SELECT * FROM model_select.cascade_scores('{s}', {c})")
        add(f"SELECT * FROM model_select.cascade_route('{s}', {c})")
    for b in ["'NaN'", "'Infinity'", "-1", "0", "1e308", "NULL", "5e-324"]:
        add(f"SELECT * FROM model_select.cascade('{s}', ARRAY[1,2,3]::float8[], {b})")
        add(f"SELECT * FROM model_select.cascade_scores('{s}', ARRAY[1,2,3]::float8[], {b})")
        add(f"SELECT * FROM model_select.cascade_route('{s}', ARRAY[1,2,3]::float8[], {b})")
        add(f"SELECT model_select.cascade_next('{s}', ARRAY[1,2,3]::float8[], {b}, ARRAY['a'])")
        add(f"SELECT model_select.cascade_next('{s}', ARRAY[1,2,3]::float8[], 0.5, ARRAY['a'], {b})")
    for q in ["NULL", "'{}'::text[]", "ARRAY[NULL]::text[]", "ARRAY['a','b']", "ARRAY['a','a','a']", "'[0:1]={a,b}'::text[]"]:
        add(f"SELECT model_select.cascade_next('{s}', ARRAY[1,2,3]::float8[], 0.5, {q})")
    for v, a in [("NULL", "ARRAY['a']"), ("'{}'::float8[]", "'{}'::text[]"), ("ARRAY[1e308, -1e308]", "ARRAY['a','b']"),
                 ("'[0:1]={0.1,0.2}'::float8[]", "ARRAY['a','b']"), ("ARRAY[0.1,0.2]", "'[0:1]={a,b}'::text[]"),
                 ("ARRAY[0.1,0.1]", "ARRAY['a','a']"), ("ARRAY['Infinity']::float8[]", "ARRAY['a']")]:
        add(f"SELECT model_select.cascade_select('{s}', {v}, {a})")
    for fn in ['rebuild_state', 'checkpoint', 'resample', 'maintain', 'stats_reset', '_codebook_fitted', 'cascade_refit', 'drop_selector']:
        add(f"SELECT model_select.{fn}('{s}')")
    for r in ["NULL", "0", "-1", "2147483647", "-2147483648", "1"]:
        add(f"SELECT * FROM model_select.drift('{s}', {r})")
    for st in ["'{}'", "'{\"alpha\": 1e308}'", "'{\"alpha\": \"NaN\"}'", "'{\"window\": 2147483648}'", "'{\"window\": 2147483647}'",
               "'{\"window\": 1.5}'", "'{\"window\": -0}'", "'{\"budget\": 1e308}'", "'{\"budget\": -1}'", "'{\"budget\": 0}'",
               "'{\"cap\": 1e30}'", "'{\"clock\": \"time\", \"window\": \"-1 hour\"}'", "'{\"clock\": \"time\", \"window\": \"1e308 years\"}'",
               "'{\"clock\": \"time\", \"window\": \"infinity\"}'", "'{\"clock\": \"time\", \"window\": 1e308}'",
               "'{\"clock\": \"time\", \"half_life\": \"0 s\"}'", "'{\"clock\": \"time\", \"half_life\": \"1 microsecond\"}'",
               "'{\"pending_horizon\": -1}'", "'{\"pending_horizon\": 1e308}'", "'{\"seed\": 1}'", "'{\"alpha\": 1, \"alpha\": 2}'",
               "'{\"noise_prior\": 1e308}'", "'{\"reward_min\": -1e308, \"reward_max\": 1e308}'", "'{\"reward_min\": -1e15, \"reward_max\": 1e15}'",
               "'{\"reward_min\": 5e-324, \"reward_max\": 1e-323}'", "'{\"restart_every\": 2147483647}'", "'{\"restart_every\": 0}'",
               "'{\"discount\": 0.9999999999999999}'", "'{\"discount\": 5e-324}'", "'{\"features\": 8191}'", "'{\"exploration\": 1}'",
               "'{\"exploration\": \"thompson\", \"seed\": -1}'", "NULL", "'{\"budget\": 1e-320}'", "'{\"budget\": 0.5, \"cost_weight\": 1}'",
               "'{\"horizon\": 1e308, \"confidence\": \"igp\"}'", "'{\"confidence\": \"ay\", \"delta\": 5e-324}'", "'{\"confidence\": \"ay\", \"delta\": 0.9999999999999999}'",
               "'{\"eta\": 1e308}'", "'{\"lambda\": 1e308}'", "'{\"lambda\": 5e-324}'", "'{\"alpha\": 5e-324}'", "'{\"bandwidth\": 5e-324}'", "'{\"bandwidth\": 1e300}'",
               "'{\"intercept\": 1e300}'", "'{\"intercept\": 5e-324}'"]:
        add(f"SELECT model_select.alter_selector('{s}', {st})", tag='alter')
        add(f"SELECT model_select.alter_selector('{s}', {st}); SELECT * FROM model_select.scores('{s}', ARRAY[1,2,3]::float8[]); INSERT INTO model_select.rewards(selector, arm, context, reward, cost) VALUES ('{s}', 'a', ARRAY[1,2,3]::float8[], 0.5, 0.5); SELECT * FROM model_select.route('{s}', ARRAY[3,2,1]::float8[]); SELECT model_select.checkpoint('{s}'); SELECT model_select.rebuild_state('{s}'); SELECT * FROM model_select.scores('{s}', ARRAY[1,2,3]::float8[])", tag='alter+use')
    for src in ["NULL", "''", "'SELECT 1'", "'public.src_ok'", "'src_wrong'", "'SELECT context, rewards FROM public.src_ok'",
                "'SELECT * FROM public.src_wrong'", "'SELECT ARRAY[1,2,3]::float8[], ARRAY[0.5,0.2]::float8[]'",
                "'SELECT ARRAY[1,2,3]::float8[], ARRAY[0.5,0.2]::float8[], ARRAY[0.1,0.2]::float8[]'",
                "'SELECT ARRAY[1,2,3]::float8[], ARRAY[''NaN'',0.2]::float8[]'", "'SELECT ARRAY[1,2,3]::float8[], ARRAY[0.5]::float8[]'",
                "'SELECT ARRAY[1,2,3]::float8[], ARRAY[0.5,0.2,0.3]::float8[]'", "'SELECT ARRAY[1,2,3]::float8[], ''[0:1]={0.5,0.2}''::float8[]'",
                "'SELECT ARRAY[1,2,3]::float8[], ARRAY[0.5,0.2]::float8[], ARRAY[1e308,-1]::float8[]'",
                "'SELECT ARRAY[1,2,3]::float8[], ARRAY[0.5,0.2]::float8[], NULL::float8[], NULL::float8[], ARRAY[NULL]::text[]'",
                "'SELECT ARRAY[1,2,3]::float8[], ARRAY[0.5,0.2]::float8[] WHERE false'", "'TABLE public.src_ok'", "'VALUES (1)'",
                "'SELECT ''{1,2,3}''::text, ''{1}''::text'", "'SELECT ARRAY[1,2,3]::int[], ARRAY[1,0]::int[]'",
                "'SELECT ARRAY[1,2,3]::numeric[], ARRAY[0.5,0.2]::numeric[]'", "'SELECT ARRAY[1,2]::float8[], ARRAY[0.5,0.2]::float8[]'",
                "'SELECT array_fill(1::float8, ARRAY[1000000]), ARRAY[0.5,0.2]::float8[]'",
                "'SELECT ARRAY[1,2,3]::float8[], ARRAY[0.5,0.2]::float8[] FROM generate_series(1,200000)'"]:
        add(f"SELECT model_select.warm_start('{s}', {src})", tag='warm')
        add(f"SELECT count(*) FROM model_select.route_batch('{s}', {src})", tag='batch')
    for src in ["'SELECT 1::bigint, ARRAY[1,2,3]::float8[] WHERE false'", "'SELECT NULL::bigint, ARRAY[1,2,3]::float8[]'",
                "'SELECT 9223372036854775807, ARRAY[1,2,3]::float8[]'", "'SELECT 1, ARRAY[1,2,3]::float8[], 5'",
                "'SELECT 1, ARRAY[1,2,3]::float8[], ARRAY[NULL]::text[]'", "'SELECT 1, ARRAY[1,2,3]::int[]'",
                "'SELECT 1::numeric, ARRAY[1,2,3]::float8[]'", "'SELECT ''a'', ARRAY[1,2,3]::float8[]'",
                "'SELECT 1, ''[0:2]={1,2,3}''::float8[]'", "'SELECT i, ARRAY[i,1,0]::float8[] FROM generate_series(1,100000) i'",
                "'SELECT 1, ARRAY[1,2,3]::float8[] UNION ALL SELECT 1, ARRAY[1,2,3]::float8[]'", "'SELECT 1, ARRAY[1,2,3]::float8[], ARRAY[''x'']'"]:
        add(f"SELECT count(*) FROM model_select.route_batch('{s}', {src})", tag='batch')
        add(f"SELECT count(*) FROM model_select.route_batch('{s}', {src}, true)", tag='batch')
    for arm in names + ["'a'", "'b'", "'c'"]:
        add(f"SELECT model_select.add_arm('{s}', {arm})", tag='arm')
        add(f"SELECT model_select.retire_arm('{s}', {arm})", tag='arm')
    add(f"SELECT model_select.retire_arm('{s}', 'a'); SELECT model_select.retire_arm('{s}', 'b'); SELECT * FROM model_select.route('{s}', ARRAY[1,2,3]::float8[])")
    add(f"SELECT model_select.retire_arm('{s}', 'a'); SELECT model_select.retire_arm('{s}', 'b'); SELECT count(*) FROM model_select.route_batch('{s}', 'SELECT 1, ARRAY[1,2,3]::float8[]')")
    add(f"SELECT model_select.retire_arm('{s}', 'a'); SELECT model_select.retire_arm('{s}', 'b'); SELECT model_select.warm_start('{s}', 'SELECT ARRAY[1,2,3]::float8[], ARRAY[0.5,0.2]::float8[]')")
    add(f"SELECT model_select.retire_arm('{s}', 'a'); SELECT * FROM model_select.route('{s}', ARRAY[1,2,3]::float8[])")
    add(f"SELECT model_select.retire_arm('{s}', 'a'); SELECT model_select.add_arm('{s}', 'a'); SELECT * FROM model_select.scores('{s}', ARRAY[1,2,3]::float8[])")
    # dropped mid-transaction
    add(f"SELECT * FROM model_select.route('{s}', ARRAY[1,2,3]::float8[]); SELECT model_select.drop_selector('{s}'); SELECT * FROM model_select.route('{s}', ARRAY[1,2,3]::float8[])")
    add(f"SELECT * FROM model_select.scores('{s}', ARRAY[1,2,3]::float8[]); SELECT model_select.drop_selector('{s}'); SELECT model_select.create_selector('{s}', 5, ARRAY['x'], 'pak_ucb'); SELECT * FROM model_select.scores('{s}', ARRAY[1,2,3]::float8[])")
    add(f"SELECT * FROM model_select.scores('{s}', ARRAY[1,2,3]::float8[]); SELECT model_select.drop_selector('{s}'); SELECT model_select.create_selector('{s}', 3, ARRAY['a','b'], 'bkb'); SELECT * FROM model_select.scores('{s}', ARRAY[1,2,3]::float8[]); INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('{s}', 'a', ARRAY[1,2,3]::float8[], 0.5)")
    add(f"CREATE TEMP TABLE d AS SELECT * FROM model_select.route('{s}', ARRAY[1,2,3]::float8[]); SELECT model_select.drop_selector('{s}'); SELECT model_select.reward(decision_id, 0.5) FROM d")
    add(f"CREATE TEMP TABLE d AS SELECT * FROM model_select.route('{s}', ARRAY[1,2,3]::float8[]); SELECT model_select.drop_selector('{s}'); SELECT * FROM model_select.decision_scores((SELECT decision_id FROM d))")
    add(f"CREATE TEMP TABLE d AS SELECT * FROM model_select.route('{s}', ARRAY[1,2,3]::float8[]); SELECT model_select.retire_arm('{s}', (SELECT arm FROM d)); SELECT model_select.reward(decision_id, 0.5) FROM d; SELECT * FROM model_select.decision_scores((SELECT decision_id FROM d))")
    add(f"CREATE TEMP TABLE d AS SELECT * FROM model_select.route('{s}', ARRAY[1,2,3]::float8[]); SELECT model_select.reward(decision_id, 0.5) FROM d; SELECT model_select.reward(decision_id, 0.5) FROM d")
    add(f"CREATE TEMP TABLE d AS SELECT * FROM model_select.route('{s}', ARRAY[1,2,3]::float8[]); INSERT INTO model_select.rewards(decision_id, selector, reward) SELECT decision_id, 'f_pak', 0.5 FROM d")
    add(f"CREATE TEMP TABLE d AS SELECT * FROM model_select.route('{s}', ARRAY[1,2,3]::float8[]); INSERT INTO model_select.rewards(decision_id, arm, reward) SELECT decision_id, 'zz', 0.5 FROM d")
    add(f"CREATE TEMP TABLE d AS SELECT * FROM model_select.route('{s}', ARRAY[1,2,3]::float8[]); INSERT INTO model_select.rewards(decision_id, context, reward) SELECT decision_id, ARRAY[9,9,9]::float8[], 0.5 FROM d")
    add(f"CREATE TEMP TABLE d AS SELECT * FROM model_select.route('{s}', ARRAY[1,2,3]::float8[]); SELECT model_select.alter_selector('{s}', '{{\"alpha\": 2}}'); SELECT model_select.reward(decision_id, 0.5) FROM d; SELECT * FROM model_select.decision_scores((SELECT decision_id FROM d))")
    add(f"CREATE TEMP TABLE d AS SELECT * FROM model_select.route('{s}', ARRAY[1,2,3]::float8[]); UPDATE model_select.rewards SET reward = 0.1")
    add(f"DELETE FROM model_select.rewards"); add(f"DELETE FROM model_select.decisions"); add("TRUNCATE model_select.rewards")
    add(f"UPDATE model_select.decisions SET arm_id = -1"); add(f"DELETE FROM model_select.arm_state")
    add(f"DELETE FROM model_select.arm_state; SELECT * FROM model_select.route('{s}', ARRAY[1,2,3]::float8[]); INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('{s}', 'a', ARRAY[1,2,3]::float8[], 0.5); SELECT model_select.checkpoint('{s}')")
    add(f"DELETE FROM model_select.arms WHERE selector_id = (SELECT selector_id FROM model_select.selectors WHERE name = '{s}'); SELECT * FROM model_select.route('{s}', ARRAY[1,2,3]::float8[])")
    add(f"UPDATE model_select.selectors SET dim = 5 WHERE name = '{s}'; SELECT * FROM model_select.route('{s}', ARRAY[1,2,3,4,5]::float8[])")
    add(f"UPDATE model_select.selectors SET settings = '{{\"alpha\": -1}}' WHERE name = '{s}'; SELECT * FROM model_select.route('{s}', ARRAY[1,2,3]::float8[])")
    add(f"UPDATE model_select.selectors SET policy = 'nope' WHERE name = '{s}'; SELECT * FROM model_select.route('{s}', ARRAY[1,2,3]::float8[])")
    add(f"SELECT model_select.fit_codebook('{s}', 'SELECT ARRAY[1,2,3]::float8[] FROM generate_series(1,10)')")
    for src in ["NULL", "''", "'SELECT 1'", "'SELECT ARRAY[1,2]::float8[]'", "'SELECT ARRAY[1,''NaN'',3]::float8[]'", "'SELECT ARRAY[1,2,3]::float8[] WHERE false'",
                "'SELECT ARRAY[0,0,0]::float8[]'", "'SELECT ARRAY[1e308,1e308,1e308]::float8[] FROM generate_series(1,5)'",
                "'SELECT ARRAY[i,1,0]::float8[] FROM generate_series(1,100000) i'", "'DELETE FROM model_select.rewards'",
                "'SELECT NULL::float8[]'", "'SELECT ''[0:2]={1,2,3}''::float8[] FROM generate_series(1,5)'"]:
        for rf in ["true", "false", "NULL"]:
            add(f"SELECT model_select.fit_codebook('{s}', {src}, {rf})", tag='codebook')
    for who in ['fz_nobody', 'fz_app']:
        for q in [f"SELECT model_select.select_model('{s}', ARRAY[1,2,3]::float8[])", f"SELECT * FROM model_select.route('{s}', ARRAY[1,2,3]::float8[])",
                  f"SELECT * FROM model_select.scores('{s}', ARRAY[1,2,3]::float8[])", f"SELECT count(*) FROM model_select.route_batch('{s}', 'SELECT 1, ARRAY[1,2,3]::float8[]')",
                  f"INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('{s}', 'a', ARRAY[1,2,3]::float8[], 0.5)",
                  f"SELECT model_select.reward('{s}', 'a', ARRAY[1,2,3]::float8[], 0.5)",
                  f"SELECT model_select.warm_start('{s}', 'SELECT ARRAY[1,2,3]::float8[], ARRAY[0.5,0.2]::float8[]')",
                  f"SELECT model_select.warm_start('{s}', 'SELECT pg_sleep(5), 1')",
                  f"SELECT count(*) FROM model_select.route_batch('{s}', 'SELECT pg_sleep(5)::text::int, ARRAY[1,2,3]::float8[]')",
                  f"SELECT model_select.fit_codebook('{s}', 'SELECT pg_sleep(5)')",
                  f"SELECT model_select.rebuild_state('{s}')", f"SELECT model_select.checkpoint('{s}')", f"SELECT model_select.resample('{s}')",
                  f"SELECT model_select.maintain('{s}')", f"SELECT model_select.stats_reset('{s}')", f"SELECT model_select._codebook_fitted('{s}')",
                  f"SELECT model_select.alter_selector('{s}', '{{}}')", f"SELECT model_select.drop_selector('{s}')",
                  f"SELECT model_select.add_arm('{s}', 'z')", f"SELECT model_select.retire_arm('{s}', 'a')",
                  f"SELECT * FROM model_select.drift('{s}')", f"SELECT * FROM model_select.cascade('{s}', ARRAY[1,2,3]::float8[])",
                  f"SELECT * FROM model_select.cascade_scores('{s}', ARRAY[1,2,3]::float8[])", f"SELECT * FROM model_select.cascade_route('{s}', ARRAY[1,2,3]::float8[])",
                  f"SELECT model_select.cascade_next('{s}', ARRAY[1,2,3]::float8[], 0.5, ARRAY['a'])", f"SELECT model_select.cascade_select('{s}', ARRAY[0.1]::float8[], ARRAY['a'])",
                  f"SELECT model_select.cascade_refit('{s}')", f"SELECT model_select.fit_codebook('{s}', 'SELECT ARRAY[1,2,3]::float8[]')",
                  f"SELECT model_select.has_selector_privilege('{s}', 'route')", f"SELECT model_select.grant_selector('{s}', 'fz_nobody', 'route')",
                  f"SELECT model_select.revoke_selector('{s}', 'fz_app', 'route')",
                  f"SELECT model_select.create_selector('x_new', 3, ARRAY['a'])",
                  "SELECT * FROM model_select.decision_scores(1)", "SELECT * FROM model_select.decision_scores(2)",
                  "SELECT model_select.reward(1::bigint, 0.5)", "SELECT model_select.set_server_id(5)", "SELECT model_select.server_id()",
                  "SELECT * FROM model_select._latency()", "SELECT * FROM model_select._progress()", "SELECT model_select._progress_begin('x', 'y')",
                  "SELECT model_select._progress_end()", "SELECT * FROM model_select.learner_status()", "SELECT * FROM model_select.shared_versions()",
                  "SELECT * FROM model_select.cache_stats()", "SELECT * FROM model_select.probe_next('f_probe')", "SELECT model_select.probe_report('f_probe', 1, 0.5)",
                  "SELECT * FROM model_select.probe_status('f_probe')", "SELECT model_select.drop_probe_run('f_probe')",
                  "SELECT * FROM model_select.setup_role('fz_nobody', 'administrator')",
                  "SELECT count(*) FROM model_select._source_rows('SELECT * FROM model_select.rewards')",
                  "SELECT count(*) FROM model_select.replay('SELECT context, ARRAY[reward] FROM model_select.rewards')",
                  "SELECT count(*) FROM model_select.replay('SELECT ARRAY[1,0]::float8[], ARRAY[0.5]::float8[]', warm => 'SELECT context, ARRAY[reward] FROM model_select.rewards')"]:
            add(q, role=who, tag='priv')

# decision / reward ids
for d in ["NULL", "0", "-1", "9223372036854775807", "-9223372036854775808", "(SELECT max(decision_id) FROM model_select.decisions)"]:
    add(f"SELECT * FROM model_select.decision_scores({d})")
    add(f"SELECT model_select.reward({d}::bigint, 0.5)")
    add(f"SELECT model_select.reward({d}::bigint, 'NaN')")
    add(f"SELECT model_select.reward({d}::bigint, 0.5, 'Infinity')")
    add(f"INSERT INTO model_select.rewards(decision_id, reward) VALUES ({d}, 0.5)")
    add(f"INSERT INTO model_select.rewards(decision_id, reward, created_at) VALUES ({d}, 0.5, 'infinity')")
    add(f"INSERT INTO model_select.rewards(decision_id, reward, created_at) VALUES ({d}, 0.5, '-infinity')")
for ca in ["'infinity'", "'-infinity'", "'4713-01-01 BC'", "'294276-12-31'", "NULL", "now() + interval '100 years'"]:
    add(f"INSERT INTO model_select.rewards(selector, arm, context, reward, created_at) VALUES ('f_time', 'a', ARRAY[1,2,3]::float8[], 0.5, {ca}); SELECT * FROM model_select.scores('f_time', ARRAY[1,2,3]::float8[]); SELECT model_select.checkpoint('f_time'); SELECT model_select.rebuild_state('f_time')")
    add(f"INSERT INTO model_select.rewards(selector, arm, context, reward, created_at) VALUES ('f_lin', 'a', ARRAY[1,2,3]::float8[], 0.5, {ca})")
    add(f"INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost, created_at) VALUES ('f_pak', 'a', ARRAY[1,2,3]::float8[], 0.5, 0.1, {ca})")
add("INSERT INTO model_select.rewards(reward_id, selector, arm, context, reward) VALUES (-1, 'f_lin', 'a', ARRAY[1,2,3]::float8[], 0.5)")
add("INSERT INTO model_select.rewards(selector, arm, context, reward) SELECT 'f_lin', 'a', ARRAY[i,1,0]::float8[], 0.5 FROM generate_series(1,100000) i")
add("INSERT INTO model_select.rewards(selector, arm, context, reward) SELECT 'f_pak', 'a', ARRAY[i,1,0]::float8[], 0.5 FROM generate_series(1,20000) i")
add("INSERT INTO model_select.rewards(selector, arm, context, reward) SELECT 'f_bkb', 'a', ARRAY[i,1,0]::float8[], 0.5 FROM generate_series(1,20000) i; SELECT * FROM model_select.scores('f_bkb', ARRAY[1,2,3]::float8[])")
# cascade observations
for c in ctxs[:10]:
    add(f"INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost) VALUES ('f_pak', 'a', {c}, 0.5, 0.1)")
for v, co in [("1e308", "0.1"), ("0.5", "1e308"), ("-1e308", "0"), ("5e-324", "5e-324"), ("NULL", "0.1"), ("0.5", "NULL")]:
    add(f"INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost) VALUES ('f_pak', 'a', ARRAY[1,2,3]::float8[], {v}, {co}); SELECT * FROM model_select.cascade_scores('f_pak', ARRAY[1,2,3]::float8[]); SELECT model_select.cascade_refit('f_pak', true)")
for cid in ["NULL", "-1", "0", "9223372036854775807"]:
    add(f"INSERT INTO model_select.cascade_observations(cascade_id, arm, value, cost) VALUES ({cid}, 'a', 0.5, 0.1)")
add("CREATE TEMP TABLE c AS SELECT * FROM model_select.cascade_route('f_pak', ARRAY[1,2,3]::float8[]); INSERT INTO model_select.cascade_observations(cascade_id, arm, value, cost) SELECT cascade_id, 'zz', 0.5, 0.1 FROM c")
add("CREATE TEMP TABLE c AS SELECT * FROM model_select.cascade_route('f_pak', ARRAY[1,2,3]::float8[]); INSERT INTO model_select.cascade_observations(cascade_id, selector, arm, value, cost) SELECT cascade_id, 'f_lin', 'a', 0.5, 0.1 FROM c")
add("CREATE TEMP TABLE c AS SELECT * FROM model_select.cascade_route('f_pak', ARRAY[1,2,3]::float8[]); SELECT model_select.drop_selector('f_pak'); INSERT INTO model_select.cascade_observations(cascade_id, arm, value, cost) SELECT cascade_id, 'a', 0.5, 0.1 FROM c")
# create_selector
for n in names:
    add(f"SELECT model_select.create_selector({n}, 3, ARRAY['a'])")
for dim in ["2147483647", "-2147483648", "1", "16000"]:
    for pol in ["'pak_ucb'", "'lin_ucb'", "'bkb'", "'rff_ucb'", "'greedy'", "'random'"]:
        add(f"SELECT model_select.create_selector('x', {dim}, ARRAY['a'], {pol})")
for arms in ["(SELECT array_agg(i::text) FROM generate_series(1,100000) i)", "ARRAY[repeat('a', 10000)]", "'[0:1]={a,b}'::text[]", "ARRAY['a', 'A']", "ARRAY[E'a\\\\x01']"]:
    add(f"SELECT model_select.create_selector('x', 3, {arms})")
for seed in ["NULL", "-9223372036854775808", "9223372036854775807"]:
    add(f"SELECT model_select.create_selector('x', 3, ARRAY['a','b'], 'lin_ucb', NULL, '{{\"exploration\": \"thompson\"}}', {seed}); SELECT * FROM model_select.route('x', ARRAY[1,2,3]::float8[])")
    add(f"SELECT model_select.create_selector('x', 3, ARRAY['a','b'], 'random', NULL, '{{}}', {seed}); SELECT * FROM model_select.route('x', ARRAY[1,2,3]::float8[])")
    add(f"SELECT model_select.create_selector('x', 3, ARRAY['a','b'], 'rff_ucb', NULL, '{{}}', {seed}); SELECT * FROM model_select.route('x', ARRAY[1,2,3]::float8[])")
# misc global functions
for p in ["NULL", "''", "'nope'", "'pak_ucb'", "'lin_ucb'"]:
    for k in ["NULL", "''", "'rbf'", "'nope'"]:
        add(f"SELECT model_select.resolve_settings({p}, {k}, '{{}}')")
        for dim in ["NULL", "0", "-1", "2147483647", "16000"]:
            add(f"SELECT model_select.resolve_settings({p}, {k}, '{{}}', {dim})")
for sid in ["NULL", "-1", "0", "2147483647", "-2147483648", "65535", "65536", "1023", "1024"]:
    add(f"SELECT model_select.set_server_id({sid}); SELECT * FROM model_select.route('f_lin', ARRAY[1,2,3]::float8[])")
for a, b in [("NULL", "NULL"), ("repeat('x', 100000)", "repeat('y', 100000)"), ("''", "''")]:
    add(f"SELECT model_select._progress_begin({a}, {b}); SELECT * FROM model_select._progress(); SELECT model_select._progress_end(); SELECT model_select._progress_end()")
add("SELECT model_select._progress_end()")
for n in names:
    add(f"SELECT model_select.stats_reset({n})"); add(f"SELECT model_select.maintain({n})"); add(f"SELECT model_select._codebook_fitted({n})")
    add(f"SELECT model_select.has_selector_privilege({n}, 'route')"); add(f"SELECT model_select.resample({n})")
    add(f"SELECT model_select.warm_start({n}, 'SELECT 1')"); add(f"SELECT model_select.fit_codebook({n}, 'SELECT 1')")
    add(f"SELECT * FROM model_select.probe_next({n})"); add(f"SELECT model_select.probe_report({n}, 1, 0.5)")
    add(f"SELECT model_select.create_probe_run({n}, 12, 2, 1.0, 'SELECT ARRAY[1]::float8[], ''m''::text')")
    add(f"SELECT model_select.grant_selector({n}, 'fz_app', 'route')"); add(f"SELECT model_select.revoke_selector({n}, 'fz_app', 'route')")
for pv in ["NULL", "''", "'route,'", "','", "'ROUTE'", "' route '", "'route, reward, admin'", "repeat('route,', 10000)", "'select'"]:
    add(f"SELECT model_select.has_selector_privilege('f_lin', {pv})"); add(f"SELECT model_select.has_selector_privilege(1, {pv})")
    add(f"SELECT model_select.grant_selector('f_lin', 'fz_nobody', {pv})"); add(f"SELECT model_select.revoke_selector('f_lin', 'fz_nobody', {pv})")
for sid in ["NULL", "-1", "0", "2147483647"]:
    add(f"SELECT model_select.has_selector_privilege({sid}::int, 'route')")
for k in ["NULL", "''", "'nope'", "'admin'", "'application'", "'none'"]:
    add(f"SELECT * FROM model_select.setup_role('fz_nobody', {k})"); add(f"SELECT * FROM model_select.setup_role('postgres', {k})")
    add(f"SELECT * FROM model_select.setup_role('pg_read_all_data', {k})"); add(f"SELECT * FROM model_select.setup_role(NULL, {k})")
for d, p, c in [("'uniform'", "ARRAY[0,1e308]", "0.1"), ("'uniform'", "ARRAY[1,0]", "0.1"), ("'uniform'", "ARRAY[0,1]", "1e308"),
                ("'uniform'", "ARRAY[0,1]", "0"), ("'uniform'", "ARRAY[0,1]", "5e-324"), ("'uniform'", "ARRAY[-1e308,1e308]", "1"),
                ("'normal'", "ARRAY[0,0]", "0.1"), ("'normal'", "ARRAY[0,1e308]", "0.1"), ("'normal'", "ARRAY[0,5e-324]", "0.1"), ("'normal'", "ARRAY[0,1]", "1e308"),
                ("'normal'", "ARRAY[0,1]", "5e-324"), ("'normal'", "ARRAY[0,1]", "0"), ("'normal'", "ARRAY[0,-1]", "0.1"), ("'normal'", "ARRAY[1e308,1]", "0.1"),
                ("'bernoulli'", "ARRAY[0.5]", "0.1"), ("'exponential'", "ARRAY[0]", "0.1"), ("'exponential'", "ARRAY[5e-324]", "0.1"), ("'exponential'", "ARRAY[1e308]", "0.1"),
                ("'lognormal'", "ARRAY[0,1]", "0.1"), ("'lognormal'", "ARRAY[700,1]", "0.1"), ("'beta'", "ARRAY[1,1]", "0.1"), ("'beta'", "ARRAY[5e-324,5e-324]", "0.1"),
                ("'discrete'", "ARRAY[1,0.5,2,0.5]", "0.1"), ("'discrete'", "ARRAY[1,0.5,2,0.6]", "0.1"), ("'discrete'", "ARRAY[1,-0.5,2,1.5]", "0.1"),
                ("'discrete'", "ARRAY[1e308,0.5,-1e308,0.5]", "0.1"), ("'uniform'", "'[0:1]={0,1}'::float8[]", "0.1"), ("NULL", "ARRAY[0,1]", "0.1"),
                ("'uniform'", "NULL", "0.1"), ("'uniform'", "ARRAY[0,1]", "NULL"), ("'uniform'", "ARRAY[0,1,2]", "0.1"), ("'uniform'", "ARRAY[0,1]", "-0.0")]:
    add(f"SELECT model_select.reservation_index({d}, {p}, {c})")
for c, q, m in [("ARRAY[1e308,1e308]", "ARRAY[0.5,0.6]", "1e308"), ("ARRAY[0,0]", "ARRAY[0.5,0.6]", "0"), ("'{}'", "'{}'", "1"),
                ("ARRAY[-1,1]", "ARRAY[0.5,0.6]", "1"), ("ARRAY[1,1]", "ARRAY[0.5,0.5]", "1"), ("ARRAY[5e-324,1e-323]", "ARRAY[0.5,0.6]", "1"),
                ("ARRAY[1,2]", "ARRAY[1e308,-1e308]", "2"), ("NULL", "ARRAY[1]", "1"), ("ARRAY[1]", "ARRAY[1]", "NULL"), ("ARRAY[1]", "ARRAY[1]", "-1"),
                ("'[0:1]={1,2}'::float8[]", "ARRAY[0.5,0.6]", "2"), ("ARRAY[1,2]", "ARRAY[0.5,0.6]", "'Infinity'"), ("ARRAY['Infinity',1]::float8[]", "ARRAY[0.5,0.6]", "2"),
                ("array_fill(1::float8, ARRAY[1000000])", "array_fill(0.5::float8, ARRAY[1000000])", "1")]:
    add(f"SELECT * FROM model_select.quality_hull({c}, {q}, {m})")
for args in ["NULL, 2, 2", "10, NULL, 2", "2147483647, 2, 2", "10, 2147483647, 2", "10, 2, 2147483647", "10, 2, 2, clusters => 0", "10, 2, 2, clusters => -1",
             "10, 2, 2, clusters => 2147483647", "10, 2, 2, noise => 1e308", "10, 2, 2, noise => -1", "10, 2, 2, noise => 'Infinity'", "10, 2, 2, new_arm_at => 0",
             "10, 2, 2, new_arm_at => -1", "10, 2, 2, new_arm_at => 2147483647", "10, 2, 2, switch_every => 0", "10, 2, 2, switch_every => -1",
             "10, 2, 2, new_cluster_every => 0", "10, 2, 2, new_cluster_every => -5", "10, 2, 2, seed => NULL", "10, 2, 1", "10, 2, 0", "0, 2, 2", "10, 2, 2, new_arm_at => 5, clusters => 1",
             "10, 1, 1, clusters => 1", "100, 16000, 2", "10, 2, 2, noise => 5e-324"]:
    add(f"SELECT * FROM model_select.synthetic_clusters({args})")
for args in ["NULL, 2, 2", "10, 2, 2, inducing => 0", "10, 2, 2, inducing => -1", "10, 2, 2, inducing => 2147483647", "10, 2, 2, inducing => 100000",
             "10, 2, 2, bandwidth => 5e-324", "10, 2, 2, bandwidth => 1e308", "10, 2, 2, nu => 0", "10, 2, 2, nu => -1", "10, 2, 2, nu => 1e308", "10, 2, 2, nu => 'NaN'",
             "10, 2, 2, kernel => 'matern', nu => 0.5", "10, 2, 2, kernel => 'matern', nu => 1.5", "10, 2, 2, kernel => 'matern', nu => 7", "10, 2, 2, kernel => 'matern', nu => 5e-324",
             "10, 2, 2, kernel => 'laplacian'", "10, 2, 2, kernel => NULL", "10, 2, 2, rkhs_norm => 0", "10, 2, 2, rkhs_norm => -1", "10, 2, 2, rkhs_norm => 5e-324",
             "10, 2, 2, noise => -1", "10, 0, 2", "10, 2, 0", "10, 2, 2147483647", "10, 16000, 2", "10, 2, 2, inducing => 1", "10, 2, 2, bandwidth => 1e-300, kernel => 'matern'"]:
    add(f"SELECT * FROM model_select.synthetic_rkhs({args})")
RS = "'SELECT ARRAY[1,2]::float8[], ARRAY[0.5,0.2]::float8[], ARRAY[0.1,0.2]::float8[] FROM generate_series(1,20)'"
for extra in ["delay => -1", "delay => 2147483647", "delay => NULL", "feedback => 'NaN'", "feedback => -1", "feedback => 2", "feedback => 0", "feedback => 5e-324",
              "feedback => NULL", "rounds => -1", "rounds => 2147483647", "passes => 2147483647", "passes => -1", "passes => NULL", "checkpoint => 0", "checkpoint => 2147483647",
              "shuffle => NULL", "warm => ''", "warm => 'SELECT 1'", "warm => 'SELECT ARRAY[1,2]::float8[], ARRAY[0.5]::float8[]'", "warm => 'SELECT ARRAY[1,2,3]::float8[], ARRAY[0.5,0.2]::float8[]'",
              "warm => 'SELECT ARRAY[1,2]::float8[], ARRAY[''NaN'',0.2]::float8[]'", "warm => 'DELETE FROM model_select.rewards'", "warm => 'TABLE public.src_ok'",
              "policy => NULL", "policy => ''", "kernel => ''", "settings => NULL", "settings => '{\"budget\": 0.15}'", "settings => '{\"budget\": 1e308}'",
              "settings => '{\"budget\": 5e-324}'", "settings => '{\"budget\": 0.15}', delay => 5, feedback => 0.5", "settings => '{\"clock\": \"time\"}'",
              "cost_weight => 1e308", "cost_weight => 5e-324", "cost_weight => NULL", "policy => 'pak_ucb', settings => '{\"window\": 3}', rounds => 500, passes => 50",
              "policy => 'bkb', rounds => 300, passes => 20", "policy => 'rff_ucb', settings => '{\"features\": 8191}'", "policy => 'random'", "policy => 'greedy', settings => '{\"exploration\": \"thompson\"}'",
              "settings => '{\"restart_every\": 1}'", "settings => '{\"window\": 1}'"]:
    add(f"SELECT count(*), max(cum_reward) FROM model_select.replay({RS}, {extra})", tag='replay')
    add(f"SELECT * FROM model_select.replay({RS}, {extra}) ORDER BY round DESC LIMIT 1", tag='replay')
for extra in ["cost_weights => '{}'", "cost_weights => ARRAY[NULL]::float8[]", "cost_weights => ARRAY['NaN']::float8[]", "cost_weights => ARRAY[-1]::float8[]",
              "cost_weights => ARRAY[1e308]::float8[]", "cost_weights => (SELECT array_agg(i::float8) FROM generate_series(1,10000) i)", "budgets => '{}'", "budgets => ARRAY[NULL]::float8[]",
              "budgets => ARRAY['NaN']::float8[]", "budgets => ARRAY[-1]::float8[]", "budgets => ARRAY[0]::float8[]", "budgets => ARRAY[1e308]::float8[]", "budgets => ARRAY[5e-324]::float8[]",
              "cost_weights => ARRAY[[0,1]]::float8[]", "cost_weights => '[0:1]={0,1}'::float8[]", "cost_weights => ARRAY[0,0]::float8[]", "rounds => 0", "rounds => -1",
              "warm => 'SELECT 1'", "source => NULL", "policy => NULL", ""]:
    sep = ", " if extra else ""
    add(f"SELECT * FROM model_select.quality_cost({RS}{sep}{extra})", tag='qc')
for src in ["NULL", "''", "'SELECT 1'", "'TABLE public.src_ok'", "'public.src_ok'", "'SELECT ARRAY[1]::float8[], ARRAY[1]::float8[], ARRAY[1]::float8[], ARRAY[1]::float8[], ARRAY[''a'']::text[], 1'",
            "'SELECT ARRAY[1]::float8[], ARRAY[1]::float8[], ARRAY[1]::float8[], ARRAY[1]::float8[], ARRAY[''a'']::text[]'", "'SELECT ARRAY[1]::float8[], ARRAY[1]::float8[], ARRAY[1]::float8[], ARRAY[1]::float8[], 5'"]:
    add(f"SELECT * FROM model_select._source_rows({src})")
# probes
for h, r, b in [("0", "1", "1"), ("-1", "1", "1"), ("2147483647", "1", "1"), ("12", "0", "1"), ("12", "-1", "1"), ("12", "2147483647", "1"), ("12", "2", "'NaN'"),
                ("12", "2", "'Infinity'"), ("12", "2", "-1"), ("12", "2", "1e308"), ("12", "2", "0"), ("NULL", "2", "1"), ("1", "1", "1"), ("100000000", "2", "1")]:
    add(f"SELECT model_select.create_probe_run('p2', {h}, {r}, {b}, 'SELECT ARRAY[x,1]::float8[], m FROM generate_series(1,3) x, (VALUES (''m1''), (''m2'')) v(m)'); SELECT * FROM model_select.probe_next('p2', 3)")
for pool in ["'SELECT ARRAY[1]::float8[], NULL::text'", "'SELECT NULL::float8[], ''m''::text'", "'SELECT ARRAY[1]::float8[], ''''::text'", "'SELECT ARRAY[1e308]::float8[], ''m''::text'",
             "'SELECT ARRAY[1]::float8[], ''m''::text UNION ALL SELECT ARRAY[1,2]::float8[], ''m''::text'", "'SELECT ARRAY[1]::float8[], ''m''::text UNION ALL SELECT ARRAY[1]::float8[], ''m''::text'",
             "'SELECT ARRAY[1]::float8[]'", "'SELECT ARRAY[1]::float8[], ''m''::text, 3'", "'SELECT ''[0:0]={1}''::float8[], ''m''::text'", "'SELECT array_fill(1::float8, ARRAY[100000]), ''m''::text'",
             "'SELECT ARRAY[x]::float8[], ''m''::text FROM generate_series(1,200000) x'", "NULL", "''", "'SELECT ARRAY[1]::float8[], 5'"]:
    add(f"SELECT model_select.create_probe_run('p2', 12, 2, 1, {pool}); SELECT * FROM model_select.probe_next('p2', 3)")
for k in ["NULL", "0", "2147483647", "-2147483648"]:
    add(f"SELECT * FROM model_select.probe_next('f_probe', {k})")
for item, sc in [("NULL", "0.5"), ("1", "NULL"), ("-1", "0.5"), ("0", "0.5"), ("2147483647", "0.5"), ("1", "'Infinity'"), ("1", "5e-324"), ("1", "1e15")]:
    add(f"SELECT * FROM model_select.probe_next('f_probe', 2); SELECT model_select.probe_report('f_probe', {item}, {sc})")
for i, bt, m, sc in [("NULL", "1", "1", "0.5"), ("-1", "1", "1", "0.5"), ("1", "-1", "1", "0.5"), ("1", "1", "-1", "0.5"), ("2147483647", "2147483647", "2147483647", "0.5"), ("0", "0", "0", "0.5"), ("1", "1", "1", "'NaN'")]:
    add(f"SELECT * FROM model_select.probe_next('f_probe', 2); SELECT model_select.probe_report('f_probe', {i}, {bt}, {m}, {sc})")
add("SELECT * FROM model_select.probe_next('f_probe', 2); SELECT model_select.probe_report(item_id, 0.5) FROM model_select.probe_next('f_probe', 2); SELECT * FROM model_select.probe_status('f_probe')")
add("DO $$ DECLARE r record; i int := 0; BEGIN LOOP i := i + 1; EXIT WHEN i > 200; FOR r IN SELECT * FROM model_select.probe_next('f_probe', 4) LOOP PERFORM model_select.probe_report('f_probe', r.item_id, random()); END LOOP; END LOOP; END $$; SELECT * FROM model_select.probe_status('f_probe')")
add("SELECT model_select.drop_probe_run('f_probe'); SELECT * FROM model_select.probe_next('f_probe')")
add("SELECT * FROM model_select.cache_stats(NULL)"); add("SELECT * FROM model_select.cache_stats(true)")
add("DROP EXTENSION model_select CASCADE; CREATE EXTENSION model_select; SELECT * FROM model_select.route('f_lin', ARRAY[1,2,3]::float8[])")


# a NULL or ±Infinity in an output row: Infinity is documented for arms with
# n = 0 (scores(), route()'s score of an unlearned arm, the cascade indices
# of arms never observed); NaN never is.
NAN = re.compile(r'(?<![A-Za-z])NaN(?![A-Za-z])')
INF = re.compile(r'(?<![A-Za-z])-?Infinity(?![A-Za-z])')
UNLEARNED = re.compile(r'\|0\|(-?Infinity\|)+|^\d+\|[^|]*\|Infinity$|^\d+\|\{[^}]*\}\|\{[^}]*Infinity[^}]*\}$')


def run(case):
    role, sql, _ = case
    script = ("\\set VERBOSITY verbose\nBEGIN;\nSET LOCAL statement_timeout = '30s';\n"
              + sql + ";\nROLLBACK;\n")
    try:
        p = subprocess.run(['psql', '-X', '-A', '-t', '-U', role, '-d', DB, '-v', 'ON_ERROR_STOP=1'],
                           input=script, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return case, 'HANG', '', ['HANG']
    m = re.search(r'ERROR:  ([0-9A-Z]{5}): (.*)', p.stderr)
    state = m.group(1) if m else ('00000' if p.returncode == 0 else 'EXIT%d' % p.returncode)
    msg = m.group(2) if m else ''
    flags = []
    if 'server closed the connection' in p.stderr or 'connection to server' in p.stderr:
        flags.append('CRASH')
    if state.startswith('XX'):
        flags.append(state)
    if state == '57014':
        flags.append('TIMEOUT')
    if NAN.search(p.stdout):
        flags.append('NaN')
    for line in p.stdout.splitlines():
        if INF.search(line) and not UNLEARNED.search(line):
            flags.append('Infinity')
            break
    return case, state, msg, flags


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--jobs', type=int, default=6)
    ap.add_argument('--only', default=None, help='run the cases whose SQL contains this text')
    ap.add_argument('--all', action='store_true', help='print every case')
    args = ap.parse_args()
    subprocess.run(['psql', '-X', '-q', '-d', 'postgres', '-c', 'DROP DATABASE IF EXISTS ' + DB + ' WITH (FORCE)',
                    '-c', 'CREATE DATABASE ' + DB], check=True)
    subprocess.run(['psql', '-X', '-q', '-o', '/dev/null', '-d', DB, '-v', 'ON_ERROR_STOP=1',
                    '-c', 'SET client_min_messages = warning', '-f', '-'],
                   input=FIXTURES, text=True, check=True)
    todo = [c for c in cases if args.only is None or args.only in c[1]]
    print(len(todo), 'cases', file=sys.stderr)
    states = collections.Counter()
    bad = 0
    with cf.ThreadPoolExecutor(args.jobs) as ex:
        for case, state, msg, flags in ex.map(run, todo):
            states[state] += 1
            if 'CRASH' in flags or 'XX000' in flags or 'HANG' in flags:
                bad += 1
            if flags or args.all:
                print(' '.join(flags) or state, case[0], '|', case[1][:600], '->', state, msg[:300])
    print(dict(sorted(states.items())), file=sys.stderr)
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
