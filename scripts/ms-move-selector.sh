#!/usr/bin/env bash
# Usage: scripts/ms-move-selector.sh SELECTOR TO_PARTITION
#
# Moves a selector between the shards of a model_select PL/Proxy cluster
# (sql/proxy/model_select_proxy.sql; docs/deployment.md#moving-a-selector-between-shards),
# run with the libpq environment (PGHOST, PGDATABASE, ...) of the proxy
# database, as a superuser of the proxy and of both shards, from a host that
# reaches the shards by the connection strings the proxy has for them.
#
#   1. the proxy marks the selector as moving: its calls fail with 55006
#      until step 4 (clients retry);
#   2. on the source shard, once the writers in flight have committed (a
#      SHARE lock on the logs), one statement exports the selector: settings,
#      arms, codebook, grants, decision and reward logs (in log order), bases
#      (what retention absorbed), statistics reset, and its cascades
#      (decisions, observations, each arm's cascade state);
#   3. on the target shard, in one transaction, the selector is created
#      with them -- decisions, rewards, cascades and observations keep their
#      ids (unique across shards, set_server_id()), rewards go through the
#      reward trigger in their log order, as a restore does -- and
#      rebuild_state() derives every arm's state, so its scores equal the
#      source's rebuild (decision_scores() of its decisions re-derive from
#      the versions they recorded, which count rewards in log order, except
#      where a decision scored rewards of its own transaction: own_tx names
#      the source's); the cascade state is copied as it is (its fit follows
#      a schedule of the statements the observations came in), so cascade
#      scores are equal too;
#   4. the proxy places the selector on TO_PARTITION, and sends rewards for
#      its decisions there (model_select_proxy.moved_decisions: a reward for
#      an open one, decision_scores() of any);
#   5. the source drops it.
# A failure before step 4 puts the selector back on its source shard.
# Not moved: the learner's published versions (the target's learner
# publishes its own) and the latency figures of view stats (server memory).
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 SELECTOR TO_PARTITION" >&2; exit 2; }
SEL=$1
TO=$2
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ms_move.XXXXXX")
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT

# SQL on stdin (psql sets the variables :sel and :to there, not in -c)
proxy() { psql -X -q -A -t -v ON_ERROR_STOP=1 -v sel="$SEL" -v to="$TO"; }
shard() { psql -X -q -A -t -v ON_ERROR_STOP=1 -v sel="$SEL" -d "$1"; }

FROM=$(proxy <<<"SELECT model_select_proxy.shard_of(:'sel')")
FROM_DSN=$(proxy <<<"SELECT dsn FROM model_select_proxy.partitions() WHERE partition = $FROM")
TO_DSN=$(proxy <<<"SELECT dsn FROM model_select_proxy.partitions() WHERE partition = :'to'::int")
[ -n "$TO_DSN" ] || { echo "ms-move-selector: the cluster has no partition $TO" >&2; exit 1; }
[ "$FROM" != "$TO" ] || { echo "ms-move-selector: selector \"$SEL\" is on partition $TO already" >&2; exit 1; }

proxy >/dev/null <<<"INSERT INTO model_select_proxy.placement VALUES (:'sel', NULL)
                     ON CONFLICT (selector) DO UPDATE SET partition = NULL"
moved=0
# shellcheck disable=SC2317  # invoked via trap
restore() {
    if [ "$moved" = 0 ]; then
        proxy >/dev/null <<<"UPDATE model_select_proxy.placement SET partition = $FROM WHERE selector = :'sel'" || true
        echo "ms-move-selector: failed; \"$SEL\" stays on partition $FROM" >&2
    fi
    rm -rf "$WORK"
}
trap restore EXIT

shard "$FROM_DSN" >/dev/null <<SQL
BEGIN;
CREATE FUNCTION pg_temp.fail(code text, msg text) RETURNS void LANGUAGE plpgsql AS
    \$\$ BEGIN RAISE EXCEPTION '%', msg USING ERRCODE = code; END \$\$;
-- wait for the writers in flight (a route or reward that passed the proxy
-- before the mark): the export's snapshot is taken after them
LOCK TABLE model_select.decisions, model_select.rewards, model_select.cascade_decisions,
    model_select.cascade_observations IN SHARE MODE;
SELECT CASE WHEN NOT EXISTS (SELECT FROM model_select.selectors WHERE name = :'sel')
            THEN pg_temp.fail('42704', format('selector "%s" does not exist on partition $FROM', :'sel'))
       END;
