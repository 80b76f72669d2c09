/*
 * clock_horizon.c — the log's horizon on the clocks (learning/clock.c):
 * how far back forgetting can still count a row, and on the selector's
 * clock, whose ticks count every arm's rows, where a retention pass
 * (retention.c) cuts the selector's log and the count of the rows absorbed
 * that the retained log ticks on from.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/timestamp.h"
#include "utils/xid8.h"

#include "pg/spi_util.h"
#include "learning/clock.h"
#include "learning/fold.h"

/*
 * The log's horizon that forgetting sets (retention.c), past which a row
 * never counts again (a discount: weighs below DISCOUNT_FLOOR, state.c), so
 * that it need not stay in the log: *rows, the arm's newest on the arm's
 * clock, the selector's newest (its ticks) on the selector's, or on the
 * time clock *seconds before now (0: none).
 */
void
clock_forget_horizon(const SelectorConfig *cfg, int32 *rows, double *seconds)
{
	double		horizon = 0;

	/* a clock whose ticks are a column's (created_at) counts seconds */
	bool		in_seconds = clock_ops(cfg->clock)->tick_column != NULL;

	if (cfg->window > 0)
		horizon = cfg->window;
	else if (cfg->restart_every > 0)
		horizon = cfg->restart_every;	/* holds the current period */
	else if (cfg->discount < 1)
		horizon = discount_horizon(cfg);
	*rows = in_seconds ? 0 : (int32) horizon;
	*seconds = in_seconds ? horizon : 0;
}

/* The position of the selector's live row the query (arm ids, then arg) finds, if any. */
static bool
clock_row_at(SPIPlanPtr plan, Datum arm_ids, Datum arg, LogPosition *pos)
{
	Datum		args[2] = {arm_ids, arg};

	spi_execute(plan, args, NULL, false, 1, SPI_OK_SELECT, "find the selector's rewards to absorb");
	if (SPI_processed == 0)
		return false;
	*pos = fold_row_position(SPI_tuptable, 0);
	return true;
}

/*
 * Where a pass absorbs the selector's log on its clock (retention.c): the
 * rows before *end, a prefix of the log in canonical order, so that the
 * retained log ticks on from the count of the rows absorbed.  Only final
 * rows, below `below`, up to which the caller has checkpointed every arm
 * (readers count ticks from the arms' checkpoints, which are then past
 * end); keeping the newest keep_rows of them (the selector's ticks) and,
 * with keep_seconds, the rows from the first one created since cutoff on;
 * at most max_rows.  False: no row goes, or fewer than min_rows may (with
 * keep_seconds: fewer than min_rows are final).
 */
bool
clock_absorb_cut(Datum arm_ids, FullTransactionId below, int32 keep_rows, double keep_seconds,
				 TimestampTz cutoff, int64 min_rows, int64 max_rows, LogPosition *end)
{
	static SPIPlanPtr final_plan = NULL;
	static SPIPlanPtr nth_plan = NULL;
	static SPIPlanPtr recent_plan = NULL;
	SPIPlanPtr	nth = spi_plan(&nth_plan, "SELECT r.tx, r.seq FROM model_select.rewards r WHERE r.arm_id = ANY ($1)"
							   " ORDER BY r.tx, r.seq OFFSET $2 LIMIT 1", 2, (Oid[]) {INT4ARRAYOID, INT8OID});
	Datum		args[2] = {arm_ids, FullTransactionIdGetDatum(below)};
	bool		isnull;
	int64		last;
	LogPosition pos;

	spi_execute(spi_plan(&final_plan, "SELECT pg_catalog.count(*) FROM model_select.rewards r"
						 " WHERE r.arm_id = ANY ($1) AND r.tx < $2", 2, (Oid[]) {INT4ARRAYOID, XID8OID}),
				args, NULL, false, 1, SPI_OK_SELECT, "count the selector's final rewards");
	/* the rows that may go: those past the newest keep_rows */
	last = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, SPI_SOLE_COLUMN, &isnull)) - keep_rows;
	last = Min(last, max_rows);
	if (last < Max(min_rows, 1))
		return false;
	*end = (LogPosition) {below, 0};
	/* the first row that stays */
	if (clock_row_at(nth, arm_ids, Int64GetDatum(last), &pos) && log_position_cmp(pos, *end) < 0)
		*end = pos;
	if (keep_seconds > 0 &&
		clock_row_at(spi_plan(&recent_plan, "SELECT r.tx, r.seq FROM model_select.rewards r WHERE r.arm_id = ANY ($1)"
							  " AND r.created_at >= $2 ORDER BY r.tx, r.seq LIMIT 1",
							  2, (Oid[]) {INT4ARRAYOID, TIMESTAMPTZOID}),
					 arm_ids, TimestampTzGetDatum(cutoff), &pos) && log_position_cmp(pos, *end) < 0)
		*end = pos;
	return clock_row_at(nth, arm_ids, Int64GetDatum(0), &pos) && log_position_cmp(pos, *end) < 0;
}

/*
 * The selector's rows absorbed, as the bases of its arms (an int4[]) count
 * them (clock_base_rewind(); every base of a selector has the same), 0
 * without one: where an arm without a state of its own starts to tick the
 * log (an arm added since, or a rebuild without a base).  Read under a new
 * snapshot, as fold_begin_base() reads a base: the caller holds an arm's
 * checkpoint row, and a pass that absorbs on the selector's clock holds
 * every arm's (retention.c).
 */
double
clock_origin(Datum arm_ids)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[2] = {INT4ARRAYOID, INT4OID};
	/* the 8 bytes of C in the stored state (a bytea of the StateHeader after its length), 1-based */
	Datum		args[2] = {arm_ids,
		Int32GetDatum(STATE_HEADER_SIZE - VARHDRSZ + CLOCK_C * sizeof(double) + 1)};
	bool		isnull;
	bytea	   *head;
	double		count;

	spi_execute(spi_plan(&plan, "SELECT pg_catalog.substring(b.state, $2, 8) FROM model_select.arm_base b"
						 " WHERE b.arm_id = ANY ($1) AND b.state IS NOT NULL LIMIT 1", 2, types),
				args, NULL, false, 1, SPI_OK_SELECT, "read the selector's absorbed count");
	if (SPI_processed == 0)
		return 0;
	head = DatumGetByteaPP(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, SPI_SOLE_COLUMN, &isnull));
	if (VARSIZE_ANY_EXHDR(head) != sizeof(double))
		count = -1;
	else
		memcpy(&count, VARDATA_ANY(head), sizeof(double));
	if (!(count >= 0 && count <= (double) PG_INT64_MAX && count == floor(count)))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the base of an arm does not hold a count of absorbed rewards"),
				 errhint("Run model_select.rebuild_state() to recompute it from the reward log.")));
	return count;
}
