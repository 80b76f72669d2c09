# bench/lib/learner_bench.bash, sourced from the repository's root by the benchmarks that
# route live with the learner serving (bench/quality_learner.sh, bench/pacer_reuse.sh):
#
#   learner_bench CSV NAME PORT DATA_SQL
#       the directory of outcome table CSV (MS_BENCH_DATA, else ../shared/bench) in
#       DATA_DIR, or exits naming what is missing; a cluster of its own, $CL/NAME on the
#       first free port from PORT, with model_select preloaded and the learner serving
#       database bench_NAME (libpq pointed at it, stopped at exit); the extension created
#       and bench/DATA_SQL included with psql variables data (DATA_DIR) and seeds ($SEEDS).
#       Sets t0, the start in seconds.
. test/session/lib/own_cluster.bash
trap cluster_stop_all EXIT

learner_bench() {
    local csv=$1 name=$2 port=$3 data_sql=$4
    DATA_DIR=$(cd "${MS_BENCH_DATA:-../shared/bench}" 2>/dev/null && pwd) ||
        { echo "$0: no directory ${MS_BENCH_DATA:-../shared/bench} (set MS_BENCH_DATA)" >&2; exit 1; }
    [ -r "$DATA_DIR/$csv" ] || { echo "$0: $DATA_DIR/$csv is missing" >&2; exit 1; }
    port=$(free_port "$port")
    cluster_initdb "$name"
    as_server sh -c "printf '%s\n' \"shared_preload_libraries = 'model_select'\" \
        \"model_select.learner_databases = 'bench_$name'\" >> '$CL/$name/postgresql.conf'"
    cluster_start "$name" "$port"
    export PGHOST=$CL PGPORT=$port PGUSER=postgres PGDATABASE=bench_$name
    createdb "bench_$name"
    t0=$(date +%s)
    psql -X -q -v ON_ERROR_STOP=1 -v data="$DATA_DIR" -v seeds="{${SEEDS// /,}}" >/dev/null <<SQL
CREATE EXTENSION model_select;
\\ir bench/$data_sql
SQL
}
