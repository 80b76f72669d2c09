/*
 * pacer.c — the budget's pacer: the cost weight λ in force for a decision
 * when a selector has a target mean cost per decision (setting budget).
 *
 * Dual ascent on the constraint "mean cost per decision <= budget" with the
 * constraint summed over the whole log (an integral controller), from the
 * level the last decisions were priced at:
 *
 *   λ = max(0, λ̄ + scale · (C − B·N) / (pace · B)),   scale = (reward_max − reward_min) / B
 *
 * λ̄ is the mean cost weight that the selector's last pending_horizon
 * decisions logged (0 without them), each taken at most `scale`: a price at
 * which an arm costing B already loses the whole reward range, which the
 * overspend term can undo within a window of pace decisions (a level that
 * could reach the cap of λ would keep itself there).  It holds the level, so the
 * integral term only corrects it: without λ̄ the overspend C − B·N itself
 * had to hold the level, a standing overspend inversely proportional to the
 * step λ takes per decision, and a step small enough not to toss the price
 * between prompts (which cost 0.8 points of GPT-4's quality at 25% of its
 * cost on RouteLLM, against a fixed λ that meets the budget) overspent short
 * passes by 1.4%.  With it the overspend returns to 0 and the step can be
 * small (pace 1000).
 *
 * C is the cost of every reward of one of the selector's decisions that
 * reports one, N the number of those rewards, B the budget.  Decisions
 * routed but not rewarded yet count too: each of the selector's last
 * pending_horizon decisions without a reward adds to C the cost it logged as
 * expected (decisions.expected_cost, the cost model's) or else the mean cost
 * of its arm, and 1 to N (an arm without a logged cost adds nothing: its
 * cost is unknown).  Without them a reward that arrives late
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
 * arm's cost from its ucb (its cost model's at the context, else its mean
 * cost), so the arms themselves learn rewards only.
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

#include "access/xact.h"
#include "utils/snapmgr.h"

#include "learning/fold.h"
#include "model/reward_value.h"
#include "routing/decide.h"
#include "routing/pacer_window.h"

/* A logged cost weight as the pacer's level λ̄ counts it: at most scale. */
double
pacer_level(const SelectorConfig *cfg, double cost_weight)
{
	return Min(cost_weight, (cfg->reward_max - cfg->reward_min) / cfg->budget);
}

/* The cost weight λ in force for a selector's next decision. */
double
pacer_lambda(const Selector *sel)
{
	const SelectorConfig *cfg = &sel->cfg;
	double		cost = 0.0;
	double		decisions = 0.0;
	double		overspend;
	double		lambda;

	if (sel->lambda_logged)
		return sel->lambda;
	if (cfg->budget <= 0)
		return cfg->cost_weight;
	for (int i = 0; i < sel->narms; i++)
	{
		const ArmInfo *arm = &sel->arms[i];
		int64		unpriced = arm->pending_n - arm->pending_priced;

		cost += arm->spend_sum;
		decisions += (double) arm->spend_n;
		/* the pending at the cost they were expected to cost, or at the arm's mean */
		cost += arm->pending_cost;
		decisions += (double) arm->pending_priced;
		cost += arm->unfolded_spend;
		decisions += (double) arm->unfolded_spend_n;
		if (unpriced > 0 && arm->cost_n > 0)
		{
			cost += (double) unpriced * (arm->cost_sum / (double) arm->cost_n);
			decisions += (double) unpriced;
		}
	}
	overspend = cost - cfg->budget * decisions;
	lambda = sel->window_lambda +
		(cfg->reward_max - cfg->reward_min) / cfg->budget * overspend / (cfg->pace * cfg->budget);
	if (!(lambda > 0))
		return 0.0;

	/*
	 * A tiny budget makes scale overflow, a huge spend the sum: capped at the
	 * largest cost_weight, λ stays finite (no NaN from ∞ · 0 for a free arm)
	 */
	return Min(lambda, COST_WEIGHT_MAX);
}

/*
 * With a budget, the cost the pacer prices learned arm i at (false: none):
 * the cost its cost model predicts for the context of its score
 * (cost_model), else its mean cost; none for an arm without a logged cost
 * (it counts as free) or without rewards.
 */
