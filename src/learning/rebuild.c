/*
 * rebuild.c — rebuild_state(): recompute every arm's state of a selector from
 * the reward log, the source of truth.  Each policy's build() works from
 * scratch (a full Cholesky factorisation, not the per-reward updates), so the
 * result is also the reference that tests compare incremental state with.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "core/catalog.h"
#include "core/context.h"

PG_FUNCTION_INFO_V1(model_select_rebuild_state);

typedef struct ArmTotals
{
	int64		n;
	double		reward_sum;
	double		cost_sum;
	int64		cost_n;
} ArmTotals;

/* Rebuild one arm's state from its rewards in log order. */
static StateHeader *
rebuild_arm(const SelectorConfig *cfg, int32 arm_id, ArmTotals *totals)
{
	static SPIPlanPtr plan = NULL;
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(arm_id)};
	int			n;
	double	   *X,
			   *r;

	if (SPI_execute_plan(spi_plan(&plan,
								  "SELECT context, reward, cost FROM model_select.rewards"
								  " WHERE arm_id = $1 ORDER BY reward_id",
								  1, argtypes), args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the rewards of arm %d", arm_id);
	if (SPI_processed > (uint64) INT_MAX / Max(cfg->dim, 1))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("arm %d has too many rewards to rebuild in memory", arm_id)));
	n = (int) SPI_processed;
	X = palloc(sizeof(double) * Max((Size) n * cfg->dim, 1));
	r = palloc(sizeof(double) * Max(n, 1));
	memset(totals, 0, sizeof(*totals));
	for (int i = 0; i < n; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		Datum		cost;
		double	   *x;

		x = context_from_array(DatumGetArrayTypeP(SPI_getbinval(row, desc, 1, &isnull)), cfg->dim);
		context_prepare(cfg, x);
		memcpy(X + (Size) i * cfg->dim, x, sizeof(double) * cfg->dim);
		pfree(x);
		r[i] = DatumGetFloat8(SPI_getbinval(row, desc, 2, &isnull));
		totals->reward_sum += r[i];
		cost = SPI_getbinval(row, desc, 3, &isnull);
		if (!isnull)
		{
			totals->cost_sum += DatumGetFloat8(cost);
			totals->cost_n++;
		}
		r[i] = learned_value(cfg, r[i], isnull, isnull ? 0 : DatumGetFloat8(cost));
	}
	totals->n = n;
	SPI_freetuptable(SPI_tuptable);
	return state_build(cfg, n, X, r);
}

Datum
model_select_rebuild_state(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr lock_plan = NULL;
	static SPIPlanPtr update_plan = NULL;
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	Oid			lock_types[1] = {TEXTOID};
	Oid			update_types[6] = {INT4OID, BYTEAOID, INT8OID, FLOAT8OID, FLOAT8OID, INT8OID};
	Datum		args[6];
	SelectorConfig cfg;
	int32	   *arm_ids;
	int			narms;
	int64		total = 0;

	SPI_connect();
	args[0] = CStringGetTextDatum(name);
	/* lock every arm in a fixed order; concurrent rewards wait for us */
	if (SPI_execute_plan(spi_plan(&lock_plan,
								  "SELECT st.arm_id, st.selector_id FROM model_select.arm_state st"
								  " JOIN model_select.selectors s USING (selector_id)"
								  " WHERE s.name = $1 ORDER BY st.arm_id FOR UPDATE OF st",
								  1, lock_types), args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not lock the arms of selector \"%s\"", name);
	narms = (int) SPI_processed;
	if (narms == 0)
	{
		/* either no such selector or no arms: config_load tells which */
		SPI_execute_with_args("SELECT selector_id FROM model_select.selectors WHERE name = $1",
							  1, lock_types, args, NULL, true, 1);
		if (SPI_processed == 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("selector \"%s\" does not exist", name)));
		SPI_finish();
		PG_RETURN_INT64(0);
	}
	arm_ids = palloc(sizeof(int32) * narms);
	for (int i = 0; i < narms; i++)
	{
		bool		isnull;

		arm_ids[i] = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		if (i == 0)
			cfg.selector_id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i],
														  SPI_tuptable->tupdesc, 2, &isnull));
	}
	config_load(cfg.selector_id, &cfg);

	for (int i = 0; i < narms; i++)
	{
		ArmTotals	totals;
		StateHeader *st = rebuild_arm(&cfg, arm_ids[i], &totals);

		args[0] = Int32GetDatum(arm_ids[i]);
		args[1] = PointerGetDatum(st);
		args[2] = Int64GetDatum(totals.n);
		args[3] = Float8GetDatum(totals.reward_sum);
		args[4] = Float8GetDatum(totals.cost_sum);
		args[5] = Int64GetDatum(totals.cost_n);
		if (SPI_execute_plan(spi_plan(&update_plan,
									  "UPDATE model_select.arm_state SET state = $2, n = $3,"
									  " version = version + 1, reward_sum = $4, cost_sum = $5,"
									  " cost_n = $6, updated_at = now() WHERE arm_id = $1",
									  6, update_types), args, NULL, false, 1) != SPI_OK_UPDATE)
			elog(ERROR, "could not update the state of arm %d", arm_ids[i]);
		pfree(st);
		total += totals.n;
	}
	SPI_finish();
	PG_RETURN_INT64(total);
}
