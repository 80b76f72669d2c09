#!/usr/bin/env bash
# make bench-pgbench: bench/pgbench.sh (route() + reward per transaction against the same SQL
# on plain tables, in a throwaway cluster) in three server set-ups, each with its own cluster:
#   plain      model_select not preloaded: every backend folds for itself;
#   preloaded  shared_preload_libraries = 'model_select' (the shared cache), no learner;
#   learner    preloaded, and the learner process serving the bench's database: it publishes
#              the arms' versions and decisions score them (docs/caches.md), with its lag.
#   pooled     as plain, with pgbench (both sides) connecting through PgBouncer in transaction
#              mode, MS_PGBENCH_POOL_SIZE (8) server connections, at MS_PGBENCH_POOLED_CLIENTS
#              ("64 200") clients: decisions/s behind a pooler against the same baseline through it.
# Clients MS_PGBENCH_CLIENTS ("1 4 16 64"), policies MS_PGBENCH_POLICIES ("rff_ucb lin_ucb"),
# set-ups MS_PGBENCH_SETUPS ("learner pooled"; also "plain preloaded"); rounds, seconds per run
# and the rest as bench/pgbench.sh (MS_PGBENCH_ROUNDS defaults to 1 here, and the single
# select_model() calls run at MS_PGBENCH_READ_CLIENTS, 1).  Each set-up prints its own
# tables, with CPU per decision at each client count over that at 1, the baseline measured
# in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
export MS_PGBENCH_CLIENTS=${MS_PGBENCH_CLIENTS:-1 4 16 64}
export MS_PGBENCH_POLICIES=${MS_PGBENCH_POLICIES:-rff_ucb lin_ucb}
export MS_PGBENCH_ROUNDS=${MS_PGBENCH_ROUNDS:-1}
export MS_PGBENCH_READ_CLIENTS=${MS_PGBENCH_READ_CLIENTS:-1}
for setup in ${MS_PGBENCH_SETUPS:-learner pooled}; do
    opts="-c max_connections=100"
    pooled=()
    case $setup in
        plain) ;;
        pooled) pooled=(MS_PGBENCH_POOL="${MS_PGBENCH_POOL_SIZE:-8}"
                        MS_PGBENCH_CLIENTS="${MS_PGBENCH_POOLED_CLIENTS:-64 200}") ;;
        preloaded) opts="$opts -c shared_preload_libraries=model_select" ;;
        learner) opts="$opts -c shared_preload_libraries=model_select -c model_select.learner_databases=ms_pgbench" ;;
        *) echo "unknown set-up $setup (plain, preloaded, learner, pooled)" >&2; exit 1 ;;
    esac
    echo
    echo "## set-up: $setup"
    env "${pooled[@]}" MS_CLUSTER_OPTS="$opts ${MS_CLUSTER_OPTS:-}" bench/pgbench.sh
done
