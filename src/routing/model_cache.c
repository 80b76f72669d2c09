/*
 * model_cache.c — the backend-local cache of arm folds: every arm's state as
 * the fold of its log (its stored checkpoint plus the rewards logged after
 * it), decoded for scoring.  selector_load.c reads a selector through it;
 * model_absorb.c brings an entry to a statement's rows.
 *
 * Per arm the cache keeps a base: the checkpoint it started from (arm_state
 * row version and xmin, settings version) with the rows after it that were
 * final when folded (shared_horizon(): no row can ever appear before them),
 * so the base only grows by appending, whatever order transactions commit
 * in.  A statement also sees rows that are not final yet (a transaction
 * that committed while an older one still runs, or our own): those are
 * folded onto a copy of the base, the overlay, kept while the same rows
 * are seen on the same base.
 *
 * Bounded in bytes (model_select.cache_size, which also covers the random
 * feature matrices of rff_features.c): after a selector is loaded, the least
 * recently used entries of other selectors are evicted until the cache fits
 * (the loaded selector's own entries stay: its models are in use).  A
 * statement that kept pointers to an evicted model notices
 * (selector_models_current) and reloads.
 *
 * With shared_preload_libraries, bases live once per server in the shared
 * cache (shared_cache.c): a new entry takes the newest base published for
 * its checkpoint before it reads the checkpoint, a base folded from it here
 * is published and this backend then scores from the shared copy, and a
 * base that grows is first copied back (a shared base is never written to).
 * A grown base is published only once its arm is quiet
 * (entry_share_when_quiet).  Where the learner process serves, it publishes
 * a version of each arm after rewards commit, and decisions score the
 * newest (LoadMode, arm_cache.h).  The decoded model of a shared base points
 * into shared memory (its policy's decode only adds small vectors).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/fmgroids.h"
#include "utils/xid8.h"

#include "model/catalog.h"
#include "pg/owner.h"
#include "model/privilege.h"
#include "model/clock_ops.h"
#include "learning/fold.h"
#include "policy/rff_features.h"
#include "model/registry.h"
#include "routing/arm_cache.h"
#include "routing/cache_counters.h"
#include "routing/model_cache.h"
#include "routing/selector_rows.h"
#include "routing/shared_cache.h"

/* GUC model_select.cache_size, in kB */
int			model_cache_size_kb = 256 * 1024;


/*
 * The cache: arm_id -> entry, the entries in model_cache_cxt (dynahash
 * allocates its own elements 32 at a time, so they stay small).
 */
typedef struct ModelCacheSlot
{
	int32		arm_id;			/* hash key */
	ModelCacheEntry *entry;
} ModelCacheSlot;

static HTAB *model_cache = NULL;
static MemoryContext model_cache_cxt = NULL;
static uint64 cache_loads = 0;
static Size cache_bytes = 0;	/* sum of the entries' bytes */


static void
model_cache_init(void)
{
	model_cache_cxt = AllocSetContextCreate(CacheMemoryContext, "model_select model cache",
											ALLOCSET_SMALL_SIZES);
	model_cache = id_hash_create("model_select model cache", sizeof(ModelCacheSlot), model_cache_cxt);
}

/* The entry of an arm, or NULL. */
static ModelCacheEntry *
cache_find(int32 arm_id)
{
	ModelCacheSlot *slot = model_cache ? hash_search(model_cache, &arm_id, HASH_FIND, NULL) : NULL;

	return slot ? slot->entry : NULL;
}

/* What this backend holds, for the server's sums (cache_counters.c). */
static void
sizes_publish(void)
{
	cache_size_set(CACHE_ENTRIES, model_cache ? (int64) hash_get_num_entries(model_cache) : 0);
	cache_size_set(CACHE_BYTES, (int64) cache_bytes);
	cache_size_set(CACHE_FEATURE_BYTES, (int64) rff_cache_bytes());
}

/* Let go of everything an entry holds: its memory and its shared base's pin. */
static void
entry_free(ModelCacheEntry *entry)
{
	if (entry->shared_slot >= 0)
		shared_base_release(entry->shared_slot);
	entry->shared_slot = -1;
	cache_bytes -= entry->bytes;
	entry->bytes = 0;
	MemoryContextDelete(entry->cxt);
}

void
model_cache_forget_all(void)
{
	HASH_SEQ_STATUS status;
	ModelCacheSlot *slot;

	if (model_cache == NULL)
		return;
	hash_seq_init(&status, model_cache);
	while ((slot = hash_seq_search(&status)) != NULL)
		entry_free(slot->entry);
	MemoryContextDelete(model_cache_cxt);	/* the hash table and the entries */
	model_cache = NULL;
	model_cache_cxt = NULL;
	cache_bytes = 0;
	sizes_publish();
}

