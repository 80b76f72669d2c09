#!/usr/bin/env bash
# Issue 14, Must show (b): an out-of-order commit.  Session 1 BEGINs and
# inserts rewards (the lower reward_ids, and the lower transaction id);
# session 2 inserts rewards for the same arm and commits; session 1 commits
# last.  Selectors where the order matters: a `discount` 0.9 lin_ucb, a
# `window` 20 pak_ucb, and on the selector's clock (where a row's tick is its
# position among every arm's rows) a `window` 8 lin_ucb and a `discount`
# 0.8 greedy, whose arm b ages while only arm a is rewarded, and on the time
# clock (ticks from created_at, which the twins copy) a `window` 1 hour lin_ucb.
#
# Asserts: session 2 commits while session 1 is still open (its INSERT does
# not wait for session 1); a reader's scores while session 1 is open, before
# and after session 2's commit, equal a twin selector fed the then-committed
# rewards single-threaded in log order; after session 1's commit the state
# equals rebuild_state's (1e-9), and a twin fed the whole log in log order
# (here reward_id order = canonical (tx, seq) order: session 1 has both
# the lower reward_ids and the lower transaction id).
#
# Needs PGHOST/PGPORT/PGUSER of a running cluster with model_select installed.
set -euo pipefail
DB=ms_session_ooo
. "$(dirname "$0")/lib/common.bash"

SELS="ooo_lin ooo_pak ooo_clkw ooo_clkd ooo_time"
ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selectors failed"
SELECT model_select.create_selector('ooo_lin', 4, ARRAY['a','b'], 'lin_ucb', NULL, '{"discount": 0.9}');
SELECT model_select.create_selector('ooo_pak', 4, ARRAY['a','b'], 'pak_ucb', NULL, '{"window": 20}');
SELECT model_select.create_selector('ooo_clkw', 4, ARRAY['a','b'], 'lin_ucb', NULL, '{"window": 8, "clock": "selector"}');
SELECT model_select.create_selector('ooo_clkd', 4, ARRAY['a','b'], 'greedy', NULL, '{"discount": 0.8, "clock": "selector"}');
SELECT model_select.create_selector('ooo_time', 4, ARRAY['a','b'], 'lin_ucb', NULL, '{"window": "1 hour", "clock": "time"}');
SELECT setseed(0.14);
-- 30 rewards per selector before the race, one statement each
DO $$ BEGIN
  FOR i IN 1..30 LOOP
    INSERT INTO model_select.rewards(selector, arm, context, reward)
    SELECT s, (ARRAY['a','b'])[1 + i % 2], ms_rand(4), random() FROM unnest(ARRAY['ooo_lin','ooo_pak','ooo_clkw','ooo_clkd','ooo_time']) s;
  END LOOP; END $$;
SQL

# twin_take SEL LABEL FILTER: a fresh selector with SEL's policy and settings,
# fed the rows of SEL's log satisfying FILTER (on r.reward_id) in one
# statement in reward_id order, with their created_at; its capture is stored
# as SEL's under LABEL.
twin=0
twin_take() {
    local sel=$1 label=$2 filter=$3
    twin=$((twin + 1))
    q >/dev/null <<SQL
SELECT model_select.create_selector('twin_$twin', s.dim, ARRAY['a','b'], s.policy, s.kernel, s.settings, s.seed)
  FROM model_select.selectors s WHERE s.name = '$sel';
INSERT INTO model_select.rewards(selector, arm, context, reward, cost, created_at)
SELECT 'twin_$twin', a.name, r.context, r.reward, r.cost, r.created_at
  FROM model_select.rewards r JOIN model_select.arms a ON a.arm_id = r.arm_id
  JOIN model_select.selectors s ON s.selector_id = r.selector_id
 WHERE s.name = '$sel' AND ($filter) ORDER BY r.reward_id;
SELECT ms_take('$label', 'twin_$twin');
UPDATE ms_snap SET selector = '$sel' WHERE label = '$label' AND selector = 'twin_$twin';
UPDATE ms_nsnap SET selector = '$sel' WHERE label = '$label' AND selector = 'twin_$twin';
SQL
}

