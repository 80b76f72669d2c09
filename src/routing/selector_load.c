/*
 * selector_load.c — loading a selector for scoring: its configuration, owner
 * and grants, its arms with their checkpoints (one query), and the rewards
 * logged after each arm's cached base (a second one), read as the extension
 * owner and folded through the arm cache (model_cache.c).  Every reader
 * thus scores exactly the fold of the log its snapshot sees.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/xid8.h"

#include "core/catalog.h"
#include "core/owner.h"
#include "core/privilege.h"
#include "learning/clock.h"
#include "routing/arm_cache.h"
#include "routing/model_cache.h"

/*
 * The selector query: the selector's CONFIG_COLUMNS (1-7), owner (8) and
 * grantees of route (9), then per arm (ordered by ordinal; one row of NULLs
 * when it has none) the arm's columns from ARM_COL on, its checkpoint's from
 * CKPT_COL on.
 */
#define OWNER_COL 8
#define GRANTEES_COL 9
#define ARM_COL 10				/* arm_id, name, ordinal, active */
#define CKPT_COL 14				/* version, xmin, settings_version, position, state */

/* The selector query's checkpoint columns of row i. */
static void
checkpoint_row(const SelectorConfig *cfg, SPITupleTable *tt, uint64 i, CheckpointRow *ck)
{
	HeapTuple	row = tt->vals[i];
	TupleDesc	desc = tt->tupdesc;
	bool		isnull;

	memset(ck, 0, sizeof(*ck));
	ck->version = DatumGetInt64(SPI_getbinval(row, desc, CKPT_COL, &isnull));
	if (isnull)
		return;					/* no checkpoint row: fold the whole log */
	ck->xmin = DatumGetInt64(SPI_getbinval(row, desc, CKPT_COL + 1, &isnull));
	ck->valid = DatumGetInt32(SPI_getbinval(row, desc, CKPT_COL + 2, &isnull)) == cfg->settings_version;
	checkpoint_position_from_row(row, desc, CKPT_COL + 3, &ck->pos, &ck->totals);
	ck->state = SPI_getbinval(row, desc, CKPT_COL + 9, &isnull);
	if (isnull)
		ck->state = (Datum) 0;
}

/*
 * The visible rows after every entry's base (FOLD_COLUMNS, then the arm's
 * index + 1), by arm index then canonical order: the lateral subquery
 * orders each arm's rows and runs once per arm in the order of the array
 * (a lateral reference makes a nested loop), so no sort of the whole is
 * needed (arms_load checks the arm order).  The table stays valid until
 * SPI_finish.
 */
static SPITupleTable *
rows_after_bases(ModelCacheEntry **entries, int narms)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[3] = {INT4ARRAYOID, XID8ARRAYOID, INT8ARRAYOID};
	Datum	   *ids = palloc(sizeof(Datum) * Max(narms, 1));
	Datum	   *txs = palloc(sizeof(Datum) * Max(narms, 1));
	Datum	   *seqs = palloc(sizeof(Datum) * Max(narms, 1));
	Datum		args[3];

	for (int i = 0; i < narms; i++)
	{
		ids[i] = Int32GetDatum(entries[i]->arm_id);
		txs[i] = FullTransactionIdGetDatum(entries[i]->fold.pos.tx);
		seqs[i] = Int64GetDatum(entries[i]->fold.pos.seq);
	}
	args[0] = PointerGetDatum(construct_array(ids, narms, INT4OID, 4, true, TYPALIGN_INT));
	args[1] = PointerGetDatum(construct_array(txs, narms, XID8OID, 8, FLOAT8PASSBYVAL,
											  TYPALIGN_DOUBLE));
	args[2] = PointerGetDatum(construct_array(seqs, narms, INT8OID, 8, FLOAT8PASSBYVAL,
											  TYPALIGN_DOUBLE));
	spi_execute(spi_plan(&plan,
						 "SELECT " FOLD_COLUMNS ", b.i"
						 " FROM unnest($1, $2, $3) WITH ORDINALITY AS b(arm_id, tx, seq, i)"
						 " CROSS JOIN LATERAL (SELECT " FOLD_COLUMNS " FROM model_select.rewards r"
						 "   WHERE r.arm_id = b.arm_id AND (r.tx, r.seq) > (b.tx, b.seq)"
						 "   ORDER BY r.tx, r.seq) r",
						 3, types), args, NULL, true, 0, SPI_OK_SELECT, "read the pending rewards");
	return SPI_tuptable;
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
	Selector   *sel;
} LoadCall;

