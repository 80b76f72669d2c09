#!/usr/bin/env bash
# make bench-pgbench (and the last part of make bench-perf): one decision --
# read a prompt, route(), insert its reward -- through pgbench, against the
# same SQL work without the extension, in one throwaway cluster.
#
#   d = 384, 5 arms, 2,000 rewards per arm preloaded (synthetic_clusters),
#   selectors rff_ucb (features 128), lin_ucb, pak_ucb ("cap": 10000, so that
#   its arms stay below cap: every checkpoint appends rows), pak_ucb_cap
#   (pak_ucb with all defaults: cap 2,000, so its arms are at cap and compact
#   -- refactorise their newest 1,000 rewards -- once per 1,001 rewards);
#   prompts: 10,000 synthetic 384-d embeddings.  pak_ucb_cap runs a fixed
#   number of decisions instead of -T: MS_PGBENCH_CAP_DECISIONS (5,005 = one
#   compaction cycle of 1,001 rewards for each of the 5 arms, on average), so
#   its WAL per decision includes the compactions' share; the table says how
#   many compactions the run made.
#
#   baseline transaction:      BEGIN; INSERT INTO decisions_b(prompt_id, context, arm)
#                              SELECT id, emb, 'm1' FROM prompts WHERE id = :p
#                              RETURNING decision_id; INSERT INTO rewards_b ...; COMMIT;
#   model_select transaction:  BEGIN; SELECT decision_id FROM prompts,
#                              model_select.route(sel, emb) WHERE id = :p;
#                              INSERT INTO model_select.rewards(decision_id, reward) ...; COMMIT;
#
# Each run: CHECKPOINT, then pgbench -n -c C -j C -T $MS_PGBENCH_T (15 s) at
# C = 1 and 4; decisions/s = pgbench's tps (without connection time), WAL per
# decision = pg_current_wal_lsn() difference over the run / transactions.
# Prints one table: per policy and client count, decisions/s and WAL bytes per
# decision for model_select and the baseline, and their ratios.
#
# A second table: single select_model() calls (read a prompt and choose an arm,
# nothing logged) against the plain row read `SELECT emb FROM prompts WHERE id
# = :p`, at 1 and 2 clients: the per-call overhead of routing.
#
# Environment: MS_PGBENCH_T (seconds per run, 15), MS_PGBENCH_POLICIES
# ("rff_ucb lin_ucb pak_ucb pak_ucb_cap"), MS_PGBENCH_CLIENTS ("1 4"),
# MS_PGBENCH_READ_CLIENTS ("1 2"), MS_PGBENCH_CAP_DECISIONS (5005).
set -euo pipefail
cd "$(dirname "$0")/.."
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell}
if [ -z "${MS_PGBENCH_IN_CLUSTER:-}" ]; then
    MS_PGBENCH_IN_CLUSTER=1 exec scripts/with-cluster.sh bench/pgbench.sh
fi

T=${MS_PGBENCH_T:-15}
POLICIES=${MS_PGBENCH_POLICIES:-rff_ucb lin_ucb pak_ucb pak_ucb_cap}
CAP_DECISIONS=${MS_PGBENCH_CAP_DECISIONS:-5005}
CLIENTS=${MS_PGBENCH_CLIENTS:-1 4}
READ_CLIENTS=${MS_PGBENCH_READ_CLIENTS:-1 2}
DB=ms_pgbench
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ms_pgbench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" "$@"; }

