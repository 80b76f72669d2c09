/*
 * model_share.c — the arm cache's side of the shared cache: an entry's base
 * published to it, taken from it (the newest version, under the learner's
 * rule), or copied back before it grows; and the per-arm load lock (model_cache.c and model_absorb.c decide when;
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
#include "utils/xid8.h"

#include "learning/learner_state.h"
#include "model/clock_ops.h"
#include "model/registry.h"
#include "model/selector_lock.h"
#include "model/state.h"
#include "pg/index_read.h"
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

/*
 * Publish a copy of the base `fold` under key, pinned in *sb, with what its
 * decode computes from it alone (PolicyOps.prepare): computed once, into
 * the copy, not by every backend that scores the version.  uncommitted: key
 * names a checkpoint row of this transaction (shared_base_publish()).
 */
bool
publish_fold(const SelectorConfig *cfg, const SharedBaseKey *key, const StateFold *fold,
			 bool uncommitted, SharedBase *sb)
{
	const PolicyOps *ops = policy_ops(cfg->policy);
	SharedPrepared prepared = {.n = 0, .fill = ops->prepare, .cfg = cfg};

	if (ops->prepare != NULL && !clock_ops(cfg->clock)->ages)
		prepared.n = ops->prepared_size(cfg, fold->st);
	return shared_base_publish(key, fold->st, &prepared, fold->pos, &fold->totals, uncommitted, sb);
}

static bool
publish_base(ModelCacheEntry *entry, SharedBase *sb)
{
	SharedBaseKey key;

	entry_base_key(entry, &key);
	return publish_fold(&entry->cfg, &key, &entry->fold, false, sb);
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
	entry->shared_prepared = sb->prepared;
#ifdef __GLIBC__
	if (had_own)
		malloc_trim(0);
#endif
}

/*
 * A base worth sharing: the server has a shared cache, the arm is on its own
 * clock (a clocked base also depends on other arms' rows), and it is large
 * enough or a learner serves the database.  Under the learner's rule a base
 * that is not shared is folded by every backend from the rows after its
 * checkpoint, each decision reading every other transaction's rewards
 * (54 of 360 µs per decision at 4 clients with 8 random features), so the
 * size only matters where backends fold for themselves anyway.
 */
bool
entry_shareable(const ModelCacheEntry *entry)
{
	return entry->fold.st != NULL && !clock_ops(entry->cfg.clock)->ages &&
		(entry->shared_slot >= 0 || VARSIZE(entry->fold.st) >= (Size) shared_min_size ||
		 learner_configured()) &&
		shared_cache_active();
}

/* Publish a base folded here, then score from the shared copy instead. */
void
entry_share(ModelCacheEntry *entry)
{
	SharedBase	sb;

	if (entry->shared_slot >= 0 || !entry_shareable(entry))
		return;
	if (publish_base(entry, &sb))
		entry_adopt(entry, &sb);
}

/*
 * The learner's side (and a backend's that folds the final rows itself
 * under the learner's rule): a copy of
 * its own base, grown since, becomes the arm's newest shared base (the
 * older ones go stale); the entry keeps its own copy to grow further, so a
 * version costs one copy.
 */
void
entry_publish(ModelCacheEntry *entry)
{
	SharedBase	sb;

	if (entry->shared_slot >= 0 || !entry_shareable(entry))
		return;
	if (publish_base(entry, &sb))
		shared_base_release(sb.slot);
}

/*
 * Under the learner's rule (LoadMode, arm_cache.h): the base becomes the
 * newest final version published after it, whatever the statement's
 * snapshot sees (a version is a prefix of the log: every row it holds is
 * final, and no row can join it).  The overlay, folded on the old base,
 * goes.  Nothing to look up while the arm's publication counter has not
 * moved.  Returns whether the base moved on.
 */
bool
entry_take_newest(ModelCacheEntry *entry)
{
	SharedBaseKey key;
	SharedBase	sb;
	uint64		generation;

	if (!entry_shareable(entry))
		return false;
	generation = shared_arm_generation(entry->arm_id);
	if (generation == entry->seen_generation)
		return false;
	entry->seen_generation = generation;
	entry_base_key(entry, &key);
	if (!shared_base_find(&key, entry->fold.pos, false, FullTransactionIdFromU64(PG_UINT64_MAX), &sb))
		return false;
	entry_drop_overlay(entry);
	entry_adopt(entry, &sb);
	return true;
}

/*
 * Do the arm's visible log rows after ck's position up to `upto` number
 * `rows`?  Counted through the index, stopping past either.
 */
static bool
log_rows_number(int32 arm_id, const CheckpointRow *ck, LogPosition upto, int64 rows)
{
	static const char *const position[] = {"tx", "seq"};
	Relation	rewards = own_table_open("rewards");
	IndexRead	r;
	HeapTuple	row;
	int64		seen = 0;

	arm_log_rows_begin(&r, rewards, arm_id, ck->pos);
	while (seen <= rows && (row = index_read_next(&r)) != NULL)
	{
		Datum		values[2];
		bool		nulls[2];
		LogPosition p;

		own_columns(rewards, row, 2, position, values, nulls);
		p.tx = DatumGetFullTransactionId(values[0]);
		p.seq = DatumGetInt64(values[1]);
		if (log_position_cmp(p, upto) > 0)
			break;
		seen++;
	}
	index_read_end(&r);
	own_table_close(rewards);
	return seen == rows;
}

/*
 * The newest version published for the arm of checkpoint ck from an earlier
 * checkpoint of it, pinned in *sb: what a decision scoring versions takes
 * when ck is newer than every version (the learner writes a checkpoint
 * before it publishes from it), instead of folding the arm from ck under
 * its load lock, which held up every other router (1.2 s at 16 clients).
 * It must be of this arm's log: a state of the selector's shape whose rows
 * are ck's and exactly the log's rows after it up to its position (a
 * version left by the arm's id before the extension was dropped and created
 * again, or folded before its rows were deleted, is not).  False, nothing
 * pinned, when there is none.
 */
bool
shared_base_newest_from(const SelectorConfig *cfg, int32 arm_id, const CheckpointRow *ck,
						SharedBase *sb)
{
	if (!shared_base_find_newest(arm_id, cfg->settings_version, ck->pos, sb))
		return false;
	if (state_fits(cfg, sb->st) && sb->totals.n >= ck->totals.n &&
		log_rows_number(arm_id, ck, sb->pos, sb->totals.n - ck->totals.n))
		return true;
	shared_base_release(sb->slot);
	sb->slot = -1;
	return false;
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

/* The arm's load lock if nobody holds it, without waiting; false: held. */
bool
shared_load_try_lock(int32 arm_id)
{
	LOCKTAG		tag;

	load_locktag(&tag, arm_id);
	return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

void
shared_load_unlock(int32 arm_id)
{
	LOCKTAG		tag;

	load_locktag(&tag, arm_id);
	LockRelease(&tag, ExclusiveLock, false);
}
