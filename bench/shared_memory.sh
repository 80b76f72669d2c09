#!/usr/bin/env bash
# make bench-memory: resident memory of 16 backends scoring the same selector,
# with each backend's own cache (model_select not preloaded) and with the
# shared cache (shared_preload_libraries = 'model_select'); then of 64
# backends with the learner serving the database (issue 41).
#
#   one pak_ucb selector, d = 384, 5 arms, 2,000 rewards per arm
#   (synthetic_clusters; the default cap is 2,000), checkpointed;
#   one cluster of its own, set up once, then started three times: with
#   preloading (model_select.shared_cache_size = 256MB), with preloading and
#   the learner (model_select.learner_databases naming the database; one
#   reward per arm is logged after the start and the learner's versions,
#   which then hold every arm's whole log, are what the backends score), and
#   without preloading.
#
# In each mode: 16 psql sessions each call select_model() on 5 prompts, then
# sleep holding their connection; a 17th session connects and sleeps without
# scoring (the baseline of a backend), an 18th scores a small selector 'tiny'
# (d 8) and sleeps (a backend that ran the extension's code: its catalog and
# plan caches and library pages, but no large model), a 19th runs plain SQL
# over the tables a load reads (selectors, arms, arm_state, rewards by its
# index, selector_grants) and sleeps: what PostgreSQL's own caches (relation
# and catalog caches) cost a backend for those tables, no extension code run;
# a 20th runs the scoring sessions' query without select_model() (it reads and
# detoasts the same 5 prompts) and sleeps: what the application's own query costs.
# Then, for every backend, from /proc/<pid>/smaps_rollup: Rss (every resident page it maps, shared pages
# included, so the sum over backends counts a shared page once per backend),
# Pss (each shared page divided among the processes that map it: the sum is
# what the backends really cost), Private_Dirty (pages only this backend has
# written: its heap, where its own cache lives).
#
# Target (issue 28, and issue 41 with the learner), printed with the figures:
# with the shared cache, the backends' summed Pss <= 1.2 x (one copy of the
# models, the shared cache's bytes, + BACKENDS x an idle backend's Pss), and
# the same with the plain-SQL backend's Pss for the idle one; the learner's
# own Pss beside it.  MS_MEMORY_CHECK=1 skips the run without preloading and
# exits 1 when a target against idle backends is missed.
#
# Environment: MS_MEMORY_BACKENDS (16), MS_MEMORY_LEARNER_BACKENDS (64; 0 skips
# the learner's run), MS_MEMORY_REWARDS (2000 per arm),
# MS_MEMORY_DIM (384), MS_MEMORY_PORT (first port tried, 55600), MS_MEMORY_CHECK.
set -euo pipefail
cd "$(dirname "$0")/.."
BACKENDS=${MS_MEMORY_BACKENDS:-16}
LEARNER_BACKENDS=${MS_MEMORY_LEARNER_BACKENDS:-64}
REWARDS=${MS_MEMORY_REWARDS:-2000}
DIM=${MS_MEMORY_DIM:-384}
. test/session/lib/own_cluster.bash
trap cluster_stop_all EXIT
PORT=$(free_port "${MS_MEMORY_PORT:-55600}")
export PGHOST=$CL PGPORT=$PORT PGUSER=postgres PGDATABASE=ms_memory
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }

cluster_initdb mem
as_server sh -c "echo 'max_connections = $(( (BACKENDS > LEARNER_BACKENDS ? BACKENDS : LEARNER_BACKENDS) + 20 ))' >> '$CL/mem/postgresql.conf'"
cluster_start mem "$PORT"
t0=$(date +%s)
createdb ms_memory
q >/dev/null <<SQL
CREATE EXTENSION model_select;
CREATE TABLE prompts AS SELECT round AS id, context AS emb
  FROM model_select.synthetic_clusters(100, $DIM, 5, NULL, 7);
CREATE TABLE preload AS
SELECT round, context, reward FROM model_select.synthetic_clusters($REWARDS, $DIM, 5, NULL, 8);
SELECT model_select.create_selector('mem', $DIM, ARRAY['m1','m2','m3','m4','m5'], 'pak_ucb', NULL, '{}', 1);
-- a small selector of the same policy: what a backend costs that ran the extension's code
SELECT model_select.create_selector('tiny', 8, ARRAY['m1','m2','m3','m4','m5'], 'pak_ucb', NULL, '{}', 2);
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 'tiny', 'm' || (1 + i % 5), ARRAY[sin(i), cos(i), 0, 0, 0, 0, 0, 1]::float8[], 0.5 FROM generate_series(1, 20) i;
SQL
for a in 1 2 3 4 5; do
    q -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
          SELECT 'mem', 'm$a', context, reward[$a] FROM preload ORDER BY round"
