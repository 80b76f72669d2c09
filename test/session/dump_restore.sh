#!/usr/bin/env bash
# Backup and restore: pg_dump keeps the reward log and the id sequences;
# arm_state is dumped empty and restoring the log re-learns it, so after
# pg_restore every score is the same as before and routing goes on.
#
# Needs PGHOST/PGPORT/PGUSER (see scripts/with-cluster.sh); uses two
# databases of its own, dropped at the end.
set -euo pipefail

SRC=model_select_dump_src
DST=model_select_dump_dst
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ms_dump.XXXXXX")
cleanup() {
    dropdb --if-exists "$SRC" >/dev/null 2>&1 || true
    dropdb --if-exists "$DST" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

q() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }
passed=0
failed=0
n=0
check() {  # check DESCRIPTION CMD...
    local desc=$1; shift
    n=$((n + 1))
    if "$@"; then echo "ok $n - $desc"; passed=$((passed + 1))
    else echo "not ok $n - $desc"; failed=$((failed + 1)); fi
}

SCORES="SELECT arm, n, mean, width, ucb FROM model_select.scores('d', ARRAY[0.5, -1, 2]::float8[]) ORDER BY arm"

createdb "$SRC"
q -d "$SRC" <<'SQL'
CREATE EXTENSION model_select;
SELECT model_select.create_selector('d', 3, ARRAY['a', 'b', 'c'], 'pak_ucb');
-- rewards by decision and by name
SELECT count(*) FROM (
    SELECT (model_select.route('d', ARRAY[i, 1, -i]::float8[])).decision_id FROM generate_series(1, 6) i) s;
INSERT INTO model_select.rewards(decision_id, reward)
SELECT decision_id, 0.1 * decision_id FROM model_select.decisions;
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 'd', 'b', ARRAY[1, i, 2]::float8[], 0.9 FROM generate_series(1, 4) i;
SQL
q -d "$SRC" -c "$SCORES" > "$WORK/before"
pg_dump -Fc -f "$WORK/dump" "$SRC"
createdb "$DST"
check "pg_restore succeeds" pg_restore -d "$DST" "$WORK/dump"
q -d "$DST" -c "$SCORES" > "$WORK/after"
check "every score after the restore equals the score before" diff "$WORK/before" "$WORK/after"
check "the reward log is complete (10 rewards)" \
    test "$(q -d "$DST" -c 'SELECT count(*) FROM model_select.rewards')" = 10
check "arm_stats counts equal the log" \
    test "$(q -d "$DST" -c 'SELECT sum(n) FROM model_select.arm_stats')" = 10
q -d "$DST" -c "SELECT model_select.checkpoint('d')" >/dev/null
check "after checkpoint() the restored arm_state holds the whole log" \
    test "$(q -d "$DST" -c 'SELECT sum(n) FROM model_select.arm_state')" = 10
check "routing goes on after the restore (sequences restored)" \
    q -d "$DST" -c "SELECT * FROM model_select.route('d', ARRAY[1, 2, 3]::float8[])"
check "a reward for a restored decision is accepted once more decisions exist" \
    q -d "$DST" -c "INSERT INTO model_select.rewards(decision_id, reward) SELECT max(decision_id), 0.4 FROM model_select.decisions"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
