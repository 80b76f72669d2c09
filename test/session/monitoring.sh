#!/usr/bin/env bash
# Monitoring with model_select preloaded (src/pg/progress.c, src/routing/latency.c).
# Progress of long commands:
#   - on a cluster of its own with model_select preloaded, a second session
#     sees a long replay() in model_select.progress: rounds done of 8,000,
#     growing, with its elapsed time; cancelled, its row goes away;
#   - model_select.progress_interval sends NOTICEs: replay's rounds,
#     warm_start's rewards, alter_selector's re-derived arms; none by default;
#   - without preloading (the calling cluster) the view is empty.
# Server-wide statistics: select_model() and route() calls from two sessions
# are counted in model_select.stats with their latency, routes equal the
# logged decisions, and stats_reset() forgets them; without preloading the
# latency columns are NULL.
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_monitoring
OUTER_HOST=${PGHOST:-} OUTER_PORT=${PGPORT:-}
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"

export PGHOST=$CL PGUSER=postgres
PGPORT=$(free_port $(( ${OUTER_PORT:-55500} + 90 )))
export PGPORT
preloaded_initdb S
cluster_start S "$PGPORT" || bail "the preloaded cluster failed to start: $(tail -n 5 "$CL/S.log")"
ms_setup || bail "set-up failed"
ROUNDS=8000
q -c "CREATE TABLE st AS SELECT context, reward FROM model_select.synthetic_clusters($ROUNDS, 8, 3, NULL, 3, 0.1)"

# -- a second session watches a long replay -------------------------------------
psql -X -q -d "$DB" -c "SET application_name = 'ms_progress_replay'" \
    -c "SELECT count(*) FROM model_select.replay('SELECT context, reward FROM st', 'pak_ucb')" \
    >"$MS_WORK/replay.out" 2>&1 &
REPLAY=$!
MS_BG_PIDS+=("$REPLAY")
WATCH="SELECT p.pid || ' ' || p.done || ' ' || p.total || ' ' || p.unit || ' ' || p.seconds
         FROM model_select.progress p JOIN pg_stat_activity a USING (pid)
        WHERE a.application_name = 'ms_progress_replay' AND p.command = 'replay'"
