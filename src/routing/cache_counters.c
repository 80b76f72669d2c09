/*
 * cache_counters.c — the caches' counters, per backend and server-wide.
 *
 * Every backend counts its caches' events (hits, misses, decodes, evictions,
 * bases taken from and published to the shared cache) and keeps the sizes
 * of what it holds (entries, bytes, random feature bytes).  Under
 * shared_preload_libraries each count is also added to one atomic of the
 * server's, so that cache_stats() answers alike from every backend (behind a
 * pooler each call may run on another one): events since the server
 * started, sizes summed over the live backends (a backend takes its sizes
 * back out of the sums as it exits).  Without preloading there is no
 * server-wide figure, and cache_stats() says it reports the backend that
 * answered.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "routing/cache_counters.h"

/* This backend's counts. */
static int64 local[N_CACHE_COUNTERS];

/* The server's, when preloaded (set in the postmaster, inherited). */
static pg_atomic_uint64 *server = NULL;
static bool exit_registered = false;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* At exit: what this backend holds leaves the server's sizes. */
static void
sizes_withdraw(int code, Datum arg)
{
	for (int c = 0; c < N_CACHE_SIZES; c++)
		cache_size_set((CacheCounter) c, 0);
}

static void
server_add(CacheCounter c, int64 delta)
{
	if (server == NULL || delta == 0)
		return;
	if (c < N_CACHE_SIZES && !exit_registered)
	{
		before_shmem_exit(sizes_withdraw, (Datum) 0);
		exit_registered = true;
	}
	(void) pg_atomic_fetch_add_u64(&server[c], delta);
}

/* An event counted delta times. */
void
cache_count(CacheCounter c, int64 delta)
{
	Assert(c >= N_CACHE_SIZES);
	local[c] += delta;
	server_add(c, delta);
}

/* What this backend holds now, of a size. */
void
cache_size_set(CacheCounter c, int64 value)
{
	Assert(c < N_CACHE_SIZES);
	server_add(c, value - local[c]);
	local[c] = value;
}

/* This backend's count. */
int64
cache_counter(CacheCounter c)
{
	return local[c];
}

/* The server's counts into out[N_CACHE_COUNTERS]; false when not preloaded. */
bool
cache_counters_server(int64 *out)
{
	if (server == NULL)
		return false;
	for (int c = 0; c < N_CACHE_COUNTERS; c++)
		out[c] = (int64) pg_atomic_read_u64(&server[c]);
	return true;
}

static Size
server_size(void)
{
	return sizeof(pg_atomic_uint64) * N_CACHE_COUNTERS;
}

static void
counters_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(server_size());
}

static void
counters_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	server = ShmemInitStruct("model_select cache counters", server_size(), &found);
	if (!found)
		for (int c = 0; c < N_CACHE_COUNTERS; c++)
			pg_atomic_init_u64(&server[c], 0);
	LWLockRelease(AddinShmemInitLock);
}

/* From _PG_init under shared_preload_libraries: the server's counters. */
void
cache_counters_preload(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = counters_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = counters_startup;
}
