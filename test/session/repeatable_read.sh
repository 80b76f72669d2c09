#!/usr/bin/env bash
# Issue 14, Must show (e): route + reward under REPEATABLE READ from 8
# sessions.  pgbench -c 8 -t 150, each transaction
#   BEGIN ISOLATION LEVEL REPEATABLE READ;
#   SELECT decision_id FROM model_select.route(...) \gset
#   INSERT INTO model_select.rewards(decision_id, reward) VALUES (:decision_id, ...);
#   COMMIT;
# on a selector created with all defaults and on a lin_ucb one (alternating).
# Asserts: every transaction commits -- pgbench reports no failed (40001 /
# 40P01) and no aborted client, no serialization/deadlock error in the server
# log when it is readable -- every decision has its reward, and the states
# equal their rebuild (1e-9), arm_stats.n the log.
#
# Needs PGHOST/PGPORT/PGUSER of a running cluster with model_select installed.
set -euo pipefail
DB=ms_session_rr
. "$(dirname "$0")/lib/common.bash"

CLIENTS=8
PER_CLIENT=150
TOTAL=$((CLIENTS * PER_CLIENT))
ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selectors failed"
SELECT model_select.create_selector('rr_default', 4, ARRAY['a','b','c']);
SELECT model_select.create_selector('rr_lin', 4, ARRAY['a','b','c'], 'lin_ucb');
SQL

cat >"$MS_WORK/rr.sql" <<'SQL'
\set k random(0, 1)
\set x random(1, 100000)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT decision_id FROM model_select.route((ARRAY['rr_default', 'rr_lin'])[1 + :k],
       ARRAY[sin(:x), cos(:x), sin(2 * :x), cos(3 * :x)]::float8[]) \gset
INSERT INTO model_select.rewards(decision_id, reward) VALUES (:decision_id, (1 + sin(:x)) / 2);
COMMIT;
SQL

log=${PGHOST:-}/server.log
log_size=0
[ -r "$log" ] && log_size=$(stat -c %s "$log")

set +e
pgbench -n -c "$CLIENTS" -j "$CLIENTS" -t "$PER_CLIENT" --failures-detailed \
    -f "$MS_WORK/rr.sql" "$DB" >"$MS_WORK/pgbench.out" 2>"$MS_WORK/pgbench.err"
rc=$?
set -e
grep -E '^(number of|latency average|tps)' "$MS_WORK/pgbench.out" | sed 's/^/#   /'
check "pgbench: all $CLIENTS clients finished (exit $rc)" \
    eval '[ "$rc" -eq 0 ] || { sort "$MS_WORK/pgbench.err" | uniq -c | sort -rn | head -n 5 | sed "s/^/#   /"; false; }'
check "pgbench: $TOTAL/$TOTAL transactions processed" \
    grep -q "number of transactions actually processed: $TOTAL/$TOTAL" "$MS_WORK/pgbench.out"
check "pgbench: no failed transaction (serialization 40001, deadlock 40P01)" \
    grep -q '^number of failed transactions: 0 ' "$MS_WORK/pgbench.out"
if [ -r "$log" ]; then
    tail -c +"$((log_size + 1))" "$log" >"$MS_WORK/server.log"
    no_conflicts() {
        local hits
        hits=$(grep -c -E -i "could not serialize|deadlock detected" "$MS_WORK/server.log" || true)
        [ "$hits" -eq 0 ] || { echo "#   $hits such errors, e.g.:"; grep -m 2 -E -i "could not serialize|deadlock detected" "$MS_WORK/server.log" | sed "s/^/#   /"; return 1; }
    }
    check "server log: no 40001/40P01 error" no_conflicts
else
    skip "server log: no 40001/40P01 error" "server log not readable"
fi
check "every logged decision has its reward" \
    is_true "SELECT count(*) = (SELECT count(*) FROM model_select.decisions)
               FROM model_select.rewards WHERE decision_id IS NOT NULL"
for s in rr_default rr_lin; do rebuild_checks "$s"; done
finish
