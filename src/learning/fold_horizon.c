/*
 * fold_horizon.c — which rows of the reward log are final, and which a
 * snapshot has seen: the horizons that folds, checkpoints and the pacer's
 * window read up to or from (declared in fold.h).
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/twophase.h"
#include "access/xact.h"
#include "storage/lock.h"
#include "storage/procarray.h"
#include "storage/sinvaladt.h"
#include "utils/snapmgr.h"

#include "learning/fold.h"
#include "model/clock_ops.h"
#include "model/selector_lock.h"

/* The full id of a 32-bit xid no older than the next xid's epoch allows. */
FullTransactionId
full_xid(TransactionId xid)
{
	FullTransactionId next = ReadNextFullTransactionId();
	uint32		epoch = EpochFromFullTransactionId(next);

	if (xid > XidFromFullTransactionId(next))
		epoch--;
	return FullTransactionIdFromEpochAndXid(epoch, xid);
}

/*
 * The oldest transaction the active snapshot cannot see: the smallest id it
 * lists as running (its xmin counts our own xid, so it is not used), or
 * xmax.  Every transaction below it had ended when the snapshot was taken.
 * A standby's snapshot lists every running transaction among its
 * subtransactions (xip is empty), and a standby has no xid of its own: its
 * xmin is that transaction.
 */
static TransactionId
snapshot_horizon(Snapshot snap)
{
	TransactionId horizon = snap->xmax;

	if (snap->takenDuringRecovery)
		return snap->xmin;
	for (uint32 i = 0; i < snap->xcnt; i++)
		if (TransactionIdPrecedes(snap->xip[i], horizon))
			horizon = snap->xip[i];
	return horizon;
}

/*
 * H such that every log row with tx < H is final: its transaction has ended
 * (or is ours), and no transaction that can still commit has a smaller id.
 * For checkpoints, which read the rows below H under a new snapshot
 * (fold_log's fresh_snapshot) that sees every transaction that has ended:
 * the active snapshot's horizon.  Our own rows are final too when no older
 * transaction can still commit: then H is our id + 1 (our checkpoint rolls
 * back with them if we abort).  Ids between the horizon and ours are looked
 * up.  Not under a transaction snapshot, which is the one "new" snapshot
 * there: a transaction that ended after it was taken is running to it, and
 * its rows, below our id, would be skipped.
 */
FullTransactionId
final_horizon(void)
{
	TransactionId horizon = snapshot_horizon(GetActiveSnapshot());
	TransactionId mine = GetTopTransactionIdIfAny();
	bool		older_running = IsolationUsesXactSnapshot();
	uint32		checked = 0;

	if (!TransactionIdIsValid(mine) || TransactionIdPrecedes(mine, horizon))
		return full_xid(horizon);
	/* xids in [horizon, mine): is any still running? (few, in practice) */
	for (TransactionId x = horizon; TransactionIdPrecedes(x, mine) && !older_running;)
	{
		older_running = ++checked > 10000 || TransactionIdIsInProgress(x);
		TransactionIdAdvance(x);
	}
	if (older_running)
		return full_xid(horizon);
	return FullTransactionIdFromU64(U64FromFullTransactionId(full_xid(mine)) + 1);
}

/*
 * final_horizon() for the checkpoints of one selector: rows of a
 * transaction that does not hold the selector's settings lock need not wait
 * for it.  Every writer of a selector's log holds that lock from its first
 * row to its end (route() in AccessShareLock, reward inserts in ShareLock),
 * so below the oldest holder's id every row of the selector is final -- but
 * for a transaction that took its id before it first locked the selector:
 * selector_settings_lock() refuses it (40001) once a checkpoint has passed
 * it.  So one tenant's idle transaction no longer holds every other
 * tenant's checkpoints back.  Under a transaction snapshot, on the
 * selector's clock (a row of one arm moves every arm's ticks, and Q is not
 * the arm's position that selector_settings_lock() checks), or with a
 * prepared transaction holding the lock (its id is not kept with its lock),
 * the horizon of final_horizon().
 */
FullTransactionId
final_horizon_for(const SelectorConfig *cfg)
{
	Snapshot	snap = GetActiveSnapshot();
	TransactionId horizon = snap->xmax;
	TransactionId mine = GetTopTransactionIdIfAny();
	VirtualTransactionId *holder;
	LOCKTAG		tag;

	if (IsolationUsesXactSnapshot() || clock_ops(cfg->clock)->ticks_across_arms)
		return final_horizon();
	/* rows of ours are final if no holder is older (GetLockConflicts leaves us out) */
	if (TransactionIdIsValid(mine) && !TransactionIdPrecedes(mine, horizon))
	{
		horizon = mine;
		TransactionIdAdvance(horizon);
	}
	selector_settings_tag(&tag, cfg->selector_id);
	for (holder = GetLockConflicts(&tag, AccessExclusiveLock, NULL);
		 VirtualTransactionIdIsValid(*holder); holder++)
	{
		TransactionId xid;
		TransactionId xmin;
		bool		more_prepared = false;

		/* a transaction prepared before the last start-up has no backend id */
		if (holder->backendId == InvalidBackendId)
			return final_horizon();
		/* the holder's id, or a newer transaction's of the same backend (no older) */
		BackendIdGetTransactionIds(holder->backendId, &xid, &xmin);
		if (TransactionIdIsValid(xid) && TransactionIdPrecedes(xid, horizon))
			horizon = xid;
		/*
		 * Or the holder was prepared since, and keeps the vxid of the backend
		 * that prepared it, which has moved on.  Looked up second: a prepared
		 * transaction is found before its backend gives up its id.
		 */
		if (TransactionIdIsValid(TwoPhaseGetXidByVirtualXID(*holder, &more_prepared)) || more_prepared)
			return final_horizon();
	}
	return full_xid(horizon);
}

/*
 * The oldest transaction other than ours that the active snapshot cannot
 * see: each row of an older one but ours was visible to it, or never will be.
 */
FullTransactionId
others_horizon(void)
{
	return full_xid(snapshot_horizon(GetActiveSnapshot()));
}

/*
 * The horizon below which a backend may keep folded rows across
 * transactions: rows read under the active snapshot, so its own horizon
 * (a transaction that ended since is still running to it: its rows are not
 * seen, and must not be passed), and never our own rows, which roll back
 * with us and are followed by rows of other transactions in canonical order.
 */
FullTransactionId
shared_horizon(void)
{
	FullTransactionId h = others_horizon();
	FullTransactionId mine = GetTopFullTransactionIdIfAny();

	if (FullTransactionIdIsValid(mine) && FullTransactionIdPrecedes(mine, h))
		return mine;
	return h;
}
