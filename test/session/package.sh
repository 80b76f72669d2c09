#!/usr/bin/env bash
# The package: LICENSE is the PostgreSQL licence, META.json is valid and
# carries the control file's version, `make install` installs no header, and
# `make installcheck` against the running server runs pg_regress and then
# every pgTAP file (pg_prove is replaced by a stub that records its
# arguments: the suite itself runs elsewhere in `make test`).
#
# Needs PGHOST/PGPORT/PGUSER and the extension installed (PG_CONFIG names
# that installation; else pg_config on PATH).
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ms_package.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
PG_CONFIG=${PG_CONFIG:-pg_config}

passed=0 failed=0 n=0
check() {
    local desc=$1; shift
    n=$((n + 1))
    if "$@"; then echo "ok $n - $desc"; passed=$((passed + 1))
    else echo "not ok $n - $desc"; failed=$((failed + 1)); fi
}

control_version=$(sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" model_select.control)
meta_versions() {
    /usr/bin/python3 -c '
import json, sys
m = json.load(open("META.json"))
assert m["meta-spec"]["version"] == "1.0.0" and m["license"] == "postgresql"
print(m["version"], m["provides"]["model_select"]["version"])'
}
check "LICENSE is the PostgreSQL licence" grep -q '^PostgreSQL License$' LICENSE
check "META.json (spec 1.0.0) has the control file's version $control_version" \
    test "$(meta_versions)" = "$control_version $control_version"

installed=$(make -s -n install PG_CONFIG="$PG_CONFIG" 2>&1)
check "make install names files to install" grep -q 'model_select\.control' <<<"$installed"
check "make install installs no header" bash -c '! grep -q "\.h\b" <<<"$1"' _ "$installed"

# pg_prove stub: records the files it is given, passes.
mkdir -p "$WORK/bin"
cat >"$WORK/bin/pg_prove" <<STUB
#!/bin/sh
for a in "\$@"; do case "\$a" in *.sql) echo "\$a";; esac; done >"$WORK/proved"
STUB
chmod +x "$WORK/bin/pg_prove"
out=$(PATH="$WORK/bin:$PATH" make -s installcheck PG_CONFIG="$PG_CONFIG" 2>&1)
rc=$?
check "make installcheck succeeds against the running server" test "$rc" -eq 0 ||
    printf '%s\n' "$out" | tail -n 20
check "make installcheck ran pg_regress" grep -q 'tests passed' <<<"$out"
printf "%s\n" test/tap/*.sql test/tap/generated/*.sql >"$WORK/expected"
check "make installcheck gave pg_prove every pgTAP file" \
    diff "$WORK/expected" "$WORK/proved"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
