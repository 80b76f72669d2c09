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
SEEDS=${MS_BENCH_REUSE_SEEDS:-1 2}
. bench/lib/learner_bench.bash
learner_bench routellm.csv pr "${MS_BENCH_REUSE_PORT:-55680}" quality_rl.sql
echo "== the pacer's kept window, live: RouteLLM, budget 25%, seeds $SEEDS (data loaded in $(( $(date +%s) - t0 )) s)"
/usr/bin/python3 bench/pacer_reuse.py bench/results/pacer_reuse.md "$SEEDS" "${MS_BENCH_REUSE_CLIENTS:-1 4}" \
    "${MS_BENCH_REUSE:-1 16}"
echo "whole run: $(( $(date +%s) - t0 )) s"
