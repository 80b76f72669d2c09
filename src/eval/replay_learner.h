/*
 * replay_learner.h — the learner of a replay (replay_learner.c): the
 * in-memory selector, each arm's state and model, and the rewards decided
 * but not visible yet (delay, feedback), shared by replay.c's loop.
 */
#ifndef MODEL_SELECT_REPLAY_LEARNER_H
#define MODEL_SELECT_REPLAY_LEARNER_H

#include "eval/eval.h"
#include "model/catalog.h"
#include "model/clock_ops.h"
#include "model/state_layout.h"

/* The learner of a replay: the in-memory selector and each arm's state. */
typedef struct ReplayLearner
{
	Selector   *sel;
	StateHeader **states;
	MemoryContext *state_cxt;
	MemoryContext *model_cxt;
	ClockKey   *model_at;		/* clocked: the key each arm's model was built at */
	int64	   *model_n;		/* and the arm's rewards then (its state's version) */
	ArmScore   *scores;
	int			ticks;			/* rewards learned: the selector clock */
	int			delay;			/* rounds before a reward is visible */
	double		feedback;		/* the share of rounds rewarded */
	uint64		feedback_seed;
	struct Pending *pending;	/* rewards not visible yet: a ring of delay + 1 (replay_learner.c) */
	int			pending_size;
	int			pending_head;	/* the oldest */
	int			pending_count;
	ReplayPending decided;		/* decisions not rewarded yet, for the pacer */
} ReplayLearner;

extern void replay_learner_alloc(ReplayLearner *learner, int narms, int delay, int rounds);
extern void replay_learn(ReplayLearner *learner, int a, const double *raw_x, double u, bool cost_null,
						 double cost);
extern void replay_age(ReplayLearner *learner, int narms, int now);
extern void replay_deliver(ReplayLearner *learner, const ReplayData *data, int t, ReplayTotals *tot);
extern void replay_defer(ReplayLearner *learner, int t, int rounds, int row, int arm, double u, double cost);

#endif
