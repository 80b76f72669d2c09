#!/usr/bin/env bash
# Issue 12, read replicas: a primary and a streaming hot standby of its own
# (initdb + pg_basebackup -R in a temporary directory; as root the servers
# run as user postgres).  Rewards are written on the primary, pending and
# checkpointed; once the standby has replayed them, select_model() and
# scores() there equal the primary's, and route(), route_batch(log => true)
# and reward inserts fail with 25006 and a hint to send them to the primary.
# The standby runs the shared cache (the primary does not).  select_model()
# there runs without error while the primary rebuilds and checkpoints; once
# promoted, the standby routes and learns, and its scores equal its rebuild.  Rewards
# committed out of order on the primary: a standby session counts both.
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_standby
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"

primary_start $(( ${PGPORT:-55500} + 60 ))

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selectors failed"
SELECT model_select.create_selector('sb_pak', 3, ARRAY['a','b','c'], 'pak_ucb', 'rbf', '{"window": 40}');
SELECT model_select.create_selector('sb_rff', 3, ARRAY['a','b','c'], 'rff_ucb', 'rbf', '{"features": 16}');
SELECT model_select.create_selector('sb_lin', 3, ARRAY['a','b','c'], 'lin_ucb', NULL, '{"discount": 0.95}');
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT s, (ARRAY['a','b','c'])[1 + i % 3], ARRAY[sin(i), cos(i), sin(0.3 * i)]::float8[], (1 + sin(0.7 * i)) / 2
  FROM generate_series(1, 150) i, unnest(ARRAY['sb_pak', 'sb_rff', 'sb_lin']) s ORDER BY i, s;
SELECT model_select.checkpoint(s) FROM unnest(ARRAY['sb_pak', 'sb_rff', 'sb_lin']) s;
SQL

# the standby keeps the shared cache (the primary a backend's own)
standby_start "shared_preload_libraries = 'model_select'"
check "the standby is in recovery, with the shared cache" \
    test "$(sq -c 'SELECT pg_is_in_recovery()') $(sq -c 'SHOW shared_preload_libraries')" = "t model_select"

# more rewards after the base backup: some pending, in several transactions
q -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
      SELECT s, (ARRAY['a','b','c'])[1 + i % 3], ARRAY[cos(i), sin(i), 0.5]::float8[], (1 + cos(0.4 * i)) / 2
        FROM generate_series(151, 200) i, unnest(ARRAY['sb_pak', 'sb_rff', 'sb_lin']) s ORDER BY i, s" >/dev/null
q -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
      VALUES ('sb_pak', 'c', ARRAY[0.1, 0.2, 0.3]::float8[], 0.9)" >/dev/null
check "the standby has replayed the primary's rewards" replayed
check "some rewards are pending on the standby (not only checkpoints)" \
    test "$(sq -c 'SELECT sum(pending) > 0 FROM model_select.arm_stats')" = t

SCORES="SELECT s, i, x.arm, x.n, x.mean, x.width, x.ucb, model_select.select_model(s, c)
          FROM unnest(ARRAY['sb_pak', 'sb_rff', 'sb_lin']) s, generate_series(1, 20) i,
               LATERAL (SELECT ARRAY[sin(2 * i), cos(3 * i), 0.1 * i]::float8[] AS c) ctx,
               LATERAL model_select.scores(s, c) x ORDER BY 1, 2, 3"
q -c "$SCORES" > "$MS_WORK/primary.scores"
sq -c "$SCORES" > "$MS_WORK/standby.scores"
check "scores() and select_model() on the standby equal the primary's ($(wc -l < "$MS_WORK/primary.scores") rows)" \
    cmp -s "$MS_WORK/primary.scores" "$MS_WORK/standby.scores"
check "... and they are not empty" test "$(wc -l < "$MS_WORK/primary.scores")" = 180

refused() {  # refused SQL -- 25006 and the hint to use the primary
    local out
    out=$(sq -v VERBOSITY=verbose -c "$1" 2>&1 || true)
    grep -q "ERROR:  25006" <<<"$out" && grep -q "HINT:.*primary" <<<"$out" ||
        { echo "#   got: $out" | head -n 4; return 1; }
}
check "route() on the standby: 25006 with a hint to use the primary" \
    refused "SELECT * FROM model_select.route('sb_lin', ARRAY[1, 2, 3]::float8[])"
check "route_batch(log => true) on the standby: 25006 with the hint" \
    refused "SELECT * FROM model_select.route_batch('sb_lin', 'SELECT 1, ARRAY[1, 2, 3]::float8[]', log => true)"
check "route_batch() without log works on the standby" \
    test "$(sq -c "SELECT count(*) FROM model_select.route_batch('sb_lin', 'SELECT i, ARRAY[i, 2, 3]::float8[] FROM generate_series(1, 300) i')")" = 300
