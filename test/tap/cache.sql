-- The backend's model cache is bounded in bytes (model_select.cache_size):
-- scoring more selectors than fit evicts the least recently used ones, the
-- bytes held stay within the setting, and scores do not change.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(13);

-- six lin_ucb selectors of dimension 120 and one rff_ucb with 40 features:
-- each lin_ucb arm keeps about a 120 x 120 factor, several hundred kB a selector
SELECT count(model_select.create_selector('c' || i, 120, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL, '{}', i))
  FROM generate_series(1, 6) i;
SELECT model_select.create_selector('c_rff', 120, ARRAY['a', 'b'], 'rff_ucb', 'rbf', '{"features": 40}', 9);
CREATE TABLE pg_temp.ctx AS
SELECT j, array_agg(sin(j * k + 0.1 * k) ORDER BY k)::float8[] AS c
  FROM generate_series(1, 40) j, generate_series(1, 120) k GROUP BY j;
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT s.name, (ARRAY['a', 'b', 'c'])[1 + j % 3], c.c, (1 + sin(j * 0.3)) / 2
  FROM model_select.selectors s, pg_temp.ctx c
 WHERE s.name <> 'c_rff' OR j % 3 < 2 ORDER BY j, s.name;

-- the reference: every score with a cache large enough for everything
SET LOCAL model_select.cache_size = '256MB';
CREATE TABLE pg_temp.ref AS
SELECT s.name, c.j, x.* FROM model_select.selectors s, pg_temp.ctx c,
       LATERAL model_select.scores(s.name, c.c) x;
SELECT cmp_ok((SELECT bytes FROM model_select.cache_stats()), '>', 1024 * 1024::bigint,
              'with 256MB, the cache holds every selector: more than the 1 MB bound below');
SELECT is((SELECT entries || ' entries, ' || evictions || ' evictions' FROM model_select.cache_stats()),
          (SELECT count(*) FROM model_select.arms) || ' entries, 0 evictions', '... one entry per arm, nothing evicted');

-- a 1 MB bound: each selector fits alone, not all of them
SET LOCAL model_select.cache_size = '1MB';
CREATE TABLE pg_temp.seen (name text, bytes bigint, feature_bytes bigint);
CREATE FUNCTION pg_temp.score_all() RETURNS SETOF record LANGUAGE plpgsql AS $$
DECLARE s text;
BEGIN
    FOR s IN SELECT name FROM model_select.selectors ORDER BY name LOOP
        RETURN QUERY SELECT s, c.j, x.* FROM pg_temp.ctx c, LATERAL model_select.scores(s, c.c) x;
        INSERT INTO pg_temp.seen SELECT s, bytes, feature_bytes FROM model_select.cache_stats();
    END LOOP;
END $$;
CREATE TABLE pg_temp.bounded AS
SELECT * FROM pg_temp.score_all() AS t(name text, j int, arm text, active boolean, n bigint, mean float8,
                                         width float8, ucb float8, radius float8, alpha float8, cost float8);
SELECT is((SELECT count(*) FROM pg_temp.seen WHERE bytes + feature_bytes > 1024 * 1024), 0::bigint,
          'after scoring each selector, the model and feature bytes held are at most 1 MB');
SELECT cmp_ok((SELECT evictions FROM model_select.cache_stats()), '>', 0::bigint,
              'selectors were evicted to stay within the bound');
SELECT cmp_ok((SELECT entries FROM model_select.cache_stats()), '<',
              (SELECT count(*)::int FROM model_select.arms), 'fewer entries than arms are kept');
SELECT is((SELECT count(*) FROM pg_temp.ref r JOIN pg_temp.bounded b USING (name, j, arm)
            WHERE r.n = b.n AND r.mean = b.mean AND r.width = b.width AND r.ucb = b.ucb),
          (SELECT count(*) FROM pg_temp.ref),
          'every score under the bound equals the unbounded one (evicted arms are folded again)');
SELECT cmp_ok((SELECT max(feature_bytes) FROM pg_temp.seen), '>', 0::bigint,
              'the random feature matrix counts against the bound');

-- hits and misses: the selector used last is still cached, an evicted one is not
CREATE TABLE pg_temp.before AS SELECT * FROM model_select.cache_stats();
SELECT count(*) FROM model_select.scores('c_rff', (SELECT c FROM pg_temp.ctx WHERE j = 1));
SELECT is((SELECT misses - (SELECT misses FROM pg_temp.before) FROM model_select.cache_stats()), 0::bigint,
          'the selector scored last is a hit: no miss');
SELECT count(*) FROM model_select.scores('c1', (SELECT c FROM pg_temp.ctx WHERE j = 1));
SELECT is((SELECT misses - (SELECT misses FROM pg_temp.before) FROM model_select.cache_stats()), 3::bigint,
          'a selector evicted long ago is folded again: one miss per arm');
SELECT cmp_ok((SELECT hits - (SELECT hits FROM pg_temp.before) FROM model_select.cache_stats()), '>=', 2::bigint,
              'the hit counts the reused models');

-- resolved settings are cached per backend, keyed by the stored row itself:
-- a row changed behind alter_selector()'s back (settings_version unchanged)
-- is read anew, and an invalid one still fails
UPDATE model_select.selectors SET settings = settings || '{"eta": 3, "noise_prior": 0}' WHERE name = 'c2';
CREATE TABLE pg_temp.eta3 AS
SELECT c.j, x.* FROM pg_temp.ctx c, LATERAL model_select.scores('c2', c.c) x;
SELECT is((SELECT count(*) FROM pg_temp.eta3 WHERE abs(ucb - (mean + 3 * width)) <= 1e-12 * (1 + abs(ucb))),
          (SELECT count(*) FROM pg_temp.ref WHERE name = 'c2'),
          'a changed settings row is resolved again: every ucb is mean + 3 width');
SELECT is((SELECT count(*) FROM pg_temp.eta3 e JOIN pg_temp.ref r ON r.name = 'c2' AND r.j = e.j AND r.arm = e.arm
            WHERE r.ucb <> e.ucb AND r.mean = e.mean AND r.width = e.width),
          (SELECT count(*) FROM pg_temp.ref WHERE name = 'c2'),
          '... the same means and widths, other bounds than before');
UPDATE model_select.selectors SET settings = settings || '{"bogus": 1}' WHERE name = 'c2';
SELECT throws_ok($$SELECT count(*) FROM model_select.scores('c2', (SELECT c FROM pg_temp.ctx WHERE j = 1))$$,
                 '22023', NULL, 'an invalid settings row fails even though its selector was cached');

SELECT * FROM finish();
ROLLBACK;
