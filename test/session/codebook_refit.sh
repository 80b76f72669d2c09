#!/usr/bin/env bash
# A codebook refitted under a backend that keeps routing (codebook.c keeps
# one version of a selector's centroids per backend and frees a replaced one
# when the transaction ends; the configuration, model and selector caches
# renew their pointer).  Session A routes and rewards a warm-started default
# selector (codebook 8) across: a refit committed by another session, a
# refit another session rolls back, a refit of its own rolled back after it
# scored with it, then another session's refit committed under the same
# settings_version (after a rollback, and again after a rollback to a
# savepoint).  Then A's scores equal a fresh backend's, the stored codebook
# is the last committed refit's, and the live state equals rebuild_state()'s
# (rebuild_checks).
#
# Needs PGHOST/PGPORT/PGUSER (a superuser) of a running cluster with
# model_select installed.
set -euo pipefail
DB=ms_session_codebook_refit
. "$(dirname "$0")/lib/common.bash"

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "fixtures failed"
SELECT model_select.create_selector('cb', 8, ARRAY['a', 'b', 'c']);
SELECT setseed(0.47);
CREATE TABLE warm AS SELECT ms_rand(8) AS context, ARRAY[random(), random(), random()] AS rewards
  FROM generate_series(1, 200);
CREATE TABLE other AS SELECT ms_rand(8) AS context FROM generate_series(1, 50);
SELECT model_select.warm_start('cb', 'SELECT context, rewards FROM warm');
CREATE TABLE a_scores (phase int, probe int, arm text, ucb float8);
CREATE TABLE fresh_scores (LIKE a_scores);
SQL
check "warm_start fitted the default codebook on its 200 rows" \
    test "$(q -c "SELECT rows FROM model_select.codebooks")" = 200

ROUTE="SELECT count(*) FROM (SELECT model_select.route('cb', ms_probe(8, k)) FROM generate_series(1, 5) k) x;"
REWARD="INSERT INTO model_select.rewards(decision_id, reward)
        SELECT d.decision_id, 0.1 * (d.decision_id % 7) FROM model_select.decisions d
         WHERE NOT EXISTS (SELECT FROM model_select.rewards r WHERE r.decision_id = d.decision_id);"
session A
say A "$ROUTE"
say A "$REWARD"
q -c "SELECT model_select.fit_codebook('cb', 'SELECT context FROM other')" >/dev/null
say A "$ROUTE"
say A "$REWARD"
q >/dev/null <<'SQL'
BEGIN;
SELECT model_select.fit_codebook('cb', 'SELECT context FROM warm LIMIT 30');
ROLLBACK;
SQL
say A "$ROUTE"
say A "BEGIN;"
say A "SELECT model_select.fit_codebook('cb', 'SELECT context FROM warm LIMIT 40');"
say A "$ROUTE"
say A "ROLLBACK;"
# Another session's refit then commits the settings_version that A's rolled
# back refit had; A has not routed since, so only the row tells them apart.
say A "SELECT count(*) FROM model_select.selectors;"
q -c "SELECT model_select.fit_codebook('cb', 'SELECT context FROM warm ORDER BY context[1] LIMIT 60')" >/dev/null
say A "$ROUTE"
say A "INSERT INTO a_scores SELECT 1, k, s.arm, s.ucb FROM generate_series(1, 5) k, LATERAL model_select.scores('cb', ms_probe(8, k)) s;"
q -c "INSERT INTO fresh_scores SELECT 1, k, s.arm, s.ucb FROM generate_series(1, 5) k, LATERAL model_select.scores('cb', ms_probe(8, k)) s" >/dev/null
# The same with A's refit rolled back to a savepoint in a transaction that commits.
say A "BEGIN;"
say A "SAVEPOINT s;"
say A "SELECT model_select.fit_codebook('cb', 'SELECT context FROM warm LIMIT 45');"
say A "$ROUTE"
say A "ROLLBACK TO SAVEPOINT s;"
say A "COMMIT;"
q -c "SELECT model_select.fit_codebook('cb', 'SELECT context FROM warm ORDER BY context[2] LIMIT 70')" >/dev/null
say A "SELECT count(*) FROM (SELECT repeat('x', 512) FROM generate_series(1, 20000)) x;"
say A "$ROUTE"
say A "$REWARD"
say A "INSERT INTO a_scores SELECT 2, k, s.arm, s.ucb FROM generate_series(1, 5) k, LATERAL model_select.scores('cb', ms_probe(8, k)) s;"
close_sessions

check "session A ran every statement without an error" \
    test "$(grep -c 'ERROR' "$MS_WORK/A.out" || true)" = 0
check "the stored codebook is the last committed refit's (70 rows)" \
    test "$(q -c "SELECT rows FROM model_select.codebooks")" = 70
check "after the rollback and another session's refit, A's scores equal a fresh backend's (1e-9)" \
    no_rows "SELECT a.probe, a.arm FROM a_scores a JOIN fresh_scores f USING (phase, probe, arm)
              WHERE a.phase = 1 AND NOT ms_close(f.ucb, a.ucb)"
check "after the savepoint's rollback and the last refit, A's scores equal a fresh backend's (1e-9)" \
    no_rows "SELECT a.probe, a.arm FROM a_scores a,
                    LATERAL model_select.scores('cb', ms_probe(8, a.probe)) s
              WHERE a.phase = 2 AND s.arm = a.arm AND NOT ms_close(s.ucb, a.ucb)"
check "A scored 15 arms (5 probes) each time, as did the fresh backend" \
    test "$(q -c "SELECT count(*) FILTER (WHERE phase = 1) || ' ' || count(*) FILTER (WHERE phase = 2) || ' '
                         || (SELECT count(*) FROM fresh_scores f JOIN a_scores a USING (phase, probe, arm))
                    FROM a_scores")" = "15 15 15"
rebuild_checks cb
finish
