/*
 * selector_lock.c — a selector's settings lock, which orders its log's
 * writers, settings changes and drops, and the late-writer check of the
 * transactions that took it after their id (selector_lock.h).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/multixact.h"
#include "access/stratnum.h"
#include "access/xact.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/fmgroids.h"
#include "utils/snapmgr.h"
#include "utils/xid8.h"

#include "model/selector_lock.h"
#include "pg/index_read.h"
#include "pg/owner.h"

/*
 * Late writers.  Checkpoints do not wait for transactions that do not hold a
 * selector's settings lock (learning/fold.c, final_horizon_for()), so a
 * transaction that took its id before it first locked the selector may
 * already have been passed: rewards of younger transactions folded, below
 * which its own would sort.  So the first reward a transaction logs for a
 * selector is checked (selector_check_log_writer()) unless it locked the
 * selector before it had an id -- then every checkpoint since saw it as a
 * holder, or chose a horizon below its id.  lock_memo keeps, per
 * transaction, the selectors it locked and whether that check is still due;
 * a subtransaction's abort (which releases the locks it took) forgets it all,
 * so that the check is made again.
 */
#define LOCK_MEMO_MAX 32

static struct
{
	LocalTransactionId lxid;
	int			n;
	int32		selector_id[LOCK_MEMO_MAX];
	bool		check_due[LOCK_MEMO_MAX];
}			lock_memo;

static void
lock_memo_forget(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		lock_memo.lxid = InvalidLocalTransactionId;
}

/* The memo's entry of a selector in this transaction, or -1. */
static int
lock_memo_find(int32 selector_id)
{
	if (lock_memo.lxid != MyProc->lxid)
		return -1;
	for (int k = 0; k < lock_memo.n; k++)
		if (lock_memo.selector_id[k] == selector_id)
			return k;
	return -1;
}

/* The settings lock of a selector was taken: is the check due for it? */
static void
lock_memo_note(int32 selector_id)
{
	static bool registered = false;

	if (!registered)
	{
		RegisterSubXactCallback(lock_memo_forget, NULL);
		registered = true;
	}
	if (lock_memo.lxid != MyProc->lxid)
	{
		lock_memo.lxid = MyProc->lxid;
		lock_memo.n = 0;
	}
	if (lock_memo_find(selector_id) >= 0 || lock_memo.n == LOCK_MEMO_MAX)
		return;					/* known, or past the memo: checked when it writes */
	lock_memo.selector_id[lock_memo.n] = selector_id;
	lock_memo.check_due[lock_memo.n++] = TransactionIdIsValid(GetTopTransactionIdIfAny());
}

/* The selector a late-writer check is for. */
typedef struct LateWriter
{
	int32		selector_id;
	const char *name;
} LateWriter;

/*
 * A transaction other than ours that still holds the arm_state row version
 * locked or is updating it (a checkpoint in flight: checkpoint_lock() holds
 * the row FOR UPDATE from before it chose its horizon), or
 * InvalidTransactionId.
 */
static TransactionId
row_holder_running(HeapTupleHeader row)
{
	TransactionId xmax = HeapTupleHeaderGetRawXmax(row);
	MultiXactMember *members;
	int			n;

	if (row->t_infomask & HEAP_XMAX_INVALID)
		return InvalidTransactionId;
	if (!(row->t_infomask & HEAP_XMAX_IS_MULTI))
		return TransactionIdIsValid(xmax) && !TransactionIdIsCurrentTransactionId(xmax) &&
			TransactionIdIsInProgress(xmax) ? xmax : InvalidTransactionId;
	n = GetMultiXactIdMembers(xmax, &members, false, HEAP_XMAX_IS_LOCKED_ONLY(row->t_infomask));
	for (int i = 0; i < n; i++)
		if (!TransactionIdIsCurrentTransactionId(members[i].xid) && TransactionIdIsInProgress(members[i].xid))
			return members[i].xid;
	return InvalidTransactionId;
}

/*
 * Does any arm of the selector have a checkpoint past this transaction, as
 * the newest committed rows say?  Sets *holder to a transaction that still
 * holds one of the rows (then the answer waits for it), else invalid.
 */
static bool
checkpoint_passed(int32 selector_id, TransactionId *holder)
{
	static const char *const key[] = {"selector_id"};
	static const char *const column[] = {"ckpt_tx"};
	FullTransactionId mine = GetTopFullTransactionId();
	Relation	table = own_table_open("arm_state");
	IndexRead	r;
	HeapTuple	row;
	bool		passed = false;

	*holder = InvalidTransactionId;
	PushActiveSnapshot(GetLatestSnapshot());
	index_read_begin(&r, table, 1, key);
	index_read_key(&r, "selector_id", BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(selector_id));
	while (!TransactionIdIsValid(*holder) && (row = index_read_next(&r)) != NULL)
	{
		Datum		ckpt_tx;
		bool		null;

		*holder = row_holder_running(row->t_data);
		own_columns(table, row, 1, column, &ckpt_tx, &null);
		passed |= !null && FullTransactionIdPrecedes(mine, DatumGetFullTransactionId(ckpt_tx));
	}
	index_read_end(&r);
	PopActiveSnapshot();
	own_table_close(table);
	return passed;
}

