/*
 * shared_cache.c — one copy per server of the arms' bases (see
 * shared_cache.h), when model_select is in shared_preload_libraries.
 *
 * In the shared memory and the DSA area of shared_area.c, a table of
 * slots (shared_key.h: as many as the cache's size gives), under one
 * LWLock, names each base held: its key and position, its totals, and the
 * dsa_pointer of a copy of its state (a StateHeader as stored: flat,
 * position independent).  A used slot is on the chain of its arm's bucket
 * (look-ups read that chain), a free one on the free chain.  Backends map the
 * area and score straight from those bytes (a policy's decode only points
 * into the state); nothing ever writes a published state.
 *
 * Pins.  A backend pins the bases its arm cache holds (one pin per arm
 * entry, kept across transactions like the entry itself) and unpins them
 * when the entry moves on, is evicted, or at exit (before_shmem_exit, which
 * also runs on FATAL errors and pg_terminate_backend).  A backend that dies
 * without exiting (SIGKILL, a crash) makes the postmaster reinitialise all
 * shared memory, this area included, so no pin outlives its backend.
 *
 * Eviction.  A base that a newer one of the same arm replaces is stale and
 * freed as soon as nobody pins it; when the area or the slot table is full,
 * unpinned bases go, stale first, then least recently used.  If everything
 * is pinned, the caller keeps its base per backend (the path without
 * preloading).
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "utils/dsa.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "routing/cache_counters.h"
#include "routing/shared_cache.h"
#include "routing/shared_cache_internal.h"

/* A slot this backend pins, and how many times. */
typedef struct MyPin
{
	int32		slot;			/* the hash key */
	int32		count;
} MyPin;

/* This backend's pins, by slot (NULL until shared_cache_active): as many as its arm entries. */
static HTAB *my_pins = NULL;

static void slot_free(int i);

/* This backend's pins on slot i change by delta.  Under the lock, exclusive. */
static void
my_pins_add(int i, int delta)
{
	bool		found;
	MyPin	   *pin = hash_search(my_pins, &i, HASH_ENTER, &found);

	if (!found)
		pin->count = 0;
	pin->count += delta;
	Assert(pin->count >= 0);
	if (pin->count == 0)
		(void) hash_search(my_pins, &i, HASH_REMOVE, NULL);
}

/* At exit: the pins this backend still holds. */
static void
release_all_pins(int code, Datum arg)
{
	HASH_SEQ_STATUS seq;
	MyPin	   *pin;

	LWLockAcquire(shared_control->lock, LW_EXCLUSIVE);
	hash_seq_init(&seq, my_pins);
	while ((pin = hash_seq_search(&seq)) != NULL)
	{
		SharedSlot *slot = &shared_control->slots[pin->slot];

		slot->pins -= pin->count;
		if (DsaPointerIsValid(slot->state) && slot->pins == 0 && slot->stale)
			slot_free(pin->slot);
		/* removing the element just returned is allowed during a scan */
		(void) hash_search(my_pins, &pin->slot, HASH_REMOVE, NULL);
	}
	LWLockRelease(shared_control->lock);
}

