#!/usr/bin/env bash
# make bench-selectors: decisions spread over many small selectors (one per
# tenant, say), with the learner serving, against the same SQL work on plain
# tables in the same cluster.
#
#   For each count S in MS_SELECTORS ("100 400 1000"): S selectors of 3 arms
#   (lin_ucb, d 8), 30 rewards per selector preloaded; pgbench at
#   MS_CLIENTS (8) clients for MS_T (15) seconds, each transaction a route()
#   on a random selector and its reward INSERT; the baseline inserts the same
#   rows into two plain tables.  Prints decisions/s of both and their ratio,
#   the learner's lag (p50/p99 ms), the versions it published, the shared
#   cache's evictions and the rows folded per reward logged in the run
#   (1 when only the learner folds; more when backends fold for themselves).
#   MS_SELECTORS_PERF=DIR: each extension run under perf record -a -g, into DIR/S.data.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${MS_SELECTORS_IN_CLUSTER:-}" ]; then
    MS_SELECTORS_IN_CLUSTER=1 MS_CLUSTER_OPTS="-c shared_preload_libraries=model_select \
        -c model_select.learner_databases=ms_selectors -c max_connections=50 ${MS_CLUSTER_OPTS:-}" \
        exec scripts/with-cluster.sh bench/many_selectors.sh
fi
T=${MS_T:-15}
CLIENTS=${MS_CLIENTS:-8}
DB=ms_selectors
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ms_selectors.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
createdb "$DB"
q -c "CREATE EXTENSION model_select" \
  -c "CREATE TABLE decisions_b (decision_id bigserial PRIMARY KEY, selector text NOT NULL,
                                context float8[] NOT NULL, arm text NOT NULL,
                                created_at timestamptz NOT NULL DEFAULT now())" \
  -c "CREATE TABLE rewards_b (reward_id bigserial PRIMARY KEY,
                              decision_id bigint NOT NULL UNIQUE REFERENCES decisions_b,
                              reward float8 NOT NULL, created_at timestamptz NOT NULL DEFAULT now())"
for i in $(seq 1 50); do
    [ "$(q -c "SELECT count(*) > 0 FROM model_select.learner WHERE running")" = t ] && break
    sleep 0.2
done
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)," \
     "L2 $(cat /sys/devices/system/cpu/cpu0/cache/index2/size 2>/dev/null || echo '?')"
printf '| %9s | %7s | %11s | %10s | %5s | %13s | %8s | %9s | %15s |\n' selectors clients "decisions/s" \
    "baseline/s" ratio "lag p50/p99" versions evictions "folded/reward"
printf '| %9s | %7s | %11s | %10s | %5s | %13s | %8s | %9s | %15s |\n' --------: ------: ----------: \
    ---------: ----: ------------: -------: --------: --------------:
ctx="ARRAY[random(), random(), random(), random(), random(), random(), random(), random()]"
made=0
for S in ${MS_SELECTORS:-100 400 1000}; do
    q >/dev/null <<SQL
SELECT count(model_select.create_selector('s' || i, 8, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL, '{}', i))
  FROM generate_series($made + 1, $S) i;
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 's' || i, (ARRAY['a', 'b', 'c'])[1 + j % 3], $ctx, random()
  FROM generate_series($made + 1, $S) i, generate_series(1, 30) j;
SQL
    made=$S
    cat >"$WORK/ext.sql" <<SQL
\\set s random(1, $S)
BEGIN;
SELECT r.decision_id FROM model_select.route('s' || :s, $ctx) r \\gset
INSERT INTO model_select.rewards(decision_id, reward) VALUES (:decision_id, random());
COMMIT;
SQL
    cat >"$WORK/base.sql" <<SQL
\\set s random(1, $S)
BEGIN;
INSERT INTO decisions_b(selector, context, arm) VALUES ('s' || :s, $ctx, 'a') RETURNING decision_id \\gset
INSERT INTO rewards_b(decision_id, reward) VALUES (:decision_id, random());
COMMIT;
SQL
    q -c "VACUUM ANALYZE"
    # warm-up: the first run of a new cluster creates its WAL segments, which
    # later runs recycle (it had made the first baseline 25-40% slower)
    [ -n "${warm:-}" ] ||
        { pgbench -n -c "$CLIENTS" -j "$CLIENTS" -T 5 -f "$WORK/base.sql" "$DB" >/dev/null &&
          pgbench -n -c "$CLIENTS" -j "$CLIENTS" -T 5 -f "$WORK/ext.sql" "$DB" >/dev/null && warm=1; }
    # the learner's versions hold the preloaded rewards before the baseline runs beside it
    for i in $(seq 1 600); do
        [ "$(q -c "SELECT count(DISTINCT (selector, arm)) = (SELECT count(*) FROM model_select.arms)
                     FROM model_select.learner_versions WHERE NOT stale AND lag_rewards = 0")" = t ] && break
        sleep 0.1
    done
    base=$(pgbench -n -c "$CLIENTS" -j "$CLIENTS" -T "$T" -f "$WORK/base.sql" "$DB" |
           sed -n 's/^tps = \([0-9.]*\) .*/\1/p')
    r0=$(q -c "SELECT count(*) FROM model_select.rewards")
    f0=$(q -c "SELECT rows_folded FROM model_select.cache_stats()")
    e0=$(q -c "SELECT shared_evictions FROM model_select.cache_stats()")
    v0=$(q -c "SELECT sum(versions_published) FROM model_select.learner")
    perf=()
    [ -z "${MS_SELECTORS_PERF:-}" ] || perf=(perf record -q -a -g -o "$MS_SELECTORS_PERF/$S.data" --)
    ext=$("${perf[@]}" pgbench -n -c "$CLIENTS" -j "$CLIENTS" -T "$T" -f "$WORK/ext.sql" "$DB" |
          sed -n 's/^tps = \([0-9.]*\) .*/\1/p')
    read -r lag versions evictions folded <<<"$(q -F ' ' -c "
        SELECT (SELECT round(max(lag_ms_p50)) || '/' || round(max(lag_ms_p99)) FROM model_select.learner),
               (SELECT sum(versions_published) FROM model_select.learner) - $v0,
               (SELECT shared_evictions FROM model_select.cache_stats()) - $e0,
               round(((SELECT rows_folded FROM model_select.cache_stats()) - $f0)::numeric
                     / nullif((SELECT count(*) FROM model_select.rewards) - $r0, 0), 2)")"
    printf '| %9s | %7s | %11.0f | %10.0f | %5.2f | %13s | %8s | %9s | %15s |\n' "$S" "$CLIENTS" "$ext" "$base" \
        "$(awk -v a="$ext" -v b="$base" 'BEGIN { print a / b }')" "$lag ms" "$versions" "$evictions" "$folded"
done
