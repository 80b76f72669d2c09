#!/usr/bin/env bash
# The fixed-order vector kernels (src/math/vecops.c) give the same bits with
# the portable (fma()) and AVX2+FMA bodies and at every alignment of their operands: test/unit/vecops_bits.c,
# built here with the extension's floating-point flags and run.  Needs the
# server headers (pg_config --includedir-server) and gcc, as the build does.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d "${TMPDIR:-/tmp}/ms_vecops.XXXXXX")
trap 'rm -rf "$work"' EXIT
PG_CONFIG=${PG_CONFIG:-pg_config}
gcc -O2 -ffp-contract=off -Wall -Werror -Wno-unused-function -I"$("$PG_CONFIG" --includedir-server)" -Isrc \
    test/unit/vecops_bits.c -lm -o "$work/vecops_bits"
if out=$("$work/vecops_bits"); then
    echo "ok 1 - vecops: $out"
    echo "1 passed, 0 failed"
else
    echo "not ok 1 - vecops: $out"
    echo "0 passed, 1 failed"
    exit 1
fi
