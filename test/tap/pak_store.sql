-- pak_ucb checkpoints stored by rows (model_select.arm_state_rows, see
-- src/model/state_store.c): a checkpoint whose fold only appended rows writes
-- a chunk of the new rows, not the whole O(n²) factor, and the state read
-- back from the chunks is the fold of the log.
--
-- Selector ps (dim 8, cap 5000, arms a and b): arm a gets 12 batches of 50
-- rewards, each followed by checkpoint(); every checkpoint must have added
-- exactly one chunk starting at the previous n (the append path), written
-- WAL of at most 1.25 x that chunk + 64 kB (O(rows added)), and the last one
-- far less than a rewrite of the factor.  scores() on 12 probe contexts,
-- with 7 rewards pending, must equal rebuild_state()'s to a relative 1e-9,
-- and after the rebuild the rows are one chunk [0, n) whose size is the
-- state's.  Folds that are not appends rewrite the rows: a full window
-- (pw, window 100), a compaction at cap (pc, cap 120) and dmm's several
-- factors (pd) are checkpointed the same way and compared with their rebuild.
-- Past its cap an arm compacts (pk, cap 40, h = 20): the reward that would
-- make 41 rows, and every 21st after it, rebuilds the arm from its newest 20;
-- of 25 checkpoints every 8 rewards, exactly the 8 whose rewards include
-- such a one rewrite the rows, the others append one chunk; the rows held
-- follow the rule, and with 12 rewards pending (a compaction among them) the
-- scores equal rebuild_state()'s and those of an arm fed only the kept rows.
-- Chunks that do not make the state (missing, short, overlapping, beyond
-- n, a header with n + 1) are refused with XX001 by readers and
-- checkpoints, and rebuild_state() repairs them.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(37);
SET LOCAL model_select.checkpoint_threshold = 0;

SELECT model_select.create_selector('ps', 8, ARRAY['a', 'b'], 'pak_ucb', 'rbf', '{"cap": 5000}');
SELECT model_select.create_selector('pw', 8, ARRAY['a'], 'pak_ucb', 'rbf', '{"window": 100}');
SELECT model_select.create_selector('pc', 8, ARRAY['a'], 'pak_ucb', 'rbf', '{"cap": 120}');
SELECT model_select.create_selector('pk', 8, ARRAY['a'], 'pak_ucb', 'rbf', '{"cap": 40}');
SELECT model_select.create_selector('pk_kept', 8, ARRAY['a'], 'pak_ucb', 'rbf', '{"cap": 5000}');
SELECT model_select.create_selector('pkw', 8, ARRAY['a'], 'pak_ucb', 'rbf', '{"cap": 40, "window": 100}');
SELECT model_select.create_selector('pkd', 8, ARRAY['a'], 'pak_ucb', 'rbf', '{"cap": 40, "discount": 0.99}');
SELECT model_select.create_selector('pd', 8, ARRAY['a'], 'pak_ucb', 'rbf',
                                    '{"confidence": "dmm", "alpha": 0.25, "grid": [0.3, 1, 3]}');
CREATE TEMP TABLE feed AS
SELECT round, context, reward FROM model_select.synthetic_clusters(607, 8, 2, NULL, 3);
CREATE TEMP TABLE probes AS
SELECT round AS probe, context FROM model_select.synthetic_clusters(12, 8, 2, NULL, 99);

-- Insert feed rounds (lo, hi] as rewards of arm `arm` of `sel`.
CREATE FUNCTION pg_temp.feed(sel text, arm text, lo int, hi int) RETURNS void
LANGUAGE sql AS $f$
  INSERT INTO model_select.rewards(selector, arm, context, reward)
  SELECT sel, arm, context, reward[1] FROM feed WHERE round > lo AND round <= hi ORDER BY round
$f$;

-- Per checkpoint of ps arm a: rows before and after, its WAL and the chunks.
CREATE TEMP TABLE ck (step int, n_before int, n_after int, wal numeric, chunks int,
                      last_first int, last_bytes int, full_bytes numeric);
