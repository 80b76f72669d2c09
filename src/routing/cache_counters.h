/*
 * cache_counters.h — the caches' counters, per backend and server-wide.
 */
#ifndef MODEL_SELECT_CACHE_COUNTERS_H
#define MODEL_SELECT_CACHE_COUNTERS_H

/* Sizes first (what a backend holds now), then events (counted up). */
typedef enum CacheCounter
{
	CACHE_ENTRIES,				/* arm entries held */
	CACHE_BYTES,				/* their bytes */
	CACHE_FEATURE_BYTES,		/* random feature matrices kept */
	CACHE_HITS,					/* a cached model reused */
	CACHE_MISSES,				/* an arm folded anew from its checkpoint */
	CACHE_DECODES,				/* states decoded */
	CACHE_EVICTIONS,			/* entries dropped to fit model_select.cache_size */
	CACHE_SHARED_HITS,			/* bases taken from the shared cache */
	CACHE_SHARED_PUBLISHES,		/* bases published to it */
	CACHE_SHARED_PUBLISH_FAILURES,	/* bases it had no room for */
	CACHE_ROWS_FOLDED,			/* log rows folded onto cached bases */
	N_CACHE_COUNTERS
} CacheCounter;

#define N_CACHE_SIZES (CACHE_FEATURE_BYTES + 1)

extern void cache_count(CacheCounter c, int64 delta);
extern void cache_size_set(CacheCounter c, int64 value);
extern int64 cache_counter(CacheCounter c);
extern bool cache_counters_server(int64 *out);
extern void cache_counters_preload(void);

#endif
