-- "codebook" k (lin_ucb; default 8): fit_codebook() fits k centroids to the
-- prepared contexts of a query (k-means), and lin_ucb appends to the
-- features the one-hot of a context's nearest centroid, scaled √intercept,
-- and scales the context's own features by 1/√codebook_shrink (default 5).
-- Checked against independent computations: the centroids of well separated
-- clusters are their means; the selector scores as a twin without a
-- codebook whose contexts carry that one-hot (computed here in SQL from the
-- stored centroids); rebuild_state() agrees; warm_start() fits it once.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(43);

-- three clusters around the directions 0°, 120° and 240°
CREATE TEMP TABLE pts AS
SELECT i, i % 3 AS cluster,
       ARRAY[(1 + 0.1 * cos(7 * i)) * cos(2 * pi() * (i % 3) / 3 + 0.1 * sin(i)),
             (1 + 0.1 * cos(7 * i)) * sin(2 * pi() * (i % 3) / 3 + 0.1 * sin(i))]::float8[] AS x
  FROM generate_series(1, 60) i;

SELECT is(model_select.resolve_settings('lin_ucb', NULL, '{}')->>'codebook', '8', 'lin_ucb''s default codebook is 8');
SELECT throws_ok($$SELECT model_select.resolve_settings('rff_ucb', 'rbf', '{"codebook": 4}')$$, '22023', NULL,
                 'codebook applies to lin_ucb only');
SELECT throws_ok($$SELECT model_select.resolve_settings('lin_ucb', NULL, '{"codebook": 65}')$$, '22023', NULL,
                 'at most 64 centroids');
SELECT throws_ok($$SELECT model_select.resolve_settings('lin_ucb', NULL, '{"codebook_shrink": 0.5}')$$, '22023', NULL,
                 'codebook_shrink is at least 1');

SELECT model_select.create_selector('cb', 2, ARRAY['a', 'b'], 'lin_ucb', NULL, '{"codebook": 3, "normalize": false}');
SELECT model_select.create_selector('twin', 5, ARRAY['a', 'b'], 'lin_ucb', NULL, '{"codebook": 0, "normalize": false}');
SELECT model_select.create_selector('plain', 2, ARRAY['a', 'b'], 'lin_ucb', NULL, '{"codebook": 0, "normalize": false}');

-- before a fit the one-hot is all zeros: the scores are those without a codebook
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT s, (ARRAY['a', 'b'])[1 + i % 2], x, CASE WHEN cluster = 1 THEN 0.9 ELSE 0.2 END + 0.05 * x[1]
  FROM pts, unnest(ARRAY['cb', 'plain']) s WHERE i <= 20 ORDER BY s, i;
SELECT cmp_ok((SELECT max(abs(c.ucb - p.ucb)) FROM pts,
                      LATERAL model_select.scores('cb', x) c JOIN LATERAL model_select.scores('plain', x) p USING (arm)),
              '<', 1e-12::float8, 'no codebook fitted: every score equals the selector''s without one');

SELECT is(model_select.fit_codebook('cb', 'SELECT x FROM pts ORDER BY i'), 60::bigint, 'fit_codebook returns the contexts it fitted on');
SELECT is((SELECT array_dims(centroids) || ' ' || rows FROM model_select.codebooks c JOIN model_select.selectors s USING (selector_id)
            WHERE s.name = 'cb'), '[1:3][1:2] 60', 'the codebook holds 3 centroids of dimension 2, fitted on 60 rows');

CREATE TEMP TABLE centroid AS
SELECT j, ARRAY[c.centroids[j][1], c.centroids[j][2]] AS c
  FROM model_select.codebooks c JOIN model_select.selectors s USING (selector_id), generate_series(1, 3) j WHERE s.name = 'cb';
-- each cluster's mean, matched to its nearest centroid
SELECT cmp_ok((SELECT max(d) FROM (
                 SELECT min(abs(m.m1 - ce.c[1]) + abs(m.m2 - ce.c[2])) AS d
                   FROM (SELECT cluster, avg(x[1]) AS m1, avg(x[2]) AS m2 FROM pts GROUP BY cluster) m, centroid ce
                  GROUP BY m.cluster) s),
              '<', 1e-12::float8, 'well separated clusters: the centroids are the clusters'' means');
SELECT is((SELECT count(DISTINCT j) FROM pts,
                  LATERAL (SELECT j FROM centroid ORDER BY (x[1] - c[1])^2 + (x[2] - c[2])^2, j LIMIT 1) n), 3::bigint,
          'every centroid is the nearest of one cluster');

