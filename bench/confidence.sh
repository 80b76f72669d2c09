#!/usr/bin/env bash
# make bench-confidence: the cost of each confidence bound (bench/confidence.sql)
# and their cumulative regret in replay on the RKHS environment of spec/001 §4
# (bench/confidence_regret.sql), in a throwaway cluster (see bench/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/with-cluster.sh sh -c '
    psql -X -q -v ON_ERROR_STOP=1 -f bench/confidence.sql &&
    if [ -f bench/confidence_regret.sql ]; then psql -X -q -v ON_ERROR_STOP=1 -f bench/confidence_regret.sql; fi'
