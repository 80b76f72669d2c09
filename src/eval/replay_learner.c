/*
 * replay_learner.c — the learner of replay() (replay.c): each arm's state
 * grown by the policy's own append and decoded as a live selector decodes
 * it, on the selector's clock; and feedback as it arrives in production,
 * late (a ring of the rewards decided but not visible yet, learned delay
 * rounds later) and sparse (a seeded share of the rounds rewarded).
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "eval/replay_learner.h"
#include "math/prng.h"
#include "model/context.h"
#include "model/reward_value.h"
#include "model/state.h"

/* A reward decided but not visible yet: its round, row, arm, utility and cost. */
typedef struct Pending
{
	int			round;
	int			row;
	int			arm;
	double		utility;
	double		cost;
} Pending;

/*
 * Feed utility u of context raw_x, with its cost (cost_null: none), to arm
 * a, one tick of the selector clock (warm rows and rounds alike, as their
 * rewards in a live log): new state (in place, or in a fresh context that
 * replaces the old state's), new decoded model (clocked: decoded before each
 * round instead, replay_age).
 */
void
replay_learn(ReplayLearner *learner, int a, const double *raw_x, double u, bool cost_null,
			 double cost)
{
	Selector   *sel = learner->sel;
	StateHeader **states = learner->states;
	MemoryContext *state_cxt = learner->state_cxt;
	MemoryContext *model_cxt = learner->model_cxt;
	int			tick = ++learner->ticks;
	MemoryContext fresh = AllocSetContextCreate(CurrentMemoryContext, "replay arm state",
												ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(fresh);
	const ClockOps *clock = clock_ops(sel->cfg.clock);
	double	   *x = palloc(sizeof(double) * sel->cfg.row_dim);
	StateHeader *appended;

	memcpy(x, raw_x, sizeof(double) * sel->cfg.dim);
	context_prepare(&sel->cfg, x);
	row_set_cost(&sel->cfg, x, cost_null, cost);
	appended = clock->append(&sel->cfg, states[a], x, u, tick);
	MemoryContextSwitchTo(old);
	if (appended == states[a])
		MemoryContextDelete(fresh);
	else
	{
		if (state_cxt[a] != NULL)
			MemoryContextDelete(state_cxt[a]);
		state_cxt[a] = fresh;
	}
	states[a] = appended;
	sel->arms[a].n++;
	if (clock->ages)
		return;
	if (model_cxt[a] == NULL)
		model_cxt[a] = AllocSetContextCreate(CurrentMemoryContext, "replay arm model",
											 ALLOCSET_DEFAULT_SIZES);
	else
		MemoryContextReset(model_cxt[a]);
	MemoryContextSwitchTo(model_cxt[a]);
	sel->arms[a].model = clock_decode(&sel->cfg, states[a], tick);
	MemoryContextSwitchTo(old);
}

/*
 * A clocked selector's models at the selector's clock `now` (the rounds
 * played): every arm ages, chosen or not (model/clock_state.c).  An arm
 * whose state and key are those its model was built at keeps it, as the
 * arm cache does (a window's model changes only when a row stops counting):
 * the same model, built once.
 */
void
replay_age(ReplayLearner *learner, int narms, int now)
{
	Selector   *sel = learner->sel;
	const ClockOps *clock = clock_ops(sel->cfg.clock);

	for (int a = 0; a < narms; a++)
	{
		MemoryContext old;
		ClockKey	key;

		if (learner->states[a] == NULL)
			continue;
		clock->key(&sel->cfg, learner->states[a], now, &key);
		if (sel->arms[a].model != NULL && learner->model_n[a] == sel->arms[a].n &&
			clock_key_equal(&key, &learner->model_at[a]))
			continue;
		if (learner->model_cxt[a] == NULL)
			learner->model_cxt[a] = AllocSetContextCreate(CurrentMemoryContext, "replay arm model",
														  ALLOCSET_DEFAULT_SIZES);
		else
			MemoryContextReset(learner->model_cxt[a]);
		old = MemoryContextSwitchTo(learner->model_cxt[a]);
		sel->arms[a].model = clock->decode_at(&sel->cfg, learner->states[a], &key);
		MemoryContextSwitchTo(old);
		learner->model_at[a] = key;
		learner->model_n[a] = sel->arms[a].n;
	}
}

/*
 * Is round t (from 0) rewarded?  Every round with feedback 1, else a draw
 * from a hash of the seed and t: the same rounds for every policy.
 */
static bool
round_rewarded(const ReplayLearner *learner, int t)
{
	uint64		h;

	if (learner->feedback >= 1)
		return true;
	h = mix64(learner->feedback_seed + (uint64) t * UINT64_C(0x9E3779B97F4A7C15));
	return (double) (h >> 11) * 0x1.0p-53 < learner->feedback;
}

/* A reward becomes visible: the arm learns it, and its cost counts as a live log's would. */
static void
replay_feedback(ReplayLearner *learner, const ReplayData *data, const Pending *p, ReplayTotals *tot)
{
	ArmInfo    *arm = &learner->sel->arms[p->arm];

	replay_learn(learner, p->arm, data->contexts + (Size) p->row * data->dim, p->utility, false, p->cost);
	/* the totals a live arm reads from its log (the budget's pacer) */
	arm->cost_sum += p->cost;
	arm->cost_n++;
	arm->spend_sum += p->cost;
	arm->spend_n++;
	tot->learned++;
}

/* Before the decision of round t: learn the rewards of rounds up to t - delay - 1. */
void
replay_deliver(ReplayLearner *learner, const ReplayData *data, int t, ReplayTotals *tot)
{
	while (learner->pending_count > 0)
	{
		const Pending *p = &learner->pending[learner->pending_head];

		if ((int64) p->round + learner->delay >= t)
			break;
		replay_feedback(learner, data, p, tot);
		pending_rewarded(&learner->decided, learner->sel, p->round, t);
		learner->pending_head = (learner->pending_head + 1) % learner->pending_size;
		learner->pending_count--;
	}
}

/*
 * After the decision of round t: its reward, if the round is rewarded and
 * it becomes visible within the rounds played, waits for its delay.
 */
void
replay_defer(ReplayLearner *learner, int t, int rounds, int row, int arm, double u, double cost)
{
	Pending    *p;

	if (!round_rewarded(learner, t) || (int64) t + learner->delay + 1 >= rounds)
		return;
	Assert(learner->pending_count < learner->pending_size);
	p = &learner->pending[(learner->pending_head + learner->pending_count) % learner->pending_size];
	p->round = t;
	p->row = row;
	p->arm = arm;
	p->utility = u;
	p->cost = cost;
	learner->pending_count++;
}

/*
 * Per-arm states, their memory contexts and scores, all empty; room for the
 * rewards not yet visible (at most delay + 1 at a time, and fewer than the
 * rounds played): refused (54000) beyond 1 GB.
 */
void
replay_learner_alloc(ReplayLearner *learner, int narms, int delay, int rounds)
{
	int64		size = Min((int64) delay, (int64) rounds) + 1;

	learner->states = palloc0(sizeof(StateHeader *) * narms);
	learner->state_cxt = palloc0(sizeof(MemoryContext) * narms);
	learner->model_cxt = palloc0(sizeof(MemoryContext) * narms);
	learner->model_at = palloc0(sizeof(ClockKey) * narms);
	learner->model_n = palloc0(sizeof(int64) * narms);
	learner->scores = palloc(sizeof(ArmScore) * narms);
	learner->ticks = 0;
	if ((double) size * sizeof(Pending) > MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("replay: a delay of %d rounds would hold " INT64_FORMAT " rewards in memory", delay, size),
				 errhint("Lower delay or rounds.")));
	learner->pending = palloc(sizeof(Pending) * (Size) size);
	learner->pending_size = (int) size;
	learner->pending_head = 0;
	learner->pending_count = 0;
}
