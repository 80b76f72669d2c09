#!/usr/bin/env bash
# Usage: scripts/tap-tests.sh [FILE...]
#
# The pgTAP suite -- test/tap/*.sql (hand-written) and test/tap/generated/*.sql
# (written by test/golden/*.py), or the FILEs given -- against the server of
# PGHOST/PGPORT/PGUSER, where model_select and pgtap must be installed.  It
# runs in a fresh database (MS_TAP_DB, default ms_tap; dropped first if it
# exists) in which only `CREATE EXTENSION pgtap` has been run: the test
# files create model_select themselves.  `make installcheck` and
# scripts/run-tests.sh run it.  Needs psql and pg_prove on PATH.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1

db=${MS_TAP_DB:-ms_tap}
if [ $# -gt 0 ]; then
    files=("$@")
else
    shopt -s nullglob
    files=(test/tap/*.sql test/tap/generated/*.sql)
    shopt -u nullglob
fi
if [ ${#files[@]} -eq 0 ]; then
    echo "tap-tests: no test/tap/*.sql files" >&2
    exit 1
fi

if ! psql -X -q -v ON_ERROR_STOP=1 -d postgres \
        -c 'SET client_min_messages = warning' \
        -c "DROP DATABASE IF EXISTS \"$db\"" -c "CREATE DATABASE \"$db\"" ||
   ! psql -X -q -v ON_ERROR_STOP=1 -d "$db" -c 'CREATE EXTENSION pgtap'; then
    echo "tap-tests: could not create the pgTAP database $db" >&2
    exit 1
fi
exec pg_prove --failures -d "$db" "${files[@]}"
