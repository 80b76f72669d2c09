#!/usr/bin/env bash
# The fixed-order numeric kernels give the same bits on every path a CPU can
# take: each test/unit/*.c (vecops_bits.c: the portable and AVX2+FMA bodies of
# src/math/vecops.c at every alignment; rotate_bits.c: the rank-1 update's
# block bodies of src/math/rotate.c against its definition; rotate_many_bits.c:
# src/math/rotate_many.c's updates together against one after the other;
# gram_bits.c: linalg.c's Gram matrices and factorisations; eigen_bits.c:
# eigen.c's eigendecomposition against known spectra, at every alignment and
# without AVX2; elementary_bits.c: elementary.c's and trig.c's functions
# against the C library's, and with glibc's FMA paths masked), built here with
# the extension's floating-point flags and run.  Needs the server headers
# (pg_config --includedir-server) and gcc, as the build does.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d "${TMPDIR:-/tmp}/ms_unit.XXXXXX")
trap 'rm -rf "$work"' EXIT
PG_CONFIG=${PG_CONFIG:-pg_config}
passed=0 failed=0 i=0
for src in test/unit/*.c; do
    name=$(basename "$src" .c)
    i=$((i + 1))
    if gcc -O2 -ffp-contract=off -Wall -Werror -Wno-unused-function \
           -I"$("$PG_CONFIG" --includedir-server)" -Isrc "$src" -lm -o "$work/$name" 2>"$work/$name.err" &&
       out=$("$work/$name"); then
        echo "ok $i - $name: $out"
        passed=$((passed + 1))
    else
        echo "not ok $i - $name: ${out:-$(head -n 20 "$work/$name.err")}"
        failed=$((failed + 1))
    fi
    out=
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
