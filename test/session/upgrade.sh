#!/usr/bin/env bash
# Upgrades from the released versions, each in a database of its own:
#   - 0.1.0 (sections 1-5): install 0.1.0, load data (selectors of every
#     kind, decisions, rewards by decision and by name, a retired and an
#     added arm, settings changed and without 0.2.0's keys, a selector
#     without rewards, a damaged and a missing arm_state row), run ALTER
#     EXTENSION model_select UPDATE (PostgreSQL chains 0.1.0 -> 0.2.0 ->
#     the default version);
#   - 0.2.0 (section 6): install 0.2.0 with data that has checkpoints
#     (selectors of every policy, routed decisions, rewards with costs, by
#     decision and by name, checkpoints with rewards pending after them), and
#     roles set up by 0.2.0's setup_role(); update;
# and after each
#   - compare the extension's catalog (test/session/include/extension_catalog.sql:
#     functions with volatility, parallel label, strictness, config, source;
#     tables with columns, defaults, constraints, indexes, triggers; views;
#     sequences; comments; ACLs; pg_dump configuration) with a fresh install
#     of the default version in another database: the diff must be empty;
#   - check that every selector, arm, decision and reward survived, that
#     every arm's state was re-derived from its log (arm_stats.n = log count),
#     and that routing and learning go on;
#   - check that the scores equal (1e-9) those of a fresh install with the
#     same reward log; from 0.2.0 also the budget's spend of every arm.
#
# Needs PGHOST/PGPORT/PGUSER (see scripts/with-cluster.sh) and the extension
# installed (the released scripts and the current ones); uses databases and a
# role of its own, dropped at the end.  Set KEEP_UPGRADE_WORK=1 to keep the
# catalog dumps in the temporary directory for inspection.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
OLD=model_select_upgrade_old
NEW=model_select_upgrade_new
SRC=model_select_upgrade_src
OLD2=model_select_upgrade_020
RESTORED=model_select_upgrade_restored
ROLES=model_select_upgrade_roles
APP_ROLE=model_select_upgrade_app
ADMIN_ROLE=model_select_upgrade_admin
FROM_VERSION=0.1.0
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ms_upgrade.XXXXXX")
drop_all() {
    local db
    for db in "$OLD" "$NEW" "$SRC" "$OLD2" "$ROLES" "$RESTORED"; do dropdb --if-exists "$db" >/dev/null 2>&1 || true; done
    psql -X -q -d postgres -c "DROP ROLE IF EXISTS $APP_ROLE" -c "DROP ROLE IF EXISTS $ADMIN_ROLE" >/dev/null 2>&1 || true
}
cleanup() {
    drop_all
    if [ "${KEEP_UPGRADE_WORK:-0}" = 1 ]; then echo "# kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

q() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }
passed=0
failed=0
n=0
check() {  # check DESCRIPTION CMD...
    local desc=$1; shift
    n=$((n + 1))
    if "$@"; then echo "ok $n - $desc"; passed=$((passed + 1))
    else echo "not ok $n - $desc"; failed=$((failed + 1)); fi
}
quiet() { q "$@" >/dev/null; }
is() {  # is ACTUAL EXPECTED
    [ "$1" = "$2" ] || { echo "#   got: '$1'" >&2; echo "#   expected: '$2'" >&2; return 1; }
}