DO $$
DECLARE
  lsn pg_lsn;
  n0 int;
BEGIN
  FOR s IN 1..12 LOOP
    PERFORM pg_temp.feed('ps', 'a', (s - 1) * 50, s * 50);
    PERFORM pg_temp.feed('ps', 'b', s - 1, s);
    SELECT st.n INTO n0 FROM model_select.arm_state st JOIN model_select.arms a USING (arm_id)
     WHERE a.name = 'a' AND st.selector_id = a.selector_id
       AND a.selector_id = (SELECT selector_id FROM model_select.selectors WHERE name = 'ps');
    lsn := pg_current_wal_insert_lsn();
    PERFORM model_select.checkpoint('ps');
    INSERT INTO ck
    SELECT s, n0, st.n, pg_wal_lsn_diff(pg_current_wal_insert_lsn(), lsn),
           (SELECT count(*) FROM model_select.arm_state_rows r WHERE r.arm_id = st.arm_id),
           (SELECT max(first_row) FROM model_select.arm_state_rows r WHERE r.arm_id = st.arm_id),
           (SELECT octet_length(rows) FROM model_select.arm_state_rows r
             WHERE r.arm_id = st.arm_id ORDER BY first_row DESC LIMIT 1),
           8.0 * st.n * (st.n + 1) / 2
      FROM model_select.arm_state st JOIN model_select.arms a USING (arm_id)
     WHERE a.name = 'a' AND a.selector_id = (SELECT selector_id FROM model_select.selectors WHERE name = 'ps');
  END LOOP;
END $$;

SELECT is((SELECT array_agg(n_after ORDER BY step) FROM ck),
          (SELECT array_agg(50 * s ORDER BY s) FROM generate_series(1, 12) s),
          'ps a: each checkpoint folded its 50 rewards');
SELECT is((SELECT count(*) FROM ck WHERE chunks = step AND last_first = n_before), 12::bigint,
          'ps a: each checkpoint added one chunk, of the rows after the stored ones (append path)');
SELECT is((SELECT count(*) FROM ck WHERE last_bytes = 8 * ((n_after - n_before) * (8 + 1)
                                           + (n_after * (n_after + 1) - n_before * (n_before + 1)) / 2)),
          12::bigint, 'ps a: a chunk holds X, v and the factor of its rows, nothing more');
SELECT cmp_ok((SELECT max(wal - 1.25 * last_bytes) FROM ck), '<=', 65536::numeric,
              'ps a: a checkpoint writes WAL of O(rows added): at most 1.25 x the chunk + 64 kB');
SELECT cmp_ok((SELECT wal FROM ck WHERE step = 12), '<', (SELECT full_bytes / 3 FROM ck WHERE step = 12),
              'ps a: the last checkpoint wrote under a third of what rewriting the factor would');
SELECT is((SELECT count(*) FROM model_select.arm_state_rows r JOIN model_select.arms a USING (arm_id)
            WHERE a.name = 'b' AND r.selector_id = a.selector_id), 12::bigint,
          'ps b: one chunk per checkpoint of one reward');
SELECT is((SELECT state_bytes FROM model_select.arm_stats WHERE selector = 'ps' AND arm = 'a'),
          20 + 8 * (600 * 8 + 600 + 600 * 601 / 2),
          'ps a: arm_stats.state_bytes counts the header and the rows: the size of the state');

-- scores() of every probe and arm of sel, tagged, for comparison.
CREATE TEMP TABLE snap (tag text, sel text, probe int, arm text, n bigint,
                        mean float8, width float8, ucb float8);
CREATE FUNCTION pg_temp.snap(t text, s text) RETURNS void LANGUAGE sql AS $f$
  INSERT INTO snap SELECT t, s, p.probe, sc.arm, sc.n, sc.mean, sc.width, sc.ucb
    FROM probes p, model_select.scores(s, p.context) sc
