/*
 * bkb_resample.c — model_select.resample(selector): resample the dictionary of
 * every arm of a bkb selector now (spec/003.md §2.3, bkb_resample in
 * policy_bkb.c), instead of waiting for the next scheduled resample.  Each
 * arm's state row is locked FOR UPDATE, in arm_id order like the reward
 * trigger, and written once with version + 1.  Returns the number of arms
 * resampled (arms without rewards have nothing to resample).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"

#include "core/catalog.h"
#include "policy/bkb.h"
#include "policy/registry.h"

PG_FUNCTION_INFO_V1(model_select_resample);

/* The selector's configuration; it must exist and use bkb. */
static void
resample_config(const char *name, SelectorConfig *cfg)
{
	config_load(selector_id_by_name(name), cfg);
	if (!policy_ops(cfg->policy)->dictionary)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("selector \"%s\" uses policy %s; only bkb selectors have a dictionary to resample",
						name, policy_name(cfg->policy))));
}

static void
write_state(int32 arm_id, StateHeader *st)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[2] = {INT4OID, BYTEAOID};
	Datum		args[2] = {Int32GetDatum(arm_id), PointerGetDatum(st)};

	if (SPI_execute_plan(spi_plan(&plan,
								  "UPDATE model_select.arm_state SET state = $2, version = version + 1,"
								  " updated_at = now() WHERE arm_id = $1",
								  2, types), args, NULL, false, 1) != SPI_OK_UPDATE)
		elog(ERROR, "could not update the state of arm %d", arm_id);
}

Datum
model_select_resample(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr lock_plan = NULL;
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	Oid			types[1] = {INT4OID};
	Datum		args[1];
	SelectorConfig cfg;
	SPITupleTable *locked;
	int64		resampled = 0;

	spi_connect();
	resample_config(name, &cfg);
	args[0] = Int32GetDatum(cfg.selector_id);
	spi_execute(spi_plan(&lock_plan,
						 "SELECT arm_id, state FROM model_select.arm_state WHERE selector_id = $1"
						 " ORDER BY arm_id FOR UPDATE",
						 1, types), args, NULL, false, 0, SPI_OK_SELECT,
				"lock the arms of selector \"%s\"", name);
	/* the tuple table stays valid until SPI_finish */
	locked = SPI_tuptable;
	for (uint64 i = 0; i < locked->numvals; i++)
	{
		bool		isnull;
		int32		arm_id = spi_int32(locked->vals[i], locked->tupdesc, 1);
		Datum		raw = SPI_getbinval(locked->vals[i], locked->tupdesc, 2, &isnull);
		StateHeader *st,
				   *next;

		if (isnull)
			continue;
		st = state_check(&cfg, (bytea *) PG_DETOAST_DATUM_COPY(raw));
		if (st->n == 0)
			continue;
		next = bkb_resample(&cfg, st);
		write_state(arm_id, next);
		pfree(st);
		pfree(next);
		resampled++;
	}
	spi_finish();
	PG_RETURN_INT64(resampled);
}
