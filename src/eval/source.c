/*
 * source.c — outcome tables as given by a query: rows of (context,
 * rewards[, costs[, expected]]), one reward (and cost) per arm, copied into
 * memory and checked.  replay() reads its online stream and its warm-up
 * rows this way; _source_rows() hands the same rows back to SQL in fixed
 * columns, so that warm_start() can insert them into the reward log.
 *
 * Columns are taken by position, not by name, so that any query whose
 * columns are in this order will do.  A NULL reward means that the arm has
 * no outcome on that row; a NULL or empty costs array means no costs.  A
 * last column named "tags" (text[]) gives each row's tags (model/tags.c).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "model/context.h"
#include "model/tags.h"
#include "pg/spi_util.h"
#include "pg/progress.h"
#include "eval/eval.h"

PG_FUNCTION_INFO_V1(model_select_source_rows);

static int
array_column(const ReplayData *data, TupleDesc desc, int col, const char *what, bool with_expected)
{
	Oid			type = SPI_gettypeid(desc, col);

	if (!context_array_type_ok(type))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s column %d (%s) must be an array of numbers, not %s",
						data->label, col, what, format_type_be(type)),
				 errhint("The source query yields (context, rewards[, costs%s]).",
						 with_expected ? "[, expected]" : "")));
	return col;
}

static double *
row_array(const ReplayData *data, HeapTuple row, TupleDesc desc, int col, int rowno, int *n,
		  const char *what, bool **nulls)
{
	bool		isnull;
	Datum		d = SPI_getbinval(row, desc, col, &isnull);
	double	   *volatile x = NULL;

	if (isnull)
	{
		*n = -1;
		return NULL;
	}
	PG_TRY();
	{
		x = float_array(DatumGetArrayTypeP(d), n, what, nulls);
	}
	PG_CATCH();
	{
		errcontext("%s row %d", data->label, rowno);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return x;
}

/* As row_array(), for a column that must not be NULL. */
static double *
row_array_required(const ReplayData *data, HeapTuple row, TupleDesc desc, int col, int rowno,
				   int *n, const char *what, bool **nulls)
{
	double	   *x = row_array(data, row, desc, col, rowno, n, what, nulls);

	if (x == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s row %d: %s is NULL", data->label, rowno, what)));
	return x;
}

static void
row_error(const ReplayData *data, int rowno, const char *problem, int got, int expected)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_EXCEPTION),
			 errmsg("%s row %d: %s has %d elements, expected %d",
					data->label, rowno, problem, got, expected)));
}

/*
 * An array of count elements of size bytes for the whole source, in caller:
 * 54000 beyond what one allocation may hold (1 GB), instead of palloc's
 * internal error.
 */
static void *
source_alloc(const ReplayData *data, MemoryContext caller, Size count, Size size,
			 const char *what)
{
	if (count > MaxAllocSize / size)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s is too large: its %s take more than 1 GB", data->label, what),
				 errhint("Give fewer rows at a time.")));
	return MemoryContextAllocZero(caller, Max(count, 1) * size);
}

/* Row i's context into data->contexts (the first row sets dim). */
static void
source_context(ReplayData *data, HeapTuple row, TupleDesc desc, int i, MemoryContext caller)
{
	int			n;
	double	   *x = row_array_required(data, row, desc, 1, i + 1, &n, "context", NULL);

	if (i == 0)
	{
		data->dim = n;
		data->contexts = source_alloc(data, caller, (Size) data->nrows * Max(n, 1), sizeof(double),
									  "contexts");
	}
	else if (n != data->dim)
		row_error(data, i + 1, "context", n, data->dim);
	memcpy(data->contexts + (Size) i * data->dim, x, sizeof(double) * n);
}

/*
 * The "tags" column of desc (text[], last), or 0 for none; tags (nrows)
 * gets its rows, checked, in the caller's memory.
 */