# -- session 1: BEGIN, insert, stay open ---------------------------------------
coproc S1 { psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" 2>&1; }
MS_BG_PIDS+=("$S1_PID")
s1_in=${S1[1]}
s1_out=${S1[0]}
s1_read_until() {  # read session 1's output up to a marker line
    local line
    while IFS= read -r -t 60 line <&"$s1_out"; do
        [ "$line" = "$1" ] && return 0
        printf '%s\n' "$line" >>"$MS_WORK/s1.out"
    done
    return 1
}
cat >&"$s1_in" <<'SQL'
BEGIN;
SELECT setseed(0.5);
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT s, 'a', ms_rand(4), 0.9 FROM unnest(ARRAY['ooo_lin','ooo_pak','ooo_clkw','ooo_clkd','ooo_time']) s, generate_series(1, 3)
RETURNING reward_id;
SELECT 'S1_INSERTED';
SQL
s1_read_until S1_INSERTED || bail "session 1 did not insert: $(cat "$MS_WORK/s1.out")"
s1_ids=$(grep -E '^[0-9]+$' "$MS_WORK/s1.out" | paste -sd, -)
echo "# session 1 inserted reward_ids $s1_ids (not committed)"

for s in $SELS; do q -c "SELECT ms_take('pre', '$s')" >/dev/null; done

# -- session 2: insert and commit while session 1 is open ----------------------
psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" >"$MS_WORK/s2.out" 2>&1 <<'SQL' &
SELECT setseed(0.7);
BEGIN;
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT s, 'a', ms_rand(4), 0.1 FROM unnest(ARRAY['ooo_lin','ooo_pak','ooo_clkw','ooo_clkd','ooo_time']) s, generate_series(1, 3)
RETURNING reward_id;
COMMIT;
SQL
s2_pid=$!
MS_BG_PIDS+=("$s2_pid")
s2_done=0
for _ in $(seq 1 1200); do   # up to 120 s
    if ! kill -0 "$s2_pid" 2>/dev/null; then s2_done=1; break; fi
    sleep 0.1
done
if [ "$s2_done" = 1 ]; then
    wait "$s2_pid" && s2_rc=0 || s2_rc=$?
    for s in $SELS; do q -c "SELECT ms_take('mid', '$s')" >/dev/null; done
else
    echo "# session 2 still waiting after 120 s:"
    q -c "SELECT wait_event_type || '/' || wait_event || ': ' || left(query, 60)
            FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = current_database()
             AND wait_event_type = 'Lock'" | sed 's/^/#   /'
fi
check "session 2 inserts and commits while session 1 is open (it does not wait for it)" \
    eval '[ "$s2_done" = 1 ] && [ "$s2_rc" = 0 ]'

# -- session 1 commits last ------------------------------------------------------
printf 'COMMIT;\nSELECT %s;\n' "'S1_COMMITTED'" >&"$s1_in"
s1_read_until S1_COMMITTED || bail "session 1 did not commit: $(cat "$MS_WORK/s1.out")"
printf '\\q\n' >&"$s1_in"
if [ "$s2_done" = 0 ]; then
    wait "$s2_pid" && s2_rc=0 || s2_rc=$?
    echo "# session 2 finished after session 1's commit (exit $s2_rc)"
fi
s2_ids=$(grep -E '^[0-9]+$' "$MS_WORK/s2.out" | paste -sd, -)
echo "# session 2 inserted reward_ids $s2_ids"

check "session 1's reward_ids are all lower than session 2's" \
    is_true "SELECT max(a) < min(b) FROM unnest('{$s1_ids}'::bigint[]) a, unnest('{${s2_ids:-0}}'::bigint[]) b"
check "both sessions' rewards are in the log" \
    is_true "SELECT count(*) = 30 FROM model_select.rewards WHERE reward_id IN ($s1_ids${s2_ids:+,$s2_ids})"

for s in $SELS; do
    twin_take "$s" twin_pre "r.reward_id NOT IN ($s1_ids${s2_ids:+,$s2_ids})"
    check "$s: a reader while session 1 is open sees the committed rewards only" \
        no_rows "SELECT * FROM ms_diff('pre', 'twin_pre', '$s')"
    if [ "$s2_done" = 1 ]; then
        twin_take "$s" twin_mid "r.reward_id NOT IN ($s1_ids)"
        check "$s: a reader after session 2's commit sees its rewards, folded as in the log (1e-9)" \
            no_rows "SELECT * FROM ms_diff('mid', 'twin_mid', '$s')"
    else
        skip "$s: a reader after session 2's commit sees its rewards" "session 2 could not commit first"
    fi
    rebuild_checks "$s"
    twin_take "$s" twin_all "true"
    check "$s: the state equals a twin fed the whole log in order (1e-9)" \
        no_rows "SELECT * FROM ms_diff('live', 'twin_all', '$s')"
done
finish
