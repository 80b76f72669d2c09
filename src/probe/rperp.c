/*
 * rperp.c — R-PERP probing runs: Restarting Phased Elimination with Random
 * Permutation (Iwazaki & Takeno (R-PERP), §2.1, §5.5) over a fixed finite pool X of
 * (benchmark prompt, model) pairs, the use case (b) of Iwazaki & Takeno (R-PERP).
 *
 * The state machine is in SQL (model_select.probe_*, install script); the
 * heavy parts are here, reading and writing the tables through SPI:
 *   _probe_load_pool  run the pool query, validate and store its items;
 *   _probe_plan       plan batch j of interval i: N_j = min(ceil(sqrt(T_i
 *                     N_{j-1})), T_i - used) (exact integer ceil), the greedy
 *                     max-variance design over the active set, the variance
 *                     conditioned only on the batch's earlier picks (a list:
 *                     repeats allowed, §0 item 6), then a Fisher–Yates shuffle;
 *   _probe_eliminate  fit the GP of §1.4 on THIS batch only and keep
 *                     {x active : ucb(x) >= max lcb}.
 * Kernel: k((p, a), (p', a')) = k'(p, p') [a = a'] (one GP per model, §5.6),
 * k' = the selector kernel plus `intercept` (kernel.c) on the prompts as
 * context_prepare leaves them (L2-normalised unless "normalize": false);
 * lambda = `alpha`.  Design and fit decompose into per-model blocks.  The fit
 * groups repeats: n observations of a point with noise lambda are exactly one
 * observation of their mean with noise lambda / n.
 *
 * Choices the paper leaves open [UNSPEC]: design ties (every first pick of
 * a batch is one) go to the lowest item_id, variances within a relative
 * 1e-12 being ties; batch (i, j) is shuffled by the in-tree PRNG seeded from
 * (run seed, i, j), so a run replays from its stored seed and the plan
 * depends on scores only through the active set; the argmax-lcb item is
 * always kept (never an empty active set).  Async feedback: a batch's
 * queries can all be handed out before any is reported, and reported in any
 * order; the next batch is planned only once all are reported, and until
 * then probe_next returns no rows (the "block" option of §5.5: no fallback
 * queries, so the design is never polluted).
 *
 * Limits (§5.6, §7): R-PERP chooses WHICH inputs are queried, so it fits only
 * loops where the system picks the (prompt, model) pair, e.g. probing a
 * benchmark pool; not exogenous live traffic (route() is for that).  T and
 * H must be chosen up front; the near-optimal H (Thm 5) needs the variation
 * budget V_T, unknown in production, so H is a tuned parameter (App. D's
 * V_T-free H still needs T; doubling is not analysed).  beta = beta_T^{1/2}
 * of Eq. 8 has an unknown constant C: the caller supplies it.  The per-model
 * contextual factorisation is outside the paper's theory.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "model/catalog.h"
#include "model/context.h"
#include "model/kernel.h"
#include "math/linalg.h"
#include "math/prng.h"
#include "model/settings.h"
#include "model/registry.h"
#include "probe/rperp.h"

PG_FUNCTION_INFO_V1(model_select_probe_load_pool);
PG_FUNCTION_INFO_V1(model_select_probe_plan);


/* A one-dimensional array of n elements of a built-in type. */
Datum
probe_datum_array(Datum *elems, int n, Oid type)
{
	int16		len;
	bool		byval;
	char		align;

	get_typlenbyvalalign(type, &len, &byval, &align);
	return PointerGetDatum(construct_array(elems, n, type, len, byval, align));
}

/* The columns of probe_load_run()'s query: RUN_NINTS int columns, then the others. */
enum
{
	RUN_RESET_EVERY = 1,
	RUN_INTERVAL,
	RUN_INTERVAL_LEN,
	RUN_USED,
	RUN_BATCH,
	RUN_PREV_BATCH_SIZE,
	RUN_POOL_SIZE,
	RUN_DIM,
	RUN_BETA,
	RUN_KERNEL,
	RUN_SETTINGS,
	RUN_SEED,
	RUN_NINTS = RUN_BETA - RUN_RESET_EVERY
};

