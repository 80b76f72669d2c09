#!/usr/bin/env bash
# make bench-quality: offline quality benchmark of the routing policies with
# model_select.replay(), in a throwaway cluster (see bench/README.md).
#
# Parts (MS_BENCH_PARTS), each printing progress as it goes:
#   routerdc7  RouterDC's routerdc7_dev.csv: one online pass, cold and warm-started
#              from a full-information outcome table, 3 seeds, against the best
#              single model and the best model per task family on the same prompts
#              (bench/quality_routerdc7.sql; results/quality_routerdc7.md)
#   drift      recovery after the best arms swap (issue 42): the Bernoulli
#              two-cluster stream, lin_ucb and pak_ucb with a window of 300 on the
#              selector's clock, 5 seeds (bench/quality_drift.sql; results/quality_drift.md)
#   feedback   RouterDC as feedback arrives: the default router cold and warm
#              1,000 with rewards 0/100/1,000 rounds late and 100%/20%/5% of the
#              rounds rewarded, also with count_pending (bench/quality_feedback.sql;
#              results/quality_feedback.md)
#   routellm-warm  RouteLLM with prices, cold and warm-started (the same held-out
#              protocol; bench/quality_routellm_warm.sql; results/quality_routellm_warm.md)
#   hull       RouteLLM's quality-vs-cost points and hull of the online router
#              against the single-model hull, with quality_cost()
#              (bench/quality_hull.sql; results/quality_hull.md, quality_hull_routellm.png)
#   tags       what tags add: the default router with and without the prompt's
#              category as a tag, RouterDC cold and warm 1,000, RouteLLM cold with
#              cost weight 0.05 and budget 25% warm 1,000 (bench/quality_tags.sql;
#              results/quality_tags.md)
#   cost-context  what the budget's cost model gains when costs vary by
#              prompt: RouteLLM (25% budget) and RouterDC (10%, 5%) with a synthetic
#              cost per category, warm 1,000, priced by the cost model and at each
#              arm's mean cost, with and without the category as a tag, orders 101-105
#              (bench/quality_cost_context.sql; results/quality_cost_context.md)
#   policies   the policy comparison below (results/quality.txt and its plots)
#   candidates (not in the default list) candidate default settings against the
#              defaults on fresh orders, seed by seed: the RouterDC and RouteLLM
#              rows of the tags part, RouteLLM cold tagged too (bench/quality_candidates.sql;
#              results/quality_candidates.md); make bench-candidates
#
# Data of the policies part: the RouteLLM outcomes in routellm.csv (in
# MS_BENCH_DATA; 15,361 prompts, arm 1 Mixtral-8x7B, arm 2 GPT-4) with the
# synthetic per-call costs 0.05 (Mixtral) and 1.0 (GPT-4), and the synthetic
# stream synthetic_clusters(5000, 32, 3, NULL, 1, 0.1) judged by its expected
# rewards.  Output: a table on stdout and in bench/results/quality.txt, PNG
# plots in bench/results/.
#
# Knobs (environment):
#   MS_BENCH_DATA        directory of routellm.csv and routerdc7_dev.csv,
#                        relative to the repository root   ../shared/bench
#   MS_BENCH_PARTS       parts to run     "routerdc7 drift feedback routellm-warm hull tags cost-context policies"
#   MS_BENCH_SEEDS       replay seeds (shuffle orders) to average over   "1 2 3"
#   MS_BENCH_DC_SEEDS    the same for the routerdc7 part (issue 30's bars
#                        are judged on 5 orders)                         "1 2 3 4 5"
#   MS_BENCH_PAK_SEEDS   seeds for pak_ucb on routellm (the slow part)   "1"
#   MS_BENCH_FRESH_SEEDS orders of the candidates part, none of the
#                        others' (the defaults were tuned on those)      "101 ... 130"
#   MS_BENCH_CANDIDATES  its candidates: a JSON array of settings
#                        objects, each compared with the defaults ({})   '[{"eta": 1.5}]'
#   MS_BENCH_PAK_BW      rbf bandwidth(s) of pak_ucb, every λ            "1"
#   MS_BENCH_PAK_BW_EXTRA  more bandwidth(s) tried on routellm only at
#                        the λ in MS_BENCH_PAK_EXTRA_LAMBDAS ("0 0.3"),
#                        to fit the time budget; synthetic: every one    "0.5"
#   MS_BENCH_PAK_ROUNDS  rounds for pak_ucb on routellm when a full pass
#                        is too slow (every policy is also run for these
#                        rounds, so the comparison uses the same rows)   5000
#   MS_BENCH_PAK_FULL_MAX  longest acceptable full pak_ucb pass, seconds 60
#   MS_BENCH_JOBS        parallel replay() backends                      2
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
SELF=$ROOT/bench/quality.sh
DATA_DIR=${MS_BENCH_DATA:-../shared/bench}
DATA_DIR=$(cd "$DATA_DIR" 2>/dev/null && pwd || echo "$DATA_DIR")
CSV=$DATA_DIR/routellm.csv
PARTS=${MS_BENCH_PARTS:-routerdc7 drift feedback routellm-warm hull tags cost-context policies}
has_part() { case " $PARTS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
RESULTS=bench/results

SEEDS=${MS_BENCH_SEEDS:-1 2 3}
DC_SEEDS=${MS_BENCH_DC_SEEDS:-1 2 3 4 5}
PAK_SEEDS=${MS_BENCH_PAK_SEEDS:-1}
FRESH_SEEDS=${MS_BENCH_FRESH_SEEDS:-$(seq -s ' ' 101 130)}
CANDIDATES=${MS_BENCH_CANDIDATES:-'[{"eta": 1.5}]'}
PAK_BW=${MS_BENCH_PAK_BW:-1}
PAK_BW_EXTRA=${MS_BENCH_PAK_BW_EXTRA:-0.5}
PAK_EXTRA_LAMBDAS=${MS_BENCH_PAK_EXTRA_LAMBDAS:-0 0.3}
PAK_ROUNDS=${MS_BENCH_PAK_ROUNDS:-5000}
PAK_FULL_MAX=${MS_BENCH_PAK_FULL_MAX:-60}
JOBS=${MS_BENCH_JOBS:-2}
LAMBDAS="0 0.1 0.2 0.3 0.5"
COST_MIXTRAL=0.05
COST_GPT4=1.0
CHECKPOINT=250

die() { echo "bench/quality.sh: $*" >&2; exit 1; }

# ---------------------------------------------------------------------------
# Plots (gnuplot): plot_all DATA_DIR, reading the files written below.
# ---------------------------------------------------------------------------
plot_all() {
    local d=$1 f i title plots
    local term='set terminal pngcairo size 1200,480 font "DejaVu Sans,10" linewidth 1.3 noenhanced
set encoding utf8'
    # pak_ucb lines thicker, so that lines lying on top of each other stay visible
    local styles='set style line 1 lc rgb "#1f77b4" lw 5
set style line 2 lc rgb "#17becf" lw 3
set style line 3 lc rgb "#9467bd" lw 3
set style line 4 lc rgb "#8c564b" lw 3
set style line 5 lc rgb "#e377c2" lw 3
set style line 6 lc rgb "#2ca02c" lw 1.5
set style line 7 lc rgb "#ff7f0e" lw 2
set style line 8 lc rgb "#d62728" lw 2
set style line 9 lc rgb "#555555" lw 1.5 dt 2
set grid lc rgb "#dddddd"'

    # (a) learning curves: cumulative regret vs round, one line per policy.
    # Lines that coincide (on routellm greedy, pak_ucb and "always GPT-4" all
    # stay at 0 regret against the best arm) stay apart by their markers,
    # which each policy draws at other rounds (every 6th point from its own
    # offset); the key, below the panels, covers no curve.
    for ds in synthetic routellm; do
        plots=()
        for f in "$d"/lc_"$ds"_[0-9]*.dat; do
            i=${f##*_}; i=${i%.dat}
            title=$(cat "$d/lc_${ds}_$i.label")
            plots+=("'$f' using 1:COL with lines ls $i notitle"
                    "'$f' using 1:COL every 6::$((i % 6)) with points ls $i lw 1.5 pt $((i + 3)) ps 1.2 notitle"
                    "keyentry with linespoints ls $i pt $((i + 3)) ps 1.2 title '$title'")
        done
        local ref=""
        if [ -f "$d/lc_${ds}_ref.dat" ]; then
            ref=", '$d/lc_${ds}_ref.dat' using 1:COL with lines ls 9 title '$(cat "$d/lc_${ds}_ref.label")'"
        fi
        local joined
        joined=$(IFS=,; echo "${plots[*]}")
        {
            echo "${term/1200,480/1200,560}"
            echo "$styles"
            echo "set output '$RESULTS/learning_$ds.png'"
            echo "set multiplot layout 1,2 title \"$(cat "$d/lc_$ds.title")\""
            echo "set key below horizontal maxcols 3 width 1"
            echo "set xlabel 'round'"
            if [ "$ds" = synthetic ]; then
                echo "set logscale y"
                echo "set ylabel 'cumulative regret vs per-prompt oracle (log scale)'"
            else
                echo "set ylabel 'cumulative regret vs per-prompt oracle'"
            fi
            echo "plot ${joined//COL/2}${ref//COL/2}"
            echo "unset logscale y"
            echo "set ylabel 'cumulative regret vs best single arm'"
            echo "plot ${joined//COL/3}${ref//COL/3}"
            echo "unset multiplot"
        } | gnuplot
    done

    # (b) quality vs cost on routellm: mean reward vs mean cost per round as λ varies
    plots=()
    for f in "$d"/qc_[0-9]*.dat; do
        i=${f##*_}; i=${i%.dat}
        title=$(cat "$d/qc_$i.label")
        plots+=("'$f' using 1:2 with linespoints ls $i pt 7 ps 0.8 title '$title'")
        plots+=("'$f' using 1:2:3 with labels offset char 0.9,0.6 font ',8' tc ls $i notitle")
    done
    {
        echo "${term/1200,480/900,650}"
        echo "$styles"
        echo "set output '$RESULTS/quality_cost_routellm.png'"
        echo "set title \"$(cat "$d/qc.title")\""
        echo "set key bottom right"
        echo "set xlabel 'mean cost per prompt (Mixtral = $COST_MIXTRAL, GPT-4 = $COST_GPT4)'"
        echo "set ylabel 'mean reward (accuracy) per prompt'"
        echo "set xrange [-0.02:1.05]"
        echo "set offsets 0, 0, graph 0.04, graph 0.04"
        awk '{ gsub(/_/, " ", $3); printf "set label \"%s\" at %s,%s offset char %s font \",9\"\n", $3, $1, $2, (NR == 1 ? "0.5,-1.2" : "-7,-2") }' "$d/qc_arms.dat"
        echo "$(IFS=,; echo "plot ${plots[*]}"), \\"
        echo "  '$d/qc_arms.dat' using 1:2 with linespoints ls 9 pt 5 ps 1.2 title 'single arms and their random mixtures', \\"
        echo "  '$d/qc_oracle.dat' using 1:2 with points lc rgb '#000000' pt 6 ps 1.5 title 'per-prompt oracle (cost-aware)'"
    } | gnuplot
}

# quality vs cost on routellm (part hull): plot_hull DATA_DIR, reading the
# files bench/quality_hull.sql wrote there ('|'-separated: router, cost, quality[, knob]).
plot_hull() {
    local d=$1
    # Axes that hold the data: every hull starts at the origin (no answer costs
    # and earns 0), far below the points; its first segment is left out and the
    # y range fits the points.  Labels: cost weights above left of their point,
    # budgets below right, so that the two kinds never print over each other.
    gnuplot <<GP
set terminal pngcairo size 900,650 font "DejaVu Sans,10" linewidth 1.3 noenhanced
set encoding utf8
set output '$RESULTS/quality_hull_routellm.png'
set datafile separator '|'
set title "RouteLLM, one online pass per point (mean over seeds $SEEDS): the router's hull against the single models' hull\n(the hulls start at the origin, below this window)"
set key bottom right
set grid lc rgb "#dddddd"
set xlabel 'mean cost per prompt (Mixtral = $COST_MIXTRAL, GPT-4 = $COST_GPT4)'
set ylabel 'mean accuracy per prompt'
set xrange [0:1.05]
set offsets 0, 0, graph 0.06, graph 0.06
above(k) = strstrt(k, "budget") ? NaN : 1
below(k) = strstrt(k, "budget") ? 1 : NaN
plot '$d/hull_vertices.dat' using (\$1 == 0 && \$2 > 0 ? \$2 : NaN):3 with linespoints lc rgb "#555555" dt 2 lw 2 pt 5 ps 1.2 title 'single models and their random mixtures (hull)', \
     '$d/hull_vertices.dat' using (\$1 == 1 && \$2 > 0 ? \$2 : NaN):3 with lines lc rgb "#1f77b4" lw 2 title 'lin_ucb default: hull', \
     '$d/hull_points.dat' using (\$1 == 1 ? \$2 : NaN):3 with points lc rgb "#1f77b4" pt 7 ps 0.9 title 'lin_ucb default: cost weights and budgets', \
     '$d/hull_vertices.dat' using (\$1 == 2 && \$2 > 0 ? \$2 : NaN):3 with lines lc rgb "#d62728" lw 2 title 'lin_ucb alpha 10, intercept 10, eta 1: hull', \
     '$d/hull_points.dat' using (\$1 == 2 ? \$2 : NaN):3 with points lc rgb "#d62728" pt 9 ps 1.0 title 'lin_ucb alpha 10, intercept 10, eta 1: points', \
     '$d/hull_points.dat' using (\$1 == 2 ? \$2 * above(strcol(4)) : NaN):3:4 with labels right offset char -0.8,0.9 font ',8' tc rgb "#d62728" notitle, \
     '$d/hull_points.dat' using (\$1 == 2 ? \$2 * below(strcol(4)) : NaN):3:4 with labels left offset char 0.8,-0.9 font ',8' tc rgb "#d62728" notitle
GP
}

if [ "${1:-}" = --plot ]; then   # development aid: re-plot from a kept data directory
    [ -f "$2/hull_points.dat" ] && plot_hull "$2"
    [ -f "$2/lc.tsv" ] && plot_all "$2"
    exit 0
fi

# ---------------------------------------------------------------------------
# Outside the cluster: check the data, install gnuplot, start the cluster.
# ---------------------------------------------------------------------------
if [ "${MS_BENCH_INSIDE:-}" != 1 ]; then
    for f in routellm.csv routerdc7_dev.csv; do
        [ -r "$DATA_DIR/$f" ] || die "the data set $DATA_DIR/$f is missing or unreadable;
  set MS_BENCH_DATA to the directory that holds routellm.csv and routerdc7_dev.csv (see its README.md)"
    done
    if ! command -v gnuplot >/dev/null 2>&1; then
        [ "$(id -u)" -eq 0 ] || die "gnuplot is missing; install it as root: apt-get install gnuplot-nox"
        echo "bench/quality.sh: installing gnuplot-nox (for the plots)"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -q --no-install-recommends gnuplot-nox >/dev/null ||
            { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends gnuplot-nox >/dev/null; } ||
            die "could not install gnuplot-nox"
    fi
    gnuplot -e 'set terminal pngcairo' 2>/dev/null || die "this gnuplot has no pngcairo terminal (install gnuplot-nox)"
    mkdir -p "$RESULTS"
    start=$(date +%s)
    MS_BENCH_INSIDE=1 MS_BENCH_START=$start scripts/with-cluster.sh bash "$SELF"
    echo "bench/quality.sh: done in $(( $(date +%s) - start )) s; results in $RESULTS/"
    exit 0
fi

# ---------------------------------------------------------------------------
# Inside the cluster (PGHOST etc. set by scripts/with-cluster.sh).
# ---------------------------------------------------------------------------
START=${MS_BENCH_START:-$(date +%s)}
DATA=$(mktemp -d "${TMPDIR:-/tmp}/ms_quality.XXXXXX")
if [ -n "${MS_BENCH_KEEP_DATA:-}" ]; then
    echo "bench/quality.sh: keeping plot data in $DATA"
else
    trap 'rm -rf "$DATA"' EXIT
fi
# pak_ucb's full passes over RouteLLM keep up to 15,361 rewards per arm (391 MB at
# dimension 128), past the default model_select.max_model_size guard (superuser only)
export PGOPTIONS="${PGOPTIONS:-} -c model_select.max_model_size=1GB"
PSQL=(psql -X -q -v ON_ERROR_STOP=1)
sql() { "${PSQL[@]}" -At -c "$1"; }

to_pg_array() { echo "{$(echo "$1" | tr -s ' ' ',')}"; }
V_SEEDS=$(to_pg_array "$SEEDS")
V_DC_SEEDS=$(to_pg_array "$DC_SEEDS")
V_PAK_SEEDS=$(to_pg_array "$PAK_SEEDS")
V_LAMBDAS=$(to_pg_array "$LAMBDAS")
V_PAK_BW=$(to_pg_array "$PAK_BW")

# --- part routerdc7 and part hull: each in a database of its own ------------------
part_db() {   # part_db NAME: a fresh database with the extension
    "${PSQL[@]}" -c "CREATE DATABASE $1" && "${PSQL[@]}" -d "$1" -c "CREATE EXTENSION model_select"
}
# sql_part NAME [psql options...]: bench/quality_NAME.sql in a fresh database
# bench_NAME, writing $RESULTS/quality_NAME.md; its notices are the progress
sql_part() {
    local name=$1
    shift
    part_db "bench_$name"
    "${PSQL[@]}" -d "bench_$name" -v data="$DATA_DIR" -v seeds="$V_SEEDS" -v out="$RESULTS/quality_$name.md" \
        "$@" -f "bench/quality_$name.sql" 2>&1 |
        sed -e '/already exists, skipping/d' -e 's/^psql:[^ ]* NOTICE:  /   /'
}
if has_part routerdc7; then
    echo "== routerdc7: cold and warm-started online passes (seeds $DC_SEEDS; 1-2 minutes per seed, most of it pak_ucb's)"
    sql_part routerdc7 -v seeds="$V_DC_SEEDS"
    echo
    cat "$RESULTS/quality_routerdc7.md"
    echo
fi
if has_part drift; then
    echo "== drift: the best arms swap at round 1,000, window 300 on the selector's clock (seeds $DC_SEEDS; about 1 minute)"
    sql_part drift -v seeds="$V_DC_SEEDS"
    echo
    cat "$RESULTS/quality_drift.md"
    echo
fi
if has_part feedback; then
    echo "== feedback: RouterDC with late and sparse rewards, defaults and count_pending (seeds $DC_SEEDS; about 2-3 minutes per seed)"
    sql_part feedback -v seeds="$V_DC_SEEDS"
    echo
    cat "$RESULTS/quality_feedback.md"
    echo
fi
if has_part routellm-warm; then
    echo "== routellm-warm: RouteLLM with prices, cold and warm-started, a budget as feedback arrives (3 seeds; about 1.5 minutes)"
    sql_part routellm_warm
    echo
    cat "$RESULTS/quality_routellm_warm.md"
    echo
fi
if has_part hull; then
    echo "== hull: RouteLLM quality vs cost, online router against single models (about 1-3 minutes)"
    sql_part hull -v plot="$DATA" -c "SET client_min_messages = notice"
    plot_hull "$DATA"
    echo
    cat "$RESULTS/quality_hull.md"
    echo "   plot: $RESULTS/quality_hull_routellm.png"
    echo
fi
if has_part tags; then
    echo "== tags: the default router with and without tags (seeds $DC_SEEDS; about 1-2 minutes per seed)"
    sql_part tags -v seeds="$V_DC_SEEDS"
    echo
    cat "$RESULTS/quality_tags.md"
    echo
fi
if has_part cost-context; then
    echo "== cost-context: the budget's cost model, RouteLLM and RouterDC with a synthetic cost per category (orders 101-105; under a minute)"
    sql_part cost_context -v seeds="{101,102,103,104,105}"
    echo
    cat "$RESULTS/quality_cost_context.md"
    echo
fi
if has_part candidates; then
    echo "== candidates: $CANDIDATES against the defaults (seeds $FRESH_SEEDS; about 1 minute per candidate and 30 seeds at lin_ucb's speed; share takes 10 times longer)"
    sql_part candidates -v seeds="$(to_pg_array "$FRESH_SEEDS")" -v candidates="$CANDIDATES"
    echo
    cat "$RESULTS/quality_candidates.md"
    echo
fi
has_part policies || exit 0

echo "== set-up: extension, data, job list"
"${PSQL[@]}" -v cm="$COST_MIXTRAL" -v cg="$COST_GPT4" -v csv="$CSV" <<'SQL'
CREATE EXTENSION model_select;
CREATE TABLE bench_routellm(id int, category text, embedding real[], rewards real[], costs real[]);
-- \copy takes no variables: build the command, then run it
\set load_csv '\\copy bench_routellm FROM ' :'csv' ' CSV HEADER'
:load_csv
CREATE TABLE bench_synthetic AS
    SELECT * FROM model_select.synthetic_clusters(5000, 32, 3, NULL, 1, 0.1);
-- the cost assumption, kept in one place
CREATE TABLE bench_costs AS SELECT :cm::float8 AS mixtral, :cg::float8 AS gpt4;

-- One row per replay() call.  kind: policy | ref (a one-arm source whose
-- replay is the reference: always Mixtral, always GPT-4, the oracle) | probe.
CREATE TABLE bench_jobs (
    job serial PRIMARY KEY, kind text, dataset text, label text, ord int,
    policy text, kernel text, settings jsonb, lambda float8, seed bigint,
    rounds int, rounds_eff int, source text, prio float8,
    ref_arm int, elapsed float8, worker int);
CREATE TABLE bench_ck (job int, round int, cum_reward float8, cum_cost float8,
    cum_utility float8, regret_best_arm float8, regret_oracle float8, opr float8,
    opr_window float8, otb float8, picks bigint[], learned bigint);

-- Claim the next job (largest prio first), run it, record the time.
CREATE FUNCTION bench_run_next(w int, ck int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    j bench_jobs;
    t0 timestamptz;
    secs float8;
BEGIN
    SELECT * INTO j FROM bench_jobs WHERE elapsed IS NULL
     ORDER BY prio DESC, job LIMIT 1 FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    t0 := clock_timestamp();
    INSERT INTO bench_ck
    SELECT j.job, r.* FROM model_select.replay(j.source, j.policy, j.kernel, j.settings,
                                               j.seed, j.lambda, j.rounds, 1, ck, true) r;
    secs := extract(epoch FROM clock_timestamp() - t0);
    UPDATE bench_jobs SET elapsed = secs, worker = w WHERE job = j.job;
    RETURN format('%8s s  [%s] %-9s %-26s λ=%-4s seed=%s rounds=%s',
                  to_char(secs, 'FM99990.00'), w, j.dataset, j.label, j.lambda, j.seed, j.rounds_eff);
END $$;

-- Sources.  routellm: costs are constant per arm (see bench/README.md).
CREATE FUNCTION bench_src_routellm() RETURNS text LANGUAGE sql AS $$
    SELECT format('SELECT embedding, rewards, ARRAY[%s, %s]::float8[] FROM bench_routellm ORDER BY id',
                  mixtral, gpt4) FROM bench_costs $$;
-- one arm: always Mixtral (1), always GPT-4 (2), or the per-prompt oracle
-- under cost weight lam (NULL): the arm of larger utility, the cheaper on ties
CREATE FUNCTION bench_src_ref(arm int, lam float8) RETURNS text LANGUAGE sql AS $$
    SELECT CASE arm
      WHEN 1 THEN format('SELECT embedding, ARRAY[rewards[1]], ARRAY[%s]::float8[] FROM bench_routellm ORDER BY id', mixtral)
      WHEN 2 THEN format('SELECT embedding, ARRAY[rewards[2]], ARRAY[%s]::float8[] FROM bench_routellm ORDER BY id', gpt4)
      ELSE format('SELECT embedding, ARRAY[CASE WHEN g THEN rewards[2] ELSE rewards[1] END],'
                  ' ARRAY[CASE WHEN g THEN %s ELSE %s END]::float8[]'
                  '  FROM (SELECT *, rewards[2] - %s * %s > rewards[1] - %s * %s AS g FROM bench_routellm) s ORDER BY id',
                  gpt4, mixtral, lam, gpt4, lam, mixtral)
    END FROM bench_costs $$;
SQL

N_ROUTELLM=$(sql "SELECT count(*) FROM bench_routellm")
echo "   routellm: $N_ROUTELLM prompts; synthetic: $(sql "SELECT count(*) FROM bench_synthetic") rounds"

# Run every job not done yet on $JOBS backends; prints one line per replay() call.
run_jobs() {
    local pids=() w rc=0
    for w in $(seq 1 "$JOBS"); do
        (
            while :; do
                line=$(sql "SELECT bench_run_next($w, $CHECKPOINT)")
                [ -n "$line" ] || break
                echo "$line"
            done
        ) &
        pids+=($!)
    done
    for w in "${pids[@]}"; do
        wait "$w" || rc=1
    done
    [ "$rc" = 0 ] || die "a replay() call failed (see above)"
}

# --- pak_ucb cost probe on routellm: time 1000 and 2000 rounds ---------------
echo "== pak_ucb speed probe (routellm, rbf bandwidth 1, λ=0, seed 1)"
sql "INSERT INTO bench_jobs(kind, dataset, label, ord, policy, kernel, settings, lambda, seed, rounds, rounds_eff, source, prio)
     SELECT 'probe', 'routellm', 'pak_ucb probe', 0, 'pak_ucb', 'rbf', '{\"cap\": 10000, \"bandwidth\": 1}',
            0, 1, r, r, bench_src_routellm(), r FROM unnest(ARRAY[1000, 2000]) r"
run_jobs
read -r T1000 T2000 < <(sql "SELECT string_agg(to_char(elapsed, 'FM99990.00'), ' ' ORDER BY rounds) FROM bench_jobs WHERE kind = 'probe'")
# Each pak_ucb update and score costs O(n²) in the arm's rewards n, so a pass
# costs O(rounds³): extrapolate cubically from the 2000-round probe (a lower
# bound: larger factors also fall out of the CPU caches).
EST_FULL=$(awk -v t="$T2000" -v n="$N_ROUTELLM" 'BEGIN { printf "%.0f", t * (n / 2000) ^ 3 }')
echo "   1000 rounds: ${T1000} s, 2000 rounds: ${T2000} s (x$(awk -v a="$T1000" -v b="$T2000" 'BEGIN { printf "%.1f", b / a }') for 2x rounds)"
echo "   a full pass ($N_ROUTELLM rounds) would take about ${EST_FULL} s (≈ $((EST_FULL / 60)) min) per run, cubic extrapolation"
if [ "$EST_FULL" -gt "$PAK_FULL_MAX" ]; then
    PAK_R=$PAK_ROUNDS
    PAK_NOTE="pak_ucb on routellm runs only the first $PAK_ROUNDS rounds of each shuffled pass: a full pass would take at least $((EST_FULL / 60)) min per run (estimated), and at small or large λ one arm would get more than 10000 rewards, the largest cap"
    echo "   => too slow: $PAK_NOTE"
else
    PAK_R=$N_ROUTELLM
    PAK_NOTE="pak_ucb on routellm runs full passes"
fi

# --- the job list -------------------------------------------------------------
"${PSQL[@]}" -v seeds="$V_SEEDS" -v pak_seeds="$V_PAK_SEEDS" -v lambdas="$V_LAMBDAS" -v pak_bw="$V_PAK_BW" \
    -v pak_bw_extra="$(to_pg_array "$PAK_BW_EXTRA")" -v pak_extra_lambdas="$(to_pg_array "$PAK_EXTRA_LAMBDAS")" \
    -v pak_rounds="$PAK_R" -v n="$N_ROUTELLM" <<'SQL'
-- lambdas: the cost weights a policy runs at on routellm (NULL: all)
CREATE TEMP TABLE pol(ord int, label text, policy text, kernel text, settings jsonb, lambdas float8[]);
INSERT INTO pol
SELECT row_number() OVER (ORDER BY b), format('pak_ucb (rbf, bw %s)', b), 'pak_ucb', 'rbf',
       jsonb_build_object('cap', 10000, 'bandwidth', b),
       CASE WHEN b = ANY (:'pak_bw'::float8[]) THEN NULL ELSE :'pak_extra_lambdas'::float8[] END
  FROM (SELECT DISTINCT b FROM unnest(:'pak_bw'::float8[] || :'pak_bw_extra'::float8[]) b) u;
INSERT INTO pol VALUES
    (6, 'lin_ucb', 'lin_ucb', NULL, '{}', NULL),
    (7, 'greedy',  'greedy',  NULL, '{}', NULL),
    (8, 'random',  'random',  NULL, '{}', NULL);

-- synthetic: every policy, λ = 0 (no costs), every seed, judged by `expected`
INSERT INTO bench_jobs(kind, dataset, label, ord, policy, kernel, settings, lambda, seed, rounds, rounds_eff, source, prio)
SELECT 'policy', 'synthetic', label, ord, policy, kernel, settings, 0, s, NULL, 5000,
       'SELECT context, reward, ''{}''::float8[], expected FROM bench_synthetic ORDER BY round',
       CASE WHEN policy = 'pak_ucb' THEN 10 ELSE 0.1 END
  FROM pol, unnest(:'seeds'::int[]) s;

-- routellm, the rounds pak_ucb can afford: every policy (pak_ucb on its seeds)
INSERT INTO bench_jobs(kind, dataset, label, ord, policy, kernel, settings, lambda, seed, rounds, rounds_eff, source, prio)
SELECT 'policy', 'routellm', label, ord, policy, kernel, settings, l, s,
       NULLIF(:pak_rounds, :n), :pak_rounds, bench_src_routellm(),
       CASE WHEN policy = 'pak_ucb' THEN 100 + 100 * abs(l - 0.25) ELSE 0.1 END  -- largest first: extreme λ, one arm gets every reward
  FROM pol, unnest(:'lambdas'::float8[]) l, unnest(:'seeds'::int[]) s
 WHERE (policy <> 'pak_ucb' OR s = ANY (:'pak_seeds'::int[]))
   AND (lambdas IS NULL OR l = ANY (lambdas));

-- routellm, full passes for the policies that are not already run that long
INSERT INTO bench_jobs(kind, dataset, label, ord, policy, kernel, settings, lambda, seed, rounds, rounds_eff, source, prio)
SELECT 'policy', 'routellm', label, ord, policy, kernel, settings, l, s, NULL, :n, bench_src_routellm(), 1
  FROM pol, unnest(:'lambdas'::float8[]) l, unnest(:'seeds'::int[]) s
 WHERE policy <> 'pak_ucb' AND :pak_rounds <> :n;

-- references on the same rows (same seed => same shuffle, same rounds):
-- one-arm sources, so any policy just plays that arm
INSERT INTO bench_jobs(kind, dataset, label, ord, policy, kernel, settings, lambda, seed, rounds, rounds_eff, source, prio, ref_arm)
SELECT 'ref', 'routellm', r.label, r.ord, 'greedy', NULL, '{}', l, s, NULLIF(re, :n), re,
       bench_src_ref(r.arm, l), 0.01, r.arm
  FROM (VALUES (11, 'always Mixtral', 1), (12, 'always GPT-4 (best single arm)', 2),
               (13, 'per-prompt oracle', NULL)) r(ord, label, arm),
       unnest(:'lambdas'::float8[]) l, unnest(:'seeds'::int[]) s,
       (SELECT DISTINCT rounds_eff FROM bench_jobs WHERE dataset = 'routellm' AND kind = 'policy') re(re);
SQL
echo "   $(sql "SELECT count(*) FROM bench_jobs WHERE elapsed IS NULL") replay() calls on $JOBS backends; seeds: $SEEDS (pak_ucb on routellm: $PAK_SEEDS)"

echo "== replay() calls (elapsed time, backend, dataset, policy, λ, seed, rounds)"
run_jobs

# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------
"${PSQL[@]}" <<'SQL'
-- the final checkpoint of every job, per-round means
CREATE VIEW bench_final AS
SELECT j.*, c.round AS r, c.cum_reward / c.round AS reward, c.cum_cost / c.round AS cost,
       c.cum_utility / c.round AS utility, c.cum_utility, c.regret_best_arm, c.regret_oracle, c.opr,
       (SELECT array_agg(p::float8 / c.round ORDER BY i) FROM unnest(c.picks) WITH ORDINALITY u(p, i)) AS share
  FROM bench_jobs j
  JOIN LATERAL (SELECT * FROM bench_ck c WHERE c.job = j.job ORDER BY round DESC LIMIT 1) c ON true
 WHERE j.kind <> 'probe';

-- references per (rounds, λ, seed): utility sums of the best single arm and the oracle
CREATE VIEW bench_refs AS
SELECT rounds_eff, lambda, seed,
       max(cum_utility) FILTER (WHERE ref_arm IS NOT NULL) AS best_arm,
       max(cum_utility) FILTER (WHERE ref_arm IS NULL) AS oracle
  FROM bench_final WHERE kind = 'ref' GROUP BY 1, 2, 3;

-- every row with its regrets (refs: against the other refs) and pick shares
CREATE VIEW bench_rows AS
SELECT f.*,
       CASE WHEN kind = 'ref' THEN rf.best_arm - f.cum_utility ELSE f.regret_best_arm END AS rb,
       CASE WHEN kind = 'ref' THEN rf.oracle - f.cum_utility ELSE f.regret_oracle END AS ro,
       CASE WHEN kind = 'policy' THEN f.share
            WHEN ref_arm = 1 THEN ARRAY[1, 0]::float8[]
            WHEN ref_arm = 2 THEN ARRAY[0, 1]::float8[]
            ELSE ARRAY[1 - (f.cost - co.mixtral) / (co.gpt4 - co.mixtral),
                       (f.cost - co.mixtral) / (co.gpt4 - co.mixtral)] END AS shares,
       CASE WHEN kind = 'policy' THEN f.opr WHEN ref_arm IS NULL THEN 1 END AS opr_
  FROM bench_final f
  LEFT JOIN bench_refs rf USING (rounds_eff, lambda, seed)
  CROSS JOIN bench_costs co;

CREATE VIEW bench_summary AS
SELECT dataset, rounds_eff, ord, label, lambda, count(*) AS seeds,
       avg(utility) AS utility, stddev_samp(utility) AS utility_sd, avg(reward) AS reward,
       avg(cost) AS cost, avg(rb) AS rb, avg(ro) AS ro, avg(opr_) AS opr, avg(elapsed) AS secs,
       (SELECT array_agg(x ORDER BY i) FROM (
           SELECT i, avg(v) AS x FROM bench_rows b2, unnest(b2.shares) WITH ORDINALITY u(v, i)
            WHERE (b2.dataset, b2.rounds_eff, b2.label, b2.lambda) = (b.dataset, b.rounds_eff, b.label, b.lambda)
            GROUP BY i) q) AS shares
  FROM bench_rows b
 GROUP BY dataset, rounds_eff, ord, label, lambda;
SQL

# --- replay()'s own regrets against the reference replays on the same rows ---
read -r CHECK_N CHECK_DEV < <(sql "
    SELECT count(*), coalesce(max(greatest(abs(f.cum_utility + f.regret_best_arm - rf.best_arm),
                                           abs(f.cum_utility + f.regret_oracle - rf.oracle))), 0)
      FROM bench_final f JOIN bench_refs rf USING (rounds_eff, lambda, seed)
     WHERE f.kind = 'policy' AND f.dataset = 'routellm'" | tr '|' ' ')
read -r FULL_DEV < <(sql "
    SELECT max(abs(f.reward - CASE f.ref_arm WHEN 1 THEN m ELSE g END))
      FROM bench_final f, (SELECT avg(rewards[1]) m, avg(rewards[2]) g FROM bench_routellm) a
     WHERE f.kind = 'ref' AND f.ref_arm IS NOT NULL AND f.rounds_eff = $N_ROUTELLM")
CHECK_NOTE="cross-check: in all $CHECK_N routellm policy runs, cum_utility + regret_best_arm (resp. + regret_oracle) equals the utility of the best single arm (resp. the oracle) replayed on the same rows, max deviation $CHECK_DEV; single-arm replays over a full pass match avg(rewards[a]) within ${FULL_DEV:-n/a}"
awk -v d="$CHECK_DEV" 'BEGIN { exit !(d > 1e-6) }' && echo "WARNING: $CHECK_NOTE" >&2

# --- the table (markdown) ------------------------------------------------------
table() {   # table DATASET ROUNDS
    local arms hdr
    if [ "$1" = synthetic ]; then arms="arm 1 / 2 / 3"; else arms="Mixtral / GPT-4"; fi
    echo "| policy | λ | seeds | utility / round | reward / round | cost / round | picks: $arms | regret vs best arm | regret vs oracle | OPR | s / run |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    sql "SELECT format('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |',
                  CASE WHEN ord > 10 THEN '*' || label || '*' ELSE label END, lambda, seeds,
                  to_char(utility, 'FM0.0000') || coalesce(' ± ' || to_char(utility_sd, 'FM0.0000'), ''),
                  to_char(reward, 'FM0.0000'), to_char(cost, 'FM0.000'),
                  (SELECT string_agg(to_char(100 * x, 'FM990.0') || '%', ' / ' ORDER BY i)
                     FROM unnest(shares) WITH ORDINALITY u(x, i)),
                  to_char(rb, 'FM999990.0'), to_char(ro, 'FM999990.0'),
                  coalesce(to_char(opr, 'FM0.000'), '–'),
                  CASE WHEN ord > 10 THEN '–' ELSE to_char(secs, 'FM99990.0') END)
           FROM bench_summary WHERE dataset = '$1' AND rounds_eff = $2
          ORDER BY lambda, ord"
}
{
    echo "# model_select quality benchmark (make bench-quality)"
    echo
    echo "Generated by bench/quality.sh on $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $JOBS parallel backends; model_select $(sql "SELECT extversion FROM pg_extension WHERE extname = 'model_select'") at $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD -- src sql 2>/dev/null || echo ' (+ uncommitted changes)')."
    echo
    echo "Every figure is the mean over the seeds (each seed is one shuffled order of the rows); utility = reward − λ·cost; regrets are cumulative at the last round, judged by \`expected\` on synthetic and by the observed rewards on routellm. OPR = share of rounds with an optimal pick (ties count). Rows in *italics* are references replayed on exactly the same rows. \"s / run\": elapsed time of one replay() call."
    echo
    echo "Costs (routellm has none): a constant per call, Mixtral $COST_MIXTRAL and GPT-4 $COST_GPT4 (GPT-4 ≈ 20× Mixtral per token, equal prompt lengths assumed)."
    echo "$PAK_NOTE."
    echo
    echo "## synthetic: synthetic_clusters(5000, 32, 3, NULL, 1, 0.1), 5000 rounds, λ = 0"
    echo
    table synthetic 5000
    for re in $(sql "SELECT DISTINCT rounds_eff FROM bench_jobs WHERE dataset = 'routellm' AND kind <> 'probe' ORDER BY 1"); do
        echo
        if [ "$re" = "$N_ROUTELLM" ]; then
            echo "## routellm: full pass, $re rounds$([ "$PAK_R" != "$N_ROUTELLM" ] && echo ' (without pak_ucb)')"
        else
            echo "## routellm: first $re rounds of each shuffled pass (all policies on the same rows)"
        fi
        echo
        table routellm "$re"
    done
    echo
    echo "pak_ucb speed on routellm (λ = 0, one run): 1000 rounds ${T1000} s, 2000 rounds ${T2000} s; a full pass ≈ ${EST_FULL} s by cubic extrapolation."
    echo
    echo "${CHECK_NOTE^}."
    echo
    echo "Total time: $(( $(date +%s) - START )) s (cluster set-up, data load, $(sql "SELECT count(*) FROM bench_jobs") replay() calls, summary; plots follow)."
} > "$RESULTS/quality.txt"
echo
cat "$RESULTS/quality.txt"

# --- plot data -----------------------------------------------------------------
# learning curves, mean over seeds; per label the longest runs at λ = 0
"${PSQL[@]}" -At -F $'\t' -o "$DATA/lc.tsv" -c "
    WITH runs AS (
        SELECT j.*, max(rounds_eff) OVER (PARTITION BY dataset, label) AS longest
          FROM bench_jobs j WHERE kind = 'policy' AND lambda = 0)
    SELECT dataset, ord, label, round,
           avg(regret_oracle), avg(regret_best_arm)
      FROM runs JOIN bench_ck USING (job)
     WHERE rounds_eff = longest
     GROUP BY dataset, ord, label, round ORDER BY 1, 2, 4"
awk -F'\t' -v d="$DATA" '{ f = d "/lc_" $1 "_" $2; print $4, $5, $6 > (f ".dat"); print $3 > (f ".label") }' "$DATA/lc.tsv"
for f in "$DATA"/lc_*.label; do sort -u -o "$f" "$f"; done
# reference curve on routellm: always GPT-4 (oracle − GPT-4; best arm − GPT-4 = 0 at λ = 0)
"${PSQL[@]}" -At -F ' ' -o "$DATA/lc_routellm_ref.dat" -c "
    SELECT o.round, avg(o.cum_utility - g.cum_utility), 0
      FROM (bench_jobs jo JOIN bench_ck o USING (job))
      JOIN (bench_jobs jg JOIN bench_ck g USING (job))
        ON jo.seed = jg.seed AND jo.rounds_eff = jg.rounds_eff AND o.round = g.round
     WHERE jo.kind = 'ref' AND jo.ref_arm IS NULL AND jg.ref_arm = 2 AND jo.lambda = 0 AND jg.lambda = 0
       AND jo.rounds_eff = $N_ROUTELLM
     GROUP BY o.round ORDER BY 1"
echo "always GPT-4 (best single arm)" > "$DATA/lc_routellm_ref.label"
echo "synthetic_clusters(5000, 32, 3): 3 clusters, 3 arms, judged by expected rewards; mean over seeds $SEEDS" > "$DATA/lc_synthetic.title"
echo "RouteLLM (15,361 prompts, Mixtral vs GPT-4), λ = 0: mean over seeds $SEEDS (pak_ucb: seeds $PAK_SEEDS, first $PAK_R rounds)" > "$DATA/lc_routellm.title"

# quality vs cost: per policy, (cost, reward) for each λ at the rounds every policy ran
"${PSQL[@]}" -At -F $'\t' -o "$DATA/qc.tsv" -c "
    SELECT ord, label, cost, reward, 'λ=' || lambda
      FROM bench_summary WHERE dataset = 'routellm' AND rounds_eff = $PAK_R AND ord < 10
     ORDER BY ord, lambda"
awk -F'\t' -v d="$DATA" '{ f = d "/qc_" $1; print $3, $4, ($2 == "lin_ucb" ? "\"" $5 "\"" : "\"\"") > (f ".dat"); print $2 > (f ".label") }' "$DATA/qc.tsv"
for f in "$DATA"/qc_*.label; do sort -u -o "$f" "$f"; done
"${PSQL[@]}" -At -F ' ' -o "$DATA/qc_arms.dat" -c "
    SELECT cost, reward, CASE ord WHEN 11 THEN 'always_Mixtral' ELSE 'always_GPT-4' END
      FROM bench_summary WHERE dataset = 'routellm' AND rounds_eff = $PAK_R AND ord IN (11, 12) AND lambda = 0
     ORDER BY ord"
"${PSQL[@]}" -At -F ' ' -o "$DATA/qc_oracle.dat" -c "
    SELECT cost, reward FROM bench_summary WHERE dataset = 'routellm' AND rounds_eff = $PAK_R AND ord = 13
     ORDER BY lambda"
echo "RouteLLM, first $PAK_R rounds: quality vs cost as the cost weight λ varies over {${LAMBDAS// /, }}\\n(mean over seeds $SEEDS; pak_ucb: seeds $PAK_SEEDS; λ marked on the lin_ucb line)" > "$DATA/qc.title"

plot_all "$DATA"
echo
echo "plots: $(cd "$RESULTS" && ls -- *.png | tr '\n' ' ')"
