/*
 * log_table.c — shared by the triggers of the reward log and the cascade
 * observation log (see log_table.h).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "model/catalog.h"
#include "model/log_table.h"
#include "pg/owner.h"
#include "pg/spi_util.h"

/* The trigger data of a BEFORE INSERT FOR EACH ROW trigger, or an error. */
TriggerData *
log_row_trigger(FunctionCallInfo fcinfo)
{
	TriggerData *td = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BY_INSERT(td->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(td->tg_event) || !TRIGGER_FIRED_BEFORE(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("%s must fire BEFORE INSERT FOR EACH ROW", get_func_name(fcinfo->flinfo->fn_oid))));
	return td;
}

typedef struct LogRowCall
{
	TriggerData *td;
	LogRowResolver resolve;
	HeapTuple	result;
} LogRowCall;

static void
log_row_resolve_as_owner(void *arg)
{
	LogRowCall *call = arg;

	call->result = call->resolve(call->td);
}

/*
 * A BEFORE INSERT FOR EACH ROW trigger of a log: resolve (as the extension
 * owner: clients need no right on the tables it reads) completes the row.
 */
Datum
log_row_resolve(FunctionCallInfo fcinfo, LogRowResolver resolve)
{
	LogRowCall	call = {log_row_trigger(fcinfo), resolve, NULL};

	run_as_extension_owner(log_row_resolve_as_owner, &call);
	return PointerGetDatum(call.result);
}

/* Columns a resolver may fill in besides LogTarget's. */
#define LOG_EXTRA_COLUMNS 3

/*
 * The row with its target columns (and nextra more, non-null) replaced,
 * copied so that it outlives SPI_finish.
 */
HeapTuple
log_row_complete(HeapTuple tuple, TupleDesc desc, const int attnums[LOG_TARGET_COLUMNS],
				 const LogTarget *target, int nextra, const int *extra_attnums,
				 const Datum *extra_values)
{
	int			cols[LOG_TARGET_COLUMNS + LOG_EXTRA_COLUMNS];
	Datum		values[LOG_TARGET_COLUMNS + LOG_EXTRA_COLUMNS];
	bool		nulls[LOG_TARGET_COLUMNS + LOG_EXTRA_COLUMNS] = {false};
	int			n = LOG_TARGET_COLUMNS;

	memcpy(cols, attnums, sizeof(int) * LOG_TARGET_COLUMNS);
	values[0] = CStringGetTextDatum(target->selector);
	values[1] = CStringGetTextDatum(target->arm);
	values[2] = target->context;
	nulls[2] = target->context == (Datum) 0;
	values[3] = Int32GetDatum(target->selector_id);
	values[4] = Int32GetDatum(target->arm_id);
	if (nextra > LOG_EXTRA_COLUMNS)
		elog(ERROR, "log_row_complete: %d extra columns", nextra);
	for (int i = 0; i < nextra; i++)
	{
		cols[n] = extra_attnums[i];
		values[n++] = extra_values[i];
	}
	return SPI_copytuple(heap_modify_tuple_by_cols(tuple, desc, n, cols, values, nulls));
}

/*
 * Was this row logged while its arm, retired at retired_at, was active?  So
 * it says when it brings its arm_id, as pg_dump writes a log, and a
 * created_at before the retirement: a restore must take it, or the COPY of
 * the whole table fails.  An application leaves arm_id to the trigger.
 */
bool
log_row_predates_retirement(HeapTuple tuple, TupleDesc desc, int arm_id_attnum, TimestampTz retired_at)
{
	bool		arm_id_null,
				created_null;
	Datum		created_at = SPI_getbinval(tuple, desc, SPI_fnumber(desc, "created_at"), &created_null);

	(void) SPI_getbinval(tuple, desc, arm_id_attnum, &arm_id_null);
	return !arm_id_null && !created_null && DatumGetTimestampTz(created_at) < retired_at;
}

/*
 * The attribute numbers of the named columns.  A missing column means the
 * tables were created by an older version of the extension than the library
 * now installed (a package upgrade without ALTER EXTENSION UPDATE).
 */
void
log_columns(TupleDesc desc, const char *const *names, int ncolumns, int *attnums)
{
	for (int i = 0; i < ncolumns; i++)
	{
		attnums[i] = SPI_fnumber(desc, names[i]);
		if (attnums[i] <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the model_select log table has no column \"%s\"", names[i]),
					 errdetail("The extension's tables are older than its library."),
					 errhint("Run ALTER EXTENSION model_select UPDATE.")));
	}
}

/*
 * The kept plan of query over the NEW TABLE of rel's statement trigger
 * (parsing and planning it per statement cost as much as a checkpoint's
 * share).  Its columns are bound by position in the transition table's
 * descriptor, so it is planned again when the table is another (dropped and
 * created again) or has gained or lost columns.
 */
typedef struct StatementPlan
{
	const char *query;			/* a string constant of the caller: the key */
	Oid			relid;
	int			natts;
	SPIPlanPtr	plan;
} StatementPlan;

