/*
 * snapshot_key.h — remembering what an MVCC snapshot sees, to reuse work
 * done under it (a loaded selector, a privilege answer) for as long as the
 * caller's snapshot sees exactly the same rows.
 */
#ifndef MODEL_SELECT_SNAPSHOT_KEY_H
#define MODEL_SELECT_SNAPSHOT_KEY_H

#include "access/transam.h"
#include "utils/snapshot.h"

typedef struct SnapshotKey
{
	bool		valid;
	bool		recovery;
	TransactionId xmin;
	TransactionId xmax;
	uint32		xcnt;
	TransactionId *xip;
	int32		subxcnt;
	TransactionId *subxip;
	bool		suboverflowed;
	bool		own_writes;		/* our transaction had an xid: then also */
	LocalTransactionId lxid;	/* the same transaction, */
	SubTransactionId subxid;	/* subtransaction */
	CommandId	curcid;			/* and command */
} SnapshotKey;

extern Snapshot snapshot_key_current(void);
extern void snapshot_key_remember(SnapshotKey *key, Snapshot snap, MemoryContext cxt);
extern bool snapshot_key_matches(const SnapshotKey *key, Snapshot snap);

#endif
