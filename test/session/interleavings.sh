#!/usr/bin/env bash
# Interleavings that once went wrong, each forced step by step with sessions
# kept open (one psql per session, fed through a fifo):
#
# 1. A reader whose transaction has written, with a snapshot taken while an
#    older transaction x was still running: x then rewards arm a and commits,
#    the reader writes (its xid is newer than x's and than a committed y's)
#    and scores.  x's reward is not in the reader's snapshot, so it must not
#    fold rows past it into the base it keeps: that backend's later scores,
#    and a checkpoint() it makes from that base, must still count x's reward
#    (arm_stats.n = the log, state = rebuild_state's).  Under REPEATABLE READ
#    (the snapshot is the transaction's) and READ COMMITTED (the snapshot is
#    the statement's; x commits between the reader's statements).  Likewise
#    a checkpoint() in a REPEATABLE READ transaction that has written: its
#    rows are read under the transaction's snapshot, which misses x's.
# 2. route() then, in the same transaction, its reward, while
#    alter_selector() waits for that transaction: no deadlock (40P01), both
#    succeed, and the reward is learned under the new settings.
#    Likewise checkpoint() then a reward in one transaction: checkpoint()
#    takes the settings lock as a reward insert does.
# 3. A reward insert that makes an arm due while a checkpoint() that has
#    rewritten that arm's row is still open: the insert skips the arm at
#    once (it never waits for another writer; waiting made it deadlock with
#    a checkpoint() waiting for an arm the insert's transaction held).
# 4. drop_selector() racing a reward insert and a route() that read the
#    selector before the drop committed: they wait for the drop, then the
#    route and the reward fail with 42704 naming the selector
#    (the documented errors, never XX000, never an id), a later one with
#    42704, and none of the selector's rows is left behind.
# 5. drop_selector() while a transaction rewards arm b, then arm a (and
#    while one routes, then rewards its decision): no deadlock (40P01).  The
#    drop waits for the writers in flight before it deletes any arm; it used
#    to lock the arms in its own order, against theirs.
#
# Needs PGHOST/PGPORT/PGUSER of a running cluster with model_select installed.
set -euo pipefail
DB=ms_session_interleavings
. "$(dirname "$0")/lib/common.bash"

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selectors failed"
SELECT model_select.create_selector('late_rr', 2, ARRAY['a','b'], 'greedy');
SELECT model_select.create_selector('late_rc', 2, ARRAY['a','b'], 'lin_ucb');
SELECT model_select.create_selector('late_ckpt', 2, ARRAY['a','b'], 'greedy');
SELECT model_select.create_selector('route_alter', 2, ARRAY['a','b'], 'lin_ucb');
SELECT model_select.create_selector('busy', 2, ARRAY['a','b'], 'greedy');
SELECT model_select.create_selector('ckpt_alter', 2, ARRAY['a','b'], 'greedy');
SELECT model_select.create_selector('dropped', 2, ARRAY['a','b'], 'lin_ucb');
-- arm a's n after 1.5 s, under the snapshot of the calling statement (STABLE)
CREATE FUNCTION slow_n(sel text) RETURNS bigint LANGUAGE plpgsql STABLE AS $$
BEGIN
    PERFORM pg_sleep(1.5);
    RETURN (SELECT n FROM model_select.scores(sel, '{1,0}'::float8[]) WHERE arm = 'a');
END $$;
SQL

reward() {  # reward SELECTOR ARM VALUE: one autocommit insert in a session of its own
    q -c "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('$1', '$2', '{1,0}', $3)"
}