# same_catalog DB: DB's extension catalog equals the fresh install's
# ($WORK/catalog.fresh); else the diff (- fresh, + DB) on stderr
same_catalog() {
    q -d "$1" -f "$HERE/include/extension_catalog.sql" > "$WORK/catalog.$1"
    diff -u "$WORK/catalog.fresh" "$WORK/catalog.$1" > "$WORK/catalog.$1.diff" && return 0
    head -n 60 "$WORK/catalog.$1.diff" | sed 's/^/#   /' >&2
    return 1
}
# arms_match_log DB: every arm's n in arm_stats is its count in the reward log
arms_match_log() {
    is "$(q -d "$1" -c "SELECT count(*) FROM model_select.arm_stats st
                         JOIN model_select.selectors s ON s.name = st.selector
                         JOIN model_select.arms a ON a.selector_id = s.selector_id AND a.name = st.arm
                        WHERE st.n <> (SELECT count(*) FROM model_select.rewards r WHERE r.arm_id = a.arm_id)")" 0
}
# What must survive an update, compared as text (the 0.1.0 part keeps it as a
# view in the database, the 0.2.0 part in a variable).
COUNTS="SELECT (SELECT count(*) FROM model_select.selectors) AS selectors,
       (SELECT count(*) FROM model_select.arms) AS arms,
       (SELECT count(*) FROM model_select.arms WHERE active) AS active_arms,
       (SELECT count(*) FROM model_select.decisions) AS decisions,
       (SELECT count(*) FROM model_select.rewards) AS rewards,
       (SELECT count(*) FROM model_select.rewards WHERE decision_id IS NOT NULL) AS decision_rewards,
       (SELECT string_agg(s.name || ':' || (s.settings - 'noise_prior' - 'codebook' - 'tag_buckets')::text, ';' ORDER BY s.name)
          FROM model_select.selectors s) AS settings"
# After the update: the selectors noise_prior, codebook and tag_buckets apply
# to (lin_ucb's defaults 5, 8 and 16 since 0.3.0) store them off, so that they
# keep their widths and features.
NEW_DEFAULTS_OFF="SELECT count(*) > 0 AND bool_and(settings->>'noise_prior' = '0') FROM model_select.selectors
               WHERE model_select.resolve_settings(policy, kernel, settings) ? 'noise_prior'
              UNION ALL
              SELECT count(*) > 0 AND bool_and(settings->>'codebook' = '0') FROM model_select.selectors
               WHERE model_select.resolve_settings(policy, kernel, settings) ? 'codebook'
              UNION ALL
              SELECT count(*) > 0 AND bool_and(settings->>'tag_buckets' = '0') FROM model_select.selectors
               WHERE model_select.resolve_settings(policy, kernel, settings) ? 'tag_buckets'"
# Scores of every selector on every 7th context of public.ctx (which both
# databases have), and the function that compares them: equal to 1e-9
# (relative above 1), NULLs and infinities exactly.
SCORES="SELECT s.name AS selector, c.i, sc.*
          FROM model_select.selectors s, public.ctx c, LATERAL model_select.scores(s.name, c.c) sc
         WHERE c.i % 7 = 0"
CLOSE="CREATE FUNCTION public.close(x float8, y float8) RETURNS boolean LANGUAGE sql IMMUTABLE AS
       'SELECT x IS NOT DISTINCT FROM y OR abs(x - y) <= 1e-9 * greatest(1, abs(y))'"
# differing_scores A B: copies A's scores into B (once: as other_scores) and
# prints how many rows of them differ from B's own (a row missing on either
# side counts)
differing_scores() {
    q -d "$2" -c "CREATE TABLE public.other_scores AS $SCORES WITH NO DATA" >/dev/null
    q -d "$1" -c "\\copy ($SCORES) TO STDOUT" | q -d "$2" -c '\copy public.other_scores FROM STDIN'
    q -d "$2" -c "SELECT count(*) FROM public.other_scores b FULL JOIN ($SCORES) a USING (selector, i, arm)
                   WHERE a.n IS DISTINCT FROM b.n OR a.active IS DISTINCT FROM b.active
                      OR NOT (close(a.mean, b.mean) AND close(a.width, b.width) AND close(a.ucb, b.ucb)
                              AND close(a.radius, b.radius) AND close(a.alpha, b.alpha))"
}

SCHEMAS="'model_select'::regnamespace, 'model_select_internal'::regnamespace"
DEFAULT_VERSION=$(q -d postgres -c "SELECT default_version FROM pg_available_extensions WHERE name = 'model_select'")

