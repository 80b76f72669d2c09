/*
 * clock_state.h — the layout of a clocked arm state (FORGET_CLOCK, the
 * selector's or the time clock): body = [Q (tx, seq), C, ticks[n], r[n],
 * X[n][dim]].  What the rows mean and how they are folded is
 * learning/clock.c's; the layout is the domain model's, so that state.c can
 * size and check a stored state without the learning layer.
 */
#ifndef MODEL_SELECT_CLOCK_STATE_H
#define MODEL_SELECT_CLOCK_STATE_H

#include "model/state.h"

#define CLOCK_HEAD 3
#define CLOCK_TICKS(st) (STATE_BODY(st) + CLOCK_HEAD)
#define CLOCK_REWARDS(st) (CLOCK_TICKS(st) + (st)->n)
#define CLOCK_X(st) (CLOCK_REWARDS(st) + (st)->n)

extern Size clock_body_size(const SelectorConfig *cfg, int n);
extern int32 clock_max_rows(const SelectorConfig *cfg);
extern void clock_check(const SelectorConfig *cfg, const StateHeader *st);

#endif
