#!/usr/bin/env bash
# Issue 12, one copy per server: the shared cache of arm bases
# (model_select in shared_preload_libraries) scores exactly as the
# per-backend cache.  Three clusters of their own run the same statements:
#   P  without preloading (the per-backend cache: the reference),
#   S  preloaded with a 64MB shared cache,
#   E  preloaded with 1MB, so that bases are evicted and backends fall back
#      to their own copies when everything is pinned.
# After every step (rewards, pending rewards in the same session, rows that
# are visible but not final, a checkpoint, alter_selector, rebuild_state)
# scores() and select_model() agree on the three: byte for byte in one backend
# that keeps its cache across statements, within 1e-9 in fresh backends
# (see close_scores).  Then:
# bases are published and taken from the cache, a grown one once its arm is
# quiet; E evicts and stays within
# its size; a backend ended by pg_terminate_backend leaves no pin behind, and
# one killed by SIGKILL makes the server reinitialise shared memory (the
# cache starts empty and still scores the same).
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_shared_cache
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"

export PGHOST=$CL PGUSER=postgres PGDATABASE=postgres
P=$(free_port $(( ${PGPORT:-55500} + 70 )))
S=$(free_port $((P + 1)) "$P")
E=$(free_port $((S + 1)) "$S")
declare -A PORT=([P]=$P [S]=$S [E]=$E)
start() {  # start NAME [SHARED_CACHE_SIZE]
    cluster_initdb "$1" || bail "initdb $1 failed: $(tail -n 5 "$CL/initdb.log")"
    if [ -n "${2:-}" ]; then
        as_server sh -c "printf '%s\n' \"shared_preload_libraries = 'model_select'\" \
            \"model_select.shared_cache_size = '$2'\" >> '$CL/$1/postgresql.conf'"
    fi
    cluster_start "$1" "${PORT[$1]}" || bail "$1 failed to start: $(tail -n 5 "$CL/$1.log")"
}
start P
start S 64MB
start E 1MB
on() { local c=$1; shift; PGPORT=${PORT[$c]} q "$@"; }
on_all() { local c; for c in P S E; do on "$c" "$@" >/dev/null; done; }
for c in P S E; do PGPORT=${PORT[$c]} ms_setup || bail "set-up on $c failed"; done

SELECTORS="ARRAY['sh_pak', 'sh_dmm', 'sh_win', 'sh_rff']"
SETUP=$(cat <<'SQL'
SELECT model_select.create_selector('sh_pak', 16, ARRAY['a','b','c'], 'pak_ucb', 'rbf', '{}', 1);
SELECT model_select.create_selector('sh_dmm', 8, ARRAY['a','b','c'], 'pak_ucb', 'rbf', '{"confidence": "dmm"}', 2);
SELECT model_select.create_selector('sh_win', 16, ARRAY['a','b'], 'pak_ucb', 'rbf', '{"window": 60}', 3);
SELECT model_select.create_selector('sh_rff', 8, ARRAY['a','b','c'], 'rff_ucb', 'rbf', '{"features": 32}', 4);
CREATE FUNCTION ctx(d int, i int) RETURNS float8[] LANGUAGE sql IMMUTABLE AS
$$ SELECT array_agg(sin(i * 0.37 + j * 1.3) ORDER BY j)::float8[] FROM generate_series(1, d) j $$;
CREATE FUNCTION add_rewards(first int, last int) RETURNS void LANGUAGE sql AS $$
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT s.name, (ARRAY['a','b','c'])[1 + i % (CASE s.name WHEN 'sh_win' THEN 2 ELSE 3 END)],
       ctx(s.dim, i), (1 + sin(0.7 * i + s.dim)) / 2
  FROM generate_series(first, last) i, model_select.selectors s ORDER BY i, s.name $$;
SQL
)
on_all -c "$SETUP" || bail "creating the selectors failed"
SCORES="SELECT s, i, x.arm, x.n, x.mean, x.width, x.ucb, model_select.select_model(s, c)
          FROM unnest($SELECTORS) s JOIN model_select.selectors sel ON sel.name = s,
               generate_series(1, 12) i, LATERAL (SELECT ctx(sel.dim, 1000 + i) AS c) v,
               LATERAL model_select.scores(s, c) x ORDER BY 1, 2, 3"