$f$;
-- How many (probe, arm) pairs of sel agree between tags a and b (n exactly,
-- mean, width and ucb to a relative 1e-9).
CREATE FUNCTION pg_temp.agree(s text, a text, b text) RETURNS bigint LANGUAGE sql AS $f$
  SELECT count(*) FROM snap x JOIN snap y USING (sel, probe, arm)
   WHERE x.sel = s AND x.tag = a AND y.tag = b AND x.n = y.n
     AND abs(x.mean - y.mean) <= 1e-9 * greatest(1, abs(y.mean))
     AND abs(x.width - y.width) <= 1e-9 * greatest(1, abs(y.width))
     AND abs(x.ucb - y.ucb) <= 1e-9 * greatest(1, abs(y.ucb))
$f$;

-- 7 rewards pending on top of the chunks: readers fold them in memory.
SELECT pg_temp.feed('ps', 'a', 600, 607);
SELECT pg_temp.snap('incremental', 'ps');
SELECT is(model_select.rebuild_state('ps'), 619::bigint, 'ps: rebuild_state folds every reward');
SELECT pg_temp.snap('rebuilt', 'ps');
SELECT is(pg_temp.agree('ps', 'incremental', 'rebuilt'), 24::bigint,
          'ps: scores from the chunks + 7 pending rewards equal rebuild_state''s (1e-9)');
SELECT is((SELECT array_agg(first_row || ':' || nrows) FROM model_select.arm_state_rows r
             JOIN model_select.arms a USING (arm_id) WHERE a.name = 'a' AND r.selector_id = a.selector_id),
          ARRAY['0:607'], 'ps a: rebuild_state rewrote the rows as one chunk [0, n)');
SELECT is((SELECT max(n) FROM model_select.scores('ps', (SELECT context FROM probes LIMIT 1))),
          607::bigint, 'ps a: scores() sees 607 rewards');

-- Folds that are not appends: a full window, a full cap, several factors.
SELECT pg_temp.feed('pw', 'a', 0, 150), pg_temp.feed('pc', 'a', 0, 150), pg_temp.feed('pd', 'a', 0, 50);
SELECT model_select.checkpoint('pw'), model_select.checkpoint('pc'), model_select.checkpoint('pd');
SELECT pg_temp.feed('pw', 'a', 150, 190), pg_temp.feed('pc', 'a', 150, 190), pg_temp.feed('pd', 'a', 50, 90);
SELECT model_select.checkpoint('pw'), model_select.checkpoint('pc'), model_select.checkpoint('pd');
SELECT pg_temp.feed('pw', 'a', 190, 193), pg_temp.feed('pc', 'a', 190, 193), pg_temp.feed('pd', 'a', 90, 93);
SELECT pg_temp.snap('incremental', s) FROM unnest(ARRAY['pw', 'pc', 'pd']) s;
SELECT is((SELECT array_agg(s.name || ':' || r.first_row || ':' || r.nrows ORDER BY s.name)
             FROM model_select.arm_state_rows r JOIN model_select.selectors s USING (selector_id)
            WHERE s.name IN ('pw', 'pc', 'pd')),
          ARRAY['pc:0:68', 'pd:0:50', 'pd:50:40', 'pw:0:100'],
          'a full window or a compaction rewrites the rows as one chunk; dmm''s factors are appended');
SELECT is((SELECT state_bytes FROM model_select.arm_stats WHERE selector = 'pd'),
          20 + 8 * (90 * 8 + 90 + 3 * 90 * 91 / 2), 'pd: the chunks hold its three factors');
SELECT is(model_select.rebuild_state(s), n::bigint, format('%s: rebuild_state', s))
  FROM (VALUES ('pw', 193), ('pc', 193), ('pd', 93)) v(s, n);
