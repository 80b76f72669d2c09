/*
 * batch.c — route_batch(selector, source, log): route every row of a query
 * in one call.
 *
 * The source query yields (key, context).  Its rows are read through a
 * cursor, in a read-only transaction state, in blocks of BATCH_ROWS, and each block is scored by
 * decide_block(): a policy with a score_block (lin_ucb, rff_ucb, pak_ucb, bkb)
 * computes the features or kernel block of all the block's contexts and
 * their widths four rows at a time (math/vecops.c dot4(): each row of a
 * factor read once for four contexts, with a single score's bits).
 * The choices are decide()'s, row by row, with the same tie-breaking.  With
 * log, each block's decisions are written by one INSERT (as the extension
 * owner, like route()), and their decision_ids returned; with a budget (or
 * count_pending) the next block then counts them as pending (pacer_reload()):
 * each block is priced as a route() after the blocks before it.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "model/context.h"
#include "model/tags.h"
#include "model/selector_lock.h"
#include "pg/owner.h"
#include "pg/spi_util.h"
#include "pg/progress.h"
#include "routing/decide.h"
#include "routing/model_cache.h"

PG_FUNCTION_INFO_V1(model_select_route_batch);

#define BATCH_ROWS 256
#define BATCH_COLUMNS 6

/* One block of rows: keys, contexts as given, and the decisions. */
typedef struct Block
{
	Selector   *sel;
	int64		before;			/* source rows of the blocks before this one */
	int			m;
	int64		keys[BATCH_ROWS];
	bool		key_null[BATCH_ROWS];
	double	   *rawX;			/* m × dim (the embedding, then the tag buckets) */
	ArrayType  *tags[BATCH_ROWS];	/* as checked; NULL: none */
	ArmScore   *scores;			/* m × narms */
	int			chosen[BATCH_ROWS];
	int64		decision_ids[BATCH_ROWS];
} Block;

/*
 * The source must yield (integer key, array of numbers): each error names
 * the column and its type (a pgvector column needs its cast to real[]).
 */
/* The columns of the source query, as route_batch() documents them: (key, context[, tags]). */
enum
{
	SOURCE_KEY = 1,
	SOURCE_CONTEXT,
	SOURCE_TAGS,
	SOURCE_NCOLUMNS = SOURCE_TAGS
};

static void
check_source_columns(TupleDesc desc)
{
	Oid			key;
	Oid			context;

	if (desc->natts != SOURCE_NCOLUMNS && desc->natts != SOURCE_NCOLUMNS - 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("route_batch source must yield two or three columns (key integer, context[, tags text[]]), not %d",
						desc->natts)));
	if (desc->natts == SOURCE_TAGS && SPI_gettypeid(desc, SOURCE_TAGS) != TEXTARRAYOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("route_batch source column 3 (tags) must be text[], not %s",
						format_type_be(SPI_gettypeid(desc, SOURCE_TAGS)))));
	key = SPI_gettypeid(desc, SOURCE_KEY);
	context = SPI_gettypeid(desc, SOURCE_CONTEXT);
	if (key != INT2OID && key != INT4OID && key != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("route_batch source column 1 (key) must be an integer, not %s",
						format_type_be(key))));
	if (!context_array_type_ok(context))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("route_batch source column 2 (context) must be an array of numbers, not %s",
						format_type_be(context)),
				 errhint("Cast it to real[] (a pgvector column: embedding::real[]).")));
}

static int64
key_value(Datum d, Oid type)
{
	switch (type)
	{
		case INT2OID:
			return DatumGetInt16(d);
		case INT4OID:
			return DatumGetInt32(d);
		default:
			return DatumGetInt64(d);
	}
}

/* Names the source row whose context is being read, in any error about it. */
static void
source_row_context(void *arg)
{
	errcontext("route_batch source row " INT64_FORMAT, *(const int64 *) arg);
}

