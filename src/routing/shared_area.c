/*
 * shared_area.c — the shared cache's memory (shared_cache.c holds its
 * slots): with model_select in shared_preload_libraries, the postmaster
 * reserves model_select.shared_cache_size bytes of its main shared memory
 * and lays a dynamic shared memory area (DSA) over them, with that size as
 * its limit, so the area never asks the OS for more (nor needs /dev/shm):
 * pages the cache never touched take no memory.  Next to it, the table of
 * slots (SharedCacheControl, shared_cache_internal.h).  A backend maps the
 * area only once it allocates or frees a base; one that only reads bases
 * finds their bytes by their offset.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/dsa.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "routing/shared_cache.h"
#include "routing/shared_cache_internal.h"

/* GUC model_select.shared_cache_size, in kB */
int			shared_cache_size_kb = 256 * 1024;

/* GUC model_select.shared_min_size, in bytes */
int			shared_min_size = 8192;


#define LOCK_TRANCHE "model_select shared cache"
#define AREA_TRANCHE "model_select shared cache area"

SharedCacheControl *shared_control = NULL;

/* This backend's mapping of the area: NULL until it writes (shared_area_attached). */
static dsa_area *area = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static Size
area_size(void)
{
	return (Size) shared_cache_size_kb * 1024;
}

/* The slots the cache's size gives (shared_key.h); fixed at server start, as the size. */
int
shared_slot_count(void)
{
	return Max(SHARED_SLOTS_MIN, Min(SHARED_SLOTS_MAX, shared_cache_size_kb / SHARED_KB_PER_SLOT));
}

static Size
control_size(void)
{
	return MAXALIGN(add_size(offsetof(SharedCacheControl, slots),
							 mul_size(shared_slot_count(), sizeof(SharedSlot))));
}

static void *
area_place(void)
{
	return (char *) shared_control + control_size();
}

static void
shared_cache_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(add_size(control_size(), area_size()));
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
	shared_control = ShmemInitStruct("model_select shared cache",
							  add_size(control_size(), area_size()), &found);
	if (!found)
	{
		dsa_area   *a;

		memset(shared_control, 0, control_size());
		shared_control->lock = &(GetNamedLWLockTranche(LOCK_TRANCHE))->lock;
		shared_control->area_tranche = LWLockNewTrancheId();
		shared_control->nslots = shared_slot_count();
		for (int i = 0; i < shared_control->nslots; i++)
		{
			shared_control->slots[i].state = InvalidDsaPointer;
			shared_control->slots[i].next = i + 1 < shared_control->nslots ? i + 1 : -1;
		}
		shared_control->free_head = 0;
		for (int i = 0; i < ARM_BUCKETS; i++)
		{
			shared_control->bucket_head[i] = -1;
			pg_atomic_init_u64(&shared_control->arm_generation[i], 0);
		}
		/* the postmaster may not create DSM segments: the area is in place, limited to it */
		a = dsa_create_in_place(area_place(), area_size(), shared_control->area_tranche, NULL);
		dsa_pin(a);
		dsa_set_size_limit(a, area_size());
		shared_control->area_direct = area_is_direct(a);
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
							"Where no learner serves the database, smaller ones stay in each "
							"backend's cache: a copy costs less than a look-up.",
							&shared_min_size, 8192, 0, INT_MAX, PGC_SIGHUP, GUC_UNIT_BYTE,
							NULL, NULL, NULL);
	if (shared_cache_size_kb == 0)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = shared_cache_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = shared_cache_startup;
}

/*
 * This backend's mapping of the area, made on first use: by a backend that
 * allocates or frees a base.  One that only reads bases does without
 * (shared_base_address()), and so without the 40 kB a mapping takes (DSA's table
 * of the 1,024 segments an area may have).
 */
dsa_area *
shared_area_attached(void)
{
	MemoryContext old;

	if (area != NULL)
		return area;
	old = MemoryContextSwitchTo(TopMemoryContext);
	LWLockRegisterTranche(shared_control->area_tranche, AREA_TRANCHE);
	area = dsa_attach_in_place(area_place(), NULL);
	dsa_pin_mapping(area);
	MemoryContextSwitchTo(old);
	on_shmem_exit(dsa_on_shmem_exit_release_in_place, PointerGetDatum(area_place()));
	return area;
}

/* The bytes of a base: in place when the area's pointers are offsets (area_is_direct()). */
void *
shared_base_address(dsa_pointer dp)
{
	return shared_control->area_direct
		? (char *) area_place() + dp : dsa_get_address(shared_area_attached(), dp);
}
