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
 * reports one, N the number of those rewards, B the budget.  Rewards
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

#include "model/reward_value.h"
#include "routing/decide.h"

/* The cost weight λ in force for a selector's next decision. */
double
pacer_lambda(const Selector *sel)
{
	const SelectorConfig *cfg = &sel->cfg;
	double		cost = 0.0;
	double		decisions = 0.0;
	double		overspend;

	if (cfg->budget <= 0)
		return cfg->cost_weight;
	for (int i = 0; i < sel->narms; i++)
	{
		cost += sel->arms[i].spend_sum;
		decisions += (double) sel->arms[i].spend_n;
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
