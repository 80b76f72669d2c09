/*
 * shared_cache_internal.h — the shared cache's structure in shared memory,
 * shared by shared_area.c (its memory: set up at server start, mapped by a
 * backend) and shared_cache.c (its slots: published, found, pinned,
 * evicted).  The slots, their chains and the counters of SharedCacheControl
 * are under its lock, exclusive; arm_generation is read without it.
 */
#ifndef MODEL_SELECT_SHARED_CACHE_INTERNAL_H
#define MODEL_SELECT_SHARED_CACHE_INTERNAL_H

#include "port/atomics.h"
#include "storage/lwlock.h"
#include "utils/dsa.h"
#include "utils/timestamp.h"

#include "learning/fold.h"
#include "routing/shared_key.h"

typedef struct SharedSlot
{
	SharedBaseKey key;
	LogPosition pos;
	FoldTotals	totals;
	dsa_pointer state;			/* InvalidDsaPointer: the slot is free */
	Size		prepared_at;	/* bytes from the state to its prepared doubles (0: none) */
	Size		bytes;
	int32		pins;
	bool		stale;			/* a newer base of the arm exists */
	bool		uncommitted;	/* its checkpoint row is not committed yet: it makes nothing stale */
	uint64		published;		/* the clock when published */
	TimestampTz published_at;
	uint64		last_used;
	int32		next;			/* the next slot of its bucket's chain, or free (-1: none) */
} SharedSlot;

/*
 * Arms by arm_id modulo ARM_BUCKETS.  Publication counters: a reader whose
 * arm's counter has not moved since it last looked knows, without the lock,
 * that no newer version of the arm was published (arms that share a counter
 * only cost a look-up for nothing).  Chains: the slots of a bucket's arms,
 * so that a look-up reads those, not the whole table.
 */
#define ARM_BUCKETS 4096

typedef struct SharedCacheControl
{
	LWLock	   *lock;			/* the slots, chains and counters below */
	int			area_tranche;
	bool		area_direct;	/* a dsa_pointer is its offset in the area (shared_base_address) */
	uint64		clock;
	int64		bytes;
	int64		evictions;
	int32		nslots;
	int32		free_head;		/* the free slots' chain (-1: none free) */
	int32		bucket_head[ARM_BUCKETS];	/* each bucket's chain of used slots */
	/* bumped after each version published, by arm_id modulo ARM_BUCKETS; read unlocked */
	pg_atomic_uint64 arm_generation[ARM_BUCKETS];
	SharedSlot	slots[FLEXIBLE_ARRAY_MEMBER];	/* nslots of them */
} SharedCacheControl;

/* Set in the postmaster (inherited) or at start-up: NULL when not preloaded. */
extern SharedCacheControl *shared_control;

extern int	shared_slot_count(void);
extern dsa_area *shared_area_attached(void);
extern void *shared_base_address(dsa_pointer dp);

#endif