-- the twin learns the contexts with the one-hot appended, the context scaled by
-- 1/√codebook_shrink (5): [x/√5 ; √10·e_j], j the nearest centroid
CREATE TEMP TABLE coded AS
SELECT i, x, ARRAY[x[1] / sqrt(5), x[2] / sqrt(5)]
             || ARRAY(SELECT CASE WHEN ce.j = n.j THEN sqrt(10) ELSE 0 END FROM centroid ce ORDER BY ce.j) AS z
  FROM pts, LATERAL (SELECT j FROM centroid ORDER BY (x[1] - c[1])^2 + (x[2] - c[2])^2, j LIMIT 1) n;
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 'twin', (ARRAY['a', 'b'])[1 + i % 2], z, CASE WHEN i % 3 = 1 THEN 0.9 ELSE 0.2 END + 0.05 * x[1]
  FROM coded WHERE i <= 20 ORDER BY i;
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT s, (ARRAY['a', 'b'])[1 + (i * 7) % 2], CASE WHEN s = 'cb' THEN x ELSE z END,
       CASE WHEN i % 3 = 2 THEN 0.7 ELSE 0.3 END
  FROM coded, unnest(ARRAY['cb', 'twin']) s WHERE i > 20 ORDER BY s, i;

CREATE TEMP TABLE cmp AS
SELECT c.i, c.arm, c.mean, c.width, c.ucb, t.mean AS twin_mean, t.width AS twin_width, t.ucb AS twin_ucb
  FROM (SELECT i, s.* FROM coded, LATERAL model_select.scores('cb', x) s) c
  JOIN (SELECT i, s.* FROM coded, LATERAL model_select.scores('twin', z) s) t USING (i, arm);
SELECT cmp_ok((SELECT max(abs(mean - twin_mean) + abs(width - twin_width) + abs(ucb - twin_ucb)) FROM cmp),
              '<', 1e-9::float8, 'the fitted selector scores as the twin whose contexts carry the one-hot (60 contexts, 2 arms)');
SELECT cmp_ok((SELECT max(abs(c.ucb - p.ucb)) FROM coded,
                      LATERAL model_select.scores('cb', x) c JOIN LATERAL model_select.scores('plain', x) p USING (arm)),
              '>', 0.01::float8, 'and no longer as the selector without one');

-- rebuild_state() (the definition of the state) re-learns the same
SELECT model_select.rebuild_state('cb');
SELECT cmp_ok((SELECT max(abs(s.ucb - c.ucb)) FROM cmp c JOIN coded USING (i),
                      LATERAL model_select.scores('cb', coded.x) s WHERE s.arm = c.arm),
              '<', 1e-9::float8, 'rebuild_state: the same scores');

-- route_batch scores a block (one GEMM of features) as scores() one by one
SELECT cmp_ok((SELECT max(abs(b.score - c.ucb))
                 FROM model_select.route_batch('cb', 'SELECT i, x FROM coded') b
                 JOIN cmp c ON c.i = b.key AND c.arm = b.arm),
              '<', 1e-9::float8, 'route_batch: the same scores');

-- the centroids live in the space of the contexts as prepared: under another normalize they
-- go unused (the scores of a selector that never had them, fed the same log), and serve again
-- once it is changed back
SELECT model_select.alter_selector('cb', '{"normalize": true}');
SELECT model_select.create_selector('cb_norm', 2, ARRAY['a', 'b'], 'lin_ucb', NULL, '{"codebook": 3, "normalize": true}');
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 'cb_norm', a.name, r.context, r.reward FROM model_select.rewards r JOIN model_select.arms a USING (arm_id)
  JOIN model_select.selectors s ON s.selector_id = a.selector_id WHERE s.name = 'cb' ORDER BY r.reward_id;
SELECT cmp_ok((SELECT max(abs(c.ucb - n.ucb)) FROM coded,
                      LATERAL model_select.scores('cb', x) c JOIN LATERAL model_select.scores('cb_norm', x) n USING (arm)),
              '<', 1e-9::float8, 'normalize changed: the centroids fitted without it go unused');
SELECT model_select.alter_selector('cb', '{"normalize": false}');
SELECT cmp_ok((SELECT max(abs(s.ucb - c.ucb)) FROM cmp c JOIN coded USING (i),
                      LATERAL model_select.scores('cb', coded.x) s WHERE s.arm = c.arm),
              '<', 1e-9::float8, 'normalize changed back: they serve again');

-- a refit on the same rows and seed finds the same centroids; it re-learns under a new settings_version
CREATE TEMP TABLE before AS SELECT settings_version FROM model_select.selectors WHERE name = 'cb';
SELECT is(model_select.fit_codebook('cb', 'SELECT x FROM pts ORDER BY i', refit => false), 0::bigint,
          'refit false keeps a fitted codebook');
