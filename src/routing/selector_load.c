/*
 * selector_load.c — loading a selector for scoring: its configuration, owner
 * and grants, its arms with their checkpoints, and the rewards logged after
 * each arm's cached base, read as the extension owner through the tables'
 * indexes (index_read.h: a route() runs this every call) and folded through
 * the arm cache (model_cache.c).  Every reader thus scores exactly the fold
 * of the log its snapshot sees.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/xid8.h"

#include "model/catalog.h"
#include "model/context.h"
#include "pg/index_read.h"
#include "pg/owner.h"
#include "model/privilege.h"
#include "learning/clock.h"
#include "learning/arm_base.h"
#include "learning/learner_state.h"
#include "routing/arm_cache.h"
#include "routing/model_cache.h"

/*
 * The selector's rows (selector_rows): the selector's CONFIG_COLUMNS (1-7),
 * owner (8) and grantees of route (9), then per arm (ordered by ordinal; one
 * row of NULLs when it has none) the arm's columns from ARM_COL on, its
 * checkpoint's from CKPT_COL on.
 */
#define OWNER_COL 8
#define GRANTEES_COL 9
#define ARM_COL 10				/* arm_id, name, ordinal, active */
#define CKPT_COL 14				/* version, xmin, settings_version, position, state */
#define SELECTOR_NCOLS 25

static const char *const selector_columns[] = {
	"selector_id", "dim", "policy", "kernel", "settings", "seed", "settings_version", "owner"
};
static const char *const arm_columns[] = {"arm_id", "name", "ordinal", "active"};

/* The arm_state columns of CKPT_COL on, after arm_id (xmin: as xmin::text::bigint). */
static const char *const checkpoint_columns[] = {
	"arm_id", "version", "xmin", "settings_version", "ckpt_tx", "ckpt_seq", "n", "reward_sum", "cost_sum",
	"cost_n", "spend_sum", "spend_n", "state"
};
#define CKPT_NCOLS (lengthof(checkpoint_columns) - 1)

typedef struct CheckpointColumns
{
	Datum		values[lengthof(checkpoint_columns)];
	bool		nulls[lengthof(checkpoint_columns)];
} CheckpointColumns;

static int
checkpoint_arm_cmp(const void *a, const void *b)
{
	int32		x = DatumGetInt32(((const CheckpointColumns *) a)->values[0]);
	int32		y = DatumGetInt32(((const CheckpointColumns *) b)->values[0]);

	return (x > y) - (x < y);
}

/* The selector's arm_state rows (one scan of its index on selector_id), sorted by arm_id. */
static CheckpointColumns *
selector_checkpoints(Relation arm_state, Datum selector_id, int *n)
{
	static const char *const key[] = {"selector_id"};
	int			capacity = 8;
	CheckpointColumns *ck = palloc(sizeof(CheckpointColumns) * capacity);
	IndexRead	r;
	HeapTuple	row;

	*n = 0;
	index_read_begin(&r, arm_state, 1, key);
	index_read_key(&r, "selector_id", BTEqualStrategyNumber, F_INT4EQ, selector_id);
	while ((row = index_read_next(&r)) != NULL)
	{
		if (*n == capacity)
			ck = repalloc(ck, sizeof(CheckpointColumns) * (capacity *= 2));
		own_columns_copy(arm_state, row, lengthof(checkpoint_columns), checkpoint_columns,
						 ck[*n].values, ck[*n].nulls);
		ck[*n].values[2] = Int64GetDatum((int64) DatumGetTransactionId(ck[*n].values[2]));
		(*n)++;
	}
	index_read_end(&r);
	qsort(ck, *n, sizeof(CheckpointColumns), checkpoint_arm_cmp);
	return ck;
}