SELECT pg_temp.snap('rebuilt', s) FROM unnest(ARRAY['pw', 'pc', 'pd']) s;
SELECT is(pg_temp.agree(s, 'incremental', 'rebuilt'), 12::bigint,
          format('%s: scores from the rows + 3 pending rewards equal rebuild_state''s (1e-9)', s))
  FROM unnest(ARRAY['pw', 'pc', 'pd']) s;

-- Compaction at cap (pk, cap 40): checkpoints every 8 rewards, 200 rewards.
CREATE TEMP TABLE ckk (step int, rows_before int, rows_after int, chunks int, last_first int);
DO $$
DECLARE
  id int := (SELECT arm_id FROM model_select.arms a JOIN model_select.selectors s USING (selector_id)
              WHERE s.name = 'pk');
  r0 int;
BEGIN
  FOR s IN 1..25 LOOP
    PERFORM pg_temp.feed('pk', 'a', (s - 1) * 8, s * 8);
    r0 := coalesce((SELECT sum(nrows) FROM model_select.arm_state_rows WHERE arm_id = id), 0);
    PERFORM model_select.checkpoint('pk');
    INSERT INTO ckk
    SELECT s, r0, sum(nrows), count(*), max(first_row) FROM model_select.arm_state_rows WHERE arm_id = id;
  END LOOP;
END $$;
-- The rule, spelled out independently: rewards t = 41, 62, 83, ... compact to
-- 20 rows, and each later reward adds one.
CREATE FUNCTION pg_temp.pk_rows(t int) RETURNS int LANGUAGE sql AS $f$
  SELECT CASE WHEN t <= 40 THEN t ELSE 20 + (t - 41) % 21 END
$f$;
SELECT is((SELECT array_agg(rows_after ORDER BY step) FROM ckk),
          (SELECT array_agg(pg_temp.pk_rows(8 * s) ORDER BY s) FROM generate_series(1, 25) s),
          'pk: after each checkpoint the rows held follow the compaction rule');
SELECT is((SELECT array_agg(step ORDER BY step) FROM ckk WHERE chunks = 1 AND last_first = 0 AND rows_before > 0),
          (SELECT array_agg(s ORDER BY s) FROM generate_series(1, 25) s
            WHERE EXISTS (SELECT FROM generate_series(8 * s - 7, 8 * s) t WHERE t > 40 AND (t - 41) % 21 = 0)),
          'pk: exactly the checkpoints whose rewards include a compaction rewrite the rows');
SELECT is((SELECT count(*) FROM ckk WHERE last_first = rows_before
             AND chunks = coalesce((SELECT c.chunks FROM ckk c WHERE c.step = ckk.step - 1), 0) + 1),
          17::bigint, 'pk: the other 17 checkpoints each appended one chunk of their rows');
SELECT pg_temp.feed('pk', 'a', 200, 212), pg_temp.feed('pk_kept', 'a', 212 - pg_temp.pk_rows(212), 212);
SELECT pg_temp.snap('incremental', s) FROM unnest(ARRAY['pk', 'pk_kept']) s;
SELECT is(model_select.rebuild_state('pk'), 212::bigint, 'pk: rebuild_state');
SELECT pg_temp.snap('rebuilt', 'pk');
SELECT is(pg_temp.agree('pk', 'incremental', 'rebuilt'), 12::bigint,
          'pk: scores from the rows + 12 pending rewards across a compaction equal rebuild_state''s (1e-9)');
SELECT is((SELECT count(*) FROM snap x JOIN snap y USING (probe, arm)
            WHERE x.sel = 'pk' AND x.tag = 'rebuilt' AND y.sel = 'pk_kept' AND y.tag = 'incremental'
              AND abs(x.mean - y.mean) <= 1e-9 * greatest(1, abs(y.mean))
              AND abs(x.width - y.width) <= 1e-9 * greatest(1, abs(y.width))),
          12::bigint, 'pk: it scores as an arm fed only its newest 23 rewards, the rows the rule keeps (1e-9)');