seen=()
for _ in $(seq 1 300); do
    row=$(q -c "$WATCH")
    [ -n "$row" ] && seen+=("$row")
    [ ${#seen[@]} -ge 3 ] && break
    sleep 0.2
done
printf '# seen: %s\n' "${seen[@]}"
growing() {  # pid done total unit seconds, three times: done and seconds grow, within (0, total)
    [ ${#seen[@]} -ge 3 ] || return 1
    printf '%s\n' "${seen[@]}" | awk -v rounds="$ROUNDS" '
        { if ($3 != rounds || $4 != "rounds" || $2 < 0 || $2 >= $3) bad = 1
          if (NR > 1 && ($2 <= done || $5 <= secs)) bad = 1
          done = $2; secs = $5 }
        END { exit bad }'
}
check "another session sees replay's rounds done of $ROUNDS grow, with its elapsed seconds" growing
pid=$(printf '%s\n' "${seen[0]:-0}" | cut -d' ' -f1)
q -c "SELECT pg_cancel_backend($pid)" >/dev/null || true
wait "$REPLAY" || true
check "the cancelled replay's row is gone" \
    is_true "SELECT count(*) = 0 FROM model_select.progress WHERE pid = $pid"

# -- NOTICEs at the cadence of model_select.progress_interval ---------------------
notices() {  # notices SETTING SQL: the NOTICE lines the statement sends
    psql -X -q -d "$DB" -c "SET model_select.progress_interval = '$1'" -c "$2" 2>&1 >/dev/null |
        grep 'NOTICE:' || true
}
out=$(notices 0 "SELECT count(*) FROM model_select.replay('SELECT context, reward FROM st LIMIT 1500', 'pak_ucb')")
check "no progress NOTICE by default" test -z "$out"
# The cadence is checked at its two ends, whatever the machine's speed: a
# 1,500-round replay takes far longer than 1 ms (so it reports, more than
# once, its rounds growing) and far less than an hour (so it never reports).
out=$(notices 1ms "SELECT count(*) FROM model_select.replay('SELECT context, reward FROM st LIMIT 1500', 'pak_ucb')")
printf '%s\n' "$out" | head -n 3 | sed 's/^/# /'
reports_growing() {  # at least two NOTICEs of the format, rounds and seconds growing
    printf '%s\n' "$out" | awk '
        { if (!match($0, /NOTICE: +replay: [0-9]+ of 1500 rounds \([0-9]+%\) in [0-9.]+ s$/)) bad = 1
          for (i = 1; i <= NF; i++) if ($i == "replay:") { d = $(i + 1); t = $(i + 7) }
          if (NR > 1 && (d <= done || t < secs)) bad = 1
          done = d; secs = t }
        END { exit (bad || NR < 2) }'
}
check "every 1ms, replay says its rounds done of 1500, growing" reports_growing
out=$(notices 1h "SELECT count(*) FROM model_select.replay('SELECT context, reward FROM st LIMIT 1500', 'pak_ucb')")
check "every hour: no NOTICE during a replay of 1500 rounds" test -z "$out"
q -c "SELECT model_select.create_selector('pw', 8, ARRAY['a', 'b', 'c'], 'pak_ucb')" >/dev/null
out=$(notices 1ms "SELECT model_select.warm_start('pw', 'SELECT context, reward FROM st LIMIT 300')")
printf '%s\n' "$out" | tail -n 1 | sed 's/^/# /'
check "warm_start says its rewards done of 900" \
    grep -qE 'NOTICE: +warm_start pw: [0-9]+ of 900 rewards' <<<"$out"
out=$(notices 1ms "SELECT model_select.alter_selector('pw', '{\"alpha\": 2}')")
printf '%s\n' "$out" | tail -n 1 | sed 's/^/# /'
check "alter_selector says the arms it re-derived, of 3" \
    grep -qE 'NOTICE: +alter_selector pw: [1-3] of 3 arms' <<<"$out"

# -- server-wide calls and latency ------------------------------------------------
q -c "SELECT model_select.create_selector('lat', 8, ARRAY['a', 'b'], 'lin_ucb')" >/dev/null
q -c "SELECT count(model_select.select_model('lat', context)) FROM (SELECT context FROM st LIMIT 30) s" >/dev/null
q -c "SELECT count((model_select.route('lat', context)).arm) FROM (SELECT context FROM st LIMIT 20) s" >/dev/null
q -c "SELECT count(model_select.select_model('lat', context)) FROM (SELECT context FROM st LIMIT 5) s" >/dev/null
q -c "SELECT selector, arm, selections, select_ms_mean, select_ms_max, routes, route_ms_mean, decisions
        FROM model_select.stats WHERE selector = 'lat'" | sed 's/^/# /'
check "35 select_model() calls from two sessions, 20 route() calls, as many as the logged decisions" \
    is_true "SELECT sum(selections) = 35 AND sum(routes) = 20 AND sum(decisions) = 20
               FROM model_select.stats WHERE selector = 'lat'"
check "their mean and largest latency, in milliseconds" \
    is_true "SELECT bool_and(coalesce(select_ms_mean > 0 AND select_ms_max >= select_ms_mean, true)
                         AND coalesce(route_ms_mean > 0 AND route_ms_max >= route_ms_mean, true))
                    AND count(select_ms_mean) > 0 AND count(route_ms_mean) > 0
               FROM model_select.stats WHERE selector = 'lat'"
q -c "DROP ROLE IF EXISTS ms_mon_stranger" -c "CREATE ROLE ms_mon_stranger" \
  -c "SELECT model_select.setup_role('ms_mon_stranger', 'application')" >/dev/null
check "a role without a right on 'lat' sees none of its latency figures, nor its name" \
    is_true "SET ROLE ms_mon_stranger; SELECT count(*) = 0 FROM model_select._latency()"
q -c "SELECT model_select.setup_role('ms_mon_stranger', 'none')" -c "DROP ROLE ms_mon_stranger" >/dev/null
q -c "SELECT model_select.stats_reset('lat')" >/dev/null
check "stats_reset() forgets them" \
    is_true "SELECT count(selections) = 0 AND sum(decisions) = 0 FROM model_select.stats WHERE selector = 'lat'"

# -- without preloading -----------------------------------------------------------
if [ -n "$OUTER_PORT" ]; then
    outer() { PGHOST=$OUTER_HOST PGPORT=$OUTER_PORT psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
    PGHOST=$OUTER_HOST PGPORT=$OUTER_PORT dropdb --if-exists "$DB"
    PGHOST=$OUTER_HOST PGPORT=$OUTER_PORT createdb "$DB"
    MS_EXTRA_CLEANUP="$MS_EXTRA_CLEANUP; PGHOST=$OUTER_HOST PGPORT=$OUTER_PORT dropdb --if-exists $DB"
    outer -c "CREATE EXTENSION model_select" >/dev/null
    check "without preloading the view progress is empty" \
        test "$(outer -c "SELECT count(*) FROM model_select.progress")" = 0
    check "... and the latency columns of stats are NULL" \
        test "$(outer -c "SELECT model_select.create_selector('ms_monitoring_outer', 2, ARRAY['a'], 'greedy')" \
                      -c "SELECT model_select.select_model('ms_monitoring_outer', '{1,0}')" \
                      -c "SELECT count(*) FILTER (WHERE selections IS NULL) || ' ' || count(*)
                            FROM model_select.stats WHERE selector = 'ms_monitoring_outer'" | sed -n 3p)" = "1 1"
fi
finish