/* An arm's checkpoint columns (CKPT_COL on), or NULLs when it has no arm_state row. */
static void
checkpoint_columns_of(const CheckpointColumns *ck, int nck, Datum arm_id, Datum *values, bool *nulls)
{
	CheckpointColumns probe;
	const CheckpointColumns *found;

	probe.values[0] = arm_id;
	found = bsearch(&probe, ck, nck, sizeof(CheckpointColumns), checkpoint_arm_cmp);
	if (found == NULL)
		memset(nulls, true, sizeof(bool) * CKPT_NCOLS);
	else
	{
		memcpy(values, found->values + 1, sizeof(Datum) * CKPT_NCOLS);
		memcpy(nulls, found->nulls + 1, sizeof(bool) * CKPT_NCOLS);
	}
}

/*
 * What the query
 *   SELECT <the columns above> FROM selectors s
 *   LEFT JOIN arms a USING (selector_id) LEFT JOIN arm_state st USING (arm_id)
 *   WHERE s.name = $1 ORDER BY a.ordinal
 * would return, read through the indexes, once the caller's right to
 * route with the selector is checked.  No row: no such selector.
 */
static SPITupleTable *
selector_rows(const char *name)
{
	static TupleDesc desc = NULL;
	static const Oid types[SELECTOR_NCOLS] = {
		INT4OID, INT4OID, TEXTOID, TEXTOID, JSONBOID, INT8OID, INT4OID, REGROLEOID, REGROLEARRAYOID,
		INT4OID, TEXTOID, INT4OID, BOOLOID,
		INT8OID, INT8OID, INT4OID, XID8OID, INT8OID, INT8OID, FLOAT8OID, FLOAT8OID, INT8OID, FLOAT8OID, INT8OID,
		BYTEAOID
	};
	static const char *const name_key[] = {"name"};
	static const char *const arms_key[] = {"selector_id", "ordinal"};
	SPITupleTable *tt = result_table_new(result_desc(&desc, SELECTOR_NCOLS, types), 8);
	Relation	selectors = own_table_open("selectors");
	Relation	arms = own_table_open("arms");
	Relation	arm_state = own_table_open("arm_state");
	Datum		values[SELECTOR_NCOLS];
	bool		nulls[SELECTOR_NCOLS];
	IndexRead	by_name;
	IndexRead	by_selector;
	HeapTuple	row;
	CheckpointColumns *checkpoints;
	int			ncheckpoints;

	index_read_begin(&by_name, selectors, 1, name_key);
	index_read_key(&by_name, "name", BTEqualStrategyNumber, F_TEXTEQ, CStringGetTextDatum(name));
	if ((row = index_read_next(&by_name)) != NULL)
	{
		own_columns(selectors, row, lengthof(selector_columns), selector_columns, values, nulls);
		values[GRANTEES_COL - 1] = selector_grantees(DatumGetInt32(values[0]), SELECTOR_ROUTE);
		nulls[GRANTEES_COL - 1] = false;

		/*
		 * The caller's right, before any arm or state is read: a refused
		 * call costs the same whatever the selector's size, so its time
		 * tells nothing of another tenant's selector.  At every load, cached
		 * models or not: a revoke takes effect at once.
		 */
		selector_check_privilege_given(DatumGetInt32(values[0]), name, SELECTOR_ROUTE,
									   DatumGetObjectId(values[OWNER_COL - 1]),
									   values[GRANTEES_COL - 1]);
		checkpoints = selector_checkpoints(arm_state, values[0], &ncheckpoints);
		index_read_begin(&by_selector, arms, 2, arms_key);
		index_read_key(&by_selector, "selector_id", BTEqualStrategyNumber, F_INT4EQ, values[0]);
		while ((row = index_read_next(&by_selector)) != NULL)
		{
			own_columns(arms, row, lengthof(arm_columns), arm_columns, values + ARM_COL - 1, nulls + ARM_COL - 1);
			checkpoint_columns_of(checkpoints, ncheckpoints, values[ARM_COL - 1], values + CKPT_COL - 1,
								  nulls + CKPT_COL - 1);
			result_table_add(tt, heap_form_tuple(tt->tupdesc, values, nulls));
		}
		index_read_end(&by_selector);
		if (tt->numvals == 0)
		{
			memset(nulls + ARM_COL - 1, true, sizeof(bool) * (SELECTOR_NCOLS - ARM_COL + 1));
			result_table_add(tt, heap_form_tuple(tt->tupdesc, values, nulls));
		}
	}
	index_read_end(&by_name);
	own_table_close(arm_state);
	own_table_close(arms);
	own_table_close(selectors);
	return tt;
}

