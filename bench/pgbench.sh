#!/usr/bin/env bash
# make bench-pgbench (and the last part of make bench-perf): one decision --
# read a prompt, route(), insert its reward -- through pgbench, against the
# same SQL work without the extension, in one throwaway cluster.
#
#   d = 384, 5 arms, 2,000 rewards per arm preloaded (synthetic_clusters),
#   selectors rff_ucb (features 128), lin_ucb, pak_ucb ("cap": 10000, so that
#   its arms stay below cap: every checkpoint appends rows; each run starts
#   from the 2,000 rewards per arm and runs MS_PGBENCH_PAK_DECISIONS), pak_ucb_cap
#   (pak_ucb with all defaults: cap 2,000, so its arms are at cap and compact
#   -- refactorise their newest 1,000 rewards -- once per 1,001 rewards);
#   prompts: 10,000 synthetic 384-d embeddings.  pak_ucb_cap runs a fixed
#   number of decisions instead of -T: MS_PGBENCH_CAP_DECISIONS (5,005 = one
#   compaction cycle of 1,001 rewards for each of the 5 arms, on average), so
#   its WAL per decision includes the compactions' share.
#
#   baseline transaction:      BEGIN; INSERT INTO decisions_b(prompt_id, context, arm)
#                              SELECT id, emb, 'm1' FROM prompts WHERE id = :p
#                              RETURNING decision_id; INSERT INTO rewards_b ...; COMMIT;
#   model_select transaction:  BEGIN; SELECT decision_id FROM prompts,
#                              model_select.route(sel, emb) WHERE id = :p;
#                              INSERT INTO model_select.rewards(decision_id, reward) ...; COMMIT;
#
# Each run: CHECKPOINT, then pgbench -n -c C -j C -T $MS_PGBENCH_T (10 s) at
# C = 1 and 4; decisions/s = pgbench's tps (without connection time), WAL per
# decision = pg_current_wal_lsn() difference over the run / transactions.
# Prints one table: per policy and client count, decisions/s and WAL bytes per
# decision for model_select and the baseline, and their ratios.
#
# A second table: single select_model() calls (read a prompt and choose an arm,
# nothing logged) against the plain row read `SELECT emb FROM prompts WHERE id
# = :p`, at 1 and 2 clients: the per-call overhead of routing.
# A third: the bytes of the arms' versions that a call reads, one core's time to
# read them once (bench/stream_bound.c), and the CPU ratio that floor leaves.
#
# pgbench connects as an application role (ms_bench_app, set up with
# model_select.setup_role(role, 'application') and granted route and reward
# on the selectors; SELECT on prompts and the baseline's rights on its
# tables), so that the privilege checks and row-level security are measured;
# the single-call table also has rows as the superuser (who skips them).
# Both sides of every ratio run as the same user.
#
# Environment: MS_PGBENCH_T (seconds per run, 10), MS_PGBENCH_POLICIES
# ("rff_ucb lin_ucb pak_ucb pak_ucb_cap"), MS_PGBENCH_CLIENTS ("1 4"),
# MS_PGBENCH_READ_CLIENTS ("1 2"), MS_PGBENCH_READ_USERS ("app superuser"),
# MS_PGBENCH_ROUNDS (3: every run repeated, ratios taken within a round),
# MS_PGBENCH_CAP_DECISIONS (5005), MS_PGBENCH_PAK_DECISIONS (500), MS_PGBENCH_WARMUP (500 decisions per script before
# the runs, then VACUUM ANALYZE).  MS_PGBENCH_POOL=N: the runs' pgbench connects through
# PgBouncer in transaction mode with N server connections (test/session/lib/pgbouncer.bash;
# pgbench -j at most 16), the baseline as well: decisions/s behind a pooler.  MS_PGBENCH_PERF=DIR:
# every run under `perf record -a -g` (the whole machine, learner included), into DIR/NAME.C.data.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${MS_PGBENCH_IN_CLUSTER:-}" ]; then
    MS_PGBENCH_IN_CLUSTER=1 exec scripts/with-cluster.sh bench/pgbench.sh
fi