/*
 * The check: refused (40001, to be retried) when any arm's checkpoint lies
 * past this transaction.  It reads the newest committed checkpoints, not
 * its snapshot's (a REPEATABLE READ snapshot may predate the checkpoint that
 * passed it), after waiting for each checkpoint in flight: a checkpoint
 * that chose its horizon before we took the settings lock may pass us, one
 * that chose it after sees us as a holder and stops below our id.  Nothing
 * stays locked: checkpoints of the selector go on below us.
 */
static void
late_writer_check(void *arg)
{
	const LateWriter *w = arg;
	TransactionId holder;
	bool		passed;

	while (passed = checkpoint_passed(w->selector_id, &holder), TransactionIdIsValid(holder))
		XactLockTableWait(holder, NULL, NULL, XLTW_None);
	if (passed)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("this transaction is older than rewards of selector \"%s\" that are already checkpointed",
						w->name),
				 errdetail("It took its transaction id before it first routed or rewarded with the selector; rewards of later transactions have been folded since, and its own would sort before them."),
				 errhint("Retry the transaction, and route or reward before other writes, or in a transaction of its own.")));
}

/*
 * Before a transaction's first reward row for a selector (reward trigger),
 * under the selector's settings lock: the late-writer check, if due.
 */
void
selector_check_log_writer(int32 selector_id, const char *name)
{
	int			k = lock_memo_find(selector_id);
	LateWriter	w = {.selector_id = selector_id, .name = name};

	if (k >= 0 && !lock_memo.check_due[k])
		return;
	run_as_extension_owner(late_writer_check, &w);
	if (k >= 0)
		lock_memo.check_due[k] = false;
}

/*
 * The lock that orders reward inserts before a settings change: inserts
 * hold it in ShareLock until they commit, alter_selector() takes it in
 * ExclusiveLock (_settings_lock()) before it changes the settings, so it
 * waits only for the inserts in flight and every later insert reads the
 * new settings.  A heavyweight lock on an advisory tag of this extension's
 * own class (MS_LOCK_SETTINGS, selector_lock.h): unlike a row lock
 * on the selector it writes nothing and creates no MultiXact when many
 * inserts share it.
 */
void
selector_settings_tag(LOCKTAG *tag, int32 selector_id)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) selector_id, MS_LOCK_SETTINGS, MS_LOCK_CLASS);
}

/* The lock in mode, waiting for it or (wait false) only if it is free now. */
static bool
settings_lock(int32 selector_id, LOCKMODE mode, bool wait)
{
	LOCKTAG		tag;

	selector_settings_tag(&tag, selector_id);
	if (LockAcquire(&tag, mode, false, !wait) == LOCKACQUIRE_NOT_AVAIL)
		return false;
	if (mode == AccessShareLock || mode == ShareLock)
		lock_memo_note(selector_id);
	return true;
}

void
selector_settings_lock(int32 selector_id, LOCKMODE mode)
{
	(void) settings_lock(selector_id, mode, true);
}

/* The lock, only if it is free now (the learner and maintain(), which never wait). */
bool
selector_settings_lock_if_free(int32 selector_id, LOCKMODE mode)
{
	return settings_lock(selector_id, mode, false);
}

/*
 * Before route() logs a decision: the settings lock in AccessShareLock.  It
 * conflicts only with drop_selector()'s AccessExclusiveLock (not with
 * alter_selector()'s ExclusiveLock: routing never waits for a settings
 * change), so the drop waits for the writers in flight before it deletes
 * the selector's log, and later writers wait for the drop.  Reward inserts
 * hold the lock in ShareLock (config_load_for_reward()), which conflicts
 * with both; they read the settings after it, and find no selector.  A
 * decision names its arm without a foreign key, so the router looks for
 * the selector once it holds the lock, as the latest snapshot sees it: a
 * drop that committed since the caller's snapshot, whether it waited for
 * us or not, is seen (42704), and no decision outlives its selector.
 */
void
selector_write_lock(int32 selector_id, const char *name)
{
	Datum		value;
	bool		null;
	static const char *const column[] = {"selector_id"};

	selector_settings_lock(selector_id, AccessShareLock);
	if (!own_row_by_key_as_of("selectors", GetLatestSnapshot(), "selector_id", F_INT4EQ,
							  Int32GetDatum(selector_id), 1, column, &value, &null))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("selector \"%s\" does not exist", name),
				 errdetail("It was dropped while this decision was being made.")));
}

PG_FUNCTION_INFO_V1(model_select_drop_lock);

/* SQL: _drop_lock(selector_id) — drop_selector()'s side of the lock above. */
Datum
model_select_drop_lock(PG_FUNCTION_ARGS)
{
	selector_settings_lock(PG_GETARG_INT32(0), AccessExclusiveLock);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(model_select_arms_lock);

/*
 * SQL: _arms_lock(selector_id) — add_arm()'s: one arm addition of a
 * selector at a time, until its transaction ends (the next ordinal).  A tag
 * of its own, which nothing that routes or rewards takes: the settings lock
 * would make checkpoints of the selector wait for the addition's
 * transaction (final_horizon_for() counts every holder).
 */
Datum
model_select_arms_lock(PG_FUNCTION_ARGS)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) PG_GETARG_INT32(0), MS_LOCK_ARMS, MS_LOCK_CLASS);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(model_select_settings_lock);

/* SQL: _settings_lock(selector_id) — alter_selector()'s side of the lock above. */
Datum
model_select_settings_lock(PG_FUNCTION_ARGS)
{
	selector_settings_lock(PG_GETARG_INT32(0), ExclusiveLock);
	PG_RETURN_VOID();
}
