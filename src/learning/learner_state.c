/*
 * learner_state.c — the learners' shared state (learner_state.h): their
 * shared memory, and whether a learner serves this backend's database.
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/timestamp.h"

#include "learning/learner_state.h"

#define LEARNER_TRANCHE "model_select learner"

/* A learner serves while its last pass ended within this many naptimes (and this long). */
#define LEARNER_STALE_PASSES 20
#define LEARNER_STALE_MIN_MS 10000

LearnerShared *learner = NULL;
int			learner_naptime_ms = 200;
int			learner_max_lag_ms = 1000;

/* The databases of model_select.learner_databases, from _PG_init (postmaster memory). */
static int	learner_ndatabases = 0;
static char **learner_databases = NULL;

/* This transaction logged rewards (how many); the callback that wakes the learner is registered. */
static bool wake_at_commit = false;
static int64 wake_rewards = 0;
static bool wake_callback_registered = false;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/*
 * The slot of this backend's database, or NULL.  A slot's database is
 * written by its learner when it connects; an Oid is read whole.
 */
static LearnerSlot *
my_learner_slot(void)
{
	if (learner == NULL)
		return NULL;
	for (int i = 0; i < learner->nslots; i++)
		if (learner->slots[i].database == MyDatabaseId)
			return &learner->slots[i];
	return NULL;
}

/*
 * Does a learner serve this database, so that reward inserts leave
 * checkpoints to it?  Only while its passes keep coming.
 */
bool
learner_serving(void)
{
	LearnerSlot *slot = my_learner_slot();
	bool		serving;
	long		stale_ms = Max((long) LEARNER_STALE_PASSES * learner_naptime_ms, LEARNER_STALE_MIN_MS);

	if (slot == NULL)
		return false;
	LWLockAcquire(learner->lock, LW_SHARED);
	serving = slot->pid != 0 && slot->last_pass != 0 &&
		!TimestampDifferenceExceeds(slot->last_pass, GetCurrentTimestamp(), (int) stale_ms);
	LWLockRelease(learner->lock);
	return serving;
}

/*
 * Does a learner publish this database's versions, so that decisions score
 * them (a final prefix of each arm's log plus their own transaction's
 * rewards) rather than the exact fold of their snapshot?  On a primary
 * whose learner has connected once; whether it keeps up is learner_fresh().
 */
bool
learner_configured(void)
{
	return my_learner_slot() != NULL && !RecoveryInProgress();
}

/*
 * Are the versions the learner publishes recent enough to score from?  Its
 * process runs, its last pass published every version that grew (no error,
 * busy selector or full shared cache), and no reward committed more than
 * model_select.learner_max_lag ago waits for a pass: else (stopped, crashed,
 * behind) a backend folds the final rows itself.
 */
bool
learner_fresh(void)
{
	LearnerSlot *slot = my_learner_slot();
	TimestampTz pending;
	bool		running;

	if (slot == NULL || learner_max_lag_ms == 0)
		return false;
	LWLockAcquire(learner->lock, LW_SHARED);
	running = slot->pid != 0 && slot->last_pass != 0 && slot->last_pass_complete;
	LWLockRelease(learner->lock);
	pending = (TimestampTz) pg_atomic_read_u64(&slot->pending_since);
	return running && (pending == 0 ||
					   !TimestampDifferenceExceeds(pending, GetCurrentTimestamp(), learner_max_lag_ms));
}

/*
 * The learner starts a pass: the commit time of the oldest reward waiting
 * for it (0: none), and *rewards, how many committed since the last pass.
 */
TimestampTz
learner_take_pending(LearnerSlot *slot, int64 *rewards)
{
	*rewards = (int64) pg_atomic_exchange_u64(&slot->pending_rewards, 0);
	return (TimestampTz) pg_atomic_exchange_u64(&slot->pending_since, 0);
}

/* A pass that started on rewards committed from `pending` on ended now.  Under the lock, exclusive. */
void
learner_record_lag(LearnerSlot *slot, TimestampTz pending, int64 rewards)
{
	LearnerLag *lag = &slot->lags[slot->next_lag];
	long		ms = (long) ((GetCurrentTimestamp() - pending) / 1000);

	lag->ms = (int32) Min(Max(ms, 0), PG_INT32_MAX);
	lag->rewards = (int32) Min(rewards, PG_INT32_MAX);
	slot->next_lag = (slot->next_lag + 1) % LEARNER_LAG_PASSES;
	slot->nlags = Min(slot->nlags + 1, LEARNER_LAG_PASSES);
}