# -- 1. the old version, with data ------------------------------------------
drop_all
createdb "$OLD"
q -d "$OLD" -c "CREATE EXTENSION model_select VERSION '$FROM_VERSION'"
check "CREATE EXTENSION model_select VERSION '$FROM_VERSION'" \
    is "$(q -d "$OLD" -c "SELECT extversion FROM pg_extension WHERE extname = 'model_select'")" "$FROM_VERSION"

# This library cannot run 0.1.0's learning code paths (its C code reads the
# 0.2.0 columns), so the rows a 0.1.0 database holds are written the way
# 0.1.0 left them: selectors and arms through 0.1.0's SQL functions, decisions
# and rewards as rows with triggers off.  Cascades and probe runs are not
# changed by 0.2.0 (their tables and code are the same).  pak_ucb and bkb get
# the defaults 0.1.0 stored for them (alpha 1, intercept 1, eta 0.5, qbar 2).
q -d "$OLD" >/dev/null <<'SQL'
SELECT model_select.create_selector('pak', 3, ARRAY['a', 'b', 'c'], 'pak_ucb', 'rbf',
                                    '{"bandwidth": 0.8, "alpha": 1, "intercept": 1, "eta": 0.5}', 7);
SELECT model_select.create_selector('lin', 3, ARRAY['a', 'b'], 'lin_ucb', NULL, '{"window": 20}', 1);
SELECT model_select.create_selector('rff', 3, ARRAY['a', 'b'], 'rff_ucb', 'rbf', '{"features": 32}', 2);
SELECT model_select.create_selector('bkb', 3, ARRAY['a', 'b'], 'bkb', 'rbf', '{"alpha": 1, "intercept": 1, "eta": 0.5, "qbar": 2}', 3);
SELECT model_select.create_selector('greedy', 3, ARRAY['x', 'y'], 'greedy');
CREATE TABLE public.ctx AS
SELECT i, ARRAY[sin(i), cos(i), sin(2 * i)]::float8[] AS c FROM generate_series(1, 60) i;

SET session_replication_role = replica;
-- decisions; rewards by decision in two statements, by name in a third
INSERT INTO model_select.decisions(selector_id, arm_id, context, score, mean)
SELECT s.selector_id, a.arm_id, c.c, 1, 0.5
  FROM public.ctx c, model_select.selectors s
  JOIN model_select.arms a ON a.selector_id = s.selector_id
 WHERE a.ordinal = 1 + c.i % 2 ORDER BY c.i, s.name;
INSERT INTO model_select.rewards(decision_id, selector, arm, context, reward, cost, selector_id, arm_id)
SELECT d.decision_id, s.name, a.name, d.context, 0.5 + 0.4 * sin(d.decision_id * a.ordinal), 0.01 * a.ordinal,
       d.selector_id, d.arm_id
  FROM model_select.decisions d JOIN model_select.arms a ON a.arm_id = d.arm_id
  JOIN model_select.selectors s ON s.selector_id = d.selector_id
 WHERE d.decision_id % 3 <> 0 ORDER BY d.decision_id;
INSERT INTO model_select.rewards(decision_id, selector, arm, context, reward, selector_id, arm_id)
SELECT d.decision_id, s.name, a.name, d.context, 0.5 + 0.3 * cos(d.decision_id), d.selector_id, d.arm_id
  FROM model_select.decisions d JOIN model_select.arms a ON a.arm_id = d.arm_id
  JOIN model_select.selectors s ON s.selector_id = d.selector_id
 WHERE d.decision_id % 3 = 0 AND d.decision_id % 2 = 0 ORDER BY d.decision_id;
INSERT INTO model_select.rewards(selector, arm, context, reward, selector_id, arm_id)
SELECT s.name, a.name, c.c, 0.2 + 0.1 * a.ordinal, s.selector_id, a.arm_id
  FROM public.ctx c, model_select.selectors s JOIN model_select.arms a USING (selector_id)
 WHERE c.i <= 5 ORDER BY c.i, s.name, a.ordinal;
RESET session_replication_role;

