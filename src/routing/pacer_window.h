/*
 * pacer_window.h — the selector's newest decisions and whether each has a
 * reward, as the budget's pacer and the awaited rewards count them
 * (pacer_window.c).
 */
#ifndef MODEL_SELECT_PACER_WINDOW_H
#define MODEL_SELECT_PACER_WINDOW_H

#include "datatype/timestamp.h"

/*
 * A decision of the window, newest first: its key in the log's order, its
 * arm (and where it is among the arms pacer_window() was given, -1 if not
 * there), its λ, its expected cost, whether it has a reward.
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
	bool		rewarded;
} WindowDecision;

/* model_select.pacer_window_reuse: a backend's decisions per full read of a window */
extern int	pacer_window_reuse;

extern const WindowDecision *pacer_window(int32 selector_id, int limit, bool reuse, int narms,
										  const int32 *arm_ids, int *n);
extern void pacer_window_release(const WindowDecision *rows);
extern void pacer_window_logged(int32 selector_id, const WindowDecision *decision);
extern void pacer_window_init(void);

#endif
