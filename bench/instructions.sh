#!/usr/bin/env bash
# make bench-instructions: the CPU instructions one decision costs the server -- read a
# prompt, route(), insert its reward, commit -- against the same SQL work without the
# extension (bench-pgbench's baseline), counted by valgrind's callgrind in a single-user
# backend.  Unlike throughput, instruction counts do not move with the disk, the other
# tenants of a virtual machine or the CPU's caches, so a change to the SQL path shows in
# them whatever the machine; they do not show memory stalls (a factor read out of cache
# costs the same instructions), which is what bench-pgbench's ratios measure too.
#
# Set-up as bench-pgbench (bench/lib/decision_setup.bash: d = 384, 5 arms, 2,000 rewards
# per arm), then the server is stopped and, per transaction kind, a single-user backend
# runs a DO block of N decisions as the application role, each committed on its own
# (plpgsql's COMMIT), under callgrind: once with MS_INSTR_FEW (20) and once with
# MS_INSTR_MANY (220) decisions.  Instructions per decision = the difference / (MANY - FEW),
# which leaves out start-up and the first load of each selector.  Policies:
# MS_INSTR_POLICIES ("rff_ucb lin_ucb").  Before the counts, as bench-pgbench does,
# MS_INSTR_WARMUP (500) decisions of each kind and VACUUM ANALYZE.  MS_INSTR_KEEP: a folder
# to keep callgrind's output files in (for callgrind_annotate).  Needs valgrind (installed as root if missing).
#
# A single-user backend has no learner, so a decision there also folds the previous reward
# into its cache and checkpoints due arms: the table shows those instructions per decision
# (callgrind's inclusive counts of model_cache_absorb and checkpoint_if_due), the
# ratio without them ("lean": an estimate, by subtraction, of what a decision costs its
# backend where a learner serves), and
# the learner's side: the fold of N decisions' rewards into the stored states (checkpoint(),
# which folds every final pending reward), counted inside checkpoint() only (--toggle-collect),
# N = FEW and MANY, per reward.
set -euo pipefail
cd "$(dirname "$0")/.."
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell} OPENBLAS_NUM_THREADS=1
if [ -z "${MS_INSTR_IN_CLUSTER:-}" ]; then
    if ! command -v valgrind >/dev/null; then
        if [ "$(id -u)" -eq 0 ]; then
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q valgrind >/dev/null
        else
            echo "bench-instructions needs valgrind: apt-get install valgrind" >&2
            exit 1
        fi
    fi
    MS_INSTR_IN_CLUSTER=1 exec scripts/with-cluster.sh bench/instructions.sh
fi

POLICIES=${MS_INSTR_POLICIES:-rff_ucb lin_ucb}
FEW=${MS_INSTR_FEW:-20}
MANY=${MS_INSTR_MANY:-220}
WARMUP=${MS_INSTR_WARMUP:-500}
PG_BINDIR=${PG_BINDIR:-/usr/lib/postgresql/15/bin}
DB=ms_instructions
APP=ms_bench_app

t0=$(date +%s)
. bench/lib/decision_setup.bash
decision_setup "$DB" "$APP" "$POLICIES"
echo "set-up (prompts, ${POLICIES// /, } with 2,000 rewards per arm): $(( $(date +%s) - t0 )) s"

# The body of one decision, the decision id in d and the prompt's id i * 37 mod 10,000 + 1.
decision_sql() {
    case $1 in
        baseline) echo "INSERT INTO decisions_b(prompt_id, context, arm) SELECT id, emb, 'm1' FROM prompts WHERE id = (i * 37) % 10000 + 1 RETURNING decision_id INTO d; INSERT INTO rewards_b(decision_id, reward) VALUES (d, 0.5);" ;;
        *) echo "SELECT r.decision_id INTO d FROM prompts p, model_select.route('$1', p.emb) r WHERE p.id = (i * 37) % 10000 + 1; INSERT INTO model_select.rewards(decision_id, reward) VALUES (d, 0.5);" ;;
    esac
}
# A DO block of N decisions (the kind's body), as the application role, each committed.
decisions_do() {
    printf 'SET ROLE %s;\nDO $$ DECLARE d bigint; BEGIN FOR i IN 1..%d LOOP %s COMMIT; END LOOP; END $$;\n' \
        "$APP" "$2" "$(decision_sql "$1")"
}

# Warm-up, as bench-pgbench's: decisions of every kind, then VACUUM ANALYZE.  Both counted
# runs then start from recent checkpoints: after the set-up's bulk load, the first run's
# backend would fold the whole pending log at its first load and write the first checkpoints,
# which the second run no longer meets, and their difference would come out too small.  The
# log tables also hold rows and the planner knows their size, as autovacuum sees to in
# production.
for kind in baseline $POLICIES; do
    decisions_do "$kind" "$WARMUP" | psql -X -q -v ON_ERROR_STOP=1 -d "$DB" >/dev/null
done
psql -X -q -d "$DB" -c "VACUUM ANALYZE"
DATADIR=$(psql -X -A -t -d "$DB" -c "SHOW data_directory")

as_server() {
    if [ "$(id -u)" -eq 0 ]; then
        (cd "$PGHOST" && runuser -u postgres -- "$@")
    else
        (cd "$PGHOST" && "$@")
    fi
}
# single-user mode needs the server stopped; with-cluster.sh's clean-up then only deletes it
as_server "$PG_BINDIR/pg_ctl" -D "$DATADIR" -m fast -w stop >/dev/null