T=${MS_PGBENCH_T:-10}
POLICIES=${MS_PGBENCH_POLICIES:-rff_ucb lin_ucb pak_ucb pak_ucb_cap}
CAP_DECISIONS=${MS_PGBENCH_CAP_DECISIONS:-5005}
PAK_DECISIONS=${MS_PGBENCH_PAK_DECISIONS:-500}
CLIENTS=${MS_PGBENCH_CLIENTS:-1 4}
READ_CLIENTS=${MS_PGBENCH_READ_CLIENTS:-1 2}
READ_USERS=${MS_PGBENCH_READ_USERS:-app superuser}
ROUNDS=${MS_PGBENCH_ROUNDS:-3}
WARMUP=${MS_PGBENCH_WARMUP:-500}
DB=ms_pgbench
APP=ms_bench_app
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ms_pgbench.XXXXXX")
trap 'rm -rf "$WORK"; psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "DROP ROLE IF EXISTS $APP" >/dev/null 2>&1 || true' EXIT
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" "$@"; }

VIA=()
if [ -n "${MS_PGBENCH_POOL:-}" ]; then
    . test/session/lib/pgbouncer.bash
    trap 'bouncer_stop; rm -rf "$WORK"; psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "DROP ROLE IF EXISTS $APP" >/dev/null 2>&1 || true' EXIT
fi

t0=$(date +%s)
. bench/lib/decision_setup.bash
decision_setup "$DB" "$APP" "$POLICIES"
echo "set-up (prompts, ${POLICIES// /, } with 2,000 rewards per arm): $(( $(date +%s) - t0 )) s"
# The machine: ratios move with it (memory bandwidth and cache sizes above all, as a reader's
# factors are 264-594 kB each), so every run names it.
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)," \
     "L2 $(cat /sys/devices/system/cpu/cpu0/cache/index2/size 2>/dev/null || echo '?')," \
     "L3 $(cat /sys/devices/system/cpu/cpu0/cache/index3/size 2>/dev/null || echo '?')"

cat >"$WORK/baseline.sql" <<'SQL'
\set p random(1, 10000)
BEGIN;
INSERT INTO decisions_b(prompt_id, context, arm) SELECT id, emb, 'm1' FROM prompts WHERE id = :p
RETURNING decision_id \gset
INSERT INTO rewards_b(decision_id, reward) VALUES (:decision_id, random());
COMMIT;
SQL
cat >"$WORK/read.sql" <<'SQL'
\set p random(1, 10000)
SELECT emb FROM prompts WHERE id = :p;
SQL
for pol in $POLICIES; do
    cat >"$WORK/select_$pol.sql" <<SQL
\set p random(1, 10000)
SELECT model_select.select_model('$pol', emb) FROM prompts WHERE id = :p;
SQL
    cat >"$WORK/$pol.sql" <<SQL
\\set p random(1, 10000)
BEGIN;
SELECT r.decision_id FROM prompts p, model_select.route($(route_args "$pol")) r WHERE p.id = :p \\gset
INSERT INTO model_select.rewards$(reward_values "$pol" :decision_id 'random()');
COMMIT;
SQL
done

# pak_ucb's WAL per decision grows with its arms' rows (a reward appends a factor row of n
# values), and its runs would otherwise start from more rows each time (the arm the router
# favours gains most of them): each of its runs starts from the log as preloaded, 2,000
# rewards per arm (pak_reset), and runs $PAK_DECISIONS decisions.
PAK_MARK=$(q -c "SELECT coalesce(max(reward_id), 0) FROM model_select.rewards")
pak_reset() {
    q -c "DELETE FROM model_select.rewards WHERE selector = 'pak_ucb' AND reward_id > $PAK_MARK" \
      -c "SELECT count(*) FROM model_select.rebuild_state('pak_ucb')" \
      -c "VACUUM ANALYZE model_select.rewards, model_select.arm_state, model_select.arm_state_rows" >/dev/null
}

# Warm-up: every transaction script first runs $WARMUP decisions as the application role,
# then VACUUM ANALYZE, so that the log tables hold rows and the planner knows their size, as
# autovacuum sees to in production.  Without it, the plans each backend keeps (both sides'
# foreign-key checks, the extension's lookups of decisions) are made for tables analysed
# empty, scan them sequentially as they grow during the runs, and both sides slow down
# with the table.
for s in baseline $POLICIES; do
    pgbench -n -U "$APP" -c 1 -t "$WARMUP" -f "$WORK/$s.sql" "$DB" >/dev/null 2>"$WORK/warm.err" ||
        { echo "warm-up of $s failed: $(grep -m 1 -i error "$WORK/warm.err")" >&2; exit 1; }
