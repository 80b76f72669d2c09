#!/usr/bin/env bash
# route_batch() vs select_model() row by row vs the bare BLAS-3 bound, at the
# W1 shape (see bench/batch.sql); part of make bench-perf.
set -euo pipefail
cd "$(dirname "$0")/.."
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell} OPENBLAS_NUM_THREADS=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -I/usr/include/x86_64-linux-gnu/openblas-pthread -o "$work/blas_bound" bench/blas_bound.c -lopenblas -lm
bound=$("$work/blas_bound" 100000 256 384 5 128 500)
get() { awk -v p="$1" '$1 == p { print $2 }' <<<"$bound"; }
scripts/with-cluster.sh psql -X -q -v ON_ERROR_STOP=1 -v bound_rff="$(get rff_ucb)" \
    -v bound_lin="$(get lin_ucb)" -v bound_pak="$(get pak_ucb)" -f bench/batch.sql