/* Read and lock a run; the caller is connected to SPI. */
void
probe_load_run(int32 run_id, ProbeRun *run)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(run_id)};
	int32	   *ints[RUN_NINTS] = {&run->reset_every, &run->interval, &run->interval_len, &run->used,
	&run->batch, &run->prev_batch_size, &run->pool_size, &run->cfg.dim};
	HeapTuple	row;
	TupleDesc	desc;

	memset(run, 0, sizeof(*run));
	row = spi_fetch_one(spi_plan(&plan,
								 "SELECT reset_every, interval, interval_len, used, batch,"
								 " prev_batch_size, pool_size, coalesce(dim, 0), beta, kernel, settings, seed"
								 " FROM model_select.probe_runs WHERE run_id = $1 FOR UPDATE",
								 1, types), args, false, psprintf("probe run %d", run_id), NULL);
	desc = SPI_tuptable->tupdesc;
	run->run_id = run_id;
	for (int c = 0; c < RUN_NINTS; c++)
		*ints[c] = spi_int32(row, desc, RUN_RESET_EVERY + c);
	run->beta = spi_float8(row, desc, RUN_BETA);
	run->cfg.policy = POLICY_PAK_UCB;
	run->cfg.kernel = kernel_from_name(POLICY_PAK_UCB, spi_text(row, desc, RUN_KERNEL));
	settings_resolve(&run->cfg, DatumGetJsonbP(spi_datum(row, desc, RUN_SETTINGS)));
	run->cfg.seed = (uint64) spi_int64(row, desc, RUN_SEED);
	/* pool prompts carry no tags */
	run->cfg.tag_buckets = 0;
	config_set_dim(&run->cfg, run->cfg.dim);
}

/*
 * The pool query's rows, copied out of SPI: the query runs on a read-only
 * connection of its own, the items are stored on another.
 */
typedef struct PoolRows
{
	int			n;
	Datum	   *prompt;
	Datum	   *model;
	bool	   *prompt_null;
	bool	   *model_null;
} PoolRows;

/* Validate row i of the pool query and store it as item i + 1. */
static void
pool_store_row(ProbeRun *run, const PoolRows *rows, int i)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[4] = {INT4OID, INT4OID, FLOAT8ARRAYOID, TEXTOID};
	Datum		args[4];
	double	   *x;
	double	   *prepared;
	int			n;
	char	   *model;

	if (rows->prompt_null[i])
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("pool row %d: prompt is NULL", i + 1)));
	x = float_array(DatumGetArrayTypeP(rows->prompt[i]), &n, psprintf("pool row %d: prompt", i + 1), NULL);
	if (i == 0 && (n < 1 || n > PROBE_MAX_DIM))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("pool prompts must have 1 to %d elements, not %d", PROBE_MAX_DIM, n)));
	if (i == 0 && (Size) n * rows->n > MaxAllocSize / sizeof(double))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a pool of %d prompts of %d elements is too large", rows->n, n)));
	if (i == 0)
		config_set_dim(&run->cfg, n);
	else if (n != run->cfg.dim)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("pool row %d: prompt has %d elements, expected %d", i + 1, n, run->cfg.dim)));
	prepared = palloc(sizeof(double) * n);
	memcpy(prepared, x, sizeof(double) * n);
	context_prepare(&run->cfg, prepared);	/* rejects a zero prompt if normalising */

	if (rows->model_null[i])
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("pool row %d: model is NULL", i + 1)));
	model = TextDatumGetCString(rows->model[i]);
	if (model[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("pool row %d: model name is empty", i + 1)));
	args[0] = Int32GetDatum(run->run_id);
	args[1] = Int32GetDatum(i + 1);
	args[2] = PointerGetDatum(float8_array(x, NULL, n));
	args[3] = CStringGetTextDatum(model);
	spi_execute(spi_plan(&plan,
						 "INSERT INTO model_select.probe_pool(run_id, item_id, prompt, model)"
						 " VALUES ($1, $2, $3, $4)", 4, types),
				args, NULL, false, 0, SPI_OK_INSERT, "store pool item %d", i + 1);
}

/* The columns of a pool query, as create_probe_run() documents them: (prompt, model). */
enum
{
	POOL_PROMPT = 1,
	POOL_MODEL
};

/*
 * Run the caller's pool query (read-only, with the caller's search_path) and
 * copy its rows, checked for shape, into the current memory context.
 */
