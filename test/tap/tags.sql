-- Tags (issue 42 part 3): what the caller knows of a request.  A seeded
-- environment where the best arm depends on the tag alone (the embedding is
-- noise): with the tags every policy reaches a clear share of optimal picks,
-- without them none can (replay(), a source with a tags column).  Tags
-- round-trip through route() (logged once on the decision), rewards without
-- a decision, the fold (rebuild_state() gives the incremental scores to a
-- relative 1e-9), route_batch() (bit for bit the row path, and its log) and
-- warm_start(); an unseen tag routes; NULL and empty tags are no tags; with
-- tag_buckets 0 tags are logged, not learned, until alter_selector() gives
-- buckets (then the logged tags are learned); bad tags are refused with their
-- SQLSTATE and change nothing.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(30);

-- 4 arms, 4 tags: arm i pays Bernoulli(0.8) on tag t<i>, Bernoulli(0.3)
-- elsewhere; the 8-dimensional embedding is drawn independently of the tag.
SELECT setseed(0.42);
CREATE TEMP TABLE env AS
SELECT i, 't' || (i % 4) AS tag,
       ARRAY(SELECT random() - 0.5 FROM generate_series(1, 8) j WHERE i > 0)::float8[] AS context,
       ARRAY(SELECT (random() < CASE WHEN a = i % 4 THEN 0.8 ELSE 0.3 END)::int::float8
               FROM generate_series(0, 3) a WHERE i > 0) AS rewards,
       ARRAY(SELECT CASE WHEN a = i % 4 THEN 0.8 ELSE 0.3 END FROM generate_series(0, 3) a WHERE i > 0)::float8[]
           AS expected
  FROM generate_series(1, 2000) i;

CREATE TEMP TABLE kinds (policy text, kernel text, settings jsonb);
INSERT INTO kinds VALUES
    ('lin_ucb', NULL, '{}'),                                   -- its default: 16 buckets
    ('pak_ucb', 'rbf', '{"tag_buckets": 16}'),
    ('bkb', 'rbf', '{"tag_buckets": 16}'),
    ('rff_ucb', 'rbf', '{"tag_buckets": 16, "features": 32}');
CREATE TEMP TABLE runs AS
SELECT k.policy, w.tagged,
       (SELECT r.opr FROM model_select.replay(
            'SELECT context, rewards, NULL::float8[], expected' || CASE WHEN w.tagged THEN ', ARRAY[tag] AS tags' ELSE '' END
            || ' FROM env ORDER BY i', k.policy, k.kernel, k.settings, seed => 7, rounds => 1500) r
         ORDER BY r.round DESC LIMIT 1) AS opr
  FROM kinds k, (VALUES (true), (false)) w(tagged);
SELECT diag(format('%s, %s: optimal picks %s', policy, CASE WHEN tagged THEN 'tags' ELSE 'no tags' END,
                   round(opr::numeric, 3)))
  FROM runs ORDER BY policy, tagged DESC;
SELECT ok((SELECT bool_and(opr >= 0.85) FROM runs WHERE tagged),
          'with the tags every policy picks the optimal arm in >= 85% of 1,500 rounds (learning included)');
SELECT ok((SELECT bool_and(opr <= 0.35) FROM runs WHERE NOT tagged),
          'without them none reaches 35% (the best single arm is optimal on a quarter of the rounds)');

-- The live path: route() with tags, rewards by decision.
SELECT model_select.create_selector('tg', 8, ARRAY['a0', 'a1', 'a2', 'a3'], 'lin_ucb', NULL, '{}', 3);
SELECT model_select.create_selector('tg_pak', 8, ARRAY['a0', 'a1', 'a2', 'a3'], 'pak_ucb', 'rbf',
                                    '{"tag_buckets": 16}', 3);
CREATE TEMP TABLE live (sel text, i int, decision_id bigint, arm text);
DO $$
DECLARE
    e record;
    s text;
    id bigint;
    chosen text;
