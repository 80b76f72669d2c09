/*
 * apply.c — rewards_apply: the AFTER INSERT ... FOR EACH STATEMENT trigger
 * that folds new rewards into the learned state.
 *
 * The rows of one INSERT are read from the transition table, grouped by arm
 * (in arm_id order, so concurrent statements lock arms in the same order and
 * cannot deadlock) and in log order within an arm.  Each arm's state row is
 * locked FOR UPDATE, every reward of the statement is folded into it in
 * memory, and the row is written once: a bulk INSERT of k rewards on an arm
 * costs one state write, not k.  Concurrent inserts on one arm serialise on
 * the row lock and none is lost; a rolled back insert rolls back its state
 * change with it.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/memutils.h"

#include "core/catalog.h"
#include "core/context.h"

PG_FUNCTION_INFO_V1(model_select_rewards_apply);

/* Running totals of the rewards folded into one arm. */
typedef struct ArmBatch
{
	int32		arm_id;
	int64		n;
	double		reward_sum;
	double		cost_sum;
	int64		cost_n;
} ArmBatch;

/* Lock the arm's state row; after a pg_dump restore it may not exist yet. */
static StateHeader *
lock_arm_state(const SelectorConfig *cfg, int32 arm_id)
{
	static SPIPlanPtr lock_plan = NULL;
	static SPIPlanPtr create_plan = NULL;
	Oid			types[2] = {INT4OID, INT4OID};
	Datum		args[2] = {Int32GetDatum(arm_id), Int32GetDatum(cfg->selector_id)};
	bool		isnull;
	Datum		state;

	if (SPI_execute_plan(spi_plan(&lock_plan,
								  "SELECT state FROM model_select.arm_state WHERE arm_id = $1 FOR UPDATE",
								  1, types), args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not lock the state of arm %d", arm_id);
	if (SPI_processed == 0)
	{
		/* arm_state is dumped empty: a restore re-learns it from the log */
		if (SPI_execute_plan(spi_plan(&create_plan,
									  "INSERT INTO model_select.arm_state(arm_id, selector_id) VALUES ($1, $2)"
									  " ON CONFLICT (arm_id) DO NOTHING",
									  2, types), args, NULL, false, 0) != SPI_OK_INSERT ||
			SPI_execute_plan(lock_plan, args, NULL, false, 1) != SPI_OK_SELECT ||
			SPI_processed != 1)
			elog(ERROR, "could not create the state row of arm %d", arm_id);
	}
	state = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? NULL : state_check(cfg, (bytea *) PG_DETOAST_DATUM_COPY(state));
}

static void
write_arm_state(const ArmBatch *b, StateHeader *st)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[6] = {INT4OID, BYTEAOID, INT8OID, FLOAT8OID, FLOAT8OID, INT8OID};
	Datum		args[6];

	args[0] = Int32GetDatum(b->arm_id);
	args[1] = PointerGetDatum(st);
	args[2] = Int64GetDatum(b->n);
	args[3] = Float8GetDatum(b->reward_sum);
	args[4] = Float8GetDatum(b->cost_sum);
	args[5] = Int64GetDatum(b->cost_n);
	if (SPI_execute_plan(spi_plan(&plan,
								  "UPDATE model_select.arm_state SET state = $2, n = n + $3,"
								  " version = version + 1, reward_sum = reward_sum + $4,"
								  " cost_sum = cost_sum + $5, cost_n = cost_n + $6, updated_at = now()"
								  " WHERE arm_id = $1",
								  6, types), args, NULL, false, 1) != SPI_OK_UPDATE)
		elog(ERROR, "could not update the state of arm %d", b->arm_id);
}

static void
batch_add(ArmBatch *b, double reward, bool cost_null, Datum cost)
{
	b->n++;
	b->reward_sum += reward;
	if (!cost_null)
	{
		b->cost_sum += DatumGetFloat8(cost);
		b->cost_n++;
	}
}

/* State from scratch for rows [first, last) of one arm (see rebuild.c). */
static StateHeader *
build_arm(SPITupleTable *tt, uint64 first, uint64 last, const SelectorConfig *cfg, ArmBatch *b)
{
	int			n = (int) (last - first);
	double	   *X = palloc(sizeof(double) * (Size) n * cfg->dim);
	double	   *r = palloc(sizeof(double) * n);

	for (int i = 0; i < n; i++)
	{
		HeapTuple	row = tt->vals[first + i];
		bool		isnull,
					cost_null;
		Datum		cost = SPI_getbinval(row, tt->tupdesc, 5, &cost_null);
		double	   *x = context_from_array(DatumGetArrayTypeP(SPI_getbinval(row, tt->tupdesc, 3, &isnull)),
										   cfg->dim);

		context_prepare(cfg, x);
		memcpy(X + (Size) i * cfg->dim, x, sizeof(double) * cfg->dim);
		r[i] = DatumGetFloat8(SPI_getbinval(row, tt->tupdesc, 4, &isnull));
		batch_add(b, r[i], cost_null, cost);
		r[i] = learned_value(cfg, r[i], cost_null, cost_null ? 0 : DatumGetFloat8(cost));
	}
	return state_build(cfg, n, X, r);
}

/*
 * Fold rows [first, last) of the transition query (one arm, log order) into
 * that arm's state.  Each append runs in a fresh context that replaces the
 * previous state's context unless the state was updated in place, so memory
 * stays at about two states.
 */
static void
apply_arm(SPITupleTable *tt, uint64 first, uint64 last, SelectorConfig *cfg)
{
	TupleDesc	desc = tt->tupdesc;
	bool		isnull;
	ArmBatch	b = {0};
	int32		selector_id = DatumGetInt32(SPI_getbinval(tt->vals[first], desc, 2, &isnull));
	StateHeader *st;
	MemoryContext work = AllocSetContextCreate(CurrentMemoryContext, "model_select apply",
											   ALLOCSET_DEFAULT_SIZES);
	MemoryContext old;

	b.arm_id = DatumGetInt32(SPI_getbinval(tt->vals[first], desc, 1, &isnull));
	if (cfg->selector_id != selector_id)
		config_load(selector_id, cfg);
	old = MemoryContextSwitchTo(work);
	st = lock_arm_state(cfg, b.arm_id);
	if ((st == NULL || st->n == 0) && last - first > 1)
	{
		/* an empty arm learns a whole batch at once, from scratch */
		st = build_arm(tt, first, last, cfg, &b);
		MemoryContextSwitchTo(old);
		write_arm_state(&b, st);
		MemoryContextDelete(work);
		return;
	}
	MemoryContextSwitchTo(old);

	for (uint64 i = first; i < last; i++)
	{
		HeapTuple	row = tt->vals[i];
		double		reward = DatumGetFloat8(SPI_getbinval(row, desc, 4, &isnull));
		bool		cost_null;
		Datum		cost = SPI_getbinval(row, desc, 5, &cost_null);
		double	   *x;
		StateHeader *appended;
		MemoryContext next = AllocSetContextCreate(CurrentMemoryContext, "model_select apply",
												   ALLOCSET_DEFAULT_SIZES);

		old = MemoryContextSwitchTo(next);
		x = context_from_array(DatumGetArrayTypeP(SPI_getbinval(row, desc, 3, &isnull)), cfg->dim);
		context_prepare(cfg, x);
		appended = state_append(cfg, st, x,
								learned_value(cfg, reward, cost_null, cost_null ? 0 : DatumGetFloat8(cost)));
		MemoryContextSwitchTo(old);
		if (appended == st)
			MemoryContextDelete(next);	/* updated in place: st stays in work */
		else
		{
			MemoryContextDelete(work);
			work = next;
		}
		st = appended;
		batch_add(&b, reward, cost_null, cost);
	}
	write_arm_state(&b, st);
	MemoryContextDelete(work);
}

/* for_each_arm_of_statement() callback: arg is the cached SelectorConfig. */
static void
apply_arm_rows(SPITupleTable *tt, uint64 first, uint64 last, void *arg)
{
	apply_arm(tt, first, last, (SelectorConfig *) arg);
}

Datum
model_select_rewards_apply(PG_FUNCTION_ARGS)
{
	SelectorConfig cfg = {0};

	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "model_select._rewards_apply must be called as a trigger");
	cfg.selector_id = -1;
	SPI_connect();
	for_each_arm_of_statement((TriggerData *) fcinfo->context,
							  "SELECT arm_id, selector_id, context, reward, cost FROM new_rewards"
							  " ORDER BY arm_id, reward_id", apply_arm_rows, &cfg);
	SPI_finish();
	return PointerGetDatum(NULL);
}
