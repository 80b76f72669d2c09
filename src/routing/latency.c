/*
 * latency.c — how long select_model() and route() take, per selector and
 * arm, server-wide.
 *
 * With shared_preload_libraries the SQL functions select_model() and
 * route() are these wrappers: they time the call to the routing code
 * (src/routing/select.c) and add it to a shared hash table keyed by the
 * selector's and the chosen arm's names, as pg_stat_statements does per
 * statement: calls, sum and maximum in milliseconds, under a spinlock per
 * entry; the table's lock is taken exclusively only to add an entry.  The
 * table holds LATENCY_MAX entries; past that, new (selector, arm) pairs are
 * not counted until stats_reset() frees some.  Without preloading a wrapper
 * only calls through.  View model_select.stats shows the figures next to
 * the counts of the logs.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"

#include "model/privilege.h"
#include "routing/latency.h"

#define LATENCY_MAX 4096
#define LATENCY_NAME_LEN 128
#define LOCK_TRANCHE "model_select latency"

/* the routing code's entry points (src/routing/select.c) */
extern Datum model_select_select_model(PG_FUNCTION_ARGS);
extern Datum model_select_route(PG_FUNCTION_ARGS);

typedef enum
{
	CALL_SELECT,
	CALL_ROUTE
} CallKind;

typedef struct LatencyKey
{
	char		selector[LATENCY_NAME_LEN];
	char		arm[LATENCY_NAME_LEN];
} LatencyKey;

typedef struct LatencyEntry
{
	LatencyKey	key;
	slock_t		mutex;
	int64		calls[2];
	double		sum_ms[2];
	double		max_ms[2];
} LatencyEntry;

static HTAB *latency_hash = NULL;
static LWLock *latency_lock = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

PG_FUNCTION_INFO_V1(model_select_select_model_timed);
PG_FUNCTION_INFO_V1(model_select_route_timed);
PG_FUNCTION_INFO_V1(model_select_latency);
PG_FUNCTION_INFO_V1(model_select_latency_reset);

static void
latency_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(hash_estimate_size(LATENCY_MAX, sizeof(LatencyEntry)));
	RequestNamedLWLockTranche(LOCK_TRANCHE, 1);
}

static void
latency_startup(void)
{
	HASHCTL		info;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	latency_lock = &(GetNamedLWLockTranche(LOCK_TRANCHE))->lock;
	info.keysize = sizeof(LatencyKey);
	info.entrysize = sizeof(LatencyEntry);
	latency_hash = ShmemInitHash("model_select latency", LATENCY_MAX, LATENCY_MAX, &info,
								 HASH_ELEM | HASH_BLOBS);
	LWLockRelease(AddinShmemInitLock);
}

/* From _PG_init under shared_preload_libraries. */
void
latency_preload(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = latency_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = latency_startup;
}

static void
make_key(LatencyKey *key, const char *selector, const char *arm)
{
	memset(key, 0, sizeof(*key));
	/* whole characters: a longer name is kept cut, and matches no selector */
	memcpy(key->selector, selector, pg_mbcliplen(selector, strlen(selector), LATENCY_NAME_LEN - 1));
	memcpy(key->arm, arm, pg_mbcliplen(arm, strlen(arm), LATENCY_NAME_LEN - 1));
}

/* Add one call of `ms` milliseconds to the (selector, arm) entry. */
static void
record(const char *selector, const char *arm, CallKind kind, double ms)
{
	LatencyKey	key;
	LatencyEntry *e;
	bool		found;

	make_key(&key, selector, arm);
	LWLockAcquire(latency_lock, LW_SHARED);
	e = hash_search(latency_hash, &key, HASH_FIND, NULL);
	if (e == NULL)
	{
		LWLockRelease(latency_lock);
		LWLockAcquire(latency_lock, LW_EXCLUSIVE);
		e = hash_search(latency_hash, &key, HASH_ENTER_NULL, &found);
		if (e != NULL && !found)
		{
			memset((char *) e + sizeof(LatencyKey), 0, sizeof(LatencyEntry) - sizeof(LatencyKey));
			SpinLockInit(&e->mutex);
		}
	}
	if (e != NULL)
	{
		SpinLockAcquire(&e->mutex);
		e->calls[kind]++;
		e->sum_ms[kind] += ms;
		e->max_ms[kind] = Max(e->max_ms[kind], ms);
		SpinLockRelease(&e->mutex);
	}
	LWLockRelease(latency_lock);
}

