-- tag_scale (issue 42, tags): a tag's buckets are scaled by √intercept times
-- tag_scale s, so that one tag on every context adds intercept·s² to every
-- kernel value.  Ridge means and widths depend on the features through their
-- inner products alone, so a selector with intercept I, tag_scale s and the
-- same tag on every context must score as one with intercept I·(1 + s²) and
-- no tags: lin_ucb (primal features, learnt noise) and pak_ucb (rbf kernel),
-- at the default s = 1 and at s = 0.3, and after alter_selector() re-learns
-- the log under s = 0.5.  The key is listed only when set; bad values are
-- refused with 22023 and change nothing.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(11);

SELECT setseed(0.17);
CREATE TEMP TABLE env AS
SELECT i, ARRAY(SELECT random() - 0.5 FROM generate_series(1, 6) j WHERE i > 0)::float8[] AS context,
       CASE WHEN random() < 0.5 THEN 'a' ELSE 'b' END AS arm, random() AS reward
  FROM generate_series(1, 120) i;
CREATE TEMP TABLE probes AS
SELECT p, ARRAY(SELECT random() - 0.5 FROM generate_series(1, 6) j WHERE p > 0)::float8[] AS context
  FROM generate_series(1, 10) p;

-- each tagged selector and its untagged twin
CREATE TEMP TABLE pairs (tagged text, twin text);
INSERT INTO pairs VALUES ('lin_s1', 'lin_i20'), ('lin_s03', 'lin_i109'), ('pak_s03', 'pak_i109');
SELECT model_select.create_selector('lin_s1', 6, ARRAY['a', 'b']);
SELECT model_select.create_selector('lin_i20', 6, ARRAY['a', 'b'], settings => '{"intercept": 20}');
SELECT model_select.create_selector('lin_s03', 6, ARRAY['a', 'b'], settings => '{"tag_scale": 0.3}');
SELECT model_select.create_selector('lin_i109', 6, ARRAY['a', 'b'], settings => '{"intercept": 10.9}');
SELECT model_select.create_selector('pak_s03', 6, ARRAY['a', 'b'], 'pak_ucb', 'rbf',
                                    '{"tag_buckets": 16, "tag_scale": 0.3}');
SELECT model_select.create_selector('pak_i109', 6, ARRAY['a', 'b'], 'pak_ucb', 'rbf', '{"intercept": 10.9}');
INSERT INTO model_select.rewards (selector, arm, context, reward, tags)
SELECT s.name, e.arm, e.context, e.reward, CASE WHEN s.name IN (SELECT tagged FROM pairs) THEN ARRAY['k'] END
  FROM env e, model_select.selectors s ORDER BY e.i, s.name;

-- every probe's every learnt arm, scored by a tagged selector (tag 'k') and
-- by its twin (no tag) after the same rewards: the largest difference of
-- mean, width and ucb; pair_gap() the largest of them, pair_rows() how many
CREATE FUNCTION pair_diffs(tagged text, twin text) RETURNS SETOF float8 LANGUAGE sql AS $$
    SELECT greatest(abs(x.mean - y.mean), abs(x.width - y.width), abs(x.ucb - y.ucb))
      FROM probes p, model_select.scores(tagged, p.context, ARRAY['k']) x
           JOIN model_select.scores(twin, p.context) y ON y.arm = x.arm AND y.n = x.n
     WHERE x.n > 0 $$;
CREATE FUNCTION pair_gap(tagged text, twin text) RETURNS float8 LANGUAGE sql AS $$
    SELECT max(d) FROM pair_diffs(tagged, twin) d $$;
CREATE FUNCTION pair_rows(tagged text, twin text) RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM pair_diffs(tagged, twin) d $$;

SELECT is((SELECT string_agg(pair_rows(tagged, twin)::text, ' ' ORDER BY tagged) FROM pairs), '20 20 20',
          'every probe scores both arms, learnt from the same rewards, in each tagged selector and its twin');
SELECT cmp_ok(pair_gap('lin_s1', 'lin_i20'), '<', 1e-9::float8,
              'lin_ucb: one tag on every context at the default tag_scale = intercept 10 + 10');
SELECT cmp_ok(pair_gap('lin_s03', 'lin_i109'), '<', 1e-9::float8,
              'lin_ucb: tag_scale 0.3 = intercept 10 + 10 * 0.3^2');
SELECT cmp_ok(pair_gap('pak_s03', 'pak_i109'), '<', 1e-9::float8,
              'pak_ucb (rbf): tag_scale 0.3 = intercept 10 + 10 * 0.3^2');
-- the scale is felt: tag_scale 0.3 scores otherwise than the default
SELECT cmp_ok(pair_gap('lin_s03', 'lin_i20'), '>', 1e-6::float8,
              'tag_scale 0.3 and the default score differently');

-- The key is listed only when set, and a change re-learns the log under it.
SELECT is((SELECT settings ? 'tag_scale' FROM model_select.selectors WHERE name = 'lin_s1'), false,
          'the default tag_scale is not listed');
SELECT is((SELECT settings->'tag_scale' FROM model_select.selectors WHERE name = 'lin_s03'), '0.3'::jsonb,
          'a set tag_scale is listed');
SELECT model_select.alter_selector('lin_s03', '{"tag_scale": 0.5}');
SELECT model_select.create_selector('lin_i125', 6, ARRAY['a', 'b'], settings => '{"intercept": 12.5}');
INSERT INTO model_select.rewards (selector, arm, context, reward)
SELECT 'lin_i125', e.arm, e.context, e.reward FROM env e ORDER BY e.i;
SELECT cmp_ok(pair_gap('lin_s03', 'lin_i125'), '<', 1e-9::float8,
              'alter_selector() to tag_scale 0.5 re-learns the log: = intercept 10 + 10 * 0.5^2');
SELECT model_select.alter_selector('lin_s03', '{"tag_scale": 1}');
SELECT is((SELECT settings ? 'tag_scale' FROM model_select.selectors WHERE name = 'lin_s03'), false,
          'back at the default, tag_scale is not listed');

-- Bad values: 22023, and the settings unchanged.
CREATE TEMP TABLE before AS SELECT settings, settings_version FROM model_select.selectors WHERE name = 'lin_s1';
CREATE FUNCTION try_scale(v text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM model_select.alter_selector('lin_s1', format('{"tag_scale": %s}', v)::jsonb);
    RETURN 'accepted';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;
SELECT is((SELECT string_agg(v || ' ' || try_scale(v), ', ' ORDER BY o)
             FROM unnest(ARRAY['0', '-1', '101', '1e400', '"x"', '"NaN"', 'null']) WITH ORDINALITY u(v, o)),
          '0 22023, -1 22023, 101 22023, 1e400 22023, "x" 22023, "NaN" 22023, null 22023',
          'tag_scale 0, below 0, above 100, beyond a double, a string, NaN and null are refused with 22023');
SELECT is((SELECT ROW(s.settings, s.settings_version)::text FROM model_select.selectors s WHERE s.name = 'lin_s1'),
          (SELECT ROW(b.settings, b.settings_version)::text FROM before b),
          'a refused tag_scale leaves the settings and their version as they were');
SELECT * FROM finish();
ROLLBACK;
