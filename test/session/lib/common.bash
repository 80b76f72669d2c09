# Shared helpers for the session tests of test/session/*.sh (sourced, not run).
#
#   ms_setup DB          create database DB with the extension and the helper
#                        objects below; dropped again on exit (trap), with
#                        the roles named in MS_ROLES (dropped before set-up too)
#   q ARGS...            psql on $DB: unaligned, tuples only, stop on error
#   check DESC CMD...    one TAP line: "ok N - DESC" when CMD succeeds
#   skip DESC REASON     one TAP line: "ok N - DESC # SKIP REASON"
#   is_true SQL          the query returns exactly "t"
#   has_function NAME    model_select.NAME exists (catalog)
#   has_column REL COL   model_select.REL has column COL (catalog)
#   rebuild_checks SEL   the standard comparison with the log and rebuild_state:
#                        scores of every arm at 3 fixed probe contexts (n, mean,
#                        width, ucb) and arm_stats.n captured live, after
#                        checkpoint(SEL) (skipped when absent) and after
#                        rebuild_state(SEL); all must agree, and arm_stats.n
#                        must equal count(*) of the arm's rows in the log
#                        (where a learner serves, once its versions hold the log).
#   finish               summary line; exit status 0 only if nothing failed
#   session NAME, say NAME SQL, close_sessions
#                        sessions kept open, fed statement by statement: say
#                        returns once the session has run SQL; say_async
#                        returns at once (for a statement meant to block),
#                        said NAME waits for it later
#   rq SQL               run SQL in the test's coprocess R (started by the test:
#                        coproc R { psql ... }; r_in=${R[1]}; r_out=${R[0]}),
#                        print its output (60 s per line)
#   same_as_fresh DESC   check that SELECT digest() (the test's function) gives
#                        the same in R as in a fresh session
#   rederive FILTER [CMP], rederive_sql FILTER [CMP]
#                        no decision of FILTER (a condition on decisions d) has a
#                        chosen arm whose scores, re-derived by decision_scores(),
#                        are not CMP to what it logged (default: the same bits);
#                        rederive_sql is the query listing those that are not
#   say_traced NAME SQL  say, and keep SQL in TRACE (the last MS_TRACE_LINES,
#                        default 24, of every session, for a failure to print)
#   other_errors NAME... the ERROR lines of those sessions' output, but for the
#                        documented 40001 of a transaction older than a
#                        checkpoint of a selector it then rewards, and the
#                        statements of its aborted transaction after it
#   late_writer_refusals NAME...
#                        how many of those 40001s the sessions saw
#   wait_for DESC SQL    poll until SQL returns "t" (deadline MS_WAIT_SECONDS,
#                        default 120 s); on giving up, print what was seen
#   backend_waits TYPE LIKE [N]
#                        wait_for N (default 1) backends of this database whose
#                        query is LIKE the pattern to wait with wait_event_type
#                        TYPE ('Lock', 'Timeout' for pg_sleep, ...)
#   stop_idle PID        SIGSTOP a learner process while it waits on its latch
#                        (wait event type Extension), where it holds no lock:
#                        stopped in a pass it could hold a buffer's content
#                        lock that every writer then waits for; a stop
#                        elsewhere is undone (SIGCONT) and tried again
#
# Tests do not time the machine: nothing here sleeps for a fixed interval and
# then assumes another process got somewhere; every wait is for a condition,
# with a deadline, and says what it saw when it gives up (docs/hacking.md).
#
# Floats are "close" when x = y or |x - y| <= 1e-9 * max(1, |x|, |y|): an
# absolute 1e-9 for values of the size of a reward (rewards lie in [0, 1]), a
# relative 1e-9 for larger ones (widths, ucb); equal infinities are equal.

: "${DB:?set DB before sourcing common.bash}"
MS_WORK=$(mktemp -d "${TMPDIR:-/tmp}/ms_session.XXXXXX")
MS_BG_PIDS=()

# The roles a test creates (MS_ROLES, set before sourcing), after its database.
ms_drop_roles() {
    local r
    for r in ${MS_ROLES:-}; do
        psql -X -q -d postgres -c "DROP ROLE IF EXISTS $r" >/dev/null 2>&1 || true
    done
}

ms_cleanup() {
    local p
    for p in "${MS_BG_PIDS[@]}"; do
        kill "$p" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    [ -n "${MS_KEEP_DB:-}" ] || dropdb --if-exists --force "$DB" >/dev/null 2>&1 || true
    ms_drop_roles
    if [ -n "${MS_EXTRA_CLEANUP:-}" ]; then eval "$MS_EXTRA_CLEANUP"; fi
    rm -rf "$MS_WORK"
}
trap ms_cleanup EXIT

q() { psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" "$@"; }

passed=0
failed=0
n=0
check() {
    local desc=$1; shift
    n=$((n + 1))
    if "$@"; then
        echo "ok $n - $desc"
        passed=$((passed + 1))
    else
        echo "not ok $n - $desc"
        failed=$((failed + 1))
    fi
}
skip() {
    n=$((n + 1))
    echo "ok $n - $1 # SKIP $2"
    passed=$((passed + 1))
}
is_true() {
    local out
    out=$(q -c "$1" 2>&1) || { echo "#   query failed: $out" | head -n 5; return 1; }
    [ "$out" = t ] || { echo "#   got: $out" | head -n 20; return 1; }
}
finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}
bail() {
    echo "Bail out! $*"
    failed=$((failed + 1))
    finish || exit 1
}

has_function() {
    [ "$(q -c "SELECT count(*) > 0 FROM pg_proc WHERE proname = '$1'
                 AND pronamespace = 'model_select'::regnamespace")" = t ]
}
has_column() {
    [ "$(q -c "SELECT count(*) > 0 FROM pg_attribute WHERE attrelid = 'model_select.$1'::regclass
                 AND attname = '$2' AND NOT attisdropped")" = t ]
}

# Sessions kept open: session NAME starts one psql on $DB fed through a fifo
# (its output in $MS_WORK/NAME.out), say NAME SQL sends it a statement,
# session_close NAME ends one, close_sessions ends them all and waits for them.
declare -A FD SESSION_PID
# In a subshell about to start a process that outlives the statement (a
# session's psql, a server): close the sessions' ends of their fifos, which it
# would otherwise hold open, so that a session closed alone never saw EOF.
close_session_fds() { local fd; for fd in "${FD[@]}"; do eval "exec $fd>&-"; done; }
session() {
    rm -f "$MS_WORK/$1.in"
    mkfifo "$MS_WORK/$1.in"
    (
        close_session_fds
        exec psql -X -q -A -t -v VERBOSITY=terse -d "$DB" <"$MS_WORK/$1.in" >"$MS_WORK/$1.out" 2>&1
    ) &
    MS_BG_PIDS+=($!)
    SESSION_PID[$1]=$!
    exec {fd}>"$MS_WORK/$1.in"
    FD[$1]=$fd
}
# session_close NAME: end that session alone, once its psql has exited
session_close() {
    exec {FD[$1]}>&-
    unset "FD[$1]"
    wait "${SESSION_PID[$1]}" || true
}
declare -A SAID       # the marker each session prints after its last statement
SAY_SEQ=0
say() { say_async "$1" "$2" && said "$1"; }
say_async() {
    SAY_SEQ=$((SAY_SEQ + 1))
    SAID[$1]=ms_said_$SAY_SEQ
    printf '%s\n\\echo %s\n' "$2" "${SAID[$1]}" >&"${FD[$1]}"
}
said() {  # said NAME: until session NAME has run what it was last told
    local i
    for i in $(seq 1 $((${MS_WAIT_SECONDS:-120} * 10))); do
        grep -qx "${SAID[$1]}" "$MS_WORK/$1.out" && return 0
        sleep 0.1
    done
    echo "# session $1 did not get past its statement within ${MS_WAIT_SECONDS:-120} s; its output:"
    sed 's/^/#   /' "$MS_WORK/$1.out"
    ms_activity
    return 1
}
# budget_selector NAME SETTINGS: a greedy selector with arms 'free' (0.4 at cost 0) and 'dear'
# (0.9 at cost 1), learned from a reward each without a decision (no spend): the budget tests'
budget_selector() {
    q >/dev/null <<SQL
SELECT model_select.create_selector('$1', 2, ARRAY['free', 'dear'], 'greedy', NULL, '$2');
INSERT INTO model_select.rewards(selector, arm, context, reward, cost)
VALUES ('$1', 'free', ARRAY[1, 0]::float8[], 0.4, 0), ('$1', 'dear', ARRAY[1, 0]::float8[], 0.9, 1);
SQL
}
# lambda_is SAME GOT WANT: the λ GOT is (SAME = same) or is not (SAME = other) WANT, to 1e-9
lambda_is() {
    local equal
    equal=$(q -c "SELECT abs(${2:-NaN}::float8 - $3) < 1e-9")
    if [ "$1" = same ] && [ "$equal" = t ]; then return 0; fi
    if [ "$1" = other ] && [ "$equal" != t ]; then return 0; fi
    echo "#   λ '$2', the log's exact λ $3 (wanted: $1)"
    return 1
}
TRACE=""
say_traced() {
    TRACE="$(printf '%s\n%s: %s' "$TRACE" "$1" "$2" | tail -n "${MS_TRACE_LINES:-24}")"
    say "$1" "$2"
}
# no_error SESSION...: none of the sessions' output has an ERROR (else it is printed)
no_error() {
    local s
    for s in "$@"; do
        ! grep -q 'ERROR' "$MS_WORK/$s.out" || { sed 's/^/#   /' "$MS_WORK/$s.out"; return 1; }
    done
}
LATE_WRITER="older than rewards of selector .* that are already checkpointed"
other_errors() {
    local s
    for s in "$@"; do cat "$MS_WORK/$s.out"; done |
        grep -E "ERROR" | grep -v -E "$LATE_WRITER|current transaction is aborted" || true
}
late_writer_refusals() {
    local s
    for s in "$@"; do cat "$MS_WORK/$s.out"; done | grep -c -E "$LATE_WRITER" || true
}
rederive_sql() {
    local cmp=${2:-"r.ucb IS NOT DISTINCT FROM d.score AND r.mean IS NOT DISTINCT FROM d.mean"}
    echo "SELECT d.decision_id || ' ' || s.name || '/' || a.name || ': ucb ' || d.score || ' vs ' || r.ucb
                 || ', mean ' || d.mean || ' vs ' || r.mean
            FROM model_select.decisions d JOIN model_select.selectors s USING (selector_id)
            JOIN model_select.arms a USING (arm_id)
            CROSS JOIN LATERAL model_select.decision_scores(d.decision_id) r
           WHERE r.arm = a.name AND NOT ($cmp) AND $1"
}
rederive() { no_rows "$(rederive_sql "$@")"; }
# last_answer NAME: the output of session NAME's last statement (its line before the marker)
last_answer() { grep -B1 -x "${SAID[$1]}" "$MS_WORK/$1.out" | head -n 1; }
# What this database's backends are doing (printed by a wait that gives up).
ms_activity() {
    q -c "SELECT pid || ' ' || state || ' ' || coalesce(wait_event_type || ':' || wait_event, '-')
                 || coalesce(' (blocked by ' || nullif(pg_blocking_pids(pid)::text, '{}') || ')', '') || ' ' || left(query, 70)
            FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()" |
        sed 's/^/#   backend /'
}
wait_for() {  # wait_for DESC SQL
    local i
    for i in $(seq 1 $((${MS_WAIT_SECONDS:-120} * 10))); do
        [ "$(q -c "$2" 2>/dev/null)" = t ] && return 0
        sleep 0.1
    done
    echo "# gave up after ${MS_WAIT_SECONDS:-120} s waiting for $1; last answer: $(q -c "$2" 2>&1 | head -n 3)"
    ms_activity
    return 1
}
backend_waits() {  # backend_waits TYPE LIKE [N]
    wait_for "${3:-1} backend(s) running '$2' to wait ($1)" \
        "SELECT count(*) >= ${3:-1} FROM pg_stat_activity WHERE datname = current_database()
            AND wait_event_type = '$1' AND query LIKE '$2' AND pid <> pg_backend_pid()"
}
stop_idle() {  # stop_idle PID
    local i seen
    for i in $(seq 1 $((${MS_WAIT_SECONDS:-120} * 10))); do
        kill -STOP "$1"
        seen=$(q -c "SELECT coalesce(wait_event_type, 'running') FROM pg_stat_activity WHERE pid = $1")
        [ "$seen" = Extension ] && return 0
        kill -CONT "$1"
        sleep 0.1
    done
    echo "# gave up after ${MS_WAIT_SECONDS:-120} s stopping $1 while it waits on its latch; last seen: $seen"
    return 1
}
rq() {
    local line
    printf '%s\nSELECT %s;\n' "$1" "'R_DONE'" >&"$r_in"
    while IFS= read -r -t 60 line <&"$r_out"; do
        [ "$line" = R_DONE ] && return 0
        printf '%s\n' "$line"
    done
    echo "# no answer from R"
    return 1
}
same_as_fresh() {
    local mine theirs
    mine=$(rq "SELECT digest();")
    theirs=$(q -c "SELECT digest()")
    check "$1" eval '[ "$mine" = "$theirs" ] || { echo "#   R:     $mine"; echo "#   fresh: $theirs"; false; }'
}
close_sessions() {
    local s
    for s in "${!FD[@]}"; do exec {FD[$s]}>&-; done
    FD=()
    wait
    MS_BG_PIDS=()
}

