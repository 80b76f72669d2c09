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
#include "datatype/timestamp.h"
#include "executor/spi.h"

#include "model/clock_ops.h"
#include "learning/fold.h"

extern void clock_base(const StateHeader *st, LogPosition *q, double *count);
extern void clock_base_rewind(StateHeader *st);
extern Datum clock_arm_ids(int32 selector_id);
extern int64 clock_fold_log(StateFold *f, int32 arm_id, FullTransactionId below, bool build,
							bool *moved);
extern int64 clock_fold_before(StateFold *f, int32 arm_id, LogPosition end);

/* the log's horizon on the clocks (clock_horizon.c) */
extern void clock_forget_horizon(const SelectorConfig *cfg, int32 *rows, double *seconds);
extern bool clock_absorb_cut(Datum arm_ids, FullTransactionId below, int32 keep_rows, double keep_seconds,
							 TimestampTz cutoff, int64 min_rows, int64 max_rows, LogPosition *end);
extern double clock_origin(Datum arm_ids);

#endif
