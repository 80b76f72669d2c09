/*
 * fold.c — folding reward-log rows into an arm's state (see fold.h).
 */
#include "postgres.h"

#include "miscadmin.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/xid8.h"

#include "model/catalog.h"
#include "model/context.h"
#include "model/reward_value.h"
#include "model/state_store.h"
#include "model/table_decisions.h"
#include "model/tags.h"
#include "learning/fold.h"
#include "model/clock_ops.h"
#include "model/registry.h"
#include "pg/float_text.h"
#include "pg/index_read.h"

/* Rows fetched per round trip when folding a log. */
#define FOLD_BATCH 4096

/* (starting small: a fold whose state is a shared version holds nothing) */
static MemoryContext
fold_context(MemoryContext parent)
{
	return AllocSetContextCreate(parent, "model_select fold", ALLOCSET_START_SMALL_SIZES);
}

/*
 * Start folding onto st (NULL: empty), which the fold copies; pos and totals
 * describe what st already holds.
 */
void
fold_begin(StateFold *f, const SelectorConfig *cfg, StateHeader *st, LogPosition pos,
		   const FoldTotals *totals)
{
	f->cfg = cfg;
	f->cxt = fold_context(CurrentMemoryContext);
	f->st = NULL;
	if (st != NULL)
	{
		f->st = MemoryContextAlloc(f->cxt, VARSIZE(st));
		memcpy(f->st, st, VARSIZE(st));
	}
	f->pos = pos;
	if (totals)
		f->totals = *totals;
	else
		memset(&f->totals, 0, sizeof(f->totals));
}

/*
 * fold_begin onto arm_id's stored state `stored` (arm_state.state, (Datum) 0:
 * none), read straight into the fold's context rather than read and copied
 * (a pak_ucb state takes tens of MB).  read_only as for state_store_read().
 */
void
fold_begin_stored(StateFold *f, const SelectorConfig *cfg, int32 arm_id, Datum stored,
				  bool read_only, LogPosition pos, const FoldTotals *totals)
{
	fold_begin(f, cfg, NULL, pos, totals);
	if (stored != (Datum) 0)
	{
		MemoryContext old = MemoryContextSwitchTo(f->cxt);

		f->st = state_store_read(cfg, arm_id, stored, read_only);
		MemoryContextSwitchTo(old);
	}
}

LogPosition
fold_row_position(SPITupleTable *tt, uint64 row)
{
	LogPosition p;
	bool		isnull;

	p.tx = DatumGetFullTransactionId(SPI_getbinval(tt->vals[row], tt->tupdesc, FOLD_COL_TX, &isnull));
	p.seq = DatumGetInt64(SPI_getbinval(tt->vals[row], tt->tupdesc, FOLD_COL_SEQ, &isnull));
	return p;
}

/*
 * Row i's context as stored, and its tags (*tags, NULL for none): its own,
 * or its decision's.  A reward
 * by decision_id stores none (FOLD_CONTEXT): the SQL that reads the log
 * joins its decision's, but the readers, which read the log through its
 * index (selector_load.c), leave it NULL, and it is read here, through the
 * decisions' primary key (*decisions: opened at the first need), only for
 * the rows a fold takes: the rows a published version or a kept overlay
 * already holds need only their positions.  The row is visible, so its
 * decision is; a real[] context is returned as it is, and
 * context_from_array() reads it as the same float8 values.
 */
static Datum
row_context(SPITupleTable *tt, uint64 i, Relation *decisions, ArrayType **tags)
{
	Datum		context[DECISIONS_NCOLUMNS];
	bool		context_null[DECISIONS_NCOLUMNS];
	bool		isnull;
	Datum		ctx = SPI_getbinval(tt->vals[i], tt->tupdesc, FOLD_COL_CONTEXT, &isnull);
	Datum		decision;

	if (!isnull)
	{
		Datum		row_tags = SPI_getbinval(tt->vals[i], tt->tupdesc, FOLD_COL_TAGS, &isnull);

		*tags = isnull ? NULL : DatumGetArrayTypeP(row_tags);
		return ctx;
	}
	decision = SPI_getbinval(tt->vals[i], tt->tupdesc, FOLD_COL_DECISION, &isnull);
	if (*decisions == NULL && !isnull)
		*decisions = own_table_open("decisions");
	if (isnull || !own_row_by_key(*decisions, "decision_id", F_INT8EQ, decision,
								  DECISIONS_NCOLUMNS, decisions_columns, context, context_null) ||
		(context_null[DECISIONS_CONTEXT] && context_null[DECISIONS_CONTEXT_REAL]))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("a logged reward has no context and no decision that holds one")));
	*tags = context_null[DECISIONS_TAGS] ? NULL : DatumGetArrayTypeP(context[DECISIONS_TAGS]);
	return context_null[DECISIONS_CONTEXT] ? context[DECISIONS_CONTEXT_REAL] : context[DECISIONS_CONTEXT];
}

