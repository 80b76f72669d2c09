#!/usr/bin/env bash
# make bench-pacer-reuse: what the budget pacer's kept window costs in spend and
# quality, live (bench/pacer_reuse.py): RouteLLM with prices, a 25% budget,
# warm 1,000, routed from 1 and 4 client connections at once with the learner
# serving, model_select.pacer_window_reuse 1 (a full read of the window every
# decision) against 16 (the default); the table goes to
# bench/results/pacer_reuse.md.
#
# A cluster of its own (test/session/lib/own_cluster.bash) with
# shared_preload_libraries = 'model_select' and model_select.learner_databases
# naming the database, the learner's other settings at their defaults.  About
# 25 s a run on a 2-core machine: 6 minutes with the defaults.
#
# Environment: MS_BENCH_DATA (directory of routellm.csv, ../shared/bench),
# MS_BENCH_REUSE_SEEDS ("1 2"), MS_BENCH_REUSE_CLIENTS ("1 4"),
# MS_BENCH_REUSE ("1 16"), MS_BENCH_REUSE_PORT (first port tried, 55680).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA_DIR=$(cd "${MS_BENCH_DATA:-../shared/bench}" 2>/dev/null && pwd) ||
    { echo "bench/pacer_reuse.sh: no directory ${MS_BENCH_DATA:-../shared/bench} (set MS_BENCH_DATA)" >&2; exit 1; }
[ -r "$DATA_DIR/routellm.csv" ] || { echo "bench/pacer_reuse.sh: $DATA_DIR/routellm.csv is missing" >&2; exit 1; }
SEEDS=${MS_BENCH_REUSE_SEEDS:-1 2}
export OPENBLAS_NUM_THREADS=1
. test/session/lib/own_cluster.bash
trap cluster_stop_all EXIT
learner_cluster pr bench_pr "$(free_port "${MS_BENCH_REUSE_PORT:-55680}")"
t0=$(date +%s)
psql -X -q -v ON_ERROR_STOP=1 -v data="$DATA_DIR" -v seeds="{${SEEDS// /,}}" >/dev/null <<'SQL'
CREATE EXTENSION model_select;
\ir bench/quality_rl.sql
SQL
echo "== the pacer's kept window, live: RouteLLM, budget 25%, seeds $SEEDS (data loaded in $(( $(date +%s) - t0 )) s)"
/usr/bin/python3 bench/pacer_reuse.py bench/results/pacer_reuse.md "$SEEDS" "${MS_BENCH_REUSE_CLIENTS:-1 4}" \
    "${MS_BENCH_REUSE:-1 16}"
echo "whole run: $(( $(date +%s) - t0 )) s"
