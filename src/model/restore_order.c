/*
 * restore_order.c — a restore in any order of the tables.
 *
 * pg_dump writes the rows of the extension's tables (pg_extension_config_dump)
 * in an order that suits their foreign keys, but pg_restore -j loads them in
 * parallel, biggest first, each COPY a transaction of its own, with the
 * tables' constraints and triggers in force: rewards before the arms and
 * selectors they reference would fail (23503, or the reward trigger's 42704)
 * and be lost.  So a COPY into a table whose rows reference another dumped
 * table parks its rows (restore_park, BEFORE INSERT FOR EACH ROW) in
 * model_select_internal.restore_pending, as text, and at the end of every
 * COPY into a dumped table (restore_settle, AFTER INSERT FOR EACH STATEMENT)
 * the parked rows of each table whose references are all there are inserted,
 * table by table in the order of their references and each table's rows in
 * the order they came (the reward log's canonical order), through the usual
 * triggers.  The settling transactions take one lock until they commit, so
 * the last of them sees every table's rows: once every COPY has committed
 * nothing is left parked (a complete dump).
 *
 * Only a COPY FROM into the table by a role with its owner's rights
 * (pg_restore's, not an application's) parks, and only rows that give every
 * NOT NULL column (a dumped row, not a log row by names that the log's
 * trigger completes); other inserts, COPY TO, and the settling's own inserts
 * (nested in a trigger) go straight in.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
#include "storage/lock.h"
#include "tcop/cmdtag.h"
#include "tcop/pquery.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/portal.h"
#include "utils/rel.h"

#include "model/log_table.h"
#include "model/selector_lock.h"
#include "pg/spi_util.h"

PG_FUNCTION_INFO_V1(model_select_restore_park);
PG_FUNCTION_INFO_V1(model_select_restore_settle);

/*
 * Is this trigger fired by the rows of a COPY FROM into this table (not by
 * an insert nested in another trigger), by a role with the rights of the
 * table's owner?
 */
static bool
restore_loading(Relation rel)
{
	PlannedStmt *stmt;
	CopyStmt   *copy;

	if (ActivePortal == NULL || ActivePortal->commandTag != CMDTAG_COPY ||
		list_length(ActivePortal->stmts) != 1)
		return false;
	stmt = linitial_node(PlannedStmt, ActivePortal->stmts);
	if (stmt->utilityStmt == NULL || !IsA(stmt->utilityStmt, CopyStmt))
		return false;
	copy = (CopyStmt *) stmt->utilityStmt;
	return copy->is_from && copy->relation != NULL &&
		RangeVarGetRelid(copy->relation, NoLock, true) == RelationGetRelid(rel) &&
		DatumGetInt32(OidFunctionCall0(F_PG_TRIGGER_DEPTH)) == 1 &&
		has_privs_of_role(GetUserId(), rel->rd_rel->relowner);
}

/*
 * Does the row give every NOT NULL column, as a dumped row does?  A row that
 * leaves some to the table's triggers (a log row by names) is no restore.
 */
static bool
row_complete(HeapTuple tuple, TupleDesc desc)
{
	for (int i = 0; i < desc->natts; i++)
		if (TupleDescAttr(desc, i)->attnotnull && heap_attisnull(tuple, i + 1, desc))
			return false;
	return true;
}

/* BEFORE INSERT FOR EACH ROW: a restored row is parked, any other stored. */
Datum
model_select_restore_park(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr plan = NULL;
	TriggerData *td = log_row_trigger(fcinfo);
	Relation	rel = td->tg_relation;
	Oid			types[2] = {REGCLASSOID, TEXTOID};
	Datum		args[2];
	int			spi_level;

	if (!restore_loading(rel) || !row_complete(td->tg_trigtuple, RelationGetDescr(rel)))
		return PointerGetDatum(td->tg_trigtuple);
	args[0] = ObjectIdGetDatum(RelationGetRelid(rel));
	args[1] = CStringGetTextDatum(OidOutputFunctionCall(F_RECORD_OUT,
														heap_copy_tuple_as_datum(td->tg_trigtuple,
																				 RelationGetDescr(rel))));
	spi_level = spi_connect();
	spi_execute(spi_plan(&plan,
						 "INSERT INTO model_select_internal.restore_pending (relid, row_text) VALUES ($1, $2)",
						 2, types), args, NULL, false, 0, SPI_OK_INSERT,
				"park a restored row of %s", RelationGetRelationName(rel));
	spi_finish(spi_level);
	return PointerGetDatum(NULL);
}

/*
 * AFTER INSERT FOR EACH STATEMENT: after a restoring COPY, under the restore
 * lock until commit, insert the parked rows whose references are there.
 */
Datum
model_select_restore_settle(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr plan = NULL;
	TriggerData *td = (TriggerData *) fcinfo->context;
	LOCKTAG		tag;
	int			spi_level;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BY_INSERT(td->tg_event) ||
		!TRIGGER_FIRED_FOR_STATEMENT(td->tg_event) || !TRIGGER_FIRED_AFTER(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("%s must fire AFTER INSERT FOR EACH STATEMENT", get_func_name(fcinfo->flinfo->fn_oid))));
	if (!restore_loading(td->tg_relation))
		return PointerGetDatum(NULL);
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 0, MS_LOCK_RESTORE, MS_LOCK_CLASS);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	spi_level = spi_connect();
	spi_execute(spi_plan(&plan, "SELECT model_select_internal._restore_insert_parked()", 0, NULL),
				NULL, NULL, false, 0, SPI_OK_SELECT, "settle the restored rows");
	spi_finish(spi_level);
	return PointerGetDatum(NULL);
}