done
q -c "SELECT model_select.checkpoint('mem')" >/dev/null
echo "set-up (pak_ucb, d $DIM, 5 arms x $REWARDS rewards): $(( $(date +%s) - t0 )) s"
q -c "SELECT arm, n, pending, pg_size_pretty(state_bytes::bigint) AS stored FROM model_select.arm_stats"
as_server "$BINDIR/pg_ctl" -D "$CL/mem" -m fast -w stop >/dev/null

# smaps_rollup field (kB) of a pid
field() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/smaps_rollup"; }

# With the learner: log one more reward per arm and wait (120 s) until its
# versions hold every arm's whole log, so that the backends score them.
learner_versions() {
    local sql="SELECT (SELECT count(*) FROM model_select.learner WHERE running AND last_pass IS NOT NULL) = 1
                  AND (SELECT count(*) FROM model_select.learner_versions WHERE NOT stale AND lag_rewards = 0
                          AND rewards = $((REWARDS + 1))) = 5"
    for _ in $(seq 1 240); do
        [ "$(q -c "SELECT count(*) FROM model_select.learner WHERE running AND last_pass IS NOT NULL")" = 1 ] && break
        sleep 0.5
    done
    q -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
          SELECT 'mem', 'm' || a, emb, 0.5 FROM prompts, generate_series(1, 5) a WHERE id = 1 ORDER BY a"
    for _ in $(seq 1 240); do
        [ "$(q -c "$sql")" = t ] && return 0
        sleep 0.5
    done
    echo "the learner's versions never held the whole log; learner, then versions:" >&2
    q -c "TABLE model_select.learner" -c "TABLE model_select.learner_versions" >&2
    exit 1
}

