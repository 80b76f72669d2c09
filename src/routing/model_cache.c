/*
 * model_cache.c — loading a selector for scoring: every arm's state as the
 * fold of its log (its stored checkpoint plus the rewards logged after it),
 * decoded and kept in a backend-local cache.
 *
 * Per arm the cache keeps the checkpoint it started from (arm_state row
 * version and xmin, settings version), the positions of the pending rewards
 * it folded onto it, the folded state and its decoded model.  Each load lists
 * the pending positions visible to the statement (one index scan per arm):
 * when the cached ones are a prefix, only the new rows are read and folded;
 * when a row appeared in between (a lower tx committed later) or the
 * checkpoint moved, the arm is folded again from its checkpoint.  So every
 * reader scores exactly the fold of the log its snapshot sees.  Bounded by
 * MODEL_CACHE_MAX_ARMS entries.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/xid8.h"

#include "core/catalog.h"
#include "core/owner.h"
#include "learning/fold.h"
#include "policy/registry.h"

#define MODEL_CACHE_MAX_ARMS 1024

typedef struct ModelCacheEntry
{
	int32		arm_id;			/* hash key */
	int64		version;		/* of the checkpoint row folded from ... */
	int64		xmin;			/* ... and its xmin (rolled back versions) */
	int32		settings_version;
	SelectorConfig cfg;
	MemoryContext cxt;			/* everything below */
	StateFold	fold;
	int			npending;		/* positions folded after the checkpoint */
	int			maxpending;
	LogPosition *pending;
	MemoryContext model_cxt;	/* child of cxt */
	ArmModel   *model;			/* NULL: nothing folded */
} ModelCacheEntry;

static HTAB *model_cache = NULL;

/* Counters for model_select.cache_stats(): how often states were decoded. */
static int64 cache_decodes = 0;
static int64 cache_hits = 0;