createdb "$DB"
t0=$(date +%s)
q >/dev/null <<'SQL'
CREATE EXTENSION model_select;
CREATE TABLE prompts (id int PRIMARY KEY, emb float8[] NOT NULL);
INSERT INTO prompts SELECT round, context FROM model_select.synthetic_clusters(10000, 384, 5, NULL, 7);
-- baseline: the same rows without the extension
CREATE TABLE decisions_b (decision_id bigserial PRIMARY KEY, prompt_id int NOT NULL,
                          context float8[] NOT NULL, arm text NOT NULL,
                          created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE rewards_b (reward_id bigserial PRIMARY KEY,
                        decision_id bigint NOT NULL UNIQUE REFERENCES decisions_b,
                        reward float8 NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE preload AS
SELECT round, context, reward FROM model_select.synthetic_clusters(2000, 384, 5, NULL, 8);
-- Compactions a default pak_ucb arm (cap 2,000) has made by its n-th reward:
-- at rewards 2,001, 3,002, 4,003, ... (docs/policies.md).
CREATE FUNCTION compactions(sel text) RETURNS bigint LANGUAGE sql AS $f$
  SELECT coalesce(sum(CASE WHEN n > 2000 THEN (n - 2001) / 1001 + 1 ELSE 0 END), 0)::bigint
    FROM (SELECT count(*) AS n FROM model_select.rewards WHERE selector = sel GROUP BY arm) a
$f$;
SQL
for pol in $POLICIES; do
    case $pol in
        rff_ucb) settings='{"features": 128}' ;;
        pak_ucb) settings='{"cap": 10000}' ;;
        *) settings='{}' ;;
    esac
    q -c "SELECT model_select.create_selector('$pol', 384, ARRAY['m1','m2','m3','m4','m5'], '${pol%_cap}', NULL, '$settings', 1)" >/dev/null
    for a in 1 2 3 4 5; do
        q -c "INSERT INTO model_select.rewards(selector, arm, context, reward)
              SELECT '$pol', 'm$a', context, reward[$a] FROM preload ORDER BY round"
    done
done
q -c "VACUUM ANALYZE"
echo "set-up (prompts, ${POLICIES// /, } with 2,000 rewards per arm): $(( $(date +%s) - t0 )) s"

cat >"$WORK/baseline.sql" <<'SQL'
\set p random(1, 10000)
BEGIN;
INSERT INTO decisions_b(prompt_id, context, arm) SELECT id, emb, 'm1' FROM prompts WHERE id = :p
RETURNING decision_id \gset
INSERT INTO rewards_b(decision_id, reward) VALUES (:decision_id, random());
COMMIT;
SQL
cat >"$WORK/read.sql" <<'SQL'
\set p random(1, 10000)
SELECT emb FROM prompts WHERE id = :p;
SQL
for pol in $POLICIES; do
    cat >"$WORK/select_$pol.sql" <<SQL
\set p random(1, 10000)
SELECT model_select.select_model('$pol', emb) FROM prompts WHERE id = :p;
SQL
    cat >"$WORK/$pol.sql" <<SQL
\\set p random(1, 10000)
BEGIN;
SELECT r.decision_id FROM prompts p, model_select.route('$pol', p.emb) r WHERE p.id = :p \\gset
INSERT INTO model_select.rewards(decision_id, reward) VALUES (:decision_id, random());
COMMIT;
SQL
done

# run NAME CLIENTS -> "tps wal_bytes_per_decision" (or "n/a n/a")
run() {
    local name=$1 c=$2 lsn0 lsn1 tps txns length=(-T "$T")
    # at cap: a fixed number of decisions, so that the run spans compactions
    [ "$name" != pak_ucb_cap ] || length=(-t $(( (CAP_DECISIONS + c - 1) / c )))
    q -c "CHECKPOINT"
    lsn0=$(q -c "SELECT pg_current_wal_lsn()")
    if ! pgbench -n -d "$DB" -c "$c" -j "$c" "${length[@]}" -f "$WORK/$name.sql" \
            >"$WORK/$name.$c.out" 2>"$WORK/$name.$c.err"; then
        echo "pgbench $name -c $c failed: $(grep -m 1 -i error "$WORK/$name.$c.err")" >&2
    fi
    lsn1=$(q -c "SELECT pg_current_wal_lsn()")
    tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$WORK/$name.$c.out")
    txns=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$WORK/$name.$c.out")
    if [ -n "$tps" ] && [ "${txns:-0}" -gt 0 ]; then
        echo "$tps $(q -c "SELECT round(pg_wal_lsn_diff('$lsn1', '$lsn0') / $txns)")"
    else
        echo "n/a n/a"
    fi
}

