/*
 * model_share.c — the arm cache's side of the shared cache: an entry's base
 * published to it, taken from it, or copied back before it grows; the
 * learner's versions published and matched against a statement's rows; and
 * the per-arm load lock (model_cache.c and model_absorb.c decide when;
 * shared_cache.c holds the versions).
 */
#include "postgres.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/memutils.h"

#include "model/clock_ops.h"
#include "model/registry.h"
#include "model/selector_lock.h"
#include "routing/arm_cache.h"
#include "routing/shared_cache.h"

/* The shared cache's name of the bases folded from a checkpoint. */
void
base_key(SharedBaseKey *key, int32 arm_id, int32 settings_version, int64 version, int64 xmin)
{
	memset(key, 0, sizeof(*key));
	key->database = MyDatabaseId;
	key->arm_id = arm_id;
	key->settings_version = settings_version;
	key->ckpt_version = version;
	key->ckpt_xmin = xmin;
}

static void
entry_base_key(const ModelCacheEntry *entry, SharedBaseKey *key)
{
	base_key(key, entry->arm_id, entry->settings_version, entry->version, entry->xmin);
}

/* Publish a copy of fold (the entry's base or overlay; final: all its rows were), pinned in *sb. */
static bool
publish_fold(ModelCacheEntry *entry, const StateFold *fold, bool final, SharedBase *sb)
{
	SharedBaseKey key;

	entry_base_key(entry, &key);
	return shared_base_publish(&key, fold->st, fold->pos, &fold->totals, final, sb);
}

/*
 * The base becomes the shared base sb, pinned by the caller (the entry now
 * holds the pin); the previous base and its model go.  A copy of our own is
 * given back to the OS at once: glibc keeps freed blocks of this size in the
 * heap (its mmap threshold grows with the blocks freed), and a backend would
 * stay as large as without the shared cache.
 */
static void
entry_adopt(ModelCacheEntry *entry, const SharedBase *sb)
{
	StateFold	fold;
	bool		had_own = entry->shared_slot < 0 && entry->fold.st != NULL;
	MemoryContext old = MemoryContextSwitchTo(entry->cxt);

	fold_begin(&fold, &entry->cfg, NULL, sb->pos, &sb->totals);
	MemoryContextSwitchTo(old);
	fold.st = unconstify(StateHeader *, sb->st);
	if (entry->base_cxt)
		MemoryContextDelete(entry->base_cxt);
	entry->base_cxt = NULL;
	entry->base_model = NULL;
	if (entry->shared_slot >= 0)
		shared_base_release(entry->shared_slot);
	MemoryContextDelete(entry->fold.cxt);
	entry->fold = fold;
	entry->shared_slot = sb->slot;
#ifdef __GLIBC__
	if (had_own)
		malloc_trim(0);
#endif
}

/*
 * A base worth sharing: large enough, the server has a shared cache, and the
 * arm is on its own clock (a clocked base also depends on other arms' rows).
 */
bool
entry_shareable(const ModelCacheEntry *entry)
{
	return entry->fold.st != NULL && !clock_ops(entry->cfg.clock)->ages &&
		(entry->shared_slot >= 0 || VARSIZE(entry->fold.st) >= (Size) shared_min_size) &&
		shared_cache_active();
}

/* Publish a base folded here, then score from the shared copy instead. */
void
entry_share(ModelCacheEntry *entry)
{
	SharedBase	sb;

	if (entry->shared_slot >= 0 || !entry_shareable(entry))
		return;
	if (publish_fold(entry, &entry->fold, true, &sb))
		entry_adopt(entry, &sb);
}

/*
 * The learner's side (and a follower's while the learner lags): a copy of
 * its own base, grown since, becomes the arm's newest shared base (the
 * older ones go stale); the entry keeps its own copy to grow further, so a
 * version costs one copy.  A base that is a shared version already (one it
 * published with rows not final then, its overlay, and took as its base once
 * they were) is published by marking it final: else a selector that goes
 * quiet right after such a version would never get a final one.
 */
void
entry_publish(ModelCacheEntry *entry)
{
	SharedBase	sb;

	if (!entry_shareable(entry))
		return;
	if (entry->shared_slot >= 0)
	{
		shared_base_make_final(entry->shared_slot);
		return;
	}
	if (publish_fold(entry, &entry->fold, true, &sb))
		shared_base_release(sb.slot);
}

/*
 * A version with rows that are not final yet: the entry's overlay, for
 * readers that see exactly those rows (a fixed-size state only: a growing
 * one is copied whole at every version).  The learner's, or a follower's
 * (entry_share_overlay()).
 */
void
entry_publish_overlay(ModelCacheEntry *entry)
{
	SharedBase	sb;

	if (entry->overlay_slot >= 0 || entry->ofold.st == NULL || !entry_shareable(entry) ||
		policy_ops(entry->cfg.policy)->keeps_rows)
		return;
	if (publish_fold(entry, &entry->ofold, false, &sb))
		shared_base_release(sb.slot);
}

/*
 * A follower's overlay, folded here, published as a version too: when
 * rewards commit faster than the learner publishes (it shares the CPUs with
 * the backends), the backends that see the same rows take each other's
 * folds, so a reward is still folded about once per server rather than once
 * per backend.  Not when it holds a row of this transaction: that row is
 * not committed, and may never be.
 */
