/*
 * codebook_fit.c — SQL fit_codebook(selector, source, refit): fits a
 * selector's codebook (codebook.c) on the contexts of the caller's query and
 * stores it through model_select_internal._fit_codebook(), which re-learns
 * every arm.  Like admin.c's entries it checks the caller's admin right
 * before anything else, but the query runs as the caller: only the store
 * runs as the extension owner.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "model/catalog.h"
#include "model/codebook.h"
#include "model/context.h"
#include "model/privilege.h"
#include "pg/owner.h"
#include "pg/spi_util.h"

PG_FUNCTION_INFO_V1(model_select_fit_codebook);
PG_FUNCTION_INFO_V1(model_select_codebook_fitted);

/* The source query's column of contexts: its first (as SPI numbers them). */
#define SOURCE_CONTEXT_COLUMN 1

/*
 * The contexts in the first column of the query source (read-only, as the
 * caller), at most codebook_max_rows() of them, validated, into a palloc'd
 * n × dim block.
 */
static double *
source_contexts(const SelectorConfig *cfg, const char *source, int *n)
{
	MemoryContext caller = CurrentMemoryContext;
	int			spi_level = spi_connect_read_only();
	double	   *X;
	TupleDesc	desc;

	if (SPI_execute(source, true, codebook_max_rows(cfg)) != SPI_OK_SELECT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("fit_codebook: source must be a SELECT query")));
	desc = SPI_tuptable->tupdesc;
	if (desc->natts < SOURCE_CONTEXT_COLUMN)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("fit_codebook: the source yields no column; its first must be the contexts")));
	if (!context_array_type_ok(SPI_gettypeid(desc, SOURCE_CONTEXT_COLUMN)))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("fit_codebook: the source's first column must be an array of numbers, not %s",
						format_type_be(SPI_gettypeid(desc, SOURCE_CONTEXT_COLUMN)))));
	*n = (int) SPI_processed;
	X = MemoryContextAlloc(caller, sizeof(double) * Max(*n, 1) * (Size) cfg->embed_dim);
	for (int i = 0; i < *n; i++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[i], desc, SOURCE_CONTEXT_COLUMN, &isnull);
		double	   *x;

		if (isnull)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("fit_codebook: the context of the source's row %d is NULL", i + 1)));
		x = context_from_array(DatumGetArrayTypeP(d), cfg->embed_dim);
		memcpy(X + (Size) i * cfg->embed_dim, x, sizeof(double) * cfg->embed_dim);
		pfree(x);
	}
	spi_finish(spi_level);
	return X;
}

typedef struct CodebookFit
{
	const char *name;
	SelectorConfig cfg;
	const double *centroids;
	int			rows;
} CodebookFit;

/* As the extension owner (as admin.c's entries): the caller's admin right, then the configuration. */
static void
codebook_begin(void *arg)
{
	CodebookFit *fit = arg;
	int			spi_level = spi_connect();
	int32		selector_id = selector_id_by_name(fit->name);

	selector_check_privilege(selector_id, fit->name, SELECTOR_ADMIN);
	config_load(selector_id, &fit->cfg);
	spi_finish(spi_level);
}

/* As the extension owner: model_select_internal._fit_codebook(name, centroids, normalized, rows). */
static void
codebook_store(void *arg)
{
	CodebookFit *fit = arg;
	int			k = fit->cfg.codebook;
	int			dim = fit->cfg.embed_dim;
	Datum	   *elems = palloc(sizeof(Datum) * (Size) k * dim);
	int			dims[2] = {k, dim};
	int			lbs[2] = {1, 1};
	Oid			types[4] = {TEXTOID, FLOAT8ARRAYOID, BOOLOID, INT8OID};
	Datum		args[4];
	int			spi_level;

	for (Size i = 0; i < (Size) k * dim; i++)
		elems[i] = Float8GetDatum(fit->centroids[i]);
	args[0] = CStringGetTextDatum(fit->name);
	args[1] = PointerGetDatum(construct_md_array(elems, NULL, 2, dims, lbs, FLOAT8OID, sizeof(float8),
												 FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	args[2] = BoolGetDatum(fit->cfg.normalize);
	args[3] = Int64GetDatum(fit->rows);
	spi_level = spi_connect();
	if (SPI_execute_with_args("SELECT model_select_internal._fit_codebook($1, $2, $3, $4)", 4, types, args, NULL,
							  false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not run model_select_internal._fit_codebook()");
	spi_finish(spi_level);
}

/*
 * SQL fit_codebook(selector, source, refit): the caller's admin right first,
 * then the fit on the caller's query as the caller, then the store and
 * re-learn as the extension owner.  Returns the contexts fitted on (0 when
 * refit is false and the selector has a codebook, which it keeps).
 */
Datum
model_select_fit_codebook(PG_FUNCTION_ARGS)
{
	CodebookFit fit;
	double	   *X;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("fit_codebook: selector and source must not be NULL")));
	fit.name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	run_as_extension_owner(codebook_begin, &fit);
	/* the configuration's centroids: those stored, if they are of its size (codebook.c) */
	if (fit.cfg.centroids != NULL && !PG_ARGISNULL(2) && !PG_GETARG_BOOL(2))
		PG_RETURN_INT64(0);
	if (fit.cfg.codebook == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("selector \"%s\" has no codebook", fit.name),
				 errhint("Give it one with alter_selector(name, '{\"codebook\": k}') (lin_ucb).")));
	/* it stores what it fits: refuse before the source runs, not after the fit */
	PreventCommandIfReadOnly("fit_codebook()");
	X = source_contexts(&fit.cfg, text_to_cstring(PG_GETARG_TEXT_PP(1)), &fit.rows);
	if (fit.rows < fit.cfg.codebook)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("fit_codebook: the source yields %d contexts, fewer than the %d centroids of selector \"%s\"",
						fit.rows, fit.cfg.codebook, fit.name)));
	fit.centroids = codebook_fit(&fit.cfg, fit.rows, X);
	run_as_extension_owner(codebook_store, &fit);
	PG_RETURN_INT64(fit.rows);
}

/*
 * SQL _codebook_fitted(selector): has the selector centroids that serve its
 * configuration (codebook.c's rule: k × dim, fitted under its normalize)?
 * warm_start() asks before it keeps its source's rows for a fit; the admin
 * right is checked as by fit_codebook().
 */
Datum
model_select_codebook_fitted(PG_FUNCTION_ARGS)
{
	CodebookFit fit;

	fit.name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	run_as_extension_owner(codebook_begin, &fit);
	PG_RETURN_BOOL(fit.cfg.centroids != NULL);
}
