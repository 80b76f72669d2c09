/*
 * catalog.c — selectors, arms and arm state as stored in the extension's
 * tables, read through SPI, and the backend-local model cache.
 *
 * Decoding a state (detoast, check, solve for the regression weights) costs
 * O(state size), so each backend keeps the decoded model of every arm it has
 * scored, keyed by arm id and validated by the state row's (version, xmin):
 * a query scoring 100k rows decodes each arm once.  The cache lives under
 * CacheMemoryContext and is bounded by MODEL_CACHE_MAX_ARMS entries.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "access/htup_details.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "core/catalog.h"
#include "policy/registry.h"

#define MODEL_CACHE_MAX_ARMS 1024

typedef struct ModelCacheEntry
{
	int32		arm_id;			/* hash key */
	int64		version;
	int64		xmin;
	MemoryContext cxt;
	ArmModel   *model;
} ModelCacheEntry;

static HTAB *model_cache = NULL;

/* Counters for model_select.cache_stats(): how often states were decoded. */
static int64 cache_decodes = 0;
static int64 cache_hits = 0;

static Datum
column(HeapTuple row, TupleDesc desc, int col, bool *isnull)
{
	return SPI_getbinval(row, desc, col, isnull);
}

#define SELECTOR_HINT "Create it with model_select.create_selector()."

/*
 * Run a kept plan that looks a selector up by name ($1); the row, or the one
 * 42704 for an unknown selector.
 */
static HeapTuple
selector_row(SPIPlanPtr plan, Datum *args, const char *name)
{
	return spi_fetch_one(plan, args, true, psprintf("selector \"%s\"", name), SELECTOR_HINT);
}

/* A selector's id by name (42704 if unknown); the caller is connected to SPI. */
int32
selector_id_by_name(const char *name)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(name)};
	HeapTuple	row;

	row = selector_row(spi_plan(&plan, "SELECT selector_id FROM model_select.selectors WHERE name = $1",
								1, types), args, name);
	return spi_int32(row, SPI_tuptable->tupdesc, 1);
}

/*
 * Resolve an arm by selector and arm names (42704 if either is unknown);
 * *active tells whether it may still learn.  The caller is connected to SPI.
 */
void
arm_lookup(const char *selector, const char *arm, int32 *selector_id, int32 *arm_id, bool *active)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		args[2] = {CStringGetTextDatum(selector), CStringGetTextDatum(arm)};
	HeapTuple	row;
	TupleDesc	desc;
	bool		isnull;

	row = selector_row(spi_plan(&plan,
								"SELECT s.selector_id, a.arm_id, a.active FROM model_select.selectors s"
								" LEFT JOIN model_select.arms a ON a.selector_id = s.selector_id AND a.name = $2"
								" WHERE s.name = $1",
								2, types), args, selector);
	desc = SPI_tuptable->tupdesc;
	*selector_id = spi_int32(row, desc, 1);
	(void) SPI_getbinval(row, desc, 2, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("selector \"%s\" has no arm \"%s\"", selector, arm)));
	*arm_id = spi_int32(row, desc, 2);
	*active = spi_bool(row, desc, 3);
}

/*
 * For an AFTER INSERT ... FOR EACH STATEMENT trigger with a transition
 * table: run `query` over it (its first column an arm_id, rows ordered by
 * arm) and call fn once per run of rows of one arm, [first, last).  The
 * caller is connected to SPI.
 */
void
for_each_arm_of_statement(TriggerData *td, const char *query,
						  void (*fn) (SPITupleTable *tt, uint64 first, uint64 last, void *arg),
						  void *arg)
{
	SPITupleTable *tt;
	uint64		nrows,
				first = 0;

	if (!TRIGGER_FIRED_BY_INSERT(td->tg_event) || !TRIGGER_FIRED_FOR_STATEMENT(td->tg_event) ||
		!TRIGGER_FIRED_AFTER(td->tg_event) || td->tg_newtable == NULL)
		elog(ERROR, "trigger %s must fire AFTER INSERT FOR EACH STATEMENT with a NEW TABLE",
			 td->tg_trigger->tgname);
	if (SPI_register_trigger_data(td) != SPI_OK_TD_REGISTER)
		elog(ERROR, "could not register the transition table of trigger %s", td->tg_trigger->tgname);
	if (SPI_execute(query, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the rows of trigger %s", td->tg_trigger->tgname);
	tt = SPI_tuptable;
	nrows = SPI_processed;
	while (first < nrows)
	{
		int32		arm_id = spi_int32(tt->vals[first], tt->tupdesc, 1);
		uint64		last = first + 1;

		while (last < nrows && spi_int32(tt->vals[last], tt->tupdesc, 1) == arm_id)
			last++;
		fn(tt, first, last, arg);
		first = last;
	}
}

/* Parse the CONFIG_COLUMNS of a selectors row, starting at first_col. */
void
config_from_row(SelectorConfig *cfg, HeapTuple row, TupleDesc desc, int first_col)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->selector_id = spi_int32(row, desc, first_col);
	cfg->dim = spi_int32(row, desc, first_col + 1);
	cfg->policy = policy_from_name(spi_text(row, desc, first_col + 2));
	cfg->kernel = kernel_from_name(cfg->policy, spi_text_column(row, desc, first_col + 3));
	settings_resolve(cfg, DatumGetJsonbP(spi_datum(row, desc, first_col + 4)));
	cfg->seed = (uint64) spi_int64(row, desc, first_col + 5);
}

/* Load a selector's configuration by id; the caller is connected to SPI. */
void
config_load(int32 selector_id, SelectorConfig *cfg)
{
	static SPIPlanPtr plan = NULL;
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(selector_id)};
	HeapTuple	row;

	row = spi_fetch_one(spi_plan(&plan, "SELECT " CONFIG_COLUMNS
								 " FROM model_select.selectors WHERE selector_id = $1",
								 1, argtypes), args, true,
						psprintf("selector %d", selector_id), NULL);
	config_from_row(cfg, row, SPI_tuptable->tupdesc, 1);
}

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

