#!/usr/bin/env bash
# Issue 41, a streaming standby of a primary whose learner serves: a primary
# with model_select preloaded and the learner serving the database, and a hot
# standby made from it by pg_basebackup -R (its configuration copied, the
# learner's settings included; initdb + pg_basebackup in a temporary
# directory, as standby.sh does).
#   - under load on the primary (2 writers, 2 routers that route, reward and
#     route again in one transaction: lib/learner_load.sql; lin_ucb and rff_ucb),
#     decisions record the versions they scored; once the standby has
#     replayed them, decision_scores() on the standby (read-only) re-derives
#     every arm's scores of the last 150 decisions bit for bit as on the
#     primary, and equal to what they logged (score, mean);
#   - on a standby a decision scores the exact fold of the log its snapshot
#     sees (docs/caches.md): with the primary's learner stopped (SIGSTOP) and
#     rewards committed meanwhile, the primary scores its versions (n trails
#     the log) while the standby, once it has replayed them, scores the whole
#     log (n = its count in the log);
#   - once the learner has published them, the primary's scores (its
#     versions, each holding the whole log) equal the standby's (the exact
#     fold of the same log) bit for bit, at 20 contexts, select_model() too.
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_learner_standby
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
PRIMARY=$(free_port $(( ${PGPORT:-55500} + 130 )))
STANDBY=$(free_port $((PRIMARY + 1)) "$PRIMARY")
preloaded_initdb primary "model_select.learner_databases = '$DB'" "model_select.learner_naptime = '50ms'" \
    "model_select.shared_min_size = 0" "max_connections = 30"
cluster_start primary "$PRIMARY" || bail "primary failed to start: $(tail -n 5 "$CL/primary.log")"
export PGHOST=$CL PGPORT=$PRIMARY PGUSER=postgres

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selectors failed"
SELECT model_select.create_selector('s_lin', 8, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL, '{}', 31);
SELECT model_select.create_selector('s_rff', 8, ARRAY['a', 'b', 'c'], 'rff_ucb', NULL, '{"features": 32}', 32);
SQL
q -f "$(dirname "$0")/lib/learner_load.sql" >/dev/null || bail "creating the load failed"
q -c "SELECT add_rewards('s_lin', 60), add_rewards('s_rff', 60)" >/dev/null

learner_pid() { q -c "SELECT pid FROM model_select.learner WHERE running AND last_pass IS NOT NULL AND database = current_database()"; }
check "the learner serves the primary" wait_for "the learner" \
    "SELECT count(*) = 1 FROM model_select.learner WHERE running AND last_pass IS NOT NULL AND database = current_database()"
pid=$(learner_pid)

standby_start
check "the standby is in recovery, preloaded, with the primary's learner settings" \
    test "$(sq -c "SELECT pg_is_in_recovery() || ' ' || current_setting('shared_preload_libraries')
                          || ' ' || current_setting('model_select.learner_databases')")" = "true model_select $DB"

# 1. decisions made on the primary under load, re-derived on the standby
for i in 1 2; do
    q -c "CALL writer('s_lin', 's_rff')" >"$MS_WORK/writer.$i" 2>&1 & MS_BG_PIDS+=($!)
    q -c "CALL router('s_lin', 's_rff')" >"$MS_WORK/router.$i" 2>&1 & MS_BG_PIDS+=($!)
done
check "under load, the primary's routers log decisions (300)" \
    wait_for "300 decisions" "SELECT count(*) >= 300 FROM model_select.decisions"
q -c "INSERT INTO load_done VALUES (true)" >/dev/null
wait "${MS_BG_PIDS[@]}"
MS_BG_PIDS=()
check "the load ended without errors" test -z "$(cat "$MS_WORK"/writer.* "$MS_WORK"/router.* | head -n 5)"
check "the standby has replayed the load" replayed
LAST="SELECT decision_id FROM model_select.decisions ORDER BY decision_id DESC LIMIT 150"
RESCORE="SELECT d.decision_id, r.arm, r.active, r.n, r.mean, r.width, r.ucb, r.radius, r.alpha
           FROM ($LAST) d CROSS JOIN LATERAL model_select.decision_scores(d.decision_id) r ORDER BY 1, 2"
