/*
 * shared_cache.c — one copy per server of the arms' bases (see
 * shared_cache.h), when model_select is in shared_preload_libraries.
 *
 * The postmaster reserves model_select.shared_cache_size bytes of its main
 * shared memory and lays a dynamic shared memory area (DSA) over them, with
 * that size as its limit, so the area never asks the OS for more (nor needs
 * /dev/shm): pages the cache never touched take no memory.  Next to it, a
 * table of SHARED_SLOTS slots, under one LWLock, names each base held: its
 * key and position, its totals, and the dsa_pointer of a copy of its state
 * (a StateHeader as stored: flat, position independent).  Backends map the
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
#include "storage/shmem.h"
#include "utils/dsa.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "routing/cache_counters.h"
#include "routing/shared_cache.h"

/* GUC model_select.shared_cache_size, in kB */
int			shared_cache_size_kb = 256 * 1024;

/* GUC model_select.shared_min_size, in bytes */
int			shared_min_size = 8192;


#define LOCK_TRANCHE "model_select shared cache"
#define AREA_TRANCHE "model_select shared cache area"

typedef struct SharedSlot
{
	SharedBaseKey key;
	LogPosition pos;
	FoldTotals	totals;
	dsa_pointer state;			/* InvalidDsaPointer: the slot is free */
	Size		bytes;
	int32		pins;
	bool		stale;			/* a newer base of the arm exists */
	uint64		published;		/* the clock when published */
	TimestampTz published_at;
	uint64		last_used;
} SharedSlot;

/*
 * Publication counters: a reader whose arm's counter has not moved since it
 * last looked knows, without the lock or a scan of the slots, that no newer
 * version of the arm was published (arms that share a counter only cost a
 * scan for nothing).
 */
#define ARM_GENERATIONS 4096

typedef struct SharedCacheControl
{
	LWLock	   *lock;			/* the slots and counters below */
	int			area_tranche;
	bool		area_direct;	/* a dsa_pointer is its offset in the area (base_address) */
	uint64		clock;
	int64		bytes;
	int64		evictions;
	SharedSlot	slots[SHARED_SLOTS];
	/* bumped after each version published, by arm_id modulo ARM_GENERATIONS; read unlocked */
	pg_atomic_uint64 arm_generation[ARM_GENERATIONS];
} SharedCacheControl;

/* Set in the postmaster (inherited) or at start-up: NULL when not preloaded. */
static SharedCacheControl *control = NULL;

/* This backend's mapping of the area (NULL until it writes: area_attached) and its pins per slot. */
static dsa_area *area = NULL;
static int32 *my_pins = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static Size
area_size(void)
{
	return (Size) shared_cache_size_kb * 1024;
}

static void *
area_place(void)
{
	return (char *) control + MAXALIGN(sizeof(SharedCacheControl));
}

static void
shared_cache_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(SharedCacheControl)) + area_size());
	RequestNamedLWLockTranche(LOCK_TRANCHE, 1);
}

/*
 * Is a dsa_pointer of area a (in place, limited to its place: one segment)
 * the offset of its bytes from the place?  So DSA makes its pointers of the
 * first segment; asked of one allocation rather than assumed.
 */
static bool
area_is_direct(dsa_area *a)
{
	dsa_pointer probe = dsa_allocate_extended(a, 64, DSA_ALLOC_NO_OOM);
	bool		direct = DsaPointerIsValid(probe) && probe < area_size() &&
		dsa_get_address(a, probe) == (char *) area_place() + probe;

	if (DsaPointerIsValid(probe))
		dsa_free(a, probe);
	return direct;
}

static void
shared_cache_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	control = ShmemInitStruct("model_select shared cache",
							  MAXALIGN(sizeof(SharedCacheControl)) + area_size(), &found);
	if (!found)
	{
		dsa_area   *a;

		memset(control, 0, sizeof(SharedCacheControl));
		control->lock = &(GetNamedLWLockTranche(LOCK_TRANCHE))->lock;
		control->area_tranche = LWLockNewTrancheId();
		for (int i = 0; i < SHARED_SLOTS; i++)
			control->slots[i].state = InvalidDsaPointer;
		for (int i = 0; i < ARM_GENERATIONS; i++)
			pg_atomic_init_u64(&control->arm_generation[i], 0);
		/* the postmaster may not create DSM segments: the area is in place, limited to it */
		a = dsa_create_in_place(area_place(), area_size(), control->area_tranche, NULL);
		dsa_pin(a);
		dsa_set_size_limit(a, area_size());
		control->area_direct = area_is_direct(a);
		dsa_detach(a);
	}
	LWLockRelease(AddinShmemInitLock);
}

