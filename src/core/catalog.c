/*
 * catalog.c — selectors and arms as stored in the extension's tables,
 * read through SPI.
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

/* Prepare a statement once per backend and keep it. */
SPIPlanPtr
spi_plan(SPIPlanPtr *slot, const char *sql, int nargs, const Oid *argtypes)
{
	if (*slot == NULL)
	{
		SPIPlanPtr	plan = SPI_prepare(sql, nargs, (Oid *) argtypes);

		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed for \"%s\": %s", sql, SPI_result_code_string(SPI_result));
		SPI_keepplan(plan);
		*slot = plan;
	}
	return *slot;
}

static Datum
column(HeapTuple row, TupleDesc desc, int col, bool *isnull)
{
	return SPI_getbinval(row, desc, col, isnull);
}

/* A text column of a tuple as a C string, or NULL. */
char *
spi_text_column(HeapTuple tuple, TupleDesc desc, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tuple, desc, col, &isnull);

	return isnull ? NULL : TextDatumGetCString(d);
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

	if (SPI_execute_plan(spi_plan(&plan,
								  "SELECT s.selector_id, a.arm_id, a.active FROM model_select.selectors s"
								  " LEFT JOIN model_select.arms a ON a.selector_id = s.selector_id AND a.name = $2"
								  " WHERE s.name = $1",
								  2, types), args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not resolve selector \"%s\"", selector);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("selector \"%s\" does not exist", selector)));
	row = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	*selector_id = DatumGetInt32(SPI_getbinval(row, desc, 1, &isnull));
	*arm_id = DatumGetInt32(SPI_getbinval(row, desc, 2, &isnull));
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("selector \"%s\" has no arm \"%s\"", selector, arm)));
	*active = DatumGetBool(SPI_getbinval(row, desc, 3, &isnull));
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
		bool		isnull;
		int32		arm_id = DatumGetInt32(SPI_getbinval(tt->vals[first], tt->tupdesc, 1, &isnull));
		uint64		last = first + 1;

		while (last < nrows &&
			   DatumGetInt32(SPI_getbinval(tt->vals[last], tt->tupdesc, 1, &isnull)) == arm_id)
			last++;
		fn(tt, first, last, arg);
		first = last;
	}
}

/* Parse the CONFIG_COLUMNS of a selectors row, starting at first_col. */
void
config_from_row(SelectorConfig *cfg, HeapTuple row, TupleDesc desc, int first_col)
{
	bool		isnull;
	Datum		kernel;

	memset(cfg, 0, sizeof(*cfg));
	cfg->selector_id = DatumGetInt32(column(row, desc, first_col, &isnull));
	cfg->dim = DatumGetInt32(column(row, desc, first_col + 1, &isnull));
	cfg->policy = policy_from_name(TextDatumGetCString(column(row, desc, first_col + 2, &isnull)));
	kernel = column(row, desc, first_col + 3, &isnull);
	cfg->kernel = kernel_from_name(cfg->policy, isnull ? NULL : TextDatumGetCString(kernel));
	settings_resolve(cfg, DatumGetJsonbP(column(row, desc, first_col + 4, &isnull)));
	cfg->seed = (uint64) DatumGetInt64(column(row, desc, first_col + 5, &isnull));
	cfg->settings_version = DatumGetInt32(column(row, desc, first_col + 6, &isnull));
}

/* Load a selector's configuration with one of the queries below. */
static void
config_load_with(SPIPlanPtr *plan, const char *sql, bool read_only, int32 selector_id,
				 SelectorConfig *cfg)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(selector_id)};

	if (SPI_execute_plan(spi_plan(plan, sql, 1, argtypes), args, NULL, read_only, 1) < 0)
		elog(ERROR, "could not read selector %d", selector_id);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("selector %d does not exist", selector_id)));
	config_from_row(cfg, SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

/* Load a selector's configuration by id; the caller is connected to SPI. */
void
config_load(int32 selector_id, SelectorConfig *cfg)
{
	static SPIPlanPtr plan = NULL;

	config_load_with(&plan, "SELECT " CONFIG_COLUMNS " FROM model_select.selectors"
					 " WHERE selector_id = $1", true, selector_id, cfg);
}

/*
 * Load a selector's configuration by id and share-lock its row until the
 * transaction ends: alter_selector() cannot change the settings meanwhile.
 */
void
config_load_shared(int32 selector_id, SelectorConfig *cfg)
{
	static SPIPlanPtr plan = NULL;

	config_load_with(&plan, "SELECT " CONFIG_COLUMNS " FROM model_select.selectors"
					 " WHERE selector_id = $1 FOR SHARE", false, selector_id, cfg);
}

/* Load a selector's configuration by name; the caller is connected to SPI. */
void
config_load_by_name(const char *name, SelectorConfig *cfg)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(name)};

	if (SPI_execute_plan(spi_plan(&plan, "SELECT " CONFIG_COLUMNS
								  " FROM model_select.selectors WHERE name = $1",
								  1, types), args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read selector \"%s\"", name);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("selector \"%s\" does not exist", name),
				 errhint("Create it with model_select.create_selector().")));
	config_from_row(cfg, SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

