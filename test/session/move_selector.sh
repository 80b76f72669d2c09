#!/usr/bin/env bash
# Issue 43, a selector's decisions moved between shards: on a preloaded
# server of the test's own, two shard databases and a PL/Proxy database (as
# plproxy.sh, on one server); the learner runs in shard 0's database, so
# decisions there record the versions they scored.  A selector on shard 0 is
# routed and rewarded through the proxy by 2 pgbench clients, then moved to
# shard 1 with scripts/ms-move-selector.sh.  Checks: decision_scores() of
# every decision that recorded versions gives, through the proxy, the same
# rows after the move as before (now from shard 1, which runs no learner),
# bit for bit; a decision of another shard-0 selector still goes to shard 0.
set -euo pipefail
DB=ms_session_move
SHARDS="ms_move_s0 ms_move_s1"
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"
HERE=$(cd "$(dirname "$0")/../.." && pwd)

[ -f "$($BINDIR/pg_config --pkglibdir 2>/dev/null || pg_config --pkglibdir)/plproxy.so" ] ||
    bail "plproxy is not installed (scripts/ensure-deps.sh installs postgresql-15-plproxy)"
PORT=$(free_port $(( ${PGPORT:-55500} + 90 )))
preloaded_server data "$PORT" "model_select.learner_databases = 'ms_move_s0'" "model_select.learner_naptime = '50ms'"
i=0
for s in $SHARDS; do
    i=$((i + 1))
    createdb "$s" && psql -X -q -d "$s" -c 'CREATE EXTENSION model_select' -c "SELECT model_select.set_server_id($i)" \
        >/dev/null || bail "shard $s set-up failed"
done
createdb "$DB" || bail "creating the proxy database failed"
q >/dev/null <<SQL || bail "proxy set-up failed"
CREATE EXTENSION plproxy;
CREATE SERVER model_select_shards FOREIGN DATA WRAPPER plproxy
    OPTIONS (p0 'dbname=ms_move_s0 host=$CL port=$PORT', p1 'dbname=ms_move_s1 host=$CL port=$PORT');
CREATE USER MAPPING FOR PUBLIC SERVER model_select_shards;
SQL
psql -X -q -d "$DB" -f "$HERE/sql/proxy/model_select_proxy.sql" >/dev/null 2>"$MS_WORK/proxy.err" ||
    bail "sql/proxy/model_select_proxy.sql failed: $(cat "$MS_WORK/proxy.err")"
# two selectors hashed to shard 0, where the learner runs
read -r SEL OTHER <<<"$(q -c "SELECT string_agg(n, ' ') FROM (SELECT 'mv_' || i AS n FROM generate_series(1, 50) i
                                WHERE hashtext('mv_' || i) & 1 = 0 ORDER BY i LIMIT 2) x")"
q -c "SELECT model_select.create_selector(s, 3, ARRAY['a', 'b', 'c'], 'lin_ucb') FROM unnest(ARRAY['$SEL', '$OTHER']) s" \
    >/dev/null || bail "creating the selectors failed"
on0() { psql -X -q -A -t -v ON_ERROR_STOP=1 -d ms_move_s0 "$@"; }
for _ in $(seq 1 1200); do
    [ "$(on0 -c "SELECT running AND last_pass IS NOT NULL FROM model_select.learner WHERE database = 'ms_move_s0'")" = t ] && break
    sleep 0.1
done

cat >"$MS_WORK/load.sql" <<SQL
\\set x random(1, 1000000)
\\set s random(0, 3)
SELECT decision_id FROM model_select.route(CASE WHEN :s = 0 THEN '$OTHER' ELSE '$SEL' END,
                                           ARRAY[sin(:x), cos(:x), sin(:x * 0.3)]) \\gset
SELECT model_select.reward(:decision_id, (1 + sin(:x * 0.7)) / 2);
SQL
pgbench -n -f "$MS_WORK/load.sql" -c 2 -j 2 -t 40 "$DB" >"$MS_WORK/pgbench.out" 2>&1 && rc=0 || rc=$?
check "2 clients route and reward through the proxy (exit $rc)" \
    eval '[ "$rc" -eq 0 ] && grep -q "actually processed: 80/80" "$MS_WORK/pgbench.out" || { tail -n 5 "$MS_WORK/pgbench.out" | sed "s/^/#   /"; false; }'

# every decision of a selector that recorded versions, and its scores through the proxy
with_versions() { on0 -c "SELECT string_agg(decision_id::text, ' ' ORDER BY decision_id) FROM model_select.decisions d
                           JOIN model_select.selectors s USING (selector_id) WHERE s.name = '$1' AND d.versions IS NOT NULL"; }
ids=$(with_versions "$SEL")
other=$(with_versions "$OTHER" | cut -d ' ' -f 1)
n_ids=$(wc -w <<<"$ids")
check "decisions of $SEL recorded the versions they scored ($n_ids)" test "$n_ids" -ge 10
decision_scores() {  # decision_scores IDS: one line per decision id, "error" if any call failed
    q -c "SELECT id || ': ' || (SELECT string_agg(concat_ws(' ', arm, active, n, mean, width, ucb, radius, alpha), '; '
                                                  ORDER BY arm) FROM model_select.decision_scores(id))
            FROM unnest('{${1// /,}}'::bigint[]) id ORDER BY id" 2>&1 || echo error
}
before=$(decision_scores "$ids")
other_before=$(decision_scores "$other")
PGDATABASE=$DB bash "$HERE/scripts/ms-move-selector.sh" "$SEL" 1 >"$MS_WORK/move.out" 2>&1 && rc=0 || rc=$?
sed 's/^/#   /' "$MS_WORK/move.out"
check "ms-move-selector.sh moves $SEL to shard 1 (exit $rc)" test "$rc" = 0
after=$(decision_scores "$ids")
check "decision_scores() of its $n_ids decisions through the proxy: the same rows, now from shard 1" \
    eval '[ "$after" = "$before" ] && ! grep -q error <<<"$before" ||
          { diff <(echo "$before") <(echo "$after") | head -n 6 | sed "s/^/#   /"; false; }'
check "shard 1 holds them" \
    test "$(psql -X -A -t -d ms_move_s1 -c "SELECT count(*) FROM model_select.decisions WHERE decision_id IN (${ids// /,})")" = "$n_ids"
check "a decision of $OTHER, which stayed, still answers from shard 0" \
    eval '[ -n "$other" ] && [ "$(decision_scores "$other")" = "$other_before" ] && ! grep -q error <<<"$other_before"'
finish