-- arms come and go, settings change (what alter_selector stores)
SELECT model_select.retire_arm('pak', 'c');
SELECT model_select.add_arm('pak', 'd');
SET session_replication_role = replica;
INSERT INTO model_select.rewards(selector, arm, context, reward, selector_id, arm_id)
SELECT 'pak', 'd', c.c, 0.6, a.selector_id, a.arm_id
  FROM public.ctx c, model_select.arms a JOIN model_select.selectors s ON s.selector_id = a.selector_id
 WHERE c.i <= 3 AND s.name = 'pak' AND a.name = 'd';
RESET session_replication_role;
UPDATE model_select.selectors
   SET settings = model_select.resolve_settings(policy, kernel, settings || '{"cost_weight": 0.1}')
 WHERE name = 'lin';
-- settings as 0.1.0's library resolved them: without 0.2.0's keys
UPDATE model_select.selectors SET settings = settings - 'budget' - 'exploration' - 'clock';
-- a selector that never learned, and 0.1.0 states that are damaged or missing
SELECT model_select.create_selector('empty', 3, ARRAY['x', 'y'], 'lin_ucb');
UPDATE model_select.arm_state SET state = '\xdeadbeef'
 WHERE arm_id = (SELECT min(a.arm_id) FROM model_select.arms a JOIN model_select.selectors s USING (selector_id)
                  WHERE s.name = 'greedy');
DELETE FROM model_select.arm_state
 WHERE arm_id = (SELECT max(a.arm_id) FROM model_select.arms a JOIN model_select.selectors s USING (selector_id)
                  WHERE s.name = 'lin');

SQL
q -d "$OLD" -c "CREATE VIEW public.counts AS $COUNTS" -c 'CREATE TABLE public.before_counts AS SELECT * FROM public.counts'
check "0.1.0 holds data: $(q -d "$OLD" -c 'SELECT row(c.*) FROM public.before_counts c' | cut -c1-80)" \
    is "$(q -d "$OLD" -c 'SELECT rewards > 300 AND decision_rewards > 150 FROM public.before_counts')" t

# -- 1b. rewards before the update: a clear error, nothing written ----------
early=$(q -d "$OLD" -v VERBOSITY=verbose \
          -c "INSERT INTO model_select.rewards(selector, arm, context, reward) VALUES ('lin', 'a', ARRAY[1, 2, 3]::float8[], 0.5)" 2>&1 || true)
check "a reward inserted before ALTER EXTENSION UPDATE: 55000 with the hint to update" \
    grep -q "ERROR:  55000: .*Run ALTER EXTENSION model_select UPDATE" <<<"$(tr '\n' ' ' <<<"$early")"
check "... and nothing was written" \
    is "$(q -d "$OLD" -c 'SELECT count(*) FROM model_select.rewards')" "$(q -d "$OLD" -c 'SELECT rewards FROM public.before_counts')"

# -- 2. update ---------------------------------------------------------------
check "pg_extension_update_paths has a path $FROM_VERSION -> $DEFAULT_VERSION" \
    is "$(q -d "$OLD" -c "SELECT path IS NOT NULL FROM pg_extension_update_paths('model_select')
                          WHERE source = '$FROM_VERSION' AND target = '$DEFAULT_VERSION'")" t
check "ALTER EXTENSION model_select UPDATE in a transaction that rolls back leaves 0.1.0 and its rows" \
    is "$(q -d "$OLD" -c 'BEGIN' -c 'ALTER EXTENSION model_select UPDATE' -c 'ROLLBACK' \
            -c "SELECT extversion FROM pg_extension WHERE extname = 'model_select'" \
            -c 'SELECT count(*) FROM (SELECT * FROM public.counts EXCEPT SELECT * FROM public.before_counts) x' | tr '\n' ' ')" \
       "$FROM_VERSION 0 "
check "ALTER EXTENSION model_select UPDATE succeeds" quiet -d "$OLD" -c 'ALTER EXTENSION model_select UPDATE'
check "a second ALTER EXTENSION model_select UPDATE changes nothing" \
    is "$(q -d "$OLD" -c 'ALTER EXTENSION model_select UPDATE' 2>&1)" \
       "NOTICE:  version \"$DEFAULT_VERSION\" of extension \"model_select\" is already installed"