static int
int32_cmp(const void *a, const void *b)
{
	int32		x = *(const int32 *) a;
	int32		y = *(const int32 *) b;

	return (x > y) - (x < y);
}

/*
 * The p50 and p99 (nearest rank) of the recorded passes' lags: ms[0..1] in
 * milliseconds, rewards[0..1] in rewards; NaN when no pass had any.
 */
void
learner_lag_percentiles(const LearnerSlot *slot, double *ms, double *rewards)
{
	int32		a[LEARNER_LAG_PASSES] = {0};
	int32		b[LEARNER_LAG_PASSES] = {0};
	int			n = slot->nlags;
	static const double q[2] = {0.50, 0.99};

	for (int i = 0; i < n; i++)
	{
		a[i] = slot->lags[i].ms;
		b[i] = slot->lags[i].rewards;
	}
	qsort(a, n, sizeof(int32), int32_cmp);
	qsort(b, n, sizeof(int32), int32_cmp);
	for (int k = 0; k < 2; k++)
	{
		int			rank = (int) ceil(q[k] * n) - 1;

		ms[k] = n > 0 ? (double) a[Max(rank, 0)] : get_float8_nan();
		rewards[k] = n > 0 ? (double) b[Max(rank, 0)] : get_float8_nan();
	}
}

/*
 * At the end of a transaction that logged rewards: a commit wakes the
 * learner, whose next version then holds them (callbacks run after the
 * commit is visible).  The latch pointer is read without the lock: a stale
 * one is a latch in shared memory all the same, and setting it is harmless.
 */
static void
learner_wake_xact(XactEvent event, void *arg)
{
	Latch	   *latch;
	uint64		none = 0;

	if (!wake_at_commit || (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
							event != XACT_EVENT_PREPARE))
		return;
	wake_at_commit = false;
	if (event != XACT_EVENT_COMMIT)
		return;
	/* the oldest commit waiting for a pass stays: only a pass takes it */
	(void) pg_atomic_compare_exchange_u64(&((LearnerSlot *) arg)->pending_since, &none,
										  (uint64) GetCurrentTimestamp());
	(void) pg_atomic_fetch_add_u64(&((LearnerSlot *) arg)->pending_rewards, (uint64) wake_rewards);
	latch = ((LearnerSlot *) arg)->latch;
	if (latch != NULL)
		SetLatch(latch);
}

/* A reward was logged: wake this database's learner when the transaction commits. */
void
learner_wake_at_commit(void)
{
	LearnerSlot *slot = my_learner_slot();

	if (slot == NULL || slot->pid == 0)
		return;
	if (!wake_callback_registered)
	{
		RegisterXactCallback(learner_wake_xact, slot);
		wake_callback_registered = true;
	}
	if (!wake_at_commit)
		wake_rewards = 0;
	wake_at_commit = true;
	wake_rewards++;
}

static Size
learner_shmem_size(void)
{
	return add_size(offsetof(LearnerShared, slots),
					mul_size(learner_ndatabases, sizeof(LearnerSlot)));
}

static void
learner_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(learner_shmem_size()));
	RequestNamedLWLockTranche(LEARNER_TRANCHE, 1);
}

static void
learner_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	learner = ShmemInitStruct("model_select learner", learner_shmem_size(), &found);
	if (!found)
	{
		memset(learner, 0, learner_shmem_size());
		learner->lock = &(GetNamedLWLockTranche(LEARNER_TRANCHE))->lock;
		learner->nslots = learner_ndatabases;
		for (int i = 0; i < learner_ndatabases; i++)
		{
			namestrcpy(&learner->slots[i].dbname, learner_databases[i]);
			pg_atomic_init_u64(&learner->slots[i].pending_since, 0);
			pg_atomic_init_u64(&learner->slots[i].pending_rewards, 0);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * From _PG_init while shared_preload_libraries are loaded: one slot per
 * database of model_select.learner_databases (names kept by the caller).
 */
void
learner_shmem_preload(int ndatabases, char **databases)
{
	learner_ndatabases = ndatabases;
	learner_databases = databases;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = learner_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = learner_startup;
}