/*
 * The selector query's checkpoint columns of row i, arm arm_id's.  Without
 * a checkpoint under the current settings (none yet, or none restored:
 * arm_state is dumped empty) the whole log is folded onto the arm's base
 * (retention.c), which then stands for the checkpoint at the log's start.
 */
static void
checkpoint_row(const SelectorConfig *cfg, SPITupleTable *tt, uint64 i, int32 arm_id, CheckpointRow *ck)
{
	HeapTuple	row = tt->vals[i];
	TupleDesc	desc = tt->tupdesc;
	bool		isnull;

	memset(ck, 0, sizeof(*ck));
	ck->version = DatumGetInt64(SPI_getbinval(row, desc, CKPT_COL, &isnull));
	if (!isnull)
	{
		ck->xmin = DatumGetInt64(SPI_getbinval(row, desc, CKPT_COL + 1, &isnull));
		ck->valid = DatumGetInt32(SPI_getbinval(row, desc, CKPT_COL + 2, &isnull)) == cfg->settings_version;
		checkpoint_position_from_row(row, desc, CKPT_COL + 3, &ck->pos, &ck->totals);
		ck->state = SPI_getbinval(row, desc, CKPT_COL + 3 + CHECKPOINT_POSITION_NCOLUMNS, &isnull);
		if (isnull)
			ck->state = (Datum) 0;
	}
	if (!ck->valid)
	{
		ck->pos = LOG_START;
		ck->valid = arm_base_read(arm_id, &ck->totals, &ck->state);
	}
}

/*
 * A reward row's context (FOLD_CONTEXT, fold.h): its own, or its decision's
 * read through the decisions' primary key (*decisions: opened at the first
 * need), as float8[] -- a real[] one read as float8 is the same values.
 * values and nulls are the row's fold_columns; the row is visible, so its
 * decision is.
 */
static void
row_context(Relation *decisions, Datum *values, bool *nulls)
{
	static const char *const columns[] = {"context", "context_real"};
	Datum		context[2];
	bool		context_null[2];
	int			n;

	if (!nulls[2] || nulls[5])
		return;
	if (*decisions == NULL)
		*decisions = own_table_open("decisions");
	if (!own_row_by_key(*decisions, "decision_id", F_INT8EQ, values[5], 2, columns, context, context_null))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("decision " INT64_FORMAT " of a logged reward does not exist",
						DatumGetInt64(values[5]))));
	if (!context_null[0])
		values[2] = context[0];
	else if (!context_null[1])
	{
		double	   *x = float_array(DatumGetArrayTypeP(context[1]), &n, "context", NULL);

		values[2] = PointerGetDatum(float8_array(x, NULL, n));
	}
	nulls[2] = context_null[0] && context_null[1];
}

/*
 * The visible rows after every entry's base (FOLD_COLUMNS, then the arm's
 * index + 1), by arm index then canonical order: what
 *   SELECT FOLD_COLUMNS, b.i FROM unnest(arm ids, base positions) WITH ORDINALITY b
 *   CROSS JOIN LATERAL (SELECT ... FROM rewards r WHERE r.arm_id = b.arm_id
 *                       AND (r.tx, r.seq) > (b.tx, b.seq) ORDER BY r.tx, r.seq)
 * returns, read through the log's index on (arm_id, tx, seq).  Not inlined
 * into arms_load(), whose PG_TRY would make its locals volatile.
 */