check "the update reaches the default version $DEFAULT_VERSION" \
    is "$(q -d "$OLD" -c "SELECT extversion FROM pg_extension WHERE extname = 'model_select'")" "$DEFAULT_VERSION"

# -- 3. the same catalog as a fresh install ----------------------------------
createdb "$NEW"
q -d "$NEW" -c 'CREATE EXTENSION model_select'
q -d "$NEW" -f "$HERE/include/extension_catalog.sql" > "$WORK/catalog.fresh"
echo "# catalog: $(wc -l < "$WORK/catalog.fresh") facts"
check "the catalog dump covers functions, columns, comments and triggers" \
    is "$(grep -c '^function .*: parallel = ' "$WORK/catalog.fresh") $(grep -c '^trigger ' "$WORK/catalog.fresh")" \
       "$(q -d "$NEW" -c "SELECT count(*) FROM pg_proc WHERE pronamespace IN ($SCHEMAS)") $(q -d "$NEW" -c "SELECT count(*)
          FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relnamespace IN ($SCHEMAS) AND NOT t.tgisinternal")"
check "a fresh install comments every function, table and view" \
    is "$(q -d "$NEW" -c "SELECT coalesce(string_agg(x, ', '), 'none uncommented') FROM (
            SELECT oid::regprocedure::text AS x FROM pg_proc
             WHERE pronamespace IN ($SCHEMAS) AND obj_description(oid, 'pg_proc') IS NULL
            UNION ALL
            SELECT oid::regclass::text FROM pg_class
             WHERE relnamespace = 'model_select'::regnamespace AND relkind IN ('r', 'v')
               AND obj_description(oid, 'pg_class') IS NULL) u")" "none uncommented"
check "the catalog updated from $FROM_VERSION equals a fresh install's (else the diff above: - fresh, + updated)" \
    same_catalog "$OLD"

# -- 4. the data survived, the states re-derived ----------------------------
check "every selector, arm, decision and reward survived, settings unchanged" \
    is "$(q -d "$OLD" -c 'SELECT count(*) FROM (SELECT * FROM public.counts EXCEPT SELECT * FROM public.before_counts) x')" 0
check "the selectors noise_prior, codebook and tag_buckets apply to store them off (their widths and features unchanged)" \
    is "$(q -d "$OLD" -c "$NEW_DEFAULTS_OFF" | tr -d '\n')" ttt
check "every arm's n equals its count in the reward log" arms_match_log "$OLD"

# -- 5. a fresh install fed the same log scores the same ---------------------
q -d "$NEW" -c 'CREATE TABLE public.ctx (i int, c float8[])' -c "$CLOSE"
q -d "$OLD" -c '\copy public.ctx TO STDOUT' | q -d "$NEW" -c '\copy public.ctx FROM STDIN'
q -d "$OLD" -c "SELECT format('SELECT model_select.create_selector(%L, %s, %L, %L, %L, %L, %s);',
                              s.name, s.dim, (SELECT array_agg(a.name ORDER BY a.ordinal) FROM model_select.arms a
                                               WHERE a.selector_id = s.selector_id),
                              s.policy, s.kernel, s.settings, s.seed)
                  FROM model_select.selectors s ORDER BY s.selector_id" > "$WORK/selectors.sql"
q -d "$NEW" -f "$WORK/selectors.sql" >/dev/null
q -d "$NEW" -c 'CREATE TABLE public.log (selector text, arm text, context float8[], reward float8, cost float8)'
q -d "$OLD" -c "\copy (SELECT s.name, a.name, r.context, r.reward, r.cost FROM model_select.rewards r
                      JOIN model_select.selectors s USING (selector_id) JOIN model_select.arms a USING (arm_id)
                      ORDER BY r.reward_id) TO STDOUT" | q -d "$NEW" -c '\copy public.log FROM STDIN'
