/*
 * clock.h — forgetting on the selector's clock (setting "clock": "selector")
 * or in wall-clock time ("clock": "time"): window, discount and
 * restart_every count the rewards of every arm of the selector, or seconds,
 * so an arm that is not chosen still ages.  See clock.c.
 */
#ifndef MODEL_SELECT_CLOCK_H
#define MODEL_SELECT_CLOCK_H

#include "access/transam.h"
#include "datatype/timestamp.h"
#include "executor/spi.h"

#include "model/clock_state.h"
#include "model/state.h"
#include "learning/fold.h"

/*
 * Column of the fold's row queries that holds a row's tick, after
 * FOLD_COLUMNS (fold.h), in the queries of clocked selectors (the time
 * clock's: created_at).
 */
#define CLOCK_TICK_COLUMN (FOLD_NCOLUMNS + 1)

/*
 * What a clocked model at some now depends on besides the rows: the first
 * row that counts and, under a discount, the time of the weights (0: none).
 * Two nows with equal keys have the same model.
 */
typedef struct ClockKey
{
	int			first;
	double		at;
} ClockKey;

extern StateHeader *clock_append(const SelectorConfig *cfg, const StateHeader *old,
								 const double *x, double r, double tick);
extern void clock_key(const SelectorConfig *cfg, const StateHeader *st, double now, ClockKey *key);
extern bool clock_key_equal(const ClockKey *a, const ClockKey *b);
extern ArmModel *clock_decode_at(const SelectorConfig *cfg, const StateHeader *st, const ClockKey *key);
extern ArmModel *clock_decode(const SelectorConfig *cfg, const StateHeader *st, double now);
extern int64 clock_fold_before(StateFold *f, int32 arm_id, LogPosition end);
extern void clock_base_rewind(StateHeader *st);
extern double clock_now(void);
extern double clock_seconds(TimestampTz t);
extern void clock_base(const StateHeader *st, LogPosition *q, double *count);
extern int64 clock_fold_log(StateFold *f, int32 arm_id, FullTransactionId below);
extern Datum clock_arm_ids(int32 selector_id);
extern double clock_row_tick(const SelectorConfig *cfg, SPITupleTable *tt, uint64 row);
extern SPITupleTable *clock_rows_after(ClockKind clock, int narms, const int32 *arm_ids, const LogPosition *pos,
									   StateHeader *const *bases, double *now);

/* the log's horizon on the clocks (clock_horizon.c) */
extern void clock_forget_horizon(const SelectorConfig *cfg, int32 *rows, double *seconds);
extern bool clock_absorb_cut(Datum arm_ids, FullTransactionId below, int32 keep_rows, double keep_seconds,
							 TimestampTz cutoff, int64 min_rows, int64 max_rows, LogPosition *end);
extern double clock_origin(Datum arm_ids);

#endif
