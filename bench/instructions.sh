#!/usr/bin/env bash
# make bench-instructions: the CPU instructions one decision costs the server -- read a
# prompt, route(), insert its reward, commit -- against the same SQL work without the
# extension (bench-pgbench's baseline), counted by valgrind's callgrind, with the learner
# serving the database, and the learner's own instructions per reward beside them.  Unlike
# throughput, instruction counts do not move with the disk, the other tenants of a virtual
# machine or the CPU's caches, so a change to the SQL path shows in them whatever the
# machine; they do not show memory stalls (a factor read out of cache costs the same
# instructions), which is what bench-pgbench's ratios measure too.
#
# Set-up as bench-pgbench's learner set-up (bench/lib/decision_setup.bash: d = 384, 5 arms,
# 2,000 rewards per arm; shared_preload_libraries and model_select.learner_databases naming
# the database), MS_INSTR_WARMUP (500) decisions of each kind and VACUUM ANALYZE.  Then the
# server is stopped and:
#
# - "no learner": per kind, a single-user backend (not preloaded: no learner, no shared
#   cache) runs a DO block of N decisions as the application role, each committed on its
#   own (plpgsql's COMMIT), under callgrind, N = MS_INSTR_FEW (20) and MS_INSTR_MANY (220);
#   per decision = the difference / (MANY - FEW), which leaves out start-up and the first
#   load of each selector.  Each decision folds the previous reward itself and reward
#   inserts checkpoint due arms: the cost of a backend that folds for itself (also where a
#   learner serves, past model_select.learner_max_lag).
# - "learner serving": the whole server is started under callgrind (bench/lib/callgrind.bash;
#   every process it forks writes its own count) and, per kind, one session runs the DO
#   block of FEW decisions, another of MANY, each found by its pg_backend_pid(); per
#   decision as above, from the two backends' files.  The bench fails if a decision did not
#   score the learner's versions: one with no versions recorded (decisions.versions NULL),
#   or a backend that folded rewards itself (fold_some() in its count).  The learner's
#   counters are zeroed before each session and dumped once its versions hold the whole
#   log again; per reward = the difference of the two dumps / (MANY - FEW): its passes
#   woken by the commits (folding and publishing the versions, selector_publish()), its
#   checkpoints (the due check once a naptime over every selector's arms, and the
#   checkpoints it writes: learn_selector()) and the rest (listing the selectors, waiting);
#   the passes counted per session, and one idle pass's instructions, measured after the
#   runs, are printed with them.  Everything runs about 50 times slower under callgrind,
#   while the naptime is wall-clock time: the longer session meets more idle passes.
#
# Policies: MS_INSTR_POLICIES ("rff_ucb lin_ucb"; lin_ucb_tags: lin_ucb, each decision with two
# tags; lin_ucb_budget, lin_ucb_budgetmean: with a budget, priced by the cost model or at the
# mean cost; decision_setup.bash).  MS_INSTR_KEEP: a folder to keep
# callgrind's output files in (for callgrind_annotate).  Needs valgrind (installed as root
# if missing).  About 5 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${MS_INSTR_IN_CLUSTER:-}" ]; then
    if ! command -v valgrind >/dev/null; then
        if [ "$(id -u)" -eq 0 ]; then
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q valgrind >/dev/null
        else
            echo "bench-instructions needs valgrind: apt-get install valgrind" >&2
            exit 1
        fi
    fi
    MS_INSTR_IN_CLUSTER=1 MS_CLUSTER_OPTS="${MS_CLUSTER_OPTS:-} -c shared_preload_libraries=model_select -c model_select.learner_databases=ms_instructions -c model_select.shared_cache_size=1GB" \
        exec scripts/with-cluster.sh bench/instructions.sh
fi

POLICIES=${MS_INSTR_POLICIES:-rff_ucb lin_ucb}
FEW=${MS_INSTR_FEW:-20}
MANY=${MS_INSTR_MANY:-220}
WARMUP=${MS_INSTR_WARMUP:-500}
PG_BINDIR=${PG_BINDIR:-/usr/lib/postgresql/15/bin}
DB=ms_instructions
APP=ms_bench_app