q -d "$NEW" -c 'INSERT INTO model_select.rewards(selector, arm, context, reward, cost)
                SELECT * FROM public.log' \
            -c "SELECT model_select.retire_arm(s.name, a.name) FROM model_select.selectors s
                  JOIN model_select.arms a USING (selector_id) WHERE (s.name, a.name) IN (('pak', 'c'))" >/dev/null
differ=$(differing_scores "$OLD" "$NEW")
check "the updated scores equal a fresh install's fed the same reward log ($(q -d "$NEW" -c 'SELECT count(*) FROM public.other_scores') rows, 1e-9)" \
    is "$differ" 0

check "routing and learning go on after the update" \
    quiet -d "$OLD" -c "SELECT * FROM model_select.route('pak', ARRAY[1, 2, 3]::float8[])" \
                -c "INSERT INTO model_select.rewards(decision_id, reward)
                    SELECT max(decision_id), 0.5 FROM model_select.decisions"

# -- 6. from 0.2.0, with checkpoints -------------------------------------------
# 0.2.0's tables hold checkpoints, which this library cannot write into them
# (it writes arm_state's spend columns, new in 0.3.0).  So the rows are made
# by this library in a fresh install ($SRC) and copied, in the columns 0.2.0's
# tables have, into a 0.2.0 install ($OLD2): selectors of every policy, routed
# decisions, rewards with costs by decision and by name, a retired and an
# added arm, changed settings, checkpoints and rewards pending after them.
# The layout of a checkpoint's state is the same in both versions; lin_ucb's
# selectors have noise_prior 0 and codebook 0, the widths and features of
# 0.2.0 (which the update keeps), and pak_ucb's and bkb's 0.2.0's defaults
# (alpha 1, intercept 1, eta 0.5; bkb qbar 2), as 0.2.0 stored them.
createdb "$SRC"
createdb "$OLD2"
q -d "$OLD2" -c "CREATE EXTENSION model_select VERSION '0.2.0'"
check "CREATE EXTENSION model_select VERSION '0.2.0'" \
    is "$(q -d "$OLD2" -c "SELECT extversion FROM pg_extension WHERE extname = 'model_select'")" 0.2.0
q -d "$SRC" >/dev/null <<'SQL'
CREATE EXTENSION model_select;
SELECT model_select.create_selector('pak', 3, ARRAY['a', 'b', 'c'], 'pak_ucb', 'rbf',
                                    '{"bandwidth": 0.8, "alpha": 1, "intercept": 1, "eta": 0.5}', 7);
SELECT model_select.create_selector('lin', 3, ARRAY['a', 'b'], 'lin_ucb', NULL, '{"window": 20, "noise_prior": 0, "codebook": 0}', 1);
SELECT model_select.create_selector('rff', 3, ARRAY['a', 'b'], 'rff_ucb', 'rbf', '{"features": 32}', 2);
SELECT model_select.create_selector('bkb', 3, ARRAY['a', 'b'], 'bkb', 'rbf', '{"alpha": 1, "intercept": 1, "eta": 0.5, "qbar": 2}', 3);
SELECT model_select.create_selector('budget', 3, ARRAY['x', 'y'], 'lin_ucb', NULL, '{"budget": 0.02, "noise_prior": 0, "codebook": 0}', 4);
SELECT model_select.create_selector('greedy', 3, ARRAY['x', 'y'], 'greedy');
SELECT model_select.create_selector('random', 3, ARRAY['x', 'y'], 'random', NULL, '{}', 5);
CREATE TABLE public.ctx AS
SELECT i, ARRAY[sin(i), cos(i), sin(2 * i)]::float8[] AS c FROM generate_series(1, 60) i;
CREATE TABLE public.routed AS
SELECT s.name, c.i, r.* FROM public.ctx c, model_select.selectors s, LATERAL model_select.route(s.name, c.c) r
 ORDER BY c.i, s.name;
