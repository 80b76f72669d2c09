#!/usr/bin/env bash
# Rewards in prepared transactions (two-phase commit).  A prepared
# transaction keeps its selector's settings lock, but the backend that
# prepared it moves on: a checkpoint must still see it as a writer that can
# commit, or it folds past the prepared rows, which then sort below the
# checkpoint and are never learnt.  For a lin_ucb and a pak_ucb selector:
# rewards prepared in one transaction; while it is prepared, other rewards
# commit, checkpoint() runs, and session A (a backend kept open) scores;
# then COMMIT PREPARED.  A second prepared transaction is rolled back, and
# its decisions are rewarded again afterwards.  Asserts: arm_stats.n equals
# the reward log's count, A's scores equal a fresh backend's, and the live
# state equals rebuild_state()'s (1e-9).  The checkpoint case loses the
# prepared rewards without the check in final_horizon_for().
#
# Needs PGHOST/PGPORT/PGUSER (a superuser) of a running cluster with
# model_select installed and max_prepared_transactions > 0
# (scripts/with-cluster.sh sets it).
set -euo pipefail
DB=ms_session_prepared
. "$(dirname "$0")/lib/common.bash"

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "fixtures failed"
SELECT model_select.create_selector('p_lin', 4, ARRAY['a', 'b', 'c']);
SELECT model_select.create_selector('p_pak', 4, ARRAY['a', 'b', 'c'], 'pak_ucb');
SELECT setseed(0.61);
CREATE TABLE routed AS
SELECT s.sel, k, (model_select.route(s.sel, ms_rand(4))).decision_id
  FROM unnest(ARRAY['p_lin', 'p_pak']) s(sel), generate_series(1, 50) k;
CREATE TABLE a_scores (probe int, sel text, arm text, ucb float8);
SQL
reward() {  # reward FIRST LAST: the decisions k in [FIRST, LAST] of both selectors
    echo "INSERT INTO model_select.rewards(decision_id, reward)
          SELECT decision_id, 0.05 * (k % 17) FROM routed WHERE k BETWEEN $1 AND $2 ORDER BY sel, k;"
}
prepare() {  # prepare FIRST LAST GID: those rewards in a transaction prepared as GID
    q -c "BEGIN" -c "$(reward "$1" "$2")" -c "PREPARE TRANSACTION '$3'" >/dev/null
}
SCORE="INSERT INTO a_scores SELECT k, s.sel, x.arm, x.ucb FROM generate_series(1, 4) k,
         unnest(ARRAY['p_lin', 'p_pak']) s(sel), LATERAL model_select.scores(s.sel, ms_probe(4, k)) x;"

session A
say A "$SCORE"
prepare 1 15 ms_prepared_1
q -c "$(reward 16 25)" >/dev/null
for s in p_lin p_pak; do
    check "$s: checkpoint() succeeds while a transaction with its rewards is prepared" \
        q -c "SELECT model_select.checkpoint('$s')" -o /dev/null
done
say A "$SCORE"
q -c "COMMIT PREPARED 'ms_prepared_1'" >/dev/null
prepare 26 35 ms_prepared_2
q -c "ROLLBACK PREPARED 'ms_prepared_2'" >/dev/null
q -c "$(reward 26 40)" >/dev/null
say A "DELETE FROM a_scores;"
say A "$SCORE"
close_sessions

check "session A ran every statement without an error" \
    test "$(grep -c 'ERROR' "$MS_WORK/A.out" || true)" = 0
check "the log holds 40 rewards per selector (the rolled-back ones once, later)" \
    test "$(q -c "SELECT string_agg(n::text, ' ' ORDER BY s) FROM (SELECT selector_id s, count(*) n
                    FROM model_select.rewards GROUP BY 1) x")" = "40 40"
check "A's 24 scores (4 probes, 2 selectors) equal a fresh backend's (1e-9)" \
    test "$(q -c "SELECT count(*) FROM a_scores a, LATERAL model_select.scores(a.sel, ms_probe(4, a.probe)) s
                   WHERE s.arm = a.arm AND ms_close(s.ucb, a.ucb)")" = 24
for s in p_lin p_pak; do
    rebuild_checks $s
done
finish