# Helper objects in the test database (schema public, not the extension's).
MS_HELPERS=$(cat <<'SQL'
-- k-th fixed probe context of dimension d, in [-1, 1]^d.
CREATE FUNCTION ms_probe(d int, k int) RETURNS float8[] LANGUAGE sql IMMUTABLE AS
$$ SELECT array_agg(sin(k * 1.7 + j * 0.9) ORDER BY j) FROM generate_series(1, d) j $$;
-- a random context in [-1, 1]^d
CREATE FUNCTION ms_rand(d int) RETURNS float8[] LANGUAGE sql VOLATILE AS
$$ SELECT array_agg(2 * random() - 1) FROM generate_series(1, d) $$;
CREATE FUNCTION ms_close(x float8, y float8) RETURNS bool LANGUAGE sql IMMUTABLE AS
$$ SELECT x = y OR abs(x - y) <= 1e-9 * greatest(1, abs(x), abs(y)) $$;
CREATE TABLE ms_snap (label text, selector text, probe int, arm text,
                      n bigint, mean float8, width float8, ucb float8);
CREATE TABLE ms_nsnap (label text, selector text, arm text, n bigint);
-- capture scores at 3 probes and arm_stats.n of selector sel under label
CREATE FUNCTION ms_take(label text, sel text) RETURNS void LANGUAGE sql AS $$
    DELETE FROM ms_snap WHERE ms_snap.label = ms_take.label AND selector = sel;
    DELETE FROM ms_nsnap WHERE ms_nsnap.label = ms_take.label AND selector = sel;
    INSERT INTO ms_snap
    SELECT label, sel, k, c.arm, c.n, c.mean, c.width, c.ucb
      FROM model_select.selectors s, generate_series(1, 3) k,
           LATERAL model_select.scores(sel, ms_probe(s.dim, k)) c
     WHERE s.name = sel;
    INSERT INTO ms_nsnap SELECT label, sel, a.arm, a.n FROM model_select.arm_stats a
     WHERE a.selector = sel;
$$;
-- rows (as text) where two captures of sel differ; none = equal
CREATE FUNCTION ms_diff(l1 text, l2 text, sel text) RETURNS SETOF text LANGUAGE sql AS $$
    SELECT format('probe %s arm %s: %s vs %s', coalesce(a.probe, b.probe), coalesce(a.arm, b.arm),
                  row(a.n, a.mean, a.width, a.ucb), row(b.n, b.mean, b.width, b.ucb))
      FROM (SELECT * FROM ms_snap WHERE label = l1 AND selector = sel) a
      FULL JOIN (SELECT * FROM ms_snap WHERE label = l2 AND selector = sel) b USING (probe, arm)
     WHERE a.arm IS NULL OR b.arm IS NULL OR a.n IS DISTINCT FROM b.n
        OR NOT coalesce(ms_close(a.mean, b.mean), a.mean IS NULL AND b.mean IS NULL)
        OR NOT coalesce(ms_close(a.width, b.width), a.width IS NULL AND b.width IS NULL)
        OR NOT coalesce(ms_close(a.ucb, b.ucb), a.ucb IS NULL AND b.ucb IS NULL)
    UNION ALL
    SELECT format('arm_stats.n of arm %s: %s vs %s', coalesce(a.arm, b.arm), a.n, b.n)
      FROM (SELECT * FROM ms_nsnap WHERE label = l1 AND selector = sel) a
      FULL JOIN (SELECT * FROM ms_nsnap WHERE label = l2 AND selector = sel) b USING (arm)
     WHERE a.n IS DISTINCT FROM b.n
$$;
-- arms whose arm_stats.n differs from the count of their rows in the log
-- each arm's rewards: in its log, and absorbed into its base (the log's horizon)
CREATE FUNCTION ms_arm_counts(sel text) RETURNS TABLE (arm text, logged bigint, absorbed bigint) LANGUAGE sql AS $$
    SELECT a.name, (SELECT count(*) FROM model_select.rewards r WHERE r.arm_id = a.arm_id),
           coalesce((SELECT b.n FROM model_select.arm_base b WHERE b.arm_id = a.arm_id), 0)
      FROM model_select.arms a JOIN model_select.selectors s USING (selector_id) WHERE s.name = sel
