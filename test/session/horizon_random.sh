#!/usr/bin/env bash
# The log's horizon under late feedback, seeded and random: model_select
# preloaded, the learner serving, three sessions route, reward their own
# decisions late (any of their decisions still without a reward, in or
# outside the transaction that routed it), reward by arm and context, commit,
# roll back and roll back to savepoints (READ COMMITTED and REPEATABLE READ),
# and now and then run maintain() or checkpoint() on a selector, while
# retain, decision_ttl and forgetting absorb and delete rows under them.
# A transaction may first take its id with an unrelated write (then a
# checkpoint may pass it before it rewards: the late writer), and may end in
# PREPARE TRANSACTION, committed or rolled back later by any session.  Now
# and then the server is shut down at once (pg_ctl -m immediate), whatever
# is open or prepared, and restarted; the sessions reconnect and the
# prepared transactions are resolved after it.
# Decisions are logged by route() and by route_batch(log => true) (1-5
# rows, tags too).  Arms b, c and a new d of a selector and its twin are
# retired and added (back) in one statement (under a lock_timeout of 300 ms:
# one session's change waiting for another's gets 55P03; every statement
# has one of 5 s, as the driver steps one session at a time); rewards by arm go to
# the active ones.  Selectors (3 arms, dimension 3):
#   h_ret  lin_ucb, retain 3, decision_ttl 1 s;
#   h_win  lin_ucb, window 12 on the selector's clock (the log bounded by it);
#   h_dis  pak_ucb, discount 0.2 (the log bounded by 0.2^9 < 1e-6);
#   h_bud  lin_ucb, budget with count_pending, retain 4, decision_ttl 1 s,
#          routed with tags, rewards with costs.
# The first three have twins (t_ret, t_win, t_dis: the same settings without
# retain or decision_ttl, never maintained): every reward of one is copied
# to its twin by arm and the decision's context in the same statement, and
# a ledger row is written in that statement too, so the ledger holds exactly
# the rewards that committed.  At the end (learner_max_lag 0, every selector
# maintained):
#  - per arm, arm_stats.n and n x mean_reward equal the ledger's count and
#    sum (1e-9): no reward lost or counted twice by the absorptions;
#  - each twin scores what its selector scores (1e-9): what was absorbed
#    and deleted is still learnt, as if it had stayed in the log;
#  - no reward in the log points to a deleted decision;
#  - every decision that recorded versions re-derives bit for bit
#    (decision_scores(), route_batch()'s blocks too), and every selector's
#    scores equal
#    rebuild_state()'s.
# The errors a session may see: 42704 for a late reward of a decision that
# decision_ttl deleted (also racing the deletion; 40001 under REPEATABLE READ
# when the snapshot still shows it), 23505 for a second reward, 55000 for a
# reward of a retired arm, 55P03, 42710 or 40001 for an arm change racing
# another, and the documented 40001 for a transaction older than a
# checkpoint.  Ops are drawn from bash's
# RANDOM seeded by MS_HORIZON_RANDOM_SEED (default MS_RUN, or 1),
# MS_HORIZON_RANDOM_STEPS steps (default 300); a failure prints the seed and
# the last statements (MS_TRACE_LINES, default 24).
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_horizon_random
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
. "$(dirname "$0")/lib/random_sessions.bash"
SEED=${MS_HORIZON_RANDOM_SEED:-${MS_RUN:-1}}
STEPS=${MS_HORIZON_RANDOM_STEPS:-300}
preloaded_server hrandom "$(free_port $(( ${PGPORT:-55500} + 190 )))" \
    "model_select.learner_databases = '$DB'" "model_select.learner_naptime = '50ms'" \
    "model_select.learner_max_lag = '1s'" "max_prepared_transactions = 8"

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selectors failed"
SET client_min_messages = warning;  -- the arm's clock's NOTICE
SELECT model_select.create_selector(name, 3, ARRAY['a', 'b', 'c'], policy, NULL, settings::jsonb)
  FROM (VALUES ('h_ret', 'lin_ucb', '{"retain": 3, "decision_ttl": 1}'),
               ('t_ret', 'lin_ucb', '{}'),
               ('h_win', 'lin_ucb', '{"clock": "selector", "window": 12}'),
               ('t_win', 'lin_ucb', '{"clock": "selector", "window": 12}'),
               ('h_dis', 'pak_ucb', '{"discount": 0.2}'),
               ('t_dis', 'pak_ucb', '{"discount": 0.2}'),
               ('h_bud', 'lin_ucb', '{"budget": 0.5, "pace": 10, "pending_horizon": 30, "count_pending": true,
                                      "retain": 4, "decision_ttl": 1}')) s(name, policy, settings);
RESET client_min_messages;
-- each session's decisions (in the transaction that routed them), the
-- rewards that committed, and the twin of a selector
CREATE TABLE ms_mine (session text, decision_id bigint, batch boolean DEFAULT false);
CREATE TABLE ms_scratch (session text);
-- the active arms of a selector
CREATE FUNCTION ms_active(sel text, OUT arms text[]) LANGUAGE sql AS
$$ SELECT array_agg(a.name ORDER BY a.ordinal) FROM model_select.arms a JOIN model_select.selectors s USING (selector_id)
    WHERE s.name = sel AND a.active $$;
CREATE TABLE ms_ledger (selector text, arm text, reward float8);
CREATE FUNCTION ms_twin(sel text) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT CASE WHEN sel IN ('h_ret', 'h_win', 'h_dis') THEN 't' || substr(sel, 2) END $$;
-- capture the twin's scores and n (ms_take) as its selector's under label, for ms_diff()
CREATE FUNCTION ms_take_twin(label text, sel text) RETURNS void LANGUAGE sql AS $$
    SELECT ms_take(label, ms_twin(sel));
    UPDATE ms_snap SET selector = sel WHERE ms_snap.label = ms_take_twin.label AND selector = ms_twin(sel);
    UPDATE ms_nsnap SET selector = sel WHERE ms_nsnap.label = ms_take_twin.label AND selector = ms_twin(sel);
$$;
-- decision_scores() of every decision that recorded versions: rows where
-- it differs from the decision's logged ucb and mean, or where it refused one
-- (55000, counted in ms_refused) although every arm keeps the rewards it scored
CREATE TABLE ms_refused (decision_id bigint);
CREATE FUNCTION ms_rederive_kept() RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    d record;
    bad text;
BEGIN
    TRUNCATE ms_refused;
    FOR d IN SELECT * FROM model_select.decisions WHERE versions IS NOT NULL ORDER BY decision_id LOOP
        BEGIN
            SELECT format('decision %s (%s, versions %s): ucb %s vs %s, mean %s vs %s', d.decision_id, a.selector_id,
                          d.versions, d.score, r.ucb, d.mean, r.mean)
              INTO bad
              FROM model_select.decision_scores(d.decision_id) r
              JOIN model_select.arms a ON a.name = r.arm AND a.arm_id = d.arm_id
              JOIN model_select.selectors s ON s.selector_id = d.selector_id
             WHERE NOT (r.ucb IS NOT DISTINCT FROM d.score AND r.mean IS NOT DISTINCT FROM d.mean);
            IF bad IS NOT NULL THEN
                RETURN NEXT bad;
            END IF;
        EXCEPTION WHEN object_not_in_prerequisite_state THEN
            INSERT INTO ms_refused VALUES (d.decision_id);
            IF NOT EXISTS (SELECT FROM model_select.arms a JOIN model_select.arm_base b USING (arm_id)
                            WHERE a.selector_id = d.selector_id AND d.versions[a.ordinal] < b.n) THEN
                RETURN NEXT format('decision %s refused though its arms keep what it scored', d.decision_id);
            END IF;
        END;
    END LOOP;
END $$;
SQL
learner_serves() {
    wait_for "the learner's first pass" \
        "SELECT running AND last_pass IS NOT NULL FROM model_select.learner WHERE database = '$DB'"
}
check "the learner serves $DB" learner_serves
after_restart() { learner_serves; }

SELS=(h_ret h_win h_dis h_bud)
# (a statement waiting for another session's open transaction, which the driver will not end
# while it waits, gets 55P03 instead: an arm change waiting for another; once in 50 runs,
# before add_arm() share-locked the selector's row and reward inserts checkpointed at their
# commit, a REPEATABLE READ reward waited on a session idle after an arm change)
RANDOM_CLUSTER=hrandom RANDOM_SESSION_INIT="SET lock_timeout = '5s';"
random_sessions_open
DUPLICATE="duplicate key value violates unique constraint"
context() { CTX="ARRAY[$((RANDOM % 19 - 9)) * 0.1, $((RANDOM % 19 - 9)) * 0.1, 0.5]::float8[]"; }
# A reward (the SELECT list of the rewards' columns COLS from FROM) logged in
# one statement with its twin's copy, in the same order (a discount weighs
# by it), and its ledger row.
reward_sql() {  # reward_sql COLS SELECT FROM
    echo "WITH r AS (INSERT INTO model_select.rewards($1) SELECT $2 FROM $3
                     RETURNING selector, arm, decision_id, context, reward, cost, seq),
               t AS (INSERT INTO model_select.rewards(selector, arm, context, reward, cost)
                     SELECT ms_twin(r.selector), r.arm, coalesce(r.context, d.context, d.context_real::float8[]),
                            r.reward, r.cost
                       FROM r LEFT JOIN model_select.decisions d USING (decision_id)
                      WHERE ms_twin(r.selector) IS NOT NULL ORDER BY r.seq)
          INSERT INTO ms_ledger SELECT selector, arm, reward FROM r;"
}
value() { VAL="$((RANDOM % 11)) * 0.1"; COST="$((RANDOM % 3)) * 0.5"; }
routes() {  # routes SESSION: route a selector (h_bud with a tag or none), keep the decision as the session's
    local sel=${SELS[$((RANDOM % 4))]} tags=NULL
    context
    [ "$sel" != h_bud ] || tags=$(echo "NULL ARRAY['x'] ARRAY['y'] ARRAY['x','y']" | cut -d' ' -f$((RANDOM % 4 + 1)))
    say_traced "$1" "INSERT INTO ms_mine SELECT '$1', decision_id FROM model_select.route('$sel', $CTX, tags => $tags);"
}
batch_routes() {  # batch_routes SESSION: route_batch(log => true) of 1-5 rows of one selector, tags on h_bud
    local sel=${SELS[$((RANDOM % 4))]} n=$((RANDOM % 5 + 1)) u=$((RANDOM % 97)) v=$((RANDOM % 89)) tags=NULL::text[]
    [ "$sel" != h_bud ] ||
        tags="CASE (g * $v) % 4 WHEN 1 THEN ARRAY['x'] WHEN 2 THEN ARRAY['y'] WHEN 3 THEN ARRAY['x', 'y'] END"
    say_traced "$1" "INSERT INTO ms_mine SELECT '$1', decision_id, true FROM model_select.route_batch('$sel', \$q\$
        SELECT g, ARRAY[round(sin(g * $u)::numeric, 1), round(cos(g * $v)::numeric, 1), 0.5]::float8[], $tags
          FROM generate_series(1, $n) g \$q\$, log => true);"
}
late_reward() {  # late_reward SESSION: reward one of the session's decisions that has none (maybe deleted since)
    local k=$((RANDOM % 4))
    value
    # (one that a prepared transaction of the session rewarded is locked: skipped)
    say_traced "$1" "$(reward_sql "decision_id, reward, cost" "m.decision_id, $VAL, $COST" \
        "(SELECT decision_id FROM ms_mine m WHERE session = '$1' AND NOT EXISTS
            (SELECT FROM model_select.rewards r WHERE r.decision_id = m.decision_id)
           ORDER BY decision_id DESC OFFSET $((k * k)) LIMIT 1 FOR UPDATE SKIP LOCKED) m")"
}
dup_reward() {  # dup_reward SESSION: a second reward of one of the session's rewarded decisions (23505 or 42704)
    value
    say_traced "$1" "$(reward_sql "decision_id, reward, cost" "m.decision_id, $VAL, $COST" \
        "(SELECT decision_id FROM ms_mine m WHERE session = '$1' AND EXISTS
            (SELECT FROM model_select.rewards r WHERE r.decision_id = m.decision_id)
           ORDER BY decision_id DESC OFFSET $((RANDOM % 3)) LIMIT 1) m")"
}
arm_rewards() {  # arm_rewards SESSION: 1-8 rewards by arm and context in one statement
    local sel=${SELS[$((RANDOM % 4))]} n=$((RANDOM % 8 + 1)) u=$((RANDOM % 97)) v=$((RANDOM % 89))
    say_traced "$1" "$(reward_sql "selector, arm, context, reward, cost" \
        "'$sel', act.arms[1 + (g * $u) % cardinality(act.arms)],
         ARRAY[round(sin(g * $u)::numeric, 1), round(cos(g * $v)::numeric, 1), 0.5]::float8[],
         ((g * $v) % 11) * 0.1, (g % 3) * 0.5" "generate_series(1, $n) g, ms_active('$sel') act")"
}
arm_change() {  # arm_change SESSION: b, c or d of a selector and its twin retired, or added (back)
    local sel=${SELS[$((RANDOM % 4))]} arm=$(echo "b c d" | cut -d' ' -f$((RANDOM % 3 + 1))) change
    if [ $((RANDOM % 2)) = 0 ]; then
        change="model_select.retire_arm(s.name, '$arm') FROM model_select.selectors s
                  JOIN model_select.arms a USING (selector_id) WHERE a.name = '$arm' AND a.active"
    else
        change="model_select.add_arm(s.name, '$arm') FROM model_select.selectors s
                 WHERE NOT EXISTS (SELECT FROM model_select.arms a
                                    WHERE a.selector_id = s.selector_id AND a.name = '$arm' AND a.active)"
    fi
    # (another session's change of the selector in flight: 55P03 rather than a driver waiting for it)
    say_traced "$1" "SET lock_timeout = '300ms';
        SELECT $change AND s.name IN ('$sel', ms_twin('$sel')) ORDER BY s.name;
        SET lock_timeout = '5s';"
}
housekeeping() {  # housekeeping SESSION (outside a transaction): maintain() or checkpoint() one selector
    local sel=${SELS[$((RANDOM % 4))]}
    if [ $((RANDOM % 3)) = 0 ]; then say_traced "$1" "SELECT model_select.checkpoint('$sel');"
    else say_traced "$1" "SELECT model_select.maintain('$sel');"
    fi
}
alter_horizon() {  # with no transaction open (it waits for them): h_ret's retain or h_bud's decision_ttl changes
    if [ $((RANDOM % 2)) = 0 ]; then alter "SELECT model_select.alter_selector('h_ret', '{\"retain\": $((RANDOM % 4 + 2))}')"
    else alter "SELECT model_select.alter_selector('h_bud', '{\"decision_ttl\": $((RANDOM % 2 + 1))}')"
    fi
}
step() {  # step SESSION: one op drawn for it
    local s=$1 r=$((RANDOM % 100))
    if [ $r -lt 3 ] && idle; then alter_horizon; return; fi
    if [ $r = 99 ] && [ $((RANDOM % 2)) = 0 ]; then crash; return; fi
    if [ "${IN_TX[$s]}" = 0 ]; then
        if [ $r -lt 30 ]; then begin "$s" 3
        elif [ $r -lt 47 ]; then routes "$s"
        elif [ $r -lt 52 ]; then batch_routes "$s"
        elif [ $r -lt 68 ]; then late_reward "$s"
        elif [ $r -lt 71 ]; then dup_reward "$s"
        elif [ $r -lt 79 ]; then arm_rewards "$s"
        elif [ $r -lt 83 ]; then arm_change "$s"
        elif [ $r -lt 89 ] && [ ${#PREPARED[@]} -gt 0 ]; then resolve "$s"
        else housekeeping "$s"
        fi
        return
    fi
    if [ $r -lt 25 ]; then routes "$s"
    elif [ $r -lt 30 ]; then batch_routes "$s"
    elif [ $r -lt 45 ]; then late_reward "$s"
    elif [ $r -lt 48 ]; then dup_reward "$s"
    elif [ $r -lt 54 ]; then arm_rewards "$s"
    elif [ $r -lt 56 ]; then arm_change "$s"
    elif [ $r -lt 60 ]; then say_traced "$s" "INSERT INTO ms_scratch VALUES ('$s');"  # an id before the selectors
    elif [ $r -lt 65 ]; then savepoint "$s"
    elif [ $r -lt 70 ] && [ "${SAVEPOINTS[$s]}" -gt 0 ]; then say_traced "$s" "ROLLBACK TO SAVEPOINT sp;"
    elif [ $r -lt 86 ]; then end_tx "$s" COMMIT
    elif [ $r -lt 93 ] && [ ${#PREPARED[@]} -lt 4 ]; then prepare "$s"
    else end_tx "$s" ROLLBACK
    fi
}

run_steps
q -c "ALTER SYSTEM SET model_select.learner_max_lag = 0" -c "SELECT pg_reload_conf()" >/dev/null
# (the final passes delete decisions past decision_ttl, however fast the steps ran)
wait_for "h_ret's oldest decision without a reward to be older than its decision_ttl" \
    "SELECT coalesce(min(d.created_at) < now() - interval '1.5 s', true)
       FROM model_select.decisions d JOIN model_select.selectors s USING (selector_id)
      WHERE s.name = 'h_ret' AND NOT EXISTS (SELECT FROM model_select.rewards r WHERE r.decision_id = d.decision_id)" ||
    bail "seed $SEED: waiting for decisions to expire"
for sel in "${SELS[@]}"; do q -c "SELECT model_select.maintain('$sel')" >/dev/null; done

STATS="$(q -c "SELECT (SELECT count(*) FROM ms_ledger) || ' rewards, '
                      || (SELECT string_agg(s.name || ' ' || b.n, ', ' ORDER BY s.name)
                            FROM (SELECT selector_id, sum(n) AS n FROM model_select.arm_base GROUP BY 1) b
                            JOIN model_select.selectors s USING (selector_id)) || ' absorbed, '
                      || (SELECT count(*) || ' decisions routed (' || count(*) FILTER (WHERE batch)
                                 || ' by route_batch), ' FROM ms_mine)
                      || (SELECT 'arms at the end ' || string_agg(n || ' ' || a, ', ' ORDER BY n) || ', '
                            FROM (SELECT s.name AS n, string_agg(a.name || CASE WHEN a.active THEN '' ELSE '-' END, ''
                                                                 ORDER BY a.ordinal) AS a
                                    FROM model_select.arms a JOIN model_select.selectors s USING (selector_id)
                                   WHERE s.name LIKE 'h\_%' GROUP BY 1) q)
                      || (SELECT count(*) FROM ms_mine m WHERE NOT EXISTS
                            (SELECT FROM model_select.decisions d WHERE d.decision_id = m.decision_id)) || ' deleted'")"
echo "# seed $SEED: $STATS, $(seen 'ERROR: +decision [0-9]+ does not exist') late rewards refused, $(seen 'canceling statement due to lock timeout') statements past their lock_timeout, $ALTERS alter_selector() calls, $RESOLVED prepared transactions resolved by a session, $(crashes)"
check "seed $SEED: the horizon absorbed rewards of two selectors or more and deleted decisions" \
    is_true "SELECT (SELECT count(DISTINCT selector_id) FROM model_select.arm_base WHERE n > 0) >= 2
                AND EXISTS (SELECT FROM ms_mine m WHERE NOT EXISTS
                              (SELECT FROM model_select.decisions d WHERE d.decision_id = m.decision_id))"
check "seed $SEED: per arm, arm_stats.n and n × mean_reward equal the ledger's count and sum (1e-9)" \
    no_rows "SELECT st.selector || '/' || st.arm || ': ' || st.n || ' ' || coalesce(st.n * st.mean_reward, 0)
                    || ' vs ' || coalesce(l.n, 0) || ' ' || coalesce(l.s, 0)
               FROM model_select.arm_stats st
               LEFT JOIN (SELECT selector, arm, count(*) AS n, sum(reward) AS s FROM ms_ledger GROUP BY 1, 2) l
                      USING (selector, arm)
              WHERE st.selector LIKE 'h\\_%'
                AND (st.n <> coalesce(l.n, 0) OR NOT ms_close(coalesce(st.n * st.mean_reward, 0), coalesce(l.s, 0)))"
check "seed $SEED: no reward in the log points to a deleted decision" \
    no_rows "SELECT reward_id FROM model_select.rewards r WHERE decision_id IS NOT NULL
                AND NOT EXISTS (SELECT FROM model_select.decisions d WHERE d.decision_id = r.decision_id)"
for sel in h_ret h_win h_dis; do
    q -c "SELECT ms_take('live', '$sel')" -c "SELECT ms_take_twin('twin', '$sel')" >/dev/null
    check "seed $SEED: $sel scores what its twin, never maintained, scores (1e-9), with the same arm_stats.n" \
        no_rows "SELECT * FROM ms_diff('live', 'twin', '$sel')"
done
REFUSED=$(q -c "SELECT count(*) FROM ms_rederive_kept()" -c "SELECT count(*) FROM ms_refused" | tail -n 1)
check "seed $SEED: every decision that recorded versions re-derives its chosen arm's ucb and mean bit for bit, but for $REFUSED whose scored rewards were absorbed (55000)" \
    no_rows "SELECT * FROM ms_rederive_kept()"
for sel in "${SELS[@]}"; do rebuild_checks "$sel"; done
close_sessions
DELETED_RR="could not serialize access due to concurrent delete of decision"
RETIRED="arm \"[a-d]\" of selector \"h_[a-z]+\" is retired"
ARM_RACE="canceling statement due to lock timeout|already has an active arm|could not serialize access due to concurrent update"
ERRORS=$(other_errors "${OUTS[@]}" |
    grep -v -E "ERROR: +decision [0-9]+ does not exist|$DELETED_RR|$DUPLICATE|$RETIRED|$ARM_RACE|$NO_SAVEPOINT" || true)
check "no session saw another error than 42704 for a deleted decision (40001 under REPEATABLE READ: $(seen "$DELETED_RR")), 23505 for a second reward ($(seen "$DUPLICATE")), 55000 for a retired arm ($(seen "$RETIRED")), an arm change racing another ($(seen "$ARM_RACE")) and the late writer's 40001 ($(late_writer_refusals "${OUTS[@]}"))" \
    test -z "$ERRORS"
[ -z "$ERRORS" ] || printf '%s\n' "$ERRORS" | head -n 5 | sed 's/^/#   /'
finish