static void
model_cache_init(void)
{
	HASHCTL		ctl;

	ctl.keysize = sizeof(int32);
	ctl.entrysize = sizeof(ModelCacheEntry);
	ctl.hcxt = CacheMemoryContext;
	model_cache = hash_create("model_select model cache", 64, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

void
model_cache_forget_all(void)
{
	HASH_SEQ_STATUS status;
	ModelCacheEntry *entry;

	if (model_cache == NULL)
		return;
	hash_seq_init(&status, model_cache);
	while ((entry = hash_seq_search(&status)) != NULL)
		MemoryContextDelete(entry->cxt);
	hash_destroy(model_cache);
	model_cache = NULL;
}

static void
model_cache_remove(ModelCacheEntry *entry)
{
	int32		arm_id = entry->arm_id;

	MemoryContextDelete(entry->cxt);
	hash_search(model_cache, &arm_id, HASH_REMOVE, NULL);
}

/* A stored checkpoint's identity and contents, from the arms query. */
typedef struct CheckpointRow
{
	int64		version;
	int64		xmin;
	bool		valid;			/* exists and matches the settings */
	LogPosition pos;
	FoldTotals	totals;
	Datum		state;			/* (Datum) 0: none */
} CheckpointRow;

/*
 * A fresh entry for an arm, holding its checkpoint (nothing pending yet).
 * The state is validated against the selector before anything reads it.
 */
static ModelCacheEntry *
entry_reset(const SelectorConfig *cfg, int32 arm_id, const CheckpointRow *ck)
{
	ModelCacheEntry *entry;
	bool		found;
	MemoryContext old;

	if (model_cache == NULL)
		model_cache_init();
	else if (hash_get_num_entries(model_cache) >= MODEL_CACHE_MAX_ARMS &&
			 hash_search(model_cache, &arm_id, HASH_FIND, NULL) == NULL)
	{
		model_cache_forget_all();
		model_cache_init();
	}
	entry = hash_search(model_cache, &arm_id, HASH_ENTER, &found);
	if (found)
		MemoryContextDelete(entry->cxt);
	entry->cxt = AllocSetContextCreate(CacheMemoryContext, "model_select arm model",
									   ALLOCSET_DEFAULT_SIZES);
	entry->model_cxt = NULL;
	entry->model = NULL;
	/* an error below must not leave a half-built entry behind */
	entry->version = -1;
	old = CurrentMemoryContext;
	PG_TRY();
	{
		StateHeader *st = NULL;

		MemoryContextSwitchTo(entry->cxt);
		entry->cfg = *cfg;
		if (ck->valid && ck->state != (Datum) 0)
			st = state_check(cfg, (bytea *) PG_DETOAST_DATUM_COPY(ck->state));
		fold_begin(&entry->fold, &entry->cfg, st, ck->valid ? ck->pos : LOG_START,
				   ck->valid ? &ck->totals : NULL);
		if (st)
			pfree(st);
		entry->maxpending = 16;
		entry->pending = palloc(sizeof(LogPosition) * entry->maxpending);
		entry->npending = 0;
		MemoryContextSwitchTo(old);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(old);
		model_cache_remove(entry);
		PG_RE_THROW();
	}
	PG_END_TRY();
	entry->version = ck->version;
	entry->xmin = ck->xmin;
	entry->settings_version = cfg->settings_version;
	return entry;
}

/* Is the cached prefix of pending positions a prefix of the visible ones? */
static bool
pending_is_prefix(const ModelCacheEntry *entry, SPITupleTable *keys, uint64 first, uint64 last)
{
	if ((uint64) entry->npending > last - first)
		return false;
	for (int i = 0; i < entry->npending; i++)
		if (log_position_cmp(entry->pending[i], fold_row_position(keys, first + i)) != 0)
			return false;
	return true;
}

static void
pending_remember(ModelCacheEntry *entry, SPITupleTable *keys, uint64 first, uint64 last)
{
	int			n = (int) (last - first);

	if (n > entry->maxpending)
	{
		entry->maxpending = Max(n, 2 * entry->maxpending);
		entry->pending = repalloc(entry->pending, sizeof(LogPosition) * entry->maxpending);
	}
	for (int i = 0; i < n; i++)
		entry->pending[i] = fold_row_position(keys, first + i);
	entry->npending = n;
}

/* Fold the visible rows after the entry's position and decode the result. */
static void
entry_fold_and_decode(ModelCacheEntry *entry, int32 arm_id)
{
	MemoryContext old = MemoryContextSwitchTo(entry->cxt);

	PG_TRY();
	{
		fold_log(&entry->fold, arm_id, false, false);
		if (entry->model_cxt)
			MemoryContextDelete(entry->model_cxt);
		entry->model_cxt = NULL;
		entry->model = NULL;
		if (entry->fold.st != NULL && entry->fold.st->n > 0)
		{
			entry->model_cxt = AllocSetContextCreate(entry->cxt, "model_select decoded model",
													 ALLOCSET_DEFAULT_SIZES);
			MemoryContextSwitchTo(entry->model_cxt);
			entry->model = policy_ops(entry->cfg.policy)->decode(&entry->cfg, entry->fold.st);
		}
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(old);
		model_cache_remove(entry);
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	cache_decodes++;
}

/*
 * The cache entry of an arm, brought up to the statement's view of its log:
 * its checkpoint ck and the pending positions keys[first, last).
 */
static ModelCacheEntry *
model_cache_get(const SelectorConfig *cfg, int32 arm_id, const CheckpointRow *ck,
				SPITupleTable *keys, uint64 first, uint64 last)
{
	ModelCacheEntry *entry = model_cache
		? hash_search(model_cache, &arm_id, HASH_FIND, NULL) : NULL;
	bool		reset = entry == NULL || entry->version != ck->version || entry->xmin != ck->xmin ||
		entry->settings_version != cfg->settings_version;

	if (!reset && entry->npending == (int) (last - first) &&
		pending_is_prefix(entry, keys, first, last))
	{
		cache_hits++;
		return entry;
	}
	if (reset || !pending_is_prefix(entry, keys, first, last))
		entry = entry_reset(cfg, arm_id, ck);
	entry_fold_and_decode(entry, arm_id);
	pending_remember(entry, keys, first, last);
	return entry;
}

/* The arms query's checkpoint columns 5.. of row i. */
static void
checkpoint_row(const SelectorConfig *cfg, SPITupleTable *tt, uint64 i, CheckpointRow *ck)
{
	HeapTuple	row = tt->vals[i];
	TupleDesc	desc = tt->tupdesc;
	bool		isnull;

	memset(ck, 0, sizeof(*ck));
	ck->version = DatumGetInt64(SPI_getbinval(row, desc, 5, &isnull));
	if (isnull)
		return;					/* no checkpoint row: fold the whole log */
	ck->xmin = DatumGetInt64(SPI_getbinval(row, desc, 6, &isnull));
	ck->valid = DatumGetInt32(SPI_getbinval(row, desc, 7, &isnull)) == cfg->settings_version;
	checkpoint_position_from_row(row, desc, 8, &ck->pos, &ck->totals);
	ck->state = SPI_getbinval(row, desc, 14, &isnull);
	if (isnull)
		ck->state = (Datum) 0;
}

/*
 * Positions of every arm's pending rows (after a checkpoint that matches the
 * settings, else all), ordered by arm_id then canonical order; returns the
 * table, which stays valid until SPI_finish.
 */
static SPITupleTable *
pending_positions(const SelectorConfig *cfg)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[2] = {INT4OID, INT4OID};
	Datum		args[2] = {Int32GetDatum(cfg->selector_id), Int32GetDatum(cfg->settings_version)};

	spi_execute(spi_plan(&plan,
						 "SELECT r.tx, r.reward_id, a.arm_id"
						 " FROM model_select.arms a"
						 " LEFT JOIN model_select.arm_state s ON s.arm_id = a.arm_id"
						 " AND s.settings_version = $2"
						 " CROSS JOIN LATERAL (SELECT r.tx, r.reward_id FROM model_select.rewards r"
						 "   WHERE r.arm_id = a.arm_id AND (r.tx, r.reward_id) >"
						 "   (coalesce(s.ckpt_tx, '0'::pg_catalog.xid8), coalesce(s.ckpt_reward_id, 0))"
						 "   ORDER BY r.tx, r.reward_id) r"
						 " WHERE a.selector_id = $1 ORDER BY a.arm_id, r.tx, r.reward_id",
						 2, types), args, NULL, true, 0, SPI_OK_SELECT, "list the pending rewards of selector %d", cfg->selector_id);
	return SPI_tuptable;
}

/* Rows [*first, *last) of keys that belong to arm_id (keys sorted by arm). */
static void
pending_range(SPITupleTable *keys, uint64 nkeys, int32 arm_id, uint64 *first, uint64 *last)
{
	uint64		lo = 0,
				hi = nkeys;
	bool		isnull;

	/* binary search for the first row of arm_id */
	while (lo < hi)
	{
		uint64		mid = lo + (hi - lo) / 2;

		if (DatumGetInt32(SPI_getbinval(keys->vals[mid], keys->tupdesc, 3, &isnull)) < arm_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	*first = *last = lo;
	while (*last < nkeys &&
		   DatumGetInt32(SPI_getbinval(keys->vals[*last], keys->tupdesc, 3, &isnull)) == arm_id)
		(*last)++;
}

static void
arm_from_row(Selector *sel, MemoryContext caller, SPITupleTable *tt, uint64 i,
			 SPITupleTable *keys, uint64 nkeys)
{
	HeapTuple	row = tt->vals[i];
	TupleDesc	desc = tt->tupdesc;
	ArmInfo    *arm = &sel->arms[i];
	bool		isnull;
	CheckpointRow ck;
	ModelCacheEntry *entry;
	uint64		first,
				last;

	arm->arm_id = DatumGetInt32(SPI_getbinval(row, desc, 1, &isnull));
	arm->name = MemoryContextStrdup(caller, TextDatumGetCString(SPI_getbinval(row, desc, 2, &isnull)));
	arm->ordinal = DatumGetInt32(SPI_getbinval(row, desc, 3, &isnull));
	arm->active = DatumGetBool(SPI_getbinval(row, desc, 4, &isnull));
	checkpoint_row(&sel->cfg, tt, i, &ck);
	pending_range(keys, nkeys, arm->arm_id, &first, &last);
	entry = model_cache_get(&sel->cfg, arm->arm_id, &ck, keys, first, last);
	arm->n = entry->fold.totals.n;
	arm->cost_sum = entry->fold.totals.cost_sum;
	arm->cost_n = entry->fold.totals.cost_n;
	arm->version = entry->version;
	arm->xmin = entry->xmin;
	arm->model = entry->model;
}

typedef struct LoadCall
{
	const char *name;
	MemoryContext caller;
	Selector   *sel;
} LoadCall;

static void
selector_load_as_owner(void *arg)
{
	static SPIPlanPtr arms_plan = NULL;
	LoadCall   *call = arg;
	Oid			types[1] = {INT4OID};
	Datum		args[1];
	Selector   *sel;
	SPITupleTable *arms,
			   *keys;
	uint64		nkeys;

	spi_connect();
	sel = call->sel = MemoryContextAllocZero(call->caller, sizeof(Selector));
	sel->name = MemoryContextStrdup(call->caller, call->name);
	config_load_by_name(call->name, &sel->cfg);
	keys = pending_positions(&sel->cfg);
	nkeys = SPI_processed;

	args[0] = Int32GetDatum(sel->cfg.selector_id);
	spi_execute(spi_plan(&arms_plan,
						 "SELECT a.arm_id, a.name, a.ordinal, a.active, s.version,"
						 " s.xmin::text::bigint, s.settings_version, "
						 CHECKPOINT_POSITION_COLUMNS ", s.state"
						 " FROM model_select.arms a LEFT JOIN model_select.arm_state s USING (arm_id)"
						 " WHERE a.selector_id = $1 ORDER BY a.ordinal",
						 1, types), args, NULL, true, 0, SPI_OK_SELECT, "read the arms of selector \"%s\"", call->name);
	arms = SPI_tuptable;
	sel->narms = (int) SPI_processed;
	sel->arms = MemoryContextAllocZero(call->caller, sizeof(ArmInfo) * Max(sel->narms, 1));
	for (int i = 0; i < sel->narms; i++)
		arm_from_row(sel, call->caller, arms, i, keys, nkeys);
	spi_finish();
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

/* Are the models a loaded selector points to still in the cache? */
bool
selector_models_current(Selector *sel)
{
	for (int i = 0; i < sel->narms; i++)
	{
		ArmInfo    *arm = &sel->arms[i];
		ModelCacheEntry *entry;

		if (arm->model == NULL)
			continue;
		entry = model_cache ? hash_search(model_cache, &arm->arm_id, HASH_FIND, NULL) : NULL;
		if (entry == NULL || entry->model != arm->model)
			return false;
	}
	return true;
}

PG_FUNCTION_INFO_V1(model_select_cache_stats);

/* SQL: cache_stats() → this backend's model cache counters. */
Datum
model_select_cache_stats(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "cache_stats() must return a composite type");
	values[0] = Int32GetDatum(model_cache ? (int32) hash_get_num_entries(model_cache) : 0);
	values[1] = Int64GetDatum(cache_decodes);
	values[2] = Int64GetDatum(cache_hits);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}