/* model_select.shared_cache_size: 0 (off) or at least 1 MB, room for the DSA's own pages. */
static bool
check_shared_cache_size(int *newval, void **extra, GucSource source)
{
	if (*newval == 0 || *newval >= 1024)
		return true;
	GUC_check_errdetail("The shared cache takes 0 (off) or at least 1MB.");
	return false;
}

/*
 * From _PG_init while shared_preload_libraries are loaded: the setting
 * model_select.shared_cache_size (a server-start setting, which PostgreSQL
 * only lets a preloaded library define) and, unless it is 0, the cache.
 */
void
shared_cache_preload(void)
{
	DefineCustomIntVariable("model_select.shared_cache_size",
							"Shared memory for the arms' models, read by every backend.",
							"Reserved at server start; 0 keeps every backend's models in its "
							"own cache (model_select.cache_size).",
							&shared_cache_size_kb, 256 * 1024, 0, INT_MAX / 2,
							PGC_POSTMASTER, GUC_UNIT_KB, check_shared_cache_size, NULL, NULL);
	DefineCustomIntVariable("model_select.shared_min_size",
							"The smallest arm model put in the shared cache.",
							"Smaller ones stay in each backend's cache: a copy costs less than "
							"a look-up.",
							&shared_min_size, 8192, 0, INT_MAX, PGC_SIGHUP, GUC_UNIT_BYTE,
							NULL, NULL, NULL);
	if (shared_cache_size_kb == 0)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = shared_cache_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = shared_cache_startup;
}

static void slot_free(SharedSlot *slot);

/* At exit: the pins this backend still holds. */
static void
release_all_pins(int code, Datum arg)
{
	LWLockAcquire(control->lock, LW_EXCLUSIVE);
	for (int i = 0; i < SHARED_SLOTS; i++)
	{
		SharedSlot *slot = &control->slots[i];

		slot->pins -= my_pins[i];
		my_pins[i] = 0;
		if (DsaPointerIsValid(slot->state) && slot->pins == 0 && slot->stale)
			slot_free(slot);
	}
	LWLockRelease(control->lock);
}

/* Is there a shared cache?  Sets up this backend's pins on first use. */
bool
shared_cache_active(void)
{
	if (my_pins != NULL)
		return true;
	if (control == NULL || !IsUnderPostmaster)
		return false;
	my_pins = MemoryContextAllocZero(TopMemoryContext, sizeof(int32) * SHARED_SLOTS);
	before_shmem_exit(release_all_pins, (Datum) 0);
	return true;
}

/*
 * This backend's mapping of the area, made on first use: by a backend that
 * allocates or frees a base.  One that only reads bases does without
 * (base_address()), and so without the 40 kB a mapping takes (DSA's table
 * of the 1,024 segments an area may have).
 */
static dsa_area *
area_attached(void)
{
	MemoryContext old;

	if (area != NULL)
		return area;
	old = MemoryContextSwitchTo(TopMemoryContext);
	LWLockRegisterTranche(control->area_tranche, AREA_TRANCHE);
	area = dsa_attach_in_place(area_place(), NULL);
	dsa_pin_mapping(area);
	MemoryContextSwitchTo(old);
	on_shmem_exit(dsa_on_shmem_exit_release_in_place, PointerGetDatum(area_place()));
	return area;
}