static void
pool_query(const char *query, PoolRows *rows)
{
	MemoryContext caller = CurrentMemoryContext;
	int			spi_level = spi_connect_read_only();
	SPITupleTable *tt;
	Oid			prompt_type,
				model_type;

	if (SPI_execute(query, true, 0) != SPI_OK_SELECT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the pool must be a SELECT query yielding (prompt, model)")));
	tt = SPI_tuptable;
	prompt_type = SPI_gettypeid(tt->tupdesc, POOL_PROMPT);
	model_type = tt->tupdesc->natts == POOL_MODEL ? SPI_gettypeid(tt->tupdesc, POOL_MODEL) : InvalidOid;
	if (!context_array_type_ok(prompt_type) || (model_type != TEXTOID && model_type != VARCHAROID))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the pool query must yield (prompt, an array of numbers, model text)")));
	if (SPI_processed == 0 || SPI_processed > PROBE_MAX_POOL)
		ereport(ERROR,
				(errcode(SPI_processed == 0 ? ERRCODE_INVALID_PARAMETER_VALUE
						 : ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the pool has %lu items; it needs 1 to %d",
						(unsigned long) SPI_processed, PROBE_MAX_POOL)));
	rows->n = (int) SPI_processed;
	rows->prompt = MemoryContextAlloc(caller, sizeof(Datum) * rows->n);
	rows->model = MemoryContextAlloc(caller, sizeof(Datum) * rows->n);
	rows->prompt_null = MemoryContextAlloc(caller, sizeof(bool) * rows->n);
	rows->model_null = MemoryContextAlloc(caller, sizeof(bool) * rows->n);
	for (int i = 0; i < rows->n; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(caller);
		Datum		p = SPI_getbinval(tt->vals[i], tt->tupdesc, POOL_PROMPT, &rows->prompt_null[i]);
		Datum		m = SPI_getbinval(tt->vals[i], tt->tupdesc, POOL_MODEL, &rows->model_null[i]);

		rows->prompt[i] = rows->prompt_null[i] ? (Datum) 0 : PointerGetDatum(PG_DETOAST_DATUM_COPY(p));
		rows->model[i] = rows->model_null[i] ? (Datum) 0 : PointerGetDatum(PG_DETOAST_DATUM_COPY(m));
		MemoryContextSwitchTo(old);
	}
	spi_finish(spi_level);
}

/*
 * SQL: _probe_load_pool(run_id, query) — store the rows of the query
 * (prompt real[]/float8[], model text) as items 1..n in the order the query
 * yields them.  The query runs with the caller's search_path, read-only.
 * Returns run_id, for chaining.
 */
Datum
model_select_probe_load_pool(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[3] = {INT4OID, INT4OID, INT4OID};
	Datum		args[3];
	ProbeRun	run;
	PoolRows	rows;
	MemoryContext rowcxt;
	int			spi_level;

	/*
	 * Not STRICT: a STRICT call with a constant NULL pool was folded to NULL
	 * when create_probe_run() was inlined, before _probe_create() could
	 * refuse the NULL (22004), and the run was then looked up as NULL.
	 */
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("_probe_load_pool: run_id and pool must not be NULL")));
	pool_query(text_to_cstring(PG_GETARG_TEXT_PP(1)), &rows);
	spi_level = spi_connect();
	probe_load_run(PG_GETARG_INT32(0), &run);
	rowcxt = AllocSetContextCreate(CurrentMemoryContext, "probe pool row", ALLOCSET_DEFAULT_SIZES);
	for (int i = 0; i < rows.n; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(rowcxt);

		pool_store_row(&run, &rows, i);
		MemoryContextSwitchTo(old);
		MemoryContextReset(rowcxt);
		CHECK_FOR_INTERRUPTS();
	}
	args[0] = Int32GetDatum(run.run_id);
	args[1] = Int32GetDatum(rows.n);
	args[2] = Int32GetDatum(run.cfg.dim);
	spi_execute(spi_plan(&plan,
						 "UPDATE model_select.probe_runs SET pool_size = $2, dim = $3"
						 " WHERE run_id = $1", 3, types),
				args, NULL, false, 0, SPI_OK_UPDATE, "update probe run %d", run.run_id);
	spi_finish(spi_level);
	PG_RETURN_INT32(run.run_id);
}

/* The columns of probe_load_items()'s query. */
enum
{
	ITEM_ID = 1,
	ITEM_PROMPT,
	ITEM_MODEL
};