done
q -c "VACUUM ANALYZE"
if [ -n "${MS_PGBENCH_POOL:-}" ]; then
    bouncer_start transaction "$MS_PGBENCH_POOL" postgres "$APP" || { echo "pgbouncer failed to start" >&2; exit 1; }
    VIA=(-h "$BOUNCER_HOST" -p "$BOUNCER_PORT")
    echo "through PgBouncer $("$PGBOUNCER" -V | head -n 1 | awk '{ print $2 }'), transaction mode, $MS_PGBENCH_POOL server connections"
fi

# CPU time the server has used so far, in clock ticks: the postmaster's own and
# that of its children that have ended (cutime, cstime) plus its live children's.
DATADIR=$(q -c "SHOW data_directory")
server_ticks() {
    local pm
    pm=$(head -n 1 "$DATADIR/postmaster.pid")
    { sed 's/^.*) //' "/proc/$pm/stat" | awk '{ print $12 + $13 + $14 + $15 }'
      for k in $(pgrep -P "$pm"); do
          sed 's/^.*) //' "/proc/$k/stat" 2>/dev/null | awk '{ print $12 + $13 }'
      done; } | awk '{ s += $1 } END { print s + 0 }'
}
TICK_US=$((1000000 / $(getconf CLK_TCK)))

