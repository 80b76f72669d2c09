#!/usr/bin/env bash
# Issue 14, Must show (a): 16 concurrent writers x 1,000 rewards onto 2 arms,
# for stationary, `window` and `discount` settings of lin_ucb, rff_ucb and
# pak_ucb, with checkpoint() calls and scores() readers running meanwhile.
# Afterwards every arm's scores (n, mean, width, ucb at 3 fixed probe
# contexts) and arm_stats.n must equal rebuild_state's (1e-9), arm_stats.n the
# count of the arm's rows in the log, and checkpoint() must change nothing.
#
# Shape: one pgbench run, 16 clients x 1,000 transactions; each transaction is
# one single-row autocommit INSERT per selector (so every writer interleaves
# with every other on every selector), a random arm of 2, a random context
# (dim 4) and a random reward in [0, 1], after a scores() call on one random
# lin/rff selector (so that writers' and the checkpointer's checkpoints start
# from their caches' folds, as they do in a routing application).  Nine selectors, one per
# configuration; the stationary pak_ucb selector (exact kernel state, O(n^2)
# per arm) gets a reward in 1 transaction out of 40 only (~400 rewards), the
# other eight get 16,000 each.  Automatic checkpoints are made frequent with
# model_select.checkpoint_threshold = 50 (ignored by versions without it).
#
# Knobs: MS_A_WRITERS (16), MS_A_PER_WRITER (1000).
# Needs PGHOST/PGPORT/PGUSER of a running cluster with model_select installed.
set -euo pipefail
DB=ms_session_writers
. "$(dirname "$0")/lib/common.bash"

WRITERS=${MS_A_WRITERS:-16}
PER_WRITER=${MS_A_PER_WRITER:-1000}
TOTAL=$((WRITERS * PER_WRITER))
SELECTORS="lin_stat lin_win lin_disc rff_stat rff_win rff_disc pak_stat pak_win pak_disc"

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selectors failed"
SELECT model_select.create_selector('lin_stat', 4, ARRAY['a','b'], 'lin_ucb');
SELECT model_select.create_selector('lin_win',  4, ARRAY['a','b'], 'lin_ucb', NULL, '{"window": 50}');
SELECT model_select.create_selector('lin_disc', 4, ARRAY['a','b'], 'lin_ucb', NULL, '{"discount": 0.9}');
SELECT model_select.create_selector('rff_stat', 4, ARRAY['a','b'], 'rff_ucb', NULL, '{"features": 8}');
SELECT model_select.create_selector('rff_win',  4, ARRAY['a','b'], 'rff_ucb', NULL, '{"features": 8, "window": 50}');
SELECT model_select.create_selector('rff_disc', 4, ARRAY['a','b'], 'rff_ucb', NULL, '{"features": 8, "discount": 0.9}');
SELECT model_select.create_selector('pak_stat', 4, ARRAY['a','b'], 'pak_ucb');
SELECT model_select.create_selector('pak_win',  4, ARRAY['a','b'], 'pak_ucb', NULL, '{"window": 50}');
SELECT model_select.create_selector('pak_disc', 4, ARRAY['a','b'], 'pak_ucb', NULL, '{"discount": 0.9}');
SQL

script=$MS_WORK/writer.sql
{
    # a writer also scores one lin/rff selector per transaction: its cache then
    # holds folds, which its automatic checkpoints start from (checkpoint.c)
    echo '\set k random(1, 6)'
    echo "SELECT count(*) FROM model_select.scores((ARRAY['lin_stat','lin_win','lin_disc','rff_stat','rff_win','rff_disc'])[:k], ms_rand(4));"
    for s in $SELECTORS; do
        if [ "$s" = pak_stat ]; then
            echo '\set r random(1, 40)'
            echo '\if :r = 1'
        fi
        echo "INSERT INTO model_select.rewards(selector, arm, context, reward)
    VALUES ('$s', (ARRAY['a','b'])[1 + (random() < 0.5)::int], ms_rand(4), random());" | tr '\n' ' '
        echo
        [ "$s" = pak_stat ] && echo '\endif'
    done
} >"$script"

have_ckpt=0
has_function checkpoint && have_ckpt=1