$$;
CREATE FUNCTION ms_count_diff(sel text) RETURNS SETOF text LANGUAGE sql AS $$
    SELECT format('arm %s: arm_stats.n %s, log %s, base %s', st.arm, st.n, c.logged, c.absorbed)
      FROM model_select.arm_stats st JOIN ms_arm_counts(sel) c USING (arm)
     WHERE st.selector = sel AND st.n IS DISTINCT FROM c.logged + c.absorbed
$$;
SQL
)

# MS_KEEP_DB set: an existing $DB is emptied (the extension and schema public
# dropped and made again) instead of dropped, and kept at the end, so that a
# learner connected to it stays (learner.sh)
ms_setup() {
    if [ -n "${MS_KEEP_DB:-}" ] && q -c 'SELECT 1' >/dev/null 2>&1; then
        q -c 'DROP EXTENSION IF EXISTS model_select CASCADE' -c 'DROP SCHEMA public CASCADE' \
          -c 'CREATE SCHEMA public' -c 'GRANT ALL ON SCHEMA public TO PUBLIC' >/dev/null || return 1
    else
        dropdb --if-exists --force "$DB" >/dev/null 2>&1 || true
        createdb "$DB" || return 1
    fi
    ms_drop_roles
    q -c 'CREATE EXTENSION model_select' && q -c "$MS_HELPERS" >/dev/null
}

