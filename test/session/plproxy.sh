#!/usr/bin/env bash
# Issue 43, shards on PL/Proxy: two shard clusters of the test's own and a
# proxy database on the test server gets sql/proxy/model_select_proxy.sql and
# numbers the shards.  Through the proxy: 8 selectors created (placed by
# hashtext(name)), granted to an application role, routed and rewarded by
# 4 pgbench clients of that role.  Checks: each selector lives on one shard,
# the one its hash names; every acknowledged reward is in that shard's log
# once; scores equal the rebuild; bad input keeps its SQLSTATE; the
# functions that take a query text (route_batch, warm_start, replay_on) and
# decision_scores answer through the proxy as on the shard.  Shard 1
# stopped: shard 0's selectors keep routing and learning, shard 1's calls
# fail with 08006 naming the shard, and the listing over all shards gives
# shard 0's selectors with an 08006 WARNING naming shard 1; started
# again, nothing is lost.  A selector moved from shard 0 to shard 1
# (scripts/ms-move-selector.sh) with a codebook, a log's horizon and
# cascades keeps its scores, cascade scores, log, bases, codebook, cascades,
# grants and the reward of a decision made before the move.
set -euo pipefail
DB=ms_session_plproxy
# the proxy: the test server; the shards: two clusters of the test's own
PX_HOST=${PGHOST:?} PX=${PGPORT:?}
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
MS_ROLES="ms_px_app"
. "$(dirname "$0")/lib/common.bash"
HERE=$(cd "$(dirname "$0")/../.." && pwd)

[ -f "$($BINDIR/pg_config --pkglibdir 2>/dev/null || pg_config --pkglibdir)/plproxy.so" ] ||
    bail "plproxy is not installed (scripts/ensure-deps.sh installs postgresql-15-plproxy)"
S0=$(free_port $(( PX + 70 )))
S1=$(free_port $((S0 + 1)) "$S0")
# the two shards set up at once (initdb is most of the set-up's time)
cluster_initdb s0 & pid=$!
cluster_initdb s1 && wait "$pid" || bail "initdb failed: $(tail -n 5 "$CL/initdb.log")"
cluster_start s0 "$S0" & pid=$!
cluster_start s1 "$S1" && wait "$pid" || bail "a shard failed to start"
export PGUSER=postgres
host_of() { if [ "$1" = "$PX" ]; then echo "$PX_HOST"; else echo "$CL"; fi; }
on() { local port=$1; shift; PGHOST=$(host_of "$port") PGPORT=$port q "$@"; }   # on PORT ARGS...: psql on $DB there
pxsql() { PGHOST=$PX_HOST PGPORT=$PX psql -X -q -d "$DB" "$@"; }
shard_setup() {
    PGHOST=$CL PGPORT=$1 createdb "$DB" &&
        on "$1" -c 'CREATE EXTENSION model_select' -c "$MS_HELPERS" -c 'CREATE ROLE ms_px_app LOGIN' \
            -c "SELECT model_select.setup_role('ms_px_app', 'application')" >/dev/null
}
shard_setup "$S0" & pid=$!
shard_setup "$S1" && wait "$pid" || bail "shard set-up failed"
# (no extension there: the proxy's schema model_select is the forwarding functions)
dropdb --if-exists --force "$DB" >/dev/null 2>&1 || true
ms_drop_roles
createdb "$DB" || bail "creating the proxy database failed"
on "$PX" >/dev/null <<SQL || bail "proxy set-up failed"
CREATE ROLE ms_px_app LOGIN;
CREATE EXTENSION plproxy;
CREATE SERVER model_select_shards FOREIGN DATA WRAPPER plproxy
    OPTIONS (p0 'dbname=$DB host=$CL port=$S0', p1 'dbname=$DB host=$CL port=$S1');
CREATE USER MAPPING FOR PUBLIC SERVER model_select_shards;
SQL
pxsql -f "$HERE/sql/proxy/model_select_proxy.sql" >/dev/null 2>"$MS_WORK/proxy.err" ||
    bail "sql/proxy/model_select_proxy.sql failed: $(cat "$MS_WORK/proxy.err")"
px() { on "$PX" "$@"; }
check "number_shards() numbers shard p as server p + 1" \
    test "$(px -c "SELECT string_agg(partition || ':' || server_id, ' ') FROM model_select_proxy.number_shards()")" = "0:1 1:2"