/* The run's active items, prompts prepared, in blocks by model. */
void
probe_load_items(const ProbeRun *run, ProbeItems *it)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(run->run_id)};
	int			dim = run->cfg.dim;
	char	   *prev_model = NULL;

	it->n = (int) spi_execute(spi_plan(&plan,
									   "SELECT item_id, prompt, model FROM model_select.probe_pool"
									   " WHERE run_id = $1 AND active ORDER BY model COLLATE \"C\", item_id",
									   1, types), args, NULL, true, 0, SPI_OK_SELECT,
							  "read the pool of probe run %d", run->run_id);
	if (it->n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("probe run %d has no active item", run->run_id),
				 errhint(PROBE_DAMAGED_HINT)));
	it->nblocks = 0;
	it->item_id = palloc(sizeof(int32) * it->n);
	it->block = palloc(sizeof(int) * it->n);
	it->block_start = palloc(sizeof(int) * (it->n + 1));
	it->X = palloc(sizeof(double) * (Size) it->n * dim);
	it->sqnorms = palloc(sizeof(double) * it->n);
	it->kself = palloc(sizeof(double) * it->n);
	for (int x = 0; x < it->n; x++)
	{
		HeapTuple	row = SPI_tuptable->vals[x];
		int			n;
		double	   *p = float_array(DatumGetArrayTypeP(spi_datum(row, SPI_tuptable->tupdesc, ITEM_PROMPT)),
									&n, "prompt", NULL);
		char	   *model = spi_text(row, SPI_tuptable->tupdesc, ITEM_MODEL);

		if (n != dim)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("pool item of probe run %d has %d dimensions, expected %d",
							run->run_id, n, dim),
					 errhint(PROBE_DAMAGED_HINT)));
		if (prev_model == NULL || strcmp(model, prev_model) != 0)
			it->block_start[it->nblocks++] = x;
		prev_model = model;
		it->item_id[x] = spi_int32(row, SPI_tuptable->tupdesc, ITEM_ID);
		/* the fit indexes arrays of pool_size + 1 by item_id */
		if (it->item_id[x] < 1 || it->item_id[x] > run->pool_size)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("probe run %d has item %d outside its pool of %d",
							run->run_id, it->item_id[x], run->pool_size),
					 errhint(PROBE_DAMAGED_HINT)));
		it->block[x] = it->nblocks - 1;
		context_prepare(&run->cfg, p);
		memcpy(it->X + (Size) x * dim, p, sizeof(double) * dim);
		it->kself[x] = kernel_self(&run->cfg, p);
	}
	it->block_start[it->nblocks] = it->n;
	row_sqnorms(it->n, dim, it->X, it->sqnorms);
}

/* Largest variance; ties (within a relative 1e-12) to the lowest item_id. */
static int
argmax_variance(const ProbeItems *it, const double *var)
{
	int			best = 0;

	for (int x = 1; x < it->n; x++)
	{
		double		tol = 1e-12 * Max(var[x], var[best]);

		if (var[x] > var[best] + tol ||
			(var[x] >= var[best] - tol && it->item_id[x] < it->item_id[best]))
			best = x;
	}
	return best;
}

/*
 * S[0..N-1] = the greedy max-variance design over the active items (spec
 * §2.1 lines 7-10): each pick is added as one noisy observation, a rank-1
 * term c cᵀ of the posterior covariance within its model's block, with
 * c = Σ(·, z) / sqrt(Σ(z, z) + lambda) and Σ(·, z) = k(·, z) − Σ_s c_s c_s(z)
 * over the block's earlier picks.  O(|active| N) memory, O(|block| N) per pick.
 */
static void
design_batch(const ProbeRun *run, const ProbeItems *it, int N, int *S)
{
	int			dim = run->cfg.dim;
	double	   *var = palloc(sizeof(double) * it->n);
	double	   *kz = palloc(sizeof(double) * it->n);
	int		   *step_block = palloc(sizeof(int) * N);
	Size	   *step_off = palloc(sizeof(Size) * N);
	Size		cap = Max(it->n, 64),
				top = 0;
	double	   *C = palloc(sizeof(double) * cap);

	memcpy(var, it->kself, sizeof(double) * it->n);
	for (int s = 0; s < N; s++)
	{
		int			z = argmax_variance(it, var);
		int			b = it->block[z],
					lo = it->block_start[b],
					nb = it->block_start[b + 1] - lo;
		double		scale = 1.0 / sqrt(Max(var[z], 0.0) + run->cfg.alpha);
		double	   *c;

		S[s] = z;
		kernel_vector(&run->cfg, nb, it->X + (Size) lo * dim, it->sqnorms + lo,
					  it->X + (Size) z * dim, kz);
		for (int p = 0; p < s; p++)
		{
			const double *cp = C + step_off[p];

			if (step_block[p] != b)
				continue;
			for (int x = 0; x < nb; x++)
				kz[x] -= cp[x] * cp[z - lo];
		}
		if (top + nb > cap)
		{
			if ((top + nb) * 2 > MaxAllocSize / sizeof(double))
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("the design of a batch of %d queries over %d active items is too large", N, it->n),
						 errhint("Use a smaller reset_every or a smaller pool.")));
			cap = (top + nb) * 2;
			C = repalloc(C, sizeof(double) * cap);
		}
		c = C + top;
		step_block[s] = b;
		step_off[s] = top;
		top += nb;
		for (int x = 0; x < nb; x++)
		{
			c[x] = kz[x] * scale;
			var[lo + x] = Max(var[lo + x] - c[x] * c[x], 0.0);
		}
		CHECK_FOR_INTERRUPTS();
	}
}