INSERT INTO model_select.rewards(decision_id, reward, cost)
SELECT decision_id, 0.5 + 0.4 * sin(decision_id), 0.01 * (1 + decision_id % 3) FROM public.routed
 WHERE decision_id % 3 <> 0 ORDER BY decision_id;
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT s.name, a.name, c.c, 0.2 + 0.1 * a.ordinal
  FROM public.ctx c, model_select.selectors s JOIN model_select.arms a USING (selector_id)
 WHERE c.i <= 5 ORDER BY c.i, s.name, a.ordinal;
SELECT model_select.retire_arm('pak', 'c');
SELECT model_select.add_arm('pak', 'd');
SELECT model_select.alter_selector('lin', '{"cost_weight": 0.1}');
SELECT model_select.checkpoint(name) FROM model_select.selectors ORDER BY name;
-- pending after the checkpoints
INSERT INTO model_select.rewards(decision_id, reward, cost)
SELECT decision_id, 0.3, 0.02 FROM public.routed
 WHERE decision_id % 6 = 0 AND (name, arm) <> ('pak', 'c') ORDER BY decision_id;
SQL
q -d "$SRC" -c "$CLOSE"
for t in selectors arms arm_state arm_state_rows decisions rewards; do
    cols=$(q -d "$OLD2" -c "SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
                           WHERE attrelid = 'model_select.$t'::regclass AND attnum > 0 AND NOT attisdropped")
    q -d "$SRC" -c "\\copy (SELECT $cols FROM model_select.$t) TO STDOUT" |
        q -d "$OLD2" -c 'SET session_replication_role = replica' -c "\\copy model_select.$t ($cols) FROM STDIN"
done
q -d "$SRC" -c "SELECT format('SELECT pg_catalog.setval(%L, %s, %L);', schemaname || '.' || sequencename,
                              coalesce(last_value, 1), last_value IS NOT NULL)
                  FROM pg_sequences WHERE schemaname = 'model_select'" | q -d "$OLD2" >/dev/null
q -d "$SRC" -c '\copy public.ctx TO STDOUT' | q -d "$OLD2" -c 'CREATE TABLE public.ctx (i int, c float8[])' \
                                                     -c '\copy public.ctx FROM STDIN'
before=$(q -d "$SRC" -c "$COUNTS")
check "0.2.0 holds the fresh install's rows: $(cut -c1-60 <<<"$before")" is "$(q -d "$OLD2" -c "$COUNTS")" "$before"
check "... with checkpoints, some stored by rows, and rewards pending after them" \
    is "$(q -d "$OLD2" -c "SELECT (SELECT count(*) FROM model_select.arm_state WHERE n > 0) > 10
                                AND (SELECT count(*) FROM model_select.arm_state_rows) > 0
                                AND (SELECT count(*) FROM model_select.rewards r JOIN model_select.arm_state st USING (arm_id)
                                      WHERE (r.tx, r.seq) > (st.ckpt_tx, st.ckpt_seq)) > 0")" t
check "ALTER EXTENSION model_select UPDATE from 0.2.0 succeeds" quiet -d "$OLD2" -c 'ALTER EXTENSION model_select UPDATE'
check "the update reaches the default version $DEFAULT_VERSION" \
    is "$(q -d "$OLD2" -c "SELECT extversion FROM pg_extension WHERE extname = 'model_select'")" "$DEFAULT_VERSION"
check "the catalog updated from 0.2.0 equals a fresh install's (else the diff above: - fresh, + updated)" \
    same_catalog "$OLD2"
check "every selector, arm, decision and reward survived, settings unchanged" \
    is "$(q -d "$OLD2" -c "$COUNTS")" "$before"
check "the selectors noise_prior, codebook and tag_buckets apply to store them off (their widths and features unchanged)" \
    is "$(q -d "$OLD2" -c "$NEW_DEFAULTS_OFF" | tr -d '\n')" ttt
check "every arm's n equals its count in the reward log" arms_match_log "$OLD2"
q -d "$OLD2" -c "$CLOSE"
check "every score equals the 0.2.0 database's before the update (its checkpoints and pending rewards, 1e-9)" \
    is "$(differing_scores "$SRC" "$OLD2")" 0
