#!/usr/bin/env bash
# The budget's pacer counts decisions not rewarded yet (issue 42) from the logs
# under each session's snapshot: a session's own uncommitted decisions count
# for it, another session's do not until they commit, and a rolled-back one
# never does.  A greedy selector with a budget of 0.5 and pace 1, whose arms
# learned their means and costs from rewards without a decision (no spend):
# 'free' 0.4 at cost 0, 'dear' 0.9 at cost 1.  At λ = 0 greedy picks 'dear';
# one pending 'dear' makes the overspend 1 − 0.5 = 0.5 and λ = λ̄ + (1/0.5) · 0.5 /
# (1 · 0.5) = 0 + 2 (then 'free' wins: 0.4 > 0.9 − 2); two make λ = 4.  Once
# the dear decision's reward is spend and the free one is pending, the
# overspend is 1 − 0.5 · 2 = 0 and λ is λ̄ = mean(0, 2) = 1: 'free' (0.4 > 0.9 − 1).
#
# Needs PGHOST/PGPORT/PGUSER of a running cluster with model_select installed.
set -euo pipefail
DB=ms_session_budget_pending
. "$(dirname "$0")/lib/common.bash"

ms_setup || bail "set-up failed"
budget_selector bp '{"budget": 0.5, "pace": 1}' || bail "creating the selector failed"
# route, then the arm and λ of the newest decision the session sees (a statement of its own:
# the statement that routes does not see the row route() logs)
ROUTE="DO \$\$ BEGIN PERFORM model_select.route('bp', ARRAY[1, 0]::float8[]); END \$\$;
SELECT a.name || ' ' || d.cost_weight FROM model_select.decisions d JOIN model_select.arms a USING (arm_id)
 ORDER BY d.decision_id DESC LIMIT 1;"
answer_is() {  # answer_is GOT WANT
    [ "$1" = "$2" ] || { echo "#   got '$1', want '$2'"; return 1; }
}

session a
say a "BEGIN;"
say a "$ROUTE"
check "session a routes at λ 0 (nothing spent, nothing pending): dear" answer_is "$(last_answer a)" "dear 0"
say a "$ROUTE"
check "... then its own uncommitted decision counts for it: λ 2, free" answer_is "$(last_answer a)" "free 2"
check "another session does not see a's uncommitted decisions: λ 0, dear" \
    answer_is "$(q -c "$ROUTE")" "dear 0"
say a "ROLLBACK;"
check "after a's rollback, only the other session's committed decision is pending: λ 2, free" \
    answer_is "$(q -c "$ROUTE")" "free 2"
q -c "INSERT INTO model_select.rewards(decision_id, reward, cost)
      SELECT decision_id, 0.9, 1 FROM model_select.decisions d JOIN model_select.arms a USING (arm_id)
       WHERE a.name = 'dear'" >/dev/null
check "its reward arrives: the dear decision is spend instead of pending, the free one still pending (overspend 0, λ = λ̄ 1)" \
    answer_is "$(q -c "$ROUTE")" "free 1"
check "the committed decisions logged λ 0, 2 and 1 (the rolled-back ones are gone)" \
    is_true "SELECT array_agg(cost_weight ORDER BY decision_id) = '{0,2,1}' FROM model_select.decisions"
close_sessions
finish