/* Fisher–Yates shuffle of S with the PRNG of batch (i, j) of the run's seed. */
static void
permute(int *S, int N, uint64 seed, int32 interval, int32 batch)
{
	Prng		rng;

	prng_seed(&rng, mix64(seed) ^ mix64(((uint64) (uint32) interval << 32) | (uint32) batch));
	for (int m = N - 1; m > 0; m--)
	{
		int			r = (int) (prng_uniform(&rng) * (m + 1));	/* Min() would draw twice */
		int			tmp = S[m];

		r = Min(r, m);
		S[m] = S[r];
		S[r] = tmp;
	}
}

/* ceil(sqrt(x)) exactly, for 0 <= x < 2^62. */
static int64
ceil_sqrt(int64 x)
{
	int64		s = (int64) ceil(sqrt((double) x));

	while (s > 0 && (s - 1) * (s - 1) >= x)
		s--;
	while (s * s < x)
		s++;
	return s;
}

/*
 * SQL: _probe_plan(run_id) — plan batch j of interval i (the run's current
 * position): write its N_j permuted queries to probe_plan and return N_j.
 */
Datum
model_select_probe_plan(PG_FUNCTION_ARGS)
{
	int			spi_level;
	static SPIPlanPtr plan = NULL;
	Oid			types[5] = {INT4OID, INT4OID, INT4OID, INT8OID, INT4ARRAYOID};
	Datum		args[5];
	ProbeRun	run;
	ProbeItems	it;
	int64		N;
	int		   *S;
	Datum	   *ids;

	spi_level = spi_connect();
	probe_load_run(PG_GETARG_INT32(0), &run);
	if (run.interval < 1 || run.batch < 1 || run.prev_batch_size < 1 || run.used >= run.interval_len)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("probe run %d has no batch to plan (interval %d, batch %d, %d of %d used)",
						run.run_id, run.interval, run.batch, run.used, run.interval_len),
				 errhint(PROBE_DAMAGED_HINT)));
	N = ceil_sqrt((int64) run.interval_len * run.prev_batch_size);
	N = Min(N, (int64) run.interval_len - run.used);
	if (N > (int64) (MaxAllocSize / sizeof(Datum)))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a batch of " INT64_FORMAT " queries is too large", N),
				 errhint("Use a smaller reset_every.")));
	probe_load_items(&run, &it);
	S = palloc(sizeof(int) * N);
	design_batch(&run, &it, (int) N, S);
	permute(S, (int) N, run.cfg.seed, run.interval, run.batch);
	ids = palloc(sizeof(Datum) * N);
	for (int m = 0; m < N; m++)
		ids[m] = Int32GetDatum(it.item_id[S[m]]);
	args[0] = Int32GetDatum(run.run_id);
	args[1] = Int32GetDatum(run.interval);
	args[2] = Int32GetDatum(run.batch);
	args[3] = Int64GetDatum((int64) (run.interval - 1) * run.reset_every + run.used);
	args[4] = probe_datum_array(ids, (int) N, INT4OID);
	spi_execute(spi_plan(&plan,
						 "INSERT INTO model_select.probe_plan(run_id, interval, batch, m, t, item_id)"
						 " SELECT $1, $2, $3, u.m::int, $4 + u.m, u.item_id"
						 " FROM unnest($5::int[]) WITH ORDINALITY AS u(item_id, m)",
						 5, types), args, NULL, false, 0, SPI_OK_INSERT,
				"write the plan of probe run %d", run.run_id);
	spi_finish(spi_level);
	PG_RETURN_INT32((int32) N);
}