bool
pacer_price(const Selector *sel, const ArmScore *score, int i, double *cost)
{
	const ArmInfo *arm = &sel->arms[i];

	if (sel->cfg.budget <= 0 || arm->model == NULL)
		return false;
	if (sel->cfg.learns_cost)
		*cost = score->cost;
	else if (arm->cost_n > 0)
		*cost = arm->cost_sum / (double) arm->cost_n;
	else
		return false;
	return true;
}

/* With a budget: every priced arm's ucb less λ times its price (an untried arm keeps +Infinity). */
void
pacer_apply(const Selector *sel, double lambda, ArmScore *scores)
{
	double		cost;

	if (sel->cfg.budget <= 0 || lambda == 0)
		return;
	for (int i = 0; i < sel->narms; i++)
		if (pacer_price(sel, &scores[i], i, &cost))
			scores[i].ucb -= lambda * cost;
}

/*
 * The cost a decision of arm chosen logs as expected (decisions.expected_cost):
 * with the cost model, the cost it predicted for the context; false (NULL)
 * without, and for an arm without rewards, which counts at its mean cost.
 */
bool
pacer_expected_cost(const Selector *sel, const ArmScore *scores, int chosen, double *cost)
{
	return sel->cfg.learns_cost && pacer_price(sel, &scores[chosen], chosen, cost);
}

/* Does the selector count its pending decisions (a budget, count_pending)? */
static bool
pacer_counts_pending(const SelectorConfig *cfg)
{
	return (cfg->budget > 0 || cfg->count_pending) && cfg->pending_horizon > 0;
}

/*
 * Versioned (the arms score the learner's versions), does arm's model hold
 * reward, a reward of one of its decisions in the window?  Yes if the prefix
 * of the arm's log it scores reaches that far, or the reward is our
 * transaction's (folded on top).  A reward it does not hold yet is counted
 * as spend from the window: so each decision read counts once, as a reward
 * or as pending, whatever the learner has folded (else a reward read but not
 * folded yet left the count altogether, and λ hung on the learner's lag).
 */
static bool
pacer_holds(const ArmInfo *arm, const WindowReward *reward, FullTransactionId mine)
{
	LogPosition at = {reward->tx, reward->seq};
	LogPosition prefix = {arm->prefix_tx, arm->prefix_seq};

	return log_position_cmp(at, prefix) <= 0 ||
		(FullTransactionIdIsValid(mine) && FullTransactionIdEquals(reward->tx, mine));
}

/*
 * Each arm's decisions among the selector's last pending_horizon (by
 * created_at, then decision_id: the same set in every backend under the
 * same snapshot) that have no reward, and the sum of the expected costs those
 * that logged one logged (newest first): what the pacer counts; and, with a budget, the mean cost weight they logged, the
 * pacer's λ̄ (summed newest first, as replay_pending.c does).  With count_pending the last
 * D ≤ 2·pending_horizon decisions,
 * split into the newest h = min(pending_horizon, ⌈D/2⌉) and those before:
 * what awaited_set() estimates the awaited rewards from.  The window comes
 * from pacer_window(): read under the caller's snapshot, so a function of
 * what is logged -- committed decisions and rewards, and the transaction's
 * own -- with nothing kept that a crash, a rollback or rebuild_state() could
 * leave out of step; or, with reuse (selector_load.c: where the learner
 * serves the database, so that decisions have bounded staleness, also for a
 * clock that ages, whose arms are folded exactly; and on a standby), from the
 * window the backend keeps (pacer_window.c).  Versioned, C and N are the
 * versions' (and the transaction's own rewards'), so a reward the window
 * read that a version does not hold yet counts from the window, at its cost
 * (pacer_holds()), and the window is read under the newest snapshot, which
 * sees every reward a version holds.  What that misses: the reward of a
 * decision older than the window that the learner has not folded yet (an
 * older transaction holds it back), until it does.
 * Run as the extension owner (selector_load.c); only with a budget or
 * count_pending.
 */