# -- background readers and checkpointer, until the writers are done ---------
stop=$MS_WORK/stop
reader() {
    local i=$1 errs=0 runs=0
    while [ ! -e "$stop" ]; do
        if q -c "SELECT count(*) FROM model_select.selectors s, generate_series(1, 3) k,
                        LATERAL model_select.scores(s.name, ms_probe(s.dim, k)) c
                  WHERE c.mean IS NOT NULL OR c.n = 0" >/dev/null 2>>"$MS_WORK/reader_$i.err"
        then runs=$((runs + 1)); else errs=$((errs + 1)); fi
    done
    echo "$runs $errs" >"$MS_WORK/reader_$i.out"
}
checkpointer() {
    local errs=0 runs=0
    while [ ! -e "$stop" ]; do
        # scores first, in the same session: the checkpoints start from its folds
        if q -c "SELECT count(*) FROM model_select.selectors s, LATERAL model_select.scores(s.name, ms_probe(s.dim, 1)) c" \
               -c "SELECT sum(model_select.checkpoint(name)) FROM model_select.selectors" \
               >/dev/null 2>>"$MS_WORK/ckpt.err"
        then runs=$((runs + 1)); else errs=$((errs + 1)); fi
        sleep 0.3
    done
    echo "$runs $errs" >"$MS_WORK/ckpt.out"
}
reader 1 & MS_BG_PIDS+=($!); rpid1=$!
reader 2 & MS_BG_PIDS+=($!); rpid2=$!
if [ "$have_ckpt" = 1 ]; then
    checkpointer & MS_BG_PIDS+=($!); cpid=$!
fi

t0=$(date +%s)
set +e
PGOPTIONS="-c model_select.checkpoint_threshold=50" \
    pgbench -n --verbose-errors -c "$WRITERS" -j "$WRITERS" -t "$PER_WRITER" -f "$script" "$DB" \
    >"$MS_WORK/pgbench.out" 2>"$MS_WORK/pgbench.err"
pgbench_rc=$?
set -e
t1=$(date +%s)
touch "$stop"
wait "$rpid1" "$rpid2"
[ "$have_ckpt" = 1 ] && wait "$cpid"
echo "# writers took $((t1 - t0)) s"
sed -n 's/^\(number of\|latency average\|tps\)/#   &/p' "$MS_WORK/pgbench.out"
grep -m 5 'ERROR' "$MS_WORK/pgbench.err" | sed 's/^/#   /' || true

pgbench_ok() {
    [ "$pgbench_rc" -eq 0 ] &&
    grep -q "number of transactions actually processed: $TOTAL/$TOTAL" "$MS_WORK/pgbench.out" &&
    ! grep -q '^number of failed transactions: [1-9]' "$MS_WORK/pgbench.out" || {
        echo "#   pgbench exit $pgbench_rc"; sort "$MS_WORK/pgbench.err" | uniq -c | sort -rn | head -n 5 | sed 's/^/#   /'
        return 1; }
}
check "$WRITERS writers x $PER_WRITER transactions: all committed, none failed" pgbench_ok
read -r r1 e1 <"$MS_WORK/reader_1.out"; read -r r2 e2 <"$MS_WORK/reader_2.out"
readers_ok() {
    [ "$((e1 + e2))" -eq 0 ] && [ "$((r1 + r2))" -gt 0 ] || {
        echo "#   reader runs $r1/$r2, errors $e1/$e2"; cat "$MS_WORK"/reader_*.err | sort | uniq -c | head -n 5 | sed 's/^/#   /'
        return 1; }
}
check "scores() readers ran meanwhile without error ($((r1 + r2)) passes)" readers_ok
if [ "$have_ckpt" = 1 ]; then
    read -r cr ce <"$MS_WORK/ckpt.out"
    check "checkpoint() calls ran meanwhile without error ($cr calls)" \
        eval '[ "$ce" -eq 0 ] && [ "$cr" -gt 0 ] || { head -n 5 "$MS_WORK/ckpt.err" | sed "s/^/#   /"; false; }'
else
    skip "checkpoint() calls ran meanwhile without error" "model_select.checkpoint() does not exist"
fi

for s in $SELECTORS; do
    if [ "$s" = pak_stat ]; then
        check "$s: the log holds between 1 and $TOTAL rewards" \
            is_true "SELECT count(*) BETWEEN 1 AND $TOTAL FROM model_select.rewards WHERE selector = '$s'"
    else
        check "$s: the log and the bases (the log's horizon) hold exactly $TOTAL rewards" \
            is_true "SELECT sum(logged + absorbed) = $TOTAL FROM ms_arm_counts('$s')"
    fi
    rebuild_checks "$s"
done

if [ "$failed" -ne 0 ]; then
    echo "# first differences (live vs rebuilt):"
    for s in $SELECTORS; do
        q -c "SELECT '$s ' || d FROM ms_diff('live', 'rebuilt', '$s') d LIMIT 2" 2>&1 | sed 's/^/#   /'
    done
fi
finish
