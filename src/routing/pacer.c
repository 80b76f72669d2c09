/*
 * pacer.c — the budget's pacer: the cost weight λ in force for a decision
 * when a selector has a target mean cost per decision (setting budget).
 *
 * Dual ascent on the constraint "mean cost per decision <= budget" with the
 * constraint summed over the whole log (an integral controller):
 *
 *   λ = max(0, scale · (C − B·N) / (pace · B)),   scale = (reward_max − reward_min) / B
 *
 * C is the cost of every reward of one of the selector's decisions that
 * reports one, N the number of those rewards, B the budget.  Decisions
 * routed but not rewarded yet count too, at their arm's mean cost: each of
 * the selector's last pending_horizon decisions without a reward adds the
 * mean cost of its arm to C and 1 to N (an arm without a logged cost adds
 * nothing: its cost is unknown).  Without them a reward that arrives late
 * is spend the pacer cannot see, and every decision of the delay routes as
 * if the budget were untouched (1.16–1.24× the budget with rewards 1,000
 * decisions late).  A decision whose reward never comes leaves the count
 * once pending_horizon newer decisions are logged: it was spent, but the
 * rewarded decisions (C, N) are the sample the whole log is judged by.  Rewards
 * without a decision (warm_start()'s outcome tables, or rewards the
 * application logs by arm and context) teach the arms their mean cost but
 * are no spend: a warm start cannot use up, or fake, a budget.  λ grows with the overspend C − B·N
 * and reaches `scale` — the weight at which an arm costing B loses the whole
 * reward range — after `pace` decisions' worth of overspend; it falls back
 * to 0 as spend drops below the budget.  Each decision subtracts λ times an
 * arm's mean cost from its ucb, so the arms themselves learn rewards only.
 *
 * Why the sum and not the usual step-by-step projected update: λ must be a
 * function of the reward log, like every arm's state, so that rebuild_state,
 * checkpoints and every backend agree on it.  Sums over the log do not
 * depend on the order in which rewards commit; a projected update would.
 * The price: spend below the budget is credit that later decisions may use
 * (the mean over the whole log is what is kept).  λ is capped at the
 * largest cost_weight (COST_WEIGHT_MAX).
 */
#include "postgres.h"

#include "catalog/pg_type.h"

#include "model/reward_value.h"
#include "pg/spi_util.h"
#include "routing/decide.h"

/* The cost weight λ in force for a selector's next decision. */
double
pacer_lambda(const Selector *sel)
{
	const SelectorConfig *cfg = &sel->cfg;
	double		cost = 0.0;
	double		decisions = 0.0;
	double		overspend;

	if (sel->lambda_logged)
		return sel->lambda;
	if (cfg->budget <= 0)
		return cfg->cost_weight;
	for (int i = 0; i < sel->narms; i++)
	{
		const ArmInfo *arm = &sel->arms[i];

		cost += arm->spend_sum;
		decisions += (double) arm->spend_n;
		if (arm->pending_n > 0 && arm->cost_n > 0)
		{
			cost += (double) arm->pending_n * (arm->cost_sum / (double) arm->cost_n);
			decisions += (double) arm->pending_n;
		}
	}
	overspend = cost - cfg->budget * decisions;
	if (!(overspend > 0))
		return 0.0;

	/*
	 * A tiny budget makes scale overflow, a huge spend the sum: capped at the
	 * largest cost_weight, λ stays finite (no NaN from ∞ · 0 for a free arm)
	 */
	return Min((cfg->reward_max - cfg->reward_min) / cfg->budget * overspend / (cfg->pace * cfg->budget),
			   COST_WEIGHT_MAX);
}

/*
 * With a budget: every learned arm's ucb less λ times its mean cost (an arm
 * without a logged cost counts as free; an untried arm keeps +Infinity).
 */