static pg_noinline SPITupleTable *
rows_after_bases(ModelCacheEntry **entries, int narms)
{
	static TupleDesc desc = NULL;
	static const Oid types[] = {XID8OID, INT8OID, FLOAT8ARRAYOID, FLOAT8OID, FLOAT8OID, INT8OID, INT8OID};
	static const char *const key[] = {"arm_id", "tx", "seq"};
	static const char *const fold_columns[] = {"tx", "seq", "context", "reward", "cost", "decision_id"};
	Relation	rewards = own_table_open("rewards");
	Relation	decisions = NULL;
	SPITupleTable *tt = result_table_new(result_desc(&desc, lengthof(types), types), narms);
	Datum		values[lengthof(types)];
	bool		nulls[lengthof(types)];

	for (int i = 0; i < narms; i++)
	{
		LogPosition base = entries[i]->fold.pos;
		IndexRead	r;
		HeapTuple	row;

		index_read_begin(&r, rewards, lengthof(key), key);
		index_read_key(&r, "arm_id", BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(entries[i]->arm_id));
		index_read_key(&r, "tx", BTGreaterEqualStrategyNumber, F_XID8GE, FullTransactionIdGetDatum(base.tx));
		while ((row = index_read_next(&r)) != NULL)
		{
			own_columns(rewards, row, lengthof(fold_columns), fold_columns, values, nulls);
			if (FullTransactionIdEquals(DatumGetFullTransactionId(values[0]), base.tx) &&
				DatumGetInt64(values[1]) <= base.seq)
				continue;
			row_context(&decisions, values, nulls);
			values[FOLD_NCOLUMNS] = Int64GetDatum(i + 1);
			nulls[FOLD_NCOLUMNS] = false;
			result_table_add(tt, heap_form_tuple(tt->tupdesc, values, nulls));
		}
		index_read_end(&r);
	}
	if (decisions != NULL)
		own_table_close(decisions);
	own_table_close(rewards);
	return tt;
}

/*
 * rows_after_bases for a clocked selector: also each row's tick (column
 * CLOCK_TICK_COLUMN, the arm's index after it) and the selector's clock.
 */
static SPITupleTable *
clocked_rows_after_bases(ClockKind clock, ModelCacheEntry **entries, int narms, double *now)
{
	int32	   *ids = palloc(sizeof(int32) * Max(narms, 1));
	LogPosition *pos = palloc(sizeof(LogPosition) * Max(narms, 1));
	StateHeader **bases = palloc(sizeof(StateHeader *) * Max(narms, 1));

	for (int i = 0; i < narms; i++)
	{
		ids[i] = entries[i]->arm_id;
		pos[i] = entries[i]->fold.pos;
		bases[i] = entries[i]->fold.st;
	}
	return clock_rows_after(clock, narms, ids, pos, bases, now);
}

typedef struct LoadCall
{
	const char *name;
	MemoryContext caller;
	LoadMode	mode;
	Selector   *sel;
} LoadCall;