-- (\copy does not interpolate psql variables: the export is made first)
CREATE TEMP TABLE export AS SELECT jsonb_build_object('selector', to_jsonb(s) || jsonb_build_object('owner', s.owner::text), 'arms', (SELECT jsonb_agg(to_jsonb(a) ORDER BY a.ordinal) FROM model_select.arms a WHERE a.selector_id = s.selector_id), 'codebook', (SELECT to_jsonb(c) FROM model_select.codebooks c WHERE c.selector_id = s.selector_id), 'grants', (SELECT jsonb_agg(jsonb_build_object('grantee', g.grantee::text, 'privilege', g.privilege)) FROM model_select.selector_grants g WHERE g.selector_id = s.selector_id), 'decisions', (SELECT jsonb_agg(to_jsonb(d) || jsonb_build_object('arm', a.name) ORDER BY d.decision_id) FROM model_select.decisions d JOIN model_select.arms a USING (arm_id) WHERE d.selector_id = s.selector_id), 'rewards', (SELECT jsonb_agg(to_jsonb(r) || jsonb_build_object('arm', a.name) ORDER BY r.tx, r.seq) FROM model_select.rewards r JOIN model_select.arms a USING (arm_id) WHERE r.selector_id = s.selector_id), 'bases', (SELECT jsonb_agg(to_jsonb(b) || jsonb_build_object('arm', a.name)) FROM model_select.arm_base b JOIN model_select.arms a USING (arm_id) WHERE b.selector_id = s.selector_id), 'stats_reset', (SELECT to_jsonb(x) FROM model_select.stats_resets x WHERE x.selector_id = s.selector_id), 'cascade_decisions', (SELECT jsonb_agg(to_jsonb(c) ORDER BY c.cascade_id) FROM model_select.cascade_decisions c WHERE c.selector_id = s.selector_id), 'cascade_observations', (SELECT jsonb_agg(to_jsonb(o) || jsonb_build_object('arm', a.name) ORDER BY o.obs_id) FROM model_select.cascade_observations o JOIN model_select.arms a USING (arm_id) WHERE o.selector_id = s.selector_id), 'cascade_state', (SELECT jsonb_agg(to_jsonb(c) || jsonb_build_object('arm', a.name)) FROM model_select.cascade_state c JOIN model_select.arms a USING (arm_id) WHERE c.selector_id = s.selector_id)) FROM model_select.selectors s WHERE s.name = :'sel';
\copy export TO '$WORK/selector.copy'
COMMIT;
SQL
[ -s "$WORK/selector.copy" ] || { echo "ms-move-selector: selector \"$SEL\" not found on partition $FROM" >&2; exit 1; }

shard "$TO_DSN" >/dev/null <<SQL
BEGIN;
CREATE FUNCTION pg_temp.fail(code text, msg text) RETURNS void LANGUAGE plpgsql AS
    \$\$ BEGIN RAISE EXCEPTION '%', msg USING ERRCODE = code; END \$\$;
CREATE TEMP TABLE doc (j jsonb) ON COMMIT DROP;
\copy doc FROM '$WORK/selector.copy'
-- readers fold the rewards; rebuild_state() below checkpoints once
SET LOCAL model_select.checkpoint_threshold = 0;
SELECT model_select.create_selector(s.name, s.dim,
           (SELECT array_agg(a->>'name' ORDER BY (a->>'ordinal')::int) FROM jsonb_array_elements(j->'arms') a),
           s.policy, s.kernel, s.settings, s.seed)
  FROM doc, jsonb_populate_record(NULL::model_select.selectors, j->'selector') s;
CREATE TEMP TABLE ids ON COMMIT DROP AS
SELECT sel.selector_id AS sid FROM model_select.selectors sel WHERE sel.name = :'sel';
-- the export's rows of a list that name their arm, with the target's selector and arm ids
CREATE FUNCTION pg_temp.arm_rows(key text) RETURNS SETOF jsonb LANGUAGE sql AS \$\$
    SELECT e || jsonb_build_object('selector_id', ids.sid, 'arm_id', a.arm_id)
      FROM doc, ids, jsonb_array_elements(nullif(doc.j -> key, 'null')) e, model_select.arms a
     WHERE a.selector_id = ids.sid AND a.name = e->>'arm'
