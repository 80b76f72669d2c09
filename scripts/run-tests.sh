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
#
# Finding flaky tests before CI does (docs/hacking.md#how-a-test-waits):
#   MS_REPEAT=N        run the session tests N times over (default 1); a
#                      failure is reported with its run number, and its
#                      output kept in log/session/<name>.run<K>.log; run K
#                      sets MS_RUN=K, the default seed of the seeded random
#                      tests (*_random.sh), so that the runs try seeds 1..N
#   MS_SUITES=LIST     the suites to run, of "regress tap session" (default all)
#   MS_SESSION_TESTS=LIST  the session tests to run, by name (default all),
#                      e.g. MS_SESSION_TESTS="learner_burst monitoring"
# e.g. `make test MS_SUITES=session MS_REPEAT=5`.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1

MAKE=${MAKE:-make}
LOG_DIR=log
failed=()
passed=0            # suites and session test runs that passed (the closing line)
diagnostics=()      # one shell command per failure, run by the summary

section() { printf '\n==== %s ====\n' "$*"; }
mkdir -p "$LOG_DIR/session"

# -- 1. pg_regress -----------------------------------------------------------
SUITES=${MS_SUITES:-regress tap session}
REPEAT=${MS_REPEAT:-1}
runs() { [[ " $SUITES " == *" $1 "* ]]; }

if runs regress; then
section "pg_regress (make installcheck-regress)"
rm -f regression.diffs regression.out
if $MAKE --no-print-directory ${PG_CONFIG:+PG_CONFIG="$PG_CONFIG"} installcheck-regress; then
    passed=$((passed + 1))
else
    failed+=("pg_regress")
    diagnostics+=("cat regression.diffs")
fi
fi

# -- 2. pgTAP ----------------------------------------------------------------
if runs tap; then
section "pgTAP (scripts/tap-tests.sh)"
if scripts/tap-tests.sh 2>&1 | tee "$LOG_DIR/pgtap.log"; then
    passed=$((passed + 1))
else
    failed+=("pgTAP")
    # pg_prove --failures: a file's "ok" line, or its failed tests' diagnostics
    diagnostics+=("grep -v -e ' ok\$' -e 'NOTICE:  extension \"pgtap\" already exists' $LOG_DIR/pgtap.log")
fi
fi

# -- 3. session tests --------------------------------------------------------
if runs session; then
section "session tests (test/session/*.sh)"
shopt -s nullglob
sh_files=(test/session/*.sh)
shopt -u nullglob
if [ -n "${MS_SESSION_TESTS:-}" ]; then
    sh_files=()
    for t in $MS_SESSION_TESTS; do sh_files+=("test/session/${t%.sh}.sh"); done
fi
[ ${#sh_files[@]} -eq 0 ] && echo "no test/session/*.sh files"
for run in $(seq 1 "$REPEAT"); do
    [ "$REPEAT" -gt 1 ] && section "session tests, run $run of $REPEAT"
    for f in "${sh_files[@]}"; do
        name=$(basename "$f" .sh)
        out=$LOG_DIR/session/$name.log
        [ "$REPEAT" -gt 1 ] && out=$LOG_DIR/session/$name.run$run.log
        label=$f
        [ "$REPEAT" -gt 1 ] && label="$f (run $run of $REPEAT)"
        start=$SECONDS
        if MS_RUN=$run bash "$f" >"$out" 2>&1; then
            passed=$((passed + 1))
            echo "$label: PASS ($((SECONDS - start)) s)"
            [ "$REPEAT" -gt 1 ] && rm -f "$out"
        else
            rc=$?
            echo "$label: FAIL (exit $rc, $((SECONDS - start)) s); its output:"
            cat "$out"
            failed+=("$label")
            diagnostics+=("tail -n 40 $out")
        fi
    done
done
fi

# -- summary -----------------------------------------------------------------
section "summary"
if [ ${#failed[@]} -eq 0 ]; then
    echo "all test suites passed"
    echo "$passed passed, 0 failed"
    exit 0
fi
for i in "${!failed[@]}"; do
    section "FAILED: ${failed[$i]}"
    bash -c "${diagnostics[$i]}"
done
echo
echo "FAILED: ${failed[*]}"
echo "$passed passed, ${#failed[@]} failed"
exit 1
