#!/usr/bin/env bash
# Issue 11, "no crash from any bytes": the superuser overwrites the stored
# states of 66 selectors (pak_ucb, lin_ucb, bkb, greedy) with damaged bytes
# (the 20-byte header with n = 1999 and no body of the issue, bad magic,
# wrong policy/dimension/count/variant, truncated, padded, empty, garbage,
# bkb dictionaries out of range), then ONE session runs every reader on each:
# select_model, scores, route, checkpoint() and two reward INSERTs, the
# second of which checkpoints the arm (checkpoint_threshold 1: the crashing
# path of the issue, "the next reward INSERT kills the backend").  Every call must fail with XX001 (data_corrupted) and none with
# XX000; the session must survive all of them (same backend PID at the end),
# and so must an observer session opened before (a crash would have restarted
# every backend).  An INSERT either only logs its row or, when it makes the
# arm due, checkpoints it and fails: every INSERT that did not write must
# have failed with XX001, and for pak_ucb and bkb (due at one pending reward)
# the first INSERT must be one of those.  Then rebuild_state() repairs each
# selector from its log.
#
# Needs PGHOST/PGPORT/PGUSER (a superuser) of a running cluster with
# model_select installed.
set -euo pipefail
DB=ms_session_hostile
. "$(dirname "$0")/lib/common.bash"

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "fixtures failed"
CREATE TABLE damage (kind text, expr text, policies text[]);
INSERT INTO damage VALUES
  ('20-byte header with n = 1999', $$substring(state from 1 for 12) || '\xcf070000'::bytea || substring(state from 17 for 4)$$, NULL),
  ('bad magic', $$overlay(state placing '\x00000000'::bytea from 1)$$, NULL),
  ('format 9', $$overlay(state placing '\x0900'::bytea from 5)$$, NULL),
  ('another policy tag', $$overlay(state placing '\x0300'::bytea from 7)$$, NULL),
  ('unknown policy tag', $$overlay(state placing '\xffff'::bytea from 7)$$, NULL),
  ('dimension 259', $$overlay(state placing '\x03010000'::bytea from 9)$$, NULL),
  ('n = -1', $$overlay(state placing '\xffffffff'::bytea from 13)$$, NULL),
  ('n = 1999', $$overlay(state placing '\xcf070000'::bytea from 13)$$, '{pak_ucb,bkb}'),
  ('n = 2^31 - 1', $$overlay(state placing '\xffffff7f'::bytea from 13)$$, '{pak_ucb,bkb}'),
  ('forgetting variant 2', $$overlay(state placing '\x02000000'::bytea from 17)$$, NULL),
  ('body 8 bytes short', $$substring(state from 1 for octet_length(state) - 8)$$, NULL),
  ('body 8 bytes long', $$state || '\x0000000000000000'::bytea$$, NULL),
  ('partial float8', $$state || '\x00'::bytea$$, NULL),
  ('empty', $$''::bytea$$, NULL),
  ('garbage', $$decode(repeat('deadbeef', 25), 'hex')$$, NULL),
  ('bkb: m = 1e9', $$overlay(state placing '\x0000000065cdcd41'::bytea from 21)$$, '{bkb}'),
  ('bkb: m = NaN', $$overlay(state placing '\x000000000000f87f'::bytea from 21)$$, '{bkb}'),
  ('bkb: dictionary index 1e9', $$overlay(state placing '\x0000000065cdcd41'::bytea from 21 + 8 * (1 + 4 * 4))$$, '{bkb}');
CREATE TABLE damaged AS
SELECT format('d_%s_%s', p, row_number() OVER (PARTITION BY p ORDER BY d.kind)) AS sel, p AS policy, d.kind, d.expr
  FROM unnest(ARRAY['pak_ucb', 'lin_ucb', 'bkb', 'greedy']) p, damage d
 WHERE d.policies IS NULL OR p = ANY (d.policies);
SELECT count(model_select.create_selector(sel, 3, ARRAY['a'], policy)) FROM damaged;
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT sel, 'a', ARRAY[i, 1, -i]::float8[], (i % 3) / 2.0 FROM damaged, generate_series(1, 4) i;
SELECT count(model_select.checkpoint(sel)) FROM damaged;
DO $$
DECLARE
  d record;
BEGIN
  FOR d IN SELECT * FROM damaged LOOP
    EXECUTE format('UPDATE model_select.arm_state st SET state = %s FROM model_select.selectors s '
                   'WHERE s.selector_id = st.selector_id AND s.name = %L', d.expr, d.sel);
  END LOOP;