declare -A res compacted
for c in $CLIENTS; do
    res[baseline,$c]=$(run baseline "$c")
    echo "baseline, $c client(s): ${res[baseline,$c]% *} decisions/s, ${res[baseline,$c]#* } WAL bytes/decision"
    for pol in $POLICIES; do
        k0=$(q -c "SELECT compactions('$pol')")
        res[$pol,$c]=$(run "$pol" "$c")
        compacted[$pol,$c]=$(( $(q -c "SELECT compactions('$pol')") - k0 ))
        echo "$pol, $c client(s): ${res[$pol,$c]% *} decisions/s, ${res[$pol,$c]#* } WAL bytes/decision"
    done
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.3f", a / b; else printf "n/a" }'; }
echo
echo "One decision (read prompt + route() + reward INSERT) vs the same SQL work without the extension;"
echo "d = 384, 5 arms, 2,000 rewards per arm, pgbench -T $T per run.  Targets: ratio >= 0.5 (rff/lin),"
echo "WAL ratio <= 3, pak_ucb WAL <= 32 kB per decision.  pak_ucb runs with cap 10000, so its arms stay"
echo "below cap: a checkpoint appends rows (arm_state_rows).  pak_ucb_cap has all defaults (cap 2000):"
echo "its arms are at cap and compact once per 1,001 rewards (a checkpoint then rewrites the factor);"
echo "it runs $CAP_DECISIONS decisions per client count, so its WAL includes their share."
fmt='| %-11s | %7s | %11s | %10s | %6s | %12s | %11s | %9s |\n'
printf "\n$fmt" policy clients "decisions/s" "baseline/s" ratio "WAL B/dec." "baseline B" "WAL ratio"
printf "$fmt" ----------- ------: ----------: ---------: -----: -----------: ----------: --------:
num() { awk -v a="$1" 'BEGIN { if (a ~ /^[0-9.]+$/) printf "%.0f", a; else printf "%s", a }'; }
for pol in $POLICIES; do
    for c in $CLIENTS; do
        read -r mt mw <<<"${res[$pol,$c]}"
        read -r bt bw <<<"${res[baseline,$c]}"
        printf "$fmt" "$pol" "$c" "$(num "$mt")" "$(num "$bt")" "$(ratio "$mt" "$bt")" \
            "$(num "$mw")" "$(num "$bw")" "$(ratio "$mw" "$bw")"
    done
done
for c in $CLIENTS; do
    [ -z "${compacted[pak_ucb_cap,$c]:-}" ] ||
        echo "pak_ucb_cap, $c client(s): ${compacted[pak_ucb_cap,$c]} compactions during the run"
done

for c in $READ_CLIENTS; do
    res[read,$c]=$(run read "$c")
    for pol in $POLICIES; do
        res[select_$pol,$c]=$(run "select_$pol" "$c")
    done
done
echo
echo "Single select_model() calls (read the prompt, choose an arm) vs the plain row read; target >= 0.85."
fmt='| %-11s | %7s | %14s | %9s | %6s |\n'
printf "\n$fmt" policy clients "select_model/s" "read/s" ratio
printf "$fmt" ----------- ------: -------------: --------: -----:
for pol in $POLICIES; do
    for c in $READ_CLIENTS; do
        read -r mt _ <<<"${res[select_$pol,$c]}"
        read -r bt _ <<<"${res[read,$c]}"
        printf "$fmt" "$pol" "$c" "$(num "$mt")" "$(num "$bt")" "$(ratio "$mt" "$bt")"
    done
done