static SPIPlanPtr
statement_plan(const char *query, Relation rel)
{
	static StatementPlan plans[2];
	StatementPlan *p = NULL;

	for (int i = 0; i < lengthof(plans) && p == NULL; i++)
		if (plans[i].query == query || plans[i].query == NULL)
			p = &plans[i];
	if (p == NULL)
		elog(ERROR, "more statement trigger queries than plans kept for them");
	if (p->plan != NULL && (p->relid != RelationGetRelid(rel) ||
							p->natts != RelationGetDescr(rel)->natts))
	{
		SPI_freeplan(p->plan);
		p->plan = NULL;
	}
	p->query = query;
	p->relid = RelationGetRelid(rel);
	p->natts = RelationGetDescr(rel)->natts;
	return spi_plan(&p->plan, query, 0, NULL);
}

/* The trigger data of an AFTER INSERT FOR EACH STATEMENT trigger with a NEW TABLE. */
static TriggerData *
statement_trigger(FunctionCallInfo fcinfo)
{
	TriggerData *td = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BY_INSERT(td->tg_event) ||
		!TRIGGER_FIRED_FOR_STATEMENT(td->tg_event) || !TRIGGER_FIRED_AFTER(td->tg_event) ||
		td->tg_newtable == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("%s must fire AFTER INSERT FOR EACH STATEMENT with a NEW TABLE",
						get_func_name(fcinfo->flinfo->fn_oid))));
	return td;
}

static int
statement_arm_cmp(const void *a, const void *b)
{
	int32		x = ((const StatementArm *) a)->arm_id,
				y = ((const StatementArm *) b)->arm_id;

	return x < y ? -1 : x > y;
}

/*
 * The arms of the rows in the NEW TABLE of an AFTER INSERT FOR EACH
 * STATEMENT trigger, with their selectors and row counts, in arm_id order;
 * *count gets their number.  Read from the transition table's tuplestore
 * itself, through a read pointer of its own (as a scan of it would): a
 * query over it cost a whole executor start per statement.
 */
StatementArm *
arms_of_statement(FunctionCallInfo fcinfo, int *count)
{
	static const char *const names[] = {"arm_id", "selector_id"};
	TriggerData *td = statement_trigger(fcinfo);
	TupleDesc	desc = RelationGetDescr(td->tg_relation);
	Tuplestorestate *rows = td->tg_newtable;
	TupleTableSlot *slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	HTAB	   *arms = id_hash_create("model_select statement arms", sizeof(StatementArm),
									  CurrentMemoryContext);
	int			attnums[lengthof(names)];
	HASH_SEQ_STATUS status;
	StatementArm *arm,
			   *out;
	int			n = 0;

	log_columns(desc, names, lengthof(names), attnums);
	for (int i = 0; i < lengthof(names); i++)
		if (TupleDescAttr(desc, attnums[i] - 1)->atttypid != INT4OID)
			ereport(ERROR,
					(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
					 errmsg("%s fired for a table whose column \"%s\" is not an integer",
							get_func_name(fcinfo->flinfo->fn_oid), names[i])));
	tuplestore_select_read_pointer(rows, tuplestore_alloc_read_pointer(rows, EXEC_FLAG_REWIND));
	tuplestore_rescan(rows);
	while (tuplestore_gettupleslot(rows, true, false, slot))
	{
		bool		isnull;
		int32		arm_id = DatumGetInt32(slot_getattr(slot, attnums[0], &isnull));
		bool		found;

		arm = hash_search(arms, &arm_id, HASH_ENTER, &found);
		if (!found)
		{
			arm->selector_id = DatumGetInt32(slot_getattr(slot, attnums[1], &isnull));
			arm->nrows = 0;
		}
		arm->nrows++;
	}
	ExecDropSingleTupleTableSlot(slot);
	out = palloc(sizeof(StatementArm) * Max(hash_get_num_entries(arms), 1));
	hash_seq_init(&status, arms);
	while ((arm = hash_seq_search(&status)) != NULL)
		out[n++] = *arm;
	hash_destroy(arms);
	qsort(out, n, sizeof(StatementArm), statement_arm_cmp);
	*count = n;
	return out;
}

/*
 * Run query (ordered by arm_id, its first column) over the NEW TABLE of an
 * AFTER INSERT FOR EACH STATEMENT trigger and call fn once per arm with that
 * arm's rows [first, last).  The caller is connected to SPI.
 */
void
for_each_arm_of_statement(FunctionCallInfo fcinfo, const char *query,
						  void (*fn) (SPITupleTable *tt, uint64 first, uint64 last, void *arg),
						  void *arg)
{
	TriggerData *td = statement_trigger(fcinfo);
	SPITupleTable *tt;
	uint64		nrows,
				first = 0;

	if (SPI_register_trigger_data(td) != SPI_OK_TD_REGISTER)
		elog(ERROR, "could not register the transition table of trigger %s", td->tg_trigger->tgname);
	spi_execute(statement_plan(query, td->tg_relation), NULL, NULL, false, 0, SPI_OK_SELECT,
				"read the rows of trigger %s", td->tg_trigger->tgname);
	tt = SPI_tuptable;
	nrows = SPI_processed;
	while (first < nrows)
	{
		int32		arm_id = spi_int32(tt->vals[first], tt->tupdesc, STATEMENT_ARM_ID_COLUMN);
		uint64		last = first + 1;

		while (last < nrows && spi_int32(tt->vals[last], tt->tupdesc, STATEMENT_ARM_ID_COLUMN) == arm_id)
			last++;
		fn(tt, first, last, arg);
		first = last;
	}
}