\$\$;
UPDATE model_select.selectors t SET owner = (j#>>'{selector,owner}')::regrole, created_at = s.created_at
  FROM doc, jsonb_populate_record(NULL::model_select.selectors, j->'selector') s WHERE t.name = :'sel';
UPDATE model_select.arms t SET active = a.active, retired_at = a.retired_at, created_at = a.created_at
  FROM doc, jsonb_array_elements(j->'arms') e, jsonb_populate_record(NULL::model_select.arms, e) a, ids
 WHERE t.selector_id = ids.sid AND t.name = a.name;
INSERT INTO model_select.codebooks (selector_id, centroids, normalized, rows, fitted_at)
SELECT ids.sid, c.centroids, c.normalized, c.rows, c.fitted_at
  FROM doc, ids, jsonb_populate_record(NULL::model_select.codebooks, j->'codebook') c WHERE j->'codebook' <> 'null';
INSERT INTO model_select.selector_grants (selector_id, grantee, privilege)
SELECT ids.sid, (g->>'grantee')::regrole, g->>'privilege'
  FROM doc, ids, jsonb_array_elements(nullif(j->'grants', 'null')) g;
-- whole rows (the columns of this version of the extension), with the target's selector and arm ids
INSERT INTO model_select.decisions
SELECT d.* FROM pg_temp.arm_rows('decisions') e, jsonb_populate_record(NULL::model_select.decisions, e) d
 ORDER BY d.decision_id;
INSERT INTO model_select.arm_base
SELECT b.* FROM pg_temp.arm_rows('bases') e, jsonb_populate_record(NULL::model_select.arm_base, e) b;
-- through the reward trigger, in log order, as a restore writes the log: it
-- fills in the ids from the names and the decision, and tx and seq anew
INSERT INTO model_select.rewards
SELECT r.* FROM doc, jsonb_array_elements(nullif(j->'rewards', 'null')) WITH ORDINALITY AS x(e, i),
       LATERAL jsonb_populate_record(NULL::model_select.rewards, e) r
 ORDER BY x.i;
INSERT INTO model_select.stats_resets (selector_id, decision_id, reward_id, reset_at)
SELECT ids.sid, x.decision_id, x.reward_id, x.reset_at
  FROM doc, ids, jsonb_populate_record(NULL::model_select.stats_resets, j->'stats_reset') x WHERE j->'stats_reset' <> 'null';
-- cascades: decisions and observations with their ids, each arm's state as
-- it was; the observations were resolved and learned on the source, so they
-- go in without their triggers (replica role: superuser), as the state
-- that holds what they taught
INSERT INTO model_select.cascade_decisions
SELECT c.* FROM doc, ids, jsonb_array_elements(nullif(j->'cascade_decisions', 'null')) e,
       LATERAL jsonb_populate_record(NULL::model_select.cascade_decisions, e || jsonb_build_object('selector_id', ids.sid)) c
 ORDER BY c.cascade_id;
SET LOCAL session_replication_role = replica;
INSERT INTO model_select.cascade_observations
SELECT o.* FROM pg_temp.arm_rows('cascade_observations') e,
       jsonb_populate_record(NULL::model_select.cascade_observations, e) o
 ORDER BY o.obs_id;
INSERT INTO model_select.cascade_state
SELECT c.* FROM pg_temp.arm_rows('cascade_state') e, jsonb_populate_record(NULL::model_select.cascade_state, e) c;
SET LOCAL session_replication_role = origin;
SELECT model_select.rebuild_state(:'sel');
COMMIT;
SQL

# its decisions, which their id (the source's server number) no longer places
shard "$TO_DSN" <<SQL
CREATE TEMP TABLE moved_ids AS
SELECT d.decision_id FROM model_select.decisions d JOIN model_select.selectors s USING (selector_id) WHERE s.name = :'sel';
\\copy moved_ids TO '$WORK/decisions.copy'
SQL
proxy >/dev/null <<SQL
BEGIN;
CREATE TEMP TABLE moved_ids (decision_id bigint) ON COMMIT DROP;
\copy moved_ids FROM '$WORK/decisions.copy'
INSERT INTO model_select_proxy.moved_decisions (decision_id, partition) SELECT decision_id, :'to'::int FROM moved_ids
    ON CONFLICT (decision_id) DO UPDATE SET partition = excluded.partition, moved_at = excluded.moved_at;
UPDATE model_select_proxy.placement SET partition = :'to'::int WHERE selector = :'sel';
COMMIT;
SQL
moved=1
shard "$FROM_DSN" >/dev/null <<<"SELECT model_select.drop_selector(:'sel')"
echo "ms-move-selector: \"$SEL\" moved from partition $FROM to partition $TO"
