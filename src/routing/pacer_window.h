/*
 * pacer_window.h — the selector's newest decisions and whether each has a
 * reward, as the budget's pacer and the awaited rewards count them
 * (pacer_window.c).
 */
#ifndef MODEL_SELECT_PACER_WINDOW_H
#define MODEL_SELECT_PACER_WINDOW_H

#include "routing/pacer_window_read.h"

/* model_select.pacer_window_reuse: a backend's decisions per read anew of a window */
extern int	pacer_window_reuse;

extern const WindowDecision *pacer_window(int32 selector_id, int limit, bool reuse, bool whole, int narms,
										  const int32 *arm_ids, int *n);
extern void pacer_window_release(const WindowDecision *rows);
extern void pacer_window_logged(int32 selector_id, const WindowDecision *decision);
extern void pacer_window_init(void);

#endif