# -- 1. a reader's base never passes a row its snapshot cannot see -----------
late_commit() {  # late_commit SELECTOR ISOLATION
    local sel=$1 iso=$2
    session x; session reader
    say x "BEGIN; SELECT pg_current_xact_id() IS NOT NULL;"          # x: an xid, open
    reward "$sel" a 0.2                                              # y > x commits
    if [ "$iso" = rr_checkpoint ]; then
        # no load before: the checkpoint folds the log itself, under the transaction's snapshot
        say reader "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT 1;"
        say x "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('$sel', 'a', '{1,0}', 0.9); COMMIT;"
        say reader "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('$sel', 'b', '{1,0}', 0.5);
                    SELECT model_select.checkpoint('$sel'); COMMIT;"
    elif [ "$iso" = rr ]; then
        say reader "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT n FROM model_select.scores('$sel', '{1,0}'::float8[]) WHERE arm = 'a';"
        say x "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('$sel', 'a', '{1,0}', 0.9); COMMIT;"
        say reader "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('$sel', 'b', '{1,0}', 0.5);
                    SELECT n FROM model_select.scores('$sel', '{1,0}'::float8[]) WHERE arm = 'a'; COMMIT;"
    else
        # the reader's xid is newer than x's; x commits while its statement runs
        say reader "BEGIN; INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('$sel', 'b', '{1,0}', 0.5);"
        say_async reader "SELECT slow_n('$sel');"
        backend_waits Timeout '%slow_n%'
        say x "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('$sel', 'a', '{1,0}', 0.9); COMMIT;"
        said reader
        say reader "COMMIT;"
    fi
    say reader "SELECT 'after', n FROM model_select.scores('$sel', '{1,0}'::float8[]) WHERE arm = 'a';
                SELECT 'checkpoint', model_select.checkpoint('$sel');"
    close_sessions
    check "$sel: the reader's backend then counts x's reward (n = 2)" \
        grep -qx 'after|2' "$MS_WORK/reader.out"
    rebuild_checks "$sel"
}
late_commit late_rr rr
late_commit late_rc rc
late_commit late_ckpt rr_checkpoint

# -- 2. route() or checkpoint() then a reward, with alter_selector() in between
# race_alter SESSION SELECTOR FIRST SETTINGS SECOND WHAT: SESSION runs BEGIN and FIRST,
# alter_selector(SELECTOR, SETTINGS) starts in another session, then SESSION runs
# SECOND and COMMIT: both must succeed (no deadlock).
race_alter() {
    local name=$1 sel=$2 first=$3 settings=$4 second=$5 what=$6 alter_pid alter_rc
    session "$name"
    say "$name" "BEGIN; $first"
    # the exit status goes to a file: close_sessions' plain wait reaps this job too
    rm -f "$MS_WORK/alter.rc"
    { q -c "SELECT model_select.alter_selector('$sel', '$settings')" >"$MS_WORK/alter.out" 2>&1
      echo $? >"$MS_WORK/alter.rc"; } &
    alter_pid=$!
    # until alter_selector() waits for the transaction's lock, or is done
    # (when nothing it needs is held: the order is then simply alter, reward)
    for _ in $(seq 1 1200); do
        kill -0 "$alter_pid" 2>/dev/null || break
        [ "$(q -c "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE datname = current_database()
                      AND wait_event_type = 'Lock' AND query LIKE '%alter_selector%')")" = t ] && break
        sleep 0.1
    done
    say "$name" "$second COMMIT;"
    close_sessions
    wait "$alter_pid" 2>/dev/null || true
    alter_rc=$(cat "$MS_WORK/alter.rc" 2>/dev/null || echo missing)
    check "$what while alter_selector() waits: the transaction commits" \
        eval "! grep -q ERROR '$MS_WORK/$name.out' || { sed 's/^/#   /' '$MS_WORK/$name.out'; false; }"
    check "... and alter_selector() succeeds (no deadlock)" \
        eval "[ '$alter_rc' = 0 ] || { echo '#   exit status: $alter_rc'; sed 's/^/#   /' '$MS_WORK/alter.out'; false; }"
}
race_alter router route_alter \
    "SELECT decision_id AS d FROM model_select.route('route_alter', '{1,0}'::float8[]) \\gset" \
    '{"alpha": 2}' "INSERT INTO model_select.rewards(decision_id, reward) VALUES (:d, 0.5);" \
    "route() then its reward"
check "... the reward is logged, the settings changed" \
    is_true "SELECT count(*) = 1 AND min(s.settings->>'alpha') = '2' FROM model_select.rewards r
               JOIN model_select.selectors s ON s.selector_id = r.selector_id WHERE s.name = 'route_alter'"
rebuild_checks route_alter

reward ckpt_alter a 0.5
race_alter checkpointer ckpt_alter "SELECT model_select.checkpoint('ckpt_alter');" \
    '{"reward_max": 2}' \
    "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('ckpt_alter', 'b', '{1,0}', 0.5);" \
    "checkpoint() then a reward in one transaction"
rebuild_checks ckpt_alter

