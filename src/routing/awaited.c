/*
 * awaited.c — setting count_pending: the rewards still expected from the
 * decisions that have none yet count as information already held.
 *
 * Between two rewards every decision scores the same state, so a UCB router
 * sends every prompt that one arm's wide interval wins to that arm until its
 * rewards come back: with rewards k decisions late, k decisions at once.
 * GP-BUCB (Desautels, Krause & Burdick 2014) narrows the posterior by the
 * decisions awaiting feedback as if their observations had come, keeping the
 * mean (a hallucinated observation equals the posterior mean).  Here this is
 * done with counts, not contexts: an arm with n rewards that awaits e more
 * has its width scaled by √(n / (n + e)), as its A = αI + Σzzᵀ would be if
 * the e rewards came at contexts like its past ones (A·(1 + e/n), the prior
 * term aside).  The mean, the learnt noise and untried arms are unchanged.
 *
 * e is estimated from the decision log, the same way for a live selector (a
 * query of model_select.decisions and rewards, pacer.c) and in replay()
 * (replay_pending.c).  Of the selector's last D ≤ 2H decisions (H =
 * pending_horizon), the newest h = min(H, ⌈D/2⌉) are the window: m_a of arm
 * a's without a reward, R of them rewarded; of the D − h before them a share
 * q is rewarded (the feedback rate once a decision's reward has had h
 * decisions' time to come).  The window is expected to bring q·h rewards in
 * all, so q·h − R more are awaited; only the shortfall beyond one standard
 * deviation s of q·h − R when every reward has come (binomial counts: s² =
 * q(1 − q)·(h + h²/(D − h))) counts, shared among the window's unrewarded
 * decisions: e_a = m_a · clamp((q·h − R − s) / Σm, 0, 1).  With rewards that
 * come at once (or never), R ≈ q·h and nothing is awaited: a sparse log does
 * not narrow the widths by decisions that will never be rewarded, nor by
 * chance.  Rewards later than h decisions are not foreseen (q is then low).
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/array.h"

#include "model/catalog.h"
#include "model/registry.h"
#include "routing/decide.h"

/*
 * Each arm's awaited rewards from the window's counts: on entry each arm's
 * awaited holds m_a, its decisions without a reward among the newest h;
 * rewarded_new of those h decisions have a reward, and rewarded_old of the
 * decided_old before them.  0 everywhere without count_pending or without
 * older decisions.
 */
void
awaited_set(Selector *sel, int64 rewarded_new, int64 decided_old, int64 rewarded_old)
{
	double		pending = 0;
	double		share;
	double		newest = 0;
	double		q;

	for (int i = 0; i < sel->narms; i++)
		pending += sel->arms[i].awaited;
	newest = pending + (double) rewarded_new;
	if (!sel->cfg.count_pending || decided_old <= 0 || pending <= 0)
	{
		for (int i = 0; i < sel->narms; i++)
			sel->arms[i].awaited = 0;
		return;
	}
	q = (double) rewarded_old / (double) decided_old;
	share = q * newest - (double) rewarded_new
		- sqrt(q * (1 - q) * (newest + newest * newest / (double) decided_old));
	share = Min(Max(share / pending, 0.0), 1.0);
	for (int i = 0; i < sel->narms; i++)
		sel->arms[i].awaited *= share;
}

/*
 * A learned arm that awaits e rewards: its width scaled by √(n / (n + e)),
 * its ucb recomputed (before a Thompson draw, a budget's cost term).
 */
void
awaited_apply(const Selector *sel, ArmScore *scores)
{
	const PolicyOps *ops = policy_ops(sel->cfg.policy);

	if (!sel->cfg.count_pending || !ops->uses_context)
		return;
	for (int i = 0; i < sel->narms; i++)
	{
		const ArmInfo *arm = &sel->arms[i];
		ArmScore   *s = &scores[i];

		if (arm->model == NULL || arm->awaited <= 0 || arm->n <= 0 || !isfinite(s->width))
			continue;
		s->width *= sqrt((double) arm->n / ((double) arm->n + arm->awaited));
		s->ucb = s->mean + s->radius * s->width;
	}
}

/*
 * The awaited rewards a decision scored with, per arm in arm order, as the
 * decisions.awaited argument args[at] (NULL without count_pending): the log
 * no longer tells them later, and decision_scores() re-derives the widths
 * from them.
 */
void
awaited_arg(const Selector *sel, Datum *args, char *nulls, int at)
{
	Datum	   *e;

	nulls[at] = 'n';
	if (!sel->cfg.count_pending)
		return;
	e = palloc(sizeof(Datum) * Max(sel->narms, 1));
	for (int i = 0; i < sel->narms; i++)
		e[i] = Float8GetDatum(sel->arms[i].awaited);
	args[at] = PointerGetDatum(construct_array(e, sel->narms, FLOAT8OID, 8, FLOAT8PASSBYVAL,
											   TYPALIGN_DOUBLE));
	nulls[at] = ' ';
}

/*
 * decision_scores(): the awaited rewards a decision logged (NULL: none) for
 * its first narms arms, the others none.
 */
void
awaited_logged(Selector *sel, ArrayType *logged)
{
	Datum	   *e = NULL;
	bool	   *nulls = NULL;
	int			n = 0;

	if (logged != NULL)
		deconstruct_array(logged, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &e, &nulls, &n);
	for (int i = 0; i < sel->narms; i++)
		sel->arms[i].awaited = i < n && !nulls[i] ? DatumGetFloat8(e[i]) : 0;
}