measure() {  # measure MODE [N]: start, score from N ($BACKENDS) sessions, sum their memory
    local mode=$1 nb=${2:-$BACKENDS} pids pid i
    cluster_start mem "$PORT"
    [ "$mode" != learner ] || learner_versions
    for i in $(seq 1 "$nb"); do
        PGAPPNAME=ms_mem_score q -c "SELECT count(model_select.select_model('mem', emb))
                                        FROM (SELECT emb FROM prompts ORDER BY id LIMIT 5) p" \
            -c "SELECT pg_sleep(3600)" >/dev/null 2>&1 &
    done
    PGAPPNAME=ms_mem_idle q -c "SELECT pg_sleep(3600)" >/dev/null 2>&1 &
    PGAPPNAME=ms_mem_warm q -c "SELECT model_select.select_model('tiny', ARRAY[1, 0, 0, 0, 0, 0, 0, 1]::float8[])" \
        -c "SELECT pg_sleep(3600)" >/dev/null 2>&1 &
    PGAPPNAME=ms_mem_plain q -c "$PLAIN_SQL" -c "SELECT pg_sleep(3600)" >/dev/null 2>&1 &
    PGAPPNAME=ms_mem_query q -c "SELECT count(array_length(emb, 1)) FROM (SELECT emb FROM prompts ORDER BY id LIMIT 5) p" \
        -c "SELECT pg_sleep(3600)" >/dev/null 2>&1 &
    for _ in $(seq 1 600); do
        [ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'ms_mem%'
                     AND query LIKE '%pg_sleep%' AND state = 'active'")" = $((nb + 4)) ] && break
        sleep 0.5
    done
    pids=$(q -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'ms_mem_score' AND query LIKE '%pg_sleep%'")
    [ "$(wc -w <<<"$pids")" = "$nb" ] || { echo "only $(wc -w <<<"$pids") of $nb backends scored" >&2; exit 1; }
    local rss=0 pss=0 priv=0 lo= hi=0 d anon=0 shm=0 shm_hi=0 s
    for pid in $pids; do
        rss=$((rss + $(field "$pid" Rss)))
        pss=$((pss + $(field "$pid" Pss)))
        anon=$((anon + $(field "$pid" Pss_Anon)))
        s=$(field "$pid" Pss_Shmem)
        shm=$((shm + s))
        [ "$s" -gt "$shm_hi" ] && shm_hi=$s
        d=$(field "$pid" Private_Dirty)
        priv=$((priv + d))
        [ -z "$lo" ] || [ "$d" -lt "$lo" ] && lo=$d
        [ "$d" -gt "$hi" ] && hi=$d
    done
    SPREAD[$mode]="$(mb "$lo") – $(mb "$hi")"
    SPLIT[$mode]="$anon $shm $shm_hi"
    pid=$(q -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'ms_mem_idle'")
    R[$mode]="$rss $pss $priv $(field "$pid" Rss) $(field "$pid" Pss) $(field "$pid" Private_Dirty)"
    IDLE_ANON[$mode]=$(field "$pid" Pss_Anon)
    pid=$(q -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'ms_mem_warm'")
    WARM[$mode]="$(field "$pid" Pss) $(field "$pid" Pss_Anon)"
    pid=$(q -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'ms_mem_plain'")
    PLAIN[$mode]="$(field "$pid" Pss) $(field "$pid" Pss_Anon)"
    pid=$(q -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'ms_mem_query'")
    QUERY[$mode]="$(field "$pid" Pss) $(field "$pid" Pss_Anon)"
    SHARED[$mode]=$(q -c "SELECT coalesce(shared_bytes / 1024, 0) FROM model_select.cache_stats()")
    MODELS[$mode]=$(q -c "SELECT coalesce(sum(bytes)::bigint / 1024, 0) FROM model_select.learner_versions WHERE NOT stale")
    pid=$(q -c "SELECT pid FROM model_select.learner WHERE running")
    LEARNER_PSS[$mode]=$([ -z "$pid" ] || echo "$(field "$pid" Pss) $(field "$pid" Pss_Anon) $(field "$pid" Pss_Shmem)")
    q -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'ms_mem%'" >/dev/null
    wait
    as_server "$BINDIR/pg_ctl" -D "$CL/mem" -m fast -w stop >/dev/null
}

mb() { awk -v k="$1" 'BEGIN { printf "%.0f MB", k / 1024 }'; }
declare -A R SHARED MODELS SPREAD SPLIT IDLE_ANON WARM PLAIN QUERY LEARNER_PSS TARGET VERDICT
# the plain SQL backend's queries (no extension function)
PLAIN_SQL="SELECT count(*) FROM model_select.selectors s JOIN model_select.arms a USING (selector_id)
             WHERE s.name = 'mem';
           SELECT arm_id, version, n, ckpt_tx, ckpt_seq FROM model_select.arm_state
             WHERE selector_id = (SELECT selector_id FROM model_select.selectors WHERE name = 'mem');
           SELECT arm_id, tx, seq FROM model_select.rewards WHERE arm_id IN (SELECT arm_id FROM model_select.arms)
             AND tx > '0'::xid8 ORDER BY arm_id, tx, seq LIMIT 5;
           SELECT count(*) FROM model_select.selector_grants"
# target MODE N LABEL: the split of the summed Pss and the target line of a run
# of N backends (in TARGET[MODE]), and whether it was met (VERDICT[MODE])
target() {
    local mode=$1 nb=$2 rss pss priv irss ipss ipriv anon shm shmhi bound wpss wanon wbound ppss panon pbound
    local qpss qanon qbound
    read -r rss pss priv irss ipss ipriv <<<"${R[$mode]}"
    read -r wpss wanon <<<"${WARM[$mode]}"
    read -r ppss panon <<<"${PLAIN[$mode]}"
    read -r qpss qanon <<<"${QUERY[$mode]}"
    qbound=$(( (MODELS[$mode] + nb * qpss) * 12 / 10 ))
    wbound=$(( (MODELS[$mode] + nb * wpss) * 12 / 10 ))
    pbound=$(( (MODELS[$mode] + nb * ppss) * 12 / 10 ))
    read -r anon shm shmhi <<<"${SPLIT[$mode]}"
    bound=$(( (MODELS[$mode] + nb * ipss) * 12 / 10 ))
    VERDICT[$mode]=met; [ "$pss" -le "$bound" ] || VERDICT[$mode]="NOT met"
    TARGET[$mode]="$3: of the summed Pss of $nb backends, $(mb "$anon") their own pages (Pss_Anon; $(mb $((nb * ${IDLE_ANON[$mode]}))) for $nb idle ones), $(mb "$shm") shared memory (Pss_Shmem: their share of the shared cache and of the shared_buffers pages they read); one backend maps $(mb "$shmhi") of shared memory.
Target: summed Pss $3 $(mb "$pss") <= 1.2 x (one copy of the models $(mb "${MODELS[$mode]}") + $nb x idle Pss $ipss kB) = $(mb "$bound"): ${VERDICT[$mode]}
Against backends that ran plain SQL over the same tables instead of idle ones (Pss $ppss kB, Pss_Anon $panon kB: PostgreSQL's relation and catalog caches for them; a scoring backend's Pss_Anon: $((anon / nb)) kB): summed Pss $3 $(mb "$pss") <= 1.2 x ($(mb "${MODELS[$mode]}") + $nb x $ppss kB) = $(mb "$pbound"): $([ "$pss" -le "$pbound" ] && echo met || echo "NOT met")
Against backends that ran the scoring sessions' query without select_model() instead of idle ones (Pss $qpss kB, Pss_Anon $qanon kB: the application's own query over the prompts): summed Pss $3 $(mb "$pss") <= 1.2 x ($(mb "${MODELS[$mode]}") + $nb x $qpss kB) = $(mb "$qbound"): $([ "$pss" -le "$qbound" ] && echo met || echo "NOT met")
Against backends that ran the extension's code on a small selector instead of idle ones (Pss $wpss kB, Pss_Anon $wanon kB: catalog and plan caches, library pages): summed Pss $3 $(mb "$pss") <= 1.2 x ($(mb "${MODELS[$mode]}") + $nb x $wpss kB) = $(mb "$wbound"): $([ "$pss" -le "$wbound" ] && echo met || echo "NOT met")"
}
as_server sh -c "printf '%s\n' \"shared_preload_libraries = 'model_select'\" \
    \"model_select.shared_cache_size = '256MB'\" >> '$CL/mem/postgresql.conf'"
measure shared
MODELS[shared]=${SHARED[shared]}
target shared "$BACKENDS" "with the shared cache"
if [ "$LEARNER_BACKENDS" -gt 0 ]; then
    # one learner worker: the Pss reported below is that process's
    as_server sh -c "printf '%s\n' \"model_select.learner_databases = 'ms_memory'\" \
        \"model_select.learner_workers = 1\" >> '$CL/mem/postgresql.conf'"
    measure learner "$LEARNER_BACKENDS"
    target learner "$LEARNER_BACKENDS" "with the learner"
    read -r lpss lanon lshm <<<"${LEARNER_PSS[learner]}"
    TARGET[learner]+="
The learner process (not in the sums): Pss $(mb "$lpss"), of which $(mb "$lanon") its own pages (Pss_Anon) and $(mb "$lshm") shared memory (Pss_Shmem: the shared cache's pages it wrote that no backend maps now, and the shared_buffers pages it read)"
fi
if [ -n "${MS_MEMORY_CHECK:-}" ]; then
    printf '%s\n' "${TARGET[@]}"
    [ "${VERDICT[shared]}" = met ] && [ "${VERDICT[learner]:-met}" = met ]
    exit
fi
as_server sed -i "/shared_preload_libraries\|shared_cache_size\|learner_databases\|learner_workers/d" "$CL/mem/postgresql.conf"
measure per_backend

read -r r1 p1 d1 ir1 ip1 id1 <<<"${R[per_backend]}"
read -r r2 p2 d2 ir2 ip2 id2 <<<"${R[shared]}"
SHARED_KB=${SHARED[shared]}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b / a }'; }
echo
echo "Resident memory of $BACKENDS backends that scored pak_ucb 'mem' (5 arms x $REWARDS rewards, d $DIM):"
echo
echo "| sum over $BACKENDS backends | per-backend cache | shared cache | shared / per-backend |"
echo "|---|---|---|---|"
echo "| Rss | $(mb "$r1") | $(mb "$r2") | $(ratio "$r1" "$r2") |"
echo "| Pss | $(mb "$p1") | $(mb "$p2") | $(ratio "$p1" "$p2") |"
echo "| Private_Dirty | $(mb "$d1") | $(mb "$d2") | $(ratio "$d1" "$d2") |"
echo "| Private_Dirty of one backend, least – most | ${SPREAD[per_backend]} | ${SPREAD[shared]} | |"
echo "| Private_Dirty sum + shared cache | $(mb "$d1") | $(mb $((d2 + SHARED_KB))) | $(ratio "$d1" $((d2 + SHARED_KB))) |"
echo "| an idle backend (Rss / Pss / Private_Dirty) | $ir1 / $ip1 / $id1 kB | $ir2 / $ip2 / $id2 kB | |"
echo "| shared cache (cache_stats().shared_bytes) | - | $(mb "$SHARED_KB") | |"
echo
echo "${TARGET[shared]}"
if [ "$LEARNER_BACKENDS" -gt 0 ]; then
    read -r r3 p3 d3 ir3 ip3 id3 <<<"${R[learner]}"
    echo
    echo "With the learner serving the database, $LEARNER_BACKENDS backends scoring its versions:"
    echo
    echo "| sum over $LEARNER_BACKENDS backends | Rss | Pss | Private_Dirty | one backend's Private_Dirty, least – most |"
    echo "|---|---|---|---|---|"
    echo "| with the learner | $(mb "$r3") | $(mb "$p3") | $(mb "$d3") | ${SPREAD[learner]} |"
    echo "| an idle backend | $ir3 kB | $ip3 kB | $id3 kB | |"
    echo
    echo "One copy of the models (the learner's current versions): $(mb "${MODELS[learner]}"); the shared cache holds $(mb "${SHARED[learner]}")."
    echo "${TARGET[learner]}"
fi