px >/dev/null <<'SQL' || bail "creating the selectors through the proxy failed"
SELECT model_select.create_selector('tenant_' || i, 3, ARRAY['a', 'b', 'c'], 'lin_ucb') FROM generate_series(1, 8) i;
SELECT model_select.grant_selector('tenant_' || i, 'ms_px_app', p)
  FROM generate_series(1, 8) i, unnest(ARRAY['route', 'reward']) p;
CREATE TABLE acked (decision_id bigint, reward_id bigint);
GRANT INSERT ON acked TO ms_px_app;
SQL
placement() { px -c "SELECT string_agg(name || '@' || (server_id - 1), ' ' ORDER BY name) FROM model_select.selectors()"; }
hashed=$(px -c "SELECT string_agg('tenant_' || i || '@' || (hashtext('tenant_' || i) & 1), ' ' ORDER BY 'tenant_' || i)
                  FROM generate_series(1, 8) i")
check "each selector lives on one shard, the one hashtext(name) & 1 names ($(placement))" test "$(placement)" = "$hashed"
n0=$(on "$S0" -c "SELECT count(*) FROM model_select.selectors")
check "both shards hold selectors (shard 0: $n0 of 8)" eval '[ "$n0" -ge 1 ] && [ "$n0" -le 7 ]'

cat >"$MS_WORK/load.sql" <<'SQL'
\set s random(1, 8)
\set x random(1, 1000000)
SELECT decision_id FROM model_select.route('tenant_' || :s, ARRAY[sin(:x), cos(:x), sin(:x * 0.3)]) \gset
SELECT model_select.reward(:decision_id, (1 + sin(:x * 0.7)) / 2) AS reward_id \gset
INSERT INTO acked VALUES (:decision_id, :reward_id);
SQL
PGHOST=$PX_HOST PGPORT=$PX pgbench -n -U ms_px_app -f "$MS_WORK/load.sql" -c 4 -j 2 -t 40 "$DB" >"$MS_WORK/pgbench.out" 2>&1 &&
    rc=0 || rc=$?
check "4 clients of the application role route and reward through the proxy (exit $rc)" \
    eval '[ "$rc" -eq 0 ] && grep -q "actually processed: 160/160" "$MS_WORK/pgbench.out" || { tail -n 5 "$MS_WORK/pgbench.out" | sed "s/^/#   /"; false; }'
acked_on() {  # the acknowledged rewards found in shard $1's log, once each, for their decision
    local ids
    ids=$(px -c "SELECT string_agg(reward_id::text, ',') FROM acked WHERE (reward_id >> 48) = $1 + 1")
    on "$2" -c "SELECT count(DISTINCT r.reward_id) FROM model_select.rewards r
                 WHERE r.reward_id = ANY ('{${ids}}'::bigint[]) AND r.decision_id IS NOT NULL"
}
total=$(px -c "SELECT count(*) FROM acked")
found=$(( $(acked_on 0 "$S0") + $(acked_on 1 "$S1") ))
logged=$(( $(on "$S0" -c "SELECT count(*) FROM model_select.rewards") + $(on "$S1" -c "SELECT count(*) FROM model_select.rewards") ))
check "every acknowledged reward ($total) is in its shard's log once ($found found, $logged logged)" \
    eval '[ "$total" -eq 160 ] && [ "$found" -eq 160 ] && [ "$logged" -eq 160 ]'
in_range() {  # every decision and reward id of shard $1 (port $2) carries its server number $1 + 1
    on "$2" -c "SELECT count(*) > 0 AND bool_and(id >> 48 = $1 + 1) FROM (SELECT decision_id AS id FROM model_select.decisions
                UNION ALL SELECT reward_id FROM model_select.rewards) x"
}
check "the two shard servers' decision and reward ids never collide: each in its server's range" \
    eval '[ "$(in_range 0 "$S0")" = t ] && [ "$(in_range 1 "$S1")" = t ]'
check "the statistics over all shards count them (stats())" \
    test "$(px -c "SELECT sum(rewards) FROM model_select.stats()")" = 160

