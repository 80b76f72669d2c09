#!/usr/bin/env bash
# Issue 41, the shared cache's slots, on a cluster of its own with
# model_select preloaded and the learner serving (two workers, the default):
# under the learner every arm on its own clock has versions, however small,
# so the table of slots must hold more than the 1,024 it had:
#   - 240 selectors of 5 small arms (d 2): 1,200 arms, each with rewards;
#     the learner publishes a version of every arm that holds its whole log
#     (1,200 versions at once; with 1,024 slots the table thrashed and never
#     held them all);
#   - then quiet, its passes visit few selectors: fewer than 100 transactions
#     per pass (measured 42: a tenth of them at each checkpointing pass, two
#     transactions each; visiting all 240 at every pass, 524);
#   - a decision on each of 40 selectors scores the learner's versions
#     (decisions.versions logged) and the shared cache evicted nothing;
#   - the scores of 5 selectors equal rebuild_state's.
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_shared_slots
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
SELECTORS=240
MS_DEFAULT_WORKERS=1 preloaded_server slots "$(free_port $(( ${PGPORT:-55500} + 170 )))" \
    "model_select.learner_databases = '$DB'" "model_select.learner_naptime = '50ms'"
ms_setup || bail "set-up failed"

q >/dev/null <<SQL || bail "creating the selectors failed"
SELECT count(model_select.create_selector('t' || i, 2, ARRAY['a', 'b', 'c', 'd', 'e'], 'lin_ucb', NULL, '{}', i))
  FROM generate_series(1, $SELECTORS) i;
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 't' || (1 + i % $SELECTORS), (ARRAY['a', 'b', 'c', 'd', 'e'])[1 + (i / $SELECTORS) % 5], ms_rand(2), random()
  FROM generate_series(0, 5 * $SELECTORS * 3 - 1) i;
SQL
arms=$(q -c "SELECT count(*) FROM model_select.arms")
check "$arms arms, each with rewards" test "$arms" = $(( 5 * SELECTORS ))
check "the learner publishes a version of every arm holding its whole log ($arms versions at once)" \
    wait_for "a final version of every arm" \
    "SELECT count(DISTINCT (selector, arm)) = $arms FROM model_select.learner_versions WHERE NOT stale AND lag_rewards = 0"
echo "# versions in the shared cache: $(q -c "SELECT count(*) FROM model_select.learner_versions")"

# quiet now: a pass visits the selectors marked by a transaction that logged rewards, and a tenth
# of the others at each checkpointing pass; each visit is a transaction of the learner's.  The
# learner reports its transactions to pg_stat_database about once a second, so the counts at
# either end may miss its last second of passes (about 12 of 42 transactions each, measured):
# over 120 passes that moves the figure per pass by less than 5, against a bar of 100 and 524
# when every selector is visited.
passes="SELECT sum(passes) FROM model_select.learner WHERE database = current_database()"
commits="SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
p0=$(q -c "$passes"); c0=$(q -c "$commits")
wait_for "120 more passes" "SELECT ($passes) >= $p0 + 120" || true
p1=$(q -c "$passes"); c1=$(q -c "$commits")
per_pass=$(( (c1 - c0) / (p1 - p0) ))
echo "# quiet: $((p1 - p0)) passes, $((c1 - c0)) transactions committed in the database ($per_pass per pass)"
check "quiet, a pass visits far fewer than the $SELECTORS selectors (under 100 transactions per pass)" \
    test "$per_pass" -lt 100

evictions0=$(q -c "SELECT shared_evictions FROM model_select.cache_stats()")
q >/dev/null <<SQL || bail "routing failed"
CREATE TABLE routed AS
SELECT s, (model_select.route('t' || s, ms_rand(2))).decision_id FROM generate_series(1, 40) s;
SQL
check "40 decisions on 40 selectors scored the learner's versions" \
    no_rows "SELECT * FROM routed r JOIN model_select.decisions d USING (decision_id) WHERE d.versions IS NULL"
check "the shared cache evicted nothing meanwhile" \
    test "$(q -c "SELECT shared_evictions FROM model_select.cache_stats()")" = "$evictions0"
for s in 1 60 120 180 240; do
    rebuild_checks "t$s"
done
finish
