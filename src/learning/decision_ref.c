/*
 * decision_ref.c — a reward's reference to its decision, kept without a
 * foreign key.
 *
 * A foreign key from rewards.decision_id to decisions ran, for every reward
 * insert, a planned query through SPI (a third of the reward's own cost)
 * that repeated the decision lookup rewards_resolve makes anyway.  Its two
 * guarantees are kept here instead, as the key kept them:
 *
 * - the reward's trigger reads the decision and locks its row FOR KEY SHARE
 *   (decision_read_locked), so a concurrent DELETE of the decision waits for
 *   the reward's transaction, and retention's expiry (FOR UPDATE SKIP
 *   LOCKED) passes over it; a decision deleted meanwhile is refused as a
 *   missing one (42704), under REPEATABLE READ as a serialization failure;
 * - decisions_rewarded (AFTER DELETE, each row, at the end of the statement
 *   as the key's check was) refuses deleting a decision that a reward
 *   references (23503), looking with the latest snapshot, so that a reward
 *   committed since the deleter's snapshot is seen.  Retention deletes a
 *   rewarded decision in the statement that deletes its reward, and
 *   drop_selector's cascade deletes both: neither is refused.
 *
 * The fold reads a reward's context from its decision (fold.h): a reward
 * without its decision could not be learned.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "commands/trigger.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

#include "learning/decision_ref.h"
#include "pg/index_read.h"

PG_FUNCTION_INFO_V1(model_select_decisions_rewarded);

/*
 * Lock the row at tid FOR KEY SHARE, waiting for a writer; false if it was
 * deleted meanwhile, by another transaction or by this one.  Under READ COMMITTED an updated row's newest version
 * is locked (decisions are not updated, but a superuser may).
 */
static bool
lock_key_share(Relation table, ItemPointer tid, int64 decision_id)
{
	TupleTableSlot *slot = table_slot_create(table, NULL);
	TM_FailureData tmfd;
	TM_Result	result;

	result = table_tuple_lock(table, tid, GetActiveSnapshot(), slot, GetCurrentCommandId(false),
							  LockTupleKeyShare, LockWaitBlock,
							  IsolationUsesXactSnapshot() ? 0 : TUPLE_LOCK_FLAG_FIND_LAST_VERSION, &tmfd);
	ExecDropSingleTupleTableSlot(slot);
	switch (result)
	{
		case TM_Ok:
			return true;

			/*
			 * Deleted (or updated) by this transaction after the snapshot was
			 * taken, in the same statement: by a drop_selector() or a
			 * data-modifying CTE beside the INSERT.  Gone for this insert, as
			 * for SELECT ... FOR KEY SHARE.
			 */
		case TM_Invisible:
		case TM_SelfModified:
			return false;
		case TM_Deleted:
		case TM_Updated:
			if (IsolationUsesXactSnapshot())
				ereport(ERROR,
						(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
						 errmsg("could not serialize access due to concurrent %s of decision " INT64_FORMAT,
								result == TM_Deleted ? "delete" : "update", decision_id)));
			return false;
		default:
			elog(ERROR, "locking decision " INT64_FORMAT " failed (%d)", decision_id, (int) result);
	}
	return false;
}

/*
 * The decision's columns (names, as own_columns_copy) into values and nulls,
 * its row locked FOR KEY SHARE until the transaction ends; false if there is
 * no such decision (or it was deleted while this waited for its deleter).
 */
bool
decision_read_locked(Relation decisions, int64 decision_id, int ncols, const char *const *names,
					 Datum *values, bool *nulls)
{
	static const char *const key[] = {"decision_id"};
	IndexRead	r;
	HeapTuple	row;
	ItemPointerData tid;

	index_read_begin(&r, decisions, 1, key);
	index_read_key(&r, key[0], BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(decision_id));
	row = index_read_next(&r);
	if (row != NULL)
	{
		own_columns_copy(decisions, row, ncols, names, values, nulls);
		tid = row->t_self;
	}
	index_read_end(&r);
	return row != NULL && lock_key_share(decisions, &tid, decision_id);
}

/* Does a reward reference the decision, as the latest snapshot sees the log? */
static bool
decision_rewarded(int64 decision_id)
{
	Relation	rewards = own_table_open("rewards");
	Datum		value;
	bool		null;
	bool		found;
	static const char *const column[] = {"decision_id"};

	/* the statement's own deletes (retention's of the rewards) included */
	CommandCounterIncrement();
	PushActiveSnapshot(GetLatestSnapshot());
	found = own_row_by_key(rewards, "decision_id", F_INT8EQ, Int64GetDatum(decision_id), 1, column,
						   &value, &null);
	PopActiveSnapshot();
	own_table_close(rewards);
	return found;
}

/* decisions_rewarded: AFTER DELETE ON decisions FOR EACH ROW. */
Datum
model_select_decisions_rewarded(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	bool		isnull;
	int64		decision_id;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BY_DELETE(td->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(td->tg_event) || !TRIGGER_FIRED_AFTER(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("%s must fire AFTER DELETE FOR EACH ROW", get_func_name(fcinfo->flinfo->fn_oid))));
	decision_id = DatumGetInt64(heap_getattr(td->tg_trigtuple,
											 own_column(td->tg_relation, "decision_id"),
											 RelationGetDescr(td->tg_relation), &isnull));
	if (!isnull && decision_rewarded(decision_id))
		ereport(ERROR,
				(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
				 errmsg("decision " INT64_FORMAT " has a reward and cannot be deleted", decision_id),
				 errdetail("A reward by decision learns the decision's context."),
				 errhint("Retention deletes a rewarded decision with its reward once it is absorbed "
						 "(the selector's setting retain); drop_selector() deletes both.")));
	return PointerGetDatum(NULL);
}
