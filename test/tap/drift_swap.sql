-- Recovery after the best arms swap (issue 42): the Bernoulli two-cluster
-- stream of include/drift_stream.sql, each policy with its default settings
-- plus a window of 300 on the selector's clock, seeds 1-5 (those of
-- make bench-quality's part drift).  Both must pick the optimal arm in at
-- least 80% of rounds 1,001-1,500, pak_ucb about as well as lin_ucb, and
-- neither may park on the constant arm c.  pak_ucb's defaults (lin_ucb's
-- scale: alpha 20, intercept 10, eta 2) keep that over seeds 1-15 too, where
-- its defaults before 0.3.0 (alpha 1, intercept 1, eta 0.5) reached 0.741
-- (worst seed 0.544).  The live path (route, then a reward) makes the
-- choices of replay() on this stream.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(9);

\ir include/drift_stream.sql
CREATE TEMP TABLE drift AS SELECT s AS seed, d.* FROM generate_series(1, 15) s, pg_temp.drift_stream(s) d;

-- lin_ucb on seeds 1-5, pak_ucb on seeds 1-15
CREATE TEMP TABLE run AS
SELECT p.policy, s AS seed, r.round, r.opr_window, r.picks
  FROM (VALUES ('lin_ucb', 5), ('pak_ucb', 15)) p(policy, seeds), generate_series(1, p.seeds) s,
       model_select.replay(format('SELECT context, reward, NULL::real[], expected FROM drift WHERE seed = %s ORDER BY round', s),
                           p.policy, settings => '{"window": 300, "clock": "selector"}', seed => s,
                           checkpoint => 500, shuffle => false) r;
CREATE TEMP TABLE per_seed AS
SELECT policy, seed, max(opr_window) FILTER (WHERE round = 1500) AS opr,
       (max(picks[3]) FILTER (WHERE round = 1500) - max(picks[3]) FILTER (WHERE round = 1000)) / 500.0 AS c_share
  FROM run GROUP BY policy, seed;
CREATE TEMP TABLE after_swap AS
SELECT policy, avg(opr) AS opr, avg(c_share)::float8 AS c_share FROM per_seed WHERE seed <= 5 GROUP BY policy;
SELECT diag(format('%s, window 300 on the selector clock: optimal picks over rounds 1,001-1,500 %s, share of c %s',
                   policy, round(opr::numeric, 3), round(c_share::numeric, 3)))
  FROM after_swap ORDER BY policy;

SELECT cmp_ok((SELECT opr FROM after_swap WHERE policy = 'lin_ucb'), '>=', 0.8::float8,
              'lin_ucb recovers: >= 0.8 optimal picks over rounds 1,001-1,500 (5 seeds)');
SELECT cmp_ok((SELECT opr FROM after_swap WHERE policy = 'pak_ucb'), '>=', 0.8::float8,
              'pak_ucb recovers: >= 0.8 optimal picks over rounds 1,001-1,500 (5 seeds)');
SELECT cmp_ok((SELECT opr FROM after_swap WHERE policy = 'pak_ucb'), '>=',
              (SELECT opr FROM after_swap WHERE policy = 'lin_ucb') - 0.05,
              'pak_ucb recovers like lin_ucb (within 0.05)');
SELECT cmp_ok((SELECT max(c_share)::float8 FROM after_swap), '<', 0.15::float8,
              'neither parks on the constant arm c after the swap (< 15% of the rounds)');
SELECT cmp_ok((SELECT min(opr_window) FROM run WHERE round = 1000), '>=', 0.8::float8,
              'and before the swap every run had learned the clusters (>= 0.8 in rounds 501-1,000)');
SELECT diag(format('pak_ucb, seeds 1-15: optimal picks over rounds 1,001-1,500 %s, worst seed %s',
                   round(avg(opr)::numeric, 3), round(min(opr)::numeric, 3)))
  FROM per_seed WHERE policy = 'pak_ucb';
SELECT cmp_ok((SELECT avg(opr) FROM per_seed WHERE policy = 'pak_ucb'), '>=', 0.8::float8,
              'pak_ucb''s defaults recover on seeds 1-15 too: >= 0.8 optimal picks over rounds 1,001-1,500');
SELECT cmp_ok((SELECT min(opr) FROM per_seed WHERE policy = 'pak_ucb'), '>=', 0.7::float8,
              '... and >= 0.7 on every one of the 15 seeds');

-- The live path on one seed: route() then a reward per round, as one
-- application would; the picks must be replay()'s.
\ir include/picks.sql
CREATE FUNCTION pg_temp.live_swap(pol text, sd int) RETURNS int[]
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM model_select.create_selector('swap_' || pol, 16, ARRAY['a', 'b', 'c'], pol, NULL,
                                         '{"window": 300, "clock": "selector"}', sd);
    RETURN pg_temp.live_picks('swap_' || pol, ARRAY['a', 'b', 'c'],
                              format('SELECT round, context, reward FROM drift WHERE seed = %s ORDER BY round', sd));
END $$;
CREATE FUNCTION pg_temp.replay_swap(pol text, sd int) RETURNS int[]
LANGUAGE sql AS $$
    SELECT pg_temp.replay_picks(format(
        'SELECT * FROM model_select.replay(%L, %L, settings => %L, seed => %s, checkpoint => 1, shuffle => false)',
        format('SELECT context, reward FROM drift WHERE seed = %s ORDER BY round', sd), pol,
        '{"window": 300, "clock": "selector"}', sd))
$$;
SELECT is(pg_temp.live_swap('pak_ucb', 2), pg_temp.replay_swap('pak_ucb', 2),
          'pak_ucb live on the selector clock makes replay()''s 1,500 choices on this stream');
SELECT is(pg_temp.live_swap('lin_ucb', 2), pg_temp.replay_swap('lin_ucb', 2),
          'so does lin_ucb');

SELECT * FROM finish();
ROLLBACK;