# bad input keeps its SQLSTATE through the proxy
state_of() { pxsql -v VERBOSITY=verbose -c "$1" 2>&1 | sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\):.*/\1/p' | head -n 1; }
check "unknown selector: 42704" test "$(state_of "SELECT model_select.select_model('nobody', '{1,2,3}')")" = 42704
direct=$(PGHOST=$CL PGPORT=$(px -c "SELECT CASE model_select_proxy.shard_of('tenant_1') WHEN 0 THEN $S0 ELSE $S1 END") \
    psql -X -q -d "$DB" -v VERBOSITY=verbose -c "SELECT * FROM model_select.route('tenant_1', '{1,2}')" 2>&1 |
    sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\):.*/\1/p' || true)
check "a context of the wrong dimension: the shard's 22000, as on the shard itself ($direct)" \
    eval '[ "$direct" = 22000 ] && [ "$(state_of "SELECT * FROM model_select.route('"'tenant_1'"', '"'{1,2}'"')")" = 22000 ]'
check "a reward for a decision no shard holds: 42704" \
    test "$(state_of "SELECT model_select.reward((2::bigint << 48) + 999999, 0.5)")" = 42704
check "a decision id of no shard of the cluster: 42704" \
    test "$(state_of "SELECT model_select.reward(12345, 0.5)")" = 42704
check "an application role cannot drop a selector: 42501" \
    test "$(pxsql -U ms_px_app -v VERBOSITY=verbose -c "SELECT model_select.drop_selector('tenant_1')" 2>&1 | sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\):.*/\1/p')" = 42501

# the functions that take a query text run it on the selector's shard: a
# table there (outcomes of 12 prompts) serves route_batch(), warm_start() and
# replay_on() through the proxy as it serves them on the shard itself
qs=tenant_2
qport=$(px -c "SELECT CASE model_select_proxy.shard_of('$qs') WHEN 0 THEN $S0 ELSE $S1 END")
on "$qport" -c "CREATE TABLE outcomes AS SELECT g AS key, ARRAY[sin(g), cos(g), 0.5]::float8[] AS context,
                       ARRAY[(1 + sin(g)) / 2, (1 + cos(g)) / 2, 0.3]::float8[] AS rewards
                  FROM generate_series(1, 12) g" -c "GRANT SELECT ON outcomes TO PUBLIC" >/dev/null
BATCH="SELECT string_agg(concat_ws(' ', key, arm, score, mean, width, decision_id IS NULL), '; ' ORDER BY key)
         FROM model_select.route_batch('$qs', 'SELECT key, context FROM outcomes')"
direct=$(on "$qport" -c "$BATCH")
check "route_batch() through the proxy: the shard's answer (12 rows, bit for bit)" \
    eval '[ "$(tr ";" "\n" <<<"$direct" | wc -l)" = 12 ] && [ "$(px -c "$BATCH")" = "$direct" ]'
before=$(on "$qport" -c "SELECT count(*) FROM model_select.rewards r JOIN model_select.selectors s USING (selector_id) WHERE s.name = '$qs'")
check "warm_start() through the proxy learns every prompt on every arm there (36 rewards)" \
    eval '[ "$(px -c "SELECT model_select.warm_start('"'$qs'"', '"'SELECT context, rewards FROM outcomes ORDER BY key'"')")" = 36 ] &&
          [ "$(on "$qport" -c "SELECT count(*) FROM model_select.rewards r JOIN model_select.selectors s USING (selector_id)
                                WHERE s.name = '"'$qs'"'")" = $((before + 36)) ]'
REPLAY="SELECT string_agg(concat_ws(' ', round, cum_reward, regret_oracle, picks), '; ' ORDER BY round)
          FROM model_select.%s'SELECT context, rewards FROM outcomes', 'lin_ucb', seed => 7, passes => 2)"
