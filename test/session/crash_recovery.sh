#!/usr/bin/env bash
# Issue 14, Must show (d): `pg_ctl -m immediate` three times during ingest.
# The test runs its own cluster (initdb in a temporary directory; as root the
# server runs as user postgres), because it crashes it.  Four writer loops
# insert 4 rewards per transaction (BEGIN; INSERT ... RETURNING reward_id;
# COMMIT) into three selectors in turn -- a `discount` 0.9 lin_ucb, a
# `window` 50 pak_ucb and an rff_ucb (8 features) -- and append the ids to
# their acknowledgement file only after psql reports the COMMIT succeeded.
# Checkpoints run meanwhile (checkpoint() every 0.3 s where it exists, and
# model_select.checkpoint_threshold = 20 for the writers).
#
# After each of the three crashes and restarts (writers paused): every
# acknowledged reward_id is in the log exactly once, the log has no duplicate
# id, the ingest made progress, and each selector's state equals its rebuild
# (1e-9), arm_stats.n the log.
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_crash
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"

own_server "$(free_port "${MS_CRASH_PORT:-$(( ${PGPORT:-55500} + 50 ))}")"

SELS="crash_lin crash_pak crash_rff"
ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selectors failed"
SELECT model_select.create_selector('crash_lin', 4, ARRAY['a','b'], 'lin_ucb', NULL, '{"discount": 0.9}');
SELECT model_select.create_selector('crash_pak', 4, ARRAY['a','b'], 'pak_ucb', NULL, '{"window": 50}');
SELECT model_select.create_selector('crash_rff', 4, ARRAY['a','b'], 'rff_ucb', NULL, '{"features": 8}');
CREATE TABLE ms_ack (reward_id bigint);
SQL
have_ckpt=0
has_function checkpoint && have_ckpt=1

stop=$MS_WORK/stop
pause=$MS_WORK/pause
writer() {
    local w=$1 i=0 s out
    local sels=($SELS)
    while [ ! -e "$stop" ]; do
        if [ -e "$pause" ]; then touch "$MS_WORK/paused_$w"; sleep 0.1; continue; fi
        rm -f "$MS_WORK/paused_$w"
        s=${sels[$(( (i + w) % 3 ))]}; i=$((i + 1))
        if out=$(PGOPTIONS="-c model_select.checkpoint_threshold=20" \
                 psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" -c "BEGIN" \
                   -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
                       SELECT '$s', (ARRAY['a','b'])[1 + g % 2], ms_rand(4), random()
                         FROM generate_series(1, 4) g RETURNING reward_id" \
                   -c "COMMIT" 2>>"$MS_WORK/writer_$w.err")
        then printf '%s\n' "$out" >>"$MS_WORK/ack_$w"
        else sleep 0.05; fi
    done
}
checkpointer() {
    while [ ! -e "$stop" ]; do
        if [ -e "$pause" ]; then touch "$MS_WORK/paused_c"; sleep 0.1; continue; fi
        rm -f "$MS_WORK/paused_c"
        q -c "SELECT sum(model_select.checkpoint(name)) FROM model_select.selectors" \
            >/dev/null 2>>"$MS_WORK/ckpt.err" || true
        sleep 0.3
    done
}
waiters=(1 2 3 4)
for w in "${waiters[@]}"; do writer "$w" & MS_BG_PIDS+=($!); done
if [ "$have_ckpt" = 1 ]; then
    checkpointer & MS_BG_PIDS+=($!); waiters+=(c)
else
    skip "checkpoint() calls during ingest" "model_select.checkpoint() does not exist"
fi

wait_paused() {
    local w
    for _ in $(seq 1 300); do
        for w in "${waiters[@]}"; do [ -e "$MS_WORK/paused_$w" ] || { sleep 0.1; continue 2; }; done
        return 0
    done
    return 1
}
acks_now() { cat "$MS_WORK"/ack_* 2>/dev/null | wc -l; }
prev=0
for round in 1 2 3; do
    # the crash comes once the writers have had 50 more rewards acknowledged
    # (a wait for that, not an interval: a loaded machine writes slowly)
    for _ in $(seq 1 1200); do [ "$(acks_now)" -ge $((prev + 50)) ] && break; sleep 0.1; done
    check "crash $round: pg_ctl -m immediate stop" \
        as_server "$BINDIR/pg_ctl" -D "$CL/data" -m immediate -w -t 60 stop -s
    touch "$pause"
    check "crash $round: the server restarts (crash recovery)" start_server
    check "crash $round: writers paused for the checks" wait_paused
    cat "$MS_WORK"/ack_* >"$MS_WORK/acks" 2>/dev/null || true
    acked=$(wc -l <"$MS_WORK/acks")
    q -c "TRUNCATE ms_ack" -c "\\copy ms_ack FROM '$MS_WORK/acks'"
    echo "# crash $round: $acked rewards acknowledged so far, $(q -c 'SELECT count(*) FROM model_select.rewards') in the log"
    check "crash $round: ingest progressed since the last restart ($prev -> $acked acknowledged)" \
        [ "$acked" -gt "$prev" ]
    prev=$acked
    check "crash $round: no reward_id acknowledged twice" \
        is_true "SELECT count(*) = count(DISTINCT reward_id) FROM ms_ack"
    check "crash $round: every acknowledged reward is in the log" \
        no_rows "SELECT reward_id FROM ms_ack EXCEPT SELECT reward_id FROM model_select.rewards"
    check "crash $round: no reward_id twice in the log" \
        is_true "SELECT count(*) = count(DISTINCT reward_id) FROM model_select.rewards"
    for s in $SELS; do rebuild_checks "$s" " (crash $round)"; done
    rm -f "$pause"
done
touch "$stop"
wait_ok=0
for p in "${MS_BG_PIDS[@]}"; do wait "$p" || wait_ok=1; done
MS_BG_PIDS=()
if [ "$have_ckpt" = 1 ]; then
    ckpt_errors() {  # errors of checkpoint() other than the crash's connection losses
        local other
        other=$(grep -i -v -E "terminat|connection|server closed|shut|recovery|No such file|could not connect|is the server running|administrator command|starting up" \
                "$MS_WORK/ckpt.err" | grep ERROR || true)
        [ -z "$other" ] || { printf '%s\n' "$other" | head -n 3 | sed 's/^/#   /'; return 1; }
    }
    check "no checkpoint() call failed other than by the crashes" ckpt_errors
fi
finish