/* Copy the fetched rows into the block, validating each context. */
static void
block_read(Block *b, SPITupleTable *tt, uint64 nrows)
{
	int			dim = b->sel->cfg.dim;
	Oid			key_type = SPI_gettypeid(tt->tupdesc, SOURCE_KEY);
	int64		row = 0;
	ErrorContextCallback errcb = {error_context_stack, source_row_context, &row};

	error_context_stack = &errcb;
	b->m = (int) nrows;
	for (int t = 0; t < b->m; t++)
	{
		bool		isnull;
		Datum		key = SPI_getbinval(tt->vals[t], tt->tupdesc, SOURCE_KEY, &b->key_null[t]);
		Datum		context = SPI_getbinval(tt->vals[t], tt->tupdesc, SOURCE_CONTEXT, &isnull);
		bool		tags_null = true;
		Datum		tags = tt->tupdesc->natts < SOURCE_TAGS ? (Datum) 0
			: SPI_getbinval(tt->vals[t], tt->tupdesc, SOURCE_TAGS, &tags_null);
		double	   *x;

		row = b->before + t + 1;
		b->keys[t] = b->key_null[t] ? 0 : key_value(key, key_type);
		if (isnull)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("route_batch source row " INT64_FORMAT " has a NULL context", row)));
		b->tags[t] = tags_checked(tags_null ? NULL : DatumGetArrayTypePCopy(tags));
		x = context_read(&b->sel->cfg, DatumGetArrayTypeP(context), b->tags[t]);
		memcpy(b->rawX + (Size) t * dim, x, sizeof(double) * dim);
		pfree(x);
	}
	error_context_stack = errcb.previous;
	b->before += b->m;
}

/*
 * The block's tags as three arguments of its INSERT: all of them in one
 * text[] (args[0]), and each row's slice of it, from args[1][t] to
 * args[2][t] (empty: none).
 */
static void
block_tags_args(const Block *b, Datum *args)
{
	int			total = 0;
	Datum	   *all;
	Datum	   *lo = palloc(sizeof(Datum) * b->m);
	Datum	   *hi = palloc(sizeof(Datum) * b->m);

	for (int t = 0; t < b->m; t++)
		total += b->tags[t] ? ArrayGetNItems(1, ARR_DIMS(b->tags[t])) : 0;
	all = palloc(sizeof(Datum) * Max(total, 1));
	total = 0;
	for (int t = 0; t < b->m; t++)
	{
		Datum	   *elems = NULL;
		int			n = 0;

		if (b->tags[t])
			deconstruct_array(b->tags[t], TEXTOID, -1, false, TYPALIGN_INT, &elems, NULL, &n);
		lo[t] = Int32GetDatum(total + 1);
		for (int i = 0; i < n; i++)
			all[total++] = elems[i];
		hi[t] = Int32GetDatum(total);
	}
	args[0] = PointerGetDatum(construct_array(all, total, TEXTOID, -1, false, TYPALIGN_INT));
	args[1] = PointerGetDatum(construct_array(lo, b->m, INT4OID, 4, true, TYPALIGN_INT));
	args[2] = PointerGetDatum(construct_array(hi, b->m, INT4OID, 4, true, TYPALIGN_INT));
}

