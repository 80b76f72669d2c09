#!/usr/bin/env bash
# Issue 13, the application example: examples/route_loop.py (psycopg) runs the
# loop of a real application over the committed slice of routerdc7_dev.csv
# (240 prompts, 7 models) — route, "call" the chosen model by reading its
# recorded score, reward by decision_id — and prints its learning curve.
# Checks: it runs to the end; every prompt has one decision and one reward;
# each reward is the recorded score of the model the decision chose for that
# prompt; the printed mean equals the log's; the state equals its rebuild.
# Then with --warm 80: the warm rewards are the slice's recorded scores.
set -euo pipefail
DB=ms_session_example
. "$(dirname "$0")/lib/common.bash"
HERE=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3

ms_setup || bail "set-up failed"
if ! "$PY" -c 'import psycopg' 2>/dev/null; then
    bail "python3-psycopg is not installed (scripts/ensure-deps.sh installs it)"
fi
out=$(PGDATABASE=$DB "$PY" "$HERE/examples/route_loop.py" "$HERE/examples/routerdc7_slice.csv" --every 80 2>&1) &&
    rc=0 || rc=$?
printf '%s\n' "$out" | sed 's/^/# /'
check "route_loop.py runs to the end (exit 0, got $rc)" eval '[ "$rc" -eq 0 ]'
curve_points() { printf '%s\n' "$out" | awk 'NF == 3 && ($1 == 80 || $1 == 160 || $1 == 240)' | wc -l; }
check "it prints the learning curve at 80, 160 and 240 prompts" eval '[ "$(curve_points)" -eq 3 ]'

q -c "CREATE TABLE slice (id int, category text, embedding real[], rewards real[], costs real[])"
q -c "\\copy slice FROM '$HERE/examples/routerdc7_slice.csv' CSV HEADER"
check "240 decisions and 240 rewards, one per decision" \
    is_true "SELECT (SELECT count(*) FROM model_select.decisions) = 240
                AND (SELECT count(DISTINCT decision_id) FROM model_select.rewards) = 240
                AND (SELECT count(*) FROM model_select.rewards) = 240"
# (some prompts share an embedding, hence EXISTS; the program parses the CSV's
# scores as float8, the table holds them as real)
check "each reward is the recorded score of the model chosen for that prompt" \
    is_true "SELECT count(*) = 240 FROM model_select.decisions d
               JOIN model_select.arms a ON a.arm_id = d.arm_id
               JOIN model_select.rewards r ON r.decision_id = d.decision_id
              WHERE EXISTS (SELECT 1 FROM slice s WHERE s.embedding::float8[] = COALESCE(d.context, d.context_real::float8[])
                                                    AND s.rewards[a.ordinal] = r.reward::real)"
printed=$(printf '%s\n' "$out" | sed -n 's/^router \([0-9.]*\);.*/\1/p')
check "it ends with a one-line verdict against the best single model" \
    eval 'printf "%s\n" "$out" | tail -n 1 | grep -Eq "^verdict: the router (beats|trails) the best single model"'
verdict_word=$(printf '%s\n' "$out" | awk '/^router / { r = $2 + 0; b = $6 + 0; print (r >= b ? "beats" : "trails") }')
check "the verdict ($verdict_word) agrees with the printed means" \
    eval 'printf "%s\n" "$out" | tail -n 1 | grep -q "the router $verdict_word "'
check "the printed mean reward equals the log's ($printed)" \
    is_true "SELECT round(avg(reward)::numeric, 4) = '$printed'::numeric FROM model_select.rewards"
rebuild_checks example_router

# --warm: the first 80 shuffled prompts loaded with warm_start(), every model
# scored, then the other 160 routed
out=$(PGDATABASE=$DB "$PY" "$HERE/examples/route_loop.py" "$HERE/examples/routerdc7_slice.csv" --every 80 \
          --warm 80 --policy lin_ucb --settings '{"alpha": 30, "intercept": 10, "eta": 0.5}' 2>&1) &&
    rc=0 || rc=$?
printf '%s\n' "$out" | sed 's/^/# /'
check "route_loop.py --warm 80 runs to the end (exit 0, got $rc)" eval '[ "$rc" -eq 0 ]'
check "it reports 560 warm rewards (80 prompts x 7 models)" eval 'grep -q "80 prompts, every model scored: 560 rewards" <<<"$out"'
check "560 rewards without a decision, 160 decisions with one reward each" \
    is_true "SELECT (SELECT count(*) FROM model_select.rewards WHERE decision_id IS NULL) = 560
                AND (SELECT count(*) FROM model_select.decisions) = 160
                AND (SELECT count(DISTINCT decision_id) FROM model_select.rewards) = 160"
check "every model got each warm prompt's recorded score" \
    is_true "SELECT count(*) = 560 FROM model_select.rewards r
               JOIN model_select.arms a ON a.arm_id = r.arm_id
              WHERE r.decision_id IS NULL
                AND EXISTS (SELECT 1 FROM slice s WHERE s.embedding::float8[] = r.context
                                                    AND s.rewards[a.ordinal] = r.reward::real)"
rebuild_checks example_router " (warm)"
finish