# single: run stdin's SQL in a single-user backend (no callgrind), stopping on an error
single() {
    local log=$PGHOST/single.$$.log
    as_server "$PG_BINDIR/postgres" --single -D "$DATADIR" "$DB" >"$log" 2>&1
    if grep -q -E '(ERROR|FATAL|PANIC):' "$log"; then
        echo "the single-user backend failed:" >&2
        grep -m 3 -E '(ERROR|FATAL|PANIC):' "$log" >&2
        exit 1
    fi
}

# counted NAME [VALGRIND OPTION...]: callgrind's instruction count of a single-user backend
# running stdin's SQL; its output file is $PGHOST/callgrind.NAME
counted() {
    local name=$1 out=$PGHOST/callgrind.$1 log=$PGHOST/single.$1.log
    shift
    as_server valgrind --tool=callgrind --callgrind-out-file="$out" "$@" \
        "$PG_BINDIR/postgres" --single -D "$DATADIR" "$DB" >"$log" 2>&1
    if grep -q -E '(ERROR|FATAL|PANIC):' "$log"; then
        echo "the single-user backend failed ($name):" >&2
        grep -m 3 -E '(ERROR|FATAL|PANIC):' "$log" >&2
        exit 1
    fi
    if ! grep -q 'Collected : [0-9]' "$log"; then
        echo "callgrind gave no count ($name):" >&2
        tail -n 5 "$log" >&2
        exit 1
    fi
    [ -z "${MS_INSTR_KEEP:-}" ] || cp "$out" "$MS_INSTR_KEEP/"
    sed -n 's/^.*Collected : \([0-9]*\).*$/\1/p' "$log"
}

# inclusive NAME FUNCTION: the instructions spent in FUNCTION and what it called, in run NAME
inclusive() {
    callgrind_annotate --inclusive=yes --threshold=100 "$PGHOST/callgrind.$1" 2>/dev/null |
        awk -v f=":$2 " 'index($0, f) { gsub(",", "", $1); print $1; found = 1; exit } END { if (!found) print 0 }'
}

# per_decision KIND: instructions per decision (runs KIND.FEW and KIND.MANY)
per_decision() {
    local few many
    few=$(decisions_do "$1" "$FEW" | counted "$1.$FEW")
    many=$(decisions_do "$1" "$MANY" | counted "$1.$MANY")
    echo $(( (many - few) / (MANY - FEW) ))
}

# per_decision_in KIND FUNCTION: of those, the instructions in FUNCTION per decision
per_decision_in() {
    echo $(( ($(inclusive "$1.$MANY" "$2") - $(inclusive "$1.$FEW" "$2")) / (MANY - FEW) ))
}

# learner_per_reward POL: the fold of N decisions' rewards into the arms' stored states, as
# the learner folds them, N = FEW and MANY, by checkpoint() (which folds every final pending
# reward, due or not) in a backend of its own, counted inside checkpoint() only
# (--toggle-collect): per reward, the difference over MANY - FEW.
learner_per_reward() {
    local c few many
    echo "SELECT model_select.checkpoint('$1');" | single   # nothing pending
    for n in "$FEW" "$MANY"; do
        { echo "SET model_select.checkpoint_threshold = 0;"; decisions_do "$1" "$n"; } | single
        c=$(echo "SELECT model_select.checkpoint('$1');" |
            counted "checkpoint.$1.$n" --toggle-collect=model_select_checkpoint)
        if [ "$n" = "$FEW" ]; then few=$c; else many=$c; fi
    done
    echo $(( (many - few) / (MANY - FEW) ))
}

base=$(per_decision baseline)
echo
echo "Instructions per decision (read a prompt, route() and reward INSERT, commit) vs the same SQL"
echo "on plain tables, as the application role $APP; d = 384, 5 arms, 2,000 rewards per arm;"
echo "single-user backend under callgrind, decisions $FEW..$MANY (start-up and first loads excluded)."
echo "A single-user backend has no learner: each route() folds the previous decision's reward into"
echo "its cache (model_cache_absorb) and rewards_apply checkpoints due arms (checkpoint_if_due);"
echo "where a learner serves the database both are its work, counted beside as the fold of the"
echo "rewards into the stored states (checkpoint()) per reward.  'lean' = the decision without them"
echo "(an estimate of its cost where a learner serves: by subtraction, not measured with one)."
echo
printf '| %-11s | %12s | %9s | %6s | %12s | %12s | %6s | %12s |\n' transaction instructions baseline ratio "own fold" checkpoints "lean" "learner/rwd"
printf '| %-11s | %12s | %9s | %6s | %12s | %12s | %6s | %12s |\n' ----------- -----------: --------: -----: -----------: -----------: -----: -----------:
printf '| %-11s | %12s | %9s | %6s | %12s | %12s | %6s | %12s |\n' baseline "$base" "$base" 1.00 - - 1.00 -
for pol in $POLICIES; do
    n=$(per_decision "$pol")
    fold=$(per_decision_in "$pol" model_cache_absorb)
    ckpt=$(per_decision_in "$pol" checkpoint_if_due)
    learner=$(learner_per_reward "$pol")
    printf '| %-11s | %12s | %9s | %6s | %12s | %12s | %6s | %12s |\n' "$pol" "$n" "$base" \
        "$(awk -v a="$n" -v b="$base" 'BEGIN { printf "%.2f", a / b }')" "$fold" "$ckpt" \
        "$(awk -v a="$n" -v f="$fold" -v c="$ckpt" -v b="$base" 'BEGIN { printf "%.2f", (a - f - c) / b }')" "$learner"
done