q -c "$RESCORE" >"$MS_WORK/primary.rescore"
sq -c "$RESCORE" >"$MS_WORK/standby.rescore" 2>&1 || true
check "decision_scores() on the standby re-derives the primary's decisions as on the primary, bit for bit ($(wc -l <"$MS_WORK/primary.rescore") rows)" \
    cmp "$MS_WORK/primary.rescore" "$MS_WORK/standby.rescore"
check "... 3 arms of each of the 150 decisions" test "$(wc -l <"$MS_WORK/primary.rescore")" = 450
check "... and some of them scored versions that trail the log" \
    is_true "SELECT bool_or((SELECT sum(v) FROM unnest(d.versions) v)
                            < (SELECT count(*) FROM model_select.rewards r WHERE r.selector_id = d.selector_id))
               FROM ($LAST) l JOIN model_select.decisions d USING (decision_id)"
check "on the standby, the chosen arm's re-derived ucb and mean equal what each decision logged, bit for bit" \
    test "$(sq -c "SELECT count(*) FROM ($LAST) l JOIN model_select.decisions d USING (decision_id)
                     JOIN model_select.arms a USING (arm_id), model_select.decision_scores(d.decision_id) r
                    WHERE r.arm = a.name AND r.ucb IS NOT DISTINCT FROM d.score AND r.mean IS NOT DISTINCT FROM d.mean" 2>&1)" = 150

# 2. the standby folds exactly what it has replayed, not the primary's versions
N_A="SELECT sc.n FROM model_select.scores('s_lin', array_fill(0.5::float8, ARRAY[8])) sc WHERE sc.arm = 'a'"
LOG_A="SELECT count(*) FROM model_select.rewards r JOIN model_select.arms a USING (arm_id)
        WHERE r.selector = 's_lin' AND a.name = 'a'"
check "the learner's versions hold the whole log" \
    wait_for "n = the log" "SELECT ($N_A) = ($LOG_A)"
stop_idle "$pid" || bail "the learner could not be stopped idle"
q -c "INSERT INTO model_select.rewards(selector, arm, context, reward) SELECT 's_lin', 'a', ms_rand(8), random() FROM generate_series(1, 9)" >/dev/null
check "the standby has replayed 9 more rewards of s_lin/a" replayed
primary_n=$(q -c "$N_A")
check "the primary's learner stopped: the primary scores its version (n $primary_n = the log's $(q -c "$LOG_A") - 9)" \
    is_true "SELECT $primary_n = ($LOG_A) - 9"
check "... the standby the exact fold of its snapshot (n $(sq -c "$N_A") = the log's)" \
    test "$(sq -c "SELECT ($N_A) = ($LOG_A)")" = t
kill -CONT "$pid"

# 3. the same log: the primary's versions equal the standby's exact fold, bit for bit
for s in s_lin s_rff; do
    check "$s: the learner's versions hold the whole log" \
        wait_for "the versions of $s" "SELECT bool_and(sc.n = (SELECT count(*) FROM model_select.rewards r JOIN model_select.arms a USING (arm_id)
                                                                WHERE r.selector = '$s' AND a.name = sc.arm))
                                         FROM model_select.scores('$s', array_fill(0.5::float8, ARRAY[8])) sc"
done
check "the standby has replayed the whole log" replayed
SCORES="SELECT s, i, x.arm, x.n, x.mean, x.width, x.ucb, model_select.select_model(s, c)
          FROM unnest(ARRAY['s_lin', 's_rff']) s, generate_series(1, 20) i,
               LATERAL (SELECT ARRAY[sin(2 * i), cos(3 * i), 0.1 * i, 0.5, -0.5, sin(i), cos(i), 0]::float8[] AS c) ctx,
               LATERAL model_select.scores(s, c) x ORDER BY 1, 2, 3"
q -c "$SCORES" >"$MS_WORK/primary.scores"
sq -c "$SCORES" >"$MS_WORK/standby.scores" 2>&1 || true
check "scores() and select_model(): the primary's versions equal the standby's exact fold bit for bit ($(wc -l <"$MS_WORK/primary.scores") rows)" \
    cmp "$MS_WORK/primary.scores" "$MS_WORK/standby.scores"
check "... 120 of them" test "$(wc -l <"$MS_WORK/primary.scores")" = 120
for s in s_lin s_rff; do rebuild_checks "$s"; done
finish
