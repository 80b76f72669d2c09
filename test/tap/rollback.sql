-- A reward inserted in a (sub)transaction that rolls back leaves the learned
-- state unchanged, and a version number reused after the rollback does not
-- serve a stale decoded model from the backend's model cache (which is keyed
-- by the arm_state row's version and xmin).  For pak_ucb and lin_ucb.
--
-- Per selector, arm a1 (after 45 rewards on a1..a3):
-- Rewards reach arm_state through checkpoints, so each insert below is
-- followed by checkpoint() (inside the savepoint, like the reward).
--   round A: SAVEPOINT; reward R1 for a1; arm_state and scores() changed;
--            ROLLBACK TO SAVEPOINT; arm_state and scores() exactly as before.
--   round B: SAVEPOINT; reward R1 again and score it (the cache now holds
--            a1 at version v+1 with the subtransaction's xmin);
--            ROLLBACK TO SAVEPOINT; arm_state as before, NOT scored (so the
--            cache keeps that entry); a different reward R2 gets the same
--            version v+1; scores() must decode a1 again and equal the scores
--            after rebuild_state().
-- The rounds for the two selectors are one text (test/tap/include), parameterised by the
-- psql variable :sel (pg_prove runs this file through psql).  Temp tables
-- roll back with the savepoint, so what is recorded inside round B's
-- savepoint is carried out of it in psql variables (\gset).  pgTAP numbers
-- tests with a sequence, so tests run inside a savepoint still count.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(30);

CREATE TEMP TABLE probes AS
  SELECT round AS probe, context FROM model_select.synthetic_clusters(5, 8, 3, NULL, 31);
-- R1 is at probe 1 with a high reward, R2 at probe 2 with a low one.
CREATE TEMP TABLE rwd (k text PRIMARY KEY, context float8[], reward float8);
INSERT INTO rwd SELECT 'R1', context, 0.95 FROM probes WHERE probe = 1;
INSERT INTO rwd SELECT 'R2', context, 0.05 FROM probes WHERE probe = 2;

CREATE TEMP TABLE rec_state (tag text, selector text, version bigint, n bigint, md5 text,
                             PRIMARY KEY (tag, selector));
CREATE TEMP TABLE rec_scores (tag text, selector text, probe int, arm text, n bigint,
                              mean float8, width float8, ucb float8);
CREATE TEMP TABLE rec_cache (tag text, selector text, decodes bigint, PRIMARY KEY (tag, selector));

-- Record arm a1's arm_state row, and scores() of every arm at every probe.
CREATE FUNCTION pg_temp.record_state(tag text, sel text) RETURNS void LANGUAGE sql AS $f$
  INSERT INTO rec_state
  SELECT tag, sel, st.version, st.n, md5(st.state)
    FROM model_select.arm_state st
    JOIN model_select.arms a USING (arm_id)
    JOIN model_select.selectors s ON s.selector_id = a.selector_id
   WHERE s.name = sel AND a.name = 'a1';
$f$;
CREATE FUNCTION pg_temp.record_scores(tag text, sel text) RETURNS void LANGUAGE sql AS $f$
  INSERT INTO rec_scores
  SELECT tag, sel, p.probe, s.arm, s.n, s.mean, s.width, s.ucb
    FROM probes p CROSS JOIN LATERAL model_select.scores(sel, p.context) s;
$f$;
CREATE FUNCTION pg_temp.record_cache(tag text, sel text) RETURNS void LANGUAGE sql AS $f$
  INSERT INTO rec_cache SELECT tag, sel, decodes FROM model_select.cache_stats();
$f$;
CREATE FUNCTION pg_temp.state_of(tag text, sel text) RETURNS text LANGUAGE sql AS $f$
  SELECT format('version %s, n %s, md5(state) %s', version, n, md5) FROM rec_state
   WHERE rec_state.tag = state_of.tag AND selector = sel;
$f$;
-- Query text for results_eq: the recorded scores of one tag.
CREATE FUNCTION pg_temp.scores_of(tag text, sel text) RETURNS text LANGUAGE sql AS $f$
  SELECT format('SELECT probe, arm, n, mean, width, ucb FROM rec_scores WHERE tag = %L AND selector = %L ORDER BY probe, arm',
                tag, sel);
$f$;
-- mean, width and ucb of two tags agree to a relative 1e-9, on all 15 pairs.
CREATE FUNCTION pg_temp.scores_close(tag_a text, tag_b text, sel text, descr text) RETURNS text
LANGUAGE plpgsql AS $f$
DECLARE
  pairs bigint;
  maxd float8;
  worst text;
BEGIN
  SELECT count(*), max(d), (array_agg(w ORDER BY d DESC NULLS FIRST))[1] INTO pairs, maxd, worst
    FROM (SELECT greatest(
                   CASE WHEN a.mean = b.mean THEN 0 ELSE abs(a.mean - b.mean) / greatest(1, abs(b.mean)) END,
                   CASE WHEN a.width = b.width THEN 0 ELSE abs(a.width - b.width) / greatest(1, abs(b.width)) END,
                   CASE WHEN a.ucb = b.ucb THEN 0 ELSE abs(a.ucb - b.ucb) / greatest(1, abs(b.ucb)) END,
                   CASE WHEN a.n = b.n THEN 0 ELSE 'Infinity'::float8 END) AS d,
                 format('probe %s arm %s: %s (n, mean, width, ucb) = (%s, %s, %s, %s), %s = (%s, %s, %s, %s)',
                        a.probe, a.arm, tag_a, a.n, a.mean, a.width, a.ucb, tag_b, b.n, b.mean, b.width, b.ucb) AS w
            FROM rec_scores a JOIN rec_scores b USING (selector, probe, arm)
           WHERE a.tag = tag_a AND b.tag = tag_b AND a.selector = sel) t;
  IF pairs = 15 AND maxd <= 1e-9 THEN
    RETURN ok(true, descr);
  END IF;
  RETURN ok(false, descr) || E'\n' || diag(format(E'    %s pairs (want 15), max rel diff %s (bound 1e-9)\n    worst: %s',
                                                   pairs, maxd, worst));
END
$f$;

-- ======================================================== pak_ucb (rbf)
\set sel r_pak
SELECT isnt(model_select.create_selector(:'sel', 8, ARRAY['a1', 'a2', 'a3'], 'pak_ucb', 'rbf', '{"eta": 1}'),
            NULL, :'sel' || ': create_selector');
\ir include/rollback_rounds.sql

-- ======================================================== lin_ucb
\set sel r_lin
SELECT isnt(model_select.create_selector(:'sel', 8, ARRAY['a1', 'a2', 'a3'], 'lin_ucb', NULL, '{"eta": 1}'),
            NULL, :'sel' || ': create_selector');
\ir include/rollback_rounds.sql

SELECT * FROM finish();
ROLLBACK;