as_server() {
    if [ "$(id -u)" -eq 0 ]; then
        (cd "$PGHOST" && runuser -u postgres -- "$@")
    else
        (cd "$PGHOST" && "$@")
    fi
}
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
. bench/lib/callgrind.bash

t0=$(date +%s)
. bench/lib/decision_setup.bash
decision_setup "$DB" "$APP" "$POLICIES"
echo "set-up (prompts, ${POLICIES// /, } with 2,000 rewards per arm): $(( $(date +%s) - t0 )) s"

# The body of one decision, the decision id in d and the prompt's id i * 37 mod 10,000 + 1.
decision_sql() {
    case $1 in
        baseline) echo "INSERT INTO decisions_b(prompt_id, context, arm) SELECT id, emb, 'm1' FROM prompts WHERE id = (i * 37) % 10000 + 1 RETURNING decision_id INTO d; INSERT INTO rewards_b(decision_id, reward) VALUES (d, 0.5);" ;;
        *) echo "SELECT r.decision_id INTO d FROM prompts p, model_select.route($(route_args "$1")) r WHERE p.id = (i * 37) % 10000 + 1; INSERT INTO model_select.rewards$(reward_values "$1" d 0.5);" ;;
    esac
}
# A DO block of N decisions (the kind's body), as the application role, each committed.
decisions_do() {
    printf 'SET ROLE %s;\nDO $$ DECLARE d bigint; BEGIN FOR i IN 1..%d LOOP %s COMMIT; END LOOP; END $$;\n' \
        "$APP" "$2" "$(decision_sql "$1")"
}

