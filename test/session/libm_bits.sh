#!/usr/bin/env bash
# Same bits on every CPU, end to end: the scores of selectors whose models
# call elementary functions (pak_ucb with the rbf, laplacian, Matérn and
# polynomial kernels, rff_ucb with rbf and laplacian features, lin_ucb
# discounted on the arm's and on the selector's clock) at 60 stored probes, from a server as its CPU has it and from the
# same server restarted with glibc's FMA, AVX and AVX2 paths masked
# (GLIBC_TUNABLES), under which glibc's exp, sin and cos take their SSE2
# variants, whose last bits differ: a standby on a CPU or VM without FMA.
# Not one score may move (with glibc's functions, 4 of the 1,440 rows did).  The premise
# is checked too: the server's own exp() gives other bits under the mask
# (skipped where the CPU has no FMA, and both runs take the SSE2 paths).
#
# Uses the PostgreSQL binaries of PG_BINDIR, or of `pg_config --bindir`.
set -euo pipefail
DB=ms_session_libm
. "$(dirname "$0")/lib/own_cluster.bash"
MS_EXTRA_CLEANUP='cluster_stop_all'
. "$(dirname "$0")/lib/common.bash"

MASK=glibc.cpu.hwcaps=-AVX2,-FMA,-FMA4,-AVX
own_server "$(free_port $(( ${PGPORT:-55500} + 210 )))"

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selectors failed"
SELECT model_select.create_selector('lb_rbf', 3, ARRAY['a','b','c'], 'pak_ucb', 'rbf', '{}');
SELECT model_select.create_selector('lb_lap', 3, ARRAY['a','b','c'], 'pak_ucb', 'laplacian', '{}');
SELECT model_select.create_selector('lb_mat', 3, ARRAY['a','b','c'], 'pak_ucb', 'matern', '{"nu": 1.5}');
SELECT model_select.create_selector('lb_poly', 3, ARRAY['a','b','c'], 'pak_ucb', 'poly', '{"degree": 3}');
SELECT model_select.create_selector('lb_rff', 3, ARRAY['a','b','c'], 'rff_ucb', 'rbf', '{"features": 64}');
SELECT model_select.create_selector('lb_rffl', 3, ARRAY['a','b','c'], 'rff_ucb', 'laplacian', '{"features": 64}');
SELECT model_select.create_selector('lb_lin', 3, ARRAY['a','b','c'], 'lin_ucb', NULL, '{"discount": 0.97}');
SELECT model_select.create_selector('lb_linc', 3, ARRAY['a','b','c'], 'lin_ucb', NULL, '{"discount": 0.97, "clock": "selector"}');
-- contexts and probes are stored: computed again under the mask, SQL's own sin() would differ
CREATE TABLE probes AS
SELECT i, ARRAY[sin(2 * i), cos(3 * i), 0.1 * i - 3]::float8[] AS c FROM generate_series(1, 60) i;
INSERT INTO model_select.rewards(selector, arm, context, reward)
SELECT s, (ARRAY['a','b','c'])[1 + i % 3], ARRAY[sin(i), cos(i), sin(0.3 * i)]::float8[], (1 + sin(0.7 * i)) / 2
  FROM generate_series(1, 150) i, unnest(ARRAY['lb_rbf', 'lb_lap', 'lb_mat', 'lb_poly', 'lb_rff', 'lb_rffl', 'lb_lin', 'lb_linc']) s
 ORDER BY i, s;
SELECT model_select.checkpoint(s) FROM unnest(ARRAY['lb_rbf', 'lb_lap', 'lb_mat', 'lb_poly', 'lb_rff', 'lb_rffl', 'lb_lin', 'lb_linc']) s;
SQL

SCORES="SELECT s, p.i, x.arm, x.mean, x.width, x.ucb
          FROM unnest(ARRAY['lb_rbf', 'lb_lap', 'lb_mat', 'lb_poly', 'lb_rff', 'lb_rffl', 'lb_lin', 'lb_linc']) s, probes p,
               LATERAL model_select.scores(s, p.c) x ORDER BY 1, 2, 3"
# glibc's exp over a million arguments, as a digest (the premise)
GLIBC_EXP="SELECT md5(string_agg(exp(-20 * i / 1e6::float8)::text, ',' ORDER BY i)) FROM generate_series(1, 1000000) i"
q -c "$SCORES" > "$MS_WORK/plain.scores"
plain_exp=$(q -c "$GLIBC_EXP")

as_server "$BINDIR/pg_ctl" -D "$CL/data" -m fast -w stop >/dev/null
GLIBC_TUNABLES=$MASK start_server || bail "the server failed to start under $MASK: $(tail -n 5 "$CL/data.log")"
q -c "$SCORES" > "$MS_WORK/masked.scores"
masked_exp=$(q -c "$GLIBC_EXP")

if [ "$plain_exp" != "$masked_exp" ]; then
    check "under $MASK the server's own exp() gives other bits" true
else
    skip "under $MASK the server's own exp() gives other bits" "this CPU takes glibc's SSE2 paths either way"
fi
moved=$(diff "$MS_WORK/plain.scores" "$MS_WORK/masked.scores" | grep -c '^<' || true)
check "no score moves under the mask ($(wc -l < "$MS_WORK/plain.scores") rows; $moved moved)" test "$moved" = 0
check "... and they are not empty" test "$(wc -l < "$MS_WORK/plain.scores")" = 1440
finish
