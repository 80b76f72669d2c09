/*
 * rperp_fit.c — R-PERP's elimination step (Iwazaki & Takeno (R-PERP) lines 18–20):
 * fit the GP of §1.4 on the current batch only and keep the active items
 * whose ucb reaches the largest lcb.  See rperp.c for the whole design.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "model/catalog.h"
#include "model/context.h"
#include "model/reward_value.h"
#include "model/kernel.h"
#include "math/linalg.h"
#include "math/vecops.h"
#include "probe/rperp.h"

PG_FUNCTION_INFO_V1(model_select_probe_eliminate);

/* The columns of load_batch()'s query. */
enum
{
	PLANNED_ITEM_ID = 1,
	PLANNED_SCORE
};

/*
 * count[x], ysum[x] = the current batch's observations of active item x.
 * Returns the number of observations; every planned query must be reported.
 */
static int
load_batch(const ProbeRun *run, const ProbeItems *it, int *count, double *ysum)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[3] = {INT4OID, INT4OID, INT4OID};
	Datum		args[3] = {Int32GetDatum(run->run_id), Int32GetDatum(run->interval),
	Int32GetDatum(run->batch)};
	int		   *index = palloc(sizeof(int) * (run->pool_size + 1));

	for (int id = 0; id <= run->pool_size; id++)
		index[id] = -1;
	for (int x = 0; x < it->n; x++)
		index[it->item_id[x]] = x;
	spi_execute(spi_plan(&plan,
						 "SELECT item_id, score FROM model_select.probe_plan"
						 " WHERE run_id = $1 AND interval = $2 AND batch = $3",
						 3, types), args, NULL, true, 0, SPI_OK_SELECT,
				"read batch %d of probe run %d", run->batch, run->run_id);
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		HeapTuple	row = SPI_tuptable->vals[r];
		int32		id = spi_int32(row, SPI_tuptable->tupdesc, PLANNED_ITEM_ID);
		bool		isnull;
		double		y = DatumGetFloat8(SPI_getbinval(row, SPI_tuptable->tupdesc, PLANNED_SCORE, &isnull));

		if (isnull)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("batch %d of probe run %d is not fully reported", run->batch, run->run_id)));
		/* probe_report() keeps scores within ±1e15 (UTILITY_MAX): beyond, the fit overflows */
		if (!(y >= -UTILITY_MAX && y <= UTILITY_MAX))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("probe run %d: batch %d holds score %g, not a number from -1e15 to 1e15",
							run->run_id, run->batch, y),
					 errhint(PROBE_DAMAGED_HINT)));
		if (id < 1 || id > run->pool_size || index[id] < 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("probe run %d: planned item %d is not active", run->run_id, id),
					 errhint(PROBE_DAMAGED_HINT)));
		count[index[id]]++;
		ysum[index[id]] += y;
	}
	return (int) SPI_processed;
}

/*
 * mean/var of the items of block b given the batch (spec §1.4): over the
 * block's d distinct observed points D with counts c and mean scores ybar,
 * A = K(D, D) + lambda diag(1/c), mean = k(x, D)ᵀ A⁻¹ ybar and
 * var = k(x, x) − k(x, D)ᵀ A⁻¹ k(x, D) — the same posterior as Eq. 4-5 over
 * the batch with its repeats.
 */
static void
fit_block(const ProbeRun *run, const ProbeItems *it, int b, const int *count,
		  const double *ysum, double *mean, double *var)
{
	int			dim = run->cfg.dim,
				lo = it->block_start[b],
				hi = it->block_start[b + 1],
				d = 0;
	double	   *XD = palloc(sizeof(double) * (Size) (hi - lo) * dim);
	double		floor = run->cfg.alpha;	/* the smallest ridge term */
	double	   *sqD = palloc(sizeof(double) * (hi - lo));
	double	   *coef = palloc(sizeof(double) * (hi - lo));
	double	   *A;
	double	   *kv = palloc(sizeof(double) * (hi - lo));

	for (int x = lo; x < hi; x++)
		if (count[x] > 0)
		{
			memcpy(XD + (Size) d * dim, it->X + (Size) x * dim, sizeof(double) * dim);
			sqD[d] = it->sqnorms[x];
			coef[d++] = ysum[x] / count[x];
		}
	A = palloc(sizeof(double) * PACKED_SIZE(Max(d, 1)));
	for (int i = 0, x = lo; i < d; x++)
	{
		if (count[x] == 0)
			continue;
		kernel_vector(&run->cfg, i + 1, XD, sqD, XD + (Size) i * dim, A + PACKED_ROW(i));
		A[PACKED_ROW(i) + i] += run->cfg.alpha / count[x];
		floor = Min(floor, run->cfg.alpha / count[x]);
		i++;
	}
	chol_factor_rows(d, A, floor);
	chol_solve(d, A, coef);
	for (int x = lo; x < hi; x++)
	{
		kernel_vector(&run->cfg, d, XD, sqD, it->X + (Size) x * dim, kv);
		mean[x] = dot(d, kv, coef);
		chol_forward(d, A, kv);
		var[x] = Max(it->kself[x] - dot(d, kv, kv), 0.0);
	}
}