# caught_up POL: wait until the learner's newest version of every arm of POL holds the
# whole log (none with rewards logged after it)
caught_up() {
    local deadline=$(( $(date +%s) + 600 )) left
    while :; do
        left=$(q -c "SELECT count(*) FROM model_select.arms a JOIN model_select.selectors s USING (selector_id)
                      WHERE s.name = '$1' AND NOT EXISTS (
                            SELECT 1 FROM model_select.learner_versions v
                             WHERE v.selector = s.name AND v.arm = a.name AND NOT v.stale AND v.lag_rewards = 0)")
        [ "$left" = 0 ] && return
        if [ "$(date +%s)" -gt "$deadline" ]; then
            echo "the learner's versions of $1 did not catch up with the log within 600 s ($left arms behind):" >&2
            q -c "SELECT * FROM model_select.learner" -c "SELECT * FROM model_select.learner_versions" >&2
            exit 1
        fi
        sleep 0.5
    done
}

# Warm-up, as bench-pgbench's: decisions of every kind, then VACUUM ANALYZE.  The counted
# runs then start from recent checkpoints and the learner's versions: after the set-up's
# bulk load, the first run would meet the first checkpoints and folds of the whole log,
# which the second no longer meets, and their difference would come out too small.  The
# log tables also hold rows and the planner knows their size, as autovacuum sees to in
# production.
for kind in baseline $POLICIES; do
    decisions_do "$kind" "$WARMUP" | q >/dev/null
done
for pol in $POLICIES; do caught_up "$pol"; done
q -c "VACUUM ANALYZE"
DATADIR=$(q -c "SHOW data_directory")
as_server "$PG_BINDIR/pg_ctl" -D "$DATADIR" -m fast -w stop >/dev/null

# ---- no learner: single-user backends ------------------------------------------------

# single_counted NAME: callgrind's instruction count of a single-user backend running
# stdin's SQL; its output file is $PGHOST/callgrind.NAME
single_counted() {
    local name=$1 out=$PGHOST/callgrind.$1 log=$PGHOST/single.$1.log
    as_server valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$PG_BINDIR/postgres" --single -D "$DATADIR" "$DB" >"$log" 2>&1
    if grep -q -E '(ERROR|FATAL|PANIC):' "$log"; then
        echo "the single-user backend failed ($name):" >&2
        grep -m 3 -E '(ERROR|FATAL|PANIC):' "$log" >&2
        exit 1
    fi
    [ -z "${MS_INSTR_KEEP:-}" ] || cp "$out" "$MS_INSTR_KEEP/"
    cg_total "$out"
}

# single_per_decision KIND: instructions per decision in single-user backends
single_per_decision() {
    local few many
    few=$(decisions_do "$1" "$FEW" | single_counted "single.$1.$FEW")
    many=$(decisions_do "$1" "$MANY" | single_counted "single.$1.$MANY")
    echo $(( (many - few) / (MANY - FEW) ))
}

declare -A single
for kind in baseline $POLICIES; do
    single[$kind]=$(single_per_decision "$kind")
done

# ---- learner serving: the whole server under callgrind -------------------------------

# learner_max_lag is wall-clock time, and callgrind runs every process some 50 times slower
# (more on a loaded machine): at the default 1s a backend could fold for itself where,
# at full speed, the learner keeps up; 60s keeps the rule the same in instructions.  One
# worker: its instructions per reward are the learner's.  A shared cache of 1GB (as in the
# set-up's cluster): two pak_ucb selectors' versions (10 arms of 28 MB at 2,000 rewards) do
# not fit in the default 256MB, and an arm without a version never caught up.
cg_server_start "$DATADIR" -c fsync=off -c shared_buffers=128MB -c max_prepared_transactions=4 \
    -c autovacuum=off -c shared_preload_libraries=model_select -c "model_select.learner_databases=$DB" \
    -c model_select.learner_max_lag=60s -c model_select.learner_workers=1 \
    -c model_select.shared_cache_size=1GB
LEARNER=$(q -c "SELECT pid FROM model_select.learner WHERE running AND database = '$DB'")
if [ -z "$LEARNER" ] || [ "$(echo "$LEARNER" | wc -l)" != 1 ]; then
    echo "expected one learner serving $DB, found: ${LEARNER:-none}" >&2
    exit 1
fi
for pol in $POLICIES; do caught_up "$pol"; done

# learner_counters: the learner's passes, rewards folded, versions published and arms
# checkpointed, space-separated
learner_counters() {
    q -F ' ' -c "SELECT passes, rewards_folded, versions_published, arms_checkpointed
                   FROM model_select.learner WHERE pid = $LEARNER"
}

# session KIND N: a session of N decisions of KIND; prints its backend's instructions.
# For a policy, fails unless every decision recorded versions and the backend folded no
# reward itself.
session() {
    local kind=$1 n=$2 pid before bad folded file
    before=$(q -c "SELECT coalesce(max(decision_id), 0) FROM model_select.decisions")
    pid=$({ echo "SELECT pg_backend_pid();"; decisions_do "$kind" "$n"; } | q)
    [[ $pid =~ ^[0-9]+$ ]] || { echo "$kind, $n decisions: the session printed \"$pid\", not its pid" >&2; exit 1; }
    cg_wait_exit "$pid"
    file=$CG/cg.$pid
    [ -z "${MS_INSTR_KEEP:-}" ] || cp "$file" "$MS_INSTR_KEEP/callgrind.$kind.$n"
    if [ "$kind" != baseline ]; then
        bad=$(q -c "SELECT count(*) - count(d.versions) || ' of ' || count(*)
                      FROM model_select.decisions d JOIN model_select.selectors s USING (selector_id)
                     WHERE s.name = '$kind' AND d.decision_id > $before")
        if [ "$bad" != "0 of $n" ]; then
            echo "$kind, $n decisions: $bad decisions scored no version of the learner's (versions NULL)" >&2
            exit 1
        fi
        folded=$(cg_inclusive "$file" fold_some)
        if [ "$folded" != 0 ]; then
            echo "$kind, $n decisions: the backend folded rewards itself ($folded instructions in fold_some)" >&2
            exit 1
        fi
    fi
    cg_total "$file"
}

# measured KIND: per decision, with the learner serving; for a policy also the learner's
# instructions (total, selector_publish, learn_selector) and counters over each session
declare -A served learner_total learner_publish learner_ckpt learner_passes
measured() {
    local kind=$1 few many n c c0 c1 dump
    declare -A total publish ckpt passes
    for n in "$FEW" "$MANY"; do
        [ "$kind" = baseline ] || { cg_zero "$LEARNER"; c0=$(learner_counters); }
        c=$(session "$kind" "$n")
        if [ "$n" = "$FEW" ]; then few=$c; else many=$c; fi
        [ "$kind" != baseline ] || continue
        caught_up "$kind"
        dump=$(cg_dump "$LEARNER")
        [ -z "${MS_INSTR_KEEP:-}" ] || cp "$dump" "$MS_INSTR_KEEP/callgrind.learner.$kind.$n"
        c1=$(learner_counters)
        total[$n]=$(cg_total "$dump")
        publish[$n]=$(cg_inclusive "$dump" selector_publish)
        ckpt[$n]=$(cg_inclusive "$dump" learn_selector)
        passes[$n]=$(( ${c1%% *} - ${c0%% *} ))
        echo "$kind, $n decisions: learner counters (passes, rewards folded, versions published, arms checkpointed) $c0 -> $c1" >&2
    done
    served[$kind]=$(( (many - few) / (MANY - FEW) ))
    [ "$kind" != baseline ] || return 0
    learner_total[$kind]=$(( (total[$MANY] - total[$FEW]) / (MANY - FEW) ))
    learner_publish[$kind]=$(( (publish[$MANY] - publish[$FEW]) / (MANY - FEW) ))
    learner_ckpt[$kind]=$(( (ckpt[$MANY] - ckpt[$FEW]) / (MANY - FEW) ))
    learner_passes[$kind]="${passes[$FEW]}/${passes[$MANY]}"
}

for kind in baseline $POLICIES; do
    measured "$kind"
done

# One idle pass of the learner (every selector listed, its versions checked, its due arms
# checked): its instructions over a quiet interval / its passes meanwhile.
cg_zero "$LEARNER"
c0=$(learner_counters)
sleep 10
dump=$(cg_dump "$LEARNER")
c1=$(learner_counters)
idle_passes=$(( ${c1%% *} - ${c0%% *} ))
idle_pass=$(( $(cg_total "$dump") / (idle_passes > 0 ? idle_passes : 1) ))
cg_server_stop "$DATADIR"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
base=${served[baseline]}
echo
echo "Instructions per decision (read a prompt, route() and reward INSERT, commit) vs the same SQL"
echo "on plain tables, as the application role $APP; d = 384, 5 arms, 2,000 rewards per arm;"
echo "callgrind, decisions $FEW..$MANY of a session (start-up and first loads excluded)."
echo "learner serving: the server under callgrind, the learner serving the database (every decision"
echo "scored its versions); the learner's instructions per reward over the same sessions: all,"
echo "of which its passes woken by the commits (fold and publish) and its checkpoint passes (due"
echo "checks once a naptime, checkpoints written); its passes in the FEW/MANY sessions."
echo "no learner: single-user backends, each decision folding the previous reward itself and"
echo "reward inserts checkpointing (the cost of a backend that folds for itself)."
echo
printf '| %-11s | %12s | %6s | %12s | %12s | %12s | %9s | %12s | %6s |\n' transaction "learner serving" ratio "learner/rwd" "of it: publish" "checkpoints" passes "no learner" ratio
printf '| %-11s | %12s | %6s | %12s | %12s | %12s | %9s | %12s | %6s |\n' ----------- -----------: -----: -----------: -----------: -----------: --------: -----------: -----:
printf '| %-11s | %12s | %6s | %12s | %12s | %12s | %9s | %12s | %6s |\n' baseline "$base" 1.00 - - - - "${single[baseline]}" 1.00
for pol in $POLICIES; do
    printf '| %-11s | %12s | %6s | %12s | %12s | %12s | %9s | %12s | %6s |\n' "$pol" "${served[$pol]}" \
        "$(ratio "${served[$pol]}" "$base")" "${learner_total[$pol]}" "${learner_publish[$pol]}" \
        "${learner_ckpt[$pol]}" "${learner_passes[$pol]}" "${single[$pol]}" "$(ratio "${single[$pol]}" "${single[baseline]}")"
done
echo
echo "An idle pass of the learner (nothing to fold, no arm due): $idle_pass instructions ($idle_passes passes in 10 s under callgrind)."