BEGIN
    FOR e IN SELECT * FROM env WHERE i <= 300 ORDER BY i LOOP
        FOREACH s IN ARRAY ARRAY['tg', 'tg_pak'] LOOP
            SELECT r.decision_id, r.arm INTO id, chosen
              FROM model_select.route(s, e.context, tags => ARRAY[e.tag]) r;
            INSERT INTO live VALUES (s, e.i, id, chosen);
            INSERT INTO model_select.rewards(decision_id, reward)
            VALUES (id, e.rewards[substr(chosen, 2)::int + 1]);
        END LOOP;
    END LOOP;
END $$;
SELECT is((SELECT count(*) FROM live l JOIN model_select.decisions d USING (decision_id) JOIN env e USING (i)
            WHERE d.tags = ARRAY[e.tag]), 600::bigint,
          'route() logs each decision''s tags once, on the decision');
SELECT is((SELECT count(*) FROM model_select.rewards r JOIN live l USING (decision_id) WHERE r.tags IS NULL),
          600::bigint, 'its rewards store none (they are the decision''s)');
SELECT cmp_ok((SELECT avg((l.arm = 'a' || (l.i % 4))::int)::float8 FROM live l WHERE l.sel = 'tg' AND l.i > 200),
              '>=', 0.6::float8, 'live lin_ucb learns the tags: >= 60% optimal picks over rounds 201-300');

-- Rewards without a decision carry their own tags.
INSERT INTO model_select.rewards(selector, arm, context, reward, tags)
SELECT s, 'a' || (i % 4), context, 1, ARRAY[tag] FROM env, unnest(ARRAY['tg', 'tg_pak']) s
 WHERE i BETWEEN 301 AND 340 ORDER BY i, s;
SELECT is((SELECT count(*) FROM model_select.rewards WHERE tags IS NOT NULL), 80::bigint,
          'a reward without a decision stores its tags');

-- Incremental state = rebuild_state(), bit for bit, with every tag and none.
CREATE TEMP TABLE probes AS
SELECT p, t, ARRAY[sin(p), cos(p), sin(2 * p), cos(3 * p), sin(5 * p), 0.1, -0.2, 0.3]::float8[] AS context
  FROM generate_series(1, 3) p, unnest(ARRAY['t0', 't1', 't2', 't3', 'never_seen', NULL]) t;
CREATE TEMP TABLE before_rebuild AS
SELECT s, p, t, x.* FROM probes, unnest(ARRAY['tg', 'tg_pak']) s,
       model_select.scores(s, context, CASE WHEN t IS NULL THEN NULL ELSE ARRAY[t] END) x;
SELECT model_select.rebuild_state('tg'), model_select.rebuild_state('tg_pak');
SELECT is((SELECT count(*) FROM before_rebuild b
             JOIN probes q ON q.p = b.p AND q.t IS NOT DISTINCT FROM b.t
             JOIN LATERAL model_select.scores(b.s, q.context, CASE WHEN b.t IS NULL THEN NULL ELSE ARRAY[b.t] END) x
               ON x.arm = b.arm
            WHERE x.n = b.n AND abs(x.mean - b.mean) <= 1e-9 * greatest(1, abs(x.mean))
              AND abs(x.width - b.width) <= 1e-9 * greatest(1, abs(x.width))),
          (SELECT count(*) FROM before_rebuild),
          'scores with tags after rebuild_state() are the incremental ones (relative 1e-9, as consistency.sql)');
SELECT ok((SELECT count(DISTINCT (x.mean, x.width)) > 1 FROM before_rebuild x
            WHERE x.s = 'tg' AND x.p = 1 AND x.arm = 'a0' AND x.t IN ('t0', 't1')),
          'the tags move the scores (t0 and t1 score arm a0 differently)');
SELECT ok((SELECT o.mean > x.mean FROM before_rebuild o, before_rebuild x
            WHERE o.s = 'tg' AND x.s = 'tg' AND o.p = 1 AND x.p = 1 AND o.arm = 'a0' AND x.arm = 'a0'
              AND o.t = 't0' AND x.t = 't1'),
          'arm a0 is predicted better on its tag t0 than on t1');

-- No tags: NULL, an empty array and the argument left out are the same.
SELECT is((SELECT array_agg(x.ucb ORDER BY x.arm) FROM probes, model_select.scores('tg', context, '{}') x WHERE p = 1 AND t = 't0'),
          (SELECT array_agg(x.ucb ORDER BY x.arm) FROM probes, model_select.scores('tg', context) x WHERE p = 1 AND t = 't0'),
          'an empty tags array scores as no tags');
