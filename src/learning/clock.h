/*
 * clock.h — reading a clock's rows from the reward log: a checkpoint's fold
 * on any clock, and the position Q and count C of a state whose ticks are
 * counted across the selector's arms (the selector's clock:
 * ClockOps.ticks_across_arms), from which readers count (rows_after_bases()
 * in routing/selector_load.c).  What each clock does to a state is
 * model/clock_ops.h's.  See clock.c.
 */
#ifndef MODEL_SELECT_CLOCK_H
#define MODEL_SELECT_CLOCK_H

#include "access/transam.h"
#include "executor/spi.h"

#include "model/clock_ops.h"
#include "learning/fold.h"

extern void clock_base(const StateHeader *st, LogPosition *q, double *count);
extern int64 clock_fold_log(StateFold *f, int32 arm_id, FullTransactionId below, bool build,
							bool *moved);

#endif
