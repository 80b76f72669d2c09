#!/usr/bin/env bash
# make bench-refusal: what a refused select_model() costs, on a selector of 2
# arms and on one of 2,000 (every arm with a checkpoint), called by a role
# with no right on either.  The caller's right is checked before any arm or
# state is read, so the two must cost about the same: a refusal's time tells
# nothing of another tenant's selector, and makes the server do no work for
# it.  Prints microseconds per refused call and the ratio 2,000 / 2 (target:
# within 3x; 0.2.0 read every arm and checkpoint first: 14 us vs 1.7 ms).
# Each call runs in a PL/pgSQL exception block, the same overhead for both.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${MS_REFUSAL_IN_CLUSTER:-}" ]; then
    MS_REFUSAL_IN_CLUSTER=1 exec scripts/with-cluster.sh bench/refusal.sh
fi
CALLS=${MS_REFUSAL_CALLS:-2000}
DB=ms_bench_refusal
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
psql -X -q -v ON_ERROR_STOP=1 -d "$DB" <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION model_select;
DROP ROLE IF EXISTS ms_stranger;
CREATE ROLE ms_stranger;
GRANT USAGE ON SCHEMA model_select TO ms_stranger;
SELECT model_select.create_selector('small', 8, ARRAY['a0', 'a1'], 'lin_ucb');
SELECT model_select.create_selector('large', 8, array_agg('a' || i), 'lin_ucb')
  FROM generate_series(0, 1999) i;
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT s, 'a' || i, ARRAY[1, 0, 0, 0, 0, 0, 0, 0]::float8[], 0.5
  FROM (VALUES ('small', 2), ('large', 2000)) v(s, k), generate_series(0, k - 1) i;
SELECT model_select.checkpoint(s) FROM unnest(ARRAY['small', 'large']) s;
SQL
refused_us() {  # refused_us SELECTOR: microseconds per refused select_model()
    psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" <<SQL
SET ROLE ms_stranger;
CREATE TEMP TABLE t(us float8);
DO \$\$
DECLARE
    t0 timestamptz := clock_timestamp();
    refused int := 0;
BEGIN
    FOR i IN 1..$CALLS LOOP
        BEGIN
            PERFORM model_select.select_model('$1', ARRAY[1, 0, 0, 0, 0, 0, 0, 0]::float8[]);
        EXCEPTION WHEN insufficient_privilege THEN
            refused := refused + 1;
        END;
    END LOOP;
    IF refused <> $CALLS THEN
        RAISE EXCEPTION 'only % of % calls were refused', refused, $CALLS;
    END IF;
    INSERT INTO t VALUES (extract(epoch FROM clock_timestamp() - t0) * 1e6 / $CALLS);
END \$\$;
SELECT round(us::numeric, 1) FROM t;
SQL
}
refused_us small >/dev/null   # warm-up: plans, caches
small=$(refused_us small)
large=$(refused_us large)
ratio=$(awk -v a="$large" -v b="$small" 'BEGIN { printf "%.2f", a / b }')
echo "refused select_model(), $CALLS calls each, $(lscpu | sed -n 's/^Model name: *//p')"
echo "| selector | arms | us per refused call |"
echo "| -------- | ---: | ------------------: |"
echo "| small    |    2 | $small |"
echo "| large    | 2000 | $large |"
echo "ratio large / small: $ratio (target: at most 3)"
psql -X -q -d postgres -c "DROP DATABASE $DB" -c "DROP ROLE ms_stranger"