/* The bytes of a base: in place when the area's pointers are offsets (area_is_direct()). */
static void *
base_address(dsa_pointer dp)
{
	return control->area_direct ? (char *) area_place() + dp : dsa_get_address(area_attached(), dp);
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

/* Free a slot's base.  Under the lock, exclusive. */
static void
slot_free(SharedSlot *slot)
{
	dsa_free(area_attached(), slot->state);
	control->bytes -= slot->bytes;
	slot->state = InvalidDsaPointer;
	slot->pins = 0;
}

/* Pin slot i for the caller and describe it in out.  Under the lock, exclusive. */
static void
slot_pin(int i, SharedBase *out)
{
	SharedSlot *slot = &control->slots[i];

	slot->pins++;
	my_pins[i]++;
	slot->last_used = ++control->clock;
	out->slot = i;
	out->st = base_address(slot->state);
	out->pos = slot->pos;
	out->totals = slot->totals;
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
	int			best = -1;

	if (!shared_cache_active())
		return false;
	LWLockAcquire(control->lock, LW_EXCLUSIVE);
	for (int i = 0; i < SHARED_SLOTS; i++)
	{
		SharedSlot *slot = &control->slots[i];
		int			cmp;

		if (!DsaPointerIsValid(slot->state) || !key_equal(&slot->key, key))
			continue;
		cmp = log_position_cmp(slot->pos, from);
		if (!((cmp == 0 && from_itself) ||
			  (cmp > 0 && FullTransactionIdPrecedes(slot->pos.tx, horizon))))
			continue;
		if (best < 0 || log_position_cmp(slot->pos, control->slots[best].pos) > 0)
			best = i;
	}
	if (best >= 0)
	{
		slot_pin(best, out);
		cache_count(CACHE_SHARED_HITS, 1);
	}
	LWLockRelease(control->lock);
	return best >= 0;
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
	int			best = -1;

	if (!shared_cache_active())
		return false;
	LWLockAcquire(control->lock, LW_EXCLUSIVE);
	for (int i = 0; i < SHARED_SLOTS; i++)
	{
		SharedSlot *slot = &control->slots[i];

		if (!DsaPointerIsValid(slot->state) || slot->stale || slot->key.database != MyDatabaseId ||
			slot->key.arm_id != arm_id || slot->key.settings_version != settings_version ||
			log_position_cmp(slot->pos, from) < 0)
			continue;
		if (best < 0 || log_position_cmp(slot->pos, control->slots[best].pos) > 0)
			best = i;
	}
	if (best >= 0)
	{
		slot_pin(best, out);
		cache_count(CACHE_SHARED_HITS, 1);
	}
	LWLockRelease(control->lock);
	return best >= 0;
}

/* Unpin a base; a stale one nobody pins any more is freed. */
void
shared_base_release(int i)
{
	SharedSlot *slot = &control->slots[i];

	Assert(my_pins[i] > 0);
	LWLockAcquire(control->lock, LW_EXCLUSIVE);
	slot->pins--;
	my_pins[i]--;
	if (slot->pins == 0 && slot->stale)
		slot_free(slot);
	LWLockRelease(control->lock);
}

/*
 * Free the unpinned base that matters least (stale, else least recently
 * used); false when every base is pinned.  Under the lock, exclusive.
 */
static bool
evict_one(void)
{
	SharedSlot *victim = NULL;

	for (int i = 0; i < SHARED_SLOTS; i++)
	{
		SharedSlot *slot = &control->slots[i];

		if (!DsaPointerIsValid(slot->state) || slot->pins > 0)
			continue;
		if (victim == NULL || (slot->stale && !victim->stale) ||
			(slot->stale == victim->stale && slot->last_used < victim->last_used))
			victim = slot;
	}
	if (victim == NULL)
		return false;
	slot_free(victim);
	control->evictions++;
	return true;
}

/* Room for bytes in the area, evicting what is needed (InvalidDsaPointer: none). */
static dsa_pointer
area_allocate(Size bytes)
{
	for (;;)
	{
		dsa_pointer dp = dsa_allocate_extended(area_attached(), bytes, DSA_ALLOC_HUGE | DSA_ALLOC_NO_OOM);
		bool		evicted;

		if (DsaPointerIsValid(dp))
			return dp;
		LWLockAcquire(control->lock, LW_EXCLUSIVE);
		evicted = evict_one();
		LWLockRelease(control->lock);
		if (!evicted)
			return InvalidDsaPointer;
	}
}

/* A free slot, evicting if needed (-1: all pinned).  Under the lock, exclusive. */
static int
free_slot(void)
{
	for (;;)
	{
		for (int i = 0; i < SHARED_SLOTS; i++)
			if (!DsaPointerIsValid(control->slots[i].state))
				return i;
		if (!evict_one())
			return -1;
	}
}

/* The slot holding the version (key, pos), or -1.  Under the lock. */
static int
slot_of(const SharedBaseKey *key, LogPosition pos)
{
	for (int i = 0; i < SHARED_SLOTS; i++)
	{
		SharedSlot *slot = &control->slots[i];

		if (DsaPointerIsValid(slot->state) && key_equal(&slot->key, key) &&
			log_position_cmp(slot->pos, pos) == 0)
			return i;
	}
	return -1;
}

/* Slot s goes stale, and is freed at once if nobody pins it.  Under the lock, exclusive. */
static void
slot_retire(SharedSlot *slot)
{
	slot->stale = true;
	if (slot->pins == 0)
		slot_free(slot);
}

/*
 * Once slot i is published, the arm's versions of other checkpoints are
 * stale, and so are those of its checkpoint at its position or before (a
 * reader takes the newest).  Under the lock, exclusive.
 */
static void
mark_others_stale(int i)
{
	SharedSlot *mine = &control->slots[i];

	for (int j = 0; j < SHARED_SLOTS; j++)
	{
		SharedSlot *slot = &control->slots[j];

		if (j == i || !DsaPointerIsValid(slot->state) || slot->stale ||
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
			slot_retire(slot);
	}
}

/*
 * Publish a copy of the base st (key, pos, totals) and pin it in *out; if
 * another backend published it first, pin that one.  False when the cache
 * has no room that is not pinned: the caller keeps its own copy.
 */
bool
shared_base_publish(const SharedBaseKey *key, const StateHeader *st, LogPosition pos,
					const FoldTotals *totals, SharedBase *out)
{
	Size		bytes = VARSIZE(st);
	dsa_pointer dp;
	int			i;

	if (!shared_cache_active())
		return false;
	LWLockAcquire(control->lock, LW_EXCLUSIVE);
	i = slot_of(key, pos);
	if (i >= 0)
		slot_pin(i, out);
	LWLockRelease(control->lock);
	if (i >= 0)
		return true;
	if (!DsaPointerIsValid(dp = area_allocate(bytes)))
	{
		cache_count(CACHE_SHARED_PUBLISH_FAILURES, 1);
		return false;
	}
	/* copied outside the lock: nobody knows dp yet */
	memcpy(base_address(dp), st, bytes);
	LWLockAcquire(control->lock, LW_EXCLUSIVE);
	if ((i = slot_of(key, pos)) < 0 && (i = free_slot()) >= 0)
	{
		SharedSlot *slot = &control->slots[i];

		slot->key = *key;
		slot->pos = pos;
		slot->totals = *totals;
		slot->state = dp;
		slot->bytes = bytes;
		slot->pins = 0;
		slot->stale = false;
		slot->published = ++control->clock;
		slot->published_at = GetCurrentTimestamp();
		control->bytes += bytes;
		dp = InvalidDsaPointer;
		mark_others_stale(i);
		cache_count(CACHE_SHARED_PUBLISHES, 1);
		(void) pg_atomic_fetch_add_u64(&control->arm_generation[(uint32) key->arm_id % ARM_GENERATIONS], 1);
	}
	if (i >= 0)
		slot_pin(i, out);
	LWLockRelease(control->lock);
	if (DsaPointerIsValid(dp))
		dsa_free(area, dp);		/* published meanwhile, or no slot */
	cache_count(CACHE_SHARED_PUBLISH_FAILURES, i < 0);
	return i >= 0;
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
	return pg_atomic_read_u64(&control->arm_generation[(uint32) arm_id % ARM_GENERATIONS]);
}

/* The versions of this database's arms, at most max of them, in *out. */
int
shared_cache_list(SharedVersionInfo *out, int max)
{
	int			n = 0;

	if (!shared_cache_active())
		return 0;
	LWLockAcquire(control->lock, LW_SHARED);
	for (int i = 0; i < SHARED_SLOTS && n < max; i++)
	{
		SharedSlot *slot = &control->slots[i];

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
	LWLockRelease(control->lock);
	return n;
}

/* cache_stats(): false when there is no shared cache. */
bool
shared_cache_stats(SharedCacheStats *out)
{
	if (!shared_cache_active())
		return false;
	memset(out, 0, sizeof(*out));
	LWLockAcquire(control->lock, LW_SHARED);
	for (int i = 0; i < SHARED_SLOTS; i++)
		if (DsaPointerIsValid(control->slots[i].state))
		{
			out->entries++;
			out->pins += control->slots[i].pins;
		}
	out->bytes = control->bytes;
	out->evictions = control->evictions;
	LWLockRelease(control->lock);
	out->hits = cache_counter(CACHE_SHARED_HITS);
	out->publishes = cache_counter(CACHE_SHARED_PUBLISHES);
	out->publish_failures = cache_counter(CACHE_SHARED_PUBLISH_FAILURES);
	return true;
}