q -d "$SRC" -c 'SELECT model_select.checkpoint(name) FROM model_select.selectors' >/dev/null
SPEND="SELECT arm_id, n, round(spend_sum::numeric, 12), spend_n FROM model_select.arm_state ORDER BY arm_id"
check "every arm's spend (the budget's pacer) is its decisions' costs in the log, as a fresh install's" \
    is "$(q -d "$OLD2" -c "$SPEND")" "$(q -d "$SRC" -c "$SPEND")"
check "routing and learning go on after the update from 0.2.0" \
    quiet -d "$OLD2" -c "SELECT * FROM model_select.route('budget', ARRAY[1, 2, 3]::float8[])" \
                 -c "INSERT INTO model_select.rewards(decision_id, reward, cost)
                     SELECT max(decision_id), 0.5, 0.01 FROM model_select.decisions"

# The updated database, once a selector absorbed rewards into its arms'
# bases (retain), dumped and restored in parallel (pg_restore -j 4 loads the
# tables biggest first, each in a transaction of its own): every row and
# every score comes back.
quiet -d "$OLD2" -c "SELECT model_select.alter_selector('lin', '{\"retain\": 4}')" \
                 -c "SELECT model_select.maintain('lin')" -c 'DROP TABLE public.other_scores'
ROWS="SELECT (SELECT count(*) FROM model_select.rewards) || ' ' || (SELECT sum(n) FROM model_select.arm_base)
          || ' ' || (SELECT count(*) FROM model_select.decisions) || ' ' || (SELECT count(*) FROM model_select.arms)"
check "... where retain absorbed rewards of lin into its arms' bases" \
    is "$(q -d "$OLD2" -c "SELECT sum(n) > 0 FROM model_select.arm_base")" t
pg_dump -Fc -f "$WORK/updated.dump" "$OLD2"
createdb "$RESTORED"
check "pg_restore -j 4 of the database updated from 0.2.0 succeeds" \
    pg_restore -j 4 -d "$RESTORED" "$WORK/updated.dump"
check "... every reward, absorbed reward, decision and arm is restored" \
    is "$(q -d "$RESTORED" -c "$ROWS")" "$(q -d "$OLD2" -c "$ROWS")"
check "... and every score equals the updated database's (1e-9)" is "$(differing_scores "$OLD2" "$RESTORED")" 0

# Roles that 0.2.0's setup_role() made an application and an administrator
# hold what 0.3.0's would give them (the new views and stats_resets; the
# internal schema for the administrator's probe steps, not for the
# application); in a database of their own, as their grants are not a fresh
# install's catalog.
createdb "$ROLES"
q -d "$ROLES" -c "CREATE EXTENSION model_select VERSION '0.2.0'" \
              -c "CREATE ROLE $APP_ROLE NOLOGIN" -c "SELECT model_select.setup_role('$APP_ROLE', 'application')" \
              -c "CREATE ROLE $ADMIN_ROLE NOLOGIN" -c "SELECT model_select.setup_role('$ADMIN_ROLE', 'administrator')" \
              >/dev/null
q -d "$ROLES" -c 'ALTER EXTENSION model_select UPDATE'
NEW_RELATIONS="'model_select.learner', 'model_select.learner_lag', 'model_select.stats', 'model_select.stats_resets', 'model_select.progress'"
check "a role set up as an application by 0.2.0 reads the relations new in 0.3.0" \
    is "$(q -d "$ROLES" -c "SELECT string_agg(has_table_privilege('$APP_ROLE', r, 'SELECT')::text, ' ')
                            FROM unnest(ARRAY[$NEW_RELATIONS]) r")" "true true true true true"
check "the internal schema's USAGE: the administrator set up by 0.2.0 has it, the application not" \
    is "$(q -d "$ROLES" -c "SELECT has_schema_privilege('$ADMIN_ROLE', 'model_select_internal', 'USAGE'),
                                   has_schema_privilege('$APP_ROLE', 'model_select_internal', 'USAGE')")" "t|f"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
