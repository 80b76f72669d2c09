#!/usr/bin/env bash
# route_batch() vs select_model() row by row vs the bare BLAS-3 bound, at the
# W1 shape (see bench/batch.sql); part of make bench-perf.
#
# Also model_select 0.1.0 at the same shape (bench/batch_v010.sql): built from
# this repository's history (commit V010_COMMIT, the 0.1.0 release) and
# installed into a database of its own in the same cluster, so that issue 12's
# target -- route_batch() at 2.5x the rate of 0.1.0's select_model() row by
# row -- is measured on this machine, in the same run.  Skipped (n/a) when
# the checkout has no history.  PG_CONFIG: the server's pg_config (as for make).
#
# The bound and 0.1.0 link OpenBLAS and LAPACKE (the extension itself no
# longer does): installed as root if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell} OPENBLAS_NUM_THREADS=1
if [ -z "${MS_BATCH_IN_CLUSTER:-}" ]; then
    if ! dpkg-query -W -f='${Status}\n' libopenblas-dev liblapacke-dev 2>/dev/null |
            grep -c "install ok installed" | grep -qx 2; then
        if [ "$(id -u)" -eq 0 ]; then
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q libopenblas-dev liblapacke-dev >/dev/null
        else
            echo "bench-batch needs OpenBLAS and LAPACKE: apt-get install libopenblas-dev liblapacke-dev" >&2
            exit 1
        fi
    fi
    MS_BATCH_IN_CLUSTER=1 exec scripts/with-cluster.sh bench/batch.sh
fi
V010_COMMIT=7a20a22
work=$(mktemp -d)
chmod a+rx "$work"   # the server, maybe another user, loads the 0.1.0 library from it
trap 'rm -rf "$work"; psql -X -q -d postgres -c "DROP DATABASE IF EXISTS ms_v010" >/dev/null 2>&1 || true' EXIT

cc -O2 -I/usr/include/x86_64-linux-gnu/openblas-pthread -o "$work/blas_bound" bench/blas_bound.c -lopenblas -lm
bound=$("$work/blas_bound" 100000 256 384 5 128 500)
get() { awk -v p="$1" '$1 == p { print $2 }' <<<"$bound"; }

v010_rate=0
if git rev-parse -q --verify "$V010_COMMIT^{commit}" >/dev/null 2>&1; then
    mkdir "$work/v010"
    git archive "$V010_COMMIT" | tar -x -C "$work/v010"
    if make -C "$work/v010" PG_CONFIG="${PG_CONFIG:-pg_config}" with_llvm=no >"$work/v010.log" 2>&1; then
        createdb ms_v010
        psql -X -q -d ms_v010 -c "CREATE SCHEMA model_select"
        # the 0.1.0 install script as a plain script: its library by path, no extension bookkeeping
        sed -e "s#MODULE_PATHNAME#$work/v010/model_select#" -e '/^\\echo Use/d' \
            -e '/pg_extension_config_dump/d' sql/model_select--0.1.0.sql |
            psql -X -q -v ON_ERROR_STOP=1 -d ms_v010 >/dev/null
        v010_rate=$(psql -X -q -A -t -d ms_v010 -f bench/batch_v010.sql)
    else
        echo "building 0.1.0 ($V010_COMMIT) failed: $(tail -n 1 "$work/v010.log")" >&2
    fi
else
    echo "no commit $V010_COMMIT in this checkout: 0.1.0 is not measured" >&2
fi
psql -X -q -v ON_ERROR_STOP=1 -v bound_rff="$(get rff_ucb)" -v bound_lin="$(get lin_ucb)" \
    -v bound_pak="$(get pak_ucb)" -v v010_rff="$v010_rate" -f bench/batch.sql