/* Write the active items' fit (mean, sd, lcb, ucb); those not kept leave after batch j. */
static void
write_fit(const ProbeRun *run, const ProbeItems *it, double *fit[4], Datum *keep)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[8] = {INT4OID, INT4OID, INT4ARRAYOID, FLOAT8ARRAYOID, FLOAT8ARRAYOID,
	FLOAT8ARRAYOID, FLOAT8ARRAYOID, BOOLARRAYOID};
	Datum		args[8];
	Datum	   *ids = palloc(sizeof(Datum) * it->n);

	for (int x = 0; x < it->n; x++)
		ids[x] = Int32GetDatum(it->item_id[x]);
	args[0] = Int32GetDatum(run->run_id);
	args[1] = Int32GetDatum(run->batch);
	args[2] = probe_datum_array(ids, it->n, INT4OID);
	for (int c = 0; c < 4; c++)
		args[c + 3] = PointerGetDatum(float8_array(fit[c], NULL, it->n));
	args[7] = probe_datum_array(keep, it->n, BOOLOID);
	spi_execute(spi_plan(&plan,
						 "UPDATE model_select.probe_pool p SET mean = u.mean, sd = u.sd,"
						 " lcb = u.lcb, ucb = u.ucb, active = u.keep,"
						 " eliminated_after = CASE WHEN u.keep THEN NULL ELSE $2 END"
						 " FROM unnest($3::int[], $4::float8[], $5::float8[], $6::float8[],"
						 " $7::float8[], $8::bool[]) AS u(item_id, mean, sd, lcb, ucb, keep)"
						 " WHERE p.run_id = $1 AND p.item_id = u.item_id",
						 8, types), args, NULL, false, 0, SPI_OK_UPDATE,
				"write the fit of probe run %d", run->run_id);
}

/*
 * SQL: _probe_eliminate(run_id) — after the fully reported batch j of
 * interval i, when it is not the interval's last: fit on this batch only
 * (spec §2.1 lines 18-20), keep {x : ucb(x) >= max lcb} and the argmax-lcb
 * item.  Returns the size of the new active set.
 */
Datum
model_select_probe_eliminate(PG_FUNCTION_ARGS)
{
	int			spi_level;
	ProbeRun	run;
	ProbeItems	it;
	int		   *count;
	double	   *ysum,
			   *fit[4];			/* mean, sd, lcb, ucb */
	Datum	   *keep;
	int			nobs,
				best = 0,
				kept = 0;

	spi_level = spi_connect();
	probe_load_run(PG_GETARG_INT32(0), &run);
	probe_load_items(&run, &it);
	count = palloc0(sizeof(int) * it.n);
	ysum = palloc0(sizeof(double) * it.n);
	keep = palloc(sizeof(Datum) * it.n);
	for (int c = 0; c < 4; c++)
		fit[c] = palloc(sizeof(double) * it.n);
	nobs = load_batch(&run, &it, count, ysum);
	if (nobs < 1 || run.used + nobs >= run.interval_len)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("probe run %d: no elimination after batch %d of interval %d (%d + %d of %d)",
						run.run_id, run.batch, run.interval, run.used, nobs, run.interval_len),
				 errhint(PROBE_DAMAGED_HINT)));
	for (int b = 0; b < it.nblocks; b++)
		fit_block(&run, &it, b, count, ysum, fit[0], fit[1]);
	for (int x = 0; x < it.n; x++)
	{
		fit[1][x] = sqrt(fit[1][x]);
		fit[2][x] = fit[0][x] - run.beta * fit[1][x];
		fit[3][x] = fit[0][x] + run.beta * fit[1][x];
		if (fit[2][x] > fit[2][best])
			best = x;
	}
	for (int x = 0; x < it.n; x++)
	{
		keep[x] = BoolGetDatum(x == best || fit[3][x] >= fit[2][best]);
		kept += DatumGetBool(keep[x]);
	}
	write_fit(&run, &it, fit, keep);
	spi_finish(spi_level);
	PG_RETURN_INT32(kept);
}