/* Every arm's identity and cache entry from the arms query, then its rows. */
static void
arms_load(Selector *sel, MemoryContext caller, SPITupleTable *tt, FullTransactionId horizon)
{
	ModelCacheEntry **entries = palloc(sizeof(ModelCacheEntry *) * Max(sel->narms, 1));
	SPITupleTable *rows;
	uint64		nrows,
				next = 0;
	MemoryContext old = CurrentMemoryContext;
	bool		clocked = sel->cfg.clock != CLOCK_ARM;
	int			index_column = clocked ? CLOCK_TICK_COLUMN + 1 : 6;
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
		checkpoint_row(&sel->cfg, tt, i, &ck);
		entries[i] = model_cache_entry(&sel->cfg, arm->arm_id, &ck, horizon);
	}
	rows = clocked ? clocked_rows_after_bases(sel->cfg.clock, entries, sel->narms, &now)
		: rows_after_bases(entries, sel->narms);
	nrows = SPI_processed;
	for (int i = 0; i < sel->narms; i++)
	{
		ModelCacheEntry *entry = entries[i];
		uint64		first = next;

		while (next < nrows && spi_int64(rows->vals[next], rows->tupdesc, index_column) == i + 1)
			next++;
		PG_TRY();
		{
			model_cache_absorb(entry, rows, first, next, horizon, now);
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
	static SPIPlanPtr plan = NULL;
	LoadCall   *call = arg;
	Oid			types[2] = {TEXTOID, TEXTARRAYOID};
	Datum		args[2];
	Selector   *sel;
	SPITupleTable *tt;
	bool		isnull;

	spi_level = spi_connect();
	sel = call->sel = MemoryContextAllocZero(call->caller, sizeof(Selector));
	sel->name = MemoryContextStrdup(call->caller, call->name);
	args[0] = CStringGetTextDatum(call->name);
	args[1] = selector_privilege_names(SELECTOR_ROUTE);
	if (spi_execute(spi_plan(&plan,
							 "SELECT " CONFIG_COLUMNS_OF("s") ", s.owner, " SELECTOR_GRANTEES_COLUMN("s", "$2") ","
							 " a.arm_id, a.name, a.ordinal, a.active, st.version,"
							 " st.xmin::text::bigint, st.settings_version, "
							 CHECKPOINT_POSITION_COLUMNS ", st.state"
							 " FROM model_select.selectors s"
							 " LEFT JOIN model_select.arms a ON a.selector_id = s.selector_id"
							 " LEFT JOIN model_select.arm_state st ON st.arm_id = a.arm_id"
							 " WHERE s.name = $1 ORDER BY a.ordinal",
							 2, types), args, NULL, true, 0, SPI_OK_SELECT,
					"read selector \"%s\"", call->name) == 0)
		selector_unknown(call->name);
	tt = SPI_tuptable;
	config_from_row(&sel->cfg, tt->vals[0], tt->tupdesc, 1);
	/* at every load, cached models or not: a revoke takes effect at once */
	selector_check_privilege_given(sel->cfg.selector_id, call->name, SELECTOR_ROUTE,
								   DatumGetObjectId(spi_datum(tt->vals[0], tt->tupdesc, OWNER_COL)),
								   spi_datum(tt->vals[0], tt->tupdesc, GRANTEES_COL));
	(void) SPI_getbinval(tt->vals[0], tt->tupdesc, ARM_COL, &isnull);
	sel->narms = isnull ? 0 : (int) SPI_processed;
	sel->arms = MemoryContextAllocZero(call->caller, sizeof(ArmInfo) * Max(sel->narms, 1));
	arms_load(sel, call->caller, tt, shared_horizon());
	spi_finish(spi_level);
}

/*
 * Load a selector by name with every arm and its decoded model.  The result
 * is allocated in the caller's memory context.
 */
Selector *
selector_load(const char *name)
{
	LoadCall	call = {name, CurrentMemoryContext, NULL};

	run_as_extension_owner(selector_load_as_owner, &call);
	return call.sel;
}

