#!/usr/bin/env bash
# A load reads each arm's log only after the arm's base (selector_load.c,
# ArmRows), also when the base ends inside a transaction with many rows.  A
# warm start writes 1,000 rewards per arm, each arm in one transaction; then
# 40 decisions, each committed on its own, reward only arm b.  Arm a's base
# stays in its warm start's transaction, so a read from the start of that
# transaction reads its 1,000 rows again at every load (what loads did
# before: a default selector that stopped choosing an arm paid for it at
# every decision).  Counted with the index entries this backend's
# transactions returned from model_select.rewards' indexes
# (pg_stat_get_xact_tuples_returned, a count, not a time): under 200 per
# decision (2,180 in all when written), where the read from the start of the
# transaction returned 901,921.  The scores still equal the log's and
# rebuild_state()'s (rebuild_checks).
#
# Needs PGHOST/PGPORT/PGUSER (a superuser) of a running cluster with
# model_select installed.
set -euo pipefail
DB=ms_session_warm_reads
. "$(dirname "$0")/lib/common.bash"

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "fixtures failed"
SELECT model_select.create_selector('wr', 8, ARRAY['a', 'b'], 'lin_ucb');
SELECT setseed(0.31);
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 'wr', 'a', ms_rand(8), random() FROM generate_series(1, 1000);
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT 'wr', 'b', ms_rand(8), random() FROM generate_series(1, 1000);
SQL

returned=$(q <<'SQL'
DO $$
DECLARE
    total bigint := 0;
BEGIN
    FOR i IN 1..40 LOOP
        PERFORM model_select.route('wr', ms_rand(8));
        INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('wr', 'b', ms_rand(8), 0.5);
        SELECT total + sum(pg_stat_get_xact_tuples_returned(indexrelid)) INTO total
          FROM pg_index WHERE indrelid = 'model_select.rewards'::regclass;
        COMMIT;
    END LOOP;
    RAISE NOTICE 'index entries returned: %', total;
    CREATE TEMP TABLE returned AS SELECT total;
END $$;
SELECT total FROM returned;
SQL
)
echo "# index entries the 40 decisions' transactions read from the reward log's indexes: $returned"
check "40 decisions after a 1,000-row warm start read under 8,000 index entries of the log (not its warm rows again: $returned)" \
    test "$returned" -lt 8000
check "... and every decision read at least one (the count is not vacuous)" test "$returned" -ge 40
rebuild_checks wr
finish
