#!/usr/bin/env bash
# Usage: MAKE=make PG_CONFIG=... scripts/ms-setup.sh LOG
#
# The set-up of `make test`, `make demo` and the benchmarks: install missing
# Debian packages (scripts/ensure-deps.sh), build, install.  Everything they
# print goes to LOG; on success one line says what was installed where, on
# failure LOG is printed.
#
# The install step writes into PostgreSQL's library and extension
# directories: as a non-root user it needs write access to both (see
# README.md, "make test as a non-root user").
set -uo pipefail

log=${1:?usage: $0 LOG}
MAKE=${MAKE:-make}
mkdir -p "$(dirname "$log")"
: >"$log"

step() {
    printf '\n==== %s\n' "$*" >>"$log"
    "$@" >>"$log" 2>&1
}

fail() {
    cat "$log" >&2
    echo "ms-setup: $1 failed (output above, also in $log)" >&2
    exit 1
}

step scripts/ensure-deps.sh || fail "installing the Debian packages"
step $MAKE PG_CONFIG="$PG_CONFIG" || fail "the build"

pkglibdir=$("$PG_CONFIG" --pkglibdir)
extdir=$("$PG_CONFIG" --sharedir)/extension
for d in "$pkglibdir" "$extdir"; do
    if [ ! -w "$d" ]; then
        echo "ms-setup: cannot write to $d as $(id -un): run as root, or give this user" \
             "write access to $d and $extdir (README.md, make test as a non-root user)," \
             "or set PG_CONFIG to a PostgreSQL installed where you can write" >&2
        exit 1
    fi
done
step $MAKE PG_CONFIG="$PG_CONFIG" install || fail "make install"

version=$(sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" model_select.control)
echo "ms-setup: packages present; model_select $version built and installed into" \
     "$("$PG_CONFIG" --version) ($pkglibdir); details in $log"