void
model_cache_remove(ModelCacheEntry *entry)
{
	int32		arm_id = entry->arm_id;

	entry_free(entry);
	pfree(entry);
	hash_search(model_cache, &arm_id, HASH_REMOVE, NULL);
}

/* Measure an entry in use by the load numbered `load`. */
void
model_cache_touch(ModelCacheEntry *entry, uint64 load)
{
	Size		bytes = MemoryContextMemAllocated(entry->cxt, true);

	cache_bytes += bytes - entry->bytes;
	entry->bytes = bytes;
	entry->last_used = load;
}

/*
 * Evict least recently used entries, never those of the current load, until
 * the cache fits model_select.cache_size.
 */
void
model_cache_fit(uint64 load)
{
	Size		limit = (Size) model_cache_size_kb * 1024;

	while (cache_bytes + rff_cache_bytes() > limit)
	{
		HASH_SEQ_STATUS status;
		ModelCacheSlot *slot;
		ModelCacheEntry *lru = NULL;

		if (model_cache != NULL)
		{
			hash_seq_init(&status, model_cache);
			while ((slot = hash_seq_search(&status)) != NULL)
				if (slot->entry->last_used < load &&
					(lru == NULL || slot->entry->last_used < lru->last_used))
					lru = slot->entry;
		}
		if (lru == NULL)
		{
			/* the current selector alone is larger: drop the features kept */
			rff_cache_trim(limit > cache_bytes ? limit - cache_bytes : 0);
			break;
		}
		model_cache_remove(lru);
		cache_count(CACHE_EVICTIONS, 1);
	}
	sizes_publish();
}


/* The reward log's index the readers read through, and its key columns. */
static const char *const rewards_key[] = {"arm_id", "tx", "seq"};

/*
 * An arm's visible log rows after a position, in canonical order: the read
 * starts at the position (a row comparison on (tx, seq)), so that the rows
 * before it are not read again at every load -- a warm start's thousands
 * in one transaction, for each arm it has not rewarded since.
 */
void
arm_log_rows_begin(IndexRead *r, Relation rewards, int32 arm_id, LogPosition after)
{
	index_read_begin(r, rewards, lengthof(rewards_key), rewards_key);
	index_read_key(r, "arm_id", BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(arm_id));
	index_read_after(r, "tx", F_XID8CMP, FullTransactionIdGetDatum(after.tx),
					 "seq", F_BTINT8CMP, Int64GetDatum(after.seq));
}

/*
 * The arm's cache entry, emptied (a new one on a miss): nothing folded, no
 * base yet.  Its version is -1 until the load completes, so that an error
 * leaves no half-built entry that looks valid.  Not inlined into
 * entry_reset(), whose PG_TRY would make its locals volatile.
 */
static pg_noinline ModelCacheEntry *
entry_empty(int32 arm_id, const CheckpointRow *ck)
{
	ModelCacheEntry *entry;

	if (model_cache == NULL)
		model_cache_init();
	entry = cache_find(arm_id);
	if (entry != NULL)
		entry_free(entry);
	else
	{
		ModelCacheEntry *fresh = MemoryContextAlloc(model_cache_cxt, sizeof(ModelCacheEntry));
		ModelCacheSlot *slot = hash_search(model_cache, &arm_id, HASH_ENTER, NULL);

		entry = slot->entry = fresh;
		entry->arm_id = arm_id;
	}
	entry->shared_slot = -1;
	entry->seen_generation = PG_UINT64_MAX;	/* never looked */
	entry->grown_at = 0;
	cache_count(CACHE_MISSES, 1);
	entry->bytes = 0;
	entry->last_used = 0;
	entry->cxt = AllocSetContextCreate(CacheMemoryContext, "model_select arm model",
									   ALLOCSET_START_SMALL_SIZES);
	entry->base_cxt = entry->overlay_cxt = NULL;
	entry->base_model = entry->overlay_model = NULL;
	entry->overlay = NULL;
	entry->noverlay = entry->maxoverlay = 0;
	entry->model = NULL;
	entry->base_serial = entry->overlay_serial = entry->model_serial = 0;
	entry->now = 0;
	entry->version = -1;
	entry->ckpt_pos = ck->valid ? ck->pos : LOG_START;
	return entry;
}