static double
elapsed_ms(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
}

/* SQL select_model(): the routing code's, timed when preloaded. */
Datum
model_select_select_model_timed(PG_FUNCTION_ARGS)
{
	instr_time	start;
	Datum		arm;

	if (latency_hash == NULL)
		return model_select_select_model(fcinfo);
	INSTR_TIME_SET_CURRENT(start);
	arm = model_select_select_model(fcinfo);
	if (fcinfo->isnull)
		return arm;
	record(text_to_cstring(PG_GETARG_TEXT_PP(0)), TextDatumGetCString(arm), CALL_SELECT,
		   elapsed_ms(start));
	return arm;
}

/* SQL route(): the routing code's, timed when preloaded (the decision's insert included). */
Datum
model_select_route_timed(PG_FUNCTION_ARGS)
{
	instr_time	start;
	Datum		result;
	Datum		arm;
	bool		isnull;

	if (latency_hash == NULL)
		return model_select_route(fcinfo);
	INSTR_TIME_SET_CURRENT(start);
	result = model_select_route(fcinfo);
	if (fcinfo->isnull)
		return result;
	arm = GetAttributeByName(DatumGetHeapTupleHeader(result), "arm", &isnull);
	if (!isnull)
		record(text_to_cstring(PG_GETARG_TEXT_PP(0)), TextDatumGetCString(arm), CALL_ROUTE,
			   elapsed_ms(start));
	return result;
}

/* SQL: _latency() → one row per (selector, arm) counted (none unless preloaded). */
Datum
model_select_latency(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HASH_SEQ_STATUS scan;
	LatencyEntry *e;
	LatencyEntry *copies;
	long		n = 0;

	InitMaterializedSRF(fcinfo, 0);
	if (latency_hash == NULL)
		return (Datum) 0;
	/* copied under the lock; the rights are looked up after it */
	LWLockAcquire(latency_lock, LW_SHARED);
	copies = palloc(sizeof(LatencyEntry) * Max(hash_get_num_entries(latency_hash), 1));
	hash_seq_init(&scan, latency_hash);
	while ((e = hash_seq_search(&scan)) != NULL)
	{
		SpinLockAcquire(&e->mutex);
		copies[n++] = *e;
		SpinLockRelease(&e->mutex);
	}
	LWLockRelease(latency_lock);
	for (long i = 0; i < n; i++)
	{
		LatencyEntry *copy = &copies[i];
		Datum		values[8];
		bool		nulls[8] = {false};

		/* a role sees the figures of its own selectors only, as in every view */
		if (!selector_visible_by_name(copy->key.selector))
			continue;
		values[0] = CStringGetTextDatum(copy->key.selector);
		values[1] = CStringGetTextDatum(copy->key.arm);
		for (int k = 0; k < 2; k++)
		{
			values[2 + 3 * k] = Int64GetDatum(copy->calls[k]);
			values[3 + 3 * k] = Float8GetDatum(copy->sum_ms[k]);
			values[4 + 3 * k] = Float8GetDatum(copy->max_ms[k]);
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* SQL: _latency_reset(selector) → the selector's entries removed (stats_reset()). */
Datum
model_select_latency_reset(PG_FUNCTION_ARGS)
{
	LatencyKey	key;
	HASH_SEQ_STATUS scan;
	LatencyEntry *e;

	if (latency_hash == NULL)
		PG_RETURN_VOID();
	make_key(&key, text_to_cstring(PG_GETARG_TEXT_PP(0)), "");
	LWLockAcquire(latency_lock, LW_EXCLUSIVE);
	hash_seq_init(&scan, latency_hash);
	while ((e = hash_seq_search(&scan)) != NULL)
		if (strcmp(e->key.selector, key.selector) == 0)
			hash_search(latency_hash, &e->key, HASH_REMOVE, NULL);
	LWLockRelease(latency_lock);
	PG_RETURN_VOID();
}
