/*
 * replay_pending.c — the decisions of a replay routed but not rewarded yet,
 * as a live selector's budget pacer counts them (routing/pacer.c): each
 * arm's count among the last pending_horizon decisions of rewards not yet
 * learned, whether late (replay()'s delay) or never coming (its feedback).
 */
#include "postgres.h"

#include "model/catalog.h"
#include "eval/eval.h"

/* The window of the last `horizon` decisions; none kept without a budget. */
void
pending_init(ReplayPending *pending, const SelectorConfig *cfg)
{
	pending->horizon = cfg->budget > 0 ? cfg->pending_horizon : 0;
	pending->arm = pending->horizon > 0 ? palloc(sizeof(int) * pending->horizon) : NULL;
	pending->rewarded = pending->horizon > 0 ? palloc(sizeof(bool) * pending->horizon) : NULL;
}

/* Round t's decision of arm a enters the window; round t − horizon's leaves it. */
void
pending_decided(ReplayPending *pending, Selector *sel, int t, int a)
{
	int			slot;

	if (pending->horizon == 0)
		return;
	slot = t % pending->horizon;
	if (t >= pending->horizon && !pending->rewarded[slot])
		sel->arms[pending->arm[slot]].pending_n--;
	pending->arm[slot] = a;
	pending->rewarded[slot] = false;
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

	if (pending->horizon == 0 || r < decided - pending->horizon)
		return;
	slot = r % pending->horizon;
	Assert(!pending->rewarded[slot]);
	pending->rewarded[slot] = true;
	sel->arms[pending->arm[slot]].pending_n--;
}