static ModelCacheEntry *
model_cache_lookup(const ArmInfo *arm)
{
	ModelCacheEntry *entry;

	if (model_cache == NULL)
		return NULL;
	entry = hash_search(model_cache, &arm->arm_id, HASH_FIND, NULL);
	if (entry && entry->version == arm->version && entry->xmin == arm->xmin)
		return entry;
	return NULL;
}

/* The decoded model of an arm whose state datum is `state`. */
static const ArmModel *
model_cache_get(const SelectorConfig *cfg, const ArmInfo *arm, Datum state)
{
	ModelCacheEntry *entry = model_cache_lookup(arm);
	bool		found;
	MemoryContext old;

	if (entry)
	{
		cache_hits++;
		return entry->model;
	}
	cache_decodes++;
	if (model_cache == NULL)
		model_cache_init();
	else if (hash_get_num_entries(model_cache) >= MODEL_CACHE_MAX_ARMS)
	{
		model_cache_forget_all();
		model_cache_init();
	}
	entry = hash_search(model_cache, &arm->arm_id, HASH_ENTER, &found);
	if (found)
		MemoryContextDelete(entry->cxt);
	/* an error below must not leave a half-built entry behind */
	entry->version = -1;
	entry->cxt = AllocSetContextCreate(CacheMemoryContext, "model_select arm model",
									   ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(entry->cxt);
	PG_TRY();
	{
		StateHeader *st = state_check(cfg, (bytea *) PG_DETOAST_DATUM_COPY(state));

		entry->model = policy_ops(cfg->policy)->decode(cfg, st);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(old);
		MemoryContextDelete(entry->cxt);
		hash_search(model_cache, &arm->arm_id, HASH_REMOVE, NULL);
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	entry->version = arm->version;
	entry->xmin = arm->xmin;
	return entry->model;
}

/* Load a selector's configuration by name; the caller is connected to SPI. */
void
config_load_by_name(const char *name, SelectorConfig *cfg)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(name)};
	HeapTuple	row;

	row = selector_row(spi_plan(&plan, "SELECT " CONFIG_COLUMNS " FROM model_select.selectors WHERE name = $1",
								1, types), args, name);
	config_from_row(cfg, row, SPI_tuptable->tupdesc, 1);
}

/*
 * Load a selector by name with every arm and its decoded model.  The result
 * is allocated in the caller's memory context.
 */
Selector *
selector_load(const char *name)
{
	static SPIPlanPtr arms_plan = NULL;
	Oid			int_type[1] = {INT4OID};
	Datum		args[1];
	MemoryContext caller = CurrentMemoryContext;
	Selector   *sel;

	SPI_connect();
	sel = MemoryContextAllocZero(caller, sizeof(Selector));
	sel->name = MemoryContextStrdup(caller, name);
	config_load_by_name(name, &sel->cfg);

	args[0] = Int32GetDatum(sel->cfg.selector_id);
	if (SPI_execute_plan(spi_plan(&arms_plan,
								  "SELECT a.arm_id, a.name, a.ordinal, a.active, s.n, s.version,"
								  " s.xmin::text::bigint, s.state"
								  " FROM model_select.arms a JOIN model_select.arm_state s USING (arm_id)"
								  " WHERE a.selector_id = $1 ORDER BY a.ordinal",
								  1, int_type), args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the arms of selector \"%s\"", name);

	sel->narms = (int) SPI_processed;
	sel->arms = MemoryContextAllocZero(caller, sizeof(ArmInfo) * Max(sel->narms, 1));
	for (int i = 0; i < sel->narms; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		ArmInfo    *arm = &sel->arms[i];
		bool		isnull;
		Datum		state;

		arm->arm_id = DatumGetInt32(column(row, desc, 1, &isnull));
		arm->name = MemoryContextStrdup(caller, TextDatumGetCString(column(row, desc, 2, &isnull)));
		arm->ordinal = DatumGetInt32(column(row, desc, 3, &isnull));
		arm->active = DatumGetBool(column(row, desc, 4, &isnull));
		arm->n = DatumGetInt64(column(row, desc, 5, &isnull));
		arm->version = DatumGetInt64(column(row, desc, 6, &isnull));
		arm->xmin = DatumGetInt64(column(row, desc, 7, &isnull));
		state = column(row, desc, 8, &isnull);
		arm->model = (arm->n > 0 && !isnull) ? model_cache_get(&sel->cfg, arm, state) : NULL;
	}
	SPI_finish();
	return sel;
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
		entry = model_cache_lookup(arm);
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
