/*
 * clock.c — a clock's rows in the reward log (clock.h).  What the clocks
 * count and how a clocked state is folded and decoded is
 * model/clock_state.c's; here are the rows.
 *
 * On the selector's clock a row's tick is its position (1, 2, …) in the
 * selector's log in canonical order (tx, seq).  A clocked state keeps Q, a
 * position in the selector's log up to which every row of the arm is in
 * the state, and C, the number of the selector's rows up to Q.  A
 * checkpoint moves Q to the last row below its final horizon (fold.h):
 * positions there never change, so a reader counts only the selector's rows
 * after the oldest Q of its arms to tick their pending rows, and a
 * checkpoint only those since its previous Q.  On the time clock a row's
 * tick is a column of its own (created_at), read with the row; Q and C stay
 * 0.  Retention (retention.c, clock_horizon.c) deletes a prefix of the
 * selector's log at once, below every arm's Q, and leaves in each arm's
 * base Q at the log's start and C the rows deleted: the retained log ticks
 * on from C, and so does an arm without a state of its own (clock_origin()).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/datum.h"
#include "utils/xid8.h"

#include "pg/spi_util.h"
#include "learning/clock.h"
#include "learning/fold.h"

/* Rows fetched per round trip by a checkpoint's fold. */
#define CLOCK_BATCH 4096

/* The position Q and the count C of the selector's rows up to it (see above). */
void
clock_base(const StateHeader *st, LogPosition *q, double *count)
{
	uint64		tx = 0;

	*q = LOG_START;
	*count = 0;
	if (st != NULL)
	{
		memcpy(&tx, STATE_BODY(st) + CLOCK_Q_TX, sizeof(tx));
		memcpy(&q->seq, STATE_BODY(st) + CLOCK_Q_SEQ, sizeof(q->seq));
		*count = STATE_BODY(st)[CLOCK_C];
	}
	q->tx = FullTransactionIdFromU64(tx);
}

static void
clock_set_base(StateHeader *st, LogPosition q, double count)
{
	uint64		tx = U64FromFullTransactionId(q.tx);

	memcpy(STATE_BODY(st) + CLOCK_Q_TX, &tx, sizeof(tx));
	memcpy(STATE_BODY(st) + CLOCK_Q_SEQ, &q.seq, sizeof(q.seq));
	STATE_BODY(st)[CLOCK_C] = count;
}

/*
 * An arm's base on the selector's clock (retention.c) stands for a prefix
 * of the selector's log, absorbed from every arm at once: its Q is the
 * log's start (the rows after it are the retained log, whatever ids a
 * restore gives them) and its C the selector's rows absorbed.
 */
void
clock_base_rewind(StateHeader *st)
{
	LogPosition q;
	double		count;

	clock_base(st, &q, &count);
	clock_set_base(st, LOG_START, count);
}

/* The ids of a selector's arms, as an int4[] valid until SPI_finish. */
Datum
clock_arm_ids(int32 selector_id)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(selector_id)};
	bool		isnull;
	Datum		ids;

	spi_execute(spi_plan(&plan, "SELECT COALESCE(pg_catalog.array_agg(arm_id ORDER BY arm_id),"
						 " '{}'::pg_catalog.int4[]) FROM model_select.arms WHERE selector_id = $1", 1, types),
				args, NULL, true, 1, SPI_OK_SELECT, "read the arms of selector %d", selector_id);
	ids = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, SPI_SOLE_COLUMN, &isnull);
	return datumCopy(ids, false, -1);
}

/*
 * A checkpoint's fold of an arm whose ticks are counted: the selector's
 * rows after the state's Q before `end` (final), ticked by their
 * positions, of which the arm's after f->pos are folded; Q then moves to
 * the last of them.  A state of none starts at the count of the rows
 * retention absorbed (clock_origin()).  Returns the rows folded.  The
 * caller is connected to SPI (retention.c: the rows before a cut).
 */
int64
clock_fold_before(StateFold *f, int32 arm_id, LogPosition end)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[6] = {INT4ARRAYOID, XID8OID, INT8OID, XID8OID, FLOAT8OID, INT8OID};
	Datum		args[6];
	LogPosition q;
	double		count;
	Portal		portal;
	int64		before = f->totals.n;

	args[0] = clock_arm_ids(f->cfg->selector_id);
	if (f->st == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(f->cxt);

		f->st = state_alloc(f->cfg, 0, clock_ops(f->cfg->clock)->body_size(f->cfg, 0));
		MemoryContextSwitchTo(old);
		clock_set_base(f->st, LOG_START, clock_origin(args[0]));
	}
	clock_base(f->st, &q, &count);
	args[1] = FullTransactionIdGetDatum(q.tx);
	args[2] = Int64GetDatum(q.seq);
	args[3] = FullTransactionIdGetDatum(end.tx);
	args[4] = Float8GetDatum(count);
	args[5] = Int64GetDatum(end.seq);
	portal = SPI_cursor_open(NULL,
							 spi_plan(&plan,
									  "SELECT " FOLD_COLUMNS ", ($5 + pg_catalog.row_number() OVER"
									  " (ORDER BY r.tx, r.seq))::float8, r.arm_id"
									  " FROM model_select.rewards r WHERE r.arm_id = ANY ($1)"
									  " AND r.tx >= $2 AND (r.tx, r.seq) > ($2, $3) AND (r.tx, r.seq) < ($4, $6)"
									  " ORDER BY r.tx, r.seq", 6, types),
							 args, NULL, false);
	for (;;)
	{
		uint64		run = 0;

		SPI_cursor_fetch(portal, true, CLOCK_BATCH);
		if (SPI_processed == 0)
			break;
		count += (double) SPI_processed;
		q = fold_row_position(SPI_tuptable, SPI_processed - 1);
		/* fold the arm's rows after f->pos, in runs */
		for (uint64 i = 0; i <= SPI_processed; i++)
		{
			bool		mine = i < SPI_processed &&
				spi_int32(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, FOLD_COL_ARM) == arm_id &&
				log_position_cmp(fold_row_position(SPI_tuptable, i), f->pos) > 0;

			if (!mine)
			{
				if (i > run)
					fold_rows(f, SPI_tuptable, run, i);
				run = i + 1;
			}
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	clock_set_base(f->st, q, count);
	return f->totals.n - before;
}

/*
 * A checkpoint's fold of an arm's final rows (below `below`) on any clock:
 * fold_log(), or on a clock whose ticks are counted across the selector's
 * arms the selector's rows since Q, *moved telling whether Q moved (a moved
 * Q is stored even with no row of the arm: readers count from it).
 * Returns the rows folded.  The caller is connected to SPI.
 */
int64
clock_fold_log(StateFold *f, int32 arm_id, FullTransactionId below, bool build, bool *moved)
{
	LogPosition before;
	LogPosition after;
	double		count;
	int64		folded;

	*moved = false;
	if (!clock_ops(f->cfg->clock)->ticks_across_arms)
		return fold_log(f, arm_id, true, below, build);
	clock_base(f->st, &before, &count);
	folded = clock_fold_before(f, arm_id, (LogPosition) {below, 0});
	clock_base(f->st, &after, &count);
	*moved = log_position_cmp(before, after) != 0;
	return folded;
}