/*
 * The shared base a load of checkpoint ck starts from, pinned in *sb (slot
 * -1: none).  Scoring versions, a checkpoint newer than every version
 * leaves the newest version of an earlier one to score
 * (shared_base_newest_from; the versions of the new one are taken as they
 * come, entry_take_newest).  Otherwise another backend may be loading it:
 * wait, then look again (not the learner: nobody waits for it).  Returns
 * whether it took the arm's load lock.
 */
static bool
shared_base_for_load(const SelectorConfig *cfg, int32 arm_id, const CheckpointRow *ck,
					 FullTransactionId horizon, LoadMode mode, SharedBase *sb)
{
	SharedBaseKey key;
	LogPosition from = ck->valid ? ck->pos : LOG_START;

	base_key(&key, arm_id, cfg->settings_version, ck->version, ck->xmin);
	if (shared_base_find(&key, from, true, horizon, sb) || LOAD_PUBLISHES(mode) ||
		(mode == LOAD_VERSIONS && ck->valid && shared_base_newest_from(cfg, arm_id, ck, sb)))
		return false;
	shared_load_lock(arm_id);
	shared_base_find(&key, from, true, horizon, sb);
	return true;
}

/*
 * A fresh entry for an arm, holding its checkpoint (nothing folded after
 * it yet) or the newest base published for it that the statement may use.
 * The state is validated against the selector before anything reads it.
 * *load_locked: a miss in the shared cache took the arm's load lock (the
 * caller releases it once it has published the base).
 */
static ModelCacheEntry *
entry_reset(const SelectorConfig *cfg, int32 arm_id, const CheckpointRow *ck,
			FullTransactionId horizon, LoadMode mode, bool *load_locked)
{
	ModelCacheEntry *entry = entry_empty(arm_id, ck);
	MemoryContext old;
	SharedBase	sb = {.slot = -1};

	*load_locked = false;
	/*
	 * clocked bases are never shared: the selector clock's depends on other
	 * arms' rows (the time clock's does not, and could be)
	 */
	if (shared_cache_active() && !clock_ops(cfg->clock)->ages)
		*load_locked = shared_base_for_load(cfg, arm_id, ck, horizon, mode, &sb);
	entry->shared_slot = sb.slot;
	entry->shared_prepared = sb.slot >= 0 ? sb.prepared : NULL;
	old = CurrentMemoryContext;
	PG_TRY();
	{
		/* a stored state is read only now, into the load's memory */
		Datum		stored = !ck->valid || sb.slot >= 0 ? (Datum) 0
			: ck->state_unread ? checkpoint_state_read(arm_id, ck->version, ck->xmin) : ck->state;

		MemoryContextSwitchTo(entry->cxt);
		entry->cfg = *cfg;
		if (sb.slot >= 0)
		{
			fold_begin(&entry->fold, &entry->cfg, NULL, sb.pos, &sb.totals);
			entry->fold.st = unconstify(StateHeader *, sb.st);
		}
		else
			/* under the arms query's snapshot: the rows of the row version it read */
			fold_begin_stored(&entry->fold, &entry->cfg, arm_id, stored,
							  true, entry->ckpt_pos, ck->valid ? &ck->totals : NULL);
		MemoryContextSwitchTo(old);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(old);
		model_cache_remove(entry);
		PG_RE_THROW();
	}
	PG_END_TRY();
	entry->version = ck->version;
	entry->xmin = ck->xmin;
	entry->settings_version = cfg->settings_version;
	return entry;
}

/*
 * The entry of an arm with a base this statement may build on: its
 * checkpoint is the one visible, and every row folded after it is below
 * horizon (a statement with an older snapshot may not see them all; under
 * the learner's rule any final prefix will do, and the newest published is
 * taken, by the learner too: a backend that folded the final rows while the
 * learner was behind saves it the same folds).  A new base is caught up
 * with the final rows at once (one taken from the shared cache by
 * model_cache_absorb, as they are few) and published.
 */
