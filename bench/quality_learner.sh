#!/usr/bin/env bash
# make bench-quality-learner: what bounded staleness costs in reward (issue 41).
# RouterDC's evaluation stream (bench-quality's routerdc7 protocol: per seed the
# 7,271 evaluation prompts in their split order, cold and warm-started from the
# seed's first 1,000 pool prompts) routed by replay(), by a live selector in one
# transaction, and by a live selector with the learner serving the database and
# one transaction per round from a client (bench/quality_learner.py, psycopg 3);
# the figures and the decisions' staleness in rounds go to
# bench/results/quality_learner.md.
#
# A cluster of its own (test/session/lib/own_cluster.bash) with
# shared_preload_libraries = 'model_select' and model_select.learner_databases
# naming the database, the learner's other settings at their defaults.
#
# About 100 s per seed and warm start on a loaded 2-core machine (the client
# loop about half of it): 10 minutes with the defaults.
#
# Environment: MS_BENCH_DATA (directory of routerdc7_dev.csv, ../shared/bench),
# MS_BENCH_LEARNER_SEEDS ("1 2 3"), MS_BENCH_LEARNER_KS (warm starts, "0 1000"),
# MS_BENCH_LEARNER_POLICY (lin_ucb), MS_BENCH_LEARNER_SETTINGS ({}: the default
# router), MS_BENCH_LEARNER_PORT (first port tried, 55650).
set -euo pipefail
cd "$(dirname "$0")/.."
SEEDS=${MS_BENCH_LEARNER_SEEDS:-1 2 3}
SETTINGS=${MS_BENCH_LEARNER_SETTINGS:-'{}'}
. bench/lib/learner_bench.bash
learner_bench routerdc7_dev.csv ql "${MS_BENCH_LEARNER_PORT:-55650}" quality_dc.sql
echo "== quality with the learner serving: RouterDC, seeds $SEEDS (data loaded in $(( $(date +%s) - t0 )) s)"
/usr/bin/python3 bench/quality_learner.py bench/results/quality_learner.md "$SEEDS" "${MS_BENCH_LEARNER_KS:-0 1000}" \
    "${MS_BENCH_LEARNER_POLICY:-lin_ucb}" "$SETTINGS"
echo "whole run: $(( $(date +%s) - t0 )) s"