void
pacer_apply(const Selector *sel, double lambda, ArmScore *scores)
{
	if (sel->cfg.budget <= 0 || lambda == 0)
		return;
	for (int i = 0; i < sel->narms; i++)
	{
		const ArmInfo *arm = &sel->arms[i];

		if (arm->model != NULL && arm->cost_n > 0)
			scores[i].ucb -= lambda * (arm->cost_sum / (double) arm->cost_n);
	}
}

/*
 * Each arm's decisions among the selector's last pending_horizon (by
 * created_at, then decision_id: the same set in every backend under the
 * same snapshot) that have no reward: what the pacer counts at the arm's
 * mean cost.  With count_pending the last D ≤ 2·pending_horizon decisions,
 * split into the newest h = min(pending_horizon, ⌈D/2⌉) and those before:
 * what awaited_set() estimates the awaited rewards from.  A read of the logs
 * under the caller's snapshot, so it is a function of what is logged --
 * committed decisions and rewards, and the transaction's own -- with nothing
 * kept that a crash, a rollback or rebuild_state() could leave out of step.
 * Run as the extension owner, SPI connected (selector_load.c); only with a
 * budget or count_pending.
 */
void
pacer_pending_load(Selector *sel)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[3] = {INT4OID, INT4OID, INT4OID};
	Datum		args[3];
	int32		horizon = sel->cfg.pending_horizon;
	int64		sums[3] = {0, 0, 0};
	uint64		n;

	if ((sel->cfg.budget <= 0 && !sel->cfg.count_pending) || horizon <= 0)
		return;
	args[0] = Int32GetDatum(sel->cfg.selector_id);
	args[1] = Int32GetDatum(horizon);
	args[2] = Int32GetDatum(sel->cfg.count_pending ? 2 * horizon : horizon);
	n = spi_execute(spi_plan(&plan,
							 "SELECT arm_id,"
							 " count(*) FILTER (WHERE rk OPERATOR(pg_catalog.<=) $2 AND NOT rewarded),"
							 " count(*) FILTER (WHERE rk OPERATOR(pg_catalog.<=) h AND NOT rewarded),"
							 " count(*) FILTER (WHERE rk OPERATOR(pg_catalog.<=) h AND rewarded),"
							 " count(*) FILTER (WHERE rk OPERATOR(pg_catalog.>) h),"
							 " count(*) FILTER (WHERE rk OPERATOR(pg_catalog.>) h AND rewarded) FROM"
							 " (SELECT d.arm_id, pg_catalog.row_number() OVER w AS rk,"
							 "         LEAST($2, (pg_catalog.count(*) OVER () OPERATOR(pg_catalog.+) 1)"
							 "                              OPERATOR(pg_catalog./) 2) AS h,"
							 "         EXISTS (SELECT FROM model_select.rewards r"
							 "                  WHERE r.decision_id OPERATOR(pg_catalog.=) d.decision_id) AS rewarded"
							 "    FROM (SELECT decision_id, arm_id, created_at FROM model_select.decisions"
							 "           WHERE selector_id OPERATOR(pg_catalog.=) $1"
							 "           ORDER BY created_at DESC, decision_id DESC LIMIT $3) d"
							 "  WINDOW w AS (ORDER BY d.created_at DESC, d.decision_id DESC)) x"
							 " GROUP BY arm_id",
							 3, types),
					args, NULL, true, 0, SPI_OK_SELECT, "the pending decisions of selector \"%s\"", sel->name);
	for (uint64 r = 0; r < n; r++)
	{
		HeapTuple	row = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		int32		arm_id = spi_int32(row, desc, 1);

		for (int k = 0; k < 3; k++)
			sums[k] += spi_int64(row, desc, k + 4);
		for (int i = 0; i < sel->narms; i++)
			if (sel->arms[i].arm_id == arm_id)
			{
				sel->arms[i].pending_n = spi_int64(row, desc, 2);
				sel->arms[i].awaited = (double) spi_int64(row, desc, 3);
			}
	}
	awaited_set(sel, sums[0], sums[1], sums[2]);
}
