#!/usr/bin/env bash
# make lint sees calls, not only includes: on a scratch copy of the tree, a
# call from model/ into policy/ that no #include betrays (model/context.c
# already includes model/registry.h, which declares policy/registry.c's
# policy_features()) makes `make lint` fail, naming the call and the cycle
# between the two folders.  `make lint` builds the objects first, so the
# edited file is recompiled before the check reads its symbols.
#
# Needs the built tree (`make`; the copy keeps the objects' times, so only
# the edited file is rebuilt), nm and cppcheck; no database (the helpers'
# clean-up drops one that is never created).  PG_CONFIG names the
# PostgreSQL to build against (else pg_config on PATH).
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 1
DB=model_select_lint_calls_$$
source test/session/lib/common.bash
WORK=$MS_WORK
PG_CONFIG=${PG_CONFIG:-pg_config}

cp -a Makefile model_select.control src scripts sql "$WORK"/
cp -a model_select.so "$WORK"/ 2>/dev/null
lint() { make -s -C "$WORK" lint PG_CONFIG="$PG_CONFIG" >"$WORK/lint.out" 2>&1; }

lint
check "make lint passes on the copy as it is" test $? -eq 0 || cat "$WORK/lint.out"

cat >>"$WORK/src/model/context.c" <<'C'

extern void lint_calls_probe(const SelectorConfig *cfg, const double *x, double *z);

/* An upward call from the domain into the policies' layer. */
void
lint_calls_probe(const SelectorConfig *cfg, const double *x, double *z)
{
	policy_features(cfg, x, z);
}
C
lint
rc=$?
check "make lint fails on a call from model/ into policy/" test $rc -ne 0
check "it names the call" \
    grep -qF "model/context calls policy/registry's policy_features: 'policy' is not below 'model'" \
    "$WORK/lint.out"
check "it names the cycle between the folders" \
    grep -qF "call cycle between folders: model <-> policy" "$WORK/lint.out"
check "the include check alone does not see it" \
    bash -c '! grep -q "includes\|include cycle" "$1"' _ "$WORK/lint.out"
[ "$failed" -eq 0 ] || cat "$WORK/lint.out"
finish