# shellcheck disable=SC2059  # the format is the query's
direct=$(on "$qport" -c "$(printf "$REPLAY" "replay(")")
# shellcheck disable=SC2059
check "replay_on() through the proxy: replay() on the selector's shard (24 rounds)" \
    eval '[ -n "$direct" ] && [ "$(px -c "$(printf "$REPLAY" "replay_on('"'$qs'"', ")")" = "$direct" ]'
# tags pass through the proxy's route(), logged on the shard's decision, and
# scores() with tags are the shard's own
tagged=$(px -c "SELECT decision_id FROM model_select.route('$qs', '{0.1,0.2,0.3}', tags => ARRAY['math', 'code'])")
check "route(..., tags) through the proxy: the shard logs the decision's tags" \
    test "$(on "$qport" -c "SELECT tags FROM model_select.decisions WHERE decision_id = ${tagged:-0}")" = "{math,code}"
TAGGED="SELECT string_agg(concat_ws(' ', arm, ucb), '; ' ORDER BY arm) FROM model_select.scores('$qs', '{0.1,0.2,0.3}', ARRAY['math'])"
check "scores(..., tags) through the proxy: the shard's answer, bit for bit" \
    eval '[ -n "$(on "$qport" -c "$TAGGED")" ] && [ "$(px -c "$TAGGED")" = "$(on "$qport" -c "$TAGGED")" ]'
other=$(px -c "SELECT 'tenant_' || i FROM generate_series(1, 8) i WHERE model_select_proxy.shard_of('tenant_' || i)
                  <> model_select_proxy.shard_of('$qs') LIMIT 1")
check "a source its selector's shard lacks: the shard's 42P01 through the proxy" \
    test "$(state_of "SELECT model_select.warm_start('$other', 'SELECT context, rewards FROM outcomes')")" = 42P01
did=$(px -c "SELECT max(decision_id) FROM acked")
dport=$(( (did >> 48) == 1 ? S0 : S1 ))
direct=$(PGHOST=$CL PGPORT=$dport psql -X -q -d "$DB" -v VERBOSITY=verbose -c "SELECT * FROM model_select.decision_scores($did)" 2>&1 |
    sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\):.*/\1/p' || true)
check "decision_scores() through the proxy goes to the decision's shard: its answer, $direct for a decision without versions" \
    eval '[ -n "$direct" ] && [ "$(state_of "SELECT * FROM model_select.decision_scores($did)")" = "$direct" ]'

# the 8 selectors' rebuild checks at once (each its own selector's rows), 6 checks each
ports=$(px -c "SELECT string_agg(CASE model_select_proxy.shard_of('tenant_' || i) WHEN 0 THEN '$S0' ELSE '$S1' END, ' '
                                 ORDER BY i) FROM generate_series(1, 8) i")
i=0 pids=()
for port in $ports; do
    i=$((i + 1))
    PGHOST=$CL PGPORT=$port rebuild_checks "tenant_$i" >"$MS_WORK/rebuild.$i" 2>&1 &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || true; done
bad=$(grep -h "^not ok" "$MS_WORK"/rebuild.* | head -n 5 || true)
oks=$(cat "$MS_WORK"/rebuild.* | grep -c "^ok" || true)
check "every selector's scores equal its rebuild on its shard ($oks of 48 checks)" \
    eval '[ -z "$bad" ] && [ "$oks" = 48 ] || { printf "#   %s\n" "$bad"; false; }'

# shard 1 stopped
sel_on() { px -c "SELECT string_agg(name, ' ' ORDER BY name) FROM model_select.selectors() WHERE server_id = $1"; }
on0=$(sel_on 1); on1=$(sel_on 2)
before1=$(on "$S1" -c "SELECT count(*) FROM model_select.rewards")
as_server "$BINDIR/pg_ctl" -D "$CL/s1" -m fast -w stop >/dev/null
ok0=0
for s in $on0; do
    px -c "SELECT model_select.reward(decision_id, 0.5) FROM model_select.route('$s', '{0.1,0.2,0.3}')" >/dev/null 2>&1 &&
        ok0=$((ok0 + 1))
done
check "with shard 1 down, each of shard 0's selectors routes and learns ($ok0 of $(wc -w <<<"$on0"))" \
    eval '[ "$ok0" -eq "$(wc -w <<<"$on0")" ]'
s1=${on1%% *}
err=$(pxsql -v VERBOSITY=verbose -c "SELECT * FROM model_select.route('$s1', '{0.1,0.2,0.3}')" 2>&1 || true)
printf '%s\n' "$err" | head -n 2 | sed 's/^/#   /'
check "shard 1's selectors fail with 08006 naming shard 1 and its connection string" \
    eval 'grep -q "ERROR:  08006: shard 1 of model_select_shards is unreachable" <<<"$err" &&
          grep -q "port=$S1" <<<"$err"'
err=$(pxsql -A -t -v VERBOSITY=verbose -c "SELECT string_agg(DISTINCT name, ' ' ORDER BY name) FROM model_select.selectors()" 2>&1 || true)
printf '%s\n' "$err" | head -n 2 | sed 's/^/#   /'
check "the listing over all shards warns with 08006 naming shard 1" \
    eval 'grep -q "WARNING:  08006: shard 1 of model_select_shards is unreachable" <<<"$err"'
check "... and lists shard 0's selectors ($on0)" eval 'grep -qx "$on0" <<<"$err"'

cluster_start s1 "$S1" || bail "shard 1 failed to start again"
back=0
for _ in $(seq 1 600); do
    px -c "SELECT model_select.select_model('$s1', '{0.1,0.2,0.3}')" >/dev/null 2>&1 && { back=1; break; }
    sleep 0.2
done
check "shard 1 back: its selectors answer through the proxy again" test "$back" = 1
check "nothing of shard 1's log was lost ($before1 rewards)" \
    test "$(on "$S1" -c "SELECT count(*) FROM model_select.rewards")" = "$before1"
check "and it learns again" px -c "SELECT model_select.reward(decision_id, 0.25) FROM model_select.route('$s1', '{0.3,0.2,0.1}')" -o /dev/null

# moving a selector of shard 0 to shard 1, with an unrewarded decision
mv=${on0%% *}
open_decision=$(px -c "SELECT decision_id FROM model_select.route('$mv', '{0.5,0.5,0.5}')")
# what it owns besides its log: a codebook fitted through the proxy on
# prompts of its shard, and cascades routed through the proxy with
# observations (by cascade and by context) in several statements
on "$S0" >/dev/null <<SQL
CREATE TABLE prompts AS SELECT ARRAY[sin(3 * g), cos(5 * g), 0.2]::float8[] AS context FROM generate_series(1, 40) g;
GRANT SELECT ON prompts TO PUBLIC;
SQL
px -c "SELECT model_select.fit_codebook('$mv', 'SELECT context FROM prompts')" >/dev/null
# and a log's horizon: each arm keeps its newest 3 rewards, the older ones absorbed into its base
px -c "SELECT model_select.alter_selector('$mv', '{\"retain\": 3}')" -c "SELECT model_select.maintain('$mv')" >/dev/null
bases() { on "$1" -c "SELECT string_agg(concat_ws(' ', a.name, b.n, b.reward_sum, md5(b.state)), ', ' ORDER BY a.name)
                        FROM model_select.arm_base b JOIN model_select.arms a USING (arm_id) JOIN model_select.selectors s
                          ON s.selector_id = b.selector_id WHERE s.name = '$mv'"; }
bases_before=$(bases "$S0")
on "$S0" -c "CREATE TABLE routed (cascade_id bigint, first_arm text)" >/dev/null
px -c "SELECT r.cascade_id || ',' || r.arms[1]
         FROM generate_series(1, 6) g, LATERAL model_select.cascade_route('$mv', ARRAY[sin(g), cos(g), 0.5]) r" |
    on "$S0" -c "COPY routed FROM STDIN WITH (FORMAT csv)" >/dev/null
for k in 1 2 3; do
    on "$S0" >/dev/null <<SQL
INSERT INTO model_select.cascade_observations(cascade_id, arm, value, cost)
SELECT cascade_id, first_arm, (1 + sin(cascade_id % 1000 + $k)) / 2, 0.1 FROM routed WHERE cascade_id % 3 = $k - 1;
INSERT INTO model_select.cascade_observations(selector, arm, context, value, cost)
SELECT '$mv', (ARRAY['a', 'b', 'c'])[1 + g % 3], ARRAY[sin(g * $k), cos(g), 0.5], (1 + cos(g * $k)) / 2, 0.05
  FROM generate_series(1, 10) g;
SQL
done
# (the target derives every arm's state from scratch: compare with the source's rebuild,
# not with its incremental state, which may differ in the last bits)
px -c "SELECT model_select.rebuild_state('$mv')" >/dev/null
cascade_scores() { px -c "SELECT string_agg(format('%s %s %s %s %s %s', k, arm, n, estimate, width, index), '; ' ORDER BY k, arm)
                            FROM generate_series(1, 3) k, LATERAL model_select.cascade_scores('$mv', ARRAY[sin(k), cos(k), 0.5]) c"; }
cascade_before=$(cascade_scores)
cascade_log() { on "$1" -c "SELECT (SELECT string_agg(cascade_id::text, ',' ORDER BY cascade_id) FROM model_select.cascade_decisions c
                                     JOIN model_select.selectors s USING (selector_id) WHERE s.name = '$mv') || ' / ' ||
                                   (SELECT string_agg(concat_ws(' ', obs_id, cascade_id, arm, value, cost), ',' ORDER BY obs_id)
                                      FROM model_select.cascade_observations o WHERE o.selector = '$mv')"; }
cascade_log_before=$(cascade_log "$S0")
codebook() { on "$1" -c "SELECT c.centroids::text || c.rows FROM model_select.codebooks c JOIN model_select.selectors s USING (selector_id)
                          WHERE s.name = '$mv'"; }
codebook_before=$(codebook "$S0")
scores() { px -c "SELECT string_agg(format('%s %s %s %s %s', k, arm, n, mean, ucb), '; ' ORDER BY k, arm)
                    FROM generate_series(1, 3) k, LATERAL model_select.scores('$mv', ARRAY[sin(k), cos(k), 0.5]) c"; }
scores_before=$(scores)
log_before=$(on "$S0" -c "SELECT string_agg(format('%s %s %s %s', r.reward_id, r.decision_id, a.name, r.reward), ',' ORDER BY r.tx, r.seq)
                           FROM model_select.rewards r JOIN model_select.arms a USING (arm_id) JOIN model_select.selectors s ON s.selector_id = r.selector_id
                          WHERE s.name = '$mv'")
PGHOST=$PX_HOST PGPORT=$PX PGDATABASE=$DB bash "$HERE/scripts/ms-move-selector.sh" "$mv" 1 >"$MS_WORK/move.out" 2>&1 && rc=0 || rc=$?
sed 's/^/#   /' "$MS_WORK/move.out"
check "ms-move-selector.sh moves $mv from shard 0 to shard 1 (exit $rc)" test "$rc" = 0
check "it lives on shard 1 only" \
    test "$(px -c "SELECT string_agg((server_id - 1)::text, ',') FROM model_select.selectors() WHERE name = '$mv'")" = 1
scores_after=$(scores)
check "its scores through the proxy equal those before the move" \
    eval '[ "$scores_after" = "$scores_before" ] || { diff <(tr ";" "\n" <<<"$scores_before") <(tr ";" "\n" <<<"$scores_after") | sed "s/^/#   /"; false; }' 
log_after=$(on "$S1" -c "SELECT string_agg(format('%s %s %s %s', r.reward_id, r.decision_id, a.name, r.reward), ',' ORDER BY r.tx, r.seq)
                          FROM model_select.rewards r JOIN model_select.arms a USING (arm_id) JOIN model_select.selectors s ON s.selector_id = r.selector_id
                         WHERE s.name = '$mv'")
check "its bases moved: what retention absorbed ($bases_before)" \
    eval '[ -n "$bases_before" ] && [ "$(bases "$S1")" = "$bases_before" ]'
check "its codebook moved (fitted through the proxy on its shard's prompts)" \
    eval '[ -n "$codebook_before" ] && [ "$(codebook "$S1")" = "$codebook_before" ]'
check "its cascades and observations moved whole, ids kept ($(tr ',' '\n' <<<"${cascade_log_before#* / }" | wc -l) observations)" \
    eval '[ -n "${cascade_log_before#* / }" ] && [ "$(cascade_log "$S1")" = "$cascade_log_before" ]'
check "its cascade scores through the proxy equal those before the move" \
    eval '[ -n "$cascade_before" ] && [ "$(cascade_scores)" = "$cascade_before" ]'
check "its reward log moved whole, in order, ids kept ($(tr ',' '\n' <<<"$log_before" | wc -l) rewards)" \
    eval '[ -n "$log_before" ] && [ "$log_after" = "$log_before" ]'
check "the application role routes it on its new shard (its grants moved)" \
    eval 'pxsql -U ms_px_app -c "SELECT * FROM model_select.route('"'$mv'"', '"'{0.1,0.1,0.1}'"')" >/dev/null'
check "a decision made before the move is rewarded on the new shard" \
    eval 'pxsql -U ms_px_app -c "SELECT model_select.reward($open_decision, 0.75)" >/dev/null &&
          [ "$(on "$S1" -c "SELECT count(*) FROM model_select.rewards WHERE decision_id = $open_decision")" = 1 ]'
check "shard 0 no longer has it" test "$(on "$S0" -c "SELECT count(*) FROM model_select.selectors WHERE name = '$mv'")" = 0
PGHOST=$CL PGPORT=$S1 rebuild_checks "$mv" " (moved)"
finish
