#!/usr/bin/env bash
# Contexts from Python drivers: test/session/lib/drivers.py with Debian's
# psycopg2 and psycopg 3 (lists of floats and ints, a numpy float32 array
# through examples/numpy_adapt.py, a '{...}' literal; route() and a reward).
set -euo pipefail
DB=ms_session_drivers
. "$(dirname "$0")/lib/common.bash"
PY=/usr/bin/python3

ms_setup || bail "set-up failed"
for m in psycopg psycopg2 numpy; do
    "$PY" -c "import $m" 2>/dev/null || bail "python3 module $m is missing (scripts/ensure-deps.sh installs it)"
done
PGDATABASE=$DB "$PY" "$(dirname "$0")/lib/drivers.py"
