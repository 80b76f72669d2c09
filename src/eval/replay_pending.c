/*
 * replay_pending.c — the decisions of a replay routed but not rewarded yet,
 * as a live selector counts them (routing/pacer.c): each arm's count among
 * the last pending_horizon decisions of rewards not yet learned, whether
 * late (replay()'s delay) or never coming (its feedback), for the budget's
 * pacer, the costs they were expected to cost, and the mean cost weight
 * they were priced at; with count_pending
 * also the rewarded among them and the decisions before them, for the
 * awaited rewards (routing/awaited.c).
 */
#include "postgres.h"

#include "model/catalog.h"
#include "eval/eval.h"
#include "routing/decide.h"

/* The window of the last `horizon` decisions (and as many before); none kept without a use. */
void
pending_init(ReplayPending *pending, const SelectorConfig *cfg)
{
	pending->horizon = cfg->budget > 0 || cfg->count_pending ? cfg->pending_horizon : 0;
	pending->size = cfg->count_pending ? 2 * pending->horizon : pending->horizon;
	pending->arm = pending->size > 0 ? palloc(sizeof(int) * pending->size) : NULL;
	pending->lambda = pending->size > 0 ? palloc(sizeof(double) * pending->size) : NULL;
	pending->expects = pending->size > 0 ? palloc(sizeof(bool) * pending->size) : NULL;
	pending->expected_cost = pending->size > 0 ? palloc(sizeof(double) * pending->size) : NULL;
	pending->rewarded = pending->size > 0 ? palloc(sizeof(bool) * pending->size) : NULL;
	pending->decided = 0;
}

/*
 * Round t's decision of arm a (of the scores), priced at the λ it was decided
 * with (read before the counts below move) and logging the cost expected of
 * it, enters the window; round t − horizon's leaves the pacer's count.
 */
void
pending_decided(ReplayPending *pending, Selector *sel, int t, int a, const ArmScore *scores)
{
	double		lambda;
	int			slot;

	if (pending->horizon == 0)
		return;
	lambda = pacer_lambda(sel);
	if (t >= pending->horizon)
	{
		slot = (t - pending->horizon) % pending->size;
		if (!pending->rewarded[slot])
			sel->arms[pending->arm[slot]].pending_n--;
	}
	slot = t % pending->size;
	pending->arm[slot] = a;
	pending->lambda[slot] = lambda;
	pending->expects[slot] = pacer_expected_cost(sel, scores, a, &pending->expected_cost[slot]);
	pending->rewarded[slot] = false;
	pending->decided = t + 1;
	sel->arms[a].pending_n++;
}

/*
 * Round r's reward is learned after `decided` rounds were decided: it is no
 * longer pending, if its decision is still in the window.
 */
void
pending_rewarded(ReplayPending *pending, Selector *sel, int r, int decided)
{
	int			slot;

	if (pending->horizon == 0 || r < decided - pending->size)
		return;
	slot = r % pending->size;
	Assert(!pending->rewarded[slot]);
	pending->rewarded[slot] = true;
	if (r >= decided - pending->horizon)
		sel->arms[pending->arm[slot]].pending_n--;
}

/*
 * Before a decision: each arm's awaited rewards, from the counts a live
 * selector reads (pacer.c): of the last D ≤ size decisions, the newest
 * h = min(horizon, ⌈D/2⌉) and those before them.
 */
void
pending_awaited(const ReplayPending *pending, Selector *sel)
{
	int64		d = Min((int64) pending->decided, (int64) pending->size);
	int64		h = Min((int64) pending->horizon, (d + 1) / 2);
	int64		sums[3] = {0, 0, 0};

	if (!sel->cfg.count_pending || pending->horizon == 0)
		return;
	for (int i = 0; i < sel->narms; i++)
		sel->arms[i].awaited = 0;
	for (int64 k = 1; k <= d; k++)
	{
		int			slot = (int) ((pending->decided - k) % pending->size);
		bool		rewarded = pending->rewarded[slot];

		if (k <= h && !rewarded)
			sel->arms[pending->arm[slot]].awaited += 1;
		else if (k <= h)
			sums[0]++;
		else
		{
			sums[1]++;
			sums[2] += rewarded;
		}
	}
	awaited_set(sel, sums[0], sums[1], sums[2]);
}

/*
 * Before a decision with a budget: the pacer's λ̄, the mean cost weight of
 * the last horizon decisions, and each arm's expected costs of those without
 * a reward, summed newest first as a live selector sums them (pacer.c), so
 * that a replay paces as the selector would.
 */
void
pending_window_lambda(const ReplayPending *pending, Selector *sel)
{
	int64		d = Min((int64) pending->decided, (int64) pending->horizon);
	double		sum = 0.0;

	if (pending->horizon == 0 || sel->cfg.budget <= 0)
		return;
	for (int i = 0; i < sel->narms; i++)
	{
		sel->arms[i].pending_priced = 0;
		sel->arms[i].pending_cost = 0.0;
	}
	for (int64 k = 1; k <= d; k++)
	{
		int			slot = (int) ((pending->decided - k) % pending->size);
		ArmInfo    *arm = &sel->arms[pending->arm[slot]];

		sum += pacer_level(&sel->cfg, pending->lambda[slot]);
		if (!pending->rewarded[slot] && pending->expects[slot])
		{
			arm->pending_priced++;
			arm->pending_cost += pending->expected_cost[slot];
		}
	}
	sel->window_lambda = d > 0 ? sum / (double) d : 0.0;
}