static int
source_tags_column(ReplayData *data, TupleDesc desc, MemoryContext caller)
{
	int			col = SPI_fnumber(desc, "tags");

	if (col <= 0)
		return 0;
	if (col != desc->natts || SPI_gettypeid(desc, col) != TEXTARRAYOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s column \"tags\" must be the last column and text[], not column %d of type %s",
						data->label, col, format_type_be(SPI_gettypeid(desc, col)))));
	data->tags = MemoryContextAllocZero(caller, sizeof(ArrayType *) * Max(data->nrows, 1));
	for (int i = 0; i < data->nrows; i++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[i], desc, col, &isnull);
		MemoryContext old = MemoryContextSwitchTo(caller);

		data->tags[i] = tags_checked(isnull ? NULL : DatumGetArrayTypePCopy(d));
		MemoryContextSwitchTo(old);
	}
	return col;
}

/*
 * The contexts of data as cfg's policies read them before
 * context_prepare(): each row's embedding, then its tags' buckets.
 */
void
source_add_tags(ReplayData *data, const SelectorConfig *cfg)
{
	double	   *x;

	if (cfg->dim == data->dim)
		return;
	x = source_alloc(data, GetMemoryChunkContext(data->contexts), (Size) data->nrows * cfg->dim,
					 sizeof(double), "contexts");
	for (int i = 0; i < data->nrows; i++)
	{
		memcpy(x + (Size) i * cfg->dim, data->contexts + (Size) i * data->dim, sizeof(double) * data->dim);
		tags_buckets(cfg, data->tags ? data->tags[i] : NULL, x + (Size) i * cfg->dim + data->dim);
	}
	pfree(data->contexts);
	data->contexts = x;
	data->dim = cfg->dim;
}

/* Row i's rewards (the first row sets narms and allocates the per-arm arrays). */
static void
source_rewards(ReplayData *data, HeapTuple row, TupleDesc desc, int i, MemoryContext caller,
			   bool has_expected)
{
	int			n;
	bool	   *missing;
	double	   *r = row_array_required(data, row, desc, 2, i + 1, &n, "rewards", &missing);

	if (i == 0)
	{
		if (n < 1)
			row_error(data, 1, "rewards", n, 1);
		data->narms = n;
		data->rewards = source_alloc(data, caller, (Size) data->nrows * n, sizeof(double), "rewards");
		data->costs = source_alloc(data, caller, (Size) data->nrows * n, sizeof(double), "costs");
		data->available = source_alloc(data, caller, (Size) data->nrows * n, sizeof(bool), "rewards");
		data->row_has_costs = source_alloc(data, caller, data->nrows, sizeof(bool), "rows");
		data->expected = has_expected
			? source_alloc(data, caller, (Size) data->nrows * n, sizeof(double), "expected rewards")
			: NULL;
	}
	else if (n != data->narms)
		row_error(data, i + 1, "rewards", n, data->narms);
	memcpy(data->rewards + (Size) i * data->narms, r, sizeof(double) * n);
	for (int a = 0; a < n; a++)
		data->available[(Size) i * n + a] = !missing[a];
}

/* Row i's optional costs (column 3) and expected rewards (column 4). */
static void
source_costs_expected(ReplayData *data, HeapTuple row, TupleDesc desc, int i, bool has_costs)
{
	int			n;
	double	   *c = has_costs ? row_array(data, row, desc, 3, i + 1, &n, "costs", NULL) : NULL;

	data->row_has_costs[i] = c != NULL && n > 0;
	if (data->row_has_costs[i])
	{
		if (n != data->narms)
			row_error(data, i + 1, "costs", n, data->narms);
		memcpy(data->costs + (Size) i * data->narms, c, sizeof(double) * n);
	}
	if (data->expected != NULL)
	{
		bool	   *missing;
		double	   *e = row_array_required(data, row, desc, 4, i + 1, &n, "expected", &missing);

		if (n != data->narms)
			row_error(data, i + 1, "expected", n, data->narms);
		memcpy(data->expected + (Size) i * data->narms, e, sizeof(double) * n);
	}
}

/*
 * Run the query source (read-only, as the caller) and copy its rows into
 * *data, allocated in the caller's memory context.  label names the source
 * in error messages; with_expected allows the 4th column.
 */