/* Is there a shared cache?  Sets up this backend's pins on first use. */
bool
shared_cache_active(void)
{
	HASHCTL		ctl;

	if (my_pins != NULL)
		return true;
	if (shared_control == NULL || !IsUnderPostmaster)
		return false;
	/* set up here, not at every call: this is asked on every look-up */
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(int32);
	ctl.entrysize = sizeof(MyPin);
	ctl.hcxt = TopMemoryContext;
	my_pins = hash_create("model_select shared pins", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	before_shmem_exit(release_all_pins, (Datum) 0);
	return true;
}

/* How many bases the server's shared cache can hold (0: none). */
int
shared_cache_capacity(void)
{
	return shared_control != NULL ? shared_control->nslots : 0;
}

/* The bucket of arm_id: its publication counter and its chain of slots. */
static inline uint32
arm_bucket(int32 arm_id)
{
	return (uint32) arm_id % ARM_BUCKETS;
}

/* The first slot of the chain of arm_id's bucket (-1: none). */
static int
bucket_first(int32 arm_id)
{
	return shared_control->bucket_head[arm_bucket(arm_id)];
}

static bool
key_equal(const SharedBaseKey *a, const SharedBaseKey *b)
{
	return a->database == b->database && a->arm_id == b->arm_id &&
		a->settings_version == b->settings_version &&
		a->ckpt_version == b->ckpt_version && a->ckpt_xmin == b->ckpt_xmin;
}

/*
 * Whether a (same database and arm) was folded from an older checkpoint than
 * b: an older settings version, or an older checkpoint of the same settings
 * (checkpoint, rebuild and resample each number the arm's row anew).
 */
static bool
key_older(const SharedBaseKey *a, const SharedBaseKey *b)
{
	if (a->settings_version != b->settings_version)
		return a->settings_version < b->settings_version;
	return a->ckpt_version < b->ckpt_version;
}

/* Free slot i's base; the slot leaves its bucket's chain for the free one.  Under the lock, exclusive. */
static void
slot_free(int i)
{
	SharedSlot *slot = &shared_control->slots[i];
	int32	   *link = &shared_control->bucket_head[arm_bucket(slot->key.arm_id)];

	while (*link != i)
	{
		if (*link < 0)
			elog(PANIC, "model_select shared cache: slot %d is not on its chain", i);
		link = &shared_control->slots[*link].next;
	}
	*link = slot->next;
	dsa_free(shared_area_attached(), slot->state);
	shared_control->bytes -= slot->bytes;
	slot->state = InvalidDsaPointer;
	slot->pins = 0;
	slot->next = shared_control->free_head;
	shared_control->free_head = i;
}

/* Pin slot i for the caller and describe it in out.  Under the lock, exclusive. */
static void
slot_pin(int i, SharedBase *out)
{
	SharedSlot *slot = &shared_control->slots[i];

	slot->pins++;
	my_pins_add(i, 1);
	slot->last_used = ++shared_control->clock;
	out->slot = i;
	out->st = shared_base_address(slot->state);
	out->prepared = slot->prepared_at == 0 ? NULL
		: (const double *) ((const char *) out->st + slot->prepared_at);
	out->pos = slot->pos;
	out->totals = slot->totals;
}

/*
 * What a look-up takes: slots of key at `from` itself if from_itself, or
 * after `from` and below horizon; with any_checkpoint, of key's arm and
 * settings whatever their checkpoint, and not stale.
 */
typedef struct SlotWish
{
	const SharedBaseKey *key;
	bool		any_checkpoint;
	LogPosition from;
	bool		from_itself;
	FullTransactionId horizon;
} SlotWish;

static bool
slot_wished(const SharedSlot *slot, const SlotWish *w)
{
	int			cmp;

	if (!DsaPointerIsValid(slot->state))
		return false;
	if (w->any_checkpoint
		? slot->stale || slot->key.database != w->key->database || slot->key.arm_id != w->key->arm_id ||
		slot->key.settings_version != w->key->settings_version
		: !key_equal(&slot->key, w->key))
		return false;
	cmp = log_position_cmp(slot->pos, w->from);
	return (cmp == 0 && w->from_itself) ||
		(cmp > 0 && FullTransactionIdPrecedes(slot->pos.tx, w->horizon));
}

/* The slot the look-up takes with the greatest position, pinned in *out; false: none. */
static bool
pin_newest(const SlotWish *w, SharedBase *out)
{
	int			best = -1;

	if (!shared_cache_active())
		return false;
	LWLockAcquire(shared_control->lock, LW_EXCLUSIVE);
	for (int i = bucket_first(w->key->arm_id); i >= 0; i = shared_control->slots[i].next)
		if (slot_wished(&shared_control->slots[i], w) &&
			(best < 0 || log_position_cmp(shared_control->slots[i].pos, shared_control->slots[best].pos) > 0))
			best = i;
	if (best >= 0)
	{
		slot_pin(best, out);
		cache_count(CACHE_SHARED_HITS, 1);
	}
	LWLockRelease(shared_control->lock);
	return best >= 0;
}

/*
 * The published base of key with the greatest position that the caller may
 * use: at `from` itself if from_itself (a checkpoint's position), or after
 * `from` and below horizon (every row it folds is final and visible).  Pinned
 * in *out; false when there is none.
 */
bool
shared_base_find(const SharedBaseKey *key, LogPosition from, bool from_itself,
				 FullTransactionId horizon, SharedBase *out)
{
	SlotWish	w = {key, false, from, from_itself, horizon};

	return pin_newest(&w, out);
}

/*
 * The newest base published for arm_id under settings_version from any of
 * its checkpoints, at or after `from`: the version with the greatest
 * position that no newer one has made stale.  A version is the fold of a
 * prefix of the arm's log, the same bytes whichever checkpoint it was folded
 * from.  Pinned in *out; false when there is none.
 */
bool
shared_base_find_newest(int32 arm_id, int32 settings_version, LogPosition from, SharedBase *out)
{
	SharedBaseKey key = {.database = MyDatabaseId, .arm_id = arm_id, .settings_version = settings_version};
	SlotWish	w = {&key, true, from, true, FullTransactionIdFromU64(PG_UINT64_MAX)};

	return pin_newest(&w, out);
}

/* Unpin a base; a stale one nobody pins any more is freed. */
void
shared_base_release(int i)
{
	SharedSlot *slot = &shared_control->slots[i];

	LWLockAcquire(shared_control->lock, LW_EXCLUSIVE);
	slot->pins--;
	my_pins_add(i, -1);
	if (slot->pins == 0 && slot->stale)
		slot_free(i);
	LWLockRelease(shared_control->lock);
}

/*
 * Free the unpinned base that matters least (stale, else least recently
 * used); false when every base is pinned.  Under the lock, exclusive.
 */
static bool
evict_one(void)
{
	SharedSlot *victim = NULL;
	int			v = -1;

	/* the used slots, through the chains: a full area may hold few of many slots */
	for (int b = 0; b < ARM_BUCKETS; b++)
		for (int i = shared_control->bucket_head[b]; i >= 0; i = shared_control->slots[i].next)
		{
			SharedSlot *slot = &shared_control->slots[i];

			if (slot->pins > 0)
				continue;
			if (victim == NULL || (slot->stale && !victim->stale) ||
				(slot->stale == victim->stale && slot->last_used < victim->last_used))
			{
				victim = slot;
				v = i;
			}
		}
	if (victim == NULL)
		return false;
	slot_free(v);
	shared_control->evictions++;
	return true;
}

/* Room for bytes in the area, evicting what is needed (InvalidDsaPointer: none). */
static dsa_pointer
area_allocate(Size bytes)
{
	for (;;)
	{
		dsa_pointer dp = dsa_allocate_extended(shared_area_attached(), bytes, DSA_ALLOC_HUGE | DSA_ALLOC_NO_OOM);
		bool		evicted;

		if (DsaPointerIsValid(dp))
			return dp;
		LWLockAcquire(shared_control->lock, LW_EXCLUSIVE);
		evicted = evict_one();
		LWLockRelease(shared_control->lock);
		if (!evicted)
			return InvalidDsaPointer;
	}
}

/*
 * A free slot, evicting if needed, put on the chain of arm_id's bucket
 * (-1: all pinned).  Under the lock, exclusive.
 */
static int
slot_take(int32 arm_id)
{
	int			i;
	int32	   *head = &shared_control->bucket_head[arm_bucket(arm_id)];

	while (shared_control->free_head < 0)
		if (!evict_one())
			return -1;
	i = shared_control->free_head;
	shared_control->free_head = shared_control->slots[i].next;
	shared_control->slots[i].next = *head;
	*head = i;
	return i;
}

/* The slot holding the version (key, pos), or -1.  Under the lock. */
static int
slot_of(const SharedBaseKey *key, LogPosition pos)
{
	for (int i = bucket_first(key->arm_id); i >= 0; i = shared_control->slots[i].next)
	{
		SharedSlot *slot = &shared_control->slots[i];

		if (key_equal(&slot->key, key) && log_position_cmp(slot->pos, pos) == 0)
			return i;
	}
	return -1;
}

/* Slot i goes stale, and is freed at once if nobody pins it.  Under the lock, exclusive. */
static void
slot_retire(int i)
{
	SharedSlot *slot = &shared_control->slots[i];

	slot->stale = true;
	if (slot->pins == 0)
		slot_free(i);
}

/*
 * Once slot i is published, the arm's versions of other checkpoints are
 * stale, and so are those of its checkpoint at its position or before (a
 * reader takes the newest).  A version whose checkpoint is not committed
 * yet neither makes others stale nor is made stale: until its transaction
 * ends, readers see the older checkpoint, whose versions must go on.  Under
 * the lock, exclusive.
 */
static void
mark_others_stale(int i)
{
	SharedSlot *mine = &shared_control->slots[i];
	int			next;

	/* the next slot is read first: a retired one leaves the chain */
	for (int j = bucket_first(mine->key.arm_id); j >= 0; j = next)
	{
		SharedSlot *slot = &shared_control->slots[j];

		next = slot->next;
		if (j == i || slot->stale || slot->uncommitted ||
			slot->key.database != mine->key.database || slot->key.arm_id != mine->key.arm_id)
			continue;
		/*
		 * A backend whose snapshot still sees an older checkpoint may publish
		 * after the learner published from a newer one: its version is stale
		 * from birth (freed once unpinned), and the newer ones stay.
		 */
		if (key_older(&mine->key, &slot->key))
		{
			mine->stale = true;
			return;
		}
		if (!key_equal(&slot->key, &mine->key) || log_position_cmp(slot->pos, mine->pos) <= 0)
			slot_retire(j);
	}
}

/*
 * Publish a copy of the base st (key, pos, totals), followed (aligned) by
 * what decode computes from it (prepared; NULL: nothing), and pin it in
 * *out; if another backend published it first, pin that one.  uncommitted:
 * key names a checkpoint row that the caller's transaction has written and
 * not yet committed (shared_base_settle() ends that).  False when the cache
 * has no room that is not pinned: the caller keeps its own copy.
 */
bool
shared_base_publish(const SharedBaseKey *key, const StateHeader *st, const SharedPrepared *prepared,
					LogPosition pos, const FoldTotals *totals, bool uncommitted, SharedBase *out)
{
	Size		nprepared = prepared != NULL ? prepared->n : 0;
	Size		prepared_at = nprepared > 0 ? MAXALIGN(VARSIZE(st)) : 0;
	Size		bytes = Max(prepared_at + sizeof(double) * nprepared, VARSIZE(st));
	dsa_pointer dp;
	int			i;

	if (!shared_cache_active())
		return false;
	LWLockAcquire(shared_control->lock, LW_EXCLUSIVE);
	i = slot_of(key, pos);
	if (i >= 0)
		slot_pin(i, out);
	LWLockRelease(shared_control->lock);
	if (i >= 0)
		return true;
	if (!DsaPointerIsValid(dp = area_allocate(bytes)))
	{
		cache_count(CACHE_SHARED_PUBLISH_FAILURES, 1);
		return false;
	}
	/* copied and computed outside the lock: nobody knows dp yet */
	memcpy(shared_base_address(dp), st, VARSIZE(st));
	if (nprepared > 0)
		prepared->fill(prepared->cfg, st, (double *) ((char *) shared_base_address(dp) + prepared_at));
	LWLockAcquire(shared_control->lock, LW_EXCLUSIVE);
	if ((i = slot_of(key, pos)) < 0 && (i = slot_take(key->arm_id)) >= 0)
	{
		SharedSlot *slot = &shared_control->slots[i];

		slot->key = *key;	/* on its arm's chain already (slot_take) */
		slot->pos = pos;
		slot->totals = *totals;
		slot->state = dp;
		slot->prepared_at = prepared_at;
		slot->bytes = bytes;
		slot->pins = 0;
		slot->stale = false;
		slot->uncommitted = uncommitted;
		slot->published = ++shared_control->clock;
		slot->published_at = GetCurrentTimestamp();
		shared_control->bytes += bytes;
		dp = InvalidDsaPointer;
		if (!uncommitted)
			mark_others_stale(i);
		cache_count(CACHE_SHARED_PUBLISHES, 1);
		(void) pg_atomic_fetch_add_u64(&shared_control->arm_generation[arm_bucket(key->arm_id)], 1);
	}
	if (i >= 0)
		slot_pin(i, out);
	LWLockRelease(shared_control->lock);
	if (DsaPointerIsValid(dp))
		dsa_free(shared_area_attached(), dp);		/* published meanwhile, or no slot */
	cache_count(CACHE_SHARED_PUBLISH_FAILURES, i < 0);
	return i >= 0;
}

/*
 * The transaction that published the uncommitted version (key, pos) ended
 * (checkpoint_share.c): committed, the version now makes the arm's older
 * ones stale, as if published now; rolled back (or prepared, which may yet
 * roll back), it goes stale itself, since what it was folded from will not
 * be.  Nothing if it is no longer published.
 */
void
shared_base_settle(const SharedBaseKey *key, LogPosition pos, bool committed)
{
	int			i;

	if (!shared_cache_active())
		return;
	LWLockAcquire(shared_control->lock, LW_EXCLUSIVE);
	if ((i = slot_of(key, pos)) >= 0 && shared_control->slots[i].uncommitted)
	{
		shared_control->slots[i].uncommitted = false;
		if (committed)
			mark_others_stale(i);
		else
			slot_retire(i);
	}
	LWLockRelease(shared_control->lock);
}

/*
 * The publication counter of arm_id (0 without a shared cache): read before
 * a look-up, it tells whether the next may find something newer.
 */
uint64
shared_arm_generation(int32 arm_id)
{
	if (!shared_cache_active())
		return 0;
	return pg_atomic_read_u64(&shared_control->arm_generation[arm_bucket(arm_id)]);
}

/* The versions of this database's arms, at most max of them, in *out. */
int
shared_cache_list(SharedVersionInfo *out, int max)
{
	int			n = 0;

	if (!shared_cache_active())
		return 0;
	LWLockAcquire(shared_control->lock, LW_SHARED);
	for (int i = 0; i < shared_control->nslots && n < max; i++)
	{
		SharedSlot *slot = &shared_control->slots[i];

		if (!DsaPointerIsValid(slot->state) || slot->key.database != MyDatabaseId)
			continue;
		out[n].key = slot->key;
		out[n].pos = slot->pos;
		out[n].n = slot->totals.n;
		out[n].stale = slot->stale;
		out[n].bytes = (int64) slot->bytes;
		out[n].pins = slot->pins;
		out[n].published_at = slot->published_at;
		n++;
	}
	LWLockRelease(shared_control->lock);
	return n;
}

/* cache_stats(): false when there is no shared cache. */
bool
shared_cache_stats(SharedCacheStats *out)
{
	if (!shared_cache_active())
		return false;
	memset(out, 0, sizeof(*out));
	LWLockAcquire(shared_control->lock, LW_SHARED);
	for (int i = 0; i < shared_control->nslots; i++)
		if (DsaPointerIsValid(shared_control->slots[i].state))
		{
			out->entries++;
			out->pins += shared_control->slots[i].pins;
		}
	out->bytes = shared_control->bytes;
	out->evictions = shared_control->evictions;
	LWLockRelease(shared_control->lock);
	out->hits = cache_counter(CACHE_SHARED_HITS);
	out->publishes = cache_counter(CACHE_SHARED_PUBLISHES);
	out->publish_failures = cache_counter(CACHE_SHARED_PUBLISH_FAILURES);
	return true;
}
