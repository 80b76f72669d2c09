#!/usr/bin/env bash
# Install the Debian 12 packages needed to build and test model_select, but
# only those that are missing.  Needs root when something is missing.
#
# Note: installing postgresql-15 makes Debian create (and try to start) a
# cluster "15/main" (and pgbouncer its service, stopped the same way).  Nothing here depends on it; if this script is what
# installed postgresql-15 and that cluster ends up running, it is stopped
# again so that no server we caused to start is left behind.
set -euo pipefail

PACKAGES=(
    postgresql-15
    postgresql-server-dev-15
    postgresql-15-pgtap
    libtap-parser-sourcehandler-pgtap-perl
    pkg-config
    python3-numpy
    # the application example (examples/route_loop.py, test/session/example.sh) and
    # the drivers' test (test/session/drivers.sh): psycopg 3 and psycopg2
    python3-psycopg
    python3-psycopg2
    # behind a pooler and across shards (test/session/pgbouncer.sh, plproxy.sh)
    pgbouncer
    postgresql-15-plproxy
    # toolchain (postgresql-server-dev-15 pulls in clang for bitcode, not gcc)
    gcc
    libc6-dev
    make
)

is_installed() {
    local status
    status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
    [ "$status" = "install ok installed" ]
}

missing=()
for p in "${PACKAGES[@]}"; do
    is_installed "$p" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "ensure-deps: all required packages are installed"
    exit 0
fi

echo "ensure-deps: missing packages: ${missing[*]}"

if [ "$(id -u)" -ne 0 ]; then
    echo "ensure-deps: not running as root; please install them with:" >&2
    echo "    sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    exit 1
fi

installing_server=0
installing_bouncer=0
for p in "${missing[@]}"; do
    [ "$p" = postgresql-15 ] && installing_server=1
    [ "$p" = pgbouncer ] && installing_bouncer=1
done

export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"

if [ "$installing_server" = 1 ] && command -v pg_lsclusters >/dev/null 2>&1; then
    # Stop any 15/* cluster that the package installation started.
    pg_lsclusters --no-header 2>/dev/null | while read -r ver name _port status _; do
        if [ "$ver" = 15 ] && [ "$status" = online ]; then
            echo "ensure-deps: stopping cluster $ver/$name started by the package installation"
            pg_ctlcluster "$ver" "$name" stop || true
        fi
    done
fi

if [ "$installing_bouncer" = 1 ] && command -v invoke-rc.d >/dev/null 2>&1; then
    # The tests start PgBouncers of their own; stop the package's service.
    invoke-rc.d pgbouncer stop >/dev/null 2>&1 || true
fi

still_missing=()
for p in "${missing[@]}"; do
    is_installed "$p" || still_missing+=("$p")
done
if [ ${#still_missing[@]} -ne 0 ]; then
    echo "ensure-deps: still not installed: ${still_missing[*]}" >&2
    exit 1
fi
echo "ensure-deps: done"
