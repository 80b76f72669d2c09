#!/usr/bin/env bash
# ALTER EXTENSION model_select UPDATE from 0.1.0 keeps every selector, arm,
# decision and reward and re-derives the states: after the update, scores()
# equal those of a fresh install fed the same log (relative 1e-9).
#
# The 0.1.0 tables are filled with the rows a 0.1.0 database holds (written
# with triggers off: this library's reward trigger needs the 0.2.0 columns,
# so rewards must wait for ALTER EXTENSION UPDATE after a package upgrade).
# Needs PGHOST/PGPORT/PGUSER (see scripts/with-cluster.sh).
set -euo pipefail

OLD=model_select_upg_old
NEW=model_select_upg_new
cleanup() { dropdb --if-exists "$OLD" >/dev/null 2>&1 || true; dropdb --if-exists "$NEW" >/dev/null 2>&1 || true; }
trap cleanup EXIT
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }

passed=0 failed=0 n=0
check() {
    local desc=$1; shift
    n=$((n + 1))
    if "$@"; then echo "ok $n - $desc"; passed=$((passed + 1))
    else echo "not ok $n - $desc"; failed=$((failed + 1)); fi
}

cleanup
createdb "$OLD"
createdb "$NEW"

# The same log in both: 3 selectors (one per policy family), 300 rewards.
SELECTORS="
SELECT model_select.create_selector('u_pak', 3, ARRAY['a','b'], 'pak_ucb', 'rbf', '{\"window\": 40}');
SELECT model_select.create_selector('u_lin', 3, ARRAY['a','b'], 'lin_ucb', NULL, '{\"discount\": 0.97}');
SELECT model_select.create_selector('u_rff', 3, ARRAY['a','b'], 'rff_ucb', 'rbf', '{\"features\": 16}');"
LOG="SELECT s.name, CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END,
            ARRAY[sin(i), cos(i * 0.7), sin(i * 1.3)]::float8[], (1 + sin(i * 0.37)) / 2
       FROM generate_series(1, 100) i, model_select.selectors s ORDER BY i, s.selector_id"

q -d "$OLD" -c "CREATE EXTENSION model_select VERSION '0.1.0'" -c "$SELECTORS" >/dev/null
q -d "$OLD" -c "SET session_replication_role = replica" -c "
INSERT INTO model_select.rewards(selector, arm, context, reward, selector_id, arm_id)
SELECT l.*, s.selector_id, a.arm_id FROM ($LOG) l(sel, arm, context, reward)
  JOIN model_select.selectors s ON s.name = l.sel
  JOIN model_select.arms a ON a.selector_id = s.selector_id AND a.name = l.arm"
check "0.1.0 holds 300 rewards before the update" \
    test "$(q -d "$OLD" -c 'SELECT count(*) FROM model_select.rewards')" = 300
check "ALTER EXTENSION model_select UPDATE succeeds" \
    q -d "$OLD" -c 'ALTER EXTENSION model_select UPDATE'
check "the extension is at the default version" \
    test "$(q -d "$OLD" -c "SELECT extversion = (SELECT default_version FROM pg_available_extensions WHERE name = 'model_select') FROM pg_extension WHERE extname = 'model_select'")" = t
check "every reward kept, each arm's n from the log" \
    test "$(q -d "$OLD" -c "SELECT count(*) FILTER (WHERE st.n = (SELECT count(*) FROM model_select.rewards r WHERE r.arm_id = a.arm_id)) FROM model_select.arm_stats st JOIN model_select.arms a ON a.name = st.arm JOIN model_select.selectors s ON s.selector_id = a.selector_id AND s.name = st.selector")" = 6

q -d "$NEW" -c "CREATE EXTENSION model_select" -c "$SELECTORS" >/dev/null
q -d "$NEW" -c "INSERT INTO model_select.rewards(selector, arm, context, reward) $LOG"
SCORES="SELECT s.name, p.i, x.arm, x.n, x.mean, x.width, x.ucb
          FROM model_select.selectors s, generate_series(1, 5) p(i),
               LATERAL model_select.scores(s.name, ARRAY[p.i * 0.1, -0.3, p.i * 0.2]::float8[]) x
         ORDER BY 1, 2, 3"
q -d "$OLD" -c "$SCORES" > /tmp/ms_upg_old.$$
q -d "$NEW" -c "$SCORES" > /tmp/ms_upg_new.$$
close() {
    paste -d'|' /tmp/ms_upg_old.$$ /tmp/ms_upg_new.$$ | awk -F'|' '
        { for (k = 5; k <= 7; k++) { a = $k; b = $(k + 7); d = a - b; if (d < 0) d = -d;
              s = (a < 0 ? -a : a); if (s < 1) s = 1; if (d > 1e-9 * s) bad++ }
          if ($3 != $10 || $4 != $11) bad++; rows++ }
        END { exit !(rows == 30 && bad == 0) }'
}
check "scores after the update equal a fresh 0.2.0 install fed the same log (30 rows, 1e-9)" close
check "the updated selectors go on learning" \
    q -d "$OLD" -c "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('u_lin', 'a', ARRAY[1, 2, 3]::float8[], 0.5)"
rm -f /tmp/ms_upg_old.$$ /tmp/ms_upg_new.$$

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
