/*
 * spi_util.c — SPI helpers shared by every subsystem (see spi_util.h).
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "pg/spi_util.h"

/* spi_connect()'s token for spi_finish(); spi_connect_read_only() gives a GUC nest level. */
#define PINNED_SEARCH_PATH (-1)

static void
connect(void)
{
	int			rc = SPI_connect();

	if (rc != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
}

/*
 * Connect for the extension's own queries, with the search path pinned to
 * pg_catalog alone (no temporary schema) until spi_finish(): their
 * operators, functions and type names resolve in pg_catalog whatever the
 * caller's search_path, so a role's public.= or public.now() never runs
 * inside them (often as the extension owner).  An override search path, not
 * a GUC as a SET clause would, for speed: it costs no parsing and leaves
 * search_path itself alone; an error pops it with the (sub)transaction.
 */
int
spi_connect(void)
{
	OverrideSearchPath path = {.schemas = NIL, .addCatalog = true, .addTemp = false};

	connect();
	PushOverrideSearchPath(&path);
	return PINNED_SEARCH_PATH;
}

/*
 * Connect to run query text the caller supplied (replay's source, a probe
 * pool): with the caller's search_path, as it is the caller's SQL, but in a
 * read-only transaction state (as a function's SET clause would set it,
 * undone by spi_finish() or with the (sub)transaction), so nothing it calls
 * can write.  Only SPI_execute that text on this connection.
 */
int
spi_connect_read_only(void)
{
	connect();
	return read_only_begin();
}

/*
 * A read-only transaction state until read_only_end(level) (or the end of
 * the (sub)transaction): what the caller's query text runs under.  Between
 * the two, the connection can write again (route_batch logs decisions
 * between fetches of its source).
 */
int
read_only_begin(void)
{
	int			level = NewGUCNestLevel();

	(void) set_config_option("transaction_read_only", "on", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return level;
}

void
read_only_end(int level)
{
	AtEOXact_GUC(true, level);
}

/* Undo what spi_connect*() set (token: what it returned) and disconnect. */
void
spi_finish(int token)
{
	int			rc;

	if (token == PINNED_SEARCH_PATH)
		PopOverrideSearchPath();
	else
		read_only_end(token);
	rc = SPI_finish();
	if (rc != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed: %s", SPI_result_code_string(rc));
}

/*
 * Prepare a statement once per backend and keep it; the caller is
 * connected.  Generic plans: every statement here looks rows up by key, and
 * the plan cache would otherwise plan the ones whose row comparisons it
 * cannot estimate without values again on every call.
 */
SPIPlanPtr
spi_plan(SPIPlanPtr *slot, const char *sql, int nargs, const Oid *argtypes)
{
	if (*slot == NULL)
	{
		SPIPlanPtr	plan = SPI_prepare_cursor(sql, nargs, (Oid *) argtypes,
											  CURSOR_OPT_GENERIC_PLAN);

		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed for \"%s\": %s", sql, SPI_result_code_string(SPI_result));
		SPI_keepplan(plan);
		*slot = plan;
	}
	return *slot;
}

/*
 * Execute a kept plan (SPI_execute_plan's arguments); any result code other
 * than `expected` is an internal error "could not <what>".  Returns
 * SPI_processed.
 */
uint64
spi_execute(SPIPlanPtr plan, Datum *args, const char *nulls, bool read_only, long count,
			int expected, const char *what,...)
{
	int			rc = SPI_execute_plan(plan, args, nulls, read_only, count);

	if (rc != expected)
	{
		StringInfoData buf;

		initStringInfo(&buf);
		for (;;)
		{
			va_list		ap;
			int			needed;

			va_start(ap, what);
			needed = appendStringInfoVA(&buf, what, ap);
			va_end(ap);
			if (needed == 0)
				break;
			enlargeStringInfo(&buf, needed);
		}
		elog(ERROR, "could not %s: %s", buf.data, SPI_result_code_string(rc));
	}
	return SPI_processed;
}

/*
 * Run a kept SELECT of one row (by a unique key) and return it (valid until
 * spi_finish; its descriptor is SPI_tuptable->tupdesc).  No row: 42704
 * "<object> does not exist", with hint when not NULL.
 */
HeapTuple
spi_fetch_one(SPIPlanPtr plan, Datum *args, bool read_only, const char *object, const char *hint)
{
	if (spi_execute(plan, args, NULL, read_only, 1, SPI_OK_SELECT, "look up %s", object) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("%s does not exist", object),
				 hint ? errhint("%s", hint) : 0));
	return SPI_tuptable->vals[0];
}

/*
 * Connect, run an INSERT … RETURNING <bigint id> of one row (plan prepared
 * once from sql; nulls as SPI_execute_plan's), finish; returns the id.
 */
int64
spi_insert_returning_id(SPIPlanPtr *slot, const char *sql, int nargs, const Oid *argtypes,
						Datum *args, const char *nulls, const char *what)
{
	int64		id;
	int			level = spi_connect();

	spi_execute(spi_plan(slot, sql, nargs, argtypes), args, nulls, false, 1,
				SPI_OK_INSERT_RETURNING, "%s", what);
	id = spi_int64(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, SPI_SOLE_COLUMN);
	spi_finish(level);
	return id;
}

/* A column the schema declares NOT NULL: a NULL is an internal error. */
Datum
spi_datum(HeapTuple row, TupleDesc desc, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(row, desc, col, &isnull);

	if (isnull)
		elog(ERROR, "unexpected NULL in column %d (%s)", col, SPI_fname(desc, col));
	return d;
}

/* A nullable text column as a C string, or NULL. */
char *
spi_text_column(HeapTuple row, TupleDesc desc, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(row, desc, col, &isnull);

	return isnull ? NULL : TextDatumGetCString(d);
}
