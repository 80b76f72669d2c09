/*
 * model_share.c — the arm cache's side of the shared cache: an entry's base
 * published to it, taken from it, or copied back before it grows
 * (model_cache.c decides when; shared_cache.c holds the bases).
 */
#include "postgres.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "miscadmin.h"
#include "utils/memutils.h"

#include "model/registry.h"
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
	return entry->fold.st != NULL && entry->cfg.clock == CLOCK_ARM &&
		(entry->shared_slot >= 0 || VARSIZE(entry->fold.st) >= (Size) shared_min_size) &&
		shared_cache_active();
}

/* Publish a base folded here, then score from the shared copy instead. */
void
entry_share(ModelCacheEntry *entry)
{
	SharedBaseKey key;
	SharedBase	sb;

	if (entry->shared_slot >= 0 || !entry_shareable(entry))
		return;
	entry_base_key(entry, &key);
	if (shared_base_publish(&key, entry->fold.st, entry->fold.pos, &entry->fold.totals, true, &sb))
		entry_adopt(entry, &sb);
}

/*
 * The learner's side: a copy of its own base, grown since, becomes the
 * arm's newest shared base (the older ones go stale); the learner keeps its
 * own copy to grow further, so a version costs one copy.
 */
void
entry_publish(ModelCacheEntry *entry)
{
	SharedBaseKey key;
	SharedBase	sb;

	if (entry->shared_slot >= 0 || !entry_shareable(entry))
		return;
	entry_base_key(entry, &key);
	if (shared_base_publish(&key, entry->fold.st, entry->fold.pos, &entry->fold.totals, true, &sb))
		shared_base_release(sb.slot);
}

/*
 * The learner's version with rows that are not final yet: its overlay, for
 * readers that see exactly those rows (a fixed-size state only: a growing
 * one is copied whole at every version).
 */
void
entry_publish_overlay(ModelCacheEntry *entry)
{
	SharedBaseKey key;
	SharedBase	sb;

	if (entry->overlay_slot >= 0 || entry->ofold.st == NULL || !entry_shareable(entry) ||
		policy_ops(entry->cfg.policy)->keeps_rows)
		return;
	entry_base_key(entry, &key);
	if (shared_base_publish(&key, entry->ofold.st, entry->ofold.pos, &entry->ofold.totals, false, &sb))
		shared_base_release(sb.slot);
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
