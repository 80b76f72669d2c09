/*
 * checkpoint_share.c — a checkpoint's version published before its
 * transaction commits, where decisions score versions (checkpoint.c calls
 * it through checkpoint_publish_hook).
 *
 * Why before: a router that sees an arm's new checkpoint row looks up the
 * versions named by it (its version and xmin).  Published after the
 * commit, as the learner's next step did, a router in between found none
 * and, when the newest version of the old checkpoint held fewer rewards
 * than the new one, folded the arm from the stored checkpoint itself
 * (2.6 million instructions for a pak_ucb arm of 2,000 rows).  The name is
 * known before the commit: the row's next version, and the xid of the
 * (sub)transaction writing it.
 *
 * The version is a fold of final rows, so it is a right version of the arm
 * whether or not the checkpoint commits; but a version outranks those of
 * older checkpoints (shared_cache.c), so it is published uncommitted: until
 * its transaction ends it makes no older version stale, since readers still
 * see the older checkpoint.  At commit it makes them stale, as if published
 * then; if its (sub)transaction rolls back, or the transaction is prepared
 * for two-phase commit, which may yet roll it back, it goes stale itself and
 * the older versions serve on (had it made them stale, every router would
 * fold the arm for itself until the learner published again).  The list of
 * them lives in the transaction's memory.
 */
#include "postgres.h"

#include "access/xact.h"
#include "nodes/pg_list.h"
#include "utils/memutils.h"

#include "learning/learner_state.h"
#include "model/clock_ops.h"
#include "routing/arm_cache.h"
#include "routing/model_cache.h"

/* A version published by this transaction, settled when it ends. */
typedef struct UncommittedVersion
{
	SharedBaseKey key;
	LogPosition pos;
	SubTransactionId subid;		/* the subtransaction that wrote the checkpoint */
} UncommittedVersion;

/* This transaction's uncommitted versions (in TopTransactionContext). */
static List *uncommitted = NIL;

static void
checkpoint_share_xact(XactEvent event, void *arg)
{
	bool		committed = event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT;
	ListCell   *lc;

	if (!committed && event != XACT_EVENT_ABORT && event != XACT_EVENT_PARALLEL_ABORT &&
		event != XACT_EVENT_PREPARE)
		return;
	foreach(lc, uncommitted)
	{
		UncommittedVersion *v = lfirst(lc);

		shared_base_settle(&v->key, v->pos, committed);
	}
	uncommitted = NIL;			/* its memory goes with the transaction */
}

/*
 * A subtransaction rolled back: the versions it or its children published.
 * Subtransactions nest, so those are the ones numbered from mySubid on.
 */
static void
checkpoint_share_subxact(SubXactEvent event, SubTransactionId mySubid,
						 SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	if (event != SUBXACT_EVENT_ABORT_SUB)
		return;
	foreach(lc, uncommitted)
	{
		UncommittedVersion *v = lfirst(lc);

		if (v->subid < mySubid)
			continue;
		shared_base_settle(&v->key, v->pos, false);
		uncommitted = foreach_delete_current(uncommitted, lc);
		pfree(v);
	}
}

/*
 * Publish the fold f that the checkpoint row (version, xmin) of arm_id is
 * about to hold, under that row's name, if decisions score versions here
 * (a learner serves the database, the server has a shared cache, the arm
 * is on its own clock).
 */
void
checkpoint_publish(const SelectorConfig *cfg, int32 arm_id, int64 version, int64 xmin,
				   const StateFold *f)
{
	static bool registered = false;
	UncommittedVersion *v;
	SharedBase	sb;
	MemoryContext old;

	if (f->st == NULL || !shared_cache_active() || !learner_configured() ||
		clock_ops(cfg->clock)->ages)
		return;
	if (!registered)
	{
		RegisterXactCallback(checkpoint_share_xact, NULL);
		RegisterSubXactCallback(checkpoint_share_subxact, NULL);
		registered = true;
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	v = palloc(sizeof(UncommittedVersion));
	base_key(&v->key, arm_id, cfg->settings_version, version, xmin);
	v->pos = f->pos;
	v->subid = GetCurrentSubTransactionId();
	/* listed first: an error in between still settles it */
	uncommitted = lappend(uncommitted, v);
	MemoryContextSwitchTo(old);
	if (publish_fold(cfg, &v->key, f, true, &sb))
		shared_base_release(sb.slot);
}
