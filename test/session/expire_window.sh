#!/usr/bin/env bash
# decision_ttl's expiry scans (src/learning/retention.c, expire_decisions()):
# a process's first pass over a selector scans its whole log; its later
# passes only the decisions created since the last pass's cutoff, so a log
# of rewarded decisions (which never expire) is not read again at every
# pass.  A session R runs maintain() again and again, as the learner does:
#   - its first pass deletes every expired decision without a reward;
#   - decisions that come of age between two passes are deleted by the next
#     one (the range moves with the cutoff, it does not skip them);
#   - a decision that becomes visible with an old created_at (as a restore
#     or a transaction open across a pass makes) is left by R's next pass,
#     whose scan starts at its last cutoff, and deleted by a process's
#     first, full scan (here a new session's).
# (The cost: 88 ms for a first pass over 100,000 rewarded decisions, then
# 0.1-0.3 ms a pass; before, every pass read them all.)
set -euo pipefail
DB=ms_session_expire_window
. "$(dirname "$0")/lib/common.bash"

ms_setup || bail "set-up failed"
q >/dev/null <<'SQL' || bail "creating the selector and its log failed"
SELECT model_select.create_selector('ttl', 4, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL, '{"decision_ttl": 3600}', 1);
-- 20,000 decisions two hours old and more, in time order, every 100th without a reward
INSERT INTO model_select.decisions(selector_id, arm_id, context, score, created_at)
SELECT s.selector_id, a.arm_id, ARRAY[random(), random(), random(), random()], 0,
       now() - make_interval(secs => 7200 + 20000 - g)
  FROM generate_series(1, 20000) g
  JOIN model_select.selectors s ON s.name = 'ttl'
  JOIN model_select.arms a ON a.selector_id = s.selector_id AND a.ordinal = 1 + g % 3
 ORDER BY g;
INSERT INTO model_select.rewards(decision_id, reward)
SELECT decision_id, random() FROM model_select.decisions WHERE decision_id % 100 <> 0;
VACUUM ANALYZE model_select.decisions, model_select.rewards;
CREATE FUNCTION unrewarded() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM model_select.decisions d
   WHERE NOT EXISTS (SELECT FROM model_select.rewards r WHERE r.decision_id = d.decision_id) $$;
CREATE FUNCTION add_unrewarded(n int, age_s float8) RETURNS void LANGUAGE sql AS $$
  INSERT INTO model_select.decisions(selector_id, arm_id, context, score, created_at)
  SELECT s.selector_id, a.arm_id, ARRAY[0.1, 0.2, 0.3, 0.4], 0, now() - make_interval(secs => age_s)
    FROM generate_series(1, n), model_select.selectors s
    JOIN model_select.arms a ON a.selector_id = s.selector_id AND a.ordinal = 1
   WHERE s.name = 'ttl' $$;
SQL

coproc R { psql -X -q -A -t -v VERBOSITY=verbose -d "$DB" 2>&1; }
MS_BG_PIDS+=("$R_PID")
r_in=${R[1]}
r_out=${R[0]}

before=$(q -c "SELECT unrewarded()")
rq "SELECT model_select.maintain('ttl');" >/dev/null
after=$(q -c "SELECT unrewarded()")
check "R's first maintain() deletes the $before expired decisions without a reward (left: $after)" \
    eval '[ "$before" = 200 ] && [ "$after" = 0 ]'

# 30 decisions that come of age 3 seconds from now, and 30 that stay young
q -c "SELECT add_unrewarded(30, 3600 - 3)" -c "SELECT add_unrewarded(30, 60)" >/dev/null
rq "SELECT model_select.maintain('ttl');" >/dev/null
young=$(q -c "SELECT unrewarded()")
check "a pass before they come of age keeps them ($young)" test "$young" = 60
wait_for "the 30 decisions to be older than decision_ttl" \
    "SELECT now() - interval '3600 s' > (SELECT min(created_at) FROM model_select.decisions d
      WHERE NOT EXISTS (SELECT FROM model_select.rewards r WHERE r.decision_id = d.decision_id))"
rq "SELECT model_select.maintain('ttl');" >/dev/null
left=$(q -c "SELECT unrewarded()")
check "R's next pass deletes the 30 that came of age and keeps the 30 young ones ($left left)" test "$left" = 30

# an old decision that becomes visible now, as a restored one would: R's
# scans start at its last cutoff, so they leave it; a full scan does not
q -c "SELECT add_unrewarded(5, 9000)" >/dev/null
rq "SELECT model_select.maintain('ttl');" >/dev/null
left=$(q -c "SELECT unrewarded()")
check "R's next pass scans only from its last cutoff: it leaves 5 old decisions that became visible since ($left left)" \
    test "$left" = 35
q -c "SELECT model_select.maintain('ttl')" >/dev/null
left=$(q -c "SELECT unrewarded()")
check "a new session's first pass scans the whole log and deletes them ($left left)" test "$left" = 30

exec {r_in}>&-
close_sessions
finish