SELECT is((SELECT model_select.select_model('tg', context, NULL) FROM probes WHERE p = 2 AND t = 't0'),
          (SELECT model_select.select_model('tg', context) FROM probes WHERE p = 2 AND t = 't0'),
          'tags => NULL chooses as no tags');
SELECT is(model_select.select_model(NULL, ARRAY[1, 2]::float8[], ARRAY['t0']), NULL,
          'a NULL selector gives NULL, as before');
SELECT is(model_select.select_model('tg', NULL::float8[], ARRAY['t0']), NULL, 'a NULL context gives NULL');

-- An unseen tag routes, and is logged.
SELECT lives_ok($$SELECT model_select.route('tg', ARRAY[1, 2, 3, 4, 5, 6, 7, 8]::float8[],
                                            tags => ARRAY['brand_new', 'x'])$$,
                'an unseen tag routes');
SELECT is((SELECT tags FROM model_select.decisions ORDER BY decision_id DESC LIMIT 1), ARRAY['brand_new', 'x'],
          '... and is logged as given');

-- route_batch(): a tags column, bit for bit the row path; its log.
CREATE TEMP TABLE batch AS
SELECT * FROM model_select.route_batch('tg', $$SELECT p * 10 + coalesce(length(t), 0), context,
                                                      CASE WHEN t IS NULL THEN NULL ELSE ARRAY[t] END
                                                 FROM probes ORDER BY 1$$, log => true);
SELECT is((SELECT count(*) FROM batch b JOIN probes ON b.key = p * 10 + coalesce(length(t), 0)
             JOIN LATERAL model_select.scores('tg', context, CASE WHEN t IS NULL THEN NULL ELSE ARRAY[t] END) x
               ON x.arm = b.arm
            WHERE x.ucb = b.score AND x.mean = b.mean AND x.width = b.width
              AND b.arm = model_select.select_model('tg', context, CASE WHEN t IS NULL THEN NULL ELSE ARRAY[t] END)),
          (SELECT count(*) FROM probes),
          'route_batch() with tags: the arm, score, mean and width of the row path, bit for bit');
SELECT is((SELECT count(*) FROM batch b JOIN model_select.decisions d USING (decision_id)
             JOIN probes ON b.key = p * 10 + coalesce(length(t), 0)
            WHERE d.tags IS NOT DISTINCT FROM CASE WHEN t IS NULL THEN NULL ELSE ARRAY[t] END
              AND COALESCE(d.context, d.context_real::float8[]) = probes.context),
          (SELECT count(*) FROM probes), 'route_batch(log => true) logs each row''s embedding and tags');
SELECT throws_ok($$SELECT * FROM model_select.route_batch('tg', 'SELECT 1, ARRAY[1,2,3,4,5,6,7,8]::float8[], ARRAY[1]')$$,
                 '42804', NULL, 'route_batch(): a tags column that is not text[] is refused');

-- warm_start() with a tags column: the rewards carry them.
SELECT model_select.create_selector('tg_warm', 8, ARRAY['a0', 'a1', 'a2', 'a3'], 'lin_ucb', NULL,
                                    '{"codebook": 0}', 3);
SELECT is(model_select.warm_start('tg_warm', 'SELECT context, rewards, NULL::float8[], ARRAY[tag] AS tags FROM env WHERE i <= 50 ORDER BY i'),
          200::bigint, 'warm_start() from a source with tags');
SELECT is((SELECT count(*) FROM model_select.rewards r JOIN model_select.selectors s USING (selector_id)
            WHERE s.name = 'tg_warm' AND array_length(r.tags, 1) = 1), 200::bigint,
          '... each reward with its row''s tags');

-- tag_buckets 0 (selectors from before 0.3.0): the tags are logged, not
-- learned; alter_selector() gives it buckets, and the logged tags are learned.
SELECT model_select.create_selector('tg_zero', 8, ARRAY['a0', 'a1', 'a2', 'a3'], 'lin_ucb', NULL,
                                    '{"tag_buckets": 0}', 3);
