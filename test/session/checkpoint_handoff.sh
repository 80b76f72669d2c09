#!/usr/bin/env bash
# A checkpoint hands its fold to the arm cache (issue 41): on a cluster of its
# own with model_select preloaded (shared cache, model_select.shared_min_size
# 0, no learner, no automatic checkpoints), for lin_ucb and rff_ucb:
#   - session A scores the selector (its entries fold the 150 rewards), then
#     checkpoints it;
#   - a new backend B then scores it first: it takes the bases A published
#     with the checkpoints (shared_hits 3) and publishes none (a backend used
#     to read each new checkpoint back and publish it; with the learner, every
#     backend folded the rows after each new checkpoint meanwhile);
#   - A scores again: its entries are the checkpoints it wrote, not folded
#     anew from them (misses unchanged; they grew by 3 before);
#   - B's scores equal, to the last bit, A's before the checkpoint and, after
#     a restart (the shared cache empty), those of a backend that reads the
#     checkpoints back; and rebuild_state's within 1e-9.
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_checkpoint_handoff
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
export OPENBLAS_NUM_THREADS=1
PORT=$(free_port $(( ${PGPORT:-55500} + 130 )))
cluster_initdb handoff || bail "initdb failed: $(tail -n 5 "$CL/initdb.log")"
as_server sh -c "printf '%s\n' \"shared_preload_libraries = 'model_select'\" \
    \"model_select.shared_min_size = 0\" \"model_select.checkpoint_threshold = 0\" \
    >> '$CL/handoff/postgresql.conf'"
cluster_start handoff "$PORT" || bail "the server failed to start: $(tail -n 5 "$CL/handoff.log")"
export PGHOST=$CL PGPORT=$PORT PGUSER=postgres
ms_setup || bail "set-up failed"

q -c "SELECT model_select.create_selector('h_lin', 8, ARRAY['a', 'b', 'c'], 'lin_ucb')" \
  -c "SELECT model_select.create_selector('h_rff', 8, ARRAY['a', 'b', 'c'], 'rff_ucb', 'rbf', '{\"features\": 16}', 5)" >/dev/null
# 150 rewards per selector, pending (no automatic checkpoint)
q -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
      SELECT s, (ARRAY['a','b','c'])[1 + i % 3], ms_rand(8), random()
        FROM generate_series(1, 150) i, unnest(ARRAY['h_lin', 'h_rff']) s ORDER BY i, s" >/dev/null

# stat SESSION COLUMN: the column of cache_stats() in that session, now
stat() {
    say "$1" "SELECT 'stat=' || $2 FROM model_select.cache_stats();"
    grep '^stat=' "$MS_WORK/$1.out" | tail -n 1 | cut -d= -f2
}
SCORES="SELECT string_agg(arm || ':' || ucb::text || ':' || mean::text || ':' || n, ' ' ORDER BY arm)
          FROM model_select.scores('%s', '{0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8}')"

session A
say A "SET extra_float_digits = 3;"
declare -A B_SCORES
for sel in h_lin h_rff; do
    say A "SELECT 'scores=' || ($(printf "$SCORES" "$sel"));"
    before=$(grep '^scores=' "$MS_WORK/A.out" | tail -n 1 | cut -d= -f2)
    say A "SELECT model_select.checkpoint('$sel');"
    misses=$(stat A misses)
    # B: a new backend, the first to score after the checkpoints
    b=$(q -c "SET extra_float_digits = 3" -c "$(printf "$SCORES" "$sel")" \
          -c "SELECT shared_hits || ' ' || shared_publishes FROM model_select.cache_stats()")
    echo "# $sel: B took and published: $(tail -n 1 <<<"$b")"
    check "$sel: a new backend takes the checkpoints' bases A published (3 hits) and publishes none" \
        test "$(tail -n 1 <<<"$b")" = "3 0"
    say A "SELECT count(*) FROM model_select.scores('$sel', ms_rand(8));"
    echo "# $sel: A's misses before and after scoring again: $misses $(stat A misses)"
    check "$sel: A scores from the checkpoints it wrote (no entry folded anew)" \
        test "$(stat A misses)" = "$misses"
    B_SCORES[$sel]=$(head -n 1 <<<"$b")
    check "$sel: B's scores equal A's before the checkpoint, bit for bit" test "${B_SCORES[$sel]}" = "$before"
done
close_sessions
# restarted, the shared cache is empty: a backend reads the checkpoints back
as_server "$BINDIR/pg_ctl" -D "$CL/handoff" -m fast -w stop >/dev/null
cluster_start handoff "$PORT" || bail "the server failed to restart: $(tail -n 5 "$CL/handoff.log")"
for sel in h_lin h_rff; do
    check "$sel: B's scores equal those of a backend that reads the checkpoints, bit for bit" \
        test "$(q -c "SET extra_float_digits = 3" -c "$(printf "$SCORES" "$sel")")" = "${B_SCORES[$sel]}"
done
rebuild_checks h_lin
rebuild_checks h_rff
finish