# -- 3. a due arm whose row an open checkpoint() rewrote is skipped ----------
reward busy a 0.5
session checkpointer
say checkpointer "BEGIN; SELECT model_select.checkpoint('busy');"
check "a reward insert that makes an arm due does not wait for an open checkpoint() of it" \
    q -c "SET model_select.checkpoint_threshold = 1" -c "SET lock_timeout = '3s'" \
      -c "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('busy', 'a', '{1,0}', 0.7)"
say checkpointer "COMMIT;"
close_sessions
rebuild_checks busy

# -- 4. drop_selector() racing writers ---------------------------------------
reward dropped a 0.5
DROPPED_ID=$(q -c "SELECT selector_id FROM model_select.selectors WHERE name = 'dropped'")
session dropper
session writer
session router
say dropper "BEGIN; SELECT model_select.drop_selector('dropped');"
say writer '\set VERBOSITY verbose'
say_async writer "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('dropped', 'a', '{1,0}', 0.5);"
say router '\set VERBOSITY sqlstate'
say_async router "SELECT arm FROM model_select.route('dropped', '{1,0}'::float8[]);"
backend_waits Lock '%' 2   # both wait for the drop (its lock on the selector's settings)
say dropper "COMMIT;"
close_sessions
check "drop_selector() racing a reward insert and a route(): 42704 naming the selector, and 42704 (no decision outlives it)" \
    eval "grep -q 'ERROR:  42704: selector \"dropped\" does not exist' '$MS_WORK/writer.out' &&
          grep -q 'ERROR:  42704' '$MS_WORK/router.out' ||
          { sed 's/^/#   /' '$MS_WORK/writer.out' '$MS_WORK/router.out'; false; }"
late_reward_error() {
    q -v VERBOSITY=sqlstate -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
        VALUES ('dropped', 'a', '{1,0}', 0.5)" 2>&1 || true
}
check "... a reward insert after the drop fails with 42704" \
    eval "late_reward_error | grep -q 'ERROR:  42704'"
check "... and nothing of the selector is left" \
    is_true "SELECT NOT EXISTS (SELECT FROM model_select.rewards WHERE selector_id = $DROPPED_ID)
                AND NOT EXISTS (SELECT FROM model_select.decisions WHERE selector_id = $DROPPED_ID)
                AND NOT EXISTS (SELECT FROM model_select.arms WHERE selector_id = $DROPPED_ID)
                AND NOT EXISTS (SELECT FROM model_select.arm_state WHERE selector_id = $DROPPED_ID)"

# -- 5. drop_selector() against writers that take arms in another order -----
drop_waits() { backend_waits Lock '%drop_selector%'; }   # until the dropper waits for a lock
q -c "SELECT model_select.create_selector(s, 2, ARRAY['a','b'], 'lin_ucb') FROM unnest(ARRAY['drop_ba', 'drop_route']) s" >/dev/null
session writer
session dropper
say writer '\set VERBOSITY verbose'
say dropper '\set VERBOSITY verbose'
say writer "BEGIN; INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('drop_ba', 'b', '{1,0}', 0.5);"
say_async dropper "SELECT model_select.drop_selector('drop_ba');"
drop_waits
say writer "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('drop_ba', 'a', '{0,1}', 0.5); COMMIT;"
close_sessions
check "drop_selector() while a transaction rewards arm b, then a: no deadlock, both succeed" \
    no_error writer dropper
check "... and the selector is gone" \
    is_true "SELECT NOT EXISTS (SELECT FROM model_select.selectors WHERE name = 'drop_ba')"
session writer
session dropper
say writer '\set VERBOSITY verbose'
say dropper '\set VERBOSITY verbose'
say writer "BEGIN; SELECT decision_id AS d1 FROM model_select.route('drop_route', '{1,0}'::float8[]) \\gset"
say_async dropper "SELECT model_select.drop_selector('drop_route');"
drop_waits
say writer "SELECT decision_id AS d2 FROM model_select.route('drop_route', '{0,1}'::float8[]) \\gset"
say writer "INSERT INTO model_select.rewards(decision_id, reward) VALUES (:d2, 0.5), (:d1, 0.4); COMMIT;"
close_sessions
check "drop_selector() while a transaction routes twice and rewards both decisions: no deadlock, both succeed" \
    no_error writer dropper
finish