void
entry_share_overlay(ModelCacheEntry *entry)
{
	for (int i = entry->noverlay - 1; i >= 0; i--)
		if (TransactionIdIsCurrentTransactionId(XidFromFullTransactionId(entry->overlay[i].tx)))
			return;
	entry_publish_overlay(entry);
}

#define VERSIONS_LISTED 32

/*
 * The deepest published version that is the fold of the entry's base and
 * rows [first, i) of tt, for the greatest such i (first: none), pinned in
 * *sb: its position, row count and lineage are those of row i - 1.
 */
uint64
entry_find_version(ModelCacheEntry *entry, SPITupleTable *tt, uint64 first, uint64 last,
				   SharedBase *sb)
{
	SharedBaseKey key;
	SharedVersion versions[VERSIONS_LISTED];
	int			nversions;
	uint64		lineage = entry->fold.totals.lineage;
	uint64		found = first;
	int			best = -1;

	sb->slot = -1;
	if (first == last || !entry_shareable(entry))
		return first;
	entry_base_key(entry, &key);
	nversions = shared_versions(&key, entry->fold.pos, versions, VERSIONS_LISTED);
	for (uint64 i = first; i < last && nversions > 0; i++)
	{
		LogPosition pos = fold_row_position(tt, i);
		int64		n = entry->fold.totals.n + (int64) (i - first + 1);

		lineage = lineage_step(lineage, pos);
		for (int v = 0; v < nversions; v++)
			if (log_position_cmp(versions[v].pos, pos) == 0 && versions[v].n == n &&
				versions[v].lineage == lineage)
			{
				best = v;
				found = i + 1;
			}
	}
	if (best >= 0 && !shared_version_pin(&key, &versions[best], sb))
		return first;
	return found;
}

/*
 * How long a grown base must stay unchanged before it is published (ms).
 * Under a stream of rewards every backend extends its own base from its own
 * overlay (nobody would take a published one), and a shared base must be
 * copied back before it grows: publishing each growth cost two copies of the
 * state per arm and load, page faults on fresh shared pages included (the
 * shared cache was slower than none under write traffic).  Once the arm is
 * quiet, its base is shared (memory).
 */
#define SHARE_AFTER_QUIET_MS 1000

/* The base grew: it waits for its arm to be quiet before it is published. */
void
entry_base_grew(ModelCacheEntry *entry)
{
	if (entry_shareable(entry))
		entry->grown_at = GetCurrentTimestamp();
}

/* A load found nothing after the base: share it once the arm has been quiet. */
void
entry_share_when_quiet(ModelCacheEntry *entry)
{
	if (entry->shared_slot >= 0 || !entry_shareable(entry) ||
		!TimestampDifferenceExceeds(entry->grown_at, GetCurrentTimestamp(), SHARE_AFTER_QUIET_MS))
		return;
	entry_share(entry);
	if (entry->shared_slot < 0)
		entry->grown_at = GetCurrentTimestamp();	/* no room: try again later */
}

/* Before the base grows: a copy of our own instead of the shared one. */
void
entry_own_base(ModelCacheEntry *entry)
{
	StateFold	fold;
	MemoryContext old;

	if (entry->shared_slot < 0)
		return;
	Assert(entry->base_model == NULL);
	old = MemoryContextSwitchTo(entry->cxt);
	fold_begin(&fold, &entry->cfg, entry->fold.st, entry->fold.pos, &entry->fold.totals);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(entry->fold.cxt);
	shared_base_release(entry->shared_slot);
	entry->shared_slot = -1;
	entry->fold = fold;
}

/*
 * The first of rows [first, last) of tt that a newer shared base does not
 * already hold: that base is taken when one is published.
 */
uint64
entry_catch_up(ModelCacheEntry *entry, SPITupleTable *tt, uint64 first, uint64 last,
			   FullTransactionId horizon)
{
	SharedBaseKey key;
	SharedBase	sb;

	if (!entry_shareable(entry))
		return first;
	entry_base_key(entry, &key);
	if (!shared_base_find(&key, entry->fold.pos, false, horizon, &sb))
		return first;
	for (uint64 i = first; i < last; i++)
		if (log_position_cmp(fold_row_position(tt, i), sb.pos) == 0)
		{
			entry_adopt(entry, &sb);
			return i + 1;
		}
	shared_base_release(sb.slot);	/* below horizon, so among the rows: cannot happen */
	return first;
}

/*
 * The lock that makes backends missing the same arm's base load it one at a
 * time, so that the first publishes it and the others take it instead of
 * each reading the checkpoint (16 backends starting at once would otherwise
 * read, fold and copy it 16 times).  A heavyweight advisory lock on
 * (database, arm_id) of the extension's own class (MS_LOCK_LOAD, selector_lock.h;
 * not the settings lock of the selector with that id, which reward inserts
 * hold until they commit): unlike an LWLock it may be held while reading
 * tables, the deadlock detector sees it, and it goes with the transaction on
 * error.
 */
static void
load_locktag(LOCKTAG *tag, int32 arm_id)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) arm_id, MS_LOCK_LOAD, MS_LOCK_CLASS);
}

void
shared_load_lock(int32 arm_id)
{
	LOCKTAG		tag;

	load_locktag(&tag, arm_id);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

void
shared_load_unlock(int32 arm_id)
{
	LOCKTAG		tag;

	load_locktag(&tag, arm_id);
	LockRelease(&tag, ExclusiveLock, false);
}