void
source_load(const char *source, const char *label, bool with_expected, ReplayData *data)
{
	int			spi_level;
	MemoryContext caller = CurrentMemoryContext;
	TupleDesc	desc;
	int			has_costs,
				has_expected;
	int			max_columns = with_expected ? 4 : 3;
	int			ncolumns;

	memset(data, 0, sizeof(ReplayData));
	data->label = label;
	spi_level = spi_connect_read_only();
	if (SPI_execute(source, true, 0) != SPI_OK_SELECT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a SELECT query", label)));
	desc = SPI_tuptable->tupdesc;
	if (SPI_processed == 0 || SPI_processed > INT_MAX / 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s yields %lu rows", label, (unsigned long) SPI_processed)));
	data->nrows = (int) SPI_processed;
	ncolumns = desc->natts - (source_tags_column(data, desc, caller) > 0);
	if (ncolumns < 2 || ncolumns > max_columns)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s yields %d columns, expected (context, rewards[, costs%s][, tags])",
						label, desc->natts, with_expected ? "[, expected]" : ""),
				 ncolumns == max_columns + 1 ? errhint("A column of tags is found by its name, \"tags\".") : 0));
	array_column(data, desc, 1, "context", with_expected);
	array_column(data, desc, 2, "rewards", with_expected);
	has_costs = ncolumns >= 3 ? array_column(data, desc, 3, "costs", with_expected) : 0;
	has_expected = ncolumns == 4 ? array_column(data, desc, 4, "expected", with_expected) : 0;

	for (int i = 0; i < data->nrows; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];

		source_context(data, row, desc, i, caller);
		source_rewards(data, row, desc, i, caller, has_expected);
		source_costs_expected(data, row, desc, i, has_costs);
	}
	spi_finish(spi_level);
}

static Datum
float8_array_datum(const double *x, int n)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(n, 1));

	for (int i = 0; i < n; i++)
		d[i] = Float8GetDatum(x[i]);
	return PointerGetDatum(construct_array(d, n, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL,
										   TYPALIGN_DOUBLE));
}

/*
 * _source_rows(source): the rows of an outcome table in fixed columns (row,
 * context, rewards, costs, tags), checked as replay() checks its source; rewards
 * keep their NULLs, costs is NULL where the row gives none.
 */
Datum
model_select_source_rows(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ReplayData	data;
	int64		available = 0;

	eval_check_arg(!PG_ARGISNULL(0), "_source_rows", "source must not be NULL");
	source_load(text_to_cstring(PG_GETARG_TEXT_PP(0)), "source", false, &data);
	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < data.nrows; i++)
	{
		Datum		values[5];
		bool		nulls[5] = {false};
		Datum	   *r = palloc(sizeof(Datum) * data.narms);
		bool	   *rnull = palloc(sizeof(bool) * data.narms);
		int			dims[1] = {data.narms};
		int			lbs[1] = {1};

		for (int a = 0; a < data.narms; a++)
		{
			r[a] = Float8GetDatum(data.rewards[(Size) i * data.narms + a]);
			rnull[a] = !data.available[(Size) i * data.narms + a];
			available += !rnull[a];
		}
		values[0] = Int32GetDatum(i + 1);
		values[1] = float8_array_datum(data.contexts + (Size) i * data.dim, data.dim);
		values[2] = PointerGetDatum(construct_md_array(r, rnull, 1, dims, lbs, FLOAT8OID,
													   sizeof(float8), FLOAT8PASSBYVAL,
													   TYPALIGN_DOUBLE));
		if (data.row_has_costs[i])
			values[3] = float8_array_datum(data.costs + (Size) i * data.narms, data.narms);
		else
			nulls[3] = true;
		values[4] = PointerGetDatum(data.tags ? data.tags[i] : NULL);
		nulls[4] = data.tags == NULL || data.tags[i] == NULL;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	/* warm_start's total: a reward per available element (active arms: at most) */
	progress_total(available, "rewards");
	return (Datum) 0;
}
