#!/usr/bin/env bash
# route() and reward inserts lock no arm row.  The logs used to name their
# arm through a foreign key, whose check key-share-locks the arm's row: with
# every transaction locking one of a handful of arm rows, concurrent ones
# made a MultiXact each (14,718 for 15,191 decisions at 16 clients).
#   - a transaction that routes and rewards leaves every arm row's xmax
#     other than its own xid (a row lock would set it);
#   - two transactions route and reward on a one-arm selector at once, both
#     open: the server's next MultiXact id does not move.
set -euo pipefail
DB=ms_session_log_arms
. "$(dirname "$0")/lib/common.bash"

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selectors failed"
SELECT model_select.create_selector('la_two', 2, ARRAY['a', 'b'], 'lin_ucb', NULL, '{}', 1);
SELECT model_select.create_selector('la_one', 2, ARRAY['a'], 'lin_ucb', NULL, '{}', 2);
SQL

ROUTE_REWARD="CREATE TEMP TABLE r AS SELECT * FROM model_select.route('la_two', '{1,2}');
INSERT INTO model_select.rewards(decision_id, reward) SELECT decision_id, 0.5 FROM r;
INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('la_two', 'a', '{2,1}', 1);"
locked=$(q -c "BEGIN" -c "$ROUTE_REWARD" \
           -c "SELECT count(*) FROM model_select.arms WHERE xmax = pg_current_xact_id()::xid" -c "ROLLBACK")
check "a transaction that routed and rewarded has locked no arm row (arms with its xid as xmax: ${locked:-none})" \
    test "$locked" = 0

next_multi="CHECKPOINT; SELECT next_multixact_id FROM pg_control_checkpoint()"
before=$(q -c "$next_multi" | tail -n 1)
session A
session B
for s in A B; do
    say "$s" "BEGIN; CREATE TEMP TABLE r AS SELECT * FROM model_select.route('la_one', '{1,2}');
              INSERT INTO model_select.rewards(decision_id, reward) SELECT decision_id, 0.5 FROM r;"
done
for s in A B; do say "$s" "COMMIT;"; done
close_sessions
after=$(q -c "$next_multi" | tail -n 1)
check "two open transactions routing and rewarding on the same arm made no MultiXact (next id $before, then $after)" \
    test "$before" = "$after"
check "both decisions and rewards are logged" \
    is_true "SELECT count(*) = 2 FROM model_select.rewards WHERE selector = 'la_one' AND decision_id IS NOT NULL"
finish