ModelCacheEntry *
model_cache_entry(const SelectorConfig *cfg, int32 arm_id, const CheckpointRow *ck,
				  FullTransactionId horizon, LoadMode mode)
{
	ModelCacheEntry *entry = cache_find(arm_id);
	MemoryContext old;
	bool		load_locked;

	if (entry != NULL && entry->version == ck->version && entry->xmin == ck->xmin &&
		entry->settings_version == cfg->settings_version &&
		(log_position_cmp(entry->fold.pos, entry->ckpt_pos) == 0 ||
		 FullTransactionIdPrecedes(entry->fold.pos.tx, horizon) || LOAD_VERSIONED(mode)))
	{
		/* the folds point to entry->cfg: the codebook's centroids as renewed (codebook.c) */
		entry->cfg.centroids = cfg->centroids;
		if (mode != LOAD_OWN)
			entry_take_newest(entry);
		return entry;
	}
	entry = entry_reset(cfg, arm_id, ck, horizon, mode, &load_locked);
	/* a clocked arm's rows come with their ticks in the load's rows (selector_load.c) */
	if (entry->shared_slot < 0 && !clock_ops(cfg->clock)->ages)
	{
		old = MemoryContextSwitchTo(entry->cxt);
		PG_TRY();
		{
			cache_count(CACHE_ROWS_FOLDED, fold_log(&entry->fold, arm_id, false, horizon, false));
			entry_share(entry);
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(old);
			model_cache_remove(entry);
			PG_RE_THROW();		/* the load lock goes with the transaction */
		}
		PG_END_TRY();
		MemoryContextSwitchTo(old);
	}
	if (load_locked)
		shared_load_unlock(arm_id);
	if (mode != LOAD_OWN)
		entry_take_newest(entry);
	return entry;
}

/*
 * The base kept for an arm when it was folded from the checkpoint row
 * (version, xmin) under settings_version, on the arm's own clock: the fold
 * of the arm's log up to its position (checkpoint.c starts from it).  NULL
 * when there is none.
 */
const StateFold *
model_cache_base(int32 arm_id, int32 settings_version, int64 version, int64 xmin)
{
	ModelCacheEntry *entry = cache_find(arm_id);

	if (entry == NULL || entry->version != version || entry->xmin != xmin ||
		entry->settings_version != settings_version || clock_ops(entry->cfg.clock)->ages ||
		entry->fold.st == NULL)
		return NULL;
	return &entry->fold;
}

/* A new load's number: the entries it touches are the most recently used. */
uint64
model_cache_next_load(void)
{
	return ++cache_loads;
}

/* Are the models a loaded selector points to still in the cache? */
bool
selector_models_current(Selector *sel)
{
	for (int i = 0; i < sel->narms; i++)
	{
		ArmInfo    *arm = &sel->arms[i];
		ModelCacheEntry *entry;

		if (arm->model == NULL)
			continue;
		entry = cache_find(arm->arm_id);
		if (entry == NULL || entry->model != arm->model)
			return false;
	}
	return true;
}

PG_FUNCTION_INFO_V1(model_select_cache_stats);

/*
 * SQL: cache_stats(this_backend) → the caches' counters: with
 * shared_preload_libraries and not this_backend, the server's (events of
 * every backend since start, sizes summed over the live ones), else this
 * backend's; then the shared cache's (NULL without one); then which of the
 * two the counters are.
 */
Datum
model_select_cache_stats(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[15];
	bool		nulls[15] = {false};
	int64		counts[N_CACHE_COUNTERS];
	bool		server = !PG_GETARG_BOOL(0) && cache_counters_server(counts);
	SharedCacheStats shared;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "cache_stats() must return a composite type");
	if (!server)
	{
		sizes_publish();
		for (int c = 0; c < N_CACHE_COUNTERS; c++)
			counts[c] = cache_counter((CacheCounter) c);
	}
	values[0] = Int32GetDatum((int32) counts[CACHE_ENTRIES]);
	values[1] = Int64GetDatum(counts[CACHE_BYTES]);
	values[2] = Int64GetDatum(counts[CACHE_HITS]);
	values[3] = Int64GetDatum(counts[CACHE_MISSES]);
	values[4] = Int64GetDatum(counts[CACHE_DECODES]);
	values[5] = Int64GetDatum(counts[CACHE_EVICTIONS]);
	values[6] = Int64GetDatum(counts[CACHE_FEATURE_BYTES]);
	if (shared_cache_stats(&shared))
	{
		values[7] = Int32GetDatum(shared.entries);
		values[8] = Int64GetDatum(shared.bytes);
		values[9] = Int32GetDatum(shared.pins);
		values[10] = Int64GetDatum(counts[CACHE_SHARED_HITS]);
		values[11] = Int64GetDatum(counts[CACHE_SHARED_PUBLISHES]);
		values[12] = Int64GetDatum(shared.evictions);
	}
	else
		for (int i = 7; i < 13; i++)
			nulls[i] = true;
	values[13] = CStringGetTextDatum(server ? "server" : "backend");
	values[14] = Int64GetDatum(counts[CACHE_ROWS_FOLDED]);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}