INSERT INTO model_select.rewards(selector, arm, context, reward, tags)
SELECT 'tg_zero', 'a' || a, context, rewards[a + 1], ARRAY[tag] FROM env, generate_series(0, 3) a
 WHERE i <= 200 ORDER BY i, a;
SELECT is((SELECT array_agg(x.ucb ORDER BY x.arm) FROM probes, model_select.scores('tg_zero', context, ARRAY['t0']) x WHERE p = 1 AND t = 't0'),
          (SELECT array_agg(x.ucb ORDER BY x.arm) FROM probes, model_select.scores('tg_zero', context, ARRAY['t1']) x WHERE p = 1 AND t = 't0'),
          'tag_buckets 0: the tags do not change the scores');
SELECT model_select.alter_selector('tg_zero', '{"tag_buckets": 16}');
SELECT is((SELECT string_agg((SELECT x.arm FROM model_select.scores('tg_zero', q.context, ARRAY[t.t]) x
                               ORDER BY x.mean DESC LIMIT 1), ' ' ORDER BY t.t)
             FROM probes q, (VALUES ('t0'), ('t1'), ('t2'), ('t3')) t(t) WHERE q.p = 1 AND q.t = 't0'),
          'a0 a1 a2 a3', 'alter_selector() to 16 buckets: the logged tags are learned (each tag''s best arm has the best mean)');

-- Bad tags: their SQLSTATE, and nothing written.
CREATE TEMP TABLE counts AS SELECT (SELECT count(*) FROM model_select.decisions) AS d,
                                   (SELECT count(*) FROM model_select.rewards) AS r;
SELECT throws_ok($$SELECT model_select.route('tg', ARRAY[1, 2, 3, 4, 5, 6, 7, 8]::float8[], tags => ARRAY['a', NULL])$$,
                 '22004', 'tag 2 is NULL', 'a NULL tag: 22004');
SELECT throws_ok($$SELECT model_select.route('tg', ARRAY[1, 2, 3, 4, 5, 6, 7, 8]::float8[], tags => ARRAY[''])$$,
                 '22023', 'tag 1 is an empty string', 'an empty tag: 22023');
SELECT throws_ok($$SELECT model_select.route('tg', ARRAY[1, 2, 3, 4, 5, 6, 7, 8]::float8[],
                                             tags => ARRAY(SELECT 't' || g FROM generate_series(1, 10000) g))$$,
                 '54000', 'a context may carry at most 64 tags, not 10000', '10,000 tags: 54000');
SELECT throws_ok($$SELECT model_select.route('tg', ARRAY[1, 2, 3, 4, 5, 6, 7, 8]::float8[], tags => ARRAY[repeat('x', 300)])$$,
                 '54000', 'tag 1 is 300 bytes long, more than 256', 'a tag too long: 54000');
SELECT throws_ok($$SELECT model_select.route('tg', ARRAY[1, 2, 3, 4, 5, 6, 7, 8]::float8[], tags => ARRAY[1, 2])$$,
                 '42883', NULL, 'tags that are not text: no such function (42883)');
SELECT throws_ok($$INSERT INTO model_select.rewards(decision_id, reward, tags)
                   SELECT decision_id, 1, ARRAY['t0'] FROM model_select.decisions
                    WHERE decision_id NOT IN (SELECT decision_id FROM model_select.rewards WHERE decision_id IS NOT NULL)
                    LIMIT 1$$,
                 '22023', 'a reward for a decision takes its tags from the decision', 'a reward by decision with tags: 22023');
SELECT throws_ok($$INSERT INTO model_select.rewards(selector, arm, context, reward, tags)
                   VALUES ('tg', 'a0', ARRAY[1, 2, 3, 4, 5, 6, 7, 8]::float8[], 1, ARRAY[NULL::text])$$,
                 '22004', 'tag 1 is NULL', 'a reward with a NULL tag: 22004');
SELECT is((SELECT ROW((SELECT count(*) FROM model_select.decisions), (SELECT count(*) FROM model_select.rewards))),
          (SELECT ROW(d, r) FROM counts), 'bad tags wrote no decision and no reward');

SELECT * FROM finish();
ROLLBACK;