END $$;
SQL
ndamaged=$(q -c "SELECT count(*) FROM damaged")
check "fixtures: $ndamaged selectors with damaged states" eval '[ "$ndamaged" -eq 59 ]'

# the observer: a session that a crash of any backend would end
psql -X -q -d "$DB" -c "SELECT pg_sleep(300)" >/dev/null 2>&1 &
MS_BG_PIDS+=($!)
observer=
for _ in $(seq 1 1200); do
    observer=$(q -c "SELECT pid FROM pg_stat_activity WHERE datname = current_database()
                      AND query LIKE 'SELECT pg_sleep(300)%' AND pid <> pg_backend_pid()")
    [ -n "$observer" ] && break
    sleep 0.1
done
check "an observer session is running" eval '[ -n "$observer" ]'

# Every reader, on every damaged selector, in one session.
cat >"$MS_WORK/hostile.sql" <<'SQL'
SELECT pg_backend_pid() AS pid0 \gset
SET model_select.checkpoint_threshold = 1;
SELECT format($$SELECT model_select.select_model(%L, ARRAY[1, 0, 0]::float8[])$$, sel),
       format($$SELECT * FROM model_select.scores(%L, ARRAY[1, 0, 0]::real[])$$, sel),
       format($$SELECT * FROM model_select.route(%L, ARRAY[1, 0, 0]::float8[])$$, sel),
       format($$SELECT model_select.checkpoint(%L)$$, sel),
       format($$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES (%L, 'a', ARRAY[0, 1, 0]::float8[], 0.5)$$, sel),
       format($$INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES (%L, 'a', ARRAY[0, 0, 1]::float8[], 1)$$, sel)
  FROM damaged ORDER BY sel \gexec
SELECT 'same backend: ' || (pg_backend_pid() = :pid0);
SQL
rc=0
psql -X -q -A -t -v ON_ERROR_STOP=0 -v VERBOSITY=sqlstate -d "$DB" -f "$MS_WORK/hostile.sql" \
    >"$MS_WORK/out" 2>"$MS_WORK/err" || rc=$?
n_xx001=$(grep -c 'ERROR:  XX001' "$MS_WORK/err" || true)
inserted=$(q -c "SELECT count(*) - 4 * $ndamaged FROM model_select.rewards")
refused=$((2 * ndamaged - inserted))
calls=$((4 * ndamaged + refused))
keeps_rows=$(q -c "SELECT count(*) FROM damaged WHERE policy IN ('pak_ucb', 'bkb')")
check "the hostile session ran to its end (psql exit 0, got $rc)" eval '[ "$rc" -eq 0 ]'
check "the session's backend PID is unchanged" grep -qx 'same backend: true' "$MS_WORK/out"
check "all $((4 * ndamaged)) reads and the $refused INSERTs that wrote nothing fail with XX001 (got $n_xx001)" \
    eval '[ "$n_xx001" -eq "$calls" ]'
check "the INSERT path reads the damaged state: at least the $keeps_rows pak_ucb/bkb selectors refuse an INSERT (got $refused)" \
    eval '[ "$refused" -ge "$keeps_rows" ] && [ "$keeps_rows" -gt 0 ]'
check "no call fails with another SQLSTATE (XX000 included)" \
    eval '! grep -v "ERROR:  XX001" "$MS_WORK/err" | grep -q .'
check "the observer session survived (no backend crashed)" \
    is_true "SELECT count(*) = 1 FROM pg_stat_activity WHERE pid = $observer"
check "nothing else was written: no decision, and the fixtures' 4 rewards per selector plus at most 2" \
    is_true "SELECT (SELECT count(*) FROM model_select.decisions) = 0
                AND (SELECT bool_and(n BETWEEN 4 AND 6) FROM (SELECT count(*) AS n FROM model_select.rewards
                                                               GROUP BY selector_id) c)"

# rebuild_state() is the repair: it ignores the stored bytes.
check "rebuild_state() repairs every damaged selector" \
    is_true "SELECT bool_and(model_select.rebuild_state(sel) = (SELECT count(*) FROM model_select.rewards r
                                                                  JOIN model_select.selectors s USING (selector_id)
                                                                 WHERE s.name = sel)) FROM damaged"
check "after the repair every selector routes and checkpoints again" \
    is_true "SELECT bool_and(model_select.select_model(sel, ARRAY[1, 0, 0]::float8[]) = 'a'
                             AND model_select.checkpoint(sel) >= 0) FROM damaged"
finish