/*
 * The learned value of row i; x (row_dim doubles) gets its prepared context
 * and its cost columns.
 * Stored contexts were validated on insert; context_from_array checks them
 * again, so a damaged row is an error, not a crash.
 */
static double
row_value(StateFold *f, SPITupleTable *tt, uint64 i, double *x, Relation *decisions)
{
	HeapTuple	row = tt->vals[i];
	bool		isnull,
				cost_null;
	double		reward = DatumGetFloat8(SPI_getbinval(row, tt->tupdesc, FOLD_COL_REWARD, &isnull));
	Datum		cost = SPI_getbinval(row, tt->tupdesc, FOLD_COL_COST, &cost_null);
	double		cost_value = cost_null ? 0 : DatumGetFloat8(cost);
	ArrayType  *tags;
	ArrayType  *context = DatumGetArrayTypeP(row_context(tt, i, decisions, &tags));
	double	   *raw = context_read(f->cfg, context, tags);

	/* a log checked under other settings may hold what these refuse */
	if (!(reward >= f->cfg->reward_min && reward <= f->cfg->reward_max))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("the reward log holds reward %s, outside the selector's range [%s, %s]",
						exact_text(reward), exact_text(f->cfg->reward_min),
						exact_text(f->cfg->reward_max)),
				 errhint("Keep reward_min and reward_max around every logged reward.")));
	memcpy(x, raw, sizeof(double) * f->cfg->dim);
	pfree(raw);
	context_prepare(f->cfg, x);
	f->totals.n++;
	f->totals.reward_sum += reward;
	if (!cost_null)
	{
		f->totals.cost_sum += DatumGetFloat8(cost);
		f->totals.cost_n++;
		(void) SPI_getbinval(row, tt->tupdesc, FOLD_COL_DECISION, &isnull);
		if (!isnull)
		{
			f->totals.spend_sum += DatumGetFloat8(cost);
			f->totals.spend_n++;
		}
	}
	f->pos = fold_row_position(tt, i);
	row_set_cost(f->cfg, x, cost_null, cost_value);
	return learned_value(f->cfg, reward, cost_null, cost_value);
}

/* Row i's tick, the query's FOLD_COL_TICK. */
static double
row_tick(const ClockOps *clock, SPITupleTable *tt, uint64 i)
{
	bool		isnull;

	return clock->tick(SPI_getbinval(tt->vals[i], tt->tupdesc, FOLD_COL_TICK, &isnull));
}

/* Append one prepared row to the fold: in place, or a new state in a context of its own. */
static void
fold_append(StateFold *f, const ClockOps *clock, const double *x, double r, double tick)
{
	MemoryContext next = fold_context(MemoryContextGetParent(f->cxt));
	MemoryContext old = MemoryContextSwitchTo(next);
	StateHeader *appended = clock->append(f->cfg, f->st, x, r, tick);

	MemoryContextSwitchTo(old);
	if (appended == f->st)
		MemoryContextDelete(next);	/* updated in place */
	else
	{
		MemoryContextDelete(f->cxt);
		f->cxt = next;
		f->st = appended;
	}
}

/*
 * Append m prepared rows at once where the policy can (PolicyOps.append_rows:
 * in place, with the bits of m appends): on the arm's own clock, with no
 * restarts, onto a state.  false: the caller appends them one by one.
 */
static bool
fold_append_rows(StateFold *f, int m, const double *X, const double *r)
{
	append_rows_fn append_rows = policy_ops(f->cfg->policy)->append_rows;

	return m > 1 && append_rows != NULL && f->st != NULL && f->cfg->clock == CLOCK_ARM &&
		f->cfg->restart_every == 0 && append_rows(f->cfg, f->st, m, X, r);
}

/* Rows read and prepared before they are appended together. */
#define FOLD_CHUNK 32

/*
 * Fold rows [first, last) of tt (FOLD_COLUMNS, then a tick if the clock
 * has ticks; canonical order): read FOLD_CHUNK at a time, then appended
 * together where the policy can, else one by one.
 */
