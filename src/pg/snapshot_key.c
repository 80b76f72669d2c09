/*
 * snapshot_key.c — see snapshot_key.h.
 *
 * Two MVCC snapshots with the same xmin, xmax and lists of running
 * (sub)transactions see the same rows of other transactions: every
 * transaction below xmax that is not listed had ended when the snapshot was
 * taken, and its fate cannot change; any transaction that ends later was
 * listed or is at or above xmax, so a snapshot taken after it ended differs
 * (it is no longer listed, or latestCompletedXid and so xmax moved).  Our
 * own writes are not in those lists: once our transaction has an xid, a key
 * matches only within the same transaction, subtransaction and command id
 * (a subtransaction that rolled back is followed by another id).  Lists in
 * another order only make a key miss.
 */
#include "postgres.h"

#include "access/xact.h"
#include "storage/proc.h"
#include "utils/snapmgr.h"

#include "pg/snapshot_key.h"

/* The active snapshot, if work done under it may be reused (an MVCC one). */
Snapshot
snapshot_key_current(void)
{
	Snapshot	snap = ActiveSnapshotSet() ? GetActiveSnapshot() : NULL;

	return snap != NULL && snap->snapshot_type == SNAPSHOT_MVCC ? snap : NULL;
}

static bool
own_writes(void)
{
	return FullTransactionIdIsValid(GetTopFullTransactionIdIfAny());
}

/* Remember snap (NULL: a key that never matches), its lists copied into cxt. */
void
snapshot_key_remember(SnapshotKey *key, Snapshot snap, MemoryContext cxt)
{
	memset(key, 0, sizeof(*key));
	if (snap == NULL)
		return;
	key->valid = true;
	key->recovery = snap->takenDuringRecovery;
	key->xmin = snap->xmin;
	key->xmax = snap->xmax;
	key->xcnt = snap->xcnt;
	key->xip = MemoryContextAlloc(cxt, sizeof(TransactionId) * Max(snap->xcnt, 1));
	memcpy(key->xip, snap->xip, sizeof(TransactionId) * snap->xcnt);
	key->subxcnt = Max(snap->subxcnt, 0);
	key->subxip = MemoryContextAlloc(cxt, sizeof(TransactionId) * Max(key->subxcnt, 1));
	memcpy(key->subxip, snap->subxip, sizeof(TransactionId) * key->subxcnt);
	key->suboverflowed = snap->suboverflowed;
	key->own_writes = own_writes();
	key->lxid = MyProc->lxid;
	key->subxid = GetCurrentSubTransactionId();
	key->curcid = snap->curcid;
}

/* Does snap see the same rows as the snapshot remembered in key? */
bool
snapshot_key_matches(const SnapshotKey *key, Snapshot snap)
{
	if (!key->valid || snap == NULL || key->recovery != snap->takenDuringRecovery ||
		key->xmin != snap->xmin || key->xmax != snap->xmax || key->xcnt != snap->xcnt ||
		key->subxcnt != Max(snap->subxcnt, 0) || key->suboverflowed != snap->suboverflowed ||
		key->own_writes != own_writes())
		return false;
	if (key->own_writes && (key->lxid != MyProc->lxid || key->subxid != GetCurrentSubTransactionId() ||
							key->curcid != snap->curcid))
		return false;
	return memcmp(key->xip, snap->xip, sizeof(TransactionId) * key->xcnt) == 0 &&
		memcmp(key->subxip, snap->subxip, sizeof(TransactionId) * key->subxcnt) == 0;
}
