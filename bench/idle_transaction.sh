#!/usr/bin/env bash
# make bench-idle-transaction: what one tenant's idle transaction costs
# another tenant.  Tenant B opens a transaction, writes a row of its own (so
# it holds a transaction id) and stays idle; tenant A's pak_ucb selector
# (d = 384, 5 arms) then takes MS_IDLE_REWARDS (3,000) rewards, each insert
# committed, and checkpoint().  Prints A's pending rewards and the time of a
# fresh backend's first select_model() on A (median of 3 connections), then
# the same once B's transaction has ended.  0.2.0: every reward after B's id
# stayed pending, and each new connection folded them all.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${MS_IDLE_IN_CLUSTER:-}" ]; then
    MS_IDLE_IN_CLUSTER=1 exec scripts/with-cluster.sh bench/idle_transaction.sh
fi
N=${MS_IDLE_REWARDS:-3000}
DB=ms_bench_idle
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
psql -X -q -v ON_ERROR_STOP=1 -d "$DB" <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION model_select;
SELECT model_select.create_selector('tenant_a', 384, ARRAY['a1', 'a2', 'a3', 'a4', 'a5'], 'pak_ucb');
CREATE TABLE b_orders (id int);
SQL
psql -X -q -d "$DB" -c "BEGIN" -c "INSERT INTO b_orders VALUES (1)" -c "SELECT pg_sleep(3600)" >/dev/null 2>&1 &
idle=$!
end_idle() {  # ends tenant B's transaction (its backend, not only its psql)
    psql -X -q -d "$DB" -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                             WHERE query LIKE '%pg_sleep(3600)%' AND pid <> pg_backend_pid()" >/dev/null
    wait $idle 2>/dev/null || true
}
trap 'kill $idle 2>/dev/null || true' EXIT
sleep 1
psql -X -q -v ON_ERROR_STOP=1 -d "$DB" <<SQL
SELECT setseed(0.3);
DO \$\$ BEGIN
  FOR i IN 1..$N LOOP
    INSERT INTO model_select.rewards(selector, arm, context, reward)
    SELECT 'tenant_a', 'a' || (1 + i % 5), array_agg(random() - 0.5), random() FROM generate_series(1, 384);
    COMMIT;
  END LOOP;
END \$\$;
SELECT model_select.checkpoint('tenant_a');
SQL
first_ms() {  # median over 3 fresh connections of the first select_model() on A
    for _ in 1 2 3; do
        psql -X -q -A -t -d "$DB" -c "SELECT extract(epoch FROM clock_timestamp()) * 1000" \
             -c "SELECT model_select.select_model('tenant_a', (SELECT array_agg(sin(j)) FROM generate_series(1, 384) j))" \
             -c "SELECT extract(epoch FROM clock_timestamp()) * 1000" | awk 'NR == 1 { t = $1 } END { printf "%.1f\n", $1 - t }'
    done | sort -n | sed -n 2p
}
pending() { psql -X -q -A -t -d "$DB" -c "SELECT sum(pending) FROM model_select.arm_stats WHERE selector = 'tenant_a'"; }
echo "tenant A: pak_ucb, d = 384, 5 arms, $N rewards; $(lscpu | sed -n 's/^Model name: *//p')"
echo "| tenant B's transaction | A's pending rewards | fresh backend's first select_model() on A |"
echo "| --- | ---: | ---: |"
echo "| open, idle, holding an id | $(pending) | $(first_ms) ms |"
end_idle
psql -X -q -d "$DB" -c "SELECT model_select.checkpoint('tenant_a')" >/dev/null
echo "| ended | $(pending) | $(first_ms) ms |"
psql -X -q -d postgres -c "DROP DATABASE $DB WITH (FORCE)"
