#!/usr/bin/env bash
# Run every test suite against the server described by PGHOST/PGPORT/PGUSER/
# PGDATABASE (normally started by scripts/with-cluster.sh; see `make test`):
#
#   1. pg_regress: `make installcheck-regress` (sql/<name>.sql vs
#                  expected/<name>.out)
#   2. pgTAP:      scripts/tap-tests.sh (pg_prove over test/tap/*.sql and
#                  test/tap/generated/*.sql in a fresh database "ms_tap")
#   3. session:    every test/session/*.sh, run with bash (tests that need
#                  several sessions, databases or server-side tools);
#                  non-zero exit = failure.  Each one's output goes to
#                  log/session/<name>.log; only a failing one's is shown.
#
# All suites run even if an earlier one fails; exits non-zero if any failed.
# The summary at the end repeats the failing tests' own diagnostics (the
# server's log holds errors that other tests cause on purpose, so it is not
# shown: scripts/with-cluster.sh keeps it in log/server.log on failure).
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1

MAKE=${MAKE:-make}
LOG_DIR=log
failed=()
diagnostics=()      # one shell command per failure, run by the summary

section() { printf '\n==== %s ====\n' "$*"; }
mkdir -p "$LOG_DIR/session"

# -- 1. pg_regress -----------------------------------------------------------
section "pg_regress (make installcheck-regress)"
rm -f regression.diffs regression.out
if ! $MAKE --no-print-directory ${PG_CONFIG:+PG_CONFIG="$PG_CONFIG"} installcheck-regress; then
    failed+=("pg_regress")
    diagnostics+=("cat regression.diffs")
fi

# -- 2. pgTAP ----------------------------------------------------------------
section "pgTAP (scripts/tap-tests.sh)"
if ! scripts/tap-tests.sh 2>&1 | tee "$LOG_DIR/pgtap.log"; then
    failed+=("pgTAP")
    # pg_prove --failures: a file's "ok" line, or its failed tests' diagnostics
    diagnostics+=("grep -v -e ' ok\$' -e 'NOTICE:  extension \"pgtap\" already exists' $LOG_DIR/pgtap.log")
fi

# -- 3. session tests --------------------------------------------------------
section "session tests (test/session/*.sh)"
shopt -s nullglob
sh_files=(test/session/*.sh)
shopt -u nullglob
[ ${#sh_files[@]} -eq 0 ] && echo "no test/session/*.sh files"
for f in "${sh_files[@]}"; do
    out=$LOG_DIR/session/$(basename "$f" .sh).log
    start=$SECONDS
    if bash "$f" >"$out" 2>&1; then
        echo "$f: PASS ($((SECONDS - start)) s)"
    else
        rc=$?
        echo "$f: FAIL (exit $rc, $((SECONDS - start)) s); its output:"
        cat "$out"
        failed+=("$f")
        diagnostics+=("tail -n 40 $out")
    fi
done

# -- summary -----------------------------------------------------------------
section "summary"
if [ ${#failed[@]} -eq 0 ]; then
    echo "all test suites passed"
    exit 0
fi
for i in "${!failed[@]}"; do
    section "FAILED: ${failed[$i]}"
    bash -c "${diagnostics[$i]}"
done
echo
echo "FAILED: ${failed[*]}"
exit 1