void
pacer_pending_load(Selector *sel, bool reuse)
{
	int32		horizon = sel->cfg.pending_horizon;
	int64		sums[3] = {0, 0, 0};
	double		lambda_sum = 0.0;
	int64		priced = 0;
	FullTransactionId mine = GetTopFullTransactionIdIfAny();
	bool		newest;
	const WindowDecision *w;
	int32	   *arm_ids;
	int			n;
	int			h;

	if (!pacer_counts_pending(&sel->cfg))
		return;
	arm_ids = palloc(sizeof(int32) * Max(sel->narms, 1));
	for (int i = 0; i < sel->narms; i++)
		arm_ids[i] = sel->arms[i].arm_id;
	/*
	 * versioned, under the newest snapshot: a version may hold rewards that
	 * the statement's snapshot is too old to see (REPEATABLE READ, a cursor),
	 * whose decisions the window would count once more, as pending.  Not in
	 * a parallel worker (select_model() is PARALLEL SAFE), which cannot take
	 * one: there the statement's.
	 */
	newest = sel->versioned && !IsInParallelMode();
	if (newest)
		PushActiveSnapshot(GetLatestSnapshot());
	w = pacer_window(sel->cfg.selector_id, sel->cfg.count_pending ? 2 * horizon : horizon, reuse,
					 sel->versioned, sel->narms, arm_ids, &n);
	if (newest)
		PopActiveSnapshot();
	pfree(arm_ids);
	h = Min(horizon, (n + 1) / 2);
	for (int i = 0; i < sel->narms; i++)
	{
		sel->arms[i].pending_n = 0;
		sel->arms[i].pending_priced = 0;
		sel->arms[i].pending_cost = 0.0;
		sel->arms[i].unfolded_spend = 0.0;
		sel->arms[i].unfolded_spend_n = 0;
		sel->arms[i].awaited = 0.0;
	}
	/* one pass, newest first: each arm's sums in the same order as a pass per arm */
	for (int k = 0; k < n; k++)
	{
		const WindowReward *reward = &w[k].reward;
		bool		counted = k < horizon && !reward->logged;

		if (w[k].arm >= 0)
		{
			ArmInfo    *arm = &sel->arms[w[k].arm];

			arm->pending_n += counted;
			if (counted && w[k].expects)
			{
				arm->pending_priced++;
				arm->pending_cost += w[k].expected_cost;
			}
			arm->awaited += k < h && !reward->logged;
			if (sel->versioned && reward->logged && reward->costs && !pacer_holds(arm, reward, mine))
			{
				arm->unfolded_spend += reward->cost;
				arm->unfolded_spend_n++;
			}
		}
		sums[0] += k < h && reward->logged;
		sums[1] += k >= h;
		sums[2] += k >= h && reward->logged;
		if (sel->cfg.budget > 0 && k < horizon && w[k].priced)
		{
			lambda_sum += pacer_level(&sel->cfg, w[k].cost_weight);
			priced++;
		}
	}
	sel->window_lambda = priced > 0 ? lambda_sum / (double) priced : 0.0;
	pacer_window_release(w);
	awaited_set(sel, sums[0], sums[1], sums[2]);
}

/*
 * After route_batch() logged a block of decisions: the pending count, λ̄ and
 * the awaited rewards read anew, in full, under the statement's snapshot with
 * the transaction's own new rows, so that the next block is priced as a
 * route() call after those decisions would be (else a batch routed at λ 0
 * spends as if the budget were untouched to its last row).  A window this
 * backend keeps for the selector is dropped by that read (it would miss the
 * batch's decisions).  Run as the extension owner.
 */
void
pacer_reload(Selector *sel)
{
	if (!pacer_counts_pending(&sel->cfg))
		return;
	CommandCounterIncrement();
	PushCopiedSnapshot(GetActiveSnapshot());
	UpdateActiveSnapshotCommandId();
	pacer_pending_load(sel, false);
	PopActiveSnapshot();
}

/*
 * route() logged decision_id, arm chosen, at λ cost_weight, with
 * *expected_cost if not NULL: into the pacer's window this backend keeps for
 * the selector (created_at is the transaction's start, now()).
 */
void
pacer_logged(const Selector *sel, int chosen, int64 decision_id, double cost_weight,
			 const double *expected_cost)
{
	WindowDecision decision = {
		.created_at = GetCurrentTransactionStartTimestamp(),
		.decision_id = decision_id,
		.arm_id = sel->arms[chosen].arm_id,
		.priced = true,
		.cost_weight = cost_weight,
		.expects = expected_cost != NULL,
		.expected_cost = expected_cost != NULL ? *expected_cost : 0.0,
	};

	if (pacer_counts_pending(&sel->cfg))
		pacer_window_logged(sel->cfg.selector_id, &decision);
}
