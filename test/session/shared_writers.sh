#!/usr/bin/env bash
# Issues 12 and 14: concurrent writers on a server with the shared cache.
# concurrent_writers.sh (writers, scores() readers and a checkpointer at once;
# every arm then equal to rebuild_state at 1e-9, its n to the log's count)
# runs against a cluster of its own with model_select in
# shared_preload_libraries, so that backends take shared bases, copy them
# back to grow them, publish them once their arm is quiet and catch up from
# them while others write.  Fewer transactions than the per-backend run (8
# writers x 300) keep the suite short.  Then: the server's cache holds bases
# and no pin outlives the backends.
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_shared_writers
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
PORT=$(free_port $(( ${PGPORT:-55500} + 80 )))
preloaded_initdb shared "model_select.shared_cache_size = '64MB'"
cluster_start shared "$PORT" || bail "the server failed to start: $(tail -n 5 "$CL/shared.log")"

out=$(PGHOST=$CL PGPORT=$PORT PGUSER=postgres MS_A_WRITERS=8 MS_A_PER_WRITER=300 \
      bash "$(dirname "$0")/concurrent_writers.sh" 2>&1) && rc=0 || rc=$?
sed 's/^/#   /' <<<"$out" | grep -v '^#   ok ' || true
writers_pass() {
    [ "$rc" -eq 0 ] && grep -q ' passed, 0 failed$' <<<"$out"
}
check "concurrent writers, readers and checkpoints with the shared cache: every check passes" writers_pass
stat() {
    PGHOST=$CL PGPORT=$PORT PGUSER=postgres PGOPTIONS="-c client_min_messages=warning" psql -X -q -A -t -d postgres \
        -c "CREATE EXTENSION IF NOT EXISTS model_select" -c "SELECT $1 FROM model_select.cache_stats()" | tail -n 1
}
check "the server's cache holds bases after the run" test "$(stat 'shared_entries > 0')" = t
check "no pin outlives the backends" test "$(stat shared_pins)" = 0
finish
