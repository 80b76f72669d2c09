#!/usr/bin/env bash
# What the learner and a scoring backend keep in memory (issue 41: memory
# flat in connections), on a cluster of its own with model_select preloaded
# and the learner serving: a pak_ucb selector (d 32, 3 arms), whose states
# grow with their rewards (about 3 MB per arm at 800 rewards).
#   (every arm model is published, however small)
#   - 800 rewards per arm, checkpointed: the learner loads the checkpoints
#     and holds the versions it publishes of them (one pin each, no backend
#     having scored);
#   - 20 more rewards per arm (too few for a checkpoint): the learner folds
#     them onto copies of its versions and publishes those; once the arms are
#     quiet it holds the versions instead of its copies, and its own memory
#     (Pss_Anon of /proc/<pid>/smaps_rollup) is back within a third of the
#     states' bytes of what it was before (an earlier learner kept a copy of
#     every arm's state until its next checkpoint);
#   - after 50 more rewards per arm it folds onto a copy of the version it
#     holds: every score equals rebuild_state's;
#   - a backend that scored keeps, per arm, a decoded model of at most three
#     vectors of the arm's rows plus 4 kB (pg_backend_memory_contexts): no
#     scratch of one context's scoring, no blocks grown past what it holds
#     (earlier: four vectors in blocks of twice their size);
#   - and, scoring the learner's versions, it does not map the shared cache's
#     area (a DSA mapping fills a 40 kB table: TopMemoryContext grows by less
#     than 24 kB) and its arm and configuration caches hold < 40 kB (earlier
#     65 kB: dynahash allocates a table's entries 32 at a time, and they
#     were the entries themselves, 864 and 464 bytes).
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_learner_memory
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
preloaded_server lmem "$(free_port $(( ${PGPORT:-55500} + 130 )))" \
    "model_select.learner_databases = '$DB'" "model_select.learner_naptime = '50ms'"
ms_setup || bail "set-up failed"

add() {  # add N: N rewards on each arm of m, one transaction per arm
    local a
    for a in a b c; do
        q -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
              SELECT 'm', '$a', ms_rand(32), random() FROM generate_series(1, $1)" >/dev/null
    done
}
learner_pid() { q -c "SELECT pid FROM model_select.learner WHERE running AND database = '$DB'"; }
anon_kb() { awk '$1 == "Pss_Anon:" { print $2 }' "/proc/$(learner_pid)/smaps_rollup"; }
# true once the learner holds the newest version of every arm (its pin; nobody scored)
holds_versions="SELECT count(*) = 3 FROM model_select.learner_versions
                 WHERE selector = 'm' AND NOT stale AND lag_rewards = 0 AND pins = 1"

q -c "SELECT model_select.create_selector('m', 32, ARRAY['a', 'b', 'c'], 'pak_ucb')" >/dev/null
check "the learner serves $DB" \
    wait_for "the learner's first pass" "SELECT running AND last_pass IS NOT NULL FROM model_select.learner WHERE database = '$DB'"
add 800
q -c "SELECT model_select.checkpoint('m')" >/dev/null
check "versions of every arm's 800 rewards" wait_for "the learner's versions of 800 rewards" "$(versions_hold_log m)"
check "the learner holds them (it loaded them from the checkpoint)" \
    wait_for "the learner to hold its versions" "$holds_versions"
before=$(anon_kb)

add 20
check "versions of every arm's 820 rewards" wait_for "the learner's versions of 820 rewards" "$(versions_hold_log m)"
check "quiet arms: the learner holds their versions instead of copies" \
    wait_for "the learner to hold its versions" "$holds_versions"
after=$(anon_kb)
states=$(q -c "SELECT sum(bytes)::bigint / 1024 FROM model_select.learner_versions WHERE selector = 'm' AND NOT stale")
echo "# learner's Pss_Anon: $before kB before the 20 rewards, $after kB after, the states' bytes: $states kB"
check "the learner keeps no copy of a quiet arm's state (its memory grew by < 1/3 of the states')" \
    test $((after - before)) -lt $((states / 3))

add 50
check "versions of every arm's 870 rewards" wait_for "the learner's versions of 870 rewards" "$(versions_hold_log m)"
rebuild_checks m

decoded=$(q -c "SELECT count(model_select.select_model('m', ms_rand(32))) FROM generate_series(1, 3)" \
            -c "SELECT sum(total_bytes) FROM pg_backend_memory_contexts WHERE name = 'model_select decoded model'" |
          tail -n 1)
bound=$(q -c "SELECT sum(3 * 8 * n + 4096) FROM model_select.arm_stats WHERE selector = 'm'")
echo "# a scoring backend's decoded models: $decoded bytes (bound $bound)"
check "a backend's decoded models: at most three vectors of each arm's rows + 4 kB" \
    test "${decoded:-0}" -gt 0 -a "${decoded:-0}" -le "$bound"

read -r top caches <<<"$(q -F ' ' \
    -c "SELECT count(ms_rand(32)) FROM generate_series(1, 3)" \
    -c "CREATE TEMP TABLE top0 AS SELECT used_bytes FROM pg_backend_memory_contexts WHERE name = 'TopMemoryContext'" \
    -c "SELECT count(model_select.select_model('m', ms_rand(32))) FROM generate_series(1, 3)" \
    -c "SELECT (SELECT used_bytes FROM pg_backend_memory_contexts WHERE name = 'TopMemoryContext') -
               (SELECT used_bytes FROM top0),
               (SELECT sum(total_bytes) FROM pg_backend_memory_contexts
                 WHERE name IN ('model_select model cache', 'model_select config cache'))" | tail -n 1)"
echo "# a backend scoring versions: TopMemoryContext grew by $top bytes; arm and configuration caches: $caches bytes"
check "a backend that only reads versions does not map the shared cache's area" test "${top:-99999}" -lt 24576
check "a backend's arm and configuration caches for 3 arms: < 40 kB" test "${caches:-99999}" -gt 0 -a "${caches:-99999}" -lt 40960
finish
