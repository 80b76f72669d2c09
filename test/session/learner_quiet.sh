#!/usr/bin/env bash
# A selector that goes quiet gets a version holding its whole log, on a
# cluster of its own with model_select preloaded and the learner serving
# (every arm model is published, however small):
#   - a transaction T takes the selector (a reward, not committed) and then
#     rewards of a later transaction commit on arm b: they are not final while
#     T may still commit before them, so after 20 passes the learner's newest
#     version of arm b still holds only the 10 rewards before them;
#   - T rolls back, and nothing more is logged: the same rows are final now,
#     and within 20 more passes the learner must publish them (a version of
#     arm b with every reward of its log, lag 0).  An earlier learner that had
#     published their fold while they were not final never published it as
#     final once they were, so a quiet selector kept no final version of its
#     newest rewards (what test/session/learner_burst.sh saw now and then
#     after its burst);
#   - U, a transaction that logs nothing on the selector, holds back 5 rewards
#     committed after it; once it commits, the learner's next pass (its
#     naptime a minute, woken by a reward on another selector) publishes them:
#     their marks stay until they are final (cleared at the first visit, a
#     selector whose rows only became final waited for its turn among a
#     tenth of the selectors at each checkpointing pass);
#   - every score then equals rebuild_state's.
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_learner_quiet
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
preloaded_server quiet "$(free_port $(( ${PGPORT:-55500} + 110 )))" \
    "model_select.learner_databases = '$DB'" "model_select.learner_naptime = '50ms'"
ms_setup || bail "set-up failed"

add() {  # add ARM N: N rewards on arm ARM of q_lin, committed
    q -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
          SELECT 'q_lin', '$1', ms_rand(4), random() FROM generate_series(1, $2)" >/dev/null
}
# the newest version of arm b: rewards, lag
newest_b="SELECT rewards || ' ' || lag_rewards FROM model_select.learner_versions
           WHERE selector = 'q_lin' AND arm = 'b' AND NOT stale ORDER BY rewards DESC LIMIT 1"
n_b() { q -c "SELECT n FROM model_select.arm_stats WHERE selector = 'q_lin' AND arm = 'b'"; }

q -c "SELECT model_select.create_selector('q_lin', 4, ARRAY['a', 'b'], 'lin_ucb')" >/dev/null
check "the learner serves $DB" \
    wait_for "the learner's first pass" "SELECT running AND last_pass IS NOT NULL FROM model_select.learner WHERE database = '$DB'"
add a 10
add b 10
check "arm b: a version of its 10 rewards" \
    wait_for "a version of arm b's 10 rewards" "SELECT EXISTS (SELECT FROM model_select.learner_versions
        WHERE selector = 'q_lin' AND arm = 'b' AND rewards = 10 AND lag_rewards = 0)"

# T takes the selector; rewards of a later transaction commit behind it
session T
say T "BEGIN; INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('q_lin', 'a', '{1,0,0,0}', 0.5);"
add b 5
passes=$(q -c "SELECT passes FROM model_select.learner WHERE database = '$DB'")
wait_for "20 more passes of the learner" "SELECT passes >= $passes + 20 FROM model_select.learner WHERE database = '$DB'"
echo "# with T open, arm b's newest version (rewards lag): $(q -c "$newest_b")"
check "while T is open the 5 rewards behind it are not in a version of arm b" \
    test "$(q -c "$newest_b" | cut -d' ' -f1)" = 10
say T "ROLLBACK;"
close_sessions

# nothing more is logged: 20 passes of the learner later, the version is final
passes=$(q -c "SELECT passes FROM model_select.learner WHERE database = '$DB'")
wait_for "20 more passes of the learner" "SELECT passes >= $passes + 20 FROM model_select.learner WHERE database = '$DB'"
echo "# after T's rollback and 20 passes, arm b's newest version (rewards lag): $(q -c "$newest_b")"
check "T rolled back, nothing logged since: arm b has a version holding its whole log" \
    test "$(q -c "$newest_b")" = "$(n_b) 0"

# U, a transaction that logs nothing on the selector, holds back the rows committed after it.
# The naptime goes to a minute: the learner then passes only when a reward's transaction wakes it
# (no checkpointing pass, so no selector is visited for its turn among the tenth).
q -c "SELECT model_select.create_selector('q_other', 4, ARRAY['a'], 'lin_ucb')" \
  -c "CREATE TABLE elsewhere (x int)" -c "ALTER SYSTEM SET model_select.learner_naptime = '60s'" \
  -c "SELECT pg_reload_conf()" >/dev/null
wake() {  # a reward on q_other, then the pass it wakes
    local p
    p=$(q -c "SELECT passes FROM model_select.learner WHERE database = '$DB'")
    q -c "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('q_other', 'a', ms_rand(4), 0.5)" >/dev/null
    wait_for "the pass a reward on q_other wakes" "SELECT passes > $p FROM model_select.learner WHERE database = '$DB'"
}
wake
session U
say U "BEGIN; INSERT INTO elsewhere VALUES (1);"
passes=$(q -c "SELECT passes FROM model_select.learner WHERE database = '$DB'")
add b 5
wait_for "the pass the 5 rewards wake" "SELECT passes > $passes FROM model_select.learner WHERE database = '$DB'"
check "while U is open the 5 rewards committed after it are not in a version of arm b" \
    test "$(q -c "$newest_b" | cut -d' ' -f1)" = "$(( $(n_b) - 5 ))"
say U "COMMIT;"
close_sessions
wake
echo "# U committed (no reward), then one pass woken by a reward on q_other: arm b's newest version (rewards lag): $(q -c "$newest_b")"
check "U committed: the next pass, woken by a reward on another selector, publishes arm b's whole log (the marks of its rows stay until they are final)" \
    test "$(q -c "$newest_b")" = "$(n_b) 0"
q -c "ALTER SYSTEM RESET model_select.learner_naptime" -c "SELECT pg_reload_conf()" >/dev/null
rebuild_checks q_lin
finish
