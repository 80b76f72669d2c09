#!/usr/bin/env bash
# make bench-scale: run bench/scale.sql in a throwaway cluster (see bench/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/with-cluster.sh psql -X -q -v ON_ERROR_STOP=1 -f bench/scale.sql