/* Every arm's identity and cache entry from the arms query, then its rows. */
static void
arms_load(Selector *sel, MemoryContext caller, SPITupleTable *tt, FullTransactionId horizon,
		  LoadMode mode)
{
	ModelCacheEntry **entries = palloc(sizeof(ModelCacheEntry *) * Max(sel->narms, 1));
	SPITupleTable *rows;
	uint64		nrows,
				next = 0;
	MemoryContext old = CurrentMemoryContext;
	bool		clocked = sel->cfg.clock != CLOCK_ARM;
	int			index_column = clocked ? CLOCK_TICK_COLUMN + 1 : FOLD_NCOLUMNS + 1;
	double		now = 0;

	uint64		load = model_cache_next_load();

	for (int i = 0; i < sel->narms; i++)
	{
		HeapTuple	row = tt->vals[i];
		ArmInfo    *arm = &sel->arms[i];
		bool		isnull;
		CheckpointRow ck;

		arm->arm_id = DatumGetInt32(SPI_getbinval(row, tt->tupdesc, ARM_COL, &isnull));
		arm->name = MemoryContextStrdup(caller, TextDatumGetCString(SPI_getbinval(row, tt->tupdesc, ARM_COL + 1, &isnull)));
		arm->ordinal = DatumGetInt32(SPI_getbinval(row, tt->tupdesc, ARM_COL + 2, &isnull));
		arm->active = DatumGetBool(SPI_getbinval(row, tt->tupdesc, ARM_COL + 3, &isnull));
		checkpoint_row(&sel->cfg, tt, i, arm->arm_id, &ck);
		entries[i] = model_cache_entry(&sel->cfg, arm->arm_id, &ck, horizon, mode);
	}
	rows = clocked ? clocked_rows_after_bases(sel->cfg.clock, entries, sel->narms, &now)
		: rows_after_bases(entries, sel->narms);
	nrows = rows->numvals;
	for (int i = 0; i < sel->narms; i++)
	{
		ModelCacheEntry *entry = entries[i];
		uint64		first = next;

		while (next < nrows && spi_int64(rows->vals[next], rows->tupdesc, index_column) == i + 1)
			next++;
		PG_TRY();
		{
			model_cache_absorb(entry, rows, first, next, horizon, now, mode);
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(old);
			model_cache_remove(entry);
			PG_RE_THROW();
		}
		PG_END_TRY();
		model_cache_touch(entry, load);
		sel->arms[i].n = entry->totals.n;
		sel->arms[i].cost_sum = entry->totals.cost_sum;
		sel->arms[i].cost_n = entry->totals.cost_n;
		sel->arms[i].spend_sum = entry->totals.spend_sum;
		sel->arms[i].spend_n = entry->totals.spend_n;
		sel->arms[i].version = entry->version;
		sel->arms[i].xmin = entry->xmin;
		sel->arms[i].model = entry->model;
	}
	if (next != nrows)
		elog(ERROR, "the pending rewards of selector \"%s\" came out of arm order", sel->name);
	model_cache_fit(load);
}

static void
selector_load_as_owner(void *arg)
{
	int			spi_level;
	LoadCall   *call = arg;
	Selector   *sel;
	SPITupleTable *tt;
	bool		isnull;

	spi_level = spi_connect();
	sel = call->sel = MemoryContextAllocZero(call->caller, sizeof(Selector));
	sel->name = MemoryContextStrdup(call->caller, call->name);
	tt = selector_rows(call->name);
	if (tt->numvals == 0)
		selector_unknown(call->name);
	config_from_row(&sel->cfg, tt->vals[0], tt->tupdesc, 1);
	(void) SPI_getbinval(tt->vals[0], tt->tupdesc, ARM_COL, &isnull);
	sel->narms = isnull ? 0 : (int) tt->numvals;
	sel->arms = MemoryContextAllocZero(call->caller, sizeof(ArmInfo) * Max(sel->narms, 1));
	arms_load(sel, call->caller, tt, shared_horizon(), call->mode);
	spi_finish(spi_level);
}

/*
 * Load a selector by name with every arm and its decoded model.  The result
 * is allocated in the caller's memory context.  While the learner publishes
 * this database's bases, they are taken from it (LOAD_FOLLOW).
 */
Selector *
selector_load(const char *name)
{
	LoadCall	call = {name, CurrentMemoryContext, learner_serving() ? LOAD_FOLLOW : LOAD_OWN, NULL};

	run_as_extension_owner(selector_load_as_owner, &call);
	return call.sel;
}

/*
 * The learner's load: every arm's base brought to the final rows and, when
 * it grew, published in the shared cache (LOAD_PUBLISH; growing states only
 * if `growing`, else LOAD_PUBLISH_FIXED).  Nothing is decoded or handed out.
 * Returns the versions published.
 */
int64
selector_publish(const char *name, bool growing)
{
	LoadCall	call = {name, CurrentMemoryContext, growing ? LOAD_PUBLISH : LOAD_PUBLISH_FIXED, NULL};
	SharedCacheStats before,
				after;

	if (!shared_cache_stats(&before))
		return 0;
	run_as_extension_owner(selector_load_as_owner, &call);
	(void) shared_cache_stats(&after);
	return after.publishes - before.publishes;
}
