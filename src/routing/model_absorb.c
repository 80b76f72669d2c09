/*
 * model_absorb.c — bringing an arm cache entry (model_cache.c) to the rows
 * its load read after its base: the final ones join the base, the others
 * are folded onto a copy of it, the overlay (under the learner's rule only
 * the transaction's own rows: LoadMode, arm_cache.h); and the decoded model
 * handed out.
 */
#include "postgres.h"

#include "executor/spi.h"
#include "utils/memutils.h"

#include "learning/fold.h"
#include "model/clock_ops.h"
#include "model/registry.h"
#include "routing/arm_cache.h"
#include "routing/cache_counters.h"
#include "routing/shared_cache.h"

/*
 * A decoded model of st (NULL: no reward) in a new child *cxt of parent,
 * at the load's now, *at getting its key (clock_ops.h).
 */
static ArmModel *
entry_decode(ModelCacheEntry *entry, const StateHeader *st, MemoryContext parent,
			 MemoryContext *cxt, ClockKey *at, uint64 *serial)
{
	const ClockOps *clock = clock_ops(entry->cfg.clock);
	MemoryContext old;
	ArmModel   *model;
	/* this backend's count of decoded models: a model's name while it lives and after */
	static uint64 decoded = 0;

	*serial = 0;
	if (st == NULL || st->n == 0)
		return NULL;
	*serial = ++decoded;
	/* small blocks: a model's arrays get blocks of their size, no doubling's slack */
	*cxt = AllocSetContextCreate(parent, "model_select decoded model", ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(*cxt);
	clock->key(&entry->cfg, st, entry->now, at);
	/* a shared version carries what decode computes from it alone */
	if (entry->shared_slot >= 0 && st == entry->fold.st && entry->shared_prepared != NULL)
		model = policy_ops(entry->cfg.policy)->decode_prepared(&entry->cfg, st, entry->shared_prepared);
	else
		model = clock->decode_at(&entry->cfg, st, at);
	MemoryContextSwitchTo(old);
	cache_count(CACHE_DECODES, 1);
	return model;
}

/*
 * Is the model of st decoded at key `at` its model at the load's now too?
 * Always on the arm's clock; on another while the key holds, so a model
 * changes only when a row stops counting (or, under a discount, when the
 * weights' time moves): time moving on within a window rebuilds nothing.
 */
static bool
entry_model_holds(const ModelCacheEntry *entry, const StateHeader *st, const ClockKey *at)
{
	const ClockOps *clock = clock_ops(entry->cfg.clock);
	ClockKey	key;

	if (!clock->ages || st == NULL || st->n == 0)
		return true;
	clock->key(&entry->cfg, st, entry->now, &key);
	return clock_key_equal(&key, at);
}

void
entry_drop_overlay(ModelCacheEntry *entry)
{
	if (entry->overlay_cxt)
		MemoryContextDelete(entry->overlay_cxt);
	entry->overlay_cxt = NULL;
	entry->overlay_model = NULL;
	entry->overlay = NULL;
	entry->noverlay = entry->maxoverlay = 0;
}

static void
entry_drop_base_model(ModelCacheEntry *entry)
{
	if (entry->base_cxt)
		MemoryContextDelete(entry->base_cxt);
	entry->base_cxt = NULL;
	entry->base_model = NULL;
}

/* How many rows of the kept overlay start rows [first, last) of tt (-1: it does not). */
static int
overlay_prefix(const ModelCacheEntry *entry, SPITupleTable *tt, uint64 first, uint64 last)
{
	/* a row's tick on the selector's clock depends on the other arms' rows visible: refold */
	if (entry->overlay_cxt == NULL || clock_ops(entry->cfg.clock)->ticks_across_arms ||
		(uint64) entry->noverlay > last - first)
		return -1;
	for (int i = 0; i < entry->noverlay; i++)
		if (log_position_cmp(entry->overlay[i], fold_row_position(tt, first + i)) != 0)
			return -1;
	return entry->noverlay;
}

/* A new, empty overlay on a copy of the entry's base. */
static void
entry_new_overlay(ModelCacheEntry *entry)
{
	MemoryContext old;

	entry_drop_overlay(entry);
	entry->overlay_cxt = AllocSetContextCreate(entry->cxt, "model_select overlay",
											   ALLOCSET_DEFAULT_SIZES);
	entry->maxoverlay = entry->noverlay = 0;
	old = MemoryContextSwitchTo(entry->overlay_cxt);
	fold_begin(&entry->ofold, &entry->cfg, entry->fold.st, entry->fold.pos, &entry->fold.totals);
	MemoryContextSwitchTo(old);
}

/* The overlay's row positions: rows [first + from, first + n) of tt after the first `from`. */
static void
entry_overlay_rows(ModelCacheEntry *entry, SPITupleTable *tt, uint64 first, int from, int n)
{
	if (n > entry->maxoverlay)
	{
		entry->maxoverlay = Max(n, 8);
		entry->overlay = entry->overlay
			? repalloc(entry->overlay, sizeof(LogPosition) * entry->maxoverlay)
			: MemoryContextAlloc(entry->overlay_cxt, sizeof(LogPosition) * entry->maxoverlay);
	}
	for (int i = from; i < n; i++)
		entry->overlay[i] = fold_row_position(tt, first + i);
	entry->noverlay = n;
}

/*
 * The overlay brought to rows [first, last) of tt: the kept one extended
 * when its rows start them, else folded anew onto a copy of the base; its model decoded
 * (if decode) when new, or, clocked, when its key no longer holds.
 * Returns how many rows were folded.
 */
static int
entry_overlay(ModelCacheEntry *entry, SPITupleTable *tt, uint64 first, uint64 last, bool decode)
{
	int			kept = overlay_prefix(entry, tt, first, last);
	int			n = (int) (last - first);
	MemoryContext old;

	if (kept == n && (entry->overlay_model != NULL || !decode) &&
		entry_model_holds(entry, entry->ofold.st, &entry->overlay_at))
	{
		cache_count(CACHE_HITS, 1);
		return 0;
	}
	if (kept < 0)
	{
		entry_new_overlay(entry);
		kept = 0;
	}
	entry_overlay_rows(entry, tt, first, kept, n);
	old = MemoryContextSwitchTo(entry->overlay_cxt);
	fold_some(&entry->ofold, tt, first + kept, last, false);
	MemoryContextSwitchTo(old);
	/* (kept == n: the same rows, a clocked model at another key, or not decoded yet) */
	if (entry->overlay_model != NULL)
		MemoryContextDelete(entry->overlay_model_cxt);
	entry->overlay_model = NULL;
	if (decode)
		entry->overlay_model = entry_decode(entry, entry->ofold.st, entry->overlay_cxt,
											&entry->overlay_model_cxt, &entry->overlay_at,
											&entry->overlay_serial);
	return n - kept;
}

/*
 * The final rows [first, last) of tt join the base.  When the overlay's
 * rows start them (they became final), the overlay becomes the base, model
 * and all: a reward is folded once per backend, whatever order it became
 * visible and final in.  With a shared cache, a base published by another
 * backend saves the fold; one grown here is published once its arm is
 * quiet (entry_share_when_quiet).
 */
static void
entry_extend_base(ModelCacheEntry *entry, SPITupleTable *tt, uint64 first, uint64 last,
				  FullTransactionId horizon)
{
	int			kept = overlay_prefix(entry, tt, first, last);
	MemoryContext old;

	entry_drop_base_model(entry);
	if (kept > 0)
	{
		if (entry->shared_slot >= 0)
			shared_base_release(entry->shared_slot);
		entry->shared_slot = -1;
		MemoryContextSetParent(entry->ofold.cxt, entry->cxt);
		MemoryContextDelete(entry->fold.cxt);
		entry->fold = entry->ofold;
		if (entry->overlay_model != NULL && (uint64) kept == last - first)
		{
			MemoryContextSetParent(entry->overlay_model_cxt, entry->cxt);
			entry->base_cxt = entry->overlay_model_cxt;
			entry->base_model = entry->overlay_model;
			entry->base_at = entry->overlay_at;
			entry->base_serial = entry->overlay_serial;
		}
		entry->overlay_model = NULL;
		first += kept;
	}
	else
		first = entry_catch_up(entry, tt, first, last, horizon);
	entry_drop_overlay(entry);
	if (first < last)
	{
		entry_own_base(entry);
		old = MemoryContextSwitchTo(entry->cxt);
		fold_some(&entry->fold, tt, first, last, false);
		MemoryContextSwitchTo(old);
		cache_count(CACHE_ROWS_FOLDED, (int64) (last - first));
	}
	entry_base_grew(entry);
}

/*
 * The entry hands out its overlay, the fold of rows [first, last) onto its
 * base.  Returns how many rows were folded for it.
 */
static int
entry_use_overlay(ModelCacheEntry *entry, SPITupleTable *tt, uint64 first, uint64 last)
{
	int			folded = entry_overlay(entry, tt, first, last, true);

	entry->model = entry->overlay_model;
	entry->model_serial = entry->overlay_model ? entry->overlay_serial : 0;
	entry->totals = entry->ofold.totals;
	return folded;
}

/* The entry hands out its base's model, decoded unless it still holds. */
static void
entry_use_base(ModelCacheEntry *entry)
{
	entry_drop_overlay(entry);
	if (entry->base_cxt != NULL && !entry_model_holds(entry, entry->fold.st, &entry->base_at))
		entry_drop_base_model(entry);
	if (entry->base_cxt != NULL || entry->fold.st == NULL || entry->fold.st->n == 0)
		cache_count(CACHE_HITS, 1);
	else
		entry->base_model = entry_decode(entry, entry->fold.st, entry->cxt, &entry->base_cxt,
										 &entry->base_at,
										 &entry->base_serial);
	entry->model = entry->base_model;
	entry->model_serial = entry->base_model ? entry->base_serial : 0;
	entry->totals = entry->fold.totals;
}

/*
 * Bring an entry to rows [first, last) of tt, the rows after its base that
 * the load read (selector_load.c; under the learner's rule only the final
 * ones and this transaction's): those below horizon join the base, the rest
 * are the overlay.  A base folded here under the learner's rule is
 * published for the others (a growing one is copied whole: the learner's).
 * The learner's own load (LOAD_PUBLISHES) publishes its base and decodes
 * nothing; it keeps its own copy of a base to grow while rewards come, and
 * holds the published version instead once the arm is quiet (as a backend
 * does), so that an idle learner holds no copy of the models.  A clocked
 * arm's model is that at the selector's clock now (clock_ops.h): it ages
 * with now even when no row of the arm is new.
 */
void
model_cache_absorb(ModelCacheEntry *entry, SPITupleTable *tt, uint64 first, uint64 last,
				   FullTransactionId horizon, double now, LoadMode mode)
{
	uint64		split = first;
	bool		growing = policy_ops(entry->cfg.policy)->keeps_rows;

	entry->now = now;
	while (split < last && FullTransactionIdPrecedes(fold_row_position(tt, split).tx, horizon))
		split++;
	if (split > first)
	{
		entry_extend_base(entry, tt, first, split, horizon);
		if (mode == LOAD_FINAL && !growing)
			entry_publish(entry);
	}
	if (LOAD_PUBLISHES(mode))
	{
		/* the learner scores nothing: nothing is decoded */
		entry_drop_base_model(entry);
		/* (a base published already is found, not copied again) */
		if (mode == LOAD_PUBLISH || (split > first && !growing))
			entry_publish(entry);
		/* a quiet arm's own copy gives way to its version, as in a backend */
		if (split == first)
			entry_share_when_quiet(entry);
		entry_drop_overlay(entry);
		entry->model = NULL;
		entry->model_serial = 0;
		entry->totals = entry->fold.totals;
		return;
	}
	if (split < last)
	{
		entry_use_overlay(entry, tt, split, last);
		return;
	}
	if (split == first)
		entry_share_when_quiet(entry);
	entry_use_base(entry);
}