# Two outputs of $SCORES agree: same rows, arms, n and choices, and mean,
# width and ucb within 1e-9 (relative above 1).  A base built from scratch
# and one grown by appends differ in the last bits, between two backends of
# the same server too, so fresh backends are compared this way; backends with
# the same history are compared byte for byte (the session below).
close_scores() {
    awk -F'|' 'function abs(v) { return v < 0 ? -v : v }
        function near(x, y) { if (x == y) return 1; if (x !~ /^-?[0-9]/ || y !~ /^-?[0-9]/) return 0
            return abs(x - y) <= 1e-9 * (abs(x) > abs(y) ? (abs(x) > 1 ? abs(x) : 1) : (abs(y) > 1 ? abs(y) : 1)) }
        NR == FNR { ref[FNR] = $0; nref = FNR; next }
        { split(ref[FNR], r, "|")
          if ($1 != r[1] || $2 != r[2] || $3 != r[3] || $4 != r[4] || $8 != r[8] ||
              !near($5, r[5]) || !near($6, r[6]) || !near($7, r[7])) { print "#   " ref[FNR] " vs " $0; bad = 1; exit } }
        END { if (bad || FNR != nref) exit 1 }' "$1" "$2"
}

same_scores() {  # same_scores STEP: fresh backends on S and E (twice) score as P
    local step=$1 c k
    on P -c "$SCORES" > "$MS_WORK/P.out"
    [ "$(wc -l < "$MS_WORK/P.out")" -gt 100 ] || { echo "#   P scored only $(wc -l < "$MS_WORK/P.out") rows"; return 1; }
    for c in S E; do
        for k in 1 2; do
            on "$c" -c "$SCORES" > "$MS_WORK/$c.out"
            close_scores "$MS_WORK/P.out" "$MS_WORK/$c.out" || { echo "#   $step: $c (backend $k) differs"; return 1; }
        done
    done
}

on_all -c "SELECT add_rewards(1, 300)"
check "300 rewards (checkpoints at 128 per arm): the shared caches score as per backend" same_scores initial

# one backend each: scores, new rewards (pending, final), scores again; then
# rewards in the same transaction as the scores (not final: ours).  The same
# statements in the same order: byte-identical.
SESSION="$SCORES; SELECT add_rewards(301, 320); $SCORES;
         BEGIN; SELECT add_rewards(321, 325); $SCORES; COMMIT; $SCORES"
for c in P S E; do on "$c" -c "$SESSION" > "$MS_WORK/$c.session"; done
check "one backend scoring, rewarding and scoring again (its base grows): S as P, byte for byte" \
    cmp -s "$MS_WORK/P.session" "$MS_WORK/S.session"
check "... and E as P" cmp -s "$MS_WORK/P.session" "$MS_WORK/E.session"
check "pending rewards, fresh backends: the shared caches score as per backend" same_scores pending

# rows visible but not final: an older transaction is still running
for c in P S E; do
    PGPORT=${PORT[$c]} psql -X -q -d "$DB" -c "BEGIN; SELECT txid_current(); SELECT pg_sleep(60)" \
        >/dev/null 2>&1 &
    MS_BG_PIDS+=($!)
done
for c in P S E; do
    for _ in $(seq 1 100); do
        [ "$(on "$c" -c "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(60)%'
                           AND backend_xid IS NOT NULL AND pid <> pg_backend_pid()")" = 1 ] && break
        sleep 0.1
    done
done
on_all -c "SELECT add_rewards(326, 340)"
check "rows after a running transaction (an overlay per backend): the shared caches as per backend" \
    same_scores overlay
for c in P S E; do
    on "$c" -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(60)%'
                  AND pid <> pg_backend_pid()" >/dev/null
done
check "once the running transaction has ended: as per backend" same_scores overlay_ended

on_all -c "SELECT model_select.checkpoint(s) FROM unnest($SELECTORS) s"
check "after checkpoint(): as per backend" same_scores checkpoint
on_all -c "SELECT add_rewards(341, 350); SELECT model_select.alter_selector('sh_pak', '{\"alpha\": 0.5}')"
check "after alter_selector() (a new settings version): as per backend" same_scores alter
on_all -c "SELECT model_select.rebuild_state(s) FROM unnest($SELECTORS) s"
check "after rebuild_state(): as per backend" same_scores rebuild

cstat() { on "$1" -c "SELECT $2 FROM model_select.cache_stats()"; }
check "without preloading the shared columns of cache_stats() are NULL, and it reports the backend" \
    test "$(cstat P "shared_entries IS NULL AND shared_bytes IS NULL AND shared_pins IS NULL AND scope = 'backend'")" = t
check "preloaded, it reports the server (and the backend when asked)" \
    test "$(on S -c "SELECT string_agg(scope, ' ') FROM (SELECT scope FROM model_select.cache_stats()
                     UNION ALL SELECT scope FROM model_select.cache_stats(true)) x")" = "server backend"
