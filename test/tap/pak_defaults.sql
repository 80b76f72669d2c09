-- pak_ucb's and bkb's own defaults (issue 42): lin_ucb's scale, alpha 20,
-- intercept 10, eta 2 (bkb also qbar 40), where rff_ucb keeps the settings
-- table's (1, 1, 0.5).
-- A selector's stored settings are resolved once, at creation: one created
-- at the old scale (as 0.2.0 stored its defaults, and as the update keeps
-- them) scores with it after an unrelated alter_selector(), rebuild_state()
-- and a checkpoint, and never takes the new defaults.  Scores are checked
-- against the closed form of one reward r at x, probed at y (unit vectors,
-- rbf of bandwidth 1, k' = k + intercept c):
--   mean  = k'(x,y) r / (k'(x,x) + alpha)
--   width = sqrt(max(0, k'(y,y) - k'(x,y)² / (k'(x,x) + alpha)) / alpha)
--   ucb   = mean + eta·width
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(12);

CREATE FUNCTION pg_temp.scale(pol text) RETURNS text LANGUAGE sql AS $$
    SELECT format('%s %s %s', s->>'alpha', s->>'intercept', s->>'eta')
      FROM model_select.resolve_settings(pol, NULL, '{}') s
$$;
SELECT is(pg_temp.scale('pak_ucb'), '20 10 2', 'pak_ucb''s defaults: alpha 20, intercept 10, eta 2');
SELECT is(pg_temp.scale('bkb') || ' ' || (model_select.resolve_settings('bkb', NULL, '{}')->>'qbar'), '20 10 2 40',
          'bkb''s: the same, as it approximates pak_ucb''s posterior, and qbar 40 (a dictionary as at alpha 1, qbar 2)');
SELECT is(pg_temp.scale('lin_ucb') || ' / ' || pg_temp.scale('rff_ucb'), '20 10 2 / 1 1 0.5',
          'lin_ucb''s unchanged, rff_ucb''s the settings table''s');

-- one reward 0.8 at x = (1, 0, 0), probed at y = (0.6, 0.8, 0): |x - y|² = 0.8
CREATE FUNCTION pg_temp.closed(c float8, alpha float8, eta float8, OUT mean float8, OUT width float8, OUT ucb float8)
LANGUAGE sql AS $$
    SELECT m, w, m + eta * w
      FROM (SELECT (k + c) * 0.8 / (1 + c + alpha) AS m,
                   sqrt(greatest(0, 1 + c - (k + c) ^ 2 / (1 + c + alpha)) / alpha) AS w
              FROM (SELECT exp(-0.8 / 2) AS k) kk) q
$$;
CREATE FUNCTION pg_temp.off(sel text, c float8, alpha float8, eta float8) RETURNS float8 LANGUAGE sql AS $$
    SELECT greatest(abs(s.mean - r.mean), abs(s.width - r.width), abs(s.ucb - r.ucb))
      FROM model_select.scores(sel, ARRAY[0.6, 0.8, 0]::float8[]) s, pg_temp.closed(c, alpha, eta) r
     WHERE s.arm = 'a'
$$;
SELECT model_select.create_selector('new_pak', 3, ARRAY['a'], 'pak_ucb'),
       model_select.create_selector('new_bkb', 3, ARRAY['a'], 'bkb'),
       model_select.create_selector('old_pak', 3, ARRAY['a'], 'pak_ucb', NULL,
                                    '{"alpha": 1, "intercept": 1, "eta": 0.5}');
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT s, 'a', ARRAY[1, 0, 0]::float8[], 0.8 FROM unnest(ARRAY['new_pak', 'new_bkb', 'old_pak']) s;

SELECT cmp_ok(pg_temp.off('new_pak', 10, 20, 2), '<', 1e-12::float8,
              'pak_ucb created with its defaults scores with alpha 20, intercept 10, eta 2 (closed form)');
SELECT cmp_ok(pg_temp.off('new_bkb', 10, 20, 2), '<', 1e-12::float8, 'so does bkb');
SELECT cmp_ok(pg_temp.off('old_pak', 1, 1, 0.5), '<', 1e-12::float8,
              'a pak_ucb selector stored with the old scale scores with alpha 1, intercept 1, eta 0.5');
SELECT is((SELECT format('%s %s %s', settings->>'alpha', settings->>'intercept', settings->>'eta')
             FROM model_select.selectors WHERE name = 'old_pak'), '1 1 0.5', 'its stored settings hold them');

-- an unrelated change, a rebuild and a checkpoint keep the stored scale
SELECT is(model_select.alter_selector('old_pak', '{"cap": 500}'), 1::bigint, 'alter_selector(cap) re-learns its reward');
SELECT cmp_ok(pg_temp.off('old_pak', 1, 1, 0.5), '<', 1e-12::float8,
              '... and it still scores with alpha 1, intercept 1, eta 0.5');
SELECT model_select.rebuild_state('old_pak'), model_select.checkpoint('old_pak');
SELECT cmp_ok(pg_temp.off('old_pak', 1, 1, 0.5), '<', 1e-12::float8, '... after rebuild_state() and a checkpoint too');
SELECT is((SELECT format('%s %s %s %s', settings->>'alpha', settings->>'intercept', settings->>'eta', settings->>'cap')
             FROM model_select.selectors WHERE name = 'old_pak'), '1 1 0.5 500', 'its stored settings: the old scale, cap 500');

-- a probe run's GP keeps the settings table's alpha and intercept (its beta is chosen for them)
CREATE TEMP TABLE pool AS
SELECT g, m AS model, ARRAY[cos(g * 0.3), sin(g * 0.3)]::float8[] AS prompt
  FROM generate_series(0, 5) g, unnest(ARRAY['strong', 'weak']) m;
SELECT model_select.create_probe_run('probe', 20, 10, 2.0, 'SELECT prompt, model FROM pool ORDER BY g, model');
SELECT is((SELECT format('%s %s', settings->>'alpha', settings->>'intercept') FROM model_select.probe_runs
            WHERE name = 'probe'), '1 1', 'a probe run created without settings: alpha 1, intercept 1');

SELECT * FROM finish();
ROLLBACK;
