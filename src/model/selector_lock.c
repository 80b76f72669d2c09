/*
 * selector_lock.c — a selector's settings lock, which orders its log's
 * writers, settings changes and drops, and the late-writer check of the
 * transactions that took it after their id (selector_lock.h).
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/fmgroids.h"
#include "utils/snapmgr.h"
#include "utils/xid8.h"

#include "model/selector_lock.h"
#include "pg/index_read.h"
#include "pg/owner.h"
#include "pg/spi_util.h"

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

/*
 * The check: refused (40001, to be retried) when any arm's checkpoint lies
 * past this transaction.  FOR SHARE waits for a checkpoint in flight, which
 * holds its row FOR UPDATE from before it chose its horizon.
 */
static void
late_writer_check(void *arg)
{
	static SPIPlanPtr plan = NULL;
	int32		selector_id = *(int32 *) arg;
	Oid			types[2] = {INT4OID, XID8OID};
	Datum		args[2] = {Int32GetDatum(selector_id),
	FullTransactionIdGetDatum(GetTopFullTransactionId())};
	int			spi_level = spi_connect();

	spi_execute(spi_plan(&plan,
						 "SELECT s.name FROM model_select.selectors s WHERE s.selector_id = $1"
						 " AND EXISTS (SELECT 1 FROM (SELECT st.ckpt_tx FROM model_select.arm_state st"
						 "   WHERE st.selector_id = $1 ORDER BY st.arm_id FOR SHARE) c WHERE c.ckpt_tx > $2)",
						 2, types), args, NULL, false, 0, SPI_OK_SELECT,
				"check the checkpoints of selector %d against this transaction", selector_id);
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("this transaction is older than rewards of selector \"%s\" that are already checkpointed",
						spi_text(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, SPI_SOLE_COLUMN)),
				 errdetail("It took its transaction id before it first routed or rewarded with the selector; rewards of later transactions have been folded since, and its own would sort before them."),
				 errhint("Retry the transaction, and route or reward before other writes, or in a transaction of its own.")));
	spi_finish(spi_level);
}

/*
 * Before a transaction's first reward row for a selector (reward trigger),
 * under the selector's settings lock: the late-writer check, if due.
 */
void
selector_check_log_writer(int32 selector_id)
{
	int			k = lock_memo_find(selector_id);

	if (k >= 0 && !lock_memo.check_due[k])
		return;
	run_as_extension_owner(late_writer_check, &selector_id);
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

PG_FUNCTION_INFO_V1(model_select_settings_lock);

/* SQL: _settings_lock(selector_id) — alter_selector()'s side of the lock above. */
Datum
model_select_settings_lock(PG_FUNCTION_ARGS)
{
	selector_settings_lock(PG_GETARG_INT32(0), ExclusiveLock);
	PG_RETURN_VOID();
}
