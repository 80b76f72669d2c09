#!/usr/bin/env bash
# A reward's decision stays while the reward does (no foreign key keeps it:
# src/learning/decision_ref.c), forced step by step with sessions kept open:
#
# 1. A reward insert, not committed yet, and a DELETE of its decision: the
#    delete waits for the reward's transaction (its lock FOR KEY SHARE on the
#    decision), then is refused with 23503; decision and reward both stay.
# 2. A DELETE of a decision, not committed yet, and a reward insert for it:
#    the insert waits; the delete commits and the reward is refused as for a
#    missing decision (42704), nothing written; had the delete rolled back,
#    the reward goes in.
# 3. A REPEATABLE READ deleter whose snapshot predates the reward's commit:
#    refused with 23503 all the same (the check reads the latest snapshot).
# 4. Retention's expiry (decision_ttl) while a reward for an expired decision
#    is in flight: the decision is skipped, not deleted; once the reward has
#    committed it stays (it has a reward).
# 5. A plain DELETE of a rewarded decision: 23503; retention deletes a
#    decision with its absorbed reward, and drop_selector() both (no error).
#
# Needs PGHOST/PGPORT/PGUSER of a running cluster with model_select installed.
set -euo pipefail
DB=ms_session_decision_reward_race
. "$(dirname "$0")/lib/common.bash"

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selector failed"
SELECT model_select.create_selector('dr', 2, ARRAY['a','b'], 'lin_ucb');
CREATE TABLE ds AS SELECT k, (model_select.route('dr', ARRAY[1, k]::float8[])).decision_id AS id
  FROM generate_series(1, 8) k;
SQL
D() { q -c "SELECT id FROM ds WHERE k = $1"; }
REWARD="INSERT INTO model_select.rewards(decision_id, reward) VALUES"
outputs() { sed 's/^/#   /' "$MS_WORK"/*.out; }

# -- 1. reward in flight, then a DELETE of its decision ------------------
D1=$(D 1)
session rewarder
session deleter
say rewarder '\set VERBOSITY sqlstate'
say deleter '\set VERBOSITY sqlstate'
say rewarder "BEGIN; $REWARD ($D1, 1);"
say_async deleter "DELETE FROM model_select.decisions WHERE decision_id = $D1;"
backend_waits Lock 'DELETE FROM model_select.decisions%'
say rewarder "COMMIT;"
close_sessions
check "a DELETE of a decision whose reward is in flight waits, then fails with 23503" \
    eval "grep -q 'ERROR:  23503' '$MS_WORK/deleter.out' || { outputs; false; }"
check "... and the decision and its reward both stay" \
    is_true "SELECT EXISTS (SELECT FROM model_select.decisions WHERE decision_id = $D1)
                AND EXISTS (SELECT FROM model_select.rewards WHERE decision_id = $D1)"

# -- 2. DELETE in flight, then a reward for the decision ------------------
D2=$(D 2)
D3=$(D 3)
session rewarder
session deleter
say rewarder '\set VERBOSITY sqlstate'
say deleter "BEGIN; DELETE FROM model_select.decisions WHERE decision_id IN ($D2, $D3);"
say_async rewarder "$REWARD ($D2, 1);"
backend_waits Lock 'INSERT INTO model_select.rewards%'
say deleter "COMMIT;"
said rewarder
close_sessions
check "a reward for a decision deleted meanwhile waits, then fails with 42704 (a missing decision)" \
    eval "grep -q 'ERROR:  42704' '$MS_WORK/rewarder.out' || { outputs; false; }"
check "... and writes nothing" \
    is_true "SELECT NOT EXISTS (SELECT FROM model_select.rewards WHERE decision_id IN ($D2, $D3))
                AND NOT EXISTS (SELECT FROM model_select.decisions WHERE decision_id IN ($D2, $D3))"
D4=$(D 4)
session rewarder
session deleter
say deleter "BEGIN; DELETE FROM model_select.decisions WHERE decision_id = $D4;"
say_async rewarder "$REWARD ($D4, 1);"
backend_waits Lock 'INSERT INTO model_select.rewards%'
say deleter "ROLLBACK;"
said rewarder
close_sessions
check "... had the delete rolled back, the reward goes in" \
    is_true "SELECT EXISTS (SELECT FROM model_select.rewards WHERE decision_id = $D4)"

# -- 3. a REPEATABLE READ deleter with an older snapshot ------------------
D5=$(D 5)
session deleter
say deleter '\set VERBOSITY sqlstate'
say deleter "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM model_select.rewards;"
q -c "$REWARD ($D5, 1)"
say deleter "DELETE FROM model_select.decisions WHERE decision_id = $D5; ROLLBACK;"
close_sessions
check "a REPEATABLE READ delete of a decision rewarded after its snapshot fails with 23503" \
    eval "grep -q 'ERROR:  23503' '$MS_WORK/deleter.out' || { outputs; false; }"
check "... and the decision stays" \
    is_true "SELECT EXISTS (SELECT FROM model_select.decisions WHERE decision_id = $D5)"

# -- 4. expiry while a reward for an expired decision is in flight --------
D6=$(D 6)
D7=$(D 7)
q -c "SELECT model_select.alter_selector('dr', '{\"decision_ttl\": \"1 day\"}')" \
  -c "UPDATE model_select.decisions SET created_at = now() - interval '2 days' WHERE decision_id IN ($D6, $D7)" >/dev/null
session rewarder
say rewarder "BEGIN; $REWARD ($D6, 1);"
q -c "SELECT model_select.maintain('dr')" >/dev/null
say rewarder "COMMIT;"
close_sessions
check "expiry skips a decision whose reward is in flight, and deletes an unrewarded one" \
    is_true "SELECT EXISTS (SELECT FROM model_select.decisions WHERE decision_id = $D6)
                AND EXISTS (SELECT FROM model_select.rewards WHERE decision_id = $D6)
                AND NOT EXISTS (SELECT FROM model_select.decisions WHERE decision_id = $D7)"
q -c "SELECT model_select.maintain('dr')" >/dev/null
check "... and keeps it once its reward has committed" \
    is_true "SELECT EXISTS (SELECT FROM model_select.decisions WHERE decision_id = $D6)"

# -- 5. plain deletes, retention and drop_selector() ----------------------
delete_rewarded() {
    q -v VERBOSITY=sqlstate -c "DELETE FROM model_select.decisions WHERE decision_id = $D1" 2>&1 || true
}
check "a DELETE of a rewarded decision fails with 23503" \
    eval "delete_rewarded | grep -q 'ERROR:  23503'"
q -c "SELECT model_select.alter_selector('dr', '{\"retain\": 1}')" -c "SELECT model_select.maintain('dr')" >/dev/null
check "retention deletes a rewarded decision with its absorbed reward" \
    is_true "SELECT NOT EXISTS (SELECT FROM model_select.decisions WHERE decision_id = $D1)
                AND NOT EXISTS (SELECT FROM model_select.rewards WHERE decision_id = $D1)"
check "... (a decision with a retained reward stays)" \
    is_true "SELECT count(*) > 0 FROM model_select.rewards r JOIN model_select.decisions USING (decision_id)"
q -c "SELECT model_select.drop_selector('dr')" >/dev/null
check "drop_selector() deletes rewarded decisions with their rewards" \
    is_true "SELECT NOT EXISTS (SELECT FROM model_select.decisions) AND NOT EXISTS (SELECT FROM model_select.rewards)"

finish