# no_rows SQL -- the query returns no rows (they are printed otherwise)
no_rows() {
    local out
    out=$(q -c "$1" 2>&1) || { echo "#   query failed: $out" | head -n 5; return 1; }
    [ -z "$out" ] || { printf '%s\n' "$out" | head -n 10 | sed 's/^/#   /'; return 1; }
}

# Where a learner serves the database, a decision scores its newest versions,
# which trail the log by its lag (docs/caches.md): wait (60 s) until every
# arm's model holds the arm's whole log before comparing with it.
learner_holds_log() {  # learner_holds_log SELECTOR
    local sql="SELECT NOT EXISTS (SELECT FROM model_select.learner WHERE running AND database = current_database())
                  OR (SELECT sum(sc.n) FROM model_select.selectors s,
                             model_select.scores(s.name, array_fill(0.5::float8, ARRAY[s.dim])) sc WHERE s.name = '$1')
                     = (SELECT sum(n) FROM model_select.arm_stats WHERE selector = '$1')"
    has_function learner_status || return 0
    # on giving up, the comparison that follows fails and shows the scores
    wait_for "the scores of $1 to hold its whole log" "$sql" || true
}

# SQL: true once a version of every arm of SELECTOR is published that holds the arm's whole log
versions_hold_log() {
    echo "SELECT count(*) = (SELECT count(*) FROM model_select.arms a JOIN model_select.selectors s USING (selector_id)
                              WHERE s.name = '$1')
            FROM model_select.learner_versions WHERE selector = '$1' AND NOT stale AND lag_rewards = 0"
}

rebuild_checks() {  # rebuild_checks SELECTOR [TAG]
    local sel=$1 tag=${2:-}
    learner_holds_log "$sel"
    q -c "SELECT ms_take('live', '$sel')" >/dev/null
    check "$sel$tag: arm_stats.n of every arm equals its count in the reward log and its base" \
        no_rows "SELECT * FROM ms_count_diff('$sel')"
    if has_function checkpoint; then
        check "$sel$tag: checkpoint() succeeds" q -c "SELECT model_select.checkpoint('$sel')" -o /dev/null
        q -c "SELECT ms_take('ckpt', '$sel')" >/dev/null
        check "$sel$tag: scores and n after checkpoint() equal the live ones (1e-9)" \
            no_rows "SELECT * FROM ms_diff('live', 'ckpt', '$sel')"
        if has_column arm_stats pending; then
            check "$sel$tag: no arm has pending rewards after checkpoint()" \
                no_rows "SELECT arm || ': ' || pending FROM model_select.arm_stats
                          WHERE selector = '$sel' AND pending <> 0"
        else
            skip "$sel$tag: no arm has pending rewards after checkpoint()" "arm_stats.pending does not exist"
        fi
    else
        skip "$sel$tag: checkpoint() and its comparison" "model_select.checkpoint() does not exist"
    fi
    check "$sel$tag: rebuild_state() succeeds" q -c "SELECT model_select.rebuild_state('$sel')" -o /dev/null
    q -c "SELECT ms_take('rebuilt', '$sel')" >/dev/null
    check "$sel$tag: live scores and n equal rebuild_state's (1e-9)" \
        no_rows "SELECT * FROM ms_diff('live', 'rebuilt', '$sel')"
}