check "S holds one base per arm that has rewards (11)" test "$(cstat S shared_entries)" = 11
check "a fresh backend takes every base from S's cache and publishes none" \
    test "$(on S -c "SELECT model_select.scores('sh_pak', ctx(16, 1)) IS NOT NULL LIMIT 1;
                     SELECT format('%s hits, %s publishes', shared_hits, shared_publishes)
                       FROM model_select.cache_stats(this_backend => true)" | tail -n 1)" = "3 hits, 0 publishes"
# a base that grows stays the backend's own until its arm has been quiet for
# a second (each statement its own transaction: every call loads again, as
# another transaction committed since)
SCORE_RFF="SELECT count(*) FROM model_select.scores('sh_rff', ctx(8, 1))"
PUBLISHED="SELECT 'published', shared_publishes FROM model_select.cache_stats(this_backend => true)"
published=$(on S -c "$SCORE_RFF" \
    -c "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('sh_rff', 'a', ctx(8, 7777), 0.5)" \
    -c "$SCORE_RFF" -c "$PUBLISHED" -c "SELECT txid_current()" -c "$SCORE_RFF" -c "$PUBLISHED" \
    -c "SELECT pg_sleep(1.2)" -c "SELECT txid_current()" -c "$SCORE_RFF" -c "$PUBLISHED" |
    sed -n 's/^published|//p' | tr '\n' ' ')
published_when_quiet() {
    [ "$published" = "0 0 1 " ] || { echo "#   publishes after each load: $published"; return 1; }
}
check "a grown base is published once its arm has been quiet for a second, not before" published_when_quiet
for c in P E; do
    on "$c" -c "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('sh_rff', 'a', ctx(8, 7777), 0.5)" >/dev/null
done
check "E evicted bases to stay within its 1MB" test "$(cstat E 'shared_evictions > 0')" = t
check "E's bases fit in 1MB" test "$(cstat E 'shared_bytes <= 1024 * 1024')" = t
check "no pin is left once every backend has exited" test "$(cstat S shared_pins)" = 0

# a backend that holds pins while it sleeps: ended, then killed
hold() {
    PGPORT=$S psql -X -q -d "$DB" -c "SELECT count(*) FROM model_select.selectors s,
        LATERAL model_select.scores(s.name, ctx(s.dim, 1)); SELECT pg_sleep(60)" >/dev/null 2>&1 &
    MS_BG_PIDS+=($!)
    for _ in $(seq 1 100); do
        [ "$(cstat S shared_pins)" = 11 ] && return 0
        sleep 0.1
    done
    return 1
}
holder() { on S -c "SELECT pid FROM pg_stat_activity WHERE query LIKE '%pg_sleep(60)%' AND pid <> pg_backend_pid()"; }
check "a sleeping backend pins the 11 bases it scored with" hold
on S -c "SELECT pg_terminate_backend($(holder))" >/dev/null
for _ in $(seq 1 50); do [ "$(cstat S shared_pins)" = 0 ] && break; sleep 0.1; done
check "pg_terminate_backend: its pins are released" test "$(cstat S shared_pins)" = 0
check "... and its bases stay cached for others" test "$(cstat S shared_entries)" = 11
check "a second sleeping backend pins them again" hold
kill -9 "$(holder)"
for _ in $(seq 1 100); do
    sleep 0.2
    [ "$(on S -c 'SELECT 1' 2>/dev/null)" = 1 ] && break
done
check "SIGKILL: the server reinitialises shared memory, the cache starts empty" \
    test "$(cstat S "format('%s/%s', shared_entries, shared_pins)")" = 0/0
check "... and scores as per backend again" same_scores after_kill

# A reward insert in flight holds its selector's settings lock; a backend that
# misses an arm in the shared cache takes that arm's load lock.  Different
# locks (sh_pak is selector 1, its arm a is arm 1): a fresh reader must not
# wait for the insert (nor two such writers deadlock when they then score).
on S -c "SELECT add_rewards(351, 360); SELECT model_select.checkpoint('sh_pak')" >/dev/null
PGPORT=$S psql -X -q -d "$DB" -c "BEGIN" \
    -c "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('sh_pak', 'b', ctx(16, 1), 0.5)" \
    -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
MS_BG_PIDS+=($!)
for _ in $(seq 1 100); do
    [ "$(on S -c "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(60)%'
                    AND backend_xid IS NOT NULL AND pid <> pg_backend_pid()")" = 1 ] && break
    sleep 0.1
done
check "a fresh reader missing arm 1 of selector 1 does not wait for a reward insert on selector 1" \
    on S -c "SET lock_timeout = '3s'" -c "SELECT count(*) FROM model_select.scores('sh_pak', ctx(16, 1))" -o /dev/null
on S -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(60)%'
           AND pid <> pg_backend_pid()" >/dev/null

finish