/* Log the block's decisions in one INSERT (run as the extension owner). */
static void
block_log(void *arg)
{
	static SPIPlanPtr plan = NULL;
	int			spi_level;
	Block	   *b = arg;
	const Selector *sel = b->sel;
	int			dim = sel->cfg.dim;
	int			e = sel->cfg.embed_dim;
	Oid			types[18] = {INT4OID, INT4ARRAYOID, FLOAT8ARRAYOID, FLOAT8ARRAYOID,
		INT4ARRAYOID, INT4ARRAYOID, FLOAT8ARRAYOID, FLOAT8OID, BOOLARRAYOID, FLOAT4ARRAYOID,
	INT8ARRAYOID, XID8OID, INT8OID, TEXTARRAYOID, INT4ARRAYOID, INT4ARRAYOID, FLOAT8ARRAYOID, FLOAT8ARRAYOID};
	Datum		args[18];
	char		nulls[19] = "                  ";
	Datum	   *arms = palloc(sizeof(Datum) * b->m);
	double	   *ucb = palloc(sizeof(double) * b->m);
	double	   *mean = palloc(sizeof(double) * b->m);
	Datum	   *lo = palloc(sizeof(Datum) * b->m);
	Datum	   *hi = palloc(sizeof(Datum) * b->m);
	Datum	   *real = palloc(sizeof(Datum) * b->m);
	double	   *expected = palloc(sizeof(double) * b->m);
	bool	   *expected_null = palloc(sizeof(bool) * b->m);

	for (int t = 0; t < b->m; t++)
	{
		const ArmScore *s = &b->scores[(Size) t * sel->narms + b->chosen[t]];

		arms[t] = Int32GetDatum(sel->arms[b->chosen[t]].arm_id);
		ucb[t] = s->ucb;
		mean[t] = s->mean;
		/* the embedding of row t; its tag buckets are not logged (its tags are) */
		lo[t] = Int32GetDatum(t * dim + 1);
		hi[t] = Int32GetDatum(t * dim + e);
		real[t] = BoolGetDatum(context_is_real(b->rawX + (Size) t * dim, e));
		expected_null[t] = !pacer_expected_cost(sel, b->scores + (Size) t * sel->narms, b->chosen[t],
												&expected[t]);
	}
	block_tags_args(b, args + 13);
	args[0] = Int32GetDatum(sel->cfg.selector_id);
	args[1] = PointerGetDatum(construct_array(arms, b->m, INT4OID, 4, true, TYPALIGN_INT));
	args[2] = PointerGetDatum(float8_array(ucb, NULL, b->m));
	args[3] = PointerGetDatum(float8_array(mean, NULL, b->m));
	args[4] = PointerGetDatum(construct_array(lo, b->m, INT4OID, 4, true, TYPALIGN_INT));
	args[5] = PointerGetDatum(construct_array(hi, b->m, INT4OID, 4, true, TYPALIGN_INT));
	args[6] = PointerGetDatum(float8_array(b->rawX, NULL, b->m * dim));
	/* one state, one λ for the whole block (pacer_reload() between blocks) */
	args[7] = Float8GetDatum(pacer_lambda(sel));
	/* each context once, compactly: real[] when it has no more precision */
	args[8] = PointerGetDatum(construct_array(real, b->m, BOOLOID, 1, true, TYPALIGN_CHAR));
	args[9] = PointerGetDatum(float4_array(b->rawX, b->m * dim));
	/* what the block scored with (route()'s columns) */
	decision_version_args(sel, args, nulls, 10);
	awaited_arg(sel, args, nulls, 16);
	args[17] = PointerGetDatum(float8_array(expected, expected_null, b->m));
	selector_write_lock(sel->cfg.selector_id, sel->name);
	spi_level = spi_connect();
	/* rows are inserted, and their ids drawn, in ordinality order */
	spi_execute(spi_plan(&plan,
						 "INSERT INTO model_select.decisions(selector_id, arm_id, context, context_real, score,"
						 " mean, cost_weight, versions, own_tx, own_seq, tags, awaited, expected_cost)"
						 " SELECT $1, u.arm, CASE WHEN NOT u.r THEN $7[u.lo:u.hi] END,"
						 " CASE WHEN u.r THEN $10[u.lo:u.hi] END, u.score, u.mean, $8, $11, $12, $13,"
						 " CASE WHEN u.thi >= u.tlo THEN $14[u.tlo:u.thi] END, $17, u.expected"
						 " FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3), pg_catalog.unnest($4),"
						 "   pg_catalog.unnest($5), pg_catalog.unnest($6), pg_catalog.unnest($9),"
						 "   pg_catalog.unnest($15), pg_catalog.unnest($16), pg_catalog.unnest($18)) WITH ORDINALITY"
						 "   AS u(arm, score, mean, lo, hi, r, tlo, thi, expected, i)"
						 " ORDER BY u.i RETURNING decision_id",
						 18, types), args, nulls, false, 0, SPI_OK_INSERT_RETURNING,
				"log the decisions of a batch");
	for (int t = 0; t < b->m; t++)
		b->decision_ids[t] = spi_int64(SPI_tuptable->vals[t], SPI_tuptable->tupdesc, SPI_SOLE_COLUMN);
	spi_finish(spi_level);
	/* the next block counts these as pending (a budget's price, count_pending) */
	pacer_reload(b->sel);
}