void
fold_rows(StateFold *f, SPITupleTable *tt, uint64 first, uint64 last)
{
	MemoryContext parent = MemoryContextGetParent(f->cxt);
	int			chunk = (int) Max(Min(FOLD_CHUNK, last - first), 1);
	double	   *X = MemoryContextAlloc(parent, sizeof(double) * f->cfg->row_dim * chunk);
	double		r[FOLD_CHUNK];
	double		tick[FOLD_CHUNK];
	const ClockOps *clock = clock_ops(f->cfg->clock);
	Relation	decisions = NULL;

	for (uint64 i = first; i < last; i += FOLD_CHUNK)
	{
		int			m = (int) Min(FOLD_CHUNK, last - i);

		for (int t = 0; t < m; t++)
		{
			r[t] = row_value(f, tt, i + t, X + (Size) t * f->cfg->row_dim, &decisions);
			tick[t] = clock->tick ? row_tick(clock, tt, i + t) : 0;
		}
		if (!fold_append_rows(f, m, X, r))
			for (int t = 0; t < m; t++)
				fold_append(f, clock, X + (Size) t * f->cfg->row_dim, r[t], tick[t]);
	}
	pfree(X);
	if (decisions != NULL)
		own_table_close(decisions);
}

/*
 * Fold rows [first, last) of tt onto an empty state at once: the policy's
 * build from scratch (a full factorisation), the reference rebuild_state
 * uses.
 */
void
fold_build(StateFold *f, SPITupleTable *tt, uint64 first, uint64 last)
{
	int			dim = f->cfg->row_dim;
	uint64		nrows = last - first;
	double	   *X,
			   *r;
	Relation	decisions = NULL;
	MemoryContext old;

	Assert(f->st == NULL);
	if (nrows == 0)
		return;
	X = palloc(sizeof(double) * nrows * dim);
	r = palloc(sizeof(double) * nrows);
	for (uint64 i = 0; i < nrows; i++)
		r[i] = row_value(f, tt, first + i, X + i * dim, &decisions);
	if (decisions != NULL)
		own_table_close(decisions);
	old = MemoryContextSwitchTo(f->cxt);
	f->st = state_build(f->cfg, (int) nrows, X, r);
	MemoryContextSwitchTo(old);
	pfree(X);
	pfree(r);
}

/*
 * Fold rows [first, last) of tt: appended one by one, or built at once onto
 * an empty fold with build (rebuild_state's definition; a clocked state is
 * its rows, so it is always appended, clock_ops.h).  A state that
 * grows with its rows (pak_ucb, bkb) is also built when there is more than
 * one row: appending copies it.  Fixed-size states append in O(p²)
 * whatever n.  Appending agrees to the last bit with readers and replay(),
 * which fold one reward at a time, whenever checkpoints happen; so does
 * pak_ucb's build, unless the rows would slide a window (PolicyOps.slides),
 * and then they are appended (bkb's resampled dictionary does not).
 */
void
fold_some(StateFold *f, SPITupleTable *tt, uint64 first, uint64 last, bool build)
{
	const PolicyOps *ops = policy_ops(f->cfg->policy);
	bool		builds = last - first > 1 && ops->keeps_rows &&
		!(ops->slides != NULL && ops->slides(f->cfg, (int) Min(last - first, INT_MAX)));

	if (f->st == NULL && f->totals.n == 0 && !clock_ops(f->cfg->clock)->ages && (build || builds))
		fold_build(f, tt, first, last);
	else
		fold_rows(f, tt, first, last);
}

/* fold_log's query; rows of a clock with a tick column also give their tick (%s). */
#define FOLD_LOG_QUERY \
	"SELECT " FOLD_COLUMNS "%s FROM model_select.rewards r" \
	" WHERE r.arm_id = $1 AND (r.tx, r.seq) > ($2, $3)" \
	" AND r.tx < $4 ORDER BY r.tx, r.seq"

/*
 * The plan, per clock, of a query of four arguments (types) whose "%s"
 * takes the clock's tick column, if any.
 */
static SPIPlanPtr
fold_plan(SPIPlanPtr *plans, const char *query, const ClockOps *clock, Oid *types)
{
	if (plans[clock->kind] == NULL)
		spi_plan(&plans[clock->kind],
				 psprintf(query, clock->tick_column ? psprintf(", r.%s", clock->tick_column) : ""),
				 4, types);
	return plans[clock->kind];
}