out=$(sq -v VERBOSITY=verbose -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
                                 VALUES ('sb_lin', 'a', ARRAY[1, 2, 3]::float8[], 0.5)" 2>&1 || true)
check "a reward insert on the standby: 25006 (read-only transaction)" grep -q "ERROR:  25006" <<<"$out"

# a budget on the standby: scores() there reads the pacer's window, which a backend keeps on a
# standby too (its view trails the primary anyway); greedy, so λ = mean − ucb of the dear arm
# (cost 1).  The window is reused: a decision committed on the primary with an older
# created_at than the newest the standby session holds waits for its next full read
budget_selector sb_bud '{"budget": 0.5, "pace": 10}'
q -f "$(dirname "$0")/lib/exact_lambda.sql" >/dev/null
BUD_ROUTE="SELECT model_select.route('sb_bud', ARRAY[1, 0]::float8[])"
# s_lambda SAME: session s on the standby reads λ; it is (same) or is not (other) the exact one
s_lambda() {
    local want
    replayed || return 1
    want=$(sq -c "SELECT exact_lambda('sb_bud')")
    say s "SELECT mean - ucb FROM model_select.scores('sb_bud', ARRAY[1, 0]::float8[]) WHERE arm = 'dear';" &&
        lambda_is "$1" "$(last_answer s)" "$want"
}
PGPORT=$STANDBY session s
session p
say s "SET model_select.pacer_window_reuse = 8;"
check "a budget on the standby: its first scores() reads the window in full (exact λ)" s_lambda same
say p "BEGIN;"
q -c "$BUD_ROUTE" -c "$BUD_ROUTE" >/dev/null
check "... the primary's two new decisions count at once for its second" s_lambda same
say p "$BUD_ROUTE;"
say p "COMMIT;"
check "... a decision committed with an older created_at waits for its next full read (not exact)" s_lambda other
# (each read after a new decision: a load is reused while the snapshot sees the same rows)
for _ in 1 2 3 4 5; do
    q -c "$BUD_ROUTE" >/dev/null
    replayed && say s "SELECT 1 FROM model_select.scores('sb_bud', ARRAY[1, 0]::float8[]) LIMIT 1;"
done
q -c "$BUD_ROUTE" >/dev/null
check "... which its ninth read makes (exact)" s_lambda same

# rewards committed out of their transactions' order on the primary: a standby session that
# folded the later one counts the earlier too once it commits (a standby's snapshots list the
# running transactions as subtransactions: the fold's horizon must take them)
LIN_SCORES="SELECT string_agg(arm || ' ' || n || ' ' || ucb, ', ' ORDER BY arm)
              FROM model_select.scores('sb_lin', ARRAY[0.3, 0.2, 0.1]::float8[])"
lin_scores_equal() {  # session s's last answer is the primary's $LIN_SCORES
    local want
    want=$(q -c "$LIN_SCORES")
    [ "$(last_answer s)" = "$want" ] || { echo "#   standby: $(last_answer s)"; echo "#   primary: $want"; return 1; }
}
say p "BEGIN;"
say p "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('sb_lin', 'a', ARRAY[0.2, 0.1, 0.4]::float8[], 0.7);"
q -c "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('sb_lin', 'a', ARRAY[0.3, 0.5, 0.1]::float8[], 0.2)" >/dev/null
replayed || true
say s "$LIN_SCORES;"
check "out of order: the standby session scores the reward committed first as the primary does" lin_scores_equal
say p "COMMIT;"
replayed || true
say s "$LIN_SCORES;"
check "... and, once the older transaction commits, its reward too" lin_scores_equal
close_sessions


# select_model() on the standby while it replays rebuilds and checkpoints
( for _ in 1 2 3; do
      q -c "SELECT model_select.rebuild_state(s), model_select.checkpoint(s) FROM unnest(ARRAY['sb_pak', 'sb_rff', 'sb_lin']) s"
  done >/dev/null ) &
rebuilder=$!
errors=0
for k in $(seq 1 20); do
    sq -c "SELECT model_select.select_model(s, ARRAY[0.1 * $k, 1, 2]::float8[])
             FROM unnest(ARRAY['sb_pak', 'sb_rff', 'sb_lin']) s" >/dev/null 2>>"$MS_WORK/replay.err" || errors=$((errors + 1))
done
wait "$rebuilder"
check "select_model() on the standby during the replay of rebuild_state() and checkpoint(): no error" \
    test "$errors $(head -c 300 "$MS_WORK/replay.err")" = "0 "

# promoted, the standby routes and learns, and equals its own rebuild
as_server "$BINDIR/pg_ctl" -D "$CL/standby" -w -t 60 promote >/dev/null || bail "promotion failed"
export PGPORT=$STANDBY
check "the promoted standby routes and takes rewards by decision and by name" \
    q -c "CREATE TEMP TABLE routed AS SELECT (model_select.route(s, ARRAY[i, 1, -1]::float8[])).decision_id
            FROM unnest(ARRAY['sb_pak', 'sb_rff', 'sb_lin']) s, generate_series(1, 5) i" \
      -c "INSERT INTO model_select.rewards(decision_id, reward) SELECT decision_id, 0.3 FROM routed" \
      -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
          SELECT s, 'b', ARRAY[i, 2, 0]::float8[], 0.8 FROM unnest(ARRAY['sb_pak', 'sb_rff', 'sb_lin']) s, generate_series(1, 5) i"
for s in sb_pak sb_rff sb_lin; do rebuild_checks "$s" " (promoted)"; done

finish
