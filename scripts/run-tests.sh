#!/usr/bin/env bash
# Run every test suite against the server described by PGHOST/PGPORT/PGUSER/
# PGDATABASE (normally started by scripts/with-cluster.sh; see `make test`):
#
#   1. pg_regress: `make installcheck` (sql/<name>.sql vs expected/<name>.out)
#   2. pgTAP:      pg_prove over test/tap/*.sql (hand-written) and
#                  test/tap/generated/*.sql (written by test/golden/*.py), in a
#                  fresh database "ms_tap" in which only `CREATE EXTENSION
#                  pgtap` has been run (test files create model_select
#                  themselves)
#   3. session:    every test/session/*.sh, run with bash (tests that need
#                  several sessions, databases or server-side tools);
#                  non-zero exit = failure
#
# All suites run even if an earlier one fails; exits non-zero if any failed.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1

MAKE=${MAKE:-make}
failed=()

section() { printf '\n==== %s ====\n' "$*"; }

# -- 1. pg_regress -----------------------------------------------------------
section "pg_regress (make installcheck)"
rm -f regression.diffs regression.out
if $MAKE ${PG_CONFIG:+PG_CONFIG="$PG_CONFIG"} installcheck; then
    :
else
    failed+=("pg_regress")
    if [ -s regression.diffs ]; then
        section "regression.diffs"
        cat regression.diffs
    fi
fi

# -- 2. pgTAP ----------------------------------------------------------------
shopt -s nullglob
tap_files=(test/tap/*.sql test/tap/generated/*.sql)
sh_files=(test/session/*.sh)
shopt -u nullglob

section "pgTAP (pg_prove test/tap/*.sql test/tap/generated/*.sql)"
if [ ${#tap_files[@]} -eq 0 ]; then
    echo "no test/tap/*.sql files"
else
    if psql -X -q -v ON_ERROR_STOP=1 -d postgres \
            -c 'SET client_min_messages = warning' -c 'DROP DATABASE IF EXISTS ms_tap' -c 'CREATE DATABASE ms_tap' &&
       psql -X -q -v ON_ERROR_STOP=1 -d ms_tap -c 'CREATE EXTENSION pgtap'; then
        pg_prove --failures -d ms_tap "${tap_files[@]}" || failed+=("pgTAP")
    else
        echo "could not create the pgTAP database" >&2
        failed+=("pgTAP (setup)")
    fi
fi

# -- 3. session tests --------------------------------------------------------
section "session tests (test/session/*.sh)"
if [ ${#sh_files[@]} -eq 0 ]; then
    echo "no test/session/*.sh files"
fi
for f in "${sh_files[@]}"; do
    echo "---- $f"
    if bash "$f"; then
        echo "---- $f: PASS"
    else
        echo "---- $f: FAIL (exit $?)"
        failed+=("$f")
    fi
done

# -- summary -----------------------------------------------------------------
section "summary"
if [ ${#failed[@]} -eq 0 ]; then
    echo "all test suites passed"
    exit 0
fi
echo "FAILED: ${failed[*]}"
exit 1
