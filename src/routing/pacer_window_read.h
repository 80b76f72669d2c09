/*
 * pacer_window_read.h — the decision log's reads behind the pacer's window
 * (pacer_window_read.c), for pacer_window.c.  Run as the extension owner.
 */
#ifndef MODEL_SELECT_PACER_WINDOW_READ_H
#define MODEL_SELECT_PACER_WINDOW_READ_H

#include "access/transam.h"
#include "datatype/timestamp.h"

/*
 * A decision's reward as the window read it: whether there is one, its cost
 * (if it reports one), and its place in its arm's log, (tx, seq), which
 * tells whether the arm's model already holds it (pacer.c).
 */
typedef struct WindowReward
{
	bool		logged;
	bool		costs;
	double		cost;
	FullTransactionId tx;
	int64		seq;
} WindowReward;

/*
 * A decision of the window, newest first: its key in the log's order, its
 * arm (and where it is among the arms pacer_window() was given, -1 if not
 * there), its λ, its expected cost, its reward.
 */
typedef struct WindowDecision
{
	TimestampTz created_at;
	int64		decision_id;
	int32		arm_id;
	int32		arm;
	bool		priced;			/* it logged a cost weight (not before 0.2.0) */
	double		cost_weight;
	bool		expects;		/* it logged an expected cost (the cost model's) */
	double		expected_cost;
	WindowReward reward;
} WindowDecision;

/* The columns of a reward the reads take: decision_id, then what WindowReward keeps. */
#define WINDOW_REWARD_COLUMNS 4
extern const char *const window_reward_columns[WINDOW_REWARD_COLUMNS];

extern int32 window_arm(int32 arm_id, int narms, const int32 *arm_ids);
extern int	window_read(int32 selector_id, int limit, const WindowDecision *after, int narms,
						const int32 *arm_ids, WindowDecision *out);
extern void window_reward_set(WindowReward *reward, const Datum *values, const bool *nulls);
extern void window_own_read(FullTransactionId mine, Datum tx, Datum seq, int64 *own_seq);
extern void window_rewarded(int32 selector_id, WindowDecision *w, int n, bool whole, int64 *own_seq);
extern int	window_read_marked(int32 selector_id, int limit, int narms, const int32 *arm_ids, bool whole,
							   WindowDecision *rows);
extern void window_rewards_looked_up(WindowDecision *rows, const int *idx, int n);

#endif
