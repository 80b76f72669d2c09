/*
 * shared_cache.h — one copy per server of the arms' bases (a checkpoint plus
 * the final rows folded onto it), in a dynamic shared memory area when the
 * library is in shared_preload_libraries (shared_cache.c).  model_cache.c
 * looks bases up here before it reads a checkpoint, and publishes the bases
 * it folds; a backend pins the bases it scores with.
 */
#ifndef MODEL_SELECT_SHARED_CACHE_H
#define MODEL_SELECT_SHARED_CACHE_H

#include "datatype/timestamp.h"

#include "learning/fold.h"
#include "routing/shared_key.h"


/* A pinned base: read only, valid until shared_base_release(slot). */
typedef struct SharedBase
{
	int			slot;
	const StateHeader *st;
	const double *prepared;		/* what decode computes from st alone (NULL: none) */
	LogPosition pos;
	FoldTotals	totals;
} SharedBase;

/*
 * What a version carries after its state: n doubles that fill() computes
 * from it under cfg (PolicyOps.prepare), written straight into the shared
 * copy, and only when a copy is made.
 */
typedef struct SharedPrepared
{
	Size		n;
	void		(*fill) (const SelectorConfig *cfg, const StateHeader *st, double *out);
	const SelectorConfig *cfg;
} SharedPrepared;

/* A published version as shown by shared_versions() (learner_versions). */
typedef struct SharedVersionInfo
{
	SharedBaseKey key;
	LogPosition pos;
	int64		n;
	bool		stale;
	int64		bytes;
	int32		pins;
	TimestampTz published_at;
} SharedVersionInfo;

/* Server-wide figures for cache_stats(), plus this backend's counters. */
typedef struct SharedCacheStats
{
	int32		entries;
	int64		bytes;
	int32		pins;
	int64		evictions;
	int64		hits;			/* this backend: bases taken from the cache */
	int64		publishes;		/* this backend: bases it folded and published */
	int64		publish_failures;	/* this backend: bases it found no room for */
} SharedCacheStats;

/*
 * GUC model_select.shared_min_size (bytes): states smaller than this stay per
 * backend, as a copy costs less than a look-up (tests set 0 to share every
 * state).
 */
extern int	shared_min_size;

/* GUC model_select.shared_cache_size (kB; 0: off) */
extern int	shared_cache_size_kb;

extern void shared_cache_preload(void);
extern bool shared_cache_active(void);
extern int	shared_cache_capacity(void);
extern bool shared_base_find(const SharedBaseKey *key, LogPosition from, bool from_itself,
							 FullTransactionId horizon, SharedBase *out);
extern bool shared_base_find_newest(int32 arm_id, int32 settings_version, LogPosition from,
								   SharedBase *out);
extern bool shared_base_publish(const SharedBaseKey *key, const StateHeader *st,
								const SharedPrepared *prepared, LogPosition pos,
								const FoldTotals *totals, bool uncommitted, SharedBase *out);
extern void shared_base_release(int slot);
extern void shared_base_settle(const SharedBaseKey *key, LogPosition pos, bool committed);
extern uint64 shared_arm_generation(int32 arm_id);
extern bool shared_cache_stats(SharedCacheStats *out);
extern int	shared_cache_list(SharedVersionInfo *out, int max);

#endif
