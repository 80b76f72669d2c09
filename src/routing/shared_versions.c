/*
 * shared_versions.c — SQL: _shared_versions(), the arm models published in
 * the shared cache for this database (view learner_versions), shown only for
 * the arms of selectors the caller may see.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/xid8.h"

#include "model/privilege.h"
#include "pg/owner.h"
#include "pg/spi_util.h"
#include "routing/shared_cache.h"

PG_FUNCTION_INFO_V1(model_select_shared_versions);

/* The arms the caller may see (of selectors it has a right on), read as the extension owner. */
typedef struct ArmSelectors
{
	int			n;
	int32	   *arm_id;
	bool	   *visible;
	MemoryContext caller;
} ArmSelectors;

static void
arm_selectors(void *arg)
{
	static SPIPlanPtr plan = NULL;
	/* the query's columns */
	enum
	{
		ARM_SEL_ARM_ID = 1,
		ARM_SEL_SELECTOR_ID
	};
	ArmSelectors *out = arg;
	SPITupleTable *tt;
	int			spi_level = spi_connect();

	spi_execute(spi_plan(&plan, "SELECT arm_id, selector_id FROM model_select.arms", 0, NULL),
				NULL, NULL, true, 0, SPI_OK_SELECT, "read the arms' selectors");
	/* kept: the privilege checks below run queries of their own */
	tt = SPI_tuptable;
	out->n = (int) SPI_processed;
	out->arm_id = MemoryContextAlloc(out->caller, sizeof(int32) * Max(out->n, 1));
	out->visible = MemoryContextAlloc(out->caller, sizeof(bool) * Max(out->n, 1));
	for (int i = 0; i < out->n; i++)
	{
		bool		exists;

		out->arm_id[i] = spi_int32(tt->vals[i], tt->tupdesc, ARM_SEL_ARM_ID);
		out->visible[i] = role_has_selector_privilege(calling_user(),
													  spi_int32(tt->vals[i], tt->tupdesc, ARM_SEL_SELECTOR_ID),
													  SELECTOR_ANY, &exists) && exists;
	}
	spi_finish(spi_level);
}

/* May the caller see the versions of arm_id? (Not if its arm is gone.) */
static bool
arm_visible(const ArmSelectors *arms, int32 arm_id)
{
	for (int i = 0; i < arms->n; i++)
		if (arms->arm_id[i] == arm_id)
			return arms->visible[i];
	return false;
}

/*
 * SQL: _shared_versions() → per version: arm_id, settings_version,
 * checkpoint_version, position_tx, position_seq, rewards, stale, bytes,
 * pins, published_at.  No rows without a shared cache.
 */
Datum
model_select_shared_versions(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			max = shared_cache_capacity();
	SharedVersionInfo *versions = palloc(sizeof(SharedVersionInfo) * Max(max, 1));
	int			n = shared_cache_list(versions, max);
	ArmSelectors arms = {.caller = CurrentMemoryContext};

	InitMaterializedSRF(fcinfo, 0);
	if (n > 0)
		run_as_extension_owner(arm_selectors, &arms);
	for (int i = 0; i < n; i++)
	{
		SharedVersionInfo *v = &versions[i];
		Datum		values[10];
		bool		nulls[10] = {false};

		if (!arm_visible(&arms, v->key.arm_id))
			continue;
		values[0] = Int32GetDatum(v->key.arm_id);
		values[1] = Int32GetDatum(v->key.settings_version);
		values[2] = Int64GetDatum(v->key.ckpt_version);
		values[3] = FullTransactionIdGetDatum(v->pos.tx);
		values[4] = Int64GetDatum(v->pos.seq);
		values[5] = Int64GetDatum(v->n);
		values[6] = BoolGetDatum(v->stale);
		values[7] = Int64GetDatum(v->bytes);
		values[8] = Int32GetDatum(v->pins);
		values[9] = TimestampTzGetDatum(v->published_at);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
