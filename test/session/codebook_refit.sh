#!/usr/bin/env bash
# A codebook refitted under a backend that keeps routing (codebook.c keeps
# one version of a selector's centroids per backend and frees a replaced one
# when the transaction ends; the configuration, model and selector caches
# renew their pointer).  Session A routes and rewards a warm-started default
# selector (codebook 8) across: a refit committed by another session, a
# refit another session rolls back, and three refits of its own that it
# scored with and that did not commit (rolled back, rolled back to a
# savepoint, prepared and then rolled back by another session), each
# followed by another session's refit committed under the settings_version
# the uncommitted one had.  After each, A's scores equal a fresh backend's;
# at the end the stored codebook is the last committed refit's, and the
# live state equals rebuild_state()'s (rebuild_checks).  Needs
# max_prepared_transactions > 0 (scripts/with-cluster.sh sets it).
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
# Then another session's refit commits the settings_version that A's own
# rolled-back refit had, while A has not routed: only the row tells them
# apart.  A's scores are compared with a fresh backend's at once (phase 1).
# The same after a refit rolled back to a savepoint (phase 2) and after a
# prepared one that another session rolls back (phase 3).
capture() {  # capture PHASE: A's scores, then a fresh backend's (before anything changes)
    say A "INSERT INTO a_scores SELECT $1, k, s.arm, s.ucb FROM generate_series(1, 5) k, LATERAL model_select.scores('cb', ms_probe(8, k)) s;"
    q -c "INSERT INTO fresh_scores SELECT $1, k, s.arm, s.ucb FROM generate_series(1, 5) k, LATERAL model_select.scores('cb', ms_probe(8, k)) s" >/dev/null
}
say A "SELECT count(*) FROM model_select.selectors;"
q -c "SELECT model_select.fit_codebook('cb', 'SELECT context FROM warm ORDER BY context[1] LIMIT 60')" >/dev/null
say A "$ROUTE"
capture 1
say A "BEGIN;"
say A "SAVEPOINT s;"
say A "SELECT model_select.fit_codebook('cb', 'SELECT context FROM warm LIMIT 45');"
say A "$ROUTE"
say A "ROLLBACK TO SAVEPOINT s;"
say A "COMMIT;"
q -c "SELECT model_select.fit_codebook('cb', 'SELECT context FROM warm ORDER BY context[2] LIMIT 70')" >/dev/null
say A "$ROUTE"
say A "$REWARD"
capture 2
say A "BEGIN;"
say A "SELECT model_select.fit_codebook('cb', 'SELECT context FROM warm LIMIT 35');"
say A "$ROUTE"
say A "PREPARE TRANSACTION 'ms_codebook_refit';"
q -c "ROLLBACK PREPARED 'ms_codebook_refit'"
q -c "SELECT model_select.fit_codebook('cb', 'SELECT context FROM warm ORDER BY context[3] LIMIT 80')" >/dev/null
say A "SELECT count(*) FROM (SELECT repeat('x', 512) FROM generate_series(1, 20000)) x;"
say A "$ROUTE"
say A "$REWARD"
capture 3
close_sessions

check "session A ran every statement without an error" \
    test "$(grep -c 'ERROR' "$MS_WORK/A.out" || true)" = 0
check "the stored codebook is the last committed refit's (80 rows)" \
    test "$(q -c "SELECT rows FROM model_select.codebooks")" = 80
for phase in 1 2 3; do
    check "phase $phase: A's 15 scores (5 probes) equal a fresh backend's (1e-9)" \
        test "$(q -c "SELECT count(*) FILTER (WHERE ms_close(f.ucb, a.ucb)) FROM a_scores a
                        JOIN fresh_scores f USING (phase, probe, arm) WHERE phase = $phase")" = 15
done
rebuild_checks cb
finish