# run NAME CLIENTS [USER] -> "tps wal_bytes_per_decision server_cpu_us_per_transaction"
# (or "n/a n/a n/a"); USER: app (default) or superuser.  The server's CPU time per
# transaction is what its throughput on saturated cores follows; it depends much
# less on other jobs on the machine than tps does.
run() {
    local name=$1 c=$2 user=${3:-app} lsn0 lsn1 tps txns t0 t1 d0 d1 id0 length=(-T "$T")
    # at cap: a fixed number of decisions, so that the run spans compactions
    [ "$name" != pak_ucb_cap ] || length=(-t $(( (CAP_DECISIONS + c - 1) / c )))
    if [ "$name" = pak_ucb ]; then
        pak_reset
        length=(-t $(( (PAK_DECISIONS + c - 1) / c )))
    fi
    local as=(-U "$APP")
    [ "$user" = app ] || as=()
    q -c "CHECKPOINT"
    lsn0=$(q -c "SELECT pg_current_wal_lsn()")
    d0=$(decodes)
    id0=$(last_decision)
    t0=$(server_ticks)
    local j=$c
    [ ${#VIA[@]} -eq 0 ] || j=$(( c < 16 ? c : 16 ))
    rm -f "$WORK"/latency.*
    local perf=()
    [ -z "${MS_PGBENCH_PERF:-}" ] || perf=(perf record -q -a -g -o "$MS_PGBENCH_PERF/$name.$c.data" --)
    if ! "${perf[@]}" pgbench -n "${VIA[@]}" "${as[@]}" -c "$c" -j "$j" "${length[@]}" -l --log-prefix="$WORK/latency" \
            -f "$WORK/$name.sql" "$DB" >"$WORK/$name.$c.out" 2>"$WORK/$name.$c.err"; then
        echo "pgbench $name -c $c failed: $(grep -m 1 -i error "$WORK/$name.$c.err")" >&2
    fi
    sleep 0.5                   # the backends end and are reaped
    t1=$(server_ticks)
    # pak_ucb: the run's rewards' rows are written by checkpoints, most of which a run of
    # $PAK_DECISIONS decisions from freshly rebuilt arms would leave to later ones: fold them now
    [ "$name" != pak_ucb ] || q -c "SELECT model_select.checkpoint('pak_ucb')" >/dev/null
    lsn1=$(q -c "SELECT pg_current_wal_lsn()")
    d1=$(decodes)
    tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$WORK/$name.$c.out")
    txns=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$WORK/$name.$c.out")
    if [ -n "$tps" ] && [ "${txns:-0}" -gt 0 ]; then
        echo "$tps $(q -c "SELECT round(pg_wal_lsn_diff('$lsn1', '$lsn0') / $txns)") $(( (t1 - t0) * TICK_US / txns ))" \
             "$(awk -v d=$((d1 - d0)) -v n="$txns" 'BEGIN { printf "%.2f", d / n }')" "$(versioned_share "$id0")" \
             "$(latency_tail)"
    else
        echo "n/a n/a n/a n/a n/a n/a"
    fi
}

# Models decoded by the server's backends so far (cache_stats(): every backend's, with
# the shared cache; 0 where the extension is not installed yet): a decision decodes each
# arm whose version moved since that backend's last decision.
decodes() {
    q -c "SELECT coalesce((SELECT decodes FROM model_select.cache_stats()), 0)" 2>/dev/null || echo 0
}

# The run's transaction latencies (pgbench -l: microseconds, third field) as
# "p99/p99.9/max" in ms: how long a transaction can stay open, so how long a reward
# committed after it waits to be final (the learner's lag cannot be shorter).
latency_tail() {
    cat "$WORK"/latency.* 2>/dev/null | awk '{ print $3 }' | sort -n |
        awk '{ v[++n] = $1 } END { if (n == 0) { print "-"; exit }
                                   printf "%.0f/%.0f/%.0f", v[int(0.99 * n) + (0.99 * n > int(0.99 * n))] / 1000,
                                          v[int(0.999 * n) + (0.999 * n > int(0.999 * n))] / 1000, v[n] / 1000 }'
}

# The newest decision's id (0: none, or no extension yet).
last_decision() {
    q -c "SELECT coalesce((SELECT max(decision_id) FROM model_select.decisions), 0)" 2>/dev/null || echo 0
}

# versioned_share ID: the share of the decisions after ID that scored the learner's
# versions ("-" where none was logged); the others scored a fold of their own (no
# learner, or one further behind than model_select.learner_max_lag).
versioned_share() {
    q -c "SELECT coalesce(round(avg((versions IS NOT NULL)::int), 3)::text, '-')
            FROM model_select.decisions WHERE decision_id > $1" 2>/dev/null || echo -
}

# stats V... -> "median min max" of numbers (n/a ignored; "n/a n/a n/a" if none)
stats() {
    printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g | awk '{ v[++n] = $1 }
        END { if (n == 0) { print "n/a n/a n/a"; exit }
              m = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
              printf "%.6g %.6g %.6g\n", m, v[1], v[n] }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.3f", a / b; else printf "n/a" }'; }
num() { awk -v a="$1" 'BEGIN { if (a ~ /^[0-9.]+$/) printf "%.0f", a; else printf "%s", a }'; }
# summary KEY BASEKEY -> "median_tps median_base median_ratio min_ratio max_ratio median_wal
# median_base_wal median_cpu_us median_base_cpu_us"
# over the rounds of res[KEY,r] against res[BASEKEY,r] (ratios taken within a round)
summary() {
    local key=$1 base=$2 r mt mw mc bt bw bc tps=() btps=() rat=() wal=() bwal=() cpu=() bcpu=()
    for ((r = 1; r <= ROUNDS; r++)); do
        read -r mt mw mc _ <<<"${res[$key,$r]}"
        read -r bt bw bc _ <<<"${res[$base,$r]}"
        tps+=("$mt"); btps+=("$bt"); wal+=("$mw"); bwal+=("$bw"); rat+=("$(ratio "$mt" "$bt")")
        cpu+=("$mc"); bcpu+=("$bc")
    done
    read -r m1 _ _ <<<"$(stats "${tps[@]}")"
    read -r m2 _ _ <<<"$(stats "${btps[@]}")"
    read -r rm rmin rmax <<<"$(stats "${rat[@]}")"
    read -r m3 _ _ <<<"$(stats "${wal[@]}")"
    read -r m4 _ _ <<<"$(stats "${bwal[@]}")"
    read -r m5 _ _ <<<"$(stats "${cpu[@]}")"
    read -r m6 _ _ <<<"$(stats "${bcpu[@]}")"
    echo "$m1 $m2 $rm $rmin $rmax $m3 $m4 $m5 $m6"
}
r2() { awk -v a="$1" 'BEGIN { if (a ~ /^[0-9.]+$/) printf "%.2f", a; else printf "%s", a }'; }
rng() { if [ "$1" = n/a ]; then echo n/a; else printf '%s-%s' "$(r2 "$1")" "$(r2 "$2")"; fi; }

# Rounds: every measurement MS_PGBENCH_ROUNDS times, the extension's runs
# right after their baseline's, so that each ratio compares runs that met the
# same load on a shared machine; the tables show medians and the range of
# the per-round ratios.
# The learner's lag over its last 256 passes with rewards to publish (the run's, at these
# rates), as "p50/p99 ms, p50/p99 rewards"; empty without a learner.  Several workers
# (model_select.learner_workers, e.g. in MS_CLUSTER_OPTS): the largest of theirs.
learner_lag() {  # with several learner workers, the worst worker's figures
    q -c "SELECT round(max(lag_ms_p50)) || '/' || round(max(lag_ms_p99)) || ' ms, ' || round(max(lag_rewards_p50)) || '/'
                 || round(max(lag_rewards_p99)) || ' rewards'
            FROM model_select.learner WHERE running AND database = current_database() AND lag_ms_p99 IS NOT NULL
          HAVING count(*) > 0"
}
# round_line "TPS WAL CPU DECODES VERSIONED LATENCY" (a run's figures) -> its line in the log
round_line() {
    local tps wal cpu dec ver lat
    read -r tps wal cpu dec ver lat <<<"$1"
    echo "$tps decisions/s, $wal WAL bytes/decision, $cpu CPU us/decision, $dec models decoded/decision," \
         "share scoring the learner's versions $ver, transaction latency p99/p99.9/max $lat ms"
}
declare -A res compacted cpu_at lag
for ((r = 1; r <= ROUNDS; r++)); do
    for c in $CLIENTS; do
        res[baseline,$c,$r]=$(run baseline "$c")
        echo "round $r: baseline, $c client(s): $(round_line "${res[baseline,$c,$r]}")"
        for pol in $POLICIES; do
            k0=$(q -c "SELECT compactions('$pol')")
            res[$pol,$c,$r]=$(run "$pol" "$c")
            compacted[$pol,$c]=$(( ${compacted[$pol,$c]:-0} + $(q -c "SELECT compactions('$pol')") - k0 ))
            lag[$pol,$c]=$(learner_lag)
            echo "round $r: $pol, $c client(s): $(round_line "${res[$pol,$c,$r]}")${lag[$pol,$c]:+, learner lag ${lag[$pol,$c]}}"
        done
    done
done

echo
echo "One decision (read prompt + route() + reward INSERT) vs the same SQL work without the extension,"
echo "both as the application role $APP;"
echo "d = 384, 5 arms, 2,000 rewards per arm, pgbench -T $T per run, $ROUNDS rounds (medians; ratio range"
echo "over the rounds; CPU us: the server's CPU time per decision, CPU ratio = baseline CPU / CPU).  Targets: ratio >= 0.5 (rff/lin),"
echo "WAL ratio <= 3, pak_ucb WAL <= 32 kB per decision.  pak_ucb runs with cap 10000, so its arms stay"
echo "below cap: a checkpoint appends rows (arm_state_rows); each of its runs starts from 2,000 rewards"
echo "per arm and runs $PAK_DECISIONS decisions.  pak_ucb_cap has all defaults (cap 2000):"
echo "its arms are at cap and compact once per 1,001 rewards (a checkpoint then rewrites the factor);"
echo "it runs $CAP_DECISIONS decisions per client count and round, so its WAL includes their share."
fmt='| %-11s | %7s | %11s | %10s | %6s | %11s | %9s | %9s | %9s | %12s | %11s | %9s |\n'
printf "\n$fmt" policy clients "decisions/s" "baseline/s" ratio "range" "CPU us" "base CPU" "CPU ratio" \
    "WAL B/dec." "baseline B" "WAL ratio"
printf "$fmt" ----------- ------: ----------: ---------: -----: ---------: -------: -------: -------: \
    -----------: ----------: --------:
for pol in $POLICIES; do
    for c in $CLIENTS; do
        for ((r = 1; r <= ROUNDS; r++)); do res[k,$r]=${res[$pol,$c,$r]}; res[b,$r]=${res[baseline,$c,$r]}; done
        read -r mt bt rm rmin rmax mw bw mc bc <<<"$(summary k b)"
        printf "$fmt" "$pol" "$c" "$(num "$mt")" "$(num "$bt")" "$(r2 "$rm")" "$(rng "$rmin" "$rmax")" \
            "$(num "$mc")" "$(num "$bc")" "$(r2 "$(ratio "$bc" "$mc")")" \
            "$(num "$mw")" "$(num "$bw")" "$(ratio "$mw" "$bw")"
    done
done
# How CPU per decision grows with clients: at each client count over that at the fewest
# (target for rff_ucb and lin_ucb when the learner serves: at 16 clients <= 1.25x that at 1).
sorted_clients=$(printf '%s\n' $CLIENTS | sort -n | tr '\n' ' ')
c_lo=${sorted_clients%% *}
if [ "$(wc -w <<<"$sorted_clients")" -gt 1 ]; then
    echo
    for pol in baseline $POLICIES; do
        growth=
        for c in $sorted_clients; do
            for ((r = 1; r <= ROUNDS; r++)); do res[k,$r]=${res[$pol,$c,$r]}; res[b,$r]=${res[baseline,$c,$r]}; done
            read -r _ _ _ _ _ _ _ mc _ <<<"$(summary k b)"
            cpu_at[$c]=$mc
            [ "$c" = "$c_lo" ] || growth="$growth${growth:+, }$c: $(ratio "${cpu_at[$c]}" "${cpu_at[$c_lo]}")"
        done
        echo "$pol: CPU per decision over that at $c_lo client(s): $growth"
    done
fi
for c in $CLIENTS; do
    [ -z "${compacted[pak_ucb_cap,$c]:-}" ] ||
        echo "pak_ucb_cap, $c client(s): ${compacted[pak_ucb_cap,$c]} compactions over the $ROUNDS rounds"
done

for ((r = 1; r <= ROUNDS; r++)); do
    for u in $READ_USERS; do
        for c in $READ_CLIENTS; do
            res[read,$c,$u,$r]=$(run read "$c" "$u")
            for pol in $POLICIES; do
                res[select_$pol,$c,$u,$r]=$(run "select_$pol" "$c" "$u")
            done
        done
    done
done
echo
echo "Single select_model() calls (read the prompt, choose an arm) vs the plain row read; target >= 0.85."
echo "user app: the application role (privilege checks, row-level security); superuser skips them."
echo "Nothing is written meanwhile, so every call after the first reuses its backend's load."
echo "CPU us: the server's CPU time per statement (median); CPU ratio = read CPU / select_model CPU."
fmt='| %-11s | %-9s | %7s | %14s | %9s | %6s | %11s | %7s | %8s | %9s |\n'
printf "\n$fmt" policy user clients "select_model/s" "read/s" ratio range "CPU us" "read CPU" "CPU ratio"
printf "$fmt" ----------- --------- ------: -------------: --------: -----: ---------: ------: -------: --------:
for pol in $POLICIES; do
    for u in $READ_USERS; do
        for c in $READ_CLIENTS; do
            for ((r = 1; r <= ROUNDS; r++)); do res[k,$r]=${res[select_$pol,$c,$u,$r]}; res[b,$r]=${res[read,$c,$u,$r]}; done
            read -r mt bt rm rmin rmax _ _ mc bc <<<"$(summary k b)"
            printf "$fmt" "$pol" "$u" "$c" "$(num "$mt")" "$(num "$bt")" "$(r2 "$rm")" "$(rng "$rmin" "$rmax")" \
                "$(num "$mc")" "$(num "$bc")" "$(r2 "$(ratio "$bc" "$mc")")"
        done
    done
done

# The floor under scoring: a decision reads each arm's version whole (a forward solve with its
# factor), so one core's time to read those bytes once from the last-level cache
# (bench/stream_bound.c) bounds the CPU ratio above by read CPU / (read CPU + that time).
cc -O3 -march=native -o "$WORK/stream_bound" bench/stream_bound.c
echo
echo "The versions' bytes a select_model() reads (the arms' stored states), one core's time to read them"
echo "once (bench/stream_bound.c), and the CPU ratio that leaves at most: read CPU / (read CPU + that)."
fmt='| %-11s | %-9s | %14s | %10s | %8s | %13s |\n'
printf "\n$fmt" policy user "bytes per call" "stream us" "read CPU" "CPU ratio cap"
printf "$fmt" ----------- --------- -------------: ---------: -------: ------------:
c1=${READ_CLIENTS%% *}
for pol in $POLICIES; do
    read -r arms bytes <<<"$(q -F ' ' -c "SELECT count(*), sum(state_bytes) FROM model_select.arm_stats WHERE selector = '$pol'")"
    stream=$("$WORK/stream_bound" $(( bytes / arms )) "$arms")
    for u in $READ_USERS; do
        for ((r = 1; r <= ROUNDS; r++)); do res[k,$r]=${res[select_$pol,$c1,$u,$r]}; res[b,$r]=${res[read,$c1,$u,$r]}; done
        read -r _ _ _ _ _ _ _ _ bc <<<"$(summary k b)"
        printf "$fmt" "$pol" "$u" "$bytes" "$stream" "$(num "$bc")" \
            "$(r2 "$(awk -v b="$bc" -v s="$stream" 'BEGIN { if (b + 0 > 0) printf "%.3f", b / (b + s); else printf "n/a" }')")"
    done
done
