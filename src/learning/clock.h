/*
 * clock.h — reading a clock's rows from the reward log: a checkpoint's fold
 * on any clock, and the rows of a clock whose ticks are counted across the
 * selector's arms (the selector's: ClockOps.ticks_across_arms), with the
 * position Q and count C of such a state.  What each clock does to a state
 * is model/clock_ops.h's.  See clock.c.
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
extern SPITupleTable *clock_rows_after(int narms, const int32 *arm_ids, const LogPosition *pos,
									   StateHeader *const *bases, double *now);

#endif