/* Fold the rows of an open portal into f, in batches (fold_some), and close it. */
static int64
fold_portal(StateFold *f, Portal portal, bool build)
{
	int64		folded = 0;

	for (;;)
	{
		SPI_cursor_fetch(portal, true, FOLD_BATCH);
		if (SPI_processed == 0)
			break;
		fold_some(f, SPI_tuptable, 0, SPI_processed, build);
		folded += (int64) SPI_processed;
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	return folded;
}

/*
 * Fold an arm's log rows after f->pos with tx < below into f, in batches
 * (fold_some).  fresh_snapshot: read under a new snapshot (checkpoints: every
 * row below a final horizon, whatever the caller's snapshot saw); else under
 * the current statement's snapshot (readers).  Returns the rows folded.  The
 * caller is connected to SPI.
 */
int64
fold_log(StateFold *f, int32 arm_id, bool fresh_snapshot, FullTransactionId below, bool build)
{
	static SPIPlanPtr plans[CLOCK_COUNT];
	const ClockOps *clock = clock_ops(f->cfg->clock);
	Oid			types[4] = {INT4OID, XID8OID, INT8OID, XID8OID};
	Datum		args[4];

	args[0] = Int32GetDatum(arm_id);
	args[1] = FullTransactionIdGetDatum(f->pos.tx);
	args[2] = Int64GetDatum(f->pos.seq);
	args[3] = FullTransactionIdGetDatum(below);
	return fold_portal(f, SPI_cursor_open(NULL, fold_plan(plans, FOLD_LOG_QUERY, clock, types), args,
										  NULL, !fresh_snapshot), build);
}

/*
 * An arm's first `rows` retained log rows in canonical order, then the rows
 * of transaction own_tx up to seq own_seq (none if own_tx is NULL).
 */
#define FOLD_PREFIX_QUERY \
	"SELECT " FOLD_COLUMNS "%s FROM (" \
	"(SELECT * FROM model_select.rewards WHERE arm_id = $1 ORDER BY tx, seq LIMIT $2)" \
	" UNION ALL (SELECT * FROM model_select.rewards WHERE arm_id = $1 AND tx = $3 AND seq <= $4)" \
	") r ORDER BY r.tx, r.seq"

/*
 * Fold into f (begun on the arm's base, holding its first f->totals.n
 * rewards) the arm's log rows up to its prefix of n rewards, then a
 * transaction's rows up to seq own_seq (own_tx invalid: none): a decision's
 * version and own rows (routing/decision_scores.c).  Under the current
 * statement's snapshot; the caller is connected to SPI.  Returns the rows
 * folded.
 */
int64
fold_prefix(StateFold *f, int32 arm_id, int64 n, FullTransactionId own_tx, int64 own_seq)
{
	static SPIPlanPtr plans[CLOCK_COUNT];
	const ClockOps *clock = clock_ops(f->cfg->clock);
	Oid			types[4] = {INT4OID, INT8OID, XID8OID, INT8OID};
	Datum		args[4];
	char		nulls[5] = "    ";

	Assert(n >= f->totals.n);
	args[0] = Int32GetDatum(arm_id);
	args[1] = Int64GetDatum(n - f->totals.n);
	args[2] = FullTransactionIdGetDatum(own_tx);
	args[3] = Int64GetDatum(own_seq);
	if (!FullTransactionIdIsValid(own_tx))
		nulls[2] = 'n';
	return fold_portal(f, SPI_cursor_open(NULL, fold_plan(plans, FOLD_PREFIX_QUERY, clock, types), args,
										  nulls, true), false);
}

/*
 * totals as the six SQL arguments n, reward_sum, cost_sum, cost_n,
 * spend_sum and spend_n (int8 or float8), in that order, into out.
 */
void
fold_totals_args(const FoldTotals *totals, Datum *out)
{
	out[0] = Int64GetDatum(totals->n);
	out[1] = Float8GetDatum(totals->reward_sum);
	out[2] = Float8GetDatum(totals->cost_sum);
	out[3] = Int64GetDatum(totals->cost_n);
	out[4] = Float8GetDatum(totals->spend_sum);
	out[5] = Int64GetDatum(totals->spend_n);
}

/* A stored checkpoint's position and totals, CHECKPOINT_POSITION_COLUMNS from first_col. */
void
checkpoint_position_from_row(HeapTuple row, TupleDesc desc, int first_col,
							 LogPosition *pos, FoldTotals *totals)
{
	Datum		values[CHECKPOINT_POSITION_NCOLUMNS];
	bool		isnull;

	for (int i = 0; i < CHECKPOINT_POSITION_NCOLUMNS; i++)
		values[i] = SPI_getbinval(row, desc, first_col + i, &isnull);
	checkpoint_position_from_values(values, pos, totals);
}

/* A stored checkpoint's position and totals from its CHECKPOINT_POSITION_COLUMNS values. */
void
checkpoint_position_from_values(const Datum *values, LogPosition *pos, FoldTotals *totals)
{
	pos->tx = DatumGetFullTransactionId(values[CKPT_POS_TX]);
	pos->seq = DatumGetInt64(values[CKPT_POS_SEQ]);
	totals->n = DatumGetInt64(values[CKPT_POS_N]);
	totals->reward_sum = DatumGetFloat8(values[CKPT_POS_REWARD_SUM]);
	totals->cost_sum = DatumGetFloat8(values[CKPT_POS_COST_SUM]);
	totals->cost_n = DatumGetInt64(values[CKPT_POS_COST_N]);
	totals->spend_sum = DatumGetFloat8(values[CKPT_POS_SPEND_SUM]);
	totals->spend_n = DatumGetInt64(values[CKPT_POS_SPEND_N]);
}