static void
block_emit(const Block *b, bool log, ReturnSetInfo *rsinfo)
{
	for (int t = 0; t < b->m; t++)
	{
		const ArmScore *s = &b->scores[(Size) t * b->sel->narms + b->chosen[t]];
		Datum		values[BATCH_COLUMNS];
		bool		nulls[BATCH_COLUMNS] = {false};

		values[0] = Int64GetDatum(b->keys[t]);
		nulls[0] = b->key_null[t];
		values[1] = CStringGetTextDatum(b->sel->arms[b->chosen[t]].name);
		values[2] = Float8GetDatum(s->ucb);
		values[3] = Float8GetDatum(s->mean);
		values[4] = Float8GetDatum(s->width);
		values[5] = Int64GetDatum(b->decision_ids[t]);
		nulls[5] = !log;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/*
 * SQL: route_batch(selector, source, log) → (key, arm, score, mean, width,
 * decision_id) for every row of source.
 */
Datum
model_select_route_batch(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bool		log = PG_GETARG_BOOL(2);
	Selector   *sel;
	char	   *source = text_to_cstring(PG_GETARG_TEXT_PP(1));
	MemoryContext block_cxt = AllocSetContextCreate(CurrentMemoryContext, "model_select route_batch",
													ALLOCSET_DEFAULT_SIZES);
	Block	   *b = palloc0(sizeof(Block));
	Portal		cursor;
	SPIPlanPtr	plan;
	int			read_only;

	if (log)
		check_decisions_writable("route_batch(log => true)");
	sel = selector_load(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	InitMaterializedSRF(fcinfo, 0);
	b->sel = sel;
	/* the caller's query, with the caller's search_path, read only */
	read_only = spi_connect_read_only();
	plan = SPI_prepare_cursor(source, 0, NULL, CURSOR_OPT_NO_SCROLL);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare_cursor failed: %s", SPI_result_code_string(SPI_result));
	/* one statement that returns rows (not none, not several) */
	if (!SPI_is_cursor_plan(plan))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("route_batch source must be one query that returns rows")));
	cursor = SPI_cursor_open(NULL, plan, NULL, NULL, true);
	check_source_columns(cursor->tupDesc);
	progress_begin("route_batch", text_to_cstring(PG_GETARG_TEXT_PP(0)), -1, "rows");
	for (;;)
	{
		MemoryContext old;
		SPITupleTable *tt;
		uint64		nrows;

		SPI_cursor_fetch(cursor, true, BATCH_ROWS);
		tt = SPI_tuptable;
		nrows = SPI_processed;
		if (nrows == 0)
			break;
		old = MemoryContextSwitchTo(block_cxt);
		b->rawX = palloc(sizeof(double) * nrows * sel->cfg.dim);
		b->scores = palloc(sizeof(ArmScore) * nrows * Max(sel->narms, 1));
		block_read(b, tt, nrows);
		decide_block(sel, b->m, b->rawX, b->scores, b->chosen);
		if (log)
		{
			read_only_end(read_only);
			run_as_extension_owner(block_log, b);
			read_only = read_only_begin();
		}
		MemoryContextSwitchTo(old);
		block_emit(b, log, rsinfo);
		progress_add(nrows);
		SPI_freetuptable(tt);
		MemoryContextReset(block_cxt);
	}
	progress_end();
	SPI_cursor_close(cursor);
	spi_finish(read_only);
	return (Datum) 0;
}