SELECT is(model_select.fit_codebook('cb', 'SELECT x, 1 FROM pts ORDER BY i'), 60::bigint, 'a refit (further columns ignored)');
SELECT cmp_ok((SELECT settings_version FROM model_select.selectors WHERE name = 'cb'), '>',
              (SELECT settings_version FROM before), 'a fit voids the checkpoints (settings_version bumped)');
SELECT cmp_ok((SELECT max(abs(s.ucb - c.ucb)) FROM cmp c JOIN coded USING (i),
                      LATERAL model_select.scores('cb', coded.x) s WHERE s.arm = c.arm),
              '<', 1e-9::float8, 'the same rows and seed: the same centroids and scores');

-- warm_start fits a default selector's codebook once, on its source, before it learns the rows
CREATE TEMP TABLE warm AS
SELECT x AS context, ARRAY[CASE WHEN cluster = 0 THEN 1 ELSE 0 END, 0.5]::float8[] AS rewards FROM pts;
SELECT model_select.create_selector('w', 2, ARRAY['a', 'b']);
SELECT model_select.warm_start('w', 'SELECT context, rewards FROM warm ORDER BY context[1]');
SELECT is((SELECT rows FROM model_select.codebooks c JOIN model_select.selectors s USING (selector_id) WHERE s.name = 'w'),
          60::bigint, 'warm_start fits a default selector''s codebook of 8 on its 60 rows');
SELECT model_select.warm_start('w', 'SELECT context, rewards FROM warm LIMIT 10');
SELECT is((SELECT rows FROM model_select.codebooks c JOIN model_select.selectors s USING (selector_id) WHERE s.name = 'w'),
          60::bigint, 'a second warm_start keeps it');
SELECT model_select.create_selector('few', 2, ARRAY['a', 'b']);
SELECT is(model_select.warm_start('few', 'SELECT context, rewards FROM warm LIMIT 5'), 10::bigint,
          'a warm source of fewer rows than centroids is learnt without a codebook');
-- a volatile source runs once: the codebook is fitted on the rows it learns.
-- The twin (same seed) fits on the contexts of the log's rows of arm a, in order.
CREATE TEMP SEQUENCE source_reads;
-- the caller's own temporary table of the name warm_start keeps its rows under by default
CREATE TEMP TABLE ms_warm_rows (mine int);
INSERT INTO ms_warm_rows VALUES (42);
SELECT model_select.create_selector('vol', 2, ARRAY['a', 'b'], 'lin_ucb', NULL, '{}', 7);
SELECT model_select.create_selector('vol_twin', 2, ARRAY['a', 'b'], 'lin_ucb', NULL, '{}', 7);
SELECT model_select.warm_start('vol', $q$SELECT context, rewards FROM warm WHERE nextval('source_reads') > 0
                                      ORDER BY random() LIMIT 30$q$);
SELECT is((SELECT last_value FROM source_reads), 60::bigint, 'warm_start read its source once (60 rows), fit and all');
SELECT is((SELECT array_agg(mine) FROM pg_temp.ms_warm_rows), ARRAY[42],
          'the caller''s temporary table ms_warm_rows is left alone (warm_start kept its rows under another name)');
SELECT model_select.fit_codebook('vol_twin', $q$SELECT r.context FROM model_select.rewards r
    JOIN model_select.arms a USING (arm_id) JOIN model_select.selectors s ON s.selector_id = a.selector_id
   WHERE s.name = 'vol' AND a.name = 'a' ORDER BY r.reward_id$q$);
SELECT is((SELECT c.centroids FROM model_select.codebooks c JOIN model_select.selectors s USING (selector_id) WHERE s.name = 'vol'),
          (SELECT c.centroids FROM model_select.codebooks c JOIN model_select.selectors s USING (selector_id) WHERE s.name = 'vol_twin'),
          '... and its codebook is the one fitted on the 30 rows it learnt');

-- a fit rolled back: the centroids before it again (this backend read the fitted ones meanwhile)
CREATE TEMP TABLE w_before AS SELECT i, s.* FROM coded, LATERAL model_select.scores('w', x) s;
SAVEPOINT refit;
SELECT model_select.fit_codebook('w', 'SELECT x FROM pts WHERE cluster = 0');
SELECT cmp_ok((SELECT max(abs(s.ucb - b.ucb)) FROM w_before b JOIN coded USING (i),
                      LATERAL model_select.scores('w', coded.x) s WHERE s.arm = b.arm),
              '>', 1e-6::float8, 'a refit on other contexts changes the scores');
ROLLBACK TO SAVEPOINT refit;
SELECT cmp_ok((SELECT max(abs(s.ucb - b.ucb)) FROM w_before b JOIN coded USING (i),
                      LATERAL model_select.scores('w', coded.x) s WHERE s.arm = b.arm),
              '<', 1e-12::float8, 'rolled back: the scores before it');

