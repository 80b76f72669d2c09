#!/usr/bin/env bash
# Under a stream of rewards a learner worker starts a pass at most every
# 10 ms (issue 41): commits meanwhile are folded together by the next pass,
# where it made a pass per commit or two (a pass costs a few hundred
# microseconds whatever it folds).  On a cluster of its own with model_select
# preloaded and the learner serving: pgbench streams 3,000 rewards, one per
# transaction, from 4 clients; over the stream the learner makes at most one
# pass per 10 ms of the stream's duration (+ 10), a bound on its rate that a
# slower machine only loosens; then its versions hold every reward, and the
# scores equal rebuild_state's.
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_learner_gap
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
preloaded_server gap "$(free_port $(( ${PGPORT:-55500} + 150 )))" \
    "model_select.learner_databases = '$DB'"
ms_setup || bail "set-up failed"

q -c "SELECT model_select.create_selector('g_lin', 4, ARRAY['a', 'b', 'c'], 'lin_ucb')" >/dev/null
check "the learner serves $DB" \
    wait_for "the learner's first pass" "SELECT running AND last_pass IS NOT NULL FROM model_select.learner WHERE database = '$DB'"
cat >"$MS_WORK/reward.sql" <<'SQL'
INSERT INTO model_select.rewards(selector, arm, context, reward)
VALUES ('g_lin', (ARRAY['a','b','c'])[1 + floor(random() * 3)::int], ms_rand(4), random());
SQL
p0=$(q -c "SELECT passes FROM model_select.learner WHERE database = '$DB'")
t0=$(q -c "SELECT extract(epoch FROM clock_timestamp())")
pgbench -n -c 4 -j 4 -t 750 -f "$MS_WORK/reward.sql" "$DB" >"$MS_WORK/pgbench.out" 2>&1 ||
    bail "pgbench failed: $(tail -n 5 "$MS_WORK/pgbench.out")"
t1=$(q -c "SELECT extract(epoch FROM clock_timestamp())")
p1=$(q -c "SELECT passes FROM model_select.learner WHERE database = '$DB'")
ms=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", (b - a) * 1000 }')
echo "# 3,000 rewards in $ms ms: $((p1 - p0)) passes of the learner (at most $((ms / 10 + 10)) allowed)"
check "during the stream the learner made at most a pass per 10 ms (+ 10)" \
    test $((p1 - p0)) -le $((ms / 10 + 10))
check "its versions then hold the 3,000 rewards" \
    wait_for "versions of the 3,000 rewards" "SELECT sum(rewards) = 3000 FROM model_select.learner_versions
        WHERE selector = 'g_lin' AND NOT stale"
echo "# its lag: $(q -c "SELECT lag_ms_p50 || '/' || lag_ms_p99 || ' ms' FROM model_select.learner WHERE database = '$DB'")"
rebuild_checks g_lin
finish
