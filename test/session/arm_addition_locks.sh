#!/usr/bin/env bash
# What waits for a transaction that added an arm and is still open
# (docs/operations.md, "route() takes no lock"):
#   1. nothing that routes or rewards: a reward insert under REPEATABLE READ
#      (which share-locks the selector's row to see settings changes) and
#      under READ COMMITTED, route() and select_model() all go on, each under
#      a lock_timeout (before, add_arm() locked the row FOR NO KEY UPDATE,
#      and the REPEATABLE READ reward waited until the addition committed);
#   2. another add_arm() of the selector waits for it (one addition at a
#      time: the next ordinal), and gets the next ordinal once it commits;
#   3. alter_selector() of the selector waits for it;
#   4. the arms have ordinals 1-5, and the state equals rebuild_state's.
#
# Needs PGHOST/PGPORT/PGUSER of a running cluster with model_select installed.
set -euo pipefail
DB=ms_session_arm_addition
. "$(dirname "$0")/lib/common.bash"

ms_setup || bail "set-up failed"
q -c "SELECT model_select.create_selector('s', 4, ARRAY['a', 'b'], 'lin_ucb')" >/dev/null ||
    bail "create_selector failed"
reward() { echo "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('s', '$1', ms_rand(4), 0.5);"; }

# 1. an open arm addition holds off nothing that routes or rewards
session adm
session app
say adm "BEGIN; SELECT model_select.add_arm('s', 'c');"
say app '\set VERBOSITY verbose'
say app "BEGIN ISOLATION LEVEL REPEATABLE READ; SET LOCAL lock_timeout = '30s'; $(reward a) COMMIT;"
check "while an add_arm() transaction is open: a reward under REPEATABLE READ does not wait for it (lock_timeout)" \
    no_error app
session app_rc
say app_rc "BEGIN; SET LOCAL lock_timeout = '30s'; $(reward b)
            SELECT decision_id > 0 FROM model_select.route('s', ms_rand(4));
            SELECT model_select.select_model('s', ms_rand(4)) IN ('a', 'b'); COMMIT;"
check "... nor a reward under READ COMMITTED, route() or select_model() (the new arm unseen)" no_error app_rc

# 2. a second addition waits for the first, then takes the next ordinal
session adm2
say_async adm2 "SELECT model_select.add_arm('s', 'd');"
check "another add_arm() of the selector waits for the open one" backend_waits Lock "SELECT model_select.add_arm(%"
say adm "COMMIT;"
said adm2

# 3. alter_selector() waits for an open addition
say adm "BEGIN; SELECT model_select.add_arm('s', 'e');"
say_async adm2 "SELECT model_select.alter_selector('s', '{\"alpha\": 5}');"
check "alter_selector() of the selector waits for an open add_arm()" backend_waits Lock "SELECT model_select.alter_selector(%"
say adm "COMMIT;"
said adm2
close_sessions
check "... and every one of them then succeeds" no_error adm adm2

# 4. the arms and the state
check "the arms are a-e with ordinals 1-5" \
    is_true "SELECT string_agg(a.name || a.ordinal, ' ' ORDER BY a.ordinal) = 'a1 b2 c3 d4 e5'
               FROM model_select.arms a JOIN model_select.selectors s USING (selector_id) WHERE s.name = 's'"
check "the new arms take rewards under REPEATABLE READ" \
    q -c "BEGIN ISOLATION LEVEL REPEATABLE READ" -c "$(reward c)" -c "$(reward e)" -c "COMMIT" -o /dev/null
rebuild_checks s
finish