-- another size leaves the stored centroids unused, and refit => false fits them anew
SELECT model_select.alter_selector('cb', '{"codebook": 2}');
SELECT is(model_select.fit_codebook('cb', 'SELECT x FROM pts ORDER BY i', refit => false), 60::bigint,
          'after codebook 3 -> 2, refit false fits: the stored codebook is not of its size');
SELECT is((SELECT array_dims(centroids) FROM model_select.codebooks c JOIN model_select.selectors s USING (selector_id)
            WHERE s.name = 'cb'), '[1:2][1:2]', 'now 2 centroids');

-- errors
SELECT throws_ok($$SELECT model_select.fit_codebook('plain', 'SELECT x FROM pts')$$, '22023', NULL,
                 'a selector without a codebook');
SELECT throws_ok($$SELECT model_select.fit_codebook('cb', 'SELECT x FROM pts LIMIT 1')$$, '22023', NULL,
                 'fewer contexts than centroids');
SELECT throws_ok($$SELECT model_select.fit_codebook('cb', 'SELECT ARRAY[1, 2, 3]::float8[]')$$, '22000', NULL,
                 'contexts of another dimension');
SELECT throws_ok($$SELECT model_select.fit_codebook('nope', 'SELECT x FROM pts')$$, '42704', NULL, 'an unknown selector');
SELECT throws_ok($$SELECT model_select.fit_codebook('cb', 'SELECT i FROM pts')$$, '42804', NULL, 'a first column that is no array');
SELECT throws_ok($$SELECT model_select.fit_codebook('cb', 'SELECT')$$, '42804', NULL, 'a source without columns');
SELECT throws_ok($$SELECT model_select.fit_codebook('cb', $q$SELECT ARRAY['NaN', 1]::float8[] FROM pts$q$)$$, '22000', NULL,
                 'a NaN context');
CREATE ROLE ms_codebook_app;
SELECT model_select.setup_role('ms_codebook_app', 'application');
SELECT model_select.grant_selector('cb', 'ms_codebook_app', 'route');
GRANT SELECT ON pts, warm TO ms_codebook_app;
SELECT model_select.create_selector('wapp', 2, ARRAY['a', 'b']);
SELECT model_select.grant_selector('wapp', 'ms_codebook_app', 'reward');
SET LOCAL ROLE ms_codebook_app;
SELECT throws_ok($$SELECT model_select.fit_codebook('cb', 'SELECT x FROM pts')$$, '42501', NULL,
                 'without the admin right: refused before the source runs');
SELECT is(model_select.warm_start('wapp', 'SELECT context, rewards FROM warm'), 120::bigint,
          'warm_start with the reward right only: the rows are learnt (a NOTICE says the codebook is not fitted)');
RESET ROLE;
SELECT is((SELECT count(*) FROM model_select.codebooks c JOIN model_select.selectors s USING (selector_id) WHERE s.name = 'wapp'),
          0::bigint, '... and no codebook was fitted');
-- an administrator of the selector without the database's TEMPORARY right: the source runs three times
SELECT model_select.create_selector('notemp', 2, ARRAY['a', 'b']);
SELECT model_select.grant_selector('notemp', 'ms_codebook_app', r) FROM unnest(ARRAY['reward', 'admin']) r;
GRANT USAGE ON SEQUENCE source_reads TO ms_codebook_app;
SELECT setval('source_reads', 1, false);
DO $$ BEGIN EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC', current_database()); END $$;
SET LOCAL ROLE ms_codebook_app;
SELECT is(model_select.warm_start('notemp', $q$SELECT context, rewards FROM warm WHERE nextval('source_reads') > 0$q$),
          120::bigint, 'without the TEMPORARY right warm_start still fits and learns');
RESET ROLE;
SELECT is((SELECT c.rows || ' rows, ' || (SELECT last_value FROM source_reads) || ' reads'
             FROM model_select.codebooks c JOIN model_select.selectors s USING (selector_id) WHERE s.name = 'notemp'),
          '60 rows, 180 reads', '... reading its source for the count, the fit and the insert');

-- last: the transaction stays read-only (pgTAP writes only temporary tables)
SET LOCAL transaction_read_only = on;
SELECT throws_ok($$SELECT model_select.fit_codebook('cb', 'SELECT x FROM pts WHERE i / (i - i) = 1')$$, '25006', NULL,
                 'in a read-only transaction: refused before the source runs (it would divide by zero)');
SELECT throws_ok($$SELECT model_select.warm_start('w', 'SELECT context, rewards FROM warm WHERE 1 / (rewards[2] - rewards[2]) = 1')$$, '25006', NULL,
                 'warm_start too');

SELECT * FROM finish();
ROLLBACK;