SELECT pg_temp.feed(s, 'a', 0, 100) FROM unnest(ARRAY['pkw', 'pkd']) s;
SELECT model_select.checkpoint(s) FROM unnest(ARRAY['pkw', 'pkd']) s;
SELECT pg_temp.feed(s, 'a', 100, 130) FROM unnest(ARRAY['pkw', 'pkd']) s;
SELECT pg_temp.snap('incremental', s) FROM unnest(ARRAY['pkw', 'pkd']) s;
SELECT model_select.rebuild_state(s) FROM unnest(ARRAY['pkw', 'pkd']) s;
SELECT pg_temp.snap('rebuilt', s) FROM unnest(ARRAY['pkw', 'pkd']) s;
SELECT is(pg_temp.agree(s, 'incremental', 'rebuilt'), 12::bigint,
          format('%s: past cap 40, 30 pending rewards across a compaction: equal to rebuild_state''s (1e-9)', s))
  FROM unnest(ARRAY['pkw', 'pkd']) s;

-- Damaged rows (pd: one chunk [0, 93) after a rebuild): every reader and
-- checkpoint refuses them with XX001, and rebuild_state() repairs them.
CREATE TEMP TABLE damage (kind text, stmt text);
INSERT INTO damage VALUES
  ('no chunk', $$DELETE FROM model_select.arm_state_rows WHERE arm_id = %s$$),
  ('a chunk 8 bytes short', $$UPDATE model_select.arm_state_rows SET rows = substring(rows from 9)
                              WHERE arm_id = %s$$),
  ('a chunk 8 bytes long', $$UPDATE model_select.arm_state_rows SET rows = rows || '\x0000000000000000'::bytea
                             WHERE arm_id = %s$$),
  ('a chunk one row short', $$UPDATE model_select.arm_state_rows SET nrows = nrows - 1 WHERE arm_id = %s$$),
  ('a chunk from row 1', $$UPDATE model_select.arm_state_rows SET first_row = 1 WHERE arm_id = %s$$),
  ('a chunk beyond n', $$INSERT INTO model_select.arm_state_rows
                         SELECT arm_id, selector_id, 93, 1, rows FROM model_select.arm_state_rows
                          WHERE arm_id = %s$$),
  ('a header with n + 1', $$UPDATE model_select.arm_state SET state = overlay(state placing
                            '\x5e000000'::bytea from 13) WHERE arm_id = %s$$),
  ('a header with n - 1', $$UPDATE model_select.arm_state SET state = overlay(state placing
                            '\x5c000000'::bytea from 13) WHERE arm_id = %s$$);
CREATE FUNCTION pg_temp.damaged(kind text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
  id int := (SELECT arm_id FROM model_select.arms a JOIN model_select.selectors s USING (selector_id)
              WHERE s.name = 'pd');
  refused int := 0;
BEGIN
  -- a new checkpoint version first: the damage is then read, not a cached model
  PERFORM model_select.rebuild_state('pd');
  EXECUTE format((SELECT d.stmt FROM damage d WHERE d.kind = damaged.kind), id);
  BEGIN
    PERFORM * FROM model_select.scores('pd', (SELECT context FROM probes LIMIT 1));
  EXCEPTION WHEN data_corrupted THEN refused := refused + 1;
  END;
  BEGIN
    PERFORM model_select.checkpoint('pd');
  EXCEPTION WHEN data_corrupted THEN refused := refused + 1;
  END;
  RETURN format('%s of 2 refused', refused);
END
$f$;
SELECT is(pg_temp.damaged(kind), '2 of 2 refused', 'pd, ' || kind || ': scores() and checkpoint() fail with XX001')
  FROM damage;
SELECT is(model_select.rebuild_state('pd'), 93::bigint, 'pd: rebuild_state() repairs the damaged rows');
SELECT pg_temp.snap('repaired', 'pd');
SELECT is(pg_temp.agree('pd', 'repaired', 'rebuilt'), 12::bigint,
          'pd: after the repair, the scores are the rebuilt ones (1e-9)');

SELECT * FROM finish();
ROLLBACK;
